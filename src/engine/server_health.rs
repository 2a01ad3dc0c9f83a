//! What a server says about its own health that decides whether a file it gave nothing (or
//! only part of its findings) was checked: rust-analyzer's `experimental/serverStatus`, and
//! gopls's load-failure progress and error message. A file such a server gave nothing while its
//! health is an error is a server failure in `diagnostics_wait.rs`, never clean.
//!
//! rust-analyzer: its `message` gathers one paragraph per problem, and two of them mean that a
//! file it gave nothing (or only its own analysis) was not checked the way `cargo check` checks
//! it:
//!
//! - health `error`, `Failed to load workspaces.`: a `Cargo.toml` it cannot parse; it then
//!   analyses no file ([`health_error`]);
//! - `cargo check failed to start: …` (health `warning`), which rust-analyzer 0.0.330 says both
//!   when its flycheck could not be spawned and when `cargo check` exited with an error and
//!   printed no diagnostic at all (a `build.rs` that panics): rustc's part of every file is
//!   missing, and `cargo check` itself fails ([`check_failure`]). The text follows the previous
//!   paragraph without a line break (`…more details on the errors.cargo check failed to start:
//!   …`), so it is found anywhere on its line. A later flycheck that succeeds removes it.
//!
//! ruff (0.17.6) that cannot resolve a configuration file of its workspace (an unknown rule
//! selector, a TOML syntax error in `ruff.toml` or `pyproject.toml`) logs the error on its
//! stderr, sends `window/showMessage` (type Error) `Error while resolving settings from
//! workspace <folder>. Please refer to the logs for more details.`, and lints with its default
//! rules instead of the project's, while `ruff check` fails with the error (exit 2). Every file
//! it then gives is not checked the project's way: a check failure, as rust-analyzer's failed
//! `cargo check` is ([`settings_failure`]). The engine restarts the instance when one of its
//! configuration files changes ([`crate::config::Program::reads_configuration`]).
//!
//! gopls (Debian's `gopls` with Go 1.19, measured December 2026) says it cannot load its
//! workspace two ways, and its health is then an error as rust-analyzer's is:
//! - When a module cannot be loaded (a syntax error in `go.mod`; a required module that is not
//!   in the module cache with `GOPROXY=off`), it begins a `$/progress` titled `Error loading
//!   workspace` whose message is the go command's error, reports it again now and then, and ends
//!   it only once the error is gone ([`load_failure_began`], [`load_failure_update`]). It is a
//!   status, not work: counted as work it held every file's wait until its timeout. Meanwhile it
//!   publishes an empty set for a file of a module it could not load, and type-checks the files
//!   of a package it did load.
//! - When it cannot make a view of the folder at all (no `go` on its `PATH`), it ends its
//!   `Setting up workspace` progress and sends `window/showMessage` (type Error) `Error loading
//!   workspace folders (expected 1, got 0)`, then `failed to load view for <folder URI>: <the
//!   error>` on the next line; it never publishes for a file ([`no_view`]).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// The title of gopls's progress while a module cannot be loaded (its `WorkspaceLoadFailure`).
const LOAD_FAILURE_TITLE: &str = "Error loading workspace";
/// How gopls's error message begins when it could make no view of a workspace folder.
const NO_VIEW_MESSAGE: &str = "Error loading workspace folders";

/// For a `$/progress` `value` that begins gopls's load-failure status: its message, for the
/// reason text (`None` for any other progress).
pub(super) fn load_failure_began(value: &Value, workspace_root: &str) -> Option<String> {
    if value.get("kind").and_then(Value::as_str) != Some("begin")
        || value.get("title").and_then(Value::as_str) != Some(LOAD_FAILURE_TITLE)
    {
        return None;
    }
    Some(reason(
        value.get("message").and_then(Value::as_str),
        workspace_root,
    ))
}

/// For a `$/progress` `value` of the load-failure status's token: `Some(reason)` while it goes
/// on (a `report`, with the message it carries, else `previous`), `None` once it ends.
pub(super) fn load_failure_update(
    value: &Value,
    previous: &str,
    workspace_root: &str,
) -> Option<String> {
    match value.get("kind").and_then(Value::as_str) {
        Some("end") => None,
        _ => match value.get("message").and_then(Value::as_str) {
            Some(message) => Some(reason(Some(message), workspace_root)),
            None => Some(previous.to_owned()),
        },
    }
}

