//! Result normalisation for location-valued requests and position conversion of server output.
//!
//! `textDocument/definition`, `declaration`, `typeDefinition`, `implementation` and `references`
//! may answer with a single `Location`, `Location[]`, `LocationLink[]` or `null` (LSP 3.17
//! §`textDocument_definition`). [`parse_locations`] turns every shape into a list of
//! [`RawLocation`]s (a link reports `targetSelectionRange`, falling back to `targetRange`);
//! malformed entries are skipped with a debug log, never an error.
//!
//! [`SourceFiles`] converts server positions (0-based, in the server's negotiated encoding) into
//! lspc's 1-based character positions. The synced document's text is what the server saw; other
//! files are read from disk once per [`SourceFiles`] (one query), or taken from the session's
//! [`SourceCache`] when one `stat` shows the file unchanged. A file that cannot be read keeps the
//! server's numbers + 1 (exact for ASCII lines) and has no line text.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{Location, Range1};
use crate::text::{LineIndex, PositionEncoding};
use crate::uri;

/// One location as the server sent it: a URI and an LSP range (0-based, server encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLocation {
    pub uri: String,
    pub range: lsp_types::Range,
}

/// Every location in a definition-like result, in the server's order. `null`, `[]` and shapes
/// that are neither `Location` nor `LocationLink` give an empty list.
pub fn parse_locations(value: &Value) -> Vec<RawLocation> {
    match value {
        Value::Array(items) => items.iter().filter_map(parse_one_location).collect(),
        Value::Object(_) => parse_one_location(value).into_iter().collect(),
        Value::Null => Vec::new(),
        other => {
            log::debug!("ignoring a location result that is not an object or array: {other}");
            Vec::new()
        }
    }
}

/// A `Location` (`uri` + `range`) or a `LocationLink` (`targetUri` + `targetSelectionRange`,
/// else `targetRange`).
fn parse_one_location(value: &Value) -> Option<RawLocation> {
    let parsed = if let Some(target_uri) = value.get("targetUri").and_then(Value::as_str) {
        let range = value
            .get("targetSelectionRange")
            .and_then(parse_range)
            .or_else(|| value.get("targetRange").and_then(parse_range));
        range.map(|range| RawLocation {
            uri: target_uri.to_owned(),
            range,
        })
    } else {
        let uri = value.get("uri").and_then(Value::as_str);
        let range = value.get("range").and_then(parse_range);
        uri.zip(range).map(|(uri, range)| RawLocation {
            uri: uri.to_owned(),
            range,
        })
    };
    if parsed.is_none() {
        log::debug!("ignoring a malformed location: {value}");
    }
    parsed
}

/// An LSP `Range` from JSON; `None` when malformed.
pub fn parse_range(value: &Value) -> Option<lsp_types::Range> {
    // Deserialised from the borrowed value (no copy of it).
    serde::Deserialize::deserialize(value).ok()
}

/// A file's text and line index.
#[derive(Clone)]
struct Source {
    text: Arc<str>,
    index: Arc<LineIndex>,
}

/// Files larger than this are never cached (bytes).
const CACHED_FILE_MAX_BYTES: u64 = 4 << 20;
/// When the cached texts pass this many bytes in all, the cache starts over.
const CACHE_MAX_BYTES: u64 = 32 << 20;
/// How long before its read a file must have last changed to be cached: file timestamps come
/// from a coarse clock (a few ms), so a file changed again within the same tick, to the same
/// size, would keep its stamp; one changed this long before the read cannot have been (any later
/// change gets a later `ctime`).
const SETTLED_BEFORE_READ: Duration = Duration::from_secs(1);

/// Source texts of files that query results pointed into, shared by a session's queries (issue
/// 15: a definition in another file read it from disk for every lineText). An entry is used only
/// when one `stat` of the file gives exactly the stamp it was read with (device, inode, size,
/// mtime and ctime, to the nanosecond), and a text is cached only when the file had last changed
/// [`SETTLED_BEFORE_READ`] before it was read and was not changed during the read, so a file
/// changed on disk is always read again: a result never shows a stale lineText.
#[derive(Clone, Default)]
pub struct SourceCache(Arc<SourceCacheState>);

