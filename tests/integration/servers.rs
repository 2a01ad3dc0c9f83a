//! Real-server tests driven by one table ([`CASES`]): for each language server lspc supports, one
//! `lspc batch` session on a copy of its workspace (`fixtures/workspaces/<dir>`) replays the
//! requests of `fixtures/servers/<case>.txt` and compares each answer, rendered as text by
//! [`summary`], with the lines that follow the request there. Rename requests (`> rename LOC NEW`)
//! run `lspc rename` (a dry run that prints the diff). Where the server has a command-line tool of
//! its own (shellcheck, `ruff check`, `pyright --outputjson`, tsc), its diagnostics are computed on
//! the same files and must equal lspc's, except for the rows a case names as language-server-only.
//!
//! Expectation files: a header of `#` comments, then blocks of one `> REQUEST` line (a batch
//! request without `id`, or `rename FILE:LINE:COL NEW` / `rename FILE:LINE --symbol NAME NEW`)
//! followed by the expected lines. `LSPC_BLESS=1 cargo test --test integration servers::` rewrites
//! them from what the servers answer (review the diff before committing it).
//!
//! Positions in the files are 1-based lines and 1-based columns counted in Unicode characters;
//! every workspace has a line with non-ASCII text (emoji are two UTF-16 units, CJK one) before
//! the symbol queried on it, so a wrong encoding conversion changes the numbers.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::support::{lspc_bin, which, BatchSession, TestCommand, Workspace};

/// How a case finds its server.
enum Entry {
    /// The built-in table serves the workspace (no configuration: proves zero-config use).
    BuiltIn { program: &'static str },
    /// An explicit `.lsp.json` entry (for alternatives the built-in table does not pick when a
    /// preferred server is installed, and for binaries outside PATH). `{TOOLS}` in the command
    /// is the CI tools folder (`LSPC_CI_TOOLS`, default `/var/cache/lspc-ci`).
    Configured {
        command: &'static str,
        entry: &'static str,
    },
}

/// A command-line tool whose diagnostics lspc's must equal.
struct Cli {
    /// The file checked, relative to the workspace root.
    file: &'static str,
    /// Runs the tool in the workspace and returns its diagnostics as [`diagnostic_row`]s, or
    /// `None` (with the reason printed) when the tool is missing.
    run: fn(&Workspace) -> Option<Vec<String>>,
    /// Rows only the language server reports, with the reason in a comment.
    lsp_only: &'static [&'static str],
}

struct ServerCase {
    /// The case's name: its expectation file is `fixtures/servers/<name>.txt`.
    name: &'static str,
    /// The folder under `fixtures/workspaces/`.
    workspace: &'static str,
    entry: Entry,
    cli: Option<Cli>,
}

