//! Warm sessions (issue 13): `lspc session start|status|stop`, `--session auto|always|never`,
//! many clients on one session, freshness, faults (a killed client, a killed session, SIGTERM,
//! a stale socket, racing starts) and the wrong-user refusal. Against the fixture server, whose
//! hover answer echoes the position it received, so every answer is checkable.
//!
//! Each test has its own session directory (`XDG_RUNTIME_DIR`), so `status` and `stop --all`
//! see only its own sessions.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wait_timeout::ChildExt;

use crate::support::*;

#[path = "sessions_reload.rs"]
mod reload;

/// A fixture workspace whose commands share a private session directory.
struct SessionWorkspace {
    workspace: Workspace,
    config: PathBuf,
    runtime: PathBuf,
}

const TEXT: &str = "def alpha():\n    pass\n\ndef beta():\n    alpha()\n";

impl SessionWorkspace {
    fn new(name: &str, scenario: Value) -> SessionWorkspace {
        use std::os::unix::fs::DirBuilderExt;
        let mut workspace = Workspace::new(name);
        workspace.file("a.py", TEXT);
        let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
        let runtime = workspace.root.parent().unwrap().join("runtime");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .unwrap();
        SessionWorkspace {
            workspace,
            config,
            runtime,
        }
    }

    /// `lspc --no-builtin --config CONFIG ARGS` in the workspace, with this test's session
    /// directory; `LSPC_SESSION` is left to the caller's `--session`.
    fn lspc(&self, args: &[&str]) -> TestCommand {
        let mut command = self.workspace.lspc();
        command
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("LSPC_SESSION", "auto")
            .env("LSPC_SESSION_IDLE", "60s")
            .args(["--no-builtin", "--config"])
            .arg(&self.config)
            .args(args);
        command
    }

