//! The `FormattingOptions` lspc sends with `textDocument/formatting` (LSP 3.17
//! §`FormattingOptions`), taken from the project instead of a fixed "4 spaces" (issue 11: a
//! preview on a tab-indented project rewrote more lines than the file had).
//!
//! Each field is decided on its own, first source that knows it wins:
//! 1. the command's overrides (`--tab-size N`, `--insert-spaces`, `--use-tabs`; the MCP
//!    `format` tool's `tab_size` and `insert_spaces`);
//! 2. the file's `.editorconfig` properties, read with the `ec4rs` crate (the EditorConfig spec:
//!    every `.editorconfig` from the file's folder upwards until one says `root = true`, section
//!    globs, later sections win): `indent_style`, `indent_size`, `tab_width`,
//!    `trim_trailing_whitespace`, `insert_final_newline`;
//! 3. the file's own indentation ([`detect_indentation`]): tabs when most indented lines start
//!    with a tab, else the most common step between the indentation of neighbouring lines; and
//!    `insertFinalNewline: true` when the file ends with a line break (vscode-json-, -css- and
//!    -html-language-server 4.10.0 otherwise delete the file's last line break, which no editor
//!    user asked for; nothing is sent for a file without one);
//! 4. tab size 4 with spaces, the default of the servers that read these options
//!    (typescript-language-server, clangd without a `.clang-format`); ruff and others format by
//!    their own configuration and ignore them. A `.toml` file gets 2, `taplo fmt`'s own
//!    indentation (taplo 0.10.0 takes `tabSize` as its indent: with 4 a formatted `Cargo.toml`
//!    failed `taplo fmt --check`, a new user's trial on rust-lang/log).
//!
//! `end_of_line` has no `FormattingOptions` field: the edit engine keeps a file's own line
//! endings, and when `.editorconfig` asks for other ones [`FormattingChoice::end_of_line_note`]
//! says so rather than rewriting every line.

use std::path::Path;

use serde_json::{json, Map, Value};

/// What the user asked for explicitly; `None` leaves a field to `.editorconfig` and the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FormattingOverrides {
    /// Spaces per tab (and per indentation level with spaces); at least 1.
    pub tab_size: Option<u32>,
    /// `true`: indent with spaces; `false`: with tabs.
    pub insert_spaces: Option<bool>,
}

/// Indentation seen in a file's text ([`detect_indentation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indentation {
    Tabs,
    /// Spaces, this many per level.
    Spaces(u32),
}

/// The `.editorconfig` properties lspc uses for one file; `None` where no section sets one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditorConfig {
    pub insert_spaces: Option<bool>,
    /// `indent_size` as a number (with `indent_size = tab`, the `tab_width`).
    pub indent_size: Option<u32>,
    pub tab_width: Option<u32>,
    pub trim_trailing_whitespace: Option<bool>,
    pub insert_final_newline: Option<bool>,
    /// `"lf"`, `"crlf"` or `"cr"`.
    pub end_of_line: Option<&'static str>,
}

/// The options decided for one file, and where the indentation came from (for logs and notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormattingChoice {
    pub tab_size: u32,
    pub insert_spaces: bool,
    pub trim_trailing_whitespace: Option<bool>,
    pub insert_final_newline: Option<bool>,
    /// `.editorconfig`'s `end_of_line`, when set.
    pub end_of_line: Option<&'static str>,
}

impl FormattingChoice {
    /// The LSP `FormattingOptions` object: `tabSize` and `insertSpaces` always, the optional
    /// LSP 3.15 fields only when decided (by `.editorconfig`, or the file's last line break).
    pub fn to_lsp(&self) -> Value {
        let mut options = Map::new();
        options.insert("tabSize".to_owned(), json!(self.tab_size));
        options.insert("insertSpaces".to_owned(), json!(self.insert_spaces));
        if let Some(trim) = self.trim_trailing_whitespace {
            options.insert("trimTrailingWhitespace".to_owned(), json!(trim));
        }
        if let Some(insert) = self.insert_final_newline {
            options.insert("insertFinalNewline".to_owned(), json!(insert));
        }
        Value::Object(options)
    }

    /// A note when `.editorconfig`'s `end_of_line` differs from the line endings of `text`
    /// (which formatting keeps), e.g. `.editorconfig asks for end_of_line = crlf; the file's lf
    /// line endings were kept`.
    pub fn end_of_line_note(&self, text: &str) -> Option<String> {
        let wanted = self.end_of_line?;
        let found = line_ending_name(text)?;
        (found != wanted).then(|| {
            format!(".editorconfig asks for end_of_line = {wanted}; the file's {found} line endings were kept")
        })
    }
}

