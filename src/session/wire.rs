//! The session wire: newline-delimited JSON over the session's Unix socket, one object per line.
//! It is the engine's [`Op`] vocabulary made serialisable (README "Session wire").
//!
//! - On connect the session writes a [`Hello`] line (or `{"error": "..."}` and closes, for a
//!   refused peer). A client checks `protocol` against [`PROTOCOL_VERSION`], `key` against the
//!   key it computed and `configHash` against the hash of the configuration it loaded; when the
//!   hashes differ it sends `reload` first (the session loads its configuration files again) and
//!   uses the session only when the hashes then agree.
//! - A client writes [`WireRequest`] lines: `{"id": N, "op": "sync", "path": ..., "timeoutMs": ...}`.
//!   Ids are the client's (any u64, unique among its requests in flight); several may be in
//!   flight; replies come in completion order.
//! - The session answers each with `{"id": N, "result": R}` where `R` is the serde form of the
//!   op's reply type (the engine's own types), or `{"id": N, "error": "message"}` when the line
//!   could not be read or the engine is gone. `subscribeEvents` is answered by any number of
//!   `{"id": N, "event": E}` lines instead. A line that is not JSON, not UTF-8 or longer than
//!   [`MAX_LINE_BYTES`] gets `{"id": null, "error": "..."}`; the connection goes on.
//! - After a client's `logs` line, the session also writes `{"log": {"level", "target",
//!   "message"}}` lines ([`super::logs::WireLog`]): engine records at the client's level, each
//!   written before any reply line that follows it in time.
//! - A `query` carries the key the client computed, and the session refuses one whose key is not
//!   its own.

use std::io::{self, BufRead};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::edit::ApplyMode;
use crate::engine::Op;
use crate::process::ServerId;
use crate::text::PositionEncoding;

/// Bumped whenever a request or reply shape changes; part of the session key too (2: `reload`
/// and `configHash`; 3: `logs`; 4: `query`).
pub const PROTOCOL_VERSION: u32 = 5;

/// The longest line either side accepts (64 MiB: a sync reply carries a whole file's text, up to
/// the 10 MiB default size limit, JSON-escaped).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The session's first line on every accepted connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// Always `"lspc-session"`.
    pub lspc: String,
    pub protocol: u32,
    /// The lspc version that runs the session.
    pub version: String,
    pub key: String,
    /// The canonical workspace root.
    pub root: PathBuf,
    pub pid: u32,
    pub log: PathBuf,
    /// [`super::hash::config_hash`] of the configuration the session serves right now.
    pub config_hash: String,
}

/// One client line: a request id and the op.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireRequest {
    pub id: u64,
    #[serde(flatten)]
    pub op: WireOp,
}

/// The ops a client may send: every [`Op`] a frontend sends, without its reply channel, plus two
/// that address the session itself (`info`, `stop`). Durations are milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum WireOp {
    Diagnostics {
        paths: Vec<PathBuf>,
        timeout_ms: u64,
    },
    /// [`Op::AnalysisWait`]: a query's first readiness wait on one file.
    AnalysisWait {
        path: PathBuf,
        timeout_ms: u64,
    },
    /// `progress`: send each finished file as an `event` line before the `result`.
    DiagnosticsLeavingOut {
        paths: Vec<PathBuf>,
        leave_out: std::collections::HashMap<PathBuf, Vec<ServerId>>,
        timeout_ms: u64,
        progress: bool,
    },
    Sync {
        path: PathBuf,
        timeout_ms: u64,
    },
    Request {
        server_id: ServerId,
        method: String,
        params: Value,
        timeout_ms: u64,
        retry: bool,
        /// The client's tag for a later `cancel` (the session maps it to its own).
        tag: Option<u64>,
    },
    Cancel {
        tag: u64,
    },
    ApplyEdit {
        edit: Value,
        encoding: PositionEncoding,
        mode: ApplyMode,
    },
    ServerEdits,
    RawDiagnostics {
        path: PathBuf,
    },
    Status,
    /// `consumer`: `None` for this connection's own queue, else one it opened.
    DrainPassive {
        consumer: Option<String>,
    },
    OpenPassive {
        consumer: String,
    },
    ClosePassive {
        consumer: String,
    },
    SubscribeEvents,
    CurrentDiagnostics,
    ServerDetails,
    OpenDocuments,
    RunningServers,
    /// The client's log filter (`RUST_LOG` syntax), sent as a client's first line: from then on
    /// the session writes `{"log": WireLog}` lines ([`super::logs`]) for the records it accepts,
    /// each before the reply lines that follow it. No reply.
    Logs {
        filter: String,
    },
    /// One whole query command run in the session ([`crate::query::command::execute`] with the
    /// session's engine): the sync, the readiness waits and the requests cost no socket round
    /// trip each, and a file's first-question analysis wait is done once per session, not once
    /// per one-shot command. Every path in `request` is canonical (the client resolves it
    /// against its own current directory). Answered by `{"Ok": QueryAnswer}` or
    /// `{"Err": QueryError}`; the client prints it exactly as an in-process run would. `key`
    /// is the session key the client computed: another key is refused with an error line.
    ///
    /// `configHash`, when given, is [`super::hash::config_hash_for_extension`] of the servers the
    /// client loaded for the request's file ([`crate::config::load_for_extension`]). The session
    /// compares it with its own hash for that file's extension and answers a difference with an
    /// error line carrying `"configMismatch": true` instead of running the query: the client then
    /// loads its whole configuration and takes the hello's `configHash` route (a `reload` first).
    Query {
        key: String,
        request: crate::query::command::QueryRequest,
        timeout_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_hash: Option<String>,
    },
    /// Check the configuration files now and reload them if they changed (or if `config_hash`, the
    /// client's own hash, differs from the session's): answered with a [`ReloadReply`] once done.
    Reload {
        config_hash: String,
    },
    /// The session's state: [`SessionInfo`].
    Info,
    /// Stop the session: servers shut down by the normal sequence, then the process exits.
    Stop,
}

