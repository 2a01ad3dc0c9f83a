//! Stdio MCP's stdout, written by the thread that has the message (issue 15).
//!
//! A tool call's answer used to cross one more thread on its way out: the worker handed it to a
//! writer thread that owned stdout. [`StdoutSink::send`] serialises the message on the calling
//! thread (a worker, or the hub for its own answers and notifications) and writes the line to
//! file descriptor 1 itself when that cannot block; only a line that might block goes to the
//! writer thread, which waits for the client to read. So no thread that also reads stdin (the hub
//! behind the stdin reader) ever blocks on a client that writes without reading its answers.
//!
//! When a write cannot block:
//! - stdout is a socket (Node's `child_process` pipes are socketpairs): `send(2)` with
//!   `MSG_DONTWAIT`; what the socket does not take at once goes to the writer;
//! - stdout is a pipe: the line surely fits in the pipe's free slots ([`fits_in_pipe`]: a pipe
//!   of `F_GETPIPE_SZ` bytes holds that many pages, and the unread bytes `FIONREAD` reports may
//!   fill up to twice their share of them);
//! - anything else (a terminal, a file, `/dev/null`): every line goes to the writer thread.
//!
//! A client that does not read its answers: the stdin reader waits before each line while more
//! than [`QUEUE_LIMIT_BYTES`] wait for the writer ([`StdoutSink::wait_for_room`]), so lspc
//! stops taking requests instead of holding their answers without bound (a client that sent 5,000
//! calls and read nothing grew lspc to 291 MB). Only the reader waits: a worker or a server's
//! reader thread never blocks on stdout. After stdin ends, [`StdoutSink::close`] waits for the
//! queue to drain while stdout takes bytes, and gives up once it took none for
//! [`CLOSE_STALL_LIMIT`].
//!
//! Invariants:
//! - Lines never interleave and keep the order of their `send` calls: a line is written
//!   directly only while nothing waits in the writer's queue, and the check and the write happen
//!   under one lock. The lock guards bytes on their way out (like the stderr tail in
//!   [`crate::process`]), not the hub's state, and is never held while blocking.
//! - After a write error (the client closed stdout) every later `send` fails, as a closed channel
//!   does, and nothing more is written; [`StdoutSink::broken`] tells the hub, which shuts down
//!   as when stdin ends.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};

/// The process's stdout descriptor.
const STDOUT_FD: RawFd = 1;

/// The size of a pipe's buffers (Linux: one page each).
const PIPE_PAGE_BYTES: usize = 4096;

/// Bytes of answers waiting for the writer above which the stdin reader stops reading requests
/// ([`StdoutSink::wait_for_room`]).
pub const QUEUE_LIMIT_BYTES: usize = 16 << 20;

/// How long [`StdoutSink::close`] waits for stdout to take a byte before it leaves the rest
/// unwritten: the client closed stdin and reads nothing more (MCP's stdio shutdown has it wait
/// for lspc to exit).
pub const CLOSE_STALL_LIMIT: Duration = Duration::from_secs(5);

/// What kind of file stdout is, which decides when a direct write cannot block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Socket,
    /// A pipe of this many bytes (`F_GETPIPE_SZ`).
    Pipe(usize),
    /// Every line goes through the writer thread.
    Other,
}

/// The lock's contents: the writer's queue length and its channel.
struct Gate {
    /// Lines handed to the writer and not yet written whole.
    queued: usize,
    /// Their bytes.
    queued_bytes: usize,
    /// `None` once closed ([`StdoutSink::close`]) or broken (a write failed).
    sender: Option<Sender<Vec<u8>>>,
}

/// Stdout shared by every thread that answers the stdio client.
pub struct StdoutSink {
    kind: Kind,
    gate: Mutex<Gate>,
    /// Signalled by the writer after each line it wrote whole, and when it ends.
    drained: Condvar,
    /// When the sink started; [`StdoutSink::last_write`] counts from it.
    started: Instant,
    /// Milliseconds from `started` to the writer's last write that took bytes.
    last_write: AtomicU64,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Dropped when a write fails (the client closed its end of stdout), so that
    /// [`StdoutSink::broken`]'s receivers wake; never sent on.
    broken_sender: Mutex<Option<Sender<()>>>,
    broken: Receiver<()>,
}

/// `send` failed: stdout is closed or broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

