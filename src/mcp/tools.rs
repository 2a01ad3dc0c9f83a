//! MCP tools: their JSON schemas, capability gating, argument parsing and handlers.
//!
//! Conventions (issue 4, seed 004): positions in and out are 1-based lines and 1-based columns
//! counted in Unicode characters; files are given relative to the workspace root or absolute
//! inside it, and shown relative to the root. A handler never returns a JSON-RPC error for a
//! failing call: it returns a result with `isError: true` and a message that names the server,
//! the capability and what to try, and nothing else. Every successful result also carries the
//! passive diagnostics that arrived since the last delivery (`newDiagnostics`), drained with the
//! seed's rules; a failed call leaves them for the next success.
//!
//! Results: `structuredContent` is an object matching the tool's `outputSchema` (keys whose value
//! would be `null` are omitted), plus one text rendering in `content`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::protocol;
use crate::diagnostics::{Diagnostic, DrainedBatch};
use crate::engine::{self, DiagnosticsOutcome, Op, ServerDetails};
use crate::operation::execute::Answer;
use crate::operation::{definitions, Defaults, Operation};
use crate::query::command::{execute as execute_query, QueryRequest};
use crate::query::Queries;

pub use super::tool_arguments::{clean_json, display_path, resolve_file, ToolContext, ToolFailure};

/// A tool lspc may offer: its name and the `ServerCapabilities` keys of which at least one must be
/// advertised by some server (empty: always offered).
struct ToolSpec {
    name: &'static str,
    capabilities: &'static [&'static str],
}

const TOOL_SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: "definition",
        capabilities: &[
            "definitionProvider",
            "declarationProvider",
            "typeDefinitionProvider",
            "implementationProvider",
        ],
    },
    ToolSpec {
        name: "references",
        capabilities: &["referencesProvider"],
    },
    ToolSpec {
        name: "hover",
        capabilities: &["hoverProvider"],
    },
    ToolSpec {
        name: "document_symbols",
        capabilities: &["documentSymbolProvider"],
    },
    ToolSpec {
        name: "workspace_symbols",
        capabilities: &["workspaceSymbolProvider"],
    },
    ToolSpec {
        name: "call_hierarchy",
        capabilities: &["callHierarchyProvider"],
    },
    ToolSpec {
        name: "type_hierarchy",
        capabilities: &["typeHierarchyProvider"],
    },
    ToolSpec {
        name: "signature_help",
        capabilities: &["signatureHelpProvider"],
    },
    ToolSpec {
        name: "diagnostics",
        capabilities: &[],
    },
    ToolSpec {
        name: "rename",
        capabilities: &["renameProvider"],
    },
    ToolSpec {
        name: "code_actions",
        capabilities: &["codeActionProvider"],
    },
    ToolSpec {
        name: "apply_code_action",
        capabilities: &["codeActionProvider"],
    },
    ToolSpec {
        name: "format",
        capabilities: &["documentFormattingProvider"],
    },
    ToolSpec {
        name: "edit",
        capabilities: &[],
    },
];

fn advertises(capabilities: &Value, key: &str) -> bool {
    !matches!(
        capabilities.get(key),
        None | Some(Value::Null) | Some(Value::Bool(false))
    )
}

/// The names of the tools to offer, in a stable order: a tool is offered when some available
/// server advertises one of its capabilities, or has not started yet (its capabilities are not
/// known; lspc sends `notifications/tools/list_changed` once they are). `diagnostics` and `edit`
/// are always offered.
pub fn offered_tools(servers: &[ServerDetails]) -> Vec<&'static str> {
    TOOL_SPECS
        .iter()
        .filter(|spec| {
            spec.capabilities.is_empty()
                || servers
                    .iter()
                    .filter(|server| server.available)
                    .any(|server| match &server.capabilities {
                        None => true,
                        Some(capabilities) => spec
                            .capabilities
                            .iter()
                            .any(|key| advertises(capabilities, key)),
                    })
        })
        .map(|spec| spec.name)
        .collect()
}

fn new_diagnostics_schema() -> Value {
    json!({
        "type": "object",
        "description": "Diagnostics published since the last delivery (deduplicated, at most 10 per file and 30 in total)",
        "properties": {
            "files": {"type": "array", "items": {"type": "object"}},
            "more": {"type": "integer"},
            "note": {"type": "string"},
            "clean": {"type": "array", "items": {"type": "string"}, "description": "Files whose findings delivered before are all gone (now clean)"}
        }
    })
}

fn output_schema(mut properties: Map<String, Value>, required: &[&str]) -> Value {
    properties.insert("newDiagnostics".to_owned(), new_diagnostics_schema());
    json!({"type": "object", "properties": properties, "required": required})
}

fn locations_output() -> Value {
    let mut properties = Map::new();
    properties.insert(
        "locations".to_owned(),
        json!({"type": "array", "items": {"type": "object"}}),
    );
    properties.insert("server".to_owned(), json!({"type": "string"}));
    properties.insert("incomplete".to_owned(), json!({"type": "string"}));
    output_schema(properties, &["locations"])
}

