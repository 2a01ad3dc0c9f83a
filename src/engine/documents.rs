//! The documents lspc has sent to servers: text, version, which servers have them open, and the
//! LRU bound (seed 000: at most 50 open documents; eviction sends `didClose`).
//!
//! Invariants: a document's version starts at 1 and only grows, also across a close: a document
//! closed (LRU bound, deletion) and opened again continues after the last version it had, so no
//! answer or publish the servers gave for an older text can pass for the new one (pull answers and
//! versioned publishes are matched by version); a new version is made only when
//! the text on disk differs from the text last sent, or when another file open on one of its
//! servers changed on disk behind lspc's back (`stale_analysis`: the server must analyse it
//! again before its diagnostics are settled). Paths are canonical absolute paths.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::document_watch::{DocumentWatch, Heard};
use crate::fast_hash::FastMap;
use crate::process::ServerId;
use crate::text::LineIndex;

/// One document's state.
#[derive(Debug)]
pub(crate) struct Document {
    pub uri: String,
    pub text: Arc<str>,
    pub line_index: Arc<LineIndex>,
    /// The version of `text` (1-based, only grows).
    pub version: i32,
    /// The version this document was opened with (1, or one more than the version it had when
    /// it was last closed): `version` is greater once a later text was sent.
    pub opened_version: i32,
    /// The first version that carried `text`: every version from it up to `version` carries
    /// the same text (a stale analysis sends it again under a new version,
    /// [`Documents::take_stale_analysis`]), so a server's edit for any of them applies to it.
    pub text_version: i32,
    /// Servers that have the document open: the version they hold and when it was sent.
    pub open_on: BTreeMap<ServerId, (i32, Instant)>,
    /// LRU clock value of the last use.
    pub last_used: u64,
    /// How many waits need the document open right now; pinned documents are never evicted.
    pub pins: u32,
    /// What the disk said when `text` was read, to skip re-reading an unchanged file.
    pub stamp: Option<DiskStamp>,
    /// Another document open on one of this one's servers changed on disk behind lspc's back
    /// (another tool, a `git checkout`) since this text was sent: the servers' answers and
    /// settled diagnostics for it may describe the old project, so its next sync sends it again
    /// under a new version ([`Documents::take_stale_analysis`]).
    pub stale_analysis: bool,
    /// The [`Documents::turn`] in which [`Documents::changed_on_disk`] found the file unchanged:
    /// a sync in that same loop turn trusts that `stat` instead of taking another (issue 15).
    verified_in_turn: u64,
    /// Its folder is watched ([`DocumentWatch::watch`]): events tell when it changes.
    watched: bool,
    /// An event named it (or it was just watched): its next check `stat`s it, and so does
    /// every check until one finds it unchanged.
    suspect: bool,
}

/// A file's size, modification time, status-change time and inode when lspc read it, and when
/// it read it.
///
/// An unchanged stamp lets lspc skip re-reading the file before a request (a 100 KB file per
/// hover adds up). Like git's "racy clean" rule, a stamp only vouches for the file when its
/// modification and status-change times were older than the read by more than
/// [`RACY_WINDOW`]: filesystems keep coarse timestamps, so a same-size rewrite right after a
/// read could otherwise go unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiskStamp {
    stamp: crate::file_stamp::FileStamp,
    read_at: SystemTime,
}

/// Longer than any filesystem's timestamp granularity lspc runs on (ext4 and tmpfs: a jiffy).
const RACY_WINDOW: Duration = Duration::from_millis(100);

impl DiskStamp {
    pub fn of(metadata: &Metadata, read_at: SystemTime) -> DiskStamp {
        DiskStamp {
            stamp: crate::file_stamp::FileStamp::of(metadata),
            read_at,
        }
    }

    /// Whether `metadata` shows the same file, unchanged since the read (see the type's doc).
    pub fn unchanged(&self, metadata: &Metadata) -> bool {
        let settled =
            |time: Option<SystemTime>| time.is_some_and(|time| time + RACY_WINDOW <= self.read_at);
        crate::file_stamp::FileStamp::of(metadata) == self.stamp
            && settled(self.stamp.modified_at())
            && settled(self.stamp.changed_at())
    }
}

/// What reading the disk did to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// First time lspc saw it.
    New,
    /// The disk text differs from what lspc held: the version grew.
    Changed,
    Unchanged,
}

