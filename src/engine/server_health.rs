//! What rust-analyzer's `experimental/serverStatus` says about whether its files were checked.
//!
//! Its `message` gathers one paragraph per problem, and two of them mean that a file it gave
//! nothing (or only its own analysis) was not checked the way `cargo check` checks it:
//!
//! - health `error`, `Failed to load workspaces.`: a `Cargo.toml` it cannot parse; it then
//!   analyses no file ([`health_error`]);
//! - `cargo check failed to start: …` (health `warning`), which rust-analyzer 0.0.330 says both
//!   when its flycheck could not be spawned and when `cargo check` exited with an error and
//!   printed no diagnostic at all (a `build.rs` that panics): rustc's part of every file is
//!   missing, and `cargo check` itself fails ([`check_failure`]). The text follows the previous
//!   paragraph without a line break (`…more details on the errors.cargo check failed to start:
//!   …`), so it is found anywhere on its line. A later flycheck that succeeds removes it.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
