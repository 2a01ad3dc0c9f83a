//! The engine: one event loop that owns every language server, open document and diagnostic.
//!
//! Shape (see `STYLE.md`): per server a reader, a writer and a stderr thread ([`crate::process`])
//! feed one event channel (a [`crate::doorbell::LoopSender`], which wakes the parked loop);
//! frontends (the `check` command, queries, batch, MCP) talk to the
//! loop by sending an [`Op`] carrying its own reply channel. The loop thread is the only owner of
//! state: no `Mutex` guards documents, versions or diagnostics.
//!
//! Invariants:
//! - A server is started lazily, the first time a file with one of its extensions is needed.
//! - Every server-to-client request is answered (see [`server_requests`]).
//! - A document has one version across servers; it only grows. At most
//!   [`EngineOptions::max_open_documents`] documents are open (LRU, `didClose` on eviction).
//! - Diagnostics published for a version older than the document's current one are dropped.
//! - Every server process is shut down (`shutdown`, `exit`, then signals) before the loop returns,
//!   on every path, including SIGINT/SIGTERM.

mod client_capabilities;
mod configuration_gate;
mod configuration_reads;
pub use configuration_gate::opens_note;
mod document_watch;
mod documents;
pub(crate) use documents::read_regular_file;
mod duplicates;
mod event_loop;
mod given_up;
mod instance_gate;
mod mailbox;
mod not_analysed;
mod pending_publishes;
pub use mailbox::{mailbox, Mailbox, MailboxSender};
mod readiness_scope;
mod reply;
mod server_cpu;
mod server_health;
pub use reply::{
    mark_serving_ops, serves_ops, AnswerBody, AnswerContinuation, AnswerOnce, ReplyTo,
};
pub mod server_requests;
mod settle;
mod tsserver_probe;
mod tsserver_project_files;
mod tsserver_reload;
pub use settle::SettleRule;

/// Whether a server's capabilities are typescript-language-server's: it offers
/// `workspace/executeCommand` `typescript.tsserverRequest`.
pub fn is_typescript_language_server(capabilities: &Value) -> bool {
    tsserver_probe::offered(capabilities)
}
pub mod supervisor;
mod watchdog;
pub use watchdog::{prepare as prepare_watchdog, WatchdogHold};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::diagnostics::Diagnostic;
use crate::doorbell::LoopSender;
use crate::process::ServerId;
use crate::text::PositionEncoding;
pub use supervisor::RestartPolicy;

/// The longest a file's analysis is waited for before a question's first request about it on a
/// server process (`query::wait_analysed`, and a request sent again to a restarted server,
/// which waits for its document's analysis there). Loading a TypeScript project took 10 s on a
/// loaded 2-core machine; a server that never publishes costs this once per file and process.
pub const ANALYSIS_WAIT: Duration = Duration::from_secs(20);

/// `--session auto|never|always` (also `LSPC_SESSION`): where a command's engine runs
/// (`crate::session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionMode {
    /// Use the workspace's running session if there is one, else run in process (the default).
    #[default]
    Auto,
    /// Always run in process.
    Never,
    /// Use the workspace's session, starting it when none runs.
    Always,
    /// This process is the session (`LSPC_SESSION=serve`, set only by lspc when it starts one).
    Serve,
}

impl std::str::FromStr for SessionMode {
    type Err = String;

    /// `auto`, `never` or `always`; `serve` is reserved for the session process lspc starts.
    fn from_str(value: &str) -> Result<SessionMode, String> {
        match value {
            "auto" => Ok(SessionMode::Auto),
            "never" => Ok(SessionMode::Never),
            "always" => Ok(SessionMode::Always),
            "serve" => Ok(SessionMode::Serve),
            other => Err(format!(
                "--session: expected auto, never or always, got {other:?}"
            )),
        }
    }
}

/// Settings of one engine run. Durations are wall-clock.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub config: Config,
    /// How long a server may take from spawn to its `initialize` result when its config sets no
    /// `startupTimeout`.
    pub startup_timeout: Duration,
    /// How long `shutdown` may take before lspc sends `exit` anyway (config `shutdownTimeout`
    /// overrides it per server).
    pub shutdown_timeout: Duration,
    /// Quiet period after the last versioned publish before diagnostics count as settled.
    pub settle_quiet: Duration,
    /// Quiet period after an unversioned publish: such a publish may describe older text (B16), so
    /// lspc waits longer for a fresher one.
    pub settle_quiet_unversioned: Duration,
    /// The LRU bound on open documents (seed 000: 50).
    pub max_open_documents: usize,
    /// Files larger than this many bytes are not sent to servers.
    pub max_file_size: u64,
    /// `--restart never|always|N`: overrides every server's `restartOnCrash`/`maxRestarts` when
    /// set; `None` uses each server's config (default 3 restarts per streak).
    pub restart: Option<RestartPolicy>,
    /// Warn when another lspc process runs the same server for the same workspace (issue 6).
    pub warn_duplicates: bool,
    /// When set, a caught SIGINT/SIGTERM/SIGHUP shuts the servers down, is sent here (its
    /// number), and the loop ends, so the frontend can say what was complete (`lspc check`:
    /// "interrupted after N of M files"); when `None` the process exits with 128 + signal.
    pub interrupted_sender: Option<Sender<i32>>,
    /// Whether the loop acts on SIGINT/SIGTERM/SIGHUP itself (shut every server down, then exit
    /// the process with 128 + the signal). A frontend with its own clean-up (`lspc ide` removes
    /// its lock file) sets `false`, takes the signals from [`crate::signals::install`] and sends
    /// [`Op::Shutdown`].
    pub handle_signals: bool,
    /// Where the engine runs: in this process, or in the workspace's warm session
    /// (`crate::session`; `--session`, `LSPC_SESSION`). [`EngineOptions::new`] runs in process.
    pub session: SessionMode,
    /// What `config` was loaded from, when it came from [`crate::config::load`] unchanged (every
    /// command's [`crate::options::engine_options`]); `None` for a configuration built another
    /// way (`lspc mcp --server-command`, tests). A session is keyed by these sources rather than
    /// by the loaded servers, and reloads when the files change (`crate::session::reload`).
    pub config_sources: Option<crate::config::ConfigOptions>,
    /// Whether every diagnostic set is also queued for passive delivery ([`Op::DrainPassive`],
    /// seed 000's drain after each tool call). On by default; `lspc check` and `lspc batch`,
    /// which never drain, turn it off: the queue would keep a copy of every file's diagnostics
    /// until the end (issue 15, memory per file). Queues opened with [`Op::OpenPassive`]
    /// collect either way, and a session's engine always queues (an MCP client may share it).
    pub passive_delivery: bool,
}

