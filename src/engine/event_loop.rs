//! The event loop: one thread, one `select!`, all state.
//!
//! Each turn handles one event (an [`Op`] from a frontend, a [`ServerEvent`] from a reader thread,
//! a signal, or a timer), drains whatever else is immediately ready, then does the per-turn work
//! once: start what waits for servers, check settled diagnostics, fire deadlines and retries, and
//! evict documents beyond the LRU bound.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{never, select, Receiver, Sender};
use lsp_server::{Message, Notification, Request, RequestId, ResponseError};
use serde_json::{json, Value};

use super::documents::{read_text_with, DiskStamp, Documents, Refresh};
use super::settle::{push_settle_time, PublishInfo};
use super::supervisor::{CrashDecision, RestartPolicy, Supervisor, HUNG_AFTER_MISSED_DEADLINES};
use super::watchdog::Watchdog;
use super::{
    client_capabilities, EngineError, EngineOptions, Op, ServerInfo, ServerStatus, SyncedDocument,
};
use crate::config::{ServerConfig, Transport};
use crate::diagnostics::DiagnosticStore;
use crate::process::{self, ServerEvent, ServerId, ServerProcess, SpawnSpec};
use crate::text::{LineIndex, PositionEncoding};
use crate::transport::Outgoing;
use crate::uri;

// Safe edits (issue 5): applying `WorkspaceEdit`s in the loop and re-syncing the servers.
#[path = "edit_sync.rs"]
mod edit_sync;
// MCP/frontend support (passive diagnostics, event subscriptions, snapshots).
#[path = "frontend_events.rs"]
pub(super) mod frontend_events;
// Configuration reload (issue 4): `Op::Reload`.
#[path = "reload.rs"]
pub(super) mod reload;
// Diagnostics ops: per-file waits for servers to settle.
#[path = "diagnostics_wait.rs"]
mod diagnostics_wait;
// Server messages: requests, notifications, published and pulled diagnostics.
#[path = "server_messages.rs"]
mod server_messages;
// The shutdown sequence.
#[path = "shutdown.rs"]
mod shutdown;

use diagnostics_wait::{DiagnosticsJob, FILES_IN_FLIGHT};

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

/// How many server messages may wait for the loop. Bounded so that a flood (100,000
/// `publishDiagnostics` in a burst) holds at most this many decoded messages in memory: the
/// reader thread then waits, and the server with it. This cannot deadlock, because the loop never
/// blocks on a reader: it only sends to the writers' unbounded channels (STYLE.md habit 2). At
/// worst `ServerProcess::terminate` waits its bounded join for a reader stuck on a full channel.
const SERVER_EVENT_CAPACITY: usize = 4096;

pub(super) fn run(options: EngineOptions, op_receiver: Receiver<Op>) {
    let (event_sender, event_receiver) = crossbeam_channel::bounded(SERVER_EVENT_CAPACITY);
    let signal_receiver = match crate::signals::install() {
        Ok(receiver) => receiver,
        Err(error) => {
            log::warn!("cannot install signal handlers: {error}");
            never()
        }
    };
    let mut state = State::new(options, event_sender);
    loop {
        let timeout = state
            .next_deadline()
            .map(|deadline| deadline.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_secs(3600));
        select! {
            recv(op_receiver) -> op => match op {
                Ok(Op::Shutdown { reply }) => {
                    state.shutdown_all(&event_receiver);
                    let _ = reply.send(());
                    return;
                }
                // Needs the event receiver: stopping servers waits for their answers.
                Ok(Op::Reload { config, reply }) => {
                    let _ = reply.send(state.reload(config, &event_receiver));
                }
                Ok(op) => state.handle_op(op),
                Err(_) => {
                    state.shutdown_all(&event_receiver);
                    return;
                }
            },
            recv(event_receiver) -> event => {
                if let Ok(event) = event {
                    state.handle_server_event(event);
                }
            },
            recv(signal_receiver) -> signal => {
                let signal = signal.unwrap_or(libc_sigterm());
                log::info!("received signal {signal}: shutting the servers down");
                state.shutdown_all(&event_receiver);
                std::process::exit(128 + signal);
            },
            default(timeout) => {},
        }
        // Coalesce: handle what is already queued (bounded), then do the per-turn work once.
        let turn_end = Instant::now() + Duration::from_millis(5);
        while Instant::now() < turn_end {
            match event_receiver.try_recv() {
                Ok(event) => state.handle_server_event(event),
                Err(_) => break,
            }
        }
        state.flush_publishes();
        state.per_turn();
    }
}

fn libc_sigterm() -> i32 {
    15
}