fn one_property_output(key: &str, schema: Value) -> Value {
    let mut properties = Map::new();
    properties.insert(key.to_owned(), schema);
    output_schema(properties, &[key])
}

/// The `tools/list` entry for `name` (MCP 2025-06-18+ `Tool` with `inputSchema` and
/// `outputSchema`). The description and `inputSchema` come from the operation's one definition
/// ([`crate::operation::definitions`]), so the tool accepts exactly what it advertises.
pub fn tool_definition(name: &str) -> Value {
    let Some(def) = definitions::find_tool(name) else {
        return Value::Null;
    };
    let input = definitions::input_schema(def);
    if let Some((output, read_only)) = super::edit_tools::definition(name) {
        return json!({
            "name": name,
            "description": def.summary,
            "inputSchema": input,
            "outputSchema": output,
            "annotations": {
                "readOnlyHint": read_only,
                "destructiveHint": false,
                "idempotentHint": false,
                "openWorldHint": false
            }
        });
    }
    let array_of_objects = || json!({"type": "array", "items": {"type": "object"}});
    let output = match name {
        "definition" | "references" => locations_output(),
        "hover" => one_property_output("hover", json!({"type": ["object", "null"]})),
        "document_symbols" | "workspace_symbols" => {
            one_property_output("symbols", array_of_objects())
        }
        "call_hierarchy" => {
            let mut properties = Map::new();
            properties.insert("items".to_owned(), array_of_objects());
            properties.insert("calls".to_owned(), array_of_objects());
            output_schema(properties, &["items"])
        }
        "type_hierarchy" => one_property_output("hierarchy", json!({"type": "object"})),
        "signature_help" => {
            one_property_output("signatureHelp", json!({"type": ["object", "null"]}))
        }
        _ => {
            let mut properties = Map::new();
            properties.insert("files".to_owned(), array_of_objects());
            properties.insert("more".to_owned(), json!({"type": "integer"}));
            properties.insert("note".to_owned(), json!({"type": "string"}));
            properties.insert(
                "clean".to_owned(),
                json!({"type": "array", "items": {"type": "string"}}),
            );
            properties.insert(
                "complete".to_owned(),
                json!({"type": "boolean", "description": "false when a server had not settled (still analysing, or failed): a file without findings is then not known to be clean; `note` says which"}),
            );
            output_schema(properties, &["files", "complete"])
        }
    };
    json!({
        "name": name,
        "description": def.summary,
        "inputSchema": input,
        "outputSchema": output,
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

/// Whether `name` is one of lspc's tools.
pub fn is_tool(name: &str) -> bool {
    TOOL_SPECS.iter().any(|spec| spec.name == name)
}

/// One diagnostic as agents see it (1-based lines and character columns, root-relative file).
pub fn diagnostic_json(root: &Path, diagnostic: &Diagnostic) -> Value {
    let mut object = json!({
        "file": display_path(root, &diagnostic.path),
        "line": diagnostic.line,
        "column": diagnostic.column,
        "endLine": diagnostic.end_line,
        "endColumn": diagnostic.end_column,
        "severity": diagnostic.severity.as_str(),
        "message": diagnostic.message,
        "server": diagnostic.server,
    });
    if let Some(source) = &diagnostic.source {
        object["source"] = json!(source);
    }
    if let Some(code) = &diagnostic.code {
        object["code"] = json!(code);
    }
    object
}

/// [`crate::output::human_diagnostic`] without its last newline (`file:line:column: severity:
/// message [source code]`, further message lines indented).
pub fn diagnostic_text(root: &Path, diagnostic: &Diagnostic) -> String {
    let mut text =
        crate::output::human_diagnostic(&display_path(root, &diagnostic.path), diagnostic, false);
    text.pop();
    text
}

/// A drained passive batch as JSON (`files`, `more`, `note`) and text.
pub fn drained_json(root: &Path, batch: &DrainedBatch) -> (Value, String) {
    let mut text = String::new();
    let files: Vec<Value> = batch
        .files
        .iter()
        .map(|(path, diags)| {
            for diagnostic in diags {
                text.push_str(&diagnostic_text(root, diagnostic));
                text.push('\n');
            }
            json!({
                "file": display_path(root, path),
                "diagnostics": diags.iter().map(|d| diagnostic_json(root, d)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut object = json!({ "files": files });
    if !batch.cleared.is_empty() {
        let cleared: Vec<String> = batch
            .cleared
            .iter()
            .map(|path| display_path(root, path))
            .collect();
        text.push_str(&format!(
            "now clean (every finding reported before is gone): {}\n",
            cleared.join(", ")
        ));
        object["clean"] = json!(cleared);
    }
    if batch.n_more > 0 {
        let note = format!(
            "{} more diagnostics not shown (caps: 10 per file, 30 in total); call diagnostics with a file to see all of that file's",
            batch.n_more
        );
        text.push_str(&note);
        text.push('\n');
        object["more"] = json!(batch.n_more);
        object["note"] = json!(note);
    }
    (object, text)
}

/// Run tool `name` with `arguments` and build the `CallToolResult`. `tag` lets the caller cancel
/// the LSP request in flight with [`Op::Cancel`].
pub fn call_tool(context: &ToolContext, name: &str, arguments: &Value, tag: u64) -> Value {
    let outcome = prepare(context, name, arguments)
        .and_then(|operation| run_tool(context, name, operation, tag));
    // Only the diagnostics tool needs the file resolved again (a path walk per call otherwise).
    let asked_file = (name == "diagnostics")
        .then(|| arguments.get("file").and_then(Value::as_str))
        .flatten()
        .and_then(|file| resolve_file(&context.root, file).ok());
    let passive = passive_batch(context, name, asked_file.as_deref());
    call_result(context, outcome, passive).into_value()
}

/// [`call_tool`] of an operation [`prepare`] already read from tool `name`'s arguments (not the
/// diagnostics tool, whose passive batch depends on its file argument).
pub fn call_prepared(
    context: &ToolContext,
    name: &str,
    operation: Operation,
    tag: u64,
) -> CallResult {
    let outcome = run_tool(context, name, operation, tag);
    let passive = passive_batch(context, name, None);
    call_result(context, outcome, passive)
}

/// Whether the `newDiagnostics` of a tool other than `diagnostics` needs a drain, an engine
/// round trip ([`super::tool_arguments::PassiveDrains::due`]); without one its result is
/// [`call_result`] with no passive batch.
pub fn passive_drain_due(context: &ToolContext) -> bool {
    context
        .passive_drains
        .due(context.passive_consumer.as_deref())
}

/// The passive diagnostics to deliver with tool `name`'s result, drained only once the result
/// is known to carry them ([`call_result`] of a success); the diagnostics tool with
/// `asked_file` (resolved) does not repeat that file's. `None` when the tool carries none.
pub fn passive_batch<'a>(
    context: &'a ToolContext,
    name: &'a str,
    asked_file: Option<&'a Path>,
) -> Option<PassiveDrain<'a>> {
    if name == "diagnostics" && asked_file.is_none() {
        return None;
    }
    Some(PassiveDrain {
        context,
        name,
        asked_file,
    })
}

/// A drain of the passive diagnostics not done yet ([`passive_batch`]): a failed call leaves
/// them queued, so its error result carries only the error and the next successful call
/// delivers them.
pub struct PassiveDrain<'a> {
    context: &'a ToolContext,
    name: &'a str,
    asked_file: Option<&'a Path>,
}

impl PassiveDrain<'_> {
    /// The new diagnostics (a drain when one is due), marked delivered; `None` when there are
    /// none.
    fn drain(self) -> Option<DrainedBatch> {
        let PassiveDrain {
            context,
            name,
            asked_file,
        } = self;
        // The diagnostics tool just showed its file in full: that file's whole set counts as
        // delivered, so none of it is repeated as new nor counted in the "N more" note.
        let shown_file = asked_file.filter(|_| name == "diagnostics");
        context
            .passive_drains
            .drain(
                &context.op_sender,
                context.passive_consumer.as_deref(),
                shown_file,
            )
            .filter(|batch| {
                !batch.files.is_empty() || batch.n_more > 0 || !batch.cleared.is_empty()
            })
    }
}

/// The `CallToolResult` of a tool's `outcome`: a success's structured content and its text with
/// `passive` (the new diagnostics, drained here) and, once per session, the install hints; or a
/// failure's message alone (the passive diagnostics stay queued for the next success: an agent
/// reads an error result as the error, issue 15).
pub fn call_result(
    context: &ToolContext,
    outcome: Result<(Value, String), ToolFailure>,
    passive: Option<PassiveDrain<'_>>,
) -> CallResult {
    match outcome {
        Ok((mut structured, mut text)) => {
            if let Some(batch) = passive.and_then(PassiveDrain::drain) {
                let (json, passive_text) = drained_json(&context.root, &batch);
                structured["newDiagnostics"] = json;
                text.push_str("\nNew diagnostics since the last call:\n");
                text.push_str(&passive_text);
            }
            if context
                .notes_pending
                .swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                let mut notes = context.config_error_notes();
                notes.extend(context.install_hints.iter().cloned());
                if !notes.is_empty() {
                    text.push_str("\nNotes:\n");
                    for note in &notes {
                        text.push_str(&format!("- {note}\n"));
                    }
                    structured["notes"] = json!(notes);
                }
            }
            CallResult {
                text: trimmed_end(text),
                structured: Some(structured),
            }
        }
        Err(ToolFailure(message)) => CallResult {
            text: trimmed_end(message),
            structured: None,
        },
    }
}

/// A `CallToolResult` (MCP §tools "Tool Result") before it is JSON: one text content item, and
/// the structured content of a success (a failure has none and is `isError: true`). Serialised
/// directly (the stdio fast path writes it without building a `Value` tree, issue 15) or made a
/// `Value`; both give the same JSON, keys in the same (sorted) order.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub text: String,
    pub structured: Option<Value>,
}

impl CallResult {
    /// The result as a `Value` (`content`, `isError`, `structuredContent`).
    pub fn into_value(self) -> Value {
        let is_error = self.structured.is_none();
        let mut object = protocol::object([
            ("content", json!([{"type": "text", "text": self.text}])),
            ("isError", json!(is_error)),
        ]);
        if let Some(structured) = self.structured {
            object["structuredContent"] = structured;
        }
        object
    }
}

/// `text` without trailing whitespace, in place (the result's text is moved, not copied).
fn trimmed_end(mut text: String) -> String {
    text.truncate(text.trim_end().len());
    text
}

/// A failed query as the tool's failure: the message and a hint at what to try.
pub fn query_failure(error: impl std::fmt::Display) -> ToolFailure {
    let message = error.to_string();
    let hint = if message.contains("not support") || message.contains("Provider") {
        " (this server lacks that capability; try another tool, e.g. document_symbols or references)"
    } else if message.contains("timed out") {
        " (the server may still be indexing; retry in a few seconds)"
    } else if message.contains("no language server") {
        " (configure a server for this extension in .lsp.json; see lsp://servers)"
    } else if message.contains("stays down") {
        // Given up on (or restarts disabled): no call restarts it in this lspc process.
        " (see lsp://servers for its state and stderr; lspc does not start it again in this process)"
    } else if message.contains("removed by a configuration reload") {
        // No call starts a removed server (helper-71: the hint below promised a restart).
        " (its entry is no longer in the configuration; see lsp://servers)"
    } else if message.contains("crashed") || message.contains("failed to start") {
        " (see lsp://servers for its state and stderr; lspc restarts it on the next call while restarts remain)"
    } else {
        ""
    };
    ToolFailure(format!("{message}{hint}"))
}

/// Read tool `name`'s `arguments` into its operation, with files resolved inside the root (the
/// operation's JSON shape without `op`: one checker, the same messages as the command line and
/// batch).
///
/// Errors ([`ToolFailure`]): arguments not an object, or what the operation's reader or
/// [`resolve_file`] refuses.
pub fn prepare(context: &ToolContext, name: &str, args: &Value) -> Result<Operation, ToolFailure> {
    let Value::Object(arguments) = args else {
        return Err(ToolFailure("arguments must be a JSON object".to_owned()));
    };
    let root = &context.root;
    Operation::from_arguments(name, arguments, Defaults::MCP)
        .map_err(|error| ToolFailure(error.0))?
        .try_map_paths(&|path| {
            resolve_file(root, &path.to_string_lossy()).map_err(|failure| failure.0)
        })
        .map_err(ToolFailure)
}

/// [`prepare`]'s shortcut for the common arguments of a position query (issue 15): read typed
/// by [`crate::operation::instant`] from their JSON text, without a `Value` tree or the generic
/// argument reader. `None` when they are not read there (the caller then parses them and calls
/// [`prepare`], which reads or refuses them with its own messages); otherwise what [`prepare`]
/// gives for the same arguments, the file resolved inside the root as there.
pub fn prepare_instant(
    context: &ToolContext,
    name: &str,
    arguments: &str,
) -> Option<Result<Operation, ToolFailure>> {
    let fields = crate::operation::instant::read_fields(arguments)?;
    if fields.id.is_some() || fields.op.is_some() {
        return None;
    }
    let root = &context.root;
    let operation = fields.query(name, Defaults::MCP)?;
    Some(
        operation
            .try_map_paths(&|path| {
                resolve_file(root, &path.to_string_lossy()).map_err(|failure| failure.0)
            })
            .map_err(ToolFailure),
    )
}

fn run_tool(
    context: &ToolContext,
    name: &str,
    operation: Operation,
    tag: u64,
) -> Result<(Value, String), ToolFailure> {
    let root = &context.root;
    let query = match operation {
        Operation::Query(query) => query,
        Operation::Diagnostics { file } => return diagnostics_tool(context, file.as_deref()),
        operation => {
            refuse_writes_on_config_errors(context, &operation)?;
            return super::edit_tools::run(context, name, &operation, tag);
        }
    };
    let queries = queries(context, tag);
    // The answer is rendered where the command line's and batch's are
    // (`query::command::execute`); MCP only wraps it in the key its `outputSchema` names.
    let answer = execute_query(&queries, &query).map_err(query_failure)?;
    Ok(query_output(root, &query, answer.into()))
}

/// Refuses an operation that would write files while the configuration in force has errors,
/// as `lspc rename --apply` and `lspc batch` do (a trial: the MCP `edit`, `rename` and `format`
/// tools wrote where the command line refused). The configuration reloads when its files
/// change, and the errors with it.
fn refuse_writes_on_config_errors(
    context: &ToolContext,
    operation: &Operation,
) -> Result<(), ToolFailure> {
    let errors = context
        .config_errors
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    match crate::operation::refused_on_config_errors(operation, &errors) {
        Some(refusal) => Err(ToolFailure(format!(
            "{refusal}; see lsp://servers configErrors"
        ))),
        None => Ok(()),
    }
}

/// The queries of one tool call: its LSP requests carry `tag` (for [`Op::Cancel`]), and the
/// session's record of first analysis waits is shared.
pub fn queries(context: &ToolContext, tag: u64) -> Queries {
    Queries::new(
        context.op_sender.clone(),
        context.root.clone(),
        context.timeout,
    )
    .with_analysed_files(context.analysed_files.clone())
    .with_tag(Some(tag))
}

/// A query's tool output from its rendered `answer`: the structured content (wrapped in the key
/// the tool's `outputSchema` names, paths relative to `root`) and its text.
pub fn query_output(root: &Path, query: &QueryRequest, answer: Answer) -> (Value, String) {
    let mut json = answer.json.into_value();
    clean_json(&mut json, root);
    let structured = match query {
        QueryRequest::Definition { .. } | QueryRequest::References { .. } => {
            with_default(json, "locations")
        }
        QueryRequest::Symbols { .. } | QueryRequest::WorkspaceSymbols { .. } => {
            with_default(json, "symbols")
        }
        QueryRequest::CallHierarchy { .. } => with_default(json, "items"),
        QueryRequest::Hover { .. } => protocol::object([("hover", json)]),
        QueryRequest::TypeHierarchy { .. } => protocol::object([("hierarchy", json)]),
        QueryRequest::SignatureHelp { .. } => protocol::object([("signatureHelp", json)]),
    };
    (structured, query_text(query, answer.human, answer.note))
}

/// A query's tool output text: its human rendering (or what was not found), then its note.
fn query_text(query: &QueryRequest, human: String, note: Option<String>) -> String {
    let mut text = if human.trim().is_empty() {
        let hint = match query {
            QueryRequest::SignatureHelp { .. } => " (put the position inside a call's parentheses)",
            _ => "",
        };
        format!("{}{hint}\n", query.nothing_found())
    } else {
        human
    };
    if let Some(note) = note {
        text.push_str(&note);
        text.push('\n');
    }
    text
}

/// [`call_result`] of a query's `answer` with no passive diagnostics and no install hints, its
/// structured content written straight from the answer's JSON text ([`super::structured`]),
/// or copied when the text is in the cleaned form already
/// ([`crate::query::ResultJson::Cleaned`]): the same bytes as [`query_output`] then
/// [`call_result`] give. `Err(answer)` (given back) when the answer is a `Value` tree or its
/// text is declined.
pub fn query_call_result_text(
    root: &Path,
    query: &QueryRequest,
    answer: Answer,
) -> Result<TextCallResult, Answer> {
    let (json, cleaned) = match &answer.json {
        crate::query::ResultJson::Text(json) => (json, false),
        crate::query::ResultJson::Cleaned(json) => (json, true),
        crate::query::ResultJson::Tree(_) => return Err(answer),
    };
    let (required, wrap) = match query {
        QueryRequest::Definition { .. } | QueryRequest::References { .. } => {
            (Some("locations"), None)
        }
        QueryRequest::Symbols { .. } | QueryRequest::WorkspaceSymbols { .. } => {
            (Some("symbols"), None)
        }
        QueryRequest::CallHierarchy { .. } => (Some("items"), None),
        QueryRequest::Hover { .. } => (None, Some("{\"hover\":")),
        QueryRequest::TypeHierarchy { .. } => (None, Some("{\"hierarchy\":")),
        QueryRequest::SignatureHelp { .. } => (None, Some("{\"signatureHelp\":")),
    };
    let mut structured = Vec::with_capacity(json.len() + 24);
    structured.extend_from_slice(wrap.unwrap_or("").as_bytes());
    if cleaned {
        // Already in the cleaned form: a result with a list member (`required`) always writes
        // it, so only the wrapped kinds can be `null` here, as the text route allows.
        structured.extend_from_slice(json.as_bytes());
    } else if !super::structured::cleaned_into(json, root, required, &mut structured) {
        return Err(answer);
    }
    if wrap.is_some() {
        structured.push(b'}');
    }
    Ok(TextCallResult {
        text: trimmed_end(query_text(query, answer.human, answer.note)),
        structured,
    })
}

/// A successful [`CallResult`] whose structured content is JSON text
/// ([`query_call_result_text`]), written as the `CallResult` serialises.
pub struct TextCallResult {
    pub text: String,
    /// One JSON value, compact.
    pub structured: Vec<u8>,
}

impl TextCallResult {
    /// Append the `CallToolResult` object to `out` (keys sorted, as [`CallResult`] writes them).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"content\":[{\"text\":");
        let _ = serde_json::to_writer(&mut *out, self.text.as_str());
        out.extend_from_slice(b",\"type\":\"text\"}],\"isError\":false,\"structuredContent\":");
        out.extend_from_slice(&self.structured);
        out.push(b'}');
    }
}

impl serde::Serialize for CallResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_call_result(serializer, &self.text, self.structured.as_ref())
    }
}