impl EngineOptions {
    /// Defaults from the seeds: 50 open documents, 250 ms quiet period.
    pub fn new(config: Config) -> EngineOptions {
        EngineOptions {
            config,
            startup_timeout: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(2),
            settle_quiet: Duration::from_millis(250),
            settle_quiet_unversioned: Duration::from_millis(1500),
            max_open_documents: 50,
            max_file_size: 10 * 1024 * 1024,
            restart: None,
            interrupted_sender: None,
            warn_duplicates: true,
            handle_signals: true,
            session: SessionMode::Never,
            config_sources: None,
            passive_delivery: true,
        }
    }
}

/// What [`Op::SyncRequest`] runs in the loop on the synced document (or the sync's error).
pub type RequestBuilder =
    Box<dyn FnOnce(Result<&SyncedDocument, &EngineError>) -> Option<BuiltRequest> + Send>;

/// The request an [`Op::SyncRequest`] builder asks the loop to send, with the fields of
/// [`Op::Request`], except that the answer may go to a continuation ([`ReplyTo`]).
pub struct BuiltRequest {
    pub server_id: ServerId,
    pub method: String,
    pub params: crate::transport::RequestParams,
    pub timeout: Duration,
    pub retry: bool,
    pub tag: Option<u64>,
    pub reply: ReplyTo,
    /// Run by the loop (or a session's proxy) once it has taken the request: written to the
    /// server, or queued for a retry. The answer may already have come, on another thread.
    pub on_sent: Option<Box<dyn FnOnce() + Send>>,
}

