//! Per-server watchdog that kills the server's whole process group if lspc dies without
//! cleaning up, even by SIGKILL (B26).
//!
//! `PR_SET_PDEATHSIG` (see [`crate::process`]) kills only the server itself when lspc dies; its
//! children (typescript-language-server's `tsserver`, a fixture's `sleep`) would be orphaned. So
//! next to each server lspc starts `/bin/sh -c 'read _ || kill -KILL -PGID'` with its stdin on a
//! pipe whose write end only lspc holds (std pipes are close-on-exec, so no other child inherits
//! it). When lspc ends in any way the kernel closes that end, `read` hits EOF and the shell kills
//! the group. On a normal stop lspc writes one line first, so `read` succeeds and the shell exits
//! without signalling anything.
//!
//! Starting `/bin/sh` takes the spawning thread 2–4 ms on this 2-core machine (the vfork child
//! competes with the server's own start-up for the CPU), so it is started on a short-lived
//! thread `"<server>-watchdog"` rather than on the event loop, which meanwhile handles the
//! server's `initialize` answer (issue 15: the loop was seen answering it only after the
//! watchdog was up).
//!
//! Invariants:
//! - The watchdog runs in its own process group, so a terminal's Ctrl-C reaches lspc (which shuts
//!   down cleanly and disarms it) rather than the watchdog.
//! - It is always reaped: [`Watchdog::disarm`] (also run by `Drop`) joins the starting thread,
//!   writes the line and waits.
//! - Not covered: server descendants that leave the group (`setsid`, daemonizing), a server
//!   group killed before lspc disarms and then reused as a pgid within that instant, and lspc
//!   dying in the few milliseconds before the watchdog is up (the server itself still has its
//!   parent-death signal then).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use wait_timeout::ChildExt;

/// A watchdog for one server process group: being started, or running.
pub(super) struct Watchdog {
    /// The thread starting `/bin/sh`; its result is the child (`None` when it could not start).
    starting: Option<JoinHandle<Option<Child>>>,
    child: Option<Child>,
}

impl Watchdog {
    /// Start a watchdog for the process group `pgid` (the server's pid) of the server `name`, on
    /// a thread of its own (see the module doc); returns at once. When that thread cannot be
    /// created, `/bin/sh` is started here instead. A `/bin/sh` that cannot start is logged (the
    /// server then has only its parent-death signal).
    pub(super) fn start(name: &str, pgid: u32) -> Watchdog {
        let starting = std::thread::Builder::new()
            .name(format!("{name}-watchdog"))
            .spawn(move || spawn_shell(pgid));
        match starting {
            Ok(thread) => Watchdog {
                starting: Some(thread),
                child: None,
            },
            Err(_) => Watchdog {
                starting: None,
                child: spawn_shell(pgid),
            },
        }
    }

    /// The server was stopped normally: let the watchdog exit without signalling, and reap it.
    pub(super) fn disarm(&mut self) {
        if let Some(thread) = self.starting.take() {
            self.child = thread.join().ok().flatten();
        }
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        match child.wait_timeout(Duration::from_millis(500)) {
            Ok(Some(_)) => {}
            _ => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// `/bin/sh -c 'read _ || kill -KILL -PGID'` in its own process group, its stdin on a pipe only
/// lspc holds; `None` (logged at debug) when it cannot start.
fn spawn_shell(pgid: u32) -> Option<Child> {
    // `kill -KILL -PGID`: dash's builtin `kill` does not accept `--`.
    let script = format!("read _ || kill -KILL -{pgid} 2>/dev/null");
    let child = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match child {
        Ok(child) => Some(child),
        Err(error) => {
            log::debug!("cannot start the watchdog for process group {pgid}: {error}");
            None
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarm();
    }
}
