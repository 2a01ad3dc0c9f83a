//! Each server's own project file set, so `lspc check DIR` checks with every server what that
//! server's CLI would check (issue 10): pyright/basedpyright `include`/`exclude`, TypeScript's
//! tsconfig `files`/`include`/`exclude` (following `extends`), ruff's `exclude`/`extend-exclude`,
//! and for gopls the files `go vet ./...` compiles (build constraints, `testdata`, `vendor`).
//!
//! Invariants:
//! - Only files found by walking a folder are filtered; a file named on `lspc check`'s command
//!   line is checked by every server that serves it, except a server that never checks a file
//!   its set leaves out ([`ProjectFiles::never_checks`]: ruff), which is left out of it and said.
//! - Servers lspc does not know a project format for (clangd, rust-analyzer, configured ones with
//!   other programs) keep every file they claim.
//! - The server kind comes from the program the entry runs ([`Program::of`]:
//!   `pyright-langserver`, `basedpyright-langserver`, `ruff`, `typescript-language-server`,
//!   `gopls`, also through a launcher such as `python3 -m ruff` or `uvx ruff`), so a configured
//!   entry running the same program gets the same rules as the built-in one.
//! - A project file that cannot be read or parsed leaves that server with every file, and is
//!   reported once as a warning.

pub mod c_header;
mod go;
pub use go::in_an_ignored_folder as in_a_folder_go_ignores;
pub use go::module_folder as go_module_folder;
mod jsonc;
pub mod pattern;
mod pyright;
mod ruff;
mod ts_imports;
mod tsconfig;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{Program, ServerConfig};
use crate::diagnostics::Diagnostic;

/// A project configuration that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectError {
    pub file: PathBuf,
    /// Lowercase, with a 1-based line and column when the parser gave one.
    pub message: String,
}

impl fmt::Display for ProjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (its file set is not applied)",
            self.file.display(),
            self.message
        )
    }
}

/// One server's file set.
trait FileSet {
    /// `Some("outside")` when the file is not in the set's `include`, `Some("excluded")` when an
    /// `exclude` covers it, any other `Some(reason)` when the set has neither (Go's build
    /// constraints: the reason is said as it is), `None` when the server's CLI would check it.
    /// `file` is canonical.
    fn leaves_out(&self, file: &Path) -> Option<&'static str>;

    /// [`FileSet::leaves_out`] for a file found in `folder` (canonical), named on `lspc check`'s
    /// command line, as the server's CLI judges a file under a folder it is given. The same
    /// unless the CLI takes its arguments in place of `include` (pyright).
    fn leaves_out_when_named(&self, file: &Path, _folder: &Path) -> Option<&'static str> {
        self.leaves_out(file)
    }

    /// Configuration files met so far that could not be used.
    fn errors(&self) -> Vec<ProjectError> {
        Vec::new()
    }

    /// Why the server itself never checks `file`, even when lspc opens it and asks (the reason
    /// as [`FileSet::leaves_out`] gives it): ruff's server answers nothing for a document in
    /// its exclude, while `ruff check FILE` lints a file named on its command line. `None`
    /// for a server that checks any open file (pyright, tsserver, and ruff outside its
    /// `include`).
    fn never_checks(&self, _file: &Path) -> Option<&'static str> {
        None
    }

    /// Problems in the configuration files met so far that the project's own CLI reports as
    /// diagnostics of those files (tsc's TS6053 for a missing `extends` base), attributed to
    /// server `lspc`.
    fn diagnostics(&self) -> Vec<Diagnostic> {
        Vec::new()
    }
}

/// The file sets of the servers of one check, by server index in [`crate::config::Config`].
pub struct ProjectFiles {
    sets: Vec<Option<(String, Box<dyn FileSet>)>>,
    errors: Vec<ProjectError>,
}

impl ProjectFiles {
    /// Reads the project configuration of each server in `servers` (the config's list, in
    /// order); `root` is the workspace root (each server's workspace folder by default).
    pub fn load(root: &Path, servers: &[ServerConfig]) -> ProjectFiles {
        ProjectFiles::load_where(root, servers, |_| true)
    }

    /// [`ProjectFiles::load`] for the servers that never check a file their set leaves out
    /// (ruff) only; the others get no set, so nothing but those servers' configurations is
    /// read. For [`ProjectFiles::never_checks`] outside `lspc check`: a diagnostics request
    /// for one file.
    pub fn load_never_checking(root: &Path, servers: &[ServerConfig]) -> ProjectFiles {
        ProjectFiles::load_where(root, servers, |program| program == Program::Ruff)
    }