/// A server slot: config, process state, negotiated facts.
struct Server {
    server_id: ServerId,
    config: ServerConfig,
    workspace_folder: PathBuf,
    root_uri: String,
    generation: u32,
    state: ServerState,
    /// From the first process's `initialize` result.
    capabilities: Arc<Value>,
    encoding: PositionEncoding,
    /// Pull diagnostics: static `diagnosticProvider` or a dynamic registration.
    pull_diagnostics: bool,
    /// A static `diagnosticProvider`, and the live dynamic registrations of
    /// `textDocument/diagnostic` (pyright registers, re-registers and unregisters at start-up).
    static_pull: bool,
    pull_registrations: BTreeSet<String>,
    /// `textDocumentSync.save` asked for: `Some(include_text)`.
    save: Option<bool>,
    active_progress: BTreeSet<String>,
    last_progress_change: Option<Instant>,
    /// The last publish per document.
    publishes: HashMap<PathBuf, PublishInfo>,
    /// The diagnostics of the last publish or full pull per document exactly as the server sent
    /// them (its encoding, `data` kept), for code-action contexts ([`Op::RawDiagnostics`]).
    raw_diagnostics: HashMap<PathBuf, Vec<Value>>,
    /// Restart policy, crash streak and hung detection (see [`super::supervisor`]).
    supervisor: Supervisor,
    /// Whether some process of this server ever answered `initialize`: only then is an exit a
    /// crash under the restart policy; before, it is a startup failure (fails at once).
    ever_initialized: bool,
    /// Kills the process group if lspc dies without stopping the server (B26).
    watchdog: Option<Watchdog>,
    next_request_id: i32,
}

enum ServerState {
    NotStarted,
    Starting {
        process: ServerProcess,
        initialize_id: i32,
        deadline: Instant,
    },
    Running {
        process: ServerProcess,
    },
    /// Crashed or failed to start; `permanent` once restarts are used up (or never allowed).
    Failed {
        reason: EngineError,
        permanent: bool,
    },
}

impl Server {
    /// A slot for `config`, not started (also used by a configuration reload).
    fn new(options: &EngineOptions, server_id: ServerId, config: &ServerConfig) -> Server {
        let root = options.config.root.clone();
        let workspace_folder = config
            .workspace_folder
            .clone()
            .unwrap_or_else(|| root.clone());
        let root_uri = uri::path_to_uri(&workspace_folder)
            .map(|uri| uri.as_str().to_owned())
            .unwrap_or_else(|_| "file:///".to_owned());
        Server {
            server_id,
            config: config.clone(),
            workspace_folder,
            root_uri,
            generation: 0,
            state: ServerState::NotStarted,
            capabilities: Arc::new(Value::Null),
            encoding: PositionEncoding::Utf16,
            pull_diagnostics: false,
            static_pull: false,
            pull_registrations: BTreeSet::new(),
            save: None,
            active_progress: BTreeSet::new(),
            last_progress_change: None,
            publishes: HashMap::new(),
            raw_diagnostics: HashMap::new(),
            supervisor: Supervisor::new(options.restart.unwrap_or(RestartPolicy::from_config(
                config.restart_on_crash,
                config.max_restarts,
            ))),
            ever_initialized: false,
            watchdog: None,
            next_request_id: 0,
        }
    }

    fn process(&self) -> Option<&ServerProcess> {
        match &self.state {
            ServerState::Running { process } | ServerState::Starting { process, .. } => {
                Some(process)
            }
            _ => None,
        }
    }

    fn is_running(&self) -> bool {
        matches!(self.state, ServerState::Running { .. })
    }

    fn is_starting(&self) -> bool {
        matches!(self.state, ServerState::Starting { .. })
    }

    fn info(&self) -> ServerInfo {
        ServerInfo {
            server_id: self.server_id,
            name: self.config.name.clone(),
            encoding: self.encoding,
            capabilities: Arc::clone(&self.capabilities),
            busy: !self.active_progress.is_empty(),
        }
    }

    fn send(&self, message: Message) {
        if let Some(process) = self.process() {
            if process.send(Outgoing::Message(message)).is_err() {
                log::debug!(
                    "{}: writer gone; the reader will report the exit",
                    self.config.name
                );
            }
        }
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(Message::Notification(Notification {
            method: method.to_owned(),
            params,
        }));
    }

    fn next_id(&mut self) -> i32 {
        self.next_request_id += 1;
        self.next_request_id
    }

    fn failure(&self) -> Option<EngineError> {
        match &self.state {
            ServerState::Failed { reason, .. } => Some(reason.clone()),
            _ => None,
        }
    }

    /// The failure, only when it is for good (no restart will come).
    fn permanent_failure(&self) -> Option<EngineError> {
        match &self.state {
            ServerState::Failed {
                reason,
                permanent: true,
            } => Some(reason.clone()),
            _ => None,
        }
    }

    /// Crashed and waiting for its backoff to end before restarting.
    fn is_restart_pending(&self) -> bool {
        matches!(
            self.state,
            ServerState::Failed {
                permanent: false,
                ..
            }
        ) && self.supervisor.restart_at().is_some()
    }
}

/// Why lspc sent a request, so the answer can be routed.
enum Purpose {
    /// A frontend's [`Op::Request`].
    Frontend {
        method: String,
        params: Value,
        reply: Sender<Result<Value, EngineError>>,
        deadline: Instant,
        timeout: Duration,
        attempts: u32,
        retry: bool,
        tag: Option<u64>,
        /// Set once the request was re-sent after a crash: it is retried at most once (B24).
        crash_retried: bool,
    },
    /// `textDocument/diagnostic` for a document version.
    Pull {
        path: PathBuf,
        version: i32,
        attempts: u32,
    },
    /// `shutdown`.
    Shutdown,
}

