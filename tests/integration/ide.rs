//! `lspc ide` (issue 18): the agent side written from seed 000's description of IDE discovery
//! and connection (scan `<config>/ide/*.lock` newest first, validate the pid, match the cwd under
//! a workspace folder, connect with `x-claude-code-ide-authorization`, `initialize`,
//! `ide_connected`, `getDiagnostics` before and after an edit, keep only the new issues), against
//! real pyright 1.1.414 and clangd 14; refusals; the lock file on every exit path; stale locks;
//! `openDiff`; and `lspc ide list` on lock directories built here.

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};
use wait_timeout::ChildExt;

use crate::require_program;
use crate::support::{lspc_bin, pid_alive, Workspace};

const AUTH_HEADER: &str = "x-claude-code-ide-authorization";

/// A running `lspc ide`; killed (SIGKILL) and reaped on drop if still running.
struct IdeRun {
    child: Child,
    config_dir: PathBuf,
    stderr_path: PathBuf,
    stdout_path: PathBuf,
}

impl IdeRun {
    /// Start `lspc ide ARGS` in `workspace` with `<config>` = `config_dir` (HOME points next to
    /// it, so nothing outside the test's folder is read or written).
    fn start(workspace: &Workspace, config_dir: &Path, args: &[&str]) -> IdeRun {
        let scratch = config_dir.parent().unwrap();
        let unique = format!(
            "{}",
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let stderr_path = scratch.join(format!("ide-{unique}.stderr"));
        let stdout_path = scratch.join(format!("ide-{unique}.stdout"));
        let mut command = Command::new(lspc_bin());
        crate::support::session_env(&mut command);
        let child = command
            .arg("ide")
            .args(args)
            .current_dir(&workspace.root)
            .env("CLAUDE_CONFIG_DIR", config_dir)
            .env("HOME", scratch.join("home"))
            .env("RUST_LOG", "lspc=debug")
            .env_remove("CLAUDE_CODE_SSE_PORT")
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout_path).unwrap())
            .stderr(fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap();
        IdeRun {
            child,
            config_dir: config_dir.to_path_buf(),
            stderr_path,
            stdout_path,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout_path).unwrap_or_default()
    }

    /// The lock file this lspc wrote, once it exists (30 s at most).
    fn lock_path(&mut self) -> PathBuf {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(entries) = fs::read_dir(self.config_dir.join("ide")) {
                for entry in entries.flatten() {
                    let path = entry.path();
                    let Ok(text) = fs::read_to_string(&path) else {
                        continue;
                    };
                    let Ok(record) = serde_json::from_str::<Value>(&text) else {
                        continue;
                    };
                    if record["pid"] == self.pid() && path.extension().unwrap() == "lock" {
                        return path;
                    }
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "lspc ide exited ({status}) before writing its lock file:\n{}",
                    self.stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no lock file after 30 s:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: signalling the child we started and have not reaped.
        assert_eq!(unsafe { libc::kill(self.pid() as i32, signal) }, 0);
    }

    /// The exit code once the process ended (30 s at most).
    fn wait(&mut self) -> i32 {
        match self.child.wait_timeout(Duration::from_secs(30)).unwrap() {
            Some(status) => status.code().unwrap_or(-1),
            None => panic!("lspc ide did not exit in 30 s:\n{}", self.stderr()),
        }
    }
}

impl Drop for IdeRun {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- lspc ide stderr ---\n{}", self.stderr());
        }
    }
}

/// The config folder for a test: next to the workspace (outside its root).
fn config_dir(workspace: &Workspace) -> PathBuf {
    let dir = workspace.root.parent().unwrap().join("claude-config");
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// What the agent takes from the one IDE it chose.
#[derive(Debug)]
struct Found {
    lock: PathBuf,
    port: u16,
    token: String,
}

/// Seed 000 "Lock-file discovery", as the agent does it: read `<config>/ide/*.lock` newest
/// first, drop unreadable and stale (dead pid) records, keep WebSocket IDEs whose workspace
/// folder contains the normalised cwd, and choose only when exactly one is left.
fn discover_as_agent(config: &Path, cwd: &Path) -> Result<Found, String> {
    let mut files: Vec<(SystemTime, PathBuf)> = fs::read_dir(config.join("ide"))
        .map_err(|error| format!("no IDE lock directory: {error}"))?
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "lock"))
        .map(|entry| (entry.metadata().unwrap().modified().unwrap(), entry.path()))
        .collect();
    files.sort_by_key(|file| std::cmp::Reverse(file.0));
    let cwd = cwd.canonicalize().unwrap();
    let mut candidates = Vec::new();
    for (_, path) in files {
        let Some(port) = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .and_then(|stem| stem.parse::<u16>().ok())
        else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<Value>(&fs::read_to_string(&path).unwrap()) else {
            continue;
        };
        let Some(pid) = record["pid"].as_u64() else {
            continue;
        };
        if !pid_alive(pid as u32) || record["transport"] != "ws" {
            continue;
        }
        let matches = record["workspaceFolders"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|folder| cwd.starts_with(folder));
        if matches {
            candidates.push(Found {
                lock: path,
                port,
                token: record["authToken"].as_str().unwrap_or_default().to_owned(),
            });
        }
    }
    match candidates.len() {
        1 => Ok(candidates.pop().unwrap()),
        n => Err(format!("{n} IDEs match {}", cwd.display())),
    }
}