/// A request from a frontend to the loop. Each carries the channel its answer goes to; the loop
/// answers every op exactly once (dropping the sender counts as "engine gone").
pub enum Op {
    /// Settled diagnostics for each file (canonical absolute paths), from every server that claims
    /// it and has diagnostics enabled, except a server that never checks it (ruff and a file in
    /// its `exclude`, [`crate::project::ProjectFiles::never_checks`]): a file no other server
    /// checks is `NotChecked`, saying why. Each file's wait is bounded by `timeout`, counted from
    /// the moment its servers are running and the document is synced.
    Diagnostics {
        paths: Vec<PathBuf>,
        timeout: Duration,
        reply: Sender<Vec<FileDiagnostics>>,
    },
    /// [`Op::Diagnostics`] for one file as a query's readiness wait: the same, except that every
    /// push server's settle keeps its quiet period (clangd starts its background index just
    /// after the publish that ends a diagnostics wait at once, and a cross-file query asked
    /// before that work shows finds nothing), on clangd only for the first file of each
    /// compilation database on the running process: a later file of a database already waited
    /// for settles at its publish while no `$/progress` is active.
    AnalysisWait {
        path: PathBuf,
        timeout: Duration,
        reply: Sender<Vec<FileDiagnostics>>,
    },
    /// [`Op::Diagnostics`] where some servers are left out of some files (`lspc check`: a file
    /// outside pyright's `include` still gets ruff, issue 10). `leave_out` maps a canonical path
    /// to the configured servers (index in the config's list) not to ask about it, to which the
    /// servers that never check it are added as for [`Op::Diagnostics`]; a file every server is
    /// left out of is `NotChecked`.
    DiagnosticsLeavingOut {
        paths: Vec<PathBuf>,
        leave_out: HashMap<PathBuf, Vec<ServerId>>,
        timeout: Duration,
        /// Gets each file's result as soon as it is finished (for progress and streaming).
        progress: Option<Sender<FileDiagnostics>>,
        reply: Sender<Vec<FileDiagnostics>>,
    },
    /// Make sure the file's servers run and have the file's current disk text; answer with the
    /// text lspc sent and the servers (primary first) that claim it.
    Sync {
        path: PathBuf,
        timeout: Duration,
        reply: Sender<Result<SyncedDocument, EngineError>>,
    },
    /// Send a request to one running server and wait for its answer. `ContentModified` (-32801)
    /// and `ServerCancelled` (-32802) are retried 3 times with exponential backoff from 500 ms
    /// (seed 000) when `retry` is set; `tag` lets a later [`Op::Cancel`] find it.
    Request {
        server_id: ServerId,
        method: String,
        params: Value,
        timeout: Duration,
        retry: bool,
        tag: Option<u64>,
        reply: Sender<Result<Value, EngineError>>,
        /// The document the request was built for in an earlier turn (a session's split
        /// [`Op::SyncRequest`]): synced again on the server first, opened again if the LRU
        /// bound closed it meanwhile, and kept open while the request is in flight.
        document: Option<PathBuf>,
    },
    /// [`Op::Sync`] and [`Op::Request`] in one loop round trip (issue 15): once the file is synced,
    /// `build` runs in the loop on the outcome (the document the servers now hold, or why the
    /// sync failed), so a frontend converts positions from exactly that text; the request it
    /// returns is sent at once and answered on its own `reply`. `build` reports to its caller
    /// through channels it owns; returning `None` sends nothing. With `instant` set, a file
    /// whose servers are still starting (or restarting) is not waited for: `build` runs at once
    /// with [`EngineError::StillStarting`], so its caller learns within this turn that nothing
    /// was sent (`lspc mcp` must not block its stdin reader on a server start).
    SyncRequest {
        path: PathBuf,
        timeout: Duration,
        build: RequestBuilder,
        instant: bool,
    },
    /// Cancel the [`Op::Request`] with this tag: `$/cancelRequest` is sent and the caller gets
    /// [`EngineError::Cancelled`].
    Cancel { tag: u64 },
    /// Apply a `WorkspaceEdit` through [`crate::edit`] in the loop, which owns the document
    /// versions the edit is checked against; when written, the servers are told (`didChange` /
    /// `didSave` for open documents, `didClose`/`didOpen` for renamed ones, and
    /// `workspace/didCreateFiles` / `didRenameFiles` / `didDeleteFiles` where a server advertises
    /// them). `encoding` is the position encoding of the edit (the sending server's).
    /// `based_on`: the edit generation the caller read before the edit was computed
    /// ([`SyncedDocument::edit_generation`], [`crate::edit::EditReport::generation`]); a file
    /// another lspc edit wrote after it refuses the edit
    /// ([`crate::edit::EditError::ChangedByAnotherEdit`]). `None` checks nothing.
    ApplyEdit {
        edit: Value,
        encoding: PositionEncoding,
        mode: crate::edit::ApplyMode,
        based_on: Option<u64>,
        reply: Sender<Result<crate::edit::EditReport, crate::edit::EditError>>,
    },
    /// The edits servers applied through `workspace/applyEdit` (the last 32), oldest first, each
    /// with its sequence number (1-based, growing), so a frontend that ran
    /// `workspace/executeCommand` can tell which files the server changed.
    ServerEdits {
        reply: Sender<Vec<(u64, crate::edit::EditReport)>>,
    },
    /// The diagnostics each server last published (or answered a pull with) for the file
    /// (canonical absolute path), exactly as it sent them: JSON `Diagnostic` objects in that
    /// server's position encoding with `data`, `codeDescription` and the rest kept, as a
    /// `textDocument/codeAction` context needs them (LSP 3.17 §`CodeActionContext`). Servers with
    /// nothing recorded for the file are left out; the reply does not wait for anything.
    RawDiagnostics {
        path: PathBuf,
        reply: Sender<Vec<(ServerId, Vec<Value>)>>,
    },
    /// A snapshot of every configured server's state.
    Status { reply: Sender<Vec<ServerStatus>> },
    /// Every running server instance (one per configured server and project root, see
    /// `instances.rs`), in slot order; answered at once.
    RunningServers { reply: Sender<Vec<ServerInfo>> },
    /// Shut every server down; the loop then ends and the reply is sent last.
    Shutdown { reply: Sender<()> },
    /// Apply a reloaded configuration (issue 4): servers are matched by name; unchanged ones keep
    /// running, changed ones are shut down and start again lazily with the new configuration,
    /// removed ones are shut down, added ones become available. `ServerId`s stay stable (see
    /// `reload.rs`). Answered once the stopped servers have exited.
    Reload {
        config: Config,
        reply: Sender<ReloadReport>,
    },
    // ----- frontend ops (MCP), handled in `frontend_events.rs` -----
    /// Deliver the passive diagnostics queued since the last drain (seed 000 rules: dedup against
    /// what was delivered, at most 10 per file and 30 in total). `None` when nothing is new.
    /// `consumer`: `None` for the engine's shared queue (stdio, stateless MCP requests), or a
    /// queue opened with [`Op::OpenPassive`] (one per MCP HTTP session, issue 14).
    /// `shown_file`: a file (canonical path) whose diagnostics the caller has just shown in full
    /// (the MCP `diagnostics` tool): its whole current merged set counts as delivered first
    /// ([`crate::diagnostics::PassiveRegistry::mark_shown`]), so none of it is new or counted
    /// in the batch's `n_more`.
    DrainPassive {
        consumer: Option<String>,
        shown_file: Option<PathBuf>,
        reply: Sender<Option<crate::diagnostics::DrainedBatch>>,
    },
    /// Open a passive-delivery queue of its own for `consumer`: it collects every publish from now
    /// on, independently of the shared queue and of other consumers.
    OpenPassive { consumer: String },
    /// Forget `consumer`'s queue.
    ClosePassive { consumer: String },
    /// The engine's [`PassiveCounter`], so a frontend can tell without an op whether anything
    /// was queued for passive delivery since it last drained (answered at once; the session
    /// proxy does not answer it, and the frontend then always drains).
    PassiveCounter { reply: Sender<PassiveCounter> },
    /// Send every later [`FrontendEvent`] to `sender` (until its receiver is dropped).
    SubscribeEvents { sender: Sender<FrontendEvent> },
    /// Send `sender` the files of tsserver's projects (typescript-language-server), the
    /// current list at once when there is one and each changed list later, until its receiver
    /// is dropped: absolute paths, sorted, at most 10,000, every file any project listed. A watch stamps those its own
    /// listing leaves out (git-ignored files, `node_modules` declarations), since tsserver does
    /// not see every change to them (`tsserver_project_files.rs`).
    /// `sent` counts the lists sent (added to before each send), so that the watch can tell a
    /// list it has not taken yet.
    SubscribeProjectFiles {
        sender: Sender<ProjectFileList>,
        sent: Arc<std::sync::atomic::AtomicU64>,
    },
    /// Every file's current merged diagnostics (non-empty sets only), in path order.
    CurrentDiagnostics {
        reply: Sender<Vec<(PathBuf, Vec<Diagnostic>)>>,
    },
    /// Each configured server's state, capabilities and claimed extensions.
    ServerDetails { reply: Sender<Vec<ServerDetails>> },
    /// The canonical paths of the documents lspc holds for servers, in path order (the MCP
    /// server stats them to notice edits made on disk by other tools).
    OpenDocuments { reply: Sender<Vec<PathBuf>> },
    /// Files changed on disk behind lspc's back (a session's scan, `crate::session`): each
    /// running server that claims a file and does not have it open gets
    /// `workspace/didChangeWatchedFiles` (LSP 3.17 §`workspace/didChangeWatchedFiles`). No reply.
    FilesChanged {
        changes: Vec<(PathBuf, WatchedChange)>,
        /// Configuration files written again with the bytes the scan that began at the
        /// `Instant` saw (`session/watch.rs`): each counts as changed only for servers that may
        /// have read it since (`engine/configuration_reads.rs`). In path order.
        rewritten: Vec<(PathBuf, std::time::Instant)>,
    },
}

