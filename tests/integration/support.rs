//! Test support: temporary workspaces, a `TestCommand` that runs `lspc` with a timeout and prints
//! everything (command, status, stdout, stderr, fixture transcripts) when an assertion fails, and
//! helpers to find leftover processes in `/proc`.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wait_timeout::ChildExt;

/// The `lspc` binary under test.
pub fn lspc_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lspc"))
}

/// The scripted fixture language server.
pub fn fixture_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lspc-fixture-server"))
}

/// `Some(path)` when `program` is on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Skip the current test (return early) when a real server is missing, saying so.
#[macro_export]
macro_rules! require_program {
    ($program:expr) => {
        if $crate::support::which($program).is_none() {
            eprintln!("skipped: {} is not installed (see .ci/run)", $program);
            return;
        }
    };
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A temporary folder removed on drop (kept when `LSPC_KEEP_TEST_DIRS=1`).
pub struct Workspace {
    pub root: PathBuf,
    transcripts: Vec<PathBuf>,
}

impl Workspace {
    /// A fresh folder named after the test; `name` may contain spaces and non-ASCII characters.
    pub fn new(name: &str) -> Workspace {
        let unique = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root = std::env::temp_dir()
            .join(format!("lspc-it-{}-{unique}", std::process::id()))
            .join(name);
        std::fs::create_dir_all(&root).unwrap();
        // A `.git` marker makes the folder the workspace root for lspc's root detection.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let root = root.canonicalize().unwrap();
        Workspace {
            root,
            transcripts: Vec::new(),
        }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Write a file (creating folders).
    pub fn file(&self, relative: &str, content: &str) -> &Workspace {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root.join(relative)).unwrap()
    }

    /// Write a `.lsp.json`-format config at `lsp.json` with one fixture server per
    /// `(name, extensions, scenario)`; returns the config path. Each server's transcript goes to
    /// `<name>.transcript.jsonl` in the workspace's parent folder (outside the root).
    pub fn fixture_config(&mut self, servers: &[(&str, &[&str], Value)]) -> PathBuf {
        let mut config = serde_json::Map::new();
        for (name, extensions, scenario) in servers {
            let scenario_path = self.scenario_path(name);
            std::fs::write(
                &scenario_path,
                serde_json::to_string_pretty(scenario).unwrap(),
            )
            .unwrap();
            let transcript = self.transcript_path(name);
            self.transcripts.push(transcript.clone());
            let extension_map: serde_json::Map<String, Value> = extensions
                .iter()
                .map(|extension| {
                    (
                        extension.to_string(),
                        json!(extension.trim_start_matches('.')),
                    )
                })
                .collect();
            config.insert(
                name.to_string(),
                json!({
                    "command": fixture_bin(),
                    "args": ["--scenario", scenario_path, "--transcript", transcript],
                    "extensionToLanguage": extension_map,
                }),
            );
        }
        let path = self.root.parent().unwrap().join("lsp.json");
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&Value::Object(config)).unwrap(),
        )
        .unwrap();
        path
    }

    pub fn scenario_path(&self, name: &str) -> PathBuf {
        self.root
            .parent()
            .unwrap()
            .join(format!("{name}.scenario.json"))
    }

    pub fn transcript_path(&self, name: &str) -> PathBuf {
        self.root
            .parent()
            .unwrap()
            .join(format!("{name}.transcript.jsonl"))
    }

    /// The messages a fixture server received, in order (`{"t_ms", "message"}` or `{"event"}`).
    pub fn transcript(&self, name: &str) -> Vec<Value> {
        read_transcript(&self.transcript_path(name))
    }

    /// A `lspc` command rooted in this workspace.
    /// Runs `lspc --no-builtin --config CONFIG ARGS...` here (at most 120 s).
    pub fn run_with(&self, config: &Path, args: &[&str]) -> Output {
        self.lspc()
            .args(["--no-builtin", "--config"])
            .arg(config)
            .args(args)
            .timeout(Duration::from_secs(120))
            .run()
    }

    pub fn lspc(&self) -> TestCommand {
        let mut command = TestCommand::new(lspc_bin());
        command.current_dir(&self.root);
        command.transcripts = self.transcripts.clone();
        command
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if std::env::var_os("LSPC_KEEP_TEST_DIRS").is_none() && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(self.root.parent().unwrap());
        }
    }
}

