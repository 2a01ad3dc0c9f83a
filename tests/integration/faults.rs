//! Fault suite (issue 6 and the `[faults]` cases B05, B06, B21, B24, B25, B26): the scripted
//! fixture server crashes, hangs, floods and prints junk; each test asserts the exact outcome, a
//! generous time bound, and that no process of its server is left afterwards (`/proc` scan for the
//! test's unique scenario path).
//!
//! Request-level faults drive the engine library (`EngineHandle`) since no query command exists
//! yet; everything a one-shot CLI run shows (exit status, shutdown, orphans, files) drives the
//! built `lspc check` binary.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::require_program;
use crate::support::{
    descendants_matching, pid_alive, processes_matching, skip_in_session_mode, typescript_entry,
    BatchSession, Workspace,
};
use lspc::config::{self, ConfigOptions};
use lspc::engine::{DiagnosticsOutcome, EngineError, EngineHandle, EngineOptions, RestartPolicy};
use lspc::process::ServerId;

const LSPC: &str = env!("CARGO_BIN_EXE_lspc");
const FIXTURE: &str = env!("CARGO_BIN_EXE_lspc-fixture-server");
const TEXT: &str = "def main\nERROR: bad thing\n";

/// One test's workspace: scenario, config, transcript and `a.fx`, in a fresh temp folder.
struct Fx {
    dir: PathBuf,
}