const CASES: &[ServerCase] = &[
    ServerCase {
        name: "pyright",
        workspace: "python",
        entry: Entry::Configured {
            command: "pyright-langserver",
            entry: r#"{"command": "pyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: Some(Cli {
            file: "inventory/report.py",
            run: pyright_cli,
            lsp_only: PYRIGHT_LSP_ONLY,
        }),
    },
    ServerCase {
        name: "basedpyright",
        workspace: "python",
        entry: Entry::Configured {
            command: "basedpyright-langserver",
            entry: r#"{"command": "basedpyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: Some(Cli {
            file: "inventory/report.py",
            run: basedpyright_cli,
            lsp_only: BASEDPYRIGHT_LSP_ONLY,
        }),
    },
    ServerCase {
        name: "pylsp",
        workspace: "python",
        entry: Entry::Configured {
            command: "pylsp",
            entry: r#"{"command": "pylsp", "args": [], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "ruff",
        workspace: "python",
        entry: Entry::Configured {
            command: "ruff",
            entry: r#"{"command": "ruff", "args": ["server"], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: Some(Cli {
            file: "inventory/report.py",
            run: ruff_cli,
            lsp_only: &[],
        }),
    },
    ServerCase {
        name: "jedi-language-server",
        workspace: "python",
        entry: Entry::Configured {
            command: "jedi-language-server",
            entry: r#"{"command": "jedi-language-server", "args": [], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "ty",
        workspace: "python",
        entry: Entry::Configured {
            command: "ty",
            entry: r#"{"command": "ty", "args": ["server"], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "pyrefly",
        workspace: "python",
        entry: Entry::Configured {
            command: "pyrefly",
            entry: r#"{"command": "pyrefly", "args": ["lsp"], "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "typescript-language-server",
        workspace: "tsgo",
        entry: Entry::BuiltIn {
            program: "typescript-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "tsgo",
        workspace: "tsgo",
        entry: Entry::Configured {
            command:
                "{TOOLS}/typescript-7.0.2/node_modules/@typescript/typescript-linux-x64/lib/tsc",
            entry: r#"{"command": "{TOOLS}/typescript-7.0.2/node_modules/@typescript/typescript-linux-x64/lib/tsc", "args": ["--lsp", "--stdio"], "extensionToLanguage": {".ts": "typescript"}}"#,
        },
        cli: Some(Cli {
            file: "src/main.ts",
            run: tsgo_cli,
            lsp_only: &[],
        }),
    },
    ServerCase {
        name: "clangd",
        workspace: "cpp",
        entry: Entry::BuiltIn { program: "clangd" },
        cli: None,
    },
    ServerCase {
        name: "clangd-19",
        workspace: "cpp",
        entry: Entry::Configured {
            command: "clangd-19",
            entry: r#"{"command": "clangd-19", "extensionToLanguage": {".cpp": "cpp", ".hpp": "cpp"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "ccls",
        workspace: "cpp",
        entry: Entry::Configured {
            command: "ccls",
            entry: r#"{"command": "ccls", "extensionToLanguage": {".cpp": "cpp", ".hpp": "cpp"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "bash-language-server",
        workspace: "bash",
        entry: Entry::BuiltIn {
            program: "bash-language-server",
        },
        cli: Some(Cli {
            file: "main.sh",
            run: shellcheck,
            lsp_only: &[],
        }),
    },
    ServerCase {
        name: "taplo",
        workspace: "toml",
        entry: Entry::Configured {
            command: "{TOOLS}/taplo-0.10.0/bin/taplo",
            entry: r#"{"command": "{TOOLS}/taplo-0.10.0/bin/taplo", "args": ["lsp", "stdio"], "extensionToLanguage": {".toml": "toml"}}"#,
        },
        cli: Some(Cli {
            file: "Cargo.toml",
            run: taplo_cli,
            // The editor protocol also marks the first key of a conflicting pair.
            lsp_only: &["7:1 hint [Even Better TOML -] conflicting keys"],
        }),
    },
    ServerCase {
        name: "yaml-language-server",
        workspace: "yaml",
        entry: Entry::BuiltIn {
            program: "yaml-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "vscode-json-language-server",
        workspace: "json",
        entry: Entry::BuiltIn {
            program: "vscode-json-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "vscode-css-language-server",
        workspace: "css",
        entry: Entry::BuiltIn {
            program: "vscode-css-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "vscode-html-language-server",
        workspace: "html",
        entry: Entry::BuiltIn {
            program: "vscode-html-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "dockerfile-language-server",
        workspace: "dockerfile",
        entry: Entry::BuiltIn {
            program: "docker-langserver",
        },
        cli: None,
    },
    ServerCase {
        name: "gopls",
        workspace: "go",
        entry: Entry::BuiltIn { program: "gopls" },
        cli: None,
    },
    ServerCase {
        name: "rust-analyzer",
        workspace: "rust",
        entry: Entry::Configured {
            command: "{TOOLS}/rust-analyzer-0.0.330/bin/rust-analyzer",
            entry: r#"{"command": "{TOOLS}/rust-analyzer-0.0.330/bin/rust-analyzer", "extensionToLanguage": {".rs": "rust"}}"#,
        },
        cli: None,
    },
    ServerCase {
        name: "fortls",
        workspace: "fortran",
        entry: Entry::BuiltIn { program: "fortls" },
        cli: None,
    },
    ServerCase {
        name: "cmake-language-server",
        workspace: "cmake",
        entry: Entry::BuiltIn {
            program: "cmake-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "vim-language-server",
        workspace: "vim",
        entry: Entry::BuiltIn {
            program: "vim-language-server",
        },
        cli: None,
    },
    ServerCase {
        name: "intelephense",
        workspace: "php",
        entry: Entry::BuiltIn {
            program: "intelephense",
        },
        cli: None,
    },
    // The socket transport (lspc listens, the server connects back to `--socket=PORT`), with
    // two servers built on vscode-languageserver-node, which reads that argument.
    // bash-language-server 5.8.1 hardwires stdio and cannot take part.
    ServerCase {
        name: "pyright-socket",
        workspace: "python",
        entry: Entry::Configured {
            command: "pyright-langserver",
            entry: r#"{"command": "pyright-langserver", "transport": "socket", "extensionToLanguage": {".py": "python"}}"#,
        },
        cli: Some(Cli {
            file: "inventory/report.py",
            run: pyright_cli,
            lsp_only: PYRIGHT_LSP_ONLY,
        }),
    },
    ServerCase {
        name: "yaml-language-server-socket",
        workspace: "yaml",
        entry: Entry::Configured {
            command: "yaml-language-server",
            entry: r#"{"command": "yaml-language-server", "transport": "socket", "extensionToLanguage": {".yaml": "yaml"}}"#,
        },
        cli: None,
    },
];

fn tools_dir() -> PathBuf {
    std::env::var_os("LSPC_CI_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/lspc-ci"))
}

fn expectation_path(case: &ServerCase) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/servers")
        .join(format!("{}.txt", case.name))
}

/// One block of an expectation file.
struct Block {
    request: String,
    expected: Vec<String>,
}

fn parse_expectations(text: &str) -> (Vec<String>, Vec<Block>) {
    let mut header = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    for line in text.lines() {
        if let Some(request) = line.strip_prefix("> ") {
            blocks.push(Block {
                request: request.to_owned(),
                expected: Vec::new(),
            });
        } else if let Some(block) = blocks.last_mut() {
            block.expected.push(line.to_owned());
        } else {
            header.push(line.to_owned());
        }
    }
    for block in &mut blocks {
        while block.expected.last().is_some_and(|line| line.is_empty()) {
            block.expected.pop();
        }
    }
    (header, blocks)
}

/// `line:col-endLine:endCol` of a batch location or range object.
fn span(value: &Value) -> String {
    let (line, column) = if value.get("startLine").is_some() {
        (&value["startLine"], &value["startColumn"])
    } else {
        (&value["line"], &value["column"])
    };
    format!(
        "{line}:{column}-{}:{}",
        value["endLine"], value["endColumn"]
    )
}

/// A diagnostic as one line: `line:col-endLine:endCol severity [source code] message` (newlines
/// in the message written `\n`).
fn diagnostic_row(diagnostic: &Value) -> String {
    let code = match &diagnostic["code"] {
        Value::String(code) => code.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    format!(
        "{} {} [{} {}] {}",
        span(diagnostic),
        diagnostic["severity"].as_str().unwrap_or("?"),
        diagnostic["source"].as_str().unwrap_or("-"),
        code,
        diagnostic["message"]
            .as_str()
            .unwrap_or("")
            .replace('\n', "\\n")
    )
}

fn symbol_rows(symbols: &Value, depth: usize, rows: &mut Vec<String>) {
    for symbol in symbols.as_array().into_iter().flatten() {
        rows.push(format!(
            "{}{} {} {}",
            "  ".repeat(depth),
            symbol["kind"].as_str().unwrap_or("?"),
            symbol["name"].as_str().unwrap_or("?"),
            span(&symbol["location"])
        ));
        symbol_rows(&symbol["children"], depth + 1, rows);
    }
}

/// A batch answer rendered as the lines an expectation file holds.
fn summary(answer: &Value) -> Vec<String> {
    if let Some(error) = answer.get("error") {
        return vec![format!(
            "error: {}",
            error["message"].as_str().unwrap_or("?")
        )];
    }
    let result = &answer["result"];
    let mut rows = Vec::new();
    if let Some(diagnostics) = result.get("diagnostics") {
        if result["complete"] != Value::Bool(true) {
            rows.push(format!("incomplete: {result}"));
        }
        rows.extend(
            diagnostics
                .as_array()
                .into_iter()
                .flatten()
                .map(diagnostic_row),
        );
    } else if let Some(locations) = result.get("locations") {
        for location in locations.as_array().into_iter().flatten() {
            rows.push(format!(
                "{}:{}",
                location["path"].as_str().unwrap_or("?"),
                span(location)
            ));
        }
    } else if let Some(symbols) = result.get("symbols") {
        symbol_rows(symbols, 0, &mut rows);
    } else if let Some(text) = result.get("text") {
        rows.push(match &result["range"] {
            Value::Null => "range: none".to_owned(),
            range => format!("range: {}", span(range)),
        });
        rows.extend(text.as_str().unwrap_or("").lines().map(str::to_owned));
    } else {
        rows.push(result.to_string());
    }
    rows
}

/// The arguments that select the case's server (none for the built-in table).
fn server_args(case: &ServerCase, workspace: &Workspace) -> Vec<String> {
    match &case.entry {
        Entry::BuiltIn { .. } => Vec::new(),
        Entry::Configured { entry, .. } => {
            let entry = entry.replace("{TOOLS}", &tools_dir().to_string_lossy());
            let entry: Value = serde_json::from_str(&entry).expect("a case's entry is JSON");
            let config = workspace.config(serde_json::json!({ case.name: entry }));
            vec![
                "--no-builtin".to_owned(),
                "--config".to_owned(),
                config.to_string_lossy().into_owned(),
            ]
        }
    }
}

/// Why the case cannot run here, if its server is missing.
fn missing(case: &ServerCase) -> Option<String> {
    let command = match &case.entry {
        Entry::BuiltIn { program } => program.to_string(),
        Entry::Configured { command, .. } => {
            command.replace("{TOOLS}", &tools_dir().to_string_lossy())
        }
    };
    let found = if command.contains('/') {
        PathBuf::from(&command).is_file()
    } else {
        which(&command).is_some()
    };
    (!found).then(|| format!("{command} is not installed (see .ci/run)"))
}

fn run_rename(workspace: &Workspace, server_args: &[String], spec: &str) -> Vec<String> {
    let words: Vec<&str> = spec.split(' ').collect();
    let output = TestCommand::new(lspc_bin())
        .current_dir(&workspace.root)
        .arg("rename")
        .args(server_args)
        .args(["--timeout", "60"])
        .args(&words)
        .timeout(Duration::from_secs(120))
        .run();
    let mut rows: Vec<String> = output.stdout.lines().map(str::to_owned).collect();
    if output.status != Some(0) {
        // lspc's own message (its log lines, on at debug level in tests, are left out).
        let message = output
            .stderr
            .lines()
            .filter(|line| {
                line.starts_with("lspc: ")
                    && !["debug: ", "info: ", "trace: ", "warning: "]
                        .iter()
                        .any(|level| line["lspc: ".len()..].starts_with(level))
            })
            .collect::<Vec<_>>()
            .join(" / ");
        rows.push(format!("exit {:?}: {message}", output.status));
    }
    rows
}

/// Run one case; returns the failures (empty when all blocks matched).
fn run_case(case: &ServerCase) -> Vec<String> {
    let workspace = Workspace::copy_of(case.workspace);
    let args = server_args(case, &workspace);
    let path = expectation_path(case);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    let (header, blocks) = parse_expectations(&text);
    let mut batch_args: Vec<&str> = args.iter().map(String::as_str).collect();
    batch_args.extend(["--timeout", "45"]);
    let mut session = BatchSession::start_with(&workspace, &batch_args);
    let mut failures = Vec::new();
    let mut actual_blocks = Vec::new();
    let mut diagnostics_by_file: Vec<(String, Vec<String>)> = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let root = workspace.root.to_string_lossy().into_owned();
        let actual = if let Some(spec) = block.request.strip_prefix("rename ") {
            run_rename(&workspace, &args, spec)
        } else {
            let mut request: Value = serde_json::from_str(&block.request).unwrap_or_else(|error| {
                panic!("{}: bad request {:?}: {error}", case.name, block.request)
            });
            request["id"] = Value::from(index);
            let answer = session.ask(request.clone());
            let rows = summary(&answer);
            if request["op"] == "diagnostics" {
                let file = request["file"].as_str().unwrap_or("").to_owned();
                diagnostics_by_file.push((file, rows.clone()));
            }
            rows
        };
        // Hover text may link files by absolute path: the copy's root differs per run.
        let actual: Vec<String> = actual
            .iter()
            .map(|row| row.replace(&root, "$ROOT"))
            .collect();
        if actual != block.expected {
            failures.push(format!(
                "{}: > {}\n  expected:\n    {}\n  actual:\n    {}",
                case.name,
                block.request,
                block.expected.join("\n    "),
                actual.join("\n    ")
            ));
        }
        actual_blocks.push((block.request.clone(), actual));
    }
    let (status, stderr) = session.finish();
    if let Some(dir) = std::env::var_os("LSPC_SERVERS_LOG") {
        // For writing README's server table: what each server negotiated and asked.
        let _ = std::fs::write(
            PathBuf::from(dir).join(format!("{}.log", case.name)),
            &stderr,
        );
    }
    if status != Some(0) {
        failures.push(format!(
            "{}: lspc batch exited with {status:?}; stderr tail:\n{}",
            case.name,
            tail(&stderr, 30)
        ));
    }
    if let Some(cli) = &case.cli {
        failures.extend(compare_with_cli(
            case,
            cli,
            &workspace,
            &diagnostics_by_file,
        ));
    }
    if std::env::var_os("LSPC_BLESS").is_some() {
        let mut text = header.join("\n");
        text.push('\n');
        for (request, rows) in &actual_blocks {
            text.push_str(&format!("> {request}\n"));
            for row in rows {
                text.push_str(row);
                text.push('\n');
            }
        }
        std::fs::write(&path, text).unwrap();
        eprintln!("blessed {}", path.display());
    }
    failures
}

fn compare_with_cli(
    case: &ServerCase,
    cli: &Cli,
    workspace: &Workspace,
    diagnostics_by_file: &[(String, Vec<String>)],
) -> Vec<String> {
    let Some(cli_rows) = (cli.run)(workspace) else {
        return Vec::new();
    };
    let Some((_, lsp_rows)) = diagnostics_by_file
        .iter()
        .find(|(file, _)| file == cli.file)
    else {
        return vec![format!(
            "{}: no diagnostics request for {}",
            case.name, cli.file
        )];
    };
    // A CLI that prints no end position is compared on `line:col severity [source code] text`.
    let without_end = |row: &String| match row.split_once(' ') {
        Some((span, rest)) => format!("{} {rest}", span.split('-').next().unwrap_or(span)),
        None => row.clone(),
    };
    let with_end = cli_rows
        .iter()
        .all(|row| row.split(' ').next().is_some_and(|s| s.contains('-')));
    let lsp_rows: Vec<String> = if with_end {
        lsp_rows.clone()
    } else {
        lsp_rows.iter().map(without_end).collect()
    };
    let mut failures = Vec::new();
    if cli_rows.is_empty() {
        // Every fixture file compared has diagnostics on purpose.
        failures.push(format!(
            "{}: the CLI reported nothing for {}",
            case.name, cli.file
        ));
    }
    for row in &cli_rows {
        if !lsp_rows.contains(row) {
            failures.push(format!(
                "{}: the CLI reports {row:?}, lspc does not",
                case.name
            ));
        }
    }
    for row in &lsp_rows {
        if !cli_rows.contains(row) && !cli.lsp_only.contains(&row.as_str()) {
            failures.push(format!(
                "{}: lspc reports {row:?}, the CLI does not (and the case does not name it)",
                case.name
            ));
        }
    }
    failures
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Run `program args` in the workspace; `None` (saying why) when it is not installed.
fn cli_output(workspace: &Workspace, program: &str, args: &[&str]) -> Option<String> {
    if which(program).is_none() {
        eprintln!("skipped the CLI comparison: {program} is not installed");
        return None;
    }
    let output = TestCommand::new(program)
        .current_dir(&workspace.root)
        .args(args)
        .timeout(Duration::from_secs(120))
        .run();
    Some(output.stdout)
}

/// shellcheck's own diagnostics (`-f json1`), as bash-language-server runs it: with
/// `--external-sources` and the file's folder as source path. Columns: shellcheck counts a tab
/// as 8 columns; the fixture has no tabs, so its columns are characters.
fn shellcheck(workspace: &Workspace) -> Option<Vec<String>> {
    let stdout = cli_output(
        workspace,
        "shellcheck",
        &[
            "--external-sources",
            "--source-path=SCRIPTDIR",
            "-f",
            "json1",
            "main.sh",
        ],
    )?;
    let report: Value = serde_json::from_str(&stdout).expect("shellcheck json1");
    let severity = |level: &str| match level {
        "error" => "error",
        "warning" => "warning",
        "info" => "info",
        _ => "hint",
    };
    Some(
        report["comments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|comment| {
                format!(
                    "{}:{}-{}:{} {} [shellcheck SC{}] {}",
                    comment["line"],
                    comment["column"],
                    comment["endLine"],
                    comment["endColumn"],
                    severity(comment["level"].as_str().unwrap()),
                    comment["code"],
                    comment["message"].as_str().unwrap()
                )
            })
            .collect(),
    )
}

/// What pyright's language server reports beyond `pyright --outputjson`: the "not accessed"
/// hint exists only in the editor protocol.
const PYRIGHT_LSP_ONLY: &[&str] = &["3:8-3:10 hint [Pyright -] \"os\" is not accessed"];

/// As [`PYRIGHT_LSP_ONLY`], for basedpyright (which names the rule).
const BASEDPYRIGHT_LSP_ONLY: &[&str] =
    &["3:8-3:10 hint [basedpyright reportUnusedImport] Import \"os\" is not accessed"];

/// Column `utf16_column` (0-based UTF-16 code units) of line `line` (1-based) of `text`, as a
/// 1-based character column.
fn character_column(text: &str, line: u64, utf16_column: u64) -> u64 {
    let line_text = text.lines().nth(line as usize - 1).unwrap_or("");
    let mut units = 0;
    let mut characters = 0;
    for character in line_text.chars() {
        if units >= utf16_column {
            break;
        }
        units += character.len_utf16() as u64;
        characters += 1;
    }
    characters + 1
}

fn pyright_family(workspace: &Workspace, program: &str, source: &str) -> Option<Vec<String>> {
    let stdout = cli_output(workspace, program, &["--outputjson", "inventory/report.py"])?;
    let report: Value = serde_json::from_str(&stdout).expect("pyright --outputjson");
    let text = workspace.read("inventory/report.py");
    let mut rows = Vec::new();
    for diagnostic in report["generalDiagnostics"].as_array().unwrap() {
        let range = &diagnostic["range"];
        let line = range["start"]["line"].as_u64().unwrap() + 1;
        let end_line = range["end"]["line"].as_u64().unwrap() + 1;
        let severity = match diagnostic["severity"].as_str().unwrap() {
            "information" => "info",
            other => other,
        };
        rows.push(format!(
            "{line}:{}-{end_line}:{} {severity} [{source} {}] {}",
            character_column(&text, line, range["start"]["character"].as_u64().unwrap()),
            character_column(&text, end_line, range["end"]["character"].as_u64().unwrap()),
            diagnostic["rule"].as_str().unwrap_or("-"),
            diagnostic["message"].as_str().unwrap().replace('\n', "\\n")
        ));
    }
    Some(rows)
}

/// `pyright --outputjson` (columns converted from UTF-16 to characters).
fn pyright_cli(workspace: &Workspace) -> Option<Vec<String>> {
    pyright_family(workspace, "pyright", "Pyright")
}

/// `basedpyright --outputjson`.
fn basedpyright_cli(workspace: &Workspace) -> Option<Vec<String>> {
    pyright_family(workspace, "basedpyright", "basedpyright")
}

/// `ruff check --output-format json` (1-based character columns, as lspc's). The CLI prints no
/// severity: `ruff server` reports undefined names (F821), I/O errors (E902) and syntax errors as
/// errors and every other rule as a warning, and appends a rule's fix title to its message as
/// `\n\nhelp: TITLE`; the rows are rebuilt that way.
fn ruff_cli(workspace: &Workspace) -> Option<Vec<String>> {
    let stdout = cli_output(
        workspace,
        "ruff",
        &[
            "check",
            "--no-cache",
            "--output-format",
            "json",
            "inventory/report.py",
        ],
    )?;
    let report: Value = serde_json::from_str(&stdout).expect("ruff json");
    Some(
        report
            .as_array()
            .unwrap()
            .iter()
            .map(|diagnostic| {
                let code = diagnostic["code"].as_str().unwrap_or("-");
                let severity = match code {
                    "F821" | "E902" | "-" => "error",
                    _ => "warning",
                };
                let mut message = diagnostic["message"].as_str().unwrap().to_owned();
                if let Some(title) = diagnostic["fix"]["message"].as_str() {
                    message.push_str(&format!("\\n\\nhelp: {title}"));
                }
                format!(
                    "{}:{}-{}:{} {severity} [Ruff {code}] {message}",
                    diagnostic["location"]["row"],
                    diagnostic["location"]["column"],
                    diagnostic["end_location"]["row"],
                    diagnostic["end_location"]["column"],
                )
            })
            .collect(),
    )
}

/// `taplo lint` (human output: an `error: MESSAGE` line, then `┌─ PATH:LINE:COLUMN`; no end).
fn taplo_cli(workspace: &Workspace) -> Option<Vec<String>> {
    let taplo = tools_dir().join("taplo-0.10.0/bin/taplo");
    let output = TestCommand::new(&taplo)
        .current_dir(&workspace.root)
        .args(["lint", "Cargo.toml"])
        .timeout(Duration::from_secs(60))
        .run();
    let mut rows = Vec::new();
    let mut message = None;
    for line in output.stderr.lines().chain(output.stdout.lines()) {
        if let Some(text) = line.strip_prefix("error: ") {
            message = Some(text.to_owned());
        } else if let (Some(at), Some(text)) = (line.trim_start().strip_prefix("┌─ "), &message)
        {
            let mut parts = at.rsplitn(3, ':');
            let column = parts.next().unwrap();
            let row = parts.next().unwrap();
            rows.push(format!("{row}:{column} error [Even Better TOML -] {text}"));
            message = None;
        }
    }
    Some(rows)
}

/// TypeScript 7's `tsc --noEmit --pretty false` on the project: `file(line,col): error TSn: text`
/// rows of `src/main.ts` (no end position: compared on the start only, see [`compare_with_cli`]).
fn tsgo_cli(workspace: &Workspace) -> Option<Vec<String>> {
    let tsc =
        tools_dir().join("typescript-7.0.2/node_modules/@typescript/typescript-linux-x64/lib/tsc");
    let stdout = cli_output(
        workspace,
        &tsc.to_string_lossy(),
        &["-p", ".", "--pretty", "false"],
    )?;
    let text = workspace.read("src/main.ts");
    let mut rows = Vec::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("src/main.ts(") else {
            continue;
        };
        let (position, rest) = rest.split_once("): ").unwrap();
        let (row, column) = position.split_once(',').unwrap();
        let (severity, rest) = rest.split_once(" TS").unwrap();
        let (code, message) = rest.split_once(": ").unwrap();
        let row: u64 = row.parse().unwrap();
        let column: u64 = column.parse().unwrap();
        rows.push(format!(
            "{row}:{} {severity} [ts {code}] {message}",
            character_column(&text, row, column - 1)
        ));
    }
    Some(rows)
}

macro_rules! server_tests {
    ($($test:ident => $case:literal,)*) => {
        $(
            #[test]
            fn $test() {
                let case = CASES
                    .iter()
                    .find(|case| case.name == $case)
                    .expect("a case of that name");
                if let Some(why) = missing(case) {
                    eprintln!("skipped {}: {why}", case.name);
                    return;
                }
                let failures = run_case(case);
                assert!(failures.is_empty(), "{}", failures.join("\n\n"));
            }
        )*
        /// Every case has a test.
        #[test]
        fn every_case_has_a_test() {
            let tested = [$($case),*];
            for case in CASES {
                assert!(tested.contains(&case.name), "no test for case {}", case.name);
            }
        }
    };
}

server_tests! {
    pyright => "pyright",
    basedpyright => "basedpyright",
    pylsp => "pylsp",
    ruff => "ruff",
    jedi_language_server => "jedi-language-server",
    ty => "ty",
    pyrefly => "pyrefly",
    typescript_language_server => "typescript-language-server",
    tsgo => "tsgo",
    clangd => "clangd",
    clangd_19 => "clangd-19",
    ccls => "ccls",
    bash_language_server => "bash-language-server",
    taplo => "taplo",
    yaml_language_server => "yaml-language-server",
    vscode_json_language_server => "vscode-json-language-server",
    vscode_css_language_server => "vscode-css-language-server",
    vscode_html_language_server => "vscode-html-language-server",
    dockerfile_language_server => "dockerfile-language-server",
    gopls => "gopls",
    rust_analyzer => "rust-analyzer",
    fortls => "fortls",
    cmake_language_server => "cmake-language-server",
    vim_language_server => "vim-language-server",
    intelephense => "intelephense",
    pyright_socket => "pyright-socket",
    yaml_language_server_socket => "yaml-language-server-socket",
}

/// A `transport: "socket"` server that exits without connecting back fails at once with the
/// reason (not after the connect timeout), like a stdio server that dies before `initialize`.
#[test]
fn socket_server_that_exits_before_connecting_is_a_clear_start_failure() {
    let workspace = Workspace::new("socket-gone");
    workspace.file("a.py", "x = 1\n");
    let config = workspace.config(serde_json::json!({
        "gone": {"command": "/bin/sh", "args": ["-c", "echo 'no socket here' >&2; exit 0"],
                 "transport": "socket", "extensionToLanguage": {".py": "python"}},
    }));
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--restart", "never", "--config"])
        .arg(&config)
        .args(["check", "--timeout", "30"])
        .timeout(Duration::from_secs(20))
        .run();
    output.status(3);
    output.stderr_contains("the server exited before connecting to its socket");
}
