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
        let mut child = Command::new(env!("CARGO_BIN_EXE_lspc"))
            .arg("--root")
            .arg(root)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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
    assert_eq!(names, vec!["diagnostics"]);
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
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_lspc"))
            .arg(mode)
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