/// Why a file cannot be sent to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadError {
    Io(String),
    TooLarge { size: u64, limit: u64 },
    Binary,
    NotUtf8,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(message) => f.write_str(message),
            ReadError::TooLarge { size, limit } => {
                write!(f, "file is {size} bytes, over the {limit}-byte limit")
            }
            ReadError::Binary => f.write_str("file looks binary (it holds NUL bytes)"),
            ReadError::NotUtf8 => f.write_str("file is not valid UTF-8"),
        }
    }
}

/// Read a file for a server: size limit first, then NUL bytes, then UTF-8; the text without a
/// leading byte order mark ([`crate::text::without_byte_order_mark`]), as an editor sends it.
pub(crate) fn read_text(path: &Path, max_size: u64) -> Result<String, ReadError> {
    let metadata = std::fs::metadata(path).map_err(|error| ReadError::Io(error.to_string()))?;
    read_text_with(path, &metadata, max_size)
}

/// [`read_text`] with the file's metadata already at hand.
pub(crate) fn read_text_with(
    path: &Path,
    metadata: &Metadata,
    max_size: u64,
) -> Result<String, ReadError> {
    if metadata.len() > max_size {
        return Err(ReadError::TooLarge {
            size: metadata.len(),
            limit: max_size,
        });
    }
    let bytes = read_regular_file(path).map_err(|error| ReadError::Io(error.to_string()))?;
    if bytes.contains(&0) {
        return Err(ReadError::Binary);
    }
    let mut text = String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)?;
    if text.starts_with(crate::text::BYTE_ORDER_MARK) {
        text.drain(..crate::text::BYTE_ORDER_MARK.len_utf8());
    }
    Ok(text)
}

/// The bytes of `path` when it is a regular file, read without ever blocking on what is not
/// one: opened with `O_NONBLOCK` and checked after opening (`fstat`), so a FIFO put where a
/// document was (a new user's trial: `mkfifo` over an open Go file) is an error, not an engine
/// blocked in `open` until something writes to it. Errors: the I/O error, or `InvalidInput`
/// "not a regular file (a FIFO, socket or device)".
pub(crate) fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket or device)",
        ));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A document's key in [`Documents`]: its path's bytes, hashed in one pass (issue 15: `Path`'s
/// own `Hash` walks the path a byte at a time to skip what its component-wise equality ignores,
/// about 20 instructions a byte, six times per query). Document paths are canonical, so the
/// bytes are the path's components joined by `/`; a path that is not (an empty or `.`
/// component, a trailing `/`, as a server's URI may give) is keyed by its components, so it
/// finds what `Path`'s equality would find.
fn key(path: &Path) -> Cow<'_, OsStr> {
    let bytes = path.as_os_str().as_bytes();
    // Every `/` must start a component that is neither empty nor `.`.
    let lexically_normal = bytes.iter().enumerate().all(|(at, &byte)| {
        byte != b'/'
            || match bytes.get(at + 1) {
                None => at == 0,
                Some(b'/') => false,
                Some(b'.') => !matches!(bytes.get(at + 2), None | Some(b'/')),
                Some(_) => true,
            }
    });
    if lexically_normal {
        Cow::Borrowed(path.as_os_str())
    } else {
        Cow::Owned(path.components().collect::<PathBuf>().into_os_string())
    }
}

#[derive(Debug, Default)]
pub(crate) struct Documents {
    /// By [`key`], in a [`FastMap`] (issue 15: looked up about five times per query; see its
    /// module doc for why the unkeyed hasher is safe here).
    docs: FastMap<OsString, Document>,
    /// The last version of each document that was closed and forgotten: opened again, it
    /// continues from there (see the module invariants). One integer per file ever closed.
    closed_versions: HashMap<PathBuf, i32>,
    clock: u64,
    /// The loop turn ([`Documents::next_turn`]); 0 before the first.
    turn: u64,
    /// Which open documents events say may have changed on disk.
    watch: DocumentWatch,
}

impl Documents {
    /// Ends the watch of the open documents as the loop shuts down: its inotify instance is
    /// closed while the servers answer `shutdown` rather than at the loop's end (see
    /// [`crate::inotify`]).
    pub fn stop_watching(&mut self) {
        self.watch = DocumentWatch::default();
        for doc in self.docs.values_mut() {
            doc.watched = false;
        }
    }

