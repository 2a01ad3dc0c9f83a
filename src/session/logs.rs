//! Engine log records forwarded from a session to its clients, so `RUST_LOG=debug lspc check …`
//! prints the same engine lines on its own stderr whether the engine ran in process or in a
//! session (README "Session logs").
//!
//! - Client side: the command's effective log filter (`RUST_LOG` when set, else the level `-q`,
//!   `-v`, `-vv` give, in `RUST_LOG` syntax) is recorded by [`set_client_filter`] when logging
//!   starts; the proxy sends it as the connection's first line (`{"op": "logs", "filter": …}`) and
//!   replays every `{"log": {"level", "target", "message"}}` line through this process's own
//!   logger ([`replay`]), so the lines look exactly like in-process ones (`lspc: debug: …`).
//! - Session side: [`SessionLogger`] is the session process's logger. Every record goes to the
//!   session's log file at the session's own level (the level of the command that started it),
//!   and to each connected client whose filter accepts it. Which records a client gets: every
//!   record the session emits while that client is connected, at the client's level. That covers
//!   the records emitted while serving the client's requests and the server-wide ones (a server
//!   starting, exiting, a settle wait); with several clients connected at once each also sees the
//!   records of the others' work, since the engine and its servers are shared.
//! - Cost: `log::max_level` is the highest level any consumer asked for, so a record no one wants
//!   is dropped by the `log` macros before it is formatted; a record is formatted once, only when
//!   some consumer wants it. A client that asked for `off` is not registered at all.
//! - Bounds: each client's queue holds [`QUEUE_LIMIT`] records; beyond that records are counted
//!   as dropped (the engine never blocks on a slow client) and the client is told how many.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use log::{LevelFilter, Log, Metadata, Record};
use serde::{Deserialize, Serialize};

/// Records one client may have waiting before further ones are dropped.
pub const QUEUE_LIMIT: usize = 10_000;

/// One forwarded record: the `log` value of a `{"log": …}` wire line. `level` is `error`, `warn`,
/// `info`, `debug` or `trace`; `target` the record's target (a module path such as
/// `lspc::engine::settle`); `message` the formatted text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireLog {
    pub level: String,
    pub target: String,
    pub message: String,
}

static CLIENT_FILTER: OnceLock<String> = OnceLock::new();

/// Records this command's effective log filter (`RUST_LOG` syntax), to send to a session.
pub fn set_client_filter(spec: String) {
    let _ = CLIENT_FILTER.set(spec);
}

/// This command's log filter as recorded by [`set_client_filter`]; `"warn"` (the default level)
/// when logging was never set up (a library caller).
pub fn client_filter() -> &'static str {
    CLIENT_FILTER.get().map(String::as_str).unwrap_or("warn")
}

/// Parses a filter in `RUST_LOG` syntax (env_logger's rules: `lspc=debug`, `info`, `off`, …).
pub fn parse_filter(spec: &str) -> env_logger::Logger {
    env_logger::Builder::new().parse_filters(spec).build()
}

/// Replays one forwarded record through this process's logger (which filters it again and
/// formats it as every other lspc log line).
pub fn replay(log: &WireLog) {
    let level = match log.level.as_str() {
        "error" => log::Level::Error,
        "warn" => log::Level::Warn,
        "info" => log::Level::Info,
        "debug" => log::Level::Debug,
        _ => log::Level::Trace,
    };
    if level > log::max_level() {
        return;
    }
    log::logger().log(
        &Record::builder()
            .level(level)
            .target(&log.target)
            .args(format_args!("{}", log.message))
            .build(),
    );
}

/// A connected client's filter and queue.
struct Client {
    connection_id: u64,
    filter: env_logger::Logger,
    queue: Sender<WireLog>,
    dropped: std::sync::Arc<AtomicU64>,
}

/// The session process's logger (see the module doc).
pub struct SessionLogger {
    file: env_logger::Logger,
    clients: Mutex<Vec<Client>>,
}

static SESSION_LOGGER: OnceLock<SessionLogger> = OnceLock::new();

/// A client's end of its log queue: [`Receiver`] of its records, and how many were dropped.
pub struct ClientLogs {
    pub records: Receiver<WireLog>,
    pub dropped: std::sync::Arc<AtomicU64>,
    /// The most verbose level the client's filter asks for.
    pub max_level: LevelFilter,
}

impl ClientLogs {
    /// How many records were dropped since the last call (the queue was full).
    pub fn take_dropped(&self) -> u64 {
        self.dropped.swap(0, Ordering::Relaxed)
    }
}

