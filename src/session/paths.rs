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

use std::ffi::OsString;
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
        crate::sorting::sort(&mut keys);
        keys.iter().map(|key| SessionPaths::new(dir, key)).collect()
    }
}

fn is_key(key: &str) -> bool {
    key.len() == 16 && key.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// Environment variables left out of the session key: they describe one terminal, shell or
/// invocation (or only this command's frontend: its log level, its session mode) and do not
/// change what a language server computes, so commands from two terminals share a session.
const ENVIRONMENT_NOT_IN_KEY: &[&str] = &[
    "_",
    "COLORTERM",
    "COLUMNS",
    "GPG_TTY",
    "INSIDE_EMACS",
    "LC_TERMINAL",
    "LC_TERMINAL_VERSION",
    "LINES",
    "LSPC_MCP_FAST_PATH",
    "LSPC_MCP_TOKEN",
    "LSPC_NO_HINTS",
    "OLDPWD",
    "PWD",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_LOG_STYLE",
    "SHLVL",
    "SSH_AUTH_SOCK",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
    "STY",
    "TERM",
    "TMUX",
    "TMUX_PANE",
    "VTE_VERSION",
    "WINDOW",
    "WINDOWID",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_ID",
];

/// Prefixes of such variables (terminal emulators' per-window ones, lspc's session settings).
const ENVIRONMENT_PREFIXES_NOT_IN_KEY: &[&str] = &[
    "ALACRITTY_",
    "GNOME_TERMINAL_",
    "ITERM_",
    "KITTY_",
    "KONSOLE_",
    "LSPC_SESSION",
    "TERM_",
    "VSCODE_",
    "WEZTERM_",
    "WT_",
];

/// The environment a session's servers inherit, as part of its key: every variable except the
/// per-terminal ones above, sorted, one `NAME=value` per line. A session runs with the
/// environment of the command that started it, so two commands whose `PATH` (which program a
/// server command names), `HOME`, locale or a server's own variables differ must not share one.
pub fn environment_identity(vars: impl Iterator<Item = (OsString, OsString)>) -> String {
    let mut lines: Vec<String> = vars
        .filter(|(name, _)| in_key(name))
        .map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy()))
        .collect();
    crate::sorting::sort(&mut lines);
    lines.join("\n")
}

/// Whether the variable `name` is part of the session key (see [`environment_identity`]).
fn in_key(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return true;
    };
    !ENVIRONMENT_NOT_IN_KEY.contains(&name)
        && !ENVIRONMENT_PREFIXES_NOT_IN_KEY
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// The digest of the variables [`environment_identity`] keeps, independent of their order: the
/// wrapping sum of each `NAME=value`'s FNV-1a (names are unique, so no two terms cancel), with
/// their count. Equal environments give equal digests without sorting or copying the
/// environment, which a warm one-shot command would otherwise pay on every call.
fn environment_digest(vars: impl Iterator<Item = (OsString, OsString)>) -> (u64, usize) {
    let mut sum: u64 = 0;
    let mut count = 0;
    for (name, value) in vars.filter(|(name, _)| in_key(name)) {
        let mut hasher = super::hash::Fnv1a::default();
        hasher.write_bytes(name.as_encoded_bytes());
        hasher.write_bytes(b"=");
        hasher.write_bytes(value.as_encoded_bytes());
        sum = sum.wrapping_add(hasher.value());
        count += 1;
    }
    (sum, count)
}

/// The session key of `options`: a hash of the wire protocol and lspc version, the canonical
/// workspace root, where the configuration comes from and the engine tuning (restart policy,
/// file-size and open-document limits, timeouts), and this process's environment
/// (the variables [`environment_identity`] keeps, as an order-independent digest: a session's
/// servers inherit the environment of the command that started it).
///
/// "Where the configuration comes from" is [`EngineOptions::config_sources`] when set: each
/// `--config` file and `--plugin-dir` folder (absolute, canonical when it exists), the user config
/// path, `--trust` and `--no-builtin`; not what those files say. So editing a file keeps the key,
/// and the session reloads it (the client's hello check, [`super::hash::config_hash`], or for a
/// one-shot query the session's check of [`super::hash::config_hash_for_extension`]); a command with other
/// flags (another `--config` file) has another key and never reloads this session. Without
/// sources (a configuration built in code) the resolved servers themselves are hashed.
pub fn session_key(options: &EngineOptions) -> String {
    let root = crate::uri::canonical(&options.config.root);
    let configuration = match &options.config_sources {
        Some(sources) => sources_identity(sources),
        None => format!("servers {:?}", options.config.servers),
    };
    // Hashed as it is written, and the environment (most of the identity) as an
    // order-independent digest: nothing is sorted or built as one string.
    use std::fmt::Write;
    let mut hasher = super::hash::Fnv1a::default();
    let _ = write!(
        hasher,
        "lspc {} protocol {}\nroot {}\n{configuration}\nrestart {:?}\nmax_file_size {}\nmax_open_documents {}\nstartup {:?}\nshutdown {:?}\nsettle {:?} {:?}\nenvironment\n",
        env!("CARGO_PKG_VERSION"),
        super::wire::PROTOCOL_VERSION,
        root.display(),
        options.restart,
        options.max_file_size,
        options.max_open_documents,
        options.startup_timeout,
        options.shutdown_timeout,
        options.settle_quiet,
        options.settle_quiet_unversioned,
    );
    let (digest, count) = environment_digest(std::env::vars_os());
    let _ = write!(hasher, "{count} variables, digest {digest:016x}");
    hasher.hex()
}

