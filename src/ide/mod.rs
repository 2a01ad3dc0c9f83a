//! `lspc ide`: lspc as the IDE an agent connects to (issue 18; seed 000 "IDE discovery and
//! connection"). lspc listens on a loopback port for MCP over WebSocket, advertises itself with a
//! lock file in `<config>/ide/`, and answers the IDE tools (`getDiagnostics` before and after each
//! edit, `openFile`, `openDiff`, ...) from its language servers. `lspc ide list` is the other side:
//! the discovery the agent runs.
//!
//! Modules: [`lock`] (the lock file), [`websocket`] (listener, authenticated handshake,
//! connection threads), [`tools`] (the tools and their answer shapes), [`discovery`]
//! (`lspc ide list`).
//!
//! Threads: the listener and one thread per connection move frames; tool calls that wait on the
//! engine run on their own named threads, joined before exit; this loop owns the editor state and
//! every connection's session, and is the only one that answers.
//!
//! Invariants:
//! - MCP is the handshake era (`initialize` first), one JSON-RPC message per text frame; every
//!   request gets one answer; the `ide_connected` notification is accepted (and logged).
//! - The lock file exists only while the listener runs: it is written after the port is bound
//!   and removed before the listener stops, on every way out of [`run`] (SIGINT, SIGTERM,
//!   SIGHUP, the child command ending, a failure).
//! - With a child command (`lspc ide -- claude`), SIGINT is left to the child (Ctrl-C interrupts
//!   the agent's turn, not the IDE); SIGTERM and SIGHUP end lspc, which then sends the child
//!   SIGTERM (SIGKILL after 5 s).

pub mod discovery;
pub mod lock;
pub mod tools;
pub mod websocket;

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{never, select, unbounded, Receiver, Sender};
use serde_json::{json, Value};

use crate::engine::EngineOptions;
use crate::exit::{EXIT_FOUND, EXIT_OK, EXIT_SERVER, EXIT_USAGE};
use crate::mcp::protocol::{
    self, error_response, success_response, Incoming, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND,
};
use tools::{DiffMode, EditorState, ToolCall, ToolContext};
use websocket::{ConnectionEvent, WebSocketServer};

/// Settings of one `lspc ide` run.
#[derive(Debug, Clone)]
pub struct IdeOptions {
    pub engine: EngineOptions,
    pub diff_mode: DiffMode,
    /// The port to listen on; `0` lets the system pick a free one.
    pub port: u16,
    /// How long one tool call may wait for its servers.
    pub timeout: Duration,
    /// `lspc ide -- COMMAND ARGS...`: run COMMAND with `CLAUDE_CODE_SSE_PORT` and
    /// `ENABLE_IDE_INTEGRATION=true` set, and exit with its status when it ends.
    pub command: Option<(OsString, Vec<OsString>)>,
}

/// One connected client's session.
struct Session {
    sender: Sender<String>,
    /// The negotiated version once `initialize` was answered.
    handshake: Option<String>,
}

/// A finished tool call: the answer for the connection that asked.
struct Done {
    connection_id: u64,
    response: Value,
}

struct Ide {
    context: ToolContext,
    state: EditorState,
    sessions: HashMap<u64, Session>,
    done_sender: Sender<Done>,
    workers: Vec<JoinHandle<()>>,
}

