//! The IDE tools `lspc ide` offers over MCP, in the shapes the IDE extensions answer with.
//!
//! Names, arguments and answers follow coder/claudecode.nvim (`lua/claudecode/tools/*.lua`, which
//! mirrors VS Code's extension, described in its `PROTOCOL.md`) and manzaltu/claude-code-ide.el.
//! Where they differ lspc follows VS Code's extension, the one the agent was built against:
//! severities are VS Code's `DiagnosticSeverity` names (`"Information"`, as claude-code-ide.el
//! sends, not claudecode.nvim's `"Info"`), and `getDiagnostics` with a `uri` answers one entry
//! even when it has no diagnostics (claudecode.nvim answers `[]`).
//!
//! Every answer is an MCP `CallToolResult` with text content; structured answers are JSON text.
//! Bad arguments are JSON-RPC errors (`-32602`), failed file operations `-32000`, as
//! claudecode.nvim answers them.
//!
//! Headless facts: lspc has no screen, so documents are never dirty, there is never a selection,
//! and a diff is decided at once by `--diff accept|reject` (`openDiff` answers `FILE_SAVED` or
//! `DIFF_REJECTED` without waiting for a person).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crossbeam_channel::bounded;
use serde_json::{json, Value};

use crate::config::Config;
use crate::diagnostics::{Diagnostic, Severity};
use crate::doorbell::LoopSender;
use crate::engine::{DiagnosticsOutcome, Op};
use crate::mcp::protocol::INVALID_PARAMS;
use crate::text::{LineIndex, PositionEncoding};
use crate::uri;

/// The JSON-RPC error code claudecode.nvim uses for failed file and editor operations.
pub const OPERATION_FAILED: i64 = -32000;

/// How `openDiff` is decided (`lspc ide --diff accept|reject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffMode {
    /// Write `new_file_contents` (inside the root only) and answer `FILE_SAVED`.
    Accept,
    /// Write nothing and answer `DIFF_REJECTED`.
    #[default]
    Reject,
}

/// A failed tool call, sent as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub code: i64,
    pub message: String,
}

impl ToolError {
    fn invalid(message: impl Into<String>) -> ToolError {
        ToolError {
            code: INVALID_PARAMS,
            message: format!("invalid params: {}", message.into()),
        }
    }

    fn failed(message: impl Into<String>) -> ToolError {
        ToolError {
            code: OPERATION_FAILED,
            message: message.into(),
        }
    }
}

/// What the tools need from the engine; cheap to clone onto a worker thread.
#[derive(Clone)]
pub struct ToolContext {
    pub op_sender: LoopSender<Op>,
    /// Canonical absolute workspace root.
    pub root: PathBuf,
    pub config: std::sync::Arc<Config>,
    pub diff_mode: DiffMode,
    /// How long one call may wait for its servers (start-up and analysis included).
    pub timeout: Duration,
}

/// The editor state the IDE loop owns: the "tabs" the agent opened and the active one.
#[derive(Debug, Default)]
pub struct EditorState {
    /// Open editors, in the order they were opened (canonical paths).
    pub open_editors: Vec<PathBuf>,
    pub active: Option<PathBuf>,
    /// Every file a tool asked about this session (what `getDiagnostics` without `uri` covers,
    /// with every file that has diagnostics).
    pub known_files: Vec<PathBuf>,
}

impl EditorState {
    fn remember(&mut self, path: &Path) {
        if !self.known_files.iter().any(|known| known == path) {
            self.known_files.push(path.to_path_buf());
        }
    }
}

/// The outcome of starting a tool call: answered at once, or work for a worker thread (it blocks
/// on the engine).
pub enum ToolCall {
    Ready(Result<Value, ToolError>),
    Blocking(Box<dyn FnOnce() -> Result<Value, ToolError> + Send>),
}

/// Tool names, in `tools/list` order.
pub const TOOL_NAMES: [&str; 11] = [
    "openFile",
    "openDiff",
    "getCurrentSelection",
    "getLatestSelection",
    "getOpenEditors",
    "getWorkspaceFolders",
    "getDiagnostics",
    "checkDocumentDirty",
    "saveDocument",
    "close_tab",
    "closeAllDiffTabs",
];

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#",
    })
}

