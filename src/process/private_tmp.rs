//! A private temporary folder per server process, given to the server as `TMPDIR` and removed
//! once the server's process group is gone (issue 15).
//!
//! Why: typescript-language-server 5.3 creates two folders `os.tmpdir()/<32 hex digits>/` per
//! start (one per tsserver, for its `--cancellationPipeName`, through tempy's
//! `temporaryFile({ name: 'tscancellation' })`) and never removes them, however it exits: a clean
//! `shutdown`/`exit` leaves them as surely as a SIGKILL. Servers killed by a signal also leave
//! what they would have cleaned at exit (pyright's `pyright-<pid>-<random>/`, rust-analyzer's
//! `proc-macro-srv*/`). On a CI runner that is one folder per run, for years. lspc cannot make
//! the servers clean up, so it owns the folder they write into.
//!
//! Layout: `<temp dir>/lspc-<uid>/tmp/<lspc pid>-<lspc start time>-<n>-<server name>/`, mode
//! 0700, where `<temp dir>` is lspc's own (`TMPDIR`, else `/tmp`): the file system the servers
//! would have written to anyway (`$XDG_RUNTIME_DIR` is a small tmpfs, and rust-analyzer copies
//! proc-macro libraries into its temp dir). The start time (field 22 of `/proc/<pid>/stat`)
//! tells a reused pid apart.
//!
//! Invariants:
//! - Only folders this module created are ever removed: the server's own folder once its process
//!   group is gone, and folders of lspc processes that no longer run (SIGKILLed: nobody removed
//!   theirs), swept by the first server start of each lspc process. Entries whose names do not
//!   parse as ours are left alone.
//! - `lspc-<uid>` and `tmp` are used only if they are real folders (no symlink) owned by the user
//!   with no access for group or others; otherwise the server keeps the inherited `TMPDIR`.
//! - Best effort: an I/O error is logged at debug level and the server starts as before.
//! - A server configured with its own `TMPDIR` keeps it; no folder is made for it. Neither is one
//!   made for a server known to keep a cache in the temp dir across runs ([`KEEPS_CACHE_IN_TMP`]).

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

/// Servers (by the file name of their command) that keep something in the temp dir across runs
/// on purpose, and so keep the inherited `TMPDIR`: pyrefly materialises its bundled typeshed
/// once into `<temp dir>/pyrefly_bundled_typeshed_<hash>/` and its definition answers point into
/// it, so a removed private folder would cost a new copy per run (753 files, 5.5 MB) and leave
/// printed locations pointing at deleted files.
pub const KEEPS_CACHE_IN_TMP: &[&str] = &["pyrefly"];

/// Whether the server started as `command` with the added environment `env` gets a private
/// `TMPDIR` (see the module doc).
pub fn wanted(command: &Path, env: &[(String, String)]) -> bool {
    let keeps_cache = command
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| KEEPS_CACHE_IN_TMP.contains(&name));
    !keeps_cache && !env.iter().any(|(key, _)| key == "TMPDIR")
}

/// The server's private temporary folder; [`PrivateTmp::remove`] deletes it with its contents.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    /// Creates a fresh folder for server `server_name` (the first call of the process also sweeps
    /// folders of lspc processes that are gone). `None` when it cannot be made safely, or its
    /// path is not UTF-8.
    pub fn create(server_name: &str) -> Option<PrivateTmp> {
        static SWEEP: Once = Once::new();
        static N_CREATED: AtomicU32 = AtomicU32::new(0);
        let parent = owned_parent(&std::env::temp_dir())?;
        let owner = own_process_key()?;
        SWEEP.call_once(|| sweep(&parent, &owner, is_running));
        let n = N_CREATED.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("{owner}-{n}-{}", safe_name(server_name)));
        // The server's environment is text (`SpawnSpec::env`): a temp dir whose name is not UTF-8
        // cannot be passed exactly.
        path.to_str()?;
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => Some(PrivateTmp { path }),
            Err(error) => {
                log::debug!("cannot create {}: {error}", path.display());
                None
            }
        }
    }

    /// The folder, for the server's `TMPDIR`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the folder and everything in it. Call only once no process of the server runs.
    pub fn remove(self) {
        if let Err(error) = fs::remove_dir_all(&self.path) {
            log::debug!("cannot remove {}: {error}", self.path.display());
        }
    }
}

/// `<temp dir>/lspc-<uid>/tmp`, created with mode 0700 where missing, if it and `lspc-<uid>` are
/// real folders of this user that nobody else may enter.
fn owned_parent(temp_dir: &Path) -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let base = temp_dir.join(format!("lspc-{uid}"));
    let parent = base.join("tmp");
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    if let Err(error) = builder.create(&parent) {
        log::debug!("cannot create {}: {error}", parent.display());
        return None;
    }
    for folder in [&base, &parent] {
        let metadata = fs::symlink_metadata(folder).ok()?;
        if !metadata.is_dir() || metadata.uid() != uid || metadata.mode() & 0o077 != 0 {
            log::debug!(
                "not using {} for servers' temporary files: not a private folder of uid {uid}",
                folder.display()
            );
            return None;
        }
    }
    Some(parent)
}

/// `<pid>-<start time>` of this process, the prefix of its folders' names.
fn own_process_key() -> Option<String> {
    let pid = std::process::id();
    Some(format!("{pid}-{}", start_time(pid)?))
}

/// Field 22 of `/proc/<pid>/stat` (clock ticks since boot), `None` if no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_state_and_start_time(&stat).map(|(_, start)| start)
}

