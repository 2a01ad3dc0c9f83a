//! Integration tests of `lspc mcp --http` (issue 14): the official MCP Python SDK's streamable
//! HTTP client on real pyright and clangd workspaces (`fixtures/mcp/sdk_client.py` with
//! `LSPC_SDK_TRANSPORT=http`), every bad-input case with its HTTP status (the server goes on
//! answering after each), a dropped SSE stream cancelling its request at the fixture server, and
//! 16 concurrent clients × 200 calls. The HTTP client here is a few lines over `TcpStream`
//! (requests with `Connection: close`, responses read to EOF); every read has a timeout.

use crossbeam_channel::{unbounded as channel, Receiver};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{fixture_bin, lspc_bin, read_transcript, Workspace};

const SECOND: Duration = Duration::from_secs(1);

/// A running `lspc mcp --http 127.0.0.1:0`; SIGTERM then kill on drop.
struct HttpServer {
    child: Child,
    address: SocketAddr,
    _stderr: Receiver<String>,
}

impl HttpServer {
    fn start(root: &Path, args: &[&str]) -> HttpServer {
        let mut command = Command::new(lspc_bin());
        crate::support::session_env(&mut command);
        let mut child = command
            .arg("--root")
            .arg(root)
            .args(args)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
            .env_remove("LSPC_MCP_TOKEN")
            .spawn()
            .expect("spawn lspc mcp --http");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let deadline = Instant::now() + 20 * SECOND;
        let address = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines
                .recv_timeout(left)
                .expect("lspc mcp --http printed no address within 20 s");
            if let Some(rest) = line.strip_prefix("listening on http://") {
                let address = rest.strip_suffix("/mcp").expect("the endpoint is /mcp");
                break address.parse().expect("a socket address");
            }
        };
        HttpServer {
            child,
            address,
            _stderr: lines,
        }
    }

    /// Start with the fixture server `fx` for `.py` files running `scenario`.
    fn with_fixture(workspace: &mut Workspace, scenario: Value, extra: &[&str]) -> HttpServer {
        let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
        let config = config.to_str().expect("utf-8 path").to_owned();
        let mut args = vec!["--no-builtin", "--config", &config, "mcp"];
        args.extend_from_slice(extra);
        HttpServer::start(&workspace.root, &args)
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect_timeout(&self.address, 5 * SECOND).expect("connect");
        stream.set_read_timeout(Some(30 * SECOND)).unwrap();
        stream.set_write_timeout(Some(10 * SECOND)).unwrap();
        stream
    }

    /// One request, the whole response back.
    fn request(&self, method: &str, headers: &[(&str, &str)], body: &str) -> Response {
        let mut stream = self.connect();
        stream
            .write_all(raw_request(method, headers, body).as_bytes())
            .expect("write request");
        read_response(&mut stream)
    }

    /// POST one JSON-RPC message with the headers every MCP client sends, plus `headers`.
    fn post(&self, headers: &[(&str, &str)], message: &Value) -> Response {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.request("POST", &all, &message.to_string())
    }

    /// `initialize` (2025-11-25); returns the session id.
    fn initialize(&self, headers: &[(&str, &str)]) -> String {
        let response = self.post(
            headers,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "lspc-test", "version": "1"}}}),
        );
        assert_eq!(response.status, 200, "{response:?}");
        assert_eq!(
            response.json()["result"]["protocolVersion"],
            "2025-11-25",
            "{response:?}"
        );
        response
            .header("mcp-session-id")
            .expect("an Mcp-Session-Id")
            .to_owned()
    }

    /// A stateless (2026-07-28) request with matching routing headers.
    fn modern(&self, id: i64, method: &str, mut params: Value) -> Response {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}});
        let name = params
            .get("name")
            .or(params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut headers = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if let Some(name) = &name {
            headers.push(("Mcp-Name", name));
        }
        self.post(
            &headers,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
    }

    /// The server still answers: a stateless `tools/list` gets 200 with tools.
    fn assert_alive(&self, after: &str) {
        let response = self.modern(99, "tools/list", json!({}));
        assert_eq!(response.status, 200, "after {after}: {response:?}");
        assert!(
            response.json()["result"]["tools"].is_array(),
            "after {after}: {response:?}"
        );
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + 15 * SECOND;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn raw_request(method: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" || !body.is_empty() {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| {
            panic!("not JSON ({error}): {self:?}");
        })
    }

    /// The `data:` payloads of an SSE body.
    fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).expect("JSON event"))
            .collect()
    }
}

