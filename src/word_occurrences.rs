//! Whole-word occurrences of a name in the workspace's files, where a server's answer may not
//! reach: after a rename, the occurrences its edit does not touch (issue 11: pyright's project
//! `include = ["src"]` left five calls in `tests/` broken, silently); before references, the files
//! clangd without a compilation database has not parsed.
//!
//! A language server answers only from the files it considers part of its project; lspc cannot
//! change that, but it can look. [`scan`] lists the files inside the root (through
//! [`crate::walk::list_files`], so `.gitignore` is honoured) that the server would serve (by
//! extension) and that hold the name as a whole word, with the 1-based lines where it occurs. The
//! rename command opens those files so the server can include them, asks again, and reports
//! whatever is still left ("not renamed by the server"); the references query opens them and
//! asks again.
//!
//! A whole word is a run of identifier characters (Unicode alphanumerics, `_`, `$`) equal to the
//! name, not preceded or followed by another identifier character. Matches in comments and strings
//! count too: lspc does not parse the language, and a leftover worth a look is listed rather than
//! hidden.

use std::path::{Path, PathBuf};

/// Files larger than this (bytes) are not scanned: generated or vendored, not hand-written code.
pub const MAX_SCANNED_FILE_SIZE: u64 = 2 * 1024 * 1024;

/// A file with whole-word occurrences of a name, and their 1-based lines (ascending, each once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrences {
    pub path: PathBuf,
    pub lines: Vec<u32>,
}

/// Whether `character` can be part of an identifier (letters, digits, `_`, `$`).
pub fn is_identifier_char(character: char) -> bool {
    character.is_alphanumeric() || character == '_' || character == '$'
}

/// The identifier that covers 1-based character `column` of `line` (or starts right after it,
/// when the column is on its first character), `None` when none does.
pub fn identifier_at(line: &str, column: u32) -> Option<String> {
    // Walked over the text itself, not a copy as `char`s (issue 15: this runs for every clangd
    // definition, and the copy was most of its cost).
    let index = usize::try_from(column.checked_sub(1)?).ok()?;
    let (at, first) = line.char_indices().nth(index)?;
    if !is_identifier_char(first) {
        return None;
    }
    let start = line[..at]
        .char_indices()
        .rev()
        .find(|(_, character)| !is_identifier_char(*character))
        .map_or(0, |(position, character)| position + character.len_utf8());
    let end = line[at..]
        .char_indices()
        .find(|(_, character)| !is_identifier_char(*character))
        .map_or(line.len(), |(position, _)| at + position);
    Some(line[start..end].to_owned())
}

/// The identifier at 1-based character `column` of `line` ([`identifier_at`]), or, when that one
/// is a keyword (`is_keyword`) followed by blanks and another identifier, the first such
/// identifier that is not a keyword: the name a declaration's keyword declares (`export
/// function parse` at `export` → `parse`), which is what a server answers about there. A
/// keyword-like name used as a name (`type.length`) stays itself.
pub fn declared_name_at(
    line: &str,
    column: u32,
    is_keyword: impl Fn(&str) -> bool,
) -> Option<String> {
    let characters: Vec<char> = line.chars().collect();
    let mut word = identifier_at(line, column)?;
    let mut from = usize::try_from(column).ok()?;
    while is_keyword(&word) {
        // The blanks after this word, then the next identifier's first character.
        let Some(end) = characters[from - 1..]
            .iter()
            .position(|character| !is_identifier_char(*character))
            .map(|position| from - 1 + position)
        else {
            break;
        };
        let Some(next) = characters[end..]
            .iter()
            .position(|character| !character.is_whitespace())
            .map(|position| end + position)
        else {
            break;
        };
        if next == end || !is_identifier_char(characters[next]) {
            break;
        }
        from = next + 1;
        word = identifier_at(line, u32::try_from(from).ok()?)?;
    }
    Some(word)
}

/// Whether `word`, found in `text` at byte `offset`, stands there as a whole word (no
/// identifier character right before or after it).
fn whole_word_at(text: &str, offset: usize, word: &str) -> bool {
    let before = text[..offset].chars().next_back();
    let after = text[offset + word.len()..].chars().next();
    !before.is_some_and(is_identifier_char) && !after.is_some_and(is_identifier_char)
}