/// A `CallToolResult`: `content` (one text item), `isError` (no structured content) and
/// `structuredContent`, keys sorted as a `Value` would have them.
fn serialize_call_result<S: serde::Serializer>(
    serializer: S,
    text: &str,
    structured: Option<&impl serde::Serialize>,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    /// `{"text": ..., "type": "text"}`.
    struct TextContent<'a>(&'a str);
    impl serde::Serialize for TextContent<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(2))?;
            map.serialize_entry("text", self.0)?;
            map.serialize_entry("type", "text")?;
            map.end()
        }
    }
    let mut map = serializer.serialize_map(Some(2 + usize::from(structured.is_some())))?;
    map.serialize_entry("content", &[TextContent(text)])?;
    map.serialize_entry("isError", &structured.is_none())?;
    if let Some(structured) = structured {
        map.serialize_entry("structuredContent", structured)?;
    }
    map.end()
}

/// `json` with `key` set to an empty list when the answer left it out.
fn with_default(mut json: Value, key: &str) -> Value {
    if !json.is_object() {
        json = json!({});
    }
    if json.get(key).is_none() {
        json[key] = json!([]);
    }
    json
}

/// Why a file's diagnostics wait did not settle (its servers still analysing, or some failed),
/// or `None` when it settled or the file was never sent to a server.
fn unsettled_reason(outcome: &DiagnosticsOutcome) -> Option<String> {
    match outcome {
        DiagnosticsOutcome::Settled(_) | DiagnosticsOutcome::NotChecked(_) => None,
        DiagnosticsOutcome::TimedOut { servers, after, .. } => Some(format!(
            "{} still analysing after {} s",
            servers.join(", "),
            after.as_secs()
        )),
        DiagnosticsOutcome::PartlyFailed { failures, .. } => Some(failures.clone()),
        DiagnosticsOutcome::Failed(message) => Some(message.clone()),
    }
}

