//! The one operation vocabulary (issue 12) seen from outside: the same bad argument gets the same
//! message from the command line, `lspc batch` and MCP `tools/call`; the JSON shape works in all
//! three; `lspc COMMAND --help` prints that command's options with examples. No language server is
//! needed: arguments are checked before any server is asked.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::Workspace;

/// A bare MCP client over `lspc mcp`'s stdio (handshake, then requests; every wait bounded).
struct McpClient {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl McpClient {
    fn start(workspace: &Workspace) -> McpClient {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lspc"))
            .args(["--root"])
            .arg(&workspace.root)
            .args(["--no-builtin", "mcp"])
            .env("XDG_CONFIG_HOME", workspace.path(".no-user-config"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn lspc mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take().expect("stdin");
        let mut client = McpClient {
            child,
            stdin,
            lines,
        };
        client.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method} (id {id}) within 20 s"));
            let message: Value = serde_json::from_str(&line).expect("JSON line");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The answer lines of `lspc --no-builtin batch` run on `lines` in `workspace` (exit 0).
fn batch_answers(workspace: &Workspace, lines: String) -> Vec<Value> {
    let output = workspace
        .lspc()
        .args(["--no-builtin", "batch"])
        .env("RUST_LOG", "off")
        .stdin(lines)
        .run();
    output.status(0);
    output
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON answer"))
        .collect()
}

/// A bad argument, given the way each frontend gives it, and the one message all three print.
struct Case {
    cli: &'static [&'static str],
    tool: &'static str,
    arguments: Value,
    message: &'static str,
}

#[test]
fn a_bad_argument_gets_the_same_message_from_cli_batch_and_mcp() {
    let workspace = Workspace::new("same message");
    workspace.file("a.py", "x = 1\ny = x\n");
    let cases = [
        Case {
            cli: &["hover", "a.py:0:3"],
            tool: "hover",
            arguments: json!({"file": "a.py", "line": 0, "column": 3}),
            message: "hover: line must be a whole number from 1, got 0",
        },
        Case {
            cli: &["references", "a.py:2", "--symbol", "x", "--occurrence", "0"],
            tool: "references",
            arguments: json!({"file": "a.py", "line": 2, "symbol": "x", "occurrence": 0}),
            message: "references: occurrence must be a whole number from 1, got 0",
        },
        Case {
            cli: &["definition", "a.py:2:1", "--symbol", "x"],
            tool: "definition",
            arguments: json!({"file": "a.py", "line": 2, "column": 1, "symbol": "x"}),
            message: "definition: give either column or symbol, not both",
        },
        Case {
            cli: &["call-hierarchy", "a.py:2:1", "--direction", "up"],
            tool: "call_hierarchy",
            arguments: json!({"file": "a.py", "line": 2, "column": 1, "direction": "up"}),
            message: "call-hierarchy: direction \"up\" is not one of incoming, outgoing",
        },
        Case {
            cli: &["code-actions", "a.py:4-2"],
            tool: "code_actions",
            arguments: json!({"file": "a.py", "line": 4, "end_line": 2}),
            message: "code-actions: end_line 2 is before line 4",
        },
        Case {
            cli: &["rename", "a.py:1:1", " "],
            tool: "rename",
            arguments: json!({"file": "a.py", "line": 1, "column": 1, "new_name": " "}),
            message: "rename: new_name must not be empty",
        },
        Case {
            cli: &["edit", "a.py", "--new", "z"],
            tool: "edit",
            arguments: json!({"file": "a.py", "new": "z"}),
            message: "edit: old is required",
        },
    ];
    let mut batch = String::new();
    for (index, case) in cases.iter().enumerate() {
        let mut line = case.arguments.clone();
        line["id"] = json!(index);
        line["op"] = json!(case.tool);
        batch.push_str(&format!("{line}\n"));
    }
    let answers = batch_answers(&workspace, batch);
    assert_eq!(answers.len(), cases.len(), "{answers:?}");
    let mut mcp = McpClient::start(&workspace);
    for (index, case) in cases.iter().enumerate() {
        let cli = workspace
            .lspc()
            .arg("--no-builtin")
            .args(case.cli)
            .env("RUST_LOG", "off")
            .run();
        cli.status(2);
        assert_eq!(
            cli.stderr,
            format!("lspc: {}\n", case.message),
            "{}",
            cli.story()
        );
        assert_eq!(
            answers[index],
            json!({"id": index, "error": {"message": case.message}}),
            "batch, {}",
            case.message
        );
        let call = mcp.request(
            10 + index as u64,
            "tools/call",
            json!({"name": case.tool, "arguments": case.arguments}),
        );
        assert_eq!(call["result"]["isError"], true, "{call}");
        assert_eq!(
            call["result"]["content"][0]["text"], case.message,
            "mcp: {call}"
        );
    }
}

/// A file outside the workspace root gets one refusal, the same from `lspc batch` and MCP,
/// whether or not it exists (issue 15: batch read files outside the root MCP refuses).
#[test]
fn a_file_outside_the_root_is_refused_by_batch_as_by_mcp() {
    let workspace = Workspace::new("outside root");
    workspace.file("a.py", "x = 1\n");
    let root = workspace.root.canonicalize().expect("root");
    let sibling = root.with_file_name("outside-root-sibling.py");
    std::fs::write(&sibling, "y = 2\n").expect("sibling");
    let sibling_text = sibling.display().to_string();
    let files = [
        "../outside-root-sibling.py",
        &sibling_text,
        "/etc/hostname",
        "/nowhere/a.py",
    ];
    let refusal = |file: &str| {
        format!(
            "{file} is outside the workspace root {}; lspc only serves files inside it",
            root.display()
        )
    };
    let mut batch = String::new();
    for (index, file) in files.iter().enumerate() {
        let line = json!({"id": index, "op": "hover", "file": file, "line": 1, "column": 1});
        batch.push_str(&format!("{line}\n"));
    }
    batch.push_str(&format!(
        "{}\n",
        json!({"id": "check", "op": "check", "paths": ["../outside-root-sibling.py"]})
    ));
    let answers = batch_answers(&workspace, batch);
    let mut expected: Vec<Value> = files
        .iter()
        .enumerate()
        .map(|(index, file)| json!({"id": index, "error": {"message": refusal(file)}}))
        .collect();
    expected
        .push(json!({"id": "check", "error": {"message": refusal("../outside-root-sibling.py")}}));
    assert_eq!(answers, expected);
    let mut mcp = McpClient::start(&workspace);
    for (index, file) in files.iter().enumerate() {
        let call = mcp.request(
            10 + index as u64,
            "tools/call",
            json!({"name": "hover", "arguments": {"file": file, "line": 1, "column": 1}}),
        );
        assert_eq!(call["result"]["isError"], true, "{call}");
        assert_eq!(
            call["result"]["content"][0]["text"],
            refusal(file),
            "{call}"
        );
    }
    std::fs::remove_file(&sibling).expect("remove sibling");
}

/// The tools an agent sees take exactly the arguments of the operation definitions, and the JSON
/// shape of a batch line is accepted as MCP arguments (without `op`).
#[test]
fn mcp_tool_schemas_are_the_operation_definitions() {
    let workspace = Workspace::new("schemas");
    let mut mcp = McpClient::start(&workspace);
    let list = mcp.request(1, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert!(!tools.is_empty(), "{list}");
    for tool in tools {
        let name = tool["name"].as_str().expect("name");
        let def = lspc::operation::definitions::find_tool(name)
            .unwrap_or_else(|| panic!("tool {name} has no operation definition"));
        assert_eq!(
            tool["inputSchema"],
            lspc::operation::definitions::input_schema(def),
            "{name}"
        );
        assert_eq!(tool["description"], def.summary, "{name}");
    }
}

#[test]
fn every_operation_command_has_help_with_its_options_and_examples() {
    let workspace = Workspace::new("help");
    for def in lspc::operation::definitions::OPERATIONS {
        if def.name == "apply-code-action" {
            continue; // `code-actions LOC --apply TITLE`
        }
        let output = workspace.lspc().args([def.name, "--help"]).run();
        output.status(0);
        assert!(
            output
                .stdout
                .starts_with(&format!("lspc {}: {}\n", def.name, def.summary)),
            "{}",
            output.story()
        );
        for example in def.examples {
            assert!(output.stdout.contains(example), "{}", output.story());
        }
    }
    let references = workspace.lspc().args(["references", "--help"]).run();
    references
        .status(0)
        .stdout_contains("  --include-declaration")
        .stdout_contains("LOC is FILE:LINE:COLUMN, FILE:LINE:NAME");
    workspace
        .lspc()
        .args(["batch", "--help"])
        .run()
        .status(0)
        .stdout_contains("Usage: lspc batch");
    // Every other command has its own page too (helper-39: these printed the general one).
    for (args, usage) in [
        (&["session", "--help"][..], "Usage: lspc session start"),
        (
            &["session", "stop", "--help"][..],
            "Usage: lspc session start",
        ),
        (&["doctor", "--help"][..], "Usage: lspc doctor"),
        (
            &["sarif-merge", "--help"][..],
            "Usage: lspc sarif-merge FILE...",
        ),
        (&["ide", "--help"][..], "Usage: lspc ide"),
        (&["mcp", "--help"][..], "Usage: lspc mcp"),
        (&["servers", "--help"][..], "Usage: lspc servers"),
    ] {
        workspace
            .lspc()
            .args(args)
            .run()
            .status(0)
            .stdout_contains(usage);
    }
}

/// The edit operations and `check` are operations like the queries: `lspc batch` runs them from
/// the same JSON shape (real ruff server; `ruff format` and `ruff check` give the expected
/// answers).
#[test]
fn batch_runs_edit_operations_and_check_with_ruff() {
    crate::require_program!("ruff");
    let workspace = Workspace::new("batch edits");
    workspace
        .file("fmt.py", "x=[1,2 ,3]\n")
        .file("lint.py", "import os\n");
    let config = workspace.config(json!({"ruff": crate::support::ruff_entry()}));
    let ruff = |args: &[&str], stdin: Option<&str>| -> String {
        let mut command = Command::new("ruff");
        command
            .args(args)
            .current_dir(&workspace.root)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("ruff");
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("write");
        }
        let output = child.wait_with_output().expect("ruff output");
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let formatted = ruff(
        &["format", "--stdin-filename", "fmt.py", "-"],
        Some("x=[1,2 ,3]\n"),
    );
    assert_eq!(formatted, "x = [1, 2, 3]\n");
    let lines = [
        json!({"id": 1, "op": "format", "file": "fmt.py"}),
        json!({"id": 2, "op": "format", "file": "fmt.py", "apply": true}),
        json!({"id": 3, "op": "edit", "file": "lint.py", "old": "import os", "new": "import os\nimport sys"}),
        json!({"id": 4, "op": "check", "paths": ["lint.py"]}),
    ];
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let output = workspace
        .lspc()
        .arg("--no-builtin")
        .arg("--config")
        .arg(&config)
        .arg("batch")
        .stdin(input)
        .timeout(Duration::from_secs(120))
        .run();
    output.status(0);
    let answers: Vec<Value> = output
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON answer"))
        .collect();
    assert_eq!(answers.len(), 4, "{}", output.story());
    let preview = &answers[0]["result"];
    assert_eq!(preview["applied"], false, "{}", output.story());
    assert_eq!(preview["files"], json!(["fmt.py"]));
    assert!(
        preview["diff"]
            .as_str()
            .unwrap_or("")
            .contains("+x = [1, 2, 3]"),
        "{preview}"
    );
    assert_eq!(answers[1]["result"]["applied"], true, "{}", output.story());
    assert_eq!(workspace.read("fmt.py"), formatted);
    assert_eq!(answers[2]["result"]["applied"], true, "{}", output.story());
    assert_eq!(workspace.read("lint.py"), "import os\nimport sys\n");
    // `ruff check` on the edited file: the two unused imports.
    let report: Value = serde_json::from_str(&ruff(
        &["check", "--output-format", "json", "--no-cache", "lint.py"],
        None,
    ))
    .expect("ruff JSON");
    let mut expected: Vec<(u64, u64, String)> = report
        .as_array()
        .expect("ruff findings")
        .iter()
        .map(|finding| {
            (
                finding["location"]["row"].as_u64().unwrap(),
                finding["location"]["column"].as_u64().unwrap(),
                finding["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    expected.sort();
    assert_eq!(
        expected,
        [(1, 8, "F401".to_owned()), (2, 8, "F401".to_owned())]
    );
    let files = answers[3]["result"]["files"].as_array().expect("files");
    assert_eq!(files.len(), 1, "{}", output.story());
    assert_eq!(files[0]["path"], "lint.py");
    assert_eq!(files[0]["state"], "diagnostics");
    let mut got: Vec<(u64, u64, String)> = files[0]["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|diagnostic| {
            (
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["column"].as_u64().unwrap(),
                diagnostic["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, expected, "{}", output.story());
}

/// A file no server serves gets one message on every route, naming its extension (what decides
/// the server) and no absolute path: the command line and batch said `no language server is
/// configured for /tmp/…/notes/a.zz`, every other message names paths relative to the root.
#[test]
fn a_file_no_server_serves_is_named_by_its_extension_on_every_route() {
    let workspace = Workspace::new("unserved");
    workspace
        .file("notes/a.zz", "x\n")
        .file("notes/Notes", "x\n");
    workspace
        .lspc()
        .args(["hover", "notes/a.zz:1:1"])
        .run()
        .status(2)
        .stderr_contains("lspc: no language server is configured for .zz files\n");
    workspace
        .lspc()
        .args(["definition", "notes/Notes:1:1"])
        .run()
        .status(2)
        .stderr_contains("lspc: no language server is configured for files without an extension\n");
    let mut batch = crate::support::BatchSession::start_with(&workspace, &[]);
    assert_eq!(
        batch.ask(json!({"id": 1, "op": "hover", "file": "notes/a.zz", "line": 1, "column": 1})),
        json!({"id": 1, "error": {"message": "no language server is configured for .zz files"}})
    );
    let (status, _) = batch.finish();
    assert_eq!(status, Some(0));
}
