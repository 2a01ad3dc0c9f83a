//! ruff's file set: `exclude` (replacing ruff's defaults) and `extend-exclude` of the nearest
//! `ruff.toml`, `.ruff.toml` or `pyproject.toml` with a `[tool.ruff]` table, looked up from the
//! file's folder towards the root, as `ruff check` resolves configuration per file
//! (docs/configuration.md "Config file discovery"), past the workspace root as ruff's server
//! does. Patterns are relative to the file that wrote them. `extend` is followed as ruff 0.17
//! follows it (checked with `ruff check --show-files`): the nearest file of the chain that sets
//! `exclude` gives it, and every file's `extend-exclude` adds to it; `include` and
//! `extend-include` likewise.
//!
//! Two verdicts: a file in the exclude is one ruff's server never lints, even open
//! ([`FileSet::never_checks`]); a file outside the `include` is one `ruff check .` does not
//! walk into but the server lints when it is opened, so only a walk leaves ruff out of it.

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

/// ruff's `include` default (ruff 0.17 `ruff_workspace::settings::INCLUDE`).
const DEFAULT_INCLUDE: &[&str] = &["*.py", "*.pyi", "*.ipynb", "**/pyproject.toml"];

/// One ruff configuration: its folder, its exclusions and its inclusions, each with the folder
/// of the file that wrote it (an `extend`ed file's patterns are relative to that file).
#[derive(Debug, Clone)]
struct RuffConfig {
    folder: PathBuf,
    exclude: Vec<(PathBuf, NamePattern)>,
    include: Vec<(PathBuf, NamePattern)>,
}

/// `names` as patterns relative to `base`.
fn patterns_at(names: &[&str], base: &Path) -> Vec<(PathBuf, NamePattern)> {
    names
        .iter()
        .filter_map(|name| NamePattern::new(name))
        .map(|pattern| (base.to_path_buf(), pattern))
        .collect()
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
    /// The user's configuration folder's parent (`$XDG_CONFIG_HOME`, else `~/.config`).
    user_config_home: Option<PathBuf>,
    /// The user's configuration, read once, for files no project configuration governs.
    user: std::cell::OnceCell<Option<RuffConfig>>,
}

impl RuffFiles {
    /// Whether `config` (`None`: ruff's defaults relative to the root) excludes `path`, a file
    /// or a folder, or one of its folders.
    fn excludes(&self, config: Option<RuffConfig>, path: &Path) -> bool {
        let (folder, exclude) = match config.or_else(|| self.user_config()) {
            Some(config) => (config.folder, config.exclude),
            None => (self.root.clone(), patterns_at(DEFAULT_EXCLUDE, &self.root)),
        };
        // A bare name matches a folder of the project wherever it was written (`gen` in an
        // `extend`ed file elsewhere still excludes this project's `gen/`); a path only below
        // the folder of the file that wrote it.
        let from_project = relative_to(path, &folder);
        exclude.iter().any(|(base, pattern)| {
            let relative = match pattern {
                NamePattern::Component(_) => from_project.clone(),
                NamePattern::Path(_) => relative_to(path, base),
            };
            relative.is_some_and(|relative| pattern.covers(&relative))
        })
    }

    /// Whether `config` (`None`: ruff's defaults relative to the root) includes the file
    /// `path`: its name or its path relative to the folder of the file that wrote a pattern
    /// matches some `include` or `extend-include` entry.
    fn includes(&self, config: Option<RuffConfig>, path: &Path) -> bool {
        let include = match config.or_else(|| self.user_config()) {
            Some(config) => config.include,
            None => patterns_at(DEFAULT_INCLUDE, &self.root),
        };
        include.iter().any(|(base, pattern)| {
            relative_to(path, base).is_some_and(|relative| pattern.includes(&relative))
        })
    }

    /// ruff's user configuration (`find_user_settings_toml`): `.ruff.toml`, `ruff.toml` or a
    /// `pyproject.toml` with `[tool.ruff]` in `$XDG_CONFIG_HOME/ruff` (`~/.config/ruff`), used
    /// by `ruff check` and ruff's server when no project configuration is found. Its paths are
    /// taken relative to the workspace root (ruff resolves them against its working directory).
    fn user_config(&self) -> Option<RuffConfig> {
        self.user
            .get_or_init(|| {
                let config_home = self.user_config_home.as_ref()?;
                let config = match read_config(&config_home.join("ruff")) {
                    Ok(config) => config?,
                    Err(error) => {
                        self.errors.borrow_mut().push(error);
                        return None;
                    }
                };
                Some(RuffConfig {
                    folder: self.root.clone(),
                    exclude: config
                        .exclude
                        .into_iter()
                        .map(|(_, pattern)| (self.root.clone(), pattern))
                        .collect(),
                    include: config
                        .include
                        .into_iter()
                        .map(|(_, pattern)| (self.root.clone(), pattern))
                        .collect(),
                })
            })
            .clone()
    }

