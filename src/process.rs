//! One language-server process, its three I/O threads and the bounded way to end it.
//!
//! [`spawn`] starts the server with piped stdio in a new process group (pgid = its pid) and starts
//! three named threads that only move bytes (the event loop owns all state):
//! - `"<name>-writer"` takes framed messages from an unbounded channel and writes them to stdin.
//!   Unbounded on purpose: a bounded channel can deadlock (loop waits on writer, writer on the
//!   server's full stdin, server on its full stdout, reader on the loop). A write error (EPIPE) is
//!   logged and stops the writer; the reader then sees EOF. For a stdio server the writer only
//!   takes over when the pipe is full: [`ServerProcess::send`] frames the message once and writes
//!   it to the non-blocking pipe itself while nothing waits in the writer's queue (issue 15: one
//!   thread hand-off less per request; order is kept because the direct path is taken only when
//!   the queue is empty, and only the owner of the `ServerProcess` sends). Whatever the pipe does
//!   not take at once goes to the writer, which waits with `poll(2)` for room, so the loop never
//!   blocks on a server that does not read.
//! - `"<name>-reader"` splits stdout into frames ([`FrameReader`]), decodes them and sends
//!   [`ServerEvent::Message`] into the loop's one fan-in channel. A bad body costs one message.
//!   Its LAST event is always exactly one [`ServerEvent::Closed`].
//! - `"<name>-stderr"` drains stderr continuously (a server blocks once about 64 KiB of unread
//!   stderr fills the pipe, B05), keeps the last 64 KiB for crash reports and logs each line at
//!   debug level.
//!
//! Invariants:
//! - No code path leaves a server running or a zombie: [`ServerProcess::terminate`] is bounded
//!   (grace, then SIGTERM to the group, 1 s, then SIGKILL to the group, then reap) and `Drop` runs
//!   it with no grace. Killing the group also ends grandchildren (typescript-language-server's
//!   `tsserver` node processes, B26).
//! - On Linux the server gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies if lspc is SIGKILLed. The
//!   kernel fires it when the *thread* that cloned it exits, not the process: spawn servers from a
//!   long-lived thread (lspc spawns from its event-loop thread).
//! - A server known to leave folders in its temp dir runs with its own `TMPDIR` ([`private_tmp`]),
//!   removed once its process group is gone: typescript-language-server never removes the folders
//!   it makes there (issue 15).
//! - The stderr tail is the only state behind a `Mutex`: it holds bytes for crash reports, not loop
//!   state, and the lock is held only to copy a chunk in or out.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ChildStdin;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

pub use crate::config::Transport;
use crate::doorbell::LoopSender;
use crate::transport::{
    decode, write_outgoing, FrameReader, FramingError, IncomingMessage, Outgoing,
};

mod launch;
mod private_tmp;
mod socket;

pub use launch::ChildProcess;
use private_tmp::PrivateTmp;

/// Bytes of stderr kept per server for crash reports (the last 64 KiB).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// How long a server gets to exit after SIGTERM before its group is SIGKILLed.
pub const SIGTERM_GRACE: Duration = Duration::from_secs(1);

/// How long `terminate` waits for the I/O threads after the group is dead before leaving them
/// behind (only possible if a process outside the group holds the server's pipes open).
const THREAD_JOIN_TIMEOUT: Duration = Duration::from_secs(1);

/// Longest stderr line logged in one piece, in bytes; longer lines are logged in pieces.
const STDERR_LOG_LINE_BYTES: usize = 4096;

/// How long the stderr thread waits after a read before it reads again, so that what a server
/// logs meanwhile is taken in one read (issue 15). clangd writes a line to stderr for every
/// request and every reply; a reader blocked in `read` is woken by each, and the server's own
/// `write` pays that wake-up before it writes its reply. While the thread sleeps, a write only
/// copies into the pipe (64 KiB; a server that fills it within this time waits for the rest of
/// it). Lines reach the debug log at most this late. Once the server's leader is reaped the wait
/// is cut short, so joining the thread costs no coalescing wait (a `lspc check` on ruff, whose
/// whole exchange takes about 12 ms, waited up to this long for it at the end).
const STDERR_COALESCE: Duration = Duration::from_millis(5);

/// The stderr thread's read buffer: a Linux pipe's default capacity, so one read empties it.
const STDERR_READ_BYTES: usize = 64 * 1024;

/// Identifies one configured server for the lifetime of the lspc process (restarts keep it; see
/// `generation`).
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ServerId(pub u32);

/// What to start. `generation` counts restarts of `server_id` (0 for the first start) so events
/// from a dead process can be told apart from its replacement's.
#[derive(Clone, Debug)]
pub struct SpawnSpec {
    pub server_id: ServerId,
    pub generation: u32,
    /// Human name for logs, thread names and errors (e.g. `pyright`).
    pub name: String,
    /// The executable; resolved through `PATH` when it has no slash.
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Added to (not replacing) lspc's environment.
    pub env: Vec<(String, String)>,
    /// Working directory of the server (usually the workspace root).
    pub cwd: PathBuf,
    /// `Stdio`: LSP over the child's stdin/stdout. `Socket`: lspc listens on a loopback port,
    /// passes `--socket=PORT` after `args` and speaks LSP over the connection the server makes
    /// (see [`socket`]); the child's stdout is then drained like its stderr.
    pub transport: Transport,
    /// The first message (`initialize`), framed into the stdin pipe before the child starts
    /// (issue 15: a server ready to read before lspc had written it waited for lspc's I/O
    /// threads to start); for the socket transport it is sent once the threads are up.
    pub first_message: Option<Outgoing>,
}

/// Hands a successful answer (the `result`'s raw JSON text, [`crate::transport::decode_success`])
/// straight to whoever waits for it.
pub type DirectReply = Box<dyn FnOnce(Box<serde_json::value::RawValue>) + Send>;

/// What the I/O threads report to the event loop, all through one fan-in channel.
#[derive(Debug)]
pub enum ServerEvent {
    /// The successful answer to request `id`, already handed to its [`DirectReply`] by the
    /// reader (see [`ServerProcess::expect_reply`]); the loop only does its bookkeeping.
    Delivered {
        server_id: ServerId,
        generation: u32,
        id: i32,
    },
    /// One decoded message from the server's stdout.
    Message {
        server_id: ServerId,
        generation: u32,
        message: IncomingMessage,
    },
    /// The server's stdout ended; always the last event of a reader thread, sent exactly once.
    /// The process may still be running (it closed stdout); the loop calls `terminate`.
    Closed {
        server_id: ServerId,
        generation: u32,
        reason: CloseReason,
    },
}

/// Why a server's stdout stopped producing messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Clean end of stream between frames (the server exited or closed stdout).
    Eof,
    /// The byte stream could no longer be split into messages (the server is treated as crashed).
    Framing(String),
    /// Reading stdout failed.
    Io(String),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Eof => write!(f, "server closed its output"),
            CloseReason::Framing(message) | CloseReason::Io(message) => f.write_str(message),
        }
    }
}

