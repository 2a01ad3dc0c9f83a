//! One server's lifecycle: its slot ([`Server`]) and the state machine
//! `NotStarted` -> `Starting` (spawned, `initialize` sent, startup deadline) -> `Running` ->
//! `Failed` (crashed: restart after backoff per the [`Supervisor`] policy, or given up for good).
//!
//! Read top to bottom: start ([`State::ensure_started`]), initialize
//! ([`State::on_initialized`]), fail ([`State::fail_server`]), restart
//! ([`State::fire_restarts`]), hung detection, close ([`State::on_closed`]) and the startup deadline.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lsp_server::{Message, Notification, Request, RequestId, ResponseError};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::super::settle::{PublishInfo, SettleRule};
use super::super::supervisor::{
    CrashDecision, RestartPolicy, Supervisor, HUNG_AFTER_MISSED_DEADLINES,
};
use super::super::watchdog::Watchdog;
use super::super::{
    client_capabilities, configuration_gate, EngineError, EngineOptions, ServerInfo,
};
use super::{Purpose, Retry, State};
use crate::config::ServerConfig;
use crate::diagnostics::Origin;
use crate::process::{self, ServerId, ServerProcess, SpawnSpec};
use crate::text::PositionEncoding;
use crate::transport::Outgoing;
use crate::uri;