    pub fn new(root: &Path) -> RuffFiles {
        RuffFiles {
            root: root.to_path_buf(),
            by_folder: Default::default(),
            errors: Default::default(),
            user_config_home: std::env::var_os("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
                .or_else(|| {
                    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config"))
                }),
            user: Default::default(),
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
            // ruff's server indexes the configurations of the workspace by walking it, and
            // never enters a folder its parent's configuration excludes: `sub/ruff.toml` below
            // an excluded `sub` is not read, and `sub/a.py` stays excluded (as `ruff check .`
            // never walks into `sub`).
            Some(_)
                if folder != self.root.as_path()
                    && folder.starts_with(&self.root)
                    && folder
                        .parent()
                        .is_some_and(|parent| self.excludes(self.config_for(parent), folder)) =>
            {
                folder.parent().and_then(|parent| self.config_for(parent))
            }
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
    // `.ruff.toml` wins over `ruff.toml`, which wins over `pyproject.toml` (ruff_workspace
    // `settings_toml`; `ruff check --show-settings` names `.ruff.toml` when both exist).
    for name in [".ruff.toml", "ruff.toml"] {
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
    let mut lint_exclude: Option<Vec<(PathBuf, NamePattern)>> = None;
    let mut extend_exclude: Vec<(PathBuf, NamePattern)> = Vec::new();
    let mut include: Option<Vec<(PathBuf, NamePattern)>> = None;
    let mut extend_include: Vec<(PathBuf, NamePattern)> = Vec::new();
    let mut chain = vec![file.clone()];
    loop {
        let base = file.parent().unwrap_or(folder).to_path_buf();
        let patterns = |keys: &[&str]| -> Option<Vec<(PathBuf, NamePattern)>> {
            let array = keys
                .iter()
                .try_fold(&table, |value, key| value.get(key))?
                .as_array()?;
            Some(
                array
                    .iter()
                    .filter_map(Value::as_str)
                    .flat_map(expand_braces)
                    .filter_map(|text| NamePattern::new(&text))
                    .map(|pattern| (base.clone(), pattern))
                    .collect(),
            )
        };
        if exclude.is_none() {
            exclude = patterns(&["exclude"]);
        }
        // `lint.exclude`: ruff's server leaves a file out when it or one of its folders
        // matches, as it does for `exclude` (`ruff check` itself matches the file only, so it
        // lints `gen/a.py` under `lint.exclude = ["gen"]` while the server answers nothing).
        if lint_exclude.is_none() {
            lint_exclude = patterns(&["lint", "exclude"]);
        }
        extend_exclude.extend(patterns(&["extend-exclude"]).unwrap_or_default());
        if include.is_none() {
            include = patterns(&["include"]);
        }
        extend_include.extend(patterns(&["extend-include"]).unwrap_or_default());
        let Some(next) = table.get("extend").and_then(Value::as_str) else {
            break;
        };
        let next = match expand_home_and_variables(next, |name| std::env::var(name).ok()) {
            Some(next) => base.join(next),
            None => {
                return Err(ProjectError {
                    file: file.clone(),
                    message: format!("`extend` names an unset variable: {next}"),
                })
            }
        };
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
    let mut exclude = exclude.unwrap_or_else(|| patterns_at(DEFAULT_EXCLUDE, folder));
    exclude.extend(extend_exclude);
    exclude.extend(lint_exclude.unwrap_or_default());
    let mut include = include.unwrap_or_else(|| patterns_at(DEFAULT_INCLUDE, folder));
    include.extend(extend_include);
    Ok(Some(RuffConfig {
        folder: folder.to_path_buf(),
        exclude,
        include,
    }))
}

/// ruff's patterns are `globset` globs, where `{a,b}` is either `a` or `b` (the `glob` crate
/// has no alternation): `{gen,out}` becomes `gen` and `out`. Nested groups are expanded from
/// the innermost out; an unclosed `{` is kept as it is.
fn expand_braces(text: &str) -> Vec<String> {
    let Some(close) = text.find('}') else {
        return vec![text.to_owned()];
    };
    let Some(open) = text[..close].rfind('{') else {
        return vec![text.to_owned()];
    };
    let (before, after) = (&text[..open], &text[close + 1..]);
    let mut expanded: Vec<String> = Vec::new();
    for choice in text[open + 1..close].split(',') {
        for pattern in expand_braces(&format!("{before}{choice}{after}")) {
            if !expanded.contains(&pattern) {
                expanded.push(pattern);
            }
        }
    }
    expanded
}

/// `extend` as ruff reads it (`shellexpand::full`): a leading `~` is `$HOME`, and `$NAME` and
/// `${NAME}` are environment variables. `None` when a variable (or `HOME`) is unset, which
/// ruff reports as an error.
fn expand_home_and_variables(
    text: &str,
    variable: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let mut expanded = String::new();
    let mut rest = text;
    if rest == "~" || rest.starts_with("~/") {
        expanded.push_str(&variable("HOME")?);
        rest = &rest[1..];
    }
    while let Some(dollar) = rest.find('$') {
        expanded.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, next) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}')?;
            (&braced[..end], &braced[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            expanded.push('$');
        } else {
            expanded.push_str(&variable(name)?);
        }
        rest = next;
    }
    expanded.push_str(rest);
    Some(expanded)
}

impl FileSet for RuffFiles {
    fn errors(&self) -> Vec<ProjectError> {
        self.errors.borrow().clone()
    }

    fn never_checks(&self, file: &Path) -> Option<&'static str> {
        let folder = file.parent()?;
        self.excludes(self.config_for(folder), file)
            .then_some("excluded")
    }

    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        let folder = file.parent()?;
        let config = self.config_for(folder);
        if self.excludes(config.clone(), file) {
            return Some("excluded");
        }
        (!self.includes(config, file)).then_some("outside")
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

    /// Each layout checked against `ruff check --show-settings`/`--show-files` and against what
    /// ruff 0.17.6's server answers for the open file (before: lspc reported each excluded
    /// file clean, or left ruff out of a file it lints).
    #[test]
    fn the_file_ruff_reads_and_what_its_server_leaves_out() {
        let root = std::env::temp_dir().join(format!("lspc-ruff-server-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        // `.ruff.toml` wins over `ruff.toml` in the same folder.
        write("dots/ruff.toml", "extend-exclude = [\"a\"]\n");
        write("dots/.ruff.toml", "extend-exclude = [\"b\"]\n");
        let files = RuffFiles::new(&root.join("dots"));
        assert_eq!(files.leaves_out(&root.join("dots/a/x.py")), None);
        assert_eq!(
            files.leaves_out(&root.join("dots/b/y.py")),
            Some("excluded")
        );
        // `lint.exclude` leaves out a file below a matching folder (ruff's server matches every
        // folder of the file, as for `exclude`).
        write(
            "lint/pyproject.toml",
            "[tool.ruff.lint]\nexclude = [\"gen\"]\n",
        );
        let files = RuffFiles::new(&root.join("lint"));
        assert_eq!(
            files.leaves_out(&root.join("lint/gen/a.py")),
            Some("excluded")
        );
        assert_eq!(files.leaves_out(&root.join("lint/b.py")), None);
        // A configuration inside a folder its parent's configuration excludes is never read.
        write("nested/ruff.toml", "extend-exclude = [\"sub\"]\n");
        write("nested/sub/ruff.toml", "line-length = 100\n");
        let files = RuffFiles::new(&root.join("nested"));
        assert_eq!(
            files.leaves_out(&root.join("nested/sub/a.py")),
            Some("excluded")
        );
        // ruff's user configuration governs a file no project configuration does.
        write("home/ruff/ruff.toml", "extend-exclude = [\"gen\"]\n");
        write("bare/b.py", "");
        let mut files = RuffFiles::new(&root.join("bare"));
        files.user_config_home = Some(root.join("home"));
        assert_eq!(
            files.leaves_out(&root.join("bare/gen/a.py")),
            Some("excluded")
        );
        assert_eq!(files.leaves_out(&root.join("bare/b.py")), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn extend_expands_home_and_variables_as_ruff_does() {
        let variable = |name: &str| match name {
            "HOME" => Some("/home/me".to_string()),
            "BASE" => Some("/etc/base".to_string()),
            _ => None,
        };
        let expand = |text: &str| expand_home_and_variables(text, variable);
        assert_eq!(expand("~/ruff.toml").as_deref(), Some("/home/me/ruff.toml"));
        assert_eq!(
            expand("$BASE/ruff.toml").as_deref(),
            Some("/etc/base/ruff.toml")
        );
        assert_eq!(
            expand("${BASE}x/ruff.toml").as_deref(),
            Some("/etc/basex/ruff.toml")
        );
        assert_eq!(expand("../a~/b.toml").as_deref(), Some("../a~/b.toml"));
        assert_eq!(expand("$UNSET/ruff.toml"), None);
    }

    /// Found breaking 7f82a98: `extend-exclude = ["{gen,out}"]` excludes both folders for
    /// ruff (globset alternation), while lspc read one literal name and reported both clean.
    #[test]
    fn brace_alternatives_are_expanded_as_globset_does() {
        assert_eq!(expand_braces("{gen,out}"), ["gen", "out"]);
        assert_eq!(
            expand_braces("src/{a,b}/*.{py,pyi}"),
            ["src/a/*.py", "src/a/*.pyi", "src/b/*.py", "src/b/*.pyi"]
        );
        assert_eq!(expand_braces("{a,{b,c}}"), ["a", "b", "c"]);
        assert_eq!(expand_braces("plain"), ["plain"]);
        assert_eq!(expand_braces("{open"), ["{open"]);
    }
}