fn diagnostics_tool(
    context: &ToolContext,
    file: Option<&Path>,
) -> Result<(Value, String), ToolFailure> {
    let root = &context.root;
    let Some(path) = file else {
        // The open documents' diagnostics settled first: the wait re-sends the files changed
        // on disk behind lspc's back (and the files analysed against them), so their new
        // diagnostics are delivered now. Without it, an outside edit that broke open files
        // read as "no new diagnostics" until a call named one of them (a new user's agent on
        // antirez/sds with clangd, 7 of 7). Documents already settled for their text cost
        // nothing more.
        // An open document whose wait did not settle (still analysing, its server failed)
        // makes "no new diagnostics" unproven: said so, with `complete: false` (a drain
        // after a timed-out wait read as nothing new, the very "clean" the agent must not
        // be told).
        let open = engine::open_documents(&context.op_sender);
        let unsettled: Vec<String> = if open.is_empty() {
            Vec::new()
        } else {
            engine::diagnostics_with(&context.op_sender, open, context.timeout)
                .ok_or_else(|| ToolFailure("the engine has shut down".to_owned()))?
                .iter()
                .filter_map(|file| {
                    let reason = unsettled_reason(&file.outcome)?;
                    Some(format!("{}: {reason}", display_path(root, &file.path)))
                })
                .collect()
        };
        let batch = engine::drain_passive(
            &context.op_sender,
            context.passive_consumer.as_deref(),
            None,
        );
        let (mut json, mut text) = match batch {
            Some(batch) => {
                let (json, text) = drained_json(root, &batch);
                if batch.files.is_empty() {
                    let nothing = "no new diagnostics since the last delivery";
                    (json, format!("{nothing}\n{text}"))
                } else {
                    (json, text)
                }
            }
            None => (
                json!({"files": []}),
                "no new diagnostics since the last delivery".to_owned(),
            ),
        };
        json["complete"] = json!(unsettled.is_empty());
        if !unsettled.is_empty() {
            let note = format!(
                "not settled, more diagnostics may come (retry later): {}",
                unsettled.join("; ")
            );
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&note);
            json["note"] = match json.get("note").and_then(Value::as_str) {
                Some(caps) => json!(format!("{caps}; {note}")),
                None => json!(note),
            };
        }
        return Ok((json, text));
    };
    let path = path.to_path_buf();
    let file = display_path(root, &path);
    let results = {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        context
            .op_sender
            .send(Op::Diagnostics {
                paths: vec![path.clone()],
                timeout: context.timeout,
                reply,
            })
            .map_err(|_| ToolFailure("the engine has shut down".to_owned()))?;
        receiver
            .recv_timeout(context.timeout * 2 + Duration::from_secs(5))
            .map_err(|_| ToolFailure(format!("diagnostics for {file} did not settle in time")))?
    };
    let Some(result) = results.into_iter().next() else {
        return Err(ToolFailure("the engine has shut down".to_owned()));
    };
    let relative = display_path(root, &path);
    let (mut diags, note) = match result.outcome {
        DiagnosticsOutcome::Settled(diags) => (diags, None),
        DiagnosticsOutcome::TimedOut {
            diagnostics,
            servers,
            after,
        } => (
            diagnostics,
            Some(format!(
                "{} still analysing after {} s; these results may be incomplete, retry later",
                servers.join(", "),
                after.as_secs()
            )),
        ),
        DiagnosticsOutcome::PartlyFailed {
            diagnostics,
            failures,
        } => (
            diagnostics,
            Some(format!(
                "diagnostics incomplete: {failures}; only the other servers' diagnostics are shown"
            )),
        ),
        DiagnosticsOutcome::Failed(message) | DiagnosticsOutcome::NotChecked(message) => {
            return Err(query_failure(message))
        }
    };
    // tsc's errors in a tsconfig.json itself, which no server publishes.
    diags.extend(crate::check::tsconfig_diagnostics::of_config_file(
        &context.op_sender,
        root,
        &path,
        context.timeout,
    ));
    let mut text = String::new();
    for diagnostic in &diags {
        text.push_str(&diagnostic_text(root, diagnostic));
        text.push('\n');
    }
    if diags.is_empty() && note.is_some() {
        // Not "no diagnostics": a server still analysing or failed may have some.
        text.push_str(&format!(
            "{relative}: no diagnostics from the servers that answered\n"
        ));
    } else if diags.is_empty() {
        text.push_str(&format!("{relative}: no diagnostics\n"));
    }
    let mut json = json!({
        "files": [{
            "file": relative,
            "diagnostics": diags.iter().map(|d| diagnostic_json(root, d)).collect::<Vec<_>>(),
        }]
    });
    json["complete"] = json!(note.is_none());
    if let Some(note) = note {
        text.push_str(&note);
        json["note"] = json!(note);
    }
    if let Some(reason) = result.not_checked_by {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("not checked by every server: {reason}\n"));
        json["files"][0]["notCheckedBy"] = json!(reason);
    }
    Ok((json, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server given up on is not promised a restart (a new user's agent read "gave up after 4
    /// crashes in a row, so it stays down (… lspc restarts it on the next call …)").
    #[test]
    fn failure_hints_match_the_servers_state() {
        let hint = |error: crate::engine::EngineError| query_failure(error).0;
        let gave_up = hint(crate::engine::EngineError::GaveUp {
            server: "pyright".to_owned(),
            status: "signal 9".to_owned(),
            crashes: 4,
            stderr_tail: String::new(),
        });
        assert_eq!(
            gave_up,
            "server pyright crashed (signal 9); gave up after 4 crashes in a row, so it stays down \
             (see lsp://servers for its state and stderr; lspc does not start it again in this process)"
        );
        let crashed = hint(crate::engine::EngineError::ServerExited {
            server: "pyright".to_owned(),
            status: "signal 9".to_owned(),
            stderr_tail: String::new(),
        });
        assert!(crashed.ends_with("lspc restarts it on the next call while restarts remain)"));
        let removed = hint(crate::engine::EngineError::Spawn {
            server: "pyright".to_owned(),
            message: "removed by a configuration reload".to_owned(),
        });
        assert!(
            removed.ends_with(
                "removed by a configuration reload (its entry is no longer in the configuration; \
                 see lsp://servers)"
            ),
            "{removed}"
        );
    }
    use std::sync::Arc;

    fn server(available: bool, capabilities: Option<Value>) -> ServerDetails {
        ServerDetails {
            name: "s".to_owned(),
            server_id: None,
            project: None,
            state: "running".to_owned(),
            capabilities: capabilities.map(Arc::new),
            extensions: vec![".py".to_owned()],
            available,
            pid: None,
            restarts: 0,
            stderr_tail: String::new(),
            settle_rule: crate::engine::SettleRule::QuietAfterPublish,
            diagnostics_off: None,
            formatting_off: None,
            root_markers: Vec::new(),
        }
    }

    /// The typed shortcut reads what [`prepare`] reads, the same way, and declines the rest.
    #[test]
    fn instant_arguments_prepare_as_prepare_prepares_them() {
        let dir = std::env::temp_dir().join(format!("lspc-prepare-instant-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(dir.join("d/é.py"), "y = 2\n").unwrap();
        let root = crate::uri::canonical(&dir);
        let (op_sender, _op_receiver) = crate::doorbell::unbounded();
        let context = ToolContext {
            op_sender,
            root: root.clone(),
            timeout: std::time::Duration::from_secs(1),
            analysed_files: Default::default(),
            passive_consumer: None,
            install_hints: Default::default(),
            config_errors: Default::default(),
            notes_pending: Default::default(),
            passive_drains: Default::default(),
            cancelled: None,
        };
        let check = |tool: &str, arguments: &str, read: bool| {
            let fast = prepare_instant(&context, tool, arguments);
            assert_eq!(fast.is_some(), read, "{tool} {arguments}");
            if let Some(fast) = fast {
                let value: Value = serde_json::from_str(arguments).unwrap();
                assert_eq!(fast, prepare(&context, tool, &value), "{tool} {arguments}");
            }
        };
        for tool in ["hover", "definition", "references", "signature_help"] {
            for arguments in [
                r#"{"file":"a.py","line":1,"column":5}"#,
                r#"{"line":3,"symbol":"ab\u00e9","file":"d/é.py"}"#,
                r#"{"file":"a.py","line":4294967295,"symbol":"s","occurrence":2}"#,
                // Refused by both, the same way: a missing file, a path outside the root.
                r#"{"file":"missing.py","line":1,"column":5}"#,
                r#"{"file":"../a.py","line":1,"column":5}"#,
                r#"{"file":"/etc/passwd","line":1,"column":5}"#,
            ] {
                check(tool, arguments, true);
            }
            let absolute = format!(
                r#"{{"file":{},"line":1,"column":1}}"#,
                serde_json::to_string(&root.join("a.py")).unwrap()
            );
            check(tool, &absolute, true);
        }
        for (tool, arguments) in [
            ("document_symbols", r#"{"file":"a.py"}"#),
            (
                "definition",
                r#"{"kind":"declaration","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "definition",
                r#"{"kind":"type_definition","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "definition",
                r#"{"kind":"implementation","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "definition",
                r#"{"kind":"definition","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "references",
                r#"{"include_declaration":false,"file":"a.py","line":1,"column":5}"#,
            ),
            (
                "references",
                r#"{"include_declaration":true,"file":"a.py","line":1,"column":5}"#,
            ),
        ] {
            check(tool, arguments, true);
        }
        // Left to `prepare`, which reads or refuses them with its messages.
        for (tool, arguments) in [
            ("hover", r#"{"file":"a.py","line":1,"column":5,"_meta":{}}"#),
            (
                "hover",
                r#"{"file":"a.py","line":1,"column":5,"op":"hover"}"#,
            ),
            ("hover", r#"{"file":"a.py","line":1,"column":5,"id":1}"#),
            ("hover", r#"{"file":"a.py","line":0,"column":5}"#),
            ("hover", r#"{"file":"a.py","line":1.0,"column":5}"#),
            ("hover", r#"{"file":"a.py","line":"1","column":5}"#),
            ("hover", r#"{"file":null,"line":1,"column":5}"#),
            ("hover", r#"{"file":"","line":1,"column":5}"#),
            ("hover", r#"{"file":"a.py","line":1}"#),
            (
                "hover",
                r#"{"file":"a.py","line":1,"column":5,"symbol":"x"}"#,
            ),
            (
                "hover",
                r#"{"file":"a.py","line":1,"column":5,"occurrence":1}"#,
            ),
            ("hover", r#"{"file":"a.py","line":1,"line":1,"column":5}"#),
            (
                "hover",
                r#"{"kind":"definition","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "hover",
                r#"{"include_declaration":true,"file":"a.py","line":1,"column":5}"#,
            ),
            (
                "definition",
                r#"{"kind":"type-definition","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "definition",
                r#"{"kind":"other","file":"a.py","line":1,"column":5}"#,
            ),
            (
                "references",
                r#"{"includeDeclaration":true,"file":"a.py","line":1,"column":5}"#,
            ),
            ("document_symbols", r#"{"file":"a.py","line":1}"#),
            ("workspace_symbols", r#"{"query":"x"}"#),
            ("call_hierarchy", r#"{"file":"a.py","line":1,"column":5}"#),
            ("hover", r#"[]"#),
            ("hover", r#"{"file":"a.py","line":1,"column":5} x"#),
        ] {
            check(tool, arguments, false);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tools_are_gated_by_capabilities() {
        let check = |servers: Vec<ServerDetails>, expected: &[&str]| {
            assert_eq!(offered_tools(&servers), expected);
        };
        check(vec![], &["diagnostics", "edit"]);
        check(vec![server(false, None)], &["diagnostics", "edit"]);
        check(
            vec![server(true, None)],
            &[
                "definition",
                "references",
                "hover",
                "document_symbols",
                "workspace_symbols",
                "call_hierarchy",
                "type_hierarchy",
                "signature_help",
                "diagnostics",
                "rename",
                "code_actions",
                "apply_code_action",
                "format",
                "edit",
            ],
        );
        check(
            vec![server(
                true,
                Some(
                    json!({"hoverProvider": true, "referencesProvider": false, "declarationProvider": {}}),
                ),
            )],
            &["definition", "hover", "diagnostics", "edit"],
        );
        check(
            vec![
                server(true, Some(json!({"hoverProvider": true}))),
                server(
                    true,
                    Some(
                        json!({"callHierarchyProvider": true, "renameProvider": {"prepareProvider": true}}),
                    ),
                ),
            ],
            &["hover", "call_hierarchy", "diagnostics", "rename", "edit"],
        );
    }
}
