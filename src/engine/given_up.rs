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
//!
//! intelephense 1.18 does not analyse a document larger than its `files.maxSize` setting
//! (1,000,000 bytes by default) and logs `Document <uri> is larger than the configured
//! files.maxSize (1000000 bytes) and will no longer being analysed or indexed.`; it publishes
//! an empty set for it. `php -l` fails on such a file's syntax error where lspc said clean.
//! When its indexer has met the file first, it logs `textDocument/didOpen ignored. <uri> is
//! over the maximum file size of 1000000 bytes.` instead, and publishes nothing.

/// What bash-language-server's linter logs before the limit and the URI.
const SHELLCHECK_TIMED_OUT: &str = "ShellCheck: timed out after ";

/// What intelephense logs before the URI, the start of what follows it, and how the reason
/// begins.
const INTELEPHENSE_TOO_LARGE: [(&str, &str, &str); 2] = [
    (
        "Document ",
        " is larger than the configured files.maxSize",
        "",
    ),
    (
        "textDocument/didOpen ignored. ",
        " is over the maximum file size",
        "textDocument/didOpen ignored: ",
    ),
];

/// For a log message `text`: the URI of the document the server gave up on, and the reason (the
/// server's words without the URI), or `None` when the message says no such thing.
pub(super) fn gave_up_on(text: &str) -> Option<(&str, String)> {
    let (uri, reason) = shellcheck_timed_out(text).or_else(|| too_large(text))?;
    uri.starts_with("file:").then_some((uri, reason))
}

fn shellcheck_timed_out(text: &str) -> Option<(&str, String)> {
    let start = text.find(SHELLCHECK_TIMED_OUT)?;
    let (reason, uri) = text[start..].split_once(" for ")?;
    Some((uri.trim(), reason.trim().to_owned()))
}

fn too_large(text: &str) -> Option<(&str, String)> {
    INTELEPHENSE_TOO_LARGE
        .iter()
        .find_map(|(before, after, lead)| {
            let rest = text.strip_prefix(before)?;
            let end = rest.find(after)?;
            let reason = rest[end..].trim().trim_end_matches('.');
            Some((&rest[..end], format!("{lead}the file {reason}")))
        })
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
        assert_eq!(
            check(
                "Document file:///w/big%20one.php is larger than the configured files.maxSize \
                 (1000000 bytes) and will no longer being analysed or indexed."
            ),
            Some((
                "file:///w/big%20one.php".to_owned(),
                "the file is larger than the configured files.maxSize (1000000 bytes) and will \
                 no longer being analysed or indexed"
                    .to_owned()
            ))
        );
        assert_eq!(
            check(
                "textDocument/didOpen ignored. file:///w/big.php is over the maximum file size \
                 of 1000000 bytes."
            ),
            Some((
                "file:///w/big.php".to_owned(),
                "textDocument/didOpen ignored: the file is over the maximum file size of \
                 1000000 bytes"
                    .to_owned()
            ))
        );
        assert_eq!(
            check("Indexer: file:///w/big.php is over the maximum file size of 1000000 bytes."),
            None
        );
    }
}
