//! A session's view of the disk between requests: a bounded scan of the workspace that turns
//! files created, changed or deleted behind lspc's back (a `git checkout`, a code generator) into
//! [`Op::FilesChanged`], which the loop sends to the servers as
//! `workspace/didChangeWatchedFiles`.
//!
//! A scan lists the workspace as `lspc check` does ([`crate::walk::list_files`]: git's view
//! inside a work tree, `.gitignore` honoured) and `stat`s each file; a file counts as changed when
//! its size, modification time or inode differs from the previous scan. Invariants:
//! - At most [`MAX_WATCHED_FILES`] files are watched (the first ones in path order); beyond that
//!   the rest are not announced, and the log says so once.
//! - The first scan only records the snapshot: nothing changed before the session existed.
//! - Files the request path touches are re-synced by the loop anyway; this only covers the rest.
//! - A diagnostics request (a warm `lspc check`) asks for a scan first ([`ScanRequest`]) and is
//!   sent to the loop only once that scan's changes are: a check right after a `git checkout`
//!   must not wait for the next interval to have the servers hear of a rewritten
//!   `pyproject.toml`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crossbeam_channel::{select, Receiver, Sender};

use crate::doorbell::LoopSender;
use crate::engine::{Op, WatchedChange};

/// The most files one session watches.
pub const MAX_WATCHED_FILES: usize = 20_000;

/// How often the disk is scanned while a client is connected (or was, within [`QUIET_AFTER`]).
pub const SCAN_INTERVAL: Duration = Duration::from_secs(2);

/// How often the disk is scanned once no client has been connected for [`QUIET_AFTER`]: a scan
/// of 20,000 files costs about 85 ms of CPU, so an unused session scans rarely.
pub const QUIET_SCAN_INTERVAL: Duration = Duration::from_secs(30);

/// How long after the last client the session keeps scanning at [`SCAN_INTERVAL`].
pub const QUIET_AFTER: Duration = Duration::from_secs(60);

type Stamp = (SystemTime, u64, u64);

/// The last scan's stamps.
#[derive(Debug, Default)]
pub struct Snapshot {
    stamps: HashMap<PathBuf, Stamp>,
    scanned: bool,
    warned: bool,
}

impl Snapshot {
    /// Scans `root` and returns what changed since the previous scan, in path order.
    pub fn scan(&mut self, root: &Path) -> Vec<(PathBuf, WatchedChange)> {
        let mut files = match crate::walk::list_files(root, &[root.to_path_buf()]) {
            Ok(files) => files,
            Err(error) => {
                log::debug!("session scan of {}: {error}", root.display());
                return Vec::new();
            }
        };
        if files.len() > MAX_WATCHED_FILES {
            if !self.warned {
                log::warn!(
                    "{} has {} files; the session watches the first {MAX_WATCHED_FILES}",
                    root.display(),
                    files.len()
                );
                self.warned = true;
            }
            files.truncate(MAX_WATCHED_FILES);
        }
        let mut stamps = HashMap::with_capacity(files.len());
        for file in files {
            let Ok(metadata) = std::fs::metadata(&file) else {
                continue;
            };
            let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            stamps.insert(file, (modified, metadata.len(), metadata.ino()));
        }
        let previous = std::mem::replace(&mut self.stamps, stamps);
        if !self.scanned {
            self.scanned = true;
            return Vec::new();
        }
        let mut changes: Vec<(PathBuf, WatchedChange)> = Vec::new();
        for (path, stamp) in &self.stamps {
            match previous.get(path) {
                None => changes.push((path.clone(), WatchedChange::Created)),
                Some(old) if old != stamp => changes.push((path.clone(), WatchedChange::Changed)),
                Some(_) => {}
            }
        }
        for path in previous.keys() {
            if !self.stamps.contains_key(path) {
                changes.push((path.clone(), WatchedChange::Deleted));
            }
        }
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        changes
    }
}

/// A request for a scan now: the watch thread answers on the sender once the scan's changes
/// (if any) are on the loop's op channel, so an op sent after the answer is handled after them.
pub type ScanRequest = Sender<()>;

/// How long a request waits for its scan (a scan of [`MAX_WATCHED_FILES`] takes about 85 ms).
pub const SCAN_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Asks the watch thread for a scan now and waits (at most [`SCAN_REQUEST_TIMEOUT`]) until its
/// changes are on the loop's op channel; returns at once when the watch thread is gone.
pub fn scan_now(scan_requests: &Sender<ScanRequest>) {
    let (done_sender, done_receiver) = crossbeam_channel::bounded(1);
    if scan_requests.send(done_sender).is_ok() {
        let _ = done_receiver.recv_timeout(SCAN_REQUEST_TIMEOUT);
    }
}

/// The `"lspc-session-watch"` thread's loop: scan every [`SCAN_INTERVAL`] (every
/// [`QUIET_SCAN_INTERVAL`] once `has_clients` has been false for [`QUIET_AFTER`]), and at once
/// for each [`ScanRequest`], until `stop` fires or the engine is gone.
pub fn run(
    root: PathBuf,
    op_sender: LoopSender<Op>,
    stop: Receiver<()>,
    scan_requests: Receiver<ScanRequest>,
    has_clients: impl Fn() -> bool,
) {
    let mut snapshot = Snapshot::default();
    let mut last_client = std::time::Instant::now();
    let mut last_scan: Option<std::time::Instant> = None;
    let mut scan_requests = scan_requests;
    loop {
        if has_clients() {
            last_client = std::time::Instant::now();
        }
        let interval = if last_client.elapsed() < QUIET_AFTER {
            SCAN_INTERVAL
        } else {
            QUIET_SCAN_INTERVAL
        };
        let mut requested: Option<ScanRequest> = None;
        if last_scan.is_some_and(|scanned| scanned.elapsed() < interval) {
            select! {
                recv(stop) -> _ => return,
                recv(scan_requests) -> request => match request {
                    Ok(done) => requested = Some(done),
                    // Every requester is gone: keep scanning on the interval only.
                    Err(_) => scan_requests = crossbeam_channel::never(),
                },
                default(Duration::from_millis(500)) => {}
            }
            if requested.is_none() {
                continue;
            }
        }
        last_scan = Some(std::time::Instant::now());
        let changes = snapshot.scan(&root);
        if !changes.is_empty() {
            log::info!("{} file(s) changed on disk", changes.len());
            if op_sender.send(Op::FilesChanged { changes }).is_err() {
                return;
            }
        }
        if let Some(done) = requested {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_report_created_changed_and_deleted_files_once() {
        let root = std::env::temp_dir().join(format!("lspc-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("a.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("b.py"), "b = 1\n").unwrap();
        let mut snapshot = Snapshot::default();
        assert_eq!(snapshot.scan(&root), []);
        std::fs::write(root.join("a.py"), "a = 22\n").unwrap();
        std::fs::remove_file(root.join("b.py")).unwrap();
        std::fs::write(root.join("c.py"), "c = 1\n").unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [
                (root.join("a.py"), WatchedChange::Changed),
                (root.join("b.py"), WatchedChange::Deleted),
                (root.join("c.py"), WatchedChange::Created),
            ]
        );
        assert_eq!(snapshot.scan(&root), []);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
