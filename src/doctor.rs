//! `lspc doctor`: start every server that would serve the workspace, for real, and report how
//! each behaves: found or not, found but broken (with the first meaningful line of its error),
//! the time from spawn to `initialize`'s result, the negotiated position encoding, the
//! diagnostics mode, and the time to the first settled diagnostics on one of its files.
//!
//! Invariants: each server is probed on an engine of its own, one after the other (its numbers
//! are not slowed by another server's start-up), and every engine is shut down before the report
//! is printed. A server is *needed* when the workspace holds at least one file it serves;
//! the exit status is 1 when a needed server is missing or broken, 0 otherwise. The probing
//! ([`probe_servers`]) is separate from rendering so `lspc servers` can reuse it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::{extension_key, Config, ConfigOrigin, ServerConfig};
use crate::engine::{
    DiagnosticsOutcome, EngineError, EngineHandle, EngineOptions, RestartPolicy, SettleRule,
};
use crate::install_hints::install_command;

/// What the probe found for one server.
#[derive(Debug, Clone, PartialEq)]
pub enum DoctorState {
    /// Started, initialized and (when it has diagnostics enabled) answered diagnostics.
    Working,
    /// Its command is not on PATH (or not at the configured path).
    NotFound,
    /// Found, but it failed to start, crashed, or timed out; `detail` is the first meaningful
    /// line of its error output.
    Broken { detail: String },
    /// Found, but the workspace has no file it serves, so it was not started.
    NotNeeded,
}

/// One server's row of the report. Durations are wall-clock milliseconds.
#[derive(Debug, Clone)]
pub struct ServerProbe {
    pub name: String,
    pub origin: String,
    pub command: String,
    pub resolved_command: Option<PathBuf>,
    /// Workspace files it serves.
    pub n_files: usize,
    pub state: DoctorState,
    /// The exact command that installs it, for built-ins lspc knows.
    pub install: Option<&'static str>,
    /// Spawn to `initialize` result (plus the `didOpen` of the sample file).
    pub initialize_ms: Option<u64>,
    pub position_encoding: Option<String>,
    /// `pull` (a `diagnosticProvider`, static or registered) or `push`.
    pub diagnostics_mode: Option<String>,
    /// The file the diagnostics were timed on, relative to the root.
    pub sample_file: Option<PathBuf>,
    /// From the document's sync to its settled diagnostics.
    pub first_diagnostics_ms: Option<u64>,
    pub n_diagnostics: Option<usize>,
    /// Seconds waited in vain for settled diagnostics: the server still works for queries, but
    /// `lspc check` on its files times out (cmake-language-server, which never publishes, has
    /// `"diagnostics": false` in its built-in entry and is not asked).
    pub diagnostics_timed_out_s: Option<u64>,
}

impl ServerProbe {
    /// Whether this row makes the exit status 1.
    pub fn is_failure(&self) -> bool {
        self.n_files > 0
            && matches!(
                self.state,
                DoctorState::NotFound | DoctorState::Broken { .. }
            )
    }

    fn status_word(&self) -> &'static str {
        match self.state {
            DoctorState::Working => "working",
            DoctorState::NotFound => "not found",
            DoctorState::Broken { .. } => "found but broken",
            DoctorState::NotNeeded => "not needed",
        }
    }
}

/// Probe every server of `engine_options.config` against the workspace files `files`
/// (canonical paths), each bounded by `timeout` for its start and again for its diagnostics.
pub fn probe_servers(
    engine_options: &EngineOptions,
    files: &[PathBuf],
    timeout: Duration,
) -> Vec<ServerProbe> {
    // One server at a time: on a small machine, parallel start-ups would inflate every time.
    engine_options
        .config
        .servers
        .iter()
        .map(|server| {
            let served: Vec<&PathBuf> = files
                .iter()
                .filter(|file| {
                    extension_key(file)
                        .is_some_and(|e| server.extension_to_language.contains_key(&e))
                })
                .collect();
            let sample = served.first().map(|file| (*file).clone());
            probe_one(engine_options, server, served.len(), sample, timeout)
        })
        .collect()
}