/// The files of tsserver's projects ([`Op::SubscribeProjectFiles`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectFileList {
    /// Absolute paths, sorted, at most 10,000.
    pub files: Vec<PathBuf>,
    /// A time by which tsserver had read the files of the project that changed the list (when
    /// it published the diagnostics that project gave): a file whose status changed after it
    /// may be newer than what tsserver holds.
    pub read_before: std::time::SystemTime,
}

/// How many diagnostic sets the loop has queued for passive delivery ([`Op::DrainPassive`]),
/// in any queue, since it started. Only the loop adds to it, before it answers anything else,
/// so a frontend that reads it after an answer from the loop sees every set queued before
/// that answer: when it equals the value read before the frontend's last drain, a drain now
/// would deliver nothing (issue 15: MCP skips that op round trip after each tool call).
#[derive(Debug, Clone, Default)]
pub struct PassiveCounter(Arc<std::sync::atomic::AtomicU64>);

impl PassiveCounter {
    /// The number of sets queued so far.
    pub fn queued(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }

    fn add_one(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// What happened to a watched file; sent to servers as LSP 3.17 `FileChangeType`
/// ([`WatchedChange::file_change_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchedChange {
    Created,
    /// Written in place: the same inode.
    Changed,
    /// Made again under the same path: a new inode (deleted and written again, or another file
    /// renamed over it). The LSP has no such type: servers are told `Changed`, but a server
    /// that watches files itself may have seen the path gone for a moment
    /// (`engine/tsserver_reload.rs`).
    Replaced,
    Deleted,
}

impl WatchedChange {
    /// LSP 3.17 `FileChangeType`: 1 created, 2 changed, 3 deleted.
    pub fn file_change_type(self) -> u8 {
        match self {
            WatchedChange::Created => 1,
            WatchedChange::Changed | WatchedChange::Replaced => 2,
            WatchedChange::Deleted => 3,
        }
    }
}

pub use event_loop::frontend_events::{
    current_diagnostics, drain_passive, open_documents, server_details, FrontendEvent,
    ServerDetails,
};
pub use event_loop::reload::ReloadReport;

/// What [`Op::Sync`] answers: the text servers now hold for the file, and who serves it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SyncedDocument {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// The document version sent to servers.
    pub version: i32,
    /// How many edits lspc had written when the document was synced: an edit computed from
    /// this answer passes it as [`Op::ApplyEdit`]'s `based_on`.
    #[serde(default)]
    pub edit_generation: u64,
    /// Running servers claiming the file, primary (the one that serves queries) first.
    pub servers: Vec<ServerInfo>,
    /// Why the file's primary server (the first in precedence order) is not among `servers`:
    /// it failed to start, crashed for good, or was still starting at the timeout (the
    /// engine's error as text). A query then fails with it rather than asking the next server:
    /// a trial's pyright that could not start left ruff, whose empty hover read as "no hover
    /// information found" (exit 1) and whose missing `definitionProvider` was blamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_failure: Option<String>,
    /// The line index of `text` the engine keeps, so frontends convert positions without
    /// indexing the text again; `None` across the session wire (each side indexes its copy).
    #[serde(skip)]
    pub line_index: Option<Arc<crate::text::LineIndex>>,
}

/// A running server as frontends see it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    pub server_id: ServerId,
    /// The process id of the server's current process (0 before it runs): a restarted server,
    /// or the same server under another engine (a session's client that went on in process),
    /// is a new process that has analysed nothing yet.
    #[serde(default)]
    pub pid: u32,
    pub name: String,
    /// The encoding of LSP `Position.character` this server negotiated.
    pub encoding: PositionEncoding,
    /// The raw `ServerCapabilities` JSON from its `initialize` result (first process).
    pub capabilities: Arc<Value>,
    /// Whether a `$/progress` token is active (the server is still loading or indexing).
    pub busy: bool,
    /// Whether it runs pyright-langserver or basedpyright-langserver (also through a launcher),
    /// whose references reach a file its project's `include` leaves out only once that file is
    /// open (`query/unparsed_files.rs`).
    #[serde(default)]
    pub pyright_family: bool,
    /// clangd: it answers about files that are not open from its background index, built from
    /// the disk (`.cache/clangd`), which does not follow a file changed on disk until the file
    /// is opened (a new user's trial on madler/zlib: `_tr_init`'s definition stayed at its old
    /// line after lines were added above it, in every command, for minutes).
    #[serde(default)]
    pub indexed_from_disk: bool,
    /// Why it cannot format on this machine although it may advertise formatting
    /// ([`crate::config::ServerConfig::formatting_off_reason`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formatting_off: Option<String>,
    /// [`SettleRule::VersionedPublish`] (clangd): the open documents it was sent again (changed
    /// on disk, or analysed against files that since changed) and has not published for since,
    /// canonical paths in order; empty otherwise, and in snapshots other than a sync's. clangd
    /// answers from its ASTs and index as they were before those versions until it has
    /// rebuilt them, so a query waits for their diagnostics first (`query/readiness.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub awaiting_publish: Vec<PathBuf>,
    /// [`ServerInfo::indexed_from_disk`] (clangd): the files changed on disk since the server
    /// started that it has not had open since, canonical; empty otherwise, and in snapshots
    /// other than a sync's. Its index still describes their old text, whatever a definition
    /// into them shows: a prototype added above a function has the function's name at the
    /// same column where the definition was (a new user's trial on lua/lua: `luaO_chunkid`
    /// answered at the new prototype's line), so an answer into one of them is asked again
    /// once the file is open (`query/mod.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_behind_index: Vec<PathBuf>,
}

