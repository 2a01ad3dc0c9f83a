//! What every MCP tool call shares (issue 4, seed 004): the call's [`ToolContext`], its failure
//! type ([`ToolFailure`], rendered as an `isError` result), resolving a file argument inside the
//! root, and cleaning a result's JSON (nulls dropped, paths relative to the root). Arguments are
//! read and checked by [`crate::operation::Operation::from_arguments`], as batch lines are.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::doorbell::LoopSender;
use crate::engine::Op;
pub use crate::operation::execute::{clean_json, display_path};

/// Everything a tool handler needs; cheap to clone onto a worker thread.
#[derive(Clone)]
pub struct ToolContext {
    pub op_sender: LoopSender<Op>,
    /// Canonical absolute workspace root.
    pub root: PathBuf,
    /// How long one query may wait for a server (start-up included).
    pub timeout: Duration,
    /// The files this session has already waited on once (hover and signature help wait for
    /// a file's first analysis only; see [`crate::query::AnalysedFiles`]).
    pub analysed_files: crate::query::AnalysedFiles,
    /// Whose passive-diagnostics queue `newDiagnostics` drains: `None` for the engine's shared
    /// one (stdio, stateless requests), an HTTP session's id for its own (issue 14).
    pub passive_consumer: Option<String>,
    /// Install hints for the session ([`crate::install_hints`]), shown in `lsp://servers`.
    pub install_hints: std::sync::Arc<Vec<String>>,
    /// The errors of the configuration in force ([`crate::config::ConfigError`] as text),
    /// shown in `lsp://servers` (`configErrors`) and in `initialize`'s `instructions`; a
    /// reload that is applied (one without new errors) replaces them.
    pub config_errors: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// True until a tool result has carried the configuration errors and install hints in its
    /// `notes` (once per session).
    pub notes_pending: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// When each passive queue was last drained, to skip a drain that would deliver nothing.
    pub passive_drains: PassiveDrains,
    /// Whether the call this context serves was cancelled: the tools that write check it before
    /// writing ([`crate::edit::commands::EditCommands::cancellable`]). `None` outside a call.
    pub cancelled: Option<crate::edit::commands::CancelCheck>,
}

impl ToolContext {
    /// The configuration errors in force, each as a note for an agent.
    pub fn config_error_notes(&self) -> Vec<String> {
        self.config_errors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .map(|error| format!("configuration error, the entry is not used: {error}"))
            .collect()
    }
}

/// The engine's [`crate::engine::PassiveCounter`] (when it gave one) and, per passive queue
/// (`None`: the shared one), the count read just before that queue's last drain. A drain is
/// needed only when the count moved since (issue 15: one op round trip less per tool call).
#[derive(Clone, Default)]
pub struct PassiveDrains {
    counter: Option<crate::engine::PassiveCounter>,
    drained_at: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<Option<String>, u64>>>,
}

impl PassiveDrains {
    /// Ask the engine for its counter ([`Op::PassiveCounter`]); without one (a session proxy,
    /// an engine gone) every drain is made.
    pub fn new(op_sender: &LoopSender<Op>) -> PassiveDrains {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        let counter = op_sender
            .send(Op::PassiveCounter { reply })
            .ok()
            .and_then(|()| receiver.recv().ok());
        PassiveDrains {
            counter,
            drained_at: Default::default(),
        }
    }

    /// Whether [`PassiveDrains::drain`] of `consumer`'s queue would ask the engine (something
    /// was queued since that queue's last drain began, or there is no counter): a thread that
    /// must not wait for the engine's loop hands the result's rendering to one that may.
    pub fn due(&self, consumer: Option<&str>) -> bool {
        let Some(counter) = &self.counter else {
            return true;
        };
        let queued = counter.queued();
        let drained_at = self
            .drained_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Keyed by `Option<String>`: look the shared queue up without allocating.
        let mark = match consumer {
            None => drained_at.get(&None),
            Some(consumer) => drained_at.get(&Some(consumer.to_owned())),
        };
        mark != Some(&queued)
    }

