//! The client side of a session: finding the workspace's session (removing a stale socket),
//! starting one detached under the start lock, the proxy that makes the session look like a
//! local [`EngineHandle`], and [`query`], a one-shot query command's whole exchange (one line
//! out, one line back) on the calling thread.
//!
//! The proxy is one thread (`"lspc-session-proxy"`) that owns the socket's write half and every
//! reply slot, selecting over the frontends' ops and the lines a reader thread
//! (`"lspc-session-reader"`) reads. Invariants:
//! - Every op a frontend sends is answered exactly once (a subscription: until the session ends),
//!   also when the session dies: then with [`crate::engine::EngineError::SessionLost`] naming the session and
//!   its log, and every later op the same way.
//! - `Shutdown` closes this connection only (the session serves others); `Reload` becomes the
//!   wire's `reload`: the session loads its configuration files again (`super::reload`).
//! - A connection is used only when the session serves the configuration this command loaded
//!   (the hello's `configHash`, after a `reload` when it differs); see [`find_or_start`].

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, unbounded, Receiver, Sender};
use serde_json::{json, Value};

use super::fallback::{InProcess, Subscriptions};
use super::paths::{self, SessionPaths, StartLock};
use super::wire::{self, Hello, Line, ReplySlot, Split, WireOp, WireRequest};
use crate::engine::{EngineError, EngineHandle, EngineOptions, Op};
use crate::query::command::{QueryAnswer, QueryRequest};
use crate::query::QueryError;

/// How long a command asking for info or debug logs waits at its end for the engine's last log
/// lines (one loop round trip).
const LOG_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a started session may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Why [`attach`] did not give a session.
#[derive(Debug)]
pub enum AttachError {
    /// No session runs for this key (and none was to be started).
    NotRunning,
    /// A session could not be used or started; the message says why.
    Failed(String),
    /// The workspace's session keeps a previous configuration because the files are broken now
    /// (the message names the error): this command runs without it rather than with stale
    /// servers or a second session.
    ConfigNotApplied(String),
}

/// A connection whose hello was checked.
pub struct Connected {
    pub stream: UnixStream,
    pub reader: BufReader<UnixStream>,
    pub hello: Hello,
}

/// Why [`connect`] failed.
#[derive(Debug)]
pub enum ConnectError {
    /// There is no socket.
    NotRunning,
    /// A socket file nobody listens on: its session is gone, or one is between `bind` and
    /// `listen` right now. Only removed under the start lock ([`connect_or_clean`]).
    Stale,
    /// Something answered but cannot be used; the message says why.
    Unusable(String),
}

/// [`connect`], and a stale socket is removed: under the start lock, after checking again (a
/// session being started holds its starter's lock from before `bind` until it listens).
pub fn connect_or_clean(paths: &SessionPaths) -> Result<Connected, ConnectError> {
    connect_or_clean_sending(paths, &|_| Vec::new())
}

/// [`connect_or_clean`] with [`connect_sending`]'s early lines.
fn connect_or_clean_sending(
    paths: &SessionPaths,
    early: &dyn Fn(&str) -> Vec<u8>,
) -> Result<Connected, ConnectError> {
    match connect_sending(paths, early) {
        Err(ConnectError::Stale) => {}
        other => return other,
    }
    let _lock = StartLock::acquire(&paths.lock)
        .map_err(|error| ConnectError::Unusable(error.to_string()))?;
    match connect_sending(paths, early) {
        Err(ConnectError::Stale) => {
            log::info!("removing stale session socket {}", paths.socket.display());
            let _ = std::fs::remove_file(&paths.socket);
            Err(ConnectError::NotRunning)
        }
        other => other,
    }
}

/// Connects to the session at `paths` and reads its hello.
pub fn connect(paths: &SessionPaths) -> Result<Connected, ConnectError> {
    connect_sending(paths, &|_| Vec::new())
}

/// [`connect`], writing `early(key)` right after the socket connects and before the hello is
/// read, so the session finds those lines waiting when it starts reading (a one-shot query's
/// lines carry the key the session checks them against; the hello is checked as always once
/// read, and a session that does not match is not used, whatever it did with them).
pub fn connect_sending(
    paths: &SessionPaths,
    early: &dyn Fn(&str) -> Vec<u8>,
) -> Result<Connected, ConnectError> {
    // A connection reset (or closed) before the hello reached a session that is going away: its
    // listening socket was still open in a process that was exiting. Asked again a moment
    // later, the socket refuses (stale) or a live session answers.
    for _ in 0..CLOSING_RETRIES {
        match connect_attempt(paths, early) {
            Err(Attempt::Closed(message)) => {
                log::debug!("{message}; asking again");
                thread::sleep(Duration::from_millis(20));
            }
            other => return other.map_err(Attempt::into_error),
        }
    }
    connect_attempt(paths, early).map_err(Attempt::into_error)
}

/// How often [`connect_sending`] asks again after a connection that closed before its hello.
const CLOSING_RETRIES: usize = 10;

/// Why one [`connect_attempt`] failed.
enum Attempt {
    /// As [`connect_sending`] reports it.
    Error(ConnectError),
    /// The connection was reset or closed before the hello (the message says which).
    Closed(String),
}

impl Attempt {
    fn into_error(self) -> ConnectError {
        match self {
            Attempt::Error(error) => error,
            Attempt::Closed(message) => ConnectError::Unusable(message),
        }
    }
}

impl From<ConnectError> for Attempt {
    fn from(error: ConnectError) -> Attempt {
        Attempt::Error(error)
    }
}