/// For a `window/showMessage` of `message_type` (1: Error) saying gopls could make no view of
/// the folder: the reason, its first line and the error of the `failed to load view for …:`
/// line (without the folder's URI).
pub(super) fn no_view(message_type: Option<u64>, text: &str) -> Option<String> {
    if message_type != Some(1) || !text.starts_with(NO_VIEW_MESSAGE) {
        return None;
    }
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().trim();
    let error = lines
        .filter_map(|line| line.strip_prefix("failed to load view for "))
        .filter_map(|rest| rest.split_once(": ").map(|(_, error)| error.trim()))
        .next();
    Some(match error {
        Some(error) if !error.is_empty() => format!("{first}: {error}"),
        _ => first.to_owned(),
    })
}

/// The reason text of a load-failure message: `Error loading workspace`, then the message on
/// one line (gopls separates the go command's lines with tabs) with the workspace root's prefix
/// taken off its paths (reasons name files relative to the root).
fn reason(message: Option<&str>, workspace_root: &str) -> String {
    let words: Vec<&str> = message.unwrap_or_default().split_whitespace().collect();
    if words.is_empty() {
        return LOAD_FAILURE_TITLE.to_owned();
    }
    let text = words.join(" ");
    format!(
        "{LOAD_FAILURE_TITLE}: {}",
        text.replace(&format!("{workspace_root}/"), "")
    )
}

/// How ruff's error message begins when a configuration file of its workspace cannot be
/// resolved (`ruff_server`'s settings index).
const RUFF_SETTINGS_FAILURE: &str = "Error while resolving settings from workspace";

/// For ruff's `window/showMessage` of `message_type` (1: Error) saying it could not resolve
/// its settings: the reason, e.g. "Error while resolving settings from workspace /w (ruff's log,
/// shown with -vv, names the error); `ruff check .` fails there too". `None` for any other
/// message, or another program's.
pub(super) fn settings_failure(
    program: Option<crate::config::Program>,
    message_type: Option<u64>,
    text: &str,
) -> Option<String> {
    if program != Some(crate::config::Program::Ruff)
        || message_type != Some(1)
        || !text.starts_with(RUFF_SETTINGS_FAILURE)
    {
        return None;
    }
    let first = text.lines().next().unwrap_or_default();
    let first = first.split(". Please refer").next().unwrap_or(first).trim();
    let first = first.trim_end_matches('.');
    Some(format!(
        "{first} (ruff's log, shown with -vv, names the error); `ruff check .` fails there too"
    ))
}

/// How typescript-language-server 5.3.0 logs its tsserver's end
/// (`[lspserver] [tsclient] [tsserver] Exited. Code: null. Signal: SIGKILL`).
const TSSERVER_EXITED: &str = "[tsserver] Exited.";

/// For typescript-language-server's log line saying its tsserver ended other than with code 0
/// (killed, out of memory, crashed): the reason, e.g. "its tsserver ended (Code: null. Signal:
/// SIGKILL)". The server itself keeps running and answers every request with nothing (a hover
/// `null`, no references, "point at an identifier" for a rename), so it is a crash. `None` for
/// any other message, a clean exit (`Code: 0.`), or another program's.
pub(super) fn tsserver_exited(
    program: Option<crate::config::Program>,
    text: &str,
) -> Option<String> {
    if program != Some(crate::config::Program::TypescriptLanguageServer) {
        return None;
    }
    let (_, status) = text.split_once(TSSERVER_EXITED)?;
    let status = status.trim();
    if status.starts_with("Code: 0.") {
        return None;
    }
    Some(format!("its tsserver ended ({status})"))
}

/// rust-analyzer's prefix for a flycheck that failed (`main_loop.rs`, fixed whatever command
/// `check.overrideCommand` configures).
const CHECK_FAILED: &str = "cargo check failed";