    /// The same command line as a `std::process::Command` (for tests that kill it).
    fn raw(&self, args: &[&str]) -> Command {
        let mut command = Command::new(lspc_bin());
        command
            .current_dir(&self.workspace.root)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("LSPC_SESSION", "auto")
            .env("LSPC_SESSION_IDLE", "60s")
            .args(["--no-builtin", "--config"])
            .arg(&self.config)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn session_dir(&self) -> PathBuf {
        self.runtime.join("lspc")
    }

    /// Pids of the session processes serving this workspace.
    fn session_pids(&self) -> Vec<u32> {
        let status = self.lspc(&["session", "status"]).run();
        status
            .stdout
            .lines()
            .filter(|line| line.starts_with(&self.workspace.root.display().to_string()))
            .filter_map(|line| {
                let rest = line.split("(pid ").nth(1)?;
                rest.split(',').next()?.parse().ok()
            })
            .collect()
    }

    /// `lspc session stop` of the one session running, once it has exited; returns `[its pid]`.
    fn stop_the_session(&self) -> Vec<u32> {
        let pids = self.session_pids();
        assert_eq!(pids.len(), 1);
        self.lspc(&["session", "stop"]).run().status(0);
        wait_until("the stopped session exits", Duration::from_secs(20), || {
            !pid_alive(pids[0])
        });
        pids
    }

    fn fixture_pids(&self) -> Vec<u32> {
        processes_matching(&self.workspace.scenario_path("fx").display().to_string())
    }

    fn initializes(&self) -> usize {
        methods(&self.workspace.transcript("fx"))
            .iter()
            .filter(|method| *method == "initialize")
            .count()
    }
}

impl Drop for SessionWorkspace {
    fn drop(&mut self) {
        let _ = Command::new(lspc_bin())
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .args(["session", "stop", "--all"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: sending a signal to a pid has no memory-safety preconditions.
    unsafe { libc::kill(pid as i32, signal) };
}

/// `session start` prints the socket (0600 in a 0700 directory); later commands in `auto` mode
/// use the one warm server; their output, stderr and exit status equal `--session never`'s;
/// `status` names root, clients, server and log; `stop` leaves no process and no socket.
#[test]
fn session_start_status_stop_leave_nothing_and_answers_match_in_process() {
    let ws = SessionWorkspace::new("start-stop", json!({}));
    let started = ws.lspc(&["session", "start"]).run();
    started.status(0);
    let socket = PathBuf::from(started.stdout.trim_end());
    assert_eq!(socket.parent(), Some(ws.session_dir().as_path()));
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&ws.session_dir()), 0o700);
    // Starting again finds the running session.
    ws.lspc(&["session", "start"])
        .run()
        .status(0)
        .stdout_is(&started.stdout);

    let warm = ws.lspc(&["hover", "a.py:5:5"]).run();
    warm.status(0).stdout_is("alpha at 4:4\n");
    let again = ws
        .lspc(&["definition", "a.py:5:5", "--format", "json"])
        .run();
    again.status(0);
    assert_eq!(ws.initializes(), 1, "both commands used the warm server");
    // Logging off: the in-process run rightly warns that the session already runs fx.
    let missing = ws
        .lspc(&["hover", "a.py:40:1"])
        .env("RUST_LOG", "off")
        .run();
    let cold_missing = ws
        .lspc(&["--session", "never", "hover", "a.py:40:1"])
        .env("RUST_LOG", "off")
        .run();
    assert_eq!(missing.status, cold_missing.status);
    assert_eq!(missing.stdout, cold_missing.stdout);
    assert_eq!(missing.stderr, cold_missing.stderr);
    let cold = ws
        .lspc(&[
            "--session",
            "never",
            "definition",
            "a.py:5:5",
            "--format",
            "json",
        ])
        .run();
    assert_eq!(
        (again.status, &again.stdout),
        (cold.status, &cold.stdout),
        "{}",
        cold.story()
    );
    assert_eq!(
        ws.initializes(),
        3,
        "each --session never run started its own server"
    );

    let status = ws.lspc(&["session", "status"]).run();
    status.status(0);
    let root = ws.workspace.root.display().to_string();
    assert!(
        status.stdout.starts_with(&format!("{root}  (pid ")),
        "{}",
        status.story()
    );
    assert!(
        status
            .stdout
            .contains("1 client, 1 document open on a server)"),
        "{}",
        status.story()
    );
    assert!(status
        .stdout
        .contains(&format!("  socket  {}\n", socket.display())));
    assert!(status.stdout.contains("  log     "), "{}", status.story());
    assert!(
        status.stdout.contains("  server  fx  running  pid "),
        "{}",
        status.story()
    );
    let pids = ws.session_pids();
    assert_eq!(pids.len(), 1, "{}", status.story());
    assert_eq!(ws.fixture_pids().len(), 1);

    let stopped = ws.lspc(&["session", "stop"]).run();
    stopped.status(0).stdout_is(&format!(
        "stopped the session for {root} (pid {})\n",
        pids[0]
    ));
    assert!(!pid_alive(pids[0]));
    assert!(
        ws.fixture_pids().is_empty(),
        "the server stopped with the session"
    );
    assert!(!socket.exists(), "the socket is removed");
    let methods = methods(&ws.workspace.transcript("fx"));
    assert!(
        methods.ends_with(&["shutdown".to_owned(), "exit".to_owned()]),
        "{methods:?}"
    );
    ws.lspc(&["session", "stop"])
        .run()
        .status(1)
        .stderr_contains(&format!("no session runs for {root}"));
}

/// 8 clients × 200 mixed queries (hover, definition, references, symbols) through one session
/// at once: every answer equals the in-process answer and comes back in order.
#[test]
fn eight_clients_with_two_hundred_mixed_queries_share_one_session() {
    let ws = SessionWorkspace::new("eight-clients", json!({}));
    let lines: Vec<Value> = (0..200)
        .map(|n| {
            let (op, line, column) = match n % 4 {
                0 => ("hover", 1 + n % 5, 1 + n % 7),
                1 => ("definition", 5, 5),
                2 => ("references", 1, 5),
                _ => ("symbols", 1, 1),
            };
            let mut request = json!({"id": n, "op": op, "file": "a.py"});
            if op != "symbols" {
                request["line"] = json!(line);
                request["column"] = json!(column);
            }
            request
        })
        .collect();
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let reference = ws
        .lspc(&["--session", "never", "batch"])
        .stdin(input.clone())
        .run();
    reference.status(0);
    assert_eq!(reference.stdout.lines().count(), 200);
    ws.lspc(&["session", "start"]).run().status(0);
    let clients: Vec<std::thread::JoinHandle<Output>> = (0..8)
        .map(|_| {
            let mut command = ws.lspc(&["batch"]);
            let input = input.clone();
            std::thread::spawn(move || command.stdin(input).timeout(Duration::from_secs(120)).run())
        })
        .collect();
    for client in clients {
        let output = client.join().unwrap();
        output.status(0);
        assert_eq!(output.stdout, reference.stdout, "{}", output.story());
    }
    // One session server, plus the reference run's own.
    assert_eq!(ws.initializes(), 2);
}

/// The names of the session process's threads (`comm`, at most 15 bytes).
fn thread_names(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect();
    names.sort();
    names
}

/// Warm one-shots reuse the session's threads (issue 13, the one-shot overhead): five queries
/// one after the other are served by kept connection and reader threads (not one each), and
/// a query at the default log level runs on the connection thread (no query thread is started);
/// one at debug still runs on a query thread, so its log lines stream as they come.
#[test]
fn one_shot_queries_reuse_the_sessions_threads() {
    let ws = SessionWorkspace::new("kept-threads", json!({}));
    ws.lspc(&["session", "start"]).run().status(0);
    for _ in 0..5 {
        // At the default level (the test harness asks every command for debug logs).
        ws.lspc(&["hover", "a.py:5:5"])
            .env("RUST_LOG", "warn")
            .run()
            .status(0)
            .stdout_is("alpha at 4:4\n");
    }
    let session = ws.session_pids();
    assert_eq!(session.len(), 1);
    let count = |prefix: &str| {
        thread_names(session[0])
            .iter()
            .filter(|name| name.starts_with(prefix))
            .count()
    };
    // `comm` keeps 15 bytes: "lspc-session-co", "lspc-session-in", "lspc-session-qu". A
    // client can connect before the previous connection's thread is idle again, so two are
    // allowed; one per query is not.
    assert!(
        (1..=2).contains(&count("lspc-session-co")),
        "{:?}",
        thread_names(session[0])
    );
    assert!(
        (1..=2).contains(&count("lspc-session-in")),
        "{:?}",
        thread_names(session[0])
    );
    assert_eq!(
        count("lspc-session-qu"),
        0,
        "{:?}",
        thread_names(session[0])
    );
    ws.lspc(&["hover", "a.py:5:5"])
        .env("RUST_LOG", "lspc=debug")
        .run()
        .status(0)
        .stdout_is("alpha at 4:4\n");
    assert_eq!(
        count("lspc-session-qu"),
        1,
        "{:?}",
        thread_names(session[0])
    );
}

/// A file rewritten on disk between two one-shot queries: the second answers from the new text
/// (the first at debug, the second at the default log level: a query runs on another session
/// thread at each).
#[test]
fn a_file_rewritten_between_two_one_shot_queries_is_seen() {
    let ws = SessionWorkspace::new("rewritten", json!({}));
    ws.lspc(&["session", "start"]).run().status(0);
    ws.lspc(&["definition", "a.py:5:5"])
        .run()
        .status(0)
        .stdout_is("a.py:1:5  def alpha():\n");
    // Same size, so only the mtime and content tell the versions apart.
    ws.workspace
        .file("a.py", "\n\ndef alpha():\ndef beta():\n    alpha()\n");
    // The first query ran at debug (on a session query thread), this one at the default level
    // (on the connection's thread): both ways see the file as it is on disk.
    ws.lspc(&["definition", "a.py:5:5"])
        .env("RUST_LOG", "warn")
        .run()
        .status(0)
        .stdout_is("a.py:3:5  def alpha():\n");
    let transcript = ws.workspace.transcript("fx");
    let changes = methods(&transcript)
        .iter()
        .filter(|method| *method == "textDocument/didChange")
        .count();
    assert_eq!(changes, 1, "the rewrite reached the warm server once");
}

/// Two new users' warm sessions went unused without a word by commands run from another
/// environment (a pyenv shim's `PYENV_*` and `PATH`, an agent's own environment): the session key
/// covers it. Such a command now says that the root's session was started with other flags or
/// another environment, and runs in process as before; from the session's own environment
/// nothing is said.
#[test]
fn a_command_from_another_environment_says_why_it_runs_without_the_session() {
    let ws = SessionWorkspace::new("other-environment", json!({}));
    ws.lspc(&["session", "start"]).run().status(0);
    let pid = ws.session_pids()[0];
    let same = ws.lspc(&["definition", "a.py:5:5"]).run();
    same.status(0).stdout_is("a.py:1:5  def alpha():\n");
    assert!(!same.stderr.contains("note:"), "{}", same.story());
    for args in [
        &["definition", "a.py:5:5"][..],
        &["diagnostics", "a.py"][..],
    ] {
        let other = ws.lspc(args).env("LSPC_TEST_OTHER_ENVIRONMENT", "1").run();
        let note = format!(
            "lspc: note: the session for {} (pid {pid}) was started with other flags or another \
             environment",
            ws.workspace.root.display()
        );
        assert!(other.stderr.contains(&note), "{}", other.story());
        assert_eq!(
            other.stderr.matches("lspc: note:").count(),
            1,
            "{}",
            other.story()
        );
    }
    ws.stop_the_session();
}

/// A client killed while its request is in flight: the session sends `$/cancelRequest` for it,
/// keeps serving, and another client's query is answered.
#[test]
fn a_client_killed_mid_request_cancels_only_its_request() {
    let scenario = json!({"rules": [
        {"method": "textDocument/hover", "nth": 1, "actions": [{"noReply": true}]}
    ]});
    let ws = SessionWorkspace::new("killed-client", scenario);
    ws.lspc(&["session", "start"]).run().status(0);
    // At the default log level the query runs on the session's connection thread, and the
    // reader thread is the one that sees the client go.
    let mut hung = ws
        .raw(&["hover", "a.py:5:5"])
        .env_remove("RUST_LOG")
        .spawn()
        .unwrap();
    wait_until(
        "the hover reaches the server",
        Duration::from_secs(20),
        || methods(&ws.workspace.transcript("fx")).contains(&"textDocument/hover".to_owned()),
    );
    hung.kill().unwrap();
    hung.wait().unwrap();
    wait_until("the hover is cancelled", Duration::from_secs(10), || {
        methods(&ws.workspace.transcript("fx")).contains(&"$/cancelRequest".to_owned())
    });
    let transcript = ws.workspace.transcript("fx");
    let hover_id = transcript
        .iter()
        .find(|entry| entry["message"]["method"] == "textDocument/hover")
        .map(|entry| entry["message"]["id"].clone())
        .unwrap();
    let cancel = transcript
        .iter()
        .find(|entry| entry["message"]["method"] == "$/cancelRequest")
        .unwrap();
    assert_eq!(cancel["message"]["params"]["id"], hover_id);
    ws.lspc(&["hover", "a.py:5:5"])
        .run()
        .status(0)
        .stdout_is("alpha at 4:4\n");
    assert_eq!(ws.session_pids().len(), 1);
}

/// A new user's trial on madler/zlib: after SIGKILL of a `lspc check` client, the session went on
/// opening the check's files (and starting their servers) for nobody. A check whose results
/// nobody reads any more starts no more files: here 100 files that each publish 1.5 s after
/// `didOpen`, at most 32 in flight; the client is killed once the server has some open.
#[test]
fn a_killed_check_client_stops_its_check_in_the_session() {
    let scenario = json!({"rules": [{"method": "textDocument/didOpen", "actions": [
        {"after": 1500, "actions": [{"publish": {"diagnostics": []}}]}
    ]}]});
    let ws = SessionWorkspace::new("killed-check", scenario);
    for n in 0..100 {
        ws.workspace.file(&format!("m{n:03}.py"), "x = 1\n");
    }
    ws.lspc(&["session", "start"]).run().status(0);
    let opens = || {
        methods(&ws.workspace.transcript("fx"))
            .iter()
            .filter(|method| *method == "textDocument/didOpen")
            .count()
    };
    let mut check = ws
        .raw(&["check", "."])
        .env_remove("RUST_LOG")
        .spawn()
        .unwrap();
    wait_until("the check opens files", Duration::from_secs(20), || {
        opens() > 0
    });
    check.kill().unwrap();
    check.wait().unwrap();
    // Long enough for the whole check to have opened every file (4 rounds of 1.5 s).
    std::thread::sleep(Duration::from_secs(8));
    let opened = opens();
    assert!(
        opened <= 64,
        "{opened} of 101 files opened for a killed client"
    );
    ws.lspc(&["hover", "a.py:5:5"])
        .run()
        .status(0)
        .stdout_is("alpha at 4:4\n");
}

/// The session dies (SIGKILL) under a waiting client: the client exits 3 naming the session and
/// its log; no server survives (the watchdog); the stale socket is removed by the next `auto`
/// command, which runs in process; `always` then starts a fresh session.
#[test]
fn a_killed_session_fails_its_client_clearly_and_leaves_no_server() {
    let scenario = json!({"rules": [
        {"method": "textDocument/hover", "run": 1, "actions": [{"noReply": true}]}
    ]});
    let ws = SessionWorkspace::new("killed-session", scenario);
    let started = ws.lspc(&["session", "start"]).run();
    let socket = PathBuf::from(started.stdout.trim_end());
    let pid = ws.session_pids()[0];
    let mut waiting = ws.raw(&["hover", "a.py:5:5"]).spawn().unwrap();
    wait_until(
        "the hover reaches the server",
        Duration::from_secs(20),
        || methods(&ws.workspace.transcript("fx")).contains(&"textDocument/hover".to_owned()),
    );
    signal(pid, libc::SIGKILL);
    let status = waiting.wait_timeout(Duration::from_secs(20)).unwrap();
    let mut stderr = String::new();
    use std::io::Read;
    waiting
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.and_then(|status| status.code()), Some(3), "{stderr}");
    let root = ws.workspace.root.display().to_string();
    let log = ws.session_dir().join(format!(
        "{}.log",
        socket.file_stem().unwrap().to_string_lossy()
    ));
    assert_eq!(
        stderr,
        format!(
            "lspc: the lspc session for {root} (pid {pid}) ended before it answered; ask again (its log: {})\n",
            log.display()
        )
    );
    assert_no_process_within(
        &ws.workspace.scenario_path("fx").display().to_string(),
        Duration::from_secs(10),
    );
    assert!(socket.exists(), "SIGKILL leaves the socket behind");
    // `auto`: the stale socket is removed and the command runs in process (the fixture's
    // second run answers hovers).
    let fallback = ws.lspc(&["hover", "a.py:5:5"]).run();
    fallback.status(0).stdout_is("alpha at 4:4\n");
    assert!(
        !socket.exists(),
        "the stale socket was removed\n{}",
        fallback.story()
    );
    ws.lspc(&["--session", "always", "hover", "a.py:5:5"])
        .run()
        .status(0)
        .stdout_is("alpha at 4:4\n");
    assert!(socket.exists());
    assert_eq!(ws.session_pids().len(), 1);
}

/// SIGTERM stops a session cleanly: servers get `shutdown`/`exit`, the socket is removed and
/// nothing is left running.
#[test]
fn sigterm_stops_a_session_cleanly() {
    let ws = SessionWorkspace::new("sigterm", json!({}));
    let started = ws.lspc(&["session", "start"]).run();
    let socket = PathBuf::from(started.stdout.trim_end());
    ws.lspc(&["hover", "a.py:5:5"]).run().status(0);
    let pid = ws.session_pids()[0];
    signal(pid, libc::SIGTERM);
    wait_until("the session exits", Duration::from_secs(20), || {
        !pid_alive(pid)
    });
    assert_no_process_within(
        &ws.workspace.scenario_path("fx").display().to_string(),
        Duration::from_secs(10),
    );
    assert!(!socket.exists(), "the socket is removed");
    let methods = methods(&ws.workspace.transcript("fx"));
    assert!(
        methods.ends_with(&["shutdown".to_owned(), "exit".to_owned()]),
        "{methods:?}"
    );
}

/// Four commands racing to start the session with `--session always` end up with one session
/// and one server, and all four answer.
#[test]
fn racing_always_starts_end_with_one_session() {
    let ws = SessionWorkspace::new("racing", json!({}));
    let racers: Vec<std::thread::JoinHandle<Output>> = (0..4)
        .map(|_| {
            let mut command = ws.lspc(&["--session", "always", "hover", "a.py:5:5"]);
            std::thread::spawn(move || command.run())
        })
        .collect();
    for racer in racers {
        let output = racer.join().unwrap();
        output.status(0).stdout_is("alpha at 4:4\n");
        assert!(
            !output.stderr.contains("without a session"),
            "{}",
            output.story()
        );
    }
    assert_eq!(ws.session_pids().len(), 1);
    let logs: Vec<String> = std::fs::read_dir(ws.session_dir())
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
        .collect();
    assert_eq!(
        ws.initializes(),
        1,
        "{:?}\n{logs:?}",
        ws.workspace.transcript("fx")
    );
}

/// Another uid is refused. As `nobody`, the client cannot even enter the 0700 directory; with the
/// directory and socket opened up on purpose, the session itself refuses the peer (`SO_PEERCRED`).
#[test]
fn another_user_is_refused() {
    let Some(runuser) = which("runuser").or_else(|| which("setpriv")) else {
        eprintln!("skipped: neither runuser nor setpriv is installed");
        return;
    };
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: switching to another uid needs root");
        return;
    }
    let as_nobody = |args: &[&str]| -> std::process::Output {
        let mut command = Command::new(&runuser);
        if runuser.ends_with("runuser") {
            command.args(["-u", "nobody", "--"]);
        } else {
            command.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
        }
        command.args(args).output().unwrap()
    };
    let ws = SessionWorkspace::new("wrong-user", json!({}));
    let started = ws.lspc(&["session", "start"]).run();
    let socket = started.stdout.trim_end().to_owned();
    // Let nobody reach the socket file: only the session's own check stands.
    let open = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let mut dir = Some(Path::new(&socket).parent().unwrap());
    while let Some(path) = dir {
        if path == Path::new("/tmp") || path == Path::new("/") {
            break;
        }
        let current = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        open(path, current | 0o711);
        dir = path.parent();
    }
    open(Path::new(&socket), 0o666);
    let script = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n\
                  print(s.makefile().readline(), end='')";
    let refused = as_nobody(&["python3", "-c", script, &socket]);
    let line = String::from_utf8_lossy(&refused.stdout);
    let reply: Value = serde_json::from_str(&line)
        .unwrap_or_else(|_| panic!("{line} / {}", String::from_utf8_lossy(&refused.stderr)));
    let error = reply["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("refused: uid ") && error.ends_with("is not the session's user (uid 0)"),
        "{reply}"
    );
    // lspc itself, as nobody with this directory, refuses to use a directory it does not own.
    open(&ws.session_dir(), 0o711);
    let client = as_nobody(&[
        "env",
        &format!("XDG_RUNTIME_DIR={}", ws.runtime.display()),
        &lspc_bin().display().to_string(),
        "session",
        "status",
    ]);
    let stderr = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is owned by uid 0, not by uid") || stderr.contains("Permission denied"),
        "{stderr}"
    );
    open(&ws.session_dir(), 0o700);
    open(Path::new(&socket), 0o600);
    // The session still serves its own user.
    ws.lspc(&["hover", "a.py:5:5"])
        .run()
        .status(0)
        .stdout_is("alpha at 4:4\n");
}

