//! The loop's decision on the last call the stdin reader started (issue 15): the reader reads
//! the next line while the loop's turn decides the call (its request sent, or the call handed
//! to a worker), and waits for that decision only before it handles the line, so lines keep
//! their order.
//!
//! A per-call `crossbeam_channel::bounded(1)` did this for 2k instructions a call (its
//! allocation, the sender's clone and the drops). Here one [`Decisions`] lives as long as the
//! reader: each call is a generation, a [`Decide`] handle stores it into a shared word and
//! unparks the reader (an atomic swap, and a `futex` wake only when the reader is parked).
//!
//! Invariants: only the thread that first calls [`Decisions::start`] waits (it is the one
//! unparked); at most one call is undecided at a time (the reader waits before it starts the
//! next), so the word only grows; a handle dropped without [`Decide::decide`] decides as it
//! goes (an op the loop dropped unrun, with the engine gone), so the reader never waits for a
//! decision that cannot come.

use std::cell::{Cell, OnceCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::Thread;

struct Shared {
    /// The last generation decided.
    decided: AtomicU64,
    /// The thread that waits: the one that started the calls.
    reader: Thread,
}

/// The reader's side: owned by the thread that starts calls (not `Send`, through its `Cell`s).
#[derive(Default)]
pub(super) struct Decisions {
    shared: OnceCell<Arc<Shared>>,
    /// The generation of the last call started (0: none yet).
    started: Cell<u64>,
}

/// Decides one call, from any thread: by [`Decide::decide`] or by being dropped. Clones
/// decide the same call; deciding twice does nothing more.
#[derive(Clone)]
pub(super) struct Decide {
    shared: Arc<Shared>,
    generation: u64,
}

impl Decisions {
    /// A call starts on this thread: the handle that decides it.
    pub(super) fn start(&self) -> Decide {
        let shared = self.shared.get_or_init(|| {
            Arc::new(Shared {
                decided: AtomicU64::new(0),
                reader: std::thread::current(),
            })
        });
        let generation = self.started.get() + 1;
        self.started.set(generation);
        Decide {
            shared: Arc::clone(shared),
            generation,
        }
    }

    /// Wait until the last call started here is decided. Usually it was decided long before
    /// the next line arrived: then one atomic load and no system call.
    pub(super) fn wait(&self) {
        let Some(shared) = self.shared.get() else {
            return;
        };
        let started = self.started.get();
        // `park` returns at once after an `unpark` that came first, and may return spuriously:
        // the word is checked again each time.
        while shared.decided.load(Ordering::Acquire) < started {
            std::thread::park();
        }
    }
}

impl Decide {
    /// The call is decided: wake the reader if it waits.
    pub(super) fn decide(&self) {
        let before = self
            .shared
            .decided
            .fetch_max(self.generation, Ordering::AcqRel);
        if before < self.generation {
            self.shared.reader.unpark();
        }
    }
}

impl Drop for Decide {
    fn drop(&mut self) {
        self.decide();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_reader_waits_for_the_last_call_only_until_it_is_decided() {
        let decisions = Decisions::default();
        decisions.wait(); // nothing started: no wait
        let first = decisions.start();
        first.decide();
        decisions.wait();
        let second = decisions.start();
        let other = second.clone();
        let decider = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.decide();
        });
        let started = std::time::Instant::now();
        decisions.wait();
        assert!(started.elapsed() >= Duration::from_millis(40));
        decider.join().unwrap();
        // The clone decided it; deciding (or dropping) the original again changes nothing.
        second.decide();
        drop(second);
        decisions.wait();
        assert_eq!(decisions.started.get(), 2);
    }

    #[test]
    fn a_dropped_handle_decides_its_call() {
        let decisions = Decisions::default();
        let handle = decisions.start();
        std::thread::spawn(move || drop(handle)).join().unwrap();
        decisions.wait();
        // A stale handle of an earlier call does not decide a later one.
        let stale = decisions.start();
        let later = decisions.start();
        drop(stale);
        let shared = decisions.shared.get().unwrap();
        assert_eq!(shared.decided.load(Ordering::Acquire), 2);
        drop(later);
        decisions.wait();
    }
}
