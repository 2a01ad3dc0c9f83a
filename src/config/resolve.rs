//! Resolving what a configuration names on this machine: a server's command through `PATH` (or
//! relative to its config file) to an executable, and the workspace root (`--root`, else the
//! nearest ancestor with `.git` or `.lsp.json`).

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
