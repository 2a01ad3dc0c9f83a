//! Diagnostics: the normalised model lspc reports, per-server stores, merge, dedup, order, caps.
//!
//! TODO(diagnostics helper).

use std::path::PathBuf;

/// LSP `DiagnosticSeverity` (spec 3.17 §`Diagnostic`): 1 Error, 2 Warning, 3 Information, 4 Hint.
/// A publish with no severity is treated as Error, as VS Code does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error = 1,
    Warning = 2,
    Information = 3,
    Hint = 4,
}

/// One diagnostic as lspc reports it: positions are 1-based lines and 1-based columns counted
/// in Unicode characters (scalar values), already converted from the server's encoding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// Canonical absolute path of the file.
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub severity: Severity,
    pub message: String,
    /// The diagnostic's `source` (`"Pyright"`, `"clang"`), if the server sent one.
    pub source: Option<String>,
    /// The diagnostic's `code` rendered as a string (numbers are stringified).
    pub code: Option<String>,
    /// Name of the server that published it.
    pub server: String,
}
