//! The MCP tools that change files (issue 5): `rename`, `code_actions`, `apply_code_action`,
//! `format` and `edit`, built on [`crate::edit::commands::EditCommands`].
//!
//! Conventions are those of [`super::tools`]: 1-based lines, 1-based columns in Unicode
//! characters, files relative to the workspace root (or absolute inside it). `rename`,
//! `apply_code_action` and `format` only preview (a unified diff, nothing written) unless the
//! call says `apply: true`; `edit` always writes. Every call that writes returns the
//! `<new-diagnostics>` block: diagnostics that are new compared to before the edit (seed 000's
//! before/after baseline, capped at [`crate::edit::commands::NEW_DIAGNOSTICS_CAP`] characters).
//!
//! Invariant: nothing is written outside the root or partially (the edit engine's guarantees); a
//! refused edit is an `isError` result naming the file and the reason.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::tool_arguments::{
    arg_bool, arg_str, arg_u32, display_path, required_file, text_position, ToolContext,
    ToolFailure,
};
use crate::edit::commands::{render_outcome, CommandError, EditCommands, EditOutcome, Span};
use crate::edit::formatting::FormattingOverrides;
use crate::edit::Operation;

/// Names of the tools defined here, in `tools/list` order.
pub const EDIT_TOOLS: &[&str] = &[
    "rename",
    "code_actions",
    "apply_code_action",
    "format",
    "edit",
];

fn apply_property() -> Value {
    json!({"type": "boolean", "description": "write the change (default false: only preview it as a unified diff)"})
}

/// The output of every tool that previews or writes an edit.
fn edit_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "applied": {"type": "boolean", "description": "whether files were written"},
            "files": {"type": "array", "items": {"type": "string"}, "description": "files whose content changes (relative to the root)"},
            "operations": {"type": "array", "items": {"type": "object"}},
            "diff": {"type": "string", "description": "unified diff of the change"},
            "diagnosticsAfterEdit": {"type": "string", "description": "diagnostics new since before the edit (<new-diagnostics> block, at most 4000 characters); empty when none or not applied"},
            "diagnosticsNote": {"type": "string"},
            "note": {"type": "string", "description": "e.g. the server was still indexing, sent a follow-up request lspc ignored after its edit was applied, or a rename left occurrences (not renamed by the server: FILE:LINE ...)"},
            "notRenamed": {"type": "array", "items": {"type": "object", "properties": {"file": {"type": "string"}, "line": {"type": "integer"}}}, "description": "after a rename: whole-word occurrences of the old name in files the server's edit does not touch (1-based lines)"},
            "newDiagnostics": {"type": "object"}
        },
        "required": ["applied", "files", "operations", "diff"]
    })
}

/// Input schema properties of a span: `file`, `line`, optional `end_line`, `column`, `symbol`.
fn span_schema(extra: &[(&str, Value)], required: &[&str]) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "file".to_owned(),
        json!({"type": "string", "description": "File path, relative to the workspace root or absolute inside it"}),
    );
    properties.insert(
        "line".to_owned(),
        json!({"type": "integer", "minimum": 1, "description": "1-based line (first line of the range)"}),
    );
    properties.insert(
        "end_line".to_owned(),
        json!({"type": "integer", "minimum": 1, "description": "1-based last line of the range (default: line)"}),
    );
    properties.insert(
        "column".to_owned(),
        json!({"type": "integer", "minimum": 1, "description": "1-based column in characters: ask at one position instead of whole lines"}),
    );
    properties.insert(
        "symbol".to_owned(),
        json!({"type": "string", "description": "A name on the line to ask at instead of a column"}),
    );
    for (key, value) in extra {
        properties.insert((*key).to_owned(), value.clone());
    }
    let mut all_required = vec!["file", "line"];
    all_required.extend_from_slice(required);
    json!({"type": "object", "properties": properties, "required": all_required})
}

