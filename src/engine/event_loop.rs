//! The event loop: one thread, one wait (a park on its doorbell), all state.
//!
//! Each turn handles one event (an [`Op`] from a frontend, a [`ServerEvent`] from a reader thread,
//! a signal, or a timer), drains whatever else is immediately ready, then does the per-turn work
//! once: start what waits for servers, check settled diagnostics, fire deadlines and retries, and
//! evict documents beyond the LRU bound.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{never, Receiver, TryRecvError};
use serde_json::Value;

use super::documents::Documents;
use super::settle::{push_settle_time, pushed_part_settle_time, SettleRule};
use super::{BuiltRequest, EngineOptions, Op, ServerStatus};
use crate::diagnostics::{DiagnosticStore, Origin};
use crate::doorbell::Bell;
use crate::process::{ServerEvent, ServerId, ServerProcess};
use crate::text::LineIndex;

// Safe edits (issue 5): applying `WorkspaceEdit`s in the loop and re-syncing the servers.
#[path = "edit_sync.rs"]
mod edit_sync;
// MCP/frontend support (passive diagnostics, event subscriptions, snapshots).
#[path = "frontend_events.rs"]
pub(super) mod frontend_events;
// Configuration reload (issue 4): `Op::Reload`; restarts for changed project configuration
// files (`Op::FilesChanged`).
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
// One server's lifecycle: start, initialize, fail, restart, close.
#[path = "lifecycle.rs"]
mod lifecycle;
// Request bookkeeping: send, route answers, retry, deadlines, cancel.
#[path = "requests.rs"]
mod requests;
// Document sync: didOpen/didChange/didSave/didClose and `Op::Sync`.
#[path = "document_sync.rs"]
mod document_sync;
// Per-project server instances: which slot serves a file (issue 17).
#[path = "instances.rs"]
mod instances;

use diagnostics_wait::DiagnosticsJob;

use document_sync::{PendingSync, SyncReply};
use lifecycle::{Server, ServerState};
use requests::{Purpose, Retry, RetryGate};

/// How many server messages may wait for the loop. Bounded so that a flood (100,000
/// `publishDiagnostics` in a burst) holds at most this many decoded messages in memory: the
/// reader thread then waits, and the server with it. This cannot deadlock, because the loop never
/// blocks on a reader: it only sends to the writers' unbounded channels (STYLE.md habit 2). At
/// worst `ServerProcess::terminate` waits its bounded join for a reader stuck on a full channel.
const SERVER_EVENT_CAPACITY: usize = 4096;

/// What woke the loop: the next input, by priority (signal, then op, then server event).
enum Input {
    Op(Op),
    /// Every [`crate::doorbell::LoopSender`] of ops is gone: the frontends have finished.
    OpsClosed,
    Event(ServerEvent),
    Signal(i32),
    /// `deadline` passed with nothing queued.
    Deadline,
}

/// Takes the next queued input, parking (on the loop's [`Bell`]) until one is queued or
/// `deadline` passes. Checks every receiver before each park, so a send that lands meanwhile
/// unparks it at once (see [`crate::doorbell`]); spurious wakes only re-check.
fn next_input(
    op_receiver: &Receiver<Op>,
    event_receiver: &Receiver<ServerEvent>,
    signal_receiver: &Receiver<i32>,
    deadline: Instant,
) -> Input {
    loop {
        match signal_receiver.try_recv() {
            Ok(signal) => return Input::Signal(signal),
            // The signal thread stopped (it logs why): act as on SIGTERM, as before.
            Err(TryRecvError::Disconnected) => return Input::Signal(libc_sigterm()),
            Err(TryRecvError::Empty) => {}
        }
        match op_receiver.try_recv() {
            Ok(op) => return Input::Op(op),
            Err(TryRecvError::Disconnected) => return Input::OpsClosed,
            Err(TryRecvError::Empty) => {}
        }
        // The loop holds a sender of its own events, so this channel never disconnects.
        if let Ok(event) = event_receiver.try_recv() {
            return Input::Event(event);
        }
        let now = Instant::now();
        if now >= deadline {
            return Input::Deadline;
        }
        std::thread::park_timeout(deadline - now);
    }
}

