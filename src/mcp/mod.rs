//! `lspc mcp`: an MCP server exposing the engine and the queries as tools and resources (issue 4;
//! seed 004 is the single-server original), over stdio (newline-delimited JSON-RPC 2.0) or
//! Streamable HTTP ([`http`], issue 14).
//!
//! The seam: one **hub** ([`serve`]) owns the engine handle, the worker pool and one
//! [`ClientState`] per client (handshake version, log level, subscriptions, open
//! `subscriptions/listen` streams); frontends talk to it only through [`HubInput`] messages on one
//! channel and read [`Outbound`] messages on per-request and per-client streams. Stdio is one
//! client; each HTTP session (and each stateless 2026-07-28 HTTP request) is another; issue 13's
//! warm sessions add socket clients the same way.
//!
//! Threads: the stdio frontend has a reader thread turning stdin into [`HubInput`]s and writes
//! stdout through [`stdout::StdoutSink`]: the thread that has a message (the hub, a worker) writes
//! the line itself when that cannot block, else a writer thread does, in order (lines never
//! interleave and nothing else reaches stdout); a bounded pool of worker threads runs tool calls and resource
//! reads, which block on the engine; the hub loop dispatches, answers cheap requests itself,
//! relays engine events as notifications to every client and sends progress while calls wait.
//!
//! Invariants:
//! - Every request gets exactly one response, except a cancelled one, which gets none (MCP
//!   §cancellation: "MUST NOT send any further messages for it"); the hub drops a request's stream
//!   when the request is over.
//! - Input end (stdin EOF): in-flight calls get `EOF_GRACE` (10 s) to answer, the rest are
//!   cancelled; workers are joined, the engine shuts every server down (`shutdown`/`exit`), then
//!   [`run`] returns 0.
//! - Both eras are served by one process: `initialize` opens a handshake-era session; a request
//!   whose `_meta` carries `io.modelcontextprotocol/protocolVersion` is served statelessly.

mod calls;
pub mod cli;
mod decision;
pub mod edit_tools;
mod fast_path;
pub mod http;
mod http_wire;
pub mod protocol;
pub mod reload;
pub mod resources;
mod stdout;
mod structured;
pub mod tool_arguments;
pub mod tools;
pub mod updates;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use std::sync::Arc;

use crossbeam_channel::{bounded, select, unbounded, Receiver, Sender};
use serde_json::{json, Value};

use crate::config::ConfigOptions;
use crate::engine::{self, EngineOptions, FrontendEvent, Op};
use calls::{id_key, Calls, Completion, InFlight, WorkerPool};
use protocol::{
    error_response, notification, request_era, success_response, Incoming, RequestEra,
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
};
use tools::ToolContext;

/// Settings of one `lspc mcp` run.
#[derive(Debug, Clone)]
pub struct McpOptions {
    pub engine: EngineOptions,
    /// How long one tool call may wait for its server (start-up and indexing included).
    pub timeout: Duration,
    /// Worker threads for tool calls and resource reads, started as calls need them: at most
    /// this many calls wait (for a server's readiness, settled diagnostics) at once, and a
    /// further call queues behind them. 16: each of several questions asked at once of a fresh
    /// server waits for its first analysis, and with 4 an unrelated call asked after four of
    /// them waited for the project to load (helper-72: a clangd hover 3.6 s where it takes
    /// 0.4 s alone).
    pub workers: usize,
    /// How often `notifications/progress` is sent for a call that asked for progress.
    pub progress_interval: Duration,
    /// What the configuration was loaded from, to reload it when those files change (issue 4);
    /// `None` (single-server mode, tests) never reloads.
    pub reload: Option<ConfigOptions>,
    /// Install hints for the workspace's unserved files ([`crate::install_hints`]): given once
    /// per session, in the first tool result's `notes`, and always in `lsp://servers`.
    pub install_hints: Vec<String>,
    /// Whether stdio's reader starts instant tool calls itself ([`fast_path`], issue 15);
    /// `LSPC_MCP_FAST_PATH=off` sends every line through the hub, to compare the two routes.
    pub fast_path: bool,
}

impl McpOptions {
    /// Defaults: 60 s per call, 16 workers, progress every second.
    pub fn new(engine: EngineOptions) -> McpOptions {
        McpOptions {
            engine,
            timeout: Duration::from_secs(60),
            workers: 16,
            progress_interval: Duration::from_secs(1),
            install_hints: Vec::new(),
            reload: None,
            fast_path: true,
        }
    }
}

const SERVER_NAME: &str = "lspc";
/// After stdin ends, how long in-flight calls may still take to answer before they are cancelled.
const EOF_GRACE: Duration = Duration::from_secs(10);

/// The longest stdio line lspc reads (as a session's socket, [`crate::session::wire`]); a longer
/// one is skipped to its end and answered with an `id: null` error, and the connection goes on.
const MAX_LINE_BYTES: usize = crate::session::wire::MAX_LINE_BYTES;

/// Capacity above which the stdin reader's line buffer is let go after a line (one huge request
/// would otherwise keep its memory for the rest of the run).
const KEPT_LINE_BUFFER_BYTES: usize = 1 << 20;
const INSTRUCTIONS: &str = "lspc gives you a headless editor over the project's language servers. \
Positions are 1-based lines and 1-based columns in characters; give `symbol` (a name on the line) \
instead of `column` when unsure. Files are relative to the workspace root. Tool results carry new \
diagnostics under newDiagnostics.";

/// [`INSTRUCTIONS`], and the configuration errors in force, which an agent would otherwise
/// never see (they go to stderr): a `.lsp.json` that does not parse leaves its servers out.
fn instructions(context: &ToolContext) -> String {
    let notes = context.config_error_notes();
    if notes.is_empty() {
        return INSTRUCTIONS.to_owned();
    }
    format!("{INSTRUCTIONS}\n\n{}", notes.join("\n"))
}

