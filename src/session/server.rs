//! The session process: one engine loop for one workspace root and configuration, served to any
//! number of clients over the session's Unix socket.
//!
//! Threads: the engine loop (as in any lspc process); `"lspc-session-listener"` accepting
//! connections and writing each one's hello; per connection a reader (`"lspc-session-in-N"`,
//! lines to a channel) and a connection thread (`"lspc-session-conn-N"`) that turns lines into
//! [`Op`]s with local reply channels, selects over every reply in flight and writes each reply
//! line as it completes, both kept between connections ([`super::query_workers`]); the query
//! threads that run `query` ops for clients that want info or debug logs, kept between queries
//! (a quieter client's `query` runs on its connection thread, see `InlineQuery`); the
//! main thread watches for idleness, a vanished root and `stop`, and owns the configuration
//! [`Reloader`] (its periodic check and the clients' `reload` requests).
//!
//! Invariants:
//! - A peer with another uid gets one error line and is closed (`SO_PEERCRED`).
//! - Per connection, the session keeps what the engine keeps per frontend: request tags (mapped to
//!   session-unique ones), event subscriptions and passive-diagnostics queues of its own (engine
//!   consumers named after the connection), so each MCP client gets its own passive delivery.
//! - A connection that ends cancels its in-flight requests (`$/cancelRequest`) and nothing else; a
//!   bad line costs an error line on that connection only.
//! - The session ends after `idle` with no client, when its root is no longer a directory, on
//!   `stop`, or on SIGTERM/SIGINT/SIGHUP (the loop's own shutdown); each way the servers are shut
//!   down by the normal sequence and the socket is removed.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select, unbounded, Receiver, Select, Sender, TryRecvError};
use serde::Serialize;
use serde_json::{json, Value};

use super::paths::{self, SessionPaths};
use super::reload::{ReloadOutcome, ReloadRequest, Reloader, SharedConfigState};
use super::wire::{
    self, Hello, Line, ReloadReply, SessionInfo, SessionServer, WireOp, WireRequest,
};
use crate::doorbell::LoopSender;
use crate::engine::{EngineHandle, EngineOptions, FrontendEvent, Op};
use crate::session::SessionMode;

/// The socket path (and its inode) removed at process exit, also when the loop exits the process
/// on SIGTERM.
static SOCKET_TO_REMOVE: OnceLock<(PathBuf, u64)> = OnceLock::new();

extern "C" fn remove_socket_at_exit() {
    remove_own_socket();
}

/// Removes the socket if it is still the one this process bound (a successor may have replaced a
/// socket it thought stale).
fn remove_own_socket() {
    use std::os::unix::fs::MetadataExt;
    if let Some((path, inode)) = SOCKET_TO_REMOVE.get() {
        if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.ino() == *inode) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Binds the session socket with mode 0600. `Ok(None)` when a live session already listens
/// there (a racing start); a stale socket is removed first.
fn bind(paths: &SessionPaths) -> Result<Option<UnixListener>, String> {
    for _ in 0..2 {
        // SAFETY: umask has no preconditions; no other thread creates files at this point.
        let previous = unsafe { libc::umask(0o177) };
        let bound = UnixListener::bind(&paths.socket);
        // SAFETY: as above.
        unsafe { libc::umask(previous) };
        match bound {
            Ok(listener) => {
                let _ =
                    std::fs::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600));
                return Ok(Some(listener));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                if UnixStream::connect(&paths.socket).is_ok() {
                    return Ok(None);
                }
                let _ = std::fs::remove_file(&paths.socket);
            }
            Err(error) => {
                return Err(format!(
                    "cannot listen on {}: {error}",
                    paths.socket.display()
                ))
            }
        }
    }
    Err(format!(
        "cannot listen on {}: the address stays in use",
        paths.socket.display()
    ))
}

/// The environment variable naming the ready pipe's write end in a starting session process (a
/// file descriptor number): the client that starts a session waits on the pipe's read end for
/// one byte (listening) or its end of file (the session died first); see [`take_ready_pipe`].
pub const READY_FD_ENV: &str = "LSPC_SESSION_READY_FD";