/// The `tools/list` entry of a tool in [`TOOL_NAMES`] (`name`, `description`, `inputSchema`).
pub fn tool_definition(name: &str) -> Value {
    let file_path = json!({"filePath": {"type": "string", "description": "Path to the file"}});
    let (description, input_schema) = match name {
        "openFile" => (
            "Open a file in the editor (headless: lspc opens it in its language servers)",
            schema(
                json!({
                    "filePath": {"type": "string", "description": "Path to the file to open"},
                    "preview": {"type": "boolean", "default": false},
                    "startText": {"type": "string"},
                    "endText": {"type": "string"},
                    "selectToEndOfLine": {"type": "boolean", "default": false},
                    "makeFrontmost": {"type": "boolean", "default": true,
                        "description": "When false, answer JSON with languageId and lineCount"},
                }),
                &["filePath"],
            ),
        ),
        "openDiff" => (
            "Open a diff of proposed changes; headless lspc decides at once (lspc ide --diff accept|reject)",
            schema(
                json!({
                    "old_file_path": {"type": "string", "description": "Path to the old file"},
                    "new_file_path": {"type": "string", "description": "Path to the new file"},
                    "new_file_contents": {"type": "string", "description": "Contents of the new file"},
                    "tab_name": {"type": "string", "description": "Name of the diff tab"},
                }),
                &["old_file_path", "new_file_path", "new_file_contents", "tab_name"],
            ),
        ),
        "getCurrentSelection" => (
            "Get the current text selection in the active editor (headless: never any)",
            schema(json!({}), &[]),
        ),
        "getLatestSelection" => (
            "Get the most recent text selection (headless: never any)",
            schema(json!({}), &[]),
        ),
        "getOpenEditors" => ("Get the list of open editors", schema(json!({}), &[])),
        "getWorkspaceFolders" => (
            "Get the workspace folders open in the IDE",
            schema(json!({}), &[]),
        ),
        "getDiagnostics" => (
            "Get language diagnostics (errors, warnings) from lspc's language servers",
            schema(
                json!({"uri": {"type": "string", "description": "Optional file URI; without it, every file lspc has open"}}),
                &[],
            ),
        ),
        "checkDocumentDirty" => (
            "Check if a document has unsaved changes (headless: never)",
            schema(file_path, &["filePath"]),
        ),
        "saveDocument" => (
            "Save a document (headless: tell the language servers the file's disk text)",
            schema(file_path, &["filePath"]),
        ),
        "close_tab" => (
            "Close a tab by name",
            schema(
                json!({"tab_name": {"type": "string", "description": "Name of the tab to close"}}),
                &["tab_name"],
            ),
        ),
        _ => ("Close all diff tabs", schema(json!({}), &[])),
    };
    json!({"name": name, "description": description, "inputSchema": input_schema})
}

fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

fn json_result(value: &Value) -> Value {
    text_result(value.to_string())
}

fn string_arg<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolError::invalid(format!("{name} must be a string"))),
    }
}

fn required_string<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    string_arg(args, name)?
        .ok_or_else(|| ToolError::invalid(format!("missing required parameter: {name}")))
}

fn bool_arg(args: &Value, name: &str, default: bool) -> Result<bool, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(ToolError::invalid(format!("{name} must be a boolean"))),
    }
}

/// A path argument (absolute, relative to the root, or a `file://` URI) as a canonical path
/// inside the root; `what` names the argument in errors.
pub fn resolve_in_root(root: &Path, given: &str, what: &str) -> Result<PathBuf, ToolError> {
    if given.is_empty() {
        return Err(ToolError::invalid(format!("{what} must not be empty")));
    }
    let path = if given.len() > 5 && given[..5].eq_ignore_ascii_case("file:") {
        uri::uri_to_path(given).map_err(|error| ToolError::invalid(format!("{what}: {error}")))?
    } else {
        PathBuf::from(given)
    };
    let absolute = if path.is_absolute() {
        path
    } else {
        root.join(path)
    };
    let canonical = uri::canonical(&absolute);
    if !canonical.starts_with(root) {
        return Err(ToolError::failed(format!(
            "{given} is outside the workspace {} (lspc ide serves one workspace)",
            root.display()
        )));
    }
    Ok(canonical)
}