pub(super) fn run(options: EngineOptions, bell: Bell, op_receiver: Receiver<Op>) {
    super::reply::mark_serving_ops();
    bell.attach_current();
    let (event_sender, event_receiver) = bell.bounded(SERVER_EVENT_CAPACITY);
    // Unbounded: each entry is a few words, and the frontend's next op drains them.
    let (delivered_sender, delivered_receiver) = crossbeam_channel::unbounded();
    let senders = crate::process::EventSenders {
        events: event_sender,
        delivered: delivered_sender,
    };
    // A frontend that handles signals itself gets them all (each goes to one receiver).
    let signals = options.handle_signals.then(crate::signals::install);
    let signal_receiver = match signals {
        None => never(),
        Some(Ok(receiver)) => {
            bell.ring_on_signals();
            receiver
        }
        Some(Err(error)) => {
            log::warn!("cannot install signal handlers: {error}");
            never()
        }
    };
    let mut state = State::new(options, senders, delivered_receiver);
    loop {
        // Before the deadlines: a delivered request has none left.
        state.drain_delivered();
        state.documents.next_turn();
        let deadline = state
            .next_deadline()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        match next_input(&op_receiver, &event_receiver, &signal_receiver, deadline) {
            Input::Op(Op::Shutdown { reply }) => {
                state.shutdown_all(&event_receiver);
                let _ = reply.send(());
                return;
            }
            // Needs the event receiver: stopping servers waits for their answers.
            Input::Op(Op::Reload { config, reply }) => {
                let _ = reply.send(state.reload(config, &event_receiver));
            }
            // Needs it too: a server that reads a changed configuration file late is restarted.
            Input::Op(Op::FilesChanged { changes, rewritten }) => {
                state.files_changed(changes, &rewritten, &event_receiver);
            }
            Input::Op(op) => state.handle_op(op),
            Input::OpsClosed => {
                state.shutdown_all(&event_receiver);
                return;
            }
            Input::Event(event) => state.handle_server_event(event),
            Input::Signal(signal) => {
                log::info!("received signal {signal}: shutting the servers down");
                // Told first, so the frontend knows the answers shutting down gives are partial.
                let interrupted_sender = state.options.interrupted_sender.clone();
                if let Some(sender) = &interrupted_sender {
                    let _ = sender.send(signal);
                }
                state.shutdown_all(&event_receiver);
                if interrupted_sender.is_some() {
                    return;
                }
                std::process::exit(128 + signal);
            }
            Input::Deadline => {}
        }
        // Coalesce: handle what is already queued (bounded), then do the per-turn work once.
        let turn_end = Instant::now() + Duration::from_millis(5);
        while Instant::now() < turn_end {
            match event_receiver.try_recv() {
                Ok(event) => state.handle_server_event(event),
                Err(_) => break,
            }
        }
        state.drain_delivered();
        state.flush_publishes();
        state.per_turn();
    }
}

fn libc_sigterm() -> i32 {
    15
}

