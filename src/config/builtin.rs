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

use super::resolve::PathSearch;
use super::{ConfigOrigin, Program, ServerConfig, SkippedServer};

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
        name: "ty",
        command: "ty",
        args: &["server"],
        extensions: PYTHON,
        python_type_checker: true,
    },
    BuiltIn {
        name: "pyrefly",
        command: "pyrefly",
        args: &["lsp"],
        extensions: PYTHON,
        python_type_checker: true,
    },
    BuiltIn {
        name: "jedi-language-server",
        command: "jedi-language-server",
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
    BuiltIn {
        name: "yaml-language-server",
        command: "yaml-language-server",
        args: &["--stdio"],
        extensions: &[(".yaml", "yaml"), (".yml", "yaml")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "vscode-json-language-server",
        command: "vscode-json-language-server",
        args: &["--stdio"],
        // VS Code opens `.code-workspace` files as JSON with comments; the `.json` files it
        // opens so are sent as `jsonc` too (`json_with_comments`).
        extensions: &[
            (".json", "json"),
            (".jsonc", "jsonc"),
            (".code-workspace", "jsonc"),
        ],
        python_type_checker: false,
    },
    BuiltIn {
        name: "vscode-css-language-server",
        command: "vscode-css-language-server",
        args: &["--stdio"],
        extensions: &[(".css", "css"), (".scss", "scss"), (".less", "less")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "vscode-html-language-server",
        command: "vscode-html-language-server",
        args: &["--stdio"],
        extensions: &[(".html", "html"), (".htm", "html")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "dockerfile-language-server",
        command: "docker-langserver",
        args: &["--stdio"],
        // `Dockerfile`, `Containerfile`, `Dockerfile.*`, `Containerfile.*` and `*.containerfile`
        // route as `.dockerfile` (see `extension_key`).
        extensions: &[(".dockerfile", "dockerfile")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "cmake-language-server",
        command: "cmake-language-server",
        args: &[],
        // `CMakeLists.txt` routes as `.cmake` (see `extension_key`).
        extensions: &[(".cmake", "cmake")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "fortls",
        command: "fortls",
        args: &[],
        extensions: &[
            (".f90", "fortran"),
            (".f95", "fortran"),
            (".f03", "fortran"),
            (".f08", "fortran"),
            (".f", "fortran"),
            (".for", "fortran"),
        ],
        python_type_checker: false,
    },
    BuiltIn {
        name: "esbonio",
        command: "esbonio",
        args: &["server"],
        extensions: &[(".rst", "restructuredtext")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "vim-language-server",
        command: "vim-language-server",
        args: &["--stdio"],
        extensions: &[(".vim", "vim")],
        python_type_checker: false,
    },
    BuiltIn {
        name: "intelephense",
        command: "intelephense",
        args: &["--stdio"],
        extensions: &[(".php", "php")],
        python_type_checker: false,
    },
];

/// The name and command of the first built-in server that serves `extension` (lowercase, with
/// its dot), for install hints; `None` when the table has none.
pub fn builtin_for_extension(extension: &str) -> Option<(&'static str, &'static str)> {
    TABLE
        .iter()
        .find(|builtin| builtin.extensions.iter().any(|(e, _)| *e == extension))
        .map(|builtin| (builtin.name, builtin.command))
}

/// The files TypeScript's own parser reads as JSON with comments and trailing commas (`tsc -p`,
/// `extends`): the project files of tsc and of JavaScript projects, also under their
/// `tsconfig.build.json`-style names.
const TSCONFIG_SCHEMA_FILE_MATCH: [&str; 4] = [
    "tsconfig.json",
    "tsconfig.*.json",
    "jsconfig.json",
    "jsconfig.*.json",
];

/// The settings (answers to `workspace/configuration`) a built-in needs to work out of the box:
/// vscode-css-language-server validates only when `css.validate` (and its scss/less twins) is
/// set, vscode-html-language-server validates embedded styles and scripts only when its `css`
/// section is an object, dockerfile-language-server ignores every check whose severity is not
/// configured, and
/// vscode-json-language-server warns of a trailing comma in `tsconfig.json` (sent as `jsonc`,
/// whose comments it allows) while TypeScript accepts one: [`TSCONFIG_SCHEMA_FILE_MATCH`]. The
/// schema allows comments too, for a configured entry that sends `tsconfig.json` as `json`.
fn builtin_settings(name: &str) -> Option<serde_json::Value> {
    match name {
        // An inline schema that only allows comments and trailing commas (the flags schemastore's
        // tsconfig schema sets, which VS Code downloads), so `tsc --init`'s commented template
        // and a trailing comma `tsc` accepts are not reported; other checks stay as they were.
        // Any `workspace/didChangeConfiguration` without `json.validate.enable: true` turns its
        // validation off (4.10.0's `onDidChangeConfiguration`), so the entry says it.
        "vscode-json-language-server" => Some(serde_json::json!({
            "json": {"validate": {"enable": true}, "schemas": [{
                "fileMatch": TSCONFIG_SCHEMA_FILE_MATCH,
                "schema": {"allowComments": true, "allowTrailingCommas": true},
            }]}
        })),
        // 4.10.0 asks for `css`, `html`, `javascript` and `js/ts` before validating a page. Its
        // CSS mode passes `settings.css` to the CSS linter unguarded, so a null `css` throws
        // (`Cannot read properties of null (reading 'validProperties')`) and the whole page,
        // scripts included, is reported clean; `{}` gives the linter's defaults, as in VS Code.
        // It reads `html` and `javascript` guarded, so those stay null, and `js/ts` must: its
        // JavaScript mode reads `js/ts.implicitProjectConfig.strictNullChecks` guarded only at
        // the section, so `{}` there throws the same way.
        "vscode-html-language-server" => Some(serde_json::json!({"css": {}})),
        "vscode-css-language-server" => Some(serde_json::json!({
            "css": {"validate": true},
            "scss": {"validate": true},
            "less": {"validate": true},
        })),
        "dockerfile-language-server" => {
            let checks = [
                "deprecatedMaintainer",
                "directiveCasing",
                "emptyContinuationLine",
                "instructionCasing",
                "instructionCmdMultiple",
                "instructionEntrypointMultiple",
                "instructionHealthcheckMultiple",
                "instructionJSONInSingleQuotes",
                "instructionWorkdirRelative",
            ];
            let mut diagnostics = serde_json::Map::new();
            for check in checks {
                diagnostics.insert(check.to_string(), serde_json::Value::from("warning"));
            }
            Some(serde_json::json!({"docker": {"languageserver": {"diagnostics": diagnostics}}}))
        }
        _ => None,
    }
}

/// The `initializationOptions` a built-in needs to work out of the box: vscode-json-, vscode-css-
/// and vscode-html-language-server (vscode-langservers-extracted 4.10.0) advertise
/// `documentFormattingProvider` and `documentRangeFormattingProvider` only when
/// `provideFormatter` is `true` (`initializationOptions.provideFormatter === true` in
/// `jsonServer.js`, `cssServer.js` and `htmlServer.js`; VS Code's extensions send it), so
/// without it `lspc format` refused every JSON, CSS, SCSS, Less and HTML file.
fn builtin_initialization_options(name: &str) -> Option<serde_json::Value> {
    match name {
        "vscode-json-language-server"
        | "vscode-css-language-server"
        | "vscode-html-language-server" => Some(serde_json::json!({"provideFormatter": true})),
        _ => None,
    }
}

/// Whether a built-in ever sends diagnostics. cmake-language-server 0.1.11 serves hover and
/// formatting only and never publishes, so waiting for its diagnostics only ran `lspc check` of
/// every CMake project into the timeout (exit 3, 30 s per `CMakeLists.txt`); its entry gets
/// `"diagnostics": false`, and `lspc check` skips its files with that reason.
pub fn builtin_publishes_diagnostics(name: &str) -> bool {
    name != "cmake-language-server"
}

/// The project-root markers of `server` when its entry sets no `rootMarkers`: for pyright, the
/// files pyright reads its configuration from, `pyrightconfig.json` and a `pyproject.toml` with
/// a `[tool.pyright]` table (basedpyright: or `[tool.basedpyright]`), since a pyright rooted
/// at a folder whose `pyproject.toml` has no such table, or at a `setup.cfg` (pyright reads
/// neither), runs with its defaults instead of the project's configuration and resolves imports
/// from there (a new user's trial: a `tests/setup.cfg` for flake8 in encode/httpx gave 32
/// `Import "httpx" could not be resolved`); for other servers [`default_root_markers`] of the
/// languages it serves.
pub fn default_root_markers_of(server: &ServerConfig) -> Vec<String> {
    let markers: &[&str] = match Program::of(server) {
        Some(Program::PyrightLangserver) => &["pyrightconfig.json", "pyproject.toml:tool.pyright"],
        Some(Program::BasedpyrightLangserver) => &[
            "pyrightconfig.json",
            "pyproject.toml:tool.basedpyright",
            "pyproject.toml:tool.pyright",
        ],
        _ => return default_root_markers(&server.extension_to_language),
    };
    markers.iter().map(|marker| marker.to_string()).collect()
}

/// The project-root markers lspc uses for a server that serves `extensions` (lowercase, with
/// their dot) and whose configuration sets no `rootMarkers`: Python `pyproject.toml`,
/// `setup.cfg`, `pyrightconfig.json`; TypeScript/JavaScript `tsconfig.json`, `jsconfig.json`,
/// `package.json`; C/C++ `compile_commands.json`, `compile_flags.txt`, `.clangd`; Rust
/// `Cargo.toml`; Go `go.mod`. Several languages' markers are joined in that order; none for
/// other languages (one instance at the workspace root).
pub fn default_root_markers(extensions: &BTreeMap<String, String>) -> Vec<String> {
    const GROUPS: &[(&[&str], &[&str])] = &[
        (
            &[".py", ".pyi"],
            &["pyproject.toml", "setup.cfg", "pyrightconfig.json"],
        ),
        (
            &[".ts", ".tsx", ".js", ".jsx", ".mts", ".cts", ".mjs", ".cjs"],
            &["tsconfig.json", "jsconfig.json", "package.json"],
        ),
        (
            &[
                ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm",
            ],
            &["compile_commands.json", "compile_flags.txt", ".clangd"],
        ),
        (&[".rs"], &["Cargo.toml"]),
        (&[".go"], &["go.mod"]),
    ];
    let mut markers: Vec<String> = Vec::new();
    for (group_extensions, group_markers) in GROUPS {
        if group_extensions.iter().any(|e| extensions.contains_key(*e)) {
            for marker in *group_markers {
                if !markers.iter().any(|m| m == marker) {
                    markers.push(marker.to_string());
                }
            }
        }
    }
    markers
}

/// The built-in servers to append after `configured`: used ones (found, with at least one
/// unclaimed extension) and unavailable ones (`resolved_command: None`) in table order, plus
/// the found-but-unused ones with the reason. `path_var` is the PATH value to search. With
/// `only_extension`, the built-ins that do not serve it are left out before their command is
/// searched (`sources::load_for_extension`).
pub(crate) fn builtin_servers(
    configured: &[ServerConfig],
    root: &Path,
    path_var: Option<&str>,
    only_extension: Option<&str>,
) -> (Vec<ServerConfig>, Vec<SkippedServer>) {
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    let path_search = PathSearch::new(path_var);
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
        if only_extension.is_some_and(|wanted| builtin.extensions.iter().all(|(e, _)| *e != wanted))
        {
            continue;
        }
        // For one extension's servers, a second Python type checker is skipped when found and
        // runs nothing when not found, so it is not searched for (neither is in the session's
        // configuration hash).
        if only_extension.is_some() && builtin.python_type_checker && python_type_checker.is_some()
        {
            continue;
        }
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
        let mut extension_to_language = BTreeMap::new();
        for (extension, language) in builtin.extensions {
            extension_to_language.insert(extension.to_string(), language.to_string());
        }
        let mut server = ServerConfig {
            resolved_command: path_search.find(builtin.command),
            args: builtin.args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::from([("CLAUDE_PROJECT_DIR".to_string(), root.display().to_string())]),
            extension_to_language,
            settings: builtin_settings(builtin.name),
            initialization_options: builtin_initialization_options(builtin.name),
            diagnostics: builtin_publishes_diagnostics(builtin.name),
            ..ServerConfig::new(builtin.name, builtin.command, ConfigOrigin::BuiltIn)
        };
        server.root_markers = default_root_markers_of(&server);
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

/// Whether `server` runs the program named `command` ([`Program::of`]), e.g. a configured `"py"`
/// entry with `"command": "/opt/bin/pyright-langserver"` runs `pyright-langserver`, and one with
/// `"command": "python3", "args": ["-m", "pylsp"]` runs `pylsp`.
fn runs_program(server: &ServerConfig, command: &str) -> bool {
    Program::from_name(command).is_some_and(|program| Program::of(server) == Some(program))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in's command is a [`Program`], so a configured entry running it through a
    /// launcher replaces it as the plain command does.
    #[test]
    fn every_builtin_command_is_a_known_program() {
        for builtin in TABLE {
            let program = Program::from_name(builtin.command);
            assert_eq!(program.map(Program::name), Some(builtin.command));
        }
    }

    /// vscode-html-language-server's `css` section is an object (null aborts its validation)
    /// and its `js/ts` section is left out (an object without `implicitProjectConfig` aborts it).
    #[test]
    fn html_settings_give_css_and_leave_out_js_ts() {
        let settings = builtin_settings("vscode-html-language-server").unwrap();
        assert_eq!(settings["css"], serde_json::json!({}));
        assert_eq!(settings.get("js/ts"), None);
    }

    #[test]
    fn default_root_markers_by_language() {
        let check = |extensions: &[&str], expected: &[&str]| {
            let extensions: BTreeMap<String, String> = extensions
                .iter()
                .map(|e| (e.to_string(), "x".to_string()))
                .collect();
            assert_eq!(
                default_root_markers(&extensions),
                expected,
                "{extensions:?}"
            );
        };
        check(
            &[".py"],
            &["pyproject.toml", "setup.cfg", "pyrightconfig.json"],
        );
        check(
            &[".tsx", ".js"],
            &["tsconfig.json", "jsconfig.json", "package.json"],
        );
        check(
            &[".cpp", ".h"],
            &["compile_commands.json", "compile_flags.txt", ".clangd"],
        );
        check(&[".rs"], &["Cargo.toml"]);
        check(&[".go"], &["go.mod"]);
        check(&[".sh", ".toml"], &[]);
        check(
            &[".go", ".py"],
            &[
                "pyproject.toml",
                "setup.cfg",
                "pyrightconfig.json",
                "go.mod",
            ],
        );
    }
}