fn file_uri(path: &Path) -> String {
    uri::path_to_uri(path)
        .map(|uri| uri.as_str().to_owned())
        .unwrap_or_else(|_| format!("file://{}", path.display()))
}

fn language_id(config: &Config, path: &Path) -> String {
    config
        .servers_for_path(path)
        .first()
        .and_then(|&index| config.language_id(index, path))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            path.extension()
                .map(|extension| extension.to_string_lossy().into_owned())
                .unwrap_or_else(|| "plaintext".to_owned())
        })
}

fn label(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Start the tool call `name` with `args` (an object). Unknown names are `-32602`.
pub fn call(context: &ToolContext, state: &mut EditorState, name: &str, args: &Value) -> ToolCall {
    match start(context, state, name, args) {
        Ok(call) => call,
        Err(error) => ToolCall::Ready(Err(error)),
    }
}

fn start(
    context: &ToolContext,
    state: &mut EditorState,
    name: &str,
    args: &Value,
) -> Result<ToolCall, ToolError> {
    let root = &context.root;
    let ready = |value: Value| Ok(ToolCall::Ready(Ok(value)));
    match name {
        "openFile" => {
            let given = required_string(args, "filePath")?;
            let path = resolve_in_root(root, given, "filePath")?;
            if !path.is_file() {
                return Err(ToolError::failed(format!("File not found: {given}")));
            }
            let make_frontmost = bool_arg(args, "makeFrontmost", true)?;
            for flag in ["preview", "selectToEndOfLine"] {
                bool_arg(args, flag, false)?;
            }
            for text in ["startText", "endText"] {
                string_arg(args, text)?;
            }
            if !state.open_editors.contains(&path) {
                state.open_editors.push(path.clone());
            }
            if make_frontmost {
                state.active = Some(path.clone());
            }
            state.remember(&path);
            // Open it in its servers now so diagnostics are ready sooner; nobody waits for it.
            let (reply, _ignored) = bounded(1);
            let _ = context.op_sender.send(Op::Sync {
                path: path.clone(),
                timeout: context.timeout,
                reply,
            });
            if make_frontmost {
                return ready(text_result(format!("Opened file: {}", path.display())));
            }
            let line_count = std::fs::read_to_string(&path)
                .map(|text| LineIndex::new(&text).n_lines())
                .unwrap_or(0);
            ready(json_result(&json!({
                "success": true,
                "filePath": path,
                "languageId": language_id(&context.config, &path),
                "lineCount": line_count,
            })))
        }
        "openDiff" => {
            let old_path = required_string(args, "old_file_path")?;
            let new_path = required_string(args, "new_file_path")?;
            let contents = required_string(args, "new_file_contents")?.to_owned();
            let tab_name = required_string(args, "tab_name")?.to_owned();
            resolve_in_root(root, old_path, "old_file_path")?;
            let path = resolve_in_root(root, new_path, "new_file_path")?;
            state.remember(&path);
            match context.diff_mode {
                DiffMode::Reject => ready(json!({"content": [
                    {"type": "text", "text": "DIFF_REJECTED"},
                    {"type": "text", "text": tab_name},
                ]})),
                DiffMode::Accept => {
                    let context = context.clone();
                    Ok(ToolCall::Blocking(Box::new(move || {
                        write_whole_file(&context, &path, &contents)?;
                        Ok(json!({"content": [
                            {"type": "text", "text": "FILE_SAVED"},
                            {"type": "text", "text": contents},
                        ]}))
                    })))
                }
            }
        }
        "getCurrentSelection" => match &state.active {
            Some(path) => ready(json_result(&json!({
                "success": true,
                "text": "",
                "filePath": path,
                "fileUrl": file_uri(path),
                "selection": {
                    "start": {"line": 0, "character": 0},
                    "end": {"line": 0, "character": 0},
                    "isEmpty": true,
                },
            }))),
            None => ready(json_result(
                &json!({"success": false, "message": "No active editor found"}),
            )),
        },
        "getLatestSelection" => ready(json_result(
            &json!({"success": false, "message": "No selection available"}),
        )),
        "getOpenEditors" => {
            let tabs: Vec<Value> = state
                .open_editors
                .iter()
                .map(|path| {
                    json!({
                        "uri": file_uri(path),
                        "isActive": state.active.as_ref() == Some(path),
                        "label": label(path),
                        "languageId": language_id(&context.config, path),
                        "isDirty": false,
                    })
                })
                .collect();
            ready(json_result(&json!({ "tabs": tabs })))
        }
        "getWorkspaceFolders" => ready(json_result(&json!({
            "success": true,
            "folders": [{"name": label(root), "uri": file_uri(root), "path": root}],
            "rootPath": root,
        }))),
        "checkDocumentDirty" => {
            let given = required_string(args, "filePath")?;
            let path = resolve_in_root(root, given, "filePath")?;
            if !state.open_editors.contains(&path) {
                return ready(json_result(&json!({
                    "success": false, "message": format!("Document not open: {given}"),
                })));
            }
            ready(json_result(&json!({
                "success": true, "filePath": path, "isDirty": false, "isUntitled": false,
            })))
        }
        "saveDocument" => {
            let given = required_string(args, "filePath")?;
            let path = resolve_in_root(root, given, "filePath")?;
            if !state.open_editors.contains(&path) {
                return ready(json_result(&json!({
                    "success": false, "message": format!("Document not open: {given}"),
                })));
            }
            let context = context.clone();
            Ok(ToolCall::Blocking(Box::new(move || {
                sync(&context, &path)?;
                Ok(json_result(&json!({
                    "success": true,
                    "filePath": path,
                    "saved": true,
                    "message": "Document saved successfully",
                })))
            })))
        }
        "close_tab" => {
            let tab_name = required_string(args, "tab_name")?;
            state
                .open_editors
                .retain(|path| label(path) != tab_name && path.as_os_str() != tab_name);
            if let Some(active) = &state.active {
                if !state.open_editors.contains(active) {
                    state.active = None;
                }
            }
            ready(text_result("TAB_CLOSED"))
        }
        // A headless diff is decided when it opens, so no diff tab ever stays open.
        "closeAllDiffTabs" => ready(text_result("CLOSED_0_DIFF_TABS")),
        "getDiagnostics" => {
            let paths = match string_arg(args, "uri")? {
                Some(given) => {
                    let path = resolve_in_root(root, given, "uri")?;
                    state.remember(&path);
                    Some(path)
                }
                None => None,
            };
            let known = state.known_files.clone();
            let context = context.clone();
            Ok(ToolCall::Blocking(Box::new(move || {
                get_diagnostics(&context, paths, known)
            })))
        }
        other => Err(ToolError::invalid(format!(
            "unknown tool {other:?} (see tools/list)"
        ))),
    }
}

/// Make the file's servers hold its disk text (`Op::Sync`); a file no server claims is fine.
fn sync(context: &ToolContext, path: &Path) -> Result<(), ToolError> {
    if context.config.servers_for_path(path).is_empty() {
        return Ok(());
    }
    let (reply, receiver) = bounded(1);
    context
        .op_sender
        .send(Op::Sync {
            path: path.to_path_buf(),
            timeout: context.timeout,
            reply,
        })
        .map_err(|_| ToolError::failed("lspc's engine has shut down"))?;
    match receiver.recv_timeout(context.timeout + Duration::from_secs(5)) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(ToolError::failed(error.to_string())),
        Err(_) => Err(ToolError::failed(format!(
            "the language servers did not open {} in time",
            path.display()
        ))),
    }
}