/// The 1-based lines of `text` holding `word` as a whole word.
pub fn whole_word_lines(text: &str, word: &str) -> Vec<u32> {
    whole_word_counts(text, word)
        .into_iter()
        .map(|(line, _)| line)
        .collect()
}

/// The 1-based lines of `text` holding `word` as a whole word, each with how many times it
/// does (ascending lines).
pub fn whole_word_counts(text: &str, word: &str) -> Vec<(u32, usize)> {
    if word.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let count = line
            .match_indices(word)
            .filter(|(offset, _)| whole_word_at(line, *offset, word))
            .count();
        if count > 0 {
            lines.push((u32::try_from(index + 1).unwrap_or(u32::MAX), count));
        }
    }
    lines
}

/// `text` with each whole-word `word` replaced by `with`; `None` when it holds none.
pub fn replace_whole_word(text: &str, word: &str, with: &str) -> Option<String> {
    if word.is_empty() {
        return None;
    }
    let mut replaced = String::with_capacity(text.len());
    let mut rest = 0;
    let mut any = false;
    for (offset, _) in text.match_indices(word) {
        if offset < rest || !whole_word_at(text, offset, word) {
            continue;
        }
        replaced.push_str(&text[rest..offset]);
        replaced.push_str(with);
        rest = offset + word.len();
        any = true;
    }
    any.then(|| {
        replaced.push_str(&text[rest..]);
        replaced
    })
}

/// Files under `root` whose extension (lowercase with a dot, `".py"`) is in `extensions`, that
/// are not in `skip` (canonical paths), and hold `word` as a whole word, in path order. Files
/// that cannot be listed or read, are not UTF-8 or are larger than [`MAX_SCANNED_FILE_SIZE`]
/// are left out (logged at debug level).
pub fn scan(root: &Path, word: &str, extensions: &[String], skip: &[PathBuf]) -> Vec<Occurrences> {
    scan_where(root, word, extensions, skip, |_| true)
}