/// A server slot: config, process state, negotiated facts.
pub(super) struct Server {
    pub(super) server_id: ServerId,
    pub(super) config: ServerConfig,
    /// The index of `config` in the engine's configuration (equal to `server_id` for the
    /// workspace-root instances, see `instances.rs`).
    pub(super) config_index: usize,
    /// The project root of a project instance; `None` for the workspace-root instance.
    pub(super) project_root: Option<PathBuf>,
    pub(super) workspace_folder: PathBuf,
    pub(super) root_uri: String,
    pub(super) generation: u32,
    pub(super) state: ServerState,
    /// From the first process's `initialize` result.
    pub(super) capabilities: Arc<Value>,
    pub(super) encoding: PositionEncoding,
    /// Pull diagnostics: static `diagnosticProvider` or a dynamic registration.
    pub(super) pull_diagnostics: bool,
    /// `serverInfo.name` from the first process's `initialize` result (LSP 3.17
    /// §`InitializeResult`), which picks the [`SettleRule`] of a server configured under
    /// another name.
    pub(super) server_info_name: Option<String>,
    /// The known program the entry runs, also through a launcher (`config/program.rs`): stands
    /// in for `server_info_name` where a server sends none (bash-language-server,
    /// typescript-language-server) and its entry has another name.
    pub(super) program: Option<crate::config::Program>,
    /// A static `diagnosticProvider`, and the live dynamic registrations of
    /// `textDocument/diagnostic` (pyright registers, re-registers and unregisters at start-up).
    pub(super) static_pull: bool,
    /// Whether it published diagnostics while offering pull (issue 15: rust-analyzer's
    /// `cargo check`), which makes its rule [`SettleRule::PullAndPublish`]. Kept across restarts.
    pub(super) publishes_with_pull: bool,
    pub(super) pull_registrations: BTreeSet<String>,
    /// `textDocumentSync.save` asked for: `Some(include_text)`.
    pub(super) save: Option<bool>,
    pub(super) active_progress: BTreeSet<String>,
    /// Whether the server's last `experimental/serverStatus` (rust-analyzer's extension) said
    /// `quiescent: false`: it is still loading or analysing, which holds settling like
    /// `$/progress` work.
    pub(super) not_quiescent: bool,
    /// The message of the server's last `experimental/serverStatus` when its health was
    /// `error`: rust-analyzer says `Failed to load workspaces.` (a Cargo.toml it cannot
    /// parse) and then analyses no file, publishing nothing, so an empty answer is no clean.
    pub(super) health_error: Option<String>,
    /// The `$/progress` token of gopls's `Error loading workspace` status, whose message is
    /// `health_error` until it ends (`server_health.rs`); not counted as work.
    pub(super) health_error_token: Option<String>,
    /// The flycheck failure of the server's last `experimental/serverStatus` message
    /// (rust-analyzer's `cargo check failed to start: …`): rustc's findings are missing from
    /// every file, so a file is not checked ([`super::server_health::check_failure`]). Also
    /// ruff's settings that it could not resolve ([`super::server_health::settings_failure`]),
    /// until the instance restarts.
    pub(super) check_failure: Option<String>,
    /// Per document: when the server said it gave up checking it, and its words
    /// ([`super::given_up`]); such a file is not checked by it if that came after its sync.
    pub(super) given_up: HashMap<PathBuf, (Instant, String)>,
    /// The `experimental/serverStatus` messages logged so far: each distinct one is logged once.
    pub(super) logged_statuses: crate::engine::server_health::LoggedStatuses,
    /// When `$/progress` or `quiescent` last changed.
    pub(super) last_progress_change: Option<Instant>,
    /// The last publish per document.
    pub(super) publishes: HashMap<PathBuf, PublishInfo>,
    /// Whether the running process has published diagnostics for any document.
    /// typescript-language-server 5.3 sends definitions, hover, references and signature help
    /// to its syntax server, which answers them partially (`import add`, the import line), from
    /// its start until its semantic tsserver's first diagnostics event or finished project load
    /// (`SyntaxRoutingTsServer._projectLoading`); a file in no tsconfig project gets no load
    /// events, so only a diagnostics event, which its publishes follow, ends that (helper-75).
    /// lspc now has it run tsserver's full server alone (`config/tsserver_routing.rs`) unless
    /// the entry sets `tsserver.useSyntaxServer`; the wait stays for an entry that does.
    pub(super) published_since_start: bool,
    /// The units ([`super::super::readiness_scope`]: clangd's compilation databases, gopls's
    /// modules; `None` for files in none) of the files whose readiness wait on the running
    /// process ended by its quiet period. Such a server loads a unit when it first opens a file
    /// of it and may announce that just after the file's publish, so a query's first wait on a
    /// file keeps the quiet period; once one file of a unit has had it, a later file of the same
    /// unit is ready at its own publish, while no `$/progress` is active
    /// ([`super::super::settle::PushState::ready_at_publish`]).
    pub(super) readiness_scopes: Vec<Option<PathBuf>>,
    /// Documents closed and opened again at once (a stale analysis on clangd,
    /// `open_on_server`) whose publish for the close may still come: clangd clears a closed
    /// file's diagnostics without a version, and that empty set describes no open text.
    pub(super) reopened: HashSet<PathBuf>,
    /// Per document: how many times in a row clangd published `fe_pch_file_overridden` for it
    /// and lspc sent it again for a fresh preamble ([`super::server_messages`]); reset by a
    /// publish without it.
    pub(super) stale_preamble_resends: HashMap<PathBuf, u8>,
    /// [`SettleRule::VersionedPublish`] (clangd): documents sent again (a `didChange`, or a close
    /// and open) whose publish for that version has not come. clangd answers queries from the
    /// ASTs and index it had before it rebuilt them, so a query waits for these first
    /// ([`ServerInfo::awaiting_publish`]).
    pub(super) awaiting_publish: HashSet<PathBuf>,
    /// clangd: files changed on disk (announced as watched-file changes) that it has not had
    /// open since ([`ServerInfo::changed_behind_index`]); a file leaves when it is sent open.
    pub(super) changed_behind_index: HashSet<PathBuf>,
    /// The diagnostics of the last publish or full pull per document exactly as the server sent
    /// them (its encoding, `data` kept), for code-action contexts ([`Op::RawDiagnostics`]).
    /// Kept per origin: a server that pulls and pushes for one file has both in force. Each is
    /// its JSON text (about 200 bytes), not a `Value` tree (about 2.5 KiB for one diagnostic
    /// with its range: a `BTreeMap` node per object), since every checked file keeps its own
    /// until the server is gone; [`super::server_messages::parse_raw_diagnostics`] gives the
    /// objects back.
    pub(super) raw_diagnostics: HashMap<(PathBuf, Origin), Vec<Box<RawValue>>>,
    /// Restart policy, crash streak and hung detection (see [`super::supervisor`]).
    pub(super) supervisor: Supervisor,
    /// Whether some process of this server ever answered `initialize`: only then is an exit a
    /// crash under the restart policy; before, it is a startup failure (fails at once).
    pub(super) ever_initialized: bool,
    /// Kills the process group if lspc dies without stopping the server (B26).
    pub(super) watchdog: Option<Watchdog>,
    pub(super) next_request_id: i32,
    /// The stderr tail of the last process that failed, kept for `lsp://servers` and `lspc
    /// servers` once the process is gone (issue 11: it showed `""` after a start-up failure).
    pub(super) failed_stderr_tail: String,
    /// While set, the server counts as starting: documents are not opened on it until its first
    /// `workspace/configuration` request is answered or this deadline passes
    /// (`configuration_gate.rs`).
    pub(super) configuration_hold: Option<Instant>,
    /// Documents the previous process had open, re-opened when the hold ends.
    pub(super) reopen_after_hold: Vec<PathBuf>,
    /// How long after a publish the server may still publish a deeper round for the same
    /// version, added to its quiet period (gopls's `diagnosticsDelay` when its entry sets one,
    /// `config/gopls.rs`); zero for other servers.
    pub(super) deferred_round: std::time::Duration,
    /// Its process's CPU activity, sampled during diagnostics waits under the rules without a
    /// completeness signal ([`super::super::server_cpu`]).
    pub(super) cpu: super::super::server_cpu::CpuActivity,
    /// When its process may have read its configuration files
    /// ([`super::super::configuration_reads`]).
    pub(super) read_moments: super::super::configuration_reads::ReadMoments,
}