    /// Every document's path, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.docs.keys().map(PathBuf::from).collect();
        crate::sorting::sort(&mut paths);
        paths
    }

    pub fn get(&self, path: &Path) -> Option<&Document> {
        self.docs.get(&*key(path))
    }

    pub fn get_mut(&mut self, path: &Path) -> Option<&mut Document> {
        self.docs.get_mut(&*key(path))
    }

    /// Whether the document is known and `metadata` shows its file unchanged since lspc read it;
    /// marks it used (LRU) when so.
    pub fn unchanged_on_disk(&mut self, path: &Path, metadata: &Metadata) -> bool {
        let Some(doc) = self.docs.get_mut(&*key(path)) else {
            return false;
        };
        if !doc.stamp.is_some_and(|stamp| stamp.unchanged(metadata)) {
            return false;
        }
        self.clock += 1;
        doc.last_used = self.clock;
        true
    }

    /// Record what the disk said when the document's text was read.
    pub fn set_stamp(&mut self, path: &Path, stamp: DiskStamp) {
        if let Some(doc) = self.docs.get_mut(&*key(path)) {
            doc.stamp = Some(stamp);
        }
    }

    /// Bring the document in line with `text` read from disk; returns what changed.
    pub fn refresh(&mut self, path: &Path, uri: String, text: String) -> Refresh {
        self.clock += 1;
        let clock = self.clock;
        match self.docs.get_mut(&*key(path)) {
            Some(doc) => {
                doc.last_used = clock;
                if *doc.text == *text {
                    return Refresh::Unchanged;
                }
                doc.line_index = Arc::new(LineIndex::new(&text));
                doc.text = Arc::from(text);
                doc.version += 1;
                doc.text_version = doc.version;
                doc.stale_analysis = false;
                Refresh::Changed
            }
            None => {
                let line_index = Arc::new(LineIndex::new(&text));
                let version = self
                    .closed_versions
                    .remove(path)
                    .map_or(1, |closed| closed.saturating_add(1));
                self.docs.insert(
                    key(path).into_owned(),
                    Document {
                        uri,
                        text: Arc::from(text),
                        line_index,
                        version,
                        opened_version: version,
                        text_version: version,
                        open_on: BTreeMap::new(),
                        last_used: clock,
                        pins: 0,
                        stamp: None,
                        stale_analysis: false,
                        verified_in_turn: 0,
                        watched: false,
                        suspect: false,
                    },
                );
                Refresh::New
            }
        }
    }

    /// Documents open on at least one server, beyond `max_open`, least recently used first,
    /// skipping pinned ones and those `in_use` names. The caller sends `didClose` and calls
    /// [`Documents::forget`].
    pub fn eviction_candidates(
        &self,
        max_open: usize,
        in_use: &dyn Fn(&Path) -> bool,
    ) -> Vec<PathBuf> {
        // Counted first: this runs at every sync and every loop turn, and is almost always
        // within the bound (collecting the open documents cost ~5,700 instructions a query at
        // 49 open).
        let open_count = self
            .docs
            .values()
            .filter(|doc| !doc.open_on.is_empty())
            .count();
        if open_count <= max_open {
            return Vec::new();
        }
        let mut open: Vec<(&OsString, &Document)> = self
            .docs
            .iter()
            .filter(|(_, doc)| !doc.open_on.is_empty())
            .collect();
        let excess = open.len() - max_open;
        crate::sorting::sort_by_key(&mut open, |(_, doc)| doc.last_used);
        open.into_iter()
            .filter(|(path, doc)| doc.pins == 0 && !in_use(Path::new(path)))
            .take(excess)
            .map(|(path, _)| PathBuf::from(path))
            .collect()
    }

    /// Open documents whose file changed on disk since lspc read it (size, modification time or
    /// inode, [`DiskStamp::unchanged`]) or is gone, no LRU touch. The ones found unchanged are
    /// marked verified for this turn ([`Documents::unchanged_this_turn`]).
    ///
    /// A `stat` for each document the watch cannot vouch for ([`DocumentWatch`]: named by an
    /// event since it was last found unchanged, newly open, or in a folder that cannot be
    /// watched), and for every open document once every [`super::document_watch::SWEEP_INTERVAL`]; no
    /// events queued and no sweep due cost one `read`.
    pub fn changed_on_disk(&mut self) -> Vec<PathBuf> {
        let turn = self.turn;
        match self.watch.heard() {
            Heard::Files(files) => {
                for file in files {
                    if let Some(doc) = self.docs.get_mut(&*key(&file)) {
                        doc.suspect = true;
                    }
                }
            }
            Heard::Everything => {
                for doc in self.docs.values_mut() {
                    doc.watched = false;
                }
            }
        }
        let open = self
            .docs
            .iter()
            .filter(|(_, doc)| !doc.open_on.is_empty())
            .map(|(path, _)| Path::new(path.as_os_str()));
        let sweep = self.watch.sweep_due(open);
        if sweep {
            // The sweep dropped the watches no open document needs: a closed one is watched
            // again when it is opened again.
            for doc in self.docs.values_mut().filter(|doc| doc.open_on.is_empty()) {
                doc.watched = false;
            }
        }
        let watch = &mut self.watch;
        let mut changed: Vec<PathBuf> = self
            .docs
            .iter_mut()
            .filter(|(_, doc)| !doc.open_on.is_empty())
            .filter_map(|(path, doc)| {
                if !doc.watched {
                    // Watched before the `stat` below: a change after it raises an event.
                    doc.watched = watch.watch(Path::new(path.as_os_str()));
                    doc.suspect = true;
                }
                if doc.watched && !doc.suspect && !sweep {
                    doc.verified_in_turn = turn;
                    return None;
                }
                if doc.watched && doc.suspect {
                    // The name may hold another inode now (a save renamed a new file over it):
                    // watch that one before the `stat` below.
                    watch.watch_file(Path::new(path.as_os_str()));
                }
                let unchanged = std::fs::metadata(path).is_ok_and(|metadata| {
                    doc.stamp.is_some_and(|stamp| stamp.unchanged(&metadata))
                });
                if unchanged {
                    doc.verified_in_turn = turn;
                    doc.suspect = false;
                    return None;
                }
                doc.suspect = true;
                Some(PathBuf::from(path))
            })
            .collect();
        crate::sorting::sort(&mut changed);
        changed
    }

    /// Starts a loop turn: verifications of earlier turns no longer count.
    pub fn next_turn(&mut self) {
        self.turn += 1;
    }

    /// Whether [`Documents::changed_on_disk`] found `path` unchanged in this turn (then its
    /// `stat` stands for the sync's, microseconds later); touches the LRU clock as
    /// [`Documents::unchanged_on_disk`] does.
    pub fn unchanged_this_turn(&mut self, path: &Path) -> bool {
        let Some(doc) = self.docs.get_mut(&*key(path)) else {
            return false;
        };
        if doc.verified_in_turn == 0 || doc.verified_in_turn != self.turn {
            return false;
        }
        self.clock += 1;
        doc.last_used = self.clock;
        true
    }

    /// Marks every document open on one of `servers`, other than `changed`, as analysed against
    /// an older project ([`Document::stale_analysis`]).
    pub fn mark_stale_analysis(&mut self, servers: &[ServerId], changed: &Path) {
        let _ = self.mark_stale_analysis_except(servers, &[changed]);
    }

    /// [`Documents::mark_stale_analysis`] after several files changed at once (an edit lspc
    /// wrote): none of `changed` is marked, since each was just sent with its new text. Returns
    /// the documents it marked.
    pub fn mark_stale_analysis_except(
        &mut self,
        servers: &[ServerId],
        changed: &[&Path],
    ) -> Vec<PathBuf> {
        let mut marked = Vec::new();
        for (path, doc) in &mut self.docs {
            let path = Path::new(path);
            if !changed.contains(&path) && servers.iter().any(|id| doc.open_on.contains_key(id)) {
                doc.stale_analysis = true;
                marked.push(path.to_path_buf());
            }
        }
        marked
    }

    /// The documents marked [`Document::stale_analysis`] that are open on one of `servers`,
    /// each with those of `servers` holding it.
    pub fn stale_on(&self, servers: &[ServerId]) -> Vec<(PathBuf, Vec<ServerId>)> {
        self.docs
            .iter()
            .filter(|(_, doc)| doc.stale_analysis)
            .filter_map(|(path, doc)| {
                let holding: Vec<ServerId> = servers
                    .iter()
                    .copied()
                    .filter(|id| doc.open_on.contains_key(id))
                    .collect();
                (!holding.is_empty()).then(|| (PathBuf::from(path), holding))
            })
            .collect()
    }

    /// When the document is marked [`Document::stale_analysis`], clears the mark and gives its
    /// unchanged text a new version (so each server gets `didChange`, or on clangd for a
    /// diagnostics wait `didClose` and `didOpen`, and analyses it again); returns whether it did.
    pub fn take_stale_analysis(&mut self, path: &Path) -> bool {
        let Some(doc) = self.docs.get_mut(&*key(path)) else {
            return false;
        };
        if !doc.stale_analysis {
            return false;
        }
        doc.stale_analysis = false;
        doc.version += 1;
        true
    }

    /// Drop a document (after `didClose` went to every server holding it), remembering its
    /// version so that opened again it continues after it.
    pub fn forget(&mut self, path: &Path) -> Option<Document> {
        let doc = self.docs.remove(&*key(path))?;
        self.closed_versions.insert(path.to_path_buf(), doc.version);
        Some(doc)
    }

    /// Every document open on `server_id` (for re-opening after a restart, or closing).
    pub fn open_on(&self, server_id: ServerId) -> Vec<PathBuf> {
        self.docs
            .iter()
            .filter(|(_, doc)| doc.open_on.contains_key(&server_id))
            .map(|(path, _)| PathBuf::from(path))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(documents: &mut Documents, name: &str) {
        let path = PathBuf::from(format!("/w/{name}"));
        documents.refresh(&path, format!("file:///w/{name}"), name.to_owned());
        documents
            .get_mut(&path)
            .unwrap()
            .open_on
            .insert(ServerId(0), (1, Instant::now()));
    }

    #[test]
    fn a_document_is_found_by_any_spelling_path_equality_accepts() {
        let mut documents = Documents::default();
        documents.refresh(Path::new("/w/src/a.py"), "u".into(), "x\n".into());
        for spelling in [
            "/w/src/a.py",
            "/w//src/a.py",
            "/w/./src/a.py",
            "/w/src/a.py/",
            "/w/src/./a.py/.",
        ] {
            assert_eq!(Path::new(spelling), Path::new("/w/src/a.py"));
            assert!(documents.get(Path::new(spelling)).is_some(), "{spelling}");
            assert_eq!(
                key(Path::new(spelling)),
                OsStr::new("/w/src/a.py"),
                "{spelling}"
            );
        }
        for other in [
            "/w/src/a.p",
            "/w/src/../src/a.py",
            "/w/src/.a.py",
            "/w/src/a.py.",
        ] {
            assert!(documents.get(Path::new(other)).is_none(), "{other}");
        }
        // Normal spellings are borrowed: no allocation on the query path.
        for normal in ["/", "/w/.hidden/..x", "/w/a"] {
            assert!(
                matches!(key(Path::new(normal)), Cow::Borrowed(_)),
                "{normal}"
            );
        }
    }

    #[test]
    fn a_document_opened_again_after_a_close_continues_its_versions() {
        let mut documents = Documents::default();
        let path = Path::new("/w/a.py");
        documents.refresh(path, "u".into(), "l = 1\n".into());
        documents.refresh(path, "u".into(), "l = 2\n".into());
        assert_eq!(documents.forget(path).unwrap().version, 2);
        assert_eq!(
            documents.refresh(path, "u".into(), "x = 1\n".into()),
            Refresh::New
        );
        let doc = documents.get(path).unwrap();
        assert_eq!((doc.version, doc.opened_version), (3, 3));
    }

    #[test]
    fn versions_grow_only_when_text_changes() {
        let mut documents = Documents::default();
        let path = Path::new("/w/a.py");
        assert_eq!(
            documents.refresh(path, "u".into(), "x = 1\n".into()),
            Refresh::New
        );
        assert_eq!(
            documents.refresh(path, "u".into(), "x = 1\n".into()),
            Refresh::Unchanged
        );
        assert_eq!(
            documents.refresh(path, "u".into(), "x = 2\n".into()),
            Refresh::Changed
        );
        assert_eq!(documents.get(path).unwrap().version, 2);
        assert_eq!(&*documents.get(path).unwrap().text, "x = 2\n");
    }

    #[test]
    fn a_file_changed_behind_lspc_marks_the_other_documents_of_its_servers() {
        let mut documents = Documents::default();
        for name in ["a", "b", "c"] {
            open(&mut documents, name);
        }
        // `c` is open on another server only.
        let c = documents.get_mut(Path::new("/w/c")).unwrap();
        c.open_on.clear();
        c.open_on.insert(ServerId(1), (1, Instant::now()));
        documents.mark_stale_analysis(&[ServerId(0)], Path::new("/w/b"));
        let stale = |documents: &Documents, name: &str| {
            documents
                .get(Path::new(&format!("/w/{name}")))
                .unwrap()
                .stale_analysis
        };
        assert_eq!(
            ["a", "b", "c"].map(|name| stale(&documents, name)),
            [true, false, false]
        );
        assert!(documents.take_stale_analysis(Path::new("/w/a")));
        assert_eq!(documents.get(Path::new("/w/a")).unwrap().version, 2);
        assert!(!documents.take_stale_analysis(Path::new("/w/a")));
        assert_eq!(documents.get(Path::new("/w/a")).unwrap().version, 2);
        // Nothing on disk under /w: every open document counts as changed (gone).
        assert_eq!(
            documents.changed_on_disk(),
            ["/w/a", "/w/b", "/w/c"].map(PathBuf::from)
        );
    }

    /// Pinned documents and documents in use (a request in flight was built for them) are
    /// skipped: more stay open than the bound while they are.
    #[test]
    fn lru_evicts_least_recently_used_unpinned_documents() {
        let mut documents = Documents::default();
        for name in ["a", "b", "c", "d"] {
            open(&mut documents, name);
        }
        let none = |_: &Path| false;
        assert_eq!(
            documents.eviction_candidates(4, &none),
            Vec::<PathBuf>::new()
        );
        documents.get_mut(Path::new("/w/a")).unwrap().pins = 1;
        assert_eq!(
            documents.eviction_candidates(2, &none),
            vec![PathBuf::from("/w/b"), PathBuf::from("/w/c")]
        );
        let b_in_use = |path: &Path| path == Path::new("/w/b");
        assert_eq!(
            documents.eviction_candidates(2, &b_in_use),
            vec![PathBuf::from("/w/c"), PathBuf::from("/w/d")]
        );
        // Touching `b` again makes `c` and `d` older.
        documents.refresh(Path::new("/w/b"), "u".into(), "b".into());
        assert_eq!(
            documents.eviction_candidates(3, &none),
            vec![PathBuf::from("/w/c")]
        );
        let all_in_use = |_: &Path| true;
        assert_eq!(
            documents.eviction_candidates(1, &all_in_use),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn disk_stamp_vouches_only_for_files_stable_before_the_read() {
        let dir = std::env::temp_dir().join(format!("lspc-stamp-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.py");
        std::fs::write(&path, "x = 1\n").unwrap();
        let metadata = std::fs::metadata(&path).unwrap();
        let mtime = metadata.modified().unwrap();
        // Read right after the write: within the racy window, so it proves nothing.
        assert!(!DiskStamp::of(&metadata, mtime).unchanged(&metadata));
        let stable = DiskStamp::of(&metadata, mtime + Duration::from_millis(200));
        assert!(stable.unchanged(&metadata));
        // A rewrite with another size, or a new inode (atomic rename), is a change.
        std::fs::write(&path, "x = 22\n").unwrap();
        assert!(!stable.unchanged(&std::fs::metadata(&path).unwrap()));
        let renamed = dir.join("b.py");
        std::fs::write(&renamed, "x = 1\n").unwrap();
        std::fs::rename(&renamed, &path).unwrap();
        assert!(!stable.unchanged(&std::fs::metadata(&path).unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `path` (holding `x = 1`) read now, its stamp settled, and open on server 0.
    fn open_as_read(documents: &mut Documents, path: &Path) {
        let metadata = std::fs::metadata(path).unwrap();
        documents.refresh(path, "u".into(), "x = 1\n".into());
        let read_at = SystemTime::now() + Duration::from_millis(200);
        documents.set_stamp(path, DiskStamp::of(&metadata, read_at));
        documents
            .get_mut(path)
            .unwrap()
            .open_on
            .insert(ServerId(0), (1, Instant::now()));
    }

    /// Issue 15: a file `changed_on_disk` found unchanged needs no second `stat` in the same
    /// turn, and only in that turn; a changed file is never vouched for.
    #[test]
    fn an_unchanged_stat_stands_for_the_rest_of_its_turn_only() {
        let dir = std::env::temp_dir().join(format!("lspc-turn-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (same, edited) = (dir.join("same.py"), dir.join("edited.py"));
        let mut documents = Documents::default();
        for path in [&same, &edited] {
            std::fs::write(path, "x = 1\n").unwrap();
            open_as_read(&mut documents, path);
        }
        std::fs::write(&edited, "x = 22\n").unwrap();
        assert!(!documents.unchanged_this_turn(&same), "before any turn");
        documents.next_turn();
        assert_eq!(documents.changed_on_disk(), vec![edited.clone()]);
        assert!(documents.unchanged_this_turn(&same));
        assert!(!documents.unchanged_this_turn(&edited));
        documents.next_turn();
        assert!(
            !documents.unchanged_this_turn(&same),
            "a later turn stats again"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 15: open documents are `stat`ed when an event names them, not before every
    /// request: a write to the file through any of its names (a hard link in another folder
    /// too) or a new file renamed over it, whose inode is then watched in place of the old one.
    /// A stamp that no longer matches the disk with no event is not noticed between sweeps (no
    /// `stat` was made), and is at the next sweep, within
    /// [`super::super::document_watch::SWEEP_INTERVAL`].
    #[test]
    fn only_documents_named_by_events_are_checked_between_sweeps() {
        let dir = std::env::temp_dir().join(format!("lspc-events-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
        let dir = dir.canonicalize().unwrap();
        let (a, b) = (dir.join("src/a.py"), dir.join("src/b.py"));
        let (link, second_link) = (dir.join("elsewhere/link.py"), dir.join("elsewhere/l2.py"));
        let mut documents = Documents::default();
        documents.watch.start_at_once();
        for path in [&a, &b] {
            std::fs::write(path, "x = 1\n").unwrap();
            if path == &b {
                // Before the stamp: a new link changes the file's status-change time.
                std::fs::hard_link(&b, &link).unwrap();
            }
            open_as_read(&mut documents, path);
        }
        let none = Vec::<PathBuf>::new();
        assert_eq!(documents.changed_on_disk(), none);
        std::fs::write(&a, "x = 22\n").unwrap();
        std::fs::write(&link, "x = 333\n").unwrap();
        assert_eq!(
            documents.changed_on_disk(),
            vec![a.clone(), b.clone()],
            "a's folder event, b's inode event"
        );
        open_as_read(&mut documents, &a);
        open_as_read(&mut documents, &b);
        assert_eq!(documents.changed_on_disk(), none);
        // Saved by renaming a new file over it; then written through a link of the new file.
        let temporary = dir.join("src/.b.py.tmp");
        std::fs::write(&temporary, "x = 4444\n").unwrap();
        std::fs::rename(&temporary, &b).unwrap();
        assert_eq!(documents.changed_on_disk(), vec![b.clone()]);
        std::fs::hard_link(&b, &second_link).unwrap();
        open_as_read(&mut documents, &b);
        assert_eq!(documents.changed_on_disk(), none);
        std::fs::write(&second_link, "x = 55555\n").unwrap();
        assert_eq!(documents.changed_on_disk(), vec![b.clone()]);
        open_as_read(&mut documents, &b);
        assert_eq!(documents.changed_on_disk(), none);
        // No event: a stamp made stale behind the watch's back waits for the sweep.
        let other = DiskStamp::of(&std::fs::metadata(&a).unwrap(), SystemTime::now());
        documents.set_stamp(&b, other);
        assert_eq!(documents.changed_on_disk(), none, "no event, no stat");
        std::thread::sleep(super::super::document_watch::SWEEP_INTERVAL);
        assert_eq!(documents.changed_on_disk(), vec![b.clone()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_text_rejects_large_binary_and_non_utf8_files() {
        let dir = std::env::temp_dir().join(format!("lspc-doc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let check = |name: &str, bytes: &[u8], expected: Result<&str, ReadError>| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(
                read_text(&path, 16).as_deref().map_err(Clone::clone),
                expected
            );
        };
        check("ok.py", b"x = 1\n", Ok("x = 1\n"));
        check(
            "big.py",
            &[b'x'; 17],
            Err(ReadError::TooLarge {
                size: 17,
                limit: 16,
            }),
        );
        check("bin.py", b"x\0y", Err(ReadError::Binary));
        check("latin1.py", b"caf\xe9", Err(ReadError::NotUtf8));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