struct State {
    options: EngineOptions,
    event_sender: crate::process::EventSenders,
    /// [`ServerEvent::Delivered`] of every server, drained by [`State::drain_delivered`].
    delivered_receiver: Receiver<ServerEvent>,
    /// Slots: one per configured server (its workspace-root instance), then project instances
    /// ([`instances`]); a [`ServerId`] is an index here.
    servers: Vec<Server>,
    instances: instances::Instances,
    /// The canonical workspace root (project roots are never above it).
    workspace_root: PathBuf,
    documents: Documents,
    store: DiagnosticStore,
    /// Pulled diagnostics per (server, path): the version they answer.
    pulled: HashMap<(ServerId, PathBuf), i32>,
    /// `textDocument/diagnostic` requests in flight, so each (server, path) has at most one.
    pulls_in_flight: HashSet<(ServerId, PathBuf)>,
    /// Pull answers given while their server reported `$/progress` work: not final, asked
    /// again once the work ends ([`super::SettleRule::Pull`]).
    provisional_pulls: HashSet<(ServerId, PathBuf)>,
    /// Pulls in flight when their server sent `workspace/diagnostic/refresh`: their answers
    /// are out of date and are dropped for a new pull.
    stale_pulls: HashSet<(ServerId, PathBuf)>,
    /// The last `typescript.tsserverRequest` confirmation per (server, document)
    /// (`tsserver_probe.rs`).
    probes: HashMap<(ServerId, PathBuf), super::tsserver_probe::Probe>,
    /// The files of tsserver's projects, for the watches (`tsserver_project_files.rs`).
    project_files: super::tsserver_project_files::ProjectFiles,
    /// Per clangd workspace folder, whether its files make a C project
    /// ([`crate::project::c_header::is_c_project`]); walked once, on its first `.h`.
    c_projects: HashMap<PathBuf, bool>,
    /// Requests in flight to the servers, by lspc's own request ids (so the unkeyed
    /// [`crate::fast_hash::FastMap`]).
    pending: crate::fast_hash::FastMap<(ServerId, i32), Purpose>,
    retries: Vec<Retry>,
    syncs: Vec<PendingSync>,
    jobs: Vec<DiagnosticsJob>,
    /// Texts of files servers published for but lspc never opened, for column conversion.
    disk_texts: HashMap<PathBuf, (Arc<str>, Arc<LineIndex>)>,
    /// `publishDiagnostics` received this turn, latest per (server, uri), with arrival time: a
    /// flood of publishes is converted once per document per turn, not once per message.
    pending_publishes: super::pending_publishes::PendingPublishes,
    /// Publishes without a usable `uri`, kept in order so they are reported (and dropped) once.
    pending_malformed_publishes: Vec<(ServerId, Value)>,
    shutting_down: bool,
    /// Edits servers applied through `workspace/applyEdit` ([`Op::ServerEdits`]).
    server_edits: edit_sync::ServerEditLog,
    /// The files lspc's own edits wrote, by edit generation ([`Op::ApplyEdit`]'s `based_on`).
    written: edit_sync::WrittenFiles,
    frontend: frontend_events::FrontendHub,
}

impl State {
    fn new(
        options: EngineOptions,
        event_sender: crate::process::EventSenders,
        delivered_receiver: Receiver<ServerEvent>,
    ) -> State {
        let servers = options
            .config
            .servers
            .iter()
            .enumerate()
            .map(|(index, config)| Server::new(&options, ServerId(index as u32), config))
            .collect();
        let instances = instances::Instances::new(options.config.servers.len());
        let workspace_root = crate::uri::canonical(&options.config.root);
        State {
            options,
            event_sender,
            delivered_receiver,
            servers,
            instances,
            workspace_root,
            documents: Documents::default(),
            store: DiagnosticStore::default(),
            pulled: HashMap::new(),
            pulls_in_flight: HashSet::new(),
            provisional_pulls: HashSet::new(),
            stale_pulls: HashSet::new(),
            probes: HashMap::new(),
            project_files: Default::default(),
            c_projects: HashMap::new(),
            pending: Default::default(),
            retries: Vec::new(),
            syncs: Vec::new(),
            jobs: Vec::new(),
            disk_texts: HashMap::new(),
            pending_publishes: Default::default(),
            pending_malformed_publishes: Vec::new(),
            shutting_down: false,
            server_edits: edit_sync::ServerEditLog::default(),
            written: edit_sync::WrittenFiles::default(),
            frontend: frontend_events::FrontendHub::default(),
        }
    }

    // ----- ops -------------------------------------------------------------------------------

    /// The bookkeeping of answers the readers already handed to their callers: done before
    /// anything else the loop handles (ops, server events, deadlines, shutdown), so it is
    /// never out of date when it matters, without a wake-up per answer.
    pub(super) fn drain_delivered(&mut self) {
        while let Ok(event) = self.delivered_receiver.try_recv() {
            self.handle_server_event(event);
        }
    }