    /// The sets of the servers whose program ([`Program::of`]) `wanted` accepts.
    fn load_where(
        root: &Path,
        servers: &[ServerConfig],
        wanted: impl Fn(Program) -> bool,
    ) -> ProjectFiles {
        let mut sets: Vec<Option<(String, Box<dyn FileSet>)>> = Vec::new();
        let mut errors = Vec::new();
        for server in servers {
            let folder = server
                .workspace_folder
                .clone()
                .unwrap_or_else(|| root.to_path_buf());
            let Some(program) = Program::of(server).filter(|&program| wanted(program)) else {
                sets.push(None);
                continue;
            };
            let set: Option<(String, Box<dyn FileSet>)> = match program {
                Program::PyrightLangserver | Program::BasedpyrightLangserver
                    if server.workspace_folder.is_none() && !server.root_markers.is_empty() =>
                {
                    // One pyright instance per project root (issue 17): each reads its own.
                    Some((
                        server.name.clone(),
                        Box::new(PerProjectPyright::new(root, &server.root_markers)),
                    ))
                }
                Program::PyrightLangserver | Program::BasedpyrightLangserver => {
                    match pyright::PyrightFiles::load(&folder) {
                        Ok(files) => Some((server.name.clone(), Box::new(files))),
                        Err(error) => {
                            errors.push(error);
                            None
                        }
                    }
                }
                Program::Ruff => {
                    Some((server.name.clone(), Box::new(ruff::RuffFiles::new(&folder))))
                }
                Program::TypescriptLanguageServer => Some((
                    "tsconfig".to_string(),
                    Box::new(tsconfig::TsconfigFiles::new(&folder)),
                )),
                Program::Gopls => Some((server.name.clone(), Box::new(go::GoFiles::new(server)))),
                _ => None,
            };
            sets.push(set);
        }
        ProjectFiles { sets, errors }
    }

    /// Why server `index`'s project leaves `file` out, e.g. `outside pyright's include`,
    /// `in ruff's exclude`; `None` when the server should check it.
    pub fn leaves_out(&self, index: usize, file: &Path) -> Option<String> {
        let (label, set) = self.sets.get(index)?.as_ref()?;
        Some(reason_text(label, set.leaves_out(file)?))
    }

    /// [`ProjectFiles::leaves_out`] for a file found in `folder` (canonical), named on the
    /// command line: `lspc check tests` with pyright's `include = ["src"]` checks `tests/` with
    /// pyright, as `pyright tests` does (a new user's trial on pallets/itsdangerous, where only
    /// ruff looked at them and they were reported clean); a folder that is (or holds) the
    /// project's own keeps its `include`.
    pub fn leaves_out_when_named(
        &self,
        index: usize,
        file: &Path,
        folder: &Path,
    ) -> Option<String> {
        let (label, set) = self.sets.get(index)?.as_ref()?;
        Some(reason_text(label, set.leaves_out_when_named(file, folder)?))
    }

    /// Why server `index` will not check `file` even when lspc opens it and asks (see
    /// `FileSet::never_checks`: ruff and its exclude), e.g. `in ruff's exclude`; `None` when
    /// the server checks it. Asked for files `lspc check` keeps whole (named on its command
    /// line, or walked with `--all-files`): for such a server, an empty answer would be a
    /// "clean" that nothing checked.
    pub fn never_checks(&self, index: usize, file: &Path) -> Option<String> {
        let (label, set) = self.sets.get(index)?.as_ref()?;
        Some(reason_text(label, set.never_checks(file)?))
    }

    /// Diagnostics lspc found in the project configurations met so far (see
    /// `FileSet::diagnostics`), by file.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut found: Vec<Diagnostic> = Vec::new();
        for (_, set) in self.sets.iter().flatten() {
            for diagnostic in set.diagnostics() {
                if !found.contains(&diagnostic) {
                    found.push(diagnostic);
                }
            }
        }
        found
    }

    /// Configuration files that could not be used, each once.
    pub fn errors(&self) -> Vec<ProjectError> {
        let mut errors = self.errors.clone();
        for (_, set) in self.sets.iter().flatten() {
            for error in set.errors() {
                if !errors.contains(&error) {
                    errors.push(error);
                }
            }
        }
        errors
    }
}