impl StdoutSink {
    /// Starts the writer thread (`lspc-mcp-writer`) for descriptor 1.
    ///
    /// Errors: the thread could not be spawned.
    pub fn start() -> io::Result<Arc<StdoutSink>> {
        let (sender, receiver) = unbounded::<Vec<u8>>();
        let (broken_sender, broken) = crossbeam_channel::bounded::<()>(0);
        let sink = Arc::new(StdoutSink {
            broken_sender: Mutex::new(Some(broken_sender)),
            broken,
            kind: stdout_kind(),
            gate: Mutex::new(Gate {
                queued: 0,
                queued_bytes: 0,
                sender: Some(sender),
            }),
            drained: Condvar::new(),
            started: Instant::now(),
            last_write: AtomicU64::new(0),
            writer: Mutex::new(None),
        });
        let for_writer = Arc::clone(&sink);
        let writer = std::thread::Builder::new()
            .name("lspc-mcp-writer".to_owned())
            .spawn(move || for_writer.run_writer(receiver))?;
        *lock(&sink.writer) = Some(writer);
        log::debug!("stdout is {:?}", sink.kind);
        Ok(sink)
    }

    /// Writes `message` as one JSON line, from this thread when that cannot block (see the
    /// module doc), else through the writer thread.
    ///
    /// Errors: [`Closed`] once stdout failed or [`StdoutSink::close`] ran.
    pub fn send(&self, message: &impl serde::Serialize) -> Result<(), Closed> {
        let Ok(line) = serde_json::to_vec(message) else {
            return Ok(());
        };
        self.send_line(line)
    }

    /// [`StdoutSink::send`] of a message already serialised: `line` is one JSON value without
    /// its line end.
    pub fn send_line(&self, mut line: Vec<u8>) -> Result<(), Closed> {
        line.push(b'\n');
        let mut gate = lock(&self.gate);
        if gate.sender.is_none() {
            return Err(Closed);
        }
        if gate.queued == 0 {
            match self.write_now(&line) {
                Ok(written) if written == line.len() => return Ok(()),
                Ok(written) => {
                    line.drain(..written);
                }
                Err(error) => {
                    log::warn!("stdout closed ({error}): the client reads no more answers");
                    gate.sender = None;
                    self.mark_broken();
                    return Err(Closed);
                }
            }
        }
        let Some(sender) = &gate.sender else {
            return Err(Closed);
        };
        let bytes = line.len();
        if sender.send(line).is_err() {
            gate.sender = None;
            return Err(Closed);
        }
        gate.queued += 1;
        gate.queued_bytes += bytes;
        Ok(())
    }

    /// A receiver that never gets a message and is disconnected once a write to stdout failed
    /// (the client closed its end): the hub selects on it to shut down as at the end of stdin,
    /// since nothing it answers can reach the client any more.
    pub fn broken(&self) -> Receiver<()> {
        self.broken.clone()
    }

    fn mark_broken(&self) {
        lock(&self.broken_sender).take();
    }

