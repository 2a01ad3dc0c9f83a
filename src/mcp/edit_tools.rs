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

use serde_json::{json, Value};

use super::tool_arguments::{clean_json, ToolContext, ToolFailure};
use crate::edit::commands::{render_outcome, CommandError, EditCommands, EditOutcome};
use crate::operation::execute::outcome_json;
use crate::operation::Operation;

/// Names of the tools defined here, in `tools/list` order.
pub const EDIT_TOOLS: &[&str] = &[
    "rename",
    "code_actions",
    "apply_code_action",
    "format",
    "edit",
];

/// The output schema of every tool that previews or writes an edit, as JSON text parsed per
/// `tools/list` (once per client): with [`CODE_ACTIONS_OUTPUT`], 2 KB of text where the same
/// `json!` literals compiled to 8 KB of machine code.
const EDIT_OUTPUT: &str = r#"{
    "type": "object",
    "properties": {
        "applied": {"type": "boolean", "description": "whether files were written"},
        "files": {"type": "array", "items": {"type": "string"}, "description": "files whose content changes (relative to the root)"},
        "operations": {"type": "array", "items": {"type": "object"}},
        "diff": {"type": "string", "description": "unified diff of the change"},
        "diagnosticsAfterEdit": {"type": "string", "description": "diagnostics new since before the edit (<new-diagnostics> block, at most 4000 characters); empty when none or not applied"},
        "newErrors": {"type": "integer", "description": "once written: how many of the new diagnostics are errors, or after a rename name the old name (the edit broke something when above 0)"},
        "diagnosticsNote": {"type": "string"},
        "note": {"type": "string", "description": "e.g. the server was still indexing, sent a follow-up request lspc ignored after its edit was applied, or a rename left occurrences (not renamed by the server: FILE:LINE ...)"},
        "notRenamed": {"type": "array", "items": {"type": "object", "properties": {"file": {"type": "string"}, "line": {"type": "integer"}}}, "description": "after a rename: whole-word occurrences of the old name in files the server's edit does not touch (1-based lines)"},
        "newDiagnostics": {"type": "object"}
    },
    "required": ["applied", "files", "operations", "diff"]
}"#;

/// The output schema of `code_actions` (JSON text, as [`EDIT_OUTPUT`]).
const CODE_ACTIONS_OUTPUT: &str = r#"{
    "type": "object",
    "properties": {
        "actions": {"type": "array", "items": {"type": "object", "properties": {
            "title": {"type": "string"}, "kind": {"type": "string"},
            "preferred": {"type": "boolean"}, "disabled": {"type": "string"},
            "server": {"type": "string"}}}},
        "newDiagnostics": {"type": "object"}
    },
    "required": ["actions"]
}"#;

/// `(outputSchema, readOnly)` of an edit tool, `None` for other names. Descriptions and input
/// schemas come from the operation definitions.
pub fn definition(name: &str) -> Option<(Value, bool)> {
    let (schema, read_only) = match name {
        "rename" | "apply_code_action" | "format" | "edit" => (EDIT_OUTPUT, false),
        "code_actions" => (CODE_ACTIONS_OUTPUT, true),
        _ => return None,
    };
    let schema = serde_json::from_str(schema).expect("edit tool output schemas are valid JSON");
    Some((schema, read_only))
}

