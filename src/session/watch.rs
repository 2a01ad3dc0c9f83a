//! A session's view of the disk between requests: a bounded scan of the workspace that turns
//! files created, changed or deleted behind lspc's back (a `git checkout`, a code generator) into
//! [`Op::FilesChanged`], which the loop sends to the servers as
//! `workspace/didChangeWatchedFiles`.
//!
//! A scan lists the workspace as `lspc check` does ([`crate::walk::list_files`]: git's view
//! inside a work tree, `.gitignore` honoured) and `stat`s each file; a file counts as changed when
//! its size, modification time, status-change time, inode or birth time differs from the previous
//! scan (the status-change time catches `cp -p` and `touch -r`, which keep the size and set an
//! older modification time), and as [`WatchedChange::Replaced`] when the inode or the birth time
//! differs (a file deleted and written again). The packages of each `node_modules` folder beside
//! a listed `package.json` (ignored by git, so not listed) are stamped too: when one is added,
//! removed or replaced (`npm install`), the folder itself is reported changed (`Replaced` when a
//! package link changed: pnpm), for the servers that resolve imports there
//! (`engine/tsserver_reload.rs`). The files tsserver's projects hold that the listing leaves out
//! (git-ignored: a package's declarations, a generated module) are stamped too, from the list
//! the engine sends ([`Op::SubscribeProjectFiles`], `session/project_files.rs`).
//! The configuration files servers read that the listing leaves out are stamped too
//! (`unlisted_configuration`: those in the folders above the root, a git-ignored
//! `build/compile_commands.json`), and so is each symlink to a listed file, under the link's
//! own name (`Listing::links`), since servers read a file under that name.
//! Invariants:
//! - At most [`MAX_WATCHED_FILES`] files are watched: those the configured servers claim and
//!   the configuration files they read first, then the others, each in path order
//!   (`session/watch_priority.rs`); beyond that the rest are not announced, and the log says so
//!   once. Of their folders, those of the files taken first get inotify watches first.
//! - The first scan only records the snapshot: nothing changed before the session existed.
//! - Files the request path touches are re-synced by the loop anyway; this only covers the rest.
//! - A configuration file that some server reads only at known moments
//!   ([`Program::compares_configuration`]: `pyproject.toml`, `pyrightconfig.json`, `ruff.toml`,
//!   `compile_commands.json`, `compile_flags.txt`) and whose stamp changed with its content the
//!   same (an editor's save without an edit, a build writing its compilation database again,
//!   `touch`) is reported apart, as rewritten since this scan's predecessor began
//!   ([`Snapshot::take_rewritten`]); the loop decides whether a server may have read other
//!   bytes in between (`engine/configuration_reads.rs`). Its content is kept as a keyed hash,
//!   read again only when its stamp changed, up to [`MAX_COMPARED_CONFIGURATION`] bytes (a
//!   larger one is changed whenever its stamp is).
//! - A diagnostics request (a warm `lspc check`) asks for a scan first ([`ScanRequest`]) and is
//!   sent to the loop only once that scan's changes are: a check right after a `git checkout`
//!   must not wait for the next interval to have the servers hear of a rewritten
//!   `pyproject.toml`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver, Sender};

use crate::config::Program;
use crate::doorbell::LoopSender;
use crate::engine::{Op, WatchedChange};
use crate::file_stamp::FileStamp as Stamp;

pub use super::watch_priority::WatchPriority;

/// The most files one session watches.
pub const MAX_WATCHED_FILES: usize = 20_000;

/// The most folders whose events a watch asks inotify for (the per-user watch limit is shared
/// with every other tool; 8,192 on older kernels).
pub const MAX_WATCHED_FOLDERS: usize = 2_000;

/// How often the disk is scanned while a client is connected (or was, within [`QUIET_AFTER`]).
pub const SCAN_INTERVAL: Duration = Duration::from_secs(2);

/// How often the disk is scanned once no client has been connected for [`QUIET_AFTER`]: a scan
/// of 20,000 files costs about 85 ms of CPU, so an unused session scans rarely.
pub const QUIET_SCAN_INTERVAL: Duration = Duration::from_secs(30);

/// How long after the last client the session keeps scanning at [`SCAN_INTERVAL`].
pub const QUIET_AFTER: Duration = Duration::from_secs(60);

/// The most `node_modules` folders one session stamps the packages of (a monorepo has one per
/// workspace package; helper-66 met a 17th left out with 16).
pub const MAX_PACKAGE_FOLDERS: usize = 256;

/// The largest configuration file whose content a scan compares (see the module doc); a large
/// project's `compile_commands.json` is tens of megabytes, read in about as many milliseconds.
pub const MAX_COMPARED_CONFIGURATION: u64 = 64 << 20;

/// The last scan's stamps.
#[derive(Debug, Default)]
pub struct Snapshot {
    stamps: HashMap<PathBuf, Stamp>,
    /// The content hash of each configuration file the module doc names, keyed by
    /// `content_keys` (a file's author cannot choose a colliding rewrite).
    contents: HashMap<PathBuf, u64>,
    content_keys: RandomState,
    /// When the last scan began.
    started: Option<Instant>,
    /// The configuration files servers read that the listing leaves out
    /// ([`unlisted_configuration`]), stamped with the listed files; their folders are not
    /// watched for events.
    unlisted: std::collections::HashSet<PathBuf>,
    /// The last scan's configuration files written again with the same bytes, with when the
    /// scan before it began ([`Snapshot::take_rewritten`]).
    rewritten: Vec<(PathBuf, Instant)>,
    /// Per `node_modules` folder, its packages' stamps ([`package_stamps`]).
    packages: HashMap<PathBuf, HashMap<PathBuf, Stamp>>,
    /// The files of tsserver's projects the listing leaves out (`session/project_files.rs`).
    project_files: super::project_files::ProjectFiles,
    /// Which files come first when there are more than the bound ([`WatchPriority`]).
    priority: WatchPriority,
    scanned: bool,
    warned: bool,
    warned_packages: bool,
}