/// The write end of the ready pipe the client that started this session waits on
/// ([`READY_FD_ENV`]), taken out of the environment and made close-on-exec so
/// no server inherits it. `None` when this session was not started that way, or the variable
/// does not name a pipe (it is then left alone).
fn take_ready_pipe() -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    let value = std::env::var(READY_FD_ENV).ok();
    std::env::remove_var(READY_FD_ENV);
    let fd: libc::c_int = value?.parse().ok().filter(|fd| *fd > 2)?;
    // SAFETY: fstat writes into the zeroed struct; an invalid descriptor only makes it fail.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut stat) } == -1 || stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    // SAFETY: setting FD_CLOEXEC on a descriptor that fstat just found open.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the client passed this descriptor to this process for it alone; nothing else in
    // the process refers to it.
    Some(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Tells the starting client this session listens: one byte on the ready pipe, then closed.
fn signal_ready(ready: Option<std::fs::File>) {
    if let Some(mut pipe) = ready {
        use std::io::Write;
        let _ = pipe.write_all(b"1");
    }
}

/// Set (to `1`) in the environment of a session keyed by its servers rather than by its
/// configuration's sources (see [`paths::session_key`]).
pub const EXACT_ENV: &str = "LSPC_SESSION_EXACT";

/// Runs the session for `options` until it ends (see the module doc); returns the exit status.
/// Called in the process lspc started with `LSPC_SESSION=serve`.
pub fn serve(mut options: EngineOptions, idle: Duration) -> i32 {
    // Servers and their children must not think they are session processes.
    std::env::remove_var("LSPC_SESSION");
    let ready = take_ready_pipe();
    // A session started for a client whose servers resolve differently from what the files give
    // the workspace's session (`client::find_or_start`) is keyed by its servers and never reloads.
    if std::env::var_os(EXACT_ENV).is_some() {
        std::env::remove_var(EXACT_ENV);
        options.config_sources = None;
    }
    let key = paths::session_key(&options);
    options.session = SessionMode::Never;
    // Whichever command started the session, an MCP client may drain its passive queue.
    options.passive_delivery = true;
    // The session handles signals itself whichever command line started it: a signal stops
    // the servers and exits (the command's own frontend is not running here).
    options.interrupted_sender = None;
    options.handle_signals = true;
    let dir = match paths::runtime_dir(true) {
        Ok(Some(dir)) => dir,
        Ok(None) => return crate::exit::EXIT_SERVER,
        Err(error) => {
            eprintln!("lspc session: {error}");
            return crate::exit::EXIT_SERVER;
        }
    };
    let paths = SessionPaths::new(&dir, &key);
    let listener = match bind(&paths) {
        Ok(Some(listener)) => listener,
        Ok(None) => {
            eprintln!("lspc session: another session already serves {key}");
            signal_ready(ready);
            return crate::exit::EXIT_OK;
        }
        Err(error) => {
            eprintln!("lspc session: {error}");
            return crate::exit::EXIT_SERVER;
        }
    };
    if let Ok(metadata) = std::fs::symlink_metadata(&paths.socket) {
        use std::os::unix::fs::MetadataExt;
        let _ = SOCKET_TO_REMOVE.set((paths.socket.clone(), metadata.ino()));
        // SAFETY: registering a plain extern "C" function with no captured state.
        unsafe { libc::atexit(remove_socket_at_exit) };
    }
    // Listening: connections queue from here on, so the starting client may connect.
    signal_ready(ready);
    let root = crate::uri::canonical(&options.config.root);
    let hello = Hello {
        lspc: "lspc-session".to_owned(),
        protocol: wire::PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        key: key.clone(),
        root: root.clone(),
        pid: std::process::id(),
        log: paths.log.clone(),
        config_hash: super::hash::config_hash(&options.config),
    };
    let initial_config = options.config.clone();
    let config_sources = options.config_sources.clone();
    eprintln!(
        "lspc session {key}: serving {} on {} (pid {}, idle exit after {} s)",
        root.display(),
        paths.socket.display(),
        hello.pid,
        idle.as_secs()
    );
    let engine = EngineHandle::start(options);
    let mut reloader = Reloader::new(&initial_config, config_sources, engine.op_sender());
    // The configuration at the start picks which files the watch takes first past its bound (a
    // reload that adds a server's extensions takes effect with the next session).
    let watched = super::watch::WatchedWorkspace::of(root.clone(), &initial_config);
    drop(initial_config);
    let (reload_sender, reload_receiver) = unbounded::<ReloadRequest>();
    let (scan_requests, scan_request_receiver) = unbounded::<super::watch::ScanRequest>();
    let freshness = super::watch::Freshness::new(scan_requests.clone());
    let shared = Arc::new(Shared {
        hello,
        started: Instant::now(),
        clients: AtomicUsize::new(0),
        analysed: crate::query::AnalysedFiles::default(),
        query_workers: super::query_workers::QueryWorkers::default(),
        connection_threads: super::query_workers::QueryWorkers::named("lspc-session-conn"),
        reader_threads: super::query_workers::QueryWorkers::named("lspc-session-in"),
        config: reloader.state(),
        reload_sender,
        scan_requests,
        freshness: Arc::clone(&freshness),
    });
    let (stop_sender, stop_receiver) = unbounded::<()>();
    let (watch_stop, watch_stop_receiver) = unbounded::<()>();
    let watcher = {
        let op_sender = engine.op_sender();
        let shared = Arc::clone(&shared);
        let has_clients = move || shared.clients.load(Ordering::SeqCst) > 0;
        thread::Builder::new()
            .name("lspc-session-watch".to_owned())
            .spawn(move || {
                super::watch::run_fresh(
                    watched,
                    op_sender,
                    watch_stop_receiver,
                    scan_request_receiver,
                    has_clients,
                    &freshness,
                )
            })
            .ok()
    };
    {
        let op_sender = engine.op_sender();
        let shared = Arc::clone(&shared);
        let _ = thread::Builder::new()
            .name("lspc-session-listener".to_owned())
            .spawn(move || accept_loop(listener, op_sender, shared, stop_sender));
    }
    let mut idle_since = Some(Instant::now());
    let reason = loop {
        select! {
            recv(stop_receiver) -> _ => break "stop requested".to_owned(),
            recv(reload_receiver) -> request => {
                if let Ok(request) = request {
                    reloader.handle(request);
                }
            }
            default(Duration::from_millis(250)) => reloader.tick(),
        }
        if shared.clients.load(Ordering::SeqCst) > 0 {
            idle_since = None;
        } else if idle_since.is_none() {
            idle_since = Some(Instant::now());
        }
        if idle_since.is_some_and(|since| since.elapsed() >= idle) {
            break format!("no client for {} s", idle.as_secs());
        }
        if !root.is_dir() {
            break format!("the root {} is gone", root.display());
        }
    };
    eprintln!("lspc session {key}: stopping ({reason})");
    // New connections are refused from here on; the servers then stop in the normal sequence.
    remove_own_socket();
    drop(watch_stop);
    if let Some(watcher) = watcher {
        let _ = watcher.join();
    }
    engine.shutdown();
    shared.query_workers.shutdown();
    eprintln!("lspc session {key}: stopped");
    crate::exit::EXIT_OK
}

/// What every connection thread reads.
struct Shared {
    /// The hello as of the session's start; `configHash` is taken from `config` when sent.
    hello: Hello,
    started: Instant,
    clients: AtomicUsize,
    /// The files whose first-question analysis wait the session has done, for every `query` of
    /// every connection (as one `lspc mcp` process shares it across its tool calls).
    analysed: crate::query::AnalysedFiles,
    /// The threads that run `query` ops, kept between queries.
    query_workers: super::query_workers::QueryWorkers,
    /// The threads that run connections, and those that read their lines, kept between
    /// connections. Not joined when the session ends: one may be blocked on a client, and the
    /// process exits right after.
    connection_threads: super::query_workers::QueryWorkers,
    reader_threads: super::query_workers::QueryWorkers,
    /// The reloader's published state.
    config: SharedConfigState,
    /// To the main thread's reloader.
    reload_sender: Sender<ReloadRequest>,
    /// To the watch thread: a scan before each diagnostics request ([`super::watch::scan_now`]).
    scan_requests: Sender<super::watch::ScanRequest>,
    /// Checked before each request: a file written since the last scan is announced to the
    /// servers before the request reaches the loop (`watch::Freshness`).
    freshness: Arc<super::watch::Freshness>,
}

fn accept_loop(
    listener: UnixListener,
    op_sender: LoopSender<Op>,
    shared: Arc<Shared>,
    stop_sender: Sender<()>,
) {
    let uid = paths::current_uid();
    let mut n_connections: u64 = 0;
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else {
            continue;
        };
        match paths::peer_uid(&stream) {
            Ok(peer) if peer == uid => {}
            Ok(peer) => {
                log::warn!("refused a connection from uid {peer}");
                let line = json!({"error": format!("refused: uid {peer} is not the session's user (uid {uid})")});
                let _ = writeln!(stream, "{line}");
                continue;
            }
            Err(error) => {
                log::warn!("refused a connection whose peer is unknown: {error}");
                continue;
            }
        }
        // The hello goes out before this connection's threads are started: the client reads
        // it and writes its request while they start, instead of waiting for them.
        let config = super::reload::snapshot(&shared.config);
        let hello = Hello {
            config_hash: config.config_hash,
            ..shared.hello.clone()
        };
        let mut hello = serde_json::to_vec(&hello).unwrap_or_default();
        hello.push(b'\n');
        if stream.write_all(&hello).is_err() {
            continue;
        }
        let seen_generation = config.generation;
        n_connections += 1;
        let connection_id = n_connections;
        let op_sender = op_sender.clone();
        let shared = Arc::clone(&shared);
        let stop_sender = stop_sender.clone();
        shared.clients.fetch_add(1, Ordering::SeqCst);
        let pool = Arc::clone(&shared);
        let started = pool.connection_threads.run(Box::new(move || {
            let shared_for_count = Arc::clone(&shared);
            run_connection(
                stream,
                connection_id,
                seen_generation,
                op_sender,
                shared,
                stop_sender,
            );
            shared_for_count.clients.fetch_sub(1, Ordering::SeqCst);
        }));
        if let Err(error) = started {
            log::warn!("connection {connection_id}: {error}");
            pool.clients.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// One engine reply in flight, typed as its op's reply.
enum Pending {
    Diagnostics(Receiver<Vec<crate::engine::FileDiagnostics>>),
    /// Its progress receiver, if any, is in `Connection::progress` under the same id.
    DiagnosticsLeavingOut(Receiver<Vec<crate::engine::FileDiagnostics>>),
    Sync(Receiver<Result<crate::engine::SyncedDocument, crate::engine::EngineError>>),
    /// `tag` is the session-unique tag sent to the loop; `client_tag` the client's own.
    Request {
        receiver: Receiver<Result<Value, crate::engine::EngineError>>,
        tag: u64,
        client_tag: Option<u64>,
    },
    ApplyEdit(Receiver<Result<crate::edit::EditReport, crate::edit::EditError>>),
    ServerEdits(Receiver<Vec<(u64, crate::edit::EditReport)>>),
    RawDiagnostics(Receiver<Vec<(crate::process::ServerId, Vec<Value>)>>),
    Status(Receiver<Vec<crate::engine::ServerStatus>>),
    DrainPassive(Receiver<Option<crate::diagnostics::DrainedBatch>>),
    CurrentDiagnostics(Receiver<Vec<(PathBuf, Vec<crate::diagnostics::Diagnostic>)>>),
    ServerDetails(Receiver<Vec<crate::engine::ServerDetails>>),
    OpenDocuments(Receiver<Vec<PathBuf>>),
    RunningServers(Receiver<Vec<crate::engine::ServerInfo>>),
    Info(Receiver<Vec<crate::engine::ServerStatus>>),
    /// A `query` running on one of the session's query threads; `tag` is the session-unique tag
    /// of its LSP requests.
    Query {
        receiver: Receiver<QueryOutcome>,
        tag: u64,
    },
    Reload(Receiver<ReloadOutcome>),
}

type QueryOutcome = Result<crate::query::command::QueryAnswer, crate::query::QueryError>;

/// What polling a pending reply found.
enum Poll<T> {
    Ready(T),
    Empty,
    Gone,
}

fn poll<T>(receiver: &Receiver<T>) -> Poll<T> {
    match receiver.try_recv() {
        Ok(value) => Poll::Ready(value),
        Err(TryRecvError::Empty) => Poll::Empty,
        Err(TryRecvError::Disconnected) => Poll::Gone,
    }
}

fn poll_value<T: Serialize>(receiver: &Receiver<T>) -> Poll<Value> {
    match poll(receiver) {
        Poll::Ready(value) => Poll::Ready(serde_json::to_value(value).unwrap_or(Value::Null)),
        Poll::Empty => Poll::Empty,
        Poll::Gone => Poll::Gone,
    }
}

impl Pending {
    fn add_to<'a>(&'a self, select: &mut Select<'a>) -> usize {
        match self {
            Pending::Diagnostics(receiver) | Pending::DiagnosticsLeavingOut(receiver) => {
                select.recv(receiver)
            }
            Pending::Sync(receiver) => select.recv(receiver),
            Pending::Request { receiver, .. } => select.recv(receiver),
            Pending::ApplyEdit(receiver) => select.recv(receiver),
            Pending::ServerEdits(receiver) => select.recv(receiver),
            Pending::RawDiagnostics(receiver) => select.recv(receiver),
            Pending::Status(receiver) | Pending::Info(receiver) => select.recv(receiver),
            Pending::DrainPassive(receiver) => select.recv(receiver),
            Pending::CurrentDiagnostics(receiver) => select.recv(receiver),
            Pending::ServerDetails(receiver) => select.recv(receiver),
            Pending::OpenDocuments(receiver) => select.recv(receiver),
            Pending::RunningServers(receiver) => select.recv(receiver),
            Pending::Query { receiver, .. } => select.recv(receiver),
            Pending::Reload(receiver) => select.recv(receiver),
        }
    }
}

/// One client connection's state (see the module doc).
struct Connection {
    connection_id: u64,
    writer: UnixStream,
    op_sender: LoopSender<Op>,
    shared: Arc<Shared>,
    stop_sender: Sender<()>,
    pending: Vec<(u64, Pending)>,
    subscriptions: Vec<(u64, Receiver<FrontendEvent>)>,
    /// Progress streams of diagnostics waits in flight, by request id.
    progress: Vec<(u64, Receiver<crate::engine::FileDiagnostics>)>,
    /// Client tag -> session tag, for requests in flight.
    client_tags: HashMap<u64, u64>,
    next_tag: u64,
    /// This connection's own passive queue in the engine (its frontend's shared queue).
    own_consumer: String,
    /// Whether `own_consumer` is open in the engine: from this connection's first op other than
    /// `logs` and `query` (a one-shot query never drains passive diagnostics, so it costs the
    /// loop no queue to open and close).
    own_consumer_open: bool,
    /// Further queues the client opened (engine names).
    consumers: std::collections::BTreeSet<String>,
    /// Engine records for this client, once it sent its `logs` filter ([`super::logs`]).
    logs: Option<super::logs::ClientLogs>,
    /// The reload generation this client was last told about (a `reload` reply carries the
    /// latest report once per client).
    seen_generation: u64,
    /// Set when writing to the client failed: the connection ends.
    broken: bool,
    /// The query this thread runs itself, shared with the reader thread ([`InlineQuery`]).
    inline_query: Arc<InlineQuery>,
}

/// A `query` the connection thread runs itself, for a client whose logs are at `warn` or quieter
/// (a one-shot command): no query thread and no hand-off to one, so the answer crosses two fewer
/// threads. While it runs the connection thread reads no line; the reader thread, which sees the
/// client go, cancels the query's LSP requests instead. The two flags are set in opposite order
/// on the two threads (tag then `gone` on one, `gone` then tag on the other), so a client that
/// goes just as the query starts is seen by at least one of them.
#[derive(Default)]
struct InlineQuery {
    /// The running query's session tag; 0 when none runs.
    tag: std::sync::atomic::AtomicU64,
    /// The client closed its end (or reading failed).
    gone: std::sync::atomic::AtomicBool,
}

impl InlineQuery {
    /// On the reader thread when the client's stream ends: cancels the running query, if any.
    fn client_gone(&self, op_sender: &LoopSender<Op>) {
        self.gone.store(true, Ordering::SeqCst);
        let tag = self.tag.load(Ordering::SeqCst);
        if tag != 0 {
            log::info!("connection closed with its query in flight: cancelling it");
            let _ = op_sender.send(Op::Cancel { tag });
        }
    }
}

/// Serves one connection whose hello was written (with the configuration of `seen_generation`).
fn run_connection(
    stream: UnixStream,
    connection_id: u64,
    seen_generation: u64,
    op_sender: LoopSender<Op>,
    shared: Arc<Shared>,
    stop_sender: Sender<()>,
) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let (line_sender, line_receiver) = bounded::<Option<Line>>(16);
    let inline_query = Arc::new(InlineQuery::default());
    let reader_started = {
        let inline_query = Arc::clone(&inline_query);
        let op_sender = op_sender.clone();
        shared.reader_threads.run(Box::new(move || {
            let mut reader = BufReader::new(read_half);
            loop {
                let line = wire::read_line(&mut reader, wire::MAX_LINE_BYTES);
                let end = !matches!(line, Ok(Some(_)));
                if end {
                    // The connection thread may be inside a query: it cannot see the end.
                    inline_query.client_gone(&op_sender);
                }
                if line_sender.send(line.ok().flatten()).is_err() || end {
                    return;
                }
            }
        }))
    };
    if let Err(error) = reader_started {
        log::warn!("connection {connection_id}: {error}");
        return;
    }
    let own_consumer = format!("session-connection-{connection_id}");
    let mut connection = Connection {
        connection_id,
        writer: stream,
        op_sender,
        shared,
        stop_sender,
        pending: Vec::new(),
        subscriptions: Vec::new(),
        progress: Vec::new(),
        client_tags: HashMap::new(),
        next_tag: 0,
        own_consumer,
        own_consumer_open: false,
        consumers: Default::default(),
        logs: None,
        seen_generation,
        broken: false,
        inline_query,
    };
    connection.run(&line_receiver);
    super::logs::unregister(connection_id);
    connection.cancel_in_flight();
    let _ = connection.writer.shutdown(std::net::Shutdown::Both);
    // The reader sees the end now; its job is over (and its thread free for another connection)
    // when its sender is dropped.
    while line_receiver.recv().is_ok() {}
}

/// What the select in [`Connection::run`] found ready.
enum Ready {
    Line,
    Pending(usize),
    Subscription(usize),
    Progress(usize),
    Logs,
}

impl Connection {
    fn run(&mut self, lines: &Receiver<Option<Line>>) {
        while !self.broken {
            let ready = {
                let mut select = Select::new();
                let mut kinds = vec![Ready::Line];
                select.recv(lines);
                for (index, (_, pending)) in self.pending.iter().enumerate() {
                    pending.add_to(&mut select);
                    kinds.push(Ready::Pending(index));
                }
                for (index, (_, receiver)) in self.subscriptions.iter().enumerate() {
                    select.recv(receiver);
                    kinds.push(Ready::Subscription(index));
                }
                for (index, (_, receiver)) in self.progress.iter().enumerate() {
                    select.recv(receiver);
                    kinds.push(Ready::Progress(index));
                }
                if let Some(logs) = &self.logs {
                    select.recv(&logs.records);
                    kinds.push(Ready::Logs);
                }
                let index = select.ready();
                kinds.swap_remove(index)
            };
            match ready {
                Ready::Line => match lines.try_recv() {
                    Ok(Some(line)) => self.handle_line(line),
                    Ok(None) | Err(TryRecvError::Disconnected) => return,
                    Err(TryRecvError::Empty) => {}
                },
                Ready::Pending(index) => self.complete(index),
                Ready::Logs => self.flush_logs(),
                Ready::Progress(index) => {
                    let id = self.progress[index].0;
                    match poll(&self.progress[index].1) {
                        Poll::Ready(file) => self.write_progress(id, &file),
                        Poll::Empty => {}
                        Poll::Gone => {
                            self.progress.remove(index);
                        }
                    }
                }
                Ready::Subscription(index) => {
                    let (id, receiver) = &self.subscriptions[index];
                    let id = *id;
                    match poll(receiver) {
                        Poll::Ready(event) => {
                            let line = json!({"id": id, "event": event});
                            self.write_line(&line.to_string());
                        }
                        Poll::Empty => {}
                        Poll::Gone => {
                            self.subscriptions.remove(index);
                        }
                    }
                }
            }
        }
    }

    /// Writes one reply or event line, after the log records emitted before it (so a client
    /// prints an op's log lines before acting on its reply, as in process).
    fn write_line(&mut self, line: &str) {
        self.flush_logs();
        self.write_raw(line);
    }

    /// Writes the log records waiting for this client, and a warning when some were dropped.
    fn flush_logs(&mut self) {
        let Some(logs) = &self.logs else {
            return;
        };
        let dropped = logs.take_dropped();
        let mut lines: Vec<String> = logs
            .records
            .try_iter()
            .map(|log| json!({ "log": log }).to_string())
            .collect();
        if dropped > 0 {
            let warning = super::logs::WireLog {
                level: "warn".to_owned(),
                target: "lspc::session".to_owned(),
                message: format!("the session dropped {dropped} log records for this client"),
            };
            lines.push(json!({ "log": warning }).to_string());
        }
        for line in lines {
            self.write_raw(&line);
        }
    }

    fn write_raw(&mut self, line: &str) {
        if self.broken {
            return;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if self.writer.write_all(&bytes).is_err() {
            self.broken = true;
        }
    }

    fn write_progress(&mut self, id: u64, file: &crate::engine::FileDiagnostics) {
        let line = json!({"id": id, "event": file});
        self.write_line(&line.to_string());
    }

    /// Writes what a finished diagnostics wait's progress stream still holds (before its result).
    fn flush_progress(&mut self, id: u64) {
        let Some(index) = self.progress.iter().position(|(stream, _)| *stream == id) else {
            return;
        };
        let (_, receiver) = self.progress.remove(index);
        let files: Vec<crate::engine::FileDiagnostics> = receiver.try_iter().collect();
        for file in files {
            self.write_progress(id, &file);
        }
    }

    fn write_error(&mut self, id: Option<u64>, message: &str) {
        let line = json!({"id": id, "error": message});
        self.write_line(&line.to_string());
    }

    fn handle_line(&mut self, line: Line) {
        let text = match line {
            Line::Text(text) => text,
            Line::TooLong => {
                return self.write_error(
                    None,
                    &format!("line longer than {} bytes", wire::MAX_LINE_BYTES),
                )
            }
            Line::NotUtf8 => return self.write_error(None, "line is not UTF-8"),
        };
        if text.trim().is_empty() {
            return;
        }
        let request: WireRequest = match serde_json::from_str(&text) {
            Ok(request) => request,
            Err(error) => {
                let id = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|value| value.get("id").and_then(Value::as_u64));
                return self.write_error(id, &format!("bad request: {error}"));
            }
        };
        self.handle_request(request);
    }

    fn send_op(&mut self, op: Op) {
        // The loop outlives every connection except during the final shutdown, when a reply's
        // sender is dropped and the pending entry completes as gone.
        let _ = self.op_sender.send(op);
    }

    fn handle_request(&mut self, request: WireRequest) {
        let id = request.id;
        if !self.own_consumer_open
            && !matches!(request.op, WireOp::Logs { .. } | WireOp::Query { .. })
        {
            self.own_consumer_open = true;
            let consumer = self.own_consumer.clone();
            self.send_op(Op::OpenPassive { consumer });
        }
        let scans_anyway = matches!(
            request.op,
            WireOp::Diagnostics { .. } | WireOp::DiagnosticsLeavingOut { .. }
        );
        if !scans_anyway && self.shared.freshness.stale() {
            log::debug!("workspace files written since the last scan: scanning first");
            self.shared.freshness.catch_up();
        }
        let timeout = |ms: u64| Duration::from_millis(ms);
        let pending = match request.op {
            WireOp::Diagnostics { paths, timeout_ms } => {
                // What changed on disk since the last scan reaches the servers first.
                super::watch::scan_now(&self.shared.scan_requests);
                let (reply, receiver) = bounded(1);
                self.send_op(Op::Diagnostics {
                    paths,
                    timeout: timeout(timeout_ms),
                    reply,
                });
                Pending::Diagnostics(receiver)
            }
            WireOp::AnalysisWait { path, timeout_ms } => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::AnalysisWait {
                    path,
                    timeout: timeout(timeout_ms),
                    reply,
                });
                Pending::Diagnostics(receiver)
            }
            WireOp::DiagnosticsLeavingOut {
                paths,
                leave_out,
                timeout_ms,
                progress,
            } => {
                // What changed on disk since the last scan (a `git checkout` just before the
                // check) reaches the servers first.
                super::watch::scan_now(&self.shared.scan_requests);
                let (reply, receiver) = bounded(1);
                let progress = progress.then(|| {
                    let (sender, receiver) = unbounded();
                    self.progress.push((id, receiver));
                    sender
                });
                self.send_op(Op::DiagnosticsLeavingOut {
                    paths,
                    leave_out,
                    timeout: timeout(timeout_ms),
                    progress,
                    reply,
                });
                Pending::DiagnosticsLeavingOut(receiver)
            }
            WireOp::Sync { path, timeout_ms } => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::Sync {
                    path,
                    timeout: timeout(timeout_ms),
                    reply,
                });
                Pending::Sync(receiver)
            }
            WireOp::Request {
                server_id,
                method,
                params,
                timeout_ms,
                retry,
                tag: client_tag,
                document,
            } => {
                let tag = self.session_tag();
                if let Some(client_tag) = client_tag {
                    self.client_tags.insert(client_tag, tag);
                }
                let (reply, receiver) = bounded(1);
                self.send_op(Op::Request {
                    server_id,
                    method,
                    params,
                    timeout: timeout(timeout_ms),
                    retry,
                    tag: Some(tag),
                    reply,
                    document,
                });
                Pending::Request {
                    receiver,
                    tag,
                    client_tag,
                }
            }
            WireOp::Cancel { tag } => {
                if let Some(tag) = self.client_tags.get(&tag).copied() {
                    self.send_op(Op::Cancel { tag });
                }
                return;
            }
            WireOp::ApplyEdit {
                edit,
                encoding,
                mode,
                based_on,
            } => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::ApplyEdit {
                    edit,
                    encoding,
                    mode,
                    based_on,
                    reply,
                });
                Pending::ApplyEdit(receiver)
            }
            WireOp::ServerEdits => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::ServerEdits { reply });
                Pending::ServerEdits(receiver)
            }
            WireOp::RawDiagnostics { path } => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::RawDiagnostics { path, reply });
                Pending::RawDiagnostics(receiver)
            }
            WireOp::Status => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::Status { reply });
                Pending::Status(receiver)
            }
            WireOp::DrainPassive {
                consumer,
                shown_file,
            } => {
                let consumer = Some(self.consumer_name(consumer.as_deref()));
                let (reply, receiver) = bounded(1);
                self.send_op(Op::DrainPassive {
                    consumer,
                    shown_file,
                    reply,
                });
                Pending::DrainPassive(receiver)
            }
            WireOp::OpenPassive { consumer } => {
                let consumer = self.consumer_name(Some(&consumer));
                self.consumers.insert(consumer.clone());
                return self.send_op(Op::OpenPassive { consumer });
            }
            WireOp::ClosePassive { consumer } => {
                let consumer = self.consumer_name(Some(&consumer));
                self.consumers.remove(&consumer);
                return self.send_op(Op::ClosePassive { consumer });
            }
            WireOp::SubscribeEvents => {
                let (sender, receiver) = unbounded();
                self.send_op(Op::SubscribeEvents { sender });
                self.subscriptions.push((id, receiver));
                return;
            }
            WireOp::CurrentDiagnostics => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::CurrentDiagnostics { reply });
                Pending::CurrentDiagnostics(receiver)
            }
            WireOp::ServerDetails => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::ServerDetails { reply });
                Pending::ServerDetails(receiver)
            }
            WireOp::OpenDocuments => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::OpenDocuments { reply });
                Pending::OpenDocuments(receiver)
            }
            WireOp::RunningServers => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::RunningServers { reply });
                Pending::RunningServers(receiver)
            }
            WireOp::Reload { config_hash } => {
                let (reply, receiver) = bounded(1);
                let request = ReloadRequest {
                    client_hash: config_hash,
                    reply,
                };
                // The main thread is gone only while the session stops: the reply is then "gone".
                let _ = self.shared.reload_sender.send(request);
                Pending::Reload(receiver)
            }
            WireOp::Info => {
                let (reply, receiver) = bounded(1);
                self.send_op(Op::Status { reply });
                Pending::Info(receiver)
            }
            WireOp::Logs { filter } => {
                self.logs = super::logs::register(self.connection_id, &filter);
                return;
            }
            WireOp::Query {
                key,
                request,
                timeout_ms,
                config_hash,
            } => {
                if key != self.shared.hello.key {
                    let message = format!(
                        "this session's key is {}, not {key}: query refused",
                        self.shared.hello.key
                    );
                    return self.write_error(Some(id), &message);
                }
                if let Some(client_hash) = config_hash {
                    if let Some(message) = self.config_mismatch(&request, &client_hash) {
                        let line = json!({"id": id, "error": message, "configMismatch": true});
                        return self.write_line(&line.to_string());
                    }
                }
                let tag = self.session_tag();
                let quiet = self
                    .logs
                    .as_ref()
                    .is_none_or(|logs| logs.max_level <= log::LevelFilter::Warn);
                if quiet && self.pending.is_empty() && self.subscriptions.is_empty() {
                    return self.run_query_inline(id, request, timeout(timeout_ms), tag);
                }
                match self.start_query(request, timeout(timeout_ms), tag) {
                    Ok(pending) => pending,
                    Err(message) => return self.write_error(Some(id), &message),
                }
            }
            WireOp::Stop => {
                // The reply goes out before the main thread hears of the stop: with no server
                // running it exits at once, and a reply written after that never reaches the
                // client ("ended before it answered", landing CI of 44d5129).
                let line = json!({"id": id, "result": null});
                self.write_line(&line.to_string());
                let _ = self.stop_sender.send(());
                return;
            }
        };
        self.pending.push((id, pending));
    }

    /// Why the servers this session runs for `request`'s file are not the ones the client loaded
    /// (`client_hash`, see [`WireOp::Query`]); `None` when they are the same.
    fn config_mismatch(
        &self,
        request: &crate::query::command::QueryRequest,
        client_hash: &str,
    ) -> Option<String> {
        let extension = request.file().and_then(crate::config::extension_key);
        let hashes = {
            let state = match self.shared.config.lock() {
                Ok(state) => state,
                Err(poisoned) => poisoned.into_inner(),
            };
            Arc::clone(&state.extension_hashes)
        };
        let ours = extension
            .as_ref()
            .and_then(|extension| hashes.get(extension).cloned())
            .unwrap_or_else(super::hash::empty_hash);
        (ours != client_hash).then(|| {
            format!(
                "the session serves other servers for {} files",
                extension.as_deref().unwrap_or("these")
            )
        })
    }

    /// A request tag unique across connections: the connection id in the high bits.
    fn session_tag(&mut self) -> u64 {
        self.next_tag += 1;
        (self.connection_id << 32) | self.next_tag
    }

    /// Runs `request` on this thread ([`InlineQuery`]) and writes its answer line.
    fn run_query_inline(
        &mut self,
        id: u64,
        request: crate::query::command::QueryRequest,
        timeout: Duration,
        tag: u64,
    ) {
        self.inline_query.tag.store(tag, Ordering::SeqCst);
        if self.inline_query.gone.load(Ordering::SeqCst) {
            // Nobody to answer; the reader may have sent a cancel for a request never made.
            self.inline_query.tag.store(0, Ordering::SeqCst);
            return;
        }
        let queries = self.queries(timeout, tag);
        let outcome = crate::query::command::execute(&queries, &request);
        self.inline_query.tag.store(0, Ordering::SeqCst);
        #[derive(Serialize)]
        struct Reply<'a> {
            id: u64,
            result: &'a QueryOutcome,
        }
        let line = serde_json::to_string(&Reply {
            id,
            result: &outcome,
        })
        .unwrap_or_default();
        self.write_line(&line);
    }

    /// A query runner on the session's engine with the session's record of analysed files, its
    /// LSP requests tagged `tag`.
    fn queries(&self, timeout: Duration, tag: u64) -> crate::query::Queries {
        crate::query::Queries::new(
            self.op_sender.clone(),
            self.shared.hello.root.clone(),
            timeout,
        )
        .with_analysed_files(self.shared.analysed.clone())
        .with_tag(Some(tag))
    }

    /// Runs `request` on one of the session's query threads against the session's engine, with
    /// the session's record of analysed files; its LSP requests carry `tag` (cancelled when the
    /// client goes).
    fn start_query(
        &mut self,
        request: crate::query::command::QueryRequest,
        timeout: Duration,
        tag: u64,
    ) -> Result<Pending, String> {
        let queries = self.queries(timeout, tag);
        let (reply, receiver) = bounded(1);
        self.shared.query_workers.run(Box::new(move || {
            let _ = reply.send(crate::query::command::execute(&queries, &request));
        }))?;
        Ok(Pending::Query { receiver, tag })
    }

    /// A pending reply is ready (or its sender is gone): write its line and retire it.
    fn complete(&mut self, index: usize) {
        let (id, pending) = &self.pending[index];
        let id = *id;
        let polled = match pending {
            Pending::Diagnostics(receiver) | Pending::DiagnosticsLeavingOut(receiver) => {
                poll_value(receiver)
            }
            Pending::Sync(receiver) => poll_value(receiver),
            Pending::Request { receiver, .. } => poll_value(receiver),
            Pending::ApplyEdit(receiver) => poll_value(receiver),
            Pending::ServerEdits(receiver) => poll_value(receiver),
            Pending::RawDiagnostics(receiver) => poll_value(receiver),
            Pending::Status(receiver) => poll_value(receiver),
            Pending::CurrentDiagnostics(receiver) => poll_value(receiver),
            Pending::ServerDetails(receiver) => poll_value(receiver),
            Pending::OpenDocuments(receiver) => poll_value(receiver),
            Pending::RunningServers(receiver) => poll_value(receiver),
            Pending::DrainPassive(receiver) => poll_value(receiver),
            Pending::Query { receiver, .. } => poll_value(receiver),
            Pending::Info(receiver) => match poll(receiver) {
                Poll::Ready(statuses) => Poll::Ready(self.info(statuses)),
                Poll::Empty => Poll::Empty,
                Poll::Gone => Poll::Gone,
            },
            Pending::Reload(receiver) => match poll(receiver) {
                Poll::Ready(outcome) => Poll::Ready(self.reload_reply(outcome)),
                Poll::Empty => Poll::Empty,
                Poll::Gone => Poll::Gone,
            },
        };
        let line = match polled {
            Poll::Empty => return,
            Poll::Ready(result) => json!({"id": id, "result": result}),
            Poll::Gone => json!({"id": id, "error": "the engine has shut down"}),
        };
        let (_, pending) = self.pending.remove(index);
        if matches!(pending, Pending::DiagnosticsLeavingOut(_)) {
            self.flush_progress(id);
        }
        if let Pending::Request {
            client_tag: Some(client_tag),
            ..
        } = pending
        {
            self.client_tags.remove(&client_tag);
        }
        self.write_line(&line.to_string());
    }

    fn info(&self, statuses: Vec<crate::engine::ServerStatus>) -> Value {
        let hello = &self.shared.hello;
        let info = SessionInfo {
            root: hello.root.clone(),
            pid: hello.pid,
            uptime_ms: u64::try_from(self.shared.started.elapsed().as_millis()).unwrap_or(0),
            clients: self.shared.clients.load(Ordering::SeqCst),
            log: hello.log.clone(),
            open_documents: statuses.iter().map(|status| status.open_documents).sum(),
            rss_kib: paths::rss_kib(hello.pid),
            servers: statuses
                .into_iter()
                .map(|status| SessionServer {
                    rss_kib: status.pid.and_then(paths::rss_kib),
                    name: status.name,
                    project: status.project,
                    state: status.state,
                    pid: status.pid,
                })
                .collect(),
            config: super::reload::snapshot(&self.shared.config),
        };
        serde_json::to_value(info).unwrap_or_default()
    }

    /// A `reload` reply: the latest reload's report once per client (see `seen_generation`).
    fn reload_reply(&mut self, outcome: ReloadOutcome) -> Value {
        let report = if outcome.generation > self.seen_generation {
            self.seen_generation = outcome.generation;
            outcome.report
        } else {
            Default::default()
        };
        let reply = ReloadReply {
            config_hash: outcome.config_hash,
            report,
            error: outcome.error,
        };
        serde_json::to_value(reply).unwrap_or_default()
    }

    /// The engine's name for a client's passive queue: the client's `None` (its frontend's shared
    /// queue) is this connection's own queue; named ones are scoped to the connection.
    fn consumer_name(&self, consumer: Option<&str>) -> String {
        match consumer {
            None => self.own_consumer.clone(),
            Some(name) => format!("{}/{name}", self.own_consumer),
        }
    }

    /// The client is gone: `$/cancelRequest` for each of its requests still in flight, and its
    /// passive queues closed.
    fn cancel_in_flight(&mut self) {
        let consumers = std::mem::take(&mut self.consumers);
        let own = self.own_consumer_open.then(|| self.own_consumer.clone());
        for consumer in consumers.into_iter().chain(own) {
            self.send_op(Op::ClosePassive { consumer });
        }
        let tags: Vec<u64> = self
            .pending
            .iter()
            .filter_map(|(_, pending)| match pending {
                Pending::Request { tag, .. } | Pending::Query { tag, .. } => Some(*tag),
                _ => None,
            })
            .collect();
        if !tags.is_empty() {
            log::info!(
                "connection {} closed with {} request(s) in flight: cancelling them",
                self.connection_id,
                tags.len()
            );
        }
        for tag in tags {
            self.send_op(Op::Cancel { tag });
        }
    }
}
