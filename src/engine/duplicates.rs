//! Duplicate-server warning: two lspc processes on the same workspace each start their own
//! servers (issue 6). lspc cannot share a server between processes, so it says so, with how much
//! memory the other copies use, instead of silently doubling the load.
//!
//! Mechanism: one registry file per (workspace folder, server name) in the runtime directory
//! (`$XDG_RUNTIME_DIR/lspc/`, else `/tmp/lspc-<uid>/`), one line `<lspc pid> <server pid>` per
//! live registration. Lines whose lspc process is gone (no `/proc/<pid>`) are dropped when the
//! file is rewritten, so stale entries from a SIGKILLed lspc do not warn forever; a clean exit
//! takes its own entries out and removes a file left empty.
//!
//! Invariants: best effort only. Every I/O error is logged at debug level and ignored; nothing
//! here can fail a server start. Linux only (reads `/proc`); elsewhere it does nothing.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder holding the registry files, created with mode 0700 if missing.
fn registry_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if Path::new(&dir).is_dir() => PathBuf::from(dir).join("lspc"),
        // SAFETY: getuid has no preconditions and cannot fail.
        _ => std::env::temp_dir().join(format!("lspc-{}", unsafe { libc::getuid() })),
    };
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&base).ok()?;
    Some(base)
}

/// A file name for (workspace, server): FNV-1a of both, in hex, so any path fits.
fn registry_name(server_name: &str, workspace_folder: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let key = format!("{}\0{}", workspace_folder.display(), server_name);
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let safe_name: String = server_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(32)
        .collect();
    format!("{safe_name}-{hash:016x}")
}

/// `(lspc pid, server pid)` pairs from a registry file's text; bad lines are skipped.
fn parse_registry(text: &str) -> Vec<(u32, u32)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let lspc_pid = fields.next()?.parse().ok()?;
            let server_pid = fields.next()?.parse().ok()?;
            Some((lspc_pid, server_pid))
        })
        .collect()
}

fn is_alive(pid: u32) -> bool {
    crate::process::process_running(pid)
}

/// Resident memory of a process in KiB, from `VmRSS` in `/proc/<pid>/status`.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// Record that this lspc runs `server_pid` as `server_name` for `workspace_folder`, and warn
/// (log::warn, on stderr) if other live lspc processes run the same server there, naming their
/// pids and their servers' resident memory.
pub(super) fn register(server_name: &str, workspace_folder: &Path, server_pid: u32) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Some(dir) = registry_dir() else {
        log::debug!("duplicate-server registry: no runtime directory");
        return;
    };
    let file = dir.join(registry_name(server_name, workspace_folder));
    let own_pid = std::process::id();
    let existing = fs::read_to_string(&file).unwrap_or_default();
    let others: Vec<(u32, u32)> = parse_registry(&existing)
        .into_iter()
        .filter(|&(lspc_pid, _)| lspc_pid != own_pid && is_alive(lspc_pid))
        .collect();
    if !others.is_empty() {
        let described: Vec<String> = others
            .iter()
            .map(|&(lspc_pid, other_server_pid)| match rss_kib(other_server_pid) {
                Some(kib) => format!(
                    "lspc pid {lspc_pid} (its {server_name}: pid {other_server_pid}, {} MiB resident)",
                    kib / 1024
                ),
                None => format!("lspc pid {lspc_pid}"),
            })
            .collect();
        let own = rss_kib(server_pid)
            .map(|kib| format!(" (this one: pid {server_pid}, {} MiB so far)", kib / 1024))
            .unwrap_or_default();
        log::warn!(
            "another lspc already runs {server_name} for {}: {}; each lspc starts its own \
             servers, so this starts another copy{own}",
            workspace_folder.display(),
            described.join(", ")
        );
    }
    // Rewrite: live entries of other processes plus ours (stale lines go away).
    let mut text = String::new();
    for (lspc_pid, other_server_pid) in others {
        text.push_str(&format!("{lspc_pid} {other_server_pid}\n"));
    }
    text.push_str(&format!("{own_pid} {server_pid}\n"));
    let temporary = dir.join(format!(
        ".{}.{own_pid}",
        registry_name(server_name, workspace_folder)
    ));
    let written = fs::File::create(&temporary)
        .and_then(|mut handle| handle.write_all(text.as_bytes()))
        .and_then(|()| fs::rename(&temporary, &file));
    if let Err(error) = written {
        log::debug!("duplicate-server registry {}: {error}", file.display());
    }
}