    fn handle_op(&mut self, op: Op) {
        self.drain_delivered();
        if matches!(
            op,
            Op::Diagnostics { .. }
                | Op::DiagnosticsLeavingOut { .. }
                | Op::AnalysisWait { .. }
                | Op::Sync { .. }
                | Op::SyncRequest { .. }
        ) {
            self.resync_changed_documents();
        }
        match op {
            Op::Diagnostics {
                paths,
                timeout,
                reply,
            } => {
                let (leave_out, why_left_out) = self.never_checked(&paths);
                let mut job = DiagnosticsJob::new(paths, leave_out, timeout, reply);
                job.why_left_out = why_left_out;
                job.start_within_timeout = true;
                job.resend_stale = true;
                job.fail_where_a_server_cannot_start(&self.options.config);
                self.jobs.push(job);
            }
            Op::DiagnosticsLeavingOut {
                paths,
                leave_out,
                timeout,
                progress,
                reply,
            } => {
                let (never_checked, why_left_out) = self.never_checked(&paths);
                let mut leave_out = leave_out;
                for (path, servers) in never_checked {
                    let left_out = leave_out.entry(path).or_default();
                    for server in servers {
                        if !left_out.contains(&server) {
                            left_out.push(server);
                        }
                    }
                }
                let mut job = DiagnosticsJob::new(paths, leave_out, timeout, reply);
                job.why_left_out = why_left_out;
                job.progress = progress;
                self.jobs.push(job);
            }
            Op::AnalysisWait {
                path,
                timeout,
                reply,
            } => {
                self.jobs
                    .push(DiagnosticsJob::analysis(path, timeout, reply));
            }
            Op::Sync {
                path,
                timeout,
                reply,
            } => {
                if let Err(error) = self.start_servers_for(&path) {
                    let _ = reply.send(Err(error));
                    return;
                }
                self.syncs.push(PendingSync {
                    path,
                    deadline: Instant::now() + timeout,
                    reply: SyncReply::Document(reply),
                });
            }
            Op::SyncRequest {
                path,
                timeout,
                build,
                instant,
            } => {
                let servers = match self.start_servers_for(&path) {
                    Ok(servers) => servers,
                    Err(error) => {
                        let _ = build(Err(&error));
                        return;
                    }
                };
                let deadline = Instant::now() + timeout;
                // Running servers: sync and send now, in this turn (the common case). A server
                // starting, or restarting after a crash (500 ms and more), is waited for.
                let starting = servers.iter().copied().find(|&index| {
                    self.servers[index].is_starting() || self.servers[index].is_restart_pending()
                });
                if let (Some(index), true) = (starting, instant) {
                    let _ = build(Err(&super::EngineError::StillStarting {
                        server: self.servers[index].config.name.clone(),
                    }));
                } else if starting.is_some() {
                    self.syncs.push(PendingSync {
                        path,
                        deadline,
                        reply: SyncReply::Request(build),
                    });
                } else {
                    let result = self.finish_sync(&path, &servers);
                    self.answer_sync(result, SyncReply::Request(build));
                }
            }
            Op::Request {
                server_id,
                method,
                params,
                timeout,
                retry,
                tag,
                reply,
                document,
            } => {
                let document = document.filter(|path| self.resync_for_request(server_id, path));
                self.send_frontend_request(
                    BuiltRequest {
                        server_id,
                        method,
                        params: params.into(),
                        timeout,
                        retry,
                        tag,
                        reply: super::ReplyTo::Channel(reply),
                        on_sent: None,
                    },
                    document,
                );
            }
            Op::Cancel { tag } => self.cancel_tagged(tag),
            Op::ApplyEdit {
                edit,
                encoding,
                mode,
                based_on,
                reply,
            } => {
                let _ = reply.send(self.apply_edit(&edit, encoding, mode, based_on));
            }
            Op::ServerEdits { reply } => {
                let _ = reply.send(self.server_edits.entries());
            }
            Op::Status { reply } => {
                let _ = reply.send(self.status());
            }
            Op::RunningServers { reply } => {
                let running = self
                    .servers
                    .iter()
                    .filter(|server| server.is_running())
                    .map(|server| server.info())
                    .collect();
                let _ = reply.send(running);
            }
            Op::RawDiagnostics { path, reply } => {
                let raw = self
                    .servers
                    .iter()
                    .filter_map(|server| {
                        let pulled = server.raw_diagnostics.get(&(path.clone(), Origin::Pulled));
                        let published = server
                            .raw_diagnostics
                            .get(&(path.clone(), Origin::Published));
                        if pulled.is_none() && published.is_none() {
                            return None;
                        }
                        let diagnostics = pulled.into_iter().chain(published).flatten();
                        Some((
                            server.server_id,
                            server_messages::parse_raw_diagnostics(diagnostics),
                        ))
                    })
                    .collect();
                let _ = reply.send(raw);
            }
            Op::Shutdown { .. } | Op::Reload { .. } | Op::FilesChanged { .. } => {
                unreachable!("handled by the loop")
            }
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
                    ServerState::Running { .. } if server.configuration_hold.is_some() => {
                        "starting (waiting for its workspace/configuration request)".to_owned()
                    }
                    ServerState::Running { .. } if !server.busy() => "running".to_owned(),
                    ServerState::Running { .. } => "running (busy)".to_owned(),
                    ServerState::Failed {
                        reason,
                        permanent: false,
                    } => format!("restarting after a crash: {reason}"),
                    ServerState::Failed { reason, .. } => format!("failed: {reason}"),
                };
                ServerStatus {
                    name: server.config.name.clone(),
                    project: server.project_label(&self.workspace_root),
                    state,
                    pid: server.process().map(ServerProcess::pid),
                    restarts: server.supervisor.total_restarts(),
                    stderr_tail: server
                        .process()
                        .map(|process| process.stderr_tail_lines(20))
                        .unwrap_or_else(|| server.failed_stderr_tail.clone()),
                    failure: server.failure().map(|error| error.detail()),
                    open_documents: self.documents.open_on(server.server_id).len(),
                    settle_rule: server.settle_rule(),
                }
            })
            .collect()
    }

    // ----- per turn --------------------------------------------------------------------------

    fn per_turn(&mut self) {
        let now = Instant::now();
        self.fire_startup_deadlines(now);
        self.fire_configuration_holds(now);
        self.fire_request_deadlines(now);
        self.fire_restarts(now);
        self.fire_retries(now);
        self.advance_syncs(now);
        self.advance_jobs(now);
        self.evict_documents();
    }

    fn next_deadline(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut deadlines: Vec<Instant> = Vec::new();
        for server in &self.servers {
            if let ServerState::Starting { deadline, .. } = server.state {
                deadlines.push(deadline);
            }
            if server.is_restart_pending() {
                deadlines.extend(server.supervisor.restart_at());
            }
            deadlines.extend(server.configuration_hold);
        }
        for purpose in self.pending.values() {
            if let Purpose::Frontend { deadline, .. } = purpose {
                deadlines.push(*deadline);
            }
        }
        for retry in &self.retries {
            match (&retry.gate, &retry.purpose) {
                // The analysis's end (in a turn) or the request's deadline sends it; the retry's
                // `at` is past and would spin the loop.
                (RetryGate::Waiting(done), Purpose::Frontend { deadline, .. })
                    if done.is_empty() =>
                {
                    deadlines.push(*deadline)
                }
                _ => deadlines.push(retry.at),
            }
        }
        deadlines.extend(self.syncs.iter().map(|sync| sync.deadline));
        for job in &self.jobs {
            if job.may_start_next() {
                deadlines.push(Instant::now());
            }
            for wait in &job.active {
                deadlines.extend(wait.deadline);
                if wait.deadline.is_none() {
                    deadlines.push(wait.start_deadline);
                }
                // A settled server's settle time is past: it must not wake the loop at once.
                for id in wait.servers.iter().filter(|id| !wait.done.contains_key(id)) {
                    if let Some(state) = self.push_state(*id, wait) {
                        let server = &self.servers[id.0 as usize];
                        if server.pull_diagnostics {
                            // The pull answer is an event; only a pushed part's quiet period
                            // still to come is a deadline (a past one would spin the loop).
                            if server.settle_rule() == SettleRule::PullAndPublish {
                                deadlines.extend(
                                    pushed_part_settle_time(&state, self.options.settle_quiet)
                                        .filter(|&at| at > now),
                                );
                            }
                            continue;
                        }
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
