//! `lspc mcp`: an MCP server over stdio (newline-delimited JSON-RPC 2.0) exposing the engine and
//! the queries as tools and resources (issue 4; seed 004 is the single-server original).
//!
//! Threads: a reader thread turns stdin into lines; one writer thread owns stdout (every message
//! goes through its channel, so lines never interleave and nothing else reaches stdout); a bounded
//! pool of worker threads runs tool calls and resource reads, which block on the engine; the main
//! loop parses, dispatches, answers cheap requests itself, relays engine events as notifications
//! and sends progress while calls wait.
//!
//! Invariants:
//! - Every request gets exactly one response, except a cancelled one, which gets none (MCP
//!   §cancellation: "MUST NOT send any further messages for it").
//! - stdin EOF: in-flight calls get `EOF_GRACE` (10 s) to answer, the rest are cancelled; workers are
//!   joined, the engine shuts every server down (`shutdown`/`exit`), then [`run`] returns 0.
//! - Both eras are served by one process: `initialize` opens a handshake-era session; a request
//!   whose `_meta` carries `io.modelcontextprotocol/protocolVersion` is served statelessly.

pub mod cli;
pub mod edit_tools;
pub mod protocol;
pub mod reload;
pub mod resources;
pub mod tool_arguments;
pub mod tools;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select, unbounded, Receiver, Sender};
use serde_json::{json, Value};

use crate::config::ConfigOptions;
use crate::engine::{self, EngineOptions, FrontendEvent, Op};
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
    /// Worker threads for tool calls and resource reads.
    pub workers: usize,
    /// How often `notifications/progress` is sent for a call that asked for progress.
    pub progress_interval: Duration,
    /// What the configuration was loaded from, to reload it when those files change (issue 4);
    /// `None` (single-server mode, tests) never reloads.
    pub reload: Option<ConfigOptions>,
}

impl McpOptions {
    /// Defaults: 60 s per call, 4 workers, progress every second.
    pub fn new(engine: EngineOptions) -> McpOptions {
        McpOptions {
            engine,
            timeout: Duration::from_secs(60),
            workers: 4,
            progress_interval: Duration::from_secs(1),
            reload: None,
        }
    }
}

const SERVER_NAME: &str = "lspc";
/// After stdin ends, how long in-flight calls may still take to answer before they are cancelled.
const EOF_GRACE: Duration = Duration::from_secs(10);
const INSTRUCTIONS: &str = "lspc gives you a headless editor over the project's language servers. \
Positions are 1-based lines and 1-based columns in characters; give `symbol` (a name on the line) \
instead of `column` when unsure. Files are relative to the workspace root. Tool results carry new \
diagnostics under newDiagnostics.";

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

/// Serve MCP on stdin/stdout until stdin ends; returns the exit status (0).
pub fn serve_stdio(options: McpOptions) -> i32 {
    let input = Box::new(std::io::BufReader::new(std::io::stdin()));
    run(options, input, std::io::stdout())
}

/// One unit of work for the pool.
type Job = Box<dyn FnOnce() + Send>;