impl Snapshot {
    /// Scans `root` and returns what changed since the previous scan, in path order.
    /// Configuration files written again with the same bytes are left out of the returned
    /// changes and kept for [`Snapshot::take_rewritten`].
    pub fn scan(&mut self, root: &Path) -> Vec<(PathBuf, WatchedChange)> {
        let started = Instant::now();
        self.rewritten.clear();
        let listing = match crate::walk::list_files_found(root, &[root.to_path_buf()]) {
            Ok(listing) => listing,
            Err(error) => {
                log::debug!("session scan of {}: {error}", root.display());
                return Vec::new();
            }
        };
        // A symlinked file is listed by its target; its link is stamped too (through the link),
        // so a change of the target is also one of the name servers read it under.
        let mut files: Vec<PathBuf> = listing.files.into_iter().map(|file| file.path).collect();
        files.extend(listing.links);
        let total = files.len();
        let left_out = self.priority.keep_first(&mut files, MAX_WATCHED_FILES);
        if left_out.files > 0 && !self.warned {
            let unseen = match left_out.covered {
                0 => String::new(),
                covered => format!(
                    "; {covered} files the servers read are past that bound (the last in path \
                     order): the servers will not hear of changes made to them behind lspc"
                ),
            };
            log::warn!(
                "{} has {total} files; lspc watches {MAX_WATCHED_FILES} of them for changes \
                 made behind it: those the servers claim and their configuration files first, \
                 then the others in path order{unseen}",
                root.display(),
            );
            self.warned = true;
        }
        let mut package_folders: Vec<PathBuf> = files
            .iter()
            .filter(|file| file.file_name().is_some_and(|name| name == "package.json"))
            .filter_map(|file| Some(file.parent()?.join("node_modules")))
            .filter(|folder| folder.is_dir())
            .collect();
        if package_folders.len() > MAX_PACKAGE_FOLDERS {
            if !self.warned_packages {
                log::warn!(
                    "{} has {} node_modules folders beside a package.json; the session watches \
                     the packages of the first {MAX_PACKAGE_FOLDERS}",
                    root.display(),
                    package_folders.len()
                );
                self.warned_packages = true;
            }
            package_folders.truncate(MAX_PACKAGE_FOLDERS);
        }
        self.unlisted = unlisted_configuration(root, &files);
        let mut stamps = HashMap::with_capacity(files.len() + self.unlisted.len());
        for file in files.into_iter().chain(self.unlisted.iter().cloned()) {
            let Ok(metadata) = std::fs::metadata(&file) else {
                continue;
            };
            stamps.insert(file, Stamp::of(&metadata));
        }
        let packages: HashMap<PathBuf, HashMap<PathBuf, Stamp>> = package_folders
            .into_iter()
            .map(|folder| {
                let stamps = package_stamps(&folder);
                (folder, stamps)
            })
            .collect();
        let previous = std::mem::replace(&mut self.stamps, stamps);
        let previous_packages = std::mem::replace(&mut self.packages, packages);
        let previous_contents = self.hash_configuration_files(&previous);
        let since = self.started.replace(started);
        if !self.scanned {
            self.scanned = true;
            return Vec::new();
        }
        let mut changes: Vec<(PathBuf, WatchedChange)> = Vec::new();
        for (path, stamp) in &self.stamps {
            let same_content = || {
                previous_contents
                    .get(path)
                    .is_some_and(|before| self.contents.get(path) == Some(before))
            };
            match previous.get(path) {
                None => changes.push((path.clone(), WatchedChange::Created)),
                Some(old) if old != stamp && same_content() => match since {
                    Some(since) => self.rewritten.push((path.clone(), since)),
                    None => changes.push((path.clone(), WatchedChange::Changed)),
                },
                Some(old) if old.other_file(stamp) => {
                    changes.push((path.clone(), WatchedChange::Replaced))
                }
                Some(old) if old != stamp => changes.push((path.clone(), WatchedChange::Changed)),
                Some(_) => {}
            }
        }
        for path in previous.keys() {
            if !self.stamps.contains_key(path) {
                changes.push((path.clone(), WatchedChange::Deleted));
            }
        }
        // A folder first stamped now (made by the first `npm install`) counts as changed, one
        // no longer stamped (removed) too; [`WatchedChange::Replaced`] when a package that was a
        // link, or is one now, changed (pnpm pointing a package at another version).
        let empty = HashMap::new();
        for (folder, packages) in &self.packages {
            let before = previous_packages.get(folder);
            if before == Some(packages) {
                continue;
            }
            let before = before.unwrap_or(&empty);
            // A link made or removed is a package added or removed, which a reload covers.
            let relinked = packages.iter().any(|(path, stamp)| {
                before
                    .get(path)
                    .is_some_and(|old| old != stamp && (old.is_link() || stamp.is_link()))
            });
            let kind = match relinked {
                true => WatchedChange::Replaced,
                false => WatchedChange::Changed,
            };
            changes.push((folder.clone(), kind));
        }
        for folder in previous_packages.keys() {
            if !self.packages.contains_key(folder) {
                changes.push((folder.clone(), WatchedChange::Changed));
            }
        }
        changes.extend(self.project_files.scan(&self.stamps));
        crate::sorting::sort_by(&mut changes, |a, b| a.0.cmp(&b.0));
        crate::sorting::sort_by(&mut self.rewritten, |a, b| a.0.cmp(&b.0));
        changes
    }

    /// The last scan's configuration files written again with the bytes they had, each with
    /// when the scan before it began, which saw those bytes (see the module doc); in path order.
    pub fn take_rewritten(&mut self) -> Vec<(PathBuf, Instant)> {
        std::mem::take(&mut self.rewritten)
    }
}

impl Snapshot {
    /// Hash the configuration files of this scan's stamps whose stamp is new or changed since
    /// `previous`, keep the others' hashes; returns the previous scan's hashes.
    fn hash_configuration_files(
        &mut self,
        previous: &HashMap<PathBuf, Stamp>,
    ) -> HashMap<PathBuf, u64> {
        let previous_contents = std::mem::take(&mut self.contents);
        for (path, stamp) in &self.stamps {
            // The short list first: every compared name is one of them, and this runs for each
            // of up to 20,000 files a scan.
            let compared = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| {
                    LOOKED_UP_CONFIGURATION.contains(&name) && Program::compares_configuration(name)
                });
            if !compared {
                continue;
            }
            let hash = match previous.get(path) == Some(stamp) {
                true => previous_contents.get(path).copied(),
                false => content_hash(&self.content_keys, path, stamp),
            };
            if let Some(hash) = hash {
                self.contents.insert(path.clone(), hash);
            }
        }
        previous_contents
    }

    /// Watch `files` (the engine's list of tsserver's project files) besides the listing,
    /// from the next scan on.
    pub fn set_project_files(&mut self, list: crate::engine::ProjectFileList) {
        self.project_files.set(list, &self.stamps);
        log::debug!(
            "the watch stamps {} project file(s) the workspace listing leaves out",
            self.project_files.len()
        );
    }
}