/// `(description, inputSchema, outputSchema, readOnly)` of an edit tool, `None` for other names.
pub fn definition(name: &str) -> Option<(&'static str, Value, Value, bool)> {
    let position = |extra: &[(&str, Value)], required: &[&str]| -> Value {
        let mut schema = super::tool_arguments::position_schema(extra);
        if let Some(list) = schema["required"].as_array_mut() {
            list.extend(required.iter().map(|key| json!(key)));
        }
        schema
    };
    Some(match name {
        "rename" => (
            "Rename the symbol at a position across the workspace (through the language server). Previews a diff unless apply is true.",
            position(
                &[
                    ("new_name", json!({"type": "string", "description": "the new name"})),
                    ("apply", apply_property()),
                ],
                &["new_name"],
            ),
            edit_output(),
            false,
        ),
        "code_actions" => (
            "List the code actions (quick fixes, refactorings, organize imports) for a line range or a position.",
            span_schema(&[], &[]),
            json!({
                "type": "object",
                "properties": {
                    "actions": {"type": "array", "items": {"type": "object", "properties": {
                        "title": {"type": "string"}, "kind": {"type": "string"},
                        "preferred": {"type": "boolean"}, "disabled": {"type": "string"},
                        "server": {"type": "string"}}}},
                    "newDiagnostics": {"type": "object"}
                },
                "required": ["actions"]
            }),
            true,
        ),
        "apply_code_action" => (
            "Apply the code action with this exact title (see code_actions) for a line range or a position. Previews a diff unless apply is true.",
            span_schema(
                &[
                    ("title", json!({"type": "string", "description": "the action's exact title, as code_actions lists it"})),
                    ("apply", apply_property()),
                ],
                &["title"],
            ),
            edit_output(),
            false,
        ),
        "format" => (
            "Format a whole file with its language server. Indentation comes from tab_size/insert_spaces when given, else the file's .editorconfig, else the file's own indentation. Previews a diff unless apply is true.",
            json!({"type": "object", "properties": {
                "file": {"type": "string", "description": "File path, relative to the workspace root or absolute inside it"},
                "tab_size": {"type": "integer", "minimum": 1, "maximum": 64, "description": "spaces per tab and per indentation level (default: .editorconfig, else the file's indentation, else 4)"},
                "insert_spaces": {"type": "boolean", "description": "true: indent with spaces, false: with tabs (default: .editorconfig, else the file's indentation, else spaces)"},
                "apply": apply_property()
            }, "required": ["file"]}),
            edit_output(),
            false,
        ),
        "edit" => (
            "Replace one exact, unique occurrence of old with new in a file, write it, and return the diagnostics the change introduced.",
            json!({"type": "object", "properties": {
                "file": {"type": "string", "description": "File path, relative to the workspace root or absolute inside it"},
                "old": {"type": "string", "description": "the exact text to replace; must occur exactly once (add surrounding lines to make it unique)"},
                "new": {"type": "string", "description": "the replacement text"}
            }, "required": ["file", "old", "new"]}),
            edit_output(),
            false,
        ),
        _ => return None,
    })
}

/// Run edit tool `name`; `None` when `name` is not one of [`EDIT_TOOLS`].
pub fn run(
    context: &ToolContext,
    name: &str,
    args: &Value,
) -> Option<Result<(Value, String), ToolFailure>> {
    if !EDIT_TOOLS.contains(&name) {
        return None;
    }
    let commands = EditCommands::new(
        context.op_sender.clone(),
        context.root.clone(),
        context.timeout,
    );
    let root = &context.root;
    let apply = || arg_bool(args, "apply").map(|apply| apply.unwrap_or(false));
    let result = match name {
        "rename" => (|| {
            let at = text_position(root, args)?;
            let new_name = arg_str(args, "new_name")?
                .filter(|name| !name.is_empty())
                .ok_or_else(|| {
                    ToolFailure("new_name is required (the new identifier)".to_owned())
                })?;
            let outcome = commands
                .rename(&at, new_name, apply()?)
                .map_err(|error| command_failure(root, name, error))?;
            Ok(outcome_result(root, &outcome))
        })(),
        "code_actions" => {
            (|| {
                let span = span(root, args)?;
                let actions = commands
                    .code_actions(&span)
                    .map_err(|error| command_failure(root, name, error))?;
                let mut text = String::new();
                for action in &actions {
                    text.push_str(&action.title);
                    if let Some(kind) = &action.kind {
                        text.push_str(&format!("  [{kind}]"));
                    }
                    if action.preferred {
                        text.push_str("  (preferred)");
                    }
                    if let Some(reason) = &action.disabled {
                        text.push_str(&format!("  (disabled: {reason})"));
                    }
                    text.push('\n');
                }
                if actions.is_empty() {
                    text.push_str("no code actions here; try a wider line range or a position on a diagnostic\n");
                }
                let mut json =
                    json!({ "actions": serde_json::to_value(&actions).unwrap_or(json!([])) });
                super::tool_arguments::clean_json(&mut json, root);
                Ok((json, text))
            })()
        }
        "apply_code_action" => (|| {
            let span = span(root, args)?;
            let title = arg_str(args, "title")?.ok_or_else(|| {
                ToolFailure("title is required (as code_actions lists it)".to_owned())
            })?;
            let outcome = commands
                .apply_code_action(&span, title, apply()?)
                .map_err(|error| command_failure(root, name, error))?;
            Ok(outcome_result(root, &outcome))
        })(),
        "format" => (|| {
            let file = required_file(root, args)?;
            let overrides = formatting_overrides(args)?;
            let outcome = commands
                .format_with(&file, overrides, apply()?)
                .map_err(|error| command_failure(root, name, error))?;
            Ok(outcome_result(root, &outcome))
        })(),
        _ => (|| {
            let file = required_file(root, args)?;
            let old = arg_str(args, "old")?.ok_or_else(|| {
                ToolFailure("old is required (the exact text to replace)".to_owned())
            })?;
            if old.is_empty() {
                return Err(ToolFailure(
                    "old is empty; give the exact text to replace".to_owned(),
                ));
            }
            let new = arg_str(args, "new")?
                .ok_or_else(|| ToolFailure("new is required (the replacement text)".to_owned()))?;
            let outcome = commands
                .edit(&file, old, new)
                .map_err(|error| command_failure(root, name, error))?;
            Ok(outcome_result(root, &outcome))
        })(),
    };
    Some(result)
}