/// One try of [`connect_sending`].
fn connect_attempt(
    paths: &SessionPaths,
    early: &dyn Fn(&str) -> Vec<u8>,
) -> Result<Connected, Attempt> {
    let mut stream = match UnixStream::connect(&paths.socket) {
        Ok(stream) => stream,
        Err(error) => {
            return match error.kind() {
                std::io::ErrorKind::NotFound => Err(ConnectError::NotRunning.into()),
                std::io::ErrorKind::ConnectionRefused => Err(ConnectError::Stale.into()),
                _ => Err(ConnectError::Unusable(format!(
                    "cannot connect to session socket {}: {error}",
                    paths.socket.display()
                ))
                .into()),
            }
        }
    };
    let lines = early(&paths.key);
    if !lines.is_empty() {
        // A refusing session closes at once: its error line is read below all the same.
        let _ = stream.write_all(&lines);
    }
    let unusable = |message: String| Attempt::Error(ConnectError::Unusable(message));
    let read_half = stream
        .try_clone()
        .map_err(|error| unusable(format!("session socket: {error}")))?;
    // A live session says hello at once; a hung one must not hang the command.
    let _ = read_half.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(read_half);
    let line = match wire::read_line(&mut reader, wire::MAX_LINE_BYTES) {
        Ok(Some(Line::Text(line))) => line,
        Ok(None) => {
            return Err(Attempt::Closed(format!(
                "session at {} closed the connection without a hello",
                paths.socket.display()
            )))
        }
        Ok(Some(_)) => return Err(unusable("session sent an unreadable hello".to_owned())),
        Err(error) => {
            let message = format!(
                "no hello from the session at {}: {error}",
                paths.socket.display()
            );
            return Err(match error.kind() {
                std::io::ErrorKind::ConnectionReset => Attempt::Closed(message),
                _ => unusable(message),
            });
        }
    };
    let value: Value = serde_json::from_str(&line)
        .map_err(|error| unusable(format!("session sent a malformed hello: {error}")))?;
    if let Some(error) = value.get("error").and_then(Value::as_str) {
        return Err(unusable(format!(
            "the session refused the connection: {error}"
        )));
    }
    let hello: Hello = serde_json::from_value(value)
        .map_err(|error| unusable(format!("session sent a malformed hello: {error}")))?;
    if hello.protocol != wire::PROTOCOL_VERSION || hello.key != paths.key {
        return Err(unusable(format!(
            "the session at {} speaks protocol {} (key {}), expected {} (key {})",
            paths.socket.display(),
            hello.protocol,
            hello.key,
            wire::PROTOCOL_VERSION,
            paths.key
        )));
    }
    let _ = reader.get_ref().set_read_timeout(None);
    Ok(Connected {
        stream,
        reader,
        hello,
    })
}

/// The session for `options`: its running one, or with `start` a new one (the start lock makes
/// racing starters end up with one session).
///
/// When the session ends while this command runs (`lspc session stop`, its idle bound, a crash),
/// the call in flight fails and the next op connects again the same way (with `start`, to a new
/// session); when no session can be reached (`auto` starts none) or started, the ops are served
/// by a loop in this process from then on ([`super::fallback::InProcess`], started from
/// `options`), as a command that found no session runs. Either way a long-lived frontend
/// (`lspc mcp`, `lspc batch`) goes on, its event subscriptions and passive consumers made again
/// there; the documents the old session had open are opened again when used.
pub fn attach(options: &EngineOptions, start: bool) -> Result<EngineHandle, AttachError> {
    let connected = find_or_start(options, start)?;
    let signals = ProxySignals {
        handle: options.handle_signals,
        interrupted_sender: options.interrupted_sender.clone(),
    };
    let in_process = options.clone();
    let options = options.clone();
    let reconnect: Reconnect = Box::new(move || find_or_start(&options, start));
    Ok(proxy(connected, signals, reconnect, in_process))
}

/// How a proxy connects again after its session ended.
pub type Reconnect = Box<dyn FnMut() -> Result<Connected, AttachError> + Send>;

/// Runs one query command in the session for `options`, started first when `start` is set
/// ([`find_or_start`]: the same key and configuration checks as every command): the query goes
/// out as one `query` line and the one reply line comes back, all on the calling thread (a
/// one-shot command needs no proxy thread, no signal handler and no reader thread). Every path
/// in `request` must be canonical.
///
/// Errors: [`AttachError`] when no session serves the workspace (the caller runs in process);
/// a session lost mid-query is `Ok(Err(QueryError::Engine(EngineError::SessionLost)))`, as the
/// proxy reports it.
pub fn query(
    options: &EngineOptions,
    start: bool,
    request: &QueryRequest,
    timeout: Duration,
) -> Result<Result<QueryAnswer, QueryError>, AttachError> {
    let connected = find_or_start(options, start)?;
    match exchange(connected, request, timeout, None) {
        QueryExchange::Answered(outcome) => Ok(outcome),
        // Only a query carrying a file's hash can be refused this way.
        QueryExchange::ConfigMismatch => Err(AttachError::Failed(
            "the session refused the query's configuration".to_owned(),
        )),
    }
}

/// What the session did with a one-shot `query`.
pub enum QueryExchange {
    /// It ran the query: the outcome, as an in-process run gives it.
    Answered(Result<QueryAnswer, QueryError>),
    /// It runs other servers for the request's file than the client loaded (`configMismatch`):
    /// the query did not run.
    ConfigMismatch,
}

