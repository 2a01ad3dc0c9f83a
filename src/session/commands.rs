//! `lspc session start|status|stop`: starting the workspace's session, listing this user's
//! sessions and stopping one or all of them.
//!
//! Exit statuses: 0 done; 1 `stop` found no session to stop; 3 a session could not be started,
//! reached or stopped.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use super::client::{self, AttachError, ConnectError};
use super::paths::{self, SessionPaths};
use super::wire::{SessionInfo, WireOp};
use super::SessionMode;
use crate::engine::EngineOptions;
use crate::exit::{EXIT_FOUND, EXIT_OK, EXIT_SERVER};
use crate::output::plural;

/// `lspc session ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionCommand {
    /// `start [--idle DURATION]`: `None` is `LSPC_SESSION_IDLE` or 15 minutes.
    Start { idle: Option<Duration> },
    /// `status [--format json]`: with `json`, one JSON array of [`SessionInfo`] objects, each
    /// with its `socket`.
    Status { json: bool },
    /// `stop [--all]`.
    Stop { all: bool },
}

/// How long `stop` waits for a session process to exit after it said it is stopping.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs a session command for the workspace `options` describe; returns the exit status.
pub fn run(options: EngineOptions, command: &SessionCommand) -> i32 {
    match command {
        SessionCommand::Start { idle } if options.session == SessionMode::Serve => {
            super::server::serve(options, idle.unwrap_or_else(super::idle_from_env))
        }
        SessionCommand::Start { .. } => start(&options),
        SessionCommand::Status { json } => status(*json),
        SessionCommand::Stop { all } => stop(&options, *all),
    }
}

fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

fn start(options: &EngineOptions) -> i32 {
    match client::find_or_start(options, true) {
        Ok(connected) => {
            let Ok(Some(dir)) = paths::runtime_dir(false) else {
                return EXIT_SERVER;
            };
            let paths = SessionPaths::new(&dir, &connected.hello.key);
            print(&format!("{}\n", paths.socket.display()));
            EXIT_OK
        }
        Err(AttachError::NotRunning) => EXIT_SERVER,
        Err(AttachError::Failed(message) | AttachError::ConfigNotApplied(message)) => {
            eprintln!("lspc: cannot start the session: {message}");
            EXIT_SERVER
        }
    }
}

fn mib(kib: Option<u64>) -> String {
    match kib {
        Some(kib) => format!("{:.1} MiB", kib as f64 / 1024.0),
        None => "-".to_owned(),
    }
}

/// A server instance's label: its name, and its project root for a per-project instance.
fn instance_label(server: &super::wire::SessionServer) -> String {
    match &server.project {
        Some(project) => format!("{} [{project}]", server.name),
        None => server.name.clone(),
    }
}

/// `12 s ago`, `3 min ago`, `2 h ago` for a time in milliseconds since the Unix epoch.
fn ago(unix_ms: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(unix_ms);
    let seconds = now.saturating_sub(unix_ms) / 1000;
    match seconds {
        0..=119 => format!("{seconds} s ago"),
        120..=7199 => format!("{} min ago", seconds / 60),
        _ => format!("{} h ago", seconds / 3600),
    }
}

/// The `config` and `reload` lines of one session's `info`.
fn render_config(config: &super::wire::ConfigState) -> String {
    let mut text = String::new();
    if config.sources.is_empty() {
        text.push_str("  config  (not from files: never reloaded)\n");
    }
    for source in &config.sources {
        text.push_str(&format!("  config  {}\n", source.display()));
    }
    let Some(last) = &config.last_reload else {
        return text;
    };
    let line = match &last.error {
        Some(error) => format!(
            "failed {}, serving the previous configuration: {error}",
            ago(last.unix_ms)
        ),
        None => {
            let names = |names: &[String]| match names {
                [] => "none".to_owned(),
                names => names.join(", "),
            };
            format!(
                "{}: restarted {}; removed {}; added {}",
                ago(last.unix_ms),
                names(&last.restarted),
                names(&last.removed),
                names(&last.added)
            )
        }
    };
    text.push_str(&format!("  reload  {line}\n"));
    text
}

/// The human form of one session's `info`.
fn render_info(paths: &SessionPaths, info: &SessionInfo) -> String {
    let mut text = format!(
        "{}  (pid {}, up {} s, {}, {})\n",
        info.root.display(),
        info.pid,
        info.uptime_ms / 1000,
        plural(info.clients, "client", "clients"),
        plural(
            info.open_documents,
            "document open on a server",
            "documents open on servers"
        ),
    );
    text.push_str(&format!("  socket  {}\n", paths.socket.display()));
    text.push_str(&format!("  log     {}\n", info.log.display()));
    text.push_str(&format!("  memory  {} (lspc)\n", mib(info.rss_kib)));
    text.push_str(&render_config(&info.config));
    let width = info
        .servers
        .iter()
        .map(|server| instance_label(server).len())
        .max()
        .unwrap_or(0);
    for server in &info.servers {
        let pid = server
            .pid
            .map(|pid| format!("  pid {pid}  {}", mib(server.rss_kib)))
            .unwrap_or_default();
        text.push_str(&format!(
            "  server  {:width$}  {}{pid}\n",
            instance_label(server),
            server.state
        ));
    }
    text
}