impl Fx {
    fn new(name: &str, scenario: Value) -> Fx {
        let dir = std::env::temp_dir().join(format!("lspc-faults-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
        let cfg = json!({"fx": {
            "command": FIXTURE,
            "args": ["--scenario", dir.join("scenario.json"), "--transcript", dir.join("transcript.jsonl")],
            "extensionToLanguage": {".fx": "fixture"},
            "shutdownTimeout": 2000
        }});
        fs::write(dir.join("cfg.json"), cfg.to_string()).unwrap();
        fs::write(dir.join("a.fx"), TEXT).unwrap();
        Fx { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn scenario_path(&self) -> String {
        self.path("scenario.json").display().to_string()
    }

    /// `lspc check --no-builtin --root DIR --config cfg.json ARGS…`: (status, stdout, stderr, time).
    fn check(&self, args: &[&str]) -> (i32, String, String, Duration) {
        let started = Instant::now();
        let output = Command::new(LSPC)
            .current_dir(&self.dir)
            .args(["--no-builtin", "--root"])
            .arg(&self.dir)
            .args(["--config", "cfg.json", "check"])
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            started.elapsed(),
        )
    }

    fn engine(&self, restart: Option<RestartPolicy>) -> EngineHandle {
        self.engine_with(restart, true)
    }

    /// [`Fx::engine`] with [`EngineOptions::passive_delivery`] set to `passive`.
    fn engine_with(&self, restart: Option<RestartPolicy>, passive: bool) -> EngineHandle {
        let mut options = ConfigOptions::new(self.dir.clone());
        options.config_files = vec![self.path("cfg.json")];
        options.builtin = false;
        let config = config::load(&options);
        assert!(config.errors.is_empty(), "{:?}", config.errors);
        let mut engine_options = EngineOptions::new(config);
        engine_options.restart = restart;
        engine_options.warn_duplicates = false;
        engine_options.passive_delivery = passive;
        EngineHandle::start(engine_options)
    }

    /// Transcript lines (JSON) written by every process of this test's server.
    fn transcript(&self) -> Vec<Value> {
        fs::read_to_string(self.path("transcript.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    fn events(&self, event: &str) -> Vec<Value> {
        self.transcript()
            .into_iter()
            .filter(|line| line["event"] == event)
            .collect()
    }

    fn received(&self, method: &str) -> Vec<Value> {
        self.transcript()
            .into_iter()
            .filter(|line| line["message"]["method"] == method)
            .map(|line| line["message"].clone())
            .collect()
    }

    /// Waits (up to 5 s) until no process has this test's scenario path on its command line.
    fn assert_no_server_left(&self) {
        let marker = self.scenario_path();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = processes_matching(&marker);
            if left.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "servers left: {left:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Fx {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Syncs `a.fx` and returns the server id and the document URI.
fn open_a(fx: &Fx, engine: &EngineHandle) -> (ServerId, String) {
    let synced = engine
        .sync(fx.path("a.fx"), Duration::from_secs(10))
        .expect("sync a.fx");
    let uri = format!("file://{}", fx.path("a.fx").display());
    (synced.servers[0].server_id, uri)
}

fn position(uri: &str, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

/// The error of a definition at 1:6 of `uri` that must fail.
fn failed_definition(engine: &EngineHandle, server_id: ServerId, uri: &str) -> EngineError {
    engine
        .request(
            server_id,
            "textDocument/definition",
            position(uri, 0, 5),
            Duration::from_secs(10),
        )
        .unwrap_err()
}

const PANIC_TAIL: &str = "thread 'main' panicked at src/main.rs:42:7:\nindex out of bounds";

fn crash_rule(run: Option<u32>) -> Value {
    let mut rule = json!({"method": "textDocument/definition", "actions": [
        {"stderr": "thread 'main' panicked at src/main.rs:42:7:\nindex out of bounds\n"},
        {"exit": 134}
    ]});
    if let Some(run) = run {
        rule["run"] = json!(run);
    }
    rule
}

// ----- The passive queue (not a fault: it shares this harness) ---------------------------------

/// `lspc check` turns passive delivery off (it never drains, and the queue kept a copy of every
/// checked file's diagnostics to the end: 0.5 KiB a file in the fixture scaling bench); the
/// same settled answer then leaves nothing queued, while the default engine (MCP's) queues it.
#[test]
fn an_engine_without_passive_delivery_queues_nothing_and_answers_the_same() {
    let fx = Fx::new("passive-off", json!({}));
    let mut answers = Vec::new();
    for passive in [true, false] {
        let engine = fx.engine_with(None, passive);
        let results = engine.diagnostics(vec![fx.path("a.fx")], Duration::from_secs(10));
        let DiagnosticsOutcome::Settled(diagnostics) = &results[0].outcome else {
            panic!("not settled: {:?}", results[0].outcome);
        };
        answers.push(
            diagnostics
                .iter()
                .map(|d| (d.line, d.message.clone()))
                .collect::<Vec<_>>(),
        );
        let queued = lspc::engine::drain_passive(&engine.op_sender(), None, None);
        assert_eq!(
            queued.map(|batch| batch.files.len()),
            passive.then_some(1),
            "passive_delivery {passive}"
        );
        engine.shutdown();
    }
    assert_eq!(answers[0], [(2, "bad thing".to_string())]);
    assert_eq!(answers[0], answers[1]);
    fx.assert_no_server_left();
}

// ----- B24: crashes ------------------------------------------------------------------------------

#[test]
fn b24_crash_mid_request_restarts_reopens_and_retries_once() {
    let fx = Fx::new("b24-once", json!({"rules": [crash_rule(Some(1))]}));
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let started = Instant::now();
    let result = engine.request(
        server_id,
        "textDocument/definition",
        position(&uri, 0, 5),
        Duration::from_secs(10),
    );
    let elapsed = started.elapsed();
    let location = result.expect("the retried definition succeeds");
    assert_eq!(
        location["range"]["start"],
        json!({"line": 0, "character": 4})
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let starts = fx.events("start");
    assert_eq!(starts.len(), 2, "one restart");
    // The new process got initialize, initialized, and the document with its current text.
    let opens = fx.received("textDocument/didOpen");
    assert_eq!(opens.len(), 2);
    assert_eq!(opens[1]["params"]["textDocument"]["text"], TEXT);
    assert_eq!(fx.received("initialize").len(), 2);
    assert_eq!(fx.received("textDocument/definition").len(), 2);
    let status = engine.status();
    assert_eq!(status[0].restarts, 1);
    assert_eq!(status[0].state, "running");
    engine.shutdown();
    fx.assert_no_server_left();
}

/// A crash whose panic message is above a backtrace (`RUST_BACKTRACE=1`) is reported with the
/// message, then the backtrace's last lines.
#[test]
fn b24_crash_report_keeps_the_panic_message_above_a_backtrace() {
    let mut stderr = String::from(
        "thread 'main' panicked at src/main.rs:42:7:\nindex out of bounds\nstack backtrace:\n",
    );
    for frame in 0..12 {
        stderr.push_str(&format!("  {frame:>2}: server::frame{frame}\n"));
    }
    let fx = Fx::new(
        "b24-bt",
        json!({"rules": [{"method": "textDocument/definition", "actions": [{"stderr": stderr}, {"exit": 134}]}]}),
    );
    let engine = fx.engine(Some(RestartPolicy::Never));
    let (server_id, uri) = open_a(&fx, &engine);
    let error = failed_definition(&engine, server_id, &uri);
    assert_eq!(
        error.to_string(),
        "server fx crashed (exit 134); restarts are disabled, so it stays down: thread 'main' panicked at src/main.rs:42:7:\n…\n7: server::frame7\n   8: server::frame8\n   9: server::frame9\n  10: server::frame10\n  11: server::frame11"
    );
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn b24_crash_with_restarts_disabled_fails_fast_with_status_and_stderr() {
    let fx = Fx::new("b24-never", json!({"rules": [crash_rule(None)]}));
    let engine = fx.engine(Some(RestartPolicy::Never));
    let (server_id, uri) = open_a(&fx, &engine);
    let started = Instant::now();
    let error = failed_definition(&engine, server_id, &uri);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        error.to_string(),
        format!(
            "server fx crashed (exit 134); restarts are disabled, so it stays down: {PANIC_TAIL}"
        )
    );
    // Later requests fail at once with the same reason; no new process.
    let started = Instant::now();
    let again = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_secs(10),
        )
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(again, error);
    assert_eq!(fx.events("start").len(), 1);
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn b24_always_crashing_server_is_given_up_after_the_limit() {
    let fx = Fx::new("b24-always", json!({"rules": [crash_rule(None)]}));
    let engine = fx.engine(Some(RestartPolicy::Limit(2)));
    let (server_id, uri) = open_a(&fx, &engine);
    let definition = || {
        engine.request(
            server_id,
            "textDocument/definition",
            position(&uri, 0, 5),
            Duration::from_secs(20),
        )
    };
    let started = Instant::now();
    // Crash 1, restart after 500 ms, retried once, crash 2: the request fails (no second retry).
    let first = definition().unwrap_err();
    assert!(
        matches!(&first, EngineError::ServerExited { status, stderr_tail, .. }
            if status == "exit 134" && stderr_tail == PANIC_TAIL),
        "{first:?}"
    );
    // Restart after 1 s; crash 3 exceeds the limit of 2: given up.
    let second = definition().unwrap_err();
    assert_eq!(
        second.to_string(),
        format!("server fx crashed (exit 134); gave up after 3 crashes in a row, so it stays down: {PANIC_TAIL}")
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let quick = Instant::now();
    let third = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_secs(10),
        )
        .unwrap_err();
    assert!(quick.elapsed() < Duration::from_millis(500));
    assert_eq!(third, second);
    assert_eq!(fx.events("start").len(), 3);
    assert!(engine.status()[0]
        .state
        .starts_with("failed: server fx crashed"));
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn b24_server_closing_its_pipes_is_treated_as_dead_and_killed() {
    let fx = Fx::new(
        "b24-epipe",
        json!({"onStdinEof": "keepRunning", "rules": [{"method": "textDocument/definition", "run": 1,
            "actions": [{"closeStdin": true}, {"closeStdout": true}]}]}),
    );
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let first_pid = engine.status()[0].pid.unwrap();
    let started = Instant::now();
    let location = engine
        .request(
            server_id,
            "textDocument/definition",
            position(&uri, 0, 5),
            Duration::from_secs(10),
        )
        .expect("retried on the restarted server");
    assert_eq!(
        location["range"]["start"],
        json!({"line": 0, "character": 4})
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(!pid_alive(first_pid), "the silent process was killed");
    assert_eq!(engine.status()[0].restarts, 1);
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn b20_startup_failure_is_reported_at_once_without_restarts() {
    let fx = Fx::new(
        "b20",
        json!({"startup": [{"stderr": "error: Unknown binary 'lspc-fixture'\n"}, {"exit": 1}]}),
    );
    let (status, stdout, stderr, elapsed) = fx.check(&["a.fx"]);
    assert_eq!(status, 3, "{stdout}{stderr}");
    assert!(
        stdout.contains("server fx failed to start: exited (exit 1) before answering initialize: error: Unknown binary 'lspc-fixture'")
            || stderr.contains("server fx failed to start: exited (exit 1) before answering initialize: error: Unknown binary 'lspc-fixture'"),
        "{stdout}{stderr}"
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(fx.events("start").len(), 1, "no respawn loop");
    fx.assert_no_server_left();
}

/// A server that fails its start with its cause above a backtrace (rustup's proxy with
/// `RUST_BACKTRACE=1` when the rust-analyzer component is missing) is reported by its cause, not
/// by the backtrace's last frame.
#[test]
fn b20_startup_failure_names_the_cause_above_a_backtrace() {
    let mut stderr = String::from(
        "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.\n\nStack backtrace:\n",
    );
    for frame in 0..14 {
        stderr.push_str(&format!("  {frame:>2}: rustup::frame{frame}\n"));
    }
    stderr.push_str("  13: __libc_start_call_main\n             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16\n  14: <unknown>\n");
    let fx = Fx::new(
        "b20bt",
        json!({"startup": [{"stderr": stderr}, {"exit": 1}]}),
    );
    let (status, stdout, stderr, _) = fx.check(&["a.fx"]);
    assert_eq!(status, 3, "{stdout}{stderr}");
    let expected = "server fx failed to start: exited (exit 1) before answering initialize: error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.";
    assert!(
        stdout.contains(expected) || stderr.contains(expected),
        "{stdout}{stderr}"
    );
    fx.assert_no_server_left();
}

// ----- B21: timeouts and hangs ---------------------------------------------------------------

#[test]
fn b21_timeout_cancels_and_ignores_the_late_reply() {
    let fx = Fx::new(
        "b21",
        json!({"rules": [
            {"method": "textDocument/references", "actions": [{"noReply": true}]},
            {"method": "textDocument/hover", "nth": 1, "actions": [{"after": 1500, "actions": [{"default": true}]}]}
        ]}),
    );
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let started = Instant::now();
    let error = engine
        .request(
            server_id,
            "textDocument/references",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}, "context": {"includeDeclaration": true}}),
            Duration::from_secs(2),
        )
        .unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(
        error.to_string(),
        "textDocument/references timed out after 2 s (server fx)"
    );
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    // The late hover reply (1.5 s) arrives after its 500 ms deadline.
    let late = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_millis(500),
        )
        .unwrap_err();
    assert!(matches!(late, EngineError::Timeout { .. }), "{late:?}");
    std::thread::sleep(Duration::from_millis(1500));
    // The next hover gets its own answer (line 1 word), not the late one.
    let hover = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 1, 1),
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!(hover["contents"]["value"], "**ERROR** at 1:1", "{hover}");
    // Both expired requests were cancelled, with their own ids.
    let cancels: Vec<Value> = fx
        .received("$/cancelRequest")
        .into_iter()
        .map(|message| message["params"]["id"].clone())
        .collect();
    let references_id = fx.received("textDocument/references")[0]["id"].clone();
    let hover_id = fx.received("textDocument/hover")[0]["id"].clone();
    assert_eq!(cancels, vec![references_id, hover_id]);
    assert_eq!(engine.status()[0].restarts, 0);
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn b21_hung_server_is_killed_and_restarted_after_three_missed_deadlines() {
    let fx = Fx::new(
        "b21-hung",
        json!({"rules": [{"method": "textDocument/hover", "run": 1, "actions": [{"hang": true}]}]}),
    );
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let hover = || {
        engine.request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_millis(400),
        )
    };
    let first_pid = engine.status()[0].pid.unwrap();
    for _ in 0..3 {
        assert!(matches!(hover(), Err(EngineError::Timeout { .. })));
    }
    wait_until(
        "the hung process to be killed",
        Duration::from_secs(5),
        || !pid_alive(first_pid),
    );
    // The next call waits for the restart (500 ms backoff) and works.
    let answer = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_secs(10),
        )
        .unwrap();
    assert_eq!(answer["contents"]["value"], "**main** at 0:5");
    let status = &engine.status()[0];
    assert_eq!(status.restarts, 1);
    assert_eq!(fx.events("start").len(), 2);
    engine.shutdown();
    fx.assert_no_server_left();
}

// ----- B06: garbage ------------------------------------------------------------------------------

#[test]
fn b06_garbage_on_stdout_costs_nothing_and_never_restarts() {
    let fx = Fx::new(
        "b06",
        serde_json::from_str(include_str!("../../fixtures/scenarios/garbage.json")).unwrap(),
    );
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let mut answers = Vec::new();
    for _ in 0..4 {
        let hover = engine
            .request(
                server_id,
                "textDocument/hover",
                position(&uri, 0, 5),
                Duration::from_secs(5),
            )
            .expect("hover after garbage");
        answers.push(
            hover["contents"]["value"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    assert_eq!(
        answers,
        [
            "**main** at 0:5",
            "**main** at 0:5",
            "**main** at 0:5",
            "headers reordered"
        ]
    );
    let status = &engine.status()[0];
    assert_eq!((status.restarts, status.state.as_str()), (0, "running"));
    assert_eq!(fx.events("start").len(), 1);
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn b06e_headers_in_any_order_and_case() {
    let fx = Fx::new(
        "b06e",
        json!({"headerTemplate": "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: {len}\r\n\r\n"}),
    );
    let (status, stdout, _, elapsed) = fx.check(&["a.fx"]);
    assert_eq!(status, 1);
    assert_eq!(
        stdout.lines().next(),
        Some("a.fx:2:1: error: bad thing [fixture FX1]")
    );
    assert!(elapsed < Duration::from_secs(10));
    fx.assert_no_server_left();
}

// ----- B05 and floods ------------------------------------------------------------------------

#[test]
fn b05_stderr_flood_never_blocks_300_hovers() {
    let fx = Fx::new(
        "b05",
        serde_json::from_str(include_str!("../../fixtures/scenarios/stderr_flood.json")).unwrap(),
    );
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let started = Instant::now();
    for index in 0..300 {
        let hover = engine
            .request(
                server_id,
                "textDocument/hover",
                position(&uri, 0, 5),
                Duration::from_secs(10),
            )
            .unwrap_or_else(|error| panic!("hover {index}: {error}"));
        assert_eq!(hover["contents"]["value"], "**main** at 0:5");
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // lspc keeps only the last 64 KiB of stderr.
    assert!(engine.status()[0].stderr_tail.len() <= 64 * 1024);
    engine.shutdown();
    fx.assert_no_server_left();
}

#[test]
fn publish_flood_keeps_the_latest_set_and_stays_responsive() {
    let fx = Fx::new(
        "flood",
        json!({"publishOnChange": false, "rules": [
            {"method": "textDocument/didOpen", "actions": [{"flood": {"publishCount": 100000}}]}
        ]}),
    );
    let (status, stdout, stderr, elapsed) = fx.check(&["a.fx"]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        stdout.lines().next(),
        Some("a.fx:1:1: warning: flood 99999 [fixture]"),
        "{stdout}"
    );
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    fx.assert_no_server_left();
}

#[test]
fn fifty_megabyte_response_is_received_and_the_session_goes_on() {
    let fx = Fx::new(
        "big",
        json!({"rules": [{"method": "textDocument/hover", "nth": 1, "actions": [{"bigResponse": 50_000_000}]}]}),
    );
    let engine = fx.engine(None);
    let (server_id, uri) = open_a(&fx, &engine);
    let big = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_secs(30),
        )
        .unwrap();
    assert_eq!(big.as_str().map(str::len), Some(50_000_000));
    drop(big);
    let hover = engine
        .request(
            server_id,
            "textDocument/hover",
            position(&uri, 0, 5),
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!(hover["contents"]["value"], "**main** at 0:5");
    engine.shutdown();
    fx.assert_no_server_left();
}

// ----- B25: shutdown -------------------------------------------------------------------------

fn check_shutdown_variant(name: &str, scenario: Value) {
    let fx = Fx::new(name, scenario);
    let (status, stdout, stderr, elapsed) = fx.check(&["a.fx"]);
    // The exit status reflects the diagnostics, not the shutdown trouble.
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().next(),
        Some("a.fx:2:1: error: bad thing [fixture FX1]")
    );
    assert!(elapsed < Duration::from_secs(10), "{name}: {elapsed:?}");
    fx.assert_no_server_left();
}

#[test]
fn b25a_server_ignoring_shutdown_exit_and_eof_is_killed() {
    check_shutdown_variant(
        "b25a",
        json!({"onStdinEof": "keepRunning", "ignoreSigterm": true, "rules": [
            {"method": "shutdown", "actions": [{"noReply": true}]},
            {"method": "exit", "actions": []}
        ]}),
    );
}

#[test]
fn b25b_server_exiting_on_shutdown_without_reply() {
    check_shutdown_variant(
        "b25b",
        json!({"rules": [{"method": "shutdown", "actions": [{"exit": 0}]}]}),
    );
}

#[test]
fn b25c_server_ignoring_exit() {
    check_shutdown_variant(
        "b25c",
        json!({"onStdinEof": "keepRunning", "rules": [{"method": "exit", "actions": []}]}),
    );
}

// ----- B26: orphans --------------------------------------------------------------------------

fn orphan_scenario() -> Value {
    json!({"onStdinEof": "keepRunning", "ignoreSigterm": true, "publishOnChange": false,
           "startup": [{"spawnGrandchild": ["sleep", "1000"]}]})
}

fn grandchild_pid(fx: &Fx) -> u32 {
    let mut pid = 0;
    wait_until("the grandchild", Duration::from_secs(10), || {
        pid = fx
            .events("grandchild")
            .first()
            .and_then(|event| event["child_pid"].as_u64())
            .unwrap_or(0) as u32;
        pid != 0
    });
    pid
}

#[test]
fn b26_normal_end_kills_the_server_and_its_grandchild() {
    let fx = Fx::new("b26-normal", orphan_scenario());
    let (status, stdout, stderr, elapsed) = fx.check(&["--timeout", "1", "a.fx"]);
    assert_eq!(status, 3, "no diagnostics settled: {stdout}{stderr}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    let grandchild = grandchild_pid(&fx);
    wait_until("the grandchild to die", Duration::from_secs(5), || {
        !pid_alive(grandchild)
    });
    fx.assert_no_server_left();
}

fn signalled_lspc_leaves_nothing(name: &str, signal: i32) {
    let fx = Fx::new(name, orphan_scenario());
    let mut lspc = Command::new(LSPC)
        .current_dir(&fx.dir)
        .args(["--no-builtin", "--root"])
        .arg(&fx.dir)
        .args(["--config", "cfg.json", "check", "--timeout", "60", "a.fx"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let grandchild = grandchild_pid(&fx);
    wait_until("didOpen", Duration::from_secs(10), || {
        !fx.received("textDocument/didOpen").is_empty()
    });
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(lspc.id() as i32, signal) };
    let _ = lspc.wait();
    wait_until("the grandchild to die", Duration::from_secs(5), || {
        !pid_alive(grandchild)
    });
    fx.assert_no_server_left();
}

#[test]
fn b26_sigterm_of_lspc_kills_the_server_tree() {
    signalled_lspc_leaves_nothing("b26-term", libc::SIGTERM);
}

#[test]
fn b26_sigkill_of_lspc_kills_the_server_tree() {
    signalled_lspc_leaves_nothing("b26-kill", libc::SIGKILL);
}

// ----- files -------------------------------------------------------------------------------

#[test]
fn large_binary_and_non_utf8_files_are_refused_one_by_one() {
    let fx = Fx::new("files", json!({}));
    fs::write(fx.path("big.fx"), "x".repeat(2000)).unwrap();
    fs::write(fx.path("binary.fx"), b"abc\0def").unwrap();
    fs::write(fx.path("latin1.fx"), b"caf\xe9\n").unwrap();
    let (status, stdout, stderr, elapsed) = fx.check(&[
        "--format",
        "json",
        "big.fx",
        "binary.fx",
        "latin1.fx",
        "a.fx",
    ]);
    assert!(elapsed < Duration::from_secs(10), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    // Without --max-file-size the 2000-byte file is fine; the other two are refused, each with
    // its reason, and a.fx is still checked. Files named on the command line that cannot be
    // checked make the status 2 (a usage problem, not a server failure).
    assert_eq!(status, 2, "{stdout}{stderr}");
    let states: Vec<(String, String, String)> = report["files"]
        .as_array()
        .unwrap_or_else(|| panic!("{stdout}"))
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap_or_default().to_owned(),
                file["state"].as_str().unwrap_or_default().to_owned(),
                file["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .rsplit(": ")
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    // In path order, as `lspc check` lists them.
    let expected = [
        ("a.fx", "diagnostics", ""),
        ("big.fx", "clean", ""),
        (
            "binary.fx",
            "error",
            "file looks binary (it holds NUL bytes)",
        ),
        ("latin1.fx", "error", "file is not valid UTF-8"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(path, state, reason)| (path.to_string(), state.to_string(), reason.to_string()))
        .collect();
    assert_eq!(states, expected, "{stdout}");
    assert!(stdout.contains("bad thing"), "{stdout}");
    // With --max-file-size 1000 the big file is refused too, and a.fx still works.
    let output = Command::new(LSPC)
        .current_dir(&fx.dir)
        .args(["--no-builtin", "--max-file-size", "1000", "--root"])
        .arg(&fx.dir)
        .args(["--config", "cfg.json", "check", "big.fx", "a.fx"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("big.fx: error: cannot read"), "{stderr}");
    assert!(
        stdout.contains("a.fx:2:1: error: bad thing [fixture FX1]"),
        "{stdout}"
    );
    fx.assert_no_server_left();
}

// ----- duplicates ----------------------------------------------------------------------------

#[test]
fn second_lspc_on_the_same_workspace_warns_about_duplicate_servers() {
    let fx = Fx::new("dup", json!({"publishOnChange": false}));
    let mut first = Command::new(LSPC)
        .current_dir(&fx.dir)
        .args(["--no-builtin", "--root"])
        .arg(&fx.dir)
        .args(["--config", "cfg.json", "check", "--timeout", "20", "a.fx"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the first server", Duration::from_secs(10), || {
        !fx.received("initialized").is_empty()
    });
    let (_, _, stderr, _) = fx.check(&["--timeout", "1", "a.fx"]);
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    let _ = first.wait();
    assert!(
        stderr.contains(&format!(
            "another lspc already runs fx for {}: lspc pid {}",
            fx.dir.display(),
            first.id()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("each lspc starts its own servers"),
        "{stderr}"
    );
    fx.assert_no_server_left();
}

/// A new user's trial on jquense/yup: with tsserver killed (by hand, or the kernel's out-of-memory
/// killer) behind a running typescript-language-server, every answer became "nothing found":
/// `references` an empty list (exit 1), hover `null`, a rename "point at an identifier", and the
/// server was never restarted. typescript-language-server keeps running and logs
/// `[tsserver] Exited. Code: null. Signal: SIGKILL`; lspc now takes that as the server's crash:
/// restarted (crash policy) and the next questions answered.
#[test]
fn a_killed_tsserver_is_a_crash_of_typescript_language_server() {
    require_program!("typescript-language-server");
    if skip_in_session_mode("the servers run below the session, not the batch, and log there") {
        return;
    }
    let hover = json!({"id": 1, "op": "hover", "file": "a.ts", "line": 4, "symbol": "greet"});
    let expected = "function greet(name: string): string";
    let (_workspace, mut session) = warm_typescript_batch(
        "tsserver-killed",
        &[(
            "a.ts",
            "export function greet(name: string): string {\n  return \"hi \" + name;\n}\nexport const x = greet(\"a\");\n",
        )],
        &hover,
        expected,
    );
    kill_below(session.pid(), "tsserver.js");
    // typescript-language-server's log line may come a moment after the kill.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let after = session.ask(hover);
    assert_eq!(after["result"]["text"], expected, "{after}");
    let references = session.ask(json!({
        "id": 2, "op": "references", "file": "a.ts", "line": 1, "symbol": "greet",
    }));
    assert_eq!(
        references["result"]["locations"][0]["lineText"], "export const x = greet(\"a\");",
        "{references}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "server typescript crashed (its tsserver ended (Code: null. Signal: SIGKILL)); restarting in"
        ),
        "{stderr}"
    );
}

/// helper-75: typescript-language-server itself killed, then a hover on a file it had already
/// answered about. The new process's readiness wait took tsserver's answers to the previous
/// process (lspc kept them), and the new server, not yet past its first diagnostics event,
/// answered from its syntax server: `import greet`.
#[test]
fn a_killed_typescript_language_server_answers_a_known_file_only_once_ready_again() {
    require_program!("typescript-language-server");
    if skip_in_session_mode("the servers run below the session, not the batch") {
        return;
    }
    let hover = json!({"id": 1, "op": "hover", "file": "a.ts", "line": 2, "symbol": "greet"});
    let expected = "(alias) greet(name: string): string\nimport greet\ngreets";
    let (_workspace, mut session) = warm_typescript_batch(
        "tsls-killed",
        &[
            (
                "b.ts",
                "/** greets */\nexport function greet(name: string): string {\n  return \"hi \" + name;\n}\n",
            ),
            ("a.ts", "import { greet } from './b';\nexport const x = greet(\"a\");\n"),
        ],
        &hover,
        expected,
    );
    kill_below(session.pid(), "typescript-language-server");
    let after = session.ask(hover);
    assert_eq!(after["result"]["text"], expected, "{after}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// `lspc batch` (30 s timeout) on a strict TypeScript workspace of `files` with the built-in
/// typescript-language-server entry, `hover` asked and answered with `expected`.
fn warm_typescript_batch(
    name: &str,
    files: &[(&str, &str)],
    hover: &Value,
    expected: &str,
) -> (Workspace, BatchSession) {
    let workspace = Workspace::new(name);
    workspace.file(
        "tsconfig.json",
        "{ \"compilerOptions\": { \"strict\": true, \"noEmit\": true } }\n",
    );
    for (path, text) in files {
        workspace.file(path, text);
    }
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let mut session = BatchSession::start(&workspace, &config, 30);
    let before = session.ask(hover.clone());
    assert_eq!(before["result"]["text"], expected, "{before}");
    (workspace, session)
}

/// SIGKILLs every process below `ancestor` whose command line has `needle` (at least one).
fn kill_below(ancestor: u32, needle: &str) {
    let victims = descendants_matching(ancestor, needle);
    assert!(!victims.is_empty(), "no {needle} below lspc");
    for pid in &victims {
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
}

/// A question in flight when its server crashes is asked again on the new process only once
/// that process has analysed the question's document (helper-74: a hover sent as rust-analyzer
/// was killed was sent again right after the new process opened the file, and answered `null`,
/// "no hover information found", while it loaded the workspace). The fixture publishes 500 ms
/// after each open; on the second process the hover must come after that publish, and get the
/// answer the first process gave.
#[test]
fn a_question_in_flight_at_a_crash_is_asked_again_after_its_documents_analysis() {
    let mut workspace = Workspace::new("crash-retry-waits");
    workspace.file("a.fx", "total = 1\nprint(total)\n");
    let scenario = json!({
        "publishDelayMs": 500,
        "recordPublishes": true,
        "rules": [{"method": "textDocument/hover", "run": 1, "nth": 2,
                   "actions": [{"exit": 134}]}],
    });
    let config = workspace.fixture_config(&[("fx", &[".fx"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 30);
    let hover = json!({"id": 1, "op": "hover", "file": "a.fx", "line": 2, "symbol": "total"});
    let before = session.ask(hover.clone());
    assert_eq!(before["result"]["text"], "total at 1:6", "{before}");
    // The first process exits on this hover; the second one answers it.
    let after = session.ask(hover);
    assert_eq!(after["result"], before["result"], "{after}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let transcript = workspace.transcript("fx");
    let second_run: Vec<&Value> = transcript
        .iter()
        .skip_while(|entry| entry["event"] != "start" || entry["run"] != 2)
        .collect();
    let at = |wanted: &dyn Fn(&Value) -> bool| second_run.iter().position(|entry| wanted(entry));
    let opened =
        at(&|entry| entry.pointer("/message/method") == Some(&json!("textDocument/didOpen")));
    let published = at(&|entry| entry["event"] == "published");
    let hovered =
        at(&|entry| entry.pointer("/message/method") == Some(&json!("textDocument/hover")));
    assert!(
        opened.is_some() && opened < published && published < hovered,
        "the second process's open, publish, then hover: {opened:?} {published:?} \
         {hovered:?}\n{second_run:#?}"
    );
}

/// The same on the real server: rust-analyzer 0.0.330 killed, then a hover asked at once
/// (before or after lspc sees the crash, it is answered by the new process once that has
/// loaded the crate) gets the hover the first process gave.
#[test]
fn a_hover_asked_as_rust_analyzer_is_killed_is_answered_by_the_loaded_new_process() {
    let Some(program) = crate::check::rust_analyzer_0_0_330() else {
        return;
    };
    if skip_in_session_mode("the servers run below the session, not the batch") {
        return;
    }
    let workspace = Workspace::copy_of("rust");
    let config = workspace.config(json!({
        "rust-analyzer": {"command": program, "extensionToLanguage": {".rs": "rust"}}
    }));
    let mut session = BatchSession::start(&workspace, &config, 120);
    let hover =
        json!({"id": 1, "op": "hover", "file": "src/lib.rs", "line": 10, "symbol": "total"});
    let before = session.ask(hover.clone());
    let text = before["result"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.contains("pub fn total(items: &[Item]) -> u32")
            && text.contains("Adds up the counts."),
        "{before}"
    );
    let servers = descendants_matching(session.pid(), "rust-analyzer");
    assert!(!servers.is_empty(), "no rust-analyzer below lspc");
    for pid in &servers {
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    let after = session.ask(hover);
    assert_eq!(after["result"], before["result"], "{after}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("server rust-analyzer crashed (signal 9)"),
        "{stderr}"
    );
}
