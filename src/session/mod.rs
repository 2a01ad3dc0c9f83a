//! Warm sessions (issue 13): one engine per workspace root and configuration, living in a
//! detached background process and shared by every lspc command and MCP client over a Unix
//! domain socket.
//!
//! Shape: frontends keep talking to an [`EngineHandle`] by sending [`crate::engine::Op`]s. When a
//! session serves the workspace, the handle's ops go to a proxy thread ([`client`]) that writes
//! each op (minus its reply channel) as one JSON line ([`wire`]) and turns the reply line back into
//! the reply value; the session process ([`server`]) runs one ordinary engine loop and a thread
//! per connection that turns lines back into ops. So check, batch, edits and MCP run unchanged
//! in the client process, and their output, exit statuses and messages are the same whichever
//! way the engine runs.
//!
//! A one-shot query command (`lspc hover`, `definition`, ...) is thinner still ([`query`], and
//! the CLI's own route that loads only the file's servers, [`crate::config::load_for_extension`]):
//! it writes the whole query as one `query` line right after connecting (the hello is checked
//! when read), and the session runs it ([`crate::query::command::execute`], the code an
//! in-process run uses) and answers with the rendered outcome. So a warm one-shot costs one
//! connect and one round trip, starts no thread in the client, and the first-question analysis
//! wait of a file is done once per session rather than once per command.
//!
//! Invariants:
//! - A session is found by its key ([`paths::session_key`]: canonical root plus a hash of where
//!   the configuration comes from and the engine tuning) and used only when it serves the
//!   configuration the command loaded ([`hash::config_hash`], checked on connect; the session
//!   reloads edited files first, [`reload`]), so a command never talks to the session of another
//!   root or configuration.
//! - The socket lives in a directory only the user can enter ([`paths::runtime_dir`]); the
//!   session refuses a peer whose uid differs (`SO_PEERCRED`). There is no TCP listener.
//! - A frontend's `Shutdown` ends only its own connection; a disconnect cancels only that
//!   connection's in-flight requests.
//! - Engine log records reach each client at its own level and print as in process ([`logs`]).

pub mod client;
pub mod commands;
pub mod fallback;
pub mod hash;
pub mod logs;
pub mod paths;
pub mod project_files;
pub mod query_workers;
pub mod reload;
pub mod server;
pub mod watch;
pub mod watch_priority;
pub mod wire;

use std::time::Duration;

pub use crate::engine::SessionMode;
use crate::engine::{EngineHandle, EngineOptions};

/// How long a session waits with no client before it exits, unless `--idle` or
/// `LSPC_SESSION_IDLE` says otherwise.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(15 * 60);

/// Parses a duration such as `90`, `90s`, `15m`, `2h` or `500ms` (a bare number is seconds).
///
/// Errors: an empty value, an unknown unit, or a number that does not parse.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .ok()
        .filter(|number: &f64| number.is_finite() && *number >= 0.0)
        .ok_or_else(|| format!("expected a duration such as 90s, 15m or 2h, got {value:?}"))?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => {
            return Err(format!(
                "expected a duration such as 90s, 15m or 2h, got {value:?}"
            ))
        }
    };
    Ok(Duration::from_secs_f64(seconds))
}

/// The idle timeout of a session started implicitly (by `--session always`): `LSPC_SESSION_IDLE`
/// when set and valid, else [`DEFAULT_IDLE`].
pub fn idle_from_env() -> Duration {
    match std::env::var("LSPC_SESSION_IDLE") {
        Ok(value) => parse_duration(&value).unwrap_or_else(|error| {
            log::warn!("LSPC_SESSION_IDLE: {error}; using 15m");
            DEFAULT_IDLE
        }),
        Err(_) => DEFAULT_IDLE,
    }
}

/// The engine every command starts: the one `options.session` asks for (see [`SessionMode`]).
/// The workspace's warm session when one runs (or, for `always`, after starting it), else a loop
/// in this process ([`EngineHandle::start`]). Frontends cannot tell the two apart: the session
/// answers the same ops over its socket. A session that cannot be reached or started is reported
/// on stderr and the command runs in process, so it still answers correctly. In
/// [`SessionMode::Serve`] (the session process itself) this serves the session and exits.
pub fn start_engine(options: EngineOptions) -> EngineHandle {
    match options.session {
        SessionMode::Never => EngineHandle::start(options),
        SessionMode::Serve => {
            let status = server::serve(options, idle_from_env());
            std::process::exit(status);
        }
        mode @ (SessionMode::Auto | SessionMode::Always) => {
            match client::attach(&options, mode == SessionMode::Always) {
                Ok(handle) => handle,
                Err(client::AttachError::NotRunning) => {
                    note_a_session_for_the_root_under_another_key(&options);
                    EngineHandle::start(options)
                }
                // A broken configuration file: the command reports its errors as in process;
                // with `always` it also says why the warm session is not used.
                Err(client::AttachError::ConfigNotApplied(message)) => {
                    if mode == SessionMode::Always {
                        eprintln!("lspc: warning: {message}; running without a session");
                    } else {
                        log::info!("{message}; running without a session");
                    }
                    EngineHandle::start(options)
                }
                Err(client::AttachError::Failed(error)) => {
                    eprintln!("lspc: warning: {error}; running without a session");
                    EngineHandle::start(options)
                }
            }
        }
    }
}

