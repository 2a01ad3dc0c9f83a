//! Duplicate-server warning: two lspc processes on the same workspace each start their own
//! servers (issue 6). lspc cannot share a server between processes, so it says so, with how much
//! memory the other copies use, instead of silently doubling the load.
//!
//! Mechanism: one registry file per (workspace folder, server name) in the runtime directory
//! (`$XDG_RUNTIME_DIR/lspc/`, else `/tmp/lspc-<uid>/`), one line `<lspc pid> <server pid>` per
//! live registration. Lines whose lspc process is gone (no `/proc/<pid>`, or a zombie: state `Z`
//! or `X` in its `stat`, as the shutdown code counts group members) are dropped when the
//! file is rewritten, so stale entries from a SIGKILLed lspc do not warn forever; a clean exit
//! takes its own entries out and removes a file left empty. Files that only SIGKILLed lspc
//! processes left (other workspaces', which nobody rewrites) are swept once a day, by the first
//! registration after the folder's `.swept` marker is a day old; the sweep touches only names
//! this module writes (a session's lock and log files share the folder).
//!
//! Invariants: best effort only. Every I/O error is logged at debug level and ignored; nothing
//! here can fail a server start. Linux only (reads `/proc`); elsewhere it does nothing.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

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
    if sweep_due(&dir, SystemTime::now()) {
        let deadline = Instant::now() + SWEEP_BUDGET;
        let swept = sweep(&dir, is_alive, SystemTime::now(), deadline);
        log::debug!(
            "duplicate-server registry: swept {} files of exited lspc processes{}",
            swept.removed,
            if swept.complete {
                ""
            } else {
                " (more next time)"
            }
        );
        if !swept.complete {
            // Due again at the next registration.
            let _ = fs::File::options()
                .write(true)
                .open(dir.join(SWEEP_MARKER))
                .and_then(|marker| marker.set_modified(SystemTime::UNIX_EPOCH));
        }
    }
}

/// How often a registry folder is swept of files that only exited lspc processes left.
const SWEEP_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// A file changed this recently is left alone by a sweep: its writer may be registering now.
const SWEEP_MIN_AGE: Duration = Duration::from_secs(60);

/// How long one registration may sweep (it runs on the loop as a server starts); a folder
/// with more garbage is swept on, budget by budget, by the next registrations.
const SWEEP_BUDGET: Duration = Duration::from_millis(2);

/// What a [`sweep`] did.
#[derive(Debug, PartialEq)]
struct Swept {
    /// Files removed.
    removed: usize,
    /// Whether every entry was looked at (`false`: the budget ran out).
    complete: bool,
}

/// The marker whose modification time records the folder's last sweep.
const SWEEP_MARKER: &str = ".swept";

/// Whether `dir` was last swept [`SWEEP_INTERVAL`] or more before `now` (or never); when it is
/// due, the marker is touched first, so concurrent lspc processes do not all sweep. One `stat`
/// when it is not due.
fn sweep_due(dir: &Path, now: SystemTime) -> bool {
    let marker = dir.join(SWEEP_MARKER);
    let last = fs::metadata(&marker).and_then(|metadata| metadata.modified());
    if let Ok(last) = last {
        // A marker dated in the future (a clock set back) counts as never swept.
        if now
            .duration_since(last)
            .is_ok_and(|age| age < SWEEP_INTERVAL)
        {
            return false;
        }
    }
    fs::File::create(&marker).is_ok()
}

/// Removes from `dir` every registry file ([`registry_entry_kind`]: by name, a regular file of
/// at most [`MAX_REGISTRY_BYTES`]) whose entries all name lspc processes `alive` says are gone,
/// and every temporary file (`.<name>.<pid>`) of a gone process: what a SIGKILLed
/// lspc leaves, since only a clean exit unregisters (a test suite's killed runs left thousands).
/// Files modified less than [`SWEEP_MIN_AGE`] before `now` are kept. Stops at `deadline`.
/// Best effort: unreadable entries are skipped.
fn sweep(dir: &Path, alive: impl Fn(u32) -> bool, now: SystemTime, deadline: Instant) -> Swept {
    let mut swept = Swept {
        removed: 0,
        complete: true,
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return swept;
    };
    for entry in entries.flatten() {
        if Instant::now() >= deadline {
            swept.complete = false;
            break;
        }
        let name = entry.file_name();
        let Some(kind) = name.to_str().and_then(registry_entry_kind) else {
            // The marker, a session's lock or log, anything not written here.
            continue;
        };
        // `DirEntry::metadata` does not follow a symlink: only regular files of registry size.
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if !metadata.is_file() || metadata.len() > MAX_REGISTRY_BYTES {
            continue;
        }
        let recent = metadata.modified().map_or(true, |modified| {
            now.duration_since(modified).unwrap_or_default() < SWEEP_MIN_AGE
        });
        if recent {
            continue;
        }
        let path = entry.path();
        let gone = match kind {
            RegistryEntry::Temporary { lspc_pid } => !alive(lspc_pid),
            RegistryEntry::File => fs::read_to_string(&path)
                .is_ok_and(|text| without_own_entries(&text, 0, &alive).is_none()),
        };
        if gone && fs::remove_file(&path).is_ok() {
            swept.removed += 1;
        }
    }
    swept
}

/// The largest registry file a sweep reads (a line is at most 22 bytes; more means it is not
/// one of ours).
const MAX_REGISTRY_BYTES: u64 = 4096;