pub(super) enum ServerState {
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
    /// The workspace-root slot for `config`, configured server number `server_id`, not
    /// started.
    pub(super) fn new(
        options: &EngineOptions,
        server_id: ServerId,
        config: &ServerConfig,
    ) -> Server {
        Server::new_at(options, server_id, config, server_id.0 as usize, None)
    }

    /// A slot for `config` (configured server `config_index`) serving `project_root`, or the
    /// workspace root when `None`; not started (also used by a configuration reload).
    pub(super) fn new_at(
        options: &EngineOptions,
        server_id: ServerId,
        config: &ServerConfig,
        config_index: usize,
        project_root: Option<PathBuf>,
    ) -> Server {
        let root = options.config.root.clone();
        let workspace_folder = project_root
            .clone()
            .or_else(|| config.workspace_folder.clone())
            .unwrap_or_else(|| root.clone());
        let root_uri = uri::path_to_uri(&workspace_folder)
            .map(|uri| uri.as_str().to_owned())
            .unwrap_or_else(|_| "file:///".to_owned());
        Server {
            server_id,
            config: config.clone(),
            config_index,
            project_root,
            workspace_folder,
            root_uri,
            generation: 0,
            state: ServerState::NotStarted,
            capabilities: Arc::new(Value::Null),
            encoding: PositionEncoding::Utf16,
            pull_diagnostics: false,
            server_info_name: None,
            program: crate::config::Program::of(config),
            static_pull: false,
            publishes_with_pull: false,
            pull_registrations: BTreeSet::new(),
            save: None,
            active_progress: BTreeSet::new(),
            not_quiescent: false,
            health_error: None,
            health_error_token: None,
            check_failure: None,
            given_up: HashMap::new(),
            logged_statuses: Default::default(),
            last_progress_change: None,
            publishes: HashMap::new(),
            published_since_start: false,
            readiness_scopes: Vec::new(),
            reopened: HashSet::new(),
            stale_preamble_resends: HashMap::new(),
            awaiting_publish: HashSet::new(),
            changed_behind_index: HashSet::new(),
            raw_diagnostics: HashMap::new(),
            supervisor: Supervisor::new(options.restart.unwrap_or(RestartPolicy::from_config(
                config.restart_on_crash,
                config.max_restarts,
            ))),
            ever_initialized: false,
            watchdog: None,
            next_request_id: 0,
            failed_stderr_tail: String::new(),
            configuration_hold: None,
            reopen_after_hold: Vec::new(),
            deferred_round: crate::config::gopls::deferred_round(config),
            cpu: Default::default(),
            read_moments: Default::default(),
        }
    }

    /// The project root relative to `workspace_root` (`/`-separated), `None` for the
    /// workspace-root instance.
    pub(super) fn project_label(&self, workspace_root: &std::path::Path) -> Option<String> {
        let root = self.project_root.as_ref()?;
        Some(uri::relative_display(root, workspace_root))
    }

    pub(super) fn process(&self) -> Option<&ServerProcess> {
        match &self.state {
            ServerState::Running { process } | ServerState::Starting { process, .. } => {
                Some(process)
            }
            _ => None,
        }
    }

