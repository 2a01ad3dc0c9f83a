//! Stdio's instant tool calls, started by the thread that read their line (issue 15).
//!
//! Through the hub, a `tools/call hover` crossed four threads before its request reached the
//! engine's loop: the stdin reader, the hub, a worker, the loop. The hub owns each client's
//! protocol state and must not block, so a call ran on a worker. [`Front::try_start`] starts an
//! instant tool call (hover, the definition kinds, references, document symbols and signature
//! help) on the stdin reader itself, as the hub would have: the in-flight id is registered in the shared [`Calls`] (a duplicate is refused), the
//! call gets an engine tag (so `notifications/cancelled`, handled by the hub, sends
//! `$/cancelRequest` and suppresses the answer through its [`super::calls::AnswerGate`]), and the
//! request goes out in its document sync's loop turn ([`crate::query::command::start_detached`]).
//! The reader does not wait for that turn: it reads the next line meanwhile, and waits for the
//! loop's decision (sent, or handed to a worker) only before it handles that line, so lines keep
//! their order without a wake-up of the reader per call. The thread that ends the request (the
//! server's reader for an answer; the loop for an error, a timeout, a cancellation or a crash)
//! renders the tool result and writes its line ([`finish_instant`]). A call that is not instant
//! now (a readiness wait is due, the position is off its line) is handed to a worker by the
//! thread that decides so (the loop, or the reader), as through the hub.
//!
//! When the fast path applies (otherwise the line goes to the hub, unchanged):
//! - the hub has handled every earlier line of this client ([`StdioShared::behind`] is 0), so the
//!   protocol state read here (the handshake, the ids in flight) is what the hub would see;
//! - the line is a `tools/call` of an instant tool with valid arguments, in the handshake era
//!   after `initialize` was answered or in the stateless era with valid `_meta`;
//! - the configuration did not change on disk ([`super::reload::ConfigWatch::stale`], one
//!   `ioctl` when nothing changed: a changed one is reloaded by the hub before the call, as
//!   before);
//! - no workspace file was written since the last scan (`session::watch::Freshness::stale`,
//!   one `ioctl`: otherwise the hub has the change announced to the servers before the call).
//!
//! A call that asked for progress wakes the hub, which sends its progress as for any call.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use serde_json::Value;

use super::calls::{id_key, Calls, Completion, InFlight, WorkerPool};
use super::protocol::{
    self, error_response, success_response, Incoming, RequestEra, ToolCallLine, INVALID_REQUEST,
};
use super::reload::ConfigWatch;
use super::tools::{self, ToolContext};
use super::{modern_result, send_on, ClientId, HubInput, OutboundStream};
use crate::operation::Operation;
use crate::query::command::{QueryAnswer, QueryRequest, Rendering};
use crate::query::{Queries, QueryError};

/// The tools [`Front::try_start`] may start (their operation is checked too), with what logs and
/// progress messages call them.
const INSTANT_TOOLS: &[(&str, &str)] = &[
    ("hover", "tools/call hover"),
    ("definition", "tools/call definition"),
    ("references", "tools/call references"),
    ("document_symbols", "tools/call document_symbols"),
    ("signature_help", "tools/call signature_help"),
];

/// Protocol state of the stdio client that the reader reads and the hub writes.
#[derive(Default)]
pub(super) struct StdioShared {
    /// Whether `initialize` was answered (the handshake era is open).
    handshake: AtomicBool,
    /// Lines handed to the hub and not yet handled by it.
    behind: AtomicUsize,
}

impl StdioShared {
    /// Reader: a line goes to the hub.
    fn forwarded(&self) {
        self.behind.fetch_add(1, Ordering::AcqRel);
    }
}

/// One line the hub handles for the stdio client (or for another client: then it does
/// nothing). The reader is told the line is handled once: before the hub writes an answer to
/// it (so a client that sends its next line on reading that answer finds the hub caught up), or
/// when the hub is done with it (dropped). Every state change the reader reads is made before
/// either: the handshake opens before `initialize` is answered, a call's id is registered
/// before it runs.
pub(super) struct LineHandled {
    shared: Option<Arc<StdioShared>>,
    marked: Cell<bool>,
}