/// The names of the configuration files servers look up in the folders above the files they
/// serve, also above the workspace root: clangd (its compilation database and flags, `.clangd`),
/// ruff, tsserver (`tsconfig.json`, `jsconfig.json`).
const LOOKED_UP_CONFIGURATION: [&str; 9] = [
    "compile_commands.json",
    "compile_flags.txt",
    ".clangd",
    "pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
    "pyrightconfig.json",
    "tsconfig.json",
    "jsconfig.json",
];

/// The configuration files servers read that a workspace listing (`files`, git's view) leaves
/// out, where they exist: those named [`LOOKED_UP_CONFIGURATION`] in each folder above `root`
/// (helper-69: an `outer/compile_flags.txt` or `outer/ruff.toml` edited was never seen), and a
/// `build/compile_commands.json` below each folder of a listed file (clangd looks there; CMake's
/// build folder is git-ignored, helper-69).
fn unlisted_configuration(root: &Path, files: &[PathBuf]) -> std::collections::HashSet<PathBuf> {
    let listed: std::collections::HashSet<&Path> = files.iter().map(PathBuf::as_path).collect();
    let exists = |path: &PathBuf| !listed.contains(path.as_path()) && path.is_file();
    let above = root
        .ancestors()
        .skip(1)
        .flat_map(|folder| LOOKED_UP_CONFIGURATION.map(|name| folder.join(name)));
    let folders: std::collections::BTreeSet<&Path> = std::iter::once(root)
        .chain(files.iter().filter_map(|file| file.parent()))
        .filter(|folder| folder.starts_with(root))
        .collect();
    let build = folders
        .into_iter()
        .map(|folder| folder.join("build/compile_commands.json"));
    above.chain(build).filter(exists).collect()
}

/// `path`'s content hashed with `keys`; `None` when it is larger than
/// [`MAX_COMPARED_CONFIGURATION`] or cannot be read.
fn content_hash(keys: &RandomState, path: &Path, stamp: &Stamp) -> Option<u64> {
    if stamp.size() > MAX_COMPARED_CONFIGURATION {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let mut hasher = keys.build_hasher();
    hasher.write(&bytes);
    Some(hasher.finish())
}

/// The stamps of the packages in `node_modules` (each entry not hidden, and each entry of a
/// scope folder `@scope`), as links (`pnpm` links its packages): adding, removing or replacing
/// a package changes them; files written inside a package do not. Empty when it cannot be read.
fn package_stamps(node_modules: &Path) -> HashMap<PathBuf, Stamp> {
    let mut stamps = HashMap::new();
    let entries = |folder: &Path| -> Vec<(PathBuf, std::fs::Metadata)> {
        let Ok(read) = std::fs::read_dir(folder) else {
            return Vec::new();
        };
        read.filter_map(Result::ok)
            .filter(|entry| !entry.file_name().as_encoded_bytes().starts_with(b"."))
            .filter_map(|entry| Some((entry.path(), entry.metadata().ok()?)))
            .collect()
    };
    for (path, metadata) in entries(node_modules) {
        let scope = path
            .file_name()
            .is_some_and(|name| name.as_encoded_bytes().starts_with(b"@"));
        if scope && metadata.is_dir() {
            for (path, metadata) in entries(&path) {
                stamps.insert(path, Stamp::of(&metadata));
            }
        }
        stamps.insert(path, Stamp::of(&metadata));
    }
    stamps
}

/// A request for a scan now: the watch thread answers on the sender once the scan's changes
/// (if any) are on the loop's op channel, so an op sent after the answer is handled after them.
pub type ScanRequest = Sender<()>;

/// How long a request waits for its scan (a scan of [`MAX_WATCHED_FILES`] takes about 85 ms).
pub const SCAN_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Asks the watch thread for a scan now and waits (at most [`SCAN_REQUEST_TIMEOUT`]) until its
/// changes are on the loop's op channel; returns at once when the watch thread is gone. A scan
/// that takes longer is logged (a warning): the request then goes on, and the servers may not
/// have heard yet of a file written just before it.
pub fn scan_now(scan_requests: &Sender<ScanRequest>) {
    let (done_sender, done_receiver) = crossbeam_channel::bounded(1);
    if scan_requests.send(done_sender).is_ok()
        && done_receiver.recv_timeout(SCAN_REQUEST_TIMEOUT)
            == Err(crossbeam_channel::RecvTimeoutError::Timeout)
    {
        log::warn!(
            "the scan of the workspace asked for before a request took over {} s; \
             the request goes on without it",
            SCAN_REQUEST_TIMEOUT.as_secs()
        );
    }
}

/// The workspace a watch thread scans: its root (canonical), and which of its files come first
/// when it has more than [`MAX_WATCHED_FILES`] ([`WatchPriority::of`] the configuration).
#[derive(Clone, Debug)]
pub struct WatchedWorkspace {
    pub root: PathBuf,
    pub priority: WatchPriority,
}

impl WatchedWorkspace {
    /// `root` watched for `config`'s servers: the files they claim and the configuration files
    /// they read come first.
    pub fn of(root: PathBuf, config: &crate::config::Config) -> WatchedWorkspace {
        WatchedWorkspace {
            root,
            priority: WatchPriority::of(config, &LOOKED_UP_CONFIGURATION),
        }
    }
}

/// The `"lspc-session-watch"` thread's loop: scan every [`SCAN_INTERVAL`] (every
/// [`QUIET_SCAN_INTERVAL`] once `has_clients` has been false for [`QUIET_AFTER`]), and at once
/// for each [`ScanRequest`], until `stop` fires or the engine is gone.
pub fn run(
    workspace: WatchedWorkspace,
    op_sender: LoopSender<Op>,
    stop: Receiver<()>,
    scan_requests: Receiver<ScanRequest>,
    has_clients: impl Fn() -> bool,
) {
    let lists = ProjectLists::default();
    run_with_events(
        workspace,
        op_sender,
        stop,
        scan_requests,
        has_clients,
        None,
        &lists,
    );
}

/// [`run`] for the requests that check `freshness`: its folder events are kept watching the
/// folders of the files each scan lists.
pub fn run_fresh(
    workspace: WatchedWorkspace,
    op_sender: LoopSender<Op>,
    stop: Receiver<()>,
    scan_requests: Receiver<ScanRequest>,
    has_clients: impl Fn() -> bool,
    freshness: &Freshness,
) {
    let events = freshness.events.as_ref();
    let lists = &freshness.lists;
    run_with_events(
        workspace,
        op_sender,
        stop,
        scan_requests,
        has_clients,
        events,
        lists,
    );
}

/// [`run`], keeping `events` watching the folders of the files each scan lists and of the
/// project files the engine sends ([`Op::SubscribeProjectFiles`], counted in `lists`); the
/// event queue is read just before each scan, so an event queued before a [`ScanRequest`] is
/// covered by it.
fn run_with_events(
    workspace: WatchedWorkspace,
    op_sender: LoopSender<Op>,
    stop: Receiver<()>,
    scan_requests: Receiver<ScanRequest>,
    has_clients: impl Fn() -> bool,
    events: Option<&DirEvents>,
    lists: &ProjectLists,
) {
    let WatchedWorkspace { root, priority } = workspace;
    let mut watched_folders: std::collections::HashSet<PathBuf> = Default::default();
    let mut snapshot = Snapshot {
        priority,
        ..Snapshot::default()
    };
    let mut last_client = std::time::Instant::now();
    let mut last_scan: Option<std::time::Instant> = None;
    let mut scan_requests = scan_requests;
    let (project_files_sender, mut project_files) = crossbeam_channel::unbounded();
    let subscribe = Op::SubscribeProjectFiles {
        sender: project_files_sender,
        sent: Arc::clone(&lists.sent),
    };
    if op_sender.send(subscribe).is_err() {
        return;
    }
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
        let mut heard = Vec::new();
        if last_scan.is_some_and(|scanned| scanned.elapsed() < interval) {
            select! {
                recv(stop) -> _ => return,
                recv(scan_requests) -> request => match request {
                    Ok(done) => requested = Some(done),
                    // Every requester is gone: keep scanning on the interval only.
                    Err(_) => scan_requests = crossbeam_channel::never(),
                },
                recv(project_files) -> list => match list {
                    Ok(list) => heard.push(list),
                    Err(_) => project_files = crossbeam_channel::never(),
                },
                default(Duration::from_millis(500)) => {}
            }
            if requested.is_none() && heard.is_empty() {
                continue;
            }
        }
        heard.extend(project_files.try_iter());
        let taken = heard.len() as u64;
        for list in heard {
            if let Some(events) = events {
                // Watched before the files are stamped: a write between the two raises an
                // event.
                let folders = list.files.iter().filter_map(|file| file.parent());
                watch_new_folders(events, folders, &mut watched_folders);
            }
            snapshot.set_project_files(list);
        }
        // A new list needs a scan only for files written since tsserver read them.
        if requested.is_none() && taken > 0 && !snapshot.project_files.has_newer() {
            if let Some(events) = events {
                watch_folders(events, &snapshot, &root, &mut watched_folders);
            }
            lists.taken.fetch_add(taken, Ordering::SeqCst);
            continue;
        }
        last_scan = Some(std::time::Instant::now());
        // From the drain until the changes are on the loop's channel, a request that finds the
        // queue empty waits for this scan ([`Freshness::stale`]), if it read an event: an event
        // queued after the drain keeps the queue pending for requests, so a scan that read none
        // holds no request up (the periodic scan of a large quiet workspace, about 85 ms).
        let mut in_flight = events.map(|events| events.scan.begin());
        if let Some(events) = events {
            if !events.drain() {
                in_flight = None;
            }
        }
        let changes = snapshot.scan(&root);
        let rewritten = snapshot.take_rewritten();
        if let Some(events) = events {
            watch_folders(events, &snapshot, &root, &mut watched_folders);
        }
        if !changes.is_empty() || !rewritten.is_empty() {
            if !changes.is_empty() {
                log::info!("{} file(s) changed on disk", changes.len());
            }
            if !rewritten.is_empty() {
                log::info!(
                    "{} configuration file(s) written again with the same bytes",
                    rewritten.len()
                );
            }
            if op_sender
                .send(Op::FilesChanged { changes, rewritten })
                .is_err()
            {
                return;
            }
        }
        drop(in_flight);
        // Only now: a request that saw these lists waiting is sent after their changes.
        lists.taken.fetch_add(taken, Ordering::SeqCst);
        if let Some(done) = requested {
            let _ = done.send(());
        }
    }
}

