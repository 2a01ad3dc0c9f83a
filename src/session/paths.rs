//! Where sessions live and how they are named: the per-user runtime directory (checked for
//! ownership and mode before use), the session key, the socket/lock/log files of one session, the
//! start lock and the peer-uid check.
//!
//! Invariants:
//! - The directory is `$XDG_RUNTIME_DIR/lspc/`, else `<temp>/lspc-<uid>/`; it is a real directory
//!   (not a symlink) owned by the effective uid with no group or other permission bits, or it is
//!   refused with an error naming it.
//! - A session's files are `<key>.sock` (mode 0600), `<key>.lock` and `<key>.log` in that
//!   directory; the key is 16 lowercase hex digits.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::engine::EngineOptions;

/// Why the session directory or files cannot be used. Messages name the path.
#[derive(Debug)]
pub enum PathError {
    /// The directory is not safe: wrong owner, group/other access, or not a real directory.
    Insecure(String),
    Io {
        path: PathBuf,
        error: io::Error,
    },
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::Insecure(message) => f.write_str(message),
            PathError::Io { path, error } => write!(f, "cannot use {}: {error}", path.display()),
        }
    }
}

/// The effective uid of this process.
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The directory candidates, most preferred first: `$XDG_RUNTIME_DIR/lspc` when that variable
/// names an existing directory, else `<temp>/lspc-<uid>`.
fn dir_candidate() -> PathBuf {
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|value| !value.is_empty()) {
        let runtime = PathBuf::from(runtime);
        if runtime.is_dir() {
            return runtime.join("lspc");
        }
    }
    std::env::temp_dir().join(format!("lspc-{}", current_uid()))
}

/// The session directory. With `create`, a missing directory is made with mode 0700; without,
/// a missing directory is `Ok(None)` (no session can run). An existing one is checked with
/// `lstat`: a directory, owned by this uid, no group or other permission bits.
pub fn runtime_dir(create: bool) -> Result<Option<PathBuf>, PathError> {
    let dir = dir_candidate();
    match fs::symlink_metadata(&dir) {
        Ok(metadata) => check_dir(&dir, &metadata).map(|()| Some(dir)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if !create {
                return Ok(None);
            }
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {}
                // Another lspc made it in between; it is checked below like any other.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(PathError::Io { path: dir, error }),
            }
            let metadata = fs::symlink_metadata(&dir).map_err(|error| PathError::Io {
                path: dir.clone(),
                error,
            })?;
            check_dir(&dir, &metadata).map(|()| Some(dir))
        }
        Err(error) => Err(PathError::Io { path: dir, error }),
    }
}

fn check_dir(dir: &Path, metadata: &fs::Metadata) -> Result<(), PathError> {
    if !metadata.file_type().is_dir() {
        return Err(PathError::Insecure(format!(
            "session directory {} is not a directory (a symlink or a file); refusing to use it",
            dir.display()
        )));
    }
    let uid = current_uid();
    if metadata.uid() != uid {
        return Err(PathError::Insecure(format!(
            "session directory {} is owned by uid {}, not by uid {uid}; refusing to use it",
            dir.display(),
            metadata.uid()
        )));
    }
    if metadata.mode() & 0o077 != 0 {
        return Err(PathError::Insecure(format!(
            "session directory {} has mode {:o}; it must be accessible by its owner only (0700)",
            dir.display(),
            metadata.mode() & 0o7777
        )));
    }
    Ok(())
}

/// One session's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPaths {
    pub key: String,
    pub socket: PathBuf,
    pub lock: PathBuf,
    pub log: PathBuf,
}

impl SessionPaths {
    pub fn new(dir: &Path, key: &str) -> SessionPaths {
        SessionPaths {
            key: key.to_owned(),
            socket: dir.join(format!("{key}.sock")),
            lock: dir.join(format!("{key}.lock")),
            log: dir.join(format!("{key}.log")),
        }
    }

    /// The sessions whose socket exists in `dir`, in key order.
    pub fn list(dir: &Path) -> Vec<SessionPaths> {
        let Ok(entries) = fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut keys: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let key = name.strip_suffix(".sock")?;
                is_key(key).then(|| key.to_owned())
            })
            .collect();
        keys.sort();
        keys.iter().map(|key| SessionPaths::new(dir, key)).collect()
    }
}

