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
use crate::tagged_json::{unknown_variant, Fields};
use crate::text::PositionEncoding;

/// Bumped whenever a request or reply shape changes; part of the session key too (2: `reload`
/// and `configHash`; 3: `logs`; 4: `query`; 5: per-extension configuration hashes; 6: a
/// server's `formattingOff`, which `format` refuses on).
pub const PROTOCOL_VERSION: u32 = 6;

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

/// One client line: a request id and the op. Read by hand ([`decode_request`]), written by
/// serde's derive.
#[derive(Debug, Clone, Serialize)]
pub struct WireRequest {
    pub id: u64,
    #[serde(flatten)]
    pub op: WireOp,
}

/// The ops a client may send: every [`Op`] a frontend sends, without its reply channel, plus two
/// that address the session itself (`info`, `stop`). Durations are milliseconds.
///
/// Written by serde's derive; read by [`decode_request`], which a round-trip test over every
/// variant keeps in step with it.
#[derive(Debug, Clone, Serialize)]
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
        /// [`Op::Request`]'s `document`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        document: Option<PathBuf>,
    },
    Cancel {
        tag: u64,
    },
    ApplyEdit {
        edit: Value,
        encoding: PositionEncoding,
        mode: ApplyMode,
        /// [`Op::ApplyEdit`]'s `based_on`; absent for `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        based_on: Option<u64>,
    },
    ServerEdits,
    RawDiagnostics {
        path: PathBuf,
    },
    Status,
    /// `consumer`: `None` for this connection's own queue, else one it opened; `shown_file`:
    /// see [`Op::DrainPassive`].
    DrainPassive {
        consumer: Option<String>,
        shown_file: Option<PathBuf>,
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

/// The `op` names [`WireOp`] serializes to, in declaration order (for the unknown-op error).
const WIRE_OPS: &[&str] = &[
    "diagnostics",
    "analysisWait",
    "diagnosticsLeavingOut",
    "sync",
    "request",
    "cancel",
    "applyEdit",
    "serverEdits",
    "rawDiagnostics",
    "status",
    "drainPassive",
    "openPassive",
    "closePassive",
    "subscribeEvents",
    "currentDiagnostics",
    "serverDetails",
    "openDocuments",
    "runningServers",
    "logs",
    "query",
    "reload",
    "info",
    "stop",
];

/// The `type` names [`crate::query::command::QueryRequest`] serializes to.
const QUERY_TYPES: &[&str] = &[
    "definition",
    "references",
    "hover",
    "symbols",
    "workspaceSymbols",
    "callHierarchy",
    "typeHierarchy",
    "signatureHelp",
];

impl<'de> Deserialize<'de> for WireRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = serde_json::Map::deserialize(deserializer)?;
        decode_request(object).map_err(serde::de::Error::custom)
    }
}

/// Reads a client line's object into a [`WireRequest`]: the inverse of its `Serialize`, by hand
/// ([`crate::tagged_json`]: the derive cost the binary about 80 KB for these two enums).
fn decode_request(
    object: serde_json::Map<String, Value>,
) -> Result<WireRequest, serde_json::Error> {
    let mut fields = Fields(object);
    let id = fields.required("id")?;
    let tag: String = fields.required("op")?;
    let op = match tag.as_str() {
        "diagnostics" => WireOp::Diagnostics {
            paths: fields.required("paths")?,
            timeout_ms: fields.required("timeoutMs")?,
        },
        "analysisWait" => WireOp::AnalysisWait {
            path: fields.required("path")?,
            timeout_ms: fields.required("timeoutMs")?,
        },
        "diagnosticsLeavingOut" => WireOp::DiagnosticsLeavingOut {
            paths: fields.required("paths")?,
            leave_out: fields.required("leaveOut")?,
            timeout_ms: fields.required("timeoutMs")?,
            progress: fields.required("progress")?,
        },
        "sync" => WireOp::Sync {
            path: fields.required("path")?,
            timeout_ms: fields.required("timeoutMs")?,
        },
        "request" => WireOp::Request {
            server_id: fields.required("serverId")?,
            method: fields.required("method")?,
            params: fields.required("params")?,
            timeout_ms: fields.required("timeoutMs")?,
            retry: fields.required("retry")?,
            tag: fields.optional("tag")?,
            document: fields.optional("document")?,
        },
        "cancel" => WireOp::Cancel {
            tag: fields.required("tag")?,
        },
        "applyEdit" => WireOp::ApplyEdit {
            edit: fields.required("edit")?,
            encoding: fields.required("encoding")?,
            mode: fields.required("mode")?,
            based_on: fields.optional("basedOn")?,
        },
        "serverEdits" => WireOp::ServerEdits,
        "rawDiagnostics" => WireOp::RawDiagnostics {
            path: fields.required("path")?,
        },
        "status" => WireOp::Status,
        "drainPassive" => WireOp::DrainPassive {
            consumer: fields.optional("consumer")?,
            shown_file: fields.optional("shownFile")?,
        },
        "openPassive" => WireOp::OpenPassive {
            consumer: fields.required("consumer")?,
        },
        "closePassive" => WireOp::ClosePassive {
            consumer: fields.required("consumer")?,
        },
        "subscribeEvents" => WireOp::SubscribeEvents,
        "currentDiagnostics" => WireOp::CurrentDiagnostics,
        "serverDetails" => WireOp::ServerDetails,
        "openDocuments" => WireOp::OpenDocuments,
        "runningServers" => WireOp::RunningServers,
        "logs" => WireOp::Logs {
            filter: fields.required("filter")?,
        },
        "query" => WireOp::Query {
            key: fields.required("key")?,
            request: decode_query_request(fields.required("request")?)?,
            timeout_ms: fields.required("timeoutMs")?,
            config_hash: fields.optional("configHash")?,
        },
        "reload" => WireOp::Reload {
            config_hash: fields.required("configHash")?,
        },
        "info" => WireOp::Info,
        "stop" => WireOp::Stop,
        other => return Err(unknown_variant(other, WIRE_OPS)),
    };
    Ok(WireRequest { id, op })
}

