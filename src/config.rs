//! Server configuration: the seeds' `.lsp.json` format, its sources and extension routing.
//!
//! TODO(config helper): loading, validation, expansion, plugin folders, built-in table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One language server lspc may start, after loading, validation and `${VAR}` expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Name shown to users: the `.lsp.json` key, `plugin:<plugin>:<server>` for plugin servers,
    /// or the built-in name (`pyright`, `clangd`, …).
    pub name: String,
    /// The program to run, as configured (after expansion).
    pub command: String,
    /// The program found on PATH (or the absolute/relative path as given) when it exists and is a
    /// file; `None` when it was not found (the server is listed but never started).
    pub resolved_command: Option<PathBuf>,
    pub args: Vec<String>,
    /// Extra environment for the server process, on top of lspc's own environment.
    pub env: BTreeMap<String, String>,
    /// Lowercased extension with its leading dot (`".py"`) to LSP language id (`"python"`).
    /// Never empty.
    pub extension_to_language: BTreeMap<String, String>,
    pub transport: Transport,
    /// Sent as `initialize.initializationOptions`.
    pub initialization_options: Option<Value>,
    /// Sent through `workspace/didChangeConfiguration` and used to answer
    /// `workspace/configuration` by dotted section.
    pub settings: Option<Value>,
    /// The server's workspace folder; `None` means the workspace root.
    pub workspace_folder: Option<PathBuf>,
    /// Milliseconds from spawn to the `initialize` result; `None` means lspc's default.
    pub startup_timeout_ms: Option<u64>,
    /// Milliseconds granted to the `shutdown` request; `None` means lspc's default.
    pub shutdown_timeout_ms: Option<u64>,
    /// `false` never restarts the server after a crash (seed 003 `restartOnCrash`).
    pub restart_on_crash: bool,
    /// Crash restarts allowed in one streak (seed 003 `maxRestarts`, default 3).
    pub max_restarts: u32,
    /// `false` (seed 000 `diagnostics:false`) keeps the server for queries but ignores its
    /// diagnostics.
    pub diagnostics: bool,
    /// Where this entry came from, for `lspc servers` and error messages.
    pub origin: ConfigOrigin,
}

/// How lspc talks to a server. Only `stdio` is implemented; `socket` entries load (so configs
/// written for the seeds keep working) but fail to start with a clear error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Socket,
}

/// The source of a [`ServerConfig`], in precedence order (first wins an extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// `--config FILE`.
    CommandLine(PathBuf),
    /// `--plugin-dir DIR`: the plugin's name and the file the entry came from.
    Plugin { plugin: String, file: PathBuf },
    /// The workspace's own `.lsp.json` (only loaded when the workspace is trusted).
    Workspace(PathBuf),
    /// `$XDG_CONFIG_HOME/lspc/lsp.json`.
    User(PathBuf),
    /// lspc's built-in table of well-known servers.
    BuiltIn,
}