/// Makes `entry` of the fixture configuration `config` run the fixture server under the
/// program name `program` (a symlink in a `bin` folder beside it), so lspc treats it as that
/// server (`pyright-langserver`, `clangd`).
pub fn run_fixture_as(config: &Path, entry: &str, program: &str) {
    let link = config.with_file_name("bin").join(program);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(fixture_bin(), &link).unwrap();
    let mut entries: Value = serde_json::from_slice(&std::fs::read(config).unwrap()).unwrap();
    entries[entry]["command"] = serde_json::json!(link);
    std::fs::write(config, entries.to_string()).unwrap();
}

pub fn read_transcript(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Methods received, in order, from a transcript.
pub fn methods(transcript: &[Value]) -> Vec<String> {
    transcript
        .iter()
        .filter_map(|entry| entry.pointer("/message/method").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// A command under test with a timeout; every assertion failure prints the whole story.
pub struct TestCommand {
    command: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    transcripts: Vec<PathBuf>,
}

/// What a finished command produced.
pub struct Output {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    story: String,
}

/// Whether this test run drives every command through a warm session
/// (`LSPC_TEST_SESSION=always`; `.ci/run` runs the query, check and edit suites this way too).
pub fn session_mode() -> bool {
    std::env::var("LSPC_TEST_SESSION").as_deref() == Ok("always")
}

/// The session directory of this test process (`XDG_RUNTIME_DIR` of every command it runs), so
/// tests never meet the developer's own sessions, and each other's only by design.
/// The first call of a test process also removes the directories of earlier test processes
/// that are gone (nothing else removes them: a test binary has no end-of-run hook), except one
/// that still holds a session socket (a session outlives its test process by up to its idle time;
/// `.ci/run` looks for those sockets).
pub fn test_runtime_dir() -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(sweep_test_runtime_dirs);
    let dir = std::env::temp_dir().join(format!("lspc-it-rt-{}", std::process::id()));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    dir
}

/// Removes `<TMPDIR>/lspc-it-rt-<pid>` of test processes that no longer run and hold no socket.
fn sweep_test_runtime_dirs() {
    fn holds_socket(dir: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt;
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                let Ok(kind) = entry.file_type() else {
                    return false;
                };
                kind.is_socket() || (kind.is_dir() && holds_socket(&entry.path()))
            })
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix("lspc-it-rt-"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !pid_alive(pid) && !holds_socket(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// True (after saying why on stderr) when a test that asserts in-process behaviour runs in
/// [`session_mode`]; the test then returns.
pub fn skip_in_session_mode(why: &str) -> bool {
    if session_mode() {
        eprintln!("skipped in session mode: {why}");
    }
    session_mode()
}

/// Points an `lspc` command at this process's session directory and, in [`session_mode`], makes
/// it run through a session (`LSPC_SESSION=always`). Every way the tests start lspc calls this.
pub fn session_env(command: &mut Command) {
    command.env("XDG_RUNTIME_DIR", test_runtime_dir());
    if session_mode() {
        // A session ends within a second of its workspace being removed; the idle bound only
        // covers roots that outlive the test (the repository's fixture folders).
        command.env("LSPC_SESSION", "always");
        command.env("LSPC_SESSION_IDLE", "20s");
    } else {
        command.env_remove("LSPC_SESSION");
    }
}

impl TestCommand {
    pub fn new(program: impl AsRef<std::ffi::OsStr>) -> TestCommand {
        let mut command = Command::new(program);
        command.env("RUST_LOG", "lspc=debug");
        session_env(&mut command);
        TestCommand {
            command,
            stdin: None,
            timeout: Duration::from_secs(60),
            transcripts: Vec::new(),
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<std::ffi::OsStr>) -> &mut TestCommand {
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.command.args(args);
        self
    }

    pub fn env(&mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> &mut TestCommand {
        self.command.env(key, value);
        self
    }

    pub fn current_dir(&mut self, dir: &Path) -> &mut TestCommand {
        self.command.current_dir(dir);
        self
    }

    pub fn stdin(&mut self, input: impl Into<Vec<u8>>) -> &mut TestCommand {
        self.stdin = Some(input.into());
        self
    }

    pub fn timeout(&mut self, timeout: Duration) -> &mut TestCommand {
        self.timeout = timeout;
        self
    }

    /// Run to completion (killed after the timeout, which fails the test).
    pub fn run(&mut self) -> Output {
        let started = Instant::now();
        self.command.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        self.command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.command.spawn().expect("spawning lspc");
        let stdin_thread = self.stdin.take().map(|input| {
            let mut stdin = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = stdin.write_all(&input);
            })
        });
        let stdout_thread = read_all(child.stdout.take().unwrap());
        let stderr_thread = read_all(child.stderr.take().unwrap());
        let status = match child.wait_timeout(self.timeout).unwrap() {
            Some(status) => status.code(),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                None
            }
        };
        if let Some(thread) = stdin_thread {
            let _ = thread.join();
        }
        let stdout = stdout_thread.join().unwrap();
        let stderr = stderr_thread.join().unwrap();
        let elapsed = started.elapsed();
        let mut story = String::new();
        let _ = writeln!(story, "command: {:?}", self.command);
        let _ = writeln!(story, "status: {status:?} after {elapsed:?}");
        let _ = writeln!(story, "--- stdout ---\n{stdout}");
        let _ = writeln!(story, "--- stderr ---\n{stderr}");
        for transcript in &self.transcripts {
            let text = std::fs::read_to_string(transcript).unwrap_or_default();
            let _ = writeln!(story, "--- transcript {} ---\n{text}", transcript.display());
        }
        let output = Output {
            status,
            stdout,
            stderr,
            elapsed,
            story,
        };
        assert!(
            status.is_some(),
            "lspc did not finish within {:?}\n{}",
            self.timeout,
            output.story
        );
        output
    }
}

fn read_all(mut reader: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The stdin of a one-shot `lspc mcp` run: `initialize` (protocol 2025-06-18, id 1),
/// `notifications/initialized`, then each `(method, params)` of `requests` with ids 2, 3, …
pub fn mcp_stdin(requests: &[(&str, Value)]) -> String {
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (id, (method, params)) in (2..).zip(requests) {
        lines.push(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// One `tools/call` of `tool` with `arguments` through `lspc --no-builtin --config CONFIG mcp`
/// in `workspace`: the answer (id 2) and the run.
pub fn mcp_tool_call(
    workspace: &Workspace,
    config: &Path,
    tool: &str,
    arguments: Value,
) -> (Value, Output) {
    let run = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(config)
        .arg("mcp")
        .stdin(mcp_stdin(&[(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )]))
        .run();
    (run.mcp_answer(2), run)
}

impl Output {
    /// The message with `id` among the JSON lines of an `lspc mcp` run's stdout; panics with
    /// the run's story when there is none.
    pub fn mcp_answer(&self, id: i64) -> Value {
        self.stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {}", self.story()))
    }

    /// Assert the exit status, printing everything on failure.
    pub fn status(&self, expected: i32) -> &Output {
        assert_eq!(
            self.status,
            Some(expected),
            "unexpected exit status\n{}",
            self.story
        );
        self
    }

    /// Assert stdout equals `expected` exactly.
    pub fn stdout_is(&self, expected: &str) -> &Output {
        assert_eq!(self.stdout, expected, "unexpected stdout\n{}", self.story);
        self
    }

    pub fn stderr_contains(&self, needle: &str) -> &Output {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.story
        );
        self
    }

    pub fn stdout_contains(&self, needle: &str) -> &Output {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{}",
            self.story
        );
        self
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON: {error}\n{}", self.story))
    }

    /// Each stdout line as JSON (`lspc batch`'s answers).
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|error| {
                    panic!("stdout line {line:?} is not JSON: {error}\n{}", self.story)
                })
            })
            .collect()
    }

    /// Fail with the whole story.
    pub fn fail(&self, why: &str) -> ! {
        panic!("{why}\n{}", self.story)
    }

    pub fn story(&self) -> &str {
        &self.story
    }
}

/// Pids of live processes whose command line contains `needle` (zombies excluded).
pub fn processes_matching(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let zombie = status
                .lines()
                .any(|line| line.starts_with("State:") && line.contains('Z'));
            cmdline.contains(needle) && !zombie
        })
        .collect()
}