/// One `query` exchange on a checked connection: [`query_lines`] out in one write, then
/// [`read_answer`].
pub fn exchange(
    connected: Connected,
    request: &QueryRequest,
    timeout: Duration,
    config_hash: Option<String>,
) -> QueryExchange {
    let lines = query_lines(&connected.hello.key, request, timeout, config_hash);
    let mut connected = connected;
    if connected.stream.write_all(&lines).is_err() {
        return QueryExchange::Answered(Err(QueryError::Engine(EngineError::SessionLost(
            lost_message(&connected.hello),
        ))));
    }
    read_answer(connected)
}

/// The id of the `query` line in [`query_lines`] (its `logs` line is 1).
const QUERY_ID: u64 = 2;

/// The lines a one-shot query sends (one write): its log filter first (as the proxy sends it),
/// so the engine records of this query reach this process's stderr as in process, then the
/// `query` for the session at `key`.
pub fn query_lines(
    key: &str,
    request: &QueryRequest,
    timeout: Duration,
    config_hash: Option<String>,
) -> Vec<u8> {
    let mut lines = Vec::new();
    let mut push = |id: u64, op: WireOp| {
        lines.extend(serde_json::to_vec(&WireRequest { id, op }).unwrap_or_default());
        lines.push(b'\n');
    };
    push(
        1,
        WireOp::Logs {
            filter: super::logs::client_filter().to_owned(),
        },
    );
    push(
        QUERY_ID,
        WireOp::Query {
            key: key.to_owned(),
            request: request.clone(),
            timeout_ms: wire::millis(timeout),
            config_hash,
        },
    );
    lines
}