    /// How this server signals that a document's diagnostics are complete, now (a pull
    /// registration can arrive after `initialized`).
    /// A push server offering `typescript.tsserverRequest` (typescript-language-server under
    /// any name: it sends no `serverInfo`) gets [`SettleRule::ConfirmedUnversionedPublish`].
    pub(super) fn settle_rule(&self) -> SettleRule {
        let rule = SettleRule::for_server(
            &self.config.name,
            self.known_name(),
            self.pull_diagnostics,
            self.publishes_with_pull,
        );
        match rule {
            SettleRule::QuietAfterPublish | SettleRule::QuietAfterUnversionedPublish
                if super::super::tsserver_probe::offered(&self.capabilities) =>
            {
                SettleRule::ConfirmedUnversionedPublish
            }
            rule => rule,
        }
    }

    /// The name that picks per-server rules besides the configured one: the `serverInfo.name`
    /// of the `initialize` result, else the known program the entry runs.
    pub(super) fn known_name(&self) -> Option<&str> {
        self.server_info_name
            .as_deref()
            .or(self.program.map(crate::config::Program::name))
    }

    /// Initialized and ready for documents and requests (not held by the configuration gate).
    pub(super) fn is_running(&self) -> bool {
        self.has_initialized_process() && self.configuration_hold.is_none()
    }

    /// `initialize` answered and the process alive, held or not (shutdown goes to it).
    pub(super) fn has_initialized_process(&self) -> bool {
        matches!(self.state, ServerState::Running { .. })
    }

    /// Waiting for `initialize`, or initialized and held until its configuration was asked for.
    pub(super) fn is_starting(&self) -> bool {
        matches!(self.state, ServerState::Starting { .. })
            || (self.has_initialized_process() && self.configuration_hold.is_some())
    }

    /// Whether the server reports work in progress: an active `$/progress` token, or
    /// `experimental/serverStatus` with `quiescent: false`. A pull answer given meanwhile is
    /// provisional and no publish settles.
    pub(super) fn busy(&self) -> bool {
        !self.active_progress.is_empty() || self.not_quiescent
    }

    pub(super) fn info(&self) -> ServerInfo {
        ServerInfo {
            server_id: self.server_id,
            pid: self.process().map_or(0, |process| process.pid()),
            name: self.config.name.clone(),
            encoding: self.encoding,
            capabilities: Arc::clone(&self.capabilities),
            busy: self.busy(),
            pyright_family: self.runs_pyright(),
            indexed_from_disk: self.program == Some(crate::config::Program::Clangd),
            formatting_off: self.config.formatting_off_reason.clone(),
            awaiting_publish: Vec::new(),
            changed_behind_index: Vec::new(),
        }
    }

    pub(super) fn send(&self, message: Message) {
        if let Some(process) = self.process() {
            if let Message::Notification(notification) = &message {
                self.read_moments.on_notification(&notification.method);
            }
            if process.send(Outgoing::Message(message)).is_err() {
                log::debug!(
                    "{}: writer gone; the reader will report the exit",
                    self.config.name
                );
            }
        }
    }

    /// Request `id` from borrowed parts (no copy of `params`; see
    /// [`crate::process::ServerProcess::send_request`]).
    pub(super) fn send_request(
        &self,
        id: i32,
        method: &str,
        params: &crate::transport::RequestParams,
    ) {
        if let Some(process) = self.process() {
            if process.send_request(id, method, params).is_err() {
                log::debug!(
                    "{}: writer gone; the reader will report the exit",
                    self.config.name
                );
            }
        }
    }

    pub(super) fn notify(&self, method: &str, params: Value) {
        self.send(Message::Notification(Notification {
            method: method.to_owned(),
            params,
        }));
    }

    /// Whether the entry runs pyright-langserver or basedpyright-langserver (also through a
    /// launcher).
    fn runs_pyright(&self) -> bool {
        matches!(
            self.program,
            Some(
                crate::config::Program::PyrightLangserver
                    | crate::config::Program::BasedpyrightLangserver
            )
        )
    }

    /// `$/cancelRequest` for request `id` (LSP 3.17 §`cancelRequest`), except to pyright and
    /// basedpyright: pyright 1.1.414 answers every later `textDocument/references` with
    /// `-32603 … this._token.cancel is not a function` once two in-flight ones were cancelled
    /// (a raw client reproduces it on pallets/flask; a new user's agent found it through MCP
    /// cancellations). lspc drops a cancelled request's answer either way; such a server only
    /// finishes the work.
    pub(super) fn cancel_request(&self, id: i32) {
        if self.runs_pyright() {
            log::debug!(
                "{}: request {id} dropped without $/cancelRequest (pyright's cancellation breaks its references)",
                self.config.name
            );
            return;
        }
        self.notify("$/cancelRequest", json!({ "id": id }));
    }