/// Pids of live descendants of `ancestor` whose command line contains `needle`.
pub fn descendants_matching(ancestor: u32, needle: &str) -> Vec<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    processes_matching(needle)
        .into_iter()
        .filter(|&pid| {
            let mut current = pid;
            for _ in 0..64 {
                match parent_of(current) {
                    Some(parent) if parent == ancestor => return true,
                    Some(parent) if parent > 1 => current = parent,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// Wait up to `timeout` for no live process to match `needle`; panic listing them otherwise.
pub fn assert_no_process_within(needle: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let left = processes_matching(needle);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            panic!("processes matching {needle:?} still alive after {timeout:?}: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The repository's `fixtures/workspaces/<name>` folder.
pub fn fixture_workspace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/workspaces")
        .join(name)
}

impl Workspace {
    /// A fresh copy of `fixtures/workspaces/<name>` (so servers' caches stay out of the repo and
    /// tests do not share state). `compile_commands.json.in` templates are instantiated.
    pub fn copy_of(name: &str) -> Workspace {
        let workspace = Workspace::new(name);
        copy_dir(&fixture_workspace(name), &workspace.root);
        let template = workspace.root.join("compile_commands.json.in");
        if template.is_file() {
            let text = std::fs::read_to_string(&template).unwrap();
            let root = workspace
                .root
                .to_string_lossy()
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            std::fs::write(
                workspace.root.join("compile_commands.json"),
                text.replace("@DIR@", &root),
            )
            .unwrap();
        }
        workspace
    }

    /// Write `servers` (name -> `.lsp.json` entry) as a config file outside the root.
    pub fn config(&self, servers: Value) -> PathBuf {
        let path = self.root.parent().unwrap().join("servers.lsp.json");
        std::fs::write(&path, serde_json::to_string_pretty(&servers).unwrap()).unwrap();
        path
    }
}

/// Copy the folder `from` to `to` (made if missing), leaving out `.cache`, `compile_commands.json`
/// and `node_modules`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let name = entry.file_name();
        if name == ".cache" || name == "compile_commands.json" || name == "node_modules" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `git ARGS` in `workspace` (with a committer identity, and none of the `GIT_*`
/// variables of a hook that would point it at another repository); panics when it fails.
pub fn git(workspace: &Workspace, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(&workspace.root)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// `.lsp.json` entries for the real servers the tests use.
pub fn pyright_entry() -> Value {
    json!({"command": "pyright-langserver", "args": ["--stdio"],
           "extensionToLanguage": {".py": "python"}})
}

pub fn ruff_entry() -> Value {
    json!({"command": "ruff", "args": ["server"], "extensionToLanguage": {".py": "python"}})
}

/// A config file for bash-language-server (as `bash`, serving `.sh`) whose `PATH` is the
/// workspace's `bin` folder holding only `node`, so it finds no ShellCheck and no shfmt whatever
/// this machine has; and that folder, for stand-ins.
pub fn bash_with_only_node(workspace: &Workspace) -> (PathBuf, PathBuf) {
    let bin = workspace.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(which("node").unwrap(), bin.join("node")).unwrap();
    let config = workspace.config(json!({"bash": {
        "command": which("bash-language-server").unwrap(),
        "args": ["start"],
        "extensionToLanguage": {".sh": "shellscript"},
        "env": {"PATH": bin},
    }}));
    (config, bin)
}

pub fn clangd_entry() -> Value {
    json!({"command": "clangd", "extensionToLanguage": {".c": "c", ".h": "c"}})
}

pub fn typescript_entry() -> Value {
    json!({"command": "typescript-language-server", "args": ["--stdio"],
           "extensionToLanguage": {".ts": "typescript"}})
}

/// The stdout of `program ARGS` run in the workspace (a server's own CLI, to compare with).
pub fn tool_output(workspace: &Workspace, program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(&workspace.root)
        .output()
        .unwrap_or_else(|error| panic!("{program} cannot run: {error}"));
    String::from_utf8(output.stdout).unwrap()
}

/// `(path, state, reason)` of each file of a `--format json` report, in its order (`reason`
/// empty when the file has none).
pub fn file_states(report: &Value) -> Vec<(String, String, String)> {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap().to_owned(),
                file["state"].as_str().unwrap().to_owned(),
                file["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The diagnostics of a `--format json` report as compact tuples
/// `(path, line, column, endLine, endColumn, severity, source, code, message)` for exact asserts.
pub fn json_diagnostics(report: &Value) -> Vec<String> {
    let mut rows = Vec::new();
    for file in report["files"].as_array().unwrap() {
        for diagnostic in file["diagnostics"].as_array().unwrap() {
            rows.push(format!(
                "{}:{}:{}-{}:{} {} [{} {}] {}",
                file["path"].as_str().unwrap(),
                diagnostic["line"],
                diagnostic["column"],
                diagnostic["endLine"],
                diagnostic["endColumn"],
                diagnostic["severity"].as_str().unwrap(),
                diagnostic["source"].as_str().unwrap_or("-"),
                match &diagnostic["code"] {
                    Value::String(code) => code.clone(),
                    Value::Null => "-".to_owned(),
                    other => other.to_string(),
                },
                diagnostic["message"].as_str().unwrap()
            ));
        }
    }
    rows
}

/// A scenario from `fixtures/scenarios/<name>.json`.
pub fn scenario(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/scenarios")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Whether `pid` is alive and not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    !status
        .lines()
        .any(|line| line.starts_with("State:") && line.contains('Z'))
}

/// Events (`{"event": name, ...}`) of a transcript.
pub fn events<'a>(transcript: &'a [Value], name: &str) -> Vec<&'a Value> {
    transcript
        .iter()
        .filter(|entry| entry["event"] == name)
        .collect()
}

/// The reply lspc sent to the server request with `id`, from a transcript.
pub fn reply_to<'a>(transcript: &'a [Value], id: &Value) -> Option<&'a Value> {
    transcript
        .iter()
        .map(|entry| &entry["message"])
        .find(|message| message.get("method").is_none() && message.get("id") == Some(id))
}

/// An interactive `lspc batch` session: one request line at a time, so a test can change files
/// on disk between requests (as an agent's editor would).
pub struct BatchSession {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl BatchSession {
    /// The pid of the `lspc batch` process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Start `lspc batch --no-builtin --config CONFIG --timeout SECONDS` in the workspace.
    pub fn start(workspace: &Workspace, config: &Path, timeout_seconds: u32) -> BatchSession {
        let timeout = timeout_seconds.to_string();
        let config = config.to_string_lossy();
        BatchSession::start_with(
            workspace,
            &["--no-builtin", "--timeout", &timeout, "--config", &config],
        )
    }

    /// Start `lspc batch ARGS` in the workspace (e.g. without `--no-builtin`, to test the
    /// built-in table).
    pub fn start_with(workspace: &Workspace, args: &[&str]) -> BatchSession {
        let mut command = Command::new(lspc_bin());
        session_env(&mut command);
        let mut child = command
            .current_dir(&workspace.root)
            .env("RUST_LOG", "lspc=debug")
            .arg("batch")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning lspc batch");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = read_all(child.stderr.take().unwrap());
        BatchSession {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        }
    }

    /// Send one request and wait (at most 60 s) for its answer line.
    pub fn ask(&mut self, request: Value) -> Value {
        let line = self.ask_line(request);
        serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("bad answer line {line:?}: {error}"))
    }

    /// [`BatchSession::ask`], returning the answer line exactly as written (no newline).
    pub fn ask_line(&mut self, request: Value) -> String {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        match self.lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(_) => {
                // Its stderr says where it waited (lspc runs at `lspc=debug` here).
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = std::mem::replace(&mut self.stderr, read_all(std::io::empty()));
                let stderr = stderr.join().unwrap_or_default();
                panic!("no answer to {request} within 60 s; lspc's stderr:\n{stderr}")
            }
        }
    }

    /// Close stdin and wait for lspc to exit; returns its exit status and stderr.
    pub fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = self.child.wait_timeout(Duration::from_secs(30)).unwrap();
        if status.is_none() {
            let _ = self.child.kill();
        }
        let stderr = self.stderr.join().unwrap();
        (status.and_then(|status| status.code()), stderr)
    }
}

/// The `(line, column, severity, message)` rows of a batch `diagnostics` answer.
pub fn batch_diagnostics(answer: &Value) -> Vec<(u64, u64, String, String)> {
    answer["result"]["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnostics in {answer}"))
        .iter()
        .map(|diagnostic| {
            (
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["column"].as_u64().unwrap(),
                diagnostic["severity"].as_str().unwrap().to_owned(),
                diagnostic["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// `(line, column, severity, code, message)` of each diagnostic of a batch `diagnostics`
/// answer, for exact asserts: [`batch_diagnostics`] with each diagnostic's code.
pub fn batch_rows(answer: &Value) -> Vec<(u64, u64, String, String, String)> {
    let codes = answer["result"]["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|diagnostic| match &diagnostic["code"] {
            Value::String(code) => code.clone(),
            other => other.to_string(),
        });
    batch_diagnostics(answer)
        .into_iter()
        .zip(codes)
        .map(|((line, column, severity, message), code)| (line, column, severity, code, message))
        .collect()
}