    /// [`crate::engine::drain_passive`] of `consumer`'s queue, skipped (`None`) when nothing
    /// was queued anywhere since that queue's last drain began, unless a `shown_file` is to be
    /// marked delivered (a skipped drain would leave what an earlier drain capped to come back
    /// as new).
    pub fn drain(
        &self,
        op_sender: &LoopSender<Op>,
        consumer: Option<&str>,
        shown_file: Option<&std::path::Path>,
    ) -> Option<crate::diagnostics::DrainedBatch> {
        let Some(counter) = &self.counter else {
            return crate::engine::drain_passive(op_sender, consumer, shown_file);
        };
        let key = consumer.map(str::to_owned);
        let queued = counter.queued();
        let lock = || {
            self.drained_at
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if shown_file.is_none() && lock().get(&key) == Some(&queued) {
            return None;
        }
        let batch = crate::engine::drain_passive(op_sender, consumer, shown_file);
        // A lower mark written by a concurrent call only makes a later drain happen anyway.
        lock().insert(key, queued);
        batch
    }
}

/// A failed call, rendered as an `isError` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure(pub String);

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolFailure {}

/// Resolve a `file` argument: relative to `root` (canonical), or absolute inside it. The file
/// must exist and be a regular file.
///
/// Containment is decided on the path itself before the file system is touched (issue 11: an
/// existence oracle): `..` and `.` are resolved lexically, and a path that leaves the root gets
/// one message whether or not it exists. Only then is the path canonicalized; a symlink inside
/// the root that leads out gets the same message, and so does a path through a symlink that
/// leads nowhere (its target might be outside). The one exception: an absolute path outside the
/// root lexically is canonicalized too, and served when it leads inside the root (the root
/// spelled through a symlink to it); otherwise it gets the same message.
///
/// Errors ([`ToolFailure`]): empty, outside the root, cannot be opened (inside the root), not a
/// regular file.
pub fn resolve_file(root: &Path, file: &str) -> Result<PathBuf, ToolFailure> {
    let (canonical, is_file) = match locate(root, file)? {
        Located::Canonical { path, is_file } => (path, is_file),
        Located::Missing { error, .. } => {
            return Err(ToolFailure(format!(
                "cannot open {file}: {error} (paths are relative to the workspace root {})",
                root.display()
            )))
        }
    };
    if !is_file.unwrap_or_else(|| canonical.is_file()) {
        return Err(ToolFailure(format!("{file} is not a file")));
    }
    Ok(canonical)
}

/// [`resolve_file`]'s containment alone (`lspc batch`): a path outside the root gets the same
/// message; one inside it is given back canonical, or as resolved lexically when it does not
/// exist, and whoever reads it says what is wrong with it (missing, a folder).
///
/// Errors ([`ToolFailure`]): empty, outside the root.
pub fn resolve_inside(root: &Path, file: &str) -> Result<PathBuf, ToolFailure> {
    Ok(match locate(root, file)? {
        Located::Canonical { path, .. } | Located::Missing { lexical: path, .. } => path,
    })
}

/// Where a `file` argument inside the root leads.
enum Located {
    /// It exists: its canonical path, inside the root, and whether it is a regular file when
    /// that is already known.
    Canonical {
        path: PathBuf,
        is_file: Option<bool>,
    },
    /// It cannot be opened (and no symlink is on the way): the path resolved lexically.
    Missing {
        lexical: PathBuf,
        error: std::io::Error,
    },
}

/// The containment rules of [`resolve_file`]. Errors: empty, outside the root.
fn locate(root: &Path, file: &str) -> Result<Located, ToolFailure> {
    if file.is_empty() {
        return Err(ToolFailure(
            "file is empty; give a path relative to the workspace root".to_owned(),
        ));
    }
    let outside = || {
        ToolFailure(format!(
            "{file} is outside the workspace root {}; lspc only serves files inside it",
            root.display()
        ))
    };
    let given = Path::new(file);
    let plain = is_plain_relative(file);
    let lexical = if plain {
        // Nothing to resolve lexically (issue 15: the component walk was a fifth of a hover's
        // argument reading): the same path `lexically_inside` would build.
        root.join(given)
    } else {
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            root.join(given)
        };
        let Some(lexical) = lexically_inside(root, &joined) else {
            // An absolute path may spell the root through a symlink (`--root` given as a
            // symlinked folder, the root canonicalised): served when it leads inside the root.
            // Every other path gets the one message, whether or not it exists.
            if !given.is_absolute() {
                return Err(outside());
            }
            return match joined.canonicalize() {
                Ok(canonical) if is_under(&canonical, root) => Ok(Located::Canonical {
                    path: canonical,
                    is_file: None,
                }),
                _ => Err(outside()),
            };
        };
        lexical
    };
    let walk = match plain {
        // Its parts are the components below the root (issue 15: `strip_prefix` and
        // `components` cost about 1.5k instructions a call).
        true => walk_parts(root, file.split('/').map(std::ffi::OsStr::new)),
        false => walk_below(root, &lexical),
    };
    match walk {
        Walk::Plain { is_file } => Ok(Located::Canonical {
            path: lexical,
            is_file: Some(is_file),
        }),
        Walk::Missing(error) => Ok(Located::Missing { lexical, error }),
        Walk::NeedsRealpath => match lexical.canonicalize() {
            // A symlink on the way that leads nowhere: its target might be outside.
            Ok(canonical) if is_under(&canonical, root) => Ok(Located::Canonical {
                path: canonical,
                is_file: None,
            }),
            _ => Err(outside()),
        },
    }
}