/// Replace the whole of `path` (or create it) with `contents` through the edit engine, which
/// checks the target is inside the root (symlinks resolved) and writes atomically.
fn write_whole_file(context: &ToolContext, path: &Path, contents: &str) -> Result<(), ToolError> {
    let uri = file_uri(path);
    let edit = match std::fs::read(path) {
        Ok(bytes) => {
            let Ok(old) = String::from_utf8(bytes) else {
                return Err(ToolError::failed(format!(
                    "{} is not UTF-8 text; lspc does not replace it",
                    path.display()
                )));
            };
            if old == contents {
                return Ok(());
            }
            // The servers must hold the disk text first: the edit engine refuses a document
            // whose disk text differs from what lspc sent (the agent may have written it).
            sync(context, path)?;
            let end = LineIndex::new(&old).end_position(&old, PositionEncoding::Utf8);
            json!({"documentChanges": [{
                "textDocument": {"uri": uri, "version": null},
                "edits": [{
                    "range": {"start": {"line": 0, "character": 0}, "end": end},
                    "newText": contents,
                }],
            }]})
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            json!({"documentChanges": [
                {"kind": "create", "uri": uri},
                {
                    "textDocument": {"uri": uri, "version": null},
                    "edits": [{
                        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                        "newText": contents,
                    }],
                },
            ]})
        }
        Err(error) => {
            return Err(ToolError::failed(format!(
                "cannot read {}: {error}",
                path.display()
            )))
        }
    };
    let (reply, receiver) = bounded(1);
    context
        .op_sender
        .send(Op::ApplyEdit {
            edit,
            encoding: PositionEncoding::Utf8,
            mode: crate::edit::ApplyMode::Write,
            based_on: None,
            reply,
        })
        .map_err(|_| ToolError::failed("lspc's engine has shut down"))?;
    match receiver.recv_timeout(context.timeout + Duration::from_secs(5)) {
        Ok(Ok(report)) if report.written || report.files.is_empty() => Ok(()),
        Ok(Ok(_)) => Err(ToolError::failed(format!(
            "{} was not written",
            path.display()
        ))),
        Ok(Err(error)) => Err(ToolError::failed(error.to_string())),
        Err(_) => Err(ToolError::failed(format!(
            "writing {} did not finish in time",
            path.display()
        ))),
    }
}

