//! Which open documents may have changed on disk, told by inotify(7) instead of a `stat` of every
//! open document before every request (issue 15: with 49 documents open on clangd, that `stat`
//! per document made a repeated definition about 35 µs slower, a quarter of the server's time).
//!
//! Each open document's file is watched (its inode: a write through any name of it, a hard link
//! in another folder included), its folder for its entries' changes (written, attributes,
//! created, deleted, renamed: a save that renames a new file over the document), and every
//! folder above it up to `/` (or up to the first that cannot be watched) for its subfolders
//! being deleted or renamed. An event naming a file, or of a document's own inode, makes that
//! document a suspect; an event that moves or deletes a watched folder, a lost event
//! (`IN_Q_OVERFLOW`) or a folder watch the kernel dropped makes every document one. Only
//! suspects are `stat`ed ([`super::documents::Documents::changed_on_disk`]), and a document
//! stays one until a `stat` finds it unchanged; before that `stat` its file is watched again
//! ([`DocumentWatch::watch_file`]), so the watch follows a save that put a new inode under its
//! name. Linux queues an event inside the `write`, `close` or `rename` that made the change, so
//! a change made before a request was sent is seen when that request is served.
//!
//! Not every change raises an event: a change another machine makes on a network filesystem, a
//! document whose file could not be watched (the watch limit). So a folder on a filesystem
//! that is not local (its `statfs` type is not one of [`LOCAL_FILESYSTEMS`]) is not watched,
//! and its documents are `stat`ed before every request as before; and every open document is
//! `stat`ed at least once every [`SWEEP_INTERVAL`] whatever the events said. Without inotify
//! (no instance left, the watch limit) every document is `stat`ed every time. (A file written
//! again through a shared `mmap` whose page is still dirty changes neither its times nor its
//! size, so neither an event nor a `stat` tells of it until the kernel writes it back:
//! helper-68 saw one stale for 90 s, and a `stat` before every request would not see it either.)
//!
//! The watch starts [`START_AFTER`] after the first document asked for it: an engine that ends
//! sooner (a one-shot `lspc check` or query) never makes an inotify instance, and `stat`s its
//! open documents before every request instead. Closing an instance that holds watches waits
//! for the kernel's fsnotify mark reaper (an SRCU grace period, 15 ms here), which a process's
//! exit pays too: a sixth of a TypeScript 7 `lspc check` of two files (bench item 8, eighteenth
//! round).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::fast_hash::FastMap;
use crate::inotify::Inotify;

/// How often every open document is `stat`ed whatever the events said (see the module doc).
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// How long after the first [`DocumentWatch::watch`] the inotify instance is made; until then
/// every document is `stat`ed before every request (see the module doc).
pub(crate) const START_AFTER: Duration = Duration::from_secs(1);

/// Events of a document's own folder: anything that can change an entry's text, times, size or
/// inode, plus [`FOLDER_EVENTS`].
const ENTRY_EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | FOLDER_EVENTS;

/// Events of an open document's own inode, through whatever name it is written: written,
/// attributes (times, links), closed after a write, deleted (its last link gone).
const FILE_EVENTS: u32 =
    libc::IN_MODIFY | libc::IN_ATTRIB | libc::IN_CLOSE_WRITE | libc::IN_DELETE_SELF;

/// Events of every folder above a document's: a subfolder deleted or renamed (or one renamed
/// over it), and the folder itself deleted or moved.
const FOLDER_EVENTS: u32 = libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// `statfs` types (statfs(2), `linux/magic.h`) whose changes all pass through this kernel:
/// ext2/3/4, XFS, Btrfs, tmpfs, overlayfs (containers), F2FS, ZFS, ramfs, bcachefs.
const LOCAL_FILESYSTEMS: [u64; 9] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0x794C_7630,
    0xF2F5_2010,
    0x2FC1_2FC1,
    0x8584_58F6,
    0xCA45_1A4E,
];

/// What the queued events said since the last look ([`DocumentWatch::heard`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Heard {
    /// These files (canonical paths, some perhaps no document) may have changed.
    Files(Vec<PathBuf>),
    /// Anything may have changed: every document is a suspect, and every document must be
    /// watched again ([`DocumentWatch::watch`]: the watches were dropped).
    Everything,
}

/// One watched folder: its watch descriptor and the events it was asked for.
#[derive(Debug, Clone, Copy)]
struct Watched {
    wd: i32,
    mask: u32,
}