/// When no session has this command's key but one serves its workspace root, says so on
/// stderr: the key covers the flags and the environment (a pyenv shim's `PYENV_*` variables and
/// `PATH`, an agent's own environment), and two new users each found their warm session silently
/// unused by a command run from another environment. One connection to each other session in
/// the session directory (none when no other runs).
fn note_a_session_for_the_root_under_another_key(options: &EngineOptions) {
    let Ok(Some(dir)) = paths::runtime_dir(false) else {
        return;
    };
    let own = paths::session_key(options);
    let root = crate::uri::canonical(&options.config.root);
    for candidate in paths::SessionPaths::list(&dir) {
        if candidate.key == own {
            continue;
        }
        let Ok(connected) = client::connect_or_clean(&candidate) else {
            continue;
        };
        if connected.hello.root == root {
            eprintln!(
                "lspc: note: the session for {} (pid {}) was started with other flags or another \
                 environment (the session key covers both: PATH, HOME, PYENV_* and a server's \
                 variables among them); this command runs without it (`lspc session start` from \
                 this environment starts one for it)",
                root.display(),
                connected.hello.pid
            );
            return;
        }
    }
}

/// In the session process ([`SessionMode::Serve`]): serves the session and exits, before the
/// calling command does anything else. Commands whose frontend has side effects before it starts
/// its engine (`mcp --http` binds a port, `ide` binds one and installs signal handlers) call this
/// first, so the session process, which re-runs their command line, never repeats them. In any
/// other mode it returns at once.
pub fn serve_if_session_process(options: &EngineOptions) {
    if options.session == SessionMode::Serve {
        start_engine(options.clone());
    }
}

/// Runs one query command in the workspace's session when `options.session` asks for one and a
/// session serves (or, for `always`, was started): [`client::query`], one line each way with no
/// proxy thread. `None` leaves the command to run in process with `options`: no session runs,
/// the mode is `never`, or this is the session process itself ([`start_engine`] serves it). A
/// session that cannot be used is reported on stderr once, as [`start_engine`] does (and
/// `options.session` becomes `never`, so it is not tried again). Every path in `request` must be
/// canonical.
pub fn query(
    options: &mut EngineOptions,
    request: &crate::query::command::QueryRequest,
    timeout: Duration,
) -> Option<Result<crate::query::command::QueryAnswer, crate::query::QueryError>> {
    let mode = options.session;
    if !matches!(mode, SessionMode::Auto | SessionMode::Always) {
        return None;
    }
    match client::query(options, mode == SessionMode::Always, request, timeout) {
        Ok(outcome) => Some(outcome),
        Err(client::AttachError::NotRunning) => {
            note_a_session_for_the_root_under_another_key(options);
            // Not tried again when the command goes on in process.
            options.session = SessionMode::Never;
            None
        }
        Err(client::AttachError::ConfigNotApplied(message)) => {
            if mode == SessionMode::Always {
                eprintln!("lspc: warning: {message}; running without a session");
            } else {
                log::info!("{message}; running without a session");
            }
            options.session = SessionMode::Never;
            None
        }
        Err(client::AttachError::Failed(error)) => {
            eprintln!("lspc: warning: {error}; running without a session");
            options.session = SessionMode::Never;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let check = |value: &str, expected: Result<u64, ()>| {
            let parsed = parse_duration(value)
                .map(|duration| duration.as_millis() as u64)
                .map_err(|_| ());
            assert_eq!(parsed, expected, "{value}");
        };
        check("90", Ok(90_000));
        check("90s", Ok(90_000));
        check("15m", Ok(900_000));
        check("2h", Ok(7_200_000));
        check("500ms", Ok(500));
        check("1.5s", Ok(1500));
        check("", Err(()));
        check("m", Err(()));
        check("5 days", Err(()));
        check("-1s", Err(()));
    }

    #[test]
    fn modes() {
        assert_eq!("auto".parse(), Ok(SessionMode::Auto));
        assert_eq!("never".parse(), Ok(SessionMode::Never));
        assert_eq!("always".parse(), Ok(SessionMode::Always));
        assert_eq!(
            "sometimes".parse::<SessionMode>(),
            Err("--session: expected auto, never or always, got \"sometimes\"".to_owned())
        );
    }
}