/// Installs [`SessionLogger`] as this process's logger, writing to stderr (the session's log file)
/// through `file` at `file`'s level. Errors: a logger is already installed.
pub fn install_session_logger(file: env_logger::Logger) -> Result<(), log::SetLoggerError> {
    let level = file.filter();
    let logger = SESSION_LOGGER.get_or_init(|| SessionLogger {
        file,
        clients: Mutex::new(Vec::new()),
    });
    log::set_logger(logger)?;
    log::set_max_level(level);
    Ok(())
}

/// Starts forwarding records to connection `connection_id` at `spec`'s level; `None` when the
/// spec asks for nothing (`off`) or this process is not a session (no [`SessionLogger`]).
pub fn register(connection_id: u64, spec: &str) -> Option<ClientLogs> {
    let logger = SESSION_LOGGER.get()?;
    let filter = parse_filter(spec);
    if filter.filter() == LevelFilter::Off {
        return None;
    }
    let max_level = filter.filter();
    let (queue, records) = bounded(QUEUE_LIMIT);
    let dropped = std::sync::Arc::new(AtomicU64::new(0));
    let mut clients = logger.clients.lock().unwrap_or_else(|e| e.into_inner());
    clients.retain(|client| client.connection_id != connection_id);
    clients.push(Client {
        connection_id,
        filter,
        queue,
        dropped: std::sync::Arc::clone(&dropped),
    });
    logger.update_max_level(&clients);
    Some(ClientLogs {
        records,
        dropped,
        max_level,
    })
}

/// Stops forwarding records to connection `connection_id`.
pub fn unregister(connection_id: u64) {
    let Some(logger) = SESSION_LOGGER.get() else {
        return;
    };
    let mut clients = logger.clients.lock().unwrap_or_else(|e| e.into_inner());
    clients.retain(|client| client.connection_id != connection_id);
    logger.update_max_level(&clients);
}

impl SessionLogger {
    fn update_max_level(&self, clients: &[Client]) {
        let level = clients
            .iter()
            .map(|client| client.filter.filter())
            .fold(self.file.filter(), Ord::max);
        log::set_max_level(level);
    }
}

impl Log for SessionLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.file.enabled(metadata)
            || self
                .clients
                .lock()
                .map(|clients| clients.iter().any(|client| client.filter.enabled(metadata)))
                .unwrap_or(false)
    }

    fn log(&self, record: &Record<'_>) {
        if self.file.matches(record) {
            self.file.log(record);
        }
        let Ok(clients) = self.clients.lock() else {
            return;
        };
        let mut formatted: Option<WireLog> = None;
        for client in clients.iter() {
            if !client.filter.matches(record) {
                continue;
            }
            let log = formatted.get_or_insert_with(|| WireLog {
                level: record.level().as_str().to_ascii_lowercase(),
                target: record.target().to_owned(),
                message: record.args().to_string(),
            });
            match client.queue.try_send(log.clone()) {
                Ok(()) | Err(TrySendError::Disconnected(_)) => {}
                Err(TrySendError::Full(_)) => {
                    client.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn flush(&self) {
        self.file.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_follow_rust_log_syntax() {
        let check = |spec: &str, cases: &[((log::Level, &'static str), bool)]| {
            let filter = parse_filter(spec);
            for ((level, target), expected) in cases {
                let matched = filter.matches(
                    &Record::builder()
                        .level(*level)
                        .target(target)
                        .args(format_args!("x"))
                        .build(),
                );
                assert_eq!(matched, *expected, "{spec}: {level} {target}");
            }
        };
        check(
            "lspc=debug",
            &[
                ((log::Level::Debug, "lspc::engine"), true),
                ((log::Level::Trace, "lspc::engine"), false),
                ((log::Level::Error, "other"), false),
            ],
        );
        check(
            "warn",
            &[
                ((log::Level::Warn, "lspc::engine"), true),
                ((log::Level::Info, "lspc::engine"), false),
            ],
        );
        assert_eq!(parse_filter("off").filter(), LevelFilter::Off);
        assert_eq!(parse_filter("lspc=debug").filter(), LevelFilter::Debug);
    }

    #[test]
    fn wire_form() {
        let log = WireLog {
            level: "debug".to_owned(),
            target: "lspc::engine".to_owned(),
            message: "settled".to_owned(),
        };
        assert_eq!(
            serde_json::to_string(&log).unwrap(),
            r#"{"level":"debug","target":"lspc::engine","message":"settled"}"#
        );
    }
}