impl ServerInfo {
    /// Whether the server advertises `key` (e.g. `"hoverProvider"`) with a value other than
    /// `false`/`null` (LSP 3.17 §`ServerCapabilities`).
    pub fn supports(&self, key: &str) -> bool {
        !matches!(
            self.capabilities.get(key),
            None | Some(Value::Null) | Some(Value::Bool(false))
        )
    }
}

/// The settled diagnostics of one file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileDiagnostics {
    pub path: PathBuf,
    pub outcome: DiagnosticsOutcome,
    /// Why a server serving the file never checked it while the others did, e.g. `ruff never
    /// checks it: it is in ruff's exclude` (ruff's server answers nothing for a document in its
    /// exclude); `None` when every server serving it checked it. A note to give beside the
    /// diagnostics: without it, the others' answer reads as every server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_checked_by: Option<String>,
}

/// How a file's diagnostics wait ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum DiagnosticsOutcome {
    /// Every server settled; the merged, deduplicated, sorted set.
    Settled(Vec<Diagnostic>),
    /// The timeout hit before every server settled. `diagnostics` holds what had arrived;
    /// `servers` names those still analysing. Never to be reported as clean.
    TimedOut {
        diagnostics: Vec<Diagnostic>,
        servers: Vec<String>,
        after: Duration,
    },
    /// Some of the file's servers failed (to start, or crashed: `failures` joins their
    /// reasons) and the others settled with `diagnostics`. Never to be reported as clean: a
    /// trial's pyright that could not start left ruff's empty answer, which `lspc diagnostics`
    /// printed as clean (exit 0).
    PartlyFailed {
        diagnostics: Vec<Diagnostic>,
        failures: String,
    },
    /// The file's servers could not check it: they failed to start or crashed.
    Failed(String),
    /// The file was not sent to any server: no server with diagnostics claims its extension, or
    /// it is missing, larger than the size limit, binary or not UTF-8.
    NotChecked(String),
}

/// One server's state for `lspc servers` and `lsp://servers`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerStatus {
    pub name: String,
    /// The project root this instance serves, relative to the workspace root with `/`
    /// separators; `None` for the instance at the workspace root (see `instances.rs`).
    pub project: Option<String>,
    pub state: String,
    pub pid: Option<u32>,
    pub restarts: u32,
    pub stderr_tail: String,
    /// Why the server is not running, without its name ([`EngineError::detail`]).
    pub failure: Option<String>,
    /// How many documents are open on it.
    #[serde(default)]
    pub open_documents: usize,
    /// How the server signals that a document's diagnostics are complete (issue 15).
    pub settle_rule: SettleRule,
}

/// Why an [`Op`] failed. Messages name the server and method. Written by serde's derive, read
/// back (from the session wire) by hand: see [`crate::tagged_json`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum EngineError {
    /// No configured server claims the file's extension.
    NoServer { path: PathBuf },
    /// The server could not be started or did not initialize.
    Spawn { server: String, message: String },
    /// The server exited or closed its pipes; `stderr_tail` holds its last stderr lines.
    ServerExited {
        server: String,
        status: String,
        stderr_tail: String,
    },
    /// lspc restarted the server (`why`: `because its configuration file changed`, `by a
    /// configuration reload`) while the request was in flight; asking again reaches the new
    /// process. A diagnostics wait is not failed so: it runs again on the new process.
    Restarted { server: String, why: String },
    /// The server crashed (or was killed as hung) and its restart policy is used up: it stays
    /// down for the rest of the lspc process. `status` is `exit N`, `signal N` or
    /// `killed: …`; `crashes` counts the crashes of the last streak.
    GaveUp {
        server: String,
        status: String,
        crashes: u32,
        stderr_tail: String,
    },
    /// The server answered with a JSON-RPC error.
    Server {
        server: String,
        method: String,
        code: i32,
        message: String,
    },
    /// No answer before the deadline; `$/cancelRequest` was sent.
    Timeout {
        server: String,
        method: String,
        after: Duration,
    },
    /// The request was cancelled by the caller.
    Cancelled { server: String, method: String },
    /// The file cannot be sent to a server (missing, too large, binary, not UTF-8).
    InvalidInput(String),
    /// The engine is shutting down or gone.
    Gone,
    /// The file's server is still starting and the op asked not to wait
    /// ([`Op::SyncRequest`]'s `instant`).
    StillStarting { server: String },
    /// The warm session serving this command went away mid-request; the message names the
    /// session (root, pid) and its log file.
    SessionLost(String),
}