/// Has `events` watch the folders of `snapshot`'s files (at most [`MAX_WATCHED_FOLDERS`]; the
/// root and the folders of the files its priority takes first come first): the root, each
/// listed file's folder, the `node_modules` folders and their scope folders (`npm install` adds
/// a package there), and the project files' folders (watched again each time); and the unlisted
/// configuration files themselves, not their folders (a build folder or a home folder is
/// written to all the time), and the listed configuration files themselves too. `watched` is
/// what is watched already.
fn watch_folders(
    events: &DirEvents,
    snapshot: &Snapshot,
    root: &Path,
    watched: &mut std::collections::HashSet<PathBuf>,
) {
    let (project_folders, awaited) = snapshot.project_files.watch_targets();
    if let Ok(mut names) = events.awaited.lock() {
        *names = awaited;
    }
    if events
        .lost
        .swap(false, std::sync::atomic::Ordering::Relaxed)
    {
        // Watching a folder watched already costs one call and keeps its watch.
        watched.clear();
    }
    let folders: std::collections::HashSet<&Path> = std::iter::once(root)
        .chain(
            snapshot
                .stamps
                .keys()
                .filter(|file| !snapshot.unlisted.contains(*file))
                .filter_map(|file| file.parent()),
        )
        .chain(snapshot.packages.keys().map(PathBuf::as_path))
        .chain(
            snapshot
                .packages
                .values()
                .flat_map(|packages| packages.keys().filter_map(|package| package.parent())),
        )
        .chain(project_folders.iter().map(PathBuf::as_path))
        .chain(snapshot.unlisted.iter().map(PathBuf::as_path))
        // A listed configuration file by inode too: one written through a hard link outside
        // the root raises no event in its folder (helper-70).
        .chain(
            snapshot
                .stamps
                .keys()
                .filter(|file| {
                    file.file_name()
                        .is_some_and(|name| LOOKED_UP_CONFIGURATION.iter().any(|c| name == *c))
                })
                .map(PathBuf::as_path),
        )
        .collect();
    // A folder that holds no listed file now may be gone, and its watch with it (the kernel
    // drops the watch of a deleted folder): watched again if it comes back.
    watched.retain(|folder| folders.contains(folder.as_path()));
    let mut folders: Vec<&Path> = folders.into_iter().collect();
    // The root and the folders of the files taken first (`WatchPriority`) first, each group in
    // path order, so the folders watched under the bound do not vary from scan to scan.
    if folders.len() <= MAX_WATCHED_FOLDERS {
        folders.sort_unstable();
    } else {
        let first: std::collections::HashSet<&Path> = std::iter::once(root)
            .chain(
                snapshot
                    .stamps
                    .keys()
                    .filter(|file| snapshot.priority.covers(file))
                    .filter_map(|file| file.parent()),
            )
            .collect();
        folders.sort_unstable_by_key(|folder| (!first.contains(folder), *folder));
    }
    watch_new_folders(events, folders.iter().copied(), watched);
    // Again: a generator that removes its output folder and makes it anew (`prisma generate`)
    // leaves the old watch on the removed folder; watching the same folder again costs one call
    // and keeps its watch.
    for folder in project_folders
        .iter()
        .filter(|folder| watched.contains(*folder))
    {
        events.watch(folder);
    }
}

