//! A helper program run to completion with a deadline: `go list` (a Go module's file set),
//! `git ls-files` (the walk) and `git diff` (`--changed-since`). None of them may hold lspc up:
//! a stuck file system, a lock, a slow `core.fsmonitor` hook. Past the deadline the child is
//! killed and reaped, and the caller decides what the missing answer means.
//!
//! Both pipes are read on their own threads, so a child filling one while lspc waits on the
//! other cannot stall.

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// How long [`output`] gives a helper program unless told otherwise: generous (a listing of a
/// huge repository takes seconds), and still an end.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `command` with stdin from `/dev/null` and both outputs captured, like
/// [`Command::output`], for at most `timeout`.
///
/// Errors: the program cannot be started (as `Command::spawn`), or it was still running after
/// `timeout` (`ErrorKind::TimedOut`, naming `what` and the limit in seconds; the child is killed
/// and reaped first).
pub fn output(command: &mut Command, what: &str, timeout: Duration) -> std::io::Result<Output> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    collect(child, what, timeout)
}

/// `child`'s output once it exits (see [`output`]).
fn collect(mut child: Child, what: &str, timeout: Duration) -> std::io::Result<Output> {
    let read_all = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read_all(
        child
            .stdout
            .take()
            .map(|pipe| Box::new(pipe) as Box<dyn Read + Send>),
    );
    let stderr = read_all(
        child
            .stderr
            .take()
            .map(|pipe| Box::new(pipe) as Box<dyn Read + Send>),
    );
    let status = match child.wait_timeout(timeout)? {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{what} took longer than {} s", timeout.as_secs_f64()),
            ));
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_outputs_and_the_status_come_back() {
        let output = output(
            Command::new("sh").args(["-c", "printf out; printf err >&2; exit 3"]),
            "sh",
            DEFAULT_TIMEOUT,
        )
        .unwrap();
        assert_eq!(output.stdout, b"out");
        assert_eq!(output.stderr, b"err");
        assert_eq!(output.status.code(), Some(3));
    }

    /// A child that does not end is killed at the deadline and reaped, and the error names it.
    #[test]
    fn a_child_past_its_deadline_is_killed_and_named() {
        let error = output(
            Command::new("sleep").arg("30"),
            "the sleeper",
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(error.to_string(), "the sleeper took longer than 0.2 s");
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let error = output(
            &mut Command::new("/nonexistent/lspc-no-such-program"),
            "nothing",
            DEFAULT_TIMEOUT,
        )
        .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    }
}
