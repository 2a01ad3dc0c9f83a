//! pyright's and basedpyright's file set: `include`/`exclude` of `pyrightconfig.json` (which wins)
//! or `[tool.pyright]` in `pyproject.toml`, both at the server's workspace folder, as the
//! `pyright` CLI reads them (docs/configuration.md "Main Configuration Options"); a
//! `pyproject.toml` there without `[tool.pyright]` defers to the configuration above it, and a
//! configuration's `extends` chain gives the `include`/`exclude` it does not set itself.
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
    /// The server's workspace folder (pyright's `projectRoot`): the default `include` (the
    /// whole folder) and the default `exclude` are relative to it.
    folder: PathBuf,
    /// `include` patterns, each with the folder it is relative to: that of the configuration
    /// file that gave it (the one found, see [`find_configuration`], or a base it `extends`).
    /// Empty: the whole `folder`.
    include: Vec<(PathBuf, PathPattern)>,
    /// `exclude` patterns, anchored as `include`'s ([`DEFAULT_EXCLUDE`] at `folder` when no
    /// configuration gives any).
    exclude: Vec<(PathBuf, PathPattern)>,
}

impl PyrightFiles {
    /// Reads the configuration pyright uses for `folder`, following its `extends` chain. A
    /// file that cannot be parsed is an error (pyright itself then falls back to defaults and
    /// says so); no configuration means defaults.
    pub fn load(folder: &Path) -> Result<PyrightFiles, ProjectError> {
        let layers = match find_configuration(folder)? {
            Some((config_folder, section)) => extended_layers(config_folder, section)?,
            None => Vec::new(),
        };
        let anchored = |config_folder: &Path, section: &Value, key: &str| {
            let array = section.get(key)?.as_array()?;
            Some(
                array
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(PathPattern::new)
                    .map(|pattern| (config_folder.to_path_buf(), pattern))
                    .collect::<Vec<_>>(),
            )
        };
        // pyright applies the base first: a key the extending configuration sets replaces the
        // base's (`ConfigOptions.initializeFromJson`, once per layer).
        let mut include = Vec::new();
        let mut exclude = None;
        for (config_folder, section) in layers.iter().rev() {
            if let Some(patterns) = anchored(config_folder, section, "include") {
                include = patterns;
            }
            if let Some(patterns) = anchored(config_folder, section, "exclude") {
                exclude = Some(patterns);
            }
        }
        let exclude = exclude.unwrap_or_else(|| {
            DEFAULT_EXCLUDE
                .iter()
                .filter_map(|p| PathPattern::new(p))
                .map(|pattern| (folder.to_path_buf(), pattern))
                .collect()
        });
        Ok(PyrightFiles {
            folder: crate::uri::canonical(folder),
            include,
            exclude,
        })
    }
}

/// The configuration found and every base its `extends` names, nearest first, each with its
/// folder. `extends` is a path relative to the folder of the file that names it, to a
/// `pyrightconfig.json`-style file or a `pyproject.toml` (its `[tool.pyright]`); a base that is
/// missing or has no section ends the chain, as does a cycle (pyright says so and goes on).
fn extended_layers(
    config_folder: PathBuf,
    section: Value,
) -> Result<Vec<(PathBuf, Value)>, ProjectError> {
    let mut layers = vec![(config_folder, section)];
    let mut seen: Vec<PathBuf> = Vec::new();
    loop {
        let (folder, section) = layers.last().expect("one layer at least");
        let Some(base) = section.get("extends").and_then(Value::as_str) else {
            break;
        };
        let base_file = crate::uri::canonical(&folder.join(base));
        if seen.contains(&base_file) || !base_file.is_file() {
            break;
        }
        seen.push(base_file.clone());
        let base_section = if base_file.extension().is_some_and(|ext| ext == "toml") {
            super::pyproject_tool(&base_file, "pyright")?
        } else {
            Some(read_pyrightconfig(&base_file)?)
        };
        let Some(base_section) = base_section else {
            break;
        };
        let base_folder = base_file.parent().unwrap_or(folder).to_path_buf();
        layers.push((base_folder, base_section));
    }
    Ok(layers)
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

impl PyrightFiles {
    /// [`FileSet::leaves_out`], or with `include_applies` false [`FileSet::leaves_out_when_named`].
    fn judge(&self, file: &Path, include_applies: bool) -> Option<&'static str> {
        if relative_to(file, &self.folder).is_none() {
            // Outside the workspace folder: pyright's CLI would not list it either, but lspc
            // only walks inside the root, so this is a file the user named.
            return Some("outside");
        }
        let covers = |patterns: &[(PathBuf, PathPattern)]| {
            patterns.iter().any(|(base, pattern)| {
                relative_to(file, base).is_some_and(|relative| pattern.covers(&relative))
            })
        };
        if include_applies && !self.include.is_empty() && !covers(&self.include) {
            return Some("outside");
        }
        if covers(&self.exclude) {
            return Some("excluded");
        }
        None
    }
}