fn status(json: bool) -> i32 {
    let dir = match paths::runtime_dir(false) {
        Ok(Some(dir)) => dir,
        Ok(None) => {
            print(if json { "[]\n" } else { "no sessions\n" });
            return EXIT_OK;
        }
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_SERVER;
        }
    };
    let mut text = String::new();
    let mut infos: Vec<serde_json::Value> = Vec::new();
    let mut status = EXIT_OK;
    for paths in SessionPaths::list(&dir) {
        let connected = match client::connect_or_clean(&paths) {
            Ok(connected) => connected,
            Err(ConnectError::NotRunning | ConnectError::Stale) => continue,
            Err(ConnectError::Unusable(message)) => {
                eprintln!("lspc: {message}");
                status = EXIT_SERVER;
                continue;
            }
        };
        match client::session_request(connected, WireOp::Info)
            .and_then(|value| serde_json::from_value(value).map_err(|error| error.to_string()))
        {
            Ok(info) => {
                text.push_str(&render_info(&paths, &info));
                let mut value = serde_json::to_value(&info).unwrap_or_default();
                if let serde_json::Value::Object(object) = &mut value {
                    object.insert("socket".to_owned(), serde_json::json!(paths.socket));
                }
                infos.push(value);
            }
            Err(message) => {
                eprintln!("lspc: {message}");
                status = EXIT_SERVER;
            }
        }
    }
    if json {
        print(&format!("{}\n", serde_json::Value::Array(infos)));
        return status;
    }
    if text.is_empty() {
        text.push_str("no sessions\n");
    }
    print(&text);
    status
}

/// Asks one session to stop, if it serves `root` (any root when `None`; another root's session
/// is left running, `Ok(None)`), and waits until its process is gone.
fn stop_one_serving(paths: &SessionPaths, root: Option<&Path>) -> Result<Option<String>, String> {
    let connected = match client::connect_or_clean(paths) {
        Ok(connected) => connected,
        Err(ConnectError::NotRunning | ConnectError::Stale) => return Ok(None),
        Err(ConnectError::Unusable(message)) => return Err(message),
    };
    let hello = connected.hello.clone();
    if root.is_some_and(|root| hello.root != root) {
        return Ok(None);
    }
    // A session that ended without answering (it was ending already: its idle bound, its root
    // removed) is as stopped as one that answered: its process being gone is what counts. One
    // still running when the wait ends is reported with the lost answer's message.
    let unanswered = client::session_request(connected, WireOp::Stop).err();
    let deadline = Instant::now() + STOP_TIMEOUT;
    while client::pid_alive(hello.pid) {
        if Instant::now() >= deadline {
            return Err(unanswered.unwrap_or_else(|| {
                format!(
                    "the session for {} (pid {}) did not stop within {} s; see its log {}",
                    hello.root.display(),
                    hello.pid,
                    STOP_TIMEOUT.as_secs(),
                    hello.log.display()
                )
            }));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Some(format!(
        "stopped the session for {} (pid {})\n",
        hello.root.display(),
        hello.pid
    )))
}

/// Stops each of `candidates` that serves `root` (every one when `None`), appending a line per
/// stopped session to `text`; the exit status (`EXIT_SERVER` when one could not be stopped).
fn stop_each(candidates: &[SessionPaths], root: Option<&Path>, text: &mut String) -> i32 {
    let mut status = EXIT_OK;
    for paths in candidates {
        match stop_one_serving(paths, root) {
            Ok(Some(line)) => text.push_str(&line),
            Ok(None) => {}
            Err(message) => {
                eprintln!("lspc: {message}");
                status = EXIT_SERVER;
            }
        }
    }
    status
}

fn stop(options: &EngineOptions, all: bool) -> i32 {
    let root = crate::uri::canonical(&options.config.root);
    let dir = match paths::runtime_dir(false) {
        Ok(Some(dir)) => dir,
        Ok(None) => {
            eprintln!("lspc: no session runs for {}", root.display());
            return EXIT_FOUND;
        }
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_SERVER;
        }
    };
    let targets = if all {
        SessionPaths::list(&dir)
    } else {
        // The workspace's session, and the one keyed by this command's servers if its
        // configuration resolves differently here (`client::find_or_start`).
        let mut exact = options.clone();
        exact.config_sources = None;
        let mut keys = vec![paths::session_key(options), paths::session_key(&exact)];
        keys.dedup();
        keys.iter()
            .map(|key| SessionPaths::new(&dir, key))
            .collect()
    };
    let mut text = String::new();
    let mut status = stop_each(&targets, None, &mut text);
    if !all && text.is_empty() && status == EXIT_OK {
        // No session has this command's key, but the key hashes the environment too: a session
        // started from another shell (another exported variable, another `PATH`) serves the same
        // workspace, `session status` lists it for this root, and "stop the workspace's session"
        // means it. Stop the sessions serving this root instead of saying none runs.
        let others: Vec<SessionPaths> = SessionPaths::list(&dir)
            .into_iter()
            .filter(|paths| !targets.contains(paths))
            .collect();
        status = stop_each(&others, Some(&root), &mut text);
    }
    if text.is_empty() && status == EXIT_OK {
        if all {
            print("no sessions\n");
            return EXIT_OK;
        }
        eprintln!("lspc: no session runs for {}", root.display());
        return EXIT_FOUND;
    }
    print(&text);
    status
}
