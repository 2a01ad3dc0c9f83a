//! Diagnostics by which a server says it did not analyse a file at all, so that a file whose
//! every server says so is `NotChecked` and never reported clean.
//!
//! rust-analyzer 0.0.330 answers a `.rs` file outside every crate's module tree with one hint,
//! code `unlinked-file`: "This file is not included anywhere in the module tree, so
//! rust-analyzer can't offer IDE services." (`cargo check` does not compile such a file either.)
//! The hint is below `lspc check`'s default severity, so `lspc check src/orphan.rs` used to say
//! `1 file checked: 0 errors`, exit 0, for a file with a type error nothing had looked at.
//!
//! The hint speaks only for rust-analyzer's own analysis. Its flycheck (`cargo check`) may still
//! compile the file and publish rustc's findings for it: a module `#[path]` takes from outside
//! its crate's folder, which rust-analyzer does not load (rust-lang/rust-analyzer#3898) and rustc
//! compiles. A server that gave the file anything besides the hint has checked it, except
//! rust-analyzer's own `syntax-error`s: it parses every file it is given, linked or not, so
//! those say nothing about analysis (BurntSushi/memchr's `benchmarks/haystacks/code/
//! rust-library.rs`, a haystack no crate compiles, got 116 of them and failed the check while
//! `cargo check` passes; an orphan's type errors were never looked at).
//!
//! gopls 0.5 answers a file the go command puts in no package (`_under.go`, a file for another
//! system) with one warning, source `go list`: "No packages found for open file …".
//!
//! taplo 0.10 (`taplo lsp stdio`) answers a file its configuration (`taplo.toml`,
//! `.taplo.toml`) leaves out with one hint, `this document has been excluded`, source `Even
//! Better TOML`, and nothing else: not even its syntax errors. `taplo check` on such a file
//! finds no files to check (`excluded=1`). lspc called such a file clean (tamasfe/taplo's
//! `test-data/invalid/*.toml`, 84 files its own `taplo.toml` excludes, invalid TOML each).

//!
//! A schema the file names that its server cannot load is a file checked only in part:
//! yaml-language-server 1.x and vscode-json-language-server say `Unable to load schema from
//! '<url>': <why>` (an error from the YAML server, a warning from the JSON one) and check the
//! syntax alone. Offline, attrs's `codspeed.yml` (`$schema: https://…`) failed `lspc check`
//! with that message as a finding (exit 1), a network fault reported as the file's error.
//! [`schema_not_loaded`] finds it; the file keeps its other findings and is not fully checked.

use crate::diagnostics::Diagnostic;

/// How yaml-language-server and vscode-json-languageservice begin the diagnostic for a schema
/// they could not fetch or read.
const SCHEMA_NOT_LOADED: &str = "Unable to load schema from ";

/// The diagnostic by which `server` says it could not load the schema the file names; the file
/// was then checked for syntax only.
pub(super) fn schema_not_loaded<'a>(
    diagnostics: &'a [Diagnostic],
    server: &str,
) -> Option<&'a Diagnostic> {
    diagnostics
        .iter()
        .find(|d| d.server == server && d.message.starts_with(SCHEMA_NOT_LOADED))
}

/// Whether `diagnostic` is its server's word that it did not analyse the file.
fn says_not_analysed(diagnostic: &Diagnostic) -> bool {
    match diagnostic.source.as_deref() {
        Some("rust-analyzer") => diagnostic.code.as_deref() == Some("unlinked-file"),
        Some("Even Better TOML") => diagnostic.message == "this document has been excluded",
        // gopls 0.5 for a file in no package (a name starting with `_` or `.`, build
        // constraints that leave it out): it type-checks nothing there (helper-41:
        // `_under.go`'s type error was not reported, the file counted as checked; `go vet`
        // says "no Go files").
        Some("go list") => diagnostic
            .message
            .starts_with("No packages found for open file"),
        _ => false,
    }
}

