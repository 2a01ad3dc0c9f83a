//! Whether a rename's new name can be a name in the file's language, for the languages whose
//! servers rename to anything.
//!
//! A new user's trial (pallets/itsdangerous, sindresorhus/ky): pyright 1.1.414 renamed a method
//! to `1bad` and wrote `def 1bad(…)`, tsserver (TypeScript 6) renamed a class to `a-b` and wrote
//! `class a-b extends Error` in 7 files; `lspc rename --apply` wrote both and exited 0. gopls,
//! clangd and rust-analyzer refuse such a name themselves ("invalid name: the chosen name "1bad"
//! is not a valid identifier"); for Python and JavaScript/TypeScript files lspc now refuses it
//! before asking, and writes nothing.
//!
//! Rules (each language's reference, approximated with Unicode's alphabetic and alphanumeric
//! properties for `XID_Start`/`XID_Continue`):
//! - Python: a letter or `_`, then letters, digits and `_`; not one of the 35 hard keywords
//!   (soft keywords such as `match` and `type` are names).
//! - JavaScript/TypeScript: a letter, `_` or `$`, then letters, digits, `_`, `$`, ZWNJ and ZWJ,
//!   optionally after one `#` (a private name). A reserved word ([`is_reserved_word`]) is
//!   refused for a name that binds (a function, class, variable, parameter, type, enum, import:
//!   tsserver wrote `export function class(` from `rename src/index.ts:71:17 class`), and kept
//!   for a member, which may be named `delete` or `default` ([`hover_binds_a_name`]).

use std::path::Path;

/// The languages whose names lspc checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Python,
    JavaScript,
}

impl Language {
    /// The language of `path` by its extension (`.py`, `.pyi`; `.js`, `.jsx`, `.mjs`, `.cjs`,
    /// `.ts`, `.tsx`, `.mts`, `.cts`), any case; `None` for every other file.
    pub fn of(path: &Path) -> Option<Language> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "py" | "pyi" => Some(Language::Python),
            "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => {
                Some(Language::JavaScript)
            }
            _ => None,
        }
    }

    /// The language's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::JavaScript => "JavaScript/TypeScript",
        }
    }
}

/// Python's hard keywords (Python 3.11 `keyword.kwlist`).
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// ECMAScript's reserved words, strict mode's and `await` (modules) included: no binding may
/// take them, a property may.
const JAVASCRIPT_RESERVED: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// TypeScript's contextual keywords that begin or modify a declaration (`type Alias =`,
/// `namespace N`, `async function f`, `abstract class C`, `get x()`): names elsewhere, so only
/// [`is_keyword`] knows them, not [`is_reserved_word`].
const TYPESCRIPT_DECLARATION_WORDS: &[&str] = &[
    "abstract",
    "accessor",
    "async",
    "declare",
    "get",
    "module",
    "namespace",
    "override",
    "private",
    "protected",
    "public",
    "readonly",
    "set",
    "static",
    "type",
];

/// Whether `name` is a keyword of `language` (Python's hard keywords; JavaScript's reserved
/// words and TypeScript's declaration words): at a column on `def`, `class`, `const`, `type`
/// or `async` a server renames or finds the name the keyword declares, not the keyword
/// (helper-51: `export type Alias` at `type` was refused).
pub fn is_keyword(language: Language, name: &str) -> bool {
    match language {
        Language::Python => PYTHON_KEYWORDS.contains(&name),
        Language::JavaScript => {
            JAVASCRIPT_RESERVED.contains(&name) || TYPESCRIPT_DECLARATION_WORDS.contains(&name)
        }
    }
}

/// Whether `name` is a JavaScript/TypeScript reserved word, which only a member may be named.
pub fn is_reserved_word(language: Language, name: &str) -> bool {
    language == Language::JavaScript && JAVASCRIPT_RESERVED.contains(&name)
}