/// Run `lspc ide` until a signal (or the child command) ends it; returns the exit status.
pub fn run(options: IdeOptions) -> i32 {
    crate::session::serve_if_session_process(&options.engine);
    let root = options.engine.config.root.clone();
    let root = root.canonicalize().unwrap_or(root);
    let Some(lock_dir) = lock::lock_dir() else {
        eprintln!("lspc: ide: neither CLAUDE_CONFIG_DIR nor HOME is set, so there is no place for the lock file");
        return EXIT_USAGE;
    };
    for stale in lock::remove_stale_locks(&lock_dir) {
        eprintln!(
            "lspc: ide: removed the stale lock file {} (its lspc is gone)",
            stale.display()
        );
    }
    let token = match lock::new_auth_token() {
        Ok(token) => token,
        Err(error) => {
            eprintln!("lspc: ide: cannot make an auth token from /dev/urandom: {error}");
            return EXIT_SERVER;
        }
    };
    let signals = match crate::signals::install() {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("lspc: ide: cannot install signal handlers: {error}");
            return EXIT_SERVER;
        }
    };
    let (event_sender, event_receiver) = unbounded::<ConnectionEvent>();
    let server = match WebSocketServer::start(options.port, token.clone(), event_sender) {
        Ok(server) => server,
        Err(error) => {
            eprintln!(
                "lspc: ide: cannot listen on 127.0.0.1:{}: {error}",
                options.port
            );
            return EXIT_USAGE;
        }
    };
    let port = server.port();
    let config = Arc::new(options.engine.config.clone());
    let mut engine_options = options.engine.clone();
    engine_options.handle_signals = false;
    let engine = crate::session::start_engine(engine_options);
    let record = lock::LockRecord {
        pid: std::process::id(),
        workspace_folders: vec![root.display().to_string()],
        ide_name: lock::IDE_NAME.to_owned(),
        transport: "ws".to_owned(),
        running_in_windows: false,
        auth_token: token,
    };
    let lock_file = match lock::LockFile::write(&lock_dir, port, &record) {
        Ok(lock_file) => lock_file,
        Err(error) => {
            eprintln!(
                "lspc: ide: cannot write {}: {error}",
                lock_dir.join(format!("{port}.lock")).display()
            );
            drop(server);
            engine.shutdown();
            return EXIT_SERVER;
        }
    };
    eprintln!(
        "lspc: ide: listening on ws://127.0.0.1:{port} for {} (lock file {}){}",
        root.display(),
        lock_file.path().display(),
        if options.command.is_some() {
            ""
        } else {
            "; stop with Ctrl-C"
        }
    );
    let (child_receiver, child) = match &options.command {
        Some((program, args)) => match spawn_child(program, args, port) {
            Ok((receiver, pid, thread)) => (receiver, Some((pid, thread))),
            Err(error) => {
                eprintln!(
                    "lspc: ide: cannot run {}: {error}",
                    program.to_string_lossy()
                );
                drop(lock_file);
                drop(server);
                engine.shutdown();
                return EXIT_USAGE;
            }
        },
        None => (never(), None),
    };

    let (done_sender, done_receiver) = unbounded::<Done>();
    let mut ide = Ide {
        context: ToolContext {
            op_sender: engine.op_sender(),
            root,
            config,
            diff_mode: options.diff_mode,
            timeout: options.timeout,
        },
        state: EditorState::default(),
        sessions: HashMap::new(),
        done_sender,
        workers: Vec::new(),
    };
    let mut child_ended = false;
    let status = loop {
        select! {
            recv(event_receiver) -> event => match event {
                Ok(event) => ide.handle_connection_event(event),
                Err(_) => break EXIT_SERVER,
            },
            recv(done_receiver) -> done => {
                if let Ok(done) = done {
                    ide.finish(done);
                }
            },
            recv(signals) -> signal => {
                let signal = signal.unwrap_or(libc::SIGTERM);
                // Ctrl-C reaches the whole foreground group; the agent uses it to interrupt a
                // turn, so while it runs lspc leaves SIGINT to it, as a shell does for a
                // foreground job, and ends when it ends.
                if signal == libc::SIGINT && child.is_some() {
                    log::info!("SIGINT while the command runs: left to the command");
                    continue;
                }
                log::info!("signal {signal}: shutting down");
                break 128 + signal;
            },
            recv(child_receiver) -> status => {
                let status = status.unwrap_or(EXIT_SERVER);
                log::info!("the command ended with status {status}: shutting down");
                child_ended = true;
                break status;
            },
        }
        ide.workers.retain(|worker| !worker.is_finished());
    };
    // Agents must not find a lock for an IDE that is going away: remove it first.
    drop(lock_file);
    drop(server);
    let Ide { workers, .. } = ide;
    // Shutting the engine down answers every waiting op, so the workers finish.
    engine.shutdown();
    for worker in workers {
        let _ = worker.join();
    }
    if let Some((pid, thread)) = child {
        if !child_ended {
            stop_child(pid, &child_receiver);
        }
        let _ = thread.join();
    }
    status
}

