//! ruff's file set: `exclude` (replacing ruff's defaults) and `extend-exclude` of the nearest
//! `ruff.toml`, `.ruff.toml` or `pyproject.toml` with a `[tool.ruff]` table, looked up from the
//! file's folder towards the root, as `ruff check` resolves configuration per file
//! (docs/configuration.md "Config file discovery"), past the workspace root as ruff's server
//! does. Patterns are relative to the file that wrote them. `extend` (inheriting another file)
//! is not followed.

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

/// One ruff configuration: its folder and its exclusions.
#[derive(Debug, Clone)]
struct RuffConfig {
    folder: PathBuf,
    exclude: Vec<NamePattern>,
}

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

/// The ruff configuration written in `folder` itself, if any.
fn read_config(folder: &Path) -> Result<Option<RuffConfig>, ProjectError> {
    let mut table: Option<Value> = None;
    for name in ["ruff.toml", ".ruff.toml"] {
        let file = folder.join(name);
        if file.is_file() {
            table = Some(super::toml_file(&file)?);
            break;
        }
    }
    if table.is_none() {
        table = super::pyproject_tool(&folder.join("pyproject.toml"), "ruff")?;
    }
    let Some(table) = table else {
        return Ok(None);
    };
    let strings = |key: &str| -> Option<Vec<String>> {
        let array = table.get(key)?.as_array()?;
        Some(
            array
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        )
    };
    let mut exclude = strings("exclude")
        .unwrap_or_else(|| DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect());
    exclude.extend(strings("extend-exclude").unwrap_or_default());
    Ok(Some(RuffConfig {
        folder: folder.to_path_buf(),
        exclude: exclude.iter().filter_map(|p| NamePattern::new(p)).collect(),
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
        let (base, exclude) = match self.config_for(folder) {
            Some(config) => (config.folder, config.exclude),
            None => (
                self.root.clone(),
                DEFAULT_EXCLUDE
                    .iter()
                    .filter_map(|p| NamePattern::new(p))
                    .collect(),
            ),
        };
        let relative = relative_to(file, &base)?;
        exclude
            .iter()
            .any(|pattern| pattern.covers(&relative))
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
}
