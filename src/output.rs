//! Rendering `lspc check` results: human, json, jsonl, sarif (2.1.0) and github annotations.
//!
//! TODO(output helper).

use std::path::PathBuf;

use crate::diagnostics::Diagnostic;

/// What `lspc check` found, ready to render. Diagnostics are already filtered by `--severity`,
/// sorted (severity, then line, then column) and capped by `--max-per-file` / `--max-total`.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Workspace root; every path is printed relative to it (absolute when outside it).
    pub root: PathBuf,
    pub files: Vec<FileReport>,
    /// Diagnostics dropped by the caps, per file and in total (0 when nothing was dropped).
    pub n_omitted: usize,
    /// Servers that failed to start or crashed, with the reason (exit status, stderr tail).
    pub server_failures: Vec<ServerFailure>,
}

/// One checked file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// Canonical absolute path.
    pub path: PathBuf,
    pub state: FileState,
    pub diagnostics: Vec<Diagnostic>,
    /// How many of this file's diagnostics the caps dropped.
    pub n_omitted: usize,
}

/// The outcome for one file. `Timeout` is never reported as clean: it means the servers did not
/// settle before `--timeout` ("diagnostics incomplete: server still analysing").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Clean,
    Diagnostics,
    Timeout { reason: String },
    Error { message: String },
}

/// A server that could not serve the check.
#[derive(Debug, Clone)]
pub struct ServerFailure {
    pub server: String,
    pub message: String,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Jsonl,
    Sarif,
    Github,
}