/// Reads the answer to [`query_lines`] sent on `connected`: log lines replayed, the reply read
/// (and at info or debug, one barrier round trip for the engine's late log lines).
pub fn read_answer(connected: Connected) -> QueryExchange {
    let Connected {
        mut stream,
        mut reader,
        hello,
    } = connected;
    let lost = || QueryError::Engine(EngineError::SessionLost(lost_message(&hello)));
    // This process's logger was set up from the client's filter, so its max level says whether
    // the answer needs the late-lines barrier below.
    let verbose_logs = log::max_level() > log::LevelFilter::Warn;
    let query_id = QUERY_ID;
    let mut answer = None;
    let mut flush_deadline: Option<Instant> = None;
    loop {
        let line = match wire::read_line(&mut reader, wire::MAX_LINE_BYTES) {
            Ok(Some(Line::Text(line))) => line,
            Ok(Some(_)) => {
                log::warn!("session sent an unreadable line");
                continue;
            }
            Ok(None) | Err(_) if answer.is_some() => break,
            Ok(None) | Err(_) => return QueryExchange::Answered(Err(lost())),
        };
        if line.starts_with("{\"log\"") {
            match serde_json::from_str::<LogLine>(&line) {
                Ok(LogLine { log }) => super::logs::replay(&log),
                Err(error) => log::warn!("session sent a malformed log line: {error}"),
            }
            continue;
        }
        if answer.is_some() {
            // The barrier's reply: every record logged before it has been replayed. Log lines
            // keep coming while others work (the watched-files scan), so the wait is bounded.
            let barrier_reply = serde_json::from_str::<Value>(&line)
                .is_ok_and(|reply| reply.get("id").and_then(Value::as_u64) == Some(query_id + 1));
            if barrier_reply || flush_deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                break;
            }
            continue;
        }
        // Through a `Value`, as the proxy reads its replies ([`dispatch`]): the engine's reply
        // types then have one deserializer in the binary, not two (binary size).
        let parsed = serde_json::from_str::<Value>(&line).and_then(serde_json::from_value);
        let reply: QueryReply = match parsed {
            Ok(reply) => reply,
            Err(error) => {
                log::warn!("session sent a malformed reply: {error}");
                continue;
            }
        };
        if reply.id != Some(query_id) {
            if let Some(error) = reply.error {
                log::warn!("session error: {error}");
            }
            continue;
        }
        if reply.config_mismatch {
            log::debug!(
                "{}",
                reply.error.as_deref().unwrap_or("configuration mismatch")
            );
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return QueryExchange::ConfigMismatch;
        }
        answer = Some(match (reply.result, reply.error) {
            (Some(outcome), _) => outcome,
            (None, error) => Err(QueryError::Engine(EngineError::SessionLost(format!(
                "the lspc session for {} (pid {}) refused the query: {}; see its log {}",
                hello.root.display(),
                hello.pid,
                error.unwrap_or_default(),
                hello.log.display()
            )))),
        });
        if !verbose_logs {
            break;
        }
        // The engine may log after the answer (a request's "answered" line): one more loop
        // round trip delivers those lines before this command exits, as the proxy does.
        let mut barrier = serde_json::to_vec(&WireRequest {
            id: query_id + 1,
            op: WireOp::OpenDocuments,
        })
        .unwrap_or_default();
        barrier.push(b'\n');
        let _ = stream.set_read_timeout(Some(LOG_FLUSH_TIMEOUT));
        flush_deadline = Some(Instant::now() + LOG_FLUSH_TIMEOUT);
        if stream.write_all(&barrier).is_err() {
            break;
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
    QueryExchange::Answered(answer.expect("the loop ends with an answer or returns"))
}

/// A `{"log": …}` line the session forwards ([`super::logs`]).
#[derive(serde::Deserialize)]
struct LogLine {
    log: super::logs::WireLog,
}

/// A reply line to a `query` (its `result` typed; `error` when the session refused it).
#[derive(serde::Deserialize)]
struct QueryReply {
    id: Option<u64>,
    result: Option<Result<QueryAnswer, QueryError>>,
    error: Option<String>,
    /// Set on a refusal because the session runs other servers for the file.
    #[serde(rename = "configMismatch", default)]
    config_mismatch: bool,
}

/// What the proxy does on SIGINT/SIGTERM/SIGHUP, as the in-process loop would
/// ([`EngineOptions::handle_signals`], [`EngineOptions::interrupted_sender`]): close the
/// connection (the session cancels this client's requests), then tell the frontend or exit with
/// 128 + the signal.
pub struct ProxySignals {
    pub handle: bool,
    pub interrupted_sender: Option<Sender<i32>>,
}

/// Connects to the session for `options`, starting it first when `start` is set, and makes sure
/// it serves the configuration `options` holds (the race-free rule for a configuration edited
/// while a session runs):
/// - The hello's `configHash` equals this command's [`super::hash::config_hash`]: use it.
/// - Else ask the session to `reload` on this connection; it loads its files again before
///   answering, so a command that read the edited files never meets the servers of the old ones,
///   and no second session starts for the same files.
/// - The session cannot apply the files (they have errors): [`AttachError::ConfigNotApplied`].
/// - It applied them and still serves another hash: this command resolves the same files
///   differently (another `PATH` or environment). It then uses (or with `start` starts) a
///   session keyed by its servers themselves, as a configuration built in code is.
pub fn find_or_start(options: &EngineOptions, start: bool) -> Result<Connected, AttachError> {
    // A `--config` pipe (`<(…)`, `/dev/stdin`) is read once, by this process: a session process
    // could not read it again, nor notice it change.
    let piped = options
        .config_sources
        .iter()
        .flat_map(|sources| &sources.config_files)
        .find(|file| std::fs::metadata(file).is_ok_and(|metadata| !metadata.is_file()));
    if let Some(piped) = piped {
        return Err(AttachError::ConfigNotApplied(format!(
            "the configuration {} is not a regular file (a pipe?), which a session cannot read again",
            piped.display()
        )));
    }
    let connected = find_or_start_by_key(options, start)?;
    let wanted = super::hash::config_hash(&options.config);
    if connected.hello.config_hash == wanted {
        return Ok(connected);
    }
    let (connected, reply) = ask_reload(connected, &wanted).map_err(AttachError::Failed)?;
    if reply.config_hash == wanted {
        return Ok(connected);
    }
    if let Some(error) = reply.error {
        return Err(AttachError::ConfigNotApplied(format!(
            "the session for {} (pid {}) keeps its previous configuration: {error}",
            connected.hello.root.display(),
            connected.hello.pid
        )));
    }
    if options.config_sources.is_none() {
        // Keyed by these very servers already: the session cannot disagree unless it is broken.
        return Err(AttachError::Failed(format!(
            "the session at key {} serves another configuration",
            connected.hello.key
        )));
    }
    drop(connected);
    log::info!("this command resolves the configuration differently from the workspace's session; using a session keyed by its servers");
    let mut exact = options.clone();
    exact.config_sources = None;
    find_or_start(&exact, start)
}

/// Sends `reload` with this command's hash on the connection and reads the reply (before any
/// other request, so the next line is its answer).
fn ask_reload(
    connected: Connected,
    config_hash: &str,
) -> Result<(Connected, wire::ReloadReply), String> {
    let Connected {
        mut stream,
        mut reader,
        hello,
    } = connected;
    let op = WireOp::Reload {
        config_hash: config_hash.to_owned(),
    };
    let mut line = serde_json::to_string(&WireRequest { id: 0, op }).unwrap_or_default();
    line.push('\n');
    stream
        .write_all(line.as_bytes())
        .map_err(|error| format!("cannot talk to the session: {error}"))?;
    // A reload stops changed servers: bounded by their shutdown timeouts.
    let _ = reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(120)));
    let reply = match wire::read_line(&mut reader, wire::MAX_LINE_BYTES) {
        Ok(Some(Line::Text(line))) => serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|value| value.get("result").cloned())
            .and_then(|result| serde_json::from_value::<wire::ReloadReply>(result).ok())
            .ok_or_else(|| format!("the session answered reload with {line}"))?,
        _ => return Err(lost_message(&hello)),
    };
    let _ = reader.get_ref().set_read_timeout(None);
    Ok((
        Connected {
            stream,
            reader,
            hello,
        },
        reply,
    ))
}

/// [`find_or_start`] without the configuration check: the session at `options`' key.
pub fn find_or_start_by_key(
    options: &EngineOptions,
    start: bool,
) -> Result<Connected, AttachError> {
    find_or_start_sending(options, start, &|_| Vec::new())
}