fn server_info() -> Value {
    json!({"name": SERVER_NAME, "title": "lspc", "version": env!("CARGO_PKG_VERSION")})
}

fn server_capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "logging": {}
    })
}

/// Serve MCP on stdin/stdout until stdin ends; returns the exit status (0). Answers are written
/// to stdout by the thread that has them ([`stdout::StdoutSink`]).
pub fn serve_stdio(options: McpOptions) -> i32 {
    let input = Box::new(std::io::BufReader::new(std::io::stdin()));
    match stdout::StdoutSink::start() {
        Ok(sink) => {
            let status = run_on(options, input, OutboundStream::Stdout(sink.clone()));
            sink.close();
            status
        }
        Err(error) => {
            log::warn!("cannot start the stdout writer: {error}");
            run(options, input, std::io::stdout())
        }
    }
}

/// One MCP client of the shared engine: stdio's only client (`"stdio"`), an HTTP session (its
/// `Mcp-Session-Id`), or one stateless 2026-07-28 HTTP request. Each client has its own protocol
/// state ([`ClientState`]); the engine, its servers and documents are shared by all.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub String);

/// What the hub writes on a client's streams.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// One JSON-RPC message (a response or a notification).
    Message(Value),
    /// The client named in the input is not (or no longer) known: an HTTP frontend answers 404.
    UnknownClient,
}

/// Where the hub and the workers send a request's answer, or a client's notifications: a channel
/// a frontend reads (HTTP, tests), or stdio's stdout itself ([`stdout::StdoutSink`]: the thread
/// that has the message writes it, issue 15).
#[derive(Clone)]
pub enum OutboundStream {
    Channel(Sender<Outbound>),
    Stdout(std::sync::Arc<stdout::StdoutSink>),
}

impl From<Sender<Outbound>> for OutboundStream {
    fn from(sender: Sender<Outbound>) -> OutboundStream {
        OutboundStream::Channel(sender)
    }
}

impl OutboundStream {
    /// Sends `message` as [`OutboundStream::send`] does: stdout serialises it straight into its
    /// line (no `Value` tree, issue 15); a channel gets it as a `Value`.
    fn send_serialized(&self, message: &impl serde::Serialize) -> Result<(), ()> {
        match self {
            OutboundStream::Stdout(sink) => sink.send(message).map_err(drop),
            OutboundStream::Channel(sender) => {
                let message = serde_json::to_value(message).map_err(drop)?;
                sender.send(Outbound::Message(message)).map_err(drop)
            }
        }
    }

    /// [`OutboundStream::send_serialized`] of a message already serialised (`line`: one JSON
    /// value, no line end).
    fn send_line(&self, line: Vec<u8>) -> Result<(), ()> {
        match self {
            OutboundStream::Stdout(sink) => sink.send_line(line).map_err(drop),
            OutboundStream::Channel(sender) => {
                let message = serde_json::from_slice(&line).map_err(drop)?;
                sender.send(Outbound::Message(message)).map_err(drop)
            }
        }
    }

    /// Waits while stdout holds more answers than the client has read
    /// ([`stdout::StdoutSink::wait_for_room`]); a channel never waits.
    fn wait_for_room(&self) {
        if let OutboundStream::Stdout(sink) = self {
            sink.wait_for_room();
        }
    }

    /// Sends `outbound`; `Err` when the reader is gone (its request, or its client, is over).
    /// Stdout has no unknown clients: `UnknownClient` is dropped there.
    fn send(&self, outbound: Outbound) -> Result<(), ()> {
        match (self, outbound) {
            (OutboundStream::Channel(sender), outbound) => sender.send(outbound).map_err(drop),
            (OutboundStream::Stdout(sink), Outbound::Message(message)) => {
                sink.send(&message).map_err(drop)
            }
            (OutboundStream::Stdout(_), Outbound::UnknownClient) => Ok(()),
        }
    }
}

/// What a frontend (stdio, HTTP) tells the hub. Streams are [`OutboundStream`]s; the hub drops a
/// request's stream once the request is over (answered, cancelled, or its client closed), so a
/// frontend reading it sees the end of the exchange as a disconnect.
pub enum HubInput {
    /// A new client. `notify` carries messages that belong to no request (list changes, resource
    /// updates of `resources/subscribe`, log messages): stdout, or an HTTP session's GET stream
    /// (attached later; until then those messages are dropped, MCP 2025-11-25 §transports
    /// "Listening for Messages from the Server").
    Open {
        client: ClientId,
        notify: Option<OutboundStream>,
        /// Whether the client gets a passive-diagnostics queue of its own (an HTTP session)
        /// rather than the engine's shared one (stdio, stateless requests).
        own_passive: bool,
    },
    /// Replace the client's `notify` stream (an HTTP GET). `UnknownClient` is sent on it when the
    /// client does not exist.
    Attach {
        client: ClientId,
        notify: OutboundStream,
    },
    /// One message from the client. The answer to a request, its progress and, for
    /// `subscriptions/listen`, its notifications go to `stream`.
    Message {
        client: ClientId,
        incoming: Incoming,
        stream: OutboundStream,
    },
    /// The client dropped the stream of request `id`: cancel it (MCP 2026-07-28: closing the
    /// response stream is the cancellation).
    Abandon { client: ClientId, id: Value },
    /// The client is gone (HTTP DELETE, a stateless request over): its requests are cancelled and
    /// its state forgotten. `UnknownClient` is sent on `stream` when it did not exist.
    Close {
        client: ClientId,
        stream: Option<OutboundStream>,
    },
    /// Nothing to handle: the stdio reader started a call that asked for progress, and the hub
    /// recomputes when progress is next due.
    Wake,
}

