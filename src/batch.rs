//! `lspc batch`: many operations over one engine session, as JSON lines.
//!
//! Input (stdin): one JSON object per line, the one operation shape
//! ([`crate::operation::Operation::from_json`]): `{"id": any, "op": NAME, ...arguments}`, with the
//! operations and arguments of [`crate::operation::definitions`] (queries, `diagnostics`, `check`
//! and the edit operations). Lines, columns and occurrences are 1-based; columns count Unicode
//! characters. A relative path is resolved against the workspace root, as MCP does (batch lines
//! are a machine interface, not a shell); a path outside the root, relative or absolute, is
//! refused with MCP's message ([`crate::mcp::tool_arguments::resolve_inside`]). Blank lines are
//! skipped.
//!
//! Output (stdout): exactly one JSON line per request, in input order, flushed at once:
//! `{"id": <the request's id>, "result": ...}` (the object [`crate::operation::execute`] renders,
//! what `lspc <op> --format json` prints) or `{"id": ..., "error": {"message": "..."}}`. A
//! malformed line gets an error line (with `id` `null` when none could be read) and the batch
//! goes on. Requests run one at a time, so order is preserved. The batch ends at EOF, or as soon
//! as the reader of stdout goes away (status 0, as for a broken pipe); the exit status is 0
//! unless stdout fails otherwise.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::edit::commands::EditCommands;
use crate::engine::{EngineOptions, Mailbox, MailboxSender};
use crate::exit::{EXIT_OK, EXIT_SERVER};
use crate::input_lines::{InputLines, NextLine};
use crate::operation::execute::{execute, start_detached, Answer, Context, Done, Failure};
use crate::operation::{ArgumentError, Defaults, Operation};
use crate::query::{Queries, ResultJson};

/// A request's id as its line gave it, echoed in its answer line. Any JSON value is an id; an
/// integer is kept as its text, so one beyond 64 bits (which a `Value` reads as a float:
/// `18446744073709551616` came back as `1.8446744073709552e19`) and `-0` come back exactly as
/// sent (issue 15, item 4).
#[derive(Debug, Clone, PartialEq)]
pub enum RequestId {
    /// An integer literal, as written (`-?[0-9]+`: JSON allows no sign or leading zero else).
    Integer(Box<str>),
    /// Any other value (written back compact, object keys sorted).
    Json(Value),
}

impl RequestId {
    /// The id of a line that has none, or that is not an object.
    pub const NULL: RequestId = RequestId::Json(Value::Null);

    /// The id whose JSON text is `raw`.
    pub fn from_raw(raw: &RawValue) -> RequestId {
        let text = raw.get();
        let digits = text.strip_prefix('-').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return RequestId::Integer(text.into());
        }
        // A raw value is one valid JSON value, so it reads as a `Value`.
        RequestId::Json(serde_json::from_str(text).unwrap_or(Value::Null))
    }

    /// The id of an already parsed line: its `id` member, read again from the line's text when
    /// the `Value` holds a float that may have been an integer literal.
    fn of_line(line: &str, value: &Value) -> RequestId {
        #[derive(serde::Deserialize)]
        struct IdOnly<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
        }
        match value.get("id") {
            None => RequestId::NULL,
            Some(Value::Number(number)) if number.is_f64() => {
                match serde_json::from_str::<IdOnly>(line) {
                    Ok(IdOnly { id: Some(raw) }) => RequestId::from_raw(raw),
                    _ => RequestId::Json(Value::Number(number.clone())),
                }
            }
            Some(Value::Number(number)) => RequestId::Integer(number.to_string().into()),
            Some(other) => RequestId::Json(other.clone()),
        }
    }

    /// Append the id's JSON text to `line`.
    fn write_to(&self, line: &mut Vec<u8>) {
        match self {
            RequestId::Integer(text) => line.extend_from_slice(text.as_bytes()),
            RequestId::Json(value) => {
                let _ = serde_json::to_writer(line, value);
            }
        }
    }
}