struct WorkerPool {
    sender: Option<Sender<Job>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl WorkerPool {
    fn new(size: usize) -> WorkerPool {
        let (sender, receiver) = unbounded::<Job>();
        let threads = (0..size.max(1))
            .filter_map(|index| {
                let receiver = receiver.clone();
                thread::Builder::new()
                    .name(format!("lspc-mcp-worker-{index}"))
                    .spawn(move || {
                        for job in receiver {
                            job();
                        }
                    })
                    .ok()
            })
            .collect();
        WorkerPool {
            sender: Some(sender),
            threads,
        }
    }

    fn submit(&self, job: Job) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(job);
        }
    }

    fn join(mut self) {
        self.sender = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A request running on a worker.
struct InFlight {
    tag: u64,
    progress_token: Option<Value>,
    started: Instant,
    last_progress: Instant,
    progress: u64,
    cancelled: bool,
    /// `tools/call NAME` or `resources/read URI`, for logs and progress messages.
    what: String,
}

/// An open `subscriptions/listen` stream (2026-07-28).
struct Listen {
    id: Value,
    tools: bool,
    resources: BTreeSet<String>,
}

/// A worker's answer.
struct Done {
    key: String,
    response: Value,
}

struct Server {
    context: ToolContext,
    out: Sender<Value>,
    done_sender: Sender<Done>,
    pool: WorkerPool,
    /// The negotiated handshake version once `initialize` was answered.
    handshake: Option<String>,
    /// Minimum level of `notifications/message` for the handshake session (`logging/setLevel`).
    log_level: String,
    legacy_subscriptions: BTreeSet<String>,
    listens: Vec<Listen>,
    offered: Vec<&'static str>,
    inflight: HashMap<String, InFlight>,
    next_tag: u64,
    progress_interval: Duration,
    config_watch: Option<reload::ConfigWatch>,
}

fn id_key(id: &Value) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// Run the server on `input`/`output` (stdio in production; pipes in tests).
pub fn run(
    options: McpOptions,
    input: Box<dyn BufRead + Send>,
    output: impl Write + Send + 'static,
) -> i32 {
    let root = options.engine.config.root.clone();
    let root = root.canonicalize().unwrap_or(root);
    let engine = crate::session::start_engine(options.engine.clone());
    let (event_sender, event_receiver) = unbounded::<FrontendEvent>();
    let _ = engine.op_sender().send(Op::SubscribeEvents {
        sender: event_sender,
    });

    let (out, out_receiver) = unbounded::<Value>();
    let writer = thread::Builder::new()
        .name("lspc-mcp-writer".to_owned())
        .spawn(move || write_loop(out_receiver, output))
        .ok();
    let (line_sender, line_receiver) = bounded::<Option<String>>(64);
    let _reader = thread::Builder::new()
        .name("lspc-mcp-reader".to_owned())
        .spawn(move || read_loop(input, line_sender));
    let (done_sender, done_receiver) = unbounded::<Done>();

    let context = ToolContext {
        op_sender: engine.op_sender(),
        root: PathBuf::from(&root),
        timeout: options.timeout,
        analysed_files: crate::query::AnalysedFiles::default(),
    };
    let offered = tools::offered_tools(&engine::server_details(&context.op_sender));
    let mut server = Server {
        context,
        out,
        done_sender,
        pool: WorkerPool::new(options.workers),
        handshake: None,
        log_level: "info".to_owned(),
        legacy_subscriptions: BTreeSet::new(),
        listens: Vec::new(),
        offered,
        inflight: HashMap::new(),
        next_tag: 1,
        progress_interval: options.progress_interval,
        config_watch: options.reload.clone().map(reload::ConfigWatch::new),
    };

    loop {
        let tick = server
            .inflight
            .values()
            .filter(|call| call.progress_token.is_some() && !call.cancelled)
            .map(|call| {
                (call.last_progress + server.progress_interval)
                    .saturating_duration_since(Instant::now())
            })
            .min()
            .unwrap_or(Duration::from_secs(3600));
        select! {
            recv(line_receiver) -> line => match line {
                Ok(Some(line)) => server.handle_line(&line),
                _ => break,
            },
            recv(done_receiver) -> done => {
                if let Ok(done) = done {
                    server.finish(done);
                }
            },
            recv(event_receiver) -> event => {
                if let Ok(event) = event {
                    server.handle_event(event);
                }
            },
            default(tick) => server.send_progress(),
        }
    }

    // stdin ended: in-flight calls get a short grace period to answer (a client that pipes a
    // request and closes stdin still reads the answer), then are cancelled.
    log::info!("stdin closed: shutting down");
    for listen in std::mem::take(&mut server.listens) {
        let _ = server.out.send(success_response(
            &listen.id,
            json!({"resultType": "complete", "_meta": {protocol::META_SUBSCRIPTION_ID: listen.id}}),
        ));
    }
    let grace = Instant::now() + EOF_GRACE;
    while !server.inflight.is_empty() {
        match done_receiver.recv_deadline(grace) {
            Ok(done) => server.finish(done),
            Err(_) => break,
        }
    }
    for call in server.inflight.values_mut() {
        call.cancelled = true;
        let _ = server.context.op_sender.send(Op::Cancel { tag: call.tag });
    }
    let Server { pool, out, .. } = server;
    // Dropping the engine answers every waiting op with "gone", so the workers finish.
    drop(engine);
    pool.join();
    drop(out);
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    0
}

fn read_loop(mut input: Box<dyn BufRead + Send>, lines: Sender<Option<String>>) {
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match input.read_until(b'\n', &mut buffer) {
            Ok(0) | Err(_) => {
                let _ = lines.send(None);
                return;
            }
            Ok(_) => {
                let line = String::from_utf8_lossy(&buffer)
                    .trim_end_matches(['\n', '\r'])
                    .to_owned();
                if lines.send(Some(line)).is_err() {
                    return;
                }
            }
        }
    }
}