impl std::fmt::Debug for HubInput {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HubInput::Open { client, .. } => write!(formatter, "Open({})", client.0),
            HubInput::Attach { client, .. } => write!(formatter, "Attach({})", client.0),
            HubInput::Message { client, .. } => write!(formatter, "Message({})", client.0),
            HubInput::Abandon { client, id } => write!(formatter, "Abandon({}, {id})", client.0),
            HubInput::Close { client, .. } => write!(formatter, "Close({})", client.0),
            HubInput::Wake => write!(formatter, "Wake"),
        }
    }
}

/// An open `subscriptions/listen` stream (2026-07-28).
struct Listen {
    id: Value,
    tools: bool,
    resources: BTreeSet<String>,
    stream: OutboundStream,
}

/// The protocol state of one client (issue 14: every HTTP client has its own; issue 13's
/// sessions reuse the same struct for each socket client).
struct ClientState {
    /// The negotiated handshake version once `initialize` was answered.
    handshake: Option<String>,
    /// Minimum level of `notifications/message` for the handshake session (`logging/setLevel`).
    log_level: String,
    legacy_subscriptions: BTreeSet<String>,
    listens: Vec<Listen>,
    notify: Option<OutboundStream>,
    own_passive: bool,
    /// When the client last sent something (the least recently active session is closed first
    /// when there are more than [`MAX_CLIENTS`]).
    last_active: Instant,
}

/// Most clients with state kept at once; opening one more closes the least recently active.
pub const MAX_CLIENTS: usize = 256;

impl ClientState {
    fn new(notify: Option<OutboundStream>, own_passive: bool) -> ClientState {
        ClientState {
            handshake: None,
            log_level: "info".to_owned(),
            legacy_subscriptions: BTreeSet::new(),
            listens: Vec::new(),
            notify,
            own_passive,
            last_active: Instant::now(),
        }
    }

    /// Send on the client's notification stream; a stream whose reader is gone is forgotten.
    fn notify(&mut self, message: Value) {
        if let Some(notify) = &self.notify {
            if notify.send(Outbound::Message(message)).is_err() {
                self.notify = None;
            }
        }
    }
}

/// The shared side: one engine, its tool context and worker pool, serving every client.
struct Hub {
    context: ToolContext,
    /// Told when a call ends (read only while in-flight calls finish after stdin ended).
    done_sender: Sender<()>,
    pool: WorkerPool,
    offered: Vec<&'static str>,
    clients: HashMap<ClientId, ClientState>,
    /// Every client's requests in flight (shared with the threads that answer them).
    calls: Arc<Calls>,
    progress_interval: Duration,
    /// Shared with the stdio reader, which checks it before starting a call itself.
    config_watch: Option<Arc<std::sync::Mutex<reload::ConfigWatch>>>,
    /// The stdio client's state the reader reads ([`fast_path`]); `None` without stdio.
    stdio: Option<Arc<fast_path::StdioShared>>,
    /// Coalesced `notifications/resources/updated` and the disk watch (issue 11).
    updates: updates::ResourceUpdates,
    /// The errors of the configuration in force: a reload that brings new ones (a file that no
    /// longer parses) is not applied, as a session does (`session::reload`).
    accepted_config_errors: Vec<String>,
    /// In process: the workspace's folder events, checked before each call so a file written
    /// before the call was sent is announced to the servers first (`session::watch`).
    freshness: Option<Arc<crate::session::watch::Freshness>>,
}

/// The stdio client's id.
const STDIO_CLIENT: &str = "stdio";

/// Run the server on `input`/`output` (stdio in production; pipes in tests): one client.
pub fn run(
    options: McpOptions,
    input: Box<dyn BufRead + Send>,
    output: impl Write + Send + 'static,
) -> i32 {
    let (out, out_receiver) = unbounded::<Outbound>();
    let writer = thread::Builder::new()
        .name("lspc-mcp-writer".to_owned())
        .spawn(move || write_loop(out_receiver, output))
        .ok();
    let status = run_on(options, input, out.into());
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    status
}

/// The stdio client on `input`, its answers and notifications on `out`; returns once the hub
/// is done (every clone of `out` the hub and workers held is dropped by then).
fn run_on(options: McpOptions, input: Box<dyn BufRead + Send>, out: OutboundStream) -> i32 {
    let (input_sender, input_receiver) = bounded::<HubInput>(64);
    let client = ClientId(STDIO_CLIENT.to_owned());
    let _ = input_sender.send(HubInput::Open {
        client: client.clone(),
        notify: Some(out.clone()),
        own_passive: false,
    });
    let stdio = StdioInput {
        input,
        client,
        out,
        sender: input_sender,
    };
    serve_clients(options, input_receiver, Some(stdio))
}

/// Stdio's input, read by a thread the hub starts once it can start calls itself.
struct StdioInput {
    input: Box<dyn BufRead + Send>,
    client: ClientId,
    out: OutboundStream,
    sender: Sender<HubInput>,
}

/// Run the hub until every sender of `inputs` is gone: start the engine, serve the clients'
/// messages, relay engine events to them; then give in-flight calls [`EOF_GRACE`], cancel the
/// rest and shut the servers down. Returns the exit status (0).
pub fn serve(options: McpOptions, inputs: Receiver<HubInput>) -> i32 {
    serve_clients(options, inputs, None)
}

