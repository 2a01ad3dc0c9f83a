//! What a server says about one file it gave up checking, which decides that the file was not
//! checked by that server (a server failure in `diagnostics_wait.rs`, exit 3), at once, instead
//! of a wait until `--timeout` for a publish that never comes.
//!
//! bash-language-server 5.8.1 (`out/shellcheck/index.js`) gives each ShellCheck run 10 s (not
//! configurable); when it runs out, it logs `ShellCheck: timed out after 10000ms for <uri>`
//! (`window/logMessage`, type Warning, after its own `HH:MM:SS.mmm WARNING ⛔️ ` prefix) and
//! drops the job without publishing for that version. A later version is linted again. The
//! message names the document by URI and only the latest job of a document can time out (a
//! newer version or a close cancels the older job first), so it speaks for the version open
//! when it arrives.

/// What bash-language-server's linter logs before the limit and the URI.
const SHELLCHECK_TIMED_OUT: &str = "ShellCheck: timed out after ";

/// For a log message `text`: the URI of the document the server gave up on, and the reason (the
/// server's words without the URI), or `None` when the message says no such thing.
pub(super) fn gave_up_on(text: &str) -> Option<(&str, String)> {
    let start = text.find(SHELLCHECK_TIMED_OUT)?;
    let (reason, uri) = text[start..].split_once(" for ")?;
    let uri = uri.trim();
    uri.starts_with("file:")
        .then(|| (uri, reason.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::gave_up_on;

    #[test]
    fn only_shellchecks_timeout_names_a_file_given_up() {
        let check = |text: &str| gave_up_on(text).map(|(uri, reason)| (uri.to_owned(), reason));
        assert_eq!(
            check(
                "15:13:43.378 WARNING ⛔️ ShellCheck: timed out after 10000ms for \
                 file:///tmp/nvm/update_test_mocks.sh"
            ),
            Some((
                "file:///tmp/nvm/update_test_mocks.sh".to_owned(),
                "ShellCheck: timed out after 10000ms".to_owned()
            ))
        );
        assert_eq!(
            check("ShellCheck: timed out after 500ms for file:///a%20b.sh\n"),
            Some((
                "file:///a%20b.sh".to_owned(),
                "ShellCheck: timed out after 500ms".to_owned()
            ))
        );
        assert_eq!(
            check("15:13:43.378 WARNING ⛔️ ShellCheck: failed to terminate process group: x"),
            None
        );
        assert_eq!(
            check("ShellCheck: timed out after 10000ms for untitled:1"),
            None
        );
        assert_eq!(
            check("BackgroundAnalysis: Completed after 0.44 seconds."),
            None
        );
    }
}