/// Has `events` watch each of `folders` not in `watched` yet, while `watched` holds fewer than
/// [`MAX_WATCHED_FOLDERS`] (the first time past it is logged).
fn watch_new_folders<'a>(
    events: &DirEvents,
    folders: impl Iterator<Item = &'a Path>,
    watched: &mut std::collections::HashSet<PathBuf>,
) {
    for folder in folders {
        if watched.contains(folder) {
            continue;
        }
        if watched.len() >= MAX_WATCHED_FOLDERS {
            // Watches are a per-user budget shared with editors and other tools.
            if !events
                .warned
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                log::info!(
                    "more than {MAX_WATCHED_FOLDERS} folders hold watched files; changes in the \
                     others are noticed by the scan every {} s",
                    SCAN_INTERVAL.as_secs()
                );
            }
            return;
        }
        events.watch(folder);
        watched.insert(folder.to_path_buf());
    }
}

/// A watch thread owned by a frontend that runs its engine in process (`lspc mcp`, which may
/// live as long as a session): [`run`] on a thread named `name`, active while `active` was set
/// since the previous look (the frontend sets it for each message it reads). Dropping it stops
/// the thread and joins it (at most one scan's time).
pub struct WatchThread {
    stop: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    freshness: Arc<Freshness>,
}

/// What a request checks before it is served, so that a file written (and closed) before the
/// request was sent is announced to the servers before the request reaches them: Linux queues
/// the inotify event inside the `close` or `rename` that made the change, so [`Freshness::stale`]
/// (one `ioctl`) sees it, and [`Freshness::catch_up`] has the watch thread scan and put the
/// changes on the loop's op channel ahead of the request. Writes to a file kept open (a log)
/// raise no event here; they are found by the periodic scan.
pub struct Freshness {
    events: Option<DirEvents>,
    lists: ProjectLists,
    scan_requests: Sender<ScanRequest>,
}

/// How many lists of tsserver's project files the engine sent the watch
/// ([`Op::SubscribeProjectFiles`]) and how many the watch has taken into account (stamped, and
/// scanned when one of their files was newer than tsserver's read): a request made while they
/// differ waits for a scan, since the engine sends a list before it answers the diagnostics it
/// was asked for with (`engine/tsserver_project_files.rs`).
#[derive(Default)]
pub struct ProjectLists {
    sent: Arc<AtomicU64>,
    taken: AtomicU64,
}

impl ProjectLists {
    /// Whether a list was sent that the watch has not taken into account yet.
    fn waiting(&self) -> bool {
        self.sent.load(Ordering::SeqCst) != self.taken.load(Ordering::SeqCst)
    }
}

impl Freshness {
    /// The check of requests whose scans the watch thread reading `scan_requests` makes
    /// ([`run_fresh`] with this check); without inotify, [`Freshness::stale`] is always false.
    pub fn new(scan_requests: Sender<ScanRequest>) -> Arc<Freshness> {
        Arc::new(Freshness {
            events: DirEvents::start(),
            lists: ProjectLists::default(),
            scan_requests,
        })
    }

    /// Whether a folder event is queued that no scan has covered yet (`false` without inotify:
    /// then only the periodic scans notice changes), or a scan is running that read the queue
    /// and has not yet put its changes on the loop's channel, or a list of project files the
    /// watch has not taken into account.
    ///
    /// The queue is looked at before the running scan: a scan reads the queue after it is
    /// marked running, so a request that finds the queue emptied by it finds it running (until
    /// its changes are sent). Without that second look, a request sent while a periodic scan
    /// was between its read of the queue and its message to the loop reached the server
    /// before the change it was sent after: a pyright definition asked 40 ms after an edit
    /// landed on the old text 8 times in 100 in `lspc batch` and 5 in 100 through a session,
    /// in a workspace whose scan takes tens of ms (15,000 files), and once in a CI run.
    pub fn stale(&self) -> bool {
        self.lists.waiting()
            || self
                .events
                .as_ref()
                .is_some_and(|events| events.pending() || events.scan.running())
    }

    /// Wait (at most [`SCAN_REQUEST_TIMEOUT`]) until a scan has announced what changed: the
    /// running scan's end when it read the queue and nothing was queued since, else a scan of
    /// its own.
    pub fn catch_up(&self) {
        if let Some(events) = &self.events {
            if !self.lists.waiting() && !events.pending() && events.scan.running() {
                events.scan.wait_for_end(SCAN_REQUEST_TIMEOUT);
                return;
            }
        }
        scan_now(&self.scan_requests);
    }
}