/// A frontend request waiting to be (re)sent: after a backoff, or for its server to start.
struct Retry {
    at: Instant,
    server_id: ServerId,
    purpose: Purpose,
}

/// A sync waiting for its servers to start.
struct PendingSync {
    path: PathBuf,
    deadline: Instant,
    reply: Sender<Result<SyncedDocument, EngineError>>,
}

struct State {
    options: EngineOptions,
    event_sender: Sender<ServerEvent>,
    servers: Vec<Server>,
    documents: Documents,
    store: DiagnosticStore,
    /// Pulled diagnostics per (server, path): the version they answer.
    pulled: HashMap<(ServerId, PathBuf), i32>,
    /// `textDocument/diagnostic` requests in flight, so each (server, path) has at most one.
    pulls_in_flight: HashSet<(ServerId, PathBuf)>,
    pending: HashMap<(ServerId, i32), Purpose>,
    retries: Vec<Retry>,
    syncs: Vec<PendingSync>,
    jobs: Vec<DiagnosticsJob>,
    /// Texts of files servers published for but lspc never opened, for column conversion.
    disk_texts: HashMap<PathBuf, (Arc<str>, Arc<LineIndex>)>,
    /// `publishDiagnostics` received this turn, latest per (server, uri), with arrival time: a
    /// flood of publishes is converted once per document per turn, not once per message.
    pending_publishes: HashMap<(ServerId, String), (Value, Instant)>,
    /// Publishes without a usable `uri`, kept in order so they are reported (and dropped) once.
    pending_malformed_publishes: Vec<(ServerId, Value)>,
    shutting_down: bool,
    /// Edits servers applied through `workspace/applyEdit` ([`Op::ServerEdits`]).
    server_edits: edit_sync::ServerEditLog,
    frontend: frontend_events::FrontendHub,
}

impl State {
    fn new(options: EngineOptions, event_sender: Sender<ServerEvent>) -> State {
        let servers = options
            .config
            .servers
            .iter()
            .enumerate()
            .map(|(index, config)| Server::new(&options, ServerId(index as u32), config))
            .collect();
        State {
            options,
            event_sender,
            servers,
            documents: Documents::default(),
            store: DiagnosticStore::default(),
            pulled: HashMap::new(),
            pulls_in_flight: HashSet::new(),
            pending: HashMap::new(),
            retries: Vec::new(),
            syncs: Vec::new(),
            jobs: Vec::new(),
            disk_texts: HashMap::new(),
            pending_publishes: HashMap::new(),
            pending_malformed_publishes: Vec::new(),
            shutting_down: false,
            server_edits: edit_sync::ServerEditLog::default(),
            frontend: frontend_events::FrontendHub::default(),
        }
    }

    // ----- ops -------------------------------------------------------------------------------

    fn handle_op(&mut self, op: Op) {
        match op {
            Op::Diagnostics {
                paths,
                timeout,
                reply,
            } => {
                let order = paths.clone();
                self.jobs.push(DiagnosticsJob {
                    queue: paths.into_iter().collect(),
                    active: Vec::new(),
                    results: Vec::new(),
                    order,
                    timeout,
                    reply,
                });
            }
            Op::Sync {
                path,
                timeout,
                reply,
            } => {
                let servers = self.options.config.servers_for_path(&path);
                if servers.is_empty() {
                    let _ = reply.send(Err(EngineError::NoServer { path }));
                    return;
                }
                for &index in &servers {
                    self.ensure_started(ServerId(index as u32));
                }
                self.syncs.push(PendingSync {
                    path,
                    deadline: Instant::now() + timeout,
                    reply,
                });
            }
            Op::Request {
                server_id,
                method,
                params,
                timeout,
                retry,
                tag,
                reply,
            } => {
                let deadline = Instant::now() + timeout;
                let purpose = Purpose::Frontend {
                    method,
                    params,
                    reply,
                    deadline,
                    timeout,
                    attempts: 0,
                    retry,
                    tag,
                    crash_retried: false,
                };
                self.send_request(server_id, purpose);
            }
            Op::Cancel { tag } => self.cancel_tagged(tag),
            Op::ApplyEdit {
                edit,
                encoding,
                mode,
                reply,
            } => {
                let _ = reply.send(self.apply_edit(&edit, encoding, mode));
            }
            Op::ServerEdits { reply } => {
                let _ = reply.send(self.server_edits.entries());
            }
            Op::Status { reply } => {
                let _ = reply.send(self.status());
            }
            Op::RawDiagnostics { path, reply } => {
                let raw = self
                    .servers
                    .iter()
                    .filter_map(|server| {
                        let diagnostics = server.raw_diagnostics.get(&path)?;
                        Some((server.server_id, diagnostics.clone()))
                    })
                    .collect();
                let _ = reply.send(raw);
            }
            Op::Shutdown { .. } | Op::Reload { .. } => unreachable!("handled by the loop"),
            op => self.handle_frontend_op(op),
        }
    }

    fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|server| {
                let state = match &server.state {
                    ServerState::NotStarted => "not started".to_owned(),
                    ServerState::Starting { .. } => "starting".to_owned(),
                    ServerState::Running { .. } if server.active_progress.is_empty() => {
                        "running".to_owned()
                    }
                    ServerState::Running { .. } => "running (busy)".to_owned(),
                    ServerState::Failed {
                        reason,
                        permanent: false,
                    } => format!("restarting after a crash: {reason}"),
                    ServerState::Failed { reason, .. } => format!("failed: {reason}"),
                };
                ServerStatus {
                    name: server.config.name.clone(),
                    state,
                    pid: server.process().map(ServerProcess::pid),
                    restarts: server.supervisor.total_restarts(),
                    stderr_tail: server
                        .process()
                        .map(|process| process.stderr_tail_lines(20))
                        .unwrap_or_default(),
                    failure: server.failure().map(|error| error.detail()),
                    open_documents: self.documents.open_on(server.server_id).len(),
                }
            })
            .collect()
    }

    // ----- server lifecycle ------------------------------------------------------------------

    /// Start the server if it has not started yet (seed 000's lazy start), or restart it after a
    /// crash once its backoff is over (see [`Self::fire_restarts`]); a server given up stays down.
    fn ensure_started(&mut self, server_id: ServerId) {
        if self.shutting_down {
            return;
        }
        let now = Instant::now();
        let server = &mut self.servers[server_id.0 as usize];
        match &server.state {
            ServerState::NotStarted => {}
            ServerState::Failed {
                permanent: false, ..
            } => {
                if !server.supervisor.take_due_restart(now) {
                    // Still backing off; `fire_restarts` starts it when the backoff ends.
                    return;
                }
                log::warn!(
                    "{}: restarting after a crash (restart {}, crash {} of this streak, policy {})",
                    server.config.name,
                    server.supervisor.total_restarts(),
                    server.supervisor.streak(),
                    server.supervisor.policy()
                );
            }
            _ => return,
        }
        if server.config.transport == Transport::Socket {
            server.state = ServerState::Failed {
                reason: EngineError::Spawn {
                    server: server.config.name.clone(),
                    message: "transport \"socket\" is not supported; use \"stdio\"".to_owned(),
                },
                permanent: true,
            };
            return;
        }
        let Some(command) = server.config.resolved_command.clone() else {
            server.state = ServerState::Failed {
                reason: EngineError::Spawn {
                    server: server.config.name.clone(),
                    message: format!("command not found: {}", server.config.command),
                },
                permanent: true,
            };
            return;
        };
        server.generation += 1;
        // Registrations belong to a process; a restarted server registers again.
        server.pull_registrations.clear();
        let spec = SpawnSpec {
            server_id,
            generation: server.generation,
            name: server.config.name.clone(),
            command,
            args: server.config.args.clone(),
            env: server
                .config
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            cwd: server.workspace_folder.clone(),
        };
        let process = match process::spawn(spec, self.event_sender.clone()) {
            Ok(process) => process,
            Err(error) => {
                server.state = ServerState::Failed {
                    reason: EngineError::Spawn {
                        server: server.config.name.clone(),
                        message: error.to_string(),
                    },
                    permanent: true,
                };
                return;
            }
        };
        let initialize_id = server.next_id();
        let params = client_capabilities::initialize_params(
            &server.root_uri,
            &server.workspace_folder,
            server.config.initialization_options.as_ref(),
        );
        let request = Request {
            id: RequestId::from(initialize_id),
            method: "initialize".to_owned(),
            params,
        };
        let _ = process.send(Outgoing::Message(Message::Request(request)));
        let startup_timeout = server
            .config
            .startup_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(self.options.startup_timeout);
        log::debug!("{}: spawned pid {}", server.config.name, process.pid());
        server.watchdog = Watchdog::start(process.pid());
        if self.options.warn_duplicates {
            super::duplicates::register(
                &server.config.name,
                &server.workspace_folder,
                process.pid(),
            );
        }
        server.state = ServerState::Starting {
            process,
            initialize_id,
            deadline: Instant::now() + startup_timeout,
        };
    }

    fn on_initialized(&mut self, server_id: ServerId, result: Result<Value, ResponseError>) {
        let server = &mut self.servers[server_id.0 as usize];
        let ServerState::Starting { .. } = server.state else {
            return;
        };
        let result = match result {
            Ok(result) => result,
            Err(error) => {
                let reason = EngineError::Spawn {
                    server: server.config.name.clone(),
                    message: format!("initialize failed: {} ({})", error.message, error.code),
                };
                let startup = !server.ever_initialized;
                self.fail_server(server_id, reason, startup);
                return;
            }
        };
        server.ever_initialized = true;
        server.supervisor.on_answer();
        let ServerState::Starting { process, .. } =
            std::mem::replace(&mut server.state, ServerState::NotStarted)
        else {
            return;
        };
        // Capabilities stay those of the first process (seed 004).
        if server.capabilities.is_null() {
            let capabilities = result.get("capabilities").cloned().unwrap_or(json!({}));
            server.encoding = negotiated_encoding(&capabilities, &result);
            server.static_pull = !matches!(
                capabilities.get("diagnosticProvider"),
                None | Some(Value::Null) | Some(Value::Bool(false))
            );
            server.save = save_option(&capabilities);
            server.capabilities = Arc::new(capabilities);
        }
        server.pull_diagnostics = server.static_pull || !server.pull_registrations.is_empty();
        server.state = ServerState::Running { process };
        log::info!(
            "{}: initialized ({} positions{})",
            server.config.name,
            server.encoding.name(),
            if server.pull_diagnostics {
                ", pull diagnostics"
            } else {
                ""
            }
        );
        server.notify("initialized", json!({}));
        let name = server.config.name.clone();
        self.frontend_server_initialized(&name);
        let server = &mut self.servers[server_id.0 as usize];
        if let Some(settings) = server.config.settings.clone() {
            server.notify(
                "workspace/didChangeConfiguration",
                json!({ "settings": settings }),
            );
        }
        // After a restart, re-open what the previous process had open, with current text.
        for path in self.documents.open_on(server_id) {
            if let Some(doc) = self.documents.get_mut(&path) {
                doc.open_on.remove(&server_id);
            }
            self.open_on_server(server_id, &path);
        }
    }

    /// Mark a server failed and stop its process. A `startup` failure (the server never
    /// answered `initialize`) is permanent at once: no restart loop (B20). A crash after a
    /// successful `initialize` goes to the restart policy ([`Supervisor::on_crash`]): with a
    /// restart coming, requests in flight wait for the new process and are sent again once (B24);
    /// without one, the server is given up for good and everything waiting on it fails now with
    /// [`EngineError::GaveUp`].
    fn fail_server(&mut self, server_id: ServerId, reason: EngineError, startup: bool) {
        let now = Instant::now();
        let server = &mut self.servers[server_id.0 as usize];
        if let ServerState::Starting { process, .. } | ServerState::Running { process } =
            &mut server.state
        {
            process.terminate(Duration::from_millis(200));
        }
        if let Some(mut watchdog) = server.watchdog.take() {
            watchdog.disarm();
        }
        let decision = if startup {
            CrashDecision::GiveUp { streak: 0 }
        } else {
            server.supervisor.on_crash(now)
        };
        let (reason, restart_at) = match decision {
            CrashDecision::RestartAt(at) => {
                log::warn!(
                    "{reason}; restarting in {} ms",
                    at.saturating_duration_since(now).as_millis()
                );
                (reason, Some(at))
            }
            CrashDecision::GiveUp { streak } if !startup => {
                let reason = gave_up(reason, streak);
                log::error!("{reason}");
                (reason, None)
            }
            CrashDecision::GiveUp { .. } => {
                // A start-up failure is reported to the caller (and by `lspc check`); a warning
                // here would print it twice.
                log::info!("{reason}");
                (reason, None)
            }
        };
        server.state = ServerState::Failed {
            reason: reason.clone(),
            permanent: restart_at.is_none(),
        };
        self.frontend_server_failed(&reason, restart_at.is_none());
        let server = &mut self.servers[server_id.0 as usize];
        server.active_progress.clear();
        server.publishes.clear();
        server.raw_diagnostics.clear();
        self.pulled.retain(|(id, _), _| *id != server_id);
        self.pulls_in_flight.retain(|(id, _)| *id != server_id);
        // Requests in flight: retried once on the next process, or failed now.
        for purpose in self.take_pending_of(server_id) {
            match (purpose, restart_at) {
                (
                    Purpose::Frontend {
                        method,
                        params,
                        reply,
                        deadline,
                        timeout,
                        attempts,
                        retry,
                        tag,
                        crash_retried: false,
                    },
                    Some(at),
                ) => {
                    log::info!("{method} was in flight when the server crashed: retrying it once");
                    self.retries.push(Retry {
                        at,
                        server_id,
                        purpose: Purpose::Frontend {
                            method,
                            params,
                            reply,
                            deadline,
                            timeout,
                            attempts,
                            retry,
                            tag,
                            crash_retried: true,
                        },
                    });
                }
                (Purpose::Frontend { reply, .. }, _) => {
                    let _ = reply.send(Err(reason.clone()));
                }
                (Purpose::Pull { path, version, .. }, Some(at)) => {
                    self.retries.push(Retry {
                        at,
                        server_id,
                        purpose: Purpose::Pull {
                            path,
                            version,
                            attempts: 0,
                        },
                    });
                }
                (Purpose::Pull { .. } | Purpose::Shutdown, _) => {}
            }
        }
    }

    /// Start servers whose restart backoff has ended.
    fn fire_restarts(&mut self, now: Instant) {
        for index in 0..self.servers.len() {
            let server = &self.servers[index];
            if server.is_restart_pending()
                && server.supervisor.restart_at().is_some_and(|at| at <= now)
            {
                self.ensure_started(ServerId(index as u32));
            }
        }
    }

    /// A request to this server missed its deadline; after
    /// [`HUNG_AFTER_MISSED_DEADLINES`] in a row the server counts as hung: it is killed and goes
    /// through the crash path (restart policy, retries).
    fn on_deadline_missed(&mut self, server_id: ServerId) {
        let server = &mut self.servers[server_id.0 as usize];
        if !server.is_running() || !server.supervisor.on_deadline_missed() {
            return;
        }
        let stderr_tail = server
            .process()
            .map(|process| process.stderr_tail_lines(5).trim().to_owned())
            .unwrap_or_default();
        let reason = EngineError::ServerExited {
            server: server.config.name.clone(),
            status: format!(
                "killed: hung, {HUNG_AFTER_MISSED_DEADLINES} requests in a row timed out"
            ),
            stderr_tail,
        };
        self.fail_server(server_id, reason, false);
    }

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

    fn on_closed(&mut self, server_id: ServerId, reason: process::CloseReason) {
        let server = &mut self.servers[server_id.0 as usize];
        // A restarted process that dies before `initialize` is a crash (it counts toward the
        // restart limit, B20); only a server that never initialized fails at once.
        let startup = server.is_starting() && !server.ever_initialized;
        let Some(process) = (match &mut server.state {
            ServerState::Starting { process, .. } | ServerState::Running { process } => {
                Some(process)
            }
            _ => None,
        }) else {
            return;
        };
        let exit = process.terminate(Duration::from_millis(500));
        let stderr_tail = process.stderr_tail_lines(5);
        let name = server.config.name.clone();
        log::debug!("{name}: stdout closed ({reason:?})");
        let error = if startup {
            let mut message = format!("exited ({exit}) before answering initialize");
            if !stderr_tail.trim().is_empty() {
                message.push_str(": ");
                message.push_str(stderr_tail.trim());
            }
            EngineError::Spawn {
                server: name,
                message,
            }
        } else {
            EngineError::ServerExited {
                server: name,
                status: exit.to_string(),
                stderr_tail: stderr_tail.trim().to_owned(),
            }
        };
        self.fail_server(server_id, error, startup);
    }

    // ----- documents -------------------------------------------------------------------------

    /// Read the file and bring every running server that claims it up to date: `didOpen` for
    /// servers that do not have it, `didChange` (+ `didSave` where asked) for servers holding an
    /// older version.
    fn sync_document(&mut self, path: &Path) -> Result<(), EngineError> {
        let cannot_read = |error: &dyn std::fmt::Display| {
            EngineError::InvalidInput(format!("cannot read {}: {error}", path.display()))
        };
        let metadata = std::fs::metadata(path).map_err(|error| cannot_read(&error))?;
        if !self.documents.unchanged_on_disk(path, &metadata) {
            let read_at = std::time::SystemTime::now();
            let text = read_text_with(path, &metadata, self.options.max_file_size)
                .map_err(|error| cannot_read(&error))?;
            let uri = uri::path_to_uri(path)
                .map_err(|error| EngineError::InvalidInput(error.to_string()))?
                .as_str()
                .to_owned();
            let refresh = self.documents.refresh(path, uri, text);
            self.documents
                .set_stamp(path, DiskStamp::of(&metadata, read_at));
            if refresh == Refresh::Changed {
                // Seed 003: after an edit, the file's diagnostics start over.
                self.store.clear_file(path);
            }
        }
        for index in self.options.config.servers_for_path(path) {
            let server_id = ServerId(index as u32);
            if !self.servers[index].is_running() {
                continue;
            }
            self.open_on_server(server_id, path);
        }
        Ok(())
    }

    fn open_on_server(&mut self, server_id: ServerId, path: &Path) {
        let Some(doc) = self.documents.get_mut(path) else {
            return;
        };
        let server = &self.servers[server_id.0 as usize];
        if !server.is_running() {
            return;
        }
        match doc.open_on.get(&server_id) {
            Some(&(version, _)) if version == doc.version => {}
            Some(_) => {
                server.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": { "uri": doc.uri, "version": doc.version },
                        "contentChanges": [{ "text": &*doc.text }]
                    }),
                );
                if let Some(include_text) = server.save {
                    let mut params = json!({ "textDocument": { "uri": doc.uri } });
                    if include_text {
                        params["text"] = Value::String(doc.text.to_string());
                    }
                    server.notify("textDocument/didSave", params);
                }
                doc.open_on.insert(server_id, (doc.version, Instant::now()));
            }
            None => {
                let language_id = self
                    .options
                    .config
                    .language_id(server_id.0 as usize, path)
                    .unwrap_or("plaintext")
                    .to_owned();
                server.notify(
                    "textDocument/didOpen",
                    json!({
                        "textDocument": {
                            "uri": doc.uri,
                            "languageId": language_id,
                            "version": doc.version,
                            "text": &*doc.text
                        }
                    }),
                );
                doc.open_on.insert(server_id, (doc.version, Instant::now()));
            }
        }
    }

    fn evict_documents(&mut self) {
        for path in self
            .documents
            .eviction_candidates(self.options.max_open_documents)
        {
            let Some(doc) = self.documents.forget(&path) else {
                continue;
            };
            for server_id in doc.open_on.keys() {
                let server = &self.servers[server_id.0 as usize];
                server.notify(
                    "textDocument/didClose",
                    json!({ "textDocument": { "uri": doc.uri } }),
                );
            }
            log::debug!("closed {} (LRU bound)", path.display());
        }
    }

    // ----- requests --------------------------------------------------------------------------

    fn send_request(&mut self, server_id: ServerId, purpose: Purpose) {
        let Some(server) = self.servers.get_mut(server_id.0 as usize) else {
            if let Purpose::Frontend { reply, .. } = purpose {
                let _ = reply.send(Err(EngineError::Gone));
            }
            return;
        };
        if !server.is_running() {
            if let Some(reason) = server.permanent_failure() {
                if let Purpose::Frontend { reply, .. } = purpose {
                    let _ = reply.send(Err(reason));
                }
                return;
            }
            if let Some(at) = server.supervisor.restart_at() {
                // Crashed, restart coming: wait for it (bounded by the request's own deadline).
                self.retries.push(Retry {
                    at,
                    server_id,
                    purpose,
                });
                return;
            }
            // Starting or not started: wait for it.
            let deadline = match &purpose {
                Purpose::Frontend { deadline, .. } => *deadline,
                _ => Instant::now() + Duration::from_secs(30),
            };
            self.ensure_started(server_id);
            self.retries.push(Retry {
                at: deadline.min(Instant::now()),
                server_id,
                purpose,
            });
            return;
        }
        let (method, params) = match &purpose {
            Purpose::Frontend { method, params, .. } => (method.clone(), params.clone()),
            Purpose::Pull { path, .. } => {
                let uri = self
                    .documents
                    .get(path)
                    .map(|doc| doc.uri.clone())
                    .unwrap_or_default();
                (
                    "textDocument/diagnostic".to_owned(),
                    json!({ "textDocument": { "uri": uri } }),
                )
            }
            Purpose::Shutdown => ("shutdown".to_owned(), Value::Null),
        };
        let id = server.next_id();
        server.send(Message::Request(Request {
            id: RequestId::from(id),
            method,
            params,
        }));
        if let Purpose::Pull { path, .. } = &purpose {
            self.pulls_in_flight.insert((server_id, path.clone()));
        }
        self.pending.insert((server_id, id), purpose);
    }

    fn on_response(&mut self, server_id: ServerId, id: i32, result: Result<Value, ResponseError>) {
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
            } => match result {
                Ok(value) => {
                    let _ = reply.send(Ok(value));
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
                        };
                        self.retries.push(Retry {
                            at,
                            server_id,
                            purpose,
                        });
                    } else {
                        let message = if error.code == CONTENT_MODIFIED && attempts > 0 {
                            format!(
                                "server kept reporting content modified after {attempts} retries"
                            )
                        } else {
                            error.message
                        };
                        let _ = reply.send(Err(EngineError::Server {
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
                match result {
                    Ok(report) => self.on_pulled(server_id, &path, version, &report),
                    Err(error) if is_transient(&error) && attempts < MAX_RETRIES => {
                        let at = Instant::now() + FIRST_BACKOFF * 2u32.pow(attempts);
                        let purpose = Purpose::Pull {
                            path,
                            version,
                            attempts: attempts + 1,
                        };
                        self.retries.push(Retry {
                            at,
                            server_id,
                            purpose,
                        });
                    }
                    Err(error) => {
                        log::warn!("{name}: textDocument/diagnostic failed: {}", error.message);
                        self.pulled.insert((server_id, path), version);
                    }
                }
            }
            Purpose::Shutdown => {}
        }
    }

    fn cancel_tagged(&mut self, wanted: u64) {
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
                server.notify("$/cancelRequest", json!({ "id": key.1 }));
                let _ = reply.send(Err(EngineError::Cancelled {
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
                let _ = reply.send(Err(EngineError::Cancelled { server, method }));
            }
        }
    }

    // ----- per turn --------------------------------------------------------------------------

    fn per_turn(&mut self) {
        let now = Instant::now();
        self.fire_startup_deadlines(now);
        self.fire_request_deadlines(now);
        self.fire_restarts(now);
        self.fire_retries(now);
        self.advance_syncs(now);
        self.advance_jobs(now);
        self.evict_documents();
    }

    fn fire_startup_deadlines(&mut self, now: Instant) {
        for index in 0..self.servers.len() {
            let server = &self.servers[index];
            if let ServerState::Starting { deadline, .. } = server.state {
                if now >= deadline {
                    let reason = EngineError::Spawn {
                        server: server.config.name.clone(),
                        message: format!(
                            "no answer to initialize within {} ms",
                            server
                                .config
                                .startup_timeout_ms
                                .unwrap_or(self.options.startup_timeout.as_millis() as u64)
                        ),
                    };
                    let startup = !server.ever_initialized;
                    self.fail_server(ServerId(index as u32), reason, startup);
                }
            }
        }
    }

    fn fire_request_deadlines(&mut self, now: Instant) {
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
            server.notify("$/cancelRequest", json!({ "id": key.1 }));
            let _ = reply.send(Err(EngineError::Timeout {
                server: server.config.name.clone(),
                method,
                after: timeout,
            }));
            self.on_deadline_missed(key.0);
        }
    }

    fn fire_retries(&mut self, now: Instant) {
        let mut waiting = Vec::new();
        for retry in std::mem::take(&mut self.retries) {
            let server = &self.servers[retry.server_id.0 as usize];
            let ready = retry.at <= now && !server.is_starting();
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
                    let _ = reply.send(Err(error));
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

    fn advance_syncs(&mut self, now: Instant) {
        let mut still_waiting = Vec::new();
        for sync in std::mem::take(&mut self.syncs) {
            let indexes = self.options.config.servers_for_path(&sync.path);
            let starting = indexes
                .iter()
                .any(|&index| self.servers[index].is_starting());
            if starting && now < sync.deadline {
                still_waiting.push(sync);
                continue;
            }
            let result = self.finish_sync(&sync.path, &indexes);
            let _ = sync.reply.send(result);
        }
        self.syncs = still_waiting;
    }

    fn finish_sync(
        &mut self,
        path: &Path,
        indexes: &[usize],
    ) -> Result<SyncedDocument, EngineError> {
        let running: Vec<usize> = indexes
            .iter()
            .copied()
            .filter(|&index| self.servers[index].is_running())
            .collect();
        if running.is_empty() {
            let first = &self.servers[indexes[0]];
            return Err(first.failure().unwrap_or(EngineError::Spawn {
                server: first.config.name.clone(),
                message: "still starting when the timeout hit".to_owned(),
            }));
        }
        self.sync_document(path)?;
        let doc = self.documents.get(path).ok_or(EngineError::Gone)?;
        Ok(SyncedDocument {
            path: path.to_path_buf(),
            text: Arc::clone(&doc.text),
            version: doc.version,
            servers: running
                .iter()
                .map(|&index| self.servers[index].info())
                .collect(),
        })
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut deadlines: Vec<Instant> = Vec::new();
        for server in &self.servers {
            if let ServerState::Starting { deadline, .. } = server.state {
                deadlines.push(deadline);
            }
            if server.is_restart_pending() {
                deadlines.extend(server.supervisor.restart_at());
            }
        }
        for purpose in self.pending.values() {
            if let Purpose::Frontend { deadline, .. } = purpose {
                deadlines.push(*deadline);
            }
        }
        deadlines.extend(self.retries.iter().map(|retry| retry.at));
        deadlines.extend(self.syncs.iter().map(|sync| sync.deadline));
        for job in &self.jobs {
            if !job.queue.is_empty() && job.active.len() < FILES_IN_FLIGHT {
                deadlines.push(Instant::now());
            }
            for wait in &job.active {
                deadlines.extend(wait.deadline);
                if wait.deadline.is_none() {
                    deadlines.push(wait.start_deadline);
                }
                for id in &wait.servers {
                    if let Some(state) = self.push_state(*id, &wait.path) {
                        deadlines.extend(push_settle_time(
                            &state,
                            self.options.settle_quiet,
                            self.options.settle_quiet_unversioned,
                        ));
                    }
                }
            }
        }
        deadlines.into_iter().min()
    }
}

/// The error a server given up for good reports: the last crash's status and stderr tail, and
/// how many crashes in a row used up the policy.
fn gave_up(reason: EngineError, crashes: u32) -> EngineError {
    match reason {
        EngineError::ServerExited {
            server,
            status,
            stderr_tail,
        } => EngineError::GaveUp {
            server,
            status,
            crashes,
            stderr_tail,
        },
        EngineError::Spawn { server, message } => EngineError::GaveUp {
            server,
            status: message,
            crashes,
            stderr_tail: String::new(),
        },
        other => other,
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

/// LSP 3.17 `positionEncoding`, else clangd's top-level `offsetEncoding`, else UTF-16.
fn negotiated_encoding(capabilities: &Value, result: &Value) -> PositionEncoding {
    capabilities
        .get("positionEncoding")
        .or_else(|| result.get("offsetEncoding"))
        .and_then(Value::as_str)
        .and_then(PositionEncoding::from_name)
        .unwrap_or(PositionEncoding::Utf16)
}

/// `textDocumentSync.save` (LSP 3.17 §`TextDocumentSyncOptions`): `Some(include_text)` when the
/// server wants `didSave`. A bare `TextDocumentSyncKind` number asks for no saves.
fn save_option(capabilities: &Value) -> Option<bool> {
    match capabilities.pointer("/textDocumentSync/save")? {
        Value::Bool(true) => Some(false),
        Value::Object(options) => Some(
            options
                .get("includeText")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_negotiation_prefers_the_standard_field() {
        let check = |capabilities: Value, result: Value, expected: PositionEncoding| {
            assert_eq!(negotiated_encoding(&capabilities, &result), expected);
        };
        check(
            json!({"positionEncoding": "utf-8"}),
            json!({}),
            PositionEncoding::Utf8,
        );
        check(
            json!({}),
            json!({"offsetEncoding": "utf-8"}),
            PositionEncoding::Utf8,
        );
        check(json!({}), json!({}), PositionEncoding::Utf16);
        check(
            json!({"positionEncoding": "utf-32"}),
            json!({}),
            PositionEncoding::Utf32,
        );
    }

    #[test]
    fn save_option_reads_every_shape() {
        assert_eq!(save_option(&json!({"textDocumentSync": 1})), None);
        assert_eq!(
            save_option(&json!({"textDocumentSync": {"save": true}})),
            Some(false)
        );
        assert_eq!(
            save_option(&json!({"textDocumentSync": {"save": {"includeText": true}}})),
            Some(true)
        );
        assert_eq!(
            save_option(&json!({"textDocumentSync": {"openClose": true}})),
            None
        );
    }

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
