//! lspc's built-in table of well-known language servers, used after every configured source.
//!
//! Invariants: configured servers add to the built-ins (issue 10): a built-in is dropped only
//! when a configured server has its name or runs its program (that entry replaces it), and
//! otherwise keeps serving its extensions next to configured servers, which come first and so
//! serve queries (a configured server whose binary is missing fails alone); of the Python type
//! checkers (pyright, basedpyright, pylsp, or a configured entry running one) only the first is
//! used, while ruff (a linter) runs alongside. Built-ins whose binary is missing stay in the list with `resolved_command: None`
//! so `lspc servers` can show them.

use std::collections::BTreeMap;
use std::path::Path;

use super::{find_in_path, ConfigOrigin, ServerConfig, SkippedServer, Transport};

/// One row of the built-in table.
struct BuiltIn {
    name: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    /// Lowercased extension with its dot → LSP language id.
    extensions: &'static [(&'static str, &'static str)],
    /// Python type checkers are alternatives: only the first available is used.
    python_type_checker: bool,
}

const PYTHON: &[(&str, &str)] = &[(".py", "python"), (".pyi", "python")];

const TABLE: &[BuiltIn] = &[
    BuiltIn {
        name: "pyright",
        command: "pyright-langserver",
        args: &["--stdio"],
        extensions: PYTHON,
        python_type_checker: true,
    },
    BuiltIn {
        name: "basedpyright",
        command: "basedpyright-langserver",
        args: &["--stdio"],
        extensions: PYTHON,
        python_type_checker: true,
    },
    BuiltIn {
        name: "pylsp",
        command: "pylsp",
        args: &[],
        extensions: PYTHON,
        python_type_checker: true,
    },
    BuiltIn {
        name: "ruff",
        command: "ruff",
        args: &["server"],
        extensions: PYTHON,
        python_type_checker: false,
    },
    BuiltIn {
        name: "typescript-language-server",
        command: "typescript-language-server",
        args: &["--stdio"],
        extensions: &[
            (".ts", "typescript"),
            (".tsx", "typescriptreact"),
            (".mts", "typescript"),
            (".cts", "typescript"),
            (".js", "javascript"),
            (".jsx", "javascriptreact"),
            (".mjs", "javascript"),
            (".cjs", "javascript"),
        ],
        python_type_checker: false,
    },
    BuiltIn {
        name: "clangd",
        command: "clangd",
        args: &[],
        extensions: &[
            (".c", "c"),
            // A lone header is most often C; clangd re-parses it per its compile commands.
            (".h", "c"),
            (".cc", "cpp"),
            (".cpp", "cpp"),
            (".cxx", "cpp"),
            (".hpp", "cpp"),
            (".hh", "cpp"),
            (".hxx", "cpp"),
        ],
        python_type_checker: false,
    },
    BuiltIn {
        name: "rust-analyzer",
        command: "rust-analyzer",
        args: &[],
        extensions: &[(".rs", "rust")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "gopls",
        command: "gopls",
        args: &[],
        extensions: &[(".go", "go")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "bash-language-server",
        command: "bash-language-server",
        args: &["start"],
        extensions: &[(".sh", "shellscript"), (".bash", "shellscript")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "taplo",
        command: "taplo",
        args: &["lsp", "stdio"],
        extensions: &[(".toml", "toml")],
        python_type_checker: false,
    },
];

/// The built-in servers to append after `configured`: used ones (found, with at least one
/// unclaimed extension) and unavailable ones (`resolved_command: None`) in table order, plus
/// the found-but-unused ones with the reason. `path_var` is the PATH value to search.
pub(crate) fn builtin_servers(
    configured: &[ServerConfig],
    root: &Path,
    path_var: Option<&str>,
) -> (Vec<ServerConfig>, Vec<SkippedServer>) {
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    // A configured server running a Python type checker takes the one type-checker slot.
    let mut python_type_checker: Option<&str> = configured
        .iter()
        .find(|s| {
            TABLE
                .iter()
                .any(|b| b.python_type_checker && (b.name == s.name || runs_program(s, b.command)))
        })
        .map(|s| s.name.as_str());
    for builtin in TABLE {
        if let Some(replacing) = configured
            .iter()
            .find(|s| s.name == builtin.name || runs_program(s, builtin.command))
        {
            log::debug!(
                "built-in server {} replaced by configured server {}",
                builtin.name,
                replacing.name
            );
            continue;
        }
        let server = ServerConfig {
            name: builtin.name.to_string(),
            command: builtin.command.to_string(),
            resolved_command: find_in_path(builtin.command, path_var),
            args: builtin.args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::from([("CLAUDE_PROJECT_DIR".to_string(), root.display().to_string())]),
            extension_to_language: builtin
                .extensions
                .iter()
                .map(|(e, l)| (e.to_string(), l.to_string()))
                .collect(),
            transport: Transport::Stdio,
            initialization_options: None,
            settings: None,
            workspace_folder: None,
            startup_timeout_ms: None,
            shutdown_timeout_ms: None,
            restart_on_crash: true,
            max_restarts: 3,
            diagnostics: true,
            origin: ConfigOrigin::BuiltIn,
        };
        if builtin.python_type_checker && server.resolved_command.is_some() {
            if let Some(chosen) = python_type_checker {
                skipped.push(SkippedServer {
                    server,
                    reason: format!("{chosen} is preferred"),
                });
                continue;
            }
            python_type_checker = Some(builtin.name);
        }
        servers.push(server);
    }
    (servers, skipped)
}

/// Whether `server` runs `program` (its command's file name), e.g. a configured `"py"` entry with
/// `"command": "/opt/bin/pyright-langserver"` runs `pyright-langserver`.
fn runs_program(server: &ServerConfig, program: &str) -> bool {
    Path::new(&server.command)
        .file_name()
        .is_some_and(|name| name == program)
}