/// What `info` answers (for `lspc session status`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub root: PathBuf,
    pub pid: u32,
    pub uptime_ms: u64,
    /// Connected clients, this one included.
    pub clients: usize,
    pub log: PathBuf,
    /// Documents the engine holds open.
    pub open_documents: usize,
    /// Resident memory of the session process itself, KiB.
    pub rss_kib: Option<u64>,
    /// One entry per server instance, in slot order.
    pub servers: Vec<SessionServer>,
    /// Where the configuration comes from and its last reload.
    pub config: ConfigState,
}

/// What `reload` answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadReply {
    /// The hash of the configuration the session serves now.
    pub config_hash: String,
    /// What the last reload changed, when this connection has not been told yet (else empty).
    pub report: crate::engine::ReloadReport,
    /// Why the configuration files could not be applied (the session keeps the previous one).
    pub error: Option<String>,
}

/// A session's configuration: its sources, the hash it serves, its last reload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigState {
    /// The files and folders the configuration is loaded from (watched for changes); empty for a
    /// configuration that does not come from files (it never reloads).
    pub sources: Vec<PathBuf>,
    pub config_hash: String,
    /// [`super::hash::config_hashes_by_extension`] of the configuration served: what a one-shot
    /// `query`'s `configHash` is compared with. Not on the wire (`status` does not show it).
    #[serde(skip)]
    pub extension_hashes: std::sync::Arc<std::collections::BTreeMap<String, String>>,
    /// Counts the reloads that changed something (0: none yet).
    pub generation: u64,
    pub last_reload: Option<LastReload>,
}

/// One configuration reload that changed something or failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastReload {
    /// When, in milliseconds since the Unix epoch.
    pub unix_ms: u64,
    pub restarted: Vec<String>,
    pub removed: Vec<String>,
    pub added: Vec<String>,
    /// Why the new configuration was not applied (`None`: it was).
    pub error: Option<String>,
}

/// One server instance of a session (a configured server at the workspace root, or one of its
/// per-project instances).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionServer {
    pub name: String,
    /// The project root this instance serves, relative to the workspace root; `None` for the
    /// workspace-root instance.
    #[serde(default)]
    pub project: Option<String>,
    pub state: String,
    pub pid: Option<u32>,
    /// Resident memory of the server process, KiB.
    pub rss_kib: Option<u64>,
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An [`Op`]'s wire form and its reply channel, split apart (the client proxy keeps the channel).
/// `Shutdown` and `FilesChanged` have no wire form: the proxy handles them (the
/// session scans the disk itself).
pub enum Split {
    Wire(WireOp, ReplySlot),
    Local(Op),
}

