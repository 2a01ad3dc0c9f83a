//! Running an [`Operation`] on an engine and rendering its result: the one place that turns an
//! operation's outcome into its JSON object ([`Answer::json`], what `lspc batch` returns as
//! `result` and `lspc <command> --format json` prints) and its human text ([`Answer::human`]).
//!
//! JSON paths are relative to the workspace root; positions are 1-based lines and 1-based
//! character columns. Failures keep their exit status ([`Failure::exit_status`]): 1 an edit was
//! refused, 2 bad input (a file that does not exist, a position off the line), 3 a server failed,
//! timed out or lacks the feature.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::Operation;
use crate::diagnostics::Diagnostic;
use crate::doorbell::LoopSender;
use crate::edit::commands::{
    render_outcome, CodeActionItem, CommandError, EditCommands, EditOutcome,
};
use crate::edit::Operation as EditOperation;
use crate::engine::{DiagnosticsOutcome, EngineError, Op};
use crate::exit::{EXIT_FOUND, EXIT_SERVER, EXIT_USAGE};
use crate::query::command::execute_rendering as execute_query;
use crate::query::command::QueryAnswer;
use crate::query::{Queries, QueryError};
use crate::uri;

/// What an operation needs from the engine session it runs on.
pub struct Context<'a> {
    pub op_sender: &'a LoopSender<Op>,
    pub queries: &'a Queries,
    pub edits: &'a EditCommands,
    /// Bounds each file's diagnostics wait.
    pub timeout: Duration,
    /// The configuration the engine runs (for `check`: which files some server serves, and
    /// each server's project file set).
    pub config: &'a crate::config::Config,
    /// Whether the caller reads [`Answer::human`] (`lspc batch` does not: queries then skip it).
    pub rendering: crate::query::command::Rendering,
    /// `diagnostics` reports only the diagnostics at or above this severity (`lspc diagnostics
    /// --severity`); `None`: every one.
    pub severity: Option<crate::diagnostics::Severity>,
}

/// An operation's outcome in both renderings.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The result object (paths relative to the root).
    pub json: crate::query::ResultJson,
    /// The human rendering.
    pub human: String,
    /// Whether anything was found (queries: exit 0, else 1).
    pub found: bool,
    /// A note for stderr (a server still indexing, a preview not written).
    pub note: Option<String>,
    /// The answer is not the whole of it: a server timed out or failed (`diagnostics`, whose
    /// `complete` is then false). `lspc diagnostics` exits 3 then, as `lspc check` does, and
    /// never 0: an empty, incomplete answer is no "clean".
    pub incomplete: bool,
    /// A written edit: how many errors it brought ([`EditOutcome::new_errors`]); the CLI exits 1
    /// when there are any. 0 for every other operation.
    pub new_errors: usize,
}

/// Why an operation failed; the message is the frontends' error text.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub message: String,
    pub exit_status: i32,
}