#[derive(Default)]
struct SourceCacheState {
    /// By the path's bytes (see [`SourceFiles`]).
    entries: Mutex<HashMap<OsString, (crate::file_stamp::FileStamp, Source)>>,
    bytes: AtomicU64,
    /// Texts served from the cache (for tests and logs).
    hits: AtomicU64,
}

impl std::fmt::Debug for SourceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceCache")
            .field("bytes", &self.0.bytes.load(Ordering::Relaxed))
            .finish()
    }
}

impl SourceCache {
    /// How many texts were served from the cache so far.
    pub fn hits(&self) -> u64 {
        self.0.hits.load(Ordering::Relaxed)
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut HashMap<OsString, (crate::file_stamp::FileStamp, Source)>) -> R,
    ) -> R {
        match self.0.entries.lock() {
            Ok(mut entries) => f(&mut entries),
            // A panicked holder only loses the cache: start over.
            Err(poisoned) => {
                let mut entries = poisoned.into_inner();
                entries.clear();
                self.0.bytes.store(0, Ordering::Relaxed);
                f(&mut entries)
            }
        }
    }

    /// `path`'s text and index: the cached ones when the file's stamp is unchanged, else read
    /// from disk (and cached when settled); `None` when it cannot be read.
    fn source(&self, path: &Path) -> Option<Source> {
        let before = match std::fs::metadata(path) {
            Ok(metadata) => crate::file_stamp::FileStamp::of(&metadata),
            Err(error) => {
                log::debug!("cannot read {} to convert columns: {error}", path.display());
                return None;
            }
        };
        let cached = self.with(|entries| match entries.get(path.as_os_str()) {
            Some((stamp, source)) if *stamp == before => Some(source.clone()),
            _ => None,
        });
        if let Some(source) = cached {
            self.0.hits.fetch_add(1, Ordering::Relaxed);
            log::debug!("{}: text from the source cache", path.display());
            return Some(source);
        }
        let read_at = SystemTime::now();
        let source = read_source(path)?;
        let after =
            std::fs::metadata(path).map(|metadata| crate::file_stamp::FileStamp::of(&metadata));
        let settled = before
            .changed_at()
            .is_some_and(|changed| changed + SETTLED_BEFORE_READ <= read_at);
        if after.is_ok_and(|after| after == before)
            && settled
            && before.size() <= CACHED_FILE_MAX_BYTES
        {
            let size = before.size();
            self.with(|entries| {
                if self.0.bytes.load(Ordering::Relaxed) + size > CACHE_MAX_BYTES {
                    entries.clear();
                    self.0.bytes.store(0, Ordering::Relaxed);
                }
                let old = entries.insert(path.as_os_str().to_owned(), (before, source.clone()));
                let old_size = old.map_or(0, |(stamp, _)| stamp.size());
                self.0.bytes.fetch_add(size, Ordering::Relaxed);
                self.0.bytes.fetch_sub(old_size, Ordering::Relaxed);
            });
        }
        Some(source)
    }
}

/// `path` read and indexed; `None` (logged) when it cannot be read.
fn read_source(path: &Path) -> Option<Source> {
    match crate::engine::read_regular_file(path) {
        Ok(bytes) => {
            let text: Arc<str> = String::from_utf8_lossy(&bytes).into();
            let index = Arc::new(LineIndex::new(&text));
            Some(Source { text, index })
        }
        Err(error) => {
            log::debug!("cannot read {} to convert columns: {error}", path.display());
            None
        }
    }
}

/// Up to this many files are found by comparing paths; more get a hash index.
const LINEAR_FILES: usize = 4;

/// Texts of the files one query's results point into, for converting server positions.
///
/// A result usually points into one to three files, and each location asks for its file three
/// times (start, end, line text): files are found by comparing their paths' bytes, the last one
/// first, and hashed (as bytes) only past [`LINEAR_FILES`] (issue 15: hashing a `Path`, or
/// comparing two different ones, walks their components, hundreds of instructions). Two
/// spellings of one file are two entries, each read once.
pub struct SourceFiles {
    encoding: PositionEncoding,
    /// Each file once, in the order first asked for; `None` when it could not be read.
    files: Vec<(PathBuf, Option<Source>)>,
    /// Index into `files` by path, kept once there are more than [`LINEAR_FILES`].
    index: HashMap<OsString, usize>,
    /// The file found last.
    last: Option<usize>,
    /// Where files not yet known are looked up before they are read.
    cache: Option<SourceCache>,
}

