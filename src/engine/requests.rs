//! Request bookkeeping: sending a request to a server (waiting for it to start when needed),
//! routing each answer by its [`Purpose`], retries with backoff for ContentModified /
//! ServerCancelled, per-request deadlines, and cancellation by tag.

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use lsp_server::ResponseError;
use serde_json::{json, Value};

use super::super::{
    tsserver_probe, tsserver_project_files, tsserver_reload, EngineError, FileDiagnostics,
    ANALYSIS_WAIT,
};
use super::diagnostics_wait::DiagnosticsJob;
use super::{ServerState, State};
use crate::process::ServerId;
use crate::transport::RequestParams;

/// JSON-RPC error codes lspc reacts to (LSP 3.17 §`ErrorCodes`).
const CONTENT_MODIFIED: i32 = -32801;
const SERVER_CANCELLED: i32 = -32802;
/// Retries for ContentModified / ServerCancelled, and the first backoff step (seed 000).
const MAX_RETRIES: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Requests whose answers do not change the workspace, safe to retry (LSP 3.17
/// `staleRequestSupport.retryOnContentModified`).
const RETRYABLE: &[&str] = &[
    "textDocument/definition",
    "textDocument/declaration",
    "textDocument/typeDefinition",
    "textDocument/implementation",
    "textDocument/references",
    "textDocument/hover",
    "textDocument/documentSymbol",
    "workspace/symbol",
    "textDocument/prepareCallHierarchy",
    "callHierarchy/incomingCalls",
    "callHierarchy/outgoingCalls",
    "textDocument/prepareTypeHierarchy",
    "typeHierarchy/supertypes",
    "typeHierarchy/subtypes",
    "textDocument/signatureHelp",
    "textDocument/diagnostic",
    "textDocument/prepareRename",
    "textDocument/rename",
    "textDocument/codeAction",
    "textDocument/formatting",
];

/// Why lspc sent a request, so the answer can be routed.
pub(super) enum Purpose {
    /// A frontend's [`Op::Request`].
    Frontend {
        method: String,
        params: crate::transport::RequestParams,
        reply: super::super::ReplyTo,
        deadline: Instant,
        timeout: Duration,
        attempts: u32,
        retry: bool,
        tag: Option<u64>,
        /// Set once the request was re-sent after a crash: it is retried at most once (B24).
        crash_retried: bool,
        /// The open document the request was built for (its sync's target), which the LRU
        /// bound does not close while the request is in flight (`State::document_in_use`):
        /// typescript-language-server answered a definition whose file a `didClose` closed
        /// before it was read with nothing (helper-72, `--open-documents 2`).
        document: Option<PathBuf>,
    },
    /// `textDocument/diagnostic` for a document version.
    Pull {
        path: PathBuf,
        version: i32,
        attempts: u32,
    },
    /// `shutdown`.
    Shutdown,
    /// One of the three `typescript.tsserverRequest` diagnostics requests confirming the
    /// publish received at `publish_at` for a document version (`tsserver_probe.rs`).
    Probe {
        path: PathBuf,
        version: i32,
        publish_at: Instant,
        index: usize,
    },
    /// tsserver's `reloadProjects`, through `typescript.tsserverRequest`
    /// (`tsserver_reload.rs`); the answer is only logged.
    ReloadProjects,
    /// tsserver's `projectInfo` with the file list of the project of the document at `path`
    /// (`tsserver_project_files.rs`), for the watches; tsserver had read those files by
    /// `read_before`.
    ProjectFiles {
        path: PathBuf,
        read_before: std::time::SystemTime,
    },
}

/// A frontend request waiting to be (re)sent: after a backoff, or for its server to start.
pub(super) struct Retry {
    pub(super) at: Instant,
    pub(super) server_id: ServerId,
    pub(super) purpose: Purpose,
    /// What it waits for besides `at` and its server's start.
    pub(super) gate: RetryGate,
}

impl Retry {
    /// Sent once `at` has passed and the server is running.
    pub(super) fn new(at: Instant, server_id: ServerId, purpose: Purpose) -> Retry {
        Retry {
            at,
            server_id,
            purpose,
            gate: RetryGate::Open,
        }
    }

    /// A frontend request built for a process that is gone (in flight when it crashed, or sent
    /// while its restart was pending), to be sent to the next one: a request about a document
    /// waits for that document's analysis on the new process first ([`RetryGate::Analysis`]).
    pub(super) fn on_next_process(at: Instant, server_id: ServerId, purpose: Purpose) -> Retry {
        let gate = match &purpose {
            Purpose::Frontend {
                document: Some(path),
                ..
            } => RetryGate::Analysis(path.clone()),
            _ => RetryGate::Open,
        };
        Retry {
            at,
            server_id,
            purpose,
            gate,
        }
    }
}

/// What a [`Retry`] waits for once its server is running.
pub(super) enum RetryGate {
    /// Nothing more.
    Open,
    /// The analysis of this document on the server's new process: the wait a question makes
    /// before its first request about a file on a process (a query's readiness wait,
    /// [`Op::AnalysisWait`](super::super::Op::AnalysisWait)), which the question was asked
    /// after on the process that is gone. Without it a hover in flight when rust-analyzer was
    /// killed was sent again right after the new process opened the file, and answered `null`
    /// while it loaded the workspace (helper-74: "no hover information found", 2 of 2).
    Analysis(PathBuf),
    /// That analysis, under way: it ends when the receiver has its answer (or is cut off).
    Waiting(Receiver<Vec<FileDiagnostics>>),
}

impl RetryGate {
    /// Whether the analysis it waits for is over (always, for [`RetryGate::Open`]).
    fn open(&self) -> bool {
        match self {
            RetryGate::Open => true,
            RetryGate::Analysis(_) => false,
            RetryGate::Waiting(receiver) => !matches!(
                receiver.try_recv(),
                Err(crossbeam_channel::TryRecvError::Empty)
            ),
        }
    }
}

impl State {
    /// Remove and return every request in flight to `server_id` (its process is gone).
    pub(super) fn take_pending_of(&mut self, server_id: ServerId) -> Vec<Purpose> {
        let keys: Vec<(ServerId, i32)> = self
            .pending
            .keys()
            .filter(|(id, _)| *id == server_id)
            .copied()
            .collect();
        keys.into_iter()
            .filter_map(|key| self.pending.remove(&key))
            .collect()
    }

    pub(super) fn send_request(&mut self, server_id: ServerId, purpose: Purpose) {
        let Some(server) = self.servers.get_mut(server_id.0 as usize) else {
            if let Purpose::Frontend { reply, .. } = purpose {
                reply.send(Err(EngineError::Gone));
            }
            return;
        };
        let shutdown_while_held =
            matches!(purpose, Purpose::Shutdown) && server.has_initialized_process();
        if !server.is_running() && !shutdown_while_held {
            if let Some(reason) = server.permanent_failure() {
                if let Purpose::Frontend { reply, .. } = purpose {
                    reply.send(Err(reason));
                }
                return;
            }
            if let Some(at) = server.supervisor.restart_at() {
                // Crashed, restart coming: wait for it (bounded by the request's own deadline),
                // and for its document's analysis there.
                self.retries
                    .push(Retry::on_next_process(at, server_id, purpose));
                return;
            }
            // Starting or not started: wait for it.
            let deadline = match &purpose {
                Purpose::Frontend { deadline, .. } => *deadline,
                _ => Instant::now() + Duration::from_secs(30),
            };
            self.ensure_started(server_id);
            self.retries
                .push(Retry::new(deadline.min(Instant::now()), server_id, purpose));
            return;
        }
        // A frontend request is serialised straight from what retries keep (no copy).
        let (method, params): (Cow<str>, Cow<RequestParams>) = match &purpose {
            Purpose::Frontend { method, params, .. } => (method.into(), Cow::Borrowed(params)),
            Purpose::Pull { path, .. } => {
                let uri = document_uri(&self.documents, path);
                (
                    "textDocument/diagnostic".into(),
                    Cow::Owned(json!({ "textDocument": { "uri": uri } }).into()),
                )
            }
            Purpose::Shutdown => ("shutdown".into(), Cow::Owned(Value::Null.into())),
            Purpose::Probe { path, index, .. } => {
                let uri = document_uri(&self.documents, path);
                (
                    "workspace/executeCommand".into(),
                    Cow::Owned(
                        tsserver_probe::params(tsserver_probe::REQUESTS[*index], &uri).into(),
                    ),
                )
            }
            Purpose::ReloadProjects => (
                "workspace/executeCommand".into(),
                Cow::Owned(tsserver_reload::params().into()),
            ),
            Purpose::ProjectFiles { path, .. } => {
                let uri = document_uri(&self.documents, path);
                (
                    "workspace/executeCommand".into(),
                    Cow::Owned(tsserver_project_files::params(&uri).into()),
                )
            }
        };
        let id = server.next_id();
        if let (Purpose::Frontend { reply, .. }, Some(process)) = (&purpose, server.process()) {
            // The reader hands a successful answer straight to the caller (one hop less); the
            // pending entry below still owns deadlines, cancellation, retries and crashes. The
            // caller's channel holds one answer: a late one after a timeout is dropped.
            process.expect_reply(id, reply.direct_reply());
        }
        server.send_request(id, &method, &params);
        drop((method, params));
        if let Purpose::Pull { path, .. } = &purpose {
            self.pulls_in_flight.insert((server_id, path.clone()));
        }
        self.pending.insert((server_id, id), purpose);
    }

    pub(super) fn on_response(
        &mut self,
        server_id: ServerId,
        id: i32,
        result: Result<Value, ResponseError>,
    ) {
        if let ServerState::Starting { initialize_id, .. } =
            self.servers[server_id.0 as usize].state
        {
            if initialize_id == id {
                self.on_initialized(server_id, result);
                return;
            }
        }
        let Some(purpose) = self.pending.remove(&(server_id, id)) else {
            log::debug!("ignoring a reply for unknown or expired request {id}");
            return;
        };
        let name = self.servers[server_id.0 as usize].config.name.clone();
        match purpose {
            Purpose::Frontend {
                method,
                params,
                reply,
                deadline,
                timeout,
                attempts,
                retry,
                tag,
                crash_retried,
                document,
            } => match result {
                Ok(value) => {
                    reply.send(Ok(value));
                }
                Err(error) => {
                    let retryable = retry
                        && RETRYABLE.contains(&method.as_str())
                        && is_transient(&error)
                        && attempts < MAX_RETRIES;
                    if retryable {
                        let at = Instant::now() + FIRST_BACKOFF * 2u32.pow(attempts);
                        log::debug!("{name}: {method} got {}, retrying", error.code);
                        let purpose = Purpose::Frontend {
                            method,
                            params,
                            reply,
                            deadline,
                            timeout,
                            attempts: attempts + 1,
                            retry,
                            tag,
                            crash_retried,
                            document,
                        };
                        self.retries.push(Retry::new(at, server_id, purpose));
                    } else {
                        let message = if error.code == CONTENT_MODIFIED && attempts > 0 {
                            format!(
                                "server kept reporting content modified after {attempts} retries"
                            )
                        } else {
                            error.message
                        };
                        reply.send(Err(EngineError::Server {
                            server: name,
                            method,
                            code: error.code,
                            message,
                        }));
                    }
                }
            },
            Purpose::Pull {
                path,
                version,
                attempts,
            } => {
                self.pulls_in_flight.remove(&(server_id, path.clone()));
                let still_open = self
                    .documents
                    .get(&path)
                    .is_some_and(|doc| doc.open_on.contains_key(&server_id));
                if !still_open {
                    // Closed (LRU bound) while the pull was in flight: the answer describes a
                    // text the server no longer holds.
                    log::debug!(
                        "{name}: dropping the pull answer for {}, closed since it was asked",
                        path.display()
                    );
                    return;
                }
                if self.stale_pulls.remove(&(server_id, path.clone())) {
                    // Asked before the server's `workspace/diagnostic/refresh`: the answer in
                    // force is the next pull's.
                    log::debug!(
                        "{name}: dropping the pull answer for {} asked before a refresh",
                        path.display()
                    );
                    self.pull_again(server_id, &path);
                    return;
                }
                match result {
                    Ok(report) => self.on_pulled(server_id, &path, version, &report),
                    Err(error) if is_transient(&error) && attempts < MAX_RETRIES => {
                        let at = Instant::now() + FIRST_BACKOFF * 2u32.pow(attempts);
                        let purpose = Purpose::Pull {
                            path,
                            version,
                            attempts: attempts + 1,
                        };
                        self.retries.push(Retry::new(at, server_id, purpose));
                    }
                    Err(error) => {
                        log::warn!("{name}: textDocument/diagnostic failed: {}", error.message);
                        self.pulled.insert((server_id, path), version);
                    }
                }
            }
            Purpose::Shutdown => {}
            Purpose::ProjectFiles { path, read_before } => {
                match result {
                    Ok(answer) => self.project_files.answered(server_id, &answer, read_before),
                    Err(error) => log::debug!(
                        "{name}: tsserver projectInfo for {}: {}",
                        path.display(),
                        error.message
                    ),
                }
                // The check the ask was held for is done now.
                if let Some(probe) = self.probes.get_mut(&(server_id, path)) {
                    if probe.answered_at.is_none() && probe.answers.iter().all(Option::is_some) {
                        probe.answered_at = Some(Instant::now());
                    }
                }
            }
            Purpose::ReloadProjects => match result {
                Ok(_) => log::debug!("{name}: tsserver reloaded its projects"),
                Err(error) => log::warn!(
                    "{name}: tsserver could not reload its projects: {}",
                    error.message
                ),
            },
            Purpose::Probe {
                path,
                version,
                publish_at,
                index,
            } => {
                let Some(probe) = self.probes.get_mut(&(server_id, path.clone())) else {
                    return;
                };
                if probe.version != version || probe.publish_at != publish_at {
                    return;
                }
                if let Err(error) = &result {
                    log::debug!(
                        "{name}: {} failed: {}",
                        tsserver_probe::COMMAND,
                        error.message
                    );
                }
                probe.answers[index] = Some(
                    result
                        .ok()
                        .and_then(|answer| tsserver_probe::answer_keys(&answer)),
                );
                log::debug!(
                    "{name}: {} for {} v{version}: {:?}",
                    tsserver_probe::REQUESTS[index],
                    path.display(),
                    probe.answers[index]
                );
                if !probe.answers.iter().all(Option::is_some) {
                    return;
                }
                // tsserver has loaded the document's project: the watches learn its files
                // before the check counts as done, so that a file written right after the
                // answer is seen (its folder watched, its status newer than `read_before`).
                if self.project_files.ask(server_id, &path, version) {
                    // It had read the project's files when it published.
                    let read_before = std::time::SystemTime::now() - publish_at.elapsed();
                    self.send_request(server_id, Purpose::ProjectFiles { path, read_before });
                } else {
                    probe.answered_at = Some(Instant::now());
                }
            }
        }
    }

    pub(super) fn cancel_tagged(&mut self, wanted: u64) {
        let key = self
            .pending
            .iter()
            .find_map(|(key, purpose)| match purpose {
                Purpose::Frontend { tag: Some(tag), .. } if *tag == wanted => Some(*key),
                _ => None,
            });
        if let Some(key) = key {
            if let Some(Purpose::Frontend { method, reply, .. }) = self.pending.remove(&key) {
                let server = &self.servers[key.0 .0 as usize];
                server.cancel_request(key.1);
                reply.send(Err(EngineError::Cancelled {
                    server: server.config.name.clone(),
                    method,
                }));
            }
            return;
        }
        let position = self.retries.iter().position(
            |retry| matches!(retry.purpose, Purpose::Frontend { tag: Some(tag), .. } if tag == wanted),
        );
        if let Some(position) = position {
            let retry = self.retries.remove(position);
            if let Purpose::Frontend { method, reply, .. } = retry.purpose {
                let server = self.servers[retry.server_id.0 as usize].config.name.clone();
                reply.send(Err(EngineError::Cancelled { server, method }));
            }
        }
    }
    pub(super) fn fire_request_deadlines(&mut self, now: Instant) {
        let expired: Vec<(ServerId, i32)> = self
            .pending
            .iter()
            .filter(|(_, purpose)| {
                matches!(purpose, Purpose::Frontend { deadline, .. } if *deadline <= now)
            })
            .map(|(key, _)| *key)
            .collect();
        for key in expired {
            let Some(Purpose::Frontend {
                method,
                reply,
                timeout,
                ..
            }) = self.pending.remove(&key)
            else {
                continue;
            };
            let server = &self.servers[key.0 .0 as usize];
            server.cancel_request(key.1);
            reply.send(Err(EngineError::Timeout {
                server: server.config.name.clone(),
                method,
                after: timeout,
            }));
            self.on_deadline_missed(key.0);
        }
    }

    pub(super) fn fire_retries(&mut self, now: Instant) {
        let mut waiting = Vec::new();
        for mut retry in std::mem::take(&mut self.retries) {
            let server = &self.servers[retry.server_id.0 as usize];
            let started = retry.at <= now && !server.is_starting();
            // A server that is not running (it failed again, or for good) gets the request now:
            // `send_request` fails it, or keeps it for the next process.
            if started && !server.is_running() {
                retry.gate = RetryGate::Open;
            }
            if started {
                if let RetryGate::Analysis(path) = &retry.gate {
                    let remaining = match &retry.purpose {
                        Purpose::Frontend { deadline, .. } => {
                            deadline.saturating_duration_since(now)
                        }
                        _ => ANALYSIS_WAIT,
                    };
                    log::debug!(
                        "{}: waiting for {}'s analysis on the new process before sending a \
                         request again",
                        server.config.name,
                        path.display()
                    );
                    let (reply, done) = crossbeam_channel::bounded(1);
                    self.jobs.push(DiagnosticsJob::analysis(
                        path.clone(),
                        ANALYSIS_WAIT.min(remaining),
                        reply,
                    ));
                    retry.gate = RetryGate::Waiting(done);
                }
            }
            let server = &self.servers[retry.server_id.0 as usize];
            let ready = started && retry.gate.open();
            let expired =
                matches!(&retry.purpose, Purpose::Frontend { deadline, .. } if *deadline <= now);
            if expired && !ready {
                if let Purpose::Frontend {
                    method,
                    reply,
                    timeout,
                    ..
                } = retry.purpose
                {
                    let error = server.failure().unwrap_or(EngineError::Timeout {
                        server: server.config.name.clone(),
                        method,
                        after: timeout,
                    });
                    reply.send(Err(error));
                }
            } else if ready {
                waiting.push(retry);
            } else {
                self.retries.push(retry);
            }
        }
        for retry in waiting {
            self.send_request(retry.server_id, retry.purpose);
        }
    }
}

fn is_transient(error: &ResponseError) -> bool {
    match error.code {
        CONTENT_MODIFIED => true,
        // LSP 3.17 §`ServerCancelled`: retry unless the server says not to.
        SERVER_CANCELLED => error
            .data
            .as_ref()
            .and_then(|data| data.get("retriggerRequest"))
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

/// The URI lspc sent the document at `path` under (empty when it holds none).
fn document_uri(documents: &super::super::documents::Documents, path: &std::path::Path) -> String {
    documents
        .get(path)
        .map(|doc| doc.uri.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors() {
        let error = |code: i32, data: Option<Value>| ResponseError {
            code,
            message: String::new(),
            data,
        };
        assert!(is_transient(&error(-32801, None)));
        assert!(is_transient(&error(-32802, None)));
        assert!(!is_transient(&error(
            -32802,
            Some(json!({"retriggerRequest": false}))
        )));
        assert!(!is_transient(&error(-32603, None)));
    }
}