/// The variant names [`EngineError`] serializes to.
const ENGINE_ERRORS: &[&str] = &[
    "NoServer",
    "Spawn",
    "ServerExited",
    "Restarted",
    "GaveUp",
    "Server",
    "Timeout",
    "Cancelled",
    "InvalidInput",
    "Gone",
    "StillStarting",
    "SessionLost",
];

impl<'de> Deserialize<'de> for EngineError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        decode_engine_error(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

fn decode_engine_error(value: Value) -> Result<EngineError, serde_json::Error> {
    use crate::tagged_json::{external, unknown_variant, Fields};
    let (name, content) = external(value)?;
    Ok(match name.as_str() {
        "InvalidInput" => EngineError::InvalidInput(String::deserialize(content)?),
        "SessionLost" => EngineError::SessionLost(String::deserialize(content)?),
        "Gone" => EngineError::Gone,
        "NoServer" => EngineError::NoServer {
            path: Fields::object(content)?.required("path")?,
        },
        "Spawn" => {
            let mut fields = Fields::object(content)?;
            EngineError::Spawn {
                server: fields.required("server")?,
                message: fields.required("message")?,
            }
        }
        "ServerExited" => {
            let mut fields = Fields::object(content)?;
            EngineError::ServerExited {
                server: fields.required("server")?,
                status: fields.required("status")?,
                stderr_tail: fields.required("stderr_tail")?,
            }
        }
        "GaveUp" => {
            let mut fields = Fields::object(content)?;
            EngineError::GaveUp {
                server: fields.required("server")?,
                status: fields.required("status")?,
                crashes: fields.required("crashes")?,
                stderr_tail: fields.required("stderr_tail")?,
            }
        }
        "Server" => {
            let mut fields = Fields::object(content)?;
            EngineError::Server {
                server: fields.required("server")?,
                method: fields.required("method")?,
                code: fields.required("code")?,
                message: fields.required("message")?,
            }
        }
        "Timeout" => {
            let mut fields = Fields::object(content)?;
            EngineError::Timeout {
                server: fields.required("server")?,
                method: fields.required("method")?,
                after: fields.required("after")?,
            }
        }
        "Cancelled" => {
            let mut fields = Fields::object(content)?;
            EngineError::Cancelled {
                server: fields.required("server")?,
                method: fields.required("method")?,
            }
        }
        "Restarted" => {
            let mut fields = Fields::object(content)?;
            EngineError::Restarted {
                server: fields.required("server")?,
                why: fields.required("why")?,
            }
        }
        "StillStarting" => EngineError::StillStarting {
            server: Fields::object(content)?.required("server")?,
        },
        other => return Err(unknown_variant(other, ENGINE_ERRORS)),
    })
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::NoServer { path } => f.write_str(&crate::config::no_server_message(path)),
            EngineError::Spawn { server, message } => {
                write!(f, "server {server} failed to start: {message}")
            }
            EngineError::ServerExited {
                server,
                status,
                stderr_tail,
            } => {
                write!(f, "server {server} crashed ({status})")?;
                if !stderr_tail.is_empty() {
                    write!(f, ": {stderr_tail}")?;
                }
                Ok(())
            }
            EngineError::Restarted { server, why } => write!(
                f,
                "server {server} was restarted {why} while the request was in flight; ask again"
            ),
            EngineError::GaveUp {
                server,
                status,
                crashes,
                stderr_tail,
            } => {
                write!(f, "server {server} crashed ({status}); ")?;
                if *crashes <= 1 {
                    write!(f, "restarts are disabled, so it stays down")?;
                } else {
                    write!(
                        f,
                        "gave up after {crashes} crashes in a row, so it stays down"
                    )?;
                }
                if !stderr_tail.is_empty() {
                    write!(f, ": {stderr_tail}")?;
                }
                Ok(())
            }
            EngineError::Server {
                server,
                method,
                code,
                message,
            } => {
                write!(
                    f,
                    "server {server} answered {method} with error {code}: {message}"
                )
            }
            EngineError::Timeout {
                server,
                method,
                after,
            } => write!(
                f,
                "{method} timed out after {} s (server {server})",
                after.as_secs_f64()
            ),
            EngineError::Cancelled { server, method } => {
                write!(f, "{method} was cancelled (server {server})")
            }
            EngineError::InvalidInput(message) => f.write_str(message),
            EngineError::Gone => f.write_str("the engine has shut down"),
            EngineError::SessionLost(message) => f.write_str(message),
            EngineError::StillStarting { server } => write!(f, "server {server} is still starting"),
        }
    }
}

impl EngineError {
    /// `Spawn` for a configured server whose command was not found
    /// ([`crate::config::Config::unavailable_for`]): `server NAME failed to start: command not
    /// found: COMMAND`.
    pub fn command_not_found(server: &crate::config::ServerConfig) -> EngineError {
        EngineError::Spawn {
            server: server.name.clone(),
            message: format!("command not found: {}", server.command),
        }
    }

    /// The error without the server's name, for lists already keyed by server:
    /// `failed to start: command not found: clangd`, `crashed (exit 134): panicked at …`.
    pub fn detail(&self) -> String {
        match self {
            EngineError::Spawn { message, .. } => format!("failed to start: {message}"),
            EngineError::ServerExited {
                status,
                stderr_tail,
                ..
            } if stderr_tail.is_empty() => {
                format!("crashed ({status})")
            }
            EngineError::ServerExited {
                status,
                stderr_tail,
                ..
            } => {
                // One line, the cause: a frontend says this once per run.
                let cause =
                    crate::failure_text::meaningful_line(stderr_tail).unwrap_or(stderr_tail);
                format!("crashed ({status}): {cause}")
            }
            other => other.to_string(),
        }
    }
}

impl std::error::Error for EngineError {}