/// The agent's MCP client over the WebSocket.
struct IdeClient {
    socket: WebSocket<TcpStream>,
    next_id: i64,
}

/// Open the WebSocket with `token` in the auth header (none when `None`).
fn connect(port: u16, token: Option<&str>) -> Result<IdeClient, tungstenite::Error> {
    connect_over(
        TcpStream::connect(("127.0.0.1", port)).unwrap(),
        port,
        token,
    )
}

/// The WebSocket handshake over an already connected `stream`.
fn connect_over(
    stream: TcpStream,
    port: u16,
    token: Option<&str>,
) -> Result<IdeClient, tungstenite::Error> {
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut request = format!("ws://127.0.0.1:{port}")
        .into_client_request()
        .unwrap();
    // Claude Code asks for the `mcp` subprotocol; the client fails unless lspc answers it.
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    if let Some(token) = token {
        request
            .headers_mut()
            .insert(AUTH_HEADER, token.parse().unwrap());
    }
    match tungstenite::client::client(request, stream) {
        Ok((socket, _)) => Ok(IdeClient { socket, next_id: 1 }),
        Err(tungstenite::HandshakeError::Failure(error)) => Err(error),
        Err(tungstenite::HandshakeError::Interrupted(_)) => panic!("handshake timed out"),
    }
}

impl IdeClient {
    fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap();
    }

    /// Send a request and wait (120 s at most) for its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(Instant::now() < deadline, "no answer to {method} in 120 s");
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    let answer: Value = serde_json::from_str(text.as_str()).unwrap();
                    if answer["id"] == id {
                        return answer;
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(error))
                    if error.kind() == std::io::ErrorKind::WouldBlock
                        || error.kind() == std::io::ErrorKind::TimedOut => {}
                Err(error) => panic!("reading the answer to {method}: {error}"),
            }
        }
    }

    /// `tools/call` `name`; the `result` (panics on an error answer).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(answer.get("error").is_none(), "{name}: {answer}");
        answer["result"].clone()
    }

    /// The first text block of a tool's answer, parsed as JSON.
    fn call_json(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.call(name, arguments);
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    /// What the agent does after connecting: initialize, initialized, ide_connected.
    fn handshake(&mut self) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "seed-000-agent", "version": "1"}}),
        );
        self.notify("notifications/initialized", json!({}));
        self.notify("ide_connected", json!({"pid": std::process::id()}));
        answer
    }
}

/// `getNewDiagnostics()`: the diagnostics of `after` not in `before` (by full identity).
fn new_diagnostics(before: &Value, after: &Value) -> Vec<Value> {
    let known: Vec<&Value> = before
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|file| file["diagnostics"].as_array().unwrap())
        .collect();
    after
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|file| file["diagnostics"].as_array().unwrap())
        .filter(|diagnostic| !known.contains(diagnostic))
        .cloned()
        .collect()
}

/// The `file://` URI of a test path (test paths hold spaces, nothing else to escape).
fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display()).replace(' ', "%20")
}

/// The whole agent story against one real server: discover, connect, diagnostics before an
/// edit, the edit, diagnostics after; returns (before, after, new).
fn agent_round_trip(
    workspace: &Workspace,
    config: &Path,
    file: &str,
    edit: &str,
) -> (Value, Value, Vec<Value>) {
    let claude = config_dir(workspace);
    let mut ide = IdeRun::start(
        workspace,
        &claude,
        &["--no-builtin", "--config", config.to_str().unwrap()],
    );
    let lock = ide.lock_path();
    let found = discover_as_agent(&claude, &workspace.root).unwrap();
    assert_eq!(found.lock, lock);
    // `lspc ide list` (the discovery lspc implements) chooses the same lock.
    let listed = Command::new(lspc_bin())
        .args(["ide", "list", "--format", "json"])
        .current_dir(&workspace.root)
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("HOME", claude.parent().unwrap().join("home"))
        .env_remove("CLAUDE_CODE_SSE_PORT")
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(0));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["locks"][0]["verdict"], "chosen");
    assert_eq!(listed["locks"][0]["path"], lock.to_str().unwrap());
    assert_eq!(
        listed["locks"][0]["url"],
        format!("ws://127.0.0.1:{}", found.port)
    );

    let mut client = connect(found.port, Some(&found.token)).unwrap();
    let initialized = client.handshake();
    assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(initialized["result"]["serverInfo"]["name"], "lspc");
    let tools: Vec<String> = client.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        tools,
        [
            "openFile",
            "openDiff",
            "getCurrentSelection",
            "getLatestSelection",
            "getOpenEditors",
            "getWorkspaceFolders",
            "getDiagnostics",
            "checkDocumentDirty",
            "saveDocument",
            "close_tab",
            "closeAllDiffTabs"
        ]
    );
    let path = workspace.path(file);
    let uri = file_uri(&path);
    // beforeFileEdited(): the baseline for the file.
    let before = client.call_json("getDiagnostics", json!({ "uri": uri }));
    // The agent writes the file itself.
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(edit);
    fs::write(&path, text).unwrap();
    let after = client.call_json("getDiagnostics", json!({ "uri": uri }));
    let new = new_diagnostics(&before, &after);
    // Without a uri: every file lspc has open, here the one file.
    let all = client.call_json("getDiagnostics", json!({}));
    assert_eq!(all, after);
    drop(client);
    ide.signal(libc::SIGTERM);
    assert_eq!(ide.wait(), 128 + libc::SIGTERM);
    assert!(!lock.exists(), "the lock file outlived lspc ide");
    (before, after, new)
}