/// Why a server could not be started.
#[derive(Debug)]
pub enum SpawnError {
    /// The executable does not exist (ENOENT).
    NotFound { command: PathBuf },
    /// The executable is not executable (EACCES).
    PermissionDenied { command: PathBuf },
    /// Any other failure (missing working directory, clone failure, a thread that did not start).
    Io { command: PathBuf, source: io::Error },
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::NotFound { command } => {
                write!(f, "command not found: {}", command.display())
            }
            SpawnError::PermissionDenied { command } => {
                write!(f, "permission denied: {}", command.display())
            }
            SpawnError::Io { command, source } => {
                write!(f, "cannot start {}: {source}", command.display())
            }
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `send` failed: the writer thread has stopped (the server's stdin is closed or broken).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerGone {
    pub server_name: String,
}

impl fmt::Display for ServerGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server {} no longer accepts input", self.server_name)
    }
}

impl std::error::Error for ServerGone {}

/// How a server process ended. `Display` is `exit N`, `signal N` or `unknown exit status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    /// `None` only if the status could not be collected (someone else reaped the child).
    pub status: Option<ExitStatus>,
    /// The signal that ended the process, if a signal did.
    pub signal: Option<i32>,
    /// True if lspc had to signal the process (SIGTERM or SIGKILL) to end it.
    pub killed: bool,
}

impl ExitInfo {
    fn new(status: Option<ExitStatus>, killed: bool) -> ExitInfo {
        ExitInfo {
            status,
            signal: status.and_then(|status| status.signal()),
            killed,
        }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status.and_then(|status| status.code()), self.signal) {
            (Some(code), _) => write!(f, "exit {code}"),
            (None, Some(signal)) => write!(f, "signal {signal}"),
            (None, None) => write!(f, "unknown exit status"),
        }
    }
}

/// The last [`STDERR_TAIL_BYTES`] bytes a server wrote to stderr.
#[derive(Debug, Default)]
pub struct StderrTail {
    bytes: VecDeque<u8>,
    /// Every byte ever written, including those no longer kept.
    pub total_bytes: u64,
}

impl StderrTail {
    fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        let chunk = &chunk[chunk.len().saturating_sub(STDERR_TAIL_BYTES)..];
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(STDERR_TAIL_BYTES);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    /// The kept bytes as text (lossy UTF-8; the first character may be cut).
    pub fn text(&self) -> String {
        let (front, back) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(self.bytes.len());
        all.extend_from_slice(front);
        all.extend_from_slice(back);
        String::from_utf8_lossy(&all).into_owned()
    }
}

/// A running (or finished) server and its I/O threads. Dropping it terminates the server.
pub struct ServerProcess {
    server_id: ServerId,
    generation: u32,
    name: String,
    child: ChildProcess,
    pid: u32,
    /// Framed messages for the writer thread; `None` once stdin is being closed.
    outgoing_sender: Option<Sender<Vec<u8>>>,
    /// The stdio transport's direct path to stdin ([`ServerProcess::send`]); `None` for the
    /// socket transport and once stdin is being closed.
    direct_stdin: Option<DirectStdin>,
    /// Registrations of [`ServerProcess::expect_reply`] for the reader thread.
    expected_sender: Sender<(i32, DirectReply)>,
    /// Disconnects when all three I/O threads have ended (each holds a sender clone).
    threads_done_receiver: Receiver<()>,
    threads: Vec<JoinHandle<()>>,
    stderr_tail: Arc<Mutex<StderrTail>>,
    /// Dropped by `finish` to end the output threads' coalescing waits ([`run_stderr`]).
    stderr_wake: Option<Sender<()>>,
    /// Set by `terminate`/`kill_group_now`; makes them idempotent.
    exit_info: Option<ExitInfo>,
    /// The server's `TMPDIR`, removed by `finish` once the process group is gone.
    private_tmp: Option<PrivateTmp>,
}

impl fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerProcess")
            .field("server_id", &self.server_id)
            .field("generation", &self.generation)
            .field("name", &self.name)
            .field("pid", &self.pid)
            .field("exit_info", &self.exit_info)
            .finish()
    }
}

/// Where a server's I/O threads report (fan-in: every server shares both channels).
#[derive(Clone, Debug)]
pub struct EventSenders {
    /// The loop's event channel: each event wakes the loop.
    pub events: LoopSender<ServerEvent>,
    /// [`ServerEvent::Delivered`] only. The loop drains it before it handles anything else and
    /// is never woken by it (issue 15: the caller already has its answer, only bookkeeping is
    /// left, so a wake-up per request would buy nothing). A reader sends an answer's
    /// `Delivered` before any later event on `events`, so draining first keeps their order.
    pub delivered: Sender<ServerEvent>,
}

impl From<Sender<ServerEvent>> for EventSenders {
    /// Both kinds on one plain channel (tests that read every event in order).
    fn from(events: Sender<ServerEvent>) -> EventSenders {
        EventSenders {
            delivered: events.clone(),
            events: LoopSender::unrung(events),
        }
    }
}