/// The state (field 3) and start time (field 22) in a `/proc/<pid>/stat` line; the command name
/// (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn parse_state_and_start_time(stat: &str) -> Option<(char, u64)> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 was the first after the name, so field 22 is the 19th after it.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// Whether the process `pid` that started at `start` still runs. A zombie does not: a session
/// lspc is reparented to pid 1, which in a container may reap it late.
fn is_running(pid: u32, start: u64) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    parse_state_and_start_time(&stat)
        .is_some_and(|(state, started)| started == start && !matches!(state, 'Z' | 'X'))
}

/// `(pid, start time)` of the lspc process that made the folder `name`, if it is one of ours.
fn parse_owner(name: &str) -> Option<(u32, u64)> {
    let mut fields = name.splitn(4, '-');
    let pid = fields.next()?.parse().ok()?;
    let start = fields.next()?.parse().ok()?;
    fields.next()?.parse::<u32>().ok()?;
    fields.next()?;
    Some((pid, start))
}

/// Removes the folders in `parent` whose lspc process no longer runs (never `own`'s).
fn sweep(parent: &Path, own: &str, running: impl Fn(u32, u64) -> bool) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let Some((pid, start)) = parse_owner(name) else {
            continue;
        };
        if name.starts_with(&format!("{own}-")) || running(pid, start) {
            continue;
        }
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir {
            log::debug!("removing {name}, left by lspc process {pid} that is gone");
            if let Err(error) = fs::remove_dir_all(entry.path()) {
                log::debug!("cannot remove {}: {error}", entry.path().display());
            }
        }
    }
}

/// The server's name with anything but ASCII letters and digits replaced, at most 32 characters.
fn safe_name(server_name: &str) -> String {
    server_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_the_state_and_start_time() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                    1000 10 18446744073709551615";
        assert_eq!(parse_state_and_start_time(stat), Some(('S', 987654)));
        assert_eq!(parse_state_and_start_time("4242 (x) S 1"), None);
        let own = start_time(std::process::id()).expect("own start time");
        assert!(is_running(std::process::id(), own));
        assert!(!is_running(std::process::id(), own + 1));
    }

    /// A killed lspc not yet reaped (a zombie) no longer runs: its folders may go.
    #[test]
    fn a_zombie_does_not_run() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        let start = start_time(pid).expect("start time of sleep");
        assert!(is_running(pid, start));
        child.kill().expect("kill sleep");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| parse_state_and_start_time(&stat))
            .is_none_or(|(state, _)| state != 'Z')
        {
            assert!(
                std::time::Instant::now() < deadline,
                "sleep did not die within 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!is_running(pid, start));
        let _ = child.wait();
    }

    #[test]
    fn servers_with_a_tmpdir_or_a_cache_there_keep_theirs() {
        let tmpdir = [("TMPDIR".to_owned(), "/var/tmp".to_owned())];
        assert!(wanted(Path::new("typescript-language-server"), &[]));
        assert!(wanted(Path::new("/usr/bin/pyright-langserver"), &[]));
        assert!(!wanted(Path::new("typescript-language-server"), &tmpdir));
        assert!(!wanted(Path::new("pyrefly"), &[]));
        assert!(!wanted(Path::new("/root/.pyenv/shims/pyrefly"), &[]));
    }

    #[test]
    fn folder_names_give_their_lspc_process() {
        assert_eq!(parse_owner("812-99031-0-pyright"), Some((812, 99031)));
        assert_eq!(parse_owner("812-99031-3-a-b"), Some((812, 99031)));
        assert_eq!(parse_owner("812-99031-pyright"), None);
        assert_eq!(parse_owner("812-99031-0"), None);
        assert_eq!(parse_owner("0123456789abcdef0123456789abcdef"), None);
        assert_eq!(
            safe_name("typescript-language-server"),
            "typescript_language_server"
        );
    }

    /// Only folders of lspc processes that are gone are removed: the own process's, a live
    /// one's, and names this module does not write stay.
    #[test]
    fn a_sweep_removes_only_folders_of_gone_lspc_processes() {
        let parent =
            std::env::temp_dir().join(format!("lspc-private-tmp-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&parent);
        let names = [
            "10-500-0-pyright",
            "10-500-1-ruff",
            "11-600-0-pyright",
            "12-700-0-tsls",
            "other-folder",
            "10-500-x-not-ours",
        ];
        for name in names {
            fs::create_dir_all(parent.join(name).join("inside")).expect("create test folder");
        }
        fs::write(parent.join("13-800-0-a-file"), "").expect("create test file");
        sweep(&parent, "12-700", |pid, start| (pid, start) == (11, 600));
        let mut left: Vec<String> = fs::read_dir(&parent)
            .expect("read test folder")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .into_string()
                    .expect("utf-8")
            })
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "10-500-x-not-ours",
                "11-600-0-pyright",
                "12-700-0-tsls",
                "13-800-0-a-file",
                "other-folder"
            ]
        );
        fs::remove_dir_all(&parent).expect("remove test folder");
    }

    /// A `lspc-<uid>` folder that others may write to (made by someone else in a shared `/tmp`)
    /// is not used.
    #[test]
    fn a_parent_open_to_others_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let temp_dir =
            std::env::temp_dir().join(format!("lspc-private-tmp-owner-{}", std::process::id()));
        let _ = fs::remove_dir_all(&temp_dir);
        fs::create_dir_all(&temp_dir).expect("create test folder");
        let parent = owned_parent(&temp_dir).expect("a fresh parent is private");
        assert_eq!(fs::metadata(&parent).expect("parent").mode() & 0o777, 0o700);
        // SAFETY: getuid has no preconditions and cannot fail.
        let base = temp_dir.join(format!("lspc-{}", unsafe { libc::getuid() }));
        fs::set_permissions(&base, fs::Permissions::from_mode(0o777)).expect("chmod");
        assert_eq!(owned_parent(&temp_dir), None);
        fs::remove_dir_all(&temp_dir).expect("remove test folder");
    }
}