/// The `format` tool's optional `tab_size` (1 to 64) and `insert_spaces`.
fn formatting_overrides(args: &Value) -> Result<FormattingOverrides, ToolFailure> {
    let tab_size = arg_u32(args, "tab_size")?;
    if let Some(size) = tab_size.filter(|size| !(1..=64).contains(size)) {
        return Err(ToolFailure(format!(
            "tab_size must be from 1 to 64, got {size}"
        )));
    }
    Ok(FormattingOverrides {
        tab_size,
        insert_spaces: arg_bool(args, "insert_spaces")?,
    })
}

/// A `code_actions` span: one position when `column` or `symbol` is given, else whole lines
/// `line..=end_line`.
fn span(root: &Path, args: &Value) -> Result<Span, ToolFailure> {
    if args.get("column").is_some_and(|v| !v.is_null())
        || args.get("symbol").is_some_and(|v| !v.is_null())
    {
        if args.get("end_line").is_some_and(|v| !v.is_null()) {
            return Err(ToolFailure(
                "give end_line for a line range, or column/symbol for one position, not both"
                    .to_owned(),
            ));
        }
        return text_position(root, args).map(Span::At);
    }
    let path = required_file(root, args)?;
    let start_line = arg_u32(args, "line")?
        .ok_or_else(|| ToolFailure("line is required (1-based)".to_owned()))?;
    let end_line = arg_u32(args, "end_line")?.unwrap_or(start_line);
    if end_line < start_line {
        return Err(ToolFailure(format!(
            "end_line {end_line} is before line {start_line}"
        )));
    }
    Ok(Span::Lines {
        path,
        start_line,
        end_line,
    })
}

/// The structured result and the text of an edit outcome (paths relative to the root).
pub fn outcome_result(root: &Path, outcome: &EditOutcome) -> (Value, String) {
    let report = &outcome.report;
    let show = |path: &Path| display_path(root, path);
    let operations: Vec<Value> = report
        .operations
        .iter()
        .map(|operation| match operation {
            Operation::Edit { path, edits } => {
                json!({"kind": "edit", "file": show(path), "edits": edits})
            }
            Operation::Create { path } => json!({"kind": "create", "file": show(path)}),
            Operation::Rename { from, to } => {
                json!({"kind": "rename", "from": show(from), "to": show(to)})
            }
            Operation::Delete { path } => json!({"kind": "delete", "file": show(path)}),
            Operation::Skipped { path, reason } => {
                json!({"kind": "skipped", "file": show(path), "reason": reason})
            }
        })
        .collect();
    let mut json = json!({
        "applied": report.written,
        "files": report.files.iter().map(|change| show(&change.path)).collect::<Vec<_>>(),
        "operations": operations,
        "diff": outcome.diff,
    });
    if report.written {
        json["diagnosticsAfterEdit"] = json!(outcome.new_diagnostics);
    }
    if let Some(note) = &outcome.diagnostics_note {
        json["diagnosticsNote"] = json!(note);
    }
    if let Some(note) = &outcome.note {
        json["note"] = json!(note);
    }
    if !outcome.not_renamed.is_empty() {
        let places: Vec<Value> = outcome
            .not_renamed
            .iter()
            .flat_map(|file| {
                let shown = show(&file.path);
                file.lines
                    .iter()
                    .map(move |line| json!({"file": shown, "line": line}))
            })
            .collect();
        json["notRenamed"] = json!(places);
    }
    let mut text = render_outcome(outcome, root);
    // A preview renders only the diff; its note (e.g. "not renamed by the server: …") matters
    // before applying, so it is added here.
    if let (false, Some(note)) = (report.written, &outcome.note) {
        text.push_str(&format!("note: {note}\n"));
    }
    if !report.written && !outcome.diff.is_empty() {
        text.push_str(
            "\n(preview only: nothing was written; call again with apply: true to write)",
        );
    } else if report.written && outcome.new_diagnostics.is_empty() {
        text.push_str("no new diagnostics\n");
    }
    (json, text)
}