/// The first line of `message` when `health` is `error`: the server analyses nothing.
pub(super) fn health_error(health: &str, message: Option<&str>) -> Option<String> {
    (health == "error").then(|| {
        message
            .unwrap_or("health error")
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    })
}

/// The flycheck failure `message` reports, from `cargo check failed` to the end of its line
/// (a trailing `:` that introduced cargo's stderr dropped), whatever the health.
pub(super) fn check_failure(message: Option<&str>) -> Option<String> {
    let message = message?;
    let start = message.find(CHECK_FAILED)?;
    let line = message[start..].lines().next().unwrap_or_default();
    Some(line.trim_end().trim_end_matches(':').to_owned())
}

/// The `experimental/serverStatus` messages a server instance has logged, so that each
/// distinct one is logged once: rust-analyzer 0.0.330 sends its status again whenever its
/// quiescence changes, with the whole message each time (a `build.rs` that panics made it
/// three warnings of cargo's full output, backtraces included, in one `lspc check`). Kept
/// across the instance's restarts. Only a hash of each (health, message) is kept: a message
/// can be many kilobytes.
#[derive(Debug, Default)]
pub(super) struct LoggedStatuses {
    hashes: HashSet<u64>,
}

impl LoggedStatuses {
    /// Whether `message` with `health` is one this instance has not logged yet; remembers it.
    pub(super) fn first_time(&mut self, health: &str, message: &str) -> bool {
        // `DefaultHasher::new()` has fixed keys: the same text always hashes alike.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (health, message).hash(&mut hasher);
        self.hashes.insert(hasher.finish())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tsserver_that_did_not_exit_cleanly_is_a_crash() {
        use crate::config::Program;
        let ts = Some(Program::TypescriptLanguageServer);
        assert_eq!(
            super::tsserver_exited(
                ts,
                "[lspserver] [tsclient] [tsserver] Exited. Code: null. Signal: SIGKILL"
            ),
            Some("its tsserver ended (Code: null. Signal: SIGKILL)".to_owned())
        );
        assert_eq!(
            super::tsserver_exited(ts, "[tsserver] Exited. Code: 0. Signal: null"),
            None
        );
        assert_eq!(
            super::tsserver_exited(Some(Program::Pylsp), "[tsserver] Exited. Code: 1."),
            None
        );
        assert_eq!(super::tsserver_exited(ts, "Using Typescript version"), None);
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn ruffs_settings_failure_is_told_by_its_error_message_only() {
        use crate::config::Program;
        let text = "Error while resolving settings from workspace /w. Please refer to the logs \
                    for more details.";
        assert_eq!(
            settings_failure(Some(Program::Ruff), Some(1), text).as_deref(),
            Some(
                "Error while resolving settings from workspace /w (ruff's log, shown with -vv, \
                 names the error); `ruff check .` fails there too"
            )
        );
        assert_eq!(settings_failure(Some(Program::Ruff), Some(2), text), None);
        assert_eq!(settings_failure(Some(Program::Pylsp), Some(1), text), None);
        assert_eq!(
            settings_failure(Some(Program::Ruff), Some(1), "Ruff: something else"),
            None
        );
    }

    #[test]
    fn each_distinct_status_message_is_logged_once() {
        // rust-analyzer 0.0.330's statuses on a crate whose build.rs panics, in order.
        let build_scripts = "Failed to run build scripts of some packages.\n\nPlease refer to \
                             the language server logs for more details on the errors.";
        let with_check = format!("{build_scripts}cargo check failed to start: …");
        let mut logged = LoggedStatuses::default();
        let mut check = |health: &str, message: &str, expected: bool| {
            assert_eq!(
                logged.first_time(health, message),
                expected,
                "{health} {message}"
            );
        };
        check("warning", build_scripts, true);
        check("warning", &with_check, true);
        check("warning", &with_check, false);
        check("warning", build_scripts, false);
        // The same text with another health is news.
        check("error", build_scripts, true);
        check("error", build_scripts, false);
        // Another instance logs its own.
        assert!(LoggedStatuses::default().first_time("warning", build_scripts));
    }

    #[test]
    fn health_error_is_the_first_line_when_health_is_error() {
        let check = |health, message| health_error(health, message);
        assert_eq!(
            check("error", Some("Failed to load workspaces.\n\n")),
            Some("Failed to load workspaces.".to_owned())
        );
        assert_eq!(check("error", None), Some("health error".to_owned()));
        assert_eq!(check("warning", Some("Failed to load workspaces.")), None);
        assert_eq!(check("ok", None), None);
    }

    #[test]
    fn check_failure_is_found_on_its_line_after_other_paragraphs() {
        // rust-analyzer 0.0.330 on a crate whose build.rs panics.
        let message = "Failed to run build scripts of some packages.\n\nPlease refer to the \
                       language server logs for more details on the errors.cargo check failed \
                       to start: Cargo watcher failed, the command produced no valid metadata \
                       (exit code: ExitStatus(unix_wait_status(25856))):\n   0.03s  INFO \
                       prepare_target\n";
        assert_eq!(
            check_failure(Some(message)),
            Some(
                "cargo check failed to start: Cargo watcher failed, the command produced no \
                 valid metadata (exit code: ExitStatus(unix_wait_status(25856)))"
                    .to_owned()
            )
        );
        assert_eq!(
            check_failure(Some(
                "cargo check failed to start: No such file (os error 2)\n"
            )),
            Some("cargo check failed to start: No such file (os error 2)".to_owned())
        );
        assert_eq!(
            check_failure(Some("Failed to run build scripts of some packages.")),
            None
        );
        assert_eq!(check_failure(None), None);
    }

    #[test]
    fn gopls_load_failure_progress_is_a_health_error() {
        let began = |value: Value| load_failure_began(&value, "/w");
        assert_eq!(
            began(json!({"kind": "begin", "title": "Error loading workspace",
                "message": "/w/go.mod:5: syntax error (unterminated block started at /w/go.mod:4:1)"}))
            .as_deref(),
            Some(
                "Error loading workspace: go.mod:5: syntax error (unterminated block started at \
                 go.mod:4:1)"
            )
        );
        assert_eq!(
            began(json!({"kind": "begin", "title": "Error loading workspace",
                "message": "1 modules have errors: \texample.com/x:example.com/m@v1.0.0: \
                            missing go.sum entry; to add it: \tgo mod download example.com/m "}))
            .as_deref(),
            Some(
                "Error loading workspace: 1 modules have errors: example.com/x:example.com/m@v1.0.0: \
                 missing go.sum entry; to add it: go mod download example.com/m"
            )
        );
        assert_eq!(
            began(json!({"kind": "begin", "title": "Error loading workspace"})).as_deref(),
            Some("Error loading workspace")
        );
        assert_eq!(
            began(json!({"kind": "begin", "title": "Setting up workspace",
                "message": "Loading packages..."})),
            None
        );
        assert_eq!(
            began(json!({"kind": "report", "title": "Error loading workspace"})),
            None
        );
        let update = |value: Value| load_failure_update(&value, "Error loading workspace: a", "/w");
        assert_eq!(
            update(json!({"kind": "report", "message": "/w/sub/go.mod:1: b"})).as_deref(),
            Some("Error loading workspace: sub/go.mod:1: b")
        );
        assert_eq!(
            update(json!({"kind": "report"})).as_deref(),
            Some("Error loading workspace: a")
        );
        assert_eq!(update(json!({"kind": "end", "message": "Done."})), None);
    }

    #[test]
    fn gopls_no_view_message_is_a_health_error() {
        let text = "Error loading workspace folders (expected 1, got 0)\nfailed to load view for \
                    file:///w: err: exec: \"go\": executable file not found in $PATH: stderr: \n";
        assert_eq!(
            no_view(Some(1), text).as_deref(),
            Some(
                "Error loading workspace folders (expected 1, got 0): err: exec: \"go\": \
                 executable file not found in $PATH: stderr:"
            )
        );
        assert_eq!(
            no_view(
                Some(1),
                "Error loading workspace folders (expected 1, got 0)"
            )
            .as_deref(),
            Some("Error loading workspace folders (expected 1, got 0)")
        );
        assert_eq!(no_view(Some(2), text), None);
        assert_eq!(no_view(Some(1), "something else"), None);
    }
}
