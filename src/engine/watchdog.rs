//! The watchdog that kills the servers' whole process groups if lspc dies without cleaning up,
//! even by SIGKILL (B26).
//!
//! `PR_SET_PDEATHSIG` (see [`crate::process`]) kills only the server itself when lspc dies; its
//! children (typescript-language-server's `tsserver`, a fixture's `sleep`) would be orphaned. So
//! lspc runs one `/bin/sh` loop whose stdin is a pipe only lspc writes to (the write end is
//! close-on-exec, so no other child inherits it). lspc writes `+PGID` when a server starts and
//! `-PGID` once it has been reaped; the shell keeps the list. When lspc ends in any way the kernel
//! closes the write end, `read` hits end of file and the shell SIGKILLs every group still on the
//! list. On a normal stop lspc writes `stop` first and the shell exits without signalling.
//!
//! One shell serves every server of the process (issue 15). It used to be one per server, started
//! as the server started: on the 2 shared cores its start-up (about 0.6 ms of CPU, 2–4 ms of
//! wall time for the spawning thread) competed with the server's own start, and added 1.9 ms to
//! ruff's `initialize` answer at load 8 (median of 20 runs). `lspc check` starts it while it walks
//! the files ([`prepare`]), before any server exists; elsewhere it starts with the first server.
//! It is started on a short-lived thread `"lspc-watchdog"`; registrations written meanwhile
//! wait in the pipe, which exists from the start.
//!
//! Invariants:
//! - The shell runs in its own process group, so a terminal's Ctrl-C reaches lspc (which shuts
//!   down cleanly and disarms it) rather than the shell.
//! - It is always reaped: the last handle ([`Watchdog`] per server, [`WatchdogHold`] from
//!   `prepare`) to go writes `stop`, joins the starting thread and waits (500 ms, then SIGKILL).
//! - A group is taken off the list only after its leader was reaped by lspc: a group killed
//!   while lspc lives is never signalled by the shell afterwards.
//! - Not covered: server descendants that leave the group (`setsid`, daemonizing), a group whose
//!   pgid is reused between lspc's death and the shell's `kill`, and lspc dying before the shell
//!   is up (the server itself still has its parent-death signal then).

use std::fs::File;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use wait_timeout::ChildExt;

/// The shell's program: `+N` adds group N, `-N` removes it, `stop` ends it quietly; end of file
/// (or a failed read) kills every group on the list.
const SCRIPT: &str = "g=' '
while read -r l; do
  case $l in
    +*) g=\"$g${l#+} \" ;;
    -*) n=' '; for p in $g; do [ \"$p\" = \"${l#-}\" ] || n=\"$n$p \"; done; g=$n ;;
    stop) exit 0 ;;
  esac
done
for p in $g; do kill -KILL -$p 2>/dev/null; done";

/// The process's one watchdog, while some handle holds it.
static CURRENT: Mutex<Weak<Shared>> = Mutex::new(Weak::new());

/// The shell and lspc's end of its stdin.
struct Shared {
    /// lspc's end of the shell's stdin; `write(2)`s of one short line are atomic on a pipe, so
    /// handles on any thread write without a lock.
    writer: File,
    /// The starting thread, then the child; taken once, by `Drop`.
    child: Mutex<Starting>,
}

enum Starting {
    /// The thread starting `/bin/sh`; its result is the child (`None` when it could not start).
    Thread(JoinHandle<Option<Child>>),
    Child(Option<Child>),
}

impl Shared {
    /// The current watchdog, or a new one. `None` (logged) when the pipe cannot be made.
    fn get() -> Option<Arc<Shared>> {
        let mut current = CURRENT
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(shared) = current.upgrade() {
            return Some(shared);
        }
        let shared = Arc::new(Shared::start()?);
        *current = Arc::downgrade(&shared);
        Some(shared)
    }