/// Reads a `query` op's `request` ([`crate::query::command::QueryRequest`], tagged by `type`).
fn decode_query_request(
    object: serde_json::Map<String, Value>,
) -> Result<crate::query::command::QueryRequest, serde_json::Error> {
    use crate::query::command::QueryRequest;
    let mut fields = Fields(object);
    let tag: String = fields.required("type")?;
    Ok(match tag.as_str() {
        "definition" => QueryRequest::Definition {
            at: fields.required("at")?,
            kind: fields.required("kind")?,
        },
        "references" => QueryRequest::References {
            at: fields.required("at")?,
            include_declaration: fields.required("includeDeclaration")?,
        },
        "hover" => QueryRequest::Hover {
            at: fields.required("at")?,
        },
        "symbols" => QueryRequest::Symbols {
            file: fields.required("file")?,
        },
        "workspaceSymbols" => QueryRequest::WorkspaceSymbols {
            query: fields.required("query")?,
            file: fields.optional("file")?,
        },
        "callHierarchy" => QueryRequest::CallHierarchy {
            at: fields.required("at")?,
            direction: fields.optional("direction")?,
        },
        "typeHierarchy" => QueryRequest::TypeHierarchy {
            at: fields.required("at")?,
            direction: fields.required("direction")?,
        },
        "signatureHelp" => QueryRequest::SignatureHelp {
            at: fields.required("at")?,
        },
        other => return Err(unknown_variant(other, QUERY_TYPES)),
    })
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
    /// Documents open on servers, counted once per server (a `.py` file open on pyright and
    /// ruff counts twice; the engine holds at most `max_open_documents` files).
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
            document,
        } => Split::Wire(
            WireOp::Request {
                server_id,
                method,
                params,
                timeout_ms: millis(timeout),
                retry,
                tag,
                document,
            },
            ReplySlot::Request(crate::engine::ReplyTo::Channel(reply)),
        ),
        Op::Cancel { tag } => Split::Wire(WireOp::Cancel { tag }, ReplySlot::None),
        Op::ApplyEdit {
            edit,
            encoding,
            mode,
            based_on,
            reply,
        } => Split::Wire(
            WireOp::ApplyEdit {
                edit,
                encoding,
                mode,
                based_on,
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
        Op::DrainPassive {
            consumer,
            shown_file,
            reply,
        } => Split::Wire(
            WireOp::DrainPassive {
                consumer,
                shown_file,
            },
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
        // `SubscribeProjectFiles` is a watch's, and a session watches with its own.
        op @ (Op::Shutdown { .. }
        | Op::FilesChanged { .. }
        | Op::SubscribeProjectFiles { .. }
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
                        not_checked_by: None,
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
    match read_line_bytes(reader, limit, &mut buffer)? {
        None => Ok(None),
        Some(false) => Ok(Some(Line::TooLong)),
        Some(true) => match String::from_utf8(buffer) {
            Ok(text) => Ok(Some(Line::Text(text))),
            Err(_) => Ok(Some(Line::NotUtf8)),
        },
    }
}

/// [`read_line`]'s bytes: appends one line of at most `limit` bytes to `buffer`, without its
/// `\n` or `\r\n`. `Ok(None)` at end of stream; `Ok(Some(false))` when the line was longer (it
/// was consumed to its end, and `buffer` holds none of it); `Ok(Some(true))` otherwise.
///
/// Errors: the reader's, except `Interrupted`, which is retried.
pub fn read_line_bytes(
    reader: &mut impl BufRead,
    limit: usize,
    buffer: &mut Vec<u8>,
) -> io::Result<Option<bool>> {
    let start = buffer.len();
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
        // One byte over the limit is kept for a `\r` before the line end, which is not part
        // of the line (a CRLF line of `limit` bytes fits); the length is checked again below.
        if !too_long {
            if buffer.len() - start + chunk.len() > limit + 1 {
                too_long = true;
                buffer.truncate(start);
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
        return Ok(Some(false));
    }
    if buffer.len() > start && buffer.last() == Some(&b'\r') {
        buffer.pop();
    }
    if buffer.len() - start > limit {
        buffer.truncate(start);
        return Ok(Some(false));
    }
    Ok(Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crlf_line_of_the_limit_fits() {
        let input = b"0123456789\r\nnext\n01234567890\r\n".to_vec();
        // A fill ends right after the `\r`.
        let mut reader = io::BufReader::with_capacity(11, &input[..]);
        assert_eq!(
            read_line(&mut reader, 10).unwrap(),
            Some(Line::Text("0123456789".to_owned()))
        );
        assert_eq!(
            read_line(&mut reader, 10).unwrap(),
            Some(Line::Text("next".to_owned()))
        );
        assert_eq!(read_line(&mut reader, 10).unwrap(), Some(Line::TooLong));
    }

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
        // As serde's derive: unknown fields are ignored, a missing optional field is `None`.
        check(
            r#"{"op":"request","id":5,"serverId":1,"method":"m","params":null,"timeoutMs":1,"retry":false,"extra":[]}"#,
            r#"{"id":5,"op":"request","serverId":1,"method":"m","params":null,"timeoutMs":1,"retry":false,"tag":null}"#,
        );
        let error = |line: &str| {
            serde_json::from_str::<WireRequest>(line)
                .unwrap_err()
                .to_string()
        };
        assert!(error(r#"{"id":4,"op":"explode"}"#)
            .starts_with("unknown variant `explode`, expected one of `diagnostics`"));
        assert_eq!(error(r#"{"op":"status"}"#), "missing field `id`");
        assert_eq!(error(r#"{"id":1}"#), "missing field `op`");
        assert_eq!(
            error(r#"{"id":1,"op":"sync","path":"/a"}"#),
            "missing field `timeoutMs`"
        );
        assert!(error(r#"{"id":1,"op":"cancel","tag":"x"}"#).starts_with("invalid type: string"));
        assert!(error(r#"[1]"#).starts_with("invalid type: sequence"));
    }

    /// The op name a [`WireOp`] serializes to. A new variant fails to compile here until it is
    /// added to the samples below, and so to [`WIRE_OPS`] and [`decode_request`].
    fn op_name(op: &WireOp) -> &'static str {
        match op {
            WireOp::Diagnostics { .. } => "diagnostics",
            WireOp::AnalysisWait { .. } => "analysisWait",
            WireOp::DiagnosticsLeavingOut { .. } => "diagnosticsLeavingOut",
            WireOp::Sync { .. } => "sync",
            WireOp::Request { .. } => "request",
            WireOp::Cancel { .. } => "cancel",
            WireOp::ApplyEdit { .. } => "applyEdit",
            WireOp::ServerEdits => "serverEdits",
            WireOp::RawDiagnostics { .. } => "rawDiagnostics",
            WireOp::Status => "status",
            WireOp::DrainPassive { .. } => "drainPassive",
            WireOp::OpenPassive { .. } => "openPassive",
            WireOp::ClosePassive { .. } => "closePassive",
            WireOp::SubscribeEvents => "subscribeEvents",
            WireOp::CurrentDiagnostics => "currentDiagnostics",
            WireOp::ServerDetails => "serverDetails",
            WireOp::OpenDocuments => "openDocuments",
            WireOp::RunningServers => "runningServers",
            WireOp::Logs { .. } => "logs",
            WireOp::Query { .. } => "query",
            WireOp::Reload { .. } => "reload",
            WireOp::Info => "info",
            WireOp::Stop => "stop",
        }
    }

    /// The type name a query request serializes to (see [`op_name`]).
    fn query_type(request: &crate::query::command::QueryRequest) -> &'static str {
        use crate::query::command::QueryRequest;
        match request {
            QueryRequest::Definition { .. } => "definition",
            QueryRequest::References { .. } => "references",
            QueryRequest::Hover { .. } => "hover",
            QueryRequest::Symbols { .. } => "symbols",
            QueryRequest::WorkspaceSymbols { .. } => "workspaceSymbols",
            QueryRequest::CallHierarchy { .. } => "callHierarchy",
            QueryRequest::TypeHierarchy { .. } => "typeHierarchy",
            QueryRequest::SignatureHelp { .. } => "signatureHelp",
        }
    }

    /// Every op and every query type, written by serde's derive, reads back the same.
    #[test]
    fn every_op_reads_back_what_was_written() {
        use crate::query::command::QueryRequest;
        use crate::query::{
            CallDirection, ColumnOrSymbol, DefinitionKind, TextPosition, TypeDirection,
        };
        let at = |target| TextPosition {
            file: PathBuf::from("/w/a b.py"),
            line: 3,
            target,
        };
        let queries = vec![
            QueryRequest::Definition {
                at: at(ColumnOrSymbol::Column(7)),
                kind: DefinitionKind::TypeDefinition,
            },
            QueryRequest::References {
                at: at(ColumnOrSymbol::Symbol {
                    name: "alpha".to_owned(),
                    occurrence: 2,
                }),
                include_declaration: true,
            },
            QueryRequest::Hover {
                at: at(ColumnOrSymbol::Column(1)),
            },
            QueryRequest::Symbols {
                file: PathBuf::from("/w/a.py"),
            },
            QueryRequest::WorkspaceSymbols {
                query: "Al".to_owned(),
                file: None,
            },
            QueryRequest::WorkspaceSymbols {
                query: String::new(),
                file: Some(PathBuf::from("/w/b.py")),
            },
            QueryRequest::CallHierarchy {
                at: at(ColumnOrSymbol::Column(2)),
                direction: Some(CallDirection::Outgoing),
            },
            QueryRequest::CallHierarchy {
                at: at(ColumnOrSymbol::Column(2)),
                direction: None,
            },
            QueryRequest::TypeHierarchy {
                at: at(ColumnOrSymbol::Column(2)),
                direction: TypeDirection::Subtypes,
            },
            QueryRequest::SignatureHelp {
                at: at(ColumnOrSymbol::Column(9)),
            },
        ];
        let mut types: Vec<&str> = queries.iter().map(query_type).collect();
        types.dedup();
        assert_eq!(types, QUERY_TYPES);
        let mut ops: Vec<WireOp> = queries
            .into_iter()
            .map(|request| WireOp::Query {
                key: "k".to_owned(),
                request,
                timeout_ms: 5,
                config_hash: None,
            })
            .collect();
        let path = || PathBuf::from("/w/a.py");
        ops.extend([
            WireOp::Diagnostics {
                paths: vec![path(), PathBuf::from("/w/é.py")],
                timeout_ms: 1,
            },
            WireOp::AnalysisWait {
                path: path(),
                timeout_ms: 2,
            },
            WireOp::DiagnosticsLeavingOut {
                paths: vec![path()],
                leave_out: std::collections::HashMap::from([(path(), vec![ServerId(2)])]),
                timeout_ms: 3,
                progress: true,
            },
            WireOp::Sync {
                path: path(),
                timeout_ms: 4,
            },
            WireOp::Request {
                server_id: ServerId(1),
                method: "textDocument/hover".to_owned(),
                params: serde_json::json!({"a": [1, null]}),
                timeout_ms: 5,
                retry: true,
                tag: Some(9),
                document: Some(path()),
            },
            WireOp::Cancel { tag: 9 },
            WireOp::ApplyEdit {
                edit: serde_json::json!({"changes": {}}),
                encoding: PositionEncoding::Utf16,
                mode: ApplyMode::Preview,
                based_on: Some(3),
            },
            WireOp::ServerEdits,
            WireOp::RawDiagnostics { path: path() },
            WireOp::Status,
            WireOp::DrainPassive {
                consumer: None,
                shown_file: None,
            },
            WireOp::DrainPassive {
                consumer: Some("c".to_owned()),
                shown_file: Some(path()),
            },
            WireOp::OpenPassive {
                consumer: "c".to_owned(),
            },
            WireOp::ClosePassive {
                consumer: "c".to_owned(),
            },
            WireOp::SubscribeEvents,
            WireOp::CurrentDiagnostics,
            WireOp::ServerDetails,
            WireOp::OpenDocuments,
            WireOp::RunningServers,
            WireOp::Logs {
                filter: "lspc=debug".to_owned(),
            },
            WireOp::Query {
                key: "k".to_owned(),
                request: QueryRequest::Hover {
                    at: at(ColumnOrSymbol::Column(1)),
                },
                timeout_ms: 6,
                config_hash: Some("h".to_owned()),
            },
            WireOp::Reload {
                config_hash: "h".to_owned(),
            },
            WireOp::Info,
            WireOp::Stop,
        ]);
        let mut names: Vec<&str> = ops.iter().map(op_name).collect();
        names.sort_unstable();
        names.dedup();
        let mut expected = WIRE_OPS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected);
        for (id, op) in ops.into_iter().enumerate() {
            let written = serde_json::to_string(&WireRequest { id: id as u64, op }).unwrap();
            let read: WireRequest = serde_json::from_str(&written).expect(&written);
            assert_eq!(serde_json::to_string(&read).unwrap(), written);
        }
    }
}
