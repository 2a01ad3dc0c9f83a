//! SIGINT, SIGTERM and SIGHUP turned into events for the event loop (a self-pipe).
//!
//! The handlers do the only async-signal-safe thing there is to do: `write` the signal number as
//! one byte to a non-blocking pipe (dropped if the pipe is full, which takes 64 KiB of unread
//! signals). One thread named `"signals"` reads the pipe and sends each number into a crossbeam
//! channel, then rings the event loops' doorbells ([`crate::doorbell::ring_signal_bells`]), so
//! the loop sees signals like any other input and runs the bounded shutdown sequence itself (no
//! orphaned servers, B26).
//!
//! Invariants:
//! - Installed at most once per process ([`install`] is idempotent and returns the same channel).
//! - After [`install`], SIGINT/SIGTERM/SIGHUP no longer terminate the process: the loop must act on
//!   the events (including exiting).
//! - SIGPIPE is ignored, so writing to a dead server or a closed stdout is an `io::Error`
//!   (`BrokenPipe`), never death. Rust already ignores SIGPIPE before `main` in a binary; this
//!   makes it explicit and true for library users too. `std::process::Command` resets SIGPIPE to
//!   the default in children, so servers are unaffected.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use crossbeam_channel::Receiver;

/// The signals turned into events.
pub const HANDLED_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Write end of the self-pipe, read by the signal handler (`-1` before installation).
static PIPE_WRITE_FD: AtomicI32 = AtomicI32::new(-1);

/// The one installation: the channel, or the error that prevented it (kind and message).
static INSTALLED: OnceLock<Result<Receiver<i32>, (io::ErrorKind, String)>> = OnceLock::new();

/// Installs the handlers (once) and returns a channel that yields each caught signal's number
/// (`libc::SIGINT` = 2, `SIGTERM` = 15, `SIGHUP` = 1), in arrival order. Later calls return a
/// clone of the same receiver (each signal goes to one receiver). Also sets SIGPIPE to `SIG_IGN`.
///
/// Errors: creating the pipe, installing a handler or spawning the thread failed.
pub fn install() -> Result<Receiver<i32>, io::Error> {
    match INSTALLED
        .get_or_init(|| install_once().map_err(|error| (error.kind(), error.to_string())))
    {
        Ok(receiver) => Ok(receiver.clone()),
        Err((kind, message)) => Err(io::Error::new(*kind, message.clone())),
    }
}

fn install_once() -> io::Result<Receiver<i32>> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_fd, write_fd] = fds;
    // Only the write end is non-blocking: a handler must never block, the reader thread should.
    // SAFETY: `write_fd` is an open descriptor we own.
    if unsafe { libc::fcntl(write_fd, libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `read_fd` is an open descriptor owned by nobody else; the File takes ownership.
    let mut pipe_reader = unsafe { File::from_raw_fd(read_fd) };
    PIPE_WRITE_FD.store(write_fd, Ordering::SeqCst);

    let (signal_sender, signal_receiver) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            let mut buffer = [0u8; 64];
            loop {
                match pipe_reader.read(&mut buffer) {
                    // The write end is never closed, so this does not happen; stop quietly if it does.
                    Ok(0) => break,
                    Ok(n) => {
                        for &byte in &buffer[..n] {
                            // The receiver lives in `INSTALLED` for the whole process.
                            let _ = signal_sender.send(i32::from(byte));
                        }
                        // An event loop parks instead of waiting on this channel.
                        crate::doorbell::ring_signal_bells();
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => {
                        log::error!(
                            "reading the signal pipe failed, signals are now ignored: {error}"
                        );
                        break;
                    }
                }
            }
            // The loops see the channel disconnected at once (they act as on SIGTERM).
            drop(signal_sender);
            crate::doorbell::ring_signal_bells();
        })?;

    for signal in HANDLED_SIGNALS {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe (see below).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handle_signal as *const () as libc::sighandler_t;
            // SA_RESTART: blocking reads in other threads restart instead of failing with EINTR.
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    // SAFETY: setting a disposition to SIG_IGN is always sound.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(signal_receiver)
}

/// The signal handler: writes one byte and restores `errno` (both async-signal-safe).
extern "C" fn handle_signal(signal: libc::c_int) {
    // SAFETY: `__errno_location` and `write` are async-signal-safe; the buffer outlives the call.
    unsafe {
        let saved_errno = *libc::__errno_location();
        let fd = PIPE_WRITE_FD.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = signal as u8;
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
        *libc::__errno_location() = saved_errno;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn check(signal: i32) {
        let receiver = install().expect("install signal handlers");
        // SAFETY: raising a handled signal in our own process.
        assert_eq!(unsafe { libc::raise(signal) }, 0);
        assert_eq!(receiver.recv_timeout(Duration::from_secs(2)), Ok(signal));
    }

    #[test]
    fn raised_signals_arrive_as_events() {
        check(libc::SIGHUP);
        assert_eq!(libc::SIGHUP, 1);
        check(libc::SIGTERM);
        check(libc::SIGINT);
        // Installing again returns the same channel; nothing is pending.
        let again = install().expect("install twice");
        assert_eq!(
            again.try_recv(),
            Err(crossbeam_channel::TryRecvError::Empty)
        );
        // SIGPIPE is ignored now.
        // SAFETY: querying the current disposition without changing it.
        let previous = unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut current);
            current.sa_sigaction
        };
        assert_eq!(previous, libc::SIG_IGN);
    }
}