    fn start() -> Option<Shared> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            log::warn!(
                "cannot start the watchdog: {}",
                std::io::Error::last_os_error()
            );
            return None;
        }
        // SAFETY: both descriptors are new and owned by nobody else.
        let (read_end, writer) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        let starting = std::thread::Builder::new()
            .name("lspc-watchdog".to_owned())
            .spawn(move || spawn_shell(read_end));
        let child = match starting {
            Ok(thread) => Starting::Thread(thread),
            // The closure (and the read end in it) is gone: writes now fail with EPIPE.
            Err(error) => {
                log::warn!("cannot start the watchdog's thread: {error}");
                Starting::Child(None)
            }
        };
        Some(Shared {
            writer,
            child: Mutex::new(child),
        })
    }

    /// Writes one line (a registration or `stop`); a shell that is gone is logged at debug.
    fn tell(&self, line: &str) {
        let mut writer = &self.writer;
        if let Err(error) = writer.write_all(line.as_bytes()) {
            log::debug!("watchdog: cannot write {:?}: {error}", line.trim_end());
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.tell("stop\n");
        let starting = std::mem::replace(
            self.child
                .get_mut()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            Starting::Child(None),
        );
        let child = match starting {
            Starting::Thread(thread) => thread.join().ok().flatten(),
            Starting::Child(child) => child,
        };
        let Some(mut child) = child else {
            return;
        };
        match child.wait_timeout(Duration::from_millis(500)) {
            Ok(Some(_)) => {}
            _ => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// `/bin/sh -c SCRIPT` in its own process group, its stdin on `read_end`; `None` (logged at
/// debug) when it cannot start. Waiting uses `wait-timeout`, which installs a process-wide
/// SIGCHLD handler on first use.
fn spawn_shell(read_end: OwnedFd) -> Option<Child> {
    let child = Command::new("/bin/sh")
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::from(read_end))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match child {
        Ok(child) => Some(child),
        Err(error) => {
            log::debug!("cannot start the watchdog: {error}");
            None
        }
    }
}

/// Keeps the watchdog running without a group on it, so that it is up before the first server
/// starts ([`prepare`]).
pub struct WatchdogHold {
    _shared: Option<Arc<Shared>>,
}

/// Starts the process's watchdog now, in the background (see the module doc), and keeps it until
/// the hold is dropped. For a frontend that is about to start servers in this process
/// (`lspc check`, which calls it before its walk).
pub fn prepare() -> WatchdogHold {
    WatchdogHold {
        _shared: Shared::get(),
    }
}

/// One server's process group on the watchdog's list.
pub(super) struct Watchdog {
    /// The group, while on the list.
    registered: Option<(Arc<Shared>, u32)>,
}

impl Watchdog {
    /// Puts the process group `pgid` (the server's pid) of the server `name` on the watchdog's
    /// list, starting the watchdog if none runs; returns at once. Without a watchdog (logged) the
    /// server has only its parent-death signal.
    pub(super) fn start(name: &str, pgid: u32) -> Watchdog {
        let Some(shared) = Shared::get() else {
            log::debug!("{name}: no watchdog for process group {pgid}");
            return Watchdog { registered: None };
        };
        shared.tell(&format!("+{pgid}\n"));
        Watchdog {
            registered: Some((shared, pgid)),
        }
    }

    /// The server was stopped and reaped: take its group off the list (the last handle also
    /// stops the watchdog and reaps it).
    pub(super) fn disarm(&mut self) {
        if let Some((shared, pgid)) = self.registered.take() {
            shared.tell(&format!("-{pgid}\n"));
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A process group of its own running `sleep 30`.
    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep")
    }

    fn exited_within(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
        child.wait_timeout(timeout).expect("wait")
    }

    /// The shell's list: at end of file (lspc gone) it kills the groups still on it and spares
    /// the one taken off; `stop` ends it without killing anything.
    #[test]
    fn end_of_file_kills_the_listed_groups_and_stop_kills_none() {
        let (mut kept, mut removed) = (sleeper(), sleeper());
        let (read_end, mut writer) = {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: valid array; the descriptors are new and ours.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            unsafe { (OwnedFd::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
        };
        let mut shell = spawn_shell(read_end).expect("start /bin/sh");
        write!(
            writer,
            "+{}\n+{}\n-{}\n",
            kept.id(),
            removed.id(),
            removed.id()
        )
        .expect("write");
        drop(writer);
        let started = Instant::now();
        assert!(exited_within(&mut shell, Duration::from_secs(10)).is_some());
        let status = exited_within(&mut kept, Duration::from_secs(10)).expect("killed");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            exited_within(&mut removed, Duration::from_millis(200)),
            None
        );
        let _ = removed.kill();
        let _ = removed.wait();

        let mut spared = sleeper();
        let shared = Shared::start().expect("watchdog");
        shared.tell(&format!("+{}\n", spared.id()));
        drop(shared);
        assert_eq!(exited_within(&mut spared, Duration::from_millis(200)), None);
        let _ = spared.kill();
        let _ = spared.wait();
    }

    /// Every handle shares one shell, which ends once the last handle is gone.
    #[test]
    fn handles_share_one_shell() {
        let hold = prepare();
        let first = Watchdog::start("a", 999_999_991);
        let second = Watchdog::start("b", 999_999_992);
        let pointer = |watchdog: &Watchdog| {
            watchdog
                .registered
                .as_ref()
                .map(|(shared, _)| Arc::as_ptr(shared))
        };
        assert!(pointer(&first).is_some());
        assert_eq!(pointer(&first), pointer(&second));
        assert_eq!(
            hold._shared.as_ref().map(Arc::as_ptr),
            pointer(&first),
            "prepare's watchdog is the servers'"
        );
        drop((first, second, hold));
    }
}