/// The configuration sources as the key sees them: paths made absolute against the current
/// directory and canonical when they exist, so two commands naming one file from different
/// folders agree.
fn sources_identity(sources: &crate::config::ConfigOptions) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let absolute = |path: &Path| -> PathBuf {
        let joined = cwd.join(path);
        joined.canonicalize().unwrap_or(joined)
    };
    let config_files: Vec<PathBuf> = sources.config_files.iter().map(|p| absolute(p)).collect();
    let plugin_dirs: Vec<PathBuf> = sources.plugin_dirs.iter().map(|p| absolute(p)).collect();
    format!(
        "config_files {config_files:?}\nplugin_dirs {plugin_dirs:?}\nuser_config {:?}\ntrust {}\nbuiltin {}",
        sources.user_config, sources.trust_workspace, sources.builtin
    )
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
        // With sources, the key follows the sources (flags), not what they load.
        let sourced = |servers: Vec<crate::config::ServerConfig>, files: &[&str]| {
            let mut options = EngineOptions::new(crate::config::Config {
                servers,
                ..config("/nonexistent/a")
            });
            let mut sources = crate::config::ConfigOptions::new(PathBuf::from("/nonexistent/a"));
            sources.config_files = files.iter().map(PathBuf::from).collect();
            options.config_sources = Some(sources);
            options
        };
        let file = std::env::temp_dir().join(format!("lspc-key-{}.json", std::process::id()));
        fs::write(
            &file,
            r#"{"x": {"command": "sh", "extensionToLanguage": {".x": "x"}}}"#,
        )
        .unwrap();
        let mut file_options = crate::config::ConfigOptions::new(PathBuf::from("/nonexistent/a"));
        file_options.config_files = vec![file.clone()];
        file_options.builtin = false;
        let loaded = crate::config::load(&file_options);
        fs::remove_file(&file).unwrap();
        assert_eq!(loaded.servers.len(), 1, "{:?}", loaded.errors);
        let empty = crate::config::Config {
            servers: Vec::new(),
            ..config("/nonexistent/a")
        };
        assert_ne!(
            crate::session::hash::config_hash(&loaded),
            crate::session::hash::config_hash(&empty)
        );
        assert_eq!(crate::session::hash::config_hash(&empty).len(), 16);
        let loaded = loaded.servers;
        let one = session_key(&sourced(Vec::new(), &["/nonexistent/one.json"]));
        assert_eq!(
            one,
            session_key(&sourced(loaded, &["/nonexistent/one.json"])),
            "an edited file keeps the key"
        );
        assert_ne!(
            one,
            session_key(&sourced(Vec::new(), &["/nonexistent/two.json"])),
            "another --config file is another session"
        );
    }

    #[test]
    fn the_environment_is_part_of_the_key_except_per_terminal_variables() {
        let identity = |vars: &[(&str, &str)]| {
            environment_identity(
                vars.iter()
                    .map(|(name, value)| (OsString::from(name), OsString::from(value))),
            )
        };
        let base = identity(&[("PATH", "/usr/bin"), ("HOME", "/home/a")]);
        assert_eq!(base, "HOME=/home/a\nPATH=/usr/bin");
        assert_eq!(
            base,
            identity(&[
                ("HOME", "/home/a"),
                ("PWD", "/tmp"),
                ("RUST_LOG", "debug"),
                ("LSPC_SESSION", "always"),
                ("LSPC_SESSION_IDLE", "20s"),
                ("TERM_SESSION_ID", "w1"),
                ("PATH", "/usr/bin"),
            ])
        );
        assert_ne!(base, identity(&[("PATH", "/opt/bin"), ("HOME", "/home/a")]));
        // The key's digest of the same variables: order-independent, blind to per-terminal
        // variables, and changed by any kept name or value.
        let digest = |vars: &[(&str, &str)]| {
            environment_digest(
                vars.iter()
                    .map(|(name, value)| (OsString::from(name), OsString::from(value))),
            )
        };
        let base_digest = digest(&[("PATH", "/usr/bin"), ("HOME", "/home/a")]);
        assert_eq!(base_digest.1, 2);
        assert_eq!(
            base_digest,
            digest(&[("TERM", "xterm"), ("HOME", "/home/a"), ("PATH", "/usr/bin")])
        );
        assert_ne!(
            base_digest,
            digest(&[("PATH", "/opt/bin"), ("HOME", "/home/a")])
        );
        assert_ne!(
            base_digest,
            digest(&[("PATH", "/usr/bin"), ("HOME", "/home/b")])
        );
        assert_ne!(base_digest, digest(&[("PATH", "/usr/bin")]));
        assert_ne!(
            base_digest,
            digest(&[("PATH", "/usr/bin"), ("HOME", "/home/a"), ("X", "")])
        );
        assert_ne!(
            base,
            identity(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/home/a"),
                ("FIXTURE_MODE", "x")
            ])
        );
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