/// Read a response to EOF (every request says `Connection: close`).
fn read_response(stream: &mut TcpStream) -> Response {
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    parse_response(&bytes)
}

fn parse_response(bytes: &[u8]) -> Response {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
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

fn has_python_sdk() -> bool {
    Command::new("python3")
        .args(["-c", "import mcp; assert mcp.Client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The official Python SDK (`mcp` 2.x) streamable HTTP client, handshake (legacy) and 2026-07-28
/// (auto) modes, on pyright 1.1.414 and clangd 14: every navigation tool with exact positions,
/// resources, a subscription receiving an update, and a cancelled call reaching the fixture
/// server as `$/cancelRequest` (see the script's docstring).
#[test]
fn http_official_python_sdk_client() {
    if !has_python_sdk() {
        eprintln!("skipped: python3 with the MCP SDK (pip install mcp) is not installed");
        return;
    }
    if crate::support::which("pyright-langserver").is_none() {
        eprintln!("skipped: pyright-langserver is not on PATH");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/sdk_client.py");
    for mode in ["legacy", "auto"] {
        let mut command = Command::new("python3");
        crate::support::session_env(&mut command);
        let mut child = command
            .arg(&script)
            .arg(lspc_bin())
            .arg(mode)
            .arg(fixture_bin())
            .env("LSPC_SDK_TRANSPORT", "http")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn python3");
        let status = wait_timeout::ChildExt::wait_timeout(&mut child, 300 * SECOND)
            .expect("wait")
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("sdk_client.py {mode} over HTTP did not finish within 300 s");
            });
        let mut stdout = String::new();
        let mut stderr = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .ok();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .ok();
        assert!(
            status.success(),
            "sdk_client.py {mode} over HTTP failed:\n{stdout}\n{stderr}"
        );
        assert_eq!(stdout.trim(), format!("ok ({mode}, http)"), "{stderr}");
    }
}

/// Each bad request gets its status (and, where the transport spec says so, a JSON-RPC error
/// body), and the server answers normally after every one of them.
#[test]
fn http_bad_input_gets_the_right_status_and_the_server_goes_on() {
    let mut workspace = Workspace::new("mcp-http-bad");
    workspace.file("a.py", "def greet():\n    pass\n");
    let server = HttpServer::with_fixture(
        &mut workspace,
        json!({}),
        &[
            "--header-timeout",
            "1",
            "--allow-origin",
            "https://app.example",
        ],
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    // 403: a foreign Origin (DNS rebinding); a loopback or --allow-origin one is served.
    let response = server.post(&[("Origin", "https://evil.example")], &ping);
    assert_eq!(response.status, 403, "{response:?}");
    assert_eq!(
        response.json()["error"]["message"],
        "forbidden: origin \"https://evil.example\" is not allowed (see --allow-origin)"
    );
    let response = server.post(&[("Origin", "https://app.example")], &ping);
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let response = server.post(&[("Origin", "http://localhost:5173")], &ping);
    assert_eq!(response.status, 200, "{response:?}");
    let mut stream = server.connect();
    let body = ping.to_string();
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: rebound.example:80\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 403, "{response:?}");
    server.assert_alive("403");

    // A CORS preflight names the allowed origin once (helper-40: every CORS header came twice,
    // and a browser reads a repeated Access-Control-Allow-Origin as "X, X", matching nothing).
    let mut stream = server.connect();
    stream
        .write_all(b"OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
        .unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 204, "{response:?}");
    let mut names: Vec<String> = response
        .headers
        .iter()
        .map(|(name, _)| name.to_ascii_lowercase())
        .filter(|name| name.starts_with("access-control-") || name == "vary")
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "access-control-allow-headers",
            "access-control-allow-methods",
            "access-control-allow-origin",
            "access-control-expose-headers",
            "vary"
        ],
        "{response:?}"
    );
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some("https://app.example")
    );

    // 404: another path; an unknown session.
    let mut stream = server.connect();
    stream
        .write_all(b"GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut stream).status, 404);
    let response = server.post(&[("Mcp-Session-Id", "0123")], &ping);
    assert_eq!(response.status, 404, "{response:?}");
    assert_eq!(response.json()["error"]["code"], -32600);
    server.assert_alive("404");

    // 405: a method the endpoint does not take, and GET without a session.
    let response = server.request("PUT", &[], "");
    assert_eq!(response.status, 405, "{response:?}");
    assert_eq!(response.header("allow"), Some("GET, POST, DELETE"));
    let response = server.request("GET", &[("Accept", "text/event-stream")], "");
    assert_eq!(response.status, 405, "{response:?}");
    server.assert_alive("405");

    // 415 and 406.
    let response = server.request(
        "POST",
        &[
            ("Content-Type", "text/plain"),
            ("Accept", "application/json"),
        ],
        &ping.to_string(),
    );
    assert_eq!(response.status, 415, "{response:?}");
    let response = server.request(
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "text/html"),
        ],
        &ping.to_string(),
    );
    assert_eq!(response.status, 406, "{response:?}");
    server.assert_alive("415/406");

    // 400: malformed JSON (-32700), a handshake request without a session, a 2026-07-28 request
    // whose headers disagree with its body (-32020), an unsupported version (-32022).
    let response = server.request(
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        "{not json",
    );
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(response.json()["error"]["code"], -32700);
    let response = server.post(
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(response.json()["id"], 2);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let response = server.post(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "resources/list"),
        ],
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}),
    );
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(
        response.json()["error"],
        json!({"code": -32020, "message": "Mcp-Method header does not match the request body's method"})
    );
    let response = server.post(
        &[
            ("MCP-Protocol-Version", "2030-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2030-01-01",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
    );
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(response.json()["error"]["code"], -32022);
    assert_eq!(response.json()["error"]["data"]["requested"], "2030-01-01");
    let response = server.modern(5, "prompts/list", json!({}));
    assert_eq!(response.status, 404, "{response:?}");
    assert_eq!(response.json()["error"]["code"], -32601);
    server.assert_alive("400");

    // 413: a body over 4 MiB is refused from its Content-Length.
    let mut stream = server.connect();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 4194305\r\n\r\n{",
        )
        .unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 413, "{response:?}");
    assert_eq!(
        response.json()["error"]["message"],
        "request body too large: 4194305 bytes (at most 4194304)"
    );
    server.assert_alive("413");

    // Slow headers: a head that does not complete within --header-timeout (1 s) gets 408.
    let mut stream = server.connect();
    let started = Instant::now();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 408, "{response:?}");
    assert!(started.elapsed() < 5 * SECOND, "{:?}", started.elapsed());
    server.assert_alive("slow headers");

    // Sessions: initialize opens one, DELETE ends it, then it is unknown (404).
    let session = server.initialize(&[]);
    let response = server.post(
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}),
    );
    assert_eq!(response.status, 200, "{response:?}");
    assert!(response.json()["result"]["tools"].is_array());
    let response = server.post(
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "1999-01-01"),
        ],
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
    );
    assert_eq!(response.status, 400, "{response:?}");
    let response = server.request("DELETE", &[("Mcp-Session-Id", &session)], "");
    assert_eq!(response.status, 204, "{response:?}");
    let response = server.post(&[("Mcp-Session-Id", &session)], &ping);
    assert_eq!(response.status, 404, "{response:?}");
    let response = server.request("DELETE", &[("Mcp-Session-Id", &session)], "");
    assert_eq!(response.status, 404, "{response:?}");
    server.assert_alive("sessions");

    // 1,000 connections at once: at most --max-connections (64) are held at a time (each until
    // the 1 s header timeout closes it without an answer), the rest get 503 at once; when they
    // are gone the server answers.
    let started = Instant::now();
    let streams: Vec<TcpStream> = (0..1000).map(|_| server.connect()).collect();
    let mut refused = 0;
    let mut unanswered = 0;
    for mut stream in streams {
        stream.set_read_timeout(Some(5 * SECOND)).unwrap();
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        match parse_response(&bytes).status {
            503 => refused += 1,
            0 => unanswered += 1,
            other => panic!(
                "connection answered {other}: {}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
    let held_bound = 64 * (started.elapsed().as_secs() as usize + 2);
    assert!(
        refused >= 500 && unanswered <= held_bound,
        "{refused} got 503, {unanswered} were held (at most {held_bound} expected)"
    );
    wait_for(10 * SECOND, "the server after 1,000 connections", || {
        let response = server.modern(100, "tools/list", json!({}));
        (response.status == 200).then_some(())
    });
    server.assert_alive("1,000 connections");
}

/// `--token`: 401 without it or with another, served with it; a non-loopback address without
/// a token is a usage error (exit 2).
#[test]
fn http_bearer_token_is_required() {
    let mut workspace = Workspace::new("mcp-http-token");
    workspace.file("a.py", "def greet():\n    pass\n");
    let server = HttpServer::with_fixture(&mut workspace, json!({}), &["--token", "s3cret"]);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let response = server.post(&[], &ping);
    assert_eq!(response.status, 401, "{response:?}");
    assert_eq!(response.header("www-authenticate"), Some("Bearer"));
    let response = server.post(&[("Authorization", "Bearer wrong")], &ping);
    assert_eq!(response.status, 401, "{response:?}");
    let response = server.post(&[("Authorization", "Bearer s3cret")], &ping);
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.json()["result"], json!({}));
    // The scheme's name is case-insensitive (RFC 9110 §11.1).
    let response = server.post(&[("Authorization", "bearer s3cret")], &ping);
    assert_eq!(response.status, 200, "{response:?}");
    let response = server.post(&[("Authorization", "Basic s3cret")], &ping);
    assert_eq!(response.status, 401, "{response:?}");

    let output = workspace
        .lspc()
        .args(["--no-builtin", "mcp", "--http", "0.0.0.0:0"])
        .env("LSPC_MCP_TOKEN", "")
        .timeout(20 * SECOND)
        .run();
    output.status(2).stderr_contains(
        "--http 0.0.0.0:0: a non-loopback address needs --token TOKEN (or LSPC_MCP_TOKEN)",
    );
}

/// A client that drops the SSE stream of a slow call cancels it: the fixture server gets
/// `$/cancelRequest`, in a session (2025-11-25) and statelessly (2026-07-28, where closing the
/// stream is the cancellation); the server goes on.
#[test]
fn http_dropped_sse_stream_cancels_its_request() {
    let mut workspace = Workspace::new("mcp-http-drop");
    workspace.file("a.py", "def greet():\n    pass\n");
    let slow_hover = json!({"rules": [{"method": "textDocument/hover", "times": 2,
        "actions": [{"after": 8000, "actions": [{"reply": {"contents": "late"}}]}]}]});
    let server = HttpServer::with_fixture(&mut workspace, slow_hover, &[]);
    let transcript = workspace.transcript_path("fx");
    let session = server.initialize(&[]);
    let call = |id: i64, modern: bool| {
        let mut params = json!({"name": "hover",
            "arguments": {"file": "a.py", "line": 1, "symbol": "greet"},
            "_meta": {"progressToken": format!("p{id}")}});
        let mut headers = vec![
            "Content-Type: application/json".to_owned(),
            "Accept: application/json, text/event-stream".to_owned(),
        ];
        if modern {
            params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
            headers.push("MCP-Protocol-Version: 2026-07-28".to_owned());
            headers.push("Mcp-Method: tools/call".to_owned());
            headers.push("Mcp-Name: hover".to_owned());
        } else {
            headers.push(format!("Mcp-Session-Id: {session}"));
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
            .to_string();
        let mut stream = server.connect();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\nContent-Length: {}\r\n\r\n{body}",
            headers.join("\r\n"),
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        // Progress (every second) commits the answer to an SSE stream; read its first event.
        let mut reader = BufReader::new(stream);
        let mut seen = String::new();
        while !seen.contains("notifications/progress") {
            let mut line = String::new();
            let read = reader
                .read_line(&mut line)
                .expect("an SSE line within 30 s");
            assert!(read > 0, "the stream ended early: {seen}");
            seen.push_str(&line);
        }
        assert!(seen.starts_with("HTTP/1.1 200 OK\r\n"), "{seen}");
        assert!(seen.contains("Content-Type: text/event-stream"), "{seen}");
        // Drop the connection mid-call.
        drop(reader);
    };
    let cancels = || {
        read_transcript(&transcript)
            .iter()
            .filter(|entry| entry["message"]["method"] == "$/cancelRequest")
            .count()
    };
    for (round, modern) in [(1, false), (2, true)] {
        let dropped = Instant::now();
        call(round, modern);
        wait_for(5 * SECOND, "$/cancelRequest at the fixture server", || {
            (cancels() == round as usize).then_some(())
        });
        assert!(dropped.elapsed() < 7 * SECOND);
        server.assert_alive("a dropped SSE stream");
    }
    // The hover rule fired twice: the next hover answers at once, in the session.
    let response = server.post(
        &[("Mcp-Session-Id", &session)],
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hover",
            "arguments": {"file": "a.py", "line": 1, "symbol": "greet"}}}),
    );
    assert_eq!(response.status, 200, "{response:?}");
    let text = response.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("greet"), "{response:?}");
    assert!(response.events().is_empty());
}

