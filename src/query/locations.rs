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
//! files are read from disk once per [`SourceFiles`] (one query). A file that cannot be read keeps
//! the server's numbers + 1 (exact for ASCII lines) and has no line text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
struct Source {
    text: Arc<str>,
    index: Arc<LineIndex>,
}

/// Up to this many files are found by comparing paths; more get a hash index.
const LINEAR_FILES: usize = 4;

/// Texts of the files one query's results point into, for converting server positions.
///
/// A result usually points into one to three files, and each location asks for its file three
/// times (start, end, line text): files are found by path comparison, the last one first, and
/// hashed only past [`LINEAR_FILES`] (issue 15: hashing a `Path` costs hundreds of
/// instructions).
pub struct SourceFiles {
    encoding: PositionEncoding,
    /// Each file once, in the order first asked for; `None` when it could not be read.
    files: Vec<(PathBuf, Option<Source>)>,
    /// Index into `files` by path, kept once there are more than [`LINEAR_FILES`].
    index: HashMap<PathBuf, usize>,
    /// The file found last.
    last: Option<usize>,
}

impl SourceFiles {
    /// Converts positions sent by a server that negotiated `encoding`.
    pub fn new(encoding: PositionEncoding) -> SourceFiles {
        SourceFiles {
            encoding,
            files: Vec::new(),
            index: HashMap::new(),
            last: None,
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
            if self.files[last].0 == path {
                return Some(last);
            }
        }
        if self.files.len() <= LINEAR_FILES {
            self.files.iter().position(|(known, _)| known == path)
        } else {
            self.index.get(path).copied()
        }
    }

    /// Add `path` (not yet known) and return its slot.
    fn push(&mut self, path: &Path, source: Option<Source>) -> usize {
        let slot = self.files.len();
        self.files.push((path.to_path_buf(), source));
        if self.files.len() == LINEAR_FILES + 1 {
            for (known_slot, (known, _)) in self.files.iter().enumerate() {
                self.index.insert(known.clone(), known_slot);
            }
        } else if self.files.len() > LINEAR_FILES + 1 {
            self.index.insert(path.to_path_buf(), slot);
        }
        slot
    }

    fn source(&mut self, path: &Path) -> Option<&Source> {
        let slot = match self.slot_of(path) {
            Some(slot) => slot,
            None => {
                let source = match std::fs::read(path) {
                    Ok(bytes) => {
                        let text: Arc<str> = String::from_utf8_lossy(&bytes).into();
                        let index = Arc::new(LineIndex::new(&text));
                        Some(Source { text, index })
                    }
                    Err(error) => {
                        log::debug!("cannot read {} to convert columns: {error}", path.display());
                        None
                    }
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
}