/// Parse one input line into its id and operation (the one JSON shape, [`Operation::from_json`]).
/// The id is `null` when the line is not an object.
pub fn parse_line(line: &str) -> (RequestId, Result<Operation, ArgumentError>) {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(parse_error) => {
            return (
                RequestId::NULL,
                Err(ArgumentError(format!("malformed JSON line: {parse_error}"))),
            )
        }
    };
    if !value.is_object() {
        return (
            RequestId::NULL,
            Err(ArgumentError(
                "a batch line must be a JSON object".to_owned(),
            )),
        );
    }
    let id = RequestId::of_line(line, &value);
    (id, Operation::from_json(&value, Defaults::CLI))
}

/// [`parse_line`]'s shortcut for the common line of a position query (issue 15: the line's
/// `Value` tree and the generic argument reader cost the batch thread about 12k instructions):
/// `{"id": ..., "op": NAME, "file": TEXT, "line": N, "column": N}` or with `"symbol": TEXT` (and
/// `"occurrence": N`) instead of the column, for the queries of one request
/// ([`crate::operation::instant`]), read typed and borrowed. `None` for anything else (other keys
/// or operations, another spelling, a `null`, a duplicate key, a value [`parse_line`] would
/// refuse), which [`parse_line`] then reads with its exact errors; for a line both read, both
/// give the same id and operation.
pub fn parse_instant_line(line: &str) -> Option<(RequestId, Operation)> {
    let fields = crate::operation::instant::read_fields(line)?;
    let operation = fields.query(fields.op.as_deref()?, Defaults::CLI)?;
    let id = fields.id.map_or(RequestId::NULL, RequestId::from_raw);
    Some((id, operation))
}

/// The operation with its paths relative to `root` (canonical) or absolute inside it, as MCP
/// resolves a tool's `file` ([`crate::mcp::tool_arguments::resolve_inside`]): batch paths mean
/// what MCP paths mean whatever the current directory, and a line cannot read a file outside
/// the workspace that MCP would refuse. A missing file or a folder inside the root is left to
/// the operation to report (`cannot read a.py: no such file`), as before; `check` takes folders.
///
/// Errors: MCP's message for the first path outside the root.
fn inside_root(root: &Path, operation: Operation) -> Result<Operation, String> {
    use crate::mcp::tool_arguments::resolve_inside;
    operation.try_map_paths(&|path| {
        resolve_inside(root, &path.to_string_lossy()).map_err(|failure| failure.0)
    })
}

/// `operation`, unless it would write files while the configuration has errors: then the
/// line's error, as `lspc rename --apply` refuses (a trial: batch's `rename` with `apply` wrote
/// its files, and only the exit status at the end said the configuration was not the user's).
fn refuse_writes_on_config_errors(
    config: &crate::config::Config,
    operation: Operation,
) -> Result<Operation, String> {
    if !operation.writes() || config.errors.is_empty() {
        return Ok(operation);
    }
    let errors: Vec<String> = config.errors.iter().map(ToString::to_string).collect();
    match crate::operation::refused_on_config_errors(&operation, &errors) {
        Some(refusal) => Err(refusal),
        None => Ok(operation),
    }
}

/// Work for the batch's worker thread: what must not run on the batch thread, which is
/// blocked reading the next line while an operation runs.
enum Job {
    /// An operation that is not instant: run it.
    Run(Operation, Done),
    /// An answer line from a thread that serves every op (the loop, a session's proxy), where a
    /// write to a full pipe would stall the engine: write it.
    Write(Vec<u8>),
    /// The batch is over. Sent explicitly rather than by dropping the last sender: clones of it
    /// live in continuations the engine may hold until it shuts down, after the worker ends.
    Stop,
}

/// Where the answer lines go: shared by the batch thread (malformed lines), the worker and
/// whichever thread ends an instant operation (issue 15: the server's reader writes a hover's
/// line itself). Requests run one at a time, so the lock is rarely contended.
type SharedOutput = Arc<SharedWriter>;

/// Stdout, and the first error writing to it.
struct SharedWriter {
    writer: Mutex<Box<dyn Write + Send>>,
    /// Set (after `error`) when a write failed, so the batch thread checks without taking the
    /// lock, which a reader thread may still hold just after its line went out.
    failed: std::sync::atomic::AtomicBool,
    /// The first error; taken by the batch thread, which ends the batch on it.
    error: Mutex<Option<std::io::Error>>,
}

