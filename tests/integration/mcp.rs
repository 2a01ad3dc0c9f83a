//! Integration tests of `lspc mcp`: the built binary driven with raw JSON lines (protocol edge
//! cases without servers; real pyright when it is on PATH), and the end-to-end test with the
//! official MCP Python SDK client (`fixtures/mcp/sdk_client.py`). Every wait is bounded.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Session {
    fn start(root: &Path, extra: &[&str]) -> Session {
        Session::start_env(root, extra, &[])
    }

    /// [`Session::start`] with extra environment variables.
    fn start_env(root: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Session {
        Session::spawn(root, extra, env, Stdio::null())
    }

    /// [`Session::start_env`] with stderr going to `stderr`.
    fn spawn(root: &Path, extra: &[&str], env: &[(&str, &Path)], stderr: Stdio) -> Session {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lspc"));
        crate::support::session_env(&mut command);
        let mut child = command
            .envs(env.iter().map(|(key, value)| (key, value)))
            .arg("--root")
            .arg(root)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
            .spawn()
            .expect("spawn lspc");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Session {
            child,
            stdin,
            lines,
        }
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string());
    }

    /// The next line, parsed; panics after `timeout`.
    fn next(&self, timeout: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(timeout)
            .expect("a message before the timeout");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout line is not JSON: {line}"))
    }

    /// Skip notifications until the response with `id`.
    fn response(&self, id: Value, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.next(left);
            if message.get("id") == Some(&id) {
                return message;
            }
        }
    }

    fn request(&mut self, id: Value, method: &str, params: Value, timeout: Duration) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id, timeout)
    }

    /// The `lsp://servers` resource, parsed (request `id`).
    fn servers_resource(&mut self, id: Value) -> Value {
        let servers = self.request(
            id,
            "resources/read",
            json!({"uri": "lsp://servers"}),
            10 * SECOND,
        );
        let text = servers["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no resource text: {servers}"));
        serde_json::from_str(text).expect("lsp://servers is JSON")
    }

    fn initialize(&mut self, version: &str) -> Value {
        let response = self.request(
            json!(0),
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            Duration::from_secs(10),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response
    }

    /// Close stdin and wait for the exit status (bounded).
    fn finish(mut self, timeout: Duration) -> Option<i32> {
        self.stdin = None;
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("lspc mcp did not exit within {timeout:?} after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temp_workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lspc-mcp-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".git")).expect("mkdir");
    dir.canonicalize().expect("canonical")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn protocol_edge_cases_without_servers() {
    let root = temp_workspace("edges");
    let mut session = Session::start(&root, &["--no-builtin", "mcp"]);
    // Before initialize: a handshake-era request is refused, ping works, the session goes on.
    let early = session.request(json!(1), "tools/list", json!({}), 10 * SECOND);
    assert_eq!(early["error"]["code"], -32600, "{early}");
    let ping = session.request(json!("p"), "ping", json!({}), 10 * SECOND);
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    // Version negotiation.
    let init = session.initialize("2025-03-26");
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    // Malformed JSON, unknown method, bad params; ids echoed exactly.
    session.send_raw("{\"jsonrpc\":\"2.0\",\"id\":");
    assert_eq!(
        session.next(10 * SECOND),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error: EOF while parsing a value at line 1 column 22"}})
    );
    // A line over 64 MiB is skipped to its end with an error, and the next line reads normally
    // (helper-40: a 400 MB line grew lspc to 416 MB, and it stayed there).
    let mut huge =
        String::from("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"pad\":\"");
    huge.push_str(&"x".repeat(64 * 1024 * 1024));
    huge.push_str("\"}}");
    session.send_raw(&huge);
    drop(huge);
    assert_eq!(
        session.next(30 * SECOND),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "invalid request: a line longer than 67108864 bytes (64 MiB) was skipped"}})
    );
    let unknown = session.request(json!("x-9"), "frobnicate", json!({}), 10 * SECOND);
    assert_eq!(
        unknown,
        json!({"jsonrpc": "2.0", "id": "x-9", "error": {"code": -32601, "message": "method not found: frobnicate"}})
    );
    let bad = session.request(
        json!(77),
        "tools/call",
        json!({"name": "nope"}),
        10 * SECOND,
    );
    assert_eq!(bad["error"]["code"], -32602);
    assert_eq!(bad["id"], 77);
    // No server: only diagnostics is offered.
    let list = session.request(json!(2), "tools/list", json!({}), 10 * SECOND);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, vec!["diagnostics", "edit"]);
    assert!(list["result"]["tools"][0]["outputSchema"].is_object());
    // A tool failure is a result with isError, not a JSON-RPC error.
    let outside = session.request(
        json!(3),
        "tools/call",
        json!({"name": "diagnostics", "arguments": {"file": "/etc/hostname"}}),
        10 * SECOND,
    );
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    // The stateless era in the same process.
    let discover = session.request(
        json!(4),
        "server/discover",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}),
        10 * SECOND,
    );
    assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(discover["result"]["resultType"], "complete");
    let unsupported = session.request(
        json!(5),
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}),
        10 * SECOND,
    );
    assert_eq!(unsupported["error"]["code"], -32022);
    assert_eq!(unsupported["error"]["data"]["requested"], "2099-01-01");
    let resources = session.request(json!(6), "resources/list", json!({}), 10 * SECOND);
    assert_eq!(resources["result"]["resources"][0]["uri"], "lsp://servers");
    assert_eq!(session.finish(20 * SECOND), Some(0));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn pyright_diagnostics_resources_and_eof_mid_request() {
    if !on_path("pyright-langserver") {
        eprintln!("skipped: pyright-langserver is not on PATH");
        return;
    }
    let root = temp_workspace("pyright");
    std::fs::write(root.join("a.py"), "x: int = \"s\"\n").expect("write");
    let mut session = Session::start(&root, &["mcp"]);
    session.initialize("2025-06-18");
    let subscribed = session.request(
        json!(1),
        "resources/subscribe",
        json!({"uri": "lsp://diagnostics/a.py"}),
        10 * SECOND,
    );
    assert_eq!(subscribed["result"], json!({}));
    let first = session.request(
        json!(2),
        "tools/call",
        json!({"name": "diagnostics", "arguments": {"file": "a.py"}}),
        90 * SECOND,
    );
    let files = &first["result"]["structuredContent"]["files"];
    assert_eq!(files[0]["file"], "a.py", "{first}");
    assert_eq!(files[0]["diagnostics"][0]["line"], 1);
    assert_eq!(files[0]["diagnostics"][0]["severity"], "error");
    // B15: the file changes on disk; the next call sees the new text.
    std::fs::write(root.join("a.py"), "x: int = 1\n").expect("write");
    let second = session.request(
        json!(3),
        "tools/call",
        json!({"name": "diagnostics", "arguments": {"file": "a.py"}}),
        90 * SECOND,
    );
    assert_eq!(
        second["result"]["structuredContent"]["files"][0]["diagnostics"],
        json!([]),
        "{second}"
    );
    let servers = session.request(
        json!(4),
        "resources/read",
        json!({"uri": "lsp://servers"}),
        10 * SECOND,
    );
    let text = servers["result"]["contents"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("\"pyright\""), "{text}");
    // EOF with a request in flight: lspc still exits 0, bounded.
    session.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "diagnostics", "arguments": {"file": "a.py"}}}));
    assert_eq!(session.finish(40 * SECOND), Some(0));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn official_python_sdk_client() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/sdk_client.py");
    let has_sdk = Command::new("python3")
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !has_sdk {
        eprintln!("skipped: python3 cannot import mcp (pip install 'mcp>=2')");
        return;
    }
    for mode in ["auto", "legacy"] {
        let mut command = Command::new("python3");
        crate::support::session_env(&mut command);
        let mut child = command
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_lspc"))
            .arg(mode)
            .arg(env!("CARGO_BIN_EXE_lspc-fixture-server"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn python3");
        let deadline = Instant::now() + Duration::from_secs(300);
        let status = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("fixtures/mcp/sdk_client.py {mode} did not finish within 300 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let output = child.wait_with_output().expect("output");
        assert!(
            status.success(),
            "fixtures/mcp/sdk_client.py {mode} failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

// ----- fixture-server sessions: cancellation, progress, B17, configuration reload ------------

use crate::support::{events, read_transcript, scenario, Workspace};

fn start_with_config(workspace: &Workspace, config: &Path) -> Session {
    let config = config.to_str().expect("utf-8 path");
    let mut session = Session::start(
        &workspace.root,
        &["--no-builtin", "--config", config, "mcp"],
    );
    session.initialize("2025-06-18");
    session
}

/// Poll `check` every 50 ms until it returns `Some`, at most `timeout`.
fn wait_for<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn call_tool(session: &mut Session, id: i64, name: &str, arguments: Value) -> Value {
    let response = session.request(
        json!(id),
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        30 * SECOND,
    );
    assert_eq!(response["result"]["isError"], false, "{response}");
    response["result"].clone()
}

/// After a cancelled call: the next hover of `greet` in `a.py` (id 12) is answered normally, and
/// the session ends cleanly.
fn finish_with_a_greet_hover(mut session: Session) {
    let hover = call_tool(
        &mut session,
        12,
        "hover",
        json!({"file": "a.py", "line": 1, "symbol": "greet"}),
    );
    let text = hover["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("greet"), "{hover}");
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// Issue 4: `notifications/cancelled` for a tools/call cancels the LSP request with
/// `$/cancelRequest`; per the MCP spec (basic/utilities/cancellation: receivers "SHOULD ... not
/// send a response for the cancelled request") no response follows, and the session goes on.
/// A `_meta.progressToken` on the slow call yields `notifications/progress` meanwhile.
#[test]
fn cancelled_call_sends_cancel_request_and_progress_flows() {
    let mut workspace = Workspace::new("mcp-cancel");
    workspace.file("a.py", "def greet():\n    pass\n");
    let slow_hover = json!({"rules": [{"method": "textDocument/hover", "times": 1,
        "actions": [{"after": 8000, "actions": [{"reply": {"contents": "late"}}]}]}]});
    let config = workspace.fixture_config(&[("fx", &[".py"], slow_hover)]);
    let mut session = start_with_config(&workspace, &config);
    session.send(
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
        "name": "hover", "arguments": {"file": "a.py", "line": 1, "symbol": "greet"},
        "_meta": {"progressToken": "tok-1"}}}),
    );
    let progress = loop {
        let message = session.next(10 * SECOND);
        assert_ne!(
            message.get("id"),
            Some(&json!(10)),
            "answered early: {message}"
        );
        if message["method"] == "notifications/progress" {
            break message;
        }
    };
    assert_eq!(progress["params"]["progressToken"], "tok-1", "{progress}");
    assert_eq!(progress["params"]["progress"], 1, "{progress}");
    let transcript = workspace.transcript_path("fx");
    let hover_id = wait_for(10 * SECOND, "the hover request at the server", || {
        read_transcript(&transcript)
            .iter()
            .find(|entry| entry["message"]["method"] == "textDocument/hover")
            .map(|entry| entry["message"]["id"].clone())
    });
    let sent = Instant::now();
    session.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 10, "reason": "test"}}),
    );
    wait_for(5 * SECOND, "$/cancelRequest at the server", || {
        read_transcript(&transcript)
            .iter()
            .any(|entry| {
                entry["message"]["method"] == "$/cancelRequest"
                    && entry["message"]["params"]["id"] == hover_id
            })
            .then_some(())
    });
    // The session goes on: a ping answers at once, and the cancelled call never gets a response.
    session.send(json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}));
    let deadline = Instant::now() + 2 * SECOND;
    loop {
        let message = session.next(deadline.saturating_duration_since(Instant::now()));
        assert_ne!(message.get("id"), Some(&json!(10)), "{message}");
        if message.get("id") == Some(&json!(11)) {
            assert_eq!(message["result"], json!({}));
            break;
        }
    }
    while let Ok(line) = session.lines.recv_timeout(1500 * Duration::from_millis(1)) {
        let message: Value = serde_json::from_str(&line).expect("json");
        assert_ne!(message.get("id"), Some(&json!(10)), "{message}");
    }
    assert!(sent.elapsed() < 7 * SECOND, "the cancel took too long");
    // The next hover (the rule fired once) is answered normally.
    finish_with_a_greet_hover(session);
}

