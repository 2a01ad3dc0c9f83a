//! Resolving what a configuration names on this machine: a server's command through `PATH` (or
//! relative to its config file) to an executable, and the workspace root (`--root`, else the
//! nearest ancestor with `.git` or `.lsp.json`).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Searches `path_var` (a `PATH` value, `:`-separated) for an executable file named
/// `program`. Empty entries are skipped (they would mean the cwd). Returns the PATH entry
/// joined with `program`, not canonicalised (`/usr/bin/clangd`, not its symlink target).
pub fn find_in_path(program: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if program.is_empty() || program.contains('/') {
        return None;
    }
    std::env::split_paths(path_var?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable_file(candidate))
        .map(|found| std::path::absolute(&found).unwrap_or(found))
}

/// `PATH` searched for many programs in a row (the built-in table: two dozen programs, most of
/// them absent, against every `PATH` entry). Each entry is opened once (`O_PATH`) and each
/// candidate is one `fstatat` relative to it, so the kernel walks an entry's path once rather
/// than once per program, and no candidate path is built unless it is found. The answers are
/// [`find_in_path`]'s.
pub struct PathSearch {
    /// Each non-empty entry, with its descriptor when it could be opened.
    dirs: Vec<(PathBuf, Option<OwnedFd>)>,
}

impl PathSearch {
    /// Opens the entries of `path_var` (a `PATH` value, `:`-separated).
    pub fn new(path_var: Option<&str>) -> PathSearch {
        let dirs = path_var
            .map(|path_var| {
                std::env::split_paths(path_var)
                    .filter(|dir| !dir.as_os_str().is_empty())
                    .map(|dir| {
                        let fd = open_path_dir(&dir);
                        (dir, fd)
                    })
                    .collect()
            })
            .unwrap_or_default();
        PathSearch { dirs }
    }

    /// [`find_in_path`] for `program` on these entries.
    pub fn find(&self, program: &str) -> Option<PathBuf> {
        if program.is_empty() || program.contains('/') {
            return None;
        }
        let name = CString::new(program).ok()?;
        let (dir, _) = self.dirs.iter().find(|(dir, fd)| match fd {
            Some(fd) => executable_at(fd, &name),
            // An entry that cannot be opened (missing, not a directory) has no executables; a
            // rarer failure falls back to the plain check.
            None => is_executable_file(&dir.join(program)),
        })?;
        let found = dir.join(program);
        Some(std::path::absolute(&found).unwrap_or(found))
    }
}

fn open_path_dir(dir: &Path) -> Option<OwnedFd> {
    let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a non-negative result is a descriptor this process now owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `name` in the directory `dir` is a regular file (after following symlinks) with
/// some execute bit set: [`is_executable_file`] relative to a directory descriptor.
fn executable_at(dir: &OwnedFd, name: &CStr) -> bool {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated and `stat` is valid for one `struct stat` write.
    let result = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), stat.as_mut_ptr(), 0) };
    if result != 0 {
        return false;
    }
    // SAFETY: fstatat succeeded, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    stat.st_mode & libc::S_IFMT == libc::S_IFREG && stat.st_mode & 0o111 != 0
}

/// The executable `command` names: with a `/`, that path (relative to `base_dir`, made
/// absolute); otherwise the first match on `path_var`. `None` when it does not exist, is not a
/// file or lacks an execute bit.
pub fn resolve_command(command: &str, base_dir: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    if command.contains('/') {
        let path = base_dir.join(command);
        is_executable_file(&path).then(|| std::path::absolute(&path).unwrap_or(path))
    } else {
        find_in_path(command, path_var)
    }
}

/// A regular file (after following symlinks) with some execute bit set.
pub(super) fn is_executable_file(path: &Path) -> bool {
    let Ok(metadata) = path.metadata() else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

/// The workspace root: `explicit` (relative to `cwd`, canonicalised when it exists), else the
/// nearest ancestor of `cwd` (itself included) holding `.git` or `.lsp.json`, else `cwd`.
pub fn workspace_root(cwd: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(explicit) = explicit {
        let joined = cwd.join(explicit);
        return joined.canonicalize().unwrap_or(joined);
    }
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists() || dir.join(".lsp.json").is_file())
        .unwrap_or(cwd)
        .to_path_buf()
}