fn is_key(key: &str) -> bool {
    key.len() == 16 && key.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// 64-bit FNV-1a: stable across builds and platforms (std's hasher makes no such promise).
fn fnv1a(bytes: &[u8], mut hash: u64) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The session key of `options`: a hash of the wire protocol and lspc version, the canonical
/// workspace root, every configured server as resolved (command, arguments, environment,
/// settings, extensions...) and the engine tuning (restart policy, file-size and open-document
/// limits, timeouts). Two commands share a session exactly when these agree.
pub fn session_key(options: &EngineOptions) -> String {
    let root = crate::uri::canonical(&options.config.root);
    // Hashed as it is formatted: the identity text (about 1 KiB per configured server) is
    // never built as a string.
    let mut hasher = Fnv1aWriter(0xcbf2_9ce4_8422_2325);
    let _ = write!(
        hasher,
        "lspc {} protocol {}\nroot {}\nservers {:?}\nrestart {:?}\nmax_file_size {}\nmax_open_documents {}\nstartup {:?}\nshutdown {:?}\nsettle {:?} {:?}",
        env!("CARGO_PKG_VERSION"),
        super::wire::PROTOCOL_VERSION,
        root.display(),
        options.config.servers,
        options.restart,
        options.max_file_size,
        options.max_open_documents,
        options.startup_timeout,
        options.shutdown_timeout,
        options.settle_quiet,
        options.settle_quiet_unversioned,
    );
    format!("{:016x}", hasher.0)
}

/// [`fnv1a`] over everything written to it.
struct Fnv1aWriter(u64);

impl std::fmt::Write for Fnv1aWriter {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0 = fnv1a(text.as_bytes(), self.0);
        Ok(())
    }
}

/// An exclusive `flock` on a session's lock file, held until dropped. Two lspc processes racing
/// to start one session serialise on it, so exactly one starts it.
pub struct StartLock {
    _file: File,
}

impl StartLock {
    /// Blocks until the lock is held.
    pub fn acquire(path: &Path) -> Result<StartLock, PathError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .map_err(|error| PathError::Io {
                path: path.to_path_buf(),
                error,
            })?;
        loop {
            // SAFETY: the descriptor is open for the lifetime of `file`.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(StartLock { _file: file });
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(PathError::Io {
                    path: path.to_path_buf(),
                    error,
                });
            }
        }
    }
}

/// The uid of the process at the other end of a connected Unix socket (`SO_PEERCRED`).
pub fn peer_uid(socket: &impl AsRawFd) -> io::Result<u32> {
    let mut credentials = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `credentials` and `length` are valid for writes of the sizes given.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut credentials as *mut libc::ucred).cast(),
            &mut length,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(credentials.uid)
}

/// Resident memory of a process in KiB (`VmRSS` in `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_root_and_configuration() {
        let config = |root: &str| crate::config::Config {
            root: PathBuf::from(root),
            servers: Vec::new(),
            errors: Vec::new(),
            conflicts: Vec::new(),
            notes: Vec::new(),
            skipped: Vec::new(),
        };
        let a = session_key(&EngineOptions::new(config("/nonexistent/a")));
        let b = session_key(&EngineOptions::new(config("/nonexistent/b")));
        assert_eq!(a.len(), 16);
        assert!(is_key(&a));
        assert_ne!(a, b);
        assert_eq!(
            a,
            session_key(&EngineOptions::new(config("/nonexistent/a")))
        );
        let mut tuned = EngineOptions::new(config("/nonexistent/a"));
        tuned.max_file_size = 1;
        assert_ne!(a, session_key(&tuned));
    }

    #[test]
    fn the_streaming_hash_equals_the_hash_of_the_whole_text() {
        let (root, servers) = (Path::new("/a b"), ["x", "é\"q"]);
        let mut hasher = Fnv1aWriter(0xcbf2_9ce4_8422_2325);
        let _ = write!(hasher, "root {}\nservers {servers:?}", root.display());
        let text = format!("root {}\nservers {servers:?}", root.display());
        assert_eq!(hasher.0, fnv1a(text.as_bytes(), 0xcbf2_9ce4_8422_2325));
        // The FNV-1a test vector for "a".
        assert_eq!(fnv1a(b"a", 0xcbf2_9ce4_8422_2325), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn insecure_directories_are_refused() {
        let base = std::env::temp_dir().join(format!("lspc-paths-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        let open = base.join("open");
        fs::DirBuilder::new().mode(0o755).create(&open).unwrap();
        let metadata = fs::symlink_metadata(&open).unwrap();
        let error = check_dir(&open, &metadata).unwrap_err().to_string();
        assert!(error.contains("has mode 755"), "{error}");
        let closed = base.join("closed");
        fs::DirBuilder::new().mode(0o700).create(&closed).unwrap();
        assert!(check_dir(&closed, &fs::symlink_metadata(&closed).unwrap()).is_ok());
        let link = base.join("link");
        std::os::unix::fs::symlink(&closed, &link).unwrap();
        let error = check_dir(&link, &fs::symlink_metadata(&link).unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.contains("is not a directory"), "{error}");
        fs::remove_dir_all(&base).unwrap();
    }
}