/// Where the reply to a wire op goes, typed as the op's reply.
pub enum ReplySlot {
    /// With the paths asked for, to fail each when the session is lost.
    Diagnostics(
        crossbeam_channel::Sender<Vec<crate::engine::FileDiagnostics>>,
        Vec<PathBuf>,
    ),
    /// Its `event` lines go to the progress sender, its `result` to the reply.
    DiagnosticsLeavingOut {
        reply: crossbeam_channel::Sender<Vec<crate::engine::FileDiagnostics>>,
        progress: Option<crossbeam_channel::Sender<crate::engine::FileDiagnostics>>,
        paths: Vec<PathBuf>,
    },
    Sync(
        crossbeam_channel::Sender<
            Result<crate::engine::SyncedDocument, crate::engine::EngineError>,
        >,
    ),
    /// A request's answer: a channel, or a continuation run on the proxy's thread.
    Request(crate::engine::ReplyTo),
    ApplyEdit(crossbeam_channel::Sender<Result<crate::edit::EditReport, crate::edit::EditError>>),
    ServerEdits(crossbeam_channel::Sender<Vec<(u64, crate::edit::EditReport)>>),
    RawDiagnostics(crossbeam_channel::Sender<Vec<(ServerId, Vec<Value>)>>),
    Status(crossbeam_channel::Sender<Vec<crate::engine::ServerStatus>>),
    DrainPassive(crossbeam_channel::Sender<Option<crate::diagnostics::DrainedBatch>>),
    Events(crossbeam_channel::Sender<crate::engine::FrontendEvent>),
    CurrentDiagnostics(
        crossbeam_channel::Sender<Vec<(PathBuf, Vec<crate::diagnostics::Diagnostic>)>>,
    ),
    ServerDetails(crossbeam_channel::Sender<Vec<crate::engine::ServerDetails>>),
    OpenDocuments(crossbeam_channel::Sender<Vec<PathBuf>>),
    RunningServers(crossbeam_channel::Sender<Vec<crate::engine::ServerInfo>>),
    /// `reload`: the frontend gets the [`ReloadReply`]'s report.
    Reload(crossbeam_channel::Sender<crate::engine::ReloadReport>),
    /// No reply (`cancel`).
    None,
}

/// Splits a frontend's op into its wire form and reply slot.
pub fn split(op: Op) -> Split {
    match op {
        Op::Diagnostics {
            paths,
            timeout,
            reply,
        } => Split::Wire(
            WireOp::Diagnostics {
                paths: paths.clone(),
                timeout_ms: millis(timeout),
            },
            ReplySlot::Diagnostics(reply, paths),
        ),
        Op::AnalysisWait {
            path,
            timeout,
            reply,
        } => Split::Wire(
            WireOp::AnalysisWait {
                path: path.clone(),
                timeout_ms: millis(timeout),
            },
            ReplySlot::Diagnostics(reply, vec![path]),
        ),
        Op::DiagnosticsLeavingOut {
            paths,
            leave_out,
            timeout,
            progress,
            reply,
        } => Split::Wire(
            WireOp::DiagnosticsLeavingOut {
                paths: paths.clone(),
                leave_out,
                timeout_ms: millis(timeout),
                progress: progress.is_some(),
            },
            ReplySlot::DiagnosticsLeavingOut {
                reply,
                progress,
                paths,
            },
        ),
        Op::Sync {
            path,
            timeout,
            reply,
        } => Split::Wire(
            WireOp::Sync {
                path,
                timeout_ms: millis(timeout),
            },
            ReplySlot::Sync(reply),
        ),
        Op::Request {
            server_id,
            method,
            params,
            timeout,
            retry,
            tag,
            reply,
        } => Split::Wire(
            WireOp::Request {
                server_id,
                method,
                params,
                timeout_ms: millis(timeout),
                retry,
                tag,
            },
            ReplySlot::Request(crate::engine::ReplyTo::Channel(reply)),
        ),
        Op::Cancel { tag } => Split::Wire(WireOp::Cancel { tag }, ReplySlot::None),
        Op::ApplyEdit {
            edit,
            encoding,
            mode,
            reply,
        } => Split::Wire(
            WireOp::ApplyEdit {
                edit,
                encoding,
                mode,
            },
            ReplySlot::ApplyEdit(reply),
        ),
        Op::ServerEdits { reply } => {
            Split::Wire(WireOp::ServerEdits, ReplySlot::ServerEdits(reply))
        }
        Op::RawDiagnostics { path, reply } => Split::Wire(
            WireOp::RawDiagnostics { path },
            ReplySlot::RawDiagnostics(reply),
        ),
        Op::Status { reply } => Split::Wire(WireOp::Status, ReplySlot::Status(reply)),
        Op::DrainPassive { consumer, reply } => Split::Wire(
            WireOp::DrainPassive { consumer },
            ReplySlot::DrainPassive(reply),
        ),
        Op::OpenPassive { consumer } => {
            Split::Wire(WireOp::OpenPassive { consumer }, ReplySlot::None)
        }
        Op::ClosePassive { consumer } => {
            Split::Wire(WireOp::ClosePassive { consumer }, ReplySlot::None)
        }
        Op::SubscribeEvents { sender } => {
            Split::Wire(WireOp::SubscribeEvents, ReplySlot::Events(sender))
        }
        Op::CurrentDiagnostics { reply } => Split::Wire(
            WireOp::CurrentDiagnostics,
            ReplySlot::CurrentDiagnostics(reply),
        ),
        Op::ServerDetails { reply } => {
            Split::Wire(WireOp::ServerDetails, ReplySlot::ServerDetails(reply))
        }
        Op::OpenDocuments { reply } => {
            Split::Wire(WireOp::OpenDocuments, ReplySlot::OpenDocuments(reply))
        }
        Op::RunningServers { reply } => {
            Split::Wire(WireOp::RunningServers, ReplySlot::RunningServers(reply))
        }
        // A frontend that noticed its configuration files change (`lspc mcp`) asks the session to
        // reload them; the session loads them itself, so only the frontend's hash crosses.
        Op::Reload { config, reply } => Split::Wire(
            WireOp::Reload {
                config_hash: super::hash::config_hash(&config),
            },
            ReplySlot::Reload(reply),
        ),
        // `SyncRequest` carries a closure: the proxy runs it as a `Sync` and then a `Request`.
        // `PassiveCounter` shares memory, so it stays unanswered (the frontend always drains).
        op @ (Op::Shutdown { .. }
        | Op::FilesChanged { .. }
        | Op::SyncRequest { .. }
        | Op::PassiveCounter { .. }) => Split::Local(op),
    }
}