/// A name [`register`] writes in the registry folder.
#[derive(Debug, PartialEq)]
enum RegistryEntry {
    /// `<name>-<16 hex digits>` ([`registry_name`]).
    File,
    /// `.<registry name>.<lspc pid>`: a rewrite in progress, or one a killed lspc left.
    Temporary { lspc_pid: u32 },
}

/// What `name` is in the registry folder, `None` for anything else (the `.swept` marker, a
/// session's `<key>.lock` and `<key>.log`, which share the folder).
fn registry_entry_kind(name: &str) -> Option<RegistryEntry> {
    fn is_registry_name(name: &str) -> bool {
        let Some((server, hash)) = name.rsplit_once('-') else {
            return false;
        };
        server.len() <= 32
            && server
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && hash.len() == 16
            && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
    match name.strip_prefix('.') {
        Some(temporary) => {
            let (registry, pid) = temporary.rsplit_once('.')?;
            let lspc_pid = pid.parse().ok()?;
            is_registry_name(registry).then_some(RegistryEntry::Temporary { lspc_pid })
        }
        None => is_registry_name(name).then_some(RegistryEntry::File),
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

    /// A registered lspc that was killed and not reaped yet (a zombie, as under a PID 1 that
    /// reaps slowly) is gone: its entry is dropped, and it does not count as another copy.
    #[test]
    fn a_zombie_lspc_is_not_alive_and_its_entry_is_dropped() {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
        {
            assert!(Instant::now() < deadline, "true did not exit within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Still listed in /proc, which the first version of this check took for alive.
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        assert!(!is_alive(pid));
        let own = std::process::id();
        assert!(is_alive(own));
        assert_eq!(
            without_own_entries(&format!("{pid} 1\n{own} 2\n1 3\n"), own, is_alive).as_deref(),
            Some("1 3\n")
        );
        let _ = child.wait();
        assert!(!is_alive(pid));
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

    #[test]
    fn a_sweep_removes_only_what_exited_processes_left() {
        let dir = std::env::temp_dir().join(format!("lspc-sweep-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| fs::write(dir.join(name), text).unwrap();
        let (dead, live, empty) = (
            "pyright-00000000000000aa",
            "pyright-00000000000000bb",
            "ruff-00000000000000cc",
        );
        write(dead, "30 31\n40 41\n");
        write(live, "30 31\n20 21\n");
        write(empty, "");
        write(&format!(".{live}.30"), "30 31\n");
        write(&format!(".{live}.20"), "20 21\n");
        write(".swept", "");
        // A session's files share the folder: never touched.
        write("0123456789abcdef.lock", "");
        write("0123456789abcdef.log", "session ready\n");
        write("notes", "");
        std::os::unix::fs::symlink("/dev/zero", dir.join("pyright-00000000000000dd")).unwrap();
        write("pyright-00000000000000ee", &"1 2\n".repeat(2000));
        let alive = |pid: u32| pid == 20;
        let swept = |removed, complete| Swept { removed, complete };
        let budget = || Instant::now() + Duration::from_secs(10);
        // Everything was just written: too recent to touch.
        assert_eq!(
            sweep(&dir, alive, SystemTime::now(), budget()),
            swept(0, true)
        );
        let later = SystemTime::now() + Duration::from_secs(120);
        // No budget left: nothing looked at.
        assert_eq!(sweep(&dir, alive, later, Instant::now()), swept(0, false));
        assert_eq!(sweep(&dir, alive, later, budget()), swept(3, true));
        let mut left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".pyright-00000000000000bb.20",
                ".swept",
                "0123456789abcdef.lock",
                "0123456789abcdef.log",
                "notes",
                "pyright-00000000000000bb",
                "pyright-00000000000000dd",
                "pyright-00000000000000ee",
            ]
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_names_the_registry_writes_are_registry_entries() {
        let check = |name: &str, expected: Option<RegistryEntry>| {
            assert_eq!(registry_entry_kind(name), expected, "{name:?}");
        };
        let name = registry_name("typescript-language-server", Path::new("/w"));
        check(&name, Some(RegistryEntry::File));
        check(
            &format!(".{name}.4242"),
            Some(RegistryEntry::Temporary { lspc_pid: 4242 }),
        );
        check(&format!(".{name}.x"), None);
        check(".swept", None);
        check("0123456789abcdef.lock", None);
        check("0123456789abcdef.log", None);
        check("pyright-0123456789ABCDEF", None);
        check("pyright-0123", None);
        check("-0123456789abcdef", Some(RegistryEntry::File));
    }

    #[test]
    fn a_sweep_is_due_once_a_day() {
        let dir = std::env::temp_dir().join(format!("lspc-sweep-due-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let now = SystemTime::now();
        // Never swept: due, and the marker is written.
        assert!(sweep_due(&dir, now));
        assert!(dir.join(SWEEP_MARKER).is_file());
        assert!(!sweep_due(&dir, now + Duration::from_secs(3600)));
        assert!(sweep_due(
            &dir,
            now + SWEEP_INTERVAL + Duration::from_secs(60)
        ));
        // A marker from the future (the clock was set back) does not stop sweeps for good.
        assert!(sweep_due(&dir, now - Duration::from_secs(3600)));
        fs::remove_dir_all(&dir).unwrap();
    }
}
