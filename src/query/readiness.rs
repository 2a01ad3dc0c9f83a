//! Waiting until a server can answer about a file: the first question about a file waits for its
//! diagnostics to settle ([`wait_analysed`]), then every cross-file question waits while the
//! server reports `$/progress` ([`wait_until_ready`]), both bounded by the caller's timeout.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::doorbell::LoopSender;
use crate::engine::{sync_with, Op, ServerInfo};

/// How often a readiness wait re-reads the server's progress state.
const READINESS_POLL: Duration = Duration::from_millis(200);
pub use crate::engine::ANALYSIS_WAIT;

/// Wait until `server` is ready to answer about `path` (a synced file): first, when `analyse` is
/// set (the file's first question of a session), at most [`ANALYSIS_WAIT`] (bounded by `timeout`)
/// for the file's diagnostics to settle, then while the
/// server reports `$/progress`, re-reading its state every 200 ms, until `timeout` has passed in
/// all. `server` is refreshed with each re-read. Returns the "incomplete" note ("server X was
/// still indexing; results may be incomplete") when it is still busy at the end.
///
/// Why the diagnostics wait: some servers report no progress while they discover the workspace
/// (pyright answers `workspace/symbol` with `[]` until it has found its source files;
/// typescript-language-server renames in one file until it has loaded the tsconfig project), and
/// a settled publish for the file shows the server has analysed it. A server that never
/// publishes costs at most that cap; the outcome is otherwise ignored. Cross-file queries and
/// the edit commands ([`crate::edit::commands`]) share this wait.
pub fn wait_until_ready(
    op_sender: &LoopSender<Op>,
    path: &Path,
    server: &mut ServerInfo,
    timeout: Duration,
    analyse: bool,
) -> Option<String> {
    let started = Instant::now();
    let deadline = started + timeout;
    // The state read before a wait is stale after it: rust-analyzer, not yet reporting
    // progress when the file was synced, was loading its crate graph 20 s later, and a rename
    // asked then was answered `null` ("nothing to rename", a helper's trial on dtolnay/ryu).
    let mut refresh = analyse || !server.awaiting_publish.is_empty();
    wait_published(op_sender, server, timeout);
    if analyse {
        wait_analysed(op_sender, path, &server.name, timeout);
    }
    loop {
        if refresh {
            match sync_with(op_sender, path.to_path_buf(), timeout) {
                Ok(doc) => {
                    match doc
                        .servers
                        .iter()
                        .find(|fresh| fresh.server_id == server.server_id)
                    {
                        Some(fresh) => *server = fresh.clone(),
                        // The server went away; the request will report why.
                        None => return None,
                    }
                }
                Err(error) => {
                    log::debug!("readiness wait: {error}");
                    return None;
                }
            }
        }
        refresh = true;
        if !server.busy {
            return None;
        }
        let now = Instant::now();
        if now >= deadline {
            return Some(format!(
                "server {} was still indexing; results may be incomplete",
                server.name
            ));
        }
        std::thread::sleep(READINESS_POLL.min(deadline - now));
    }
}

/// Wait at most [`ANALYSIS_WAIT`] (bounded by `timeout`) for the diagnostics of the documents
/// `server` was sent again and has not published for ([`ServerInfo::awaiting_publish`], clangd):
/// its answers come from the ASTs and index it had before it rebuilt them (a header's old
/// signature in a hover after `git stash pop`, a definition at the line a function had before
/// lines were added above it). Returns at once when there are none. The outcome is only logged.
pub fn wait_published(op_sender: &LoopSender<Op>, server: &ServerInfo, timeout: Duration) {
    if server.awaiting_publish.is_empty() {
        return;
    }
    let started = Instant::now();
    let paths = server.awaiting_publish.clone();
    let count = paths.len();
    let settled = crate::engine::diagnostics_with(op_sender, paths, ANALYSIS_WAIT.min(timeout));
    log::debug!(
        "{}: waited {:?} for its publishes of {count} documents sent again: {}",
        server.name,
        started.elapsed(),
        match settled {
            Some(files)
                if files.iter().all(|file| {
                    matches!(file.outcome, crate::engine::DiagnosticsOutcome::Settled(_))
                }) =>
            {
                "settled"
            }
            Some(_) => "not all settled",
            None => "the engine is gone",
        }
    );
}

/// Wait at most [`ANALYSIS_WAIT`] (bounded by `timeout`) for `path`'s diagnostics to settle: a
/// settled publish shows the server has analysed the file (see [`wait_until_ready`]). The
/// outcome is only logged.
pub fn wait_analysed(
    op_sender: &LoopSender<Op>,
    path: &Path,
    server_name: &str,
    timeout: Duration,
) {
    let started = Instant::now();
    let (reply, receiver) = crossbeam_channel::bounded(1);
    let analysis = Op::AnalysisWait {
        path: path.to_path_buf(),
        timeout: ANALYSIS_WAIT.min(timeout),
        reply,
    };
    if op_sender.send(analysis).is_ok() {
        let settled = receiver
            .recv()
            .ok()
            .and_then(|results| results.into_iter().next());
        log::debug!(
            "{}: analysis wait for {} ended after {:?}: {}",
            server_name,
            path.display(),
            started.elapsed(),
            match settled.map(|result| result.outcome) {
                Some(crate::engine::DiagnosticsOutcome::Settled(_)) => "settled",
                Some(crate::engine::DiagnosticsOutcome::TimedOut { .. }) => "timed out",
                _ => "failed",
            }
        );
    }
}
