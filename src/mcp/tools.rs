//! MCP tools: their JSON schemas, capability gating, argument parsing and handlers.
//!
//! Conventions (issue 4, seed 004): positions in and out are 1-based lines and 1-based columns
//! counted in Unicode characters; files are given relative to the workspace root or absolute
//! inside it, and shown relative to the root. A handler never returns a JSON-RPC error for a
//! failing call: it returns a result with `isError: true` and a message that names the server,
//! the capability and what to try. Every result also carries the passive diagnostics that arrived
//! since the last delivery (`newDiagnostics`), drained with the seed's rules.
//!
//! Results: `structuredContent` is an object matching the tool's `outputSchema` (keys whose value
//! would be `null` are omitted), plus one text rendering in `content`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::diagnostics::{Diagnostic, DrainedBatch};
use crate::engine::{self, DiagnosticsOutcome, Op, ServerDetails};
use crate::query::{CallDirection, DefinitionKind, Queries, TypeDirection};

use super::tool_arguments::{
    arg_bool, arg_str, position_properties, position_schema, required_file,
};
pub use super::tool_arguments::{
    clean_json, display_path, resolve_file, text_position, ToolContext, ToolFailure,
};

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
            "note": {"type": "string"}
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
/// `outputSchema`).
pub fn tool_definition(name: &str) -> Value {
    if let Some((description, input, output, read_only)) = super::edit_tools::definition(name) {
        return json!({
            "name": name,
            "description": description,
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
    let (description, input, output) = match name {
        "definition" => (
            "Go to the definition (or declaration, type definition, implementation) of the symbol at a position.",
            position_schema(&[(
                "kind",
                json!({"type": "string", "enum": ["definition", "declaration", "type_definition", "implementation"], "description": "default definition"}),
            )]),
            locations_output(),
        ),
        "references" => (
            "Find every reference to the symbol at a position.",
            position_schema(&[(
                "include_declaration",
                json!({"type": "boolean", "description": "also list the declaration (default true)"}),
            )]),
            locations_output(),
        ),
        "hover" => (
            "Type and documentation of the symbol at a position.",
            position_schema(&[]),
            one_property_output("hover", json!({"type": ["object", "null"]})),
        ),
        "document_symbols" => (
            "The outline of a file: classes, functions, variables, with positions.",
            json!({"type": "object", "properties": {"file": position_properties()["file"].clone()}, "required": ["file"]}),
            one_property_output("symbols", json!({"type": "array", "items": {"type": "object"}})),
        ),
        "workspace_symbols" => (
            "Search symbols by name across the workspace. Give file to pick the language server (any file of that language).",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "Name or part of a name"},
                "file": {"type": "string", "description": "A file whose language server to ask (default: every running server)"}
            }, "required": ["query"]}),
            one_property_output("symbols", json!({"type": "array", "items": {"type": "object"}})),
        ),
        "call_hierarchy" => (
            "The call hierarchy item at a position, with its incoming callers or outgoing callees when direction is given.",
            position_schema(&[(
                "direction",
                json!({"type": "string", "enum": ["incoming", "outgoing"]}),
            )]),
            {
                let mut properties = Map::new();
                properties.insert("items".to_owned(), json!({"type": "array", "items": {"type": "object"}}));
                properties.insert("calls".to_owned(), json!({"type": "array", "items": {"type": "object"}}));
                output_schema(properties, &["items"])
            },
        ),
        "type_hierarchy" => (
            "Supertypes or subtypes of the type at a position.",
            position_schema(&[(
                "direction",
                json!({"type": "string", "enum": ["supertypes", "subtypes"], "description": "default supertypes"}),
            )]),
            one_property_output("hierarchy", json!({"type": "object"})),
        ),
        "signature_help" => (
            "Signatures of the call surrounding a position, with the active parameter.",
            position_schema(&[]),
            one_property_output("signatureHelp", json!({"type": ["object", "null"]})),
        ),
        _ => (
            "Diagnostics (errors, warnings) for a file once its servers have settled; without file, every diagnostic not yet delivered (at most 10 per file, 30 in total).",
            json!({"type": "object", "properties": {"file": position_properties()["file"].clone()}}),
            {
                let mut properties = Map::new();
                properties.insert("files".to_owned(), json!({"type": "array", "items": {"type": "object"}}));
                properties.insert("more".to_owned(), json!({"type": "integer"}));
                properties.insert("note".to_owned(), json!({"type": "string"}));
                output_schema(properties, &["files"])
            },
        ),
    };
    json!({
        "name": name,
        "description": description,
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

/// `file:line:column: severity: message [source code]`.
pub fn diagnostic_text(root: &Path, diagnostic: &Diagnostic) -> String {
    let mut text = format!(
        "{}:{}:{}: {}: {}",
        display_path(root, &diagnostic.path),
        diagnostic.line,
        diagnostic.column,
        diagnostic.severity.as_str(),
        diagnostic.message
    );
    match (&diagnostic.source, &diagnostic.code) {
        (Some(source), Some(code)) => text.push_str(&format!(" [{source} {code}]")),
        (Some(source), None) => text.push_str(&format!(" [{source}]")),
        (None, Some(code)) => text.push_str(&format!(" [{code}]")),
        (None, None) => {}
    }
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
    let outcome = run_tool(context, name, arguments, tag);
    let asked_file = arguments
        .get("file")
        .and_then(Value::as_str)
        .and_then(|file| resolve_file(&context.root, file).ok());
    let passive = if name == "diagnostics" && asked_file.is_none() {
        None
    } else {
        engine::drain_passive(&context.op_sender, context.passive_consumer.as_deref())
            .map(|mut batch| {
                // The diagnostics tool just delivered its file in full; draining marks those
                // delivered, and they are not repeated as "new".
                if name == "diagnostics" {
                    batch
                        .files
                        .retain(|(path, _)| Some(path) != asked_file.as_ref());
                }
                batch
            })
            .filter(|batch| !batch.files.is_empty() || batch.n_more > 0)
    };
    match outcome {
        Ok((mut structured, mut text)) => {
            if let Some(batch) = passive {
                let (json, passive_text) = drained_json(&context.root, &batch);
                structured["newDiagnostics"] = json;
                text.push_str("\nNew diagnostics since the last call:\n");
                text.push_str(&passive_text);
            }
            json!({
                "content": [{"type": "text", "text": text.trim_end()}],
                "structuredContent": structured,
                "isError": false,
            })
        }
        Err(ToolFailure(message)) => {
            let mut text = message;
            if let Some(batch) = passive {
                let (_, passive_text) = drained_json(&context.root, &batch);
                text.push_str("\n\nNew diagnostics since the last call:\n");
                text.push_str(&passive_text);
            }
            json!({
                "content": [{"type": "text", "text": text.trim_end()}],
                "isError": true,
            })
        }
    }
}

fn query_failure(error: impl std::fmt::Display) -> ToolFailure {
    let message = error.to_string();
    let hint = if message.contains("not support") || message.contains("Provider") {
        " (this server lacks that capability; try another tool, e.g. document_symbols or references)"
    } else if message.contains("timed out") {
        " (the server may still be indexing; retry in a few seconds)"
    } else if message.contains("no language server") {
        " (configure a server for this extension in .lsp.json; see lsp://servers)"
    } else if message.contains("crashed") || message.contains("failed to start") {
        " (see lsp://servers for its state and stderr; lspc restarts it on the next call while restarts remain)"
    } else {
        ""
    };
    ToolFailure(format!("{message}{hint}"))
}

fn to_json(value: &impl serde::Serialize, root: &Path) -> Value {
    let mut json = serde_json::to_value(value).unwrap_or(Value::Null);
    clean_json(&mut json, root);
    json
}

fn location_line(location: &Value) -> String {
    let path = location.get("path").and_then(Value::as_str).unwrap_or("?");
    let line = location.get("line").and_then(Value::as_u64).unwrap_or(0);
    let column = location.get("column").and_then(Value::as_u64).unwrap_or(0);
    match location.get("lineText").and_then(Value::as_str) {
        Some(text) => format!("{path}:{line}:{column}: {}", text.trim()),
        None => format!("{path}:{line}:{column}"),
    }
}

fn symbols_text(symbols: &[Value], depth: usize, text: &mut String) {
    for symbol in symbols {
        let name = symbol.get("name").and_then(Value::as_str).unwrap_or("?");
        let kind = symbol.get("kind").and_then(Value::as_str).unwrap_or("");
        let location = symbol
            .get("location")
            .map(location_line)
            .unwrap_or_default();
        let location = location.split(": ").next().unwrap_or("").to_owned();
        text.push_str(&format!(
            "{}{kind} {name}  {location}\n",
            "  ".repeat(depth)
        ));
        if let Some(children) = symbol.get("children").and_then(Value::as_array) {
            symbols_text(children, depth + 1, text);
        }
    }
}

fn run_tool(
    context: &ToolContext,
    name: &str,
    args: &Value,
    tag: u64,
) -> Result<(Value, String), ToolFailure> {
    if !args.is_object() {
        return Err(ToolFailure("arguments must be a JSON object".to_owned()));
    }
    if let Some(result) = super::edit_tools::run(context, name, args) {
        return result;
    }
    let root = &context.root;
    let queries = Queries::new(context.op_sender.clone(), root.clone(), context.timeout)
        .with_analysed_files(context.analysed_files.clone())
        .with_tag(Some(tag));
    match name {
        "definition" => {
            let at = text_position(root, args)?;
            let kind = match arg_str(args, "kind")?.unwrap_or("definition") {
                "definition" => DefinitionKind::Definition,
                "declaration" => DefinitionKind::Declaration,
                "type_definition" => DefinitionKind::TypeDefinition,
                "implementation" => DefinitionKind::Implementation,
                other => {
                    return Err(ToolFailure(format!(
                        "kind {other:?} is not one of definition, declaration, type_definition, implementation"
                    )))
                }
            };
            let result = queries.definition(&at, kind).map_err(query_failure)?;
            Ok(locations_result(to_json(&result, root)))
        }
        "references" => {
            let at = text_position(root, args)?;
            let include = arg_bool(args, "include_declaration")?.unwrap_or(true);
            let result = queries.references(&at, include).map_err(query_failure)?;
            Ok(locations_result(to_json(&result, root)))
        }
        "hover" => {
            let at = text_position(root, args)?;
            let result = queries.hover(&at).map_err(query_failure)?;
            let hover = to_json(&result, root);
            let text = hover
                .get("text")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| "no hover information at this position".to_owned());
            Ok((json!({ "hover": hover }), text))
        }
        "document_symbols" => {
            let file = required_file(root, args)?;
            let result = queries.document_symbols(&file).map_err(query_failure)?;
            symbols_result(to_json(&result, root))
        }
        "workspace_symbols" => {
            let query = arg_str(args, "query")?
                .ok_or_else(|| ToolFailure("query is required".to_owned()))?;
            let hint = match arg_str(args, "file")? {
                Some(file) => Some(resolve_file(root, file)?),
                None => None,
            };
            let result = queries
                .workspace_symbols(query, hint.as_deref())
                .map_err(query_failure)?;
            symbols_result(to_json(&result, root))
        }
        "call_hierarchy" => {
            let at = text_position(root, args)?;
            let direction = match arg_str(args, "direction")? {
                None => None,
                Some("incoming") => Some(CallDirection::Incoming),
                Some("outgoing") => Some(CallDirection::Outgoing),
                Some(other) => {
                    return Err(ToolFailure(format!(
                        "direction {other:?} is not incoming or outgoing"
                    )))
                }
            };
            let result = queries
                .call_hierarchy(&at, direction)
                .map_err(query_failure)?;
            let mut json = to_json(&result, root);
            if json.get("items").is_none() {
                json["items"] = json!([]);
            }
            let mut text = String::new();
            for item in json["items"].as_array().cloned().unwrap_or_default() {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
                let location = item.get("location").map(location_line).unwrap_or_default();
                text.push_str(&format!("{name}  {location}\n"));
            }
            for call in json
                .get("calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                let item = call.get("item").cloned().unwrap_or(Value::Null);
                let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
                let location = item.get("location").map(location_line).unwrap_or_default();
                text.push_str(&format!("  {name}  {location}\n"));
            }
            if text.is_empty() {
                text = "no call hierarchy item at this position".to_owned();
            }
            Ok((json, text))
        }
        "type_hierarchy" => {
            let at = text_position(root, args)?;
            let direction = match arg_str(args, "direction")?.unwrap_or("supertypes") {
                "supertypes" => TypeDirection::Supertypes,
                "subtypes" => TypeDirection::Subtypes,
                other => {
                    return Err(ToolFailure(format!(
                        "direction {other:?} is not supertypes or subtypes"
                    )))
                }
            };
            let result = queries
                .type_hierarchy(&at, direction)
                .map_err(query_failure)?;
            let json = to_json(&result, root);
            let text = serde_json::to_string_pretty(&json).unwrap_or_default();
            Ok((json!({ "hierarchy": json }), text))
        }
        "signature_help" => {
            let at = text_position(root, args)?;
            let result = queries.signature_help(&at).map_err(query_failure)?;
            let json = to_json(&result, root);
            let text = if json.is_null() {
                "no signature help at this position (put the position inside a call's parentheses)"
                    .to_owned()
            } else {
                serde_json::to_string_pretty(&json).unwrap_or_default()
            };
            Ok((json!({ "signatureHelp": json }), text))
        }
        "diagnostics" => diagnostics_tool(context, args),
        other => Err(ToolFailure(format!("unknown tool {other:?}"))),
    }
}

fn locations_result(mut json: Value) -> (Value, String) {
    if json.get("locations").is_none() {
        json["locations"] = json!([]);
    }
    let locations = json["locations"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    if locations.is_empty() {
        text.push_str("no locations found\n");
    }
    for location in &locations {
        text.push_str(&location_line(location));
        text.push('\n');
    }
    if let Some(note) = json.get("incomplete").and_then(Value::as_str) {
        text.push_str(note);
        text.push('\n');
    }
    (json, text)
}

fn symbols_result(json: Value) -> Result<(Value, String), ToolFailure> {
    let symbols = json.as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    if symbols.is_empty() {
        text.push_str("no symbols found\n");
    }
    symbols_text(&symbols, 0, &mut text);
    Ok((json!({ "symbols": symbols }), text))
}

fn diagnostics_tool(context: &ToolContext, args: &Value) -> Result<(Value, String), ToolFailure> {
    let root = &context.root;
    let Some(file) = arg_str(args, "file")? else {
        let batch = engine::drain_passive(&context.op_sender, context.passive_consumer.as_deref());
        return Ok(match batch {
            Some(batch) => {
                let (json, text) = drained_json(root, &batch);
                (json, text)
            }
            None => (
                json!({"files": []}),
                "no new diagnostics since the last delivery".to_owned(),
            ),
        });
    };
    let path = resolve_file(root, file)?;
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
    let (diags, note) = match result.outcome {
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
        DiagnosticsOutcome::Failed(message) | DiagnosticsOutcome::NotChecked(message) => {
            return Err(query_failure(message))
        }
    };
    let mut text = String::new();
    for diagnostic in &diags {
        text.push_str(&diagnostic_text(root, diagnostic));
        text.push('\n');
    }
    if diags.is_empty() {
        text.push_str(&format!("{relative}: no diagnostics\n"));
    }
    let mut json = json!({
        "files": [{
            "file": relative,
            "diagnostics": diags.iter().map(|d| diagnostic_json(root, d)).collect::<Vec<_>>(),
        }]
    });
    if let Some(note) = note {
        text.push_str(&note);
        json["note"] = json!(note);
    }
    Ok((json, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn server(available: bool, capabilities: Option<Value>) -> ServerDetails {
        ServerDetails {
            name: "s".to_owned(),
            state: "running".to_owned(),
            capabilities: capabilities.map(Arc::new),
            extensions: vec![".py".to_owned()],
            available,
            pid: None,
            restarts: 0,
            stderr_tail: String::new(),
            settle_rule: crate::engine::SettleRule::QuietAfterPublish,
        }
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