impl LineHandled {
    /// A line of the stdio client when `shared` is given, else of another client.
    pub(super) fn new(shared: Option<Arc<StdioShared>>) -> LineHandled {
        LineHandled {
            shared,
            marked: Cell::new(false),
        }
    }

    /// `initialize` is about to be answered: the handshake era is open from now on.
    pub(super) fn handshake_open(&self) {
        if let Some(shared) = &self.shared {
            shared.handshake.store(true, Ordering::Release);
        }
    }

    /// The line is handled (once; later calls do nothing).
    pub(super) fn mark(&self) {
        if self.marked.replace(true) {
            return;
        }
        if let Some(shared) = &self.shared {
            shared.behind.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for LineHandled {
    fn drop(&mut self) {
        self.mark();
    }
}

/// What the stdin reader needs to start a call without the hub.
pub(super) struct Front {
    /// [`super::McpOptions::fast_path`]: `false` hands every line to the hub.
    pub enabled: bool,
    /// Shared by the calls the reader starts (one reference count per call, not a copy).
    pub context: Arc<ToolContext>,
    /// The queries every call clones with its own tag.
    pub queries: Queries,
    pub calls: Arc<Calls>,
    pub pool: WorkerPool,
    pub done_sender: Sender<()>,
    pub shared: Arc<StdioShared>,
    pub config_watch: Option<Arc<Mutex<ConfigWatch>>>,
    /// Workspace folder events not yet scanned send the call to the hub, which has them
    /// announced first (`session::watch::Freshness`).
    pub freshness: Option<Arc<crate::session::watch::Freshness>>,
    pub client: ClientId,
    pub out: OutboundStream,
    /// To wake the hub for a call that asked for progress.
    pub hub_sender: Sender<HubInput>,
    /// The loop's decision on the last call started here, waited for by
    /// [`Front::await_decision`].
    pub decisions: super::decision::Decisions,
}

impl Front {
    /// Start `line` (one line of stdin, without its line end) here when the fast path applies
    /// (see the module doc), else hand it to the hub; `Err` once the hub is gone. The line is
    /// read typed first ([`protocol::parse_tool_call`]); only a line not started here is read
    /// into a `Value` ([`protocol::parse_line`], which keeps every error).
    pub(super) fn dispatch_line(&self, line: &str) -> Result<(), ()> {
        self.await_decision();
        if self.enabled && self.shared.behind.load(Ordering::Acquire) == 0 {
            if let Some(call) = protocol::parse_tool_call(line) {
                if self.try_start(&call) {
                    return Ok(());
                }
            }
        }
        self.forward(protocol::parse_line(line))
    }

    /// Wait until the loop has decided the last call started here: its request sent, or the
    /// call handed to a worker (so a later line never overtakes it). Usually decided long
    /// before the next line arrives: then no wait and no system call.
    fn await_decision(&self) {
        // An op dropped unrun (the engine gone) decides as it goes, and its call answered.
        self.decisions.wait();
    }

    /// Hand `incoming` to the hub; `Err` once the hub is gone.
    fn forward(&self, incoming: Incoming) -> Result<(), ()> {
        self.shared.forwarded();
        let message = HubInput::Message {
            client: self.client.clone(),
            incoming,
            stream: self.out.clone(),
        };
        self.hub_sender.send(message).map_err(drop)
    }

    /// Start `call` here when the fast path applies (see the module doc): `true` when it was
    /// started or answered, `false` when its line is the hub's.
    fn try_start(&self, call: &ToolCallLine) -> bool {
        let id = &call.id;
        let Some((name, what)) = INSTANT_TOOLS
            .iter()
            .copied()
            .find(|(tool, _)| *tool == call.name)
        else {
            return false;
        };
        let meta = call.meta.as_ref();
        let modern = match protocol::request_era_of_meta(meta) {
            RequestEra::Handshake if self.shared.handshake.load(Ordering::Acquire) => false,
            RequestEra::Modern(_) => true,
            _ => return false,
        };
        if self.config_watch.as_ref().is_some_and(|watch| {
            watch
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .stale()
        }) {
            return false;
        }
        if self.freshness.as_ref().is_some_and(|fresh| fresh.stale()) {
            return false;
        }
        let typed = call
            .arguments
            .and_then(|raw| tools::prepare_instant(&self.context, name, raw.get()));
        let prepared = match typed {
            Some(prepared) => prepared,
            None => {
                let arguments = match call.arguments {
                    Some(raw) => match serde_json::from_str(raw.get()) {
                        Ok(arguments) => arguments,
                        Err(_) => return false,
                    },
                    None => Value::Object(Default::default()),
                };
                tools::prepare(&self.context, name, &arguments)
            }
        };
        // Arguments that do not read are the hub's to answer, in order with the rest.
        let Ok(Operation::Query(
            request @ (QueryRequest::Hover { .. }
            | QueryRequest::Definition { .. }
            | QueryRequest::References { .. }
            | QueryRequest::Symbols { .. }
            | QueryRequest::SignatureHelp { .. }),
        )) = prepared
        else {
            return false;
        };
        let key = (self.client.clone(), id_key(id));
        let tag = self.calls.next_tag();
        let progress_token = protocol::progress_token_of_meta(meta);
        let wants_progress = progress_token.is_some();
        let call = InFlight::new(tag, progress_token, &self.out, what);
        let Ok(gate) = self.calls.register(key.clone(), call) else {
            send_on(
                &self.out,
                error_response(
                    id,
                    INVALID_REQUEST,
                    "invalid request: a request with this id is still running",
                    None,
                ),
            );
            return true;
        };
        if wants_progress {
            let _ = self.hub_sender.try_send(HubInput::Wake);
        }
        let call = FastCall {
            context: Arc::clone(&self.context),
            pool: self.pool.clone(),
            name,
            request: request.clone(),
            id: id.clone(),
            modern,
            completion: Some(Completion {
                calls: Arc::clone(&self.calls),
                key,
                tag,
                gate,
                stream: self.out.clone(),
                done_sender: self.done_sender.clone(),
            }),
        };
        let queries = self.queries.with_tag(Some(tag));
        // The loop's turn decides; this thread reads the next line meanwhile and waits for the
        // decision only before handling it ([`Front::await_decision`]). A decision made while
        // this thread is in `read` is an atomic store, not a wake-up.
        let decided = self.decisions.start();
        let on_sent = decided.clone();
        let pool = self.pool.clone();
        crate::query::command::start_detached(
            &queries,
            request,
            Rendering::Structured,
            call,
            finish_instant,
            crate::query::command::Handoff {
                not_instant: Box::new(move |request, call| {
                    log::debug!(
                        "tools/call {} started on the stdin reader: not instant now, on a worker",
                        call.name
                    );
                    run_on_worker(&pool, request, call, tag);
                    decided.decide();
                }),
                // After the decision: only the call moves to a worker.
                ask_again: Some(Box::new(move |request, call| {
                    let pool = call.pool.clone();
                    run_on_worker(&pool, request, call, tag);
                })),
            },
            Some(Box::new(move || {
                log::debug!("tools/call {name} started on the stdin reader: in flight");
                on_sent.decide();
            })),
        );
        true
    }
}

/// Runs `call`'s `request` the blocking way on one of `pool`'s workers, as the hub would
/// (`tools::call_prepared`), and answers it.
fn run_on_worker(pool: &WorkerPool, request: QueryRequest, call: FastCall, tag: u64) {
    pool.submit(Box::new(move || {
        let result = tools::call_prepared(&call.context, call.name, Operation::Query(request), tag);
        call.respond(result);
    }));
}

/// A tool call started by the reader, until its answer is written.
struct FastCall {
    context: Arc<ToolContext>,
    pool: WorkerPool,
    name: &'static str,
    /// The query, for the shape of its tool output ([`tools::query_output`]).
    request: QueryRequest,
    id: Value,
    modern: bool,
    /// Taken when the call is answered; a call dropped unanswered (its op never reached a loop
    /// that ran it: the engine or the session's proxy gone) answers "the engine has shut down"
    /// as it goes, so its id never stays in flight without an answer.
    completion: Option<Completion>,
}

impl FastCall {
    /// Answer with the `CallToolResult` `result` (unless the call was cancelled). A handshake-era
    /// answer is serialised straight into its line; a stateless-era one gets its extra fields
    /// as a `Value` first.
    fn respond(mut self, result: tools::CallResult) {
        self.respond_once(result);
    }

    fn respond_once(&mut self, result: tools::CallResult) {
        let Some(completion) = self.completion.take() else {
            return;
        };
        if self.modern {
            let result = modern_result(result.into_value());
            completion.finish(success_response(&self.id, result));
            return;
        }
        completion.finish_serialized(&ResponseLine {
            id: &self.id,
            result: &result,
        });
    }
}

impl FastCall {
    /// Whether a success is answered as is: a handshake-era call (a stateless-era one gets
    /// extra fields), no passive diagnostics due, no notes pending (which
    /// [`tools::call_result`] would add, and mark delivered).
    fn plain_success_due(&self) -> bool {
        !self.modern
            && !tools::passive_drain_due(&self.context)
            && !self
                .context
                .notes_pending
                .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Answer with `result` ([`tools::query_call_result_text`]), unless the call was cancelled.
    fn respond_text(&mut self, result: &tools::TextCallResult) {
        let Some(completion) = self.completion.take() else {
            return;
        };
        completion.finish_line(text_answer_line(&self.id, result));
    }
}

impl Drop for FastCall {
    fn drop(&mut self) {
        if self.completion.is_some() {
            let gone = QueryError::Engine(crate::engine::EngineError::Gone);
            let result = tools::call_result(&self.context, Err(tools::query_failure(gone)), None);
            self.respond_once(result);
        }
    }
}

/// The JSON-RPC success response of request `id` with `result`, written as `success_response`'s
/// `Value` serialises (keys sorted).
fn text_answer_line(id: &Value, result: &tools::TextCallResult) -> Vec<u8> {
    let mut line = Vec::with_capacity(96 + result.text.len() + result.structured.len());
    line.extend_from_slice(b"{\"id\":");
    let _ = serde_json::to_writer(&mut line, id);
    line.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"result\":");
    result.write_to(&mut line);
    line.push(b'}');
    line
}

/// A JSON-RPC success response, serialised as `success_response`'s `Value` is (keys sorted).
struct ResponseLine<'a, T> {
    id: &'a Value,
    result: &'a T,
}

impl<T: serde::Serialize> serde::Serialize for ResponseLine<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("result", self.result)?;
        map.end()
    }
}