/// [`scan`] of the files `wanted` accepts (asked before a file is read).
pub fn scan_where(
    root: &Path,
    word: &str,
    extensions: &[String],
    skip: &[PathBuf],
    wanted: impl Fn(&Path) -> bool,
) -> Vec<Occurrences> {
    let files = match crate::walk::list_files(root, &[root.to_path_buf()]) {
        Ok(files) => files,
        Err(error) => {
            log::warn!("cannot list the files of {}: {error}", root.display());
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    for path in files {
        let Some(extension) = crate::config::extension_key(&path) else {
            continue;
        };
        if !extensions.contains(&extension) || skip.contains(&path) || !wanted(&path) {
            continue;
        }
        if std::fs::metadata(&path).map_or(true, |meta| meta.len() > MAX_SCANNED_FILE_SIZE) {
            log::debug!(
                "not scanning {} for {word}: too large or gone",
                path.display()
            );
            continue;
        }
        let Some(text) = crate::engine::read_regular_file(&path)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
        else {
            log::debug!("not scanning {} for {word}: not UTF-8 text", path.display());
            continue;
        };
        let lines = whole_word_lines(&text, word);
        if !lines.is_empty() {
            found.push(Occurrences { path, lines });
        }
    }
    found
}

/// `not renamed by the server: FILE:LINE, FILE:LINE …` (paths relative to `root`), listing at
/// most `cap` places and then how many more; `None` when nothing is left.
pub fn render_note(left: &[Occurrences], root: &Path, cap: usize) -> Option<String> {
    let places: Vec<String> = left
        .iter()
        .flat_map(|file| {
            let shown = crate::uri::relative_display(&file.path, root);
            file.lines.iter().map(move |line| format!("{shown}:{line}"))
        })
        .collect();
    if places.is_empty() {
        return None;
    }
    let mut note = format!(
        "not renamed by the server: {}",
        places[..places.len().min(cap)].join(", ")
    );
    if places.len() > cap {
        note.push_str(&format!(" and {} more", places.len() - cap));
    }
    note.push_str(" (each is another symbol of that name, a comment or a string, a use the server did not rename, or code outside the server's project: check it before editing it by hand)");
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declarations_keyword_stands_for_the_name_it_declares() {
        let keyword = |word: &str| ["export", "function", "const", "def"].contains(&word);
        let at = |line: &str, column| declared_name_at(line, column, keyword);
        assert_eq!(
            at("export function parse(s) {", 1).as_deref(),
            Some("parse")
        );
        assert_eq!(
            at("export function parse(s) {", 10).as_deref(),
            Some("parse")
        );
        assert_eq!(
            at("const maxDistance = 3;", 3).as_deref(),
            Some("maxDistance")
        );
        assert_eq!(at("def f(x):", 1).as_deref(), Some("f"));
        assert_eq!(at("let x = 1;", 1).as_deref(), Some("let"));
        // A keyword with nothing after it, or punctuation: itself.
        assert_eq!(at("export", 1).as_deref(), Some("export"));
        assert_eq!(at("const = ;", 1).as_deref(), Some("const"));
        assert_eq!(at("type.length", 1).as_deref(), Some("type"));
    }

    #[test]
    fn identifiers_are_found_at_a_column() {
        let check = |line: &str, column: u32, expected: Option<&str>| {
            assert_eq!(
                identifier_at(line, column).as_deref(),
                expected,
                "{line:?} {column}"
            );
        };
        check("def format_filename(x):", 5, Some("format_filename"));
        check("def format_filename(x):", 12, Some("format_filename"));
        check("def format_filename(x):", 19, Some("format_filename"));
        check("def format_filename(x):", 20, None);
        check("  été = 1", 3, Some("été"));
        check("$el.x", 1, Some("$el"));
        check("x", 0, None);
        check("x", 5, None);
        check("  été = 1", 5, Some("été"));
        check("x.été", 3, Some("été"));
        check("a→b", 2, None);
        check("a→b", 3, Some("b"));
    }

    /// The walk over the text finds what the copy as `char`s it replaced found, on lines of
    /// identifier, punctuation and multi-byte characters at every column.
    #[test]
    fn identifiers_at_a_column_match_the_copy_as_chars() {
        fn by_chars(line: &str, column: u32) -> Option<String> {
            let characters: Vec<char> = line.chars().collect();
            let index = usize::try_from(column.checked_sub(1)?).ok()?;
            if !characters
                .get(index)
                .copied()
                .is_some_and(is_identifier_char)
            {
                return None;
            }
            let start = characters[..index]
                .iter()
                .rposition(|character| !is_identifier_char(*character))
                .map_or(0, |position| position + 1);
            let end = characters[index..]
                .iter()
                .position(|character| !is_identifier_char(*character))
                .map_or(characters.len(), |position| index + position);
            Some(characters[start..end].iter().collect())
        }
        let alphabet = ['a', '_', '$', '1', ' ', '.', 'é', '→', '😀', 'Ж'];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2_000 {
            let mut line = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for step in 0..(seed % 12) {
                line.push(alphabet[((seed >> (step * 4)) % 10) as usize]);
            }
            for column in 0..=line.chars().count() as u32 + 1 {
                assert_eq!(
                    identifier_at(&line, column),
                    by_chars(&line, column),
                    "{line:?} {column}"
                );
            }
        }
    }

    #[test]
    fn whole_words_only() {
        let check = |text: &str, word: &str, expected: &[u32]| {
            assert_eq!(whole_word_lines(text, word), expected, "{text:?} {word:?}");
        };
        check(
            "from click.utils import format_filename\n\
             format_filename_x = 1\nx.format_filename(y)\n# format_filename\nmy_format_filename()\n",
            "format_filename",
            &[1, 3, 4],
        );
        check("a a\nb\r\na\n", "a", &[1, 3]);
        check("éa a", "a", &[1]);
        check("éa", "a", &[]);
        check("anything", "", &[]);
    }

    #[test]
    fn the_note_lists_places_relative_to_the_root_and_caps_them() {
        let root = Path::new("/w");
        let left = vec![
            Occurrences {
                path: PathBuf::from("/w/tests/test_utils.py"),
                lines: vec![3, 9],
            },
            Occurrences {
                path: PathBuf::from("/w/docs/conf.py"),
                lines: vec![1],
            },
        ];
        let tail = " (each is another symbol of that name, a comment or a string, a use the server did not rename, or code outside the server's project: check it before editing it by hand)";
        assert_eq!(
            render_note(&left, root, 10).unwrap(),
            format!("not renamed by the server: tests/test_utils.py:3, tests/test_utils.py:9, docs/conf.py:1{tail}")
        );
        assert_eq!(
            render_note(&left, root, 1).unwrap(),
            format!("not renamed by the server: tests/test_utils.py:3 and 2 more{tail}")
        );
        assert_eq!(render_note(&[], root, 10), None);
    }
}
