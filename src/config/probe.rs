//! `lspc servers`' check that a found program can run at all (issue 10): a rustup proxy such as
//! `~/.cargo/bin/rust-analyzer` exists on PATH even when its toolchain component is not
//! installed, and then fails every start with `error: Unknown binary 'rust-analyzer' …`.
//!
//! Only rustup proxies are probed (the resolved program's target is named `rustup`): many real
//! servers do not support `--version` (pyright-langserver exits 1 asking for `--stdio`, gopls
//! rejects the flag), so failing `--version` says nothing about them. The probe runs
//! `PROGRAM --version` with stdin closed and waits at most 5 s (wait-timeout installs a
//! process-wide SIGCHLD handler on first use).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

use super::ServerConfig;

/// Why `server`'s program is broken, e.g. `error: Unknown binary 'rust-analyzer' in official
/// toolchain 'stable'`; `None` when it is not probed, not found, or printed its version.
pub fn broken_reason(server: &ServerConfig) -> Option<String> {
    let program = server.resolved_command.as_ref()?;
    if !is_rustup_proxy(program) {
        return None;
    }
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let status = match child.wait_timeout(Duration::from_secs(5)) {
        Ok(Some(status)) => status,
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
    };
    if status.success() {
        return None;
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    Some(
        crate::failure_text::meaningful_line(&stderr)
            .map(str::to_string)
            .unwrap_or_else(|| format!("`--version` exited with {status}")),
    )
}

fn is_rustup_proxy(program: &Path) -> bool {
    std::fs::canonicalize(program).is_ok_and(|target| {
        target
            .file_name()
            .is_some_and(|name| name == "rustup" || name == "rustup-init")
    })
}