impl SourceFiles {
    /// Converts positions sent by a server that negotiated `encoding`.
    pub fn new(encoding: PositionEncoding) -> SourceFiles {
        SourceFiles {
            encoding,
            files: Vec::new(),
            index: HashMap::new(),
            last: None,
            cache: None,
        }
    }

    /// [`SourceFiles::new`], taking the texts of files not yet known from `cache`.
    pub fn with_cache(encoding: PositionEncoding, cache: SourceCache) -> SourceFiles {
        SourceFiles {
            cache: Some(cache),
            ..SourceFiles::new(encoding)
        }
    }

    /// Use `text` for `path` (canonical) instead of reading the disk: the synced document's text
    /// is exactly what the server answers about.
    pub fn add_document(&mut self, path: &Path, text: Arc<str>) {
        let index = Arc::new(LineIndex::new(&text));
        self.add_indexed_document(path, text, index);
    }

    /// [`SourceFiles::add_document`] with `text`'s line index already built.
    pub fn add_indexed_document(&mut self, path: &Path, text: Arc<str>, index: Arc<LineIndex>) {
        let source = Some(Source { text, index });
        let slot = match self.slot_of(path) {
            Some(slot) => {
                self.files[slot].1 = source;
                slot
            }
            None => self.push(path, source),
        };
        self.last = Some(slot);
    }

    /// Where `path` is in `files`.
    fn slot_of(&self, path: &Path) -> Option<usize> {
        if let Some(last) = self.last {
            if self.files[last].0.as_os_str() == path.as_os_str() {
                return Some(last);
            }
        }
        if self.files.len() <= LINEAR_FILES {
            self.files
                .iter()
                .position(|(known, _)| known.as_os_str() == path.as_os_str())
        } else {
            self.index.get(path.as_os_str()).copied()
        }
    }

    /// Add `path` (not yet known) and return its slot.
    fn push(&mut self, path: &Path, source: Option<Source>) -> usize {
        let slot = self.files.len();
        self.files.push((path.to_path_buf(), source));
        if self.files.len() == LINEAR_FILES + 1 {
            for (known_slot, (known, _)) in self.files.iter().enumerate() {
                self.index
                    .insert(known.clone().into_os_string(), known_slot);
            }
        } else if self.files.len() > LINEAR_FILES + 1 {
            self.index.insert(path.as_os_str().to_owned(), slot);
        }
        slot
    }

    fn source(&mut self, path: &Path) -> Option<&Source> {
        let slot = match self.slot_of(path) {
            Some(slot) => slot,
            None => {
                let source = match &self.cache {
                    Some(cache) => cache.source(path),
                    None => read_source(path),
                };
                self.push(path, source)
            }
        };
        self.last = Some(slot);
        self.files[slot].1.as_ref()
    }

    /// 1-based (line, column in chars) of an LSP position in `path`.
    pub fn position(&mut self, path: &Path, position: lsp_types::Position) -> (u32, u32) {
        let encoding = self.encoding;
        match self.source(path) {
            Some(source) => source.index.from_lsp(&source.text, position, encoding),
            None => (
                position.line.saturating_add(1),
                position.character.saturating_add(1),
            ),
        }
    }

    /// The text of 1-based `line` in `path` without its terminator; `None` when unreadable.
    pub fn line_text(&mut self, path: &Path, line: u32) -> Option<String> {
        let source = self.source(path)?;
        source
            .index
            .line_text(&source.text, line.checked_sub(1)?)
            .map(str::to_owned)
    }

    /// An lspc [`Location`] for `range` in `path`, with the start line's text.
    pub fn location(&mut self, path: &Path, range: lsp_types::Range) -> Location {
        let (line, column) = self.position(path, range.start);
        let (end_line, end_column) = self.position(path, range.end);
        Location {
            path: path.to_path_buf(),
            line,
            column,
            end_line,
            end_column,
            line_text: self.line_text(path, line),
        }
    }

    /// A 1-based [`Range1`] for `range` in `path`.
    pub fn range(&mut self, path: &Path, range: lsp_types::Range) -> Range1 {
        let (start_line, start_column) = self.position(path, range.start);
        let (end_line, end_column) = self.position(path, range.end);
        Range1 {
            start_line,
            start_column,
            end_line,
            end_column,
        }
    }