/// Whether `diagnostic` comes from parsing alone, which a server does for a file it did not
/// analyse too: rust-analyzer's own syntax errors.
fn only_parsed(diagnostic: &Diagnostic) -> bool {
    diagnostic.code.as_deref() == Some("syntax-error")
        && diagnostic.source.as_deref() == Some("rust-analyzer")
}

/// The diagnostic by which `server` says it did not analyse the file whose `diagnostics` these
/// are, when that is all it said about it besides parse errors; `None` when it said nothing of
/// the kind, or also gave other findings (rustc's, through flycheck), which show that the file
/// was checked.
pub(super) fn said_not_analysed<'a>(
    diagnostics: &'a [Diagnostic],
    server: &str,
) -> Option<&'a Diagnostic> {
    let mut from_server = diagnostics.iter().filter(|d| d.server == server);
    let said = from_server.clone().find(|d| says_not_analysed(d))?;
    from_server
        .all(|d| says_not_analysed(d) || only_parsed(d))
        .then_some(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Severity;

    fn diagnostic(source: &str, code: &str) -> Diagnostic {
        Diagnostic {
            path: "/w/src/orphan.rs".into(),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 1,
            severity: Severity::Hint,
            message: "This file is not included anywhere in the module tree, so rust-analyzer \
                      can't offer IDE services."
                .to_owned(),
            source: Some(source.to_owned()),
            code: Some(code.to_owned()),
            server: "rust-analyzer".to_owned(),
        }
    }

    #[test]
    fn only_rust_analyzers_unlinked_file_says_so() {
        assert!(says_not_analysed(&diagnostic(
            "rust-analyzer",
            "unlinked-file"
        )));
        assert!(!says_not_analysed(&diagnostic(
            "rust-analyzer",
            "unused_variables"
        )));
        assert!(!says_not_analysed(&diagnostic("rustc", "unlinked-file")));
    }

    #[test]
    fn taplos_exclusion_hint_says_so() {
        let mut excluded = diagnostic("Even Better TOML", "");
        excluded.code = None;
        excluded.server = "taplo".to_owned();
        excluded.message = "this document has been excluded".to_owned();
        assert!(says_not_analysed(&excluded));
        assert!(said_not_analysed(std::slice::from_ref(&excluded), "taplo").is_some());
        excluded.message = "expected array of tables".to_owned();
        assert!(!says_not_analysed(&excluded));
    }

    #[test]
    fn a_server_that_also_gave_other_findings_has_checked_the_file() {
        let unlinked = diagnostic("rust-analyzer", "unlinked-file");
        let rustc = diagnostic("rustc", "E0382");
        let mut other_server = diagnostic("rustc", "E0382");
        other_server.server = "other".to_owned();
        let check = |diagnostics: &[Diagnostic]| {
            said_not_analysed(diagnostics, "rust-analyzer").map(|d| d.code.clone().unwrap())
        };
        assert_eq!(
            check(std::slice::from_ref(&unlinked)),
            Some("unlinked-file".to_owned())
        );
        assert_eq!(
            check(&[unlinked.clone(), other_server]),
            Some("unlinked-file".to_owned())
        );
        assert_eq!(check(&[rustc.clone(), unlinked]), None);
        assert_eq!(check(&[rustc]), None);
        assert_eq!(check(&[]), None);
    }

    #[test]
    fn rust_analyzers_syntax_errors_do_not_show_the_file_was_analysed() {
        let unlinked = diagnostic("rust-analyzer", "unlinked-file");
        let syntax = diagnostic("rust-analyzer", "syntax-error");
        let check = |diagnostics: &[Diagnostic]| {
            said_not_analysed(diagnostics, "rust-analyzer").map(|d| d.code.clone().unwrap())
        };
        assert_eq!(
            check(&[syntax.clone(), unlinked.clone(), syntax.clone()]),
            Some("unlinked-file".to_owned())
        );
        assert_eq!(check(std::slice::from_ref(&syntax)), None);
        let rustc_syntax = diagnostic("rustc", "syntax-error");
        assert_eq!(check(&[unlinked, rustc_syntax]), None);
    }
}