/// [`serve`], with stdio's reader thread when `stdio` is given: it starts instant tool calls
/// itself ([`fast_path`]) and hands every other line to the hub.
fn serve_clients(
    options: McpOptions,
    inputs: Receiver<HubInput>,
    stdio: Option<StdioInput>,
) -> i32 {
    let root = options.engine.config.root.clone();
    let root = root.canonicalize().unwrap_or(root);
    let engine = crate::session::start_engine(options.engine.clone());
    let (event_sender, mut event_receiver) = unbounded::<FrontendEvent>();
    let _ = engine.op_sender().send(Op::SubscribeEvents {
        sender: event_sender,
    });
    let (done_sender, done_receiver) = unbounded::<()>();
    // Files lspc has not opened reach servers such as pyright only as the client's
    // `workspace/didChangeWatchedFiles`: in process (a session has its own) the workspace is
    // scanned as a session scans it, so an edit made behind lspc's back is not answered from
    // the old text for the rest of the run. Active while messages arrive.
    let active = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watch = match engine.is_remote() {
        true => None,
        false => crate::session::watch::WatchThread::spawn(
            "lspc-mcp-watch",
            crate::session::watch::WatchedWorkspace::of(
                PathBuf::from(&root),
                &options.engine.config,
            ),
            engine.op_sender(),
            Arc::clone(&active),
        ),
    };

    let freshness = watch
        .as_ref()
        .map(crate::session::watch::WatchThread::freshness);

    let context = ToolContext {
        op_sender: engine.op_sender(),
        root: PathBuf::from(&root),
        timeout: options.timeout,
        analysed_files: crate::query::AnalysedFiles::default(),
        install_hints: std::sync::Arc::new(options.install_hints.clone()),
        config_errors: Arc::new(std::sync::Mutex::new(config_error_texts(
            &options.engine.config,
        ))),
        notes_pending: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
            !options.install_hints.is_empty() || !options.engine.config.errors.is_empty(),
        )),
        passive_consumer: None,
        passive_drains: tool_arguments::PassiveDrains::new(&engine.op_sender()),
        cancelled: None,
    };
    let offered = tools::offered_tools(&engine::server_details(&context.op_sender));
    let mut hub = Hub {
        context,
        done_sender,
        pool: WorkerPool::new(options.workers),
        offered,
        clients: HashMap::new(),
        calls: Arc::default(),
        progress_interval: options.progress_interval,
        config_watch: options
            .reload
            .clone()
            .map(|options| Arc::new(std::sync::Mutex::new(reload::ConfigWatch::new(options)))),
        stdio: None,
        updates: updates::ResourceUpdates::new(Instant::now()),
        accepted_config_errors: config_error_texts(&options.engine.config),
        freshness: freshness.clone(),
    };
    // Disconnected once stdio's stdout failed: the client can read nothing more.
    let mut stdout_broken = crossbeam_channel::never();
    let mut stdout_gone = false;
    if let Some(stdio) = stdio {
        if let OutboundStream::Stdout(sink) = &stdio.out {
            stdout_broken = sink.broken();
        }
        let shared = Arc::new(fast_path::StdioShared::default());
        hub.stdio = Some(Arc::clone(&shared));
        let front = fast_path::Front {
            // Through a session the stdin reader would wait out each call's sync there (a
            // server start included) instead of reading the next line: the hub route only.
            enabled: options.fast_path && !engine.is_remote(),
            context: Arc::new(hub.context.clone()),
            queries: tools::queries(&hub.context, 0).with_tag(None),
            calls: Arc::clone(&hub.calls),
            pool: hub.pool.clone(),
            done_sender: hub.done_sender.clone(),
            shared,
            config_watch: hub.config_watch.clone(),
            freshness,
            client: stdio.client,
            out: stdio.out,
            hub_sender: stdio.sender,
            decisions: Default::default(),
        };
        let input = stdio.input;
        let active = Arc::clone(&active);
        let _reader = thread::Builder::new()
            .name("lspc-mcp-reader".to_owned())
            .spawn(move || read_loop(input, front, &active));
    }

    loop {
        // Finished calls are only counted here (issue 15: never selected, so an answered call
        // does not wake the hub; the answering thread already wrote the answer and left
        // `calls`, and the gate keeps progress from following it).
        while done_receiver.try_recv().is_ok() {}
        let tick = hub
            .calls
            .lock()
            .values()
            .filter(|call| call.progress_token.is_some() && call.stream.is_some())
            .map(|call| {
                (call.last_progress + hub.progress_interval)
                    .saturating_duration_since(Instant::now())
            })
            .min()
            .unwrap_or(Duration::from_secs(3600));
        let tick = match hub.updates.deadline(hub.subscribes_resources()) {
            Some(due) => tick.min(due.saturating_duration_since(Instant::now())),
            None => tick,
        };
        select! {
            recv(inputs) -> input => match input {
                Ok(input) => {
                    active.store(true, std::sync::atomic::Ordering::Relaxed);
                    hub.handle_input(input)
                }
                Err(_) => break,
            },
            recv(stdout_broken) -> _ => {
                log::warn!("stdout is closed: shutting down, as at the end of stdin");
                stdout_gone = true;
                break;
            }
            recv(event_receiver) -> event => match event {
                Ok(event) => hub.handle_event(event),
                // The engine is gone: a closed channel would wake this loop at once, forever.
                Err(_) => event_receiver = crossbeam_channel::never(),
            },
            default(tick) => hub.send_progress(),
        }
        hub.send_resource_updates();
    }

    // The input ended: in-flight calls get a short grace period to answer (a client that pipes a
    // request and closes stdin still reads the answer), then are cancelled.
    log::info!("input closed: shutting down");
    for state in hub.clients.values_mut() {
        for listen in std::mem::take(&mut state.listens) {
            let _ = listen.stream.send(Outbound::Message(success_response(
                &listen.id,
                json!({"resultType": "complete", "_meta": {protocol::META_SUBSCRIPTION_ID: listen.id}}),
            )));
        }
    }
    // No grace when no answer can reach the client any more.
    let grace = Instant::now()
        + if stdout_gone {
            Duration::ZERO
        } else {
            EOF_GRACE
        };
    while hub.calls.any_answer_pending() {
        if done_receiver.recv_deadline(grace).is_err() {
            break;
        }
    }
    for call in hub.calls.lock().values_mut() {
        if call.stream.take().is_some() && call.gate.cancel() {
            let _ = hub.context.op_sender.send(Op::Cancel { tag: call.tag });
        }
    }
    let pool = hub.pool.clone();
    drop(hub);
    drop(watch);
    // Dropping the engine answers every waiting op with "gone", so the workers finish.
    drop(engine);
    pool.join();
    0
}