/// A command error as an actionable tool failure.
fn command_failure(root: &Path, tool: &str, error: CommandError) -> ToolFailure {
    let root_text = format!("{}/", root.display());
    let message = error.to_string().replace(&root_text, "");
    let hint = match &error {
        CommandError::Unsupported { .. } => {
            " (see lsp://servers for each server's capabilities; use edit to change the text directly)"
        }
        CommandError::NothingToRename { .. } => {
            " (point at an identifier: give symbol with its name on that line)"
        }
        CommandError::Edit(_) => " (nothing was written; re-read the file and try again)",
        CommandError::CommandOnly { .. } => " (call apply_code_action with apply: true)",
        CommandError::Disabled { .. } => {
            " (nothing was written; pick another action from code_actions, or change the code so it applies)"
        }
        CommandError::Engine(engine) => match engine {
            crate::engine::EngineError::Timeout { .. } => {
                " (the server may still be indexing; retry in a few seconds)"
            }
            crate::engine::EngineError::NoServer { .. } => {
                " (configure a server for this extension; see lsp://servers)"
            }
            _ => "",
        },
        _ => "",
    };
    ToolFailure(format!("{tool}: {message}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::{EditReport, FileChange};
    use std::path::PathBuf;

    #[test]
    fn outcomes_render_relative_paths() {
        let root = Path::new("/w");
        let check = |written: bool, block: &str, expected: Value, text_end: &str| {
            let outcome = EditOutcome {
                report: EditReport {
                    operations: vec![
                        Operation::Edit {
                            path: PathBuf::from("/w/a.py"),
                            edits: 2,
                        },
                        Operation::Rename {
                            from: PathBuf::from("/w/b.py"),
                            to: PathBuf::from("/w/c.py"),
                        },
                    ],
                    files: vec![FileChange {
                        path: PathBuf::from("/w/a.py"),
                        before: Some("x\n".to_owned()),
                        after: Some("y\n".to_owned()),
                    }],
                    written,
                },
                diff: "--- a/a.py\n+++ b/a.py\n".to_owned(),
                new_diagnostics: block.to_owned(),
                diagnostics_note: None,
                note: None,
                not_renamed: Vec::new(),
            };
            let (json, text) = outcome_result(root, &outcome);
            assert_eq!(json, expected);
            assert!(text.ends_with(text_end), "{text:?}");
        };
        let operations = json!([
            {"kind": "edit", "file": "a.py", "edits": 2},
            {"kind": "rename", "from": "b.py", "to": "c.py"}
        ]);
        check(
            false,
            "",
            json!({"applied": false, "files": ["a.py"], "operations": operations, "diff": "--- a/a.py\n+++ b/a.py\n"}),
            "call again with apply: true to write)",
        );
        check(
            true,
            "",
            json!({"applied": true, "files": ["a.py"], "operations": operations, "diff": "--- a/a.py\n+++ b/a.py\n", "diagnosticsAfterEdit": ""}),
            "renamed b.py -> c.py\nno new diagnostics\n",
        );
    }

    #[test]
    fn failures_are_actionable() {
        let root = Path::new("/w");
        let check = |error: CommandError, expected: &str| {
            assert_eq!(command_failure(root, "t", error).0, expected);
        };
        check(
            CommandError::Occurrences {
                path: PathBuf::from("/w/a.py"),
                count: 3,
            },
            "t: the old text occurs 3 times in a.py; give more context so it occurs once",
        );
        check(
            CommandError::Unsupported {
                path: PathBuf::from("/w/a.py"),
                capability: "renameProvider".to_owned(),
            },
            "t: no language server for a.py offers renameProvider (see lsp://servers for each server's capabilities; use edit to change the text directly)",
        );
        check(
            CommandError::CommandOnly {
                title: "Fix".to_owned(),
            },
            "t: code action \"Fix\" runs a server command and cannot be previewed; apply it to see its changes (call apply_code_action with apply: true)",
        );
    }
}