fn write_loop(messages: Receiver<Value>, mut output: impl Write) {
    for message in messages {
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

impl Server {
    fn send(&self, message: Value) {
        let _ = self.out.send(message);
    }

    fn handle_line(&mut self, line: &str) {
        match protocol::parse_line(line) {
            Incoming::Request { id, method, params } => self.handle_request(id, &method, params),
            Incoming::Notification { method, params } => self.handle_notification(&method, &params),
            Incoming::Invalid(error) => self.send(error),
            Incoming::Response | Incoming::Blank => {}
        }
    }

    fn handle_notification(&mut self, method: &str, params: &Value) {
        match method {
            "notifications/initialized" => log::debug!("client initialized"),
            "notifications/cancelled" => {
                let Some(request_id) = params.get("requestId") else {
                    return;
                };
                let key = id_key(request_id);
                if let Some(call) = self.inflight.get_mut(&key) {
                    log::info!("cancelling {} ({key})", call.what);
                    call.cancelled = true;
                    let _ = self.context.op_sender.send(Op::Cancel { tag: call.tag });
                }
                self.listens.retain(|listen| id_key(&listen.id) != key);
            }
            other => log::debug!("ignored notification {other}"),
        }
    }

    fn handle_request(&mut self, id: Value, method: &str, params: Value) {
        if !params.is_object() {
            self.send(error_response(
                &id,
                INVALID_PARAMS,
                "invalid params: params must be an object",
                None,
            ));
            return;
        }
        if !METHODS.contains(&method) {
            self.send(error_response(
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
                self.send(error_response(&id, code, &message, data));
                return;
            }
            RequestEra::Modern(_) => true,
            RequestEra::Handshake => false,
        };
        let free_before_initialize = matches!(method, "initialize" | "ping" | "server/discover");
        if !modern && self.handshake.is_none() && !free_before_initialize {
            self.send(error_response(
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
            self.send(error_response(
                &id,
                METHOD_NOT_FOUND,
                &format!("method not found: {method} is not part of protocol 2026-07-28"),
                None,
            ));
            return;
        }
        if !modern && method == "subscriptions/listen" {
            self.send(error_response(
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
            self.reload_if_changed();
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
                let requested = params.get("protocolVersion").and_then(Value::as_str);
                let version = protocol::negotiate_handshake(requested);
                self.handshake = Some(version.to_owned());
                self.send(success_response(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": server_capabilities(),
                        "serverInfo": server_info(),
                        "instructions": INSTRUCTIONS,
                    }),
                ));
            }
            "ping" => self.send(success_response(&id, json!({}))),
            "server/discover" => self.send(success_response(
                &id,
                json!({
                    "resultType": "complete",
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "supportedVersions": protocol::supported_versions(),
                    "capabilities": server_capabilities(),
                    "serverInfo": server_info(),
                    "instructions": INSTRUCTIONS,
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
                self.send(reply(json!({ "tools": list })));
            }
            "resources/list" => self.send(reply(resources::list())),
            "resources/templates/list" => self.send(reply(resources::templates())),
            "logging/setLevel" => {
                match params.get("level").and_then(Value::as_str) {
                    Some(level) if protocol::LOG_LEVELS.contains(&level) => {
                        self.log_level = level.to_owned();
                        self.send(success_response(&id, json!({})));
                    }
                    _ => self.send(error_response(
                        &id,
                        INVALID_PARAMS,
                        "invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency",
                        None,
                    )),
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    self.send(error_response(&id, INVALID_PARAMS, "invalid params: uri (a string) is required", None));
                    return;
                };
                if method == "resources/subscribe" {
                    self.legacy_subscriptions.insert(uri.to_owned());
                } else {
                    self.legacy_subscriptions.remove(uri);
                }
                self.send(success_response(&id, json!({})));
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
                self.send(notification(
                    "notifications/subscriptions/acknowledged",
                    json!({"_meta": {protocol::META_SUBSCRIPTION_ID: id}, "notifications": acknowledged}),
                ));
                self.listens.push(Listen { id, tools, resources });
            }
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    self.send(error_response(&id, INVALID_PARAMS, "invalid params: name (a string) is required", None));
                    return;
                };
                if !tools::is_tool(&name) {
                    self.send(error_response(
                        &id,
                        INVALID_PARAMS,
                        &format!("invalid params: unknown tool {name:?} (see tools/list)"),
                        None,
                    ));
                    return;
                }
                let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
                let context = self.context.clone();
                self.spawn(id, &params, format!("tools/call {name}"), modern, move |tag| {
                    Ok(tools::call_tool(&context, &name, &arguments, tag))
                });
            }
            "resources/read" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
                    self.send(error_response(&id, INVALID_PARAMS, "invalid params: uri (a string) is required", None));
                    return;
                };
                let context = self.context.clone();
                self.spawn(id, &params, format!("resources/read {uri}"), modern, move |_| {
                    resources::read(&context, &uri).map_err(|error| (error.code, error.message))
                });
            }
            _ => self.send(error_response(&id, METHOD_NOT_FOUND, &format!("method not found: {method}"), None)),
        }
    }

    /// Run `work` on a worker; its answer comes back through [`Server::finish`].
    fn spawn(
        &mut self,
        id: Value,
        params: &Value,
        what: String,
        modern: bool,
        work: impl FnOnce(u64) -> Result<Value, (i64, String)> + Send + 'static,
    ) {
        let key = id_key(&id);
        if self.inflight.contains_key(&key) {
            self.send(error_response(
                &id,
                INVALID_REQUEST,
                "invalid request: a request with this id is still running",
                None,
            ));
            return;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        let now = Instant::now();
        self.inflight.insert(
            key.clone(),
            InFlight {
                tag,
                progress_token: protocol::progress_token(params),
                started: now,
                last_progress: now,
                progress: 0,
                cancelled: false,
                what,
            },
        );
        let done = self.done_sender.clone();
        self.pool.submit(Box::new(move || {
            let response = match work(tag) {
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
            let _ = done.send(Done { key, response });
        }));
    }

    fn finish(&mut self, done: Done) {
        let Some(call) = self.inflight.remove(&done.key) else {
            return;
        };
        if call.cancelled {
            log::debug!("dropping the answer to cancelled {}", call.what);
            return;
        }
        log::debug!(
            "{} answered in {} ms",
            call.what,
            call.started.elapsed().as_millis()
        );
        self.send(done.response);
    }

    fn send_progress(&mut self) {
        let now = Instant::now();
        let mut messages = Vec::new();
        for call in self.inflight.values_mut() {
            let Some(token) = &call.progress_token else {
                continue;
            };
            if call.cancelled || now < call.last_progress + self.progress_interval {
                continue;
            }
            call.last_progress = now;
            call.progress += 1;
            messages.push(notification(
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
            ));
        }
        for message in messages {
            self.send(message);
        }
    }

    fn handle_event(&mut self, event: FrontendEvent) {
        match event {
            FrontendEvent::DiagnosticsChanged { path } => {
                let uris = [
                    resources::DIAGNOSTICS_URI.to_owned(),
                    resources::file_uri(&self.context.root, &path),
                ];
                for uri in &uris {
                    if self.handshake.is_some() && self.legacy_subscriptions.contains(uri) {
                        self.send(notification(
                            "notifications/resources/updated",
                            json!({ "uri": uri }),
                        ));
                    }
                    for listen in &self.listens {
                        if listen.resources.contains(uri) {
                            self.send(notification(
                                "notifications/resources/updated",
                                json!({"_meta": {protocol::META_SUBSCRIPTION_ID: listen.id}, "uri": uri}),
                            ));
                        }
                    }
                }
            }
            FrontendEvent::ServerInitialized { .. } => self.refresh_tools(),
            FrontendEvent::ServerFailed {
                server,
                message,
                permanent,
            } => {
                let level = if permanent { "error" } else { "warning" };
                if self.handshake.is_some() && protocol::level_passes(level, &self.log_level) {
                    self.send(notification(
                        "notifications/message",
                        json!({"level": level, "logger": format!("lspc/{server}"), "data": message}),
                    ));
                }
                if permanent {
                    self.refresh_tools();
                }
            }
        }
    }

    /// Issue 4: when a file the configuration came from changed, load it again and let the
    /// engine apply it (changed servers restart lazily, others keep running), then tell the
    /// client when the tool set changed. Cheap when nothing changed (a few `stat` calls).
    fn reload_if_changed(&mut self) {
        let Some(watch) = &mut self.config_watch else {
            return;
        };
        if !watch.changed() {
            return;
        }
        let config = crate::config::load(watch.options());
        for error in &config.errors {
            log::warn!("config error: {error}");
        }
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
        if !report.is_empty()
            && self.handshake.is_some()
            && protocol::level_passes("info", &self.log_level)
        {
            self.send(notification(
                "notifications/message",
                json!({"level": "info", "logger": "lspc", "data": format!(
                    "configuration reloaded: restarted {:?}, removed {:?}, added {:?}",
                    report.restarted, report.removed, report.added
                )}),
            ));
        }
        self.refresh_tools();
    }

    fn refresh_tools(&mut self) {
        let offered = tools::offered_tools(&engine::server_details(&self.context.op_sender));
        if offered == self.offered {
            return;
        }
        self.offered = offered;
        if self.handshake.is_some() {
            self.send(notification("notifications/tools/list_changed", json!({})));
        }
        for listen in &self.listens {
            if listen.tools {
                self.send(notification(
                    "notifications/tools/list_changed",
                    json!({"_meta": {protocol::META_SUBSCRIPTION_ID: listen.id}}),
                ));
            }
        }
    }
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
