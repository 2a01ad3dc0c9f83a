//! The one stderr line that says why a server failed, for messages said once per run (issue 10:
//! rustup's `error: Unknown binary 'rust-analyzer' in official toolchain …` rather than the tail
//! of a backtrace).
//!
//! Rules, in order, over trimmed non-empty lines: the first line that reads as an error
//! (`error`, `fatal`, `panic` at its start, or `error:` anywhere, any case); else the first line
//! that is not progress chatter or a backtrace frame (`info:`, `note:`, `warning:`, `at …`,
//! `0: …`, `stack backtrace:`); else the first line.

/// The meaningful line of `stderr`; `None` when it has no non-empty line.
pub fn meaningful_line(stderr: &str) -> Option<&str> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let reads_as_error = |line: &&str| {
        let lower = line.to_lowercase();
        ["error", "fatal", "panic", "thread '"]
            .iter()
            .any(|start| lower.starts_with(start))
            || lower.contains("error:")
    };
    let is_chatter = |line: &&str| {
        let lower = line.to_lowercase();
        let frame_number = lower
            .split_once(':')
            .is_some_and(|(head, _)| !head.is_empty() && head.chars().all(|c| c.is_ascii_digit()));
        frame_number
            || [
                "info:",
                "note:",
                "warning:",
                "warn:",
                "at ",
                "stack backtrace",
                "debug:",
            ]
            .iter()
            .any(|start| lower.starts_with(start))
    };
    lines
        .iter()
        .find(|line| reads_as_error(line))
        .or_else(|| lines.iter().find(|line| !is_chatter(line)))
        .or_else(|| lines.first())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(stderr: &str, expected: Option<&str>) {
        assert_eq!(meaningful_line(stderr), expected, "{stderr:?}");
    }

    #[test]
    fn picks_the_cause() {
        check(
            "info: syncing channel updates\nerror: Unknown binary 'rust-analyzer' in official toolchain 'stable'\n   0: backtrace\n",
            Some("error: Unknown binary 'rust-analyzer' in official toolchain 'stable'"),
        );
        check(
            "stack backtrace:\n   0: std::rt\n   1: main\nconnection refused\n",
            Some("connection refused"),
        );
        check("Traceback (most recent call last):\n  File \"x\"\nModuleNotFoundError: No module named 'pylsp'\n",
            Some("ModuleNotFoundError: No module named 'pylsp'"));
        check("info: one\ninfo: two\n", Some("info: one"));
        check("\n  \n", None);
    }
}
