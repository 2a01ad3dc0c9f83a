//! `lspc check --changed-since REV`: the files changed since a git revision, for pull-request
//! checks.
//!
//! "Changed" is git's view: `git diff --name-only REV` (the work tree, staged or not, against REV;
//! `REV...` forms such as `origin/main...HEAD` work as in git) plus untracked files that are not
//! ignored (`git ls-files --others --exclude-standard`). Deleted files are dropped. Paths come
//! back canonical, so they compare equal to [`crate::walk::list_files`]' output.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the changed files could not be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangedError {
    /// `git` could not be run at all.
    GitMissing(String),
    /// The root is not inside a git work tree.
    NotARepository(PathBuf),
    /// git rejected the revision (or another git command failed); `stderr` is git's message.
    Git { command: String, stderr: String },
}

impl fmt::Display for ChangedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChangedError::GitMissing(message) => {
                write!(f, "--changed-since needs git, which cannot run: {message}")
            }
            ChangedError::NotARepository(root) => write!(
                f,
                "--changed-since: {} is not inside a git work tree",
                root.display()
            ),
            ChangedError::Git { command, stderr } => {
                write!(f, "--changed-since: `{command}` failed: {stderr}")
            }
        }
    }
}

impl std::error::Error for ChangedError {}

/// The canonical paths of files changed since `revision` in the git work tree holding `root`,
/// plus untracked, not ignored files; existing regular files only.
///
/// Errors: git missing, `root` outside a work tree, an unknown revision (git's own message).
pub fn changed_files(root: &Path, revision: &str) -> Result<BTreeSet<PathBuf>, ChangedError> {
    if revision.starts_with('-') {
        // Never let a value become a git option.
        return Err(ChangedError::Git {
            command: format!("git diff {revision}"),
            stderr: "a revision cannot start with '-'".to_owned(),
        });
    }
    let toplevel = git(root, &["rev-parse", "--show-toplevel"]).map_err(|error| match error {
        ChangedError::Git { .. } => ChangedError::NotARepository(root.to_path_buf()),
        other => other,
    })?;
    let toplevel = PathBuf::from(String::from_utf8_lossy(&toplevel).trim_end_matches('\n'));
    // `--end-of-options` keeps a revision such as `HEAD` from being read as a path and vice versa.
    let diff = git(
        &toplevel,
        &[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--end-of-options",
            revision,
            "--",
        ],
    )?;
    let untracked = git(
        &toplevel,
        &["ls-files", "--others", "--exclude-standard", "-z"],
    )?;
    let mut files = BTreeSet::new();
    for name in diff
        .split(|&byte| byte == 0)
        .chain(untracked.split(|&byte| byte == 0))
    {
        if name.is_empty() {
            continue;
        }
        let path = toplevel.join(bytes_to_path(name));
        if path.is_file() {
            files.insert(crate::uri::canonical(&path));
        }
    }
    Ok(files)
}

#[cfg(unix)]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// Runs `git -C dir args…` and returns its stdout.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, ChangedError> {
    let command = format!("git {}", args.join(" "));
    let output = crate::bounded_run::output(
        Command::new("git").arg("-C").arg(dir).args(args),
        &command,
        crate::bounded_run::DEFAULT_TIMEOUT,
    )
    .map_err(|error| match error.kind() {
        std::io::ErrorKind::TimedOut => ChangedError::Git {
            command: command.clone(),
            stderr: error.to_string(),
        },
        _ => ChangedError::GitMissing(error.to_string()),
    })?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(ChangedError::Git {
        command,
        stderr: stderr.trim().lines().next().unwrap_or("").to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn run(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn changed_untracked_and_deleted() {
        if Command::new("git").arg("--version").output().is_err() {
            eprintln!("skipped: git is not installed");
            return;
        }
        let dir = std::env::temp_dir().join(format!("lspc-changed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        for name in ["src/a.py", "src/b.py", "src/c.py", "src/gone.py"] {
            std::fs::write(dir.join(name), "x = 1\n").unwrap();
        }
        std::fs::write(dir.join(".gitignore"), "ignored.py\n").unwrap();
        run(&dir, &["init", "-q"]);
        run(&dir, &["add", "."]);
        run(
            &dir,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "one",
            ],
        );
        std::fs::write(dir.join("src/a.py"), "x = 2\n").unwrap();
        std::fs::write(dir.join("src/new.py"), "y = 1\n").unwrap();
        std::fs::write(dir.join("ignored.py"), "z = 1\n").unwrap();
        std::fs::remove_file(dir.join("src/gone.py")).unwrap();
        let files = changed_files(&dir.join("src"), "HEAD").unwrap();
        let root = crate::uri::canonical(&dir);
        let names: Vec<String> = files
            .iter()
            .map(|path| crate::uri::relative_display(path, &root))
            .collect();
        assert_eq!(names, ["src/a.py", "src/new.py"]);

        let error = changed_files(&dir, "no-such-rev").unwrap_err().to_string();
        assert!(
            error.starts_with("--changed-since: `git diff --name-only -z --no-renames --end-of-options no-such-rev --` failed: "),
            "{error}"
        );
        let error = changed_files(&dir, "--output=x").unwrap_err().to_string();
        assert!(error.contains("cannot start with '-'"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);

        let outside = std::env::temp_dir().join(format!("lspc-nogit-{}", std::process::id()));
        std::fs::create_dir_all(&outside).unwrap();
        if changed_files(&outside, "HEAD").is_ok() {
            // /tmp itself may sit inside a work tree on some machines; nothing to assert then.
        } else {
            assert_eq!(
                changed_files(&outside, "HEAD").unwrap_err(),
                ChangedError::NotARepository(outside.clone())
            );
        }
        let _ = std::fs::remove_dir_all(&outside);
    }
}