/// The first line ending in `text`: `"crlf"`, `"lf"` or `"cr"`; `None` without any.
fn line_ending_name(text: &str) -> Option<&'static str> {
    let index = text.find(['\n', '\r'])?;
    let rest = &text.as_bytes()[index..];
    Some(match rest {
        [b'\r', b'\n', ..] => "crlf",
        [b'\r', ..] => "cr",
        _ => "lf",
    })
}

/// Reads the `.editorconfig` properties of `path` (absolute). A malformed or unreadable
/// `.editorconfig` counts as absent and is logged: formatting then falls back to the file's own
/// indentation.
pub fn editorconfig_of(path: &Path) -> EditorConfig {
    use ec4rs::property::TrimTrailingWs;
    use ec4rs::property::{EndOfLine, FinalNewline, IndentSize, IndentStyle, TabWidth};
    let mut properties = match ec4rs::properties_of(path) {
        Ok(properties) => properties,
        Err(error) => {
            log::warn!("ignoring .editorconfig for {}: {error}", path.display());
            return EditorConfig::default();
        }
    };
    properties.use_fallbacks();
    let number = |value: usize| u32::try_from(value).ok().filter(|value| *value > 0);
    EditorConfig {
        insert_spaces: match properties.get::<IndentStyle>() {
            Ok(IndentStyle::Spaces) => Some(true),
            Ok(IndentStyle::Tabs) => Some(false),
            Err(_) => None,
        },
        indent_size: match properties.get::<IndentSize>() {
            Ok(IndentSize::Value(size)) => number(size),
            _ => None,
        },
        tab_width: match properties.get::<TabWidth>() {
            Ok(TabWidth::Value(width)) => number(width),
            Err(_) => None,
        },
        trim_trailing_whitespace: match properties.get::<TrimTrailingWs>() {
            Ok(TrimTrailingWs::Value(trim)) => Some(trim),
            Err(_) => None,
        },
        insert_final_newline: match properties.get::<FinalNewline>() {
            Ok(FinalNewline::Value(insert)) => Some(insert),
            Err(_) => None,
        },
        end_of_line: match properties.get::<EndOfLine>() {
            Ok(EndOfLine::Lf) => Some("lf"),
            Ok(EndOfLine::CrLf) => Some("crlf"),
            Ok(EndOfLine::Cr) => Some("cr"),
            Err(_) => None,
        },
    }
}

/// The indentation most of `text`'s indented lines use: [`Indentation::Tabs`] when lines that
/// start with a tab outnumber those that start with a space; otherwise spaces, with the most
/// common increase of indentation from one non-blank line to the next (ties: the smaller).
/// `None` when no line is indented. Lines whose indentation mixes tabs and spaces, and
/// one-space steps (continuation alignment, ` * ` in block comments) do not count.
pub fn detect_indentation(text: &str) -> Option<Indentation> {
    let mut tab_lines = 0usize;
    let mut space_lines = 0usize;
    let mut steps: std::collections::BTreeMap<u32, usize> = Default::default();
    let mut previous = 0u32;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let indent: &str = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
        if indent.starts_with('\t') {
            tab_lines += 1;
            continue;
        }
        if indent.contains('\t') {
            continue;
        }
        let width = indent.len() as u32;
        if width > 0 {
            space_lines += 1;
        }
        if width > previous + 1 {
            *steps.entry(width - previous).or_default() += 1;
        }
        previous = width;
    }
    if tab_lines > space_lines {
        return Some(Indentation::Tabs);
    }
    let most = steps.values().copied().max()?;
    steps
        .iter()
        .find(|(_, count)| **count == most)
        .map(|(step, _)| Indentation::Spaces(*step))
}

/// Decides the options for a file whose `.editorconfig` says `editorconfig` and whose text is
/// `text` (see the module documentation for the order); `default_tab_size` when nothing else
/// says ([`default_tab_size`]).
pub fn choose(
    overrides: FormattingOverrides,
    editorconfig: &EditorConfig,
    text: &str,
    default_tab_size: u32,
) -> FormattingChoice {
    let detected = detect_indentation(text);
    let insert_spaces = overrides
        .insert_spaces
        .or(editorconfig.insert_spaces)
        .or(detected.map(|indentation| indentation != Indentation::Tabs))
        .unwrap_or(true);
    // With tabs the tab size is how wide a tab shows (`tab_width`); with spaces it is the
    // indentation step (`indent_size`). The EditorConfig fallbacks fill each from the other.
    let from_editorconfig = if insert_spaces {
        editorconfig.indent_size.or(editorconfig.tab_width)
    } else {
        editorconfig.tab_width.or(editorconfig.indent_size)
    };
    let from_text = match detected {
        Some(Indentation::Spaces(step)) if insert_spaces => Some(step),
        _ => None,
    };
    let tab_size = overrides
        .tab_size
        .or(from_editorconfig)
        .or(from_text)
        .unwrap_or(default_tab_size);
    FormattingChoice {
        tab_size,
        insert_spaces,
        trim_trailing_whitespace: editorconfig.trim_trailing_whitespace,
        insert_final_newline: editorconfig
            .insert_final_newline
            .or(ends_with_line_break(text).then_some(true)),
        end_of_line: editorconfig.end_of_line,
    }
}