/// Whether tsserver's hover text for the renamed name (its first line, as `lspc hover` shows
/// it: `function parse(str: string): number`, `(method) Cache.delete(key: string): void`) says
/// it binds a name (function, class, variable, parameter, type, enum, namespace, import) rather
/// than naming a member (`(method)`, `(property)`, `(enum member)`, accessors). Unknown text is
/// a member: the check refuses only what it recognises.
pub fn hover_binds_a_name(hover: &str) -> bool {
    const BINDINGS: &[&str] = &[
        "function ",
        "class ",
        "const ",
        "let ",
        "var ",
        "interface ",
        "type ",
        "enum ",
        "namespace ",
        "module ",
        "import ",
        "(local var) ",
        "(local function) ",
        "(local class) ",
        "(parameter) ",
        "(type parameter) ",
        "(alias) ",
    ];
    let first = hover.lines().next().unwrap_or("").trim_start();
    BINDINGS.iter().any(|binding| first.starts_with(binding))
}

/// Why `name` cannot be a name in `language`, e.g. `it starts with "1"`; `None` when it can.
pub fn invalid_reason(language: Language, name: &str) -> Option<String> {
    let body = match language {
        Language::JavaScript => name.strip_prefix('#').unwrap_or(name),
        Language::Python => name,
    };
    let mut characters = body.chars();
    let Some(first) = characters.next() else {
        return Some("it is empty".to_owned());
    };
    let starts = |character: char| match language {
        Language::Python => character == '_' || character.is_alphabetic(),
        Language::JavaScript => matches!(character, '_' | '$') || character.is_alphabetic(),
    };
    let continues = |character: char| match language {
        Language::Python => character == '_' || character.is_alphanumeric(),
        Language::JavaScript => {
            matches!(character, '_' | '$' | '\u{200c}' | '\u{200d}') || character.is_alphanumeric()
        }
    };
    if !starts(first) {
        return Some(format!("it starts with {first:?}"));
    }
    if let Some(bad) = characters.find(|&character| !continues(character)) {
        return Some(format!("it holds {bad:?}"));
    }
    (language == Language::Python && PYTHON_KEYWORDS.contains(&name))
        .then(|| "it is a keyword".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_names() {
        let reason = |name| invalid_reason(Language::Python, name);
        assert_eq!(reason("signer_2"), None);
        assert_eq!(reason("_private"), None);
        assert_eq!(reason("名前"), None);
        assert_eq!(reason("match"), None);
        assert_eq!(reason("1bad").as_deref(), Some("it starts with '1'"));
        assert_eq!(reason("a-b").as_deref(), Some("it holds '-'"));
        assert_eq!(reason("a b").as_deref(), Some("it holds ' '"));
        assert_eq!(reason("class").as_deref(), Some("it is a keyword"));
        assert_eq!(reason("None").as_deref(), Some("it is a keyword"));
        assert_eq!(reason("").as_deref(), Some("it is empty"));
        assert_eq!(reason("$x").as_deref(), Some("it starts with '$'"));
    }

    #[test]
    fn javascript_names() {
        let reason = |name| invalid_reason(Language::JavaScript, name);
        assert_eq!(reason("$el"), None);
        assert_eq!(reason("_KyError2"), None);
        assert_eq!(reason("#secret"), None);
        assert_eq!(reason("default"), None);
        assert_eq!(reason("a-b").as_deref(), Some("it holds '-'"));
        assert_eq!(reason("9lives").as_deref(), Some("it starts with '9'"));
        assert_eq!(reason("#").as_deref(), Some("it is empty"));
    }

    /// typescript-language-server 5.3.0 (TypeScript 6) hover first lines.
    #[test]
    fn reserved_words_bind_only_outside_members() {
        assert!(is_reserved_word(Language::JavaScript, "class"));
        assert!(!is_reserved_word(Language::JavaScript, "parse"));
        assert!(!is_reserved_word(Language::Python, "let"));
        assert!(hover_binds_a_name(
            "function parse(str: string): number\nParse the given string"
        ));
        assert!(hover_binds_a_name("(local var) x: number"));
        assert!(hover_binds_a_name("class KyError"));
        assert!(!hover_binds_a_name(
            "(method) Cache.delete(key: string): void"
        ));
        assert!(!hover_binds_a_name("(property) Options.default: number"));
        assert!(!hover_binds_a_name(""));
    }

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::of(Path::new("a/b.PY")), Some(Language::Python));
        assert_eq!(Language::of(Path::new("x.mts")), Some(Language::JavaScript));
        assert_eq!(Language::of(Path::new("x.go")), None);
        assert_eq!(Language::of(Path::new("Makefile")), None);
    }
}