impl FileSet for PyrightFiles {
    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        self.judge(file, true)
    }

    /// pyright's CLI takes the paths it is given in place of `include` ("files specified on the
    /// command line override include"), and still leaves out what `exclude` covers under them:
    /// `pyright tests` in the project. A named folder that is the project's own folder, or holds
    /// it (`lspc check services/beta` in a monorepo, one pyright per project), names the project:
    /// its `include` stands, as for `pyright` run in it.
    fn leaves_out_when_named(&self, file: &Path, folder: &Path) -> Option<&'static str> {
        let inside_the_project = folder != self.folder && folder.starts_with(&self.folder);
        self.judge(file, !inside_the_project)
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

    /// A configuration's `extends` gives the keys it does not set (pyright 1.1.414: `pyright`
    /// in `pkg/` with `{"extends": "./base.json"}` and `include = ["src"]` in the base checks
    /// only `src/`); patterns stay relative to the file that wrote them.
    #[test]
    fn extends_gives_the_keys_the_configuration_does_not_set() {
        let root = std::env::temp_dir().join(format!("lspc-pyright-ext-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |relative: &str, text: &str| {
            let file = root.join(relative);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        write(
            "pkg/base.json",
            "{\"include\": [\"src\"], \"exclude\": [\"src/gen\"]}",
        );
        write("pkg/pyrightconfig.json", "{\"extends\": \"./base.json\"}");
        let check = |file: &str, expected: Option<&str>| {
            let files = PyrightFiles::load(&root.join("pkg")).unwrap();
            assert_eq!(files.leaves_out(&root.join(file)), expected, "{file}");
        };
        check("pkg/src/a.py", None);
        check("pkg/tests/t.py", Some("outside"));
        check("pkg/src/gen/x.py", Some("excluded"));
        // The extending configuration's own include wins; the base's exclude stays.
        write(
            "pkg/pyrightconfig.json",
            "{\"extends\": \"./base.json\", \"include\": [\"tests\", \"src\"]}",
        );
        check("pkg/tests/t.py", None);
        check("pkg/src/gen/x.py", Some("excluded"));
        // A base in a pyproject.toml above, its patterns relative to its own folder.
        write(
            "pyproject.toml",
            "[tool.pyright]\ninclude = [\"pkg/tests\"]\n",
        );
        write(
            "pkg/pyrightconfig.json",
            "{\"extends\": \"../pyproject.toml\"}",
        );
        check("pkg/tests/t.py", None);
        check("pkg/src/a.py", Some("outside"));
        // A base that extends back is read once.
        write("pkg/pyrightconfig.json", "{\"extends\": \"./base.json\"}");
        write(
            "pkg/base.json",
            "{\"extends\": \"./pyrightconfig.json\", \"include\": [\"src\"]}",
        );
        check("pkg/src/a.py", None);
        check("pkg/tests/t.py", Some("outside"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