impl Failure {
    pub fn exit_status(&self) -> i32 {
        self.exit_status
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `error` as an operation's failure, its paths under `root` relative to it (as a query's are).
fn command_failure(error: CommandError, root: &Path) -> Failure {
    let exit_status = match &error {
        // No server for the file, or input the engine refuses: a usage error, as for a query
        // (a new user's trial: `lspc format README.md` exited 3, `lspc hover README.md:1:1` 2).
        CommandError::Engine(EngineError::NoServer { .. } | EngineError::InvalidInput(_)) => {
            EXIT_USAGE
        }
        // A server that lacks the feature, or cannot use it here (README "Exit status": 3).
        CommandError::Engine(_)
        | CommandError::PrimaryFailed(_)
        | CommandError::Unsupported { .. }
        | CommandError::CannotFormat { .. }
        | CommandError::MisplacedEdit { .. }
        | CommandError::StillIndexing { .. } => EXIT_SERVER,
        // A refused edit: nothing was written (README: exit 1).
        CommandError::Edit(_)
        | CommandError::Occurrences { .. }
        | CommandError::Disabled { .. }
        | CommandError::RenameRefused {
            bad_name: false, ..
        } => EXIT_FOUND,
        // A new name the server says the language cannot have, as lspc's own check says it.
        CommandError::RenameRefused { bad_name: true, .. } => EXIT_USAGE,
        _ => EXIT_USAGE,
    };
    Failure {
        message: error
            .to_string()
            .replace(&format!("{}/", root.display()), ""),
        exit_status,
    }
}

/// A query's outcome as an operation's.
fn query_outcome(outcome: Result<QueryAnswer, QueryError>) -> Result<Answer, Failure> {
    let answer = outcome.map_err(|error| Failure {
        message: error.to_string(),
        exit_status: error.exit_status(),
    })?;
    Ok(answer.into())
}

impl From<QueryAnswer> for Answer {
    /// A query's answer as an operation's: its "incomplete" note becomes the stderr note.
    fn from(answer: QueryAnswer) -> Answer {
        Answer {
            json: answer.json,
            human: answer.human,
            found: answer.found,
            note: answer.incomplete,
            incomplete: false,
            new_errors: 0,
        }
    }
}

/// What ends an operation started with [`start_detached`]: called exactly once with its outcome. Dropped
/// uncalled (the engine went away with the operation unanswered), it is called with the
/// failure "the engine has shut down" (exit status 3), so it is never called zero times.
pub struct Done(Option<OperationContinuation>);

/// The closure inside a [`Done`].
type OperationContinuation = Box<dyn FnOnce(Result<Answer, Failure>) + Send>;

impl Done {
    pub fn new(done: impl FnOnce(Result<Answer, Failure>) + Send + 'static) -> Done {
        Done(Some(Box::new(done)))
    }

    /// Call it with `outcome`.
    pub fn finish(mut self, outcome: Result<Answer, Failure>) {
        if let Some(done) = self.0.take() {
            done(outcome);
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(done) = self.0.take() {
            done(Err(Failure {
                message: EngineError::Gone.to_string(),
                exit_status: EXIT_SERVER,
            }));
        }
    }
}

impl std::fmt::Debug for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Done")
    }
}

/// What [`start_detached`] hands an operation that is not instant (now), or whose instant
/// answer is to be asked again the blocking way, to.
pub type NotInstant = std::sync::Arc<dyn Fn(Operation, Done) + Send + Sync>;

/// Start `operation` on the instant route (issue 15): for a query that is one request long
/// (hover, definition, declaration, typeDefinition, implementation, references, document
/// symbols, signature help) whose file needs no readiness wait, the loop syncs the file and
/// sends the request in one turn, and the whole continuation (the server's answer → the query
/// result → [`Answer`] → `done`) runs on the thread that has the answer: the server's reader for
/// a successful answer, the loop (or a session's proxy) for an error, a ContentModified retry's
/// end, a timeout, a cancellation (`context.queries`' tag) or a crash. `done` gets exactly what
/// [`execute`] would return; it must not block for long on the reader (it holds up that server's
/// other messages) nor at all where [`crate::engine::serves_ops`] says so.
///
/// Returns without waiting for the loop's decision: when the operation is not instant (now: a
/// readiness wait is due, its server is still starting, the sync or the position failed),
/// `not_instant(operation, done)` runs instead, on the caller's thread or the loop's (so it must
/// not block: hand the pair to a thread that runs [`execute`]); it runs too, on the thread that
/// got the answer and instead of `done`, for an answer to be asked again the blocking way
/// ([`crate::query::command::Handoff::ask_again`]). `lspc batch` uses it, as its
/// thread has nothing to do until the answer is written; `lspc mcp`'s stdio reader uses the
/// query layer's own [`crate::query::command::start_detached`].
pub fn start_detached(
    context: &Context<'_>,
    operation: Operation,
    done: Done,
    not_instant: NotInstant,
) {
    let Operation::Query(request) = operation else {
        return not_instant(operation, done);
    };
    let again = std::sync::Arc::clone(&not_instant);
    let finish: crate::query::command::FinishQuery<Done> =
        |done, outcome| done.finish(query_outcome(outcome));
    crate::query::command::start_detached(
        context.queries,
        request,
        context.rendering,
        done,
        finish,
        crate::query::command::Handoff {
            not_instant: Box::new(move |request, done| {
                not_instant(Operation::Query(request), done)
            }),
            ask_again: Some(Box::new(move |request, done| {
                again(Operation::Query(request), done)
            })),
        },
        None,
    );
}