    pub(super) fn next_id(&mut self) -> i32 {
        self.next_request_id += 1;
        self.next_request_id
    }

    pub(super) fn failure(&self) -> Option<EngineError> {
        match &self.state {
            ServerState::Failed { reason, .. } => Some(reason.clone()),
            _ => None,
        }
    }

    /// The failure, only when it is for good (no restart will come).
    pub(super) fn permanent_failure(&self) -> Option<EngineError> {
        match &self.state {
            ServerState::Failed {
                reason,
                permanent: true,
            } => Some(reason.clone()),
            _ => None,
        }
    }

    /// Crashed and waiting for its backoff to end before restarting.
    pub(super) fn is_restart_pending(&self) -> bool {
        matches!(
            self.state,
            ServerState::Failed {
                permanent: false,
                ..
            }
        ) && self.supervisor.restart_at().is_some()
    }
}

impl State {
    /// Start the server if it has not started yet (seed 000's lazy start), or restart it after a
    /// crash once its backoff is over (see [`Self::fire_restarts`]); a server given up stays down.
    pub(super) fn ensure_started(&mut self, server_id: ServerId) {
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
        // A new process loads its projects anew: each document's project is asked for again,
        // and nothing tsserver or the server said before describes it.
        self.project_files.forget_asked(server_id);
        self.probes.retain(|(id, _), _| *id != server_id);
        let server = &mut self.servers[server_id.0 as usize];
        server.published_since_start = false;
        server.readiness_scopes.clear();
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
        // `initialize` is built first and goes into the stdin pipe before the server starts
        // (see `SpawnSpec::first_message`).
        let initialize_id = server.next_id();
        let params = client_capabilities::initialize_params(
            &server.root_uri,
            &server.workspace_folder,
            server.config.initialization_options.as_ref(),
        );
        let initialize = Request {
            id: RequestId::from(initialize_id),
            method: "initialize".to_owned(),
            params,
        };
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
            transport: server.config.transport,
            first_message: Some(Outgoing::Message(Message::Request(initialize))),
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
        let startup_timeout = server
            .config
            .startup_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(self.options.startup_timeout);
        log::debug!("{}: spawned pid {}", server.config.name, process.pid());
        server.cpu.reset();
        server.read_moments = Default::default();
        server.watchdog = Some(Watchdog::start(&server.config.name, process.pid()));
        if self.options.warn_duplicates {
            super::super::duplicates::register(
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

    pub(super) fn on_initialized(
        &mut self,
        server_id: ServerId,
        result: Result<Value, ResponseError>,
    ) {
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
            server.server_info_name = result
                .pointer("/serverInfo/name")
                .and_then(Value::as_str)
                .map(str::to_owned);
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
        let server = &mut self.servers[server_id.0 as usize];
        server.configuration_hold =
            configuration_gate::holds_opens(&server.config.name, server.known_name())
                .then(|| Instant::now() + configuration_gate::CONFIGURATION_GATE_TIMEOUT);
        // After a restart, re-open what the previous process had open, with current text
        // (once the configuration hold ends, for a held server).
        for path in self.documents.open_on(server_id) {
            if let Some(doc) = self.documents.get_mut(&path) {
                doc.open_on.remove(&server_id);
            }
            if self.servers[server_id.0 as usize]
                .configuration_hold
                .is_some()
            {
                self.servers[server_id.0 as usize]
                    .reopen_after_hold
                    .push(path);
            } else {
                self.open_on_server(server_id, &path);
            }
        }
    }

    /// Ends `server_id`'s configuration hold (its first `workspace/configuration` request was
    /// answered, or `why` says the bound passed) and opens what waited for it.
    pub(super) fn end_configuration_hold(&mut self, server_id: ServerId, why: &str) {
        let server = &mut self.servers[server_id.0 as usize];
        if server.configuration_hold.take().is_none() {
            return;
        }
        log::debug!(
            "{}: documents may be opened now ({why})",
            server.config.name
        );
        for path in std::mem::take(&mut server.reopen_after_hold) {
            self.open_on_server(server_id, &path);
        }
    }

    /// Ends the configuration holds whose bound passed.
    pub(super) fn fire_configuration_holds(&mut self, now: Instant) {
        for index in 0..self.servers.len() {
            if self.servers[index]
                .configuration_hold
                .is_some_and(|until| now >= until)
            {
                self.end_configuration_hold(
                    ServerId(index as u32),
                    "no workspace/configuration request within the bound",
                );
            }
        }
    }

    /// Mark a server failed and stop its process. A `startup` failure (the server never
    /// answered `initialize`) is permanent at once: no restart loop (B20). A crash after a
    /// successful `initialize` goes to the restart policy ([`Supervisor::on_crash`]): with a
    /// restart coming, requests in flight wait for the new process and are sent again once (B24);
    /// without one, the server is given up for good and everything waiting on it fails now with
    /// [`EngineError::GaveUp`].
    pub(super) fn fail_server(&mut self, server_id: ServerId, reason: EngineError, startup: bool) {
        let now = Instant::now();
        let server = &mut self.servers[server_id.0 as usize];
        if let ServerState::Starting { process, .. } | ServerState::Running { process } =
            &mut server.state
        {
            process.terminate(Duration::from_millis(200));
            server.failed_stderr_tail = process.stderr_tail_lines(20);
        }
        if let Some(mut watchdog) = server.watchdog.take() {
            watchdog.disarm();
        }
        server.configuration_hold = None;
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
        server.not_quiescent = false;
        server.health_error = None;
        server.health_error_token = None;
        server.check_failure = None;
        server.given_up.clear();
        server.publishes.clear();
        server.published_since_start = false;
        server.readiness_scopes.clear();
        server.reopened.clear();
        server.stale_preamble_resends.clear();
        server.awaiting_publish.clear();
        server.raw_diagnostics.clear();
        self.pulled.retain(|(id, _), _| *id != server_id);
        self.pulls_in_flight.retain(|(id, _)| *id != server_id);
        self.provisional_pulls.retain(|(id, _)| *id != server_id);
        self.stale_pulls.retain(|(id, _)| *id != server_id);
        // tsserver's answers describe the process that is gone (helper-75: the new process's
        // readiness waits took them, and a hover after a kill answered `import fn6`).
        self.probes.retain(|(id, _), _| *id != server_id);
        // Requests in flight: retried once on the next process, or failed now.
        for mut purpose in self.take_pending_of(server_id) {
            if let (
                Purpose::Frontend {
                    method,
                    crash_retried: crash_retried @ false,
                    ..
                },
                Some(at),
            ) = (&mut purpose, restart_at)
            {
                log::info!(
                    "{method} was in flight when the server crashed: retrying it once, after \
                     its document's analysis on the new process"
                );
                *crash_retried = true;
                self.retries
                    .push(Retry::on_next_process(at, server_id, purpose));
                continue;
            }
            match (purpose, restart_at) {
                (Purpose::Frontend { reply, .. }, _) => {
                    reply.send(Err(reason.clone()));
                }
                (Purpose::Pull { path, version, .. }, Some(at)) => {
                    let purpose = Purpose::Pull {
                        path,
                        version,
                        attempts: 0,
                    };
                    self.retries.push(Retry::new(at, server_id, purpose));
                }
                (
                    Purpose::Pull { .. }
                    | Purpose::Shutdown
                    | Purpose::Probe { .. }
                    | Purpose::ReloadProjects
                    | Purpose::ProjectFiles { .. },
                    _,
                ) => {}
            }
        }
    }

    /// Start servers whose restart backoff has ended.
    pub(super) fn fire_restarts(&mut self, now: Instant) {
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
    pub(super) fn on_deadline_missed(&mut self, server_id: ServerId) {
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

    pub(super) fn on_closed(&mut self, server_id: ServerId, reason: process::CloseReason) {
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
            // The whole kept tail, not its last lines: with RUST_BACKTRACE=1 rustup's proxy
            // prints its `error: Unknown binary …` above a 20-line backtrace.
            let stderr = process.stderr_tail();
            if let Some(cause) = crate::failure_text::meaningful_line(&stderr) {
                message.push_str(": ");
                message.push_str(cause);
            }
            EngineError::Spawn {
                server: name,
                message,
            }
        } else {
            // The last lines, under the cause when the cause is above them (a panic's
            // message above its backtrace).
            let mut tail = stderr_tail.trim().to_owned();
            let stderr = process.stderr_tail();
            if let Some(cause) = crate::failure_text::meaningful_line(&stderr) {
                if !tail.contains(cause) {
                    tail = format!("{cause}\n…\n{tail}");
                }
            }
            EngineError::ServerExited {
                server: name,
                status: exit.to_string(),
                stderr_tail: tail,
            }
        };
        self.fail_server(server_id, error, startup);
    }

    pub(super) fn fire_startup_deadlines(&mut self, now: Instant) {
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
}