/// The frontends' end of the engine: a sender of [`Op`]s and the loop thread. Dropping it shuts
/// the engine down and joins the loop (so no server outlives the handle).
pub struct EngineHandle {
    op_sender: LoopSender<Op>,
    thread: Option<thread::JoinHandle<()>>,
    /// Whether the ops are served by a session over its socket ([`EngineHandle::from_parts`]).
    remote: bool,
}

impl EngineHandle {
    /// A handle whose ops go to `op_sender`, served by `thread` (the session client's proxy):
    /// dropping the handle sends [`Op::Shutdown`] and joins `thread`.
    pub(crate) fn from_parts(
        op_sender: LoopSender<Op>,
        thread: thread::JoinHandle<()>,
    ) -> EngineHandle {
        EngineHandle {
            op_sender,
            thread: Some(thread),
            remote: true,
        }
    }

    /// Whether a session serves this handle's ops (its loop runs in another process): an op
    /// then waits for the session's answer where the in-process loop answers within its turn
    /// (an instant query's sync waits out a server start there, `Op::SyncRequest`'s `instant`
    /// does not reach the session's loop).
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Start the loop in this process on its own long-lived thread `"lspc-engine"`; servers are
    /// spawned from that thread (their parent-death signal is tied to it). Commands start their
    /// engine with `crate::session::start_engine`, which honours [`EngineOptions::session`].
    pub fn start(options: EngineOptions) -> EngineHandle {
        let bell = crate::doorbell::Bell::new();
        let (op_sender, op_receiver) = bell.unbounded();
        let thread = thread::Builder::new()
            .name("lspc-engine".to_owned())
            .spawn(move || event_loop::run(options, bell, op_receiver))
            .expect("spawning the engine thread");
        EngineHandle {
            op_sender,
            thread: Some(thread),
            remote: false,
        }
    }

    /// A sender for frontends that run on other threads.
    pub fn op_sender(&self) -> LoopSender<Op> {
        self.op_sender.clone()
    }

    /// [`Op::Diagnostics`], blocking.
    pub fn diagnostics(&self, paths: Vec<PathBuf>, timeout: Duration) -> Vec<FileDiagnostics> {
        let (reply, receiver) = bounded(1);
        if self
            .op_sender
            .send(Op::Diagnostics {
                paths,
                timeout,
                reply,
            })
            .is_err()
        {
            return Vec::new();
        }
        receiver.recv().unwrap_or_default()
    }

    /// [`Op::Sync`], blocking.
    pub fn sync(&self, path: PathBuf, timeout: Duration) -> Result<SyncedDocument, EngineError> {
        sync_with(&self.op_sender, path, timeout)
    }