/// The end of an instant call, on the thread that ends its request (the server's reader for an
/// answer; the loop, or a session's proxy, for an error, a timeout, a cancellation or a crash):
/// the tool result is rendered and written here, unless passive diagnostics are due. A drain
/// asks the engine's loop and waits for it, which neither the loop itself nor a server's reader
/// may do, so then a worker renders and writes it (the call stays in flight until it does).
fn finish_instant(mut call: FastCall, outcome: Result<QueryAnswer, QueryError>) {
    let outcome = match outcome {
        Ok(answer) if call.plain_success_due() => {
            match tools::query_call_result_text(&call.context.root, &call.request, answer.into()) {
                Ok(result) => {
                    call.respond_text(&result);
                    return;
                }
                Err(answer) => Ok(answer),
            }
        }
        outcome => outcome.map(Into::into),
    };
    let outcome = outcome
        .map_err(tools::query_failure)
        .map(|answer| tools::query_output(&call.context.root, &call.request, answer));
    if !tools::passive_drain_due(&call.context) {
        let result = tools::call_result(&call.context, outcome, None);
        call.respond(result);
        return;
    }
    log::debug!(
        "{}: passive diagnostics due, the result is rendered on a worker",
        call.name
    );
    let pool = call.pool.clone();
    pool.submit(Box::new(move || {
        let passive = tools::passive_batch(&call.context, call.name, None);
        let result = tools::call_result(&call.context, outcome, passive);
        call.respond(result);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The fast path's answer line is byte for byte the hub route's (`success_response` of the
    /// result's `Value`), for a success and a failure.
    #[test]
    fn answer_lines_are_the_hub_routes_bytes() {
        let check = |result: tools::CallResult, id: Value| {
            let typed = serde_json::to_string(&ResponseLine {
                id: &id,
                result: &result,
            })
            .unwrap();
            let hub = serde_json::to_string(&success_response(&id, result.into_value())).unwrap();
            assert_eq!(typed, hub);
        };
        let hover = json!({"hover": {"server": "fx", "text": "greet \"at\" 0:4\n\u{1F600}"}});
        check(
            tools::CallResult {
                text: "greet at 0:4".to_owned(),
                structured: Some(hover),
            },
            json!(7),
        );
        check(
            tools::CallResult {
                text: "cannot read a.py: no such file".to_owned(),
                structured: None,
            },
            json!("req-1"),
        );
    }

    /// The answer line written from a result's JSON text is byte for byte the hub route's
    /// (`query_output`, then the `CallResult` as a `Value` in `success_response`).
    #[test]
    fn text_answer_lines_are_the_hub_routes_bytes() {
        use crate::operation::execute::Answer;
        use crate::query::{ColumnOrSymbol, DefinitionKind, ResultJson, TextPosition};
        let root = std::path::Path::new("/w");
        let at = TextPosition {
            file: "/w/a.c".into(),
            line: 1,
            target: ColumnOrSymbol::Column(1),
        };
        let hover = QueryRequest::Hover { at: at.clone() };
        let definition = QueryRequest::Definition {
            at: at.clone(),
            kind: DefinitionKind::Definition,
        };
        let signature = QueryRequest::SignatureHelp { at };
        let check = |query: &QueryRequest, json: &str, human: &str, note: Option<&str>| {
            let answer = Answer {
                json: ResultJson::Text(json.to_owned()),
                human: human.to_owned(),
                found: true,
                note: note.map(str::to_owned),
                incomplete: false,
                new_errors: 0,
            };
            let id = json!(41);
            let Ok(text) = tools::query_call_result_text(root, query, answer.clone()) else {
                panic!("declined: {json}");
            };
            let (structured, hub_text) = tools::query_output(root, query, answer);
            let hub = tools::CallResult {
                text: hub_text.trim_end().to_owned(),
                structured: Some(structured),
            };
            let hub = serde_json::to_string(&success_response(&id, hub.into_value())).unwrap();
            assert_eq!(
                String::from_utf8(text_answer_line(&id, &text)).unwrap(),
                hub
            );
        };
        check(
            &hover,
            r#"{"range":null,"server":"fx","text":"greet \"at\" 0:4\n\u00e9😀"}"#,
            "greet \"at\" 0:4\n\n",
            None,
        );
        check(&hover, "null", "", Some("still indexing"));
        check(
            &definition,
            r#"{"locations":[{"column":5,"endColumn":10,"endLine":2,"line":2,"lineText":null,"path":"/w/src/u.c"},{"path":"/usr/include/stdio.h"}],"server":"clangd"}"#,
            "src/u.c:2:5\n",
            None,
        );
        check(&signature, r#"{"active":null,"signatures":[]}"#, "", None);
        // A definition answer without its locations is left to the Value route.
        let bare = Answer {
            json: ResultJson::Text(r#"{"server":"s"}"#.to_owned()),
            human: String::new(),
            found: false,
            note: None,
            incomplete: false,
            new_errors: 0,
        };
        assert!(tools::query_call_result_text(root, &definition, bare).is_err());
    }
}