/// End the child command if it still runs: SIGTERM, then SIGKILL after 5 s.
fn stop_child(pid: u32, exited: &Receiver<i32>) {
    if !thread_done(exited, Duration::ZERO) {
        let Ok(pid) = i32::try_from(pid) else {
            return;
        };
        // SAFETY: signalling our own child, which has not been reaped (its thread waits on it).
        unsafe { libc::kill(pid, libc::SIGTERM) };
        if !thread_done(exited, Duration::from_secs(5)) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn thread_done(exited: &Receiver<i32>, wait: Duration) -> bool {
    match exited.recv_timeout(wait) {
        Ok(_) => true,
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => true,
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => false,
    }
}

/// Run the child command with the IDE's port in its environment; the receiver yields its exit
/// status (`128 + signal` when a signal ended it) once, when it has ended. Its stdio is lspc's.
fn spawn_child(
    program: &OsString,
    args: &[OsString],
    port: u16,
) -> std::io::Result<(Receiver<i32>, u32, JoinHandle<()>)> {
    let mut child = std::process::Command::new(program)
        .args(args)
        .env("CLAUDE_CODE_SSE_PORT", port.to_string())
        .env("ENABLE_IDE_INTEGRATION", "true")
        .spawn()?;
    let pid = child.id();
    let (sender, receiver) = unbounded();
    let thread = thread::Builder::new()
        .name("lspc-ide-child".to_owned())
        .spawn(move || {
            use std::os::unix::process::ExitStatusExt;
            let status = match child.wait() {
                Ok(status) => status
                    .code()
                    .or_else(|| status.signal().map(|signal| 128 + signal))
                    .unwrap_or(EXIT_SERVER),
                Err(_) => EXIT_SERVER,
            };
            let _ = sender.send(status);
        })?;
    Ok((receiver, pid, thread))
}

fn server_info() -> Value {
    json!({"name": "lspc", "title": "lspc ide", "version": env!("CARGO_PKG_VERSION")})
}

impl Ide {
    fn handle_connection_event(&mut self, event: ConnectionEvent) {
        match event {
            ConnectionEvent::Opened {
                connection_id,
                sender,
                ..
            } => {
                self.sessions.insert(
                    connection_id,
                    Session {
                        sender,
                        handshake: None,
                    },
                );
            }
            ConnectionEvent::Message {
                connection_id,
                text,
            } => self.handle_message(connection_id, &text),
            ConnectionEvent::Closed { connection_id, .. } => {
                self.sessions.remove(&connection_id);
            }
        }
    }

    fn send(&self, connection_id: u64, message: &Value) {
        if let Some(session) = self.sessions.get(&connection_id) {
            let _ = session.sender.send(message.to_string());
        }
    }

    fn handle_message(&mut self, connection_id: u64, text: &str) {
        // One frame is one message; `parse_line` only needs it on one line.
        let line = text.replace(['\n', '\r'], " ");
        match protocol::parse_line(&line) {
            Incoming::Request { id, method, params } => {
                self.handle_request(connection_id, id, &method, &params)
            }
            Incoming::Notification { method, params } => match method.as_str() {
                "ide_connected" => log::info!(
                    "client {connection_id}: ide_connected from pid {}",
                    params.get("pid").map(Value::to_string).unwrap_or_default()
                ),
                other => log::debug!("client {connection_id}: notification {other}"),
            },
            Incoming::Invalid(error) => self.send(connection_id, &error),
            Incoming::Response | Incoming::Blank => {}
        }
    }

    fn handle_request(&mut self, connection_id: u64, id: Value, method: &str, params: &Value) {
        let initialized = self
            .sessions
            .get(&connection_id)
            .is_some_and(|session| session.handshake.is_some());
        let reply = match method {
            "initialize" => {
                let requested = params.get("protocolVersion").and_then(Value::as_str);
                let version = protocol::negotiate_handshake(requested);
                if let Some(session) = self.sessions.get_mut(&connection_id) {
                    session.handshake = Some(version.to_owned());
                }
                success_response(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": false}},
                        "serverInfo": server_info(),
                    }),
                )
            }
            "ping" => success_response(&id, json!({})),
            _ if !initialized => error_response(
                &id,
                INVALID_REQUEST,
                &format!("{method} before initialize: send initialize first"),
                None,
            ),
            "tools/list" => {
                let list: Vec<Value> = tools::TOOL_NAMES
                    .iter()
                    .map(|name| tools::tool_definition(name))
                    .collect();
                success_response(&id, json!({ "tools": list }))
            }
            "prompts/list" => success_response(&id, json!({"prompts": []})),
            "resources/list" => success_response(&id, json!({"resources": []})),
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str) else {
                    self.send(
                        connection_id,
                        &error_response(
                            &id,
                            INVALID_PARAMS,
                            "invalid params: name (a string) is required",
                            None,
                        ),
                    );
                    return;
                };
                let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
                if !arguments.is_object() {
                    self.send(
                        connection_id,
                        &error_response(
                            &id,
                            INVALID_PARAMS,
                            "invalid params: arguments must be an object",
                            None,
                        ),
                    );
                    return;
                }
                log::debug!("client {connection_id}: tools/call {name}");
                match tools::call(&self.context, &mut self.state, name, &arguments) {
                    ToolCall::Ready(result) => tool_response(&id, result),
                    ToolCall::Blocking(work) => {
                        self.spawn(connection_id, id, name, work);
                        return;
                    }
                }
            }
            _ => error_response(
                &id,
                METHOD_NOT_FOUND,
                &format!("method not found: {method}"),
                None,
            ),
        };
        self.send(connection_id, &reply);
    }

    fn spawn(
        &mut self,
        connection_id: u64,
        id: Value,
        name: &str,
        work: Box<dyn FnOnce() -> Result<Value, tools::ToolError> + Send>,
    ) {
        let done = self.done_sender.clone();
        let spawned = thread::Builder::new()
            .name(format!("lspc-ide-{name}"))
            .spawn({
                let id = id.clone();
                move || {
                    let response = tool_response(&id, work());
                    let _ = done.send(Done {
                        connection_id,
                        response,
                    });
                }
            });
        match spawned {
            Ok(worker) => self.workers.push(worker),
            Err(error) => self.send(
                connection_id,
                &error_response(
                    &id,
                    tools::OPERATION_FAILED,
                    &format!("cannot start {name}: {error}"),
                    None,
                ),
            ),
        }
    }

    fn finish(&mut self, done: Done) {
        self.send(done.connection_id, &done.response);
    }
}

