//! Line indexes and column conversion between what lspc shows and what LSP sends.
//!
//! Two coordinate systems meet here:
//! - lspc's user-facing positions: 1-based lines and 1-based columns counted in Unicode scalar
//!   values (Rust `char`s), so `😀` is one column.
//! - LSP positions (spec 3.17, "Position" and "PositionEncodingKind"): 0-based `line` and 0-based
//!   `character` counted in the negotiated code units: UTF-16 by default, UTF-8 bytes or UTF-32
//!   (= chars) when negotiated.
//!
//! Invariants:
//! - Lines end at `\n`, `\r\n` or a lone `\r` (LSP 3.17 "Text Documents"); a text ending in a
//!   terminator has one more, empty, line, and an empty text has one empty line.
//! - A [`LineIndex`] is built from one text and every method takes that same text again (it does
//!   not own it). Given another text, methods still never panic: they clamp.
//! - User input (`to_lsp`) is validated strictly with errors; server output (`from_lsp`, `offset`)
//!   is clamped leniently and never fails.

use std::fmt;

/// U+FEFF, which a UTF-8 file may begin with (its byte order mark, `EF BB BF`).
pub const BYTE_ORDER_MARK: char = '\u{feff}';

/// `text` without a leading UTF-8 byte order mark: the text an editor gives a server. The mark
/// is the file's encoding, not its text: an editor strips it on reading and writes it back on
/// save, so line 1's columns do not count it. tsserver and ruff count it as a character when it
/// is sent (tsc's `1:7` was lspc's `1:8`, ruff check's `1:8` lspc's `1:9`: new users' trials).
pub fn without_byte_order_mark(text: &str) -> &str {
    text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text)
}

/// The unit LSP `Position.character` counts in (LSP 3.17 `PositionEncodingKind`; clangd's older
/// `offsetEncoding` extension uses the same strings).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum PositionEncoding {
    /// UTF-8 code units (bytes): `"utf-8"`.
    Utf8,
    /// UTF-16 code units: `"utf-16"`, the LSP default every server must support.
    #[default]
    Utf16,
    /// UTF-32 code units, i.e. Unicode scalar values (`char`s): `"utf-32"`.
    Utf32,
}

impl PositionEncoding {
    /// Parses an LSP `PositionEncodingKind` (`"utf-8"`, `"utf-16"`, `"utf-32"`); `None` for
    /// anything else.
    pub fn from_lsp(kind: &lsp_types::PositionEncodingKind) -> Option<Self> {
        Self::from_name(kind.as_str())
    }

    /// Parses an encoding name as used by LSP `positionEncoding` and clangd `offsetEncoding`
    /// (`"utf-8"`, `"utf-16"`, `"utf-32"`, exact and lowercase as both specs spell them).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "utf-8" => Some(PositionEncoding::Utf8),
            "utf-16" => Some(PositionEncoding::Utf16),
            "utf-32" => Some(PositionEncoding::Utf32),
            _ => None,
        }
    }

    /// The LSP `PositionEncodingKind` for this encoding.
    pub fn as_lsp(self) -> lsp_types::PositionEncodingKind {
        match self {
            PositionEncoding::Utf8 => lsp_types::PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => lsp_types::PositionEncodingKind::UTF16,
            PositionEncoding::Utf32 => lsp_types::PositionEncodingKind::UTF32,
        }
    }

    /// The spec name: `"utf-8"`, `"utf-16"` or `"utf-32"`.
    pub fn name(self) -> &'static str {
        match self {
            PositionEncoding::Utf8 => "utf-8",
            PositionEncoding::Utf16 => "utf-16",
            PositionEncoding::Utf32 => "utf-32",
        }
    }

    /// How many code units of this encoding `ch` takes (UTF-8: 1-4, UTF-16: 1-2, UTF-32: 1).
    pub fn units_of(self, ch: char) -> u32 {
        match self {
            PositionEncoding::Utf8 => ch.len_utf8() as u32,
            PositionEncoding::Utf16 => ch.len_utf16() as u32,
            PositionEncoding::Utf32 => 1,
        }
    }

    /// How many code units of this encoding `text` takes.
    pub fn units_of_str(self, text: &str) -> u32 {
        let units: usize = match self {
            PositionEncoding::Utf8 => text.len(),
            PositionEncoding::Utf16 => text.chars().map(char::len_utf16).sum(),
            PositionEncoding::Utf32 => text.chars().count(),
        };
        saturating_u32(units)
    }
}

