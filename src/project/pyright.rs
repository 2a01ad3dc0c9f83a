//! pyright's and basedpyright's file set: `include`/`exclude` of `pyrightconfig.json` (which wins)
//! or `[tool.pyright]` in `pyproject.toml`, both at the server's workspace folder, as the
//! `pyright` CLI reads them (docs/configuration.md "Main Configuration Options"); a
//! `pyproject.toml` there without `[tool.pyright]` defers to the configuration above it.
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
    /// The server's workspace folder (pyright's `projectRoot`): the default `include` and the
    /// default `exclude` are relative to it.
    folder: PathBuf,
    /// The folder of the configuration in force: `folder` itself, or the folder above it where
    /// pyright found one (see [`find_configuration`]); `include` and `exclude` patterns given by
    /// that configuration are relative to it.
    config_folder: PathBuf,
    include: Vec<PathPattern>,
    exclude: Vec<PathPattern>,
    /// Whether `exclude` came from the configuration (else it is [`DEFAULT_EXCLUDE`]).
    exclude_configured: bool,
}

impl PyrightFiles {
    /// Reads the configuration pyright uses for `folder`. A file that cannot be parsed is an
    /// error (pyright itself then falls back to defaults and says so); no configuration means
    /// defaults.
    pub fn load(folder: &Path) -> Result<PyrightFiles, ProjectError> {
        let (config_folder, section) = match find_configuration(folder)? {
            Some((config_folder, section)) => (config_folder, Some(section)),
            None => (folder.to_path_buf(), None),
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
        let configured_exclude = strings("exclude");
        let exclude_configured = configured_exclude.is_some();
        let exclude = configured_exclude
            .unwrap_or_else(|| DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect());
        Ok(PyrightFiles {
            folder: folder.to_path_buf(),
            config_folder,
            include: include.iter().filter_map(|p| PathPattern::new(p)).collect(),
            exclude: exclude.iter().filter_map(|p| PathPattern::new(p)).collect(),
            exclude_configured,
        })
    }
}

/// The configuration pyright 1.1.414 reads for workspace folder `folder`, with the folder it
/// is in: `pyrightconfig.json` there (which wins), else `[tool.pyright]` of `pyproject.toml`
/// there. A `pyproject.toml` without `[tool.pyright]` is no configuration: pyright then takes
/// the nearest `pyrightconfig.json` in the folders above, else the nearest `pyproject.toml`
/// above, read by the same rule (its `_getExtendedConfigurations`, for the CLI and the language
/// server alike). So `examples/demo/pyproject.toml` with only `[project]` leaves the example
/// under the `include` of the repository's own `[tool.pyright]`. `None`: defaults.
fn find_configuration(folder: &Path) -> Result<Option<(PathBuf, Value)>, ProjectError> {
    let config_file = folder.join("pyrightconfig.json");
    if config_file.is_file() {
        return Ok(Some((
            folder.to_path_buf(),
            read_pyrightconfig(&config_file)?,
        )));
    }
    let mut pyproject = folder.join("pyproject.toml");
    if !pyproject.is_file() {
        return Ok(None);
    }
    loop {
        let pyproject_folder = pyproject.parent().unwrap_or(folder).to_path_buf();
        if let Some(section) = super::pyproject_tool(&pyproject, "pyright")? {
            return Ok(Some((pyproject_folder, section)));
        }
        let Some(above) = pyproject_folder.parent() else {
            return Ok(None);
        };
        let nearest = |name: &str| {
            above
                .ancestors()
                .map(|ancestor| ancestor.join(name))
                .find(|file| file.is_file())
        };
        if let Some(config_file) = nearest("pyrightconfig.json") {
            let config_folder = config_file.parent().unwrap_or(above).to_path_buf();
            return Ok(Some((config_folder, read_pyrightconfig(&config_file)?)));
        }
        let Some(next) = nearest("pyproject.toml") else {
            return Ok(None);
        };
        pyproject = next;
    }
}

fn read_pyrightconfig(config_file: &Path) -> Result<Value, ProjectError> {
    let text = super::read(config_file)?;
    jsonc::parse(&text).map_err(|message| ProjectError {
        file: config_file.to_path_buf(),
        message,
    })
}

impl FileSet for PyrightFiles {
    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        let Some(relative) = relative_to(file, &self.folder) else {
            // Outside the workspace folder: pyright's CLI would not list it either, but lspc
            // only walks inside the root, so this is a file the user named.
            return Some("outside");
        };
        let relative_to_config = relative_to(file, &self.config_folder);
        let config_covers = |patterns: &[PathPattern]| {
            relative_to_config
                .as_ref()
                .is_some_and(|relative| patterns.iter().any(|p| p.covers(relative)))
        };
        if !self.include.is_empty() && !config_covers(&self.include) {
            return Some("outside");
        }
        let excluded = if self.exclude_configured {
            config_covers(&self.exclude)
        } else {
            self.exclude.iter().any(|p| p.covers(&relative))
        };
        if excluded {
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

    /// pallets/click: `examples/*/pyproject.toml` has no `[tool.pyright]`, so pyright takes the
    /// repository's `[tool.pyright]` (its include relative to the repository) for an instance
    /// whose workspace folder is the example.
    #[test]
    fn pyproject_without_tool_pyright_defers_to_the_configuration_above() {
        let root = std::env::temp_dir().join(format!("lspc-pyright-up-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |relative: &str, text: &str| {
            let file = root.join(relative);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        write(
            "pyproject.toml",
            "[tool.pyright]\ninclude = [\"src\", \"examples/kept\"]\nexclude = [\"**/gen\"]\n",
        );
        write(
            "examples/demo/pyproject.toml",
            "[project]\nname = \"demo\"\n",
        );
        write(
            "examples/kept/pyproject.toml",
            "[project]\nname = \"kept\"\n",
        );
        write("examples/own/pyproject.toml", "[tool.pyright]\n");
        write("examples/none/a.py", "");
        let check = |folder: &str, file: &str, expected: Option<&str>| {
            let files = PyrightFiles::load(&root.join(folder)).unwrap();
            assert_eq!(
                files.leaves_out(&root.join(file)),
                expected,
                "{folder}: {file}"
            );
        };
        check("examples/demo", "examples/demo/demo.py", Some("outside"));
        check("examples/kept", "examples/kept/kept.py", None);
        check(
            "examples/kept",
            "examples/kept/gen/made.py",
            Some("excluded"),
        );
        // Its own (empty) section: pyright's defaults for the example.
        check("examples/own", "examples/own/own.py", None);
        // No pyproject.toml at all in the folder: pyright looks no further.
        check("examples/none", "examples/none/a.py", None);
        // A pyrightconfig.json above wins over the nearer pyproject.toml above.
        write(
            "examples/pyproject.toml",
            "[project]\nname = \"examples\"\n",
        );
        write("pyrightconfig.json", "{\"include\": [\"examples/demo\"]}");
        check("examples/demo", "examples/demo/demo.py", None);
        check("examples/kept", "examples/kept/kept.py", Some("outside"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
