//! Source files no language server checks, said once per kind when a walk meets them: `lspc
//! check` passes over files no server claims without a word, which is right for `README.md` and
//! wrong for code a user expects checked. A new user found `go vet ./...` failing on xxhash's
//! `xxhash_amd64.s` (asmdecl) while `lspc check .` said clean, and bats-core's 227 `.bats` tests
//! passed over, which its own `shellcheck.sh` lints.
//!
//! Invariants: a kind is named only when no configured server claims its extension; a kind
//! bound to a language (Go assembly) is named only when files of that language were walked too;
//! notes are hints, off with `--no-hints` like [`crate::install_hints`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{extension_key, Config};

/// A kind of source file that no language server checks.
struct Kind {
    /// Lowercase, with its dot.
    extension: &'static str,
    /// Named only when a file with this extension was walked too.
    beside: Option<&'static str>,
    what: &'static str,
    /// What checks it instead.
    instead: &'static str,
}

const KINDS: &[Kind] = &[
    Kind {
        extension: ".s",
        beside: Some(".go"),
        what: "Go assembly",
        instead: "`go vet ./...` does (its asmdecl analyzer)",
    },
    Kind {
        extension: ".bats",
        beside: None,
        what: "Bats tests",
        instead: "`shellcheck` lints them directly",
    },
    Kind {
        extension: ".ipynb",
        beside: None,
        what: "Jupyter notebooks",
        instead: "lspc does not sync notebooks; `ruff check` lints them",
    },
];

/// One note per kind among `files` that no server in `config` claims, in [`KINDS`] order:
/// `2 .s files not checked: no language server checks Go assembly; `go vet ./...` does (its
/// asmdecl analyzer)`.
pub fn notes_for(config: &Config, files: &[PathBuf]) -> Vec<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        if let Some(extension) = extension_key(file) {
            *counts.entry(extension).or_default() += 1;
        }
    }
    KINDS
        .iter()
        .filter(|kind| kind.beside.is_none_or(|beside| counts.contains_key(beside)))
        .filter(|kind| {
            !config
                .servers
                .iter()
                .any(|server| server.extension_to_language.contains_key(kind.extension))
        })
        .filter_map(|kind| {
            let n = *counts.get(kind.extension)?;
            let files = if n == 1 { "file" } else { "files" };
            Some(format!(
                "{n} {} {files} not checked: no language server checks {}; {}",
                kind.extension, kind.what, kind.instead
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(entries: &[(&str, &str)]) -> Config {
        let mut config = crate::config::load_with_env(
            &crate::config::test_options(std::path::Path::new("/r")),
            &|_| None,
        );
        for (name, extension) in entries {
            let mut server = crate::config::test_entry(name, name);
            server.extension_to_language.clear();
            server
                .extension_to_language
                .insert((*extension).to_owned(), "x".to_owned());
            config.servers.push(server);
        }
        config
    }

    fn files(names: &[&str]) -> Vec<PathBuf> {
        names.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn kinds_are_named_once_with_their_count() {
        let notes = notes_for(
            &config(&[("gopls", ".go")]),
            &files(&[
                "a.go",
                "b_amd64.s",
                "c_arm64.s",
                "t.bats",
                "n.ipynb",
                "README.md",
            ]),
        );
        assert_eq!(
            notes,
            [
                "2 .s files not checked: no language server checks Go assembly; `go vet ./...` does (its asmdecl analyzer)",
                "1 .bats file not checked: no language server checks Bats tests; `shellcheck` lints them directly",
                "1 .ipynb file not checked: no language server checks Jupyter notebooks; lspc does not sync notebooks; `ruff check` lints them",
            ]
        );
    }

    /// Assembly with no Go beside it is not Go's; a kind a configured server claims is checked.
    #[test]
    fn kinds_bound_to_a_language_or_claimed_are_not_named() {
        assert!(notes_for(&config(&[]), &files(&["boot.s"])).is_empty());
        assert!(notes_for(&config(&[("bats", ".bats")]), &files(&["t.bats"])).is_empty());
    }
}
