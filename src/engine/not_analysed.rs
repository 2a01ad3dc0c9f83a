//! Diagnostics by which a server says it did not analyse a file at all, so that a file whose
//! every server says so is `NotChecked` and never reported clean.
//!
//! rust-analyzer 0.0.330 answers a `.rs` file outside every crate's module tree with one hint,
//! code `unlinked-file`: "This file is not included anywhere in the module tree, so
//! rust-analyzer can't offer IDE services." (`cargo check` does not compile such a file either.)
//! The hint is below `lspc check`'s default severity, so `lspc check src/orphan.rs` used to say
//! `1 file checked: 0 errors`, exit 0, for a file with a type error nothing had looked at.

use crate::diagnostics::Diagnostic;

/// Whether `diagnostic` is its server's word that it did not analyse the file.
pub(super) fn says_not_analysed(diagnostic: &Diagnostic) -> bool {
    diagnostic.code.as_deref() == Some("unlinked-file")
        && diagnostic.source.as_deref() == Some("rust-analyzer")
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
}