/// Stdio's reader: one line of stdin at a time, started here ([`fast_path`]) or handed to the
/// hub, in order.
fn read_loop(
    mut input: Box<dyn BufRead + Send>,
    front: fast_path::Front,
    active: &std::sync::atomic::AtomicBool,
) {
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        front.out.wait_for_room();
        if buffer.capacity() > KEPT_LINE_BUFFER_BYTES {
            buffer = Vec::new();
        }
        match crate::session::wire::read_line_bytes(&mut input, MAX_LINE_BYTES, &mut buffer) {
            Ok(None) | Err(_) => return,
            Ok(Some(false)) => {
                let message = format!(
                    "invalid request: a line longer than {MAX_LINE_BYTES} bytes (64 MiB) was skipped"
                );
                log::warn!("{message}");
                let _ = front.out.send(Outbound::Message(error_response(
                    &Value::Null,
                    INVALID_REQUEST,
                    &message,
                    None,
                )));
            }
            Ok(Some(true)) => {
                active.store(true, std::sync::atomic::Ordering::Relaxed);
                // Valid UTF-8 is the rule: `from_utf8`'s word-at-a-time check is a tenth of
                // the lossy decoder's (issue 15); invalid bytes still become U+FFFD.
                let line = match std::str::from_utf8(&buffer) {
                    Ok(line) => std::borrow::Cow::Borrowed(line),
                    Err(_) => String::from_utf8_lossy(&buffer),
                };
                if front
                    .dispatch_line(line.trim_end_matches(['\n', '\r']))
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

fn write_loop(messages: Receiver<Outbound>, mut output: impl Write) {
    for message in messages {
        let Outbound::Message(message) = message else {
            continue;
        };
        let Ok(mut line) = serde_json::to_string(&message) else {
            continue;
        };
        line.push('\n');
        if output
            .write_all(line.as_bytes())
            .and_then(|()| output.flush())
            .is_err()
        {
            log::warn!("stdout closed; dropping further MCP messages");
            return;
        }
    }
}

/// Methods lspc answers (anything else gets -32601).
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
    "subscriptions/listen",
];

/// Send on a request's stream (a reader that went away is not an error: its request is over).
fn send_on(stream: &OutboundStream, message: Value) {
    let _ = stream.send(Outbound::Message(message));
}

impl Hub {
    fn handle_input(&mut self, input: HubInput) {
        match input {
            HubInput::Open {
                client,
                notify,
                own_passive,
            } => {
                if self.clients.len() >= MAX_CLIENTS {
                    let oldest = self
                        .clients
                        .iter()
                        .filter(|(_, state)| state.listens.is_empty())
                        .min_by_key(|(_, state)| state.last_active)
                        .map(|(id, _)| id.clone());
                    if let Some(oldest) = oldest {
                        log::info!(
                            "closing client {} (more than {MAX_CLIENTS} clients)",
                            oldest.0
                        );
                        self.close(oldest);
                    }
                }
                if own_passive {
                    let _ = self.context.op_sender.send(Op::OpenPassive {
                        consumer: client.0.clone(),
                    });
                }
                self.clients
                    .insert(client, ClientState::new(notify, own_passive));
            }
            HubInput::Attach { client, notify } => match self.clients.get_mut(&client) {
                Some(state) => state.notify = Some(notify),
                None => {
                    let _ = notify.send(Outbound::UnknownClient);
                }
            },
            HubInput::Message {
                client,
                incoming,
                stream,
            } => {
                let line = fast_path::LineHandled::new(
                    self.stdio
                        .as_ref()
                        .filter(|_| client.0 == STDIO_CLIENT)
                        .cloned(),
                );
                let Some(mut state) = self.clients.remove(&client) else {
                    let _ = stream.send(Outbound::UnknownClient);
                    return;
                };
                state.last_active = Instant::now();
                match incoming {
                    Incoming::Request { id, method, params } => self
                        .handle_request(&client, &mut state, &stream, &line, id, &method, params),
                    Incoming::Notification { method, params } => {
                        self.handle_notification(&client, &mut state, &method, &params)
                    }
                    Incoming::Invalid(error) => send_on(&stream, error),
                    Incoming::Response | Incoming::Blank => {}
                }
                self.clients.insert(client, state);
                drop(line);
            }
            HubInput::Abandon { client, id } => {
                if let Some(mut state) = self.clients.remove(&client) {
                    self.cancel(&client, &mut state, &id);
                    self.clients.insert(client, state);
                }
            }
            HubInput::Wake => {}
            HubInput::Close { client, stream } => {
                if !self.clients.contains_key(&client) {
                    if let Some(stream) = stream {
                        let _ = stream.send(Outbound::UnknownClient);
                    }
                    return;
                }
                self.close(client);
            }
        }
    }

    /// Forget a client: cancel its requests, drop its streams and its passive queue.
    fn close(&mut self, client: ClientId) {
        let Some(state) = self.clients.remove(&client) else {
            return;
        };
        for ((owner, _), call) in self.calls.lock().iter_mut() {
            if *owner == client && call.stream.take().is_some() && call.gate.cancel() {
                log::info!("cancelling {} (client {} closed)", call.what, client.0);
                let _ = self.context.op_sender.send(Op::Cancel { tag: call.tag });
            }
        }
        if state.own_passive {
            let _ = self
                .context
                .op_sender
                .send(Op::ClosePassive { consumer: client.0 });
        }
    }

    /// Cancel request `id` of `client` (MCP §cancellation): the server gets `$/cancelRequest`,
    /// the client gets nothing more for it; a `subscriptions/listen` with that id ends.
    fn cancel(&mut self, client: &ClientId, state: &mut ClientState, request_id: &Value) {
        let key = id_key(request_id);
        if let Some(call) = self.calls.lock().get_mut(&(client.clone(), key.clone())) {
            if call.stream.take().is_some() && call.gate.cancel() {
                log::info!("cancelling {} ({key})", call.what);
                let _ = self.context.op_sender.send(Op::Cancel { tag: call.tag });
            }
        }
        state.listens.retain(|listen| id_key(&listen.id) != key);
    }

    fn handle_notification(
        &mut self,
        client: &ClientId,
        state: &mut ClientState,
        method: &str,
        params: &Value,
    ) {
        match method {
            "notifications/initialized" => log::debug!("client {} initialized", client.0),
            "notifications/cancelled" => {
                let Some(request_id) = params.get("requestId") else {
                    return;
                };
                self.cancel(client, state, request_id);
            }
            other => log::debug!("ignored notification {other}"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn handle_request(
        &mut self,
        client: &ClientId,
        state: &mut ClientState,
        stream: &OutboundStream,
        line: &fast_path::LineHandled,
        id: Value,
        method: &str,
        params: Value,
    ) {
        let send = |message: Value| {
            line.mark();
            send_on(stream, message)
        };
        if !params.is_object() {
            send(error_response(
                &id,
                INVALID_PARAMS,
                "invalid params: params must be an object",
                None,
            ));
            return;
        }
        if !METHODS.contains(&method) {
            send(error_response(
                &id,
                METHOD_NOT_FOUND,
                &format!("method not found: {method}"),
                None,
            ));
            return;
        }
        let era = request_era(&params);
        let modern = match era {
            RequestEra::Reject {
                code,
                message,
                data,
            } => {
                send(error_response(&id, code, &message, data));
                return;
            }
            RequestEra::Modern(_) => true,
            RequestEra::Handshake => false,
        };
        let free_before_initialize = matches!(method, "initialize" | "ping" | "server/discover");
        if !modern && state.handshake.is_none() && !free_before_initialize {
            send(error_response(
                &id,
                INVALID_REQUEST,
                &format!("{method} before initialize: send initialize first, or put io.modelcontextprotocol/protocolVersion and clientCapabilities in the request's _meta (2026-07-28)"),
                None,
            ));
            return;
        }
        if modern
            && matches!(
                method,
                "initialize"
                    | "ping"
                    | "logging/setLevel"
                    | "resources/subscribe"
                    | "resources/unsubscribe"
            )
        {
            send(error_response(
                &id,
                METHOD_NOT_FOUND,
                &format!("method not found: {method} is not part of protocol 2026-07-28"),
                None,
            ));
            return;
        }
        if !modern && method == "subscriptions/listen" {
            send(error_response(
                &id,
                METHOD_NOT_FOUND,
                "method not found: subscriptions/listen needs protocol 2026-07-28 (use resources/subscribe)",
                None,
            ));
            return;
        }
        if matches!(
            method,
            "tools/list" | "tools/call" | "resources/list" | "resources/read"
        ) {
            self.reload_if_changed(state);
        }
        if matches!(method, "tools/call" | "resources/read") {
            if let Some(freshness) = self.freshness.as_ref().filter(|fresh| fresh.stale()) {
                log::debug!(
                    "{method}: workspace files written since the last scan: scanning first"
                );
                freshness.catch_up();
            }
        }
        let reply = |result: Value| -> Value {
            success_response(
                &id,
                if modern {
                    modern_result(result)
                } else {
                    result
                },
            )
        };
        match method {
            "initialize" => {
                let version = match protocol::initialize_version(&params) {
                    Ok(version) => version,
                    Err(message) => {
                        send(error_response(&id, INVALID_PARAMS, &message, None));
                        return;
                    }
                };
                state.handshake = Some(version.to_owned());
                line.handshake_open();
                send(success_response(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": server_capabilities(),
                        "serverInfo": server_info(),
                        "instructions": instructions(&self.context),
                    }),
                ));
            }
            "ping" => send(success_response(&id, json!({}))),
            "server/discover" => send(success_response(
                &id,
                json!({
                    "resultType": "complete",
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "supportedVersions": protocol::supported_versions(),
                    "capabilities": server_capabilities(),
                    "serverInfo": server_info(),
                    "instructions": instructions(&self.context),
                    "_meta": {protocol::META_SERVER_INFO: server_info()},
                }),
            )),
            "tools/list" => {
                self.offered =
                    tools::offered_tools(&engine::server_details(&self.context.op_sender));
                let list: Vec<Value> = self
                    .offered
                    .iter()
                    .map(|name| tools::tool_definition(name))
                    .collect();
                send(reply(json!({ "tools": list })));
            }
            "resources/list" => send(reply(resources::list())),
            "resources/templates/list" => send(reply(resources::templates())),
            "logging/setLevel" => {
                match params.get("level").and_then(Value::as_str) {
                    Some(level) if protocol::LOG_LEVELS.contains(&level) => {
                        state.log_level = level.to_owned();
                        send(success_response(&id, json!({})));
                    }
                    _ => send(error_response(
                        &id,
                        INVALID_PARAMS,
                        "invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency",
                        None,
                    )),
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    send(error_response(&id, INVALID_PARAMS, "invalid params: uri (a string) is required", None));
                    return;
                };
                if method == "resources/subscribe" {
                    state.legacy_subscriptions.insert(uri.to_owned());
                } else {
                    state.legacy_subscriptions.remove(uri);
                }
                send(success_response(&id, json!({})));
            }
            "subscriptions/listen" => {
                let filter = params.get("notifications").cloned().unwrap_or(json!({}));
                let tools = filter.get("toolsListChanged").and_then(Value::as_bool) == Some(true);
                let resources: BTreeSet<String> = filter
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default();
                let mut acknowledged = json!({});
                if tools {
                    acknowledged["toolsListChanged"] = json!(true);
                }
                if !resources.is_empty() {
                    acknowledged["resourceSubscriptions"] = json!(resources);
                }
                send(notification(
                    "notifications/subscriptions/acknowledged",
                    json!({"_meta": {protocol::META_SUBSCRIPTION_ID: id}, "notifications": acknowledged}),
                ));
                state.listens.push(Listen { id, tools, resources, stream: stream.clone() });
            }
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    send(error_response(&id, INVALID_PARAMS, "invalid params: name (a string) is required", None));
                    return;
                };
                if !tools::is_tool(&name) {
                    send(error_response(
                        &id,
                        INVALID_PARAMS,
                        &format!("invalid params: unknown tool {name:?} (see tools/list)"),
                        None,
                    ));
                    return;
                }
                let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
                let mut context = self.context.clone();
                context.passive_consumer = state.own_passive.then(|| client.0.clone());
                self.spawn(client, stream, id, &params, format!("tools/call {name}"), modern, move |tag, gate| {
                    context.cancelled = Some(Arc::new(move || gate.is_cancelled()));
                    Ok(tools::call_tool(&context, &name, &arguments, tag))
                });
            }
            "resources/read" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
                    send(error_response(&id, INVALID_PARAMS, "invalid params: uri (a string) is required", None));
                    return;
                };
                let context = self.context.clone();
                self.spawn(client, stream, id, &params, format!("resources/read {uri}"), modern, move |_, _| {
                    resources::read(&context, &uri).map_err(|error| (error.code, error.message))
                });
            }
            _ => send(error_response(&id, METHOD_NOT_FOUND, &format!("method not found: {method}"), None)),
        }
    }

    /// Run `work` on a worker, which writes its answer ([`Completion::finish`]).
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        &mut self,
        client: &ClientId,
        stream: &OutboundStream,
        id: Value,
        params: &Value,
        what: String,
        modern: bool,
        work: impl FnOnce(u64, calls::AnswerGate) -> Result<Value, (i64, String)> + Send + 'static,
    ) {
        let key = (client.clone(), id_key(&id));
        let tag = self.calls.next_tag();
        let call = InFlight::new(tag, protocol::progress_token(params), stream, what);
        let Ok(gate) = self.calls.register(key.clone(), call) else {
            send_on(
                stream,
                error_response(
                    &id,
                    INVALID_REQUEST,
                    "invalid request: a request with this id is still running",
                    None,
                ),
            );
            return;
        };
        let work_gate = gate.clone();
        let completion = Completion {
            calls: Arc::clone(&self.calls),
            key,
            tag,
            gate,
            stream: stream.clone(),
            done_sender: self.done_sender.clone(),
        };
        self.pool.submit(Box::new(move || {
            let response = match work(tag, work_gate) {
                Ok(result) => success_response(
                    &id,
                    if modern {
                        modern_result(result)
                    } else {
                        result
                    },
                ),
                Err((code, message)) => error_response(&id, code, &message, None),
            };
            completion.finish(response);
        }));
    }

    fn send_progress(&mut self) {
        let now = Instant::now();
        for call in self.calls.lock().values_mut() {
            let (Some(token), Some(stream)) = (&call.progress_token, &call.stream) else {
                continue;
            };
            if now < call.last_progress + self.progress_interval {
                continue;
            }
            call.last_progress = now;
            call.progress += 1;
            let progress = notification(
                "notifications/progress",
                json!({
                    "progressToken": token,
                    "progress": call.progress,
                    "message": format!(
                        "{}: waiting for the language server ({} s)",
                        call.what,
                        call.started.elapsed().as_secs()
                    ),
                }),
            );
            call.gate.notify(|| send_on(stream, progress));
        }
    }

    /// Whether some client subscribes to some resource (either era).
    fn subscribes_resources(&self) -> bool {
        self.clients.values().any(|state| {
            (state.handshake.is_some() && !state.legacy_subscriptions.is_empty())
                || state
                    .listens
                    .iter()
                    .any(|listen| !listen.resources.is_empty())
        })
    }

    /// Once per loop turn: send the coalesced `notifications/resources/updated` that are due
    /// (one per subscribed URI and subscription), and run the disk watch when it is due
    /// ([`updates`]): open documents changed on disk are re-checked, so their servers
    /// re-analyse and the new diagnostics arrive as updates.
    fn send_resource_updates(&mut self) {
        let now = Instant::now();
        let due = self.updates.take_due(now);
        for state in self.clients.values_mut() {
            for uri in &due {
                if state.handshake.is_some() && state.legacy_subscriptions.contains(uri) {
                    state.notify(notification(
                        "notifications/resources/updated",
                        json!({ "uri": uri }),
                    ));
                }
                for listen in &state.listens {
                    if listen.resources.contains(uri) {
                        send_on(
                            &listen.stream,
                            notification(
                                "notifications/resources/updated",
                                json!({"_meta": {protocol::META_SUBSCRIPTION_ID: listen.id}, "uri": uri}),
                            ),
                        );
                    }
                }
            }
        }
        if !self.subscribes_resources() || !self.updates.disk_check_due(now) {
            return;
        }
        let open = engine::open_documents(&self.context.op_sender);
        let changed = self.updates.changed_on_disk(open, now);
        if changed.is_empty() {
            return;
        }
        log::debug!("changed on disk, re-checking: {changed:?}");
        // Fire and forget: the engine re-reads the files, sends `didChange` where the text
        // differs and waits for settled diagnostics (pulling from pull servers, which publish
        // nothing by themselves); they come back as `DiagnosticsChanged` events.
        let (reply, _) = bounded(1);
        let _ = self.context.op_sender.send(Op::Diagnostics {
            paths: changed,
            timeout: self.context.timeout,
            reply,
        });
    }

    fn handle_event(&mut self, event: FrontendEvent) {
        match event {
            FrontendEvent::DiagnosticsChanged { path } => {
                let uris = [
                    resources::DIAGNOSTICS_URI.to_owned(),
                    resources::file_uri(&self.context.root, &path),
                ];
                for uri in uris {
                    self.updates.changed(uri, Instant::now());
                }
            }
            FrontendEvent::ServerInitialized { .. } => self.refresh_tools(None),
            FrontendEvent::ServerFailed {
                server,
                message,
                permanent,
            } => {
                let level = if permanent { "error" } else { "warning" };
                for state in self.clients.values_mut() {
                    if state.handshake.is_some() && protocol::level_passes(level, &state.log_level)
                    {
                        state.notify(notification(
                            "notifications/message",
                            json!({"level": level, "logger": format!("lspc/{server}"), "data": message}),
                        ));
                    }
                }
                if permanent {
                    self.refresh_tools(None);
                }
            }
        }
    }

    /// Issue 4: when a file the configuration came from changed, load it again and let the
    /// engine apply it (changed servers restart lazily, others keep running), then tell the
    /// clients when the tool set changed. Cheap when nothing changed (a few `stat` calls).
    /// `current` is the state of the client whose request is being handled (out of
    /// `self.clients` meanwhile): it is told too.
    fn reload_if_changed(&mut self, current: &mut ClientState) {
        let Some(watch) = &self.config_watch else {
            return;
        };
        let options = {
            let mut watch = watch
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if !watch.changed() {
                return;
            }
            watch.options().clone()
        };
        let config = crate::config::load(&options);
        let errors = config_error_texts(&config);
        let new_errors: Vec<&str> = errors
            .iter()
            .filter(|error| !self.accepted_config_errors.contains(error))
            .map(String::as_str)
            .collect();
        if !new_errors.is_empty() {
            // A half-written save or a typo must not stop the servers it names: keep serving
            // the previous configuration until the files change again.
            let text = format!(
                "configuration not reloaded, keeping the previous one: {}",
                new_errors.join("; ")
            );
            log::warn!("{text}");
            for state in self.clients.values_mut().chain([&mut *current]) {
                if state.handshake.is_some() && protocol::level_passes("warning", &state.log_level)
                {
                    state.notify(notification(
                        "notifications/message",
                        json!({"level": "warning", "logger": "lspc", "data": text}),
                    ));
                }
            }
            return;
        }
        // Applied only without new errors, so the list can only shrink here.
        *self
            .context
            .config_errors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = errors.clone();
        self.accepted_config_errors = errors;
        let (reply, receiver) = bounded(1);
        if self
            .context
            .op_sender
            .send(Op::Reload { config, reply })
            .is_err()
        {
            return;
        }
        // Bounded: stopping servers takes at most their shutdown timeouts plus a few seconds.
        let Ok(report) = receiver.recv_timeout(Duration::from_secs(60)) else {
            log::warn!("the configuration reload did not finish in time");
            return;
        };
        if !report.is_empty() {
            for state in self.clients.values_mut().chain([&mut *current]) {
                if state.handshake.is_some() && protocol::level_passes("info", &state.log_level) {
                    state.notify(notification(
                        "notifications/message",
                        json!({"level": "info", "logger": "lspc", "data": format!(
                            "configuration reloaded: restarted {:?}, removed {:?}, added {:?}",
                            report.restarted, report.removed, report.added
                        )}),
                    ));
                }
            }
        }
        self.refresh_tools(Some(current));
    }

    /// Tell every client (and `current`, out of `self.clients` while its request is handled)
    /// when the tool set changed.
    fn refresh_tools(&mut self, current: Option<&mut ClientState>) {
        let offered = tools::offered_tools(&engine::server_details(&self.context.op_sender));
        if offered == self.offered {
            return;
        }
        self.offered = offered;
        for state in self.clients.values_mut().chain(current) {
            if state.handshake.is_some() {
                state.notify(notification("notifications/tools/list_changed", json!({})));
            }
            for listen in &state.listens {
                if listen.tools {
                    send_on(
                        &listen.stream,
                        notification(
                            "notifications/tools/list_changed",
                            json!({"_meta": {protocol::META_SUBSCRIPTION_ID: listen.id}}),
                        ),
                    );
                }
            }
        }
    }
}

/// `config`'s errors as text, to tell the new ones of a reload from those already in force.
fn config_error_texts(config: &crate::config::Config) -> Vec<String> {
    config.errors.iter().map(ToString::to_string).collect()
}

/// Add the 2026-07-28 result fields: `resultType`, cache hints on list/read results, and `_meta`
/// with the server's identity.
fn modern_result(mut result: Value) -> Value {
    if let Value::Object(object) = &mut result {
        object
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
        // CacheableResult (2026-07-28 schema): list and read results must say how long they stay
        // fresh; lspc's change with server state, so never (0 ms), and only for this client.
        if ["tools", "resources", "resourceTemplates", "contents"]
            .iter()
            .any(|key| object.contains_key(*key))
        {
            object.insert("ttlMs".to_owned(), json!(0));
            object.insert("cacheScope".to_owned(), json!("private"));
        }
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(protocol::META_SERVER_INFO.to_owned(), server_info());
        }
    }
    result
}
