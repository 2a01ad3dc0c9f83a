//! Listing the files `lspc check` should look at: explicit files as given, folders walked while
//! honouring `.gitignore`.
//!
//! Invariants:
//! - Every returned path is canonical (absolute, symlinks resolved), the list is sorted and has no
//!   duplicates, and every entry was a regular file when it was listed.
//! - An explicitly named file is always returned, even when `.gitignore` would exclude it: the
//!   user asked for it by name.
//! - Inside a git work tree the folder listing is exactly git's own view
//!   (`git ls-files --cached --others --exclude-standard`): tracked files plus untracked files that
//!   are not ignored, never anything under `.git`. Outside a git work tree (or when `git` cannot
//!   run) lspc walks the tree itself with a deliberately small rule set (see [`list_files`]).
//! - A Python virtual environment below a walked folder (a folder holding `pyvenv.cfg`, PEP 405)
//!   is never listed, whether git lists it or not: its packages are not the project's sources.
//! - Symlinked folders are never followed while walking (no cycles, no escaping the workspace);
//!   symlinked files are listed by their target, and [`list_files_found`] also says under which
//!   path the link was found (a `compile_commands.json` linked to `build/compile_commands.json`
//!   is shown as the user has it), unless the target itself is listed too.
//! - Unreadable sub-folders are skipped with a warning rather than failing the whole listing; only
//!   a missing or unusable *target* is an error. A walked entry that exists but cannot be resolved
//!   or read (a symlink loop, `l1.py -> l2.py -> l1.py`) is not a file [`list_files`] returns:
//!   [`list_files_found`] gives it apart, with the OS error, so a check can say it was not checked
//!   (ruff reports it as E902). A dangling symlink and a tracked file deleted from disk are not
//!   listed at all: there is nothing there to check.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

/// Folder names the fallback walk never descends into (besides hidden entries): they hold
/// dependencies, build output or caches, never sources a user wants checked.
const SKIPPED_FOLDER_NAMES: &[&str] = &["node_modules", "target", "__pycache__"];

/// The file at the root of a Python virtual environment (PEP 405). A virtual environment holds
/// installed packages (C headers and sources among them), never the project's own sources; one
/// made by `python -m venv` before Python 3.13 has no `.gitignore` of its own, so git lists it
/// as untracked unless the project ignores it.
const VIRTUAL_ENVIRONMENT_MARKER: &str = "pyvenv.cfg";

/// Why a listing failed.
#[derive(Debug)]
pub enum WalkError {
    /// A target (or the workspace root) does not exist. Holds the path as given.
    NotFound(PathBuf),
    /// A target exists but is neither a regular file nor a folder (a FIFO, socket or device):
    /// opening it could block, so it is refused. Holds the path as given.
    NotRegular(PathBuf),
    /// Another I/O error on a target or the workspace root (permission denied, ...).
    Io { path: PathBuf, error: io::Error },
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalkError::NotFound(path) => write!(f, "no such file or folder: {}", path.display()),
            WalkError::NotRegular(path) => {
                write!(f, "not a regular file or folder: {}", path.display())
            }
            WalkError::Io { path, error } => {
                write!(f, "cannot read {}: {}", path.display(), error)
            }
        }
    }
}

impl std::error::Error for WalkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WalkError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Lists the files to check under `targets`.
///
/// - `root` is the workspace root (relative to the current directory or absolute). Outside git,
///   its top-level `.gitignore` supplies the ignore patterns (see below).
/// - Each target is a file or a folder, relative to the current directory or absolute.
///   A file is returned canonicalised, even if ignored. A folder yields every regular file below
///   it:
///   - inside a git work tree: `git -C FOLDER ls-files -z --cached --others --exclude-standard`,
///     i.e. exact git semantics (nested `.gitignore`s, negations, `info/exclude`, global excludes),
///     less the Python virtual environments below FOLDER (folders holding `pyvenv.cfg`);
///   - otherwise (or when `git` fails to run): a walk that skips hidden entries (`.git`,
///     `.cache`, ...), `node_modules`, `target`, `__pycache__` and folders holding `pyvenv.cfg`
///     below the folder, does not follow symlinked folders, and applies the simple patterns of `ROOT/.gitignore` and
///     `FOLDER/.gitignore`: literal names, `*.ext` globs, either optionally anchored with a leading
///     `/` (relative to that `.gitignore`'s folder) or restricted to folders with a trailing `/`;
///     blank lines and `#` comments are skipped. Other forms (`!`, `**`, `?`, `[...]`, inner `/`)
///     are not honoured; this is logged once per process.
///
/// Returns canonical paths, sorted and deduplicated.
///
/// Errors: [`WalkError::NotFound`] for a missing target or root, [`WalkError::NotRegular`] for a
/// target that is a FIFO/socket/device, [`WalkError::Io`] when a target or the root cannot be
/// resolved or a target folder cannot be read.
pub fn list_files(root: &Path, targets: &[PathBuf]) -> Result<Vec<PathBuf>, WalkError> {
    let listed = list_files_with(root, targets, ListingMode::GitWhenAvailable)?;
    Ok(listed.files.into_iter().map(|file| file.path).collect())
}