    /// [`Op::Request`], blocking, with ContentModified retries.
    pub fn request(
        &self,
        server_id: ServerId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, EngineError> {
        request_with(&self.op_sender, server_id, method, params, timeout, None)
    }

    /// [`Op::Status`], blocking.
    pub fn status(&self) -> Vec<ServerStatus> {
        let (reply, receiver) = bounded(1);
        if self.op_sender.send(Op::Status { reply }).is_err() {
            return Vec::new();
        }
        receiver.recv().unwrap_or_default()
    }

    /// Shut every server down and join the loop.
    pub fn shutdown(mut self) {
        self.shutdown_inner();
    }

    fn shutdown_inner(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        let (reply, receiver) = bounded(1);
        if self.op_sender.send(Op::Shutdown { reply }).is_ok() {
            let _ = receiver.recv();
        }
        let _ = thread.join();
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        self.shutdown_inner();
    }
}

/// `receiver.recv()`, but parked at once (issue 15). crossbeam's `recv` first spins and then
/// calls `sched_yield` four times before it parks (strace: 4.0 `sched_yield` per request on the
/// batch frontend); on a loaded machine each yield can hand the CPU to another process just
/// before the answer comes. A one-arm `Select` registers and parks without that backoff.
///
/// Errors: `RecvError` once every sender is gone.
pub fn recv_parked<T>(receiver: &Receiver<T>) -> Result<T, crossbeam_channel::RecvError> {
    let mut select = crossbeam_channel::Select::new();
    select.recv(receiver);
    select.select().recv(receiver)
}

/// [`Op::Sync`] through any op sender, blocking.
pub fn sync_with(
    op_sender: &LoopSender<Op>,
    path: PathBuf,
    timeout: Duration,
) -> Result<SyncedDocument, EngineError> {
    let (reply, receiver) = bounded(1);
    op_sender
        .send(Op::Sync {
            path,
            timeout,
            reply,
        })
        .map_err(|_| EngineError::Gone)?;
    recv_parked(&receiver).map_err(|_| EngineError::Gone)?
}

/// [`sync_with`] for each of `paths` in turn (opening those not open yet); answers those that
/// server `server_id` now holds. A path that cannot be synced is logged and skipped.
pub fn open_on(
    op_sender: &LoopSender<Op>,
    paths: impl IntoIterator<Item = PathBuf>,
    server_id: ServerId,
    timeout: Duration,
) -> Vec<PathBuf> {
    let mut opened = Vec::new();
    for path in paths {
        match sync_with(op_sender, path.clone(), timeout) {
            Ok(synced) if synced.servers.iter().any(|s| s.server_id == server_id) => {
                opened.push(path)
            }
            Ok(_) => {}
            Err(error) => log::debug!("cannot open {}: {error}", path.display()),
        }
    }
    opened
}

/// [`Op::Request`] through any op sender, blocking, with ContentModified retries.
pub fn request_with(
    op_sender: &LoopSender<Op>,
    server_id: ServerId,
    method: &str,
    params: Value,
    timeout: Duration,
    tag: Option<u64>,
) -> Result<Value, EngineError> {
    let (reply, receiver) = bounded(1);
    let op = Op::Request {
        server_id,
        method: method.to_owned(),
        params,
        timeout,
        retry: true,
        tag,
        reply,
        document: None,
    };
    op_sender.send(op).map_err(|_| EngineError::Gone)?;
    recv_parked(&receiver).map_err(|_| EngineError::Gone)?
}

/// [`Op::ApplyEdit`] through any op sender, blocking. The outer error is the engine being gone.
pub fn apply_edit_with(
    op_sender: &LoopSender<Op>,
    edit: Value,
    encoding: PositionEncoding,
    mode: crate::edit::ApplyMode,
    based_on: Option<u64>,
) -> Result<Result<crate::edit::EditReport, crate::edit::EditError>, EngineError> {
    let (reply, receiver) = bounded(1);
    op_sender
        .send(Op::ApplyEdit {
            edit,
            encoding,
            mode,
            based_on,
            reply,
        })
        .map_err(|_| EngineError::Gone)?;
    receiver.recv().map_err(|_| EngineError::Gone)
}

/// [`Op::ServerEdits`] through any op sender, blocking (empty when the engine is gone).
pub fn server_edits_with(op_sender: &LoopSender<Op>) -> Vec<(u64, crate::edit::EditReport)> {
    let (reply, receiver) = bounded(1);
    if op_sender.send(Op::ServerEdits { reply }).is_err() {
        return Vec::new();
    }
    receiver.recv().unwrap_or_default()
}

/// [`Op::RunningServers`] through any op sender, blocking (empty when the engine is gone).
pub fn running_servers_with(op_sender: &LoopSender<Op>) -> Vec<ServerInfo> {
    let (reply, receiver) = bounded(1);
    if op_sender.send(Op::RunningServers { reply }).is_err() {
        return Vec::new();
    }
    receiver.recv().unwrap_or_default()
}

/// [`Op::RawDiagnostics`] through any op sender, blocking (empty when the engine is gone).
pub fn raw_diagnostics_with(
    op_sender: &LoopSender<Op>,
    path: PathBuf,
) -> Vec<(ServerId, Vec<Value>)> {
    let (reply, receiver) = bounded(1);
    if op_sender.send(Op::RawDiagnostics { path, reply }).is_err() {
        return Vec::new();
    }
    receiver.recv().unwrap_or_default()
}

/// [`Op::Diagnostics`] for `paths` through any op sender, blocking: each file's settled
/// diagnostics (`None` when the engine is gone).
pub fn diagnostics_with(
    op_sender: &LoopSender<Op>,
    paths: Vec<PathBuf>,
    timeout: Duration,
) -> Option<Vec<FileDiagnostics>> {
    let (reply, receiver) = bounded(1);
    let op = Op::Diagnostics {
        paths,
        timeout,
        reply,
    };
    op_sender.send(op).ok()?;
    receiver.recv().ok()
}

/// Receiver type re-exported for frontends that select over engine replies.
pub type Reply<T> = Receiver<T>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every [`EngineError`] reads back (from the session wire) what its derive wrote; the
    /// exhaustive match makes a new variant fail to compile until it is covered here.
    #[test]
    fn engine_errors_read_back_what_was_written() {
        let text = |text: &str| text.to_owned();
        let errors = [
            EngineError::NoServer {
                path: PathBuf::from("/w/a.py"),
            },
            EngineError::Spawn {
                server: text("fx"),
                message: text("not found"),
            },
            EngineError::ServerExited {
                server: text("fx"),
                status: text("exit 1"),
                stderr_tail: text("boom"),
            },
            EngineError::Restarted {
                server: text("fx"),
                why: text("because its configuration file changed"),
            },
            EngineError::GaveUp {
                server: text("fx"),
                status: text("signal 9"),
                crashes: 3,
                stderr_tail: String::new(),
            },
            EngineError::Server {
                server: text("fx"),
                method: text("textDocument/hover"),
                code: -32801,
                message: text("modified"),
            },
            EngineError::Timeout {
                server: text("fx"),
                method: text("textDocument/hover"),
                after: Duration::from_millis(1500),
            },
            EngineError::Cancelled {
                server: text("fx"),
                method: text("textDocument/hover"),
            },
            EngineError::InvalidInput(text("binary")),
            EngineError::Gone,
            EngineError::StillStarting { server: text("fx") },
            EngineError::SessionLost(text("lost")),
        ];
        let names: Vec<&str> = errors
            .iter()
            .map(|error| match error {
                EngineError::NoServer { .. } => "NoServer",
                EngineError::Spawn { .. } => "Spawn",
                EngineError::ServerExited { .. } => "ServerExited",
                EngineError::Restarted { .. } => "Restarted",
                EngineError::GaveUp { .. } => "GaveUp",
                EngineError::Server { .. } => "Server",
                EngineError::Timeout { .. } => "Timeout",
                EngineError::Cancelled { .. } => "Cancelled",
                EngineError::InvalidInput(_) => "InvalidInput",
                EngineError::Gone => "Gone",
                EngineError::StillStarting { .. } => "StillStarting",
                EngineError::SessionLost(_) => "SessionLost",
            })
            .collect();
        assert_eq!(names, ENGINE_ERRORS);
        for error in errors {
            let value = serde_json::to_value(&error).unwrap();
            let read: EngineError = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(read, error, "{value}");
        }
        let read = |value: Value| serde_json::from_value::<EngineError>(value).unwrap_err();
        assert!(read(serde_json::json!("Oops"))
            .to_string()
            .starts_with("unknown variant `Oops`"));
        assert_eq!(
            read(serde_json::json!({"Spawn": {"server": "fx"}})).to_string(),
            "missing field `message`"
        );
    }
}