/// What [`walk_below`] found on the way from the root to a path.
enum Walk {
    /// Every component below the root exists and none is a symbolic link: the path (resolved
    /// lexically, so without `.`, `..` or repeated separators) is its own canonical form.
    Plain { is_file: bool },
    /// A component cannot be looked at (missing, not a folder, no permission), with no symbolic
    /// link before it.
    Missing(std::io::Error),
    /// A symbolic link on the way, or the root itself: `realpath` decides.
    NeedsRealpath,
}

/// One `lstat` per component of `path` below the canonical `root`, stopping at the first
/// symbolic link or missing component.
///
/// Why (issue 15): `realpath` reads every component from `/` (one `readlink` each, five for a
/// file one level below a root four levels deep) on every call; a path with no symlink below
/// the root needs none of that.
fn walk_below(root: &Path, path: &Path) -> Walk {
    let Ok(relative) = path.strip_prefix(root) else {
        return Walk::NeedsRealpath;
    };
    walk_parts(
        root,
        relative.components().map(|component| component.as_os_str()),
    )
}

/// [`walk_below`] given the components below the root (names: no `.`, `..` or root).
fn walk_parts<'a>(root: &Path, parts: impl Iterator<Item = &'a std::ffi::OsStr>) -> Walk {
    let mut prefix = root.to_path_buf();
    let mut is_file = None;
    for part in parts {
        prefix.push(part);
        match prefix.symlink_metadata() {
            Ok(metadata) if metadata.file_type().is_symlink() => return Walk::NeedsRealpath,
            Ok(metadata) => is_file = Some(metadata.file_type().is_file()),
            Err(error) => return Walk::Missing(error),
        }
    }
    match is_file {
        Some(is_file) => Walk::Plain { is_file },
        None => Walk::NeedsRealpath,
    }
}