/// VS Code's `DiagnosticSeverity` name.
pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "Error",
        Severity::Warning => "Warning",
        Severity::Information => "Information",
        Severity::Hint => "Hint",
    }
}

/// One diagnostic in the IDE shape: `{message, severity, range, source?, code?}` with an LSP
/// range (0-based lines, 0-based `character` in UTF-16 code units, as VS Code reports them),
/// converted from lspc's 1-based character columns against `text` (the file as the servers saw
/// it; without it, columns only shift by one).
pub fn ide_diagnostic(diagnostic: &Diagnostic, text: Option<&str>) -> Value {
    let position = |line: u32, column: u32| -> Value {
        let converted = text.and_then(|text| {
            LineIndex::new(text)
                .to_lsp(text, line, column, PositionEncoding::Utf16)
                .ok()
        });
        match converted {
            Some(position) => json!({"line": position.line, "character": position.character}),
            None => json!({"line": line.saturating_sub(1), "character": column.saturating_sub(1)}),
        }
    };
    let mut value = json!({
        "message": diagnostic.message,
        "severity": severity_name(diagnostic.severity),
        "range": {
            "start": position(diagnostic.line, diagnostic.column),
            "end": position(diagnostic.end_line, diagnostic.end_column),
        },
    });
    if let Some(source) = &diagnostic.source {
        value["source"] = json!(source);
    }
    if let Some(code) = &diagnostic.code {
        value["code"] = json!(code);
    }
    value
}