/// The watch of the open documents' folders; see the module doc. Owned by the event loop.
#[derive(Debug, Default)]
pub(crate) struct DocumentWatch {
    /// Started by the first [`DocumentWatch::watch`] [`START_AFTER`] after the first one;
    /// `None` before, and after when the kernel refused one.
    inotify: Option<Inotify>,
    started: bool,
    /// When the first document asked to be watched.
    first_asked: Option<Instant>,
    /// Tests: start at the first [`DocumentWatch::watch`].
    #[cfg(test)]
    at_once: bool,
    /// Each folder looked at: its watch, or `None` when it cannot be watched (not local, gone,
    /// the watch limit).
    folders: FastMap<PathBuf, Option<Watched>>,
    by_wd: FastMap<i32, PathBuf>,
    /// Each watched document's inode watch ([`FILE_EVENTS`]).
    files: FastMap<PathBuf, i32>,
    /// The documents of each inode watch: more than one when two open documents are links of
    /// one file.
    file_wds: FastMap<i32, Vec<PathBuf>>,
    last_sweep: Option<Instant>,
}

impl DocumentWatch {
    /// Watch `document`'s folder and the folders above it; whether every one is watched, so
    /// that events will tell when the document changes. `false`: it must be `stat`ed every time.
    /// `false` too for [`START_AFTER`] after the first call (the watch has not started).
    pub fn watch(&mut self, document: &Path) -> bool {
        if !self.started() {
            return false;
        }
        let Some(folder) = document.parent() else {
            return false;
        };
        if !self.watch_folder(folder, ENTRY_EVENTS) {
            return false;
        }
        // As far up as can be watched: a folder above that cannot be (not local, not readable)
        // is where a rename would go unseen, and none of these are renamed under a running
        // editor in practice; the sweeps catch it.
        for above in folder.ancestors().skip(1) {
            if !self.watch_folder(above, FOLDER_EVENTS) {
                break;
            }
        }
        self.watch_file(document);
        true
    }

    /// Whether the inotify instance is there, making it once [`START_AFTER`] has passed since
    /// the first call.
    fn started(&mut self) -> bool {
        if !self.started {
            let now = Instant::now();
            let first = *self.first_asked.get_or_insert(now);
            #[cfg(test)]
            let first = if self.at_once {
                now - START_AFTER
            } else {
                first
            };
            if now.duration_since(first) < START_AFTER {
                return false;
            }
            self.started = true;
            self.inotify = Inotify::start();
        }
        self.inotify.is_some()
    }

    /// Tests: the watch starts at the first [`DocumentWatch::watch`].
    #[cfg(test)]
    pub fn start_at_once(&mut self) {
        self.at_once = true;
    }

    /// Watch the inode `document` names now (its file, for a write through another link), in
    /// place of the one it named before (a save that renamed a new file over it); when it
    /// cannot be watched (gone, the watch limit), its folder's events and the sweeps still
    /// tell. Call it before the `stat` that clears a suspect, so a change after that `stat`
    /// raises an event.
    pub fn watch_file(&mut self, document: &Path) {
        let Some(inotify) = &self.inotify else {
            return;
        };
        let wd = inotify.add_watch(document, FILE_EVENTS).ok().flatten();
        let before = match wd {
            Some(wd) => self.files.insert(document.to_path_buf(), wd),
            None => self.files.remove(document),
        };
        if before == wd {
            return;
        }
        if let Some(before) = before {
            self.unwatch_file(before, document);
        }
        if let Some(wd) = wd {
            self.file_wds
                .entry(wd)
                .or_default()
                .push(document.to_path_buf());
        }
    }

    /// `document` no longer needs inode watch `wd`; the watch goes with its last document.
    fn unwatch_file(&mut self, wd: i32, document: &Path) {
        let Some(documents) = self.file_wds.get_mut(&wd) else {
            return;
        };
        documents.retain(|other| other != document);
        if documents.is_empty() {
            self.file_wds.remove(&wd);
            if let Some(inotify) = &self.inotify {
                inotify.remove(wd);
            }
        }
    }

    /// Watch `folder` for at least `mask`; whether it is.
    fn watch_folder(&mut self, folder: &Path, mask: u32) -> bool {
        let known = self.folders.get(folder).copied();
        let new_mask = match known {
            Some(None) => return false,
            Some(Some(watched)) if watched.mask & mask == mask => return true,
            Some(Some(watched)) => watched.mask | mask,
            None if !local_filesystem(folder) => {
                self.folders.insert(folder.to_path_buf(), None);
                return false;
            }
            None => mask,
        };
        let Some(inotify) = &self.inotify else {
            return false;
        };
        match inotify.add_watch(folder, new_mask) {
            Ok(Some(wd)) => {
                let watched = Watched { wd, mask: new_mask };
                self.folders.insert(folder.to_path_buf(), Some(watched));
                self.by_wd.insert(wd, folder.to_path_buf());
                true
            }
            Ok(None) => {
                self.folders.insert(folder.to_path_buf(), None);
                false
            }
            Err(error) => {
                log::debug!(
                    "cannot watch {} for open documents changed on disk ({error}); they are \
                     checked before every request",
                    folder.display()
                );
                self.folders.insert(folder.to_path_buf(), None);
                false
            }
        }
    }