/// Run `operation` in `context`.
pub fn execute(context: &Context<'_>, operation: &Operation) -> Result<Answer, Failure> {
    let root = context.queries.root().to_path_buf();
    match operation {
        Operation::Query(request) => {
            query_outcome(execute_query(context.queries, request, context.rendering))
        }
        Operation::Diagnostics { file: None } => Err(Failure {
            message: "diagnostics: file is required here (only MCP delivers the diagnostics not yet seen)"
                .to_owned(),
            exit_status: EXIT_USAGE,
        }),
        Operation::Diagnostics { file: Some(file) } => {
            let path = uri::canonical(file);
            if !path.is_file() {
                return Err(Failure {
                    message: format!(
                        "cannot read {}: no such file",
                        uri::relative_display(&path, &root)
                    ),
                    exit_status: EXIT_USAGE,
                });
            }
            // `Op::Diagnostics`, as the MCP tool asks: a server configured for the file that
            // cannot start fails it, where `check` keeps the others' findings.
            let mut files = diagnostics_of(context, Asked::OneFile(path.clone()))?;
            let mut file = files.remove(0);
            // tsc's errors in a tsconfig.json itself, which no server publishes.
            if let FileOutcome::Done { diagnostics, .. } = &mut file.outcome {
                diagnostics.extend(crate::check::tsconfig_diagnostics::of_config_file(
                    context.op_sender,
                    &root,
                    &path,
                    context.timeout,
                ));
            }
            match file.outcome {
                // No server configured for the file: the usage error every other operation on
                // it is (README: "no server for the file", exit 2), not a server failure (a
                // new user's trial: `lspc diagnostics README.md` exited 3, `hover` 2).
                FileOutcome::NotChecked(message)
                    if context.config.servers_for_path(&path).is_empty() =>
                {
                    Err(Failure {
                        message,
                        exit_status: EXIT_USAGE,
                    })
                }
                FileOutcome::Failed(message) | FileOutcome::NotChecked(message) => Err(Failure {
                    message,
                    exit_status: EXIT_SERVER,
                }),
                FileOutcome::Done {
                    mut diagnostics,
                    incomplete,
                    ..
                } => {
                    let total = diagnostics.len();
                    if let Some(threshold) = context.severity {
                        diagnostics.retain(|diagnostic| diagnostic.severity <= threshold);
                    }
                    let below = (total > diagnostics.len()).then(|| {
                        let level = context.severity.map_or("", |level| level.as_str());
                        match total - diagnostics.len() {
                            1 => format!("1 diagnostic below {level} not shown"),
                            n => format!("{n} diagnostics below {level} not shown"),
                        }
                    });
                    let mut json = json!({
                        "diagnostics": diagnostics.iter().map(|d| diagnostic_json(d, &root)).collect::<Vec<_>>(),
                        "complete": incomplete.is_none(),
                    });
                    if let Some(incomplete) = &incomplete {
                        json["incomplete"] = json!(format!("diagnostics incomplete: {incomplete}"));
                    }
                    // A trial on psf/requests: `docs/conf.py`, in ruff's exclude, was clean with
                    // no word that only pyright had looked at it.
                    if let Some(reason) = &file.not_checked_by {
                        json["notCheckedBy"] = json!(reason);
                    }
                    let incomplete = incomplete.map(|text| format!("diagnostics incomplete: {text}"));
                    let not_checked = file
                        .not_checked_by
                        .map(|reason| format!("not checked by every server: {reason}"));
                    let notes: Vec<String> =
                        [incomplete, not_checked, below].into_iter().flatten().collect();
                    let note = (!notes.is_empty()).then(|| notes.join("; "));
                    Ok(Answer {
                        human: diagnostics_text(&diagnostics, &root),
                        found: !diagnostics.is_empty(),
                        note,
                        incomplete: json["complete"] == false,
                        new_errors: 0,
                        json: json.into(),
                    })
                }
            }
        }
        Operation::Check { paths } => check(context, paths, &root),
        Operation::Rename {
            at,
            new_name,
            apply,
        } => edit_answer(context.edits.rename(at, new_name, *apply), &root),
        Operation::CodeActions { at } => {
            let actions = context
                .edits
                .code_actions(at)
                .map_err(|error| command_failure(error, &root))?;
            let mut json = json!({ "actions": serde_json::to_value(&actions).unwrap_or(json!([])) });
            clean_json(&mut json, &root);
            Ok(Answer {
                human: code_actions_text(&actions),
                found: !actions.is_empty(),
                note: None,
                incomplete: false,
                new_errors: 0,
                json: json.into(),
            })
        }
        Operation::ApplyCodeAction { at, title, apply } => {
            edit_answer(context.edits.apply_code_action(at, title, *apply), &root)
        }
        Operation::Format {
            file,
            options,
            apply,
        } => edit_answer(context.edits.format_with(file, *options, *apply), &root),
        Operation::Edit { file, old, new } => {
            edit_answer(context.edits.edit(file, old, new), &root)
        }
    }
}