/// An inotify instance watching the workspace's folders for entries created, written, deleted
/// or renamed (`IN_CREATE`, `IN_CLOSE_WRITE`, `IN_DELETE`, `IN_MOVED_FROM`, `IN_MOVED_TO`). Not
/// `IN_MODIFY`, so a log file appended to in the workspace raises nothing. `IN_CREATE` is what
/// a new folder raises in its parent: the files written into it before it is watched (from the
/// next scan) raise nothing of their own, so a folder deleted and made again (`git checkout`, a
/// generator that rewrites its output folder) would otherwise go unseen until the periodic scan.
/// A created hidden entry does not count ([`DirEvents::pending`]): a server making its cache
/// folder (clangd's `.cache`) sends no call through a scan. A folder that cannot be
/// watched (the watch limit) is logged once and left to the periodic scans.
struct DirEvents {
    inotify: crate::inotify::Inotify,
    warned: std::sync::atomic::AtomicBool,
    /// Names whose creation counts even when hidden: what may bring back a missing project
    /// file (`ProjectFiles::watch_targets`; a generator's `node_modules/.greet` made again).
    awaited: std::sync::Mutex<Vec<std::ffi::OsString>>,
    /// Set when a watch was lost: a watched folder deleted (the kernel drops its watch), moved
    /// (its watch follows it elsewhere: the workspace folder moved away and a copy put in its
    /// place), or events were dropped. The next [`watch_folders`] watches every folder again
    /// (helper-68: after such a swap the watch held 1 folder of 23 for good, and a file saved
    /// there went unseen until the periodic scan, 1.8-2.5 s).
    lost: std::sync::atomic::AtomicBool,
    /// Whether a scan is between reading this queue and sending its changes.
    scan: RunningScan,
}

/// Whether the watch thread's scan is running, from just before it reads the event queue until
/// its changes are on the loop's channel ([`Freshness::stale`]); a request can wait for its end.
#[derive(Default)]
struct RunningScan {
    running: std::sync::atomic::AtomicBool,
    lock: std::sync::Mutex<()>,
    ended: std::sync::Condvar,
}

/// Ends the scan [`RunningScan::begin`] marked running when dropped.
struct ScanInFlight<'a>(&'a RunningScan);

impl RunningScan {
    /// Marks a scan running until the returned guard is dropped.
    fn begin(&self) -> ScanInFlight<'_> {
        self.running.store(true, Ordering::SeqCst);
        ScanInFlight(self)
    }

    fn running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// Waits until no scan runs, at most `timeout` (logged when it passes).
    fn wait_for_end(&self, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        let mut guard = match self.lock.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        while self.running() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                log::warn!(
                    "the workspace's running scan did not end within {} s; the request goes on \
                     without it",
                    timeout.as_secs()
                );
                return;
            }
            guard = match self.ended.wait_timeout(guard, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

impl Drop for ScanInFlight<'_> {
    fn drop(&mut self) {
        let _guard = self.0.lock.lock();
        self.0.running.store(false, Ordering::SeqCst);
        self.0.ended.notify_all();
    }
}

const DIR_EVENT_MASK: u32 = libc::IN_CREATE
    | libc::IN_CLOSE_WRITE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF;

/// Events that tell that a watch no longer watches the folder at its path
/// ([`DirEvents::lost`]).
const LOST_WATCH: u32 =
    libc::IN_IGNORED | libc::IN_MOVE_SELF | libc::IN_DELETE_SELF | libc::IN_Q_OVERFLOW;

impl DirEvents {
    /// A non-blocking inotify instance; `None` when the kernel refuses one.
    fn start() -> Option<DirEvents> {
        crate::inotify::Inotify::start().map(|inotify| DirEvents {
            inotify,
            warned: Default::default(),
            awaited: Default::default(),
            lost: Default::default(),
            scan: Default::default(),
        })
    }