/// Starts a server as described by `spec`; its events go to `senders`.
///
/// The child runs in a new process group (pgid = pid) so the whole tree can be signalled, with
/// `PR_SET_PDEATHSIG = SIGKILL` on Linux, started without copying lspc ([`launch`]:
/// `clone(CLONE_VM | CLONE_VFORK)`, as `posix_spawn` does). Call this from a long-lived thread:
/// the parent-death signal fires when the spawning thread exits.
///
/// Errors: [`SpawnError::NotFound`] (ENOENT), [`SpawnError::PermissionDenied`] (EACCES),
/// [`SpawnError::Io`] otherwise (including a missing `cwd`).
pub fn spawn(spec: SpawnSpec, senders: EventSenders) -> Result<ServerProcess, SpawnError> {
    let event_sender = senders.events.clone();
    let SpawnSpec {
        server_id,
        generation,
        name,
        command,
        args,
        env,
        cwd,
        transport,
        first_message,
    } = spec;
    if !cwd.is_dir() {
        // Checked here because the kernel reports a missing cwd as ENOENT, which would read as
        // "command not found".
        let source = io::Error::new(
            io::ErrorKind::NotFound,
            format!("working directory {} does not exist", cwd.display()),
        );
        return Err(SpawnError::Io { command, source });
    }
    let mut args = args;
    let listener = match transport {
        Transport::Stdio => None,
        Transport::Socket => {
            let (listener, argument) = socket::listen().map_err(|source| SpawnError::Io {
                command: command.clone(),
                source,
            })?;
            args.push(argument);
            Some(listener)
        }
    };
    let mut first_bytes = Vec::new();
    if let Some(message) = &first_message {
        if let Err(error) = write_outgoing(&mut first_bytes, message) {
            log::warn!("cannot serialise the first message for server {name}: {error}");
            first_bytes.clear();
        }
    }
    let stdin_prefill: &[u8] = match listener {
        None => &first_bytes,
        Some(_) => &[],
    };
    // The server's own temporary folder, removed once its group is gone ([`private_tmp`]);
    // first, so a `TMPDIR` of the server's configuration (already in `env`) replaces it.
    let private_tmp = match private_tmp::wanted(&command, &args, &env) {
        true => PrivateTmp::create(&name),
        false => None,
    };
    let mut env = env;
    if let Some(tmp) = &private_tmp {
        env.insert(
            0,
            (
                "TMPDIR".to_owned(),
                tmp.path().to_string_lossy().into_owned(),
            ),
        );
    }
    let launched = launch::launch(&launch::LaunchSpec {
        program: &command,
        args: &args,
        env: &env,
        cwd: &cwd,
        stdin_piped: listener.is_none(),
        stdin_prefill,
    })
    .map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound {
            command: command.clone(),
        },
        io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied {
            command: command.clone(),
        },
        _ => SpawnError::Io {
            command: command.clone(),
            source,
        },
    });
    let launched = match launched {
        Ok(launched) => launched,
        Err(error) => {
            if let Some(tmp) = private_tmp {
                tmp.remove();
            }
            return Err(error);
        }
    };
    let launch::Launched {
        child,
        stdin,
        stdout,
        stderr,
        n_prefilled,
    } = launched;
    let pid = child.id();
    log::debug!(
        "started server {name} (pid {pid}, clone(CLONE_VM|CLONE_VFORK)): {} {args:?}",
        command.display()
    );

    let (outgoing_sender, outgoing_receiver) = crossbeam_channel::unbounded();
    let stdin = stdin.map(|stdin| DirectStdin {
        stdin: Arc::new(stdin),
        queued: Arc::new(AtomicUsize::new(0)),
    });
    let direct_stdin = match &stdin {
        Some(direct) if set_non_blocking(&direct.stdin) => Some(direct.clone()),
        _ => None,
    };
    let (expected_sender, expected_receiver) = crossbeam_channel::unbounded();
    let (threads_done_sender, threads_done_receiver) = crossbeam_channel::bounded::<()>(0);
    let (stderr_wake_sender, stderr_wake) = crossbeam_channel::bounded::<()>(0);
    let stderr_tail = Arc::new(Mutex::new(StderrTail::default()));
    let mut threads = Vec::with_capacity(3);

    let started = (|| -> io::Result<()> {
        let spawn_thread = |suffix: &str, body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(format!("{name}-{suffix}"))
                .spawn(body)
        };
        let stderr_done = threads_done_sender.clone();
        let stderr_name = name.clone();
        let drain = OutputDrain {
            tail: Arc::clone(&stderr_tail),
            wake: stderr_wake.clone(),
            coalesce: STDERR_COALESCE,
        };
        threads.push(spawn_thread(
            "stderr",
            Box::new(move || run_stderr(&stderr_name, "stderr", stderr, drain, stderr_done)),
        )?);
        let writer_done = threads_done_sender.clone();
        let reader_done = threads_done_sender.clone();
        let writer_name = name.clone();
        let reader_name = name.clone();
        match (listener, stdin) {
            (None, Some(stdin)) => {
                threads.push(spawn_thread(
                    "writer",
                    Box::new(move || {
                        run_pipe_writer(&writer_name, stdin, outgoing_receiver, writer_done)
                    }),
                )?);
                threads.push(spawn_thread(
                    "reader",
                    Box::new(move || {
                        run_reader(
                            &reader_name,
                            server_id,
                            generation,
                            stdout,
                            (senders, expected_receiver),
                            reader_done,
                        )
                    }),
                )?);
            }
            (Some(listener), _) => {
                // The reader accepts the connection and hands the writer its half; messages
                // sent meanwhile wait in the unbounded outgoing channel.
                let server_gone = Arc::new(AtomicBool::new(false));
                let stdout_done = threads_done_sender.clone();
                let stdout_name = name.clone();
                let drain = OutputDrain {
                    tail: Arc::clone(&stderr_tail),
                    wake: stderr_wake.clone(),
                    coalesce: STDERR_COALESCE,
                };
                let gone = Arc::clone(&server_gone);
                threads.push(spawn_thread(
                    "stdout",
                    Box::new(move || {
                        run_stderr(&stdout_name, "stdout", stdout, drain, stdout_done);
                        gone.store(true, Ordering::SeqCst);
                    }),
                )?);
                let (stream_sender, stream_receiver) = crossbeam_channel::bounded(1);
                threads.push(spawn_thread(
                    "writer",
                    Box::new(move || {
                        // No stream: the reader failed to accept and reports why.
                        if let Ok(stream) = stream_receiver.recv() {
                            let writer = socket::SocketWriter(stream);
                            run_writer(&writer_name, writer, outgoing_receiver, writer_done);
                        }
                    }),
                )?);
                threads.push(spawn_thread(
                    "reader",
                    Box::new(move || {
                        let connected = socket::accept(listener, &server_gone).and_then(|stream| {
                            let writer_half = stream.try_clone()?;
                            let _ = stream_sender.send(writer_half);
                            Ok(stream)
                        });
                        match connected {
                            Ok(stream) => run_reader(
                                &reader_name,
                                server_id,
                                generation,
                                stream,
                                (senders, expected_receiver),
                                reader_done,
                            ),
                            Err(error) => {
                                log::warn!("server {reader_name}: {error}");
                                let _ = event_sender.send(ServerEvent::Closed {
                                    server_id,
                                    generation,
                                    reason: CloseReason::Io(format!(
                                        "server {reader_name}: {error}"
                                    )),
                                });
                            }
                        }
                    }),
                )?);
            }
            (None, None) => unreachable!("stdin is piped for the stdio transport"),
        }
        Ok(())
    })();
    drop(threads_done_sender);

    let mut process = ServerProcess {
        server_id,
        generation,
        name,
        child,
        pid,
        outgoing_sender: Some(outgoing_sender),
        direct_stdin,
        expected_sender,
        threads_done_receiver,
        threads,
        stderr_tail,
        stderr_wake: Some(stderr_wake_sender),
        exit_info: None,
        private_tmp,
    };
    if let Err(source) = started {
        // Dropping `process` kills the child and joins whatever threads did start.
        process.kill_group_now();
        return Err(SpawnError::Io { command, source });
    }
    // What the pipe did not take before the start (and the whole message for a socket).
    if n_prefilled < first_bytes.len() {
        let rest = first_bytes.split_off(n_prefilled);
        let _ = process.send_bytes(rest);
    }
    Ok(process)
}

/// A stdio server's stdin, shared by the loop's direct path and the writer thread.
#[derive(Clone)]
struct DirectStdin {
    /// Non-blocking (`O_NONBLOCK` on lspc's end of the pipe only; the server's end is another
    /// open file description).
    stdin: Arc<ChildStdin>,
    /// Messages handed to the writer thread and not yet written whole. The direct path is taken
    /// only at 0, so a message never overtakes one queued before it.
    queued: Arc<AtomicUsize>,
}

/// Sets `O_NONBLOCK` on lspc's end of the pipe; `false` (and the writer does every write) when
/// `fcntl(2)` fails.
fn set_non_blocking(stdin: &ChildStdin) -> bool {
    let fd = stdin.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `stdin` for the duration of both calls.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    }
}