impl fmt::Display for PositionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn saturating_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A user-given (1-based) position that does not exist in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PositionError {
    /// `line` (1-based) is 0 or greater than `n_lines`.
    LineOutOfRange { line: u32, n_lines: u32 },
    /// `column` (1-based, in chars) is 0 or greater than `line_length + 1`, where `line_length` is
    /// the number of chars on `line` (1-based) without its terminator.
    ColumnOutOfRange {
        line: u32,
        column: u32,
        line_length: u32,
    },
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PositionError::LineOutOfRange { line, n_lines } => write!(
                f,
                "line {line} is out of range (lines are 1 to {n_lines})"
            ),
            PositionError::ColumnOutOfRange {
                line,
                column,
                line_length,
            } => write!(
                f,
                "column {column} is out of range on line {line} (columns are 1 to {}, the line has {line_length} characters)",
                u64::from(*line_length) + 1
            ),
        }
    }
}

impl std::error::Error for PositionError {}

/// Start byte offsets of the lines of one text, for converting positions in both directions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset where each line starts; the first is always 0, so never empty.
    line_starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text`: one line per `\n`, `\r\n` or lone `\r` terminator, plus the line after the
    /// last terminator (empty if the text ends with one).
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        let mut index = 0;
        while index < bytes.len() {
            match bytes[index] {
                b'\n' => line_starts.push(index + 1),
                b'\r' => {
                    if bytes.get(index + 1) == Some(&b'\n') {
                        index += 1;
                    }
                    line_starts.push(index + 1);
                }
                _ => {}
            }
            index += 1;
        }
        LineIndex { line_starts }
    }

    /// Number of lines (at least 1; `"a\n"` has 2, the second empty).
    pub fn n_lines(&self) -> u32 {
        saturating_u32(self.line_starts.len())
    }

    /// Byte range of line `line0` (0-based) without its terminator, clamped to `text`.
    fn line_range(&self, text: &str, line0: u32) -> Option<(usize, usize)> {
        let line0 = usize::try_from(line0).ok()?;
        let start = (*self.line_starts.get(line0)?).min(text.len());
        let end = match self.line_starts.get(line0 + 1) {
            Some(&next_start) => next_start.min(text.len()),
            None => text.len(),
        };
        let line = text.get(start..end)?;
        let content_len = line
            .strip_suffix("\r\n")
            .or_else(|| line.strip_suffix('\n'))
            .or_else(|| line.strip_suffix('\r'))
            .unwrap_or(line)
            .len();
        Some((start, start + content_len))
    }

    /// Text of line `line0` (0-based) without its terminator; `None` past the last line (or if
    /// `text` is not the indexed text and the line does not fall on char boundaries).
    pub fn line_text<'a>(&self, text: &'a str, line0: u32) -> Option<&'a str> {
        let (start, end) = self.line_range(text, line0)?;
        text.get(start..end)
    }

    /// Converts a user position (1-based `line1`, 1-based `column1` in chars) into an LSP
    /// position (0-based line, 0-based `character` in `encoding` units).
    ///
    /// `column1` may be one past the last char (the end-of-line position). Errors:
    /// [`PositionError::LineOutOfRange`] for line 0 or past the last line,
    /// [`PositionError::ColumnOutOfRange`] for column 0 or past the end of line position.
    pub fn to_lsp(
        &self,
        text: &str,
        line1: u32,
        column1: u32,
        encoding: PositionEncoding,
    ) -> Result<lsp_types::Position, PositionError> {
        let n_lines = self.n_lines();
        let line_text = match line1.checked_sub(1) {
            Some(line0) => self.line_text(text, line0),
            None => None,
        }
        .ok_or(PositionError::LineOutOfRange {
            line: line1,
            n_lines,
        })?;
        let out_of_range = || PositionError::ColumnOutOfRange {
            line: line1,
            column: column1,
            line_length: saturating_u32(line_text.chars().count()),
        };
        let byte = byte_offset_of_char_column(line_text, column1).ok_or_else(out_of_range)?;
        Ok(lsp_types::Position {
            line: line1 - 1,
            character: encoding.units_of_str(&line_text[..byte]),
        })
    }

    /// Converts an LSP position into a user position: (1-based line, 1-based column in chars).
    ///
    /// Lenient with server output, never fails: a line past the end clamps to the end of the
    /// text, a `character` past the end of the line clamps to the end of line column (chars + 1),
    /// and a `character` inside a UTF-16 surrogate pair or UTF-8 sequence maps to the char that
    /// contains it.
    pub fn from_lsp(
        &self,
        text: &str,
        position: lsp_types::Position,
        encoding: PositionEncoding,
    ) -> (u32, u32) {
        let (line0, line_text, byte) = self.clamped(text, position, encoding);
        let column0 = line_text
            .get(..byte)
            .map_or(0, |before| before.chars().count());
        (
            line0.saturating_add(1),
            saturating_u32(column0).saturating_add(1),
        )
    }

    /// Byte offset in `text` of an LSP position, clamped like [`LineIndex::from_lsp`] (past the
    /// end -> `text.len()`, inside a char -> the start of that char). Always a char boundary.
    pub fn offset(
        &self,
        text: &str,
        position: lsp_types::Position,
        encoding: PositionEncoding,
    ) -> usize {
        let (line0, _, byte) = self.clamped(text, position, encoding);
        match self.line_range(text, line0) {
            Some((start, _)) => start + byte,
            None => text.len(),
        }
    }

    /// LSP position (0-based line, `character` in `encoding` units) of byte `offset` in `text`.
    /// An offset past the end clamps to the end; one inside a char or a `\r\n` pair moves back to
    /// the start of that char / the end of the line.
    pub fn position_of_offset(
        &self,
        text: &str,
        offset: usize,
        encoding: PositionEncoding,
    ) -> lsp_types::Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        // The last line starting at or before `offset`.
        let line0 = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let line0 = saturating_u32(line0);
        let (start, end) = self.line_range(text, line0).unwrap_or((0, 0));
        let offset = offset.clamp(start, end);
        let character = text
            .get(start..offset)
            .map_or(0, |before| encoding.units_of_str(before));
        lsp_types::Position {
            line: line0,
            character,
        }
    }

    /// LSP position of the very end of `text` (for ranges covering the whole document).
    pub fn end_position(&self, text: &str, encoding: PositionEncoding) -> lsp_types::Position {
        self.position_of_offset(text, text.len(), encoding)
    }

    /// Clamps an LSP position to (0-based line, that line's text, byte offset within the line).
    fn clamped<'a>(
        &self,
        text: &'a str,
        position: lsp_types::Position,
        encoding: PositionEncoding,
    ) -> (u32, &'a str, usize) {
        let last_line0 = self.n_lines().saturating_sub(1);
        if position.line > last_line0 {
            let line_text = self.line_text(text, last_line0).unwrap_or("");
            return (last_line0, line_text, line_text.len());
        }
        let line_text = self.line_text(text, position.line).unwrap_or("");
        let byte = byte_offset_of_units(line_text, position.character, encoding);
        (position.line, line_text, byte)
    }
}

/// Byte offset in `line` of the 1-based char column `column1`; `column1` may be one past the last
/// char (giving `line.len()`). `None` for column 0 or beyond the end of line position.
pub fn byte_offset_of_char_column(line: &str, column1: u32) -> Option<usize> {
    let column0 = usize::try_from(column1.checked_sub(1)?).ok()?;
    match line.char_indices().nth(column0) {
        Some((byte, _)) => Some(byte),
        None if line.chars().count() == column0 => Some(line.len()),
        None => None,
    }
}

/// Byte offset in `line` (no terminator) of the char holding code unit `units` (0-based, in
/// `encoding`); `line.len()` when `units` is at or past the end of the line.
pub fn byte_offset_of_units(line: &str, units: u32, encoding: PositionEncoding) -> usize {
    let mut seen: u32 = 0;
    for (byte, ch) in line.char_indices() {
        let width = encoding.units_of(ch);
        // `units` lands on this char's first unit or inside it (a surrogate pair's second half,
        // a UTF-8 continuation byte): both mean this char.
        if units < seen.saturating_add(width) {
            return byte;
        }
        seen = seen.saturating_add(width);
    }
    line.len()
}

/// Why [`find_symbol_column`] found no column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolError {
    /// The symbol to look for was empty.
    EmptySymbol,
    /// The occurrence number was 0 (occurrences count from 1).
    ZeroOccurrence { symbol: String },
    /// `symbol` occurs `found` times on `line_text` (0 = not at all), fewer than `occurrence`
    /// (1-based). `found` counts whole-word matches when there are any, else substring matches.
    NotFound {
        symbol: String,
        line_text: String,
        occurrence: u32,
        found: u32,
    },
}

/// How many characters of a symbol or a line a [`SymbolError`] message quotes.
const QUOTED_CHARS: usize = 200;

/// `text` as an error message quotes it: whole up to [`QUOTED_CHARS`] characters, else its first
/// ones, `…` and its length (a 5 MB `symbol` argument was echoed whole, into an agent's context).
fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(QUOTED_CHARS) {
        None => std::borrow::Cow::Borrowed(text),
        Some((end, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} characters)",
            &text[..end],
            text.chars().count()
        )),
    }
}

impl fmt::Display for SymbolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolError::EmptySymbol => write!(f, "the symbol to look for is empty"),
            SymbolError::ZeroOccurrence { symbol } => write!(
                f,
                "occurrence 0 of symbol `{}` asked for; occurrences count from 1",
                quoted(symbol)
            ),
            SymbolError::NotFound {
                symbol,
                line_text,
                found: 0,
                ..
            } => write!(
                f,
                "symbol `{}` not found on line: `{}`",
                quoted(symbol),
                quoted(line_text)
            ),
            SymbolError::NotFound {
                symbol,
                line_text,
                occurrence,
                found,
            } => write!(
                f,
                "occurrence {occurrence} of symbol `{}` asked for but it occurs {found} time{} on line: `{}`",
                quoted(symbol),
                if *found == 1 { "" } else { "s" },
                quoted(line_text)
            ),
        }
    }
}

impl std::error::Error for SymbolError {}

/// Whether `ch` can be part of an identifier (letters and digits of any script, `_`).
fn is_identifier_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The byte offsets in `line` of `symbol`'s non-overlapping substring matches, and of those that
/// are whole-word matches (see [`find_symbol_column`]).
fn symbol_matches(line: &str, symbol: &str) -> (Vec<usize>, Vec<usize>) {
    let check_start = symbol.chars().next().is_some_and(is_identifier_char);
    let check_end = symbol.chars().next_back().is_some_and(is_identifier_char);
    let substring_matches: Vec<usize> = line.match_indices(symbol).map(|(byte, _)| byte).collect();
    let whole_word_matches: Vec<usize> = substring_matches
        .iter()
        .copied()
        .filter(|&byte| {
            let before_ok = !check_start
                || !line[..byte]
                    .chars()
                    .next_back()
                    .is_some_and(is_identifier_char);
            let after_ok = !check_end
                || !line[byte + symbol.len()..]
                    .chars()
                    .next()
                    .is_some_and(is_identifier_char);
            before_ok && after_ok
        })
        .collect();
    (substring_matches, whole_word_matches)
}

/// Whether `symbol` occurs on `line` only inside longer names (`abel` in `label: int`), so that
/// [`find_symbol_column`] would fall back to a substring match. The edit commands refuse such a
/// position: a rename there would rename the longer name.
pub fn symbol_only_inside_longer_names(line: &str, symbol: &str) -> bool {
    let (substring_matches, whole_word_matches) = symbol_matches(line, symbol);
    !substring_matches.is_empty() && whole_word_matches.is_empty()
}

/// The 1-based char column of the `occurrence`-th (1-based) occurrence of `symbol` in `line`.
///
/// Whole-word matches are preferred: a match counts as whole-word when it is not glued to
/// identifier chars (letters, digits, `_`) on a side where the symbol itself starts/ends with an
/// identifier char (so `a` in `total = a` skips `total`, and `->` matches anywhere). When the line
/// has any whole-word match, occurrences count whole-word matches only; otherwise they count
/// non-overlapping substring matches (so `Foo` finds `FooBar`).
///
/// Errors: [`SymbolError::EmptySymbol`], [`SymbolError::ZeroOccurrence`],
/// [`SymbolError::NotFound`] carrying the line text and how many matches there were.
pub fn find_symbol_column(line: &str, symbol: &str, occurrence: u32) -> Result<u32, SymbolError> {
    if symbol.is_empty() {
        return Err(SymbolError::EmptySymbol);
    }
    let Some(wanted) = occurrence.checked_sub(1) else {
        return Err(SymbolError::ZeroOccurrence {
            symbol: symbol.to_string(),
        });
    };
    let (substring_matches, whole_word_matches) = symbol_matches(line, symbol);
    let matches = if whole_word_matches.is_empty() {
        substring_matches
    } else {
        whole_word_matches
    };
    match usize::try_from(wanted)
        .ok()
        .and_then(|index| matches.get(index))
    {
        Some(&byte) => Ok(saturating_u32(line[..byte].chars().count()).saturating_add(1)),
        None => Err(SymbolError::NotFound {
            symbol: symbol.to_string(),
            line_text: line.to_string(),
            occurrence,
            found: saturating_u32(matches.len()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::Position;
    use PositionEncoding::{Utf16, Utf32, Utf8};

    const EMOJI_LINE: &str = "s = \"😀😀\"; total = a + 1";

    fn position(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn encoding_names() {
        let check = |name: &str, expected: Option<PositionEncoding>| {
            assert_eq!(PositionEncoding::from_name(name), expected, "{name}");
            assert_eq!(
                PositionEncoding::from_lsp(&lsp_types::PositionEncodingKind::new(
                    // `new` needs 'static; the test names are literals.
                    Box::leak(name.to_string().into_boxed_str())
                )),
                expected
            );
            if let Some(encoding) = expected {
                assert_eq!(encoding.as_lsp().as_str(), name);
                assert_eq!(encoding.to_string(), name);
            }
        };
        check("utf-8", Some(Utf8));
        check("utf-16", Some(Utf16));
        check("utf-32", Some(Utf32));
        check("UTF-16", None);
        check("utf8", None);
        check("", None);
        assert_eq!(PositionEncoding::default(), Utf16);
    }

    #[test]
    fn line_splitting() {
        let check = |text: &str, expected: &[&str]| {
            let index = LineIndex::new(text);
            assert_eq!(
                index.n_lines() as usize,
                expected.len(),
                "n_lines of {text:?}"
            );
            for (line0, expected_line) in expected.iter().enumerate() {
                assert_eq!(
                    index.line_text(text, line0 as u32),
                    Some(*expected_line),
                    "{text:?}"
                );
            }
            assert_eq!(index.line_text(text, expected.len() as u32), None);
        };
        check("", &[""]);
        check("a", &["a"]);
        check("a\n", &["a", ""]);
        check("a\nb", &["a", "b"]);
        check("a\r\nb\r\n", &["a", "b", ""]);
        check("a\rb", &["a", "b"]);
        check("a\r\r\nb\n\rc", &["a", "", "b", "", "c"]);
        check("\n\n", &["", "", ""]);
        check("日本\n😀", &["日本", "😀"]);
    }

    /// One user position <-> LSP position pair, checked in both directions.
    fn check_both_ways(
        text: &str,
        (line1, column1): (u32, u32),
        encoding: PositionEncoding,
        (line0, character): (u32, u32),
    ) {
        let index = LineIndex::new(text);
        assert_eq!(
            index.to_lsp(text, line1, column1, encoding),
            Ok(position(line0, character)),
            "to_lsp {text:?} {line1}:{column1} {encoding}"
        );
        assert_eq!(
            index.from_lsp(text, position(line0, character), encoding),
            (line1, column1),
            "from_lsp {text:?} {line0}:{character} {encoding}"
        );
    }

    #[test]
    fn emoji_line_exact_numbers() {
        // `a` is the 19th char; the two emoji take 2 UTF-16 units and 4 UTF-8 bytes each.
        assert_eq!(find_symbol_column(EMOJI_LINE, "a", 1), Ok(19));
        check_both_ways(EMOJI_LINE, (1, 19), Utf32, (0, 18));
        check_both_ways(EMOJI_LINE, (1, 19), Utf16, (0, 20));
        check_both_ways(EMOJI_LINE, (1, 19), Utf8, (0, 24));
        // The emoji themselves: columns 6 and 7.
        check_both_ways(EMOJI_LINE, (1, 6), Utf16, (0, 5));
        check_both_ways(EMOJI_LINE, (1, 7), Utf16, (0, 7));
        check_both_ways(EMOJI_LINE, (1, 7), Utf8, (0, 9));
        check_both_ways(EMOJI_LINE, (1, 8), Utf8, (0, 13));
        // End of line: 23 chars, column 24.
        check_both_ways(EMOJI_LINE, (1, 24), Utf32, (0, 23));
        check_both_ways(EMOJI_LINE, (1, 24), Utf16, (0, 25));
        check_both_ways(EMOJI_LINE, (1, 24), Utf8, (0, 29));
        let index = LineIndex::new(EMOJI_LINE);
        assert_eq!(index.offset(EMOJI_LINE, position(0, 20), Utf16), 24);
        assert_eq!(&EMOJI_LINE[24..25], "a");
    }

    #[test]
    fn conversions_ascii_cjk_crlf() {
        check_both_ways("abc", (1, 1), Utf16, (0, 0));
        check_both_ways("abc", (1, 3), Utf8, (0, 2));
        check_both_ways("abc", (1, 4), Utf16, (0, 3));
        check_both_ways("x\nabc", (2, 2), Utf16, (1, 1));
        // CJK: 1 char = 1 UTF-16 unit = 3 UTF-8 bytes.
        check_both_ways("日本語x", (1, 4), Utf32, (0, 3));
        check_both_ways("日本語x", (1, 4), Utf16, (0, 3));
        check_both_ways("日本語x", (1, 4), Utf8, (0, 9));
        check_both_ways("日本語x", (1, 5), Utf8, (0, 10));
        // CRLF: the `\r` is not part of the line.
        check_both_ways("ab\r\ncd\r\n", (1, 3), Utf16, (0, 2));
        check_both_ways("ab\r\ncd\r\n", (2, 2), Utf16, (1, 1));
        check_both_ways("ab\r\ncd\r\n", (3, 1), Utf16, (2, 0));
        check_both_ways("ab\rcd", (2, 3), Utf8, (1, 2));
        // Empty file and last line without newline.
        check_both_ways("", (1, 1), Utf16, (0, 0));
        check_both_ways("a\nlast", (2, 5), Utf16, (1, 4));
        check_both_ways("a\n", (2, 1), Utf8, (1, 0));
    }

    fn check_to_lsp_error(text: &str, line1: u32, column1: u32, expected: PositionError) {
        let index = LineIndex::new(text);
        assert_eq!(
            index.to_lsp(text, line1, column1, Utf16),
            Err(expected),
            "{text:?}"
        );
    }

    #[test]
    fn to_lsp_errors() {
        use PositionError::{ColumnOutOfRange, LineOutOfRange};
        check_to_lsp_error(
            "abc",
            0,
            1,
            LineOutOfRange {
                line: 0,
                n_lines: 1,
            },
        );
        check_to_lsp_error(
            "abc",
            2,
            1,
            LineOutOfRange {
                line: 2,
                n_lines: 1,
            },
        );
        check_to_lsp_error(
            "a\n",
            3,
            1,
            LineOutOfRange {
                line: 3,
                n_lines: 2,
            },
        );
        check_to_lsp_error(
            "",
            2,
            1,
            LineOutOfRange {
                line: 2,
                n_lines: 1,
            },
        );
        let column = |line, column, line_length| ColumnOutOfRange {
            line,
            column,
            line_length,
        };
        check_to_lsp_error("abc", 1, 5, column(1, 5, 3));
        check_to_lsp_error("abc", 1, 0, column(1, 0, 3));
        check_to_lsp_error("x\r\nab\r\n", 2, 4, column(2, 4, 2));
        check_to_lsp_error("", 1, 2, column(1, 2, 0));
        check_to_lsp_error(EMOJI_LINE, 1, 25, column(1, 25, 23));
        assert_eq!(
            LineOutOfRange {
                line: 9,
                n_lines: 3
            }
            .to_string(),
            "line 9 is out of range (lines are 1 to 3)"
        );
        assert_eq!(
            column(2, 7, 4).to_string(),
            "column 7 is out of range on line 2 (columns are 1 to 5, the line has 4 characters)"
        );
    }

    /// Server position -> (user position, byte offset), with clamping.
    fn check_lenient(
        text: &str,
        (line0, character): (u32, u32),
        encoding: PositionEncoding,
        expected_user: (u32, u32),
        expected_offset: usize,
    ) {
        let index = LineIndex::new(text);
        let lsp_position = position(line0, character);
        assert_eq!(
            index.from_lsp(text, lsp_position, encoding),
            expected_user,
            "from_lsp {text:?} {line0}:{character} {encoding}"
        );
        assert_eq!(
            index.offset(text, lsp_position, encoding),
            expected_offset,
            "offset {text:?} {line0}:{character} {encoding}"
        );
    }

    #[test]
    fn from_lsp_and_offset_clamp() {
        let text = "ab😀c\r\nxy\n";
        check_lenient(text, (0, 0), Utf16, (1, 1), 0);
        check_lenient(text, (0, 2), Utf16, (1, 3), 2);
        // Inside the surrogate pair -> the emoji.
        check_lenient(text, (0, 3), Utf16, (1, 3), 2);
        check_lenient(text, (0, 4), Utf16, (1, 4), 6);
        // Inside the UTF-8 sequence -> the emoji.
        check_lenient(text, (0, 3), Utf8, (1, 3), 2);
        check_lenient(text, (0, 5), Utf8, (1, 3), 2);
        check_lenient(text, (0, 6), Utf8, (1, 4), 6);
        check_lenient(text, (0, 3), Utf32, (1, 4), 6);
        // Past the end of the line -> end of line (before `\r\n`).
        check_lenient(text, (0, 99), Utf16, (1, 5), 7);
        check_lenient(text, (1, 2), Utf16, (2, 3), 11);
        check_lenient(text, (1, u32::MAX), Utf8, (2, 3), 11);
        // Last (empty) line and past the end of the file -> end of file.
        check_lenient(text, (2, 0), Utf16, (3, 1), 12);
        check_lenient(text, (3, 0), Utf16, (3, 1), 12);
        check_lenient(text, (u32::MAX, u32::MAX), Utf16, (3, 1), 12);
        check_lenient("", (5, 5), Utf8, (1, 1), 0);
        check_lenient("abc", (7, 0), Utf8, (1, 4), 3);
    }

    #[test]
    fn mismatched_text_never_panics() {
        // Index built from a longer text, used with a shorter one: clamp, no panic.
        let index = LineIndex::new("line one\nline two\nline three\n");
        let short = "li😀";
        assert_eq!(index.line_text(short, 0), Some(short));
        assert_eq!(index.line_text(short, 1), Some(""));
        assert_eq!(index.line_text(short, 4), None);
        assert_eq!(index.from_lsp(short, position(2, 3), Utf16), (3, 1));
        assert_eq!(index.offset(short, position(1, 0), Utf16), short.len());
        assert_eq!(index.to_lsp(short, 2, 1, Utf16), Ok(position(1, 0)));
        assert_eq!(
            index.to_lsp(short, 2, 2, Utf16),
            Err(PositionError::ColumnOutOfRange {
                line: 2,
                column: 2,
                line_length: 0
            })
        );
        assert_eq!(index.position_of_offset(short, 3, Utf16), position(0, 2));
        // A line start inside a char of the other text: no line text, still no panic.
        let index = LineIndex::new("ab\nd");
        assert_eq!(index.line_text("😀", 1), None);
        assert_eq!(index.from_lsp("😀", position(1, 0), Utf16), (2, 1));
        assert_eq!(index.offset("😀", position(1, 0), Utf16), 4);
    }

    fn check_position_of_offset(
        text: &str,
        offset: usize,
        encoding: PositionEncoding,
        expected: (u32, u32),
    ) {
        let index = LineIndex::new(text);
        assert_eq!(
            index.position_of_offset(text, offset, encoding),
            position(expected.0, expected.1),
            "{text:?} offset {offset} {encoding}"
        );
    }

    #[test]
    fn positions_of_offsets() {
        let text = "ab😀c\r\nxy\n";
        check_position_of_offset(text, 0, Utf16, (0, 0));
        check_position_of_offset(text, 2, Utf16, (0, 2));
        check_position_of_offset(text, 4, Utf16, (0, 2));
        check_position_of_offset(text, 6, Utf16, (0, 4));
        check_position_of_offset(text, 6, Utf8, (0, 6));
        check_position_of_offset(text, 8, Utf16, (0, 5));
        check_position_of_offset(text, 9, Utf16, (1, 0));
        check_position_of_offset(text, 11, Utf16, (1, 2));
        check_position_of_offset(text, 12, Utf16, (2, 0));
        check_position_of_offset(text, 999, Utf16, (2, 0));
        check_position_of_offset(EMOJI_LINE, 24, Utf16, (0, 20));
        let index = LineIndex::new(EMOJI_LINE);
        assert_eq!(index.end_position(EMOJI_LINE, Utf16), position(0, 25));
        assert_eq!(
            LineIndex::new("a\r\n").end_position("a\r\n", Utf16),
            position(1, 0)
        );
    }

    #[test]
    fn char_column_helpers() {
        assert_eq!(byte_offset_of_char_column("a😀b", 1), Some(0));
        assert_eq!(byte_offset_of_char_column("a😀b", 3), Some(5));
        assert_eq!(byte_offset_of_char_column("a😀b", 4), Some(6));
        assert_eq!(byte_offset_of_char_column("a😀b", 5), None);
        assert_eq!(byte_offset_of_char_column("a😀b", 0), None);
        assert_eq!(byte_offset_of_char_column("", 1), Some(0));
        assert_eq!(byte_offset_of_units("a😀b", 2, Utf16), 1);
        assert_eq!(byte_offset_of_units("a😀b", 3, Utf16), 5);
        assert_eq!(Utf16.units_of_str("a😀日"), 4);
        assert_eq!(Utf8.units_of_str("a😀日"), 8);
        assert_eq!(Utf32.units_of_str("a😀日"), 3);
    }

    fn check_symbol(line: &str, symbol: &str, occurrence: u32, expected: Result<u32, SymbolError>) {
        assert_eq!(
            find_symbol_column(line, symbol, occurrence),
            expected,
            "{symbol:?} #{occurrence} in {line:?}"
        );
    }

    fn not_found(
        symbol: &str,
        line: &str,
        occurrence: u32,
        found: u32,
    ) -> Result<u32, SymbolError> {
        Err(SymbolError::NotFound {
            symbol: symbol.to_string(),
            line_text: line.to_string(),
            occurrence,
            found,
        })
    }

    #[test]
    fn symbols_only_inside_longer_names() {
        fn check(line: &str, symbol: &str, expected: bool) {
            assert_eq!(
                symbol_only_inside_longer_names(line, symbol),
                expected,
                "{line:?} {symbol:?}"
            );
        }
        check("    label: int = \"x\"", "abel", true);
        check("    label: int = \"x\"", "n", true);
        check("    label: int = \"x\"", "label", false);
        check("FooBar::new()", "Foo", true);
        check("foobar = foo()", "foo", false);
        check("a->b", "->", false);
        check("let x = 1;", "zzz", false);
    }

    #[test]
    fn symbol_columns() {
        check_symbol("let x = foo(x);", "x", 1, Ok(5));
        check_symbol("let x = foo(x);", "x", 2, Ok(13));
        check_symbol(
            "let x = foo(x);",
            "x",
            3,
            not_found("x", "let x = foo(x);", 3, 2),
        );
        // Whole word preferred over substring.
        check_symbol("foobar = foo()", "foo", 1, Ok(10));
        check_symbol("my_foo(foo)", "foo", 1, Ok(8));
        check_symbol("foo2 foo", "foo", 1, Ok(6));
        // Falls back to substring when there is no whole-word match.
        check_symbol("FooBar::new()", "Foo", 1, Ok(1));
        check_symbol("FooBar FooBaz", "Foo", 2, Ok(8));
        // Non-identifier symbols match anywhere.
        check_symbol("a->b->c", "->", 2, Ok(5));
        check_symbol("x.$foo", "$foo", 1, Ok(3));
        // Columns count chars, and non-ASCII letters are identifier chars.
        check_symbol("日本 = naïve(日本語)", "日本", 1, Ok(1));
        check_symbol("日本語 = 日本", "日本", 1, Ok(7));
        check_symbol("😀 x 😀 x", "x", 2, Ok(7));
        check_symbol("let x = 1;", "foo", 1, not_found("foo", "let x = 1;", 1, 0));
        check_symbol("", "foo", 1, not_found("foo", "", 1, 0));
        check_symbol("x", "", 1, Err(SymbolError::EmptySymbol));
        check_symbol(
            "x",
            "x",
            0,
            Err(SymbolError::ZeroOccurrence {
                symbol: "x".to_string(),
            }),
        );
    }

    #[test]
    fn symbol_error_messages() {
        let message = |line: &str, symbol: &str, occurrence: u32| {
            find_symbol_column(line, symbol, occurrence).map_err(|error| error.to_string())
        };
        assert_eq!(
            message("let x = 1;", "foo", 1),
            Err("symbol `foo` not found on line: `let x = 1;`".to_string())
        );
        assert_eq!(
            message("x + x", "x", 3),
            Err(
                "occurrence 3 of symbol `x` asked for but it occurs 2 times on line: `x + x`"
                    .to_string()
            )
        );
        assert_eq!(
            message("x + y", "x", 2),
            Err(
                "occurrence 2 of symbol `x` asked for but it occurs 1 time on line: `x + y`"
                    .to_string()
            )
        );
        // A huge symbol or line is quoted by its start and its length, not whole.
        let long = "é".repeat(250);
        let start = "é".repeat(200);
        assert_eq!(
            message("let x = 1;", &long, 1),
            Err(format!(
                "symbol `{start}… (250 characters)` not found on line: `let x = 1;`"
            ))
        );
        assert_eq!(
            message(&long, "x", 1),
            Err(format!(
                "symbol `x` not found on line: `{start}… (250 characters)`"
            ))
        );
        assert_eq!(quoted(&start), start);
    }
}