    fn watch(&self, folder: &Path) {
        if let Err(error) = self.inotify.add(folder, DIR_EVENT_MASK) {
            if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                log::warn!(
                    "cannot watch {} ({error}): changes there are noticed by the scan every {} s",
                    folder.display(),
                    SCAN_INTERVAL.as_secs()
                );
            }
        }
    }

    /// Whether an event that tells of a change is queued: any but `IN_CREATE` of a hidden entry
    /// (a server's cache, clangd's `.cache`, which no scan lists; an editor's `.x.swp`). A
    /// created file counts at once: a link (`ln -s`, `ln`, pnpm's packages) raises no
    /// `IN_CLOSE_WRITE` after it (helper-66: a module made as a link was answered missing, as
    /// complete, until the next periodic scan). One `ioctl` when nothing is queued; `true` when
    /// that cannot be told.
    fn pending(&self) -> bool {
        use std::os::unix::ffi::OsStrExt;
        // Locked only for a hidden entry created: one `ioctl` and nothing else per request
        // when nothing is queued.
        self.inotify.pending_where(&|mask, name| {
            self.note_lost(mask);
            mask & libc::IN_CREATE == 0
                || !name.starts_with(b".")
                || self
                    .awaited
                    .lock()
                    .is_ok_and(|awaited| awaited.iter().any(|awaited| awaited.as_bytes() == name))
        })
    }

    /// Read every queued event (a scan decides what changed, not the events; a lost watch is
    /// remembered); whether there was any since the last drain.
    fn drain(&self) -> bool {
        self.inotify
            .drain_with(&mut |_, mask, _| self.note_lost(mask))
    }

    /// Remember a lost watch ([`DirEvents::lost`]) when `mask` tells of one.
    fn note_lost(&self, mask: u32) {
        if mask & LOST_WATCH != 0 {
            self.lost.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl WatchThread {
    /// Start scanning `root` for `op_sender`'s loop; `None` (logged) when the thread cannot
    /// start.
    pub fn spawn(
        name: &str,
        workspace: WatchedWorkspace,
        op_sender: LoopSender<Op>,
        active: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Option<WatchThread> {
        let (stop, stop_receiver) = crossbeam_channel::bounded::<()>(1);
        let (scan_request_sender, scan_requests) = crossbeam_channel::unbounded::<ScanRequest>();
        let freshness = Freshness::new(scan_request_sender);
        let has_clients = move || active.swap(false, std::sync::atomic::Ordering::Relaxed);
        let shared = Arc::clone(&freshness);
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                run_fresh(
                    workspace,
                    op_sender,
                    stop_receiver,
                    scan_requests,
                    has_clients,
                    &shared,
                )
            });
        match spawned {
            Ok(thread) => Some(WatchThread {
                stop: Some(stop),
                thread: Some(thread),
                freshness,
            }),
            Err(error) => {
                log::warn!("cannot start the {name} thread: {error}");
                None
            }
        }
    }
}

impl WatchThread {
    /// The check requests make before they are served (shared with the threads that start
    /// them).
    pub fn freshness(&self) -> Arc<Freshness> {
        Arc::clone(&self.freshness)
    }
}

impl Drop for WatchThread {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
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

    /// A file deleted and written again is [`WatchedChange::Replaced`] even where the file
    /// system gives it its inode back (ext4); one rewritten in place with its size and
    /// modification time kept (`cp -p`) is `Changed`; a package added to or removed from a
    /// `node_modules` folder beside a `package.json` reports the folder.
    #[test]
    fn scans_tell_replaced_files_same_stat_rewrites_and_packages() {
        let root = std::env::temp_dir().join(format!("lspc-watch-kinds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("node_modules/@types/a")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("package.json"), "{}").unwrap();
        std::fs::write(root.join("a.ts"), "let a = 1;\n").unwrap();
        std::fs::write(root.join("b.ts"), "let b = 1;\n").unwrap();
        let mut snapshot = Snapshot::default();
        assert_eq!(snapshot.scan(&root), []);
        std::fs::remove_file(root.join("a.ts")).unwrap();
        std::fs::write(root.join("a.ts"), "let a = 2;\n").unwrap();
        let b = root.join("b.ts");
        let modified = std::fs::metadata(&b).unwrap().modified().unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
        std::io::Write::write_all(&mut &file, b"let b = 2;\n").unwrap();
        file.set_modified(modified).unwrap();
        drop(file);
        std::fs::create_dir(root.join("node_modules/@types/b")).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [
                (root.join("a.ts"), WatchedChange::Replaced),
                (root.join("b.ts"), WatchedChange::Changed),
                (root.join("node_modules"), WatchedChange::Changed),
            ]
        );
        assert_eq!(snapshot.scan(&root), []);
        // Hidden entries (npm's `.package-lock.json`, a tool's `.cache`) are not packages.
        std::fs::create_dir(root.join("node_modules/.cache")).unwrap();
        assert_eq!(snapshot.scan(&root), []);
        std::fs::remove_dir(root.join("node_modules/@types/a")).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [(root.join("node_modules"), WatchedChange::Changed)]
        );
        // A link made is a package added; the same link pointed elsewhere (pnpm) is Replaced.
        let link = root.join("node_modules/linked");
        std::os::unix::fs::symlink(root.join("node_modules/@types/b"), &link).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [(root.join("node_modules"), WatchedChange::Changed)]
        );
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(root.join("node_modules/.cache"), &link).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [(root.join("node_modules"), WatchedChange::Replaced)]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A configuration file written again with the same bytes (in place with a later time, or
    /// a copy renamed over it) is reported apart, with when the scan before began; its content
    /// changed is a change, and so is changing it back. A source file or a `tsconfig.json`
    /// (tsserver reads it at any time) rewritten with the same bytes is a change as before.
    #[test]
    fn configuration_files_rewritten_with_the_same_content_are_reported_apart() {
        let root = std::env::temp_dir().join(format!("lspc-watch-same-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        let root = root.canonicalize().unwrap();
        let pyproject = root.join("pyproject.toml");
        let (flags, tsconfig) = (
            root.join("pkg/compile_flags.txt"),
            root.join("tsconfig.json"),
        );
        let plain = "[project]\nname = \"x\"\n";
        std::fs::write(&pyproject, plain).unwrap();
        std::fs::write(&flags, "-xc\n").unwrap();
        std::fs::write(&tsconfig, "{}\n").unwrap();
        std::fs::write(root.join("a.py"), "a = 1\n").unwrap();
        let mut snapshot = Snapshot::default();
        let first = Instant::now();
        assert_eq!(snapshot.scan(&root), []);
        assert_eq!(snapshot.take_rewritten(), []);
        let later = std::time::SystemTime::now() + Duration::from_secs(5);
        let rewrite_in_place = |path: &Path, text: &str| {
            std::fs::write(path, text).unwrap();
            let file = std::fs::File::options().write(true).open(path).unwrap();
            file.set_modified(later).unwrap();
        };
        rewrite_in_place(&pyproject, plain);
        rewrite_in_place(&tsconfig, "{}\n");
        rewrite_in_place(&root.join("a.py"), "a = 1\n");
        let copy = root.join("pkg/.compile_flags.txt.tmp");
        std::fs::write(&copy, "-xc\n").unwrap();
        std::fs::rename(&copy, &flags).unwrap();
        let second = Instant::now();
        assert_eq!(
            snapshot.scan(&root),
            [
                (root.join("a.py"), WatchedChange::Changed),
                (tsconfig.clone(), WatchedChange::Changed)
            ]
        );
        let rewritten = snapshot.take_rewritten();
        let paths: Vec<&Path> = rewritten.iter().map(|(path, _)| path.as_path()).collect();
        assert_eq!(paths, [flags.as_path(), pyproject.as_path()]);
        // `since` is when the first scan began.
        assert!(rewritten
            .iter()
            .all(|(_, since)| *since >= first && *since < second));
        assert_eq!(snapshot.take_rewritten(), []);
        std::fs::write(&pyproject, format!("{plain}[tool.pyright]\n")).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [(pyproject.clone(), WatchedChange::Changed)]
        );
        std::fs::write(&pyproject, plain).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [(pyproject.clone(), WatchedChange::Changed)]
        );
        // Rewritten again: `since` is the start of the scan just before, not the first.
        let third = Instant::now();
        rewrite_in_place(&pyproject, plain);
        assert_eq!(snapshot.scan(&root), []);
        let rewritten = snapshot.take_rewritten();
        assert_eq!(rewritten.len(), 1);
        assert!(rewritten[0].1 < third && rewritten[0].1 > second);
        // Deleted and made again with the same bytes: both announced.
        std::fs::remove_file(&flags).unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [(flags.clone(), WatchedChange::Deleted)]
        );
        std::fs::write(&flags, "-xc\n").unwrap();
        assert_eq!(snapshot.scan(&root), [(flags, WatchedChange::Created)]);
        assert_eq!(snapshot.take_rewritten(), []);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Configuration files the listing leaves out are stamped: one above the root, a
    /// git-ignored `build/compile_commands.json`, and a symlink whose target lies outside the
    /// root under another name (the change is reported under the link's name, too).
    #[test]
    fn configuration_outside_the_listing_is_stamped() {
        let outer = std::env::temp_dir().join(format!("lspc-watch-outer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&outer);
        let root = outer.join("ws");
        std::fs::create_dir_all(root.join("src/build")).unwrap();
        std::fs::create_dir_all(outer.join("shared")).unwrap();
        let (outer, root) = (outer.canonicalize().unwrap(), root.canonicalize().unwrap());
        std::fs::write(outer.join("ruff.toml"), "a\n").unwrap();
        std::fs::write(outer.join("unrelated.toml"), "a\n").unwrap();
        std::fs::write(root.join("src/a.c"), "int a;\n").unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        let database = root.join("src/build/compile_commands.json");
        std::fs::write(&database, "[]\n").unwrap();
        let shared = outer.join("shared/base.json");
        std::fs::write(&shared, "{}\n").unwrap();
        std::os::unix::fs::symlink(&shared, root.join("pyrightconfig.json")).unwrap();
        let mut snapshot = Snapshot::default();
        assert_eq!(snapshot.scan(&root), []);
        let unlisted: std::collections::BTreeSet<&Path> =
            snapshot.unlisted.iter().map(PathBuf::as_path).collect();
        assert!(unlisted.contains(outer.join("ruff.toml").as_path()));
        assert!(unlisted.contains(database.as_path()));
        assert!(!unlisted.contains(outer.join("unrelated.toml").as_path()));
        std::fs::write(outer.join("ruff.toml"), "b\n").unwrap();
        std::fs::write(&database, "[ ]\n").unwrap();
        std::fs::write(&shared, "{ }\n").unwrap();
        std::fs::write(outer.join("unrelated.toml"), "b\n").unwrap();
        assert_eq!(
            snapshot.scan(&root),
            [
                (outer.join("ruff.toml"), WatchedChange::Changed),
                (shared.clone(), WatchedChange::Changed),
                (root.join("pyrightconfig.json"), WatchedChange::Changed),
                (database.clone(), WatchedChange::Changed),
            ]
        );
        std::fs::remove_file(&database).unwrap();
        assert_eq!(snapshot.scan(&root), [(database, WatchedChange::Deleted)]);
        std::fs::remove_dir_all(&outer).unwrap();
    }

    /// A request that comes while a scan is between reading the event queue and sending its
    /// changes waits for that scan's end (no scan of its own), and one whose write came after
    /// the scan read the queue gets a scan of its own. The first case answered a pyright
    /// definition on the old text of a file edited just before ([`Freshness::stale`]; seen
    /// once through a session in a clean-clone CI run of 2d1e323): a periodic scan had read
    /// the edit's event, the request found the queue empty and overtook the change.
    #[test]
    fn a_request_during_a_scan_waits_for_its_changes() {
        use std::sync::atomic::AtomicBool;
        let root = std::env::temp_dir().join(format!("lspc-fresh-scan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let (scan_sender, scan_receiver) = crossbeam_channel::unbounded::<ScanRequest>();
        let freshness = Freshness::new(scan_sender);
        let Some(events) = freshness.events.as_ref() else {
            return; // no inotify here: `stale` is always false
        };
        events.watch(&root);
        std::fs::write(root.join("a.py"), "a = 1\n").unwrap();
        assert!(freshness.stale(), "queued by the write's close");
        // The watch thread's scan: marked running, then the queue read.
        let in_flight = events.scan.begin();
        assert!(events.drain(), "the edit's event");
        assert!(
            freshness.stale(),
            "the scan that read the edit has not sent it yet"
        );
        let announced = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(250));
                announced.store(true, Ordering::SeqCst); // the changes are on the channel
                drop(in_flight);
            });
            freshness.catch_up();
            assert!(
                announced.load(Ordering::SeqCst),
                "returned before the scan's end"
            );
        });
        assert!(scan_receiver.try_recv().is_err(), "no scan of its own");
        assert!(!freshness.stale());
        // A write after the running scan read the queue: that scan may not have seen it.
        std::fs::write(root.join("a.py"), "a = 22\n").unwrap();
        let in_flight = events.scan.begin();
        assert!(events.drain(), "the edit's event");
        std::fs::write(root.join("a.py"), "a = 333\n").unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                drop(in_flight);
                let done = scan_receiver.recv().unwrap();
                events.drain();
                done.send(()).unwrap();
            });
            freshness.catch_up();
        });
        assert!(!freshness.stale());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A file written and closed makes the next check stale until a scan has put the change
    /// on the loop's channel; appending to a file kept open (a log) raises nothing.
    #[test]
    fn a_written_file_is_stale_until_a_scan_announced_it() {
        use std::io::Write;
        let root = std::env::temp_dir().join(format!("lspc-fresh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("pkg/a.py"), "a = 1\n").unwrap();
        let mut log = std::fs::File::create(root.join("lspc.log")).unwrap();
        let (op_sender, op_receiver) = crate::doorbell::unbounded();
        let active = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let workspace = WatchedWorkspace {
            root: root.clone(),
            priority: WatchPriority::default(),
        };
        let watch = WatchThread::spawn("test-watch", workspace, op_sender, active).unwrap();
        let freshness = watch.freshness();
        // The first scan records the snapshot and starts the folder watches.
        freshness.catch_up();
        assert!(!freshness.stale());
        writeln!(log, "appended").unwrap();
        log.flush().unwrap();
        assert!(!freshness.stale(), "an append to an open file is no event");
        std::fs::write(root.join("pkg/a.py"), "a = 22\n").unwrap();
        assert!(freshness.stale(), "queued by the write's close");
        freshness.catch_up();
        assert!(!freshness.stale());
        let changes: Vec<(PathBuf, WatchedChange)> = op_receiver
            .try_iter()
            .flat_map(|op| match op {
                Op::FilesChanged { changes, .. } => changes,
                _ => Vec::new(),
            })
            .collect();
        assert!(
            changes.contains(&(root.join("pkg/a.py"), WatchedChange::Changed)),
            "{changes:?}"
        );
        // A configuration file written through a hard link in a folder nobody watches: its
        // own inode is watched (helper-70). A source file so written waits for the scan.
        std::fs::write(root.join("pkg/ruff.toml"), "a = 1\n").unwrap();
        freshness.catch_up();
        assert!(!freshness.stale());
        let elsewhere =
            std::env::temp_dir().join(format!("lspc-fresh-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&elsewhere);
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::hard_link(root.join("pkg/ruff.toml"), elsewhere.join("r")).unwrap();
        std::fs::hard_link(root.join("pkg/a.py"), elsewhere.join("a")).unwrap();
        std::fs::write(elsewhere.join("a"), "a = 3\n").unwrap();
        assert!(!freshness.stale(), "a source file's inode is not watched");
        std::fs::write(elsewhere.join("r"), "a = 2\n").unwrap();
        assert!(
            freshness.stale(),
            "the configuration file's inode is watched"
        );
        drop(watch);
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&elsewhere).unwrap();
    }
}