/// [`find_or_start_by_key`], writing `early(key)` on the connection before its hello is read
/// ([`connect_sending`]).
pub fn find_or_start_sending(
    options: &EngineOptions,
    start: bool,
    early: &dyn Fn(&str) -> Vec<u8>,
) -> Result<Connected, AttachError> {
    let dir = paths::runtime_dir(start)
        .map_err(|error| AttachError::Failed(error.to_string()))?
        .ok_or(AttachError::NotRunning)?;
    let paths = SessionPaths::new(&dir, &paths::session_key(options));
    match connect_sending(&paths, early) {
        Ok(connected) => return Ok(connected),
        Err(ConnectError::Stale) if !start => {
            return match connect_or_clean_sending(&paths, early) {
                Ok(connected) => Ok(connected),
                Err(ConnectError::Unusable(message)) => Err(AttachError::Failed(message)),
                Err(_) => Err(AttachError::NotRunning),
            }
        }
        Err(ConnectError::NotRunning) if !start => return Err(AttachError::NotRunning),
        Err(ConnectError::NotRunning | ConnectError::Stale) => {}
        Err(ConnectError::Unusable(message)) => return Err(AttachError::Failed(message)),
    }
    let _lock =
        StartLock::acquire(&paths.lock).map_err(|error| AttachError::Failed(error.to_string()))?;
    // Whoever held the lock before us may have started it; a socket still refused now is stale
    // (no session starts without this lock).
    match connect_sending(&paths, early) {
        Ok(connected) => return Ok(connected),
        Err(ConnectError::NotRunning) => {}
        Err(ConnectError::Stale) => {
            log::info!("removing stale session socket {}", paths.socket.display());
            let _ = std::fs::remove_file(&paths.socket);
        }
        Err(ConnectError::Unusable(message)) => return Err(AttachError::Failed(message)),
    }
    let mut ready =
        Some(spawn_session(&paths, options.config_sources.is_none()).map_err(AttachError::Failed)?);
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match connect_sending(&paths, early) {
            Ok(connected) => return Ok(connected),
            Err(ConnectError::Unusable(message)) => return Err(AttachError::Failed(message)),
            // Refused: the session is between `bind` and `listen`.
            Err(ConnectError::NotRunning | ConnectError::Stale) if Instant::now() < deadline => {
                let wait = Duration::from_millis(10).min(deadline - Instant::now());
                match ready.as_mut().map(|pipe| pipe.wait(wait)) {
                    // Listening now (or another session serves the key): connect at once.
                    Some(ReadyState::Ready) => ready = None,
                    Some(ReadyState::Waiting) => {}
                    Some(ReadyState::Exited) => {
                        return Err(AttachError::Failed(exited_message(&paths)));
                    }
                    None => thread::sleep(wait),
                }
            }
            Err(ConnectError::NotRunning | ConnectError::Stale) => {
                return Err(AttachError::Failed(format!(
                    "the session did not start within {} s (its log: {})",
                    START_TIMEOUT.as_secs(),
                    paths.log.display()
                )))
            }
        }
    }
}

/// The message for a session process that ended before it listened: its log's last line (the
/// session's own error, e.g. `cannot listen on …`) and where the whole log is.
fn exited_message(paths: &SessionPaths) -> String {
    let log = std::fs::read_to_string(&paths.log).unwrap_or_default();
    match log.lines().rev().find(|line| !line.trim().is_empty()) {
        Some(last) => format!(
            "the session exited before it served: {} (its log: {})",
            last.trim(),
            paths.log.display()
        ),
        None => format!(
            "the session exited before it served (its log: {})",
            paths.log.display()
        ),
    }
}

/// What a starting session's ready pipe says ([`ReadyPipe::wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadyState {
    /// The session wrote its byte: it listens (or found another session serving its key).
    Ready,
    /// Nothing yet.
    Waiting,
    /// End of file without the byte: every process holding the write end is gone, so the
    /// session ended (or crashed) before it listened.
    Exited,
}

/// The read end of the pipe a starting session reports on ([`super::server::READY_FD_ENV`]): the session writes
/// one byte once it listens and the write end closes when it exits, so a session that fails at
/// start is noticed at once instead of after [`START_TIMEOUT`].
struct ReadyPipe(std::fs::File);

impl ReadyPipe {
    /// Waits up to `timeout` for the byte or the end of file.
    fn wait(&mut self, timeout: Duration) -> ReadyState {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let mut poll = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd for the call's duration.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready <= 0 {
            return ReadyState::Waiting;
        }
        let mut byte = [0u8; 1];
        match self.0.read(&mut byte) {
            Ok(1) => ReadyState::Ready,
            Ok(_) => ReadyState::Exited,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => ReadyState::Waiting,
            Err(_) => ReadyState::Exited,
        }
    }
}

/// A close-on-exec pipe whose ends are both above stderr (so the child's stdio set-up cannot
/// overwrite them): (read end, write end).
fn ready_pipe() -> std::io::Result<(std::fs::File, std::os::fd::OwnedFd)> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just created both descriptors and nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let above_stderr = |fd: OwnedFd| -> std::io::Result<OwnedFd> {
        use std::os::fd::AsRawFd;
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        // SAFETY: duplicating a descriptor we own; the copy is owned by the new OwnedFd.
        let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if copy == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fcntl just created `copy`.
        Ok(unsafe { OwnedFd::from_raw_fd(copy) })
    };
    Ok((
        std::fs::File::from(above_stderr(read)?),
        above_stderr(write)?,
    ))
}