#[test]
fn ide_agent_gets_only_the_new_pyright_diagnostic_after_an_edit() {
    require_program!("pyright-langserver");
    let workspace = Workspace::new("ide pyright");
    workspace.file("a.py", "x: int = \"a\"\n");
    let config = workspace.config(json!({"pyright": crate::support::pyright_entry()}));
    let (before, after, new) = agent_round_trip(&workspace, &config, "a.py", "y: str = 1\n");
    let uri = file_uri(&workspace.path("a.py"));
    let first = json!({
        "message": "Type \"Literal['a']\" is not assignable to declared type \"int\"\n\u{a0}\u{a0}\"Literal['a']\" is not assignable to \"int\"",
        "severity": "Error",
        "range": {"start": {"line": 0, "character": 9}, "end": {"line": 0, "character": 12}},
        "source": "Pyright",
        "code": "reportAssignmentType",
    });
    let added = json!({
        "message": "Type \"Literal[1]\" is not assignable to declared type \"str\"\n\u{a0}\u{a0}\"Literal[1]\" is not assignable to \"str\"",
        "severity": "Error",
        "range": {"start": {"line": 1, "character": 9}, "end": {"line": 1, "character": 10}},
        "source": "Pyright",
        "code": "reportAssignmentType",
    });
    assert_eq!(before, json!([{"uri": uri, "diagnostics": [first]}]));
    assert_eq!(after, json!([{"uri": uri, "diagnostics": [first, added]}]));
    assert_eq!(new, vec![added.clone()]);
    // The pyright CLI reports the same range, message and rule for the added line.
    if crate::support::which("pyright").is_some() {
        let output = Command::new("pyright")
            .args(["--outputjson", "a.py"])
            .current_dir(&workspace.root)
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let cli = &report["generalDiagnostics"][1];
        assert_eq!(cli["range"], added["range"]);
        assert_eq!(cli["message"], added["message"]);
        assert_eq!(cli["rule"], added["code"]);
        assert_eq!(cli["severity"], "error");
    } else {
        eprintln!("pyright CLI not installed: the cross-check with it is skipped");
    }
}

#[test]
fn ide_agent_gets_only_the_new_clangd_diagnostic_after_an_edit() {
    require_program!("clangd");
    let workspace = Workspace::new("ide clangd");
    workspace.file("b.c", "int f(void) { int x = \"a\"; return x; }\n");
    let config = workspace.config(json!({"clangd": crate::support::clangd_entry()}));
    let (before, after, new) = agent_round_trip(
        &workspace,
        &config,
        "b.c",
        "int g(void) { return undefined_name; }\n",
    );
    let uri = file_uri(&workspace.path("b.c"));
    let first = json!({
        "message": "Incompatible pointer to integer conversion initializing 'int' with an expression of type 'char[2]'",
        "severity": "Warning",
        "range": {"start": {"line": 0, "character": 18}, "end": {"line": 0, "character": 19}},
        "source": "clang",
        "code": "-Wint-conversion",
    });
    let added = json!({
        "message": "Use of undeclared identifier 'undefined_name'",
        "severity": "Error",
        "range": {"start": {"line": 1, "character": 21}, "end": {"line": 1, "character": 35}},
        "source": "clang",
        "code": "undeclared_var_use",
    });
    assert_eq!(before, json!([{"uri": uri, "diagnostics": [first]}]));
    assert_eq!(
        after,
        json!([{"uri": uri, "diagnostics": [added.clone(), first]}])
    );
    assert_eq!(new, vec![added.clone()]);
    // clangd's own check mode reports the added error with the same code on the same line.
    let output = Command::new("clangd")
        .arg("--check=b.c")
        .current_dir(&workspace.root)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    let line = added["range"]["start"]["line"].as_u64().unwrap() + 1;
    let expected = format!(
        "[{}] Line {line}: use of undeclared identifier 'undefined_name'",
        added["code"].as_str().unwrap()
    );
    assert!(log.contains(&expected), "{expected} not in:\n{log}");
}