/// One file [`list_files_found`] lists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListedFile {
    /// Canonical: what [`list_files`] returns.
    pub path: PathBuf,
    /// For a file listed only through a symlink (walked, or named): the link's own path, its
    /// folder canonical (`/w/compile_commands.json` for a link to
    /// `/w/build/compile_commands.json`). `None` when `path` itself was listed.
    pub found_as: Option<PathBuf>,
}

/// A walked entry that exists but cannot be read as a file.
#[derive(Debug)]
pub struct UnreadableFile {
    /// As found: the walked folder (canonical) plus the entry's own names, since the entry may
    /// have no canonical path (a symlink loop).
    pub path: PathBuf,
    /// Why it cannot be read (`Too many levels of symbolic links (os error 40)`).
    pub error: io::Error,
}

/// What [`list_files_found`] lists.
#[derive(Debug, Default)]
pub struct Listing {
    /// [`list_files`]' files, each with the path it was found under.
    pub files: Vec<ListedFile>,
    /// Walked entries that could not be read, sorted by path, no duplicates.
    pub unreadable: Vec<UnreadableFile>,
    /// Every symlink a file of `files` was found through (its folder canonical), also when the
    /// file was listed as itself too; sorted, no duplicates. The session watch stamps them: a
    /// server reads the file under the link's name (`pyrightconfig.json` linked to a shared
    /// `configs/pyright-base.json`).
    pub links: Vec<PathBuf>,
}

/// [`list_files`], each file with the path it was found under when that was a symlink to it:
/// a report shows a file as the user has it, while lspc keys it by its canonical path. Sorted
/// by canonical path, no duplicates; a file listed both as itself and through a link (or
/// through two links) is listed once, as itself (or under the first link listed). The walked
/// entries that could not be read come apart, in [`Listing::unreadable`].
pub fn list_files_found(root: &Path, targets: &[PathBuf]) -> Result<Listing, WalkError> {
    list_files_with(root, targets, ListingMode::GitWhenAvailable)
}

/// How folders are listed; tests force the fallback walk even when the temporary folder happens
/// to sit inside a git work tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListingMode {
    GitWhenAvailable,
    /// Only the unit tests need this; production always tries git first.
    #[cfg_attr(not(test), allow(dead_code))]
    WalkOnly,
}

fn list_files_with(
    root: &Path,
    targets: &[PathBuf],
    mode: ListingMode,
) -> Result<Listing, WalkError> {
    let canonical_root = canonicalize_target(root)?;
    let mut files: BTreeMap<PathBuf, Option<PathBuf>> = BTreeMap::new();
    let mut unreadable: BTreeMap<PathBuf, io::Error> = BTreeMap::new();
    let mut links: std::collections::BTreeSet<PathBuf> = Default::default();
    let mut add = |listed: ListedFile| {
        if let Some(link) = &listed.found_as {
            links.insert(link.clone());
        }
        match files.get_mut(&listed.path) {
            // Listed as itself now: that wins over any link found before.
            Some(found_as) if listed.found_as.is_none() => *found_as = None,
            Some(_) => {}
            None => {
                files.insert(listed.path, listed.found_as);
            }
        }
    };
    for target in targets {
        let canonical_target = canonicalize_target(target)?;
        // `metadata` follows symlinks: an explicitly named symlink is taken for what it points to.
        let metadata = fs::metadata(&canonical_target).map_err(|error| io_error(target, error))?;
        if metadata.is_file() {
            add(ListedFile {
                found_as: named_link(target, &canonical_target),
                path: canonical_target,
            });
        } else if metadata.is_dir() {
            let listed = match mode {
                ListingMode::GitWhenAvailable => git_list_folder(&canonical_target),
                ListingMode::WalkOnly => None,
            };
            let listed = match listed {
                Some(listed) => without_virtual_environments(&canonical_target, listed),
                None => {
                    let ignore = IgnoreRules::load(&canonical_root, &canonical_target);
                    walk_folder(&canonical_target, &ignore)?
                }
            };
            listed.files.into_iter().for_each(&mut add);
            for file in listed.unreadable {
                unreadable.entry(file.path).or_insert(file.error);
            }
        } else {
            return Err(WalkError::NotRegular(target.clone()));
        }
    }
    Ok(Listing {
        files: files
            .into_iter()
            .map(|(path, found_as)| ListedFile { path, found_as })
            .collect(),
        unreadable: unreadable
            .into_iter()
            .map(|(path, error)| UnreadableFile { path, error })
            .collect(),
        links: links.into_iter().collect(),
    })
}