/// `title  [kind]  (preferred)  (disabled: reason)`, one action a line.
pub fn code_actions_text(actions: &[CodeActionItem]) -> String {
    if actions.is_empty() {
        return "no code actions\n".to_owned();
    }
    actions
        .iter()
        .map(|action| {
            let mut line = action.title.clone();
            if let Some(kind) = &action.kind {
                line.push_str(&format!("  [{kind}]"));
            }
            if action.preferred {
                line.push_str("  (preferred)");
            }
            if let Some(reason) = &action.disabled {
                line.push_str(&format!("  (disabled: {reason})"));
            }
            line.push('\n');
            line
        })
        .collect()
}

fn edit_answer(outcome: Result<EditOutcome, CommandError>, root: &Path) -> Result<Answer, Failure> {
    let outcome = outcome.map_err(|error| command_failure(error, root))?;
    // A preview's stdout is a diff that must stay appliable, so its note goes to stderr.
    let note =
        match (outcome.report.written, &outcome.note) {
            (false, Some(note)) => Some(format!("note: {note}")),
            _ if outcome.old_name_findings > 0 => {
                Some(format!(
            "note: {} of the new findings {} no error but {} the old name: a use the rename \
             left, which names nothing now (it counts as an error)",
            outcome.old_name_findings,
            if outcome.old_name_findings == 1 { "is" } else { "are" },
            if outcome.old_name_findings == 1 { "names" } else { "name" },
        ))
            }
            _ => None,
        };
    Ok(Answer {
        json: outcome_json(&outcome, root).into(),
        human: render_outcome(&outcome, root),
        found: true,
        note,
        incomplete: false,
        new_errors: outcome.new_errors,
    })
}