/// A new user's agent on pallets/flask: cancelling two in-flight `references` calls left
/// pyright 1.1.414 answering every later `textDocument/references` with `-32603 …
/// this._token.cancel is not a function` (a raw LSP client reproduces it). lspc sends pyright no
/// `$/cancelRequest`; the cancelled call still gets no response, and the session goes on. The
/// fixture server stands in for pyright under the program name `pyright-langserver`.
#[test]
fn a_cancelled_call_sends_pyright_no_cancel_request() {
    let mut workspace = Workspace::new("mcp-cancel-pyright");
    workspace.file("a.py", "def greet():\n    pass\n");
    let slow_hover = json!({"rules": [{"method": "textDocument/hover", "times": 1,
        "actions": [{"after": 3000, "actions": [{"reply": {"contents": "late"}}]}]}]});
    let config = workspace.fixture_config(&[("fx", &[".py"], slow_hover)]);
    crate::support::run_fixture_as(&config, "fx", "pyright-langserver");
    let mut session = start_with_config(&workspace, &config);
    session.send(
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
        "name": "hover", "arguments": {"file": "a.py", "line": 1, "symbol": "greet"}}}),
    );
    let transcript = workspace.transcript_path("fx");
    wait_for(10 * SECOND, "the hover request at the server", || {
        read_transcript(&transcript)
            .iter()
            .any(|entry| entry["message"]["method"] == "textDocument/hover")
            .then_some(())
    });
    session.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 10, "reason": "test"}}),
    );
    // Past the late answer: the call got no response, and the server no cancellation.
    session.send(json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}));
    let deadline = Instant::now() + 4 * SECOND;
    while let Ok(line) = session
        .lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
    {
        let message: Value = serde_json::from_str(&line).expect("json");
        assert_ne!(message.get("id"), Some(&json!(10)), "{message}");
    }
    finish_with_a_greet_hover(session);
    let cancels = read_transcript(&transcript)
        .iter()
        .filter(|entry| entry["message"]["method"] == "$/cancelRequest")
        .count();
    assert_eq!(cancels, 0);
}

