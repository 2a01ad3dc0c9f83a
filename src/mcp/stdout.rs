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
//! - stdout is a pipe: the line fits in the pipe's free space (`F_GETPIPE_SZ` less the unread
//!   bytes `FIONREAD` reports, less one page for the pipe's partly filled buffers);
//! - anything else (a terminal, a file, `/dev/null`): every line goes to the writer thread.
//!
//! Invariants:
//! - Lines never interleave and keep the order of their `send` calls: a line is written
//!   directly only while nothing waits in the writer's queue, and the check and the write happen
//!   under one lock. The lock guards bytes on their way out (like the stderr tail in
//!   [`crate::process`]), not the hub's state, and is never held while blocking.
//! - After a write error (the client closed stdout) every later `send` fails, as a closed channel
//!   does, and nothing more is written.

use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{unbounded, Receiver, Sender};

/// The process's stdout descriptor.
const STDOUT_FD: RawFd = 1;

/// Bytes a pipe may hold less than its nominal free space, because unread bytes sit in partly
/// filled page buffers (Linux `pipe_write` fills a new page when the last one is full).
const PIPE_SLACK_BYTES: usize = 8192;

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
    /// `None` once closed ([`StdoutSink::close`]) or broken (a write failed).
    sender: Option<Sender<Vec<u8>>>,
}

/// Stdout shared by every thread that answers the stdio client.
pub struct StdoutSink {
    kind: Kind,
    gate: Mutex<Gate>,
    writer: Mutex<Option<JoinHandle<()>>>,
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
        let sink = Arc::new(StdoutSink {
            kind: stdout_kind(),
            gate: Mutex::new(Gate {
                queued: 0,
                sender: Some(sender),
            }),
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
                    log::warn!("stdout closed ({error}); dropping further MCP messages");
                    gate.sender = None;
                    return Err(Closed);
                }
            }
        }
        let Some(sender) = &gate.sender else {
            return Err(Closed);
        };
        if sender.send(line).is_err() {
            gate.sender = None;
            return Err(Closed);
        }
        gate.queued += 1;
        Ok(())
    }

    /// Lets the writer write what is queued, then ends it and waits for it.
    pub fn close(&self) {
        lock(&self.gate).sender = None;
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
                if unread + line.len() + PIPE_SLACK_BYTES > capacity {
                    return Ok(0);
                }
                write_all_blocking(line).map(|()| line.len())
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
            if let Err(error) = write_all_blocking(&line) {
                log::warn!("stdout closed ({error}); dropping further MCP messages");
                lock(&self.gate).sender = None;
                return;
            }
            lock(&self.gate).queued -= 1;
        }
    }
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
/// non-blocking).
///
/// Errors: the write error.
fn write_all_blocking(mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid buffer of `bytes.len()` bytes.
        let n = unsafe { libc::write(STDOUT_FD, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
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
