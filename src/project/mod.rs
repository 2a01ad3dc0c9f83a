//! Each server's own project file set, so `lspc check DIR` checks with every server what that
//! server's CLI would check (issue 10): pyright/basedpyright `include`/`exclude`, TypeScript's
//! tsconfig `files`/`include`/`exclude` (following `extends`), ruff's `exclude`/`extend-exclude`.
//!
//! Invariants:
//! - Only files found by walking a folder are filtered; `lspc check` never asks about a file
//!   named on the command line (it is always checked).
//! - Servers lspc does not know a project format for (clangd, rust-analyzer, configured ones with
//!   other programs) keep every file they claim.
//! - The server kind comes from the program name (`pyright-langserver`, `basedpyright-langserver`,
//!   `ruff`, `typescript-language-server`), so a configured entry running the same program gets
//!   the same rules as the built-in one.
//! - A project file that cannot be read or parsed leaves that server with every file, and is
//!   reported once as a warning.

mod jsonc;
pub mod pattern;
mod pyright;
mod ruff;
mod tsconfig;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::ServerConfig;
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
    /// `exclude` covers it, `None` when the server's CLI would check it. `file` is canonical.
    fn leaves_out(&self, file: &Path) -> Option<&'static str>;

    /// Configuration files met so far that could not be used.
    fn errors(&self) -> Vec<ProjectError> {
        Vec::new()
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
        let mut sets: Vec<Option<(String, Box<dyn FileSet>)>> = Vec::new();
        let mut errors = Vec::new();
        for server in servers {
            let folder = server
                .workspace_folder
                .clone()
                .unwrap_or_else(|| root.to_path_buf());
            let program = Path::new(&server.command)
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let set: Option<(String, Box<dyn FileSet>)> = match program.as_str() {
                "pyright-langserver" | "basedpyright-langserver" => {
                    match pyright::PyrightFiles::load(&folder) {
                        Ok(files) => Some((server.name.clone(), Box::new(files))),
                        Err(error) => {
                            errors.push(error);
                            None
                        }
                    }
                }
                "ruff" => Some((server.name.clone(), Box::new(ruff::RuffFiles::new(&folder)))),
                "typescript-language-server" => Some((
                    "tsconfig".to_string(),
                    Box::new(tsconfig::TsconfigFiles::new(&folder)),
                )),
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
        match set.leaves_out(file)? {
            "outside" => Some(format!("outside {label}'s include")),
            _ => Some(format!("in {label}'s exclude")),
        }
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

fn read(file: &Path) -> Result<String, ProjectError> {
    std::fs::read_to_string(file).map_err(|error| ProjectError {
        file: file.to_path_buf(),
        message: format!("cannot read: {error}"),
    })
}

/// A TOML file as a JSON value.
fn toml_file(file: &Path) -> Result<Value, ProjectError> {
    let text = read(file)?;
    let table: toml::Table = toml::from_str(&text).map_err(|error| ProjectError {
        file: file.to_path_buf(),
        message: format!("invalid toml: {}", error.message()),
    })?;
    serde_json::to_value(table).map_err(|error| ProjectError {
        file: file.to_path_buf(),
        message: format!("invalid toml: {error}"),
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