/// Why a reply value did not fit its slot.
#[derive(Debug)]
pub struct DecodeError(pub String);

impl ReplySlot {
    /// Delivers a `result` value to the slot's channel. A receiver that is gone is not an error.
    pub fn deliver(&self, result: Value) -> Result<(), DecodeError> {
        fn send<T: serde::de::DeserializeOwned>(
            sender: &crossbeam_channel::Sender<T>,
            value: Value,
        ) -> Result<(), DecodeError> {
            let decoded: T =
                serde_json::from_value(value).map_err(|error| DecodeError(error.to_string()))?;
            let _ = sender.send(decoded);
            Ok(())
        }
        match self {
            ReplySlot::Diagnostics(sender, _) => send(sender, result),
            ReplySlot::DiagnosticsLeavingOut { reply, .. } => send(reply, result),
            ReplySlot::Sync(sender) => send(sender, result),
            ReplySlot::Request(reply) => {
                let decoded = serde_json::from_value(result)
                    .map_err(|error| DecodeError(error.to_string()))?;
                reply.send(decoded);
                Ok(())
            }
            ReplySlot::ApplyEdit(sender) => send(sender, result),
            ReplySlot::ServerEdits(sender) => send(sender, result),
            ReplySlot::RawDiagnostics(sender) => send(sender, result),
            ReplySlot::Status(sender) => send(sender, result),
            ReplySlot::DrainPassive(sender) => send(sender, result),
            ReplySlot::Events(sender) => send(sender, result),
            ReplySlot::CurrentDiagnostics(sender) => send(sender, result),
            ReplySlot::ServerDetails(sender) => send(sender, result),
            ReplySlot::OpenDocuments(sender) => send(sender, result),
            ReplySlot::RunningServers(sender) => send(sender, result),
            ReplySlot::Reload(sender) => {
                let reply: ReloadReply = serde_json::from_value(result)
                    .map_err(|error| DecodeError(error.to_string()))?;
                if let Some(error) = &reply.error {
                    log::warn!("the session keeps its previous configuration: {error}");
                }
                let _ = sender.send(reply.report);
                Ok(())
            }
            ReplySlot::None => Ok(()),
        }
    }