/// Load: 16 concurrent clients (8 sessions, 8 stateless) × 200 hover calls on the fixture server;
/// every answer is the fixture's exact hover for the asked line.
#[test]
fn http_load_16_clients_by_200_calls() {
    let mut workspace = Workspace::new("mcp-http-load");
    let source: String = (1..=200)
        .map(|n| format!("def f{n}():\n    pass\n"))
        .collect();
    workspace.file("a.py", &source);
    let server = HttpServer::with_fixture(&mut workspace, json!({}), &[]);
    // Warm the fixture server up once so the clients measure calls, not its start.
    let response = server.modern(
        1,
        "tools/call",
        json!({"name": "hover", "arguments": {"file": "a.py", "line": 1, "symbol": "f1"}}),
    );
    assert_eq!(response.status, 200, "{response:?}");
    let expected_first = response.json()["result"]["content"][0]["text"].clone();
    assert_eq!(expected_first, "f1 at 0:4", "{response:?}");
    let server = &server;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..16)
            .map(|client| {
                scope.spawn(move || {
                    let session = (client % 2 == 0).then(|| server.initialize(&[]));
                    for call in 0..200 {
                        let n = (client * 200 + call) % 200 + 1;
                        let line = 2 * n - 1;
                        let arguments =
                            json!({"file": "a.py", "line": line, "symbol": format!("f{n}")});
                        let id = (client * 1000 + call) as i64;
                        let response = match &session {
                            Some(session) => server.post(
                                &[("Mcp-Session-Id", session)],
                                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                    "params": {"name": "hover", "arguments": arguments}}),
                            ),
                            None => server.modern(
                                id,
                                "tools/call",
                                json!({"name": "hover", "arguments": arguments}),
                            ),
                        };
                        assert_eq!(
                            response.status, 200,
                            "client {client} call {call}: {response:?}"
                        );
                        let message = response.json();
                        assert_eq!(message["id"], id, "{message}");
                        assert_eq!(
                            message["result"]["content"][0]["text"],
                            format!("f{n} at {}:4", line - 1),
                            "client {client} call {call}: {message}"
                        );
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("a load client failed");
        }
    });
    server.assert_alive("the load");
}