/// For a file target named as `target` whose canonical path is `canonical`: the path of the
/// link named, its folder canonical, when `target` is a symlink (`None` otherwise).
fn named_link(target: &Path, canonical: &Path) -> Option<PathBuf> {
    if !fs::symlink_metadata(target).ok()?.file_type().is_symlink() {
        return None;
    }
    let name = target.file_name()?;
    let folder = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs::canonicalize(parent).ok()?,
        _ => std::env::current_dir().ok()?,
    };
    let link = folder.join(name);
    (link != canonical).then_some(link)
}

fn canonicalize_target(path: &Path) -> Result<PathBuf, WalkError> {
    fs::canonicalize(path).map_err(|error| io_error(path, error))
}

fn io_error(path: &Path, error: io::Error) -> WalkError {
    if error.kind() == io::ErrorKind::NotFound {
        WalkError::NotFound(path.to_path_buf())
    } else {
        WalkError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// Whether `folder` or one of its ancestors holds a `.git` entry (a directory, or a file for
/// worktrees and submodules), the only way git discovers a work tree once `GIT_DIR` and
/// `GIT_WORK_TREE` are removed.
fn has_git_ancestor(folder: &Path) -> bool {
    folder
        .ancestors()
        .any(|ancestor| ancestor.join(".git").symlink_metadata().is_ok())
}

/// Lists `folder` (canonical) through git. `None` when the folder is not inside a git work tree or
/// git cannot run, in which case the caller walks the tree itself.
fn git_list_folder(folder: &Path) -> Option<Listing> {
    if !has_git_ancestor(folder) {
        // git would only fail after its own start-up (about 5 ms here, issue 15).
        log::debug!(
            "{} is not in a git work tree: walking without git",
            folder.display()
        );
        return None;
    }
    let mut command = Command::new("git");
    command.arg("-C").arg(folder).args([
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ]);
    // These would point git at some other repository than the one containing `folder` (they are
    // set, for example, while running inside a git hook).
    for variable in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
    ] {
        command.env_remove(variable);
    }
    // Bounded: a git stuck on a lock or a slow `core.fsmonitor` hook must not hold the check up;
    // past the deadline the folder is walked without it.
    let output = match crate::bounded_run::output(
        &mut command,
        "git ls-files",
        crate::bounded_run::DEFAULT_TIMEOUT,
    ) {
        Ok(output) => output,
        Err(error) => {
            log::debug!(
                "git did not run ({error}); walking {} without it",
                folder.display()
            );
            return None;
        }
    };
    if !output.status.success() {
        log::debug!(
            "git ls-files failed in {} ({}): {}; walking without git",
            folder.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
        return None;
    }
    let mut listing = Listing::default();
    for relative in output.stdout.split(|&byte| byte == 0) {
        if relative.is_empty() {
            continue;
        }
        // ls-files prints paths relative to the folder it ran in, without symlinks in the folder
        // part; only the last component may itself be a symlink.
        let path = folder.join(path_from_bytes(relative));
        listing.add(path);
    }
    Some(listing)
}

/// `files` (git's listing of `folder`) without the files of the virtual environments below
/// `folder`: the folders whose `pyvenv.cfg` the listing holds. A virtual environment named as
/// the target folder itself is kept.
fn without_virtual_environments(folder: &Path, mut listing: Listing) -> Listing {
    let environments: Vec<PathBuf> = listing
        .files
        .iter()
        .map(|file| &file.path)
        .filter(|file| {
            file.file_name()
                .is_some_and(|name| name == VIRTUAL_ENVIRONMENT_MARKER)
        })
        .filter_map(|file| file.parent())
        .filter(|environment| *environment != folder)
        .map(Path::to_path_buf)
        .collect();
    if !environments.is_empty() {
        log::debug!(
            "not walking the virtual environments {}",
            environments
                .iter()
                .map(|environment| environment.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let outside = |path: &Path| {
            !environments
                .iter()
                .any(|environment| path.starts_with(environment))
        };
        listing.files.retain(|file| outside(&file.path));
        listing.unreadable.retain(|file| outside(&file.path));
    }
    listing
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

impl Listing {
    /// Adds the walked entry `path` (a canonical folder plus plain names) as [`walked_entry`]
    /// finds it.
    fn add(&mut self, path: PathBuf) {
        match walked_entry(&path) {
            WalkedEntry::File(file) => self.files.push(file),
            WalkedEntry::Unreadable(error) => self.unreadable.push(UnreadableFile { path, error }),
            WalkedEntry::Other => {}
        }
    }
}

/// What a walked entry is.
enum WalkedEntry {
    /// A regular file, or a symlink to one.
    File(ListedFile),
    /// It exists, but what it is cannot be told or its target cannot be resolved: a symlink
    /// loop (`ELOOP`), a permission error.
    Unreadable(io::Error),
    /// A folder (including gitlinks of submodules and symlinked folders), a vanished file
    /// (tracked but deleted), a dangling link or a special file.
    Other,
}

/// `path` (a canonical folder plus plain names) as a file when it is a regular file, its
/// canonical path found as `path` when it is a symlink to one.
fn walked_entry(path: &Path) -> WalkedEntry {
    let not_found = |error: &io::Error| error.kind() == io::ErrorKind::NotFound;
    let link_metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if not_found(&error) => return WalkedEntry::Other,
        Err(error) => return WalkedEntry::Unreadable(error),
    };
    if link_metadata.is_file() {
        // `path` is built from a canonical folder plus plain names, so it is already canonical.
        return WalkedEntry::File(ListedFile {
            path: path.to_path_buf(),
            found_as: None,
        });
    }
    if !link_metadata.file_type().is_symlink() {
        return WalkedEntry::Other;
    }
    match fs::metadata(path).and_then(|metadata| Ok((metadata, fs::canonicalize(path)?))) {
        Ok((metadata, canonical)) if metadata.is_file() => WalkedEntry::File(ListedFile {
            found_as: (canonical != path).then(|| path.to_path_buf()),
            path: canonical,
        }),
        Ok(_) => WalkedEntry::Other,
        Err(error) if not_found(&error) => WalkedEntry::Other,
        Err(error) => WalkedEntry::Unreadable(error),
    }
}

/// Walks `folder` (canonical) without git, iteratively so deep trees cannot overflow the stack.
fn walk_folder(folder: &Path, ignore: &IgnoreRules) -> Result<Listing, WalkError> {
    let mut listing = Listing::default();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = match fs::read_dir(&current) {
            Ok(entries) => entries,
            // The target itself must be readable; below it, skip what cannot be read.
            Err(error) if current == folder => return Err(io_error(folder, error)),
            Err(error) => {
                log::warn!("skipping unreadable folder {}: {error}", current.display());
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    log::warn!("skipping an entry of {}: {error}", current.display());
                    continue;
                }
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            // `file_type` does not follow symlinks, so a symlinked folder is never descended.
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                if SKIPPED_FOLDER_NAMES.contains(&name.as_ref())
                    || ignore.is_ignored(&path, true)
                    || path.join(VIRTUAL_ENVIRONMENT_MARKER).is_file()
                {
                    continue;
                }
                pending.push(path);
            } else if !ignore.is_ignored(&path, false) {
                listing.add(path);
            }
        }
    }
    Ok(listing)
}

/// One simple `.gitignore` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IgnorePattern {
    /// The folder holding the `.gitignore` (canonical).
    base: PathBuf,
    /// `true` for a leading `/`: the pattern only matches directly inside `base`.
    anchored: bool,
    /// `true` for a trailing `/`: the pattern only matches folders.
    folders_only: bool,
    matcher: NameMatcher,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum NameMatcher {
    /// The whole file or folder name.
    Literal(String),
    /// `*SUFFIX`: any name ending with the suffix (`*.pyc` -> `.pyc`).
    Suffix(String),
}

/// The simple patterns of the root's and the walked folder's `.gitignore`.
#[derive(Debug, Default)]
struct IgnoreRules {
    patterns: Vec<IgnorePattern>,
}

static UNSUPPORTED_PATTERN_NOTICE: Once = Once::new();

impl IgnoreRules {
    /// Reads `ROOT/.gitignore` and `FOLDER/.gitignore` (both canonical); a missing or unreadable
    /// file contributes nothing.
    fn load(root: &Path, folder: &Path) -> IgnoreRules {
        let mut rules = IgnoreRules::default();
        let mut bases = vec![root];
        if folder != root {
            bases.push(folder);
        }
        for base in bases {
            if let Ok(text) = fs::read_to_string(base.join(".gitignore")) {
                let (patterns, unsupported) = parse_gitignore(base, &text);
                rules.patterns.extend(patterns);
                if let Some(example) = unsupported.first() {
                    UNSUPPORTED_PATTERN_NOTICE.call_once(|| {
                        log::info!(
                            "{}: patterns such as `{example}` are not honoured without git \
                             (only names, `*.ext`, leading `/` and trailing `/` are)",
                            base.join(".gitignore").display()
                        )
                    });
                }
            }
        }
        rules
    }

    fn is_ignored(&self, path: &Path, is_folder: bool) -> bool {
        let Some(name) = path.file_name().map(|name| name.to_string_lossy()) else {
            return false;
        };
        self.patterns.iter().any(|pattern| {
            if pattern.folders_only && !is_folder {
                return false;
            }
            let place_matches = if pattern.anchored {
                path.parent() == Some(pattern.base.as_path())
            } else {
                path.starts_with(&pattern.base)
            };
            place_matches
                && match &pattern.matcher {
                    NameMatcher::Literal(literal) => name == literal.as_str(),
                    NameMatcher::Suffix(suffix) => name.ends_with(suffix.as_str()),
                }
        })
    }
}

/// Parses `.gitignore` text into the supported patterns plus the lines lspc cannot honour.
fn parse_gitignore(base: &Path, text: &str) -> (Vec<IgnorePattern>, Vec<String>) {
    let mut patterns = Vec::new();
    let mut unsupported = Vec::new();
    for raw_line in text.lines() {
        let line = raw_line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut body = line;
        let anchored = body.starts_with('/');
        if anchored {
            body = &body[1..];
        }
        let folders_only = body.ends_with('/');
        if folders_only {
            body = &body[..body.len() - 1];
        }
        let has_special = |text: &str| {
            text.is_empty() || text.starts_with('!') || text.contains(['/', '*', '?', '[', '\\'])
        };
        let matcher = if let Some(suffix) = body.strip_prefix('*') {
            if has_special(suffix) {
                None
            } else {
                Some(NameMatcher::Suffix(suffix.to_string()))
            }
        } else if has_special(body) {
            None
        } else {
            Some(NameMatcher::Literal(body.to_string()))
        };
        match matcher {
            Some(matcher) => patterns.push(IgnorePattern {
                base: base.to_path_buf(),
                anchored,
                folders_only,
                matcher,
            }),
            None => unsupported.push(line.to_string()),
        }
    }
    (patterns, unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary folder removed on drop (no tempfile crate allowed).
    struct TempFolder {
        path: PathBuf,
    }

    impl TempFolder {
        fn new() -> TempFolder {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "lspc-walk-test-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::SeqCst)
            ));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).expect("create temp folder");
            TempFolder {
                path: fs::canonicalize(&path).expect("canonicalize temp folder"),
            }
        }

        /// Creates files (and their folders); a name ending in `/` creates an empty folder.
        fn with(self, files: &[(&str, &str)]) -> TempFolder {
            for (name, content) in files {
                let path = self.path.join(name);
                if name.ends_with('/') {
                    fs::create_dir_all(&path).expect("create folder");
                } else {
                    fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
                    fs::write(&path, content).expect("write file");
                }
            }
            self
        }

        fn git(&self, args: &[&str]) {
            let status = Command::new("git")
                .arg("-C")
                .arg(&self.path)
                .args(args)
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .env_remove("GIT_INDEX_FILE")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("git must be installed to run the walk tests");
            assert!(status.success(), "git {args:?} failed");
        }
    }

    impl Drop for TempFolder {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.path);
        }
    }

    /// Lists `targets` (relative to the temp folder, `""` for the folder itself) with `mode`
    /// and compares the result, made relative again, with `expected`.
    fn check(folder: &TempFolder, mode: ListingMode, targets: &[&str], expected: &[&str]) {
        let targets: Vec<PathBuf> = targets.iter().map(|t| folder.path.join(t)).collect();
        let listed = list_files_with(&folder.path, &targets, mode).expect("listing succeeds");
        let relative: Vec<String> = listed
            .files
            .iter()
            .map(|file| &file.path)
            .map(|path| {
                path.strip_prefix(&folder.path)
                    .unwrap_or(path)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(relative, expected, "targets {targets:?} in mode {mode:?}");
    }

    /// A file listed only through a symlink is found as the link; listed as itself too, it is
    /// found as itself (left over from round nu12: a `compile_commands.json` linked into
    /// `build/` was reported as `build/compile_commands.json`).
    #[test]
    fn a_file_listed_through_a_link_says_so() {
        let folder = TempFolder::new().with(&[
            (".gitignore", "build/\n"),
            ("build/compile_commands.json", "[]\n"),
            ("main.c", ""),
        ]);
        let link = folder.path.join("compile_commands.json");
        std::os::unix::fs::symlink("build/compile_commands.json", &link).expect("symlink");
        let target = folder.path.join("build/compile_commands.json");
        let found = |targets: &[PathBuf]| {
            list_files_with(&folder.path, targets, ListingMode::WalkOnly)
                .expect("listing succeeds")
                .files
                .into_iter()
                .filter(|file| file.path == target)
                .map(|file| file.found_as)
                .collect::<Vec<_>>()
        };
        // Walked: `build/` is ignored, so only the link leads to it.
        assert_eq!(
            found(std::slice::from_ref(&folder.path)),
            [Some(link.clone())]
        );
        // Named, as a link or as itself.
        assert_eq!(found(std::slice::from_ref(&link)), [Some(link.clone())]);
        assert_eq!(found(std::slice::from_ref(&target)), [None]);
        // Both: listed once, as itself.
        assert_eq!(found(&[link.clone(), target.clone()]), [None]);
        assert_eq!(found(&[target.clone(), link.clone()]), [None]);
        // `list_files` gives the canonical path either way.
        assert_eq!(
            list_files(&folder.path, std::slice::from_ref(&link)).expect("listing succeeds"),
            [target]
        );
    }

    fn sample_tree() -> TempFolder {
        TempFolder::new().with(&[
            (".gitignore", "# build output\n*.log\nbuild/\n/secret.txt\nnotes.md\n!keep.log\ndocs/**/*.tmp\n\n"),
            ("main.py", "print(1)\n"),
            ("pkg/mod.py", "x = 1\n"),
            ("pkg/notes.md", "ignored at any depth\n"),
            ("pkg/secret.txt", "anchored pattern does not apply here\n"),
            ("pkg/deep/er/z.py", ""),
            ("secret.txt", "ignored: anchored at the root\n"),
            ("debug.log", "ignored by *.log\n"),
            ("keep.log", "negation is not honoured without git\n"),
            ("build/out.py", "ignored folder\n"),
            ("pkg/build", "a FILE named build is not a folder\n"),
            (".hidden/x.py", ""),
            (".env", ""),
            ("node_modules/dep/index.js", ""),
            ("target/debug/a.rs", ""),
            ("pkg/__pycache__/mod.cpython-311.pyc", ""),
            ("empty/", ""),
        ])
    }

    #[test]
    fn walk_without_git_honours_simple_patterns_and_skips_hidden_and_tool_folders() {
        let folder = sample_tree();
        check(
            &folder,
            ListingMode::WalkOnly,
            &[""],
            &[
                "main.py",
                "pkg/build",
                "pkg/deep/er/z.py",
                "pkg/mod.py",
                "pkg/secret.txt",
            ],
        );
        check(
            &folder,
            ListingMode::WalkOnly,
            &["pkg"],
            &[
                "pkg/build",
                "pkg/deep/er/z.py",
                "pkg/mod.py",
                "pkg/secret.txt",
            ],
        );
    }

    #[test]
    fn explicit_files_are_returned_even_when_ignored_or_hidden() {
        let folder = sample_tree();
        for mode in [ListingMode::WalkOnly, ListingMode::GitWhenAvailable] {
            check(
                &folder,
                mode,
                &["debug.log", ".hidden/x.py", "build/out.py", "main.py"],
                &[".hidden/x.py", "build/out.py", "debug.log", "main.py"],
            );
        }
    }

    #[test]
    fn results_are_sorted_and_deduplicated_across_overlapping_targets() {
        let folder = sample_tree();
        check(
            &folder,
            ListingMode::WalkOnly,
            &["pkg/mod.py", "pkg", "pkg/deep", "main.py", "pkg/mod.py"],
            &[
                "main.py",
                "pkg/build",
                "pkg/deep/er/z.py",
                "pkg/mod.py",
                "pkg/secret.txt",
            ],
        );
    }

    #[test]
    fn a_hidden_or_skipped_folder_named_as_target_is_walked() {
        let folder = sample_tree();
        check(
            &folder,
            ListingMode::WalkOnly,
            &[".hidden"],
            &[".hidden/x.py"],
        );
        check(
            &folder,
            ListingMode::WalkOnly,
            &["node_modules"],
            &["node_modules/dep/index.js"],
        );
        check(&folder, ListingMode::WalkOnly, &["empty"], &[]);
    }

    #[test]
    fn the_walked_folders_own_gitignore_applies_too() {
        let folder = TempFolder::new().with(&[
            ("sub/.gitignore", "*.gen.py\n/local/\n"),
            ("sub/a.py", ""),
            ("sub/a.gen.py", ""),
            ("sub/x/b.gen.py", ""),
            ("sub/local/c.py", ""),
            ("sub/x/local/d.py", ""),
        ]);
        check(
            &folder,
            ListingMode::WalkOnly,
            &["sub"],
            &["sub/a.py", "sub/x/local/d.py"],
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_folders_are_not_followed_and_symlinked_files_resolve_to_their_target() {
        let folder = TempFolder::new().with(&[("real/a.py", ""), ("other/b.py", "")]);
        std::os::unix::fs::symlink(folder.path.join("real"), folder.path.join("other/loop"))
            .expect("symlink folder");
        std::os::unix::fs::symlink(
            folder.path.join("real/a.py"),
            folder.path.join("other/link.py"),
        )
        .expect("symlink file");
        std::os::unix::fs::symlink(
            folder.path.join("gone.py"),
            folder.path.join("other/dangling.py"),
        )
        .expect("dangling symlink");
        check(
            &folder,
            ListingMode::WalkOnly,
            &["other"],
            &["other/b.py", "real/a.py"],
        );
        // Named explicitly, a symlinked folder is walked as the folder it points to.
        check(
            &folder,
            ListingMode::WalkOnly,
            &["other/loop"],
            &["real/a.py"],
        );
    }

    /// A walked symlink loop is listed apart with its OS error, in both modes, and never as a
    /// file; a dangling link is not listed at all (issue 16: lspc said nothing about
    /// `l1.py -> l2.py -> l1.py`, which ruff reports as E902).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_walked_symlink_loop_is_listed_as_unreadable() {
        let folder = TempFolder::new().with(&[("a.py", "")]);
        std::os::unix::fs::symlink("l2.py", folder.path.join("l1.py")).expect("symlink");
        std::os::unix::fs::symlink("l1.py", folder.path.join("l2.py")).expect("symlink");
        std::os::unix::fs::symlink("gone.py", folder.path.join("dangling.py")).expect("symlink");
        folder.git(&["init", "-q"]);
        folder.git(&["add", "-A"]);
        for mode in [ListingMode::WalkOnly, ListingMode::GitWhenAvailable] {
            let listed = list_files_with(&folder.path, std::slice::from_ref(&folder.path), mode)
                .expect("listing succeeds");
            let files: Vec<&Path> = listed
                .files
                .iter()
                .map(|file| file.path.as_path())
                .collect();
            assert_eq!(files, [folder.path.join("a.py")], "{mode:?}");
            let unreadable: Vec<(PathBuf, Option<i32>)> = listed
                .unreadable
                .iter()
                .map(|file| (file.path.clone(), file.error.raw_os_error()))
                .collect();
            // ELOOP is 40 on Linux.
            assert_eq!(
                unreadable,
                [
                    (folder.path.join("l1.py"), Some(40)),
                    (folder.path.join("l2.py"), Some(40))
                ],
                "{mode:?}"
            );
        }
    }

    #[test]
    fn relative_targets_are_resolved_against_the_current_directory() {
        let folder = sample_tree();
        let cwd = std::env::current_dir().expect("cwd");
        let relative = pathdiff(&folder.path.join("pkg/mod.py"), &cwd);
        let listed = list_files(&folder.path, &[relative]).expect("listing succeeds");
        assert_eq!(listed, vec![folder.path.join("pkg/mod.py")]);
    }

    /// `target` expressed relative to `base` with `..` components (both absolute).
    fn pathdiff(target: &Path, base: &Path) -> PathBuf {
        let base = fs::canonicalize(base).expect("canonical cwd");
        let mut ups = PathBuf::new();
        let mut ancestor = base.as_path();
        loop {
            if let Ok(rest) = target.strip_prefix(ancestor) {
                return ups.join(rest);
            }
            ups.push("..");
            ancestor = ancestor.parent().expect("common ancestor exists");
        }
    }

    #[test]
    fn missing_targets_and_roots_are_not_found_errors() {
        let folder = sample_tree();
        let missing = folder.path.join("nope.py");
        match list_files(
            &folder.path,
            &[folder.path.join("main.py"), missing.clone()],
        ) {
            Err(WalkError::NotFound(path)) => assert_eq!(path, missing),
            other => panic!("expected NotFound, got {other:?}"),
        }
        let missing_root = folder.path.join("no-root");
        match list_files(&missing_root, &[]) {
            Err(WalkError::NotFound(path)) => assert_eq!(path, missing_root),
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert_eq!(
            WalkError::NotFound(PathBuf::from("/w/nope.py")).to_string(),
            "no such file or folder: /w/nope.py"
        );
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_refused() {
        let folder = TempFolder::new();
        let fifo = folder.path.join("pipe");
        let status = Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
        match list_files(&folder.path, std::slice::from_ref(&fifo)) {
            Err(WalkError::NotRegular(path)) => assert_eq!(path, fifo),
            other => panic!("expected NotRegular, got {other:?}"),
        }
        // Inside a walked folder a FIFO is silently left out.
        check(&folder, ListingMode::WalkOnly, &[""], &[]);
    }

    #[test]
    fn git_mode_uses_exact_git_semantics() {
        let folder = sample_tree().with(&[
            ("pkg/.gitignore", "*.md\n!notes.md\n"),
            ("pkg/readme.md", "ignored by the nested .gitignore\n"),
            ("docs/a/b/x.tmp", "ignored by the ** pattern\n"),
            ("docs/a/b/y.txt", ""),
            ("tracked.log", "ignored, but tracked: --cached lists it\n"),
            (".github/ci.yml", "hidden but not ignored: git lists it\n"),
        ]);
        folder.git(&["init", "-q"]);
        folder.git(&["add", "-f", "tracked.log"]);
        check(
            &folder,
            ListingMode::GitWhenAvailable,
            &[""],
            &[
                ".env",
                ".github/ci.yml",
                ".gitignore",
                ".hidden/x.py",
                "docs/a/b/y.txt",
                "keep.log",
                "main.py",
                "node_modules/dep/index.js",
                "pkg/.gitignore",
                "pkg/__pycache__/mod.cpython-311.pyc",
                "pkg/build",
                "pkg/deep/er/z.py",
                "pkg/mod.py",
                "pkg/notes.md",
                "pkg/secret.txt",
                "target/debug/a.rs",
                "tracked.log",
            ],
        );
        // A sub-folder target: git prints paths relative to it; they come back absolute.
        check(
            &folder,
            ListingMode::GitWhenAvailable,
            &["pkg/deep"],
            &["pkg/deep/er/z.py"],
        );
    }

    /// Found trying lspc on encode/httpx (round nu11): a `.venv` made by `python -m venv`
    /// (before Python 3.13 it writes no `.gitignore` of its own) and not in the project's
    /// `.gitignore` was listed by git as untracked: 2,968 files walked, clangd checked the C
    /// sources of `cffi` and `mypyc` in it (325 errors) and `lspc check .` failed. A folder
    /// holding `pyvenv.cfg` (PEP 405) below the walked folder is a virtual environment, never the
    /// project's sources, in both modes; named as the target itself it is walked.
    #[test]
    fn python_virtual_environments_are_not_walked() {
        let venv = |name: &str| {
            [
                (format!("{name}/pyvenv.cfg"), "home = /usr/bin\n"),
                (format!("{name}/lib/python3.11/site-packages/cffi/x.h"), ""),
                (format!("{name}/bin/activate"), ""),
            ]
        };
        let files: Vec<(String, &str)> = [
            ("app/main.py".to_owned(), ""),
            ("pyvenv.cfg.md".to_owned(), ""),
        ]
        .into_iter()
        .chain(venv(".venv"))
        .chain(venv("venv"))
        .chain(venv("tools/env"))
        .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(name, text)| (name.as_str(), *text))
            .collect();
        let folder = TempFolder::new().with(&files);
        check(
            &folder,
            ListingMode::WalkOnly,
            &[""],
            &["app/main.py", "pyvenv.cfg.md"],
        );
        folder.git(&["init", "-q"]);
        check(
            &folder,
            ListingMode::GitWhenAvailable,
            &[""],
            &["app/main.py", "pyvenv.cfg.md"],
        );
        check(
            &folder,
            ListingMode::GitWhenAvailable,
            &["venv"],
            &[
                "venv/bin/activate",
                "venv/lib/python3.11/site-packages/cffi/x.h",
                "venv/pyvenv.cfg",
            ],
        );
    }

    #[test]
    fn git_mode_skips_tracked_files_deleted_from_disk() {
        let folder = TempFolder::new().with(&[("a.py", ""), ("b.py", "")]);
        folder.git(&["init", "-q"]);
        folder.git(&["add", "a.py", "b.py"]);
        fs::remove_file(folder.path.join("b.py")).expect("remove");
        check(&folder, ListingMode::GitWhenAvailable, &[""], &["a.py"]);
    }

    #[test]
    fn gitignore_parsing_keeps_simple_forms_and_reports_the_rest() {
        let base = Path::new("/w");
        let (patterns, unsupported) = parse_gitignore(
            base,
            "# c\n\n*.pyc\nbuild/\n/dist\nname.txt   \n!keep\na/b\n**/x\nf?o\n*.[oa]\nx*y\n/\n",
        );
        let simple: Vec<(bool, bool, NameMatcher)> = patterns
            .into_iter()
            .map(|p| (p.anchored, p.folders_only, p.matcher))
            .collect();
        assert_eq!(
            simple,
            vec![
                (false, false, NameMatcher::Suffix(".pyc".into())),
                (false, true, NameMatcher::Literal("build".into())),
                (true, false, NameMatcher::Literal("dist".into())),
                (false, false, NameMatcher::Literal("name.txt".into())),
            ]
        );
        assert_eq!(
            unsupported,
            vec!["!keep", "a/b", "**/x", "f?o", "*.[oa]", "x*y", "/"]
        );
    }

    /// git is not spawned outside a work tree; a `.git` folder or file (worktree) in the folder
    /// or an ancestor counts.
    #[test]
    fn git_ancestor_is_found_by_its_dot_git_entry() {
        let plain = TempFolder::new().with(&[("src/a.py", "x = 1\n")]);
        if has_git_ancestor(&std::env::temp_dir()) {
            eprintln!("skipped: the temporary folder is itself inside a git work tree");
            return;
        }
        assert!(!has_git_ancestor(&plain.path.join("src")));
        let repo = TempFolder::new().with(&[(".git/", ""), ("src/a.py", "x = 1\n")]);
        assert!(has_git_ancestor(&repo.path));
        assert!(has_git_ancestor(&repo.path.join("src")));
        let worktree = TempFolder::new().with(&[(".git", "gitdir: /elsewhere\n")]);
        assert!(has_git_ancestor(&worktree.path));
    }
}