fn probe_one(
    engine_options: &EngineOptions,
    server: &ServerConfig,
    n_files: usize,
    sample: Option<PathBuf>,
    timeout: Duration,
) -> ServerProbe {
    let root = &engine_options.config.root;
    let mut probe = ServerProbe {
        name: server.name.clone(),
        origin: crate::config::origin_label(&server.origin),
        command: server.command.clone(),
        resolved_command: server.resolved_command.clone(),
        n_files,
        state: DoctorState::NotNeeded,
        install: (server.origin == ConfigOrigin::BuiltIn)
            .then(|| install_command(&server.name))
            .flatten(),
        initialize_ms: None,
        position_encoding: None,
        diagnostics_mode: None,
        sample_file: None,
        first_diagnostics_ms: None,
        n_diagnostics: None,
        diagnostics_timed_out_s: None,
    };
    if server.resolved_command.is_none() {
        probe.state = DoctorState::NotFound;
        return probe;
    }
    let Some(sample) = sample else {
        return probe;
    };
    probe.sample_file = Some(sample.strip_prefix(root).unwrap_or(&sample).to_path_buf());
    let mut options = engine_options.clone();
    options.config = Config {
        servers: vec![server.clone()],
        conflicts: Vec::new(),
        ..engine_options.config.clone()
    };
    options.restart = Some(RestartPolicy::Never);
    options.warn_duplicates = false;
    options.startup_timeout = timeout;
    let engine = EngineHandle::start(options);
    let started = Instant::now();
    match engine.sync(sample.clone(), timeout) {
        Ok(synced) => {
            probe.initialize_ms = Some(started.elapsed().as_millis() as u64);
            if let Some(info) = synced.servers.first() {
                probe.position_encoding = Some(info.encoding.to_string());
                probe.diagnostics_mode = Some(
                    if info.supports("diagnosticProvider") {
                        "pull"
                    } else {
                        "push"
                    }
                    .to_owned(),
                );
            }
        }
        Err(error) => {
            // The error quotes only the last stderr lines (a backtrace's end, often); a server
            // that fails at start fails again at once, so run it alone to read all of it.
            let text = match stderr_of_failed_start(server) {
                Some(stderr) => format!("{stderr}\n{}", error_text(&error)),
                None => error_text(&error),
            };
            probe.state = DoctorState::Broken {
                detail: first_meaningful_line(&text),
            };
            engine.shutdown();
            return probe;
        }
    }
    probe.state = DoctorState::Working;
    if server.diagnostics {
        let asked = Instant::now();
        let outcome = engine
            .diagnostics(vec![sample], timeout)
            .into_iter()
            .next()
            .map(|file| file.outcome);
        match outcome {
            Some(DiagnosticsOutcome::Settled(diagnostics)) => {
                probe.first_diagnostics_ms = Some(asked.elapsed().as_millis() as u64);
                probe.n_diagnostics = Some(diagnostics.len());
            }
            Some(DiagnosticsOutcome::TimedOut { after, .. }) => {
                probe.diagnostics_timed_out_s = Some(after.as_secs_f64().round() as u64);
            }
            Some(
                DiagnosticsOutcome::Failed(message)
                | DiagnosticsOutcome::PartlyFailed {
                    failures: message, ..
                },
            ) => {
                probe.state = DoctorState::Broken {
                    detail: first_meaningful_line(&message),
                };
            }
            Some(DiagnosticsOutcome::NotChecked(message)) => {
                probe.state = DoctorState::Broken { detail: message };
            }
            None => {}
        }
        // pyright offers pull only by dynamic registration, after `initialize`: the rule the
        // diagnostics just settled by says which (a new user's trial: `push diagnostics` for a
        // pyright whose every check pulled).
        if let Some(status) = engine.status().first() {
            let pulls = matches!(
                status.settle_rule,
                SettleRule::Pull | SettleRule::PullAndPublish
            );
            probe.diagnostics_mode = Some(if pulls { "pull" } else { "push" }.to_owned());
        }
    }
    engine.shutdown();
    probe
}

/// The stderr of `server`'s command run with no input for at most five seconds, when it exits
/// in that time (a broken install: a rustup proxy without its component, a missing module);
/// `None` when it keeps running or cannot be spawned. wait-timeout installs a process-wide
/// SIGCHLD handler on first use (the engine's process module already relies on it).
fn stderr_of_failed_start(server: &ServerConfig) -> Option<String> {
    use std::io::Read;
    use wait_timeout::ChildExt;
    let program = server.resolved_command.as_ref()?;
    let mut child = std::process::Command::new(program)
        .args(&server.args)
        .envs(server.env.iter())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    match child.wait_timeout(Duration::from_secs(5)) {
        Ok(Some(_)) => {
            let mut stderr = String::new();
            child.stderr.take()?.read_to_string(&mut stderr).ok()?;
            Some(stderr)
        }
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}

fn error_text(error: &EngineError) -> String {
    match error {
        EngineError::ServerExited {
            status,
            stderr_tail,
            ..
        } if !stderr_tail.trim().is_empty() => format!("{stderr_tail}\n{status}"),
        other => other.detail(),
    }
}

/// The line of an error output that says what went wrong: the first line that starts with an
/// error label (`error: …` as rustup's proxy prints, `fatal: …`, or a Python exception such as
/// `ImportError: …` at the end of a traceback), else the first non-empty line that is not a
/// traceback header. Surrounding whitespace is trimmed.
pub fn first_meaningful_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let is_error_label = |line: &&str| {
        let Some((head, _)) = line.split_once(':') else {
            return false;
        };
        !head.contains(' ')
            && (head.eq_ignore_ascii_case("error")
                || head.eq_ignore_ascii_case("fatal")
                || head.ends_with("Error")
                || head.ends_with("Exception"))
    };
    lines
        .iter()
        .find(|line| is_error_label(line))
        .or_else(|| lines.iter().find(|line| !line.starts_with("Traceback")))
        .map(|line| line.to_string())
        .unwrap_or_else(|| "no error output".to_owned())
}