    /// [`SourceFiles::location`] for a raw location; `None` (logged) when its URI is not a
    /// `file:` URI lspc can map to a path.
    pub fn resolve(&mut self, raw: &RawLocation) -> Option<Location> {
        match uri::uri_to_path(&raw.uri) {
            Ok(path) => Some(self.location(&path, raw.range)),
            Err(error) => {
                log::debug!("skipping a location: {error}");
                None
            }
        }
    }
}

/// The path of a `file:` URI; `None` (logged) otherwise.
pub fn path_of_uri(uri_text: &str) -> Option<PathBuf> {
    match uri::uri_to_path(uri_text) {
        Ok(path) => Some(path),
        Err(error) => {
            log::debug!("skipping a result: {error}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(l0: u32, c0: u32, l1: u32, c1: u32) -> lsp_types::Range {
        lsp_types::Range {
            start: lsp_types::Position {
                line: l0,
                character: c0,
            },
            end: lsp_types::Position {
                line: l1,
                character: c1,
            },
        }
    }

    fn check(value: Value, expected: &[(&str, lsp_types::Range)]) {
        let expected: Vec<RawLocation> = expected
            .iter()
            .map(|(uri, range)| RawLocation {
                uri: (*uri).to_owned(),
                range: *range,
            })
            .collect();
        assert_eq!(parse_locations(&value), expected, "{value}");
    }

    #[test]
    fn every_location_shape_is_normalised() {
        let r = |l, c| json!({"start": {"line": l, "character": c}, "end": {"line": l, "character": c + 1}});
        // (a) a single Location object.
        check(
            json!({"uri": "file:///w/a.py", "range": r(2, 4)}),
            &[("file:///w/a.py", range(2, 4, 2, 5))],
        );
        // Location[].
        check(
            json!([{"uri": "file:///w/a.py", "range": r(0, 0)}, {"uri": "file:///w/b.py", "range": r(1, 2)}]),
            &[
                ("file:///w/a.py", range(0, 0, 0, 1)),
                ("file:///w/b.py", range(1, 2, 1, 3)),
            ],
        );
        // (b) LocationLink[] whose targetSelectionRange differs from targetRange: selection wins.
        check(
            json!([{"originSelectionRange": r(9, 9), "targetUri": "file:///w/c.c",
                    "targetRange": r(0, 0), "targetSelectionRange": r(0, 4)}]),
            &[("file:///w/c.c", range(0, 4, 0, 5))],
        );
        // A link without targetSelectionRange (or originSelectionRange) falls back to targetRange.
        check(
            json!([{"targetUri": "file:///w/c.c", "targetRange": r(3, 1)}]),
            &[("file:///w/c.c", range(3, 1, 3, 2))],
        );
        // (c) null and (d) [] are "nothing found".
        check(json!(null), &[]);
        check(json!([]), &[]);
        // Malformed entries are skipped, the rest kept.
        check(
            json!([{"uri": "file:///w/a.py"}, 7, {"uri": "file:///w/a.py", "range": r(1, 1)}]),
            &[("file:///w/a.py", range(1, 1, 1, 2))],
        );
        check(json!("file:///w/a.py"), &[]);
    }

    #[test]
    fn server_positions_convert_to_characters_in_every_encoding() {
        let text: Arc<str> = "a = 42\nb = a + a\ns = \"😀😀\"; total = a + 1\n".into();
        let path = Path::new("/nonexistent/a.py");
        let check = |encoding: PositionEncoding, character: u32, expected_column: u32| {
            let mut files = SourceFiles::new(encoding);
            files.add_document(path, Arc::clone(&text));
            let location = files.location(path, range(2, character, 2, character + 1));
            assert_eq!(
                (location.line, location.column),
                (3, expected_column),
                "{encoding} {character}"
            );
            assert_eq!(
                location.line_text.as_deref(),
                Some("s = \"😀😀\"; total = a + 1")
            );
        };
        // The `a` after the emojis is character 19: UTF-16 unit 20, UTF-8 byte 24, UTF-32 18.
        check(PositionEncoding::Utf16, 20, 19);
        check(PositionEncoding::Utf8, 24, 19);
        check(PositionEncoding::Utf32, 18, 19);
        // CJK (BMP) counts 1 in UTF-16 and 3 in UTF-8.
        let cjk: Arc<str> = "名前 = 1".into();
        let mut files = SourceFiles::new(PositionEncoding::Utf8);
        files.add_document(path, Arc::clone(&cjk));
        assert_eq!(files.position(path, range(0, 7, 0, 7).start), (1, 4));
        let mut files = SourceFiles::new(PositionEncoding::Utf16);
        files.add_document(path, cjk);
        assert_eq!(files.position(path, range(0, 3, 0, 3).start), (1, 4));
    }

    #[test]
    fn unreadable_files_keep_the_servers_numbers() {
        let mut files = SourceFiles::new(PositionEncoding::Utf16);
        let location = files.location(Path::new("/nonexistent/x.c"), range(4, 2, 4, 7));
        assert_eq!(
            (
                location.line,
                location.column,
                location.end_line,
                location.end_column
            ),
            (5, 3, 5, 8)
        );
        assert_eq!(location.line_text, None);
        let raw = RawLocation {
            uri: "http://example.com/x".to_owned(),
            range: range(0, 0, 0, 0),
        };
        assert_eq!(files.resolve(&raw), None);
    }

    /// Past [`LINEAR_FILES`] files are found through the index; each keeps its own text, in
    /// any order of asking, and a document's text replaces what was known for its path.
    #[test]
    fn many_files_each_keep_their_text() {
        let mut files = SourceFiles::new(PositionEncoding::Utf16);
        let paths: Vec<PathBuf> = (0..9)
            .map(|n| PathBuf::from(format!("/nonexistent/f{n}.py")))
            .collect();
        for (n, path) in paths.iter().enumerate() {
            files.add_document(path, format!("first\nline {n}\n").into());
        }
        for n in [8, 0, 4, 5, 1, 8, 7, 2, 6, 3, 0] {
            assert_eq!(
                files.line_text(&paths[n], 2).as_deref(),
                Some(format!("line {n}").as_str())
            );
        }
        files.add_document(&paths[6], "only\n".into());
        assert_eq!(files.line_text(&paths[6], 1).as_deref(), Some("only"));
        assert_eq!(files.line_text(&paths[5], 2).as_deref(), Some("line 5"));
        assert_eq!(files.files.len(), 9);
        // An unreadable file is remembered as such, not read again.
        let missing = Path::new("/nonexistent/missing.py");
        assert_eq!(files.line_text(missing, 1), None);
        assert_eq!(files.line_text(missing, 1), None);
        assert_eq!(files.files.len(), 10);
    }

    /// Issue 15: a file's text is cached across queries only while one `stat` shows it
    /// unchanged; a change on disk (same size, even with its mtime put back) is read again, and
    /// a file changed just now is never cached.
    #[test]
    fn cached_source_texts_never_go_stale() {
        let dir = std::env::temp_dir().join(format!("lspc-source-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("util.h");
        std::fs::write(&path, "int old_one(void);\n").unwrap();
        let cache = SourceCache::default();
        let line_text = |cache: &SourceCache| {
            SourceFiles::with_cache(PositionEncoding::Utf16, cache.clone()).line_text(&path, 1)
        };
        // Changed just now: read, not cached.
        assert_eq!(line_text(&cache).as_deref(), Some("int old_one(void);"));
        assert_eq!(line_text(&cache).as_deref(), Some("int old_one(void);"));
        assert_eq!(cache.hits(), 0);
        std::thread::sleep(SETTLED_BEFORE_READ + Duration::from_millis(100));
        // Settled: read once, then served by the cache.
        assert_eq!(line_text(&cache).as_deref(), Some("int old_one(void);"));
        assert_eq!(line_text(&cache).as_deref(), Some("int old_one(void);"));
        assert_eq!(cache.hits(), 1);
        // The same size and the old mtime put back: the ctime still tells.
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, "int new_one(void);\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(line_text(&cache).as_deref(), Some("int new_one(void);"));
        assert_eq!(line_text(&cache).as_deref(), Some("int new_one(void);"));
        assert_eq!(cache.hits(), 1);
        // Gone: no text, whatever was cached.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(line_text(&cache), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