/// The JSON object of an edit outcome (paths relative to the root): `applied`, `files`,
/// `operations`, `diff`, and when written `diagnosticsAfterEdit` and `newErrors` (how many of
/// its diagnostics are errors); `diagnosticsNote`/`note` when
/// there is one; after a rename, `notRenamed` (`file`, 1-based `line`) when the server left
/// whole-word occurrences of the old name.
pub fn outcome_json(outcome: &EditOutcome, root: &Path) -> Value {
    let report = &outcome.report;
    let show = |path: &Path| display_path(root, path);
    let operations: Vec<Value> = report
        .operations
        .iter()
        .map(|operation| match operation {
            EditOperation::Edit { path, edits } => {
                json!({"kind": "edit", "file": show(path), "edits": edits})
            }
            EditOperation::Create { path } => json!({"kind": "create", "file": show(path)}),
            EditOperation::Rename { from, to } => {
                json!({"kind": "rename", "from": show(from), "to": show(to)})
            }
            EditOperation::Delete { path } => json!({"kind": "delete", "file": show(path)}),
            EditOperation::Skipped { path, reason } => {
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
        json["newErrors"] = json!(outcome.new_errors);
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
    json
}

/// One file's diagnostics wait.
struct FileDiagnostics {
    path: PathBuf,
    outcome: FileOutcome,
    /// The engine's [`crate::engine::FileDiagnostics::not_checked_by`].
    not_checked_by: Option<String>,
}

enum FileOutcome {
    /// Settled, or timed out with what had arrived (`incomplete` says which servers), or
    /// settled on some servers while the others failed (`failed`; `incomplete` says why).
    Done {
        diagnostics: Vec<Diagnostic>,
        incomplete: Option<String>,
        failed: bool,
    },
    Failed(String),
    /// The engine did not ask a server (no server gives the file diagnostics, a binary or an
    /// oversized file): an error for a file named, skipped for a file a walk found.
    NotChecked(String),
}

/// What [`diagnostics_of`] asks the engine.
enum Asked {
    /// `diagnostics FILE`: [`Op::Diagnostics`] (a server configured for the file that cannot
    /// start fails it).
    OneFile(PathBuf),
    /// `check`: [`Op::DiagnosticsLeavingOut`]; `leave_out` names the servers not to ask about a
    /// file (those whose project leaves it out).
    Check {
        paths: Vec<PathBuf>,
        leave_out: std::collections::HashMap<PathBuf, Vec<crate::process::ServerId>>,
    },
}

/// The settled diagnostics of the files `asked`.
fn diagnostics_of(context: &Context<'_>, asked: Asked) -> Result<Vec<FileDiagnostics>, Failure> {
    let gone = || Failure {
        message: "the engine has shut down".to_owned(),
        exit_status: EXIT_SERVER,
    };
    let (reply, receiver) = crossbeam_channel::bounded(1);
    let timeout = context.timeout;
    let op = match asked {
        Asked::OneFile(path) => Op::Diagnostics {
            paths: vec![path],
            timeout,
            reply,
        },
        Asked::Check { paths, leave_out } => Op::DiagnosticsLeavingOut {
            paths,
            leave_out,
            timeout,
            progress: None,
            reply,
        },
    };
    context.op_sender.send(op).map_err(|_| gone())?;
    let results = receiver.recv().map_err(|_| gone())?;
    if results.is_empty() {
        return Err(Failure {
            message: "no diagnostics result".to_owned(),
            exit_status: EXIT_SERVER,
        });
    }
    Ok(results
        .into_iter()
        .map(|result| FileDiagnostics {
            path: result.path,
            not_checked_by: result.not_checked_by,
            outcome: match result.outcome {
                DiagnosticsOutcome::Settled(diagnostics) => FileOutcome::Done {
                    diagnostics,
                    incomplete: None,
                    failed: false,
                },
                DiagnosticsOutcome::TimedOut {
                    diagnostics,
                    servers,
                    after,
                } => FileOutcome::Done {
                    diagnostics,
                    incomplete: Some(format!(
                        "{} still analysing after {} s",
                        servers.join(", "),
                        after.as_secs_f64()
                    )),
                    failed: false,
                },
                DiagnosticsOutcome::PartlyFailed {
                    diagnostics,
                    failures,
                } => FileOutcome::Done {
                    diagnostics,
                    incomplete: Some(failures),
                    failed: true,
                },
                DiagnosticsOutcome::Failed(message) => FileOutcome::Failed(message),
                DiagnosticsOutcome::NotChecked(message) => FileOutcome::NotChecked(message),
            },
        })
        .collect())
}

/// `check`: what `lspc check PATHS --format json` checks and reports, with its defaults: the
/// files under `paths` (the root when empty) that a server serves, each server only on the files
/// its project includes (pyright's `include`, tsconfig's, ruff's `exclude`), or that were named,
/// with their settled diagnostics at `info` severity or above (hints are editor decorations no
/// CLI prints) and every ShellCheck finding, the errors found in the project configurations (a
/// tsconfig's), then the walked files left out and those no server checked, as `skipped` with
/// the reason. Found on pallets/click: this operation checked
/// every walked file with every server and reported 81 pyright errors in `tests/` (outside
/// `[tool.pyright] include`) that neither `pyright` nor `lspc check` reports.
fn check(context: &Context<'_>, paths: &[PathBuf], root: &Path) -> Result<Answer, Failure> {
    let targets: Vec<PathBuf> = if paths.is_empty() {
        vec![root.to_path_buf()]
    } else {
        paths.to_vec()
    };
    let usage = |message: String| Failure {
        message,
        exit_status: EXIT_USAGE,
    };
    let files =
        crate::walk::list_files_found(root, &targets).map_err(|error| usage(error.to_string()))?;
    let named = crate::check::NamedPaths::new(&targets);
    let selection = crate::check::default_selection(context.config, &named, files);
    if selection.files.is_empty() && selection.skipped.is_empty() {
        return Err(usage(
            "check: no files to check: no configured language server serves the given paths"
                .to_owned(),
        ));
    }
    // Every file found was skipped (outside the servers' projects: a named `test-d` outside
    // tsconfig's `include`): nothing was checked, as `lspc check` says (exit 2), no clean answer.
    if let ([], [first, ..]) = (selection.files.as_slice(), selection.skipped.as_slice()) {
        return Err(usage(format!(
            "check: no file was checked: {} skipped ({}: {})",
            crate::check::files_found(selection.skipped.len()),
            uri::relative_display(&first.path, root),
            first.reason
        )));
    }
    let checked = selection.files.clone();
    let results = match checked.is_empty() {
        true => Vec::new(),
        false => diagnostics_of(
            context,
            Asked::Check {
                paths: selection.files,
                leave_out: selection.leave_out,
            },
        )?,
    };
    let mut config_diagnostics = selection.config_diagnostics;
    crate::check::add_tsconfig_errors(
        context.op_sender,
        root,
        &checked,
        context.timeout,
        &mut config_diagnostics,
    );
    let folders: Vec<PathBuf> = targets
        .iter()
        .filter(|target| target.is_dir())
        .map(|target| uri::canonical(target))
        .collect();
    let mut outcomes: Vec<(PathBuf, FileOutcome)> = results
        .into_iter()
        .map(|file| (file.path, file.outcome))
        .collect();
    for diagnostic in config_diagnostics {
        match outcomes
            .iter_mut()
            .find(|(path, _)| *path == diagnostic.path)
        {
            Some((_, FileOutcome::Done { diagnostics, .. })) => diagnostics.push(diagnostic),
            Some((_, FileOutcome::Failed(_) | FileOutcome::NotChecked(_))) => {}
            None if folders
                .iter()
                .any(|folder| diagnostic.path.starts_with(folder)) =>
            {
                outcomes.push((
                    diagnostic.path.clone(),
                    FileOutcome::Done {
                        diagnostics: vec![diagnostic],
                        incomplete: None,
                        failed: false,
                    },
                ))
            }
            None => {}
        }
    }
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    let mut json_files = Vec::new();
    let mut human = String::new();
    let mut found = false;
    let mut skipped = selection.skipped;
    for (path, outcome) in outcomes {
        let shown = uri::relative_display(&path, root);
        match outcome {
            FileOutcome::Done {
                mut diagnostics,
                incomplete,
                failed,
            } => {
                // As `lspc check` reports by default: information and above, and every
                // ShellCheck finding (`shellcheck` prints its `style` ones).
                diagnostics.retain(|diagnostic| {
                    crate::check::verdict::ReportFrom::LikeEachCli
                        .reports(diagnostic.severity, diagnostic.source.as_deref())
                });
                crate::diagnostics::sort(&mut diagnostics);
                found |= !diagnostics.is_empty();
                human.push_str(&diagnostics_text(&diagnostics, root));
                // As `lspc check` reports them: a server that failed makes the file an error,
                // with the other servers' findings kept.
                let state = match (&incomplete, failed) {
                    (Some(_), true) => "error",
                    (Some(_), false) => "timeout",
                    (None, _) if diagnostics.is_empty() => "clean",
                    (None, _) => "diagnostics",
                };
                let mut entry = json!({
                    "path": shown,
                    "state": state,
                    "diagnostics": diagnostics.iter().map(|d| diagnostic_json(d, root)).collect::<Vec<_>>(),
                });
                if let Some(incomplete) = incomplete {
                    let reason = match failed {
                        true => format!("not checked by every server: {incomplete}"),
                        false => incomplete,
                    };
                    human.push_str(&format!("{shown}: {state}: {reason}\n"));
                    entry["reason"] = json!(reason);
                }
                json_files.push(entry);
            }
            // As `lspc check` classifies it: a walked file no server checked is skipped.
            FileOutcome::NotChecked(message) if !named.files.contains(&path) => {
                skipped.push(crate::output::SkippedFile {
                    reason: crate::check::walked_skip_reason(&path, &message),
                    path,
                    outside_projects: false,
                });
            }
            FileOutcome::Failed(message) | FileOutcome::NotChecked(message) => {
                human.push_str(&format!("{shown}: error: {message}\n"));
                json_files.push(
                    json!({"path": shown, "state": "error", "reason": message, "diagnostics": []}),
                );
            }
        }
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    for file in skipped {
        let shown = uri::relative_display(&file.path, root);
        human.push_str(&format!("{shown}: skipped: {}\n", file.reason));
        json_files.push(
            json!({"path": shown, "state": "skipped", "reason": file.reason, "diagnostics": []}),
        );
    }
    Ok(Answer {
        json: json!({ "files": json_files }).into(),
        human,
        found,
        note: None,
        incomplete: false,
        new_errors: 0,
    })
}

/// One diagnostic as JSON (the batch `diagnostics` shape).
pub fn diagnostic_json(diagnostic: &Diagnostic, root: &Path) -> Value {
    json!({
        "path": uri::relative_display(&diagnostic.path, root),
        "line": diagnostic.line,
        "column": diagnostic.column,
        "endLine": diagnostic.end_line,
        "endColumn": diagnostic.end_column,
        "severity": diagnostic.severity.as_str(),
        "message": diagnostic.message,
        "source": diagnostic.source,
        "code": diagnostic.code,
        "server": diagnostic.server,
    })
}

/// `path:line:column: severity: message [source code]`, one a line.
fn diagnostics_text(diagnostics: &[Diagnostic], root: &Path) -> String {
    diagnostics
        .iter()
        .map(|diagnostic| {
            let path = uri::relative_display(&diagnostic.path, root);
            crate::output::human_diagnostic(&path, diagnostic, false)
        })
        .collect()
}

/// Remove `null` object members everywhere and turn absolute paths under `root` (values of keys
/// named `path`, `file` or `uri`-less path strings) into root-relative ones.
pub fn clean_json(value: &mut Value, root: &Path) {
    match value {
        Value::Object(object) => {
            object.retain(|_, member| !member.is_null());
            for (key, member) in object.iter_mut() {
                if key == "path" || key == "file" {
                    if let Value::String(text) = member {
                        *text = display_path(root, Path::new(text.as_str()));
                        continue;
                    }
                }
                clean_json(member, root);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| clean_json(item, root)),
        _ => {}
    }
}

/// `path` relative to `root` when inside it, else as is (defined with the cleaned form that
/// MCP's instant answers are serialised into, [`crate::query::cleaned_json`]).
pub use crate::query::cleaned_json::display_path;
