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
//! Invariants:
//! - The watchdog runs in its own process group, so a terminal's Ctrl-C reaches lspc (which shuts
//!   down cleanly and disarms it) rather than the watchdog.
//! - It is always reaped: [`Watchdog::disarm`] (also run by `Drop`) writes the line and waits.
//! - Not covered: server descendants that leave the group (`setsid`, daemonizing) and a server
//!   group killed before lspc disarms and then reused as a pgid within that instant.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// A running watchdog for one server process group.
pub(super) struct Watchdog {
    child: Option<Child>,
}

impl Watchdog {
    /// Start a watchdog for the process group `pgid` (the server's pid). `None` when `/bin/sh`
    /// cannot be started (logged; the server then has only its parent-death signal).
    pub(super) fn start(pgid: u32) -> Option<Watchdog> {
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
            Ok(child) => Some(Watchdog { child: Some(child) }),
            Err(error) => {
                log::debug!("cannot start the watchdog for process group {pgid}: {error}");
                None
            }
        }
    }

    /// The server was stopped normally: let the watchdog exit without signalling, and reap it.
    pub(super) fn disarm(&mut self) {
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

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarm();
    }
}
