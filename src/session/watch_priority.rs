//! Which workspace files a bounded watch takes first, when a workspace has more files than a
//! scan stamps ([`super::watch::MAX_WATCHED_FILES`]) or their folders are more than it asks
//! inotify to watch ([`super::watch::MAX_WATCHED_FOLDERS`]).
//!
//! In path order alone, the files past the bound were the ones late in the alphabet, often the
//! very files the servers serve: with 20,000 files under `assets/`, nothing under `src/` was
//! stamped, so an edit of `src/lib.py` behind lspc was never announced and pyright answered
//! from its old text for the rest of the session. The files a configured server claims by
//! extension and the configuration files servers read (the entries' root markers, and the
//! names servers look up) now come first; the other files fill the room left, each group in
//! the order it came in.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::config::Config;

/// The file extensions (lowercase, with their dot: `.py`) and file names a watch takes first.
/// The default takes nothing first: plain path order.
#[derive(Clone, Debug, Default)]
pub struct WatchPriority {
    extensions: HashSet<String>,
    names: HashSet<String>,
}

impl WatchPriority {
    /// What `config`'s servers read: the extensions their entries claim, the files their root
    /// markers name (`pyproject.toml` of `pyproject.toml:tool.pyright`), and `configuration`,
    /// the names of the configuration files servers look up.
    pub fn of(config: &Config, configuration: &[&str]) -> WatchPriority {
        let mut priority = WatchPriority::default();
        for server in &config.servers {
            priority.extensions.extend(
                server
                    .extension_to_language
                    .keys()
                    .map(|extension| extension.to_ascii_lowercase()),
            );
            priority.names.extend(
                server
                    .root_markers
                    .iter()
                    .map(|marker| crate::config::roots::marker_file(marker).to_owned()),
            );
        }
        priority
            .names
            .extend(configuration.iter().map(|name| (*name).to_owned()));
        priority
    }

    /// Whether `path` is one of the files taken first.
    pub fn covers(&self, path: &Path) -> bool {
        let by_name = || {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| self.names.contains(name))
        };
        // No allocation: this runs for each file of a scan, and the set is a few entries.
        let by_extension = || {
            path.extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| {
                    self.extensions.iter().any(|claimed| {
                        claimed
                            .strip_prefix('.')
                            .is_some_and(|claimed| claimed.eq_ignore_ascii_case(extension))
                    })
                })
        };
        by_extension() || by_name()
    }

    /// Keeps at most `bound` of `files`: those [`covered`](Self::covers) first, then the others,
    /// each group in its order in `files`. Returns how many were left out, and how many of
    /// those were covered (files a server reads, whose changes behind lspc it will not hear of).
    pub fn keep_first(&self, files: &mut Vec<PathBuf>, bound: usize) -> LeftOut {
        if files.len() <= bound {
            return LeftOut::default();
        }
        let total = files.len();
        let (mut kept, others): (Vec<PathBuf>, Vec<PathBuf>) = std::mem::take(files)
            .into_iter()
            .partition(|file| self.covers(file));
        let covered = kept.len().saturating_sub(bound);
        kept.truncate(bound);
        let room = bound - kept.len();
        kept.extend(others.into_iter().take(room));
        *files = kept;
        LeftOut {
            files: total - bound,
            covered,
        }
    }
}

/// What [`WatchPriority::keep_first`] left out: `files` in all, `covered` of them files the
/// servers read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    pub files: usize,
    pub covered: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn priority() -> WatchPriority {
        WatchPriority {
            extensions: [".py".to_owned(), ".ts".to_owned()].into(),
            names: ["pyproject.toml".to_owned()].into(),
        }
    }

    fn paths(names: &[&str]) -> Vec<PathBuf> {
        names.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn claimed_files_and_configuration_come_first_then_the_rest_in_order() {
        let mut files = paths(&[
            "/w/assets/a.png",
            "/w/assets/b.png",
            "/w/docs/c.md",
            "/w/pyproject.toml",
            "/w/src/lib.py",
            "/w/src/main.PY",
            "/w/web/app.ts",
        ]);
        let left_out = |files: usize, covered: usize| LeftOut { files, covered };
        assert_eq!(priority().keep_first(&mut files, 6), left_out(1, 0));
        assert_eq!(
            files,
            paths(&[
                "/w/pyproject.toml",
                "/w/src/lib.py",
                "/w/src/main.PY",
                "/w/web/app.ts",
                "/w/assets/a.png",
                "/w/assets/b.png",
            ])
        );
        // More claimed files than room: the first of them, in order.
        let mut files = paths(&["/w/a.md", "/w/b.py", "/w/c.py", "/w/d.py"]);
        assert_eq!(priority().keep_first(&mut files, 2), left_out(2, 1));
        assert_eq!(files, paths(&["/w/b.py", "/w/c.py"]));
        // Within the bound nothing moves.
        let mut files = paths(&["/w/a.md", "/w/b.py"]);
        assert_eq!(priority().keep_first(&mut files, 2), left_out(0, 0));
        assert_eq!(files, paths(&["/w/a.md", "/w/b.py"]));
        // No priority: path order, as before.
        let mut files = paths(&["/w/a.md", "/w/b.py", "/w/c.py"]);
        assert_eq!(
            WatchPriority::default().keep_first(&mut files, 2),
            left_out(1, 0)
        );
        assert_eq!(files, paths(&["/w/a.md", "/w/b.py"]));
    }

    #[test]
    fn a_configuration_gives_its_extensions_markers_and_looked_up_names() {
        let mut server = crate::config::test_entry("pyright", "/usr/bin/pyright-langserver");
        server.extension_to_language = [(".py".to_owned(), "python".to_owned())].into();
        server.root_markers = vec!["pyproject.toml:tool.pyright".to_owned()];
        let config = Config {
            root: PathBuf::from("/w"),
            servers: vec![server],
            errors: Vec::new(),
            conflicts: Vec::new(),
            notes: Vec::new(),
            skipped: Vec::new(),
        };
        let priority = WatchPriority::of(&config, &["tsconfig.json"]);
        assert!(priority.covers(Path::new("/w/src/lib.py")));
        assert!(priority.covers(Path::new("/w/pyproject.toml")));
        assert!(priority.covers(Path::new("/w/web/tsconfig.json")));
        assert!(!priority.covers(Path::new("/w/assets/a.png")));
        assert!(!priority.covers(Path::new("/w/py")));
    }
}