/// TypeScript's file sets on their own, whatever server serves the files: for choosing a file
/// that stands for its project. tsserver answers a workspace question (`workspace/symbol`) from
/// the projects of the documents open on it, and a file no `tsconfig.json` includes (a
/// `jest.config.ts` beside a tsconfig with `"include": ["src/*.ts"]`) opens an inferred project
/// of its own, which holds nothing else.
pub struct TypeScriptProjects(tsconfig::TsconfigFiles);

impl TypeScriptProjects {
    /// The tsconfig/jsconfig files under `root` (the canonical workspace root), read lazily.
    pub fn new(root: &Path) -> TypeScriptProjects {
        TypeScriptProjects(tsconfig::TsconfigFiles::new(root))
    }

    /// Whether the nearest `tsconfig.json` (or `jsconfig.json`) of `file` (canonical) leaves it
    /// out (outside its `files`/`include`, or in its `exclude`, references followed). False
    /// for a file no configuration governs, and for a file of another language.
    pub fn leaves_out(&self, file: &Path) -> bool {
        tsconfig::is_typescript_or_javascript(file) && self.0.leaves_out(file).is_some()
    }

    /// Whether `file` is a TypeScript or JavaScript file that no `tsconfig.json` or
    /// `jsconfig.json` governs: tsserver gives it an inferred project of what it imports, so
    /// a question asked elsewhere does not reach it unless it is open.
    pub fn ungoverned(&self, file: &Path) -> bool {
        tsconfig::is_typescript_or_javascript(file)
            && file.parent().is_none_or(|folder| !self.0.governs(folder))
    }

    /// Whether `file` and `other` (canonical) are governed by different configurations: each
    /// by its nearest readable `tsconfig.json` or `jsconfig.json`, or by none. tsserver holds
    /// a configuration's project once a file of it is open, and searches only the projects it
    /// holds for references.
    pub fn governed_apart(&self, file: &Path, other: &Path) -> bool {
        self.configuration(file) != self.configuration(other)
    }

    /// The `tsconfig.json` or `jsconfig.json` that governs `file` (canonical): its nearest
    /// readable one, at or below the root.
    pub fn configuration(&self, file: &Path) -> Option<PathBuf> {
        file.parent()
            .and_then(|folder| self.0.configuration_of(folder))
    }
}

/// pyright's (or basedpyright's) file set on its own, for one instance's workspace folder: for
/// reaching the files its `include`/`exclude` leave out, which pyright searches for references
/// only when they are open ([`crate::query`]'s references).
pub struct PyrightProject(pyright::PyrightFiles);

impl PyrightProject {
    /// The configuration pyright reads for `folder` (canonical); `None` when it cannot be read
    /// (pyright then falls back to its defaults, which leave nothing out).
    pub fn load(folder: &Path) -> Option<PyrightProject> {
        pyright::PyrightFiles::load(folder).ok().map(PyrightProject)
    }

    /// Whether the project leaves `file` (canonical) out: outside its `include`, or in its
    /// `exclude`.
    pub fn leaves_out(&self, file: &Path) -> bool {
        self.0.leaves_out(file).is_some()
    }
}

/// pyright's file set when lspc runs one pyright per project root (issue 17,
/// [`crate::config::roots`]): a file is judged by the `pyrightconfig.json` / `[tool.pyright]` of
/// its own project root, as the instance serving it reads them. Each root's configuration is
/// read once, the first time one of its files is asked about.
struct PerProjectPyright {
    workspace_root: PathBuf,
    markers: Vec<String>,
    /// Folder → its project root.
    folder_roots: std::cell::RefCell<std::collections::HashMap<PathBuf, PathBuf>>,
    /// Project root → its file set (`None` when its configuration could not be used).
    projects: std::cell::RefCell<std::collections::HashMap<PathBuf, Option<pyright::PyrightFiles>>>,
    errors: std::cell::RefCell<Vec<ProjectError>>,
}

impl PerProjectPyright {
    fn new(workspace_root: &Path, markers: &[String]) -> PerProjectPyright {
        PerProjectPyright {
            workspace_root: crate::uri::canonical(workspace_root),
            markers: markers.to_vec(),
            folder_roots: Default::default(),
            projects: Default::default(),
            errors: Default::default(),
        }
    }
}