    /// What the events queued since the last look say (one `ioctl` when none are queued).
    pub fn heard(&mut self) -> Heard {
        let Some(inotify) = &self.inotify else {
            return Heard::Files(Vec::new());
        };
        let mut files = Vec::new();
        let mut everything = false;
        let mut dropped_files = Vec::new();
        inotify.read_events(&mut |wd, mask, name| {
            if mask & libc::IN_Q_OVERFLOW != 0 {
                everything = true;
                return;
            }
            if let Some(documents) = self.file_wds.get(&wd) {
                // A document's inode: written, or its last link gone (then the kernel drops
                // the watch, `IN_IGNORED`; the next check watches whatever the name holds).
                files.extend(documents.iter().cloned());
                if mask & libc::IN_IGNORED != 0 {
                    dropped_files.push(wd);
                }
                return;
            }
            let Some(folder) = self.by_wd.get(&wd) else {
                return;
            };
            if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED) != 0 {
                // The folder is gone or elsewhere (a moved folder's watch follows it, and so
                // do the watches below it): every watch is suspect, and all are dropped.
                everything = true;
                return;
            }
            let path = folder.join(OsStr::from_bytes(name));
            if mask & libc::IN_ISDIR != 0 {
                // A watched folder deleted, renamed, or replaced by a rename.
                everything |= self.folders.contains_key(&path);
            } else {
                files.push(path);
            }
        });
        for wd in dropped_files {
            for document in self.file_wds.remove(&wd).unwrap_or_default() {
                self.files.remove(&document);
            }
        }
        if everything {
            self.forget_all();
            return Heard::Everything;
        }
        Heard::Files(files)
    }

    /// Drop every watch and every folder's verdict: the documents are watched again from
    /// scratch ([`Heard::Everything`]).
    fn forget_all(&mut self) {
        if let Some(inotify) = &self.inotify {
            for wd in self.by_wd.keys().chain(self.file_wds.keys()) {
                inotify.remove(*wd);
            }
        }
        self.by_wd.clear();
        self.folders.clear();
        self.file_wds.clear();
        self.files.clear();
    }

    /// Whether every open document is due its `stat` ([`SWEEP_INTERVAL`]); when so, the clock
    /// starts again and the watches of folders no open document needs are dropped:
    /// `open_documents` are the documents open now.
    pub fn sweep_due<'a>(&mut self, open_documents: impl Iterator<Item = &'a Path>) -> bool {
        let now = Instant::now();
        if self
            .last_sweep
            .is_some_and(|last| now.duration_since(last) < SWEEP_INTERVAL)
        {
            return false;
        }
        self.last_sweep = Some(now);
        let mut needed: FastMap<&Path, ()> = FastMap::default();
        let mut needed_files: FastMap<&Path, ()> = FastMap::default();
        for document in open_documents {
            needed_files.insert(document, ());
            for folder in document.ancestors().skip(1) {
                if needed.insert(folder, ()).is_some() {
                    break;
                }
            }
        }
        let unneeded_files: Vec<(PathBuf, i32)> = self
            .files
            .iter()
            .filter(|(document, _)| !needed_files.contains_key(document.as_path()))
            .map(|(document, wd)| (document.clone(), *wd))
            .collect();
        for (document, wd) in unneeded_files {
            self.files.remove(&document);
            self.unwatch_file(wd, &document);
        }
        let unneeded: Vec<PathBuf> = self
            .folders
            .keys()
            .filter(|folder| !needed.contains_key(folder.as_path()))
            .cloned()
            .collect();
        for folder in unneeded {
            if let Some(Some(watched)) = self.folders.remove(&folder) {
                self.by_wd.remove(&watched.wd);
                if let Some(inotify) = &self.inotify {
                    inotify.remove(watched.wd);
                }
            }
        }
        true
    }

    /// How many folders are watched now.
    #[cfg(test)]
    fn watched_folders(&self) -> usize {
        self.by_wd.len()
    }

    /// How many inode watches there are now.
    #[cfg(test)]
    fn watched_files(&self) -> usize {
        self.file_wds.len()
    }
}