/// Starts this very command line again as the session process (`LSPC_SESSION=serve`), so the
/// root and configuration are resolved exactly as this command resolved them. The process is
/// detached: forked twice (so it is nobody's child), `setsid` (no controlling terminal), stdin
/// from `/dev/null`, stdout and stderr to its log file, and it never holds the caller's pipes.
/// `exact`: the session is keyed by its servers ([`super::server::EXACT_ENV`]). Returns the read
/// end of the session's ready pipe ([`ReadyPipe`]).
fn spawn_session(paths: &SessionPaths, exact: bool) -> Result<ReadyPipe, String> {
    let exe = std::env::current_exe()
        .map_err(|error| format!("cannot find the lspc executable to start a session: {error}"))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&paths.log)
        .map_err(|error| format!("cannot open session log {}: {error}", paths.log.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|error| format!("session log: {error}"))?;
    let (ready_read, ready_write) =
        ready_pipe().map_err(|error| format!("cannot start the session: {error}"))?;
    let ready_fd = {
        use std::os::fd::AsRawFd;
        ready_write.as_raw_fd()
    };
    let mut command = Command::new(exe);
    command
        .args(std::env::args_os().skip(1))
        .env("LSPC_SESSION", "serve")
        .env(super::server::READY_FD_ENV, ready_fd.to_string())
        .env_remove(super::server::EXACT_ENV)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // SAFETY: only async-signal-safe calls (fork, _exit, setsid, fcntl) run between fork and exec.
    unsafe {
        command.pre_exec(move || {
            match libc::fork() {
                -1 => return Err(std::io::Error::last_os_error()),
                0 => {}
                _ => libc::_exit(0),
            }
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // The session keeps the ready pipe's write end across exec (and only it).
            if libc::fcntl(ready_fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if exact {
        command.env(super::server::EXACT_ENV, "1");
    }
    let mut child = command
        .spawn()
        .map_err(|error| format!("cannot start the session: {error}"))?;
    // The intermediate process exits at once; reaping it leaves the session parented by init.
    let _ = child.wait();
    // Only the session holds the write end now: its end of file means the session is gone.
    drop(ready_write);
    Ok(ReadyPipe(ready_read))
}

/// `the lspc session for ROOT (pid N) ended`: how a proxy names the session it served through.
fn ended_message(hello: &Hello) -> String {
    format!(
        "the lspc session for {} (pid {}) ended",
        hello.root.display(),
        hello.pid
    )
}

/// The message a frontend gets when the session ends under a call (`lspc session stop` between
/// the call's write and its answer, the idle bound, a crash): the next call runs without it (in
/// process, or in a session found or started again), so asking again is the way on.
fn lost_message(hello: &Hello) -> String {
    format!(
        "{} before it answered; ask again (its log: {})",
        ended_message(hello),
        hello.log.display()
    )
}

/// Wraps a connection in an [`EngineHandle`] whose ops are served by the session. An op that
/// comes after the session ended first connects again through `reconnect`; when that fails, the
/// ops go to a loop in this process started from `in_process` ([`super::fallback::InProcess`]).
pub fn proxy(
    connected: Connected,
    signals: ProxySignals,
    reconnect: Reconnect,
    in_process: EngineOptions,
) -> EngineHandle {
    let (op_sender, op_receiver) = crate::doorbell::unbounded::<Op>();
    let thread = thread::Builder::new()
        .name("lspc-session-proxy".to_owned())
        .spawn(move || run_proxy(connected, op_receiver, signals, reconnect, in_process))
        .expect("spawning the session proxy thread");
    EngineHandle::from_parts(op_sender, thread)
}

/// Starts the reader thread of a session connection.
fn spawn_reader(
    reader: BufReader<UnixStream>,
) -> (Option<thread::JoinHandle<()>>, Receiver<Option<Line>>) {
    let (line_sender, line_receiver) = unbounded::<Option<Line>>();
    let reader_thread = thread::Builder::new()
        .name("lspc-session-reader".to_owned())
        .spawn(move || read_lines(reader, line_sender))
        .ok();
    (reader_thread, line_receiver)
}

fn run_proxy(
    connected: Connected,
    op_receiver: Receiver<Op>,
    signals: ProxySignals,
    mut reconnect: Reconnect,
    in_process_options: EngineOptions,
) {
    crate::engine::mark_serving_ops();
    let signal_receiver = match signals.handle.then(crate::signals::install) {
        Some(Ok(receiver)) => receiver,
        Some(Err(error)) => {
            log::warn!("cannot install signal handlers: {error}");
            crossbeam_channel::never()
        }
        None => crossbeam_channel::never(),
    };
    let Connected {
        mut stream,
        reader,
        hello,
    } = connected;
    let (mut reader_thread, mut line_receiver) = spawn_reader(reader);
    let mut pending: HashMap<u64, ReplySlot> = HashMap::new();
    let mut next_id: u64 = 1;
    let mut lost = false;
    let mut message = lost_message(&hello);
    let mut session = hello;
    let mut subscriptions = Subscriptions::default();
    // Set once no session could be reached after this one ended: every later op goes there.
    let mut in_process: Option<InProcess> = None;
    // The proxy's side of the connection, borrowed for one op or one reply line.
    macro_rules! wire_state {
        () => {
            WireState {
                stream: &mut stream,
                pending: &mut pending,
                next_id: &mut next_id,
                lost: &mut lost,
                message: &message,
            }
        };
    }
    // This process's logger was set up from the same filter (see `query`).
    let verbose_logs = log::max_level() > log::LevelFilter::Warn;
    wire_state!().send_log_filter();
    loop {
        select! {
            recv(op_receiver) -> op => {
                let op = match op {
                    Ok(op) => op,
                    Err(_) => break,
                };
                // The session's last lines (its end, after `lspc session stop`) may be queued
                // behind this op: read first, so the op goes where the next call would go.
                while !lost {
                    let Ok(line) = line_receiver.try_recv() else {
                        break;
                    };
                    wire_state!().receive(Ok(line));
                    if lost {
                        line_receiver = crossbeam_channel::never();
                    }
                }
                if let Some(engine) = in_process.as_ref() {
                    if let Op::Shutdown { reply } = op {
                        // Dropping the loop shuts its servers down first.
                        drop(in_process.take());
                        let _ = reply.send(());
                        break;
                    }
                    engine.serve(op);
                    continue;
                }
                if lost && !matches!(op, Op::Shutdown { .. }) {
                    match reconnect() {
                        Ok(connected) => {
                            log::info!(
                                "the lspc session ended; connected to the session for {} (pid {})",
                                connected.hello.root.display(),
                                connected.hello.pid
                            );
                            let _ = stream.shutdown(std::net::Shutdown::Both);
                            if let Some(old) = reader_thread.take() {
                                let _ = old.join();
                            }
                            stream = connected.stream;
                            message = lost_message(&connected.hello);
                            session = connected.hello;
                            (reader_thread, line_receiver) = spawn_reader(connected.reader);
                            lost = false;
                            let mut wire_state = wire_state!();
                            wire_state.send_log_filter();
                            for renewed in subscriptions.renewed() {
                                if let Split::Wire(op, slot) = wire::split(renewed) {
                                    wire_state.send(op, slot);
                                }
                            }
                        }
                        Err(error) => {
                            let why = match error {
                                AttachError::NotRunning => "no session runs".to_owned(),
                                AttachError::Failed(error) | AttachError::ConfigNotApplied(error) => error,
                            };
                            log::warn!(
                                "{ended}; {why}: this run's requests are served in this process from now on",
                                ended = ended_message(&session)
                            );
                            let engine = InProcess::start(&in_process_options, &subscriptions);
                            engine.serve(op);
                            in_process = Some(engine);
                            continue;
                        }
                    }
                }
                // After any renewal above: a subscription is made once, by this op.
                subscriptions.note(&op);
                match wire::split(op) {
                    Split::Local(Op::Shutdown { reply }) => {
                        if verbose_logs {
                            // The engine may log after its last reply (an answer's debug line, a
                            // late publish dropped): one more loop round trip delivers those
                            // lines before this command exits, as in process.
                            let (barrier, done) = crossbeam_channel::bounded(1);
                            let mut wire_state = wire_state!();
                            wire_state.send(WireOp::OpenDocuments, ReplySlot::OpenDocuments(barrier));
                            let deadline = crossbeam_channel::after(LOG_FLUSH_TIMEOUT);
                            loop {
                                select! {
                                    recv(done) -> _ => break,
                                    recv(line_receiver) -> line => {
                                        wire_state.receive(line);
                                        if *wire_state.lost {
                                            break;
                                        }
                                    }
                                    recv(deadline) -> _ => break,
                                }
                            }
                        }
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                        fail_all(&mut pending, &message);
                        let _ = reply.send(());
                        break;
                    }
                    // `instant` is not honoured here: the sync waits in the session as usual.
                    Split::Local(Op::SyncRequest {
                        path,
                        timeout,
                        build,
                        instant: _,
                    }) => {
                        // The builder is a closure that cannot cross the socket: sync over the
                        // wire (answering other lines meanwhile), build here, then send the
                        // request. Two round trips instead of the in-process one.
                        let (reply, synced) = crossbeam_channel::bounded(1);
                        let sync = WireOp::Sync {
                            path,
                            timeout_ms: wire::millis(timeout),
                        };
                        let mut wire_state = wire_state!();
                        wire_state.send(sync, ReplySlot::Sync(reply));
                        let result = loop {
                            select! {
                                recv(synced) -> result => {
                                    break result.unwrap_or(Err(crate::engine::EngineError::Gone));
                                }
                                recv(line_receiver) -> line => wire_state.receive(line),
                            }
                        };
                        let document = result.as_ref().ok().map(|synced| synced.path.clone());
                        if let Some(mut built) = build(result.as_ref()) {
                            let on_sent = built.on_sent.take();
                            // The session syncs the document again before the request: the
                            // LRU bound may have closed it since this sync (another client's).
                            let request = WireOp::Request {
                                server_id: built.server_id,
                                method: built.method,
                                params: built.params.into_value(),
                                timeout_ms: wire::millis(built.timeout),
                                retry: built.retry,
                                tag: built.tag,
                                document,
                            };
                            wire_state.send(request, ReplySlot::Request(built.reply));
                            if let Some(on_sent) = on_sent {
                                on_sent();
                            }
                        }
                    }
                    Split::Local(_) => {}
                    Split::Wire(op, slot) => wire_state!()
                    .send(op, slot),
                }
            },
            recv(signal_receiver) -> signal => {
                let signal = signal.unwrap_or(libc::SIGTERM);
                log::info!("received signal {signal}: leaving the session");
                // A loop serving in this process shuts its servers down first, as in process.
                in_process = None;
                if let Some(sender) = &signals.interrupted_sender {
                    let _ = sender.send(signal);
                }
                let _ = stream.shutdown(std::net::Shutdown::Both);
                // Dropped unanswered, as the loop's shutdown answers them: "engine gone".
                pending.clear();
                lost = true;
                if signals.interrupted_sender.is_none() {
                    std::process::exit(128 + signal);
                }
            },
            recv(line_receiver) -> line => {
                wire_state!()
                .receive(line);
                if lost {
                    // The reader is gone: a closed channel would wake this loop forever.
                    line_receiver = crossbeam_channel::never();
                }
            }
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
    if let Some(reader_thread) = reader_thread {
        let _ = reader_thread.join();
    }
}

fn read_lines(mut reader: BufReader<UnixStream>, line_sender: Sender<Option<Line>>) {
    loop {
        match wire::read_line(&mut reader, wire::MAX_LINE_BYTES) {
            Ok(Some(line)) => {
                if line_sender.send(Some(line)).is_err() {
                    return;
                }
            }
            Ok(None) | Err(_) => {
                let _ = line_sender.send(None);
                return;
            }
        }
    }
}

/// The proxy's side of the connection while it handles one op or one reply line.
struct WireState<'a> {
    stream: &'a mut UnixStream,
    pending: &'a mut HashMap<u64, ReplySlot>,
    next_id: &'a mut u64,
    lost: &'a mut bool,
    message: &'a str,
}

impl WireState<'_> {
    /// Writes one op as one line (its slot waits for the reply), or fails the slot at once
    /// when the session is lost.
    fn send(&mut self, op: WireOp, slot: ReplySlot) {
        if *self.lost {
            slot.fail(self.message);
            return;
        }
        let id = *self.next_id;
        *self.next_id += 1;
        let has_reply = !matches!(slot, ReplySlot::None);
        let mut line = match serde_json::to_string(&WireRequest { id, op }) {
            Ok(line) => line,
            // The wire is JSON, which has no form for a path that is not UTF-8: the op cannot
            // go out, so its slot is answered now (an empty line would leave it waiting).
            Err(error) => {
                slot.fail(&format!(
                    "this request cannot be sent to the session ({error}); run it with --session never"
                ));
                return;
            }
        };
        line.push('\n');
        if has_reply {
            self.pending.insert(id, slot);
        }
        // One write per line: one syscall, and no half line on the wire.
        if self.stream.write_all(line.as_bytes()).is_err() {
            *self.lost = true;
            fail_all(self.pending, self.message);
        }
    }

    /// A connection's first line: this command's log filter, so the session forwards the engine
    /// records an in-process run would have printed on this process's stderr.
    fn send_log_filter(&mut self) {
        self.send(
            WireOp::Logs {
                filter: super::logs::client_filter().to_owned(),
            },
            ReplySlot::None,
        );
    }

    /// Handles one line from the session's reader thread (`None`/closed: the session is lost).
    fn receive(&mut self, line: Result<Option<Line>, crossbeam_channel::RecvError>) {
        match line {
            Ok(Some(Line::Text(line))) => dispatch(&line, self.pending),
            Ok(Some(_)) => log::warn!("session sent an unreadable line"),
            Ok(None) | Err(_) => {
                if !*self.lost {
                    log::debug!("{}", self.message);
                }
                *self.lost = true;
                fail_all(self.pending, self.message);
            }
        }
    }
}

fn fail_all(pending: &mut HashMap<u64, ReplySlot>, message: &str) {
    for (_, slot) in pending.drain() {
        slot.fail(message);
    }
}

/// Routes one reply line to its slot: `result` answers (and retires) it, `event` feeds a
/// subscription, `error` drops the slot (the frontend reads "engine gone").
fn dispatch(line: &str, pending: &mut HashMap<u64, ReplySlot>) {
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        log::warn!("session sent a line that is not JSON");
        return;
    };
    if let Some(log) = value.get_mut("log") {
        match serde_json::from_value::<super::logs::WireLog>(log.take()) {
            Ok(log) => super::logs::replay(&log),
            Err(error) => log::warn!("session sent a malformed log line: {error}"),
        }
        return;
    }
    let Some(id) = value.get("id").and_then(Value::as_u64) else {
        if let Some(error) = value.get("error") {
            log::warn!("session error: {error}");
        }
        return;
    };
    if let Some(event) = value.get("event") {
        if let Some(slot) = pending.get(&id) {
            if let Err(error) = slot.deliver_event(event.clone()) {
                log::warn!("session sent a malformed event: {}", error.0);
            }
        }
        return;
    }
    let Some(slot) = pending.remove(&id) else {
        return;
    };
    if let Some(result) = value.get("result") {
        if let Err(error) = slot.deliver(result.clone()) {
            log::warn!("session sent a malformed reply: {}", error.0);
        }
        if slot.is_stream() {
            pending.insert(id, slot);
        }
        return;
    }
    if let Some(error) = value.get("error") {
        log::debug!("session answered {id} with an error: {error}");
    }
}

/// Sends one session-level op (`info`, `stop`) on a fresh connection and returns its `result`.
pub fn session_request(connected: Connected, op: WireOp) -> Result<Value, String> {
    let Connected {
        mut stream,
        mut reader,
        hello,
    } = connected;
    let line = serde_json::to_string(&WireRequest { id: 1, op }).unwrap_or_default();
    writeln!(stream, "{line}")
        .and_then(|()| stream.flush())
        .map_err(|error| format!("cannot talk to the session: {error}"))?;
    let _ = reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(30)));
    match wire::read_line(&mut reader, wire::MAX_LINE_BYTES) {
        Ok(Some(Line::Text(line))) => {
            let value: Value = serde_json::from_str(&line).unwrap_or(json!({}));
            if let Some(result) = value.get("result") {
                return Ok(result.clone());
            }
            Err(format!(
                "the session answered with an error: {}",
                value.get("error").unwrap_or(&Value::Null)
            ))
        }
        _ => Err(lost_message(&hello)),
    }
}

/// Whether `pid` names a live process (not a zombie).
pub fn pid_alive(pid: u32) -> bool {
    crate::process::process_running(pid)
}