impl PerProjectPyright {
    /// The file set of `file`'s project root (read the first time), or `None` when its
    /// configuration could not be used.
    fn project_of(&self, file: &Path) -> Option<std::cell::RefMut<'_, pyright::PyrightFiles>> {
        let folder = file.parent()?;
        let root = self
            .folder_roots
            .borrow_mut()
            .entry(folder.to_path_buf())
            .or_insert_with(|| {
                crate::config::roots::find_project_root(folder, &self.workspace_root, &self.markers)
                    .unwrap_or_else(|| self.workspace_root.clone())
            })
            .clone();
        let projects = self.projects.borrow_mut();
        std::cell::RefMut::filter_map(projects, |projects| {
            projects
                .entry(root.clone())
                .or_insert_with(|| match pyright::PyrightFiles::load(&root) {
                    Ok(files) => Some(files),
                    Err(error) => {
                        self.errors.borrow_mut().push(error);
                        None
                    }
                })
                .as_mut()
        })
        .ok()
    }
}

impl FileSet for PerProjectPyright {
    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        self.project_of(file)?.leaves_out(file)
    }

    fn leaves_out_when_named(&self, file: &Path, folder: &Path) -> Option<&'static str> {
        self.project_of(file)?.leaves_out_when_named(file, folder)
    }

    fn errors(&self) -> Vec<ProjectError> {
        self.errors.borrow().clone()
    }
}

fn read(file: &Path) -> Result<String, ProjectError> {
    std::fs::read_to_string(file).map_err(|error| ProjectError {
        file: file.to_path_buf(),
        message: format!("cannot read: {error}"),
    })
}

/// A TOML file as a JSON value, read straight into `serde_json::Value` (no `toml::Table` in
/// between: one conversion less, and the binary carries no `toml::Value` serde code). A TOML
/// datetime becomes `{"$__toml_private_datetime": "…"}`, as `toml::Datetime` serializes.
fn toml_file(file: &Path) -> Result<Value, ProjectError> {
    let text = read(file)?;
    toml::from_str(&text).map_err(|error| ProjectError {
        file: file.to_path_buf(),
        message: format!("invalid toml: {}", error.message()),
    })
}

/// `[tool.NAME]` of a `pyproject.toml`; `None` when the file or the table is missing.
fn pyproject_tool(file: &Path, name: &str) -> Result<Option<Value>, ProjectError> {
    if !file.is_file() {
        return Ok(None);
    }
    let value = toml_file(file)?;
    Ok(value.get("tool").and_then(|tool| tool.get(name)).cloned())
}

/// A [`FileSet::leaves_out`] reason as the messages say it, for the set labelled `label`.
fn reason_text(label: &str, reason: &str) -> String {
    match reason {
        "outside" => format!("outside {label}'s include"),
        "excluded" => format!("in {label}'s exclude"),
        reason => reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 17: with one pyright per project root, each file is judged by its own project's
    /// `include`, not by the workspace root's.
    #[test]
    fn toml_files_read_as_json() {
        let dir = std::env::temp_dir().join(format!("lspc-project-toml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pyproject.toml");
        let text = "n = 1\nf = 1.5\nnan = nan\nwhen = 1979-05-27T07:32:00Z\n\
                    [tool.ruff]\nextend-exclude = [\"a\"]\ninline = { b = { c = \"d\" } }\n\
                    [[products]]\nname = \"Nail\"\n";
        std::fs::write(&file, text).unwrap();
        assert_eq!(
            toml_file(&file).unwrap(),
            serde_json::json!({
                "n": 1, "f": 1.5, "nan": null,
                "when": {"$__toml_private_datetime": "1979-05-27T07:32:00Z"},
                "tool": {"ruff": {"extend-exclude": ["a"], "inline": {"b": {"c": "d"}}}},
                "products": [{"name": "Nail"}],
            })
        );
        std::fs::write(&file, "a = 1\na = 2\n").unwrap();
        let error = toml_file(&file).unwrap_err();
        assert!(
            error.message.starts_with("invalid toml: "),
            "{}",
            error.message
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pyright_include_is_read_per_project_root() {
        let dir = std::env::temp_dir().join(format!("lspc-project-roots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for folder in ["services/a/app", "services/a/lib", "services/b/lib"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        std::fs::write(
            dir.join("services/a/pyproject.toml"),
            "[tool.pyright]\ninclude = [\"app\"]\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("services/b/pyproject.toml"),
            "[project]\nname = \"b\"\n",
        )
        .unwrap();
        let root = crate::uri::canonical(&dir);
        let markers = ["pyproject.toml".to_owned()];
        let set = PerProjectPyright::new(&root, &markers);
        let check = |file: &str, expected: Option<&str>| {
            assert_eq!(set.leaves_out(&root.join(file)), expected, "{file}");
        };
        check("services/a/app/main.py", None);
        check("services/a/lib/shared.py", Some("outside"));
        check("services/b/lib/shared.py", None);
        check("top.py", None);
        assert_eq!(set.errors(), []);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
