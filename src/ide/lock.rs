//! The IDE lock file `lspc ide` advertises itself with: `<config>/ide/<port>.lock`, where
//! `<config>` is `$CLAUDE_CONFIG_DIR` when set and not empty, else `~/.claude` (the directory the
//! agent scans, seed 000 "Lock-file discovery"; the same rule as coder/claudecode.nvim's
//! `lockfile.lua`).
//!
//! Invariants:
//! - The `ide` directory is mode `0700` (tightened when it already existed) and the lock file
//!   `0600`: the file holds the connection's secret.
//! - The file appears complete or not at all: it is written to a temporary file created with
//!   `O_EXCL` in the same directory, then renamed into place.
//! - A [`LockFile`] removes its file when dropped, so every return path of `lspc ide` removes it
//!   (signals are turned into events and end in a return; only SIGKILL leaves a stale file, which
//!   [`remove_stale_locks`] deletes at the next start).
//! - The auth token is 128 bits from `/dev/urandom` as 32 lowercase hex digits; it is never logged.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The IDE name lspc advertises.
pub const IDE_NAME: &str = "lspc";

/// The JSON lock record (the shape VS Code's extension and claudecode.nvim write; `port` comes
/// from the file name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockRecord {
    pub pid: u32,
    /// Absolute workspace folders, as the agent matches its cwd against them.
    pub workspace_folders: Vec<String>,
    pub ide_name: String,
    /// `"ws"` for WebSocket (anything else is SSE to the agent).
    pub transport: String,
    pub running_in_windows: bool,
    pub auth_token: String,
}

/// The Claude configuration directory: `$CLAUDE_CONFIG_DIR` when set and not empty, else
/// `$HOME/.claude`. `None` when neither is known.
pub fn config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
    Some(PathBuf::from(home).join(".claude"))
}

/// `<config>/ide`, where IDE lock files live.
pub fn lock_dir() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("ide"))
}

/// A new auth token: 16 bytes from `/dev/urandom`, hex-encoded (32 lowercase characters).
///
/// Errors: `/dev/urandom` cannot be read (no weaker fallback: a guessable token would let any
/// local process drive the editor).
pub fn new_auth_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether a process with this id exists (`kill(pid, 0)`; `EPERM` means it exists but belongs to
/// someone else). Pid 0 and ids beyond `i32` are never alive.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A written lock file; dropping it removes the file.
#[derive(Debug)]
pub struct LockFile {
    path: PathBuf,
}

impl LockFile {
    /// Write `<dir>/<port>.lock` holding `record` (directory `0700`, file `0600`, atomically).
    ///
    /// Errors: the directory cannot be created or tightened, or the file cannot be written.
    pub fn write(dir: &Path, port: u16, record: &LockRecord) -> io::Result<LockFile> {
        fs::create_dir_all(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        let path = dir.join(format!("{port}.lock"));
        let temporary = dir.join(format!(
            ".{port}.lock.tmp.{}.{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos())
                .unwrap_or(0)
        ));
        let json = serde_json::to_string(record).map_err(io::Error::other)?;
        let written = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temporary)?;
            file.write_all(json.as_bytes())?;
            file.sync_all()?;
            fs::rename(&temporary, &path)
        })();
        if let Err(error) = written {
            let _ = fs::remove_file(&temporary);
            return Err(error);
        }
        Ok(LockFile { path })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        match fs::remove_file(&self.path) {
            Ok(()) => log::info!("removed {}", self.path.display()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => log::warn!("cannot remove {}: {error}", self.path.display()),
        }
    }
}

/// Delete the lock files in `dir` that lspc wrote (`ideName` "lspc") and whose pid is no longer
/// running: what a SIGKILLed `lspc ide` left behind. Other IDEs' files are left to their owners
/// and to the agent. Returns the files removed.
pub fn remove_stale_locks(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|extension| extension.to_str()) != Some("lock") {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let ours = record.get("ideName").and_then(|name| name.as_str()) == Some(IDE_NAME);
        let pid = record.get("pid").and_then(|pid| pid.as_u64());
        let dead = pid.is_some_and(|pid| !u32::try_from(pid).is_ok_and(pid_alive));
        if ours && dead && fs::remove_file(&path).is_ok() {
            log::info!("removed the stale lock file {}", path.display());
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> LockRecord {
        LockRecord {
            pid: std::process::id(),
            workspace_folders: vec!["/w".to_owned()],
            ide_name: IDE_NAME.to_owned(),
            transport: "ws".to_owned(),
            running_in_windows: false,
            auth_token: "00112233445566778899aabbccddeeff".to_owned(),
        }
    }

    #[test]
    fn tokens_are_32_lowercase_hex_digits_and_differ() {
        let first = new_auth_token().unwrap();
        let second = new_auth_token().unwrap();
        assert_eq!(first.len(), 32);
        assert!(first
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(first, second);
    }

    #[test]
    fn the_lock_file_is_private_and_removed_on_drop() {
        let dir = std::env::temp_dir().join(format!("lspc-lock-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let lock = LockFile::write(&dir, 4242, &record()).unwrap();
        assert_eq!(lock.path(), dir.join("4242.lock"));
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(lock.path()), 0o600);
        let text = fs::read_to_string(lock.path()).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"pid\":{},\"workspaceFolders\":[\"/w\"],\"ideName\":\"lspc\",\"transport\":\"ws\",\"runningInWindows\":false,\"authToken\":\"00112233445566778899aabbccddeeff\"}}",
                std::process::id()
            )
        );
        // Only the lock file is left in the folder (the temporary was renamed).
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let path = lock.path().to_path_buf();
        drop(lock);
        assert!(!path.exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_our_dead_locks_are_stale() {
        let dir = std::env::temp_dir().join(format!("lspc-stale-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let dead_pid = 0x3fff_fff0_u32; // beyond pid_max
        let write = |name: &str, ide: &str, pid: u32| {
            fs::write(
                dir.join(name),
                format!("{{\"pid\":{pid},\"ideName\":\"{ide}\",\"workspaceFolders\":[]}}"),
            )
            .unwrap()
        };
        write("1.lock", "lspc", dead_pid);
        write("2.lock", "lspc", std::process::id());
        write("3.lock", "Visual Studio Code", dead_pid);
        fs::write(dir.join("4.lock"), "/some/folder\n").unwrap();
        assert_eq!(remove_stale_locks(&dir), vec![dir.join("1.lock")]);
        let mut left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["2.lock", "3.lock", "4.lock"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pids() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
        assert!(!pid_alive(0x3fff_fff0));
    }
}
