//! ruff's file set: `exclude` (replacing ruff's defaults) and `extend-exclude` of the nearest
//! `ruff.toml`, `.ruff.toml` or `pyproject.toml` with a `[tool.ruff]` table, looked up from the
//! file's folder towards the root, as `ruff check` resolves configuration per file
//! (docs/configuration.md "Config file discovery"), past the workspace root as ruff's server
//! does. Patterns are relative to the file that wrote them. `extend` is followed as ruff 0.17
//! follows it (checked with `ruff check --show-files`): the nearest file of the chain that sets
//! `exclude` gives it, and every file's `extend-exclude` adds to it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::pattern::{relative_to, NamePattern};
use super::{FileSet, ProjectError};

/// ruff's `exclude` default (ruff 0.17 `ruff_workspace::settings::EXCLUDE`).
const DEFAULT_EXCLUDE: &[&str] = &[
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pypackages__",
    "_build",
    "buck-out",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
];

/// One ruff configuration: its folder and its exclusions, each with the folder of the file
/// that wrote it (an `extend`ed file's patterns are relative to that file).
#[derive(Debug, Clone)]
struct RuffConfig {
    folder: PathBuf,
    exclude: Vec<(PathBuf, NamePattern)>,
}

/// How many files an `extend` chain may have; a longer one is reported as a cycle.
const EXTEND_LIMIT: usize = 16;

/// ruff's file set below `root`; configurations are read once per folder.
#[derive(Debug)]
pub struct RuffFiles {
    root: PathBuf,
    /// Folder → the configuration that governs it (`None`: ruff's defaults relative to root).
    by_folder: std::cell::RefCell<HashMap<PathBuf, Option<RuffConfig>>>,
    /// Configuration files that could not be read.
    errors: std::cell::RefCell<Vec<ProjectError>>,
}

impl RuffFiles {
    pub fn new(root: &Path) -> RuffFiles {
        RuffFiles {
            root: root.to_path_buf(),
            by_folder: Default::default(),
            errors: Default::default(),
        }
    }

    fn config_for(&self, folder: &Path) -> Option<RuffConfig> {
        if let Some(found) = self.by_folder.borrow().get(folder) {
            return found.clone();
        }
        let own = match read_config(folder) {
            Ok(own) => own,
            Err(error) => {
                self.errors.borrow_mut().push(error);
                None
            }
        };
        let found = match own {
            Some(config) => Some(config),
            // Past the workspace root too: ruff's server reads the configuration above its
            // workspace folder (a `pyproject.toml` one level up excluded `docs/conf.py` while
            // lspc, stopping at the root, called the file clean).
            None => folder.parent().and_then(|parent| self.config_for(parent)),
        };
        self.by_folder
            .borrow_mut()
            .insert(folder.to_path_buf(), found.clone());
        found
    }
}

/// The ruff configuration written in `folder` itself, if any, with its `extend` chain.
fn read_config(folder: &Path) -> Result<Option<RuffConfig>, ProjectError> {
    let mut table: Option<(PathBuf, Value)> = None;
    for name in ["ruff.toml", ".ruff.toml"] {
        let file = folder.join(name);
        if file.is_file() {
            table = Some((file.clone(), super::toml_file(&file)?));
            break;
        }
    }
    if table.is_none() {
        let file = folder.join("pyproject.toml");
        table = super::pyproject_tool(&file, "ruff")?.map(|found| (file, found));
    }
    let Some((mut file, mut table)) = table else {
        return Ok(None);
    };
    let mut exclude: Option<Vec<(PathBuf, NamePattern)>> = None;
    let mut extend_exclude: Vec<(PathBuf, NamePattern)> = Vec::new();
    let mut chain = vec![file.clone()];
    loop {
        let base = file.parent().unwrap_or(folder).to_path_buf();
        let patterns = |key: &str| -> Option<Vec<(PathBuf, NamePattern)>> {
            let array = table.get(key)?.as_array()?;
            Some(
                array
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(NamePattern::new)
                    .map(|pattern| (base.clone(), pattern))
                    .collect(),
            )
        };
        if exclude.is_none() {
            exclude = patterns("exclude");
        }
        extend_exclude.extend(patterns("extend-exclude").unwrap_or_default());
        let Some(next) = table.get("extend").and_then(Value::as_str) else {
            break;
        };
        let next = base.join(next);
        let next = std::fs::canonicalize(&next).unwrap_or(next);
        if chain.contains(&next) || chain.len() >= EXTEND_LIMIT {
            return Err(ProjectError {
                file: file.clone(),
                message: format!("`extend` cycle through {}", next.display()),
            });
        }
        // A `pyproject.toml` gives its `[tool.ruff]`; any other file is a ruff.toml.
        table = if next
            .file_name()
            .is_some_and(|name| name == "pyproject.toml")
        {
            super::pyproject_tool(&next, "ruff")?.unwrap_or_default()
        } else {
            super::toml_file(&next)?
        };
        chain.push(next.clone());
        file = next;
    }
    let mut exclude = exclude.unwrap_or_else(|| {
        DEFAULT_EXCLUDE
            .iter()
            .filter_map(|name| NamePattern::new(name))
            .map(|pattern| (folder.to_path_buf(), pattern))
            .collect()
    });
    exclude.extend(extend_exclude);
    Ok(Some(RuffConfig {
        folder: folder.to_path_buf(),
        exclude,
    }))
}

