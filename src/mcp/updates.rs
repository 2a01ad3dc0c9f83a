//! `notifications/resources/updated` bookkeeping (issue 11): one notification per change of a
//! subscribed resource, and on-disk edits of open documents noticed while a client subscribes.
//!
//! - Coalescing: changes are queued by URI and sent once [`COALESCE`] after the first of a burst,
//!   so the two publishes a change can cause (a server's push and a pull answer, two servers
//!   on one file) give one notification per URI.
//! - Disk watch: an agent edits files with its own tools too, and lspc would otherwise notice
//!   only when a tool call next touches the file. While some resource is subscribed, every
//!   [`DISK_WATCH_INTERVAL`] the open documents are `stat`ed (size and modification time, no
//!   reads); changed ones are re-checked ([`crate::engine::Op::Diagnostics`]: synced to their
//!   servers, pulled where a server only answers pulls), and their new diagnostics arrive as a
//!   change like any other.
//!
//! Invariant: a path is reported changed only against a stamp taken earlier (first sight only
//! records), so nothing is synced merely because it was seen.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long changes are gathered before their notifications go out.
pub const COALESCE: Duration = Duration::from_millis(100);

/// How often open documents are `stat`ed while a resource is subscribed.
pub const DISK_WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// How long a file changed on disk keeps being re-checked at each watch tick: a pull server
/// may first answer with its old diagnostics and send `workspace/diagnostic/refresh` once its
/// analysis is done (pyright does), and only a later check pulls the new ones.
pub const RECHECK_FOR: Duration = Duration::from_secs(5);

/// A file's stamp; `None` when it could not be `stat`ed (deleted).
type Stamp = Option<crate::file_stamp::FileStamp>;

/// Pending notifications and the disk watch's stamps (owned by the MCP loop).
#[derive(Debug)]
pub struct ResourceUpdates {
    pending: BTreeSet<String>,
    flush_at: Option<Instant>,
    stamps: HashMap<PathBuf, Stamp>,
    next_disk_check: Instant,
    /// Files changed on disk recently, re-checked until the instant given ([`RECHECK_FOR`]).
    recheck_until: HashMap<PathBuf, Instant>,
}

impl ResourceUpdates {
    pub fn new(now: Instant) -> ResourceUpdates {
        ResourceUpdates {
            pending: BTreeSet::new(),
            flush_at: None,
            stamps: HashMap::new(),
            next_disk_check: now + DISK_WATCH_INTERVAL,
            recheck_until: HashMap::new(),
        }
    }

    /// Queue `uri` (a subscribed resource that changed).
    pub fn changed(&mut self, uri: String, now: Instant) {
        self.pending.insert(uri);
        self.flush_at.get_or_insert(now + COALESCE);
    }

    /// When the loop must next call [`Self::take_due`] or [`Self::disk_check_due`]; `watching`
    /// says whether some resource is subscribed.
    pub fn deadline(&self, watching: bool) -> Option<Instant> {
        let disk = watching.then_some(self.next_disk_check);
        match (self.flush_at, disk) {
            (Some(flush), Some(disk)) => Some(flush.min(disk)),
            (flush, disk) => flush.or(disk),
        }
    }

    /// The URIs to notify now (each once), when the coalescing window has passed.
    pub fn take_due(&mut self, now: Instant) -> Vec<String> {
        match self.flush_at {
            Some(at) if at <= now => {
                self.flush_at = None;
                std::mem::take(&mut self.pending).into_iter().collect()
            }
            _ => Vec::new(),
        }
    }

    /// Whether the disk watch should run now (then the next run is scheduled).
    pub fn disk_check_due(&mut self, now: Instant) -> bool {
        if now < self.next_disk_check {
            return false;
        }
        self.next_disk_check = now + DISK_WATCH_INTERVAL;
        true
    }

    /// Of `open` (the engine's open documents), those to re-check at `now`: whose size or
    /// modification time changed since the last check, or did within [`RECHECK_FOR`]. Paths no
    /// longer open are forgotten.
    pub fn changed_on_disk(&mut self, open: Vec<PathBuf>, now: Instant) -> Vec<PathBuf> {
        let mut stamps = HashMap::with_capacity(open.len());
        for path in open {
            let stamp: Stamp = crate::file_stamp::FileStamp::of_path(&path);
            if self
                .stamps
                .get(&path)
                .is_some_and(|before| *before != stamp)
            {
                self.recheck_until.insert(path.clone(), now + RECHECK_FOR);
            }
            stamps.insert(path, stamp);
        }
        self.recheck_until
            .retain(|path, until| *until >= now && stamps.contains_key(path));
        self.stamps = stamps;
        let mut changed: Vec<PathBuf> = self.recheck_until.keys().cloned().collect();
        crate::sorting::sort(&mut changed);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_changes_gives_one_notification_per_uri() {
        let start = Instant::now();
        let mut updates = ResourceUpdates::new(start);
        assert_eq!(updates.deadline(false), None);
        assert_eq!(updates.deadline(true), Some(start + DISK_WATCH_INTERVAL));
        updates.changed("lsp://diagnostics/a.py".to_owned(), start);
        updates.changed("lsp://diagnostics".to_owned(), start + COALESCE / 2);
        updates.changed("lsp://diagnostics/a.py".to_owned(), start + COALESCE / 2);
        assert_eq!(updates.deadline(false), Some(start + COALESCE));
        assert!(updates.take_due(start + COALESCE / 2).is_empty());
        assert_eq!(
            updates.take_due(start + COALESCE),
            ["lsp://diagnostics", "lsp://diagnostics/a.py"]
        );
        assert!(updates.take_due(start + COALESCE * 3).is_empty());
        assert_eq!(updates.deadline(false), None);
    }

    #[test]
    fn disk_changes_are_seen_against_an_earlier_stamp_only() {
        let dir = std::env::temp_dir().join(format!("lspc-mcp-updates-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.py");
        let b = dir.join("b.py");
        std::fs::write(&a, "x = 1\n").unwrap();
        std::fs::write(&b, "y = 1\n").unwrap();
        let start = Instant::now();
        let mut updates = ResourceUpdates::new(start);
        assert!(!updates.disk_check_due(start));
        assert!(updates.disk_check_due(start + DISK_WATCH_INTERVAL));
        assert!(!updates.disk_check_due(start + DISK_WATCH_INTERVAL));
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        let both = || vec![a.clone(), b.clone()];
        assert!(updates.changed_on_disk(both(), at(1)).is_empty());
        assert!(updates.changed_on_disk(both(), at(2)).is_empty());
        std::fs::write(&a, "x = 22\n").unwrap();
        std::fs::remove_file(&b).unwrap();
        assert_eq!(updates.changed_on_disk(both(), at(3)), both());
        // Re-checked for RECHECK_FOR after the change, then no more.
        assert_eq!(updates.changed_on_disk(both(), at(3 + 5)), both());
        assert!(updates.changed_on_disk(both(), at(3 + 6)).is_empty());
        // A file no longer open is forgotten; one seen for the first time is only recorded.
        std::fs::write(&a, "x = 333\n").unwrap();
        assert!(updates.changed_on_disk(vec![b.clone()], at(10)).is_empty());
        assert!(updates.changed_on_disk(both(), at(11)).is_empty());
        std::fs::write(&a, "x = 4444\n").unwrap();
        assert_eq!(updates.changed_on_disk(both(), at(12)), vec![a.clone()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
