//! Servers whose queries need no readiness wait, because each request waits for the server's
//! own workspace load (issue 15, gopls).
//!
//! A query's first question about a file waits for the file's diagnostics to settle, and a
//! cross-file question waits while the server reports `$/progress` ([`crate::query`]'s
//! readiness): pyright answers `workspace/symbol` with `[]` until it has found its source files,
//! and typescript-language-server renames in one file until its project has loaded.
//!
//! gopls needs neither. Every request takes a snapshot that first waits for the initial package
//! load (`awaitLoaded`), and then type-checks what the answer needs on demand; it keeps no
//! background index that an early answer could miss. Its `didOpen` is handled before a request
//! read after it. So a query sent in the same loop turn as the `didOpen` gets the answer a later
//! one would, and waiting cost the whole settle of the file's diagnostics: gopls 0.5 (Debian 12)
//! publishes without versions, so that is its first publish plus 1.5 s of quiet. A one-shot
//! `lspc definition` on hashicorp/golang-lru took 2.1-2.2 s against `gopls definition`'s 1.1 s.
//!
//! A load error is no reason to wait either: gopls answers the query with it, as its CLI does.

/// What `lspc servers` and `lsp://servers` say about such a server.
pub const DESCRIPTION: &str =
    "queries are sent at once, without waiting for the file's diagnostics: each request waits for the server's own workspace load";

/// Whether queries to this server skip the readiness wait, by its configured name or the known
/// name of the program it runs (the `serverInfo.name` of its `initialize` result, else the
/// program the entry runs: [`crate::config::Program`]).
pub(crate) fn answers_once_loaded(config_name: &str, known_name: Option<&str>) -> bool {
    let known = |name: &str| name == "gopls";
    known_name.is_some_and(known) || known(config_name)
}

/// [`DESCRIPTION`] for a server whose queries skip the wait (by configured name or the known
/// program it runs), else `None`.
pub fn queries_note(config_name: &str, known_name: Option<&str>) -> Option<&'static str> {
    answers_once_loaded(config_name, known_name).then_some(DESCRIPTION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gopls_by_either_name_and_no_other_server() {
        assert!(answers_once_loaded("gopls", None));
        assert!(answers_once_loaded("go", Some("gopls")));
        assert!(!answers_once_loaded("pyright", Some("pyright")));
        assert!(!answers_once_loaded("rust-analyzer", None));
        assert_eq!(queries_note("go", Some("gopls")), Some(DESCRIPTION));
        assert_eq!(queries_note("clangd", None), None);
    }
}
