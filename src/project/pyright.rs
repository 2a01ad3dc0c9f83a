//! pyright's and basedpyright's file set: `include`/`exclude` of `pyrightconfig.json` (which wins)
//! or `[tool.pyright]` in `pyproject.toml`, both at the server's workspace folder, as the
//! `pyright` CLI reads them (docs/configuration.md "Main Configuration Options").
//!
//! Defaults, as pyright applies them: `include` is the whole folder; `exclude` is
//! `**/node_modules`, `**/__pycache__` and `**/.*` when the configuration gives none.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::pattern::{relative_to, PathPattern};
use super::{jsonc, FileSet, ProjectError};

const DEFAULT_EXCLUDE: &[&str] = &["**/node_modules", "**/__pycache__", "**/.*"];

/// The file set of a pyright-family server whose workspace folder is `folder`.
#[derive(Debug, Clone)]
pub struct PyrightFiles {
    folder: PathBuf,
    include: Vec<PathPattern>,
    exclude: Vec<PathPattern>,
}

impl PyrightFiles {
    /// Reads the configuration in `folder`. A file that cannot be parsed is an error (pyright
    /// itself then falls back to defaults and says so); no configuration means defaults.
    pub fn load(folder: &Path) -> Result<PyrightFiles, ProjectError> {
        let config_file = folder.join("pyrightconfig.json");
        let section = if config_file.is_file() {
            let text = super::read(&config_file)?;
            let value = jsonc::parse(&text).map_err(|message| ProjectError {
                file: config_file.clone(),
                message,
            })?;
            Some(value)
        } else {
            super::pyproject_tool(&folder.join("pyproject.toml"), "pyright")?
        };
        let strings = |key: &str| -> Option<Vec<String>> {
            let array = section.as_ref()?.get(key)?.as_array()?;
            Some(
                array
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            )
        };
        let include = strings("include").unwrap_or_default();
        let exclude = strings("exclude")
            .unwrap_or_else(|| DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect());
        Ok(PyrightFiles {
            folder: folder.to_path_buf(),
            include: include.iter().filter_map(|p| PathPattern::new(p)).collect(),
            exclude: exclude.iter().filter_map(|p| PathPattern::new(p)).collect(),
        })
    }
}

impl FileSet for PyrightFiles {
    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        let Some(relative) = relative_to(file, &self.folder) else {
            // Outside the workspace folder: pyright's CLI would not list it either, but lspc
            // only walks inside the root, so this is a file the user named.
            return Some("outside");
        };
        if !self.include.is_empty() && !self.include.iter().any(|p| p.covers(&relative)) {
            return Some("outside");
        }
        if self.exclude.iter().any(|p| p.covers(&relative)) {
            return Some("excluded");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyproject_include_and_default_exclude() {
        let folder = std::env::temp_dir().join(format!("lspc-pyright-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("pyproject.toml"),
            "[project]\nname = \"x\"\n[tool.pyright]\ninclude = [\"src\"]\n",
        )
        .unwrap();
        let files = PyrightFiles::load(&folder).unwrap();
        assert_eq!(files.leaves_out(&folder.join("src/a.py")), None);
        assert_eq!(
            files.leaves_out(&folder.join("tests/a.py")),
            Some("outside")
        );
        assert_eq!(
            files.leaves_out(&folder.join("src/.hidden/a.py")),
            Some("excluded")
        );
        std::fs::write(
            folder.join("pyrightconfig.json"),
            "{ // wins\n \"exclude\": [\"src/gen\"], }",
        )
        .unwrap();
        let files = PyrightFiles::load(&folder).unwrap();
        assert_eq!(files.leaves_out(&folder.join("tests/a.py")), None);
        assert_eq!(
            files.leaves_out(&folder.join("src/gen/a.py")),
            Some("excluded")
        );
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