fn tool_response(id: &Value, result: Result<Value, tools::ToolError>) -> Value {
    match result {
        Ok(result) => success_response(id, result),
        Err(error) => error_response(id, error.code, &error.message, None),
    }
}

/// `lspc ide [--diff accept|reject] [--port N] [--timeout S] [-- COMMAND ARGS...]` and
/// `lspc ide list [--format human|json]`, as parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IdeCliOptions {
    /// `lspc ide list`.
    pub list: bool,
    /// `--format json` for `list`.
    pub json: bool,
    pub diff_mode: DiffMode,
    pub port: u16,
    pub timeout: Option<Duration>,
    pub command: Option<(OsString, Vec<OsString>)>,
}

/// Parse `--diff`'s value.
pub fn parse_diff_mode(value: &str) -> Result<DiffMode, String> {
    match value {
        "accept" => Ok(DiffMode::Accept),
        "reject" => Ok(DiffMode::Reject),
        other => Err(format!("--diff: expected accept or reject, got {other:?}")),
    }
}

/// Run `lspc ide` or `lspc ide list` for the CLI; returns the exit status (`list`: 0 when an IDE
/// would be chosen, 1 when none would).
pub fn run_cli(global: &crate::options::GlobalOptions, options: IdeCliOptions) -> i32 {
    if options.list {
        let discovery = discovery::discover();
        let text = if options.json {
            let mut text = serde_json::to_string_pretty(&discovery).unwrap_or_default();
            text.push('\n');
            text
        } else {
            discovery::render_human(&discovery)
        };
        let written = {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
        };
        if let Err(error) = written {
            if error.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!("lspc: cannot write to stdout: {error}");
                return EXIT_USAGE;
            }
        }
        return if discovery.chosen().is_some() {
            EXIT_OK
        } else {
            EXIT_FOUND
        };
    }
    let config = crate::options::load_config(global);
    let mut engine = crate::options::engine_options(config, global);
    // `run` takes the signals: it must remove the lock file before the process ends.
    engine.handle_signals = false;
    run(IdeOptions {
        engine,
        diff_mode: options.diff_mode,
        port: options.port,
        timeout: options.timeout.unwrap_or(Duration::from_secs(60)),
        command: options.command,
    })
}