/// Whether `text` ends with a line break (`\n`, `\r\n` or `\r`).
fn ends_with_line_break(text: &str) -> bool {
    text.ends_with(['\n', '\r'])
}

/// [`choose`] for the file at `path` (absolute), reading its `.editorconfig`.
pub fn options_for(path: &Path, text: &str, overrides: FormattingOverrides) -> FormattingChoice {
    let choice = choose(
        overrides,
        &editorconfig_of(path),
        text,
        default_tab_size(path),
    );
    log::info!(
        "formatting {} with tabSize {} insertSpaces {}",
        path.display(),
        choice.tab_size,
        choice.insert_spaces
    );
    choice
}

/// The indentation step when neither the command, `.editorconfig` nor the file's own
/// indentation gives one: 2 for `.toml` (`taplo fmt`'s), else 4.
pub fn default_tab_size(path: &Path) -> u32 {
    match path.extension().and_then(|extension| extension.to_str()) {
        Some("toml") => 2,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    #[test]
    fn indentation_is_detected_from_the_text() {
        let check = |text: &str, expected: Option<Indentation>| {
            assert_eq!(detect_indentation(text), expected, "{text:?}");
        };
        check("a\n\tb\n\t\tc\n", Some(Indentation::Tabs));
        check("a\n  b\n    c\n  d\n", Some(Indentation::Spaces(2)));
        check(
            "def f():\n    if x:\n        y\n    return 1\n",
            Some(Indentation::Spaces(4)),
        );
        // Block-comment stars (one space) and a deep continuation do not decide.
        check(
            "/**\n * doc\n */\nf(a,\n        b)\n{\n  x;\n  {\n    y;\n  }\n}\n",
            Some(Indentation::Spaces(2)),
        );
        check("x = 1\ny = 2\n", None);
        check("", None);
        // More tab lines than space lines.
        check("a\n\tb\n\tc\n  d\n", Some(Indentation::Tabs));
        // CRLF lines.
        check("a\r\n    b\r\n", Some(Indentation::Spaces(4)));
    }

    #[test]
    fn each_field_comes_from_the_first_source_that_knows_it() {
        let check = |overrides: FormattingOverrides,
                     editorconfig: EditorConfig,
                     text: &str,
                     expected: (u32, bool)| {
            let choice = choose(overrides, &editorconfig, text, 4);
            assert_eq!(
                (choice.tab_size, choice.insert_spaces),
                expected,
                "{overrides:?} {editorconfig:?} {text:?}"
            );
        };
        let none = FormattingOverrides::default();
        let tabs_text = "a\n\tb\n";
        let two_spaces = "a\n  b\n";
        check(none, EditorConfig::default(), "x\n", (4, true));
        check(none, EditorConfig::default(), tabs_text, (4, false));
        check(none, EditorConfig::default(), two_spaces, (2, true));
        let tab_style = EditorConfig {
            insert_spaces: Some(false),
            tab_width: Some(8),
            ..EditorConfig::default()
        };
        check(none, tab_style.clone(), two_spaces, (8, false));
        let space_style = EditorConfig {
            insert_spaces: Some(true),
            indent_size: Some(3),
            tab_width: Some(8),
            ..EditorConfig::default()
        };
        check(none, space_style.clone(), tabs_text, (3, true));
        // Only a size in .editorconfig: the style still comes from the text.
        let size_only = EditorConfig {
            indent_size: Some(2),
            tab_width: Some(2),
            ..EditorConfig::default()
        };
        check(none, size_only, tabs_text, (2, false));
        // Overrides win, field by field.
        let use_tabs = FormattingOverrides {
            tab_size: None,
            insert_spaces: Some(false),
        };
        check(use_tabs, space_style.clone(), two_spaces, (8, false));
        let size = FormattingOverrides {
            tab_size: Some(6),
            insert_spaces: None,
        };
        check(size, space_style, tabs_text, (6, true));
        check(size, EditorConfig::default(), tabs_text, (6, false));
    }

    /// A file's last line break asks for one (`insertFinalNewline: true`) unless `.editorconfig`
    /// decides; a file without one leaves the field unset.
    #[test]
    fn a_final_line_break_is_kept_unless_editorconfig_decides() {
        let check = |editorconfig: Option<bool>, text: &str, expected: Option<bool>| {
            let editorconfig = EditorConfig {
                insert_final_newline: editorconfig,
                ..EditorConfig::default()
            };
            let choice = choose(FormattingOverrides::default(), &editorconfig, text, 4);
            assert_eq!(
                choice.insert_final_newline, expected,
                "{editorconfig:?} {text:?}"
            );
        };
        check(None, "a\n", Some(true));
        check(None, "a\r\n", Some(true));
        check(None, "a\r", Some(true));
        check(None, "a", None);
        check(None, "", None);
        check(Some(false), "a\n", Some(false));
        check(Some(true), "a", Some(true));
    }

    #[test]
    fn lsp_options_carry_the_optional_fields_only_when_set() {
        let mut choice = choose(
            FormattingOverrides::default(),
            &EditorConfig::default(),
            "",
            4,
        );
        assert_eq!(choice.to_lsp(), json!({"tabSize": 4, "insertSpaces": true}));
        choice.trim_trailing_whitespace = Some(true);
        choice.insert_final_newline = Some(false);
        assert_eq!(
            choice.to_lsp(),
            json!({"tabSize": 4, "insertSpaces": true, "trimTrailingWhitespace": true, "insertFinalNewline": false})
        );
        choice.end_of_line = Some("crlf");
        assert_eq!(
            choice.end_of_line_note("a\nb\n").as_deref(),
            Some(".editorconfig asks for end_of_line = crlf; the file's lf line endings were kept")
        );
        assert_eq!(choice.end_of_line_note("a\r\nb\r\n"), None);
        assert_eq!(choice.end_of_line_note("no newline"), None);
    }

    /// A temporary tree of files, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str, files: &[(&str, &str)]) -> Tree {
            let root = std::env::temp_dir()
                .join(format!("lspc-editorconfig-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&root);
            for (file, text) in files {
                let path = root.join(file);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, text).unwrap();
            }
            Tree(root)
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn editorconfig_sections_globs_and_root_are_honoured() {
        let tree = Tree::new(
            "sections",
            &[
                // Above the project's root = true: never read.
                (
                    ".editorconfig",
                    "[*]\nindent_style = space\nindent_size = 7\n",
                ),
                (
                    "project/.editorconfig",
                    "root = true\n\n[*]\nindent_style = tab\ntab_width = 4\nend_of_line = lf\n\
                     trim_trailing_whitespace = true\ninsert_final_newline = true\n\n\
                     [*.{yml,yaml}]\nindent_style = space\nindent_size = 2\n\n\
                     [*.md]\ntrim_trailing_whitespace = false\n",
                ),
                (
                    "project/sub/.editorconfig",
                    "[lib/**.py]\nindent_style = space\nindent_size = 4\n",
                ),
            ],
        );
        let check = |file: &str, expected: EditorConfig| {
            assert_eq!(editorconfig_of(&tree.0.join(file)), expected, "{file}");
        };
        let base = EditorConfig {
            insert_spaces: Some(false),
            indent_size: Some(4),
            tab_width: Some(4),
            trim_trailing_whitespace: Some(true),
            insert_final_newline: Some(true),
            end_of_line: Some("lf"),
        };
        check("project/src/index.ts", base.clone());
        check(
            "project/config/ci.yml",
            EditorConfig {
                insert_spaces: Some(true),
                indent_size: Some(2),
                // Set by `[*]`: the fallback only fills an unset tab_width.
                tab_width: Some(4),
                ..base.clone()
            },
        );
        check(
            "project/README.md",
            EditorConfig {
                trim_trailing_whitespace: Some(false),
                ..base.clone()
            },
        );
        check(
            "project/sub/lib/a/b.py",
            EditorConfig {
                insert_spaces: Some(true),
                indent_size: Some(4),
                tab_width: Some(4),
                ..base.clone()
            },
        );
        check("project/sub/b.py", base);
        // Without root = true the search goes on upwards.
        let open = Tree::new(
            "open",
            &[
                (".editorconfig", "root = true\n[*.py]\nindent_size = 3\n"),
                ("inner/.editorconfig", "[*.py]\nindent_style = space\n"),
            ],
        );
        assert_eq!(
            editorconfig_of(&open.0.join("inner/a.py")),
            EditorConfig {
                insert_spaces: Some(true),
                indent_size: Some(3),
                tab_width: Some(3),
                ..EditorConfig::default()
            }
        );
    }
}