impl FileSet for RuffFiles {
    fn errors(&self) -> Vec<ProjectError> {
        self.errors.borrow().clone()
    }

    fn server_skips_what_it_leaves_out(&self) -> bool {
        true
    }

    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        let folder = file.parent()?;
        let (folder, exclude) = match self.config_for(folder) {
            Some(config) => (config.folder, config.exclude),
            None => (
                self.root.clone(),
                DEFAULT_EXCLUDE
                    .iter()
                    .filter_map(|p| NamePattern::new(p))
                    .map(|pattern| (self.root.clone(), pattern))
                    .collect(),
            ),
        };
        // A bare name matches a folder of the project wherever it was written (`gen` in an
        // `extend`ed file elsewhere still excludes this project's `gen/`); a path only below
        // the folder of the file that wrote it.
        let from_project = relative_to(file, &folder);
        exclude
            .iter()
            .any(|(base, pattern)| {
                let relative = match pattern {
                    NamePattern::Component(_) => from_project.clone(),
                    NamePattern::Path(_) => relative_to(file, base),
                };
                relative.is_some_and(|relative| pattern.covers(&relative))
            })
            .then_some("excluded")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extend_exclude_adds_and_nearest_config_wins() {
        let root = std::env::temp_dir().join(format!("lspc-ruff-{}", std::process::id()));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.ruff]\nextend-exclude = [\"docs/conf.py\", \"*_pb2.py\"]\n",
        )
        .unwrap();
        std::fs::write(root.join("sub/ruff.toml"), "exclude = [\"gen\"]\n").unwrap();
        let files = RuffFiles::new(&root);
        assert_eq!(
            files.leaves_out(&root.join("docs/conf.py")),
            Some("excluded")
        );
        assert_eq!(files.leaves_out(&root.join("a/x_pb2.py")), Some("excluded"));
        assert_eq!(files.leaves_out(&root.join("venv/x.py")), Some("excluded"));
        assert_eq!(files.leaves_out(&root.join("src/a.py")), None);
        assert_eq!(
            files.leaves_out(&root.join("sub/gen/a.py")),
            Some("excluded")
        );
        // `exclude` in sub/ruff.toml replaced the defaults there.
        assert_eq!(files.leaves_out(&root.join("sub/venv/a.py")), None);
        // A workspace root below the configuration still reads it, as ruff's server does.
        let below = RuffFiles::new(&root.join("docs"));
        assert_eq!(
            below.leaves_out(&root.join("docs/conf.py")),
            Some("excluded")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// The two layouts checked against `ruff check --show-files` (ruff 0.17.6): `base/ruff.toml`
    /// with `extend-exclude = ["gen", "sub/x.py"]`, extended by `proj/pyproject.toml`.
    #[test]
    fn extend_chains_add_their_extend_exclude_and_the_nearest_exclude_wins() {
        let root = std::env::temp_dir().join(format!("lspc-ruff-extend-{}", std::process::id()));
        std::fs::create_dir_all(root.join("base")).unwrap();
        std::fs::create_dir_all(root.join("proj")).unwrap();
        std::fs::write(
            root.join("base/ruff.toml"),
            "extend-exclude = [\"gen\", \"sub/x.py\"]\n",
        )
        .unwrap();
        let project = root.join("proj");
        let excluded = |pyproject: &str| -> Vec<&'static str> {
            std::fs::write(project.join("pyproject.toml"), pyproject).unwrap();
            let files = RuffFiles::new(&project);
            ["gen/a.py", "sub/x.py", "y.py", "z.py", "venv/v.py"]
                .into_iter()
                .filter(|file| files.leaves_out(&project.join(file)).is_some())
                .collect()
        };
        // `sub/x.py` is relative to base/, so proj/sub/x.py stays; the bare `gen` matches.
        assert_eq!(
            excluded("[tool.ruff]\nextend = \"../base/ruff.toml\"\nextend-exclude = [\"y.py\"]\n"),
            ["gen/a.py", "y.py", "venv/v.py"]
        );
        // The project's own `exclude` replaces the defaults (venv/ is linted); base's
        // `extend-exclude` still adds.
        assert_eq!(
            excluded("[tool.ruff]\nextend = \"../base/ruff.toml\"\nexclude = [\"y.py\"]\n"),
            ["gen/a.py", "y.py"]
        );
        // A cycle is a configuration error, not a hang.
        std::fs::write(
            root.join("base/ruff.toml"),
            "extend = \"../proj/pyproject.toml\"\n",
        )
        .unwrap();
        let files = RuffFiles::new(&project);
        std::fs::write(
            project.join("pyproject.toml"),
            "[tool.ruff]\nextend = \"../base/ruff.toml\"\n",
        )
        .unwrap();
        assert_eq!(files.leaves_out(&project.join("z.py")), None);
        assert!(
            files.errors()[0]
                .message
                .starts_with("`extend` cycle through"),
            "{:?}",
            files.errors()
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
