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
//! 0700, where `<temp dir>` is lspc's own (`TMPDIR`, else `/tmp`; it must be absolute): the file
//! system the servers would have written to anyway (`$XDG_RUNTIME_DIR` is a small tmpfs, and
//! rust-analyzer copies proc-macro libraries into its temp dir). The name is for people and
//! uniqueness; who still uses a folder is told by a lock, not by the name.
//!
//! Invariants:
//! - Only servers known to leave folders behind get one ([`LEAVES_FOLDERS_IN_TMP`], matched by
//!   the file name of the command or of an argument, so `npx typescript-language-server` and
//!   `node …/typescript-language-server/lib/cli.mjs` count). Every other server keeps the
//!   inherited `TMPDIR`: some share state through it across processes and runs (`gopls
//!   -remote=auto` puts its daemon's socket there; pyrefly its bundled typeshed, which its
//!   definitions point into), and lspc does not know what an unknown server keeps there.
//! - A server configured with `TMPDIR`, `TMP` or `TEMP` keeps what it was given.
//! - Each folder is `flock`ed by the lspc process that made it (a close-on-exec descriptor, so
//!   no server holds it) for as long as the server may run. Only folders this module created are
//!   ever removed: the server's own once its process group is gone, and folders nobody holds a
//!   lock on (their lspc was SIGKILLed) that are at least [`SWEEP_MIN_AGE`] old, swept by the
//!   first server start of each lspc process. A lock tells a live owner across PID namespaces
//!   (containers sharing `/tmp`), where a pid from `/proc` would not. Entries whose names do not
//!   parse as ours are left alone.
//! - `lspc-<uid>` and `tmp` are each created alone (not recursively) and used only if they are
//!   real folders (no symlink) owned by the user with no access for group or others; otherwise
//!   the server keeps the inherited `TMPDIR`.
//! - Best effort: an I/O error is logged at debug level and the server starts as before.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;
use std::time::Duration;

/// Servers (by the file name of their command, or of one of its arguments) that leave folders in
/// the temp dir: typescript-language-server makes two `<32 hex digits>/` folders per start for
/// tsserver's cancellation pipes and never removes them, however it exits; pyright and
/// basedpyright leave `pyright-<pid>-<random>/` when they are killed, rust-analyzer its
/// `proc-macro-srv*/` copies. None of them keeps anything there across runs.
pub const LEAVES_FOLDERS_IN_TMP: &[&str] = &[
    "typescript-language-server",
    "pyright-langserver",
    "basedpyright-langserver",
    "rust-analyzer",
];

/// How old a folder nobody holds a lock on must be before a sweep removes it: covers the
/// moment between its `mkdir` and its owner's `flock`.
pub const SWEEP_MIN_AGE: Duration = Duration::from_secs(10);

/// Whether the server started as `command args` with the added environment `env` gets a
/// private `TMPDIR` (see the module doc).
pub fn wanted(command: &Path, args: &[String], env: &[(String, String)]) -> bool {
    let leaves_folders = std::iter::once(command)
        .chain(args.iter().map(Path::new))
        .any(|path| {
            path.components().any(|component| {
                component
                    .as_os_str()
                    .to_str()
                    .is_some_and(|name| LEAVES_FOLDERS_IN_TMP.contains(&name))
            })
        });
    let configured = env
        .iter()
        .any(|(key, _)| matches!(key.as_str(), "TMPDIR" | "TMP" | "TEMP"));
    leaves_folders && !configured
}

/// The server's private temporary folder, locked while this value lives;
/// [`PrivateTmp::remove`] deletes it with its contents.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
    /// The folder opened (close-on-exec) and `flock`ed: a sweep leaves it alone while held.
    _lock: fs::File,
}

