//! How many instances of one server a diagnostics op keeps busy at once (issue 15: `lspc check`
//! opens files in batches the server can analyse concurrently).
//!
//! A repository with many projects gets one instance of a server per project root (issue 17):
//! BurntSushi/memchr has 11 `Cargo.toml`s, and checking it started 11 rust-analyzers at once,
//! each loading its crate graph and running `cargo check` for build scripts, on 2 cores: 37 of
//! its files timed out at 30 s. Each such instance is itself multi-threaded, so a few at a time
//! fill the machine; the rest wait without their timeout running (it counts from the sync).
//!
//! Invariants:
//! - An instance is *engaged* while a file of the op that it gives diagnostics for is in flight.
//!   Ops do not hold each other back: in a session, an agent's diagnostics for one file never
//!   waits for a `lspc check` running beside it.
//! - A file may start only if each of its instances is engaged already or its server has fewer
//!   than [`instances_at_once`] engaged instances; otherwise it waits in [`Deferred`], under the
//!   first instance that has no room, in the order it would have started.
//! - Nothing else is limited: a server with one instance, and files of instances already
//!   engaged, start as before (the op's window of files in flight still bounds them).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::process::ServerId;

/// How many instances of one server may be engaged at once: the machine's parallelism, at
/// least 2 (one project's files need not wait for another's slow start) and at most 4 (each
/// instance runs several threads of its own, and a rust-analyzer or pyright holds hundreds of
/// MiB). Read once per process.
pub(super) fn instances_at_once() -> usize {
    static AT_ONCE: OnceLock<usize> = OnceLock::new();
    *AT_ONCE.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(2, std::num::NonZeroUsize::get)
            .clamp(2, 4)
    })
}

/// The instances with files in flight, counted per configured server.
#[derive(Debug, Default)]
pub(super) struct Engaged {
    slots: HashSet<ServerId>,
    /// Configured-server index → how many of its instances are in `slots`.
    per_server: HashMap<usize, usize>,
    at_once: usize,
}

impl Engaged {
    /// No instance engaged; at most `at_once` per server.
    pub(super) fn new(at_once: usize) -> Engaged {
        Engaged {
            at_once,
            ..Engaged::default()
        }
    }

    /// Records that instance `slot` of configured server `config_index` has a file in flight.
    pub(super) fn engage(&mut self, slot: ServerId, config_index: usize) {
        if self.slots.insert(slot) {
            *self.per_server.entry(config_index).or_default() += 1;
        }
    }

    /// Whether a file of instance `slot` (of configured server `config_index`) may start now.
    pub(super) fn admits(&self, slot: ServerId, config_index: usize) -> bool {
        self.slots.contains(&slot)
            || self.per_server.get(&config_index).copied().unwrap_or(0) < self.at_once
    }
}

/// Files waiting for an instance to have room: per instance, in arrival order; the instances in
/// the order their first file arrived.
#[derive(Debug, Default)]
pub(super) struct Deferred {
    lists: Vec<(ServerId, VecDeque<PathBuf>)>,
}

impl Deferred {
    /// Whether no file waits.
    pub(super) fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }

    /// How many files wait.
    pub(super) fn len(&self) -> usize {
        self.lists.iter().map(|(_, files)| files.len()).sum()
    }

    /// Makes `path` wait for instance `slot`.
    pub(super) fn push(&mut self, slot: ServerId, path: PathBuf) {
        match self.lists.iter_mut().find(|(known, _)| *known == slot) {
            Some((_, files)) => files.push_back(path),
            None => self.lists.push((slot, VecDeque::from([path]))),
        }
    }

    /// Takes the first waiting file, over the instances in order, whose instance and path
    /// `may_start` accepts (only each instance's first file is offered).
    pub(super) fn pop_first(
        &mut self,
        mut may_start: impl FnMut(ServerId, &Path) -> bool,
    ) -> Option<PathBuf> {
        let position = self.lists.iter().position(|(slot, files)| {
            files
                .front()
                .is_some_and(|path| may_start(*slot, path.as_path()))
        })?;
        let path = self.lists[position].1.pop_front();
        if self.lists[position].1.is_empty() {
            self.lists.remove(position);
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Engaged instances always admit their files; a new instance is admitted only while its
    /// server has room, counted per configured server.
    #[test]
    fn engaged_counts_instances_per_server() {
        let mut engaged = Engaged::new(2);
        assert!(engaged.admits(ServerId(5), 0));
        engaged.engage(ServerId(5), 0);
        engaged.engage(ServerId(5), 0);
        engaged.engage(ServerId(6), 0);
        assert!(!engaged.admits(ServerId(7), 0), "server 0 has 2 engaged");
        assert!(engaged.admits(ServerId(5), 0), "an engaged instance");
        assert!(
            engaged.admits(ServerId(8), 1),
            "another server has its own count"
        );
    }

    /// Waiting files come back per instance in arrival order, only when their instance is
    /// accepted, and an emptied instance's list goes away.
    #[test]
    fn deferred_files_come_back_in_order_when_their_instance_has_room() {
        let mut deferred = Deferred::default();
        deferred.push(ServerId(3), PathBuf::from("a1"));
        deferred.push(ServerId(4), PathBuf::from("b1"));
        deferred.push(ServerId(3), PathBuf::from("a2"));
        assert_eq!(deferred.pop_first(|_, _| false), None);
        assert_eq!(
            deferred.pop_first(|slot, _| slot == ServerId(4)),
            Some(PathBuf::from("b1"))
        );
        assert_eq!(deferred.lists.len(), 1);
        assert_eq!(
            deferred.pop_first(|_, path| path != Path::new("a1")),
            None,
            "only the first file of an instance is offered"
        );
        assert_eq!(deferred.pop_first(|_, _| true), Some(PathBuf::from("a1")));
        assert_eq!(deferred.pop_first(|_, _| true), Some(PathBuf::from("a2")));
        assert!(deferred.is_empty());
    }

    #[test]
    fn at_once_is_between_two_and_four() {
        assert!((2..=4).contains(&instances_at_once()));
    }
}