/// A `rename` with `apply` cancelled before its edit is written writes nothing (helper-40: the
/// files were written 3-9 s after the cancel, and the client, sent no response as MCP asks,
/// took it that nothing had changed). The server's first publish comes 3 s after the open (it
/// publishes at once after a change), so the cancel lands while the rename waits for it; the
/// session goes on, and the same rename sent again writes.
#[test]
fn a_rename_cancelled_before_it_is_written_writes_nothing() {
    let mut workspace = Workspace::new("mcp-cancel-rename");
    workspace.file("a.py", "def greet():\n    pass\ngreet()\n");
    let slow_publish = json!({"rules": [
        {"method": "textDocument/didOpen", "actions": [
            {"after": 3000, "actions": [{"publish": {"diagnostics": []}}]}
        ]}
    ]});
    let config = workspace.fixture_config(&[("fx", &[".py"], slow_publish)]);
    let mut session = start_with_config(&workspace, &config);
    let rename =
        json!({"file": "a.py", "line": 1, "symbol": "greet", "new_name": "hello", "apply": true});
    session.send(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "rename", "arguments": rename}}));
    let transcript = workspace.transcript_path("fx");
    wait_for(10 * SECOND, "the open at the server", || {
        read_transcript(&transcript)
            .iter()
            .any(|entry| entry["message"]["method"] == "textDocument/didOpen")
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    session.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 10, "reason": "test"}}),
    );
    // Past the publish and the write it would have allowed: no response, nothing written.
    let deadline = Instant::now() + 6 * SECOND;
    while let Ok(line) = session
        .lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
    {
        let message: Value = serde_json::from_str(&line).expect("json");
        assert_ne!(message.get("id"), Some(&json!(10)), "{message}");
    }
    assert_eq!(workspace.read("a.py"), "def greet():\n    pass\ngreet()\n");
    let written = call_tool(&mut session, 11, "rename", rename);
    assert_eq!(written["structuredContent"]["applied"], true, "{written}");
    assert_eq!(workspace.read("a.py"), "def hello():\n    pass\nhello()\n");
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// A new user's agent sent two renames at once on encode/starlette: the second one's edit,
/// computed by pyright before the first was written, landed at its old columns in the first
/// one's text (`EnvironMaEnvironFailureror`), and both calls said they succeeded. Here a rename
/// whose answer the server delays 2 s, and an `edit` of the same file written meanwhile: the
/// rename's edit is refused whole (the server's positions are for the text before the `edit`),
/// nothing of it is written, and the same rename asked again then applies.
#[test]
fn a_rename_computed_before_another_edit_wrote_its_file_is_refused() {
    let mut workspace = Workspace::new("mcp-rename-race");
    workspace.file("a.py", "one = 1\n");
    workspace.file("b.py", "oneoneone\n");
    let uri = |name: &str| format!("file://{}", workspace.root.join(name).display());
    let rename_edit = json!({"changes": {
        uri("a.py"): [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}, "newText": "uno"}],
        uri("b.py"): [{"range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 6}}, "newText": "uno"}]
    }});
    let scenario = json!({"rules": [
        {"method": "textDocument/rename", "nth": 1, "actions": [
            {"after": 2000, "actions": [{"reply": rename_edit}]}
        ]},
        {"method": "textDocument/rename", "actions": [{"reply": rename_edit}]}
    ]});
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = start_with_config(&workspace, &config);
    let rename =
        json!({"file": "a.py", "line": 1, "symbol": "one", "new_name": "uno", "apply": true});
    session.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "rename", "arguments": rename}}));
    let transcript = workspace.transcript_path("fx");
    wait_for(10 * SECOND, "the rename at the server", || {
        read_transcript(&transcript)
            .iter()
            .any(|entry| entry["message"]["method"] == "textDocument/rename")
            .then_some(())
    });
    let edit = session.request(
        json!(2),
        "tools/call",
        json!({"name": "edit", "arguments": {"file": "b.py", "old": "oneoneone", "new": "oneoneoneone"}}),
        10 * SECOND,
    );
    assert_eq!(edit["result"]["isError"], false, "{edit}");
    assert_eq!(workspace.read("b.py"), "oneoneoneone\n");
    let refused = session.response(json!(1), 20 * SECOND);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("b.py was changed by another lspc edit after the server computed this one"),
        "{text}"
    );
    assert_eq!(workspace.read("a.py"), "one = 1\n");
    assert_eq!(workspace.read("b.py"), "oneoneoneone\n");
    // Asked again, the server's answer is for the text it now has (the fixture's is the same
    // edit, which fits it: the middle "one" of b.py at columns 3-6).
    let again = call_tool(&mut session, 3, "rename", rename);
    assert_eq!(again["structuredContent"]["applied"], true, "{again}");
    assert_eq!(workspace.read("a.py"), "uno = 1\n");
    assert_eq!(workspace.read("b.py"), "oneunooneone\n");
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// A new user's two agents on one HTTP server (pallets/itsdangerous, google/uuid): `edit`s of
/// different lines of one file sent at once had one refused, "changed by another lspc edit after
/// the server computed this one" (12 rounds of 12), though no server computes an `edit`'s
/// positions and its `old` text was still there. The later one now searches the new text again.
#[test]
fn two_text_edits_of_one_file_at_once_both_apply() {
    let mut workspace = Workspace::new("mcp-two-edits");
    let lines: String = (0..8).map(|n| format!("v{n} = {n}\n")).collect();
    workspace.file("a.py", &lines);
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let mut session = start_with_config(&workspace, &config);
    let opened = call_tool(&mut session, 1, "diagnostics", json!({"file": "a.py"}));
    assert_eq!(opened["isError"], false, "{opened}");
    let mut expected = lines.clone();
    for round in 0..4 {
        let (first, second) = (2 * round, 2 * round + 1);
        for (id, line) in [(10 + first, first), (10 + second, second)] {
            session.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "edit", "arguments": {"file": "a.py",
                    "old": format!("v{line} = {line}\n"), "new": format!("v{line} = {}\n", line + 100)}}}));
        }
        // The answers come in either order.
        let mut answered = Vec::new();
        while answered.len() < 2 {
            let message = session.next(20 * SECOND);
            let Some(id) = message["id"].as_i64() else {
                continue;
            };
            assert_eq!(
                message["result"]["isError"], false,
                "round {round}: {message}"
            );
            answered.push(id);
        }
        answered.sort();
        assert_eq!(answered, [10 + first, 10 + second], "round {round}");
        for line in [first, second] {
            expected = expected.replace(
                &format!("v{line} = {line}\n"),
                &format!("v{line} = {}\n", line + 100),
            );
        }
        assert_eq!(workspace.read("a.py"), expected, "round {round}");
    }
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// A new user's agent on antirez/sds (clangd): after another tool broke open files, the
/// passive drain (`diagnostics` without a file) said "no new diagnostics since the last
/// delivery" (7 of 7, polled for 6 s) until a call named one of them. The drain now waits for
/// the open documents to settle first, which re-sends the files changed on disk.
#[test]
fn the_passive_drain_sees_open_files_another_tool_broke() {
    let mut workspace = Workspace::new("mcp-drain-after-disk-edit");
    workspace.file("a.py", "x = 1\n").file("b.py", "y = 2\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let mut session = start_with_config(&workspace, &config);
    for (id, file) in [(1, "a.py"), (2, "b.py")] {
        let clean = call_tool(&mut session, id, "diagnostics", json!({ "file": file }));
        assert_eq!(clean["isError"], false, "{clean}");
    }
    let drained = call_tool(&mut session, 3, "diagnostics", json!({}));
    assert_eq!(
        drained["structuredContent"]["files"],
        json!([]),
        "{drained}"
    );
    workspace.file("b.py", "y = 2\nERROR: broken by another tool\n");
    let drained = call_tool(&mut session, 4, "diagnostics", json!({}));
    let files = &drained["structuredContent"]["files"];
    assert_eq!(files.as_array().map(Vec::len), Some(1), "{drained}");
    assert_eq!(files[0]["file"], "b.py", "{drained}");
    assert_eq!(
        files[0]["diagnostics"][0]["message"], "broken by another tool",
        "{drained}"
    );
    let again = call_tool(&mut session, 5, "diagnostics", json!({}));
    assert_eq!(again["structuredContent"]["files"], json!([]), "{again}");
    // Fixed, then broken the same way again (a new user's agent on sindresorhus/p-map: the
    // second break was never delivered, 4 of 4): the file's delivery starts over with its text.
    workspace.file("b.py", "y = 2\n");
    let fixed = call_tool(&mut session, 6, "diagnostics", json!({}));
    assert_eq!(fixed["structuredContent"]["files"], json!([]), "{fixed}");
    workspace.file("b.py", "y = 2\nERROR: broken by another tool\n");
    let broken_again = call_tool(&mut session, 7, "diagnostics", json!({}));
    assert_eq!(
        broken_again["structuredContent"]["files"][0]["diagnostics"][0]["message"],
        "broken by another tool",
        "{broken_again}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// A new user's agent on go-chi/chi: another tool broke a package (27 errors in files whose
/// own text did not change, delivered), fixed it, and broke it again: the third drain said "no
/// new diagnostics since the last delivery", the errors being remembered as delivered. Now a
/// settled answer without them forgets them, and the drain names the files that are clean again.
/// Real pyright: `b.py` only imports the function another tool changes.
#[test]
fn findings_fixed_and_brought_back_by_another_file_are_delivered_again() {
    if !on_path("pyright-langserver") {
        eprintln!("skipped: pyright-langserver is not on PATH");
        return;
    }
    let returns = |kind: &str, value: &str| format!("def f() -> {kind}:\n    return {value}\n");
    let workspace = Workspace::new("mcp-drain-dependent");
    workspace
        .file("a.py", &returns("int", "1"))
        .file("b.py", "from a import f\n\nx: int = f()\n");
    let mut session = Session::start(&workspace.root, &["mcp"]);
    session.initialize("2025-06-18");
    for (id, file) in [(1, "a.py"), (2, "b.py")] {
        let clean = call_tool(&mut session, id, "diagnostics", json!({ "file": file }));
        let text = clean["content"][0]["text"].as_str().unwrap_or("");
        assert_eq!(text, format!("{file}: no diagnostics"), "{clean}");
    }
    let delivered = |answer: &Value| -> Vec<(String, u64, String)> {
        answer["structuredContent"]["files"]
            .as_array()
            .unwrap_or_else(|| panic!("no files in {answer}"))
            .iter()
            .flat_map(|file| file["diagnostics"].as_array().cloned().unwrap_or_default())
            .map(|d| {
                let message = d["message"].as_str().unwrap_or("");
                (
                    d["file"].as_str().unwrap_or("").to_owned(),
                    d["line"].as_u64().unwrap_or(0),
                    message.lines().next().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let broken = vec![(
        "b.py".to_owned(),
        3,
        "Type \"str\" is not assignable to declared type \"int\"".to_owned(),
    )];
    for round in 0..2 {
        workspace.file("a.py", &returns("str", "\"1\""));
        let drained = call_tool(&mut session, 10 + round, "diagnostics", json!({}));
        assert_eq!(delivered(&drained), broken, "round {round}: {drained}");
        workspace.file("a.py", &returns("int", "1"));
        let fixed = call_tool(&mut session, 20 + round, "diagnostics", json!({}));
        assert_eq!(delivered(&fixed), [], "round {round}: {fixed}");
        assert_eq!(
            fixed["structuredContent"]["clean"],
            json!(["b.py"]),
            "round {round}: {fixed}"
        );
        let text = fixed["content"][0]["text"].as_str().unwrap_or("");
        assert_eq!(
            text,
            "no new diagnostics since the last delivery\n\
             now clean (every finding reported before is gone): b.py",
            "round {round}"
        );
    }
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// helper-67's wish (thirty-second round): an agent that had opened a file (a hover) and then
/// asked `diagnostics` with no file got "no new diagnostics since the last delivery" while that
/// file's server was still analysing: the drain after a timed-out wait read as clean, with no
/// `complete` flag where batch has one. Now both forms carry `complete`, and the no-file form
/// names the open file that has not settled. The fixture never publishes for `a.py`.
#[test]
fn diagnostics_without_a_file_say_when_an_open_file_has_not_settled() {
    let mut workspace = Workspace::new("mcp-unsettled-drain");
    workspace
        .file("a.py", "greet = 1\n")
        .file("b.py", "ERROR: broken\n");
    let scenario = json!({"rules": [
        {"method": "textDocument/didOpen", "uriEndsWith": "a.py", "actions": []}
    ]});
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let config = config.to_str().expect("utf-8 path");
    let mut session = Session::start(
        &workspace.root,
        &["--no-builtin", "--config", config, "mcp", "--timeout", "1"],
    );
    session.initialize("2025-06-18");
    let b = call_tool(&mut session, 1, "diagnostics", json!({"file": "b.py"}));
    assert_eq!(b["structuredContent"]["complete"], true, "{b}");
    assert_eq!(
        b["structuredContent"]["files"][0]["diagnostics"][0]["message"], "broken",
        "{b}"
    );
    let settled = call_tool(&mut session, 2, "diagnostics", json!({}));
    assert_eq!(settled["structuredContent"]["complete"], true, "{settled}");
    assert_eq!(
        settled["content"][0]["text"], "no new diagnostics since the last delivery",
        "{settled}"
    );
    call_tool(
        &mut session,
        3,
        "hover",
        json!({"file": "a.py", "line": 1, "symbol": "greet"}),
    );
    let unsettled = call_tool(&mut session, 4, "diagnostics", json!({}));
    let note =
        "not settled, more diagnostics may come (retry later): a.py: fx still analysing after 1 s";
    assert_eq!(
        unsettled["structuredContent"],
        json!({"files": [], "complete": false, "note": note}),
        "{unsettled}"
    );
    assert_eq!(
        unsettled["content"][0]["text"],
        format!("no new diagnostics since the last delivery\n{note}"),
        "{unsettled}"
    );
    let a = call_tool(&mut session, 5, "diagnostics", json!({"file": "a.py"}));
    assert_eq!(a["structuredContent"]["complete"], false, "{a}");
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// A new user's agent on go-chi/chi: an in-root symlink `link.go` to a file outside the root.
/// `hover` on it was refused ("outside the workspace root"), but gopls parses every file of the
/// package, and its publish for the link (canonical: the outside file) reached the agent in
/// `newDiagnostics` and `lsp://diagnostics`, quoting the file's first token. Frontends now see
/// no file outside the root.
#[test]
fn diagnostics_of_a_file_outside_the_root_never_reach_the_agent() {
    if !on_path("gopls") || !on_path("go") {
        eprintln!("skipped: gopls or go is not on PATH");
        return;
    }
    let workspace = Workspace::new("mcp-symlink-out");
    workspace
        .file("go.mod", "module example.com/s\n\ngo 1.19\n")
        .file("a.go", "package s\n\nfunc A() int { return 1 }\n");
    let outside = workspace.root.parent().unwrap().join("secret.txt");
    std::fs::write(&outside, "secret_token_of_another_file\n").unwrap();
    std::os::unix::fs::symlink(&outside, workspace.root.join("link.go")).unwrap();
    let mut session = Session::start(&workspace.root, &["mcp"]);
    session.initialize("2025-06-18");
    let mut seen = Vec::new();
    seen.push(call_tool(
        &mut session,
        1,
        "diagnostics",
        json!({"file": "a.go"}),
    ));
    // gopls loads the package (and parses the link) at start-up: its publish is in by now.
    std::thread::sleep(Duration::from_millis(1500));
    seen.push(call_tool(&mut session, 2, "diagnostics", json!({})));
    seen.push(session.request(
        json!(3),
        "resources/read",
        json!({"uri": "lsp://diagnostics"}),
        20 * SECOND,
    ));
    let hover = session.request(
        json!(4),
        "tools/call",
        json!({"name": "hover", "arguments": {"file": "link.go", "line": 1, "column": 1}}),
        20 * SECOND,
    );
    assert_eq!(hover["result"]["isError"], true, "{hover}");
    seen.push(hover);
    for answer in &seen {
        let text = answer.to_string();
        assert!(!text.contains("secret"), "{text}");
    }
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// B17 through MCP: two fixture servers on `.py`; the passive drain (`diagnostics` without a
/// file) delivers E1 once, errors first, at most 10 per file and 30 in total, with a note naming
/// how many were left out.
#[test]
fn b17_passive_drain_merges_dedupes_and_caps() {
    let mut workspace = Workspace::new("mcp-b17");
    let mut lines: String = (0..14).map(|n| format!("line{n} = {n}\n")).collect();
    // A symbol, so that `document_symbols` answers at once (an empty first answer would wait
    // for the file's diagnostics, and its passive block would carry them all).
    lines.push_str("def main():\n    pass\n");
    workspace.file("a.py", &lines);
    for file in 1..=5 {
        workspace.file(
            &format!("other{file}.py"),
            "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n",
        );
    }
    let config = workspace.fixture_config(&[
        ("fx-a", &[".py"], scenario("two_servers_a")),
        ("fx-b", &[".py"], scenario("two_servers_b")),
    ]);
    let mut session = start_with_config(&workspace, &config);
    // Opening a.py makes both servers publish; the call's own passive block may already carry
    // the first publishes ([E1] from both servers).
    let first = call_tool(&mut session, 1, "document_symbols", json!({"file": "a.py"}));
    let first_messages: Vec<String> = first["structuredContent"]["newDiagnostics"]["files"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .flat_map(|file| file["diagnostics"].as_array().cloned().unwrap_or_default())
        .map(|d| {
            format!(
                "{} {}",
                d["file"].as_str().unwrap_or(""),
                d["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    let e1_first = match first_messages.as_slice() {
        [] => false,
        [only] if only == "a.py E1 undefined name" => true,
        other => panic!("unexpected first delivery: {other:?}"),
    };
    std::thread::sleep(Duration::from_millis(1500));
    let drained = call_tool(&mut session, 2, "diagnostics", json!({}));
    let structured = &drained["structuredContent"];
    let rows: Vec<String> = structured["files"]
        .as_array()
        .expect("files")
        .iter()
        .flat_map(|file| {
            file["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|d| {
                    format!(
                        "{}:{} {} {}",
                        d["file"].as_str().unwrap_or(""),
                        d["line"],
                        d["severity"].as_str().unwrap_or(""),
                        d["message"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Publishes that arrive in one engine turn are registered in no fixed order, so which file
    // the total cap cuts varies; every delivered list is a prefix of that file's sorted set.
    let mut a_expected = Vec::new();
    if !e1_first {
        a_expected.push("a.py:1 error E1 undefined name".to_owned());
    }
    a_expected.push("a.py:2 error E2 type mismatch".to_owned());
    a_expected.extend((1..=12).map(|n| format!("a.py:{} warning W{n} unused", n + 2)));
    let mut per_file: Vec<(String, Vec<String>)> = Vec::new();
    for row in &rows {
        let file = row.split(':').next().unwrap_or("").to_owned();
        match per_file.last_mut() {
            Some((last, list)) if *last == file => list.push(row.clone()),
            _ => per_file.push((file, vec![row.clone()])),
        }
    }
    for (file, list) in &per_file {
        let expected: Vec<String> = if file == "a.py" {
            a_expected.clone()
        } else {
            (0..5)
                .map(|n| format!("{file}:{} warning W{n} elsewhere", n + 1))
                .collect()
        };
        assert!(list.len() <= 10, "{file}: more than 10: {list:?}");
        assert_eq!(list[..], expected[..list.len()], "{drained}");
    }
    assert_eq!(rows.len(), 30, "{drained}");
    assert_eq!(
        rows.iter().filter(|row| row.contains(" E1 ")).count() + usize::from(e1_first),
        1,
        "E1 is delivered once: {drained}"
    );
    // The errors are never cut: they rank first across files.
    assert!(
        rows.contains(&"a.py:2 error E2 type mismatch".to_owned()),
        "{drained}"
    );
    // Left out: a.py's diagnostics past 10 (4, or 3 when E1 came earlier) and 5 past the total
    // of 30.
    let more = if e1_first { 3 + 5 } else { 4 + 5 };
    assert_eq!(structured["more"], more, "{drained}");
    let note = structured["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with(&format!("{more} more diagnostics not shown")),
        "{note}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// Issue 4: editing the `--config` file between calls reloads it: the changed server's old
/// process is shut down and the new configuration serves the next call; the unchanged server
/// keeps its process. In session mode the session reloads (issue 13).
#[test]
fn config_reload_restarts_changed_servers_only() {
    let mut workspace = Workspace::new("mcp-reload");
    workspace.file("a.py", "def greet():\n    pass\n");
    workspace.file("b.c", "int add(void);\n");
    let first = json!({"rules": [{"method": "textDocument/hover",
        "actions": [{"reply": {"contents": "first scenario"}}]}]});
    let config =
        workspace.fixture_config(&[("fx-py", &[".py"], first), ("fx-c", &[".c"], json!({}))]);
    let mut session = start_with_config(&workspace, &config);
    let hover = |session: &mut Session, id: i64, file: &str, symbol: &str| -> String {
        let result = call_tool(
            session,
            id,
            "hover",
            json!({"file": file, "line": 1, "symbol": symbol}),
        );
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(hover(&mut session, 1, "a.py", "greet").contains("first scenario"));
    assert!(hover(&mut session, 2, "b.c", "add").contains("add"));
    let py_transcript = workspace.transcript_path("fx-py");
    let c_transcript = workspace.transcript_path("fx-c");
    let start_pids = |path: &Path| -> Vec<u64> {
        events(&read_transcript(path), "start")
            .iter()
            .filter_map(|event| event["pid"].as_u64())
            .collect()
    };
    let old_py = start_pids(&py_transcript);
    let c_pids = start_pids(&c_transcript);
    assert_eq!((old_py.len(), c_pids.len()), (1, 1));

    // Switch fx-py to another scenario (its args change); fx-c's entry stays the same.
    let second_scenario = workspace.scenario_path("fx-py-second");
    std::fs::write(
        &second_scenario,
        json!({"rules": [{"method": "textDocument/hover",
            "actions": [{"reply": {"contents": "second scenario"}}]}]})
        .to_string(),
    )
    .expect("write scenario");
    let mut entries: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&config).expect("config")).expect("json");
    entries["fx-py"]["args"] =
        json!(["--scenario", second_scenario, "--transcript", py_transcript]);
    std::fs::write(
        &config,
        serde_json::to_string_pretty(&entries).expect("json"),
    )
    .expect("write");

    assert!(hover(&mut session, 3, "a.py", "greet").contains("second scenario"));
    let transcript = read_transcript(&py_transcript);
    let new_py = start_pids(&py_transcript);
    assert_eq!(new_py.len(), 2, "{transcript:?}");
    assert_ne!(new_py[0], new_py[1]);
    let old_pid = old_py[0];
    let old_methods: Vec<&str> = transcript
        .iter()
        .filter(|entry| entry["pid"].as_u64() == Some(old_pid))
        .filter_map(|entry| entry["message"]["method"].as_str())
        .collect();
    assert!(
        old_methods.ends_with(&["shutdown", "exit"]),
        "{old_methods:?}"
    );
    assert!(
        !crate::support::pid_alive(old_pid as u32),
        "the old fx-py process {old_pid} still runs"
    );
    // The unchanged server kept its process.
    assert!(hover(&mut session, 4, "b.c", "add").contains("add"));
    assert_eq!(start_pids(&c_transcript), c_pids);
    assert!(crate::support::pid_alive(c_pids[0] as u32));
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// Issue 5 through MCP: tools gated by capability; `rename` previews then writes; `edit` replaces
/// one unique occurrence and returns the diagnostics it introduced; failures are `isError`.
#[test]
fn edit_tools_preview_write_and_report_new_diagnostics() {
    let mut workspace = Workspace::new("mcp-edits");
    workspace.file("a.py", "def greet():\n    pass\ngreet()\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let mut session = start_with_config(&workspace, &config);
    call_tool(&mut session, 1, "document_symbols", json!({"file": "a.py"}));
    let list = session.request(json!(2), "tools/list", json!({}), 10 * SECOND);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"rename") && names.contains(&"edit"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"format") && !names.contains(&"code_actions"),
        "{names:?}"
    );
    let rename = |apply: bool| json!({"file": "a.py", "line": 1, "symbol": "greet", "new_name": "hello", "apply": apply});
    let preview = call_tool(&mut session, 3, "rename", rename(false));
    assert_eq!(preview["structuredContent"]["applied"], false, "{preview}");
    assert_eq!(preview["structuredContent"]["files"], json!(["a.py"]));
    let diff = preview["structuredContent"]["diff"]
        .as_str()
        .unwrap_or_default();
    assert!(diff.contains("-def greet():\n+def hello():\n"), "{diff}");
    assert_eq!(workspace.read("a.py"), "def greet():\n    pass\ngreet()\n");
    let written = call_tool(&mut session, 4, "rename", rename(true));
    assert_eq!(written["structuredContent"]["applied"], true, "{written}");
    assert_eq!(workspace.read("a.py"), "def hello():\n    pass\nhello()\n");
    let edit = call_tool(
        &mut session,
        5,
        "edit",
        json!({"file": "a.py", "old": "    pass", "new": "    ERROR: broken"}),
    );
    assert_eq!(
        workspace.read("a.py"),
        "def hello():\n    ERROR: broken\nhello()\n"
    );
    let block = edit["structuredContent"]["diagnosticsAfterEdit"]
        .as_str()
        .unwrap_or_default();
    assert!(block.contains("a.py") && block.contains("broken"), "{edit}");
    let missing = session.request(
        json!(6),
        "tools/call",
        json!({"name": "edit", "arguments": {"file": "a.py", "old": "nowhere", "new": "x"}}),
        30 * SECOND,
    );
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    assert_eq!(
        missing["result"]["content"][0]["text"], "edit: the old text does not occur in a.py",
        "{missing}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// Issue 11: a code action the server marks `disabled` was "applied" with `isError: false` and
/// "no changes". It is now refused with the server's reason, over MCP and on the command line
/// (exit 1), and nothing is written.
#[test]
fn a_disabled_code_action_is_refused_with_the_servers_reason() {
    let mut workspace = Workspace::new("mcp-disabled-action");
    workspace.file("a.py", "x = 1\n");
    let scenario = json!({
        "capabilities": {"textDocumentSync": 1, "codeActionProvider": true},
        "rules": [{"method": "textDocument/codeAction", "actions": [{"reply": [{
            "title": "Extract constant",
            "kind": "refactor.extract",
            "disabled": {"reason": "Selection is not an expression"},
            "edit": {"changes": {"$ROOT/a.py": [{"range": {"start": {"line": 0, "character": 0},
                "end": {"line": 0, "character": 1}}, "newText": "y"}]}}
        }]}]}]
    });
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = start_with_config(&workspace, &config);
    for (id, apply) in [(20, true), (21, false)] {
        let response = session.request(
            json!(id),
            "tools/call",
            json!({"name": "apply_code_action", "arguments": {"file": "a.py", "line": 1,
                "title": "Extract constant", "apply": apply}}),
            30 * SECOND,
        );
        assert_eq!(response["result"]["isError"], true, "{response}");
        assert_eq!(
            response["result"]["content"][0]["text"],
            "apply_code_action: code action \"Extract constant\" is disabled by the server: \
             Selection is not an expression (nothing was written; pick another action from \
             code_actions, or change the code so it applies)",
            "{response}"
        );
    }
    assert_eq!(session.finish(20 * SECOND), Some(0));
    assert_eq!(workspace.read("a.py"), "x = 1\n");
    let config = config.to_str().unwrap().to_owned();
    workspace
        .lspc()
        .args([
            "--no-builtin",
            "--config",
            &config,
            "code-actions",
            "a.py:1",
            "--apply",
            "Extract constant",
        ])
        .run()
        .status(1)
        .stderr_contains(
            "lspc: code action \"Extract constant\" is disabled by the server: Selection is not an expression",
        );
    assert_eq!(workspace.read("a.py"), "x = 1\n");
}

/// Every `notifications/resources/updated` for `uri` that arrives within `window`, as the
/// session's lines come (other messages are skipped).
fn updates_within(session: &Session, uri: &str, window: Duration) -> usize {
    let deadline = Instant::now() + window;
    let mut count = 0;
    while let Ok(line) = session
        .lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
    {
        let message: Value = serde_json::from_str(&line).expect("json");
        if message["method"] == "notifications/resources/updated" && message["params"]["uri"] == uri
        {
            count += 1;
        }
    }
    count
}

/// Issue 11: one `edit` sent `notifications/resources/updated` twice, and a file edited on disk
/// by the agent's own tools produced none until a tool call touched it. Now each change gives one
/// update, and while a resource is subscribed the open documents are watched on disk.
/// pyright 1.1.414 (single-server mode).
#[test]
fn pyright_one_update_per_change_and_disk_edits_are_noticed() {
    if !on_path("pyright-langserver") {
        eprintln!("skipped: pyright-langserver is not on PATH");
        return;
    }
    let root = temp_workspace("updates");
    std::fs::write(root.join("a.py"), "x: int = 1\n").expect("write");
    let mut session = Session::start(&root, &["mcp", "--", "pyright-langserver", "--stdio"]);
    session.initialize("2025-06-18");
    let uri = "lsp://diagnostics/a.py";
    let subscribed = session.request(
        json!(1),
        "resources/subscribe",
        json!({"uri": uri}),
        10 * SECOND,
    );
    assert_eq!(subscribed["result"], json!({}));
    let clean = session.request(
        json!(2),
        "tools/call",
        json!({"name": "diagnostics", "arguments": {"file": "a.py"}}),
        90 * SECOND,
    );
    assert_eq!(
        clean["result"]["structuredContent"]["files"][0]["diagnostics"],
        json!([]),
        "{clean}"
    );
    updates_within(&session, uri, 2 * SECOND);
    let edited = session.request(
        json!(3),
        "tools/call",
        json!({"name": "edit", "arguments": {"file": "a.py", "old": "= 1", "new": "= \"s\""}}),
        90 * SECOND,
    );
    assert_eq!(edited["result"]["isError"], false, "{edited}");
    assert_eq!(updates_within(&session, uri, 3 * SECOND), 1);
    // Edited on disk behind lspc's back: noticed without any tool call.
    std::fs::write(root.join("a.py"), "x: int = 2\n").expect("write");
    assert_eq!(updates_within(&session, uri, 6 * SECOND), 1);
    let read = session.request(json!(4), "resources/read", json!({"uri": uri}), 30 * SECOND);
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .expect("text");
    let body: Value = serde_json::from_str(text).expect("json");
    assert_eq!(body["diagnostics"], json!([]), "{body}");
    assert_eq!(session.finish(40 * SECOND), Some(0));
    let _ = std::fs::remove_dir_all(&root);
}

/// Issue 11, the protocol items: no existence oracle outside the root (tools and resources
/// answer one message whether or not the file exists), non-object JSON lines, `initialize` with
/// a malformed `protocolVersion`, -32022 listing only the versions valid in `_meta`, and the
/// stderr of a server that failed at start-up in `lsp://servers`.
#[test]
fn mcp_gives_nothing_away_and_says_what_it_expects() {
    let mut workspace = Workspace::new("mcp-nothing-away");
    workspace.file("a.py", "x = 1\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario("startup_fail"))]);
    let config = config.to_str().expect("utf-8").to_owned();
    let mut session = Session::start(
        &workspace.root,
        &["--no-builtin", "--config", &config, "mcp"],
    );
    let numeric = session.request(
        json!(1),
        "initialize",
        json!({"protocolVersion": 20250618, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        10 * SECOND,
    );
    assert_eq!(
        numeric["error"],
        json!({"code": -32602, "message": "invalid params: protocolVersion must be a string such as \"2025-11-25\", got 20250618"})
    );
    let empty = session.initialize("");
    assert_eq!(empty["result"]["protocolVersion"], "2025-11-25", "{empty}");
    for line in ["\"hello\"", "42"] {
        session.send_raw(line);
        assert_eq!(
            session.next(10 * SECOND),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "invalid request: expected a JSON-RPC request object"}})
        );
    }
    let handshake_in_meta = session.request(
        json!(2),
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25", "io.modelcontextprotocol/clientCapabilities": {}}}),
        10 * SECOND,
    );
    assert_eq!(handshake_in_meta["error"]["code"], -32022);
    assert_eq!(
        handshake_in_meta["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
    // Outside the root: the same answer for a file that exists and one that does not.
    let root = workspace.root.display().to_string();
    for (id, file) in [(3, "/etc/hostname"), (4, "/etc/no_such_file")] {
        let answer = session.request(
            json!(id),
            "tools/call",
            json!({"name": "diagnostics", "arguments": {"file": file}}),
            10 * SECOND,
        );
        assert_eq!(
            answer["result"]["content"][0]["text"],
            format!(
                "{file} is outside the workspace root {root}; lspc only serves files inside it"
            ),
            "{answer}"
        );
    }
    for (id, file) in [
        (5, "..%2F..%2F..%2Fetc%2Fhostname"),
        (6, "..%2F..%2F..%2Fno_such_file"),
    ] {
        let read = session.request(
            json!(id),
            "resources/read",
            json!({"uri": format!("lsp://diagnostics/{file}")}),
            10 * SECOND,
        );
        let shown = file.replace("%2F", "/");
        assert_eq!(
            read["error"],
            json!({"code": -32002, "message": format!("{shown} is outside the workspace root {root}; lspc only serves files inside it")}),
            "{read}"
        );
    }
    // The server fails at start-up; its stderr stays visible once the process is gone.
    let failed = session.request(
        json!(7),
        "tools/call",
        json!({"name": "diagnostics", "arguments": {"file": "a.py"}}),
        30 * SECOND,
    );
    assert!(failed["result"].is_object(), "{failed}");
    let body = session.servers_resource(json!(8));
    let fx = &body["servers"][0];
    assert!(
        fx["state"]
            .as_str()
            .unwrap_or_default()
            .starts_with("failed"),
        "{fx}"
    );
    assert_eq!(
        fx["stderrTail"],
        "error: Unknown binary 'lspc-fixture' in official toolchain 'stable-x86_64-unknown-linux-gnu'.",
        "{fx}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// Install hints (seed 003) in MCP: once per session in the first tool result's `notes`, and in
/// `lsp://servers`; `--no-hints` removes them.
#[test]
fn install_hints_come_once_per_session_and_in_the_servers_resource() {
    let root = temp_workspace("hints");
    std::fs::write(root.join("a.toml"), "a = 1\n").unwrap();
    std::fs::write(root.join("b.toml"), "b = 2\n").unwrap();
    let empty_path = root.join(".empty-bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let hint = "2 .toml files: taplo is not installed (taplo not on PATH); install taplo: \
                cargo install taplo-cli --locked";
    let mut session = Session::start_env(&root, &["mcp"], &[("PATH", &empty_path)]);
    session.initialize("2025-06-18");
    let first = call_tool(&mut session, 1, "diagnostics", json!({}));
    assert_eq!(
        first["structuredContent"]["notes"],
        json!([hint]),
        "{first}"
    );
    assert!(
        first["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("Notes:\n- {hint}")),
        "{first}"
    );
    let second = call_tool(&mut session, 2, "diagnostics", json!({}));
    assert_eq!(second["structuredContent"].get("notes"), None, "{second}");
    let servers = session.request(
        json!(3),
        "resources/read",
        json!({"uri": "lsp://servers"}),
        10 * SECOND,
    );
    let text = servers["result"]["contents"][0]["text"].as_str().unwrap();
    let resource: Value = serde_json::from_str(text).unwrap();
    assert_eq!(resource["installHints"], json!([hint]));
    drop(session);

    let mut quiet = Session::start_env(&root, &["--no-hints", "mcp"], &[("PATH", &empty_path)]);
    quiet.initialize("2025-06-18");
    let result = call_tool(&mut quiet, 1, "diagnostics", json!({}));
    assert_eq!(result["structuredContent"].get("notes"), None, "{result}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Issue 17 through MCP (pyright 1.1.414): in the monorepo fixture each service's file gets its
/// own project's diagnostics and definitions, `lsp://servers` lists one pyright instance per
/// project, and `workspace_symbols` asks every running instance.
#[test]
fn monorepo_projects_through_mcp() {
    if !on_path("pyright-langserver") {
        eprintln!("skipped: pyright-langserver is not on PATH");
        return;
    }
    let workspace = Workspace::copy_of("monorepo");
    let config = workspace.config(json!({ "pyright": {
        "command": "pyright-langserver", "args": ["--stdio"],
        "extensionToLanguage": {".py": "python"}
    }}));
    let mut session = Session::start(
        &workspace.root,
        &[
            "--no-builtin",
            "--config",
            config.to_str().unwrap(),
            "mcp",
            "--timeout",
            "240",
        ],
    );
    session.initialize("2025-06-18");
    let mut id = 1;
    let mut call = |session: &mut Session, name: &str, arguments: Value| {
        id += 1;
        let response = session.request(
            json!(id),
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            300 * SECOND,
        );
        assert_eq!(response["result"]["isError"], false, "{response}");
        response["result"]["structuredContent"].clone()
    };
    for (service, severity) in [("alpha", "error"), ("beta", "warning")] {
        let file = format!("services/{service}/app/main.py");
        let result = call(&mut session, "diagnostics", json!({"file": file}));
        let diagnostics = &result["files"][0]["diagnostics"];
        assert_eq!(diagnostics.as_array().map(Vec::len), Some(1), "{result}");
        assert_eq!(diagnostics[0]["severity"], severity, "{result}");
        assert_eq!(diagnostics[0]["code"], "reportAssignmentType", "{result}");
        let result = call(
            &mut session,
            "definition",
            json!({"file": file, "line": 3, "symbol": "helper"}),
        );
        let location = &result["locations"][0];
        assert_eq!(
            location["path"],
            format!("services/{service}/lib/shared.py"),
            "{result}"
        );
        assert_eq!(
            location["line"],
            if service == "alpha" { 1 } else { 3 },
            "{result}"
        );
    }
    let servers = session.request(
        json!(100),
        "resources/read",
        json!({"uri": "lsp://servers"}),
        10 * SECOND,
    );
    let text = servers["result"]["contents"][0]["text"]
        .as_str()
        .expect("text");
    let listed: Value = serde_json::from_str(text).expect("json");
    let mut projects: Vec<String> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|server| server["name"] == "pyright")
        .map(|server| {
            format!(
                "{} {}",
                server["project"].as_str().unwrap(),
                server["state"].as_str().unwrap()
            )
        })
        .collect();
    projects.sort();
    assert_eq!(
        projects,
        [
            ". not started",
            "services/alpha running",
            "services/beta running"
        ],
        "{text}"
    );
    let result = call(
        &mut session,
        "workspace_symbols",
        json!({"query": "helper", "file": "services/alpha/app/main.py"}),
    );
    let mut paths: Vec<String> = result["symbols"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .filter(|symbol| symbol["name"] == "helper")
        .map(|symbol| {
            symbol["location"]["path"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect();
    paths.sort();
    paths.dedup();
    assert_eq!(
        paths,
        [
            "services/alpha/lib/shared.py",
            "services/beta/lib/shared.py"
        ],
        "{result}"
    );
    assert_eq!(session.finish(60 * SECOND), Some(0));
}

/// `lspc --root ROOT ARGS` with stdin piped, stderr dropped, and stdout a pipe or (`socket`) one
/// end of a socketpair (Node's `child_process` stdio); returns the child and lspc's stdout.
fn spawn_mcp_with_stdout(
    root: &Path,
    args: &[&str],
    socket: bool,
) -> (Child, Box<dyn std::io::Read + Send>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lspc"));
    crate::support::session_env(&mut command);
    command
        .arg("--root")
        .arg(root)
        .args(args)
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .stdin(Stdio::piped())
        .stderr(Stdio::null());
    if socket {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        command.stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)));
        let child = command.spawn().expect("spawn lspc");
        // The command holds our copy of lspc's end; stdout ends only once it is closed.
        drop(command);
        (child, Box::new(ours))
    } else {
        let mut child = command.stdout(Stdio::piped()).spawn().expect("spawn lspc");
        let stdout = child.stdout.take().expect("stdout");
        (child, Box::new(stdout))
    }
}

/// `lspc --no-builtin --session never mcp` in a new workspace `{name}-socket` or
/// `{name}-pipe` ([`spawn_mcp_with_stdout`]): the workspace, the child and its stdout.
fn spawn_bare_mcp(name: &str, socket: bool) -> (PathBuf, Child, Box<dyn std::io::Read + Send>) {
    let kind = if socket { "socket" } else { "pipe" };
    let root = temp_workspace(&format!("{name}-{kind}"));
    let (child, stdout) = spawn_mcp_with_stdout(
        &root,
        &["--no-builtin", "--session", "never", "mcp"],
        socket,
    );
    (root, child, stdout)
}

/// `child`'s exit code if it exits within `timeout` (`Some(None)`: killed by a signal); `None`
/// when it did not, and it is killed then.
fn exit_code_within(child: &mut Child, timeout: Duration) -> Option<Option<i32>> {
    use wait_timeout::ChildExt;
    let status = child.wait_timeout(timeout).expect("wait");
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    status.map(|status| status.code())
}

/// Issue 15: answers are written to stdout by the thread that has them, and only while that
/// cannot block. A client that writes 3,000 pings (about 120 KB of answers, more than a pipe or
/// socket buffer holds) before reading anything is still read to the end: lspc keeps reading
/// stdin while its stdout is full, and every answer comes once, in order. Once with stdout a
/// pipe, once a socket (Node's `child_process` stdio).
#[test]
fn unread_stdout_does_not_stop_stdin_and_answers_keep_their_order() {
    const PINGS: usize = 3000;
    for socket in [false, true] {
        let root = temp_workspace(if socket {
            "unread-socket"
        } else {
            "unread-pipe"
        });
        let (mut child, stdout) = spawn_mcp_with_stdout(&root, &["--no-builtin", "mcp"], socket);
        let mut stdin = child.stdin.take().expect("stdin");
        let (written_sender, written) = channel();
        let writer = std::thread::spawn(move || {
            let mut input = String::new();
            for id in 1..=PINGS {
                input.push_str(&format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\",\"params\":{{}}}}\n"
                ));
            }
            let result = stdin.write_all(input.as_bytes());
            let _ = written_sender.send(result.is_ok());
            // Dropping stdin ends the session once the answers are out.
        });
        let all_written = written.recv_timeout(30 * SECOND);
        let (lines_sender, lines) = channel();
        std::thread::spawn(move || {
            let ids: Vec<Value> = BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .map(|line| serde_json::from_str::<Value>(&line).expect("JSON line")["id"].clone())
                .collect();
            let _ = lines_sender.send(ids);
        });
        let ids = lines.recv_timeout(60 * SECOND);
        let _ = child.kill();
        let _ = child.wait();
        let _ = writer.join();
        assert_eq!(
            all_written,
            Ok(true),
            "socket {socket}: lspc stopped reading stdin while its stdout was full"
        );
        let expected: Vec<Value> = (1..=PINGS).map(|id| json!(id)).collect();
        assert_eq!(
            ids.unwrap_or_else(|_| panic!("socket {socket}: stdout did not end")),
            expected,
            "socket {socket}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// A client that closes stdin and never reads stdout still sees lspc exit (helper-36 and
/// helper-40: it stayed, stuck writing). Answers of a little over half a pipe page (an error for
/// a 2,100-character tool name, 2,212 bytes) take a pipe buffer each, so the 17th filled a 64 KB
/// pipe whose byte count still showed room, and the thread that wrote it blocked while holding
/// stdout's lock. Now such a line goes to the writer thread, and once stdin is closed lspc waits
/// only while stdout takes bytes (5 s). The answers written are whole lines, in order.
#[test]
fn lspc_exits_after_stdin_closes_when_the_client_never_reads_stdout() {
    const CALLS: usize = 200;
    for socket in [false, true] {
        let (root, mut child, stdout) = spawn_bare_mcp("never-read", socket);
        let mut stdin = child.stdin.take().expect("stdin");
        let name = "x".repeat(2100);
        let mut input = String::from(
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n",
        );
        for id in 1..=CALLS {
            input.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{name}\",\"arguments\":{{}}}}}}\n"
            ));
        }
        // On a thread: before the fix lspc stopped reading stdin too.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        assert_eq!(
            exit_code_within(&mut child, 60 * SECOND),
            Some(Some(0)),
            "socket {socket}: lspc did not exit within 60 s of stdin closing while stdout was unread"
        );
        let _ = writer.join();
        let ids: Vec<Value> = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .map(|line| {
                serde_json::from_str::<Value>(&line).expect("a whole JSON line")["id"].clone()
            })
            .collect();
        let expected: Vec<Value> = (0..ids.len()).map(|id| json!(id)).collect();
        assert_eq!(ids, expected, "socket {socket}");
        assert!(
            ids.len() > 16,
            "socket {socket}: only {} answers were written",
            ids.len()
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// helper-64's trial: a client that closed its end of lspc's stdout but kept stdin open (a
/// crashed reader thread) left `lspc mcp` running for as long as stdin stayed open, its servers
/// with it, answering into nothing ("dropping further MCP messages"). The first write that
/// fails now shuts lspc down as the end of stdin does. Once with stdout a pipe, once a socket.
#[test]
fn lspc_exits_when_the_client_closes_stdout_and_keeps_stdin_open() {
    for socket in [false, true] {
        let (root, mut child, stdout) = spawn_bare_mcp("stdout-closed", socket);
        let mut stdin = child.stdin.take().expect("stdin");
        let ping = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        stdin.write_all(ping(1).as_bytes()).unwrap();
        let mut first = String::new();
        let mut reader = BufReader::new(stdout);
        reader.read_line(&mut first).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&first).unwrap()["id"],
            json!(1),
            "{first}"
        );
        drop(reader);
        stdin.write_all(ping(2).as_bytes()).unwrap();
        assert_eq!(
            exit_code_within(&mut child, 30 * SECOND),
            Some(Some(0)),
            "socket {socket}: lspc did not exit within 30 s of a write to its closed stdout"
        );
        drop(stdin);
        let _ = std::fs::remove_dir_all(&root);
    }
}

// ----- issue 15: stdio's fast path ----------------------------------------------------------

/// An in-process `lspc mcp` (`--session never`: the fast path is stdio's in-process route) whose
/// stderr (at `RUST_LOG=lspc=debug`) goes to `log`; `fast_path: false` sets
/// `LSPC_MCP_FAST_PATH=off`, which sends every line through the hub.
fn start_logged(workspace: &Workspace, config: &Path, log: &Path, fast_path: bool) -> Session {
    start_logged_in(workspace, config, log, fast_path, "never")
}

/// [`start_logged`] with `--session SESSION`.
fn start_logged_in(
    workspace: &Workspace,
    config: &Path,
    log: &Path,
    fast_path: bool,
    session: &str,
) -> Session {
    let config = config.to_str().expect("utf-8 path");
    let stderr = std::fs::File::create(log).expect("log file");
    let mut env: Vec<(&str, &Path)> = vec![
        ("RUST_LOG", Path::new("lspc=debug")),
        ("LSPC_SESSION_IDLE", Path::new("20s")),
    ];
    if !fast_path {
        env.push(("LSPC_MCP_FAST_PATH", Path::new("off")));
    }
    let mut session = Session::spawn(
        &workspace.root,
        &[
            "--no-builtin",
            "--config",
            config,
            "--session",
            session,
            "mcp",
        ],
        &env,
        Stdio::from(stderr),
    );
    session.initialize("2025-06-18");
    // Answered once the hub has handled `notifications/initialized`, so the next call finds the
    // hub caught up and may start on the reader.
    let ping = session.request(json!("ready"), "ping", json!({}), 10 * SECOND);
    assert_eq!(ping["result"], json!({}), "{ping}");
    session
}

/// How many tool calls named `tool` the stdin reader started itself (its debug log line), and
/// how many of those were in flight at once (the instant route: the request went out in the
/// loop's turn and its answer is written by the thread that has it).
fn fast_path_starts(log: &Path, tool: &str) -> (usize, usize) {
    let needle = format!("tools/call {tool} started on the stdin reader");
    let log = std::fs::read_to_string(log).unwrap_or_default();
    let started: Vec<&str> = log.lines().filter(|line| line.contains(&needle)).collect();
    let in_flight = started
        .iter()
        .filter(|line| line.ends_with(": in flight"))
        .count();
    (started.len(), in_flight)
}

/// The results of `calls` (tool name and arguments) made one at a time, by id from 1.
fn tool_results(session: &mut Session, calls: &[(&str, Value)]) -> Vec<Value> {
    calls
        .iter()
        .enumerate()
        .map(|(index, (name, arguments))| {
            let id = index as i64 + 1;
            let response = session.request(
                json!(id),
                "tools/call",
                json!({"name": name, "arguments": arguments}),
                60 * SECOND,
            );
            response["result"].clone()
        })
        .collect()
}

/// Through a warm session the stdin reader starts nothing itself (it would wait out each
/// call's sync in the session, a server start included, instead of reading the next line):
/// every call takes the hub's route and answers as in process.
#[test]
fn fast_path_is_not_taken_through_a_session() {
    let mut workspace = Workspace::new("mcp-fast-session");
    workspace.file("a.py", "def greet(name):\n    return name\n\ngreet('x')\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let calls = [
        (
            "hover",
            json!({"file": "a.py", "line": 1, "symbol": "greet"}),
        ),
        (
            "definition",
            json!({"file": "a.py", "line": 4, "symbol": "greet"}),
        ),
    ];
    let mut answers = Vec::new();
    for session_mode in ["never", "always"] {
        let log = workspace.root.join(format!("session-{session_mode}.log"));
        let mut session = start_logged_in(&workspace, &config, &log, true, session_mode);
        answers.push(tool_results(&mut session, &calls));
        assert_eq!(session.finish(20 * SECOND), Some(0));
        let started = (
            fast_path_starts(&log, "hover").0,
            fast_path_starts(&log, "definition").0,
        );
        let expected = if session_mode == "never" {
            (1, 1)
        } else {
            (0, 0)
        };
        assert_eq!(
            started,
            expected,
            "--session {session_mode}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        answers[0][0]["structuredContent"]["hover"]["text"],
        json!("greet at 0:4"),
        "{}",
        answers[0][0]
    );
    let _ = Command::new(env!("CARGO_BIN_EXE_lspc"))
        .env("XDG_RUNTIME_DIR", crate::support::test_runtime_dir())
        .arg("--root")
        .arg(&workspace.root)
        .args(["session", "stop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Issue 15: on stdio the reader starts hover and definition calls itself; each answer is the
/// one the hub's route gives (`LSPC_MCP_FAST_PATH=off`), byte for byte once parsed, including
/// failures (a position off the line) and the stateless era's fields.
#[test]
fn fast_path_answers_exactly_what_the_hub_route_answers() {
    let mut workspace = Workspace::new("mcp-fast-fixture");
    workspace.file("a.py", "def greet(name):\n    return name\n\ngreet('x')\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let calls = [
        (
            "hover",
            json!({"file": "a.py", "line": 1, "symbol": "greet"}),
        ),
        ("hover", json!({"file": "a.py", "line": 4, "column": 1})),
        (
            "definition",
            json!({"file": "a.py", "line": 4, "symbol": "greet"}),
        ),
        (
            "definition",
            json!({"file": "a.py", "line": 4, "symbol": "greet", "kind": "declaration"}),
        ),
        ("hover", json!({"file": "a.py", "line": 3, "column": 1})),
        ("hover", json!({"file": "a.py", "line": 1, "column": 90})),
    ];
    let mut answers = Vec::new();
    for fast_path in [true, false] {
        let log = workspace.root.join(format!("fast-{fast_path}.log"));
        let mut session = start_logged(&workspace, &config, &log, fast_path);
        let mut results = tool_results(&mut session, &calls);
        let modern = session.request(
            json!(99),
            "tools/call",
            json!({"name": "hover", "arguments": {"file": "a.py", "line": 1, "symbol": "greet"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}}}),
            30 * SECOND,
        );
        results.push(modern["result"].clone());
        let missing = session.request(
            json!(100),
            "tools/call",
            json!({"name": "hover", "arguments": {"file": "nope.py", "line": 1, "column": 1}}),
            30 * SECOND,
        );
        results.push(missing["result"].clone());
        assert_eq!(session.finish(20 * SECOND), Some(0));
        let started = (
            fast_path_starts(&log, "hover"),
            fast_path_starts(&log, "definition"),
        );
        if fast_path {
            // The hover of a file that does not exist is the hub's: arguments the reader cannot
            // read are read there again, in order with the rest. In flight at once: all but the
            // file's first hover (its analysis wait is due) and the position off the line (the
            // worker reports it).
            assert_eq!(
                started,
                ((5, 3), (2, 2)),
                "{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        } else {
            assert_eq!(started, ((0, 0), (0, 0)));
        }
        answers.push(results);
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        answers[0][0]["structuredContent"]["hover"]["text"],
        "greet at 0:4"
    );
    assert_eq!(
        answers[0][2]["structuredContent"]["locations"][0],
        json!({"path": "a.py", "line": 1, "column": 5, "endLine": 1, "endColumn": 10,
            "lineText": "def greet(name):"}),
        "{}",
        answers[0][2]
    );
    assert_eq!(
        answers[0][4]["content"][0]["text"],
        "no hover information found"
    );
    assert_eq!(answers[0][5]["isError"], true, "{}", answers[0][5]);
    assert_eq!(answers[0][6]["resultType"], "complete", "{}", answers[0][6]);
    assert_eq!(answers[0][7]["isError"], true, "{}", answers[0][7]);
}

/// Issue 15: a call started by the reader is still one request of the session: a second
/// request with its id is refused while it runs, a ping answers meanwhile, cancelling it sends
/// `$/cancelRequest` and no answer, and stdin closing with one in flight still answers it.
#[test]
fn fast_path_calls_keep_ids_cancellation_and_the_eof_grace() {
    let mut workspace = Workspace::new("mcp-fast-slow");
    workspace.file("a.py", "def greet():\n    pass\n");
    let slow_hovers = json!({"rules": [{"method": "textDocument/hover", "times": 3,
        "actions": [{"after": 1500, "actions": [{"reply": {"contents": "late"}}]}]}]});
    let config = workspace.fixture_config(&[("fx", &[".py"], slow_hovers)]);
    let log = workspace.root.join("fast.log");
    let mut session = start_logged(&workspace, &config, &log, true);
    let hover = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "hover", "arguments": {"file": "a.py", "line": 1, "symbol": "greet"}}})
    };
    // A duplicate id while the first runs, and a ping meanwhile.
    session.send(hover(5));
    session.send(hover(5));
    session.send(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}));
    // Notifications (the tool list once the server is up) are skipped; responses keep order.
    let next_response = |session: &Session| loop {
        let message = session.next(10 * SECOND);
        if message.get("id").is_some() {
            return message;
        }
    };
    let refused = next_response(&session);
    assert_eq!(refused["id"], 5, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "invalid request: a request with this id is still running"
    );
    let ping = next_response(&session);
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 6, "result": {}}));
    let answer = next_response(&session);
    assert_eq!(answer["id"], 5, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "late", "{answer}");
    // Cancelled: `$/cancelRequest` at the server, no answer.
    session.send(hover(7));
    let transcript = workspace.transcript_path("fx");
    let hover_ids = || -> Vec<Value> {
        read_transcript(&transcript)
            .iter()
            .filter(|entry| entry["message"]["method"] == "textDocument/hover")
            .map(|entry| entry["message"]["id"].clone())
            .collect()
    };
    let second = wait_for(10 * SECOND, "the second hover at the server", || {
        hover_ids().get(1).cloned()
    });
    session.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "test"}}),
    );
    wait_for(5 * SECOND, "$/cancelRequest at the server", || {
        read_transcript(&transcript)
            .iter()
            .any(|entry| {
                entry["message"]["method"] == "$/cancelRequest"
                    && entry["message"]["params"]["id"] == second
            })
            .then_some(())
    });
    session.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    let deadline = Instant::now() + 3 * SECOND;
    let mut pinged = false;
    while let Ok(line) = session
        .lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
    {
        let message: Value = serde_json::from_str(&line).expect("json");
        assert_ne!(
            message.get("id"),
            Some(&json!(7)),
            "answered a cancelled call: {message}"
        );
        pinged |= message.get("id") == Some(&json!(8));
    }
    assert!(pinged, "no answer to the ping after the cancel");
    // Stdin closes with a call in flight: it is still answered, then lspc exits. (The first
    // hover waited for the file's analysis on a worker; the other two were in flight at once.)
    session.send(hover(9));
    wait_for(10 * SECOND, "the third hover at the server", || {
        (hover_ids().len() >= 3).then_some(())
    });
    session.stdin = None;
    let answer = next_response(&session);
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "late", "{answer}");
    assert_eq!(session.finish(20 * SECOND), Some(0));
    assert_eq!(
        fast_path_starts(&log, "hover"),
        (3, 2),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

/// Issue 15 on a real server (clangd 14): hover and definition started by the reader answer
/// exactly what the hub's route answers, and go out at once after the file's first question.
#[test]
fn fast_path_answers_clangd_as_the_hub_route_does() {
    if !on_path("clangd") {
        eprintln!("skipping fast_path_answers_clangd_as_the_hub_route_does: clangd is not on PATH");
        return;
    }
    let workspace = Workspace::new("mcp-fast-clangd");
    let root = workspace.root.display().to_string();
    workspace
        .file("util.h", "int twice(int x);\n")
        .file("util.c", "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n")
        .file("main.c", "#include \"util.h\"\nint main(void) { return twice(21); }\n")
        .file(
            "compile_commands.json",
            &json!([
                {"directory": root, "file": format!("{root}/util.c"), "arguments": ["cc", "-c", "util.c"]},
                {"directory": root, "file": format!("{root}/main.c"), "arguments": ["cc", "-c", "main.c"]}
            ])
            .to_string(),
        );
    let config = workspace.path("clangd.lsp.json");
    std::fs::write(
        &config,
        json!({"clangd": {"command": "clangd", "extensionToLanguage": {".c": "c", ".h": "c"}}})
            .to_string(),
    )
    .expect("config");
    let calls = [
        (
            "hover",
            json!({"file": "main.c", "line": 2, "symbol": "twice"}),
        ),
        (
            "definition",
            json!({"file": "main.c", "line": 2, "symbol": "twice"}),
        ),
        (
            "hover",
            json!({"file": "main.c", "line": 2, "symbol": "twice"}),
        ),
        (
            "definition",
            json!({"file": "main.c", "line": 2, "symbol": "twice", "kind": "declaration"}),
        ),
        (
            "references",
            json!({"file": "main.c", "line": 2, "symbol": "twice"}),
        ),
        ("document_symbols", json!({"file": "main.c"})),
        (
            "signature_help",
            json!({"file": "main.c", "line": 2, "column": 31}),
        ),
    ];
    let mut answers = Vec::new();
    for fast_path in [true, false] {
        let log = workspace.root.join(format!("fast-{fast_path}.log"));
        let mut session = start_logged(&workspace, &config, &log, fast_path);
        answers.push(tool_results(&mut session, &calls));
        assert_eq!(session.finish(30 * SECOND), Some(0));
        let started = [
            "hover",
            "definition",
            "references",
            "document_symbols",
            "signature_help",
        ]
        .map(|tool| fast_path_starts(&log, tool));
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        if fast_path {
            // The first hover waits for main.c's analysis; the rest go out at once.
            assert_eq!(started, [(2, 1), (2, 2), (1, 1), (1, 1), (1, 1)], "{log}");
        } else {
            assert_eq!(started, [(0, 0); 5], "{log}");
        }
    }
    assert_eq!(answers[0], answers[1]);
    let hover = answers[0][0]["structuredContent"]["hover"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(hover.starts_with("function twice"), "{}", answers[0][0]);
    assert_eq!(
        answers[0][1]["structuredContent"]["locations"],
        json!([{"path": "util.c", "line": 2, "column": 5, "endLine": 2, "endColumn": 10,
            "lineText": "int twice(int x) { return 2 * x; }"}]),
        "{}",
        answers[0][1]
    );
    assert_eq!(
        answers[0][3]["structuredContent"]["locations"][0]["path"], "util.h",
        "{}",
        answers[0][3]
    );
    // clangd 14's answers, the same on both routes (asserted above).
    assert_eq!(
        answers[0][4]["structuredContent"]["locations"],
        json!([
            {"path": "main.c", "line": 2, "column": 25, "endLine": 2, "endColumn": 30,
                "lineText": "int main(void) { return twice(21); }"},
            {"path": "util.c", "line": 2, "column": 5, "endLine": 2, "endColumn": 10,
                "lineText": "int twice(int x) { return 2 * x; }"},
            {"path": "util.h", "line": 1, "column": 5, "endLine": 1, "endColumn": 10,
                "lineText": "int twice(int x);"}
        ]),
        "{}",
        answers[0][4]
    );
    assert_eq!(
        answers[0][5]["structuredContent"]["symbols"],
        json!([{"name": "main", "kind": "function", "detail": "int (void)", "children": [],
            "location": {"path": "main.c", "line": 2, "column": 5, "endLine": 2,
                "endColumn": 9, "lineText": "int main(void) { return twice(21); }"}}]),
        "{}",
        answers[0][5]
    );
    assert_eq!(
        answers[0][6]["structuredContent"]["signatureHelp"]["signatures"],
        json!([{"label": "twice(int x) -> int", "parameters": ["int x"]}]),
        "{}",
        answers[0][6]
    );
}

/// A fixture server that publishes a diagnostic for `b.py` when asked for a definition, then
/// runs `then` (its answer); over `lspc mcp` (the fast path on or off): a hover, a definition,
/// 300 ms (the publish is queued by the loop by then: the next call's drain is due), a hover.
/// The workspace (kept alive), the three results and the debug log's path.
fn publish_on_definition(
    name: &str,
    then: Value,
    fast_path: bool,
) -> (Workspace, Vec<Value>, PathBuf) {
    let scenario = json!({"rules": [{"method": "textDocument/definition", "times": 1, "actions": [
        {"publish": {"uri": "$ROOT/b.py", "diagnostics": [{"range": {"start": {"line": 0,
            "character": 4}, "end": {"line": 0, "character": 13}}, "severity": 1,
            "source": "fx", "message": "E1 undefined name"}]}},
        then]}]});
    // A workspace (and so a server, and a warm session in session mode) per route: the
    // publish happens once per server.
    let mut workspace = Workspace::new(&format!("{name}-{fast_path}"));
    workspace.file("a.py", "def greet():\n    pass\n\ngreet()\n");
    workspace.file("b.py", "y = undefined\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let log = workspace.root.join("passive.log");
    let mut session = start_logged(&workspace, &config, &log, fast_path);
    let hover = json!({"file": "a.py", "line": 1, "symbol": "greet"});
    let mut results = tool_results(
        &mut session,
        &[
            ("hover", hover.clone()),
            (
                "definition",
                json!({"file": "a.py", "line": 4, "symbol": "greet"}),
            ),
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    let next = session.request(
        json!(3),
        "tools/call",
        json!({"name": "hover", "arguments": hover}),
        30 * SECOND,
    );
    results.push(next["result"].clone());
    assert_eq!(session.finish(20 * SECOND), Some(0));
    (workspace, results, log)
}

/// Found with `lspc mcp` on pallets/click@2c8cd3a (pyright 1.1.414, a new-user trial):
/// `diagnostics` with `src/click/_compat.py` returned all 14 of its diagnostics, while the same
/// result's `newDiagnostics` said "4 more diagnostics not shown (caps: 10 per file, 30 in
/// total); call diagnostics with a file to see all of that file's", and after a republish a
/// later call delivered those 4 as new: the drain marked only the 10 the cap let through as
/// delivered. A file the tool has just shown counts as delivered whole. Here a.py has 3 errors
/// and 11 hints; the server publishes them again on the first hover.
#[test]
fn diagnostics_shown_by_the_tool_are_not_new_again() {
    let mut workspace = Workspace::new("mcp-shown-file");
    let text: String = (1..=14)
        .map(|n| match n <= 3 {
            true => format!("x{n} = {n}  # ERROR: e{n}\n"),
            false => format!("x{n} = {n}  # HINT: h{n}\n"),
        })
        .collect();
    workspace.file("a.py", &text);
    let scenario = json!({"rules": [{"method": "textDocument/hover", "times": 1, "actions": [
        {"publish": {"diagnostics": "markers"}}, {"default": true}]}]});
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = start_with_config(&workspace, &config);
    let shown = call_tool(&mut session, 1, "diagnostics", json!({"file": "a.py"}));
    // Each marker starts right after `x{n} = {n}  # `.
    let expected: Vec<String> = (1..=14)
        .map(|n| {
            let column = format!("x{n} = {n}  # ").len() + 1;
            match n <= 3 {
                true => format!("a.py:{n}:{column}: error: e{n} [fixture FX1]"),
                false => format!("a.py:{n}:{column}: hint: h{n} [fixture FX4]"),
            }
        })
        .collect();
    assert_eq!(
        shown["content"][0]["text"],
        json!(expected.join("\n")),
        "{shown}"
    );
    assert_eq!(
        shown["structuredContent"].get("newDiagnostics"),
        None,
        "{shown}"
    );
    let hover = json!({"file": "a.py", "line": 1, "symbol": "x1"});
    let republished = call_tool(&mut session, 2, "hover", hover.clone());
    std::thread::sleep(Duration::from_millis(500));
    let next = call_tool(&mut session, 3, "hover", hover);
    for result in [&republished, &next] {
        assert_eq!(result["content"][0]["text"], json!("x1 at 0:0"), "{result}");
        assert_eq!(
            result["structuredContent"].get("newDiagnostics"),
            None,
            "{result}"
        );
    }
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// Issue 15: diagnostics a server publishes while fast-path calls run reach the client once,
/// in a later call's `newDiagnostics`, as on the hub's route. When a drain is due, the thread
/// that has the server's answer hands the result's rendering to a worker (a drain waits for the
/// event loop, which that thread may be).
#[test]
fn fast_path_results_carry_new_diagnostics_as_the_hub_route_does() {
    let mut delivered = Vec::new();
    for fast_path in [true, false] {
        let (workspace, results, log) =
            publish_on_definition("mcp-fast-passive", json!({"default": true}), fast_path);
        let new: Vec<Value> = results
            .iter()
            .filter_map(|result| result["structuredContent"].get("newDiagnostics").cloned())
            .collect();
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        if fast_path {
            assert_eq!(fast_path_starts(&log, "hover").0, 2, "{log_text}");
            assert!(
                log_text.contains("passive diagnostics due, the result is rendered on a worker"),
                "{log_text}"
            );
        }
        drop(workspace);
        delivered.push(new);
    }
    assert_eq!(delivered[0], delivered[1]);
    assert_eq!(
        delivered[0],
        vec![
            json!({"files": [{"file": "b.py", "diagnostics": [{"file": "b.py", "line": 1,
            "column": 5, "endLine": 1, "endColumn": 14, "severity": "error",
            "message": "E1 undefined name", "server": "fx", "source": "fx"}]}]})
        ]
    );
}

/// Issue 15: a failed call's error result carries only the error. Diagnostics the server
/// published meanwhile for another file stay queued and reach the next successful call (on
/// the fast path and on the hub's route); they used to be appended to the error's text.
#[test]
fn a_failed_call_carries_only_its_error_and_new_diagnostics_wait_for_a_success() {
    let failing = json!({"replyError": {"code": -32603, "message": "definition broke"}});
    for fast_path in [true, false] {
        let (_workspace, results, log) =
            publish_on_definition("mcp-failed-passive", failing.clone(), fast_path);
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(
            results[1],
            json!({"content": [{"type": "text",
                "text": "server fx answered textDocument/definition with error -32603: definition broke"}],
                "isError": true}),
            "fast path {fast_path}: {log}"
        );
        assert_eq!(results[0]["structuredContent"].get("newDiagnostics"), None);
        assert_eq!(
            results[2]["structuredContent"]["newDiagnostics"],
            json!({"files": [{"file": "b.py", "diagnostics": [{"file": "b.py", "line": 1,
            "column": 5, "endLine": 1, "endColumn": 14, "severity": "error",
            "message": "E1 undefined name", "server": "fx", "source": "fx"}]}]}),
            "fast path {fast_path}: {log}"
        );
    }
}

/// Found by trying `lspc mcp` as a new user would (pypa/packaging, then reduced): an agent
/// edits a file lspc never opened (here with its own editor, not through lspc) and asks again.
/// pyright reads such files from disk and learns of changes only from the client
/// (`workspace/didChangeWatchedFiles`); in process nothing told it, so every later
/// definition landed at the old position (`lib.py:1:4`, on the `# moved` comment) for the rest
/// of the session, on the fast path and the hub route alike. In-process `lspc mcp` now scans the
/// workspace as a warm session does, and a folder event queued before a call has its scan
/// announced before the call is served, so the very next answer is right. pyright 1.1.414.
#[test]
fn a_definition_into_a_file_edited_behind_lspc_follows_the_edit() {
    if !on_path("pyright-langserver") {
        eprintln!("skipped: pyright-langserver is not on PATH");
        return;
    }
    let root = temp_workspace("unopened-edit");
    let log = root.with_extension("log");
    std::fs::write(root.join("lib.py"), "def greet(name):\n    return name\n").expect("write");
    std::fs::write(
        root.join("main.py"),
        "from lib import greet\n\nprint(greet(\"x\"))\n",
    )
    .expect("write");
    let stderr = std::fs::File::create(&log).expect("log file");
    let mut session = Session::spawn(
        &root,
        &["mcp"],
        &[("RUST_LOG", Path::new("lspc=debug"))],
        Stdio::from(stderr),
    );
    session.initialize("2025-06-18");
    let mut next_id = 1;
    let mut definition = |session: &mut Session| {
        next_id += 1;
        let answer = session.request(
            json!(next_id),
            "tools/call",
            json!({"name": "definition", "arguments": {"file": "main.py", "line": 3, "symbol": "greet"}}),
            90 * SECOND,
        );
        answer["result"]["structuredContent"]["locations"][0].clone()
    };
    let first = definition(&mut session);
    assert_eq!(
        (&first["path"], &first["line"], &first["lineText"]),
        (&json!("lib.py"), &json!(1), &json!("def greet(name):")),
        "{first}"
    );
    std::fs::write(
        root.join("lib.py"),
        "# moved\n# down\ndef greet(name):\n    return name\n",
    )
    .expect("write");
    // The very next call: the write was closed before the call was sent.
    let moved = definition(&mut session);
    assert_eq!(
        (
            &moved["path"],
            &moved["line"],
            &moved["column"],
            &moved["lineText"]
        ),
        (
            &json!("lib.py"),
            &json!(3),
            &json!(5),
            &json!("def greet(name):")
        ),
        "the old position after lib.py changed: {moved}"
    );
    // A hover, after another edit: the type comes from the new text too.
    std::fs::write(
        root.join("lib.py"),
        "# moved\n# down\ndef greet(person: int):\n    return person\n",
    )
    .expect("write");
    let hover = session.request(
        json!("hover"),
        "tools/call",
        json!({"name": "hover", "arguments": {"file": "main.py", "line": 3, "symbol": "greet"}}),
        90 * SECOND,
    );
    assert_eq!(
        hover["result"]["structuredContent"]["hover"]["text"],
        "(function) def greet(person: int) -> int",
        "{hover}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
    // In process the hub had the scan done before each of the two calls after an edit (a
    // warm session scans in its own process).
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    if !crate::support::session_mode() {
        let scans_first = log
            .matches("tools/call: workspace files written since the last scan: scanning first")
            .count();
        assert_eq!(scans_first, 2, "{log}");
    }
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_file(root.with_extension("log"));
}

/// Found by editing the configuration while `lspc mcp` ran, as an agent's editor does (a save
/// that is half written, or a typo): a `--config` file that no longer parses removed every server
/// it had named, so the next call answered "no language server is configured for a.py
/// (configure a server for this extension in .lsp.json …)", naming neither the broken file nor
/// its error, and a warm server was stopped for a momentary typo. A warm session keeps serving
/// its previous configuration then (sessions_reload.rs); `lspc mcp` now does the same, tells
/// the client in a `notifications/message` warning naming the file, and applies the next good
/// version. Fixture server, on the fast path and the hub route.
#[test]
fn a_configuration_that_breaks_while_mcp_runs_keeps_the_previous_one() {
    for fast_path in [true, false] {
        let mut workspace = Workspace::new("mcp-broken-reload");
        workspace.file("a.py", "def greet():\n    pass\n");
        let answer = |text: &str| {
            json!({"rules": [{"method": "textDocument/hover",
                "actions": [{"reply": {"contents": text}}]}]})
        };
        let config = workspace.fixture_config(&[("fx", &[".py"], answer("A"))]);
        let log = workspace.root.join("reload.log");
        let mut session = start_logged(&workspace, &config, &log, fast_path);
        let mut next_id = 0;
        let mut hover = |session: &mut Session| {
            next_id += 1;
            let answer = session.request(
                json!(next_id),
                "tools/call",
                json!({"name": "hover", "arguments": {"file": "a.py", "line": 1, "symbol": "greet"}}),
                10 * SECOND,
            );
            answer["result"]["content"][0]["text"].clone()
        };
        assert_eq!(hover(&mut session), "A");
        std::fs::write(&config, "{ \"fx\": ").expect("write");
        session.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
        let warning = list_and_log_message(&mut session).unwrap_or_else(|| {
            panic!(
                "no notifications/message about the broken file: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        assert_eq!(warning["params"]["level"], "warning", "{warning}");
        let data = warning["params"]["data"].as_str().unwrap_or_default();
        assert!(
            data.starts_with("configuration not reloaded, keeping the previous one: ")
                && data.contains(config.to_str().unwrap()),
            "{warning}"
        );
        assert_eq!(hover(&mut session), "A", "fast path {fast_path}");
        let starts = read_transcript(&workspace.transcript_path("fx"))
            .iter()
            .filter(|entry| entry["message"]["method"] == "initialize")
            .count();
        assert_eq!(starts, 1, "the server kept running");
        // The next good version is applied, and the client that asked is told (the hub held
        // its state aside while handling its request, so it used to miss this message).
        workspace.fixture_config(&[("fy", &[".py"], answer("B"))]);
        let reloaded = list_and_log_message(&mut session);
        assert_eq!(
            reloaded.as_ref().map(|message| &message["params"]["data"]),
            Some(&json!(
                "configuration reloaded: restarted [], removed [\"fx\"], added [\"fy\"]"
            )),
            "{reloaded:?}"
        );
        assert_eq!(hover(&mut session), "B", "fast path {fast_path}");
        assert_eq!(session.finish(20 * SECOND), Some(0));
    }
}

/// Send `tools/list` and return the `notifications/message` that arrives with its answer (the
/// two leave on different streams, so both are awaited, at most 10 s).
fn list_and_log_message(session: &mut Session) -> Option<Value> {
    session.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
    let (mut logged, mut listed) = (None, false);
    let deadline = Instant::now() + 10 * SECOND;
    while Instant::now() < deadline && !(listed && logged.is_some()) {
        let Ok(line) = session.lines.recv_timeout(SECOND) else {
            continue;
        };
        let message: Value = serde_json::from_str(&line).expect("json");
        if message["method"] == "notifications/message" {
            logged = Some(message);
        } else {
            listed |= message["id"] == "list";
        }
    }
    logged
}

/// Issue 15 (REAL, typescript-language-server 5.3.0): tsserver's cancellation-pipe folders
/// (`<TMPDIR>/<32 hex digits>/`, two per start, never removed by the server) are gone once
/// `lspc mcp` has exited after its stdin closed: the `TMPDIR` it ran with holds only lspc's own
/// empty parent folder.
#[test]
fn typescript_language_server_leaves_no_folder_in_tmpdir_after_stdin_closes() {
    if !on_path("typescript-language-server") {
        eprintln!("skipped: typescript-language-server is not on PATH");
        return;
    }
    if crate::support::skip_in_session_mode("a warm session's servers keep their folders") {
        return;
    }
    let root = temp_workspace("tmpdir");
    let tmpdir = root.join(".tmpdir");
    std::fs::create_dir_all(&tmpdir).expect("mkdir");
    std::fs::write(root.join("app.ts"), "const n: number = 'one';\n").expect("write");
    let mut session = Session::start_env(&root, &["mcp"], &[("TMPDIR", &tmpdir)]);
    session.initialize("2025-06-18");
    let answer = session.request(
        json!(1),
        "tools/call",
        json!({"name": "diagnostics", "arguments": {"file": "app.ts"}}),
        90 * SECOND,
    );
    let files = &answer["result"]["structuredContent"]["files"];
    assert_eq!(
        files[0]["diagnostics"][0]["message"], "Type 'string' is not assignable to type 'number'.",
        "{answer}"
    );
    assert_eq!(session.finish(40 * SECOND), Some(0));
    assert_eq!(
        crate::temp_files::tree(&tmpdir),
        crate::temp_files::lspc_parent_only()
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// `lsp://servers` says why a server's diagnostics are not used: bash-language-server without
/// ShellCheck publishes an empty set for every script, so lspc turns its diagnostics off (see
/// check::bash_language_server_without_shellcheck_reports_no_script_clean); and why it does not
/// format: without shfmt (fresh_eyes::formatting_a_script_without_shfmt_is_refused_not_no_changes).
#[test]
fn servers_resource_says_why_a_servers_diagnostics_are_off() {
    crate::require_program!("bash-language-server");
    crate::require_program!("node");
    let workspace = Workspace::new("mcp-no-shellcheck");
    workspace.file("a.sh", "#!/bin/bash\necho $1\n");
    let (config, _) = crate::support::bash_with_only_node(&workspace);
    let config = config.display().to_string();
    let mut session = Session::start(
        &workspace.root,
        &["--no-builtin", "--config", &config, "mcp"],
    );
    session.initialize("2025-06-18");
    let body = session.servers_resource(json!(1));
    assert_eq!(
        body["servers"][0]["diagnosticsOff"],
        "bash lints only through ShellCheck, and `shellcheck` is not on its PATH",
        "{body}"
    );
    assert_eq!(
        body["servers"][0]["formattingOff"],
        "bash formats only through shfmt, and `shfmt` is not on its PATH",
        "{body}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
}

/// helper-72: a call asked after several calls that wait for a fresh server's first analysis
/// is not queued behind them (each of those now waits, see
/// `queries::typescript_references_asked_at_once_of_a_fresh_server_each_wait_for_the_project`,
/// and with 4 workers they held all 4): six hovers on `a.py`, whose server publishes 4 s after
/// `didOpen`, then one on `b.txt`, whose server publishes at once; `b.txt`'s answer comes first.
#[test]
fn a_call_is_not_queued_behind_calls_waiting_for_a_first_analysis() {
    let mut workspace = Workspace::new("mcp-waiting-calls");
    workspace.file("a.py", "def greet():\n    pass\n");
    workspace.file("b.txt", "alpha beta\n");
    let config = workspace.fixture_config(&[
        ("fx", &[".py"], json!({"publishDelayMs": 4000})),
        ("fy", &[".txt"], json!({})),
    ]);
    let mut session = start_with_config(&workspace, &config);
    let hover = |id: u64, file: &str, symbol: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "hover", "arguments": {"file": file, "line": 1, "symbol": symbol}}})
    };
    for id in 10..16 {
        session.send(hover(id, "a.py", "greet"));
    }
    session.send(hover(20, "b.txt", "beta"));
    let mut order = Vec::new();
    while order.len() < 7 {
        let message = session.next(30 * SECOND);
        if let Some(id) = message["id"].as_u64() {
            assert_eq!(message["result"]["isError"], false, "{message}");
            order.push(id);
        }
    }
    assert_eq!(
        order[0], 20,
        "b.txt's hover waited behind a.py's: {order:?}"
    );
    assert_eq!(session.finish(20 * SECOND), Some(0));
}