impl PrivateTmp {
    /// Creates a fresh folder for server `server_name` (the first call of the process also sweeps
    /// folders nobody uses any more). `None` when it cannot be made safely, lspc's temp dir is
    /// not absolute, or the path is not UTF-8.
    pub fn create(server_name: &str) -> Option<PrivateTmp> {
        static SWEEP: Once = Once::new();
        static N_CREATED: AtomicU32 = AtomicU32::new(0);
        let temp_dir = std::env::temp_dir();
        if !temp_dir.is_absolute() {
            // `TMPDIR=` or `TMPDIR=.`: a relative path would mean another folder in the server's
            // working directory.
            return None;
        }
        let parent = owned_parent(&temp_dir)?;
        let owner = own_process_key()?;
        SWEEP.call_once(|| sweep(&parent, SWEEP_MIN_AGE));
        for _ in 0..8 {
            let n = N_CREATED.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!("{owner}-{n}-{}", safe_name(server_name)));
            // The server's environment is text (`SpawnSpec::env`): a temp dir whose name is not
            // UTF-8 cannot be passed exactly.
            path.to_str()?;
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {}
                // The same pid and start time in another PID namespace: take the next number.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => {
                    log::debug!("cannot create {}: {error}", path.display());
                    return None;
                }
            }
            return match lock(&path, false) {
                Some(lock) => Some(PrivateTmp { path, _lock: lock }),
                None => {
                    let _ = fs::remove_dir(&path);
                    None
                }
            };
        }
        None
    }

    /// The folder, for the server's `TMPDIR`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the folder and everything in it, then releases its lock. Call only once no process
    /// of the server runs. A member of a SIGKILLed group may still be finishing a file operation
    /// when this runs, so a failed removal is tried twice more, 50 ms apart.
    pub fn remove(self) {
        for attempt in 0..3 {
            match fs::remove_dir_all(&self.path) {
                Ok(()) => return,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
                Err(error) if attempt == 2 => {
                    log::debug!("cannot remove {}: {error}", self.path.display());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

/// Opens `folder` close-on-exec and takes an exclusive `flock` on it without waiting. `None`
/// when it cannot be opened or (with `quiet`, for a sweep) someone else holds the lock.
fn lock(folder: &Path, quiet: bool) -> Option<fs::File> {
    let file = match fs::File::open(folder) {
        Ok(file) => file,
        Err(error) => {
            if !quiet {
                log::debug!("cannot open {}: {error}", folder.display());
            }
            return None;
        }
    };
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if !locked && !quiet {
        log::debug!(
            "cannot lock {}: {}",
            folder.display(),
            std::io::Error::last_os_error()
        );
    }
    locked.then_some(file)
}

/// `<temp dir>/lspc-<uid>/tmp`, each level created alone with mode 0700 where missing, if both
/// are real folders of this user that nobody else may enter.
fn owned_parent(temp_dir: &Path) -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let base = temp_dir.join(format!("lspc-{uid}"));
    let parent = base.join("tmp");
    for folder in [&base, &parent] {
        // Not recursive: a level is checked before anything is made inside it, so a symlink
        // planted as `lspc-<uid>` does not get a `tmp` made wherever it points.
        match fs::DirBuilder::new().mode(0o700).create(folder) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                log::debug!("cannot create {}: {error}", folder.display());
                return None;
            }
        }
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
    parse_start_time(&stat)
}

/// The start time (field 22) in a `/proc/<pid>/stat` line; the command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
fn parse_start_time(stat: &str) -> Option<u64> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    // Field 3 is the first after the name, so field 22 is the 20th after it.
    fields.nth(19)?.parse().ok()
}

/// Whether `name` has the shape of a folder this module makes: `<pid>-<start>-<n>-<server>`.
fn is_ours(name: &str) -> bool {
    let mut fields = name.splitn(4, '-');
    fields.next().is_some_and(|pid| pid.parse::<u32>().is_ok())
        && fields
            .next()
            .is_some_and(|start| start.parse::<u64>().is_ok())
        && fields.next().is_some_and(|n| n.parse::<u32>().is_ok())
        && fields.next().is_some_and(|server| !server.is_empty())
}

/// Removes the folders of ours in `parent` that are at least `min_age` old and that nobody holds
/// a lock on (their lspc process is gone). The lock is held while the folder is removed, so two
/// sweeps never remove one folder at once.
fn sweep(parent: &Path, min_age: Duration) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if !is_ours(name) || !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let old_enough = entry
            .metadata()
            .ok()
            .and_then(|metadata| metadata.modified().ok())
            // A time a little ahead of the clock (coarse file-system timestamps) is age zero.
            .map(|modified| modified.elapsed().unwrap_or(Duration::ZERO))
            .is_some_and(|age| age >= min_age);
        if !old_enough {
            continue;
        }
        let Some(_lock) = lock(&entry.path(), true) else {
            continue;
        };
        log::debug!("removing {name}: no lspc process uses it any more");
        if let Err(error) = fs::remove_dir_all(entry.path()) {
            log::debug!("cannot remove {}: {error}", entry.path().display());
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
    fn stat_lines_give_the_start_time() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                    1000 10 18446744073709551615";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time("4242 (x) S 1"), None);
        assert!(start_time(std::process::id()).is_some());
    }

    /// Only servers known to leave folders get one, matched by the command or an argument, and
    /// a configured `TMPDIR`, `TMP` or `TEMP` is kept.
    #[test]
    fn only_servers_that_leave_folders_get_one() {
        let none: [(String, String); 0] = [];
        let args = |list: &[&str]| list.iter().map(|arg| arg.to_string()).collect::<Vec<_>>();
        let tsls = Path::new("typescript-language-server");
        assert!(wanted(tsls, &args(&["--stdio"]), &none));
        assert!(wanted(
            Path::new("/usr/bin/pyright-langserver"),
            &args(&["--stdio"]),
            &none
        ));
        assert!(wanted(
            Path::new("npx"),
            &args(&["typescript-language-server", "--stdio"]),
            &none
        ));
        assert!(wanted(
            Path::new("node"),
            &args(&["/opt/typescript-language-server/lib/cli.mjs", "--stdio"]),
            &none
        ));
        assert!(!wanted(Path::new("gopls"), &args(&["-remote=auto"]), &none));
        assert!(!wanted(Path::new("uvx"), &args(&["pyrefly", "lsp"]), &none));
        assert!(!wanted(Path::new("clangd"), &[], &none));
        for key in ["TMPDIR", "TMP", "TEMP"] {
            let env = [(key.to_owned(), "/var/tmp".to_owned())];
            assert!(!wanted(tsls, &[], &env), "{key}");
        }
    }

    #[test]
    fn folder_names_of_ours_are_recognised() {
        assert!(is_ours("812-99031-0-pyright"));
        assert!(is_ours("812-99031-3-a-b"));
        assert!(!is_ours("812-99031-pyright"));
        assert!(!is_ours("812-99031-0"));
        assert!(!is_ours("812-99031-0-"));
        assert!(!is_ours("0123456789abcdef0123456789abcdef"));
        assert_eq!(
            safe_name("typescript-language-server"),
            "typescript_language_server"
        );
    }

    /// A sweep removes only folders of ours that nobody holds a lock on and that are old enough:
    /// a locked one (a live lspc, in this PID namespace or another), a fresh one and names this
    /// module does not write stay.
    #[test]
    fn a_sweep_removes_only_unlocked_folders_of_ours() {
        let parent =
            std::env::temp_dir().join(format!("lspc-private-tmp-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&parent);
        let names = [
            "10-500-0-pyright",
            "10-500-1-ruff",
            "11-600-0-pyright",
            "other-folder",
            "10-500-x-not-ours",
        ];
        for name in names {
            fs::create_dir_all(parent.join(name).join("inside")).expect("create test folder");
        }
        fs::write(parent.join("13-800-0-a-file"), "").expect("create test file");
        let held = lock(&parent.join("11-600-0-pyright"), false).expect("lock a folder");
        // Nothing is old enough yet.
        sweep(&parent, Duration::from_secs(3600));
        assert_eq!(entries(&parent).len(), 6);
        sweep(&parent, Duration::ZERO);
        assert_eq!(
            entries(&parent),
            [
                "10-500-x-not-ours",
                "11-600-0-pyright",
                "13-800-0-a-file",
                "other-folder"
            ]
        );
        drop(held);
        sweep(&parent, Duration::ZERO);
        assert_eq!(
            entries(&parent),
            ["10-500-x-not-ours", "13-800-0-a-file", "other-folder"]
        );
        fs::remove_dir_all(&parent).expect("remove test folder");
    }

    /// A folder made by [`PrivateTmp::create`] is locked until it is removed.
    #[test]
    fn a_created_folder_is_locked_until_removed() {
        let tmp = PrivateTmp::create("lock test").expect("create");
        assert!(tmp.path().is_dir());
        assert!(lock(tmp.path(), true).is_none(), "held by its creator");
        let path = tmp.path().to_path_buf();
        tmp.remove();
        assert!(!path.exists());
    }

    fn entries(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(folder)
            .expect("read test folder")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .into_string()
                    .expect("utf-8")
            })
            .collect();
        names.sort();
        names
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