/// Writes as much of `bytes` as the non-blocking pipe takes now; returns how many bytes that
/// was. Stops at `EAGAIN` and at any error (the writer thread meets the error again on the rest
/// and reports it).
fn write_now(mut stdin: &ChildStdin, bytes: &[u8]) -> usize {
    let mut written = 0;
    while written < bytes.len() {
        match stdin.write(&bytes[written..]) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    written
}

/// Writes all of `bytes` to the non-blocking pipe, waiting in `poll(2)` while it is full.
///
/// Errors: the write error (EPIPE once the server closed its stdin or died).
fn write_all_waiting(mut stdin: &ChildStdin, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match stdin.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let mut poll_fd = libc::pollfd {
                    fd: stdin.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid `pollfd` for an open descriptor; -1 waits without a timeout
                // (POLLERR/POLLHUP end the wait when the server goes, and the write then fails).
                if unsafe { libc::poll(&mut poll_fd, 1, -1) } < 0 {
                    let error = io::Error::last_os_error();
                    if error.kind() != io::ErrorKind::Interrupted {
                        return Err(error);
                    }
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// The stdio writer: writes what [`ServerProcess::send`] could not write at once, in order.
fn run_pipe_writer(
    name: &str,
    stdin: DirectStdin,
    outgoing_receiver: Receiver<Vec<u8>>,
    _done: Sender<()>,
) {
    for bytes in outgoing_receiver {
        if let Err(error) = write_all_waiting(&stdin.stdin, &bytes) {
            // EPIPE and friends: the server closed stdin or died. The reader will see EOF. The
            // queue count stays above 0, so every later message comes here and finds the
            // channel closed.
            log::info!("writing to server {name} failed, closing its input: {error}");
            return;
        }
        stdin.queued.fetch_sub(1, Ordering::AcqRel);
    }
    // The channel closed: dropping the last `stdin` here is how the server sees EOF.
}

/// The socket transport's writer (a blocking stream; every message goes through it).
fn run_writer(
    name: &str,
    stdin: impl Write,
    outgoing_receiver: Receiver<Vec<u8>>,
    _done: Sender<()>,
) {
    let mut stdin = stdin;
    for bytes in outgoing_receiver {
        if let Err(error) = stdin.write_all(&bytes).and_then(|()| stdin.flush()) {
            // EPIPE and friends: the server closed stdin or died. The reader will see EOF.
            log::info!("writing to server {name} failed, closing its input: {error}");
            return;
        }
    }
    // The channel closed: dropping `stdin` here is how the server sees EOF.
}

/// Reads frames into [`ServerEvent`]s. A successful answer to a request registered with
/// [`ServerProcess::expect_reply`] goes straight to its [`DirectReply`] (issue 15: the caller
/// wakes without a hop through the loop), and the loop gets [`ServerEvent::Delivered`]. The
/// registration is sent before its request is written, so it has arrived when the answer does.
fn run_reader(
    name: &str,
    server_id: ServerId,
    generation: u32,
    stdout: impl Read,
    (senders, expected_receiver): (EventSenders, Receiver<(i32, DirectReply)>),
    _done: Sender<()>,
) {
    let mut expected: std::collections::HashMap<i32, DirectReply> =
        std::collections::HashMap::new();
    let mut frame_reader = FrameReader::new(BufReader::with_capacity(64 * 1024, stdout));
    let reason = loop {
        let body = match frame_reader.read_frame() {
            Ok(Some(body)) => body,
            Ok(None) => break CloseReason::Eof,
            Err(FramingError::Io(error)) => {
                break CloseReason::Io(format!("reading from server {name} failed: {error}"))
            }
            Err(error) => break CloseReason::Framing(format!("server {name}: {error}")),
        };
        // A successful answer someone waits for is cut out of the body as raw text, without a
        // `Value` tree (issue 15); everything else is decoded whole. With nobody waiting (`lspc
        // check`'s pulls, a server's own messages) the body is not looked at twice.
        expected.extend(expected_receiver.try_iter());
        let success = if expected.is_empty() {
            None
        } else {
            crate::transport::decode_success(&body)
        };
        if let Some((id, raw_result)) = success {
            if let Some(deliver) = expected.remove(&id) {
                deliver(raw_result.to_owned());
                let _ = senders.delivered.send(ServerEvent::Delivered {
                    server_id,
                    generation,
                    id,
                });
                continue;
            }
        }
        match decode(&body) {
            // A closed event channel means the loop is gone; keep draining so the server never
            // blocks on a full stdout while it is being shut down.
            Ok(IncomingMessage::Response {
                id: Some(request_id),
                result,
            }) => {
                expected.extend(expected_receiver.try_iter());
                let id = crate::transport::request_id_number(&request_id);
                let deliver = id.and_then(|id| expected.remove(&id));
                let event = match (deliver, result, id) {
                    // A body `decode_success` left to the full decoder (duplicate keys).
                    (Some(deliver), Ok(value), Some(id)) => {
                        match serde_json::value::to_raw_value(&value) {
                            Ok(raw) => deliver(raw),
                            Err(error) => log::warn!("server {name}: an answer: {error}"),
                        }
                        let _ = senders.delivered.send(ServerEvent::Delivered {
                            server_id,
                            generation,
                            id,
                        });
                        continue;
                    }
                    // An error answer goes through the loop (retries); its registration is
                    // forgotten.
                    (_, result, _) => ServerEvent::Message {
                        server_id,
                        generation,
                        message: IncomingMessage::Response {
                            id: Some(request_id),
                            result,
                        },
                    },
                };
                let _ = senders.events.send(event);
            }
            Ok(message) => {
                let _ = senders.events.send(ServerEvent::Message {
                    server_id,
                    generation,
                    message,
                });
            }
            Err(error) => {
                let shown = &body[..body.len().min(200)];
                log::warn!(
                    "dropped a message from server {name}: {error}: {:?}",
                    String::from_utf8_lossy(shown)
                );
            }
        }
    };
    log::debug!("server {name} output closed: {reason}");
    let _ = senders.events.send(ServerEvent::Closed {
        server_id,
        generation,
        reason,
    });
}

/// Where [`run_stderr`] puts what it reads, and how it paces its reads.
struct OutputDrain {
    /// The tail kept for crash reports.
    tail: Arc<Mutex<StderrTail>>,
    /// Disconnected by [`ServerProcess::finish`] once the leader is reaped.
    wake: Receiver<()>,
    /// The wait after a read that did not fill the buffer ([`STDERR_COALESCE`]).
    coalesce: Duration,
}

/// Drains one of the child's output pipes (`stream`: `stderr`, or `stdout` for the socket
/// transport) into the tail kept for crash reports, logging each line.
///
/// After a read that did not fill its 64 KiB buffer (the pipe is drained) the thread waits
/// `drain.coalesce` on `drain.wake`, whose sender the process drops once its leader is reaped
/// ([`ServerProcess::finish`]): from then on it reads without waiting, so the pipe's end of file
/// (and the last bytes of a crash report) is taken at once. A full read is followed at once by
/// the next, so a server logging in bulk is never held to one buffer per wait.
fn run_stderr(
    name: &str,
    stream: &str,
    mut stderr: impl Read,
    drain: OutputDrain,
    _done: Sender<()>,
) {
    let mut chunk = vec![0u8; STDERR_READ_BYTES];
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = match stderr.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                log::debug!("reading {stream} of server {name} failed: {error}");
                break;
            }
        };
        let bytes = &chunk[..n];
        // A poisoned lock only means another thread panicked while copying bytes; the bytes are
        // still usable.
        drain
            .tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(bytes);
        for piece in bytes.split_inclusive(|&byte| byte == b'\n') {
            line.extend_from_slice(piece);
            if line.ends_with(b"\n") || line.len() >= STDERR_LOG_LINE_BYTES {
                log_stderr_line(name, stream, &line);
                line.clear();
            }
        }
        // Returns at once when the sender is gone (disconnected), else after the wait.
        if n < chunk.len() {
            let _ = drain.wake.recv_timeout(drain.coalesce);
        }
    }
    if !line.is_empty() {
        log_stderr_line(name, stream, &line);
    }
}

/// Logs one line of a server's stderr at debug level. The text is decoded only when debug
/// logging is on (issue 15: clangd writes a line or two per request, and their lossy decoding
/// cost about 1.8k instructions a request with nothing logged).
fn log_stderr_line(name: &str, stream: &str, line: &[u8]) {
    if log::log_enabled!(log::Level::Debug) {
        let text = String::from_utf8_lossy(line);
        log::debug!("[{name} {stream}] {}", text.trim_end());
    }
}

/// Sends `signal` to the process group `pgid`. Missing groups (ESRCH) are fine.
fn signal_group(pgid: u32, signal: libc::c_int) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    // SAFETY: kill has no memory-safety preconditions; a negative pid addresses the group.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// True while a process that has not yet exited is in group `pgid`.
///
/// `kill(-pgid, 0)` alone also counts zombies: members that have exited but that their parent
/// (init, once the server's leader is gone) has not reaped yet. Where PID 1 reaps slowly (this
/// machine's container init took over a second for typescript-language-server's tsserver
/// children) that alone kept every shutdown waiting its full SIGTERM grace. So when the group
/// still answers the signal, `/proc/<pid>/stat` decides: a member in state `Z` or `X` is gone.
/// Without a readable `/proc` the signal's answer stands.
fn group_exists(pgid: u32) -> bool {
    if !signal_group(pgid, 0) {
        return false;
    }
    group_has_live_member(pgid).unwrap_or(true)
}

/// Whether `/proc` lists a member of group `pgid` that is neither a zombie nor dead; `None` when
/// `/proc` cannot be read.
fn group_has_live_member(pgid: u32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        // A process that exits between the listing and the read is simply gone.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, member_pgid)) = parse_stat_state_and_pgrp(&stat) {
            if member_pgid == pgid && state != 'Z' && state != 'X' {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// Whether `pid` names a running process: listed in `/proc` and neither a zombie (`Z`) nor dead
/// (`X`). A process killed with SIGKILL and reparented to a PID 1 that does not reap (some
/// containers) stays listed as a zombie; it runs nothing and holds no file.
pub fn process_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| parse_stat_state_and_pgrp(&stat))
        .is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// The state letter and process-group id from one `/proc/<pid>/stat` line (proc(5): `pid (comm)
/// state ppid pgrp ...`; `comm` may hold spaces and parentheses, so parsing starts after the
/// last `)`).
fn parse_stat_state_and_pgrp(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

impl ServerProcess {
    pub fn server_id(&self) -> ServerId {
        self.server_id
    }

    pub fn generation(&self) -> u32 {
        self.generation
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's pid, which is also its process-group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Before request `id` is sent: hand its successful answer to `deliver` from the reader
    /// thread (see [`run_reader`]); an error answer still comes as a [`ServerEvent::Message`].
    pub fn expect_reply(&self, id: i32, deliver: DirectReply) {
        let _ = self.expected_sender.send((id, deliver));
    }

    /// Frames `msg` once and writes it (never blocks): straight to a stdio server's pipe while
    /// the writer thread has nothing queued, through the writer thread otherwise (the socket
    /// transport, a full pipe, the rest of a partial write).
    ///
    /// Errors: [`ServerGone`] once the writer has stopped (broken stdin) or `terminate` began.
    pub fn send(&self, msg: Outgoing) -> Result<(), ServerGone> {
        let gone = || ServerGone {
            server_name: self.name.clone(),
        };
        self.outgoing_sender.as_ref().ok_or_else(gone)?;
        let mut bytes = Vec::with_capacity(256);
        if let Err(error) = write_outgoing(&mut bytes, &msg) {
            log::warn!(
                "cannot serialise a message for server {}: {error}",
                self.name
            );
            return Ok(());
        }
        self.send_bytes(bytes)
    }

    /// [`ServerProcess::send`] for request `id`, serialised from borrowed parts (no copy of
    /// `params`).
    ///
    /// Errors: [`ServerGone`], as for `send`.
    pub fn send_request(
        &self,
        id: i32,
        method: &str,
        params: &crate::transport::RequestParams,
    ) -> Result<(), ServerGone> {
        let mut bytes = Vec::with_capacity(256);
        let id = lsp_server::RequestId::from(id);
        if let Err(error) = crate::transport::write_request_params(&mut bytes, &id, method, params)
        {
            log::warn!(
                "cannot serialise {method} for server {}: {error}",
                self.name
            );
            return Ok(());
        }
        self.send_bytes(bytes)
    }

    /// Writes one framed message: directly while the writer's queue is empty, else through it.
    fn send_bytes(&self, mut bytes: Vec<u8>) -> Result<(), ServerGone> {
        let gone = || ServerGone {
            server_name: self.name.clone(),
        };
        let sender = self.outgoing_sender.as_ref().ok_or_else(gone)?;
        if let Some(direct) = &self.direct_stdin {
            if direct.queued.load(Ordering::Acquire) == 0 {
                let written = write_now(&direct.stdin, &bytes);
                if written == bytes.len() {
                    return Ok(());
                }
                bytes.drain(..written);
            }
            direct.queued.fetch_add(1, Ordering::AcqRel);
        }
        sender.send(bytes).map_err(|_| gone())
    }

    /// The last 64 KiB of the server's stderr, lossy UTF-8.
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .text()
    }

    /// The last `n` lines of [`Self::stderr_tail`], without the final newline.
    pub fn stderr_tail_lines(&self, n: usize) -> String {
        last_lines(&self.stderr_tail(), n)
    }

    /// The exit status if the server has exited (reaping it), without blocking.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if let Some(exit_info) = self.exit_info {
            return exit_info.status;
        }
        self.child.try_wait().ok().flatten()
    }

    /// Ends the server within a bounded time and returns how it ended. The loop has already sent
    /// `shutdown`/`exit` (LSP 3.17 "Shutdown Request", "Exit Notification").
    ///
    /// Sequence: close stdin (the writer flushes what is queued, then drops the pipe); wait up to
    /// `grace` for the server to exit; SIGTERM its process group and wait up to 1 s; SIGKILL the
    /// group and reap. Then group members left behind (grandchildren of a server that did exit)
    /// get SIGTERM, 1 s, SIGKILL. Finally the I/O threads are joined (they end once the pipes
    /// close; a thread still blocked after 1 s, because a process outside the group holds a pipe,
    /// is logged and left behind rather than hanging lspc). Worst case about `grace` + 2 s.
    ///
    /// Waiting polls a pidfd ([`ChildProcess::wait_timeout`]): no signal handler, no timer tick.
    /// Idempotent: later calls return the first result.
    pub fn terminate(&mut self, grace: Duration) -> ExitInfo {
        if let Some(exit_info) = self.exit_info {
            return exit_info;
        }
        self.outgoing_sender = None;
        self.direct_stdin = None;
        let mut killed = false;
        let mut status = self.wait_for(grace);
        if status.is_none() {
            log::debug!(
                "server {} still running after {grace:?}, sending SIGTERM",
                self.name
            );
            signal_group(self.pid, libc::SIGTERM);
            killed = true;
            status = self.wait_for(SIGTERM_GRACE);
        }
        if status.is_none() {
            log::warn!("server {} ignored SIGTERM, sending SIGKILL", self.name);
            signal_group(self.pid, libc::SIGKILL);
            status = self.child.wait().ok();
        } else {
            // Nothing in the group survives SIGKILL, so only this path can leave members behind.
            self.clean_up_group(killed);
        }
        self.finish(ExitInfo::new(status, killed))
    }

    /// SIGKILLs the whole process group at once and reaps the server (for the signal path, when
    /// there is no time for a graceful shutdown). Idempotent; a no-op after `terminate`.
    pub fn kill_group_now(&mut self) {
        if self.exit_info.is_some() {
            return;
        }
        self.outgoing_sender = None;
        self.direct_stdin = None;
        let already_exited = self.child.try_wait().ok().flatten();
        signal_group(self.pid, libc::SIGKILL);
        let status = match already_exited {
            Some(status) => Some(status),
            None => self.child.wait().ok(),
        };
        self.finish(ExitInfo::new(status, already_exited.is_none()));
    }

    /// Waits up to `timeout` for the server to exit. `None` while it is still running.
    fn wait_for(&mut self, timeout: Duration) -> Option<ExitStatus> {
        match self.child.wait_timeout(timeout) {
            Ok(status) => status,
            Err(error) => {
                log::warn!("waiting for server {} failed: {error}", self.name);
                None
            }
        }
    }

    /// Ends what is left of the process group after its leader was reaped.
    fn clean_up_group(&mut self, sigterm_sent: bool) {
        if !group_exists(self.pid) {
            return;
        }
        if !sigterm_sent {
            signal_group(self.pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + SIGTERM_GRACE;
        while group_exists(self.pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if group_exists(self.pid) {
            signal_group(self.pid, libc::SIGKILL);
        }
    }

    /// Joins the I/O threads (bounded) and records `exit_info`.
    fn finish(&mut self, exit_info: ExitInfo) -> ExitInfo {
        self.exit_info = Some(exit_info);
        // The group is dead (or SIGKILLed, which leaves its members no instruction to run), so
        // nothing of the server writes to its temporary folder any more.
        if let Some(tmp) = self.private_tmp.take() {
            tmp.remove();
        }
        // The stderr thread may be in its coalescing wait; it reads to the pipe's end now.
        self.stderr_wake = None;
        // Disconnected = every thread has dropped its sender, i.e. returned.
        let joined = matches!(
            self.threads_done_receiver.recv_timeout(THREAD_JOIN_TIMEOUT),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        );
        let threads = std::mem::take(&mut self.threads);
        if joined {
            for thread in threads {
                let _ = thread.join();
            }
        } else {
            log::warn!(
                "i/o threads of server {} did not end; another process holds its pipes open",
                self.name
            );
        }
        log::debug!("server {} (pid {}) ended: {exit_info}", self.name, self.pid);
        exit_info
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.exit_info.is_none() {
            self.terminate(Duration::ZERO);
        }
    }
}

/// The last `n` lines of `text`, without the final newline.
fn last_lines(text: &str, n: usize) -> String {
    let trimmed = text.strip_suffix('\n').unwrap_or(text);
    if n == 0 {
        return String::new();
    }
    match trimmed.rmatch_indices('\n').nth(n - 1) {
        Some((index, _)) => trimmed[index + 1..].to_owned(),
        None => trimmed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    /// Spawns `sh -c script` with `PAYLOAD` in its environment.
    fn spawn_sh(name: &str, script: &str, payload: &str) -> (ServerProcess, Receiver<ServerEvent>) {
        spawn_sh_as(PathBuf::from("sh"), name, script, payload)
    }

    /// [`spawn_sh`] with `command` as the shell (a symlink to `/bin/sh` under another name).
    fn spawn_sh_as(
        command: PathBuf,
        name: &str,
        script: &str,
        payload: &str,
    ) -> (ServerProcess, Receiver<ServerEvent>) {
        let (event_sender, event_receiver) = crossbeam_channel::unbounded();
        let spec = SpawnSpec {
            server_id: ServerId(7),
            generation: 2,
            name: name.to_owned(),
            command,
            args: vec!["-c".to_owned(), script.to_owned()],
            env: vec![("PAYLOAD".to_owned(), payload.to_owned())],
            cwd: std::env::temp_dir(),
            transport: Transport::Stdio,
            first_message: None,
        };
        (
            spawn(spec, event_sender.into()).expect("spawn sh"),
            event_receiver,
        )
    }

    /// Every event until `Closed` (inclusive), rendered as short strings.
    fn events_until_closed(event_receiver: &Receiver<ServerEvent>) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let event = event_receiver
                .recv_timeout(EVENT_TIMEOUT)
                .expect("event within timeout");
            match event {
                ServerEvent::Message {
                    server_id,
                    generation,
                    message,
                } => {
                    assert_eq!((server_id, generation), (ServerId(7), 2));
                    out.push(format!("{message:?}"));
                }
                ServerEvent::Delivered {
                    server_id,
                    generation,
                    id,
                } => {
                    assert_eq!((server_id, generation), (ServerId(7), 2));
                    out.push(format!("delivered {id}"));
                }
                ServerEvent::Closed {
                    server_id,
                    generation,
                    reason,
                } => {
                    assert_eq!((server_id, generation), (ServerId(7), 2));
                    out.push(format!("closed: {reason}"));
                    return out;
                }
            }
        }
    }

    fn check_output(payload: &str, expected: &[&str]) {
        let (mut process, event_receiver) = spawn_sh("junk", r#"printf '%s' "$PAYLOAD""#, payload);
        assert_eq!(events_until_closed(&event_receiver), expected);
        assert_eq!(
            process.terminate(Duration::from_secs(5)).to_string(),
            "exit 0"
        );
        assert!(event_receiver.try_recv().is_err(), "nothing after closed");
    }

    #[test]
    fn stdout_is_framed_and_junk_skipped() {
        let hello = r#"{"jsonrpc":"2.0","method":"hello","params":[1]}"#;
        check_output(
            &format!(
                "Starting fixture v1\n\x1b[2J\x1b[H{}debug: cache warm\n{}{}",
                frame(hello),
                frame("{oops"),
                frame(r#"{"id":1}"#)
            ),
            &[
                r#"Notification { method: "hello", params: [1] }"#,
                "Response { id: Some(RequestId(I32(1))), result: null }",
                "closed: server closed its output",
            ],
        );
        check_output(
            "Content-Length: 9\r\n\r\n{}",
            &["closed: server junk: lost framing: output ended inside a body (2 of 9 bytes)"],
        );
        check_output("", &["closed: server closed its output"]);
    }

    #[test]
    fn crash_reports_exit_status_and_stderr() {
        let (mut process, event_receiver) = spawn_sh(
            "crasher",
            "echo 'panicked at src/main.rs: boom' >&2; exit 1",
            "",
        );
        assert_eq!(
            events_until_closed(&event_receiver),
            ["closed: server closed its output"]
        );
        let exit_info = process.terminate(Duration::from_secs(5));
        assert_eq!(exit_info.to_string(), "exit 1");
        assert!(!exit_info.killed);
        assert_eq!(process.stderr_tail(), "panicked at src/main.rs: boom\n");
        assert_eq!(
            process.stderr_tail_lines(1),
            "panicked at src/main.rs: boom"
        );
        // Idempotent.
        assert_eq!(process.terminate(Duration::ZERO), exit_info);
        assert_eq!(process.try_wait().and_then(|status| status.code()), Some(1));
        assert_eq!(
            process.send(Outgoing::Response {
                id: json!(1),
                result: Ok(json!(null))
            }),
            Err(ServerGone {
                server_name: "crasher".to_owned()
            })
        );
    }

    /// Runs [`run_stderr`] on `reader` with a coalescing wait far longer than the test's bound;
    /// returns the wake sender, the done receiver (disconnected once the thread ended) and the
    /// tail.
    fn drain_with_long_wait(
        reader: std::io::PipeReader,
    ) -> (Sender<()>, Receiver<()>, Arc<Mutex<StderrTail>>) {
        let (wake_sender, wake) = crossbeam_channel::bounded::<()>(0);
        let (done_sender, done) = crossbeam_channel::bounded::<()>(0);
        let tail = Arc::new(Mutex::new(StderrTail::default()));
        let drain = OutputDrain {
            tail: Arc::clone(&tail),
            wake,
            coalesce: Duration::from_secs(3600),
        };
        std::thread::spawn(move || run_stderr("test", "stderr", reader, drain, done_sender));
        (wake_sender, done, tail)
    }

    fn ended(done: &Receiver<()>) -> bool {
        matches!(
            done.recv_timeout(EVENT_TIMEOUT),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        )
    }

    #[test]
    fn a_reaped_server_cuts_the_stderr_wait_short() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let (wake_sender, done, tail) = drain_with_long_wait(reader);
        writer.write_all(b"last words\n").unwrap();
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while tail.lock().unwrap().total_bytes < 11 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The thread now waits after its short read; the server's end is its pipe's end of file
        // and `finish` dropping the wake sender.
        drop(writer);
        drop(wake_sender);
        assert!(ended(&done), "the stderr thread still waits");
        assert_eq!(tail.lock().unwrap().total_bytes, 11);
    }

    #[test]
    fn a_full_read_of_stderr_is_followed_by_the_next_at_once() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        // Exactly one buffer (a pipe's default capacity, so the write does not block), then the
        // end of file: the first read fills the buffer, the second sees the end, and no
        // coalescing wait comes between them although the wake sender is still held.
        writer.write_all(&vec![b'x'; STDERR_READ_BYTES]).unwrap();
        drop(writer);
        let (_wake_sender, done, tail) = drain_with_long_wait(reader);
        assert!(ended(&done), "the stderr thread waited after a full read");
        assert_eq!(tail.lock().unwrap().total_bytes, STDERR_READ_BYTES as u64);
    }

    #[test]
    fn one_mebibyte_of_stderr_does_not_block_the_frame() {
        // 41944 whole lines of 25 bytes, just over 1 MiB.
        let script = r#"yes 'clangd: verbose log line' | head -c 1048600 >&2; printf '%s' "$PAYLOAD"; echo last line >&2"#;
        let (mut process, event_receiver) =
            spawn_sh("noisy", script, &frame(r#"{"method":"done"}"#));
        assert_eq!(
            events_until_closed(&event_receiver),
            [
                r#"Notification { method: "done", params: null }"#,
                "closed: server closed its output"
            ]
        );
        assert_eq!(
            process.terminate(Duration::from_secs(5)).to_string(),
            "exit 0"
        );
        let tail = process.stderr_tail();
        assert_eq!(tail.len(), STDERR_TAIL_BYTES);
        assert_eq!(
            process.stderr_tail_lines(2),
            "clangd: verbose log line\nlast line"
        );
        assert_eq!(
            process.stderr_tail.lock().unwrap().total_bytes,
            1048600 + 10
        );
    }

    fn process_is_gone(pid: u32) -> bool {
        // A zombie reparented to a PID 1 that does not reap (as in some containers) is dead, not
        // running; accept it.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
        }
    }

    #[test]
    fn server_ignoring_sigterm_and_its_grandchild_are_killed() {
        // Ignored signals are inherited, so the grandchild ignores SIGTERM too.
        let script = "trap '' TERM; sleep 100 & echo \"grandchild $!\" >&2; wait";
        let (mut process, _event_receiver) = spawn_sh("stubborn", script, "");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        let grandchild_pid = loop {
            let tail = process.stderr_tail();
            if let Some(pid) = tail
                .strip_prefix("grandchild ")
                .and_then(|rest| rest.trim().parse::<u32>().ok())
            {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "no grandchild pid in stderr: {tail:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let pid = process.pid();
        assert!(!process_is_gone(grandchild_pid));
        let started = Instant::now();
        let exit_info = process.terminate(Duration::from_millis(200));
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
        assert_eq!(exit_info.to_string(), "signal 9");
        assert!(exit_info.killed);
        assert!(process_is_gone(pid), "server {pid} still running");
        let deadline = Instant::now() + Duration::from_secs(2);
        while !process_is_gone(grandchild_pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            process_is_gone(grandchild_pid),
            "grandchild {grandchild_pid} still running"
        );
    }

    #[test]
    fn server_ignoring_stdin_eof_gets_sigterm() {
        let (mut process, event_receiver) = spawn_sh("deaf", "exec sleep 100", "");
        let started = Instant::now();
        let exit_info = process.terminate(Duration::from_millis(100));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(exit_info.to_string(), "signal 15");
        assert!(exit_info.killed);
        assert_eq!(
            events_until_closed(&event_receiver),
            ["closed: server closed its output"]
        );
    }

    /// Issue 15: typescript-language-server leaves folders in its `TMPDIR` that it never
    /// removes; the server's private `TMPDIR` goes with everything in it once it is stopped.
    #[test]
    fn the_private_tmpdir_is_removed_once_the_server_is_gone() {
        let script = r#"mkdir "$TMPDIR/pipes" && printf '%s' "$TMPDIR" >&2; exec sleep 100"#;
        // Only servers known to leave folders get a private TMPDIR: `sh` under such a name.
        let bin = std::env::temp_dir().join(format!("lspc-tmp-user-bin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&bin);
        std::fs::create_dir_all(&bin).expect("create bin folder");
        let command = bin.join("typescript-language-server");
        std::os::unix::fs::symlink("/bin/sh", &command).expect("symlink sh");
        let (mut process, _event_receiver) = spawn_sh_as(command, "tmp user", script, "");
        std::fs::remove_dir_all(&bin).expect("remove bin folder");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while process.stderr_tail().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let tmpdir = PathBuf::from(process.stderr_tail());
        let name = tmpdir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(name.ends_with("-tmp_user"), "{name}");
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        let parent = std::env::temp_dir().join(format!("lspc-{uid}/tmp"));
        assert_eq!(tmpdir.parent(), Some(parent.as_path()));
        assert!(tmpdir.join("pipes").is_dir());
        process.terminate(Duration::ZERO);
        assert!(!tmpdir.exists(), "{} is left", tmpdir.display());
        assert!(parent.is_dir());
    }

    #[test]
    fn drop_kills_the_server() {
        let (process, _event_receiver) = spawn_sh("dropped", "exec sleep 100", "");
        let pid = process.pid();
        drop(process);
        assert!(process_is_gone(pid));
    }

    #[test]
    fn writer_sends_framed_messages_to_stdin() {
        // `head -c` echoes exactly the bytes of the first message back; it is framed, so the
        // reader decodes our own notification.
        let notification = lsp_server::Notification::new("exit".to_owned(), ());
        let body = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let script = format!("head -c {}", frame(body).len());
        let (mut process, event_receiver) = spawn_sh("echo", &script, "");
        process
            .send(Outgoing::Message(notification.into()))
            .expect("send");
        assert_eq!(
            events_until_closed(&event_receiver),
            [
                r#"Notification { method: "exit", params: null }"#,
                "closed: server closed its output"
            ]
        );
        assert_eq!(
            process.terminate(Duration::from_secs(5)).to_string(),
            "exit 0"
        );
    }

    /// Issue 15: `send` writes to the pipe itself and hands the writer only what a full pipe
    /// does not take. A server that reads nothing for 300 ms gets 8 messages of 40 KB (more than
    /// the 64 KiB pipe), `send` never blocks, and `cat` echoes every message back whole and in
    /// order once it starts reading.
    #[test]
    fn a_full_pipe_moves_the_rest_to_the_writer_in_order() {
        let (mut process, event_receiver) = spawn_sh("slow", "sleep 0.3; exec cat", "");
        let started = Instant::now();
        for index in 0..8 {
            let params = json!({"index": index, "text": "x".repeat(40_000)});
            let notification = lsp_server::Notification::new(format!("n{index}"), params);
            process
                .send(Outgoing::Message(notification.into()))
                .expect("send");
        }
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "send blocked for {:?}",
            started.elapsed()
        );
        for index in 0..8 {
            let event = event_receiver
                .recv_timeout(EVENT_TIMEOUT)
                .expect("an echoed message");
            let ServerEvent::Message {
                message: IncomingMessage::Notification { method, params },
                ..
            } = event
            else {
                panic!("not a notification: {event:?}");
            };
            assert_eq!(method, format!("n{index}"));
            assert_eq!(params["index"], json!(index));
            assert_eq!(params["text"].as_str().map(str::len), Some(40_000));
        }
        process.kill_group_now();
    }

    /// Issue 15: a successful answer to a registered request goes straight to its caller (the
    /// loop only hears `Delivered`); an error answer to a registered request, and an answer to
    /// an unregistered one, still come as messages.
    #[test]
    fn registered_answers_go_straight_to_their_caller() {
        let answers = [
            frame(r#"{"jsonrpc":"2.0","id":1,"result":{"contents":"x"}}"#),
            frame(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32801,"message":"modified"}}"#),
            frame(r#"{"jsonrpc":"2.0","id":3,"result":null}"#),
        ]
        .concat();
        // The server answers once it has read the first message, which is sent after the
        // registrations.
        let body = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let script = format!(
            "head -c {} >/dev/null; printf '%s' \"$PAYLOAD\"",
            frame(body).len()
        );
        let (mut process, event_receiver) = spawn_sh("direct", &script, &answers);
        let (caller_sender, caller_receiver) = crossbeam_channel::unbounded();
        for id in [1, 2] {
            let caller_sender = caller_sender.clone();
            process.expect_reply(
                id,
                Box::new(move |raw| {
                    let _ = caller_sender.send((id, raw.get().to_owned()));
                }),
            );
        }
        let notification = lsp_server::Notification::new("exit".to_owned(), ());
        process
            .send(Outgoing::Message(notification.into()))
            .expect("send");
        assert_eq!(
            events_until_closed(&event_receiver),
            [
                "delivered 1",
                r#"Response { id: Some(RequestId(I32(2))), error: ResponseError { code: -32801, message: "modified", data: None } }"#,
                r#"Response { id: Some(RequestId(I32(3))), result: null }"#,
                "closed: server closed its output"
            ]
        );
        drop(caller_sender);
        assert_eq!(
            caller_receiver.iter().collect::<Vec<_>>(),
            [(1, r#"{"contents":"x"}"#.to_owned())]
        );
        process.terminate(Duration::from_secs(5));
    }

    fn check_spawn_error(command: &str, expected: &str) {
        let (event_sender, _event_receiver) = crossbeam_channel::unbounded();
        let spec = SpawnSpec {
            server_id: ServerId(1),
            generation: 0,
            name: "missing".to_owned(),
            command: PathBuf::from(command),
            args: Vec::new(),
            env: Vec::new(),
            cwd: std::env::temp_dir(),
            transport: Transport::Stdio,
            first_message: None,
        };
        let error = spawn(spec, event_sender.into()).expect_err("spawn should fail");
        assert_eq!(error.to_string(), expected);
    }

    #[test]
    fn spawn_errors() {
        check_spawn_error(
            "lspc-no-such-server-xyz",
            "command not found: lspc-no-such-server-xyz",
        );
        check_spawn_error(
            "/nonexistent/dir/server",
            "command not found: /nonexistent/dir/server",
        );
        // A directory is not executable.
        check_spawn_error("/tmp", "permission denied: /tmp");
    }

    #[test]
    fn tail_keeps_last_bytes_and_lines() {
        let mut tail = StderrTail::default();
        tail.push(&vec![b'a'; STDERR_TAIL_BYTES - 1]);
        tail.push(b"bc");
        let text = tail.text();
        assert_eq!(text.len(), STDERR_TAIL_BYTES);
        assert!(text.starts_with("aa") && text.ends_with("abc"));
        assert_eq!(tail.total_bytes, STDERR_TAIL_BYTES as u64 + 1);
        assert_eq!(last_lines("one\ntwo\nthree\n", 2), "two\nthree");
        assert_eq!(last_lines("one\ntwo", 5), "one\ntwo");
        assert_eq!(last_lines("one\n", 0), "");
    }

    #[test]
    fn stat_lines_give_state_and_process_group() {
        let check = |stat: &str, expected: Option<(char, u32)>| {
            assert_eq!(parse_stat_state_and_pgrp(stat), expected, "{stat}");
        };
        check("42 (node) S 1 40 40 0 -1 4194560", Some(('S', 40)));
        check("43 (a) b (c)) Z 42 40 40 0", Some(('Z', 40)));
        check("44 (tsserver) R 1", None);
        check("garbage", None);
    }

    /// A group whose only member has exited but is not reaped (a zombie) is gone: shutdown once
    /// waited its whole SIGTERM grace for such members (issue 15, typescript-language-server).
    #[test]
    fn a_group_of_zombies_does_not_exist_and_a_live_member_does() {
        let mut live = Command::new("sleep");
        live.arg("30").process_group(0);
        let mut live = live.spawn().expect("spawn sleep");
        assert!(group_exists(live.id()));
        let mut zombie = Command::new("true");
        zombie.process_group(0);
        let mut zombie = zombie.spawn().expect("spawn true");
        // Not reaped yet: wait (bounded) until the kernel shows it as a zombie.
        let pid = zombie.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| parse_stat_state_and_pgrp(&stat))
            .is_none_or(|(state, _)| state != 'Z')
        {
            assert!(Instant::now() < deadline, "true did not exit within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            signal_group(pid, 0),
            "the zombie still answers kill(-pgid, 0)"
        );
        assert!(!group_exists(pid));
        let _ = zombie.wait();
        let _ = live.kill();
        let _ = live.wait();
        assert!(!group_exists(live.id()));
    }
}