/// `getDiagnostics`: settled diagnostics for `path`, or (without it) for every file known this
/// session and every file with diagnostics now, as `[{uri, diagnostics}]` JSON text. With a
/// path, the answer has exactly one entry; without, files without diagnostics are left out.
fn get_diagnostics(
    context: &ToolContext,
    path: Option<PathBuf>,
    known: Vec<PathBuf>,
) -> Result<Value, ToolError> {
    let single = path.is_some();
    let paths = match path {
        Some(path) => vec![path],
        None => {
            let mut paths = known;
            for (path, _) in crate::engine::current_diagnostics(&context.op_sender) {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            paths.retain(|path| path.is_file());
            crate::sorting::sort(&mut paths);
            paths
        }
    };
    if paths.is_empty() {
        return Ok(text_result("[]"));
    }
    let (reply, receiver) = bounded(1);
    context
        .op_sender
        .send(Op::Diagnostics {
            paths,
            timeout: context.timeout,
            reply,
        })
        .map_err(|_| ToolError::failed("lspc's engine has shut down"))?;
    let results = receiver
        .recv_timeout(context.timeout * 2 + Duration::from_secs(5))
        .map_err(|_| ToolError::failed("diagnostics did not settle in time"))?;
    let mut files = Vec::new();
    for result in results {
        let diagnostics = match result.outcome {
            DiagnosticsOutcome::Settled(diagnostics) => diagnostics,
            DiagnosticsOutcome::TimedOut {
                diagnostics,
                servers,
                after,
            } => {
                log::warn!(
                    "{}: {} still analysing after {} s; answering with what arrived",
                    result.path.display(),
                    servers.join(", "),
                    after.as_secs()
                );
                diagnostics
            }
            DiagnosticsOutcome::PartlyFailed {
                diagnostics,
                failures,
            } => {
                log::warn!(
                    "{}: {failures}; answering with the other servers' diagnostics",
                    result.path.display()
                );
                diagnostics
            }
            DiagnosticsOutcome::Failed(message) => {
                return Err(ToolError::failed(format!(
                    "no diagnostics for {}: {message}",
                    result.path.display()
                )))
            }
            // A file no language server serves has no diagnostics, as in an editor.
            DiagnosticsOutcome::NotChecked(message) => {
                log::info!("{}: {message}", result.path.display());
                Vec::new()
            }
        };
        if diagnostics.is_empty() && !single {
            continue;
        }
        let text = std::fs::read_to_string(&result.path).ok();
        files.push(json!({
            "uri": file_uri(&result.path),
            "diagnostics": diagnostics
                .iter()
                .map(|diagnostic| ide_diagnostic(diagnostic, text.as_deref()))
                .collect::<Vec<_>>(),
        }));
    }
    Ok(json_result(&Value::Array(files)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(line: u32, column: u32, end_line: u32, end_column: u32) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from("/w/a.py"),
            line,
            column,
            end_line,
            end_column,
            severity: Severity::Information,
            message: "m".to_owned(),
            source: Some("Pyright".to_owned()),
            code: None,
            server: "pyright".to_owned(),
        }
    }

    #[test]
    fn ranges_become_zero_based_utf16() {
        // "😀" is one character but two UTF-16 units: column 3 ("b", after "a😀") is character 3.
        let text = "x = 1\na😀bc\n";
        assert_eq!(
            ide_diagnostic(&diagnostic(2, 3, 2, 4), Some(text)),
            json!({
                "message": "m",
                "severity": "Information",
                "range": {"start": {"line": 1, "character": 3}, "end": {"line": 1, "character": 4}},
                "source": "Pyright",
            })
        );
        // Without the text (or past it) the columns shift by one.
        assert_eq!(
            ide_diagnostic(&diagnostic(9, 2, 9, 3), Some(text))["range"],
            json!({"start": {"line": 8, "character": 1}, "end": {"line": 8, "character": 2}})
        );
    }

    fn check_resolve(given: &str, expected: Result<&str, i64>) {
        let root = std::env::temp_dir().canonicalize().unwrap();
        let result = resolve_in_root(&root, given, "filePath");
        match expected {
            Ok(relative) => assert_eq!(result.unwrap(), root.join(relative), "{given}"),
            Err(code) => assert_eq!(result.unwrap_err().code, code, "{given}"),
        }
    }

    #[test]
    fn paths_must_stay_inside_the_root() {
        let root = std::env::temp_dir().canonicalize().unwrap();
        check_resolve("a/b.py", Ok("a/b.py"));
        check_resolve(&format!("{}/c.py", root.display()), Ok("c.py"));
        check_resolve(&format!("file://{}/d%20e.py", root.display()), Ok("d e.py"));
        check_resolve("a/../../etc/passwd", Err(OPERATION_FAILED));
        check_resolve("/etc/passwd", Err(OPERATION_FAILED));
        check_resolve("", Err(INVALID_PARAMS));
        check_resolve("file://host/x", Err(INVALID_PARAMS));
    }

    #[test]
    fn every_tool_has_a_definition() {
        for name in TOOL_NAMES {
            let definition = tool_definition(name);
            assert_eq!(definition["name"], name);
            assert_eq!(definition["inputSchema"]["type"], "object");
        }
        assert_eq!(
            tool_definition("openDiff")["inputSchema"]["required"],
            json!([
                "old_file_path",
                "new_file_path",
                "new_file_contents",
                "tab_name"
            ])
        );
    }
}