/// Whether `file` is relative and every `/`-separated part of it is a name (not empty, `.` or
/// `..`): joined to the root, it is already the lexically resolved path.
fn is_plain_relative(file: &str) -> bool {
    !file.starts_with('/')
        && file
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// [`Path::starts_with`] for canonical paths (no `.`, `..` or repeated separators), comparing
/// bytes instead of components.
fn is_under(path: &Path, root: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (path, root) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    path.starts_with(root)
        && (path.len() == root.len() || root.ends_with(b"/") || path[root.len()] == b'/')
}

/// `path` (absolute) with `.` and `..` resolved lexically, when that stays inside `root`;
/// `None` when it leaves the root. Touches nothing on disk.
fn lexically_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                // Never above the root: `ROOT/../ROOT-NAME/x` is refused rather than re-entered.
                if !normal.starts_with(root) || normal == root {
                    return None;
                }
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    normal.starts_with(root).then_some(normal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn files_resolve_inside_the_root_only() {
        let dir = std::env::temp_dir().join(format!("lspc-mcp-tools-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/a.py"), "x = 1\n").unwrap();
        let root = dir.canonicalize().unwrap();
        let check = |file: &str, expected: Result<&str, &str>| {
            let actual = resolve_file(&root, file)
                .map(|path| display_path(&root, &path))
                .map_err(|error| error.0.replace(&root.display().to_string(), "ROOT"));
            assert_eq!(
                actual.as_deref().map_err(String::as_str),
                expected,
                "{file}"
            );
        };
        check("src/a.py", Ok("src/a.py"));
        check("./src/../src/a.py", Ok("src/a.py"));
        let absolute = root.join("src/a.py").display().to_string();
        check(&absolute, Ok("src/a.py"));
        check(
            "/etc/hostname",
            Err("/etc/hostname is outside the workspace root ROOT; lspc only serves files inside it"),
        );
        // Issue 11: one answer outside the root, whether or not the file exists.
        for outside in [
            "/etc/no_such_file",
            "../../../etc/hostname",
            "../../../no/such/file",
            "src/../../x.py",
        ] {
            check(
                outside,
                Err(&format!(
                    "{outside} is outside the workspace root ROOT; lspc only serves files inside it"
                )),
            );
        }
        std::os::unix::fs::symlink("/etc/hostname", root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/no_such_file", root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        for through_a_link in ["out", "dangling", "etc/hostname", "etc/no_such_file"] {
            check(
                through_a_link,
                Err(&format!(
                    "{through_a_link} is outside the workspace root ROOT; lspc only serves files inside it"
                )),
            );
        }
        // A sibling whose name starts with the root's is outside (a byte prefix is not a
        // path prefix).
        let sibling = PathBuf::from(format!("{}-x", root.display()));
        std::fs::create_dir_all(&sibling).unwrap();
        std::fs::write(sibling.join("a.py"), "y = 1\n").unwrap();
        std::os::unix::fs::symlink(sibling.join("a.py"), root.join("sibling")).unwrap();
        check(
            "sibling",
            Err("sibling is outside the workspace root ROOT; lspc only serves files inside it"),
        );
        std::fs::remove_dir_all(&sibling).unwrap();
        // Symlinks that stay inside give the canonical path, to a file or through a folder.
        std::os::unix::fs::symlink(root.join("src/a.py"), root.join("inside")).unwrap();
        std::os::unix::fs::symlink("src", root.join("srclink")).unwrap();
        check("inside", Ok("src/a.py"));
        check("srclink/a.py", Ok("src/a.py"));
        check("srclink", Err("srclink is not a file"));
        // The root spelled through a symlink to it, in an absolute path.
        let alias = PathBuf::from(format!("{}-alias", root.display()));
        std::os::unix::fs::symlink(&root, &alias).unwrap();
        check(&format!("{}/src/a.py", alias.display()), Ok("src/a.py"));
        let missing = format!("{}/src/missing.py", alias.display());
        check(
            &missing,
            Err("ROOT-alias/src/missing.py is outside the workspace root ROOT; lspc only serves files inside it"),
        );
        std::fs::remove_file(&alias).unwrap();
        // Not plain names: resolved lexically, as before.
        check("src//a.py", Ok("src/a.py"));
        check("src/a.py/", Ok("src/a.py"));
        check("src/./a.py", Ok("src/a.py"));
        check(
            "missing.py",
            Err("cannot open missing.py: No such file or directory (os error 2) (paths are relative to the workspace root ROOT)"),
        );
        check("src", Err("src is not a file"));
        check(
            "",
            Err("file is empty; give a path relative to the workspace root"),
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_is_cleaned_and_relativized() {
        let root = Path::new("/w");
        let check = |mut input: Value, expected: Value| {
            clean_json(&mut input, root);
            assert_eq!(input, expected);
        };
        check(
            json!({"path": "/w/src/a.py", "line": 1, "lineText": null}),
            json!({"path": "src/a.py", "line": 1}),
        );
        check(
            json!([{"location": {"path": "/elsewhere/b.py"}, "detail": null}]),
            json!([{"location": {"path": "/elsewhere/b.py"}}]),
        );
        check(json!({"a": [null, {"b": null}]}), json!({"a": [null, {}]}));
    }
}