/// A local address that is not loopback, if the machine has one (the address a UDP socket would
/// send from; nothing is sent).
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.255.255.255:9").ok()?;
    let address = socket.local_addr().ok()?.ip();
    (!address.is_loopback() && !address.is_unspecified()).then_some(address)
}

/// A TCP connection to `127.0.0.1:port` whose source address is `source` (a local address that
/// is not loopback: Linux routes it over `lo`).
fn connect_from(source: std::net::Ipv4Addr, port: u16) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let address = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let length = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor we own; the File-like TcpStream closes it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let local = address(source, 0);
        if libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), length) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let remote = address(std::net::Ipv4Addr::LOCALHOST, port);
        if libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), length) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}

#[test]
fn ide_refuses_a_missing_or_wrong_token_and_listens_on_loopback_only() {
    let workspace = Workspace::new("ide refusals");
    let claude = config_dir(&workspace);
    let mut ide = IdeRun::start(&workspace, &claude, &["--no-builtin"]);
    let lock = ide.lock_path();
    let record: Value = serde_json::from_str(&fs::read_to_string(&lock).unwrap()).unwrap();
    let port: u16 = lock.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let token = record["authToken"].as_str().unwrap();
    let refused = |given: Option<&str>, reason: &str| match connect(port, given) {
        Ok(_) => panic!("connected with {given:?}"),
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401);
            let body = String::from_utf8(response.body().clone().unwrap_or_default()).unwrap();
            assert_eq!(body, format!("{reason}\n"));
        }
        Err(error) => panic!("unexpected error with {given:?}: {error}"),
    };
    refused(None, "missing x-claude-code-ide-authorization header");
    refused(
        Some("00000000000000000000000000000000"),
        "invalid authentication token",
    );
    refused(Some(&token[..31]), "invalid authentication token");
    // The right token connects and is served.
    let mut client = connect(port, Some(token)).unwrap();
    // Before initialize, tools are refused.
    let early = client.request("tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32600);
    client.handshake();
    let folders = client.call_json("getWorkspaceFolders", json!({}));
    assert_eq!(folders["rootPath"], workspace.root.to_str().unwrap());
    // At most 16 connections at once (each costs a thread): with 15 idle sockets beside the
    // client, the next connection is closed unanswered; once they go, connections work again.
    let idle: Vec<TcpStream> = (0..15)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match connect(port, Some(token)) {
            Err(tungstenite::Error::Http(response)) => panic!("HTTP answer: {response:?}"),
            Err(_) => break,
            Ok(_) => {
                // The listener may not have accepted every idle socket yet.
                assert!(Instant::now() < deadline, "a 17th connection was served");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut second = loop {
        match connect(port, Some(token)) {
            Ok(second) => break second,
            Err(_) => {
                assert!(
                    Instant::now() < deadline,
                    "no connection after the idle ones closed"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    second.handshake();
    drop(second);
    // Nothing answers on a non-loopback address of this machine, and a connection to 127.0.0.1
    // from that address is closed before the handshake, even with the right token.
    match non_loopback_address() {
        Some(address) => {
            let result =
                TcpStream::connect_timeout(&SocketAddr::new(address, port), Duration::from_secs(2));
            assert!(result.is_err(), "lspc ide answered on {address}:{port}");
            if let std::net::IpAddr::V4(source) = address {
                let stream = connect_from(source, port).unwrap();
                match connect_over(stream, port, Some(token)) {
                    Ok(_) => panic!("a peer at {source} got a WebSocket"),
                    Err(tungstenite::Error::Http(response)) => {
                        panic!("a peer at {source} got an HTTP answer: {response:?}")
                    }
                    Err(_) => {}
                }
            }
        }
        None => eprintln!("no non-loopback address here: only the unit test covers the peer check"),
    }
    drop(client);
    ide.signal(libc::SIGINT);
    assert_eq!(ide.wait(), 128 + libc::SIGINT);
    assert!(!lock.exists());
    let stderr = ide.stderr();
    assert!(
        stderr.contains("refused the WebSocket upgrade from 127.0.0.1:"),
        "{stderr}"
    );
    if let Some(std::net::IpAddr::V4(source)) = non_loopback_address() {
        let refused = format!("refused a connection from {source}:");
        assert!(stderr.contains(&refused), "{stderr}");
        assert!(stderr.contains(": not a loopback address"), "{stderr}");
    }
    assert!(
        stderr.contains("16 connections are open already"),
        "{stderr}"
    );
    // The token never reaches the logs.
    assert!(!stderr.contains(token), "{stderr}");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn ide_lock_file_is_private_and_removed_on_every_exit_path() {
    let workspace = Workspace::new("ide lock");
    let claude = config_dir(&workspace);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut ide = IdeRun::start(&workspace, &claude, &["--no-builtin"]);
        let lock = ide.lock_path();
        assert_eq!(mode(&claude.join("ide")), 0o700);
        assert_eq!(mode(&lock), 0o600);
        let record: Value = serde_json::from_str(&fs::read_to_string(&lock).unwrap()).unwrap();
        let token = record["authToken"].as_str().unwrap().to_owned();
        assert_eq!(token.len(), 32);
        assert!(token
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        assert_eq!(
            record,
            json!({
                "pid": ide.pid(),
                "workspaceFolders": [workspace.root.to_str().unwrap()],
                "ideName": "lspc",
                "transport": "ws",
                "runningInWindows": false,
                "authToken": token,
            })
        );
        ide.signal(signal);
        assert_eq!(ide.wait(), 128 + signal);
        assert!(!lock.exists(), "signal {signal} left {}", lock.display());
    }
    // Normal exit: `lspc ide -- COMMAND` ends with COMMAND. The command is the agent side: it
    // finds lspc through CLAUDE_CODE_SSE_PORT and `lspc ide list`.
    let script = format!(
        "test \"$ENABLE_IDE_INTEGRATION\" = true && {} ide list --format json",
        lspc_bin().display()
    );
    let mut ide = IdeRun::start(
        &workspace,
        &claude,
        &["--no-builtin", "--", "sh", "-c", &script],
    );
    assert_eq!(ide.wait(), 0, "{}", ide.stderr());
    let listed: Value = serde_json::from_str(&ide.stdout()).unwrap();
    let port = listed["ssePort"].as_u64().unwrap();
    assert_eq!(listed["locks"][0]["verdict"], "chosen");
    assert_eq!(listed["locks"][0]["port"], port);
    assert_eq!(listed["locks"][0]["pid"], ide.pid());
    assert_eq!(fs::read_dir(claude.join("ide")).unwrap().count(), 0);
    // The command's status is lspc's; a SIGINT while it runs is the command's (Ctrl-C
    // interrupts the agent, not the IDE under it).
    let mut ide = IdeRun::start(
        &workspace,
        &claude,
        &[
            "--no-builtin",
            "--",
            "sh",
            "-c",
            "kill -INT $PPID; sleep 1; exit 7",
        ],
    );
    assert_eq!(ide.wait(), 7, "{}", ide.stderr());
    assert!(ide
        .stderr()
        .contains("SIGINT while the command runs: left to the command"));
    assert_eq!(fs::read_dir(claude.join("ide")).unwrap().count(), 0);
    // SIGTERM ends lspc and the command with it.
    let mut ide = IdeRun::start(
        &workspace,
        &claude,
        &["--no-builtin", "--", "sleep", "3597"],
    );
    let lock = ide.lock_path();
    let started = Instant::now();
    ide.signal(libc::SIGTERM);
    assert_eq!(ide.wait(), 128 + libc::SIGTERM);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!lock.exists());
    assert!(
        crate::support::processes_matching("sleep 3597").is_empty(),
        "the command outlived lspc ide"
    );
}

#[test]
fn ide_stale_lock_of_a_killed_lspc_is_removed_by_the_next_one() {
    let workspace = Workspace::new("ide stale");
    let claude = config_dir(&workspace);
    let mut first = IdeRun::start(&workspace, &claude, &["--no-builtin"]);
    let stale = first.lock_path();
    first.signal(libc::SIGKILL);
    first.wait();
    assert!(stale.exists(), "SIGKILL cannot remove the lock");
    // Discovery sees it as stale and chooses nothing.
    let listed = Command::new(lspc_bin())
        .args(["ide", "list"])
        .current_dir(&workspace.root)
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("HOME", claude.parent().unwrap().join("home"))
        .env_remove("CLAUDE_CODE_SSE_PORT")
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(1));
    let port = stale.file_stem().unwrap().to_str().unwrap();
    assert_eq!(
        String::from_utf8(listed.stdout).unwrap(),
        format!(
            "{}: lspc ws://127.0.0.1:{port} pid {pid} [{root}] (json)\n  not chosen: stale (pid {pid} is not running): the agent removes it\nthe agent in {root} connects to no IDE automatically\n",
            stale.display(),
            pid = first.pid(),
            root = workspace.root.display()
        )
    );
    assert!(stale.exists(), "lspc ide list deletes nothing");
    let mut second = IdeRun::start(&workspace, &claude, &["--no-builtin"]);
    let fresh = second.lock_path();
    assert!(!stale.exists() || stale == fresh);
    assert!(second
        .stderr()
        .contains(&format!("removed the stale lock file {}", stale.display())));
    second.signal(libc::SIGTERM);
    second.wait();
    assert!(!fresh.exists());
}

#[test]
fn ide_open_diff_accepts_inside_the_root_rejects_and_refuses_outside() {
    let workspace = Workspace::new("ide diff");
    workspace.file("notes.txt", "one\ntwo\n");
    let claude = config_dir(&workspace);
    let outside = workspace.root.parent().unwrap().join("outside.txt");
    let mut ide = IdeRun::start(&workspace, &claude, &["--no-builtin", "--diff", "accept"]);
    ide.lock_path();
    let found = discover_as_agent(&claude, &workspace.root).unwrap();
    let mut client = connect(found.port, Some(&found.token)).unwrap();
    client.handshake();
    let notes = workspace.path("notes.txt");
    let contents = "one\nTWO\nthree é\n";
    let diff = |path: &Path, contents: &str| {
        json!({
            "old_file_path": path, "new_file_path": path,
            "new_file_contents": contents, "tab_name": "✻ [Claude Code] notes.txt ⧉",
        })
    };
    let answer = client.call("openDiff", diff(&notes, contents));
    assert_eq!(
        answer,
        json!({"content": [{"type": "text", "text": "FILE_SAVED"}, {"type": "text", "text": contents}]})
    );
    assert_eq!(fs::read_to_string(&notes).unwrap(), contents);
    // A new file inside the root is created, with its folder.
    let created = workspace.path("new/made.txt");
    client.call("openDiff", diff(&created, "fresh\n"));
    assert_eq!(fs::read_to_string(&created).unwrap(), "fresh\n");
    // A CRLF file keeps exactly the bytes given.
    let crlf = workspace.path("crlf.txt");
    fs::write(&crlf, "a\r\nb\r\n").unwrap();
    client.call("openDiff", diff(&crlf, "a\r\nB\r\nc\r\n"));
    assert_eq!(fs::read_to_string(&crlf).unwrap(), "a\r\nB\r\nc\r\n");
    // Outside the root: refused, nothing written (also through a symlink that leads out).
    fs::write(
        workspace.root.parent().unwrap().join("target.txt"),
        "kept\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("../target.txt", workspace.path("link.txt")).unwrap();
    let answer = client.request(
        "tools/call",
        json!({"name": "openDiff", "arguments": diff(&workspace.path("link.txt"), "nope\n")}),
    );
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(
        fs::read_to_string(workspace.root.parent().unwrap().join("target.txt")).unwrap(),
        "kept\n"
    );
    for target in [outside.clone(), workspace.root.join("../outside.txt")] {
        let answer = client.request(
            "tools/call",
            json!({"name": "openDiff", "arguments": diff(&target, "nope\n")}),
        );
        assert_eq!(answer["error"]["code"], -32000, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("is outside the workspace"), "{message}");
        assert!(!outside.exists());
    }
    // Missing arguments are invalid params.
    let answer = client.request(
        "tools/call",
        json!({"name": "openDiff", "arguments": {"new_file_path": notes}}),
    );
    assert_eq!(answer["error"]["code"], -32602);
    assert_eq!(
        answer["error"]["message"],
        "invalid params: missing required parameter: old_file_path"
    );
    drop(client);
    ide.signal(libc::SIGTERM);
    ide.wait();

    // The default is reject: nothing written.
    let mut ide = IdeRun::start(&workspace, &claude, &["--no-builtin"]);
    ide.lock_path();
    let found = discover_as_agent(&claude, &workspace.root).unwrap();
    let mut client = connect(found.port, Some(&found.token)).unwrap();
    client.handshake();
    let answer = client.call("openDiff", diff(&notes, "replaced\n"));
    assert_eq!(
        answer,
        json!({"content": [
            {"type": "text", "text": "DIFF_REJECTED"},
            {"type": "text", "text": "✻ [Claude Code] notes.txt ⧉"},
        ]})
    );
    assert_eq!(fs::read_to_string(&notes).unwrap(), contents);
    let answer = client.request(
        "tools/call",
        json!({"name": "openDiff", "arguments": diff(&outside, "nope\n")}),
    );
    assert_eq!(answer["error"]["code"], -32000);
    assert!(!outside.exists());
    drop(client);
    ide.signal(libc::SIGTERM);
    ide.wait();
}

#[test]
fn ide_editor_tools_answer_in_the_ide_extension_shapes() {
    let workspace = Workspace::new("ide editor");
    workspace.file("src/app.txt", "a\nb\nc\n");
    let claude = config_dir(&workspace);
    let mut ide = IdeRun::start(&workspace, &claude, &["--no-builtin"]);
    ide.lock_path();
    let found = discover_as_agent(&claude, &workspace.root).unwrap();
    let mut client = connect(found.port, Some(&found.token)).unwrap();
    client.handshake();
    let app = workspace.path("src/app.txt");
    let root = workspace.root.to_str().unwrap();
    assert_eq!(
        client.call_json("getCurrentSelection", json!({})),
        json!({"success": false, "message": "No active editor found"})
    );
    assert_eq!(
        client.call_json("checkDocumentDirty", json!({"filePath": app})),
        json!({"success": false, "message": format!("Document not open: {}", app.display())})
    );
    assert_eq!(
        client.call("openFile", json!({"filePath": "src/app.txt"})),
        json!({"content": [{"type": "text", "text": format!("Opened file: {}", app.display())}]})
    );
    assert_eq!(
        client.call_json("openFile", json!({"filePath": app, "makeFrontmost": false})),
        // VS Code's `lineCount`: a final newline starts a last, empty line.
        json!({"success": true, "filePath": app, "languageId": "txt", "lineCount": 4})
    );
    assert_eq!(
        client.call_json("getOpenEditors", json!({})),
        json!({"tabs": [{"uri": file_uri(&app), "isActive": true, "label": "app.txt",
                         "languageId": "txt", "isDirty": false}]})
    );
    assert_eq!(
        client.call_json("getCurrentSelection", json!({})),
        json!({"success": true, "text": "", "filePath": app, "fileUrl": file_uri(&app),
               "selection": {"start": {"line": 0, "character": 0},
                             "end": {"line": 0, "character": 0}, "isEmpty": true}})
    );
    assert_eq!(
        client.call_json("getLatestSelection", json!({})),
        json!({"success": false, "message": "No selection available"})
    );
    assert_eq!(
        client.call_json("checkDocumentDirty", json!({"filePath": app})),
        json!({"success": true, "filePath": app, "isDirty": false, "isUntitled": false})
    );
    assert_eq!(
        client.call_json("saveDocument", json!({"filePath": app})),
        json!({"success": true, "filePath": app, "saved": true,
               "message": "Document saved successfully"})
    );
    assert_eq!(
        client.call_json("getWorkspaceFolders", json!({})),
        json!({"success": true, "rootPath": root, "folders": [{
            "name": "ide editor", "uri": file_uri(&workspace.root), "path": root}]})
    );
    // No server serves .txt: an editor shows no diagnostics for it.
    assert_eq!(
        client.call_json("getDiagnostics", json!({"uri": file_uri(&app)})),
        json!([{"uri": file_uri(&app), "diagnostics": []}])
    );
    assert_eq!(
        client.call("close_tab", json!({"tab_name": "app.txt"})),
        json!({"content": [{"type": "text", "text": "TAB_CLOSED"}]})
    );
    assert_eq!(
        client.call_json("getOpenEditors", json!({})),
        json!({"tabs": []})
    );
    assert_eq!(
        client.call("closeAllDiffTabs", json!({})),
        json!({"content": [{"type": "text", "text": "CLOSED_0_DIFF_TABS"}]})
    );
    // Bad input: an unknown tool, a missing file, a path outside the root, a wrong type.
    let error = |client: &mut IdeClient, name: &str, arguments: Value| {
        client.request("tools/call", json!({"name": name, "arguments": arguments}))["error"].clone()
    };
    assert_eq!(
        error(&mut client, "executeCode", json!({})),
        json!({"code": -32602, "message": "invalid params: unknown tool \"executeCode\" (see tools/list)"})
    );
    assert_eq!(
        error(&mut client, "openFile", json!({"filePath": "missing.txt"})),
        json!({"code": -32000, "message": "File not found: missing.txt"})
    );
    assert_eq!(
        error(
            &mut client,
            "openFile",
            json!({"filePath": "/etc/hostname"})
        )["code"],
        -32000
    );
    assert_eq!(
        error(&mut client, "openFile", json!({"filePath": 7})),
        json!({"code": -32602, "message": "invalid params: filePath must be a string"})
    );
    drop(client);
    ide.signal(libc::SIGTERM);
    ide.wait();
}

/// Write a lock file with a given modification time (seconds after an arbitrary base).
fn write_lock(dir: &Path, name: &str, text: &str, age_rank: u64) {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + age_rank * 60);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

#[test]
fn ide_list_reads_several_ides_stale_mismatched_wsl_and_line_based_locks() {
    let workspace = Workspace::new("ide list");
    let claude = config_dir(&workspace);
    let dir = claude.join("ide");
    fs::create_dir_all(&dir).unwrap();
    let root = workspace.root.to_str().unwrap().to_owned();
    let me = std::process::id();
    let dead = 0x3fff_fff0u32;
    // Two ports something listens on, for records that prove liveness by port.
    let windows_ide = TcpListener::bind("127.0.0.1:0").unwrap();
    let windows_port = windows_ide.local_addr().unwrap().port();
    let old_ide = TcpListener::bind("127.0.0.1:0").unwrap();
    let old_port = old_ide.local_addr().unwrap().port();
    let record = |pid: u32, folders: Value, name: &str, extra: Value| {
        let mut record = json!({"pid": pid, "workspaceFolders": folders, "ideName": name,
                                "transport": "ws", "authToken": "t0k3n"});
        for (key, value) in extra.as_object().unwrap() {
            record[key] = value.clone();
        }
        record.to_string()
    };
    write_lock(
        &dir,
        "1001.lock",
        &record(me, json!([root]), "Visual Studio Code", json!({})),
        9,
    );
    write_lock(
        &dir,
        "1002.lock",
        &record(me, json!(["/elsewhere/project"]), "Cursor", json!({})),
        8,
    );
    write_lock(
        &dir,
        "1003.lock",
        &record(dead, json!([root]), "IntelliJ IDEA", json!({})),
        7,
    );
    write_lock(
        &dir,
        &format!("{windows_port}.lock"),
        &record(
            4,
            json!(["C:\\Users\\me\\project"]),
            "Visual Studio Code",
            json!({"runningInWindows": true}),
        ),
        6,
    );
    write_lock(
        &dir,
        &format!("{old_port}.lock"),
        &format!("{root}\n/other\n"),
        5,
    );
    write_lock(&dir, "1006.lock", "{\"pid\": ", 4);
    write_lock(
        &dir,
        "notaport.lock",
        &record(me, json!([root]), "Zed", json!({})),
        3,
    );
    fs::write(dir.join("README.txt"), "not a lock").unwrap();
    let list = |sse_port: Option<u16>, cwd: &Path| {
        let mut command = Command::new(lspc_bin());
        command
            .args(["ide", "list"])
            .current_dir(cwd)
            .env("CLAUDE_CONFIG_DIR", &claude)
            .env("HOME", claude.parent().unwrap().join("home"))
            .env_remove("WSL_DISTRO_NAME")
            .env_remove("CLAUDE_CODE_SSE_PORT");
        if let Some(port) = sse_port {
            command.env("CLAUDE_CODE_SSE_PORT", port.to_string());
        }
        let output = command.output().unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
        )
    };
    let subfolder = workspace.root.join("pkg");
    fs::create_dir_all(&subfolder).unwrap();
    let sub = subfolder.to_str().unwrap();
    let d = dir.to_str().unwrap();
    // Two IDEs match the cwd (a subfolder of the root): ambiguous, nothing chosen.
    let (status, text) = list(None, &subfolder);
    assert_eq!(status, Some(1));
    let expected = format!(
        "{d}/1001.lock: Visual Studio Code ws://127.0.0.1:1001 pid {me} [{root}] (json)
  not chosen: ambiguous (2 IDEs match this workspace): the agent asks which (/ide)
{d}/1002.lock: Cursor ws://127.0.0.1:1002 pid {me} [/elsewhere/project] (json)
  not chosen: workspace mismatch ({sub} is not inside /elsewhere/project)
{d}/1003.lock: IntelliJ IDEA ws://127.0.0.1:1003 pid {dead} [{root}] (json)
  not chosen: stale (pid {dead} is not running): the agent removes it
{d}/{windows_port}.lock: Visual Studio Code ws://127.0.0.1:{windows_port} pid 4 [/mnt/c/Users/me/project] (json)
  not chosen: workspace mismatch ({sub} is not inside /mnt/c/Users/me/project)
{d}/{old_port}.lock: (unnamed) http://127.0.0.1:{old_port}/sse no pid [{root}, /other] (lines)
  not chosen: ambiguous (2 IDEs match this workspace): the agent asks which (/ide)
{d}/1006.lock: (unnamed) - no pid [] (json)
  not chosen: unreadable (invalid JSON: EOF while parsing a value at line 1 column 8): the agent removes it
{d}/notaport.lock: (unnamed) - no pid [] (json)
  not chosen: unreadable (the file name is not <port>.lock): the agent removes it
the agent in {sub} connects to no IDE automatically
"
    );
    assert_eq!(text, expected);
    // CLAUDE_CODE_SSE_PORT picks one of them.
    let (status, text) = list(Some(1001), &subfolder);
    assert_eq!(status, Some(0));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "  chosen");
    assert_eq!(
        lines[9],
        "  not chosen: CLAUDE_CODE_SSE_PORT=1001 selects another IDE"
    );
    assert_eq!(
        lines.last().unwrap(),
        &format!("the agent in {sub} connects to ws://127.0.0.1:1001")
    );
    // Once the old IDE stops listening, its line-based record is stale and VS Code is chosen.
    drop(old_ide);
    let (status, text) = list(None, &workspace.root);
    assert_eq!(status, Some(0));
    assert!(text.contains(&format!(
        "  not chosen: stale (nothing listens on 127.0.0.1:{old_port}): the agent removes it"
    )));
    assert!(text.ends_with(&format!(
        "the agent in {root} connects to ws://127.0.0.1:1001\n"
    )));
    drop(windows_ide);
    // The JSON form carries the same verdicts, newest first; nothing was deleted.
    let output = Command::new(lspc_bin())
        .args(["ide", "list", "--format", "json"])
        .current_dir(&workspace.root)
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("HOME", claude.parent().unwrap().join("home"))
        .env_remove("CLAUDE_CODE_SSE_PORT")
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let verdicts: Vec<&str> = listed["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        [
            "chosen",
            "workspaceMismatch",
            "stale",
            "stale",
            "stale",
            "unreadable",
            "unreadable"
        ]
    );
    assert_eq!(listed["locks"][3]["runningInWindows"], true);
    assert_eq!(
        listed["locks"][3]["workspaceFolders"],
        json!(["/mnt/c/Users/me/project"])
    );
    assert_eq!(listed["locks"][0]["hasAuthToken"], true);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 8);
}