/// The registry text left once `own_pid` is gone: the lines of other processes `alive` says
/// still run, `None` when there are none (the file is then removed).
fn without_own_entries(text: &str, own_pid: u32, alive: impl Fn(u32) -> bool) -> Option<String> {
    let kept: String = parse_registry(text)
        .into_iter()
        .filter(|&(lspc_pid, _)| lspc_pid != own_pid && alive(lspc_pid))
        .map(|(lspc_pid, server_pid)| format!("{lspc_pid} {server_pid}\n"))
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// Takes this lspc's entry for (`server_name`, `workspace_folder`) out of the registry as it
/// exits, and removes the file when no live entry is left: without this, every workspace a
/// server ever ran in left a file behind (thousands in the runtime directory of a test run).
/// Best effort, like [`register`].
pub(super) fn unregister(server_name: &str, workspace_folder: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Some(dir) = registry_dir() else {
        return;
    };
    let name = registry_name(server_name, workspace_folder);
    let file = dir.join(&name);
    let Ok(existing) = fs::read_to_string(&file) else {
        return;
    };
    let own_pid = std::process::id();
    let written = match without_own_entries(&existing, own_pid, is_alive) {
        None => fs::remove_file(&file),
        Some(text) => {
            let temporary = dir.join(format!(".{name}.{own_pid}"));
            fs::File::create(&temporary)
                .and_then(|mut handle| handle.write_all(text.as_bytes()))
                .and_then(|()| fs::rename(&temporary, &file))
        }
    };
    if let Err(error) = written {
        log::debug!("duplicate-server registry {}: {error}", file.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_lines_parse() {
        let check = |text: &str, expected: &[(u32, u32)]| {
            assert_eq!(parse_registry(text), expected, "{text:?}");
        };
        check("", &[]);
        check("12 34\n56 78\n", &[(12, 34), (56, 78)]);
        check("12 34\ngarbage\n9\n-1 2\n5 6 extra\n", &[(12, 34), (5, 6)]);
    }

    #[test]
    fn unregistering_keeps_only_other_live_entries() {
        let alive = |pid: u32| pid != 30;
        let check = |text: &str, expected: Option<&str>| {
            assert_eq!(
                without_own_entries(text, 10, alive).as_deref(),
                expected,
                "{text:?}"
            );
        };
        check("10 11\n", None);
        check("", None);
        check("10 11\n20 21\n", Some("20 21\n"));
        check("30 31\n10 11\n", None);
        check("20 21\njunk\n10 12\n", Some("20 21\n"));
    }

    #[test]
    fn vm_rss_parses() {
        let check = |status: &str, expected: Option<u64>| {
            assert_eq!(parse_vm_rss(status), expected, "{status:?}");
        };
        check("Name:\tx\nVmRSS:\t   12345 kB\nVmSwap: 0 kB\n", Some(12345));
        check("Name:\tx\n", None);
        check("VmRSS:\tlots kB\n", None);
    }

    #[test]
    fn registry_names_differ_by_workspace_and_server() {
        let a = registry_name("pyright", Path::new("/w/one"));
        assert!(a.starts_with("pyright-"), "{a}");
        assert_eq!(a.len(), "pyright-".len() + 16);
        assert_ne!(a, registry_name("pyright", Path::new("/w/two")));
        assert_ne!(a, registry_name("ruff", Path::new("/w/one")));
        assert_eq!(a, registry_name("pyright", Path::new("/w/one")));
        assert!(registry_name("a/b c", Path::new("/")).starts_with("a_b_c-"));
    }
}