/// Whether `folder` is on a filesystem whose every change this kernel sees
/// ([`LOCAL_FILESYSTEMS`]); `false` when `statfs` fails.
fn local_filesystem(folder: &Path) -> bool {
    let Ok(name) = std::ffi::CString::new(folder.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `statfs` is plain old data, filled by the call below before it is read.
    let mut info: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid `statfs` to fill.
    if unsafe { libc::statfs(name.as_ptr(), &mut info) } != 0 {
        return false;
    }
    // `f_type` is signed on some targets: its bit pattern is the magic number.
    let kind = info.f_type as u64 & 0xFFFF_FFFF;
    LOCAL_FILESYSTEMS.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lspc-docwatch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("pkg/src")).unwrap();
        dir.canonicalize().unwrap()
    }

    /// Writes, replacements and deletions name their file; a folder above a document renamed
    /// or deleted, or its own folder moved, makes everything suspect and drops the watches.
    #[test]
    fn events_name_the_changed_files_and_folder_moves_make_everything_suspect() {
        let dir = temp_folder("events");
        let (a, b) = (dir.join("pkg/src/a.c"), dir.join("pkg/src/b.c"));
        std::fs::write(&a, "int a;\n").unwrap();
        std::fs::write(&b, "int b;\n").unwrap();
        let mut watch = DocumentWatch::default();
        watch.start_at_once();
        assert!(local_filesystem(&dir), "the test's temp folder is local");
        assert!(watch.watch(&a) && watch.watch(&b));
        assert_eq!(watch.heard(), Heard::Files(vec![]));
        std::fs::write(&a, "int a2;\n").unwrap();
        let Heard::Files(files) = watch.heard() else {
            panic!("a write is a file's event");
        };
        assert!(
            !files.is_empty() && files.iter().all(|file| *file == a),
            "{files:?}"
        );
        let tmp = dir.join("pkg/src/.b.c.tmp");
        std::fs::write(&tmp, "int b2;\n").unwrap();
        std::fs::rename(&tmp, &b).unwrap();
        let Heard::Files(files) = watch.heard() else {
            panic!("a rename over a file is a file's event");
        };
        assert!(files.contains(&b), "{files:?}");
        // An unrelated folder made and removed beside `pkg` changes nothing.
        std::fs::create_dir(dir.join("other")).unwrap();
        std::fs::remove_dir(dir.join("other")).unwrap();
        assert_eq!(watch.heard(), Heard::Files(vec![]));
        // `pkg` renamed: the watches of `pkg` and `pkg/src` follow it elsewhere.
        std::fs::rename(dir.join("pkg"), dir.join("pkg.old")).unwrap();
        assert_eq!(watch.heard(), Heard::Everything);
        assert_eq!(watch.watched_folders(), 0);
        std::fs::create_dir_all(dir.join("pkg/src")).unwrap();
        std::fs::write(&a, "int a3;\n").unwrap();
        assert!(watch.watch(&a));
        std::fs::remove_dir_all(dir.join("pkg")).unwrap();
        assert_eq!(watch.heard(), Heard::Everything);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 15: no inotify instance (and no watch to tear down at exit) before [`START_AFTER`]
    /// has passed since the first document asked; the first call after it starts the watch.
    #[test]
    fn the_watch_starts_a_second_after_the_first_document() {
        let dir = temp_folder("start");
        let a = dir.join("pkg/src/a.c");
        std::fs::write(&a, "int a;\n").unwrap();
        let mut watch = DocumentWatch::default();
        assert!(!watch.watch(&a), "not watched at first: stat'ed instead");
        assert!(!watch.watch(&a));
        assert!(watch.inotify.is_none() && watch.watched_folders() == 0);
        assert_eq!(watch.heard(), Heard::Files(vec![]));
        let first = watch.first_asked.expect("the first call is recorded");
        watch.first_asked = Some(first - START_AFTER);
        assert!(watch.watch(&a), "watched once the second is over");
        assert!(watch.inotify.is_some() && watch.watched_folders() > 0);
        std::fs::write(&a, "int a2;\n").unwrap();
        assert!(matches!(watch.heard(), Heard::Files(files) if files.contains(&a)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A document's folder that is gone is not watched (it is `stat`ed instead), and a sweep
    /// drops the folder and inode watches no open document needs.
    #[test]
    fn sweeps_keep_only_the_folders_open_documents_need() {
        let dir = temp_folder("sweep");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        let (a, b) = (dir.join("pkg/src/a.c"), dir.join("lib/b.c"));
        std::fs::write(&a, "int a;\n").unwrap();
        std::fs::write(&b, "int b;\n").unwrap();
        let mut watch = DocumentWatch::default();
        watch.start_at_once();
        assert!(!watch.watch(&dir.join("missing/c.c")));
        assert!(watch.watch(&a) && watch.watch(&b));
        let all = watch.watched_folders();
        assert_eq!(watch.watched_files(), 2);
        assert!(watch.sweep_due([a.as_path()].into_iter()));
        assert_eq!(watch.watched_folders(), all - 1, "lib is no longer needed");
        assert_eq!(watch.watched_files(), 1, "nor b.c");
        assert!(
            !watch.sweep_due([a.as_path()].into_iter()),
            "not due again at once"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