/// The folder holding the npm tools the HTTP tests use (`@modelcontextprotocol/sdk`, `node@22`,
/// `@modelcontextprotocol/conformance`; installed by `.ci/run`): `LSPC_TOOLS_DIR`, else
/// `.tools/mcp` in the checkout.
fn tools_dir() -> std::path::PathBuf {
    std::env::var_os("LSPC_TOOLS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/mcp"))
}

/// The official TypeScript SDK's `StreamableHTTPClientTransport` (@modelcontextprotocol/sdk
/// 1.32.2, handshake era) on pyright 1.1.414 and clangd 14: every navigation tool, resources, a
/// subscription update on the GET stream, and an aborted call reaching the fixture server as
/// `$/cancelRequest` (see `fixtures/mcp/ts_sdk_client.mjs`).
#[test]
fn http_official_typescript_sdk_client() {
    let tools = tools_dir();
    if !tools
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
    {
        eprintln!(
            "skipped: @modelcontextprotocol/sdk is not installed under {} (run .ci/run)",
            tools.display()
        );
        return;
    }
    for program in ["node", "pyright-langserver", "clangd"] {
        if crate::support::which(program).is_none() {
            eprintln!("skipped: {program} is not on PATH");
            return;
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/ts_sdk_client.mjs");
    let mut command = Command::new("node");
    crate::support::session_env(&mut command);
    let mut child = command
        .arg(&script)
        .arg(&tools)
        .arg(lspc_bin())
        .arg(fixture_bin())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn node");
    let status = wait_timeout::ChildExt::wait_timeout(&mut child, 300 * SECOND)
        .expect("wait")
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("ts_sdk_client.mjs did not finish within 300 s");
        });
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .ok();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .ok();
    assert!(
        status.success(),
        "ts_sdk_client.mjs failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(stdout.trim(), "ok", "{stderr}");
}

/// Every diagnostic message in a tool result: its `files` (the `diagnostics` tool) and its
/// `newDiagnostics` (any tool).
fn diagnostic_messages(message: &Value) -> Vec<String> {
    let structured = &message["result"]["structuredContent"];
    [&structured["files"], &structured["newDiagnostics"]["files"]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|file| file["diagnostics"].as_array())
        .flatten()
        .filter_map(|diagnostic| diagnostic["message"].as_str().map(str::to_owned))
        .collect()
}

/// Issue 14: each HTTP session has its own passive-diagnostics delivery: a publish reaches every
/// session once, whichever session's call caused it; one session draining it does not take it
/// from another. Stateless requests share the engine's queue.
#[test]
fn http_sessions_each_get_passive_diagnostics_once() {
    let mut workspace = Workspace::new("mcp-http-passive");
    workspace.file("a.py", "x = undefined\n");
    let publish = json!({"rules": [{"method": "textDocument/didOpen", "actions": [{"publish": {
        "diagnostics": [{"range": {"start": {"line": 0, "character": 4},
            "end": {"line": 0, "character": 13}}, "severity": 1, "source": "fx",
            "message": "E1 undefined name"}]}}]}]});
    let server = HttpServer::with_fixture(&mut workspace, publish, &[]);
    let first = server.initialize(&[]);
    let second = server.initialize(&[]);
    let call = |session: &str, id: i64, name: &str, arguments: Value| -> Value {
        let response = server.post(
            &[("Mcp-Session-Id", session)],
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}),
        );
        assert_eq!(response.status, 200, "{response:?}");
        let message = response.json();
        assert_eq!(message["result"]["isError"], false, "{message}");
        message
    };
    // The first session opens the file; the publish is queued for both sessions.
    let mut delivered = diagnostic_messages(&call(
        &first,
        1,
        "document_symbols",
        json!({"file": "a.py"}),
    ));
    let mut id = 2;
    wait_for(10 * SECOND, "E1 delivered to the first session", || {
        id += 1;
        delivered.extend(diagnostic_messages(&call(
            &first,
            id,
            "diagnostics",
            json!({}),
        )));
        (!delivered.is_empty()).then_some(())
    });
    assert_eq!(delivered, ["E1 undefined name"]);
    let again = diagnostic_messages(&call(&first, 100, "diagnostics", json!({})));
    assert!(
        again.is_empty(),
        "delivered twice to the first session: {again:?}"
    );
    let to_second = diagnostic_messages(&call(&second, 101, "diagnostics", json!({})));
    assert_eq!(to_second, ["E1 undefined name"]);
    let again = diagnostic_messages(&call(&second, 102, "diagnostics", json!({})));
    assert!(
        again.is_empty(),
        "delivered twice to the second session: {again:?}"
    );
    let response = server.modern(
        103,
        "tools/call",
        json!({"name": "diagnostics", "arguments": {}}),
    );
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(diagnostic_messages(&response.json()), ["E1 undefined name"]);
}