impl SharedWriter {
    fn new(writer: Box<dyn Write + Send>) -> SharedWriter {
        SharedWriter {
            writer: Mutex::new(writer),
            failed: std::sync::atomic::AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn Write + Send>> {
        self.writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Write one answer line through `writer` (this output's, locked), serialised whole, then
    /// written and flushed in one write; after a failure nothing more is written.
    fn write_line(&self, writer: &mut Box<dyn Write + Send>, line: &[u8]) {
        if self.failed.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if let Err(error) = writer.write_all(line).and_then(|()| writer.flush()) {
            *self
                .error
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error);
            self.failed
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// The write error, if a write failed (once: then `None` again).
    fn take_error(&self) -> Option<std::io::Error> {
        if !self.failed.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        self.error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

/// Write an operation's answer line: take the output, tell the batch thread (`claimed`), then
/// write. The batch thread waits for that word only before it handles its next line, and it
/// comes before the line is out, so a client that sends the next line on reading this one
/// never finds the batch thread waiting for it (a wake-up and two context switches a request,
/// issue 15); the order of the lines holds, since the next operation's line needs the same
/// lock.
fn write_claimed(output: &SharedOutput, line: &[u8], claimed: &MailboxSender<()>) {
    let mut writer = output.lock();
    claimed.send(());
    output.write_line(&mut writer, line);
}

/// The answer line of request `id`: `{"id":...,"result":...}` written straight from its parts
/// (the order a `Value` object would serialise in: keys sorted), or `{"error":...,"id":...}`.
fn answer_line(id: &RequestId, outcome: Result<ResultJson, String>) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    match outcome {
        Ok(result) => {
            line.extend_from_slice(b"{\"id\":");
            id.write_to(&mut line);
            line.extend_from_slice(b",\"result\":");
            result.write_to(&mut line);
            line.push(b'}');
        }
        Err(message) => {
            line.extend_from_slice(b"{\"error\":{\"message\":");
            let _ = serde_json::to_writer(&mut line, &message);
            line.extend_from_slice(b"},\"id\":");
            id.write_to(&mut line);
            line.push(b'}');
        }
    }
    line.push(b'\n');
    line
}

/// Run the batch over `input`, writing answers to `output`; returns the exit status.
///
/// An instant query ([`crate::operation::execute::start_detached`]) has its answer line written by the
/// thread that ends it. The batch thread reads the next line meanwhile, and before it handles
/// that line (or ends at the end of the input) waits until the answer's writer holds the
/// output, so answers stay one per request and in input order without a wake-up of the batch
/// thread per answer (issue 15). An operation that is not instant, and a line ended on a thread
/// that must not block, go to a worker thread, so they never wait for the batch thread's next
/// read. The batch ends at the end of the input, or when stdout's reader goes away (a failed
/// write, or `poll` reporting the pipe's hang-up while the batch thread waits for a line).
pub fn run_with(
    mut engine_options: EngineOptions,
    timeout: Duration,
    input: &mut InputLines,
    output: Box<dyn Write + Send>,
) -> i32 {
    let root = engine_options.config.root.clone();
    let config = engine_options.config.clone();
    // A batch never drains the passive queue, which would keep a copy of every file's
    // diagnostics for as long as the batch runs.
    engine_options.passive_delivery = false;
    let engine = crate::session::start_engine(engine_options);
    let op_sender = engine.op_sender();
    // As in `lspc mcp` (a warm session has its own): files edited behind lspc's back are
    // announced to the servers before the next line runs (`session::watch::Freshness`).
    let active = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watch = match engine.is_remote() {
        true => None,
        false => crate::session::watch::WatchThread::spawn(
            "lspc-batch-watch",
            crate::session::watch::WatchedWorkspace::of(root.clone(), &config),
            op_sender.clone(),
            Arc::clone(&active),
        ),
    };
    let freshness = watch
        .as_ref()
        .map(crate::session::watch::WatchThread::freshness);
    let queries = Queries::new(op_sender.clone(), root.clone(), timeout);
    let edits = EditCommands::new(op_sender.clone(), root.clone(), timeout);
    let context = Context {
        op_sender: &op_sender,
        queries: &queries,
        edits: &edits,
        timeout,
        config: &config,
        rendering: crate::query::command::Rendering::JsonOnly,
        severity: None,
    };
    let output: SharedOutput = Arc::new(SharedWriter::new(output));
    // Each operation's `Done` reports here once it holds the output to write its line.
    let (claimed_sender, claimed_receiver) = crate::engine::mailbox::<()>();
    let (job_sender, job_receiver) = crossbeam_channel::unbounded::<Job>();
    let status = std::thread::scope(|scope| {
        let worker_output = Arc::clone(&output);
        let worker_claimed = claimed_sender.clone();
        let spawned = std::thread::Builder::new()
            .name("lspc-batch-worker".to_owned())
            .spawn_scoped(scope, || {
                run_jobs(&context, job_receiver, worker_output, worker_claimed)
            });
        if let Err(spawn_error) = spawned {
            eprintln!("lspc: cannot start the batch worker thread: {spawn_error}");
            return EXIT_SERVER;
        }
        let status = read_lines(
            &root,
            &context,
            input,
            &output,
            freshness.as_deref(),
            &active,
            Dispatch {
                claimed_sender,
                claimed_receiver: &claimed_receiver,
                job_sender: &job_sender,
            },
        );
        // Every operation has reported by now, so the worker is idle.
        let _ = job_sender.send(Job::Stop);
        status
    });
    drop(watch);
    engine.shutdown();
    status
}

/// How the batch thread hands off operations and learns that their lines are being written.
struct Dispatch<'a> {
    claimed_sender: MailboxSender<()>,
    claimed_receiver: &'a Mailbox<()>,
    job_sender: &'a crossbeam_channel::Sender<Job>,
}

/// The batch thread: reads lines until the end of `input` (or a failed write), starting each
/// operation once the previous one's line holds the output; returns the exit status.
fn read_lines(
    root: &Path,
    context: &Context<'_>,
    input: &mut InputLines,
    output: &SharedOutput,
    freshness: Option<&crate::session::watch::Freshness>,
    active: &std::sync::atomic::AtomicBool,
    dispatch: Dispatch<'_>,
) -> i32 {
    let mut buffer = Vec::new();
    // Whether an operation was started that has not taken the output for its line yet.
    let mut in_flight = false;
    // Waits until the operation in flight, if any, holds the output; `Err` with the exit status
    // when a line could not be written (the operation's, or an earlier one's).
    let settle = |in_flight: &mut bool| -> Result<(), i32> {
        if std::mem::take(in_flight) {
            dispatch.claimed_receiver.recv();
        }
        stop_on_write_error(output.take_error())
    };
    loop {
        buffer.clear();
        let read = input.next_line(&mut buffer);
        if let Err(status) = settle(&mut in_flight) {
            return status;
        }
        match read {
            Ok(NextLine::Line) => {}
            Ok(NextLine::End) => {
                // The last line may still be going out: wait for it, and report its failure.
                drop(output.lock());
                return stop_on_write_error(output.take_error())
                    .err()
                    .unwrap_or(EXIT_OK);
            }
            // Nobody reads the answers any more (as a broken pipe, exit status 0).
            Ok(NextLine::OutputClosed) => return EXIT_OK,
            Err(read_error) => {
                eprintln!("lspc: cannot read stdin: {read_error}");
                return EXIT_SERVER;
            }
        }
        let line = match std::str::from_utf8(&buffer) {
            Err(_) => Err((RequestId::NULL, "a batch line must be UTF-8".to_owned())),
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => {
                let (id, parsed) = match parse_instant_line(line) {
                    Some((id, operation)) => (id, Ok(operation)),
                    None => parse_line(line.trim()),
                };
                match parsed
                    .map_err(|error| error.to_string())
                    .and_then(|operation| inside_root(root, operation))
                    .and_then(|operation| refuse_writes_on_config_errors(context.config, operation))
                {
                    Ok(operation) => Ok((id, operation)),
                    Err(message) => Err((id, message)),
                }
            }
        };
        let (id, operation) = match line {
            Ok(parsed) => parsed,
            Err((id, message)) => {
                output.write_line(&mut output.lock(), &answer_line(&id, Err(message)));
                if let Err(status) = stop_on_write_error(output.take_error()) {
                    return status;
                }
                continue;
            }
        };
        active.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(fresh) = freshness.filter(|fresh| fresh.stale()) {
            log::debug!("workspace files written since the last scan: scanning first");
            fresh.catch_up();
        }
        let (shared, claimed_sender) = (Arc::clone(output), dispatch.claimed_sender.clone());
        let write_sender = dispatch.job_sender.clone();
        let done = Done::new(move |outcome: Result<Answer, Failure>| {
            let outcome = outcome
                .map(|answer| answer.json)
                .map_err(|failure| failure.message);
            let line = answer_line(&id, outcome);
            if crate::engine::serves_ops() {
                // The worker writes it and reports; if it is gone, the batch is ending.
                let _ = write_sender.send(Job::Write(line));
                return;
            }
            write_claimed(&shared, &line, &claimed_sender);
        });
        let run_sender = dispatch.job_sender.clone();
        start_detached(
            context,
            operation,
            done,
            std::sync::Arc::new(move |operation, done| {
                // Dropped unsent (the worker is gone), `done` reports the engine gone.
                let _ = run_sender.send(Job::Run(operation, done));
            }),
        );
        in_flight = true;
    }
}

/// `Ok` without a write error, else the exit status: 0 for a closed stdout (the reader went
/// away), 3 with a message for any other failure.
fn stop_on_write_error(error: Option<std::io::Error>) -> Result<(), i32> {
    match error {
        None => Ok(()),
        Some(write_error) if write_error.kind() == std::io::ErrorKind::BrokenPipe => Err(EXIT_OK),
        Some(write_error) => {
            eprintln!("lspc: cannot write to stdout: {write_error}");
            Err(EXIT_SERVER)
        }
    }
}

/// The worker thread: runs the operations that are not instant and writes the lines handed to
/// it ([`write_claimed`]); returns at [`Job::Stop`].
fn run_jobs(
    context: &Context<'_>,
    jobs: crossbeam_channel::Receiver<Job>,
    output: SharedOutput,
    claimed_sender: MailboxSender<()>,
) {
    for job in jobs {
        match job {
            Job::Run(operation, done) => done.finish(execute(context, &operation)),
            Job::Write(line) => write_claimed(&output, &line, &claimed_sender),
            Job::Stop => return,
        }
    }
}

/// `lspc batch` on stdin and stdout.
pub fn run(engine_options: EngineOptions, timeout: Duration) -> i32 {
    run_with(
        engine_options,
        timeout,
        &mut InputLines::stdin_watching_stdout(),
        Box::new(std::io::stdout()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::command::QueryRequest;
    use crate::query::{
        CallDirection, ColumnOrSymbol, DefinitionKind, TextPosition, TypeDirection,
    };
    use serde_json::json;
    use std::path::PathBuf;

    fn check(line: &str, expected: Result<Operation, &str>) {
        let (_, parsed) = parse_line(line);
        assert_eq!(
            parsed,
            expected.map_err(|message| ArgumentError(message.to_owned())),
            "{line}"
        );
    }

    fn at(file: &str, line: u32, target: ColumnOrSymbol) -> TextPosition {
        TextPosition {
            file: PathBuf::from(file),
            line,
            target,
        }
    }

    #[test]
    fn lines_parse_into_ops() {
        check(
            r#"{"id":1,"op":"definition","file":"a.py","line":3,"column":19}"#,
            Ok(Operation::Query(QueryRequest::Definition {
                at: at("a.py", 3, ColumnOrSymbol::Column(19)),
                kind: DefinitionKind::Definition,
            })),
        );
        check(
            r#"{"id":"x","op":"type_definition","file":"a.py","line":2,"symbol":"a","occurrence":2}"#,
            Ok(Operation::Query(QueryRequest::Definition {
                at: at(
                    "a.py",
                    2,
                    ColumnOrSymbol::Symbol {
                        name: "a".into(),
                        occurrence: 2,
                    },
                ),
                kind: DefinitionKind::TypeDefinition,
            })),
        );
        check(
            r#"{"op":"definition","kind":"implementation","file":"a.ts","line":1,"symbol":"I"}"#,
            Ok(Operation::Query(QueryRequest::Definition {
                at: at(
                    "a.ts",
                    1,
                    ColumnOrSymbol::Symbol {
                        name: "I".into(),
                        occurrence: 1,
                    },
                ),
                kind: DefinitionKind::Implementation,
            })),
        );
        check(
            r#"{"op":"references","file":"a.py","line":1,"column":1,"includeDeclaration":true}"#,
            Ok(Operation::Query(QueryRequest::References {
                at: at("a.py", 1, ColumnOrSymbol::Column(1)),
                include_declaration: true,
            })),
        );
        check(
            r#"{"op":"workspaceSymbols","query":"area"}"#,
            Ok(Operation::Query(QueryRequest::WorkspaceSymbols {
                query: "area".into(),
                file: None,
            })),
        );
        check(
            r#"{"op":"call-hierarchy","file":"u.c","line":2,"column":5,"direction":"incoming"}"#,
            Ok(Operation::Query(QueryRequest::CallHierarchy {
                at: at("u.c", 2, ColumnOrSymbol::Column(5)),
                direction: Some(CallDirection::Incoming),
            })),
        );
        check(
            r#"{"op":"type-hierarchy","file":"s.ts","line":3,"column":7,"direction":"subtypes"}"#,
            Ok(Operation::Query(QueryRequest::TypeHierarchy {
                at: at("s.ts", 3, ColumnOrSymbol::Column(7)),
                direction: TypeDirection::Subtypes,
            })),
        );
        check(
            r#"{"op":"diagnostics","file":"a.py"}"#,
            Ok(Operation::Diagnostics {
                file: Some(PathBuf::from("a.py")),
            }),
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        let unknown_frob = format!(
            "unknown op \"frob\" (expected one of {})",
            crate::operation::definitions::OPERATIONS
                .iter()
                .map(|def| def.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
        check(
            "not json",
            Err("malformed JSON line: expected ident at line 1 column 2"),
        );
        check("[1]", Err("a batch line must be a JSON object"));
        check(r#"{"id":1}"#, Err("missing op"));
        check(r#"{"op":"frob"}"#, Err(&unknown_frob));
        check(
            r#"{"op":"hover","line":1,"column":1}"#,
            Err("hover: file is required"),
        );
        check(
            r#"{"op":"hover","file":"a.py","column":1}"#,
            Err("hover: line is required"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":1}"#,
            Err("hover: give column (1-based, in characters) or symbol (a name on that line)"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":1,"column":1,"symbol":"a"}"#,
            Err("hover: give either column or symbol, not both"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":-1,"column":1}"#,
            Err("hover: line must be a whole number from 1, got -1"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":0,"column":1}"#,
            Err("hover: line must be a whole number from 1, got 0"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":1,"column":0}"#,
            Err("hover: column must be a whole number from 1, got 0"),
        );
        check(
            r#"{"op":"workspace-symbols"}"#,
            Err("workspace-symbols: query is required"),
        );
        check(
            r#"{"op":"call-hierarchy","file":"a","line":1,"column":1,"direction":"up"}"#,
            Err("call-hierarchy: direction \"up\" is not one of incoming, outgoing"),
        );
        let (id, _) = parse_line(r#"{"id":{"n":7},"op":"frob"}"#);
        assert_eq!(id, RequestId::Json(json!({"n": 7})));
    }

    /// The shortcut reads the common query lines, exactly as `parse_line` does, and leaves
    /// every other line (and every error) to it.
    #[test]
    fn instant_lines_parse_as_parse_line_parses_them() {
        let check = |line: &str, read: bool| {
            let fast = parse_instant_line(line);
            assert_eq!(fast.is_some(), read, "{line}");
            if let Some((id, operation)) = fast {
                let (slow_id, slow) = parse_line(line.trim());
                assert_eq!((id, Ok(operation)), (slow_id, slow), "{line}");
            }
        };
        let position_ops = [
            "hover",
            "definition",
            "declaration",
            "type-definition",
            "implementation",
            "references",
            "signature-help",
        ];
        for op in position_ops {
            check(
                &format!(r#"{{"id":7,"op":"{op}","file":"a.py","line":1,"column":5}}"#),
                true,
            );
            check(
                &format!(
                    r#" {{"op":"{op}","symbol":"ab\u00e9","line":3,"file":"d/é.py","id":"x"}} "#
                ),
                true,
            );
            check(
                &format!(
                    r#"{{"id":[1,{{"a":null}}],"op":"{op}","file":"a","line":4294967295,"symbol":"s","occurrence":2}}"#
                ),
                true,
            );
        }
        check(
            r#"{"id":1.5e3,"op":"hover","file":"a.py","line":1,"column":5}"#,
            true,
        );
        check(
            r#"{"id":null,"op":"hover","file":"a.py","line":1,"column":5}"#,
            true,
        );
        for line in [
            r#"{"id":1,"op":"symbols","file":"a.py"}"#,
            r#"{"id":1,"op":"document_symbols","file":"a.py"}"#,
            r#"{"id":1,"op":"signature_help","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"definition","kind":"declaration","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"definition","kind":"type_definition","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"definition","kind":"implementation","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"definition","kind":"definition","file":"a.py","line":1,"symbol":"x"}"#,
            r#"{"id":1,"op":"references","include_declaration":true,"file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"references","include_declaration":false,"file":"a.py","line":1,"column":5}"#,
        ] {
            check(line, true);
        }
        // Left to parse_line, which reads or refuses them.
        for line in [
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"column":5,"end_line":2}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"column":5,"_meta":{}}"#,
            r#"{"id":1,"op":"Hover","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"symbols","file":"a.py","line":1}"#,
            r#"{"id":1,"op":"symbols","file":""}"#,
            r#"{"id":1,"op":"definition","kind":"type-definition","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"definition","kind":"other","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"definition","kind":null,"file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"declaration","kind":"declaration","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"hover","include_declaration":true,"file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"references","include_declaration":1,"file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"references","includeDeclaration":true,"file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":0,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":-1,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1.0,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":4294967296,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":"1","column":5}"#,
            r#"{"id":1,"op":"hover","file":"","line":1,"column":5}"#,
            r#"{"id":1,"op":"hover","file":null,"line":1,"column":5}"#,
            r#"{"id":1,"op":"hover","line":1,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"column":5,"symbol":"a"}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"column":5,"occurrence":1}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"symbol":""}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"symbol":"a","occurrence":0}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"line":2,"column":5}"#,
            r#"{"id":1,"id":2,"op":"hover","file":"a.py","line":1,"column":5}"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"column":5} trailing"#,
            r#"{"id":1,"op":"hover","file":"a.py","line":1,"column":5"#,
            r#"[{"op":"hover"}]"#,
            "not json",
            "",
        ] {
            check(line, false);
        }
    }

    /// Issue 15, item 4: ids come back exactly as sent (an integer beyond 64 bits was echoed as
    /// a float), from both line readers, in result and error lines.
    #[test]
    fn ids_are_echoed_as_sent() {
        let check = |id: &str, echoed: &str| {
            let fast = format!(r#"{{"id":{id},"op":"hover","file":"a.py","line":1,"column":5}}"#);
            let slow = format!(r#"{{"id":{id},"op":"frob"}}"#);
            let (fast_id, _) = parse_instant_line(&fast).expect("an instant line");
            let (slow_id, _) = parse_line(&slow);
            assert_eq!(fast_id, parse_line(&fast).0, "{id}");
            let result = answer_line(&fast_id, Ok(ResultJson::Text("null".to_owned())));
            let error = answer_line(&slow_id, Err("no \"frob\"".to_owned()));
            assert_eq!(
                String::from_utf8(result).unwrap(),
                format!("{{\"id\":{echoed},\"result\":null}}\n")
            );
            assert_eq!(
                String::from_utf8(error).unwrap(),
                format!("{{\"error\":{{\"message\":\"no \\\"frob\\\"\"}},\"id\":{echoed}}}\n")
            );
        };
        check("18446744073709551616", "18446744073709551616");
        check("-9223372036854775809", "-9223372036854775809");
        check("18446744073709551615", "18446744073709551615");
        check("-0", "-0");
        check("0", "0");
        check("1.5e3", "1500.0");
        check(r#""a\u00e9""#, r#""aé""#);
        check(r#"{"b":1, "a":[2]}"#, r#"{"a":[2],"b":1}"#);
        check("null", "null");
    }

    /// Batch paths are relative to the root, as MCP's are (not to the current directory), and a
    /// path outside the root is refused with MCP's message, whether or not it exists (issue 15:
    /// batch read `/elsewhere/a.py` and `../b.py` as given).
    #[test]
    fn batch_paths_resolve_inside_the_root_or_are_refused() {
        let base = std::env::temp_dir().join(format!("lspc-batch-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("w");
        for folder in ["py", "src"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        for file in ["py/app.py", "a.py", "src/a.ts", "a.c"] {
            std::fs::write(root.join(file), "x\n").unwrap();
        }
        std::fs::write(base.join("b.py"), "x\n").unwrap();
        let root = root.canonicalize().unwrap();
        let check = |line: &str, expected: Result<Option<PathBuf>, String>| {
            let op = parse_line(line).1.unwrap();
            let resolved = inside_root(&root, op).map(|resolved| match resolved {
                Operation::Diagnostics { file } => file,
                Operation::Check { paths } => paths.first().cloned(),
                Operation::Query(QueryRequest::Symbols { file }) => Some(file),
                Operation::Query(QueryRequest::WorkspaceSymbols { file, .. }) => file,
                Operation::Query(
                    QueryRequest::Hover { at }
                    | QueryRequest::SignatureHelp { at }
                    | QueryRequest::Definition { at, .. }
                    | QueryRequest::References { at, .. }
                    | QueryRequest::CallHierarchy { at, .. }
                    | QueryRequest::TypeHierarchy { at, .. },
                ) => Some(at.file),
                other => panic!("not a query: {other:?}"),
            });
            assert_eq!(resolved, expected, "{line}");
        };
        let inside = |file: &str| Ok(Some(root.join(file)));
        let outside = |file: &str| {
            Err(format!(
                "{file} is outside the workspace root {}; lspc only serves files inside it",
                root.display()
            ))
        };
        check(
            r#"{"op":"hover","file":"py/app.py","line":1,"column":1}"#,
            inside("py/app.py"),
        );
        let absolute = root.join("a.py").display().to_string();
        check(
            &format!(r#"{{"op":"hover","file":"{absolute}","line":1,"column":1}}"#),
            inside("a.py"),
        );
        check(r#"{"op":"diagnostics","file":"a.py"}"#, inside("a.py"));
        check(r#"{"op":"symbols","file":"src/a.ts"}"#, inside("src/a.ts"));
        check(
            r#"{"op":"workspace-symbols","query":"x","file":"a.c"}"#,
            inside("a.c"),
        );
        check(r#"{"op":"workspace-symbols","query":"x"}"#, Ok(None));
        check(
            r#"{"op":"references","file":"a.py","line":1,"symbol":"a"}"#,
            inside("a.py"),
        );
        // Outside: an existing file next to the root, one that does not exist, /etc.
        check(
            r#"{"op":"signature-help","file":"../b.py","line":2,"column":3}"#,
            outside("../b.py"),
        );
        check(
            r#"{"op":"hover","file":"/elsewhere/a.py","line":1,"column":1}"#,
            outside("/elsewhere/a.py"),
        );
        check(
            r#"{"op":"diagnostics","file":"/etc/hostname"}"#,
            outside("/etc/hostname"),
        );
        check(r#"{"op":"check","paths":["../b.py"]}"#, outside("../b.py"));
        // Inside the root, a folder or a missing file is the operation's to report.
        check(r#"{"op":"check","paths":["py"]}"#, inside("py"));
        check(
            r#"{"op":"symbols","file":"py/missing.py"}"#,
            inside("py/missing.py"),
        );
        check(
            r#"{"op":"symbols","file":"py/./app.py"}"#,
            inside("py/app.py"),
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