    /// Waits while more than [`QUEUE_LIMIT_BYTES`] wait for the writer (the client is not reading
    /// its answers); returns at once when they do not, or once stdout is closed. Called by the
    /// stdin reader before it reads the next request, so a client that keeps writing without
    /// reading is held back by its own pipe, as by any stdio server.
    pub fn wait_for_room(&self) {
        let mut gate = lock(&self.gate);
        if gate.queued_bytes > QUEUE_LIMIT_BYTES && gate.sender.is_some() {
            log::info!(
                "{} bytes of answers wait for the client to read stdout: reading no more requests until it does",
                gate.queued_bytes
            );
        }
        while gate.queued_bytes > QUEUE_LIMIT_BYTES && gate.sender.is_some() {
            gate = self
                .drained
                .wait(gate)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Lets the writer write what is queued, then ends it and waits for it, for as long as
    /// stdout takes bytes: once it took none for [`CLOSE_STALL_LIMIT`], the rest stays unwritten
    /// (logged) and the writer is left blocked, to end with the process.
    pub fn close(&self) {
        let closing = Instant::now();
        let mut gate = lock(&self.gate);
        gate.sender = None;
        while gate.queued > 0 {
            let last =
                self.started + Duration::from_millis(self.last_write.load(Ordering::Relaxed));
            let stalled_since = last.max(closing);
            let Some(left) =
                (stalled_since + CLOSE_STALL_LIMIT).checked_duration_since(Instant::now())
            else {
                log::warn!(
                    "stdout took no byte for {} s after stdin closed: {} answers ({} bytes) left unwritten",
                    CLOSE_STALL_LIMIT.as_secs(),
                    gate.queued,
                    gate.queued_bytes
                );
                return;
            };
            gate = self
                .drained
                .wait_timeout(gate, left.min(Duration::from_millis(250)))
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        drop(gate);
        if let Some(writer) = lock(&self.writer).take() {
            let _ = writer.join();
        }
    }

    /// As much of `line` as stdout takes without blocking (0 when it might block).
    ///
    /// Errors: the write failed (EPIPE: the client closed stdout).
    fn write_now(&self, line: &[u8]) -> io::Result<usize> {
        match self.kind {
            Kind::Other => Ok(0),
            Kind::Pipe(capacity) => {
                let mut unread: libc::c_int = 0;
                // SAFETY: FIONREAD writes one `c_int` through the pointer.
                if unsafe { libc::ioctl(STDOUT_FD, libc::FIONREAD, &mut unread) } != 0 {
                    return Ok(0);
                }
                let unread = usize::try_from(unread).unwrap_or(capacity);
                if !fits_in_pipe(capacity, unread, line.len()) {
                    return Ok(0);
                }
                write_all_blocking(line, || {}).map(|()| line.len())
            }
            Kind::Socket => {
                let mut written = 0;
                while written < line.len() {
                    let rest = &line[written..];
                    // SAFETY: `rest` is a valid buffer of `rest.len()` bytes.
                    let n = unsafe {
                        libc::send(
                            STDOUT_FD,
                            rest.as_ptr().cast(),
                            rest.len(),
                            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                        )
                    };
                    if n >= 0 {
                        written += n as usize;
                        continue;
                    }
                    let error = io::Error::last_os_error();
                    match error.kind() {
                        io::ErrorKind::Interrupted => {}
                        io::ErrorKind::WouldBlock => break,
                        _ => return Err(error),
                    }
                }
                Ok(written)
            }
        }
    }

    fn run_writer(&self, receiver: Receiver<Vec<u8>>) {
        for line in receiver {
            let written = write_all_blocking(&line, || {
                let millis = self.started.elapsed().as_millis();
                self.last_write
                    .store(u64::try_from(millis).unwrap_or(u64::MAX), Ordering::Relaxed);
            });
            let mut gate = lock(&self.gate);
            if let Err(error) = written {
                log::warn!("stdout closed ({error}): the client reads no more answers");
                self.mark_broken();
                gate.sender = None;
                gate.queued = 0;
                gate.queued_bytes = 0;
                self.drained.notify_all();
                return;
            }
            gate.queued -= 1;
            gate.queued_bytes -= line.len();
            self.drained.notify_all();
        }
    }
}

/// Whether a write of `len` bytes surely does not block on a pipe of `capacity` bytes that
/// holds `unread` bytes.
///
/// A pipe holds `capacity / 4096` page buffers, not bytes: Linux `pipe_write` merges a write's
/// last partial page into the last buffer only when it fits there, and otherwise starts new
/// buffers. So any two adjacent buffers hold more than a page between them, except that the
/// reader may have emptied part of the first: `unread` bytes occupy at most
/// `2 * ceil(unread / 4096) + 2` buffers. (One page of slack was not enough: lines of a little
/// over half a page each take a buffer apiece, and a worker blocked in `write` while it held
/// the gate, so lspc could not exit after stdin closed.)
fn fits_in_pipe(capacity: usize, unread: usize, len: usize) -> bool {
    let slots = capacity / PIPE_PAGE_BYTES;
    let used = 2 * unread.div_ceil(PIPE_PAGE_BYTES) + 2;
    used + len.div_ceil(PIPE_PAGE_BYTES) <= slots
}

/// A poisoned lock only means a thread panicked while writing bytes; the state is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn stdout_kind() -> Kind {
    // SAFETY: `fstat` fills the zeroed struct for an open descriptor (or fails).
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(STDOUT_FD, &mut stat) } != 0 {
        return Kind::Other;
    }
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => Kind::Socket,
        libc::S_IFIFO => {
            // SAFETY: F_GETPIPE_SZ takes no argument and returns the size or -1.
            let size = unsafe { libc::fcntl(STDOUT_FD, libc::F_GETPIPE_SZ) };
            usize::try_from(size).map_or(Kind::Other, Kind::Pipe)
        }
        _ => Kind::Other,
    }
}

/// Writes all of `bytes` to stdout, waiting while it is full (also when the client left it
/// non-blocking); `took_bytes` runs after each write that took some.
///
/// Errors: the write error.
fn write_all_blocking(mut bytes: &[u8], mut took_bytes: impl FnMut()) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid buffer of `bytes.len()` bytes.
        let n = unsafe { libc::write(STDOUT_FD, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
            took_bytes();
            continue;
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                let mut poll_fd = libc::pollfd {
                    fd: STDOUT_FD,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid `pollfd`; -1 waits without a timeout.
                unsafe { libc::poll(&mut poll_fd, 1, -1) };
            }
            _ => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_goes_straight_to_a_pipe_only_when_its_buffers_surely_hold_it() {
        const PIPE: usize = 65536;
        assert!(fits_in_pipe(PIPE, 0, 2212));
        // 16 unread answers of 2,212 bytes take the 16 buffers of a 64 KB pipe (one each),
        // though their 35,392 bytes are about half its size.
        assert!(!fits_in_pipe(PIPE, 16 * 2212, 2212));
        assert!(fits_in_pipe(PIPE, 4096, 4096 * 12));
        assert!(!fits_in_pipe(PIPE, 4096, 4096 * 13));
        assert!(!fits_in_pipe(PIPE, 0, 4096 * 15));
        // A one-page pipe never takes a direct write.
        assert!(!fits_in_pipe(4096, 0, 1));
    }
}
