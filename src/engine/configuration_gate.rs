//! Holding `didOpen` until a server has its configuration (issue 15, bash-language-server).
//!
//! bash-language-server 5.8.1 (`out/server.js`, `register`) asks for `workspace/configuration`
//! in its `initialized` handler and sets its `initialized` flag only once the answer arrived.
//! Until then `onDidChangeContent` only remembers the *last* document opened, and after the
//! answer it lints that one alone: of several scripts opened in the first milliseconds, every
//! one but the last is never published (cJSON's `fuzzing/*.sh`: `lspc check` timed out on all
//! others). Re-sending the text later raced lspc's formatting path; holding the opens does not.
//!
//! So for the servers in [`holds_opens`], the server counts as still starting (documents are not
//! opened on it, requests wait) from `initialized` until lspc has answered its first
//! `workspace/configuration` request, or [`CONFIGURATION_GATE_TIMEOUT`] has passed. The answer
//! goes out before any `didOpen`, on the same pipe, so the server's reply handler (which sets
//! `initialized`) runs before the first `didOpen` is read. Servers not in the table are not held:
//! an unknown server that never asks would pay the whole bound on every start.

use std::time::Duration;

/// How long after `initialized` lspc waits for the first `workspace/configuration` request of a
/// held server before opening documents anyway. bash-language-server asks within a few
/// milliseconds of `initialized` (it asks before any other work); the bound only matters for a
/// configuration that stops it from asking, and keeps such a server usable at a bounded cost.
pub(crate) const CONFIGURATION_GATE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether opens on this server wait for its first `workspace/configuration` request, by its
/// configured name or the `serverInfo.name` of its `initialize` result (bash-language-server
/// sends none, so its configured name decides).
pub(crate) fn holds_opens(config_name: &str, server_info_name: Option<&str>) -> bool {
    let known = |name: &str| name == "bash-language-server";
    server_info_name.is_some_and(known) || known(config_name)
}

/// What `lspc servers` and `lsp://servers` say about a held server.
pub const DESCRIPTION: &str =
    "documents are opened only after its first workspace/configuration request is answered (at most 2 s after initialized)";

/// [`DESCRIPTION`] for a server whose opens are held (by configured name; the `serverInfo.name`
/// is not known before it starts), else `None`.
pub fn opens_note(config_name: &str) -> Option<&'static str> {
    holds_opens(config_name, None).then_some(DESCRIPTION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bash_language_server_is_held() {
        assert!(holds_opens("bash-language-server", None));
        assert!(holds_opens("bash", Some("bash-language-server")));
        assert!(!holds_opens("clangd", Some("clangd")));
        assert!(!holds_opens("pyright", None));
        assert!(DESCRIPTION.contains(&format!("{} s", CONFIGURATION_GATE_TIMEOUT.as_secs())));
    }
}