/// Run edit operation `operation` (tool `name`, named in failures), its arguments already
/// checked and its files resolved inside the root; `tag` marks its LSP requests for
/// cancellation, and once the context's call is cancelled nothing more is written.
pub fn run(
    context: &ToolContext,
    name: &str,
    operation: &Operation,
    tag: u64,
) -> Result<(Value, String), ToolFailure> {
    let mut commands = EditCommands::new(
        context.op_sender.clone(),
        context.root.clone(),
        context.timeout,
    );
    if let Some(cancelled) = &context.cancelled {
        commands = commands.cancellable(tag, std::sync::Arc::clone(cancelled));
    }
    let root = &context.root;
    let failure = |error| command_failure(root, name, error);
    match operation {
        Operation::Rename {
            at,
            new_name,
            apply,
        } => {
            let outcome = commands.rename(at, new_name, *apply).map_err(failure)?;
            Ok(outcome_result(root, &outcome))
        }
        Operation::CodeActions { at } => {
            let actions = commands.code_actions(at).map_err(failure)?;
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
                text.push_str(
                    "no code actions here; try a wider line range or a position on a diagnostic\n",
                );
            }
            let mut json =
                json!({ "actions": serde_json::to_value(&actions).unwrap_or(json!([])) });
            clean_json(&mut json, root);
            Ok((json, text))
        }
        Operation::ApplyCodeAction { at, title, apply } => {
            let outcome = commands
                .apply_code_action(at, title, *apply)
                .map_err(failure)?;
            Ok(outcome_result(root, &outcome))
        }
        Operation::Format {
            file,
            options,
            apply,
        } => {
            let outcome = commands
                .format_with(file, *options, *apply)
                .map_err(failure)?;
            Ok(outcome_result(root, &outcome))
        }
        Operation::Edit { file, old, new } => {
            let outcome = commands.edit(file, old, new).map_err(failure)?;
            Ok(outcome_result(root, &outcome))
        }
        other => Err(ToolFailure(format!(
            "{name}: not an edit operation ({})",
            other.definition().name
        ))),
    }
}

/// The structured result and the text of an edit outcome (paths relative to the root).
pub fn outcome_result(root: &Path, outcome: &EditOutcome) -> (Value, String) {
    let report = &outcome.report;
    let json = outcome_json(outcome, root);
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
    } else if report.written
        && outcome.new_diagnostics.is_empty()
        && outcome.diagnostics_note.is_none()
    {
        // Only the files compared are vouched for: an edit can break a caller elsewhere.
        match outcome.watched {
            0 => text.push_str("no new diagnostics in the changed files\n"),
            1 => text.push_str(
                "no new diagnostics in the changed files or the 1 file that still mentions the old name\n",
            ),
            n => text.push_str(&format!(
                "no new diagnostics in the changed files or the {n} files that still mention the old name\n"
            )),
        }
    }
    (json, text)
}

/// A command error as an actionable tool failure.
fn command_failure(root: &Path, tool: &str, error: CommandError) -> ToolFailure {
    let root_text = format!("{}/", root.display());
    let message = error.to_string().replace(&root_text, "");
    let hint = match &error {
        CommandError::Unsupported { .. } | CommandError::CannotFormat { .. } => {
            " (see lsp://servers for each server's capabilities; use edit to change the text directly)"
        }
        CommandError::MisplacedEdit { .. } => {
            " (the server's positions do not fit this file; change the occurrences with edit)"
        }
        CommandError::NothingToRename { .. } => {
            " (point at an identifier: give symbol with its name on that line)"
        }
        CommandError::StillIndexing { .. } => " (retry in a few seconds)",
        CommandError::InvalidName { .. }
        | CommandError::RenameRefused { bad_name: true, .. } => {
            " (nothing was written; give a valid name)"
        }
        CommandError::RenameRefused { .. } => " (nothing was written; choose another name)",
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
    use crate::edit::{EditReport, FileChange, Operation};
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
                    generation: 0,
                },
                diff: "--- a/a.py\n+++ b/a.py\n".to_owned(),
                new_diagnostics: block.to_owned(),
                diagnostics_note: None,
                note: None,
                not_renamed: Vec::new(),
                watched: 0,
                new_errors: 0,
                old_name_findings: 0,
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
            json!({"applied": true, "files": ["a.py"], "operations": operations, "diff": "--- a/a.py\n+++ b/a.py\n", "diagnosticsAfterEdit": "", "newErrors": 0}),
            "renamed b.py -> c.py\nno new diagnostics in the changed files\n",
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