/// The human report: one block per server, then a summary line.
pub fn render_human(probes: &[ServerProbe]) -> String {
    let mut out = String::new();
    for probe in probes {
        let found = match &probe.resolved_command {
            Some(path) => format!(", {}", path.display()),
            None => String::new(),
        };
        out.push_str(&format!(
            "{} ({}{found}): {}",
            probe.name,
            probe.origin,
            probe.status_word()
        ));
        match &probe.state {
            DoctorState::Broken { detail } => out.push_str(&format!(": {detail}")),
            DoctorState::NotFound => {
                out.push_str(&format!(": {} is not on PATH", probe.command));
            }
            _ => {}
        }
        out.push('\n');
        if probe.n_files > 0 {
            let mut facts = vec![format!(
                "{} workspace file{}",
                probe.n_files,
                if probe.n_files == 1 { "" } else { "s" }
            )];
            if let Some(ms) = probe.initialize_ms {
                facts.push(format!("initialize {ms} ms"));
            }
            if let Some(encoding) = &probe.position_encoding {
                facts.push(format!("{encoding} positions"));
            }
            if let Some(mode) = &probe.diagnostics_mode {
                facts.push(format!("{mode} diagnostics"));
            }
            if let (Some(ms), Some(file), Some(n)) = (
                probe.first_diagnostics_ms,
                &probe.sample_file,
                probe.n_diagnostics,
            ) {
                facts.push(format!(
                    "first diagnostics {ms} ms on {} ({n})",
                    file.display()
                ));
            }
            if let (Some(seconds), Some(file)) = (probe.diagnostics_timed_out_s, &probe.sample_file)
            {
                facts.push(format!(
                    "no settled diagnostics within {seconds} s on {} (lspc check would time out)",
                    file.display()
                ));
            }
            out.push_str(&format!("  {}\n", facts.join("; ")));
        }
        if matches!(
            probe.state,
            DoctorState::NotFound | DoctorState::Broken { .. }
        ) {
            if let Some(install) = probe.install {
                out.push_str(&format!("  install: {install}\n"));
            }
        }
    }
    let count = |word: &str| probes.iter().filter(|p| p.status_word() == word).count();
    out.push_str(&format!(
        "{} working, {} found but broken, {} not found, {} not needed\n",
        count("working"),
        count("found but broken"),
        count("not found"),
        count("not needed")
    ));
    out
}

/// The JSON report: `{"root", "servers": [{name, origin, command, path, status, files, error,
/// install, initializeMs, positionEncoding, diagnosticsMode, sampleFile, firstDiagnosticsMs,
/// diagnostics}]}`; absent facts are `null`.
pub fn render_json(root: &Path, probes: &[ServerProbe]) -> Value {
    let servers: Vec<Value> = probes
        .iter()
        .map(|probe| {
            json!({
                "name": probe.name,
                "origin": probe.origin,
                "command": probe.command,
                "path": probe.resolved_command.as_ref().map(|p| p.display().to_string()),
                "status": probe.status_word().replace(' ', "-"),
                "files": probe.n_files,
                "error": match &probe.state {
                    DoctorState::Broken { detail } => Some(detail.clone()),
                    DoctorState::NotFound => Some(format!("{} is not on PATH", probe.command)),
                    _ => None,
                },
                "install": probe.install,
                "initializeMs": probe.initialize_ms,
                "positionEncoding": probe.position_encoding,
                "diagnosticsMode": probe.diagnostics_mode,
                "sampleFile": probe.sample_file.as_ref().map(|p| p.display().to_string()),
                "firstDiagnosticsMs": probe.first_diagnostics_ms,
                "diagnostics": probe.n_diagnostics,
                "diagnosticsTimedOutS": probe.diagnostics_timed_out_s,
            })
        })
        .collect();
    json!({"root": root.display().to_string(), "servers": servers})
}

/// `lspc doctor`: list the workspace's files and probe; returns the report to print on stdout
/// and whether something needed is missing or broken (exit status 1). Errors: the workspace
/// cannot be listed (exit status 2).
pub fn run(
    engine_options: EngineOptions,
    json_format: bool,
    timeout: Duration,
) -> Result<(String, bool), crate::walk::WalkError> {
    let root = engine_options.config.root.clone();
    let files = crate::walk::list_files(&root, std::slice::from_ref(&root))?;
    let probes = probe_servers(&engine_options, &files, timeout);
    let text = if json_format {
        let mut text = serde_json::to_string_pretty(&render_json(&root, &probes))
            .expect("a JSON value serializes");
        text.push('\n');
        text
    } else {
        render_human(&probes)
    };
    Ok((text, probes.iter().any(ServerProbe::is_failure)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_meaningful_line_picks_the_error() {
        let check = |text: &str, expected: &str| assert_eq!(first_meaningful_line(text), expected);
        check(
            "Traceback (most recent call last):\n  File \"x\", line 5\n    from a import b\nImportError: cannot import name 'b'\n",
            "ImportError: cannot import name 'b'",
        );
        check(
            "error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.\n\nStack backtrace:\n   2: rustup::recursion_error\n",
            "error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.",
        );
        check("\n  usage: tool [-h]\n", "usage: tool [-h]");
        check("", "no error output");
    }
}