    /// Delivers an `event` value: a subscription's event, or a diagnostics wait's progress.
    pub fn deliver_event(&self, event: Value) -> Result<(), DecodeError> {
        match self {
            ReplySlot::DiagnosticsLeavingOut {
                progress: Some(progress),
                ..
            } => {
                let decoded = serde_json::from_value(event)
                    .map_err(|error| DecodeError(error.to_string()))?;
                let _ = progress.send(decoded);
                Ok(())
            }
            ReplySlot::Events(_) => self.deliver(event),
            _ => Ok(()),
        }
    }

    /// Whether the slot takes several values (an event subscription) rather than one reply.
    pub fn is_stream(&self) -> bool {
        matches!(self, ReplySlot::Events(_))
    }

    /// Answers the slot when the session is gone: ops whose reply can carry an error get
    /// `message` ([`crate::engine::EngineError::SessionLost`]; a diagnostics wait reports each
    /// file as failed); the others are dropped, which frontends read as "engine gone".
    pub fn fail(self, message: &str) {
        use crate::engine::{DiagnosticsOutcome, EngineError, FileDiagnostics};
        match self {
            ReplySlot::Sync(sender) => {
                let _ = sender.send(Err(EngineError::SessionLost(message.to_owned())));
            }
            ReplySlot::Request(reply) => {
                reply.send(Err(EngineError::SessionLost(message.to_owned())));
            }
            ReplySlot::DiagnosticsLeavingOut {
                reply: sender,
                paths,
                ..
            }
            | ReplySlot::Diagnostics(sender, paths) => {
                let results = paths
                    .into_iter()
                    .map(|path| FileDiagnostics {
                        path,
                        outcome: DiagnosticsOutcome::Failed(message.to_owned()),
                    })
                    .collect();
                let _ = sender.send(results);
            }
            _ => {}
        }
    }
}

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(String),
    /// Longer than the limit; the rest of it was skipped.
    TooLong,
    NotUtf8,
}

/// Reads one `\n`-terminated line of at most `limit` bytes; `Ok(None)` at end of stream. An
/// oversized line is consumed to its end and reported as [`Line::TooLong`], so the next line
/// reads normally.
pub fn read_line(reader: &mut impl BufRead, limit: usize) -> io::Result<Option<Line>> {
    let mut buffer: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            if !read_any {
                return Ok(None);
            }
            break;
        }
        read_any = true;
        let (chunk, done) = match available.iter().position(|byte| *byte == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if !too_long {
            if buffer.len() + chunk.len() > limit {
                too_long = true;
                buffer = Vec::new();
            } else {
                buffer.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(available.len());
        reader.consume(consumed);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Ok(Some(Line::TooLong));
    }
    if buffer.last() == Some(&b'\r') {
        buffer.pop();
    }
    match String::from_utf8(buffer) {
        Ok(text) => Ok(Some(Line::Text(text))),
        Err(_) => Ok(Some(Line::NotUtf8)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded() {
        let input = b"short\nthis one is too long\n\xff\xfe\nlast".to_vec();
        let mut reader = io::BufReader::with_capacity(4, &input[..]);
        let mut lines = Vec::new();
        while let Some(line) = read_line(&mut reader, 10).unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            vec![
                Line::Text("short".to_owned()),
                Line::TooLong,
                Line::NotUtf8,
                Line::Text("last".to_owned()),
            ]
        );
    }

    #[test]
    fn requests_have_one_shape() {
        let check = |line: &str, expected: &str| {
            let request: WireRequest = serde_json::from_str(line).expect(line);
            assert_eq!(serde_json::to_string(&request).unwrap(), expected);
        };
        check(
            r#"{"id":1,"op":"sync","path":"/w/a.py","timeoutMs":3000}"#,
            r#"{"id":1,"op":"sync","path":"/w/a.py","timeoutMs":3000}"#,
        );
        check(
            r#"{"id":2,"op":"request","serverId":0,"method":"textDocument/hover","params":{},"timeoutMs":10,"retry":true,"tag":null}"#,
            r#"{"id":2,"op":"request","serverId":0,"method":"textDocument/hover","params":{},"timeoutMs":10,"retry":true,"tag":null}"#,
        );
        check(r#"{"id":3,"op":"status"}"#, r#"{"id":3,"op":"status"}"#);
        assert!(serde_json::from_str::<WireRequest>(r#"{"id":4,"op":"explode"}"#).is_err());
    }
}