/// Garbage, non-UTF-8 and unknown-op lines cost an error line on that connection only.
#[test]
fn garbage_lines_get_error_lines_and_the_connection_goes_on() {
    let ws = SessionWorkspace::new("garbage", json!({}));
    let started = ws.lspc(&["session", "start"]).run();
    let socket = started.stdout.trim_end().to_owned();
    let script = r#"
import socket, sys, json
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile('rwb')
hello = json.loads(f.readline())
for line in [b'not json\n', b'\xff\xfe\n', b'{"id": 7, "op": "explode"}\n', b'{"id": 8, "op": "status"}\n']:
    f.write(line); f.flush()
    print(f.readline().decode().strip())
print(hello["lspc"], hello["protocol"])
"#;
    let output = TestCommand::new("python3")
        .args(["-c", script, &socket])
        .run();
    output.status(0);
    let lines: Vec<&str> = output.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", output.story());
    assert!(
        lines[0].starts_with(r#"{"error":"bad request: expected "#),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(r#""id":null}"#), "{}", lines[0]);
    assert_eq!(lines[1], r#"{"error":"line is not UTF-8","id":null}"#);
    assert!(
        lines[2].starts_with(r#"{"error":"bad request: unknown variant `explode`"#),
        "{}",
        lines[2]
    );
    assert!(lines[2].ends_with(r#""id":7}"#), "{}", lines[2]);
    let status: Value = serde_json::from_str(lines[3]).unwrap();
    assert_eq!(status["id"], 8);
    assert_eq!(status["result"][0]["name"], "fx");
    assert_eq!(lines[4], "lspc-session 6");
}

/// The one-shot query op (`query`), here even written before the hello is read: it is answered
/// once with the whole query's outcome (the same JSON and human text as `lspc hover` prints, a bad position
/// as the same error); a `query` carrying another session's key is refused with an error line
/// and the connection goes on.
#[test]
fn a_query_line_sent_before_the_hello_is_answered_and_another_key_is_refused() {
    let ws = SessionWorkspace::new("query-op", json!({}));
    let started = ws.lspc(&["session", "start"]).run();
    let socket = started.stdout.trim_end().to_owned();
    let file = ws.workspace.root.join("a.py").display().to_string();
    let script = r#"
import socket, sys, json, os
path, file = sys.argv[1], sys.argv[2]
key = os.path.basename(path)[:-len(".sock")]
def query(id, key, line):
    request = {"type": "hover", "at": {"file": file, "line": line, "target": {"Column": 5}}}
    return (json.dumps({"id": id, "op": "query", "key": key, "request": request, "timeoutMs": 30000}) + "\n").encode()
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile('rwb')
f.write(query(1, key, 5)); f.flush()
hello = json.loads(f.readline())
print(hello["key"] == key)
print(f.readline().decode().strip())
for line in [query(2, key, 40), query(3, "0000000000000000", 5), b'{"id": 4, "op": "status"}\n']:
    f.write(line); f.flush()
    print(f.readline().decode().strip())
"#;
    let output = TestCommand::new("python3")
        .args(["-c", script, &socket, &file])
        .run();
    output.status(0);
    let lines: Vec<&str> = output.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", output.story());
    assert_eq!(lines[0], "True");
    let answer: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(answer["id"], 1);
    let in_process = ws
        .lspc(&[
            "--session",
            "never",
            "hover",
            "a.py:5:5",
            "--format",
            "json",
        ])
        .run();
    in_process.status(0);
    let expected_json: Value = serde_json::from_str(&in_process.stdout).unwrap();
    assert_eq!(
        answer["result"],
        json!({"Ok": {"json": expected_json, "human": "alpha at 4:4\n", "found": true, "incomplete": null}})
    );
    let bad: Value = serde_json::from_str(lines[2]).unwrap();
    let bad_in_process = ws
        .lspc(&["--session", "never", "hover", "a.py:40:5"])
        .env("RUST_LOG", "off")
        .run();
    bad_in_process.status(2);
    let message = bad["result"]["Err"]["InvalidPosition"].as_str().unwrap();
    assert_eq!(bad_in_process.stderr, format!("lspc: {message}\n"));
    let key = Path::new(&socket)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        lines[3],
        json!({"error": format!("this session's key is {key}, not 0000000000000000: query refused"), "id": 3})
            .to_string()
    );
    let status: Value = serde_json::from_str(lines[4]).unwrap();
    assert_eq!(status["id"], 4);
    assert_eq!(status["result"][0]["name"], "fx");
    // The warm one-shot command says the same as the session's answer.
    ws.lspc(&["hover", "a.py:5:5"])
        .run()
        .status(0)
        .stdout_is("alpha at 4:4\n");
    assert_eq!(
        ws.initializes(),
        3,
        "the session's server and two in-process runs"
    );
}

/// A minimal MCP client over `lspc mcp --session always` (stdio, newline-delimited JSON-RPC).
struct McpClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl McpClient {
    fn start(ws: &SessionWorkspace) -> McpClient {
        McpClient::start_with(ws, "always")
    }

    /// `lspc --session SESSION mcp`, initialized.
    fn start_with(ws: &SessionWorkspace, session: &str) -> McpClient {
        use std::io::BufRead;
        let mut child = ws
            .raw(&["--session", session, "mcp"])
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
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
        use std::io::Write;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("an MCP reply in time");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls `hover` on a.py:5:5 right after the session ended: it may meet the end of the old
    /// connection ("… ended before it answered; ask again") or be answered.
    fn hover_after_session_end(&mut self, id: i64) {
        let reply = self.request(
            id,
            "tools/call",
            json!({"name": "hover", "arguments": {"file": "a.py", "line": 5, "column": 5}}),
        );
        if reply["result"]["isError"] == true {
            let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
            assert!(
                text.contains("ended before it answered; ask again"),
                "{reply}"
            );
        }
    }

    /// Calls `hover` on a.py:5:5; returns the hover text and the passive diagnostics' messages.
    fn hover(&mut self, id: i64) -> (String, Vec<String>) {
        let reply = self.request(
            id,
            "tools/call",
            json!({"name": "hover", "arguments": {"file": "a.py", "line": 5, "column": 5}}),
        );
        let result = &reply["result"];
        assert_eq!(result["isError"], false, "{reply}");
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let passive = result["structuredContent"]["newDiagnostics"]["files"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .flat_map(|file| file["diagnostics"].as_array().cloned().unwrap_or_default())
            .map(|diagnostic| diagnostic["message"].as_str().unwrap_or("").to_owned())
            .collect();
        (text, passive)
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three MCP clients with `--session always` run one set of servers; each keeps its own passive
/// diagnostics delivery: a publish made after all three connected reaches each of them once.
#[test]
fn three_mcp_clients_share_one_server_and_each_gets_its_own_passive_delivery() {
    let ws = SessionWorkspace::new("three-mcp", json!({}));
    let mut clients: Vec<McpClient> = (0..3).map(|_| McpClient::start(&ws)).collect();
    for (n, client) in clients.iter_mut().enumerate() {
        let (text, _) = client.hover(1 + n as i64);
        assert!(text.contains("alpha at 4:4"), "{text}");
    }
    assert_eq!(ws.initializes(), 1, "one server for three clients");
    assert_eq!(ws.fixture_pids().len(), 1);
    assert_eq!(ws.session_pids().len(), 1);
    // Same length, new marker: the next call re-syncs the file and the server publishes.
    ws.workspace.file(
        "a.py",
        "def alpha():\n    pass\n\ndef beta(): # ERROR: two\n    alpha()\n",
    );
    let mut delivered = vec![Vec::new(); 3];
    for round in 0..3 {
        for (n, client) in clients.iter_mut().enumerate() {
            let (_, passive) = client.hover(10 + 10 * round + n as i64);
            delivered[n].extend(passive);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    for messages in &delivered {
        assert_eq!(messages, &["two".to_owned()], "{delivered:?}");
    }
}

/// A new user's agent: after `lspc session stop`, every tool call of a running
/// `lspc mcp --session always` answered "the lspc session … ended unexpectedly", for good. The
/// call after the stop now starts a new session (as the command did at its start) and answers;
/// one server runs again, under the new session.
#[test]
fn an_mcp_client_goes_on_in_a_new_session_after_session_stop() {
    let ws = SessionWorkspace::new("mcp-after-stop", json!({}));
    let mut client = McpClient::start(&ws);
    let (text, _) = client.hover(1);
    assert!(text.contains("alpha at 4:4"), "{text}");
    let first = ws.stop_the_session();
    // The first call after the stop may meet the end of the old connection; the next one runs
    // in the new session.
    client.hover_after_session_end(2);
    let (text, _) = client.hover(3);
    assert!(text.contains("alpha at 4:4"), "{text}");
    let second = ws.session_pids();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first);
    assert_eq!(ws.fixture_pids().len(), 1);
}

/// A new user's agent on `lspc mcp` in the default `--session auto`, attached to the session the
/// user had started: after `lspc session stop`, every later tool call answered "the lspc session
/// … ended unexpectedly", for good (auto starts no session), and the MCP process spun a core on
/// its closed event subscription. Now the next call runs in this process (its own server, no
/// session started), the passive diagnostics still come with the answers, and the process idles.
#[test]
fn an_auto_mcp_client_goes_on_in_process_after_session_stop() {
    let ws = SessionWorkspace::new("mcp-auto-after-stop", json!({}));
    ws.lspc(&["session", "start"]).run().status(0);
    let mut client = McpClient::start_with(&ws, "auto");
    let (text, _) = client.hover(1);
    assert!(text.contains("alpha at 4:4"), "{text}");
    ws.stop_the_session();
    // CPU time (clock ticks, 100 a second here) over two idle seconds: a spinning hub takes
    // about 200.
    let ticks = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    let before = ticks(client.child.id());
    std::thread::sleep(Duration::from_secs(2));
    let spent = ticks(client.child.id()) - before;
    assert!(spent < 50, "lspc mcp used {spent} ticks in 2 idle seconds");
    // The first call after the stop may meet the end of the old connection.
    client.hover_after_session_end(2);
    let (text, _) = client.hover(3);
    assert!(text.contains("alpha at 4:4"), "{text}");
    assert_eq!(
        ws.session_pids(),
        Vec::<u32>::new(),
        "auto starts no session"
    );
    let servers = ws.fixture_pids();
    assert_eq!(servers.len(), 1, "{servers:?}");
    // Same length, new marker: the server publishes, and the passive delivery (its consumer
    // opened again in process) brings it with a later answer.
    ws.workspace.file(
        "a.py",
        "def alpha():\n    pass\n\ndef beta(): # ERROR: two\n    alpha()\n",
    );
    let mut delivered = Vec::new();
    for round in 0..3 {
        let (_, passive) = client.hover(10 + round);
        delivered.extend(passive);
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(delivered, ["two".to_owned()]);
    // SIGTERM: the in-process server goes with the client.
    Command::new("kill")
        .arg(client.child.id().to_string())
        .status()
        .unwrap();
    assert!(client
        .child
        .wait_timeout(Duration::from_secs(20))
        .unwrap()
        .is_some());
    assert_no_process_within(
        &ws.workspace.scenario_path("fx").display().to_string(),
        Duration::from_secs(10),
    );
}

/// A session with `--idle 1s` exits by itself once its last client is gone, and a session whose
/// root is removed exits too; neither leaves a server behind.
#[test]
fn idle_and_vanished_root_sessions_exit_and_leave_nothing() {
    let ws = SessionWorkspace::new("idle", json!({}));
    ws.lspc(&["session", "start", "--idle", "1s"])
        .run()
        .status(0);
    ws.lspc(&["hover", "a.py:5:5"]).run().status(0);
    let pid = ws.session_pids()[0];
    wait_until("the idle session exits", Duration::from_secs(20), || {
        !pid_alive(pid)
    });
    assert_no_process_within(
        &ws.workspace.scenario_path("fx").display().to_string(),
        Duration::from_secs(10),
    );

    let gone = SessionWorkspace::new("root-gone", json!({}));
    gone.lspc(&["--session", "always", "hover", "a.py:5:5"])
        .run()
        .status(0);
    let pid = gone.session_pids()[0];
    std::fs::remove_dir_all(&gone.workspace.root).unwrap();
    wait_until(
        "the rootless session exits",
        Duration::from_secs(20),
        || !pid_alive(pid),
    );
    assert_no_process_within(
        &gone.workspace.scenario_path("fx").display().to_string(),
        Duration::from_secs(10),
    );
}

/// Files the session has not opened that appear, change or vanish on disk (a `git checkout`, a
/// generator) reach the server as `workspace/didChangeWatchedFiles`; the open document is not
/// announced (it is re-synced when used).
#[test]
fn files_changed_behind_the_session_reach_the_server_as_watched_file_changes() {
    let ws = SessionWorkspace::new("watched", json!({}));
    ws.workspace.file("gen.py", "x = 1\n");
    ws.lspc(&["--session", "always", "hover", "a.py:5:5"])
        .run()
        .status(0);
    // Let the first scan record the snapshot.
    std::thread::sleep(Duration::from_millis(2500));
    ws.workspace.file("new.py", "y = 2\n");
    ws.workspace.file("gen.py", "x = 10\n");
    ws.workspace.file("a.py", &format!("{TEXT}# edited\n"));
    let uri = |name: &str| format!("file://{}/{name}", ws.workspace.root.display());
    let mut changes = Vec::new();
    wait_until("the changes are announced", Duration::from_secs(20), || {
        changes = ws
            .workspace
            .transcript("fx")
            .iter()
            .filter(|entry| entry["message"]["method"] == "workspace/didChangeWatchedFiles")
            .flat_map(|entry| {
                entry["message"]["params"]["changes"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        changes.len() >= 2
    });
    assert_eq!(
        changes,
        [
            json!({"uri": uri("gen.py"), "type": 2}),
            json!({"uri": uri("new.py"), "type": 1}),
        ]
    );
    std::fs::remove_file(ws.workspace.path("new.py")).unwrap();
    wait_until("the deletion is announced", Duration::from_secs(20), || {
        ws.workspace.transcript("fx").iter().any(|entry| {
            entry["message"]["params"]["changes"][0] == json!({"uri": uri("new.py"), "type": 3})
        })
    });
}

/// Engine log records reach each client at its own level, in the in-process format (README
/// "Session logs"): with `RUST_LOG=lspc=debug` the warm hover prints the lines the in-process
/// hover prints for the server's start and its answer; a client at `warn` gets none of them; the
/// session's own log keeps the level of the command that started it (`warn` here).
#[test]
fn engine_logs_reach_each_client_at_its_own_level() {
    let ws = SessionWorkspace::new("logs", json!({}));
    ws.lspc(&["session", "start"])
        .env("RUST_LOG", "warn")
        .run()
        .status(0);
    let warm = ws.lspc(&["hover", "a.py:5:5"]).run();
    warm.status(0).stdout_is("alpha at 4:4\n");
    let cold = ws.lspc(&["--session", "never", "hover", "a.py:5:5"]).run();
    cold.status(0).stdout_is("alpha at 4:4\n");
    let answered = r#"lspc: debug: fx: textDocument/hover answered {"contents":{"kind":"markdown","value":"**alpha** at 4:4"}}"#;
    for line in ["lspc: debug: fx: spawned pid ", answered] {
        warm.stderr_contains(line);
        cold.stderr_contains(line);
    }
    let quiet = ws
        .lspc(&["hover", "a.py:5:5"])
        .env("RUST_LOG", "warn")
        .run();
    quiet.status(0).stdout_is("alpha at 4:4\n");
    assert_eq!(quiet.stderr, "", "{}", quiet.story());
    let status = ws.lspc(&["session", "status"]).run();
    let log = status
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("  log     "))
        .unwrap_or_else(|| status.fail("no log line"));
    let log = std::fs::read_to_string(log).unwrap();
    assert!(!log.contains("lspc: debug:"), "{log}");
    assert!(log.contains("serving "), "{log}");
}

/// The session key includes the environment the servers inherit: a command with another value of
/// a variable the server could read gets a session (and server) of its own, and the first
/// environment's next command finds its own session again; `RUST_LOG` (a per-command setting)
/// does not split sessions.
#[test]
fn commands_with_another_environment_get_their_own_session() {
    let ws = SessionWorkspace::new("environment", json!({}));
    let hover = |mark: &str, rust_log: &str| {
        ws.lspc(&["--session", "always", "hover", "a.py:5:5"])
            .env("LSPC_TEST_ENVIRONMENT_MARK", mark)
            .env("RUST_LOG", rust_log)
            .run()
            .status(0)
            .stdout_is("alpha at 4:4\n");
    };
    hover("a", "lspc=debug");
    assert_eq!(ws.initializes(), 1);
    hover("b", "lspc=debug");
    assert_eq!(ws.initializes(), 2, "another environment, another server");
    hover("a", "warn");
    assert_eq!(ws.initializes(), 2, "the first environment's session again");
    assert_eq!(ws.session_pids().len(), 2);
}

/// Found in the ninth round's new-user test: a session started from one shell (with a variable
/// exported that the other shell does not have) was listed by `session status` for the
/// workspace, and `session stop` from the other shell said `no session runs for ROOT` (exit 1),
/// since the key hashes the environment. `session stop` now stops the sessions serving the
/// workspace's root when none has its own key.
#[test]
fn session_stop_from_another_environment_stops_the_workspaces_session() {
    let ws = SessionWorkspace::new("stop-environment", json!({}));
    ws.lspc(&["session", "start"])
        .env("LSPC_TEST_ENVIRONMENT_MARK", "started-here")
        .run()
        .status(0);
    let pids = ws.session_pids();
    assert_eq!(pids.len(), 1);
    let stopped = ws
        .lspc(&["session", "stop"])
        .env("LSPC_TEST_ENVIRONMENT_MARK", "another-shell")
        .run();
    stopped.status(0).stdout_is(&format!(
        "stopped the session for {} (pid {})\n",
        ws.workspace.root.display(),
        pids[0]
    ));
    assert_eq!(ws.session_pids(), Vec::<u32>::new());
    ws.lspc(&["session", "stop"])
        .run()
        .status(1)
        .stderr_contains("no session runs for");
}

/// Found in the landing CI of 44d5129: `session stop` exited 3 with "the lspc session … ended
/// before it answered; ask again" for a session that did stop (it sent its main thread the stop
/// before it wrote the answer, and with no server running exited first). The session now
/// answers first; and a session that ends without answering (it was ending already: its idle
/// bound, its root removed) counts as stopped once its process is gone. The session here is a
/// stand-in: a socket that says hello for a process that exits 300 ms later, reads the stop
/// and closes without answering.
#[test]
fn session_stop_counts_a_session_that_ended_without_answering_as_stopped() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::DirBuilderExt;
    let ws = SessionWorkspace::new("stop-unanswered", json!({}));
    let dir = ws.runtime.join("lspc");
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    let key = "0123456789abcdef";
    let listener = std::os::unix::net::UnixListener::bind(dir.join(format!("{key}.sock"))).unwrap();
    let mut ending = Command::new("sleep").arg("0.3").spawn().unwrap();
    let pid = ending.id();
    let root = ws.workspace.root.canonicalize().unwrap();
    let hello = json!({
        "lspc": "lspc-session",
        "protocol": lspc::session::wire::PROTOCOL_VERSION,
        "version": env!("CARGO_PKG_VERSION"),
        "key": key,
        "root": root,
        "pid": pid,
        "log": dir.join(format!("{key}.log")),
        "configHash": "",
    });
    let session = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        writeln!(stream, "{hello}").unwrap();
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).unwrap();
        line // the connection closes unanswered as `stream` drops
    });
    let stopped = ws.lspc(&["session", "stop"]).run();
    let line = session.join().unwrap();
    assert!(line.contains(r#""op":"stop""#), "{line}");
    stopped.status(0).stdout_is(&format!(
        "stopped the session for {} (pid {pid})\n",
        root.display()
    ));
    ending.wait().unwrap();
}

/// A session that cannot start (here it cannot listen: a directory sits where its socket goes)
/// is noticed as soon as its process exits, through the ready pipe, not after the 30 s start
/// timeout; `--session always` then says why once, with the session's own error, and the query
/// runs in process with the same answer, trying the session no second time. `session start`
/// fails with the same message and exit 3.
#[test]
fn a_session_that_cannot_start_is_reported_at_once_and_tried_once() {
    let ws = SessionWorkspace::new("cannot-start", json!({}));
    let started = ws.lspc(&["session", "start"]).run();
    started.status(0);
    let socket = PathBuf::from(started.stdout.trim_end());
    ws.lspc(&["session", "stop"]).run().status(0);
    assert!(!socket.exists(), "stop removed the socket");
    std::fs::create_dir(&socket).unwrap();
    let before = ws.initializes();

    let hover = ws
        .lspc(&["--session", "always", "hover", "a.py:5:5"])
        .timeout(Duration::from_secs(20))
        .run();
    hover.status(0).stdout_is("alpha at 4:4\n");
    let expected = format!(
        "lspc: warning: the session exited before it served: lspc session: cannot listen on {}: \
         the address stays in use (its log: {}); running without a session\n",
        socket.display(),
        socket.with_extension("log").display()
    );
    assert_eq!(
        hover
            .stderr
            .lines()
            .filter(|line| line.starts_with("lspc: warning:"))
            .map(|line| format!("{line}\n"))
            .collect::<String>(),
        expected,
        "{}",
        hover.story()
    );
    assert_eq!(
        ws.initializes(),
        before + 1,
        "the query ran in process once"
    );

    let start = ws
        .lspc(&["session", "start"])
        .timeout(Duration::from_secs(20))
        .run();
    start.status(3).stderr_contains(&format!(
        "the session exited before it served: lspc session: cannot listen on {}",
        socket.display()
    ));
    std::fs::remove_dir(&socket).unwrap();
}

/// Issue 15: the cap on busy instances of one server counts one command's files. In a session,
/// a check of six projects (each its own instance, publishing 3 s after open) keeps 2 to 4 of
/// them busy; a second command's file in a seventh project starts its instance at once, before
/// any of the check's instances has published, instead of waiting for one of them.
#[test]
fn a_second_command_does_not_wait_for_a_checks_busy_instances() {
    let ws = SessionWorkspace::new(
        "instances-per-op",
        json!({"publishDelayMs": 3000, "recordPublishes": true}),
    );
    let mut folders = Vec::new();
    for name in ["p0", "p1", "p2", "p3", "p4", "p5", "q"] {
        ws.workspace
            .file(&format!("{name}/proj.marker"), "")
            .file(&format!("{name}/m.py"), "# WARNING: marker\n");
        folders.push(name);
    }
    let mut entries: Value =
        serde_json::from_str(&std::fs::read_to_string(&ws.config).unwrap()).unwrap();
    entries["fx"]["rootMarkers"] = json!(["proj.marker"]);
    std::fs::write(&ws.config, entries.to_string()).unwrap();
    let at_once = std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .clamp(2, 4);
    let mut check_args = vec!["--session", "always", "check"];
    check_args.extend(&folders[..6]);
    let mut check = ws.raw(&check_args).spawn().unwrap();
    let starts = |ws: &SessionWorkspace| events(&ws.workspace.transcript("fx"), "start").len();
    wait_until(
        "the check's first instances start",
        Duration::from_secs(60),
        || starts(&ws) >= at_once,
    );
    let second = ws
        .lspc(&["--session", "always", "check", "q/m.py"])
        .timeout(Duration::from_secs(60))
        .run();
    second.status(0);
    assert!(
        second.stdout.contains("q/m.py:1:3: warning: marker"),
        "{}",
        second.story()
    );
    let status = check.wait_timeout(Duration::from_secs(120)).unwrap();
    assert_eq!(status.and_then(|status| status.code()), Some(0));
    let transcript = ws.workspace.transcript("fx");
    let q_root = ws.workspace.root.canonicalize().unwrap().join("q");
    let q_uri = format!("file://{}", q_root.display());
    let q_pid = transcript
        .iter()
        .find(|line| {
            line["message"]["method"] == "initialize"
                && line["message"]["params"]["rootUri"] == q_uri.as_str()
        })
        .and_then(|line| line["pid"].as_u64())
        .expect("q's instance was initialized");
    let position = |wanted: &dyn Fn(&Value) -> bool| transcript.iter().position(wanted);
    let q_start = position(&|line| line["event"] == "start" && line["pid"] == q_pid).unwrap();
    let first_publish = position(&|line| line["event"] == "published").unwrap();
    assert!(
        q_start < first_publish,
        "q's instance started only after the check's first publish (line {q_start} > {first_publish})"
    );
    assert_eq!(starts(&ws), 7, "one instance per project");
}
