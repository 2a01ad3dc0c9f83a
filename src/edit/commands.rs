//! The edit commands: `rename`, `code-actions`, `format` and `edit` (issue 5), for the CLI and the
//! MCP server alike.
//!
//! Positions in and out are 1-based lines and 1-based columns counted in Unicode characters; they
//! are converted to each server's negotiated encoding here. Paths are canonical absolute paths
//! inside the API; [`render_outcome`] shows them relative to the root.
//!
//! Every command that writes follows one sequence (`EditCommands::write_and_report`): preview
//! the edit through the loop ([`crate::engine::Op::ApplyEdit`], nothing written), take the
//! SETTLED diagnostics of the files it will change as the baseline, write, wait for settled
//! diagnostics again, and report only the diagnostics that are new (seed 000's before/after
//! baseline, block capped at [`NEW_DIAGNOSTICS_CAP`] characters). Without `apply` a command only
//! previews: a unified diff.
//!
//! Positions are the query layer's ([`TextPosition`], resolved by [`resolve_position`]), and
//! before asking a server to rename or for code actions the commands wait for it to be ready
//! exactly as cross-file queries do ([`wait_until_ready`]): a rename is cross-file by nature, and
//! typescript-language-server renames in one file only until it has loaded its project.
//! Code-action contexts carry each server's own diagnostics exactly as it sent them
//! ([`crate::engine::Op::RawDiagnostics`]: `data` kept, which ruff needs for its quick fixes).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use super::diff::unified_diff;
use super::formatting::{self, FormattingOverrides};
use super::local_rename;
use super::workspace_edit::{ApplyMode, EditError, EditReport, Operation};
use crate::diagnostics::{comparison_message, Diagnostic, Severity};
use crate::doorbell::LoopSender;
use crate::engine::{
    apply_edit_with, raw_diagnostics_with, request_with, server_edits_with, sync_with,
    DiagnosticsOutcome, EngineError, Op, ServerInfo, SyncedDocument,
};
use crate::query::{resolve_position, wait_until_ready, ColumnOrSymbol, TextPosition};
use crate::text::{LineIndex, PositionEncoding};
use crate::uri;
use crate::word_occurrences as leftovers;

/// How many times `edit` (a text replacement) searches the file again when another lspc edit
/// wrote it between its read and its write ([`EditCommands::edit`]).
const EDIT_ATTEMPTS: u32 = 3;

/// The cap on the `<new-diagnostics>` block, in characters (seed 000).
pub const NEW_DIAGNOSTICS_CAP: usize = 4_000;

/// How many places a rename's "not renamed by the server" note lists (all are in `notRenamed`).
pub const NOT_RENAMED_SHOWN: usize = 20;

/// How many files with leftover occurrences a rename opens before asking again: enough for a
/// test folder, few enough not to flood a server (or the open-documents limit).
pub const MAX_LEFTOVER_FILES_OPENED: usize = 32;

/// The shortest wait of a rename's after-check for the files that still mention the old name
/// once the changed files have settled ([`EditCommands::conclude_watching`]); [`watched_wait`]
/// gives the wait.
const WATCHED_SETTLE: Duration = Duration::from_secs(2);

/// How long the files that still mention the old name are waited for once the changed files
/// settled, which took `changed_took`: as long again, at least [`WATCHED_SETTLE`]. Their server
/// analyses them after the changed files, at the same pace: on a loaded machine a fixed 2 s
/// left the errors of a rename that broke them unreported (CI: typescript-language-server on a
/// nested tsconfig, 1 of 2 broken files reported).
fn watched_wait(changed_took: Duration) -> Duration {
    changed_took.max(WATCHED_SETTLE)
}

/// A span of lines (1-based, inclusive) for `code-actions FILE:LINE-LINE` or `FILE:LINE`, or
/// one position (the query layer's LOC: a column, or a symbol on the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    Lines {
        path: PathBuf,
        start_line: u32,
        end_line: u32,
    },
    At(TextPosition),
}

/// Why a command failed. Messages name the file, server or title.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandError {
    Engine(EngineError),
    /// No server for the file offers `capability` (e.g. `"renameProvider"`).
    Unsupported {
        path: PathBuf,
        capability: String,
    },
    /// The servers for the file that advertise formatting cannot format on this machine, for
    /// `reason` (the program their formatting runs is missing,
    /// [`crate::config::ServerConfig::formatting_off_reason`]): refused as
    /// [`CommandError::Unsupported`] is, a server that lacks the feature.
    CannotFormat {
        path: PathBuf,
        reason: String,
    },
    /// None of the file's running servers offers the feature, and its primary server is not
    /// running ([`crate::engine::SyncedDocument::primary_failure`], the engine's error as text).
    PrimaryFailed(String),
    /// A position that does not exist in the file (the message has the details).
    InvalidPosition(String),
    /// The new name of a rename cannot be a name in the file's language ([`super::identifier`]);
    /// `reason` says why (`it starts with '1'`). Nothing was asked or written.
    InvalidName {
        name: String,
        language: &'static str,
        reason: String,
    },
    /// The server answered `textDocument/prepareRename` or `textDocument/rename` with an error:
    /// it refuses this rename (gopls: `renaming this func "hello" to "world" conflicts with func
    /// in same block`). `bad_name` when the error is about the new name itself
    /// ([`refuses_the_name`]). Nothing was written.
    RenameRefused {
        server: String,
        message: String,
        bad_name: bool,
    },
    /// An edit of the server's rename replaces text that is not the old name, `found` at
    /// `path:line:column` (1-based, characters): its positions do not fit the file
    /// (vim-language-server 2.3 counts columns after non-ASCII text differently, and its rename
    /// of `s:Greet` turned `g:banner` into `s:Hellor`). Nothing was written.
    MisplacedEdit {
        server: String,
        path: PathBuf,
        line: u32,
        column: u32,
        found: String,
        name: String,
    },
    /// `prepareRename` answered `null`: nothing renameable there.
    NothingToRename {
        path: PathBuf,
        line: u32,
        column: u32,
    },
    /// `prepareRename` or `rename` answered `null` while `server` was still indexing when the
    /// readiness wait ended ([`wait_until_ready`]): not an answer about the position.
    StillIndexing {
        server: String,
        path: PathBuf,
        line: u32,
        column: u32,
    },
    /// The edit was refused by the edit engine; nothing was written.
    Edit(EditError),
    /// The caller was cancelled before anything was written ([`EditCommands::cancellable`]);
    /// nothing was written.
    Cancelled,
    /// No code action has this title.
    NoSuchAction {
        title: String,
        available: Vec<String>,
    },
    /// The action only runs a server command, which cannot be previewed.
    CommandOnly {
        title: String,
    },
    /// The server marks the action `disabled` (LSP 3.16 §`CodeAction.disabled`); `reason` is
    /// its `disabled.reason`.
    Disabled {
        title: String,
        reason: String,
    },
    /// `edit --old` occurs `count` times (not exactly once).
    Occurrences {
        path: PathBuf,
        count: usize,
    },
    /// Reading the file failed.
    Io {
        path: PathBuf,
        message: String,
    },
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Engine(error) => error.fmt(f),
            CommandError::Cancelled => {
                f.write_str("the call was cancelled before its edit was written; nothing was written")
            }
            CommandError::Unsupported { path, capability } => write!(
                f,
                "no language server for {} offers {capability}",
                path.display()
            ),
            CommandError::CannotFormat { path, reason } => {
                write!(f, "cannot format {}: {reason}", path.display())
            }
            CommandError::InvalidPosition(message) | CommandError::PrimaryFailed(message) => {
                f.write_str(message)
            }
            CommandError::InvalidName {
                name,
                language,
                reason,
            } => write!(f, "{name:?} is not a valid {language} name: {reason}"),
            CommandError::RenameRefused {
                server, message, ..
            } => write!(f, "{server} refused the rename: {message}"),
            CommandError::MisplacedEdit {
                server,
                path,
                line,
                column,
                found,
                name,
            } => write!(
                f,
                "{server}'s rename edit at {}:{line}:{column} replaces {found:?}, not {name:?}: \
                 its positions do not fit the file, so nothing was written",
                path.display()
            ),
            CommandError::NothingToRename { path, line, column } => write!(
                f,
                "nothing to rename at {}:{line}:{column}",
                path.display()
            ),
            CommandError::StillIndexing {
                server,
                path,
                line,
                column,
            } => write!(
                f,
                "{server} was still indexing when the wait ended and found nothing to rename at \
                 {}:{line}:{column}; nothing was written (try again, or with a longer --timeout)",
                path.display()
            ),
            CommandError::Edit(error) => write!(f, "edit refused: {error}"),
            CommandError::NoSuchAction { title, available } => {
                write!(f, "no code action titled {title:?}")?;
                if available.is_empty() {
                    write!(f, " (there are none here)")
                } else {
                    write!(f, " (available: {})", available.join("; "))
                }
            }
            CommandError::CommandOnly { title } => write!(
                f,
                "code action {title:?} runs a server command and cannot be previewed; apply it to see its changes"
            ),
            CommandError::Disabled { title, reason } => write!(
                f,
                "code action {title:?} is disabled by the server: {reason}"
            ),
            CommandError::Occurrences { path, count: 0 } => {
                write!(f, "the old text does not occur in {}", path.display())
            }
            CommandError::Occurrences { path, count } => write!(
                f,
                "the old text occurs {count} times in {}; give more context so it occurs once",
                path.display()
            ),
            CommandError::Io { path, message } => {
                write!(f, "cannot read {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for CommandError {}

impl From<EngineError> for CommandError {
    fn from(error: EngineError) -> CommandError {
        CommandError::Engine(error)
    }
}

/// A `null` rename answer: [`CommandError::NothingToRename`], or
/// [`CommandError::StillIndexing`] when `readiness` says the server was still busy.
fn nothing_to_rename(
    server: &ServerInfo,
    readiness: Option<String>,
    path: PathBuf,
    line: u32,
    column: u32,
) -> CommandError {
    match readiness {
        Some(_) => CommandError::StillIndexing {
            server: server.name.clone(),
            path,
            line,
            column,
        },
        None => CommandError::NothingToRename { path, line, column },
    }
}

/// A server's error answer to a rename as [`CommandError::RenameRefused`]; other failures (a
/// timeout, a crash, a method the server lacks) as they are.
fn rename_refused(error: CommandError) -> CommandError {
    match error {
        CommandError::Engine(EngineError::Server {
            server,
            code,
            message,
            ..
        }) if !matches!(code, METHOD_NOT_FOUND | CONTENT_MODIFIED) => CommandError::RenameRefused {
            bad_name: refuses_the_name(&message),
            server,
            message,
        },
        other => other,
    }
}

/// Whether the file at `path` begins with a UTF-8 byte order mark (`EF BB BF`).
fn begins_with_a_byte_order_mark(path: &Path) -> bool {
    use std::io::Read;
    let mut first = [0u8; 3];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut first))
        .is_ok_and(|()| first == [0xEF, 0xBB, 0xBF])
}

/// JSON-RPC's and LSP's codes that say nothing about the rename itself.
const METHOD_NOT_FOUND: i32 = -32601;
const CONTENT_MODIFIED: i32 = -32801;

/// Whether a server's rename error is about the new name: gopls `invalid identifier to rename:
/// "1bad"`, clangd `invalid name: the chosen name "int" is a keyword`, rust-analyzer `Invalid
/// name `1bad`: not an identifier`.
fn refuses_the_name(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.starts_with("invalid name") || message.starts_with("invalid identifier")
}

/// One code action as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeActionItem {
    pub title: String,
    pub kind: Option<String>,
    pub preferred: bool,
    /// Why the server marks it disabled, if it does.
    pub disabled: Option<String>,
    /// The server that offers it.
    pub server: String,
}

/// What a command did (or, in a preview, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditOutcome {
    pub report: EditReport,
    /// Unified diff of every changed file, paths relative to the root.
    pub diff: String,
    /// The `<new-diagnostics>` block (empty when nothing is new or nothing was written).
    pub new_diagnostics: String,
    /// Set when some file's diagnostics did not settle in time (the block may miss issues).
    pub diagnostics_note: Option<String>,
    /// Anything else the user should know: the server was still indexing (a rename may miss
    /// references), or it sent a follow-up request lspc ignored after applying its edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// After a rename: whole-word occurrences of the old name the server's edit left alone, in
    /// files it does not touch (see [`crate::word_occurrences`]); empty for other commands.
    #[serde(skip)]
    pub not_renamed: Vec<leftovers::Occurrences>,
    /// How many files the command did not change had their diagnostics compared too (a
    /// rename's files that still mention the old name); `new_diagnostics` covers them.
    #[serde(skip)]
    pub watched: usize,
    /// How many of the new diagnostics are errors (LSP `DiagnosticSeverity.Error`), and after a
    /// rename also the new findings of any severity that name the old name (a use the rename
    /// left, which names nothing now: clangd 14's `Implicit declaration of function
    /// '_tr_flush_block' is invalid in C99` is a warning, and the link then fails), counted
    /// before the block's 4,000-character cap: a written edit with any exits 1 in the CLI
    /// (`newErrors` in the JSON); 0 when nothing was written.
    #[serde(skip)]
    pub new_errors: usize,
    /// Of [`Self::new_errors`], the findings that are no errors but name the old name.
    #[serde(skip)]
    pub old_name_findings: usize,
}

/// The edit commands over an engine reached through `op_sender`.
pub struct EditCommands {
    op_sender: LoopSender<Op>,
    root: PathBuf,
    /// Bound on each request and each diagnostics wait.
    timeout: Duration,
    /// The caller's tag on the LSP requests ([`crate::engine::Op::Cancel`]).
    tag: Option<u64>,
    /// Whether the caller was cancelled ([`EditCommands::cancellable`]).
    cancelled: Option<CancelCheck>,
}

/// Tells whether the call an [`EditCommands`] serves was cancelled (an MCP client's
/// `notifications/cancelled`).
pub type CancelCheck = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

impl EditCommands {
    /// `root` is the workspace root (displayed paths are relative to it).
    pub fn new(op_sender: LoopSender<Op>, root: PathBuf, timeout: Duration) -> EditCommands {
        EditCommands {
            op_sender,
            root: uri::canonical(&root),
            timeout,
            tag: None,
            cancelled: None,
        }
    }

    /// These commands for a call that can be cancelled: their LSP requests carry `tag`, and
    /// nothing is written (nor a server command run) once `cancelled` says so; they fail with
    /// [`CommandError::Cancelled`] instead. (helper-40: a rename cancelled during its baseline
    /// wait wrote its 10 files 9.4 s later, and the client, sent no answer as MCP asks, took it
    /// that nothing had changed.)
    pub fn cancellable(mut self, tag: u64, cancelled: CancelCheck) -> EditCommands {
        self.tag = Some(tag);
        self.cancelled = Some(cancelled);
        self
    }

    /// [`CommandError::Cancelled`] once the caller was cancelled.
    fn unless_cancelled(&self) -> Result<(), CommandError> {
        match &self.cancelled {
            Some(cancelled) if cancelled() => Err(CommandError::Cancelled),
            _ => Ok(()),
        }
    }

    /// `textDocument/prepareRename` (when the server offers it) then `textDocument/rename` at
    /// `at` to `new_name`; written only when `apply`.
    ///
    /// Waits for the server to be ready first ([`wait_until_ready`]); when it is still indexing
    /// after the timeout the outcome's `note` says the rename may be incomplete.
    pub fn rename(
        &self,
        at: &TextPosition,
        new_name: &str,
        apply: bool,
    ) -> Result<EditOutcome, CommandError> {
        let path = uri::canonical(&at.file);
        if let Some(language) = super::identifier::Language::of(&path) {
            if let Some(reason) = super::identifier::invalid_reason(language, new_name) {
                return Err(CommandError::InvalidName {
                    name: new_name.to_owned(),
                    language: language.name(),
                    reason,
                });
            }
        }
        let synced = sync_with(&self.op_sender, path.clone(), self.timeout)?;
        let mut server = pick_server(&synced, "renameProvider")?.clone();
        let (position, line, column) = self.lsp_position(&synced, at, server.encoding)?;
        let readiness = wait_until_ready(&self.op_sender, &path, &mut server, self.timeout, true);
        let server = &server;
        let document = json!({ "uri": uri_text(&path) });
        self.refuse_a_reserved_binding(server, &path, &document, position, new_name)?;
        let prepare = server
            .capabilities
            .pointer("/renameProvider/prepareProvider")
            .and_then(Value::as_bool)
            == Some(true);
        if prepare {
            let answer = self
                .request(
                    server,
                    "textDocument/prepareRename",
                    json!({ "textDocument": document, "position": position }),
                )
                .map_err(rename_refused)?;
            if answer.is_null() {
                return Err(nothing_to_rename(server, readiness, path, line, column));
            }
        }
        let params = json!({ "textDocument": document, "position": position, "newName": new_name });
        let mut edit = self
            .request(server, "textDocument/rename", params.clone())
            .map_err(rename_refused)?;
        if edit.is_null() {
            return Err(nothing_to_rename(server, readiness, path, line, column));
        }
        let touched;
        (edit, touched) = self.with_marked_files_open(server, edit, &params)?;
        let mut left = Vec::new();
        let line_text = LineIndex::new(&synced.text)
            .line_text(&synced.text, line - 1)
            .unwrap_or_default();
        let mut old_name = leftovers::identifier_at(line_text, column);
        // On a keyword (`const maxDistance = 3;` at column 1) tsserver renames the name it
        // declares; that name, which the edit replaces on this line, is the old name (a
        // helper's trial on tj/commander.js: "replaces \"maxDistance\", not \"const\"", exit 3).
        let on_keyword = matches!(at.target, ColumnOrSymbol::Column(_))
            && old_name.as_deref().is_some_and(|word| {
                super::identifier::Language::of(&path)
                    .is_some_and(|language| super::identifier::is_keyword(language, word))
            });
        if on_keyword {
            if let Some(declared) = super::workspace_edit::replaced_texts(&edit, server.encoding)
                .into_iter()
                .find(|replaced| uri::canonical(&replaced.path) == path && replaced.line == line)
                .filter(|replaced| {
                    leftovers::identifier_at(&replaced.text, 1).as_deref() == Some(&replaced.text)
                })
            {
                old_name = Some(declared.text);
            }
        }
        // The name as given (`s:Greet`), else the identifier at the column.
        let given = match &at.target {
            ColumnOrSymbol::Symbol { name, .. } => Some(name.clone()),
            ColumnOrSymbol::Column(_) => old_name.clone(),
        };
        if let Some(given) = &given {
            refuse_a_misplaced_edit(server, &edit, given, old_name.as_deref())?;
        }
        // The name searched for where the rename left it (not one local to a function).
        let mut searched = None;
        if let Some(old_name) = old_name {
            match self.local_to(server, &path, &params, &edit) {
                Some(function) => log::info!(
                    "{old_name} is local to {function}: other files are not searched for it"
                ),
                None => {
                    (edit, left) =
                        self.include_leftovers(server, &path, edit, &touched, &params, &old_name)?;
                    refuse_a_misplaced_edit(
                        server,
                        &edit,
                        given.as_deref().unwrap_or(&old_name),
                        Some(&old_name),
                    )?;
                    searched = Some(old_name);
                }
            }
        }
        // The files that still mention the old name are where a rename the server did not
        // finish breaks code (a call inside a macro clangd does not rename): their diagnostics
        // are compared too.
        let watched: Vec<PathBuf> = left
            .iter()
            .take(MAX_LEFTOVER_FILES_OPENED)
            .map(|file| file.path.clone())
            .collect();
        if let Some(old_name) = &searched {
            left.extend(leftovers_in_changed_files(&edit, server.encoding, old_name));
            left.sort_by(|a, b| a.path.cmp(&b.path));
        }
        let renamed = searched.as_deref().map(|old_name| (old_name, new_name));
        let mut outcome = self.finish_watching(
            edit,
            server.encoding,
            apply,
            &watched,
            renamed,
            Some(synced.edit_generation),
        )?;
        let mut notes = Vec::new();
        if let Some(readiness) = readiness {
            notes.push(format!(
                "{readiness}: the rename may have missed references in other files"
            ));
        }
        notes.extend(leftovers::render_note(&left, &self.root, NOT_RENAMED_SHOWN));
        outcome.note = (!notes.is_empty()).then(|| notes.join("; "));
        outcome.not_renamed = left;
        Ok(outcome)
    }

    /// Refuses a JavaScript/TypeScript reserved word as the new name of a name that binds, as
    /// the server's hover at `position` tells it ([`super::identifier::hover_binds_a_name`]); a
    /// member may take one. Nothing is asked unless `new_name` is a reserved word.
    fn refuse_a_reserved_binding(
        &self,
        server: &ServerInfo,
        path: &Path,
        document: &Value,
        position: lsp_types::Position,
        new_name: &str,
    ) -> Result<(), CommandError> {
        use super::identifier::{hover_binds_a_name, is_reserved_word, Language};
        let Some(language) = Language::of(path).filter(|&l| is_reserved_word(l, new_name)) else {
            return Ok(());
        };
        let hover = self
            .request(
                server,
                "textDocument/hover",
                json!({ "textDocument": document, "position": position }),
            )
            .ok()
            .and_then(|answer| {
                answer
                    .get("contents")
                    .map(crate::query::hover::hover_contents_to_text)
            })
            .unwrap_or_default();
        if hover_binds_a_name(&hover) {
            return Err(CommandError::InvalidName {
                name: new_name.to_owned(),
                language: language.name(),
                reason: "it is a reserved word, which only a member may be named".to_owned(),
            });
        }
        Ok(())
    }

    /// The function of `path` that a rename `edit` stays inside ([`local_rename::local_to`]), by
    /// the server's `textDocument/documentSymbol`; `None` when the rename may reach other files
    /// or the server cannot tell.
    fn local_to(
        &self,
        server: &ServerInfo,
        path: &Path,
        params: &Value,
        edit: &Value,
    ) -> Option<String> {
        if !server.supports("documentSymbolProvider") || !server.supports("definitionProvider") {
            return None;
        }
        let symbols = self
            .request(
                server,
                "textDocument/documentSymbol",
                json!({ "textDocument": params["textDocument"] }),
            )
            .ok()?;
        let is_target =
            |uri: &str| uri::uri_to_path(uri).is_ok_and(|target| uri::canonical(&target) == path);
        let function = local_rename::local_to(edit, &is_target, &symbols)?;
        // The edit stays in one function, but a server that renamed in this file only (clangd
        // without a compilation database, renaming at a call of a header's function) leaves
        // the declaration unedited: the name is local only when it is declared where it was
        // renamed (a new user's trial on benhoyt/inih: `ini_parse` called in `main` was "local
        // to main", 1 file of 8 renamed, exit 0).
        let definition = self
            .request(
                server,
                "textDocument/definition",
                json!({ "textDocument": params["textDocument"], "position": params["position"] }),
            )
            .ok()?;
        local_rename::declared_in_edit(edit, &is_target, &definition).then_some(function)
    }

    /// Whole-word occurrences of `old_name` in files the rename `edit` does not touch
    /// ([`leftovers::scan`]) of the rename at `origin`: the first [`MAX_LEFTOVER_FILES_OPENED`]
    /// such files in [`crate::query::unparsed_files::in_opening_order`] are opened (a
    /// server renames in its open documents even outside its project, as pyright does for
    /// `tests/` with `include = ["src"]`) and the rename is asked again. Answers the edit to
    /// apply and the occurrences still left.
    fn include_leftovers(
        &self,
        server: &ServerInfo,
        origin: &Path,
        edit: Value,
        touched: &[PathBuf],
        params: &Value,
        old_name: &str,
    ) -> Result<(Value, Vec<leftovers::Occurrences>), CommandError> {
        let extensions: Vec<String> = crate::engine::server_details(&self.op_sender)
            .into_iter()
            .find(|details| details.name == server.name)
            .map(|details| details.extensions)
            .unwrap_or_default();
        let mut left = leftovers::scan(&self.root, old_name, &extensions, touched);
        if left.is_empty() {
            return Ok((edit, left));
        }
        let typescript = crate::project::TypeScriptProjects::new(&self.root);
        let opened = crate::engine::open_on(
            &self.op_sender,
            crate::query::unparsed_files::in_opening_order(left.clone(), &typescript, origin)
                .into_iter()
                .take(MAX_LEFTOVER_FILES_OPENED)
                .map(|file| file.path),
            server.server_id,
            self.timeout,
        );
        if opened.is_empty() {
            return Ok((edit, left));
        }
        // A server renames in the files it has analysed, not in those it was just sent: clangd
        // (without a compilation database) asked at once renamed in a different subset of the
        // opened files each run. Their settled diagnostics say the analysis is done.
        let (_, unsettled) = self.diagnostics(&opened);
        if let Some(unsettled) = unsettled {
            log::info!("{unsettled}");
        }
        log::info!(
            "opened {} file(s) holding {old_name}; asking for the rename again",
            opened.len()
        );
        let again = self.request(server, "textDocument/rename", params.clone())?;
        if again.is_null() {
            return Ok((edit, left));
        }
        let touched = self.touched_paths(&again, server.encoding)?;
        left.retain(|file| !touched.contains(&file.path));
        Ok((again, left))
    }

    /// `edit` asked again once every file it changes that begins with a byte order mark is
    /// open on `server`. lspc sends a file's text without the mark, as an editor does, and the
    /// edit engine applies positions to that text; a server reading an unopened file from disk
    /// may count the mark as a character of line 1 (pyright does: a rename of `x` in such a
    /// file wrote `xyy= 1`). Open, the file's positions are the ones lspc sent. Files without a
    /// mark (nearly all) cost nothing more than reading their first bytes. Answers the edit and
    /// the paths it touches ([`Self::touched_paths`], previewed once for both steps).
    fn with_marked_files_open(
        &self,
        server: &ServerInfo,
        edit: Value,
        params: &Value,
    ) -> Result<(Value, Vec<PathBuf>), CommandError> {
        let touched = self.touched_paths(&edit, server.encoding)?;
        let marked: Vec<PathBuf> = touched
            .iter()
            .filter(|path| begins_with_a_byte_order_mark(path))
            .cloned()
            .collect();
        if marked.is_empty() {
            return Ok((edit, touched));
        }
        let opened =
            crate::engine::open_on(&self.op_sender, marked, server.server_id, self.timeout);
        if opened.is_empty() {
            return Ok((edit, touched));
        }
        log::info!(
            "{} file(s) of the rename begin with a byte order mark: asking again with them open",
            opened.len()
        );
        let again = self
            .request(server, "textDocument/rename", params.clone())
            .map_err(rename_refused)?;
        if again.is_null() {
            return Ok((edit, touched));
        }
        let touched = self.touched_paths(&again, server.encoding)?;
        Ok((again, touched))
    }

    /// The canonical paths `edit` changes, creates, renames or deletes (from a preview).
    fn touched_paths(
        &self,
        edit: &Value,
        encoding: PositionEncoding,
    ) -> Result<Vec<PathBuf>, CommandError> {
        let preview = apply_edit_with(
            &self.op_sender,
            edit.clone(),
            encoding,
            ApplyMode::Preview,
            None,
        )?
        .map_err(CommandError::Edit)?;
        let mut paths: Vec<PathBuf> = preview
            .files
            .iter()
            .map(|change| change.path.clone())
            .collect();
        for operation in &preview.operations {
            match operation {
                Operation::Edit { path, .. }
                | Operation::Create { path }
                | Operation::Delete { path }
                | Operation::Skipped { path, .. } => paths.push(path.clone()),
                Operation::Rename { from, to } => paths.extend([from.clone(), to.clone()]),
            }
        }
        Ok(paths)
    }

    /// Code actions for `span` from every server for the file that offers them, with the
    /// file's current diagnostics on those lines as context.
    pub fn code_actions(&self, span: &Span) -> Result<Vec<CodeActionItem>, CommandError> {
        Ok(self
            .raw_code_actions(span)?
            .0
            .into_iter()
            .map(|(server, action)| code_action_item(&server, &action))
            .collect())
    }

    /// Applies (or previews) the code action titled `title` at `span`: its edit through the
    /// edit engine, then its command through `workspace/executeCommand` (the server then sends
    /// `workspace/applyEdit`). An action without an edit is resolved first
    /// (`codeAction/resolve`) when the server offers that.
    pub fn apply_code_action(
        &self,
        span: &Span,
        title: &str,
        apply: bool,
    ) -> Result<EditOutcome, CommandError> {
        let (actions, based_on) = self.raw_code_actions(span)?;
        let Some((server, mut action)) = actions
            .iter()
            .find(|(_, action)| action.get("title").and_then(Value::as_str) == Some(title))
            .cloned()
        else {
            return Err(CommandError::NoSuchAction {
                title: title.to_owned(),
                available: actions
                    .iter()
                    .filter_map(|(_, action)| action.get("title").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect(),
            });
        };
        // A disabled action must not be applied; the server says why (issue 11: it was
        // answered "no changes" as if it had worked).
        if let Some(disabled) = action.get("disabled").filter(|value| value.is_object()) {
            return Err(CommandError::Disabled {
                title: title.to_owned(),
                reason: disabled
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given")
                    .to_owned(),
            });
        }
        // A bare `Command` (not a `CodeAction`) has a string `command`.
        let is_bare_command = action.get("command").is_some_and(Value::is_string);
        let resolvable = server
            .capabilities
            .pointer("/codeActionProvider/resolveProvider")
            .and_then(Value::as_bool)
            == Some(true);
        if !is_bare_command && action.get("edit").is_none() && resolvable {
            action = self.request(&server, "codeAction/resolve", action)?;
        }
        let command = if is_bare_command {
            Some(action.clone())
        } else {
            action.get("command").cloned().filter(Value::is_object)
        };
        let edit = action.get("edit").cloned().filter(Value::is_object);
        if command.is_none() {
            return self.finish(
                edit.unwrap_or_else(|| json!({})),
                server.encoding,
                apply,
                Some(based_on),
            );
        }
        if !apply {
            return Err(CommandError::CommandOnly {
                title: title.to_owned(),
            });
        }
        // The server's edit arrives as `workspace/applyEdit` during the command, so its files are
        // not known in advance: the baseline is the span's file.
        let path = uri::canonical(&span_path(span));
        self.write_and_report(&[path], || {
            let mut report = match edit {
                Some(edit) => self.write(edit, server.encoding, based_on)?,
                // The command is the action's first write then; after an edit it runs whatever
                // happens, so an action is never half applied.
                None => {
                    self.unless_cancelled()?;
                    EditReport {
                        operations: Vec::new(),
                        files: Vec::new(),
                        written: true,
                        generation: based_on,
                    }
                }
            };
            let seen = server_edits_with(&self.op_sender)
                .last()
                .map_or(0, |(sequence, _)| *sequence);
            let command = command.unwrap_or(Value::Null);
            let executed = self.request(
                &server,
                "workspace/executeCommand",
                json!({
                    "command": command.get("command").cloned().unwrap_or(Value::Null),
                    "arguments": command.get("arguments").cloned().unwrap_or(json!([])),
                }),
            );
            for (sequence, server_report) in server_edits_with(&self.op_sender) {
                if sequence > seen {
                    report.operations.extend(server_report.operations);
                    report.files.extend(server_report.files);
                }
            }
            match executed {
                Ok(_) => Ok((report, None)),
                // Files were written: the command did its job even if it then failed (tsls
                // fails `executeCommand` when lspc refuses its follow-up `_typescript.rename`).
                Err(error) if !report.files.is_empty() => {
                    Ok((report, Some(command_failed_after_edit_note(&error))))
                }
                Err(error) => Err(error),
            }
        })
    }

    /// [`EditCommands::format_with`] with no overrides: the options come from `.editorconfig`
    /// and the file's own indentation.
    pub fn format(&self, file: &Path, apply: bool) -> Result<EditOutcome, CommandError> {
        self.format_with(file, FormattingOverrides::default(), apply)
    }

    /// `textDocument/formatting` of `file` with the `FormattingOptions` of
    /// [`super::formatting`] (`overrides`, then `.editorconfig`, then the file's indentation,
    /// then 4 spaces), checked against the version lspc sent. The outcome's `note` says when
    /// `.editorconfig`'s `end_of_line` differs from the file's (kept) line endings.
    pub fn format_with(
        &self,
        file: &Path,
        overrides: FormattingOverrides,
        apply: bool,
    ) -> Result<EditOutcome, CommandError> {
        let path = uri::canonical(file);
        let synced = sync_with(&self.op_sender, path.clone(), self.timeout)?;
        let server = pick_formatter(&synced)?;
        let options = formatting::options_for(&path, &synced.text, overrides);
        let edits = self.request(
            server,
            "textDocument/formatting",
            json!({
                "textDocument": { "uri": uri_text(&path) },
                "options": options.to_lsp()
            }),
        )?;
        let edit = json!({ "documentChanges": [{
            "textDocument": { "uri": uri_text(&path), "version": synced.version },
            "edits": if edits.is_null() { json!([]) } else { edits }
        }]});
        let mut outcome =
            self.finish(edit, server.encoding, apply, Some(synced.edit_generation))?;
        outcome.note = options.end_of_line_note(&synced.text);
        Ok(outcome)
    }

    /// Replaces the one exact occurrence of `old` in `file` with `new` and writes it (through
    /// the edit engine: inside the root, atomic), then reports the new diagnostics. Occurrences
    /// are counted overlapping (`aa` occurs twice in `aaa`), so "unique" really is unique. In a
    /// CRLF file an `old` written with `\n` line ends is searched with `\r\n` ([`search_text`]).
    /// Errors: [`CommandError::Occurrences`] (a refused edit) when it does not occur exactly once.
    ///
    /// Another lspc edit that wrote the file between this one's disk read and its write (two
    /// agents editing one file at once) makes this one search the new text again, up to
    /// [`EDIT_ATTEMPTS`] times: its positions are lspc's own, and `old` is looked up afresh.
    /// Two agents' `edit`s of different lines of one file had one of them refused with a message
    /// about a server's positions (a new user's two HTTP agents: 12 rounds of 12).
    pub fn edit(&self, file: &Path, old: &str, new: &str) -> Result<EditOutcome, CommandError> {
        let mut attempt = 1;
        loop {
            match self.edit_once(file, old, new) {
                Err(CommandError::Edit(EditError::ChangedByAnotherEdit { path }))
                    if attempt < EDIT_ATTEMPTS =>
                {
                    log::debug!(
                        "{}: written by another edit before this one; searched again",
                        path.display()
                    );
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    /// One attempt of [`EditCommands::edit`].
    fn edit_once(&self, file: &Path, old: &str, new: &str) -> Result<EditOutcome, CommandError> {
        let path = uri::canonical(file);
        // The edit's positions come from the disk text. A document the servers hold is sent
        // that text first, so the edit engine's check (the disk must be the text the servers
        // saw) holds: after another process changed the file, a session refused every edit of
        // it ("changed on disk since the server saw it") until some other request re-sent it.
        let mut based_on = None;
        if crate::engine::open_documents(&self.op_sender).contains(&path) {
            match sync_with(&self.op_sender, path.clone(), self.timeout) {
                Ok(synced) => based_on = Some(synced.edit_generation),
                Err(error) => log::debug!(
                    "{}: not sent again before the edit: {error}",
                    path.display()
                ),
            }
        }
        let disk = std::fs::read_to_string(&path).map_err(|error| CommandError::Io {
            path: path.clone(),
            message: error.to_string(),
        })?;
        // Positions count from after a byte order mark, as the edit engine applies them.
        let text = crate::text::without_byte_order_mark(&disk);
        let old = &search_text(text, old);
        let offsets = occurrences(text, old);
        if offsets.len() != 1 {
            return Err(CommandError::Occurrences {
                path,
                count: offsets.len(),
            });
        }
        let index = LineIndex::new(text);
        let start = index.position_of_offset(text, offsets[0], PositionEncoding::Utf8);
        let end = index.position_of_offset(text, offsets[0] + old.len(), PositionEncoding::Utf8);
        let edit = json!({ "changes": { uri_text(&path): [{
            "range": { "start": start, "end": end }, "newText": new
        }]}});
        self.finish(edit, PositionEncoding::Utf8, true, based_on)
    }

    // ----- shared steps ------------------------------------------------------------------------

    fn request(
        &self,
        server: &ServerInfo,
        method: &str,
        params: Value,
    ) -> Result<Value, CommandError> {
        Ok(request_with(
            &self.op_sender,
            server.server_id,
            method,
            params,
            self.timeout,
            self.tag,
        )?)
    }

    /// Preview `edit`; when `apply`, take the baseline, write, and report new diagnostics.
    /// `based_on`: the edit generation read before the edit was computed
    /// ([`crate::engine::Op::ApplyEdit`]); `None` takes the preview's, so an edit another one
    /// writes during the baseline wait is refused either way.
    fn finish(
        &self,
        edit: Value,
        encoding: PositionEncoding,
        apply: bool,
        based_on: Option<u64>,
    ) -> Result<EditOutcome, CommandError> {
        self.finish_watching(edit, encoding, apply, &[], None, based_on)
    }

    /// [`Self::finish`], comparing the diagnostics of `watched` (canonical paths the edit does
    /// not change) before and after the write too.
    fn finish_watching(
        &self,
        edit: Value,
        encoding: PositionEncoding,
        apply: bool,
        watched: &[PathBuf],
        renamed: Option<(&str, &str)>,
        based_on: Option<u64>,
    ) -> Result<EditOutcome, CommandError> {
        let preview = apply_edit_with(
            &self.op_sender,
            edit.clone(),
            encoding,
            ApplyMode::Preview,
            based_on,
        )?
        .map_err(CommandError::Edit)?;
        let based_on = based_on.unwrap_or(preview.generation);
        if !apply || preview.files.is_empty() {
            return Ok(EditOutcome {
                diff: self.diff(&preview),
                report: preview,
                new_diagnostics: String::new(),
                diagnostics_note: None,
                note: None,
                not_renamed: Vec::new(),
                watched: 0,
                new_errors: 0,
                old_name_findings: 0,
            });
        }
        let before: Vec<PathBuf> = preview
            .files
            .iter()
            .filter(|change| change.before.is_some())
            .map(|change| change.path.clone())
            .collect();
        let watched: Vec<PathBuf> = watched
            .iter()
            .filter(|path| !before.contains(path))
            .cloned()
            .collect();
        let baseline = self.diagnostics(&[before.as_slice(), watched.as_slice()].concat());
        let report = self.write(edit, encoding, based_on)?;
        let mut paths = report.changed_paths();
        for path in &before {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        let watched: Vec<PathBuf> = watched
            .into_iter()
            .filter(|path| !paths.contains(path) && path.exists())
            .collect();
        let mut outcome = self.conclude_watching(report, baseline, &paths, &watched, renamed);
        outcome.watched = watched.len();
        Ok(outcome)
    }

    /// The one write sequence of every command: take the settled diagnostics of
    /// `baseline_paths` (canonical paths) as the baseline, run `write` (which answers what it
    /// wrote and an optional note), then wait for settled diagnostics of the changed files and
    /// the baseline files, and report those that are new.
    fn write_and_report(
        &self,
        baseline_paths: &[PathBuf],
        write: impl FnOnce() -> Result<(EditReport, Option<String>), CommandError>,
    ) -> Result<EditOutcome, CommandError> {
        let baseline = self.diagnostics(baseline_paths);
        let (report, note) = write()?;
        let mut paths = report.changed_paths();
        for path in baseline_paths {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        let mut outcome = self.conclude(report, baseline, &paths);
        outcome.note = note;
        Ok(outcome)
    }

    /// Writes `edit`, refused when a file it touches was written by another edit after
    /// generation `based_on` ([`crate::engine::Op::ApplyEdit`]).
    fn write(
        &self,
        edit: Value,
        encoding: PositionEncoding,
        based_on: u64,
    ) -> Result<EditReport, CommandError> {
        self.unless_cancelled()?;
        apply_edit_with(
            &self.op_sender,
            edit,
            encoding,
            ApplyMode::Write,
            Some(based_on),
        )?
        .map_err(CommandError::Edit)
    }

    /// The outcome after writing: the diff and the diagnostics new since `baseline`.
    fn conclude(
        &self,
        report: EditReport,
        baseline: (Vec<Diagnostic>, Option<String>),
        paths: &[PathBuf],
    ) -> EditOutcome {
        self.conclude_watching(report, baseline, paths, &[], None)
    }

    /// [`Self::conclude`], comparing `watched` (existing files the edit did not change) too,
    /// after a wait of at most [`watched_wait`]: their server analyses them again (an edit's
    /// dependents are sent again), but a file whose inputs did not change may get no new
    /// publish at all (clangd 14: a header that includes none of the changed files), and a wait
    /// for it would run to the timeout. What they have by then is compared, with no note.
    fn conclude_watching(
        &self,
        report: EditReport,
        baseline: (Vec<Diagnostic>, Option<String>),
        paths: &[PathBuf],
        watched: &[PathBuf],
        renamed: Option<(&str, &str)>,
    ) -> EditOutcome {
        let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
        let started = std::time::Instant::now();
        let (mut after, note) = self.diagnostics(&existing);
        if !watched.is_empty() {
            let (also, unsettled) =
                self.diagnostics_within(watched, watched_wait(started.elapsed()));
            if let Some(unsettled) = unsettled {
                log::debug!("the files still naming the old name: {unsettled}");
            }
            after.extend(also);
        }
        let fresh = new_diagnostics_after_rename(&baseline.0, &after, renamed);
        let is_error =
            |diagnostic: &&Diagnostic| diagnostic.severity == crate::diagnostics::Severity::Error;
        let errors = fresh.iter().filter(is_error).count();
        let old_name_findings = renamed.map_or(0, |(old, _)| {
            fresh
                .iter()
                .filter(|diagnostic| !is_error(diagnostic))
                .filter(|diagnostic| {
                    leftovers::replace_whole_word(&diagnostic.message, old, "").is_some()
                })
                .count()
        });
        EditOutcome {
            diff: self.diff(&report),
            new_diagnostics: render_new_diagnostics(&fresh, &self.root, NEW_DIAGNOSTICS_CAP),
            report,
            diagnostics_note: baseline.1.or(note),
            note: None,
            not_renamed: Vec::new(),
            watched: 0,
            new_errors: errors + old_name_findings,
            old_name_findings,
        }
    }

    fn diff(&self, report: &EditReport) -> String {
        report
            .files
            .iter()
            .map(|change| {
                unified_diff(
                    &uri::relative_display(&change.path, &self.root),
                    change.before.as_deref(),
                    change.after.as_deref(),
                )
            })
            .collect()
    }

    /// Settled diagnostics of `paths`, and a note naming the files that did not settle in time,
    /// that a server failed on, or that no server checks.
    fn diagnostics(&self, paths: &[PathBuf]) -> (Vec<Diagnostic>, Option<String>) {
        self.diagnostics_within(paths, self.timeout)
    }

    /// [`Self::diagnostics`] bounded by `timeout` (at most the commands' own).
    fn diagnostics_within(
        &self,
        paths: &[PathBuf],
        timeout: Duration,
    ) -> (Vec<Diagnostic>, Option<String>) {
        if paths.is_empty() {
            return (Vec::new(), None);
        }
        let Some(files) = crate::engine::diagnostics_with(
            &self.op_sender,
            paths.to_vec(),
            timeout.min(self.timeout),
        ) else {
            return (Vec::new(), Some("the engine has shut down".to_owned()));
        };
        let mut all = Vec::new();
        let mut unsettled = Vec::new();
        let mut failed = Vec::new();
        let mut unchecked = Vec::new();
        for file in files {
            match file.outcome {
                DiagnosticsOutcome::Settled(diagnostics) => all.extend(diagnostics),
                DiagnosticsOutcome::TimedOut { diagnostics, .. } => {
                    all.extend(diagnostics);
                    unsettled.push(uri::relative_display(&file.path, &self.root));
                }
                DiagnosticsOutcome::PartlyFailed {
                    diagnostics,
                    failures,
                } => {
                    all.extend(diagnostics);
                    failed.push(format!(
                        "{}: {failures}",
                        uri::relative_display(&file.path, &self.root)
                    ));
                }
                // A changed file no server checks (no server for its extension, too large) is
                // said to be unchecked: "no new diagnostics" would vouch for it (a new user's
                // trial: an edit of a 15 MB `.ts` file over the size limit).
                DiagnosticsOutcome::Failed(reason) | DiagnosticsOutcome::NotChecked(reason) => {
                    log::debug!("no diagnostics for {}: {reason}", file.path.display());
                    let shown = uri::relative_display(&file.path, &self.root);
                    let absolute = format!("{} ", file.path.display());
                    let reason = reason.replace(&absolute, "");
                    unchecked.push(format!("{shown} not checked ({reason})"));
                }
            }
        }
        let mut notes = Vec::new();
        if !unsettled.is_empty() {
            notes.push(format!("server still analysing {}", unsettled.join(", ")));
        }
        notes.extend(failed);
        notes.extend(unchecked);
        let note =
            (!notes.is_empty()).then(|| format!("diagnostics incomplete: {}", notes.join("; ")));
        (all, note)
    }

    /// `(server, CodeAction or Command JSON)` for `span` from every server offering them. Each
    /// server is asked once it is ready ([`wait_until_ready`]), with its own raw diagnostics
    /// whose range intersects the requested range as the context (LSP 3.17
    /// §`CodeActionContext`).
    fn raw_code_actions(
        &self,
        span: &Span,
    ) -> Result<(Vec<(ServerInfo, Value)>, u64), CommandError> {
        let path = uri::canonical(&span_path(span));
        let synced = sync_with(&self.op_sender, path.clone(), self.timeout)?;
        let mut servers: Vec<ServerInfo> = synced
            .servers
            .iter()
            .filter(|server| server.supports("codeActionProvider"))
            .cloned()
            .collect();
        if servers.is_empty() {
            return Err(CommandError::Unsupported {
                path,
                capability: "codeActionProvider".to_owned(),
            });
        }
        let index = LineIndex::new(&synced.text);
        let mut ranges = Vec::new();
        for server in &servers {
            ranges.push(self.lsp_range(&synced, &index, span, server.encoding)?);
        }
        // The context needs the servers' diagnostics of the current text: wait (up to the
        // timeout, not the readiness wait's shorter cap) until they have settled.
        let (_, unsettled) = self.diagnostics(std::slice::from_ref(&path));
        if let Some(unsettled) = unsettled {
            log::info!("{unsettled}");
        }
        for server in &mut servers {
            if let Some(note) = wait_until_ready(&self.op_sender, &path, server, self.timeout, true)
            {
                log::info!("{note}");
            }
        }
        let raw = raw_diagnostics_with(&self.op_sender, path.clone());
        let mut actions = Vec::new();
        for (server, range) in servers.iter().zip(ranges) {
            let diagnostics: Vec<Value> = raw
                .iter()
                .filter(|(server_id, _)| *server_id == server.server_id)
                .flat_map(|(_, diagnostics)| diagnostics)
                .filter(|diagnostic| intersects(diagnostic, &range))
                .cloned()
                .collect();
            let answer = self.request(
                server,
                "textDocument/codeAction",
                json!({
                    "textDocument": { "uri": uri_text(&path) },
                    "range": range,
                    "context": { "diagnostics": diagnostics, "triggerKind": 1 }
                }),
            )?;
            for action in answer.as_array().cloned().unwrap_or_default() {
                actions.push((server.clone(), action));
            }
        }
        Ok((actions, synced.edit_generation))
    }

    /// The LSP position of `at` in the synced text (through the query layer's
    /// [`resolve_position`]), and its resolved 1-based line and column in characters.
    fn lsp_position(
        &self,
        synced: &SyncedDocument,
        at: &TextPosition,
        encoding: PositionEncoding,
    ) -> Result<(lsp_types::Position, u32, u32), CommandError> {
        let shown = uri::relative_display(&synced.path, &self.root);
        refuse_symbol_inside_longer_names(&synced.text, at, &shown)?;
        let position = resolve_position(&synced.text, at, encoding, &shown)
            .map_err(|error| CommandError::InvalidPosition(error.to_string()))?;
        let (line, column) =
            LineIndex::new(&synced.text).from_lsp(&synced.text, position, encoding);
        Ok((position, line, column))
    }

    /// The LSP range of `span`: whole lines (start of the first to end of the last), or the
    /// empty range at one position.
    fn lsp_range(
        &self,
        synced: &SyncedDocument,
        index: &LineIndex,
        span: &Span,
        encoding: PositionEncoding,
    ) -> Result<lsp_types::Range, CommandError> {
        match span {
            Span::At(at) => {
                let (position, _, _) = self.lsp_position(synced, at, encoding)?;
                Ok(lsp_types::Range {
                    start: position,
                    end: position,
                })
            }
            Span::Lines {
                start_line,
                end_line,
                ..
            } => {
                let line_at = |line: u32| TextPosition {
                    file: synced.path.clone(),
                    line,
                    target: ColumnOrSymbol::Column(1),
                };
                let (start, _, _) = self.lsp_position(synced, &line_at(*start_line), encoding)?;
                // Check the last line exists, then take its end.
                self.lsp_position(synced, &line_at(*end_line), encoding)?;
                let last_length = index
                    .line_text(&synced.text, end_line - 1)
                    .map_or(0, |line| line.chars().count() as u32);
                let end = index
                    .to_lsp(&synced.text, *end_line, last_length + 1, encoding)
                    .map_err(|error| {
                        CommandError::InvalidPosition(format!("{}: {error}", synced.path.display()))
                    })?;
                Ok(lsp_types::Range { start, end })
            }
        }
    }
}

fn span_path(span: &Span) -> PathBuf {
    match span {
        Span::Lines { path, .. } => path.clone(),
        Span::At(position) => position.file.clone(),
    }
}

fn uri_text(path: &Path) -> String {
    uri::path_to_uri(path)
        .map(|uri| uri.as_str().to_owned())
        .unwrap_or_default()
}

fn pick_server<'a>(
    synced: &'a SyncedDocument,
    capability: &str,
) -> Result<&'a ServerInfo, CommandError> {
    synced
        .servers
        .iter()
        .find(|server| server.supports(capability))
        .ok_or_else(|| match &synced.primary_failure {
            // The failed server may well have offered it: say why it is not running.
            Some(failure) => CommandError::PrimaryFailed(failure.clone()),
            None => CommandError::Unsupported {
                path: synced.path.clone(),
                capability: capability.to_owned(),
            },
        })
}

/// The first server for the document that formats it: it advertises
/// `documentFormattingProvider` and can run the program its formatting needs. When the only
/// ones advertising it cannot (bash-language-server without shfmt answers every request with no
/// edits, which read as "no changes"), [`CommandError::CannotFormat`] gives their reasons.
fn pick_formatter(synced: &SyncedDocument) -> Result<&ServerInfo, CommandError> {
    let capability = "documentFormattingProvider";
    let advertising: Vec<&ServerInfo> = synced
        .servers
        .iter()
        .filter(|server| server.supports(capability))
        .collect();
    if let Some(server) = advertising
        .iter()
        .find(|server| server.formatting_off.is_none())
    {
        return Ok(server);
    }
    let reasons: Vec<&str> = advertising
        .iter()
        .filter_map(|server| server.formatting_off.as_deref())
        .collect();
    if reasons.is_empty() {
        return pick_server(synced, capability);
    }
    Err(CommandError::CannotFormat {
        path: synced.path.clone(),
        reason: reasons.join("; "),
    })
}

fn code_action_item(server: &ServerInfo, action: &Value) -> CodeActionItem {
    let text = |pointer: &str| {
        action
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    CodeActionItem {
        title: text("/title").unwrap_or_default(),
        kind: text("/kind"),
        preferred: action.get("isPreferred").and_then(Value::as_bool) == Some(true),
        disabled: text("/disabled/reason"),
        server: server.name.clone(),
    }
}

/// `old` as `edit` searches for it in `text`: unchanged, except that when `text` has CRLF line
/// ends and `old` does not occur as given, `old`'s lone `\n`s become `\r\n` (agents and shells
/// write `\n`; the file's own line ends win, as they do for the new text).
pub fn search_text(text: &str, old: &str) -> String {
    if !text.contains("\r\n") || !old.contains('\n') || text.contains(old) {
        return old.to_owned();
    }
    let mut converted = String::with_capacity(old.len() + 8);
    let mut previous = None;
    for character in old.chars() {
        if character == '\n' && previous != Some('\r') {
            converted.push('\r');
        }
        converted.push(character);
        previous = Some(character);
    }
    converted
}

/// Whether the raw LSP diagnostic's `range` intersects `range` (both in the same server's
/// encoding; touching counts, so a diagnostic at an empty range's position is included).
/// A diagnostic without a readable range is left out.
pub fn intersects(diagnostic: &Value, range: &lsp_types::Range) -> bool {
    let Some(own) = diagnostic
        .get("range")
        .and_then(|value| serde_json::from_value::<lsp_types::Range>(value.clone()).ok())
    else {
        return false;
    };
    let key = |position: lsp_types::Position| (position.line, position.character);
    key(own.start) <= key(range.end) && key(own.end) >= key(range.start)
}

/// Refuses a rename `edit` one of whose edits replaces text that holds neither `old_name` (as
/// given: `s:Greet`) nor `identifier` (the identifier at the position: `s`), ASCII case ignored
/// for the languages whose names ignore it: a server whose positions do not fit the file would
/// overwrite other code ([`CommandError::MisplacedEdit`]). Insertions and replacements that hold
/// the name (`s:Greet` for `Greet`, an import path) pass.
fn refuse_a_misplaced_edit(
    server: &ServerInfo,
    edit: &Value,
    old_name: &str,
    identifier: Option<&str>,
) -> Result<(), CommandError> {
    let names: Vec<String> = [Some(old_name), identifier]
        .into_iter()
        .flatten()
        .map(str::to_ascii_lowercase)
        .collect();
    let misplaced = super::workspace_edit::replaced_texts(edit, server.encoding)
        .into_iter()
        .find(|replaced| {
            let text = replaced.text.to_ascii_lowercase();
            !text.is_empty() && !names.iter().any(|name| text.contains(name))
        });
    match misplaced {
        Some(replaced) => Err(CommandError::MisplacedEdit {
            server: server.name.clone(),
            path: replaced.path,
            line: replaced.line,
            column: replaced.column,
            found: replaced.text,
            name: old_name.to_owned(),
        }),
        None => Ok(()),
    }
}

/// The whole-word occurrences of `old_name` that `edit` leaves in the files it changes: on each
/// line, those beyond the ones its edits replace. helper-39: clangd renamed uthash's
/// `hh_next` field in `uthash.h` but not its 12 uses inside that header's macro bodies, which
/// broke 62 files, and lspc said nothing (only files the edit did not touch were searched).
/// Comments and strings that mention the name are listed too, as in other files.
fn leftovers_in_changed_files(
    edit: &Value,
    encoding: PositionEncoding,
    old_name: &str,
) -> Vec<leftovers::Occurrences> {
    let mut renamed: std::collections::BTreeMap<PathBuf, HashMap<u32, usize>> = Default::default();
    for replaced in super::workspace_edit::replaced_texts(edit, encoding) {
        let count: usize = leftovers::whole_word_counts(&replaced.text, old_name)
            .iter()
            .map(|(_, count)| count)
            .sum();
        *renamed
            .entry(replaced.path)
            .or_default()
            .entry(replaced.line)
            .or_default() += count;
    }
    renamed
        .into_iter()
        .filter_map(|(path, renamed)| {
            let text = std::fs::read_to_string(&path).ok()?;
            let lines: Vec<u32> = leftovers::whole_word_counts(&text, old_name)
                .into_iter()
                .filter(|(line, count)| *count > renamed.get(line).copied().unwrap_or(0))
                .map(|(line, _)| line)
                .collect();
            (!lines.is_empty()).then_some(leftovers::Occurrences { path, lines })
        })
        .collect()
}

/// The note for a `workspace/executeCommand` that failed after files were written: names the
/// follow-up server request lspc declined when that is why (typescript-language-server's
/// `_typescript.rename` after a refactor), else the error.
pub fn command_failed_after_edit_note(error: &CommandError) -> String {
    const DECLINED: &str = "lspc does not handle the server request ";
    let text = error.to_string();
    match text.split_once(DECLINED) {
        Some((_, method)) => format!(
            "the edit was applied; the server then sent the request {}, which lspc does not handle and ignored",
            method.split_whitespace().next().unwrap_or(method)
        ),
        None => format!("the edit was applied, but the server's command then failed: {text}"),
    }
}

/// Byte offsets of every occurrence of `needle` in `text`, overlapping ones included.
pub fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(needle) {
        found.push(from + at);
        from += at + text[from + at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// Refuses a position given as a symbol that occurs on its line only inside longer names. The
/// queries then take the first substring match (`Foo` finds `FooBar`), but an edit there would
/// change the longer name: `lspc rename __init__.py:384 --symbol abel renamed` renamed `label`
/// (pyright 1.1.414 on pallets/markupsafe).
fn refuse_symbol_inside_longer_names(
    text: &str,
    at: &TextPosition,
    shown: &str,
) -> Result<(), CommandError> {
    let ColumnOrSymbol::Symbol { name, .. } = &at.target else {
        return Ok(());
    };
    let Some(line_text) = at
        .line
        .checked_sub(1)
        .and_then(|line0| text.lines().nth(line0 as usize))
    else {
        return Ok(());
    };
    if !crate::text::symbol_only_inside_longer_names(line_text, name) {
        return Ok(());
    }
    Err(CommandError::InvalidPosition(format!(
        "{shown}:{}: symbol `{name}` is only part of a longer name on line: `{line_text}`; \
         an edit needs the whole name or a column",
        at.line
    )))
}

/// The diagnostics of `after` that are not in `before`, compared as a multiset on (file,
/// severity, code, source, message) without positions: an edit moves lines, so an old issue that
/// only moved is not new, while a second copy of a message is. Messages are compared as
/// [`comparison_message`] gives them (without clangd's "(fix available)" and rustc's
/// lint-level notes).
pub fn new_diagnostics(before: &[Diagnostic], after: &[Diagnostic]) -> Vec<Diagnostic> {
    new_diagnostics_after_rename(before, after, None)
}

/// [`new_diagnostics`] after a rename of `renamed` (old name, new name): a message of `after`
/// is compared with the new name read as the old one (helper-38: after renaming marshmallow's
/// `ValidationError` to `ValidationFailure`, an existing pyright error naming it came back as
/// new, with pyright's count unchanged).
pub fn new_diagnostics_after_rename(
    before: &[Diagnostic],
    after: &[Diagnostic],
    renamed: Option<(&str, &str)>,
) -> Vec<Diagnostic> {
    type Key<'a> = (
        &'a Path,
        Severity,
        Option<&'a str>,
        Option<&'a str>,
        Cow<'a, str>,
    );
    fn key<'a>(d: &'a Diagnostic, renamed: Option<(&str, &str)>) -> Key<'a> {
        let mut message = comparison_message(&d.message);
        if let Some((old, new)) = renamed {
            if let Some(replaced) = leftovers::replace_whole_word(&message, new, old) {
                message = Cow::Owned(replaced);
            }
        }
        (
            &d.path,
            d.severity,
            d.code.as_deref(),
            d.source.as_deref(),
            message,
        )
    }
    let mut remaining: HashMap<Key<'_>, usize> = HashMap::new();
    for diagnostic in before {
        *remaining.entry(key(diagnostic, None)).or_default() += 1;
    }
    after
        .iter()
        // clangd's `fe_pch_file_overridden` ("File 'lib.h' from the precompiled header has been
        // overridden") describes its own preamble built before an edited header changed, not
        // the code: it came and went with timing after a rename that changed a header, and
        // made a correct rename exit 1 (CI, 1 run in 3). The settle rule sends such a file
        // again for a fresh preamble; this covers a publish that still carries it after that.
        .filter(|diagnostic| diagnostic.code.as_deref() != Some("fe_pch_file_overridden"))
        .filter(
            |diagnostic| match remaining.get_mut(&key(diagnostic, renamed)) {
                Some(count) if *count > 0 => {
                    *count -= 1;
                    false
                }
                _ => true,
            },
        )
        .cloned()
        .collect()
}

/// The `<new-diagnostics>` block: files in order of appearance, one line per diagnostic
/// (`✘` error, `⚠` warning, `ℹ` information, `★` hint; 1-based line and character column),
/// at most `cap` characters (Unicode characters) in total; when lines are left out the block
/// says how many. Empty when `diagnostics` is.
pub fn render_new_diagnostics(diagnostics: &[Diagnostic], root: &Path, cap: usize) -> String {
    if diagnostics.is_empty() {
        return String::new();
    }
    const OPEN: &str = "<new-diagnostics>The following new diagnostic issues were detected:\n";
    const CLOSE: &str = "</new-diagnostics>";
    let mut lines: Vec<String> = Vec::new();
    let mut current: Option<&Path> = None;
    for d in diagnostics {
        if current != Some(d.path.as_path()) {
            lines.push(format!("\n{}:", uri::relative_display(&d.path, root)));
            current = Some(&d.path);
        }
        let symbol = match d.severity {
            Severity::Error => '✘',
            Severity::Warning => '⚠',
            Severity::Information => 'ℹ',
            Severity::Hint => '★',
        };
        let mut line = format!("  {symbol} [Line {}:{}] {}", d.line, d.column, d.message);
        if let Some(code) = &d.code {
            line.push_str(&format!(" [{code}]"));
        }
        if let Some(source) = &d.source {
            line.push_str(&format!(" ({source})"));
        }
        lines.push(line);
    }
    let total_entries = diagnostics.len();
    let length = |text: &str| text.chars().count();
    let mut body = String::new();
    let mut shown = 0;
    for (index, line) in lines.iter().enumerate() {
        let is_entry = !line.starts_with('\n');
        let left_after = total_entries - shown - usize::from(is_entry);
        // Reserve room for the closing tag and a possible "N more" line.
        let reserve = length(CLOSE)
            + if left_after > 0 || index + 1 < lines.len() {
                40
            } else {
                0
            };
        if length(OPEN) + length(&body) + length(line) + 1 + reserve > cap {
            break;
        }
        body.push_str(line);
        body.push('\n');
        if is_entry {
            shown += 1;
        }
    }
    if shown < total_entries {
        body.push_str(&format!("  … {} more not shown\n", total_entries - shown));
    }
    format!("{OPEN}{body}{CLOSE}")
}

/// Human output for a command's outcome: the diff when previewing; when written, one line per
/// operation (`edited`, `created`, `renamed A -> B`, `deleted`) and the new-diagnostics block.
pub fn render_outcome(outcome: &EditOutcome, root: &Path) -> String {
    let report = &outcome.report;
    if !report.written {
        if outcome.diff.is_empty() {
            return "no changes\n".to_owned();
        }
        return outcome.diff.clone();
    }
    let show = |path: &Path| uri::relative_display(path, root);
    let mut out = String::new();
    for operation in &report.operations {
        match operation {
            Operation::Edit { path, edits } => {
                let changed = report.files.iter().any(|change| &change.path == path);
                if changed {
                    out.push_str(&format!(
                        "edited {} ({edits} edit{})\n",
                        show(path),
                        if *edits == 1 { "" } else { "s" }
                    ));
                }
            }
            Operation::Create { path } => out.push_str(&format!("created {}\n", show(path))),
            Operation::Rename { from, to } => {
                out.push_str(&format!("renamed {} -> {}\n", show(from), show(to)))
            }
            Operation::Delete { path } => out.push_str(&format!("deleted {}\n", show(path))),
            Operation::Skipped { path, reason } => {
                out.push_str(&format!("skipped {}: {reason}\n", show(path)))
            }
        }
    }
    if out.is_empty() {
        out.push_str("no changes\n");
    }
    if let Some(note) = &outcome.note {
        out.push_str(&format!("note: {note}\n"));
    }
    if let Some(note) = &outcome.diagnostics_note {
        out.push_str(&format!("{note}\n"));
    }
    if !outcome.new_diagnostics.is_empty() {
        out.push_str(&outcome.new_diagnostics);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_still_naming_the_old_name_get_as_long_as_the_changed_files_took() {
        assert_eq!(watched_wait(Duration::from_millis(300)), WATCHED_SETTLE);
        assert_eq!(
            watched_wait(Duration::from_millis(6_500)),
            Duration::from_millis(6_500)
        );
    }

    fn diagnostic(
        path: &str,
        line: u32,
        severity: Severity,
        message: &str,
        code: Option<&str>,
    ) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from(path),
            line,
            column: 5,
            end_line: line,
            end_column: 9,
            severity,
            message: message.to_owned(),
            source: Some("Pyright".to_owned()),
            code: code.map(str::to_owned),
            server: "pyright".to_owned(),
        }
    }

    #[test]
    fn only_new_diagnostics_are_reported_even_when_lines_moved() {
        let before = vec![
            diagnostic("/w/a.py", 3, Severity::Error, "old problem", None),
            diagnostic("/w/a.py", 4, Severity::Warning, "twice", None),
        ];
        let after = vec![
            diagnostic("/w/a.py", 5, Severity::Error, "old problem", None),
            diagnostic("/w/a.py", 6, Severity::Warning, "twice", None),
            diagnostic("/w/a.py", 7, Severity::Warning, "twice", None),
            diagnostic("/w/b.py", 1, Severity::Error, "old problem", None),
        ];
        let fresh = new_diagnostics(&before, &after);
        let lines: Vec<(String, u32)> = fresh
            .iter()
            .map(|d| (d.path.display().to_string(), d.line))
            .collect();
        assert_eq!(
            lines,
            [("/w/a.py".to_owned(), 7), ("/w/b.py".to_owned(), 1)]
        );
        assert!(new_diagnostics(&after, &before).is_empty());
    }

    /// clangd 14 on json-c's `json_pointer_private.h` (`lspc code-actions … --apply "insert
    /// 'struct '"`): before the edit its index had not loaded and the message had no fix count,
    /// after it the include fixer had one. The same two findings are not new; a real new one is.
    #[test]
    fn clangd_fix_counts_that_come_with_its_index_are_not_new_diagnostics() {
        let clang = |line, message: &str, code: &str| Diagnostic {
            source: Some("clang".to_owned()),
            server: "clangd".to_owned(),
            ..diagnostic(
                "/w/json_pointer_private.h",
                line,
                Severity::Error,
                message,
                Some(code),
            )
        };
        let before = vec![
            clang(26, "Unknown type name 'uint32_t'", "unknown_typename"),
            clang(35, "Unknown type name 'size_t'", "unknown_typename"),
            clang(
                35,
                "Must use 'struct' tag to refer to type 'json_object' (fix available)",
                "use_of_tag_name_without_tag",
            ),
        ];
        let after = vec![
            clang(
                26,
                "Unknown type name 'uint32_t' (fix available)",
                "unknown_typename",
            ),
            clang(
                35,
                "Unknown type name 'size_t' (fixes available)",
                "unknown_typename",
            ),
            clang(36, "Unknown type name 'size_t'", "unknown_typename"),
        ];
        let fresh = new_diagnostics(&before, &after);
        let fresh: Vec<(u32, &str)> = fresh.iter().map(|d| (d.line, d.message.as_str())).collect();
        assert_eq!(fresh, [(36, "Unknown type name 'size_t'")]);
    }

    /// rust-analyzer 0.0.330 on dtolnay/semver (`lspc code-actions src/eval.rs:43:unused_total
    /// --apply …`, prefixing the first of two unused variables with `_`): rustc's "on by default"
    /// note, which rust-analyzer appends to the first diagnostic of the lint only, moved to the
    /// second unused variable, which was reported as a new warning. It is not new.
    #[test]
    fn rustc_lint_level_notes_moving_to_another_finding_are_not_new_diagnostics() {
        let rustc = |line, message: &str| Diagnostic {
            source: Some("rustc".to_owned()),
            server: "rust-analyzer".to_owned(),
            ..diagnostic(
                "/w/src/eval.rs",
                line,
                Severity::Warning,
                message,
                Some("unused_variables"),
            )
        };
        let note = "\n`#[warn(unused_variables)]` (part of `#[warn(unused)]`) on by default";
        let before = vec![
            rustc(43, &format!("unused variable: `unused_total`{note}")),
            rustc(44, "unused variable: `wrong`"),
        ];
        let after = vec![rustc(44, &format!("unused variable: `wrong`{note}"))];
        assert_eq!(new_diagnostics(&before, &after), []);
        let after = vec![
            rustc(44, &format!("unused variable: `wrong`{note}")),
            rustc(45, "unused variable: `third`"),
        ];
        let fresh = new_diagnostics(&before, &after);
        let fresh: Vec<(u32, &str)> = fresh.iter().map(|d| (d.line, d.message.as_str())).collect();
        assert_eq!(fresh, [(45, "unused variable: `third`")]);
    }

    /// helper-38: after `ValidationError` was renamed `ValidationFailure`, a pyright error that
    /// named it was listed as new; one that only a new use of the name causes still is.
    #[test]
    fn a_message_naming_the_renamed_symbol_is_not_new_after_the_rename() {
        let message = |name: &str| format!("\"{name}\" is not a known attribute of module");
        let before = vec![diagnostic(
            "/w/t.py",
            7,
            Severity::Error,
            &message("ValidationError"),
            Some("reportAttributeAccessIssue"),
        )];
        let after = vec![
            diagnostic(
                "/w/t.py",
                7,
                Severity::Error,
                &message("ValidationFailure"),
                Some("reportAttributeAccessIssue"),
            ),
            diagnostic(
                "/w/t.py",
                9,
                Severity::Error,
                &message("ValidationFailure"),
                Some("reportAttributeAccessIssue"),
            ),
        ];
        let renamed = Some(("ValidationError", "ValidationFailure"));
        let fresh = new_diagnostics_after_rename(&before, &after, renamed);
        let lines: Vec<u32> = fresh.iter().map(|d| d.line).collect();
        assert_eq!(lines, [9]);
        assert_eq!(new_diagnostics(&before, &after).len(), 2);
        assert_eq!(
            leftovers::replace_whole_word("a_b ab \"ab\" abc", "ab", "xy").as_deref(),
            Some("a_b xy \"xy\" abc")
        );
        assert_eq!(leftovers::replace_whole_word("abc", "ab", "xy"), None);
    }

    #[test]
    fn the_block_lists_files_and_is_capped() {
        let diagnostics = vec![
            diagnostic(
                "/w/src/a.py",
                2,
                Severity::Error,
                "bad type",
                Some("reportAssignmentType"),
            ),
            diagnostic("/w/src/a.py", 3, Severity::Hint, "unused", None),
            diagnostic("/w/b.py", 1, Severity::Warning, "shadowed", None),
        ];
        assert_eq!(
            render_new_diagnostics(&diagnostics, Path::new("/w"), NEW_DIAGNOSTICS_CAP),
            "<new-diagnostics>The following new diagnostic issues were detected:\n\
             \nsrc/a.py:\n  ✘ [Line 2:5] bad type [reportAssignmentType] (Pyright)\n  \
             ★ [Line 3:5] unused (Pyright)\n\nb.py:\n  ⚠ [Line 1:5] shadowed (Pyright)\n\
             </new-diagnostics>"
        );
        assert_eq!(render_new_diagnostics(&[], Path::new("/w"), 4000), "");
        let many: Vec<Diagnostic> = (1..=200)
            .map(|line| diagnostic("/w/a.py", line, Severity::Error, &"x".repeat(30), None))
            .collect();
        let block = render_new_diagnostics(&many, Path::new("/w"), NEW_DIAGNOSTICS_CAP);
        assert!(
            block.chars().count() <= NEW_DIAGNOSTICS_CAP,
            "{}",
            block.len()
        );
        assert!(
            block.ends_with("  … 132 more not shown\n</new-diagnostics>"),
            "{block}"
        );
        let tiny = render_new_diagnostics(&many, Path::new("/w"), 200);
        assert!(tiny.chars().count() <= 200, "{tiny}");
    }

    #[test]
    fn occurrences_count_overlapping_matches() {
        let check = |text: &str, needle: &str, expected: &[usize]| {
            assert_eq!(occurrences(text, needle), expected, "{text:?} {needle:?}");
        };
        check("aaa", "aa", &[0, 1]);
        check("x = 1\ny = 1\n", "= 1", &[2, 8]);
        check("😀a😀a", "a", &[4, 9]);
        check("abc", "", &[]);
        check("abc", "d", &[]);
    }

    #[test]
    fn crlf_files_match_old_text_written_with_lf() {
        let check = |text: &str, old: &str, expected: &str| {
            assert_eq!(search_text(text, old), expected, "{text:?} {old:?}");
        };
        check(
            "import sys\r\nx = 1\r\ny = 2\r\n",
            "x = 1\ny = 2",
            "x = 1\r\ny = 2",
        );
        check("a\r\nb\r\n", "a\r\nb", "a\r\nb");
        check("a\nb\n", "a\nb", "a\nb");
        // Mixed endings: the text as given occurs, so it is not converted.
        check("a\nb\r\nc\r\n", "a\nb", "a\nb");
        check("a\r\nb\r\n", "b", "b");
        assert_eq!(
            occurrences(
                "x\r\nx = 1\r\ny = 2\r\n",
                &search_text("x\r\nx = 1\r\ny = 2\r\n", "x = 1\ny")
            ),
            [3]
        );
    }

    #[test]
    fn code_action_context_takes_diagnostics_intersecting_the_range() {
        let range = |start: (u32, u32), end: (u32, u32)| lsp_types::Range {
            start: lsp_types::Position::new(start.0, start.1),
            end: lsp_types::Position::new(end.0, end.1),
        };
        let diagnostic = |start: (u32, u32), end: (u32, u32)| json!({ "range": range(start, end), "message": "m", "data": {"fix": 1} });
        let check = |d: Value, requested: lsp_types::Range, expected: bool| {
            assert_eq!(intersects(&d, &requested), expected, "{d} {requested:?}");
        };
        // Whole line 0 (0-based) against diagnostics on lines 0, 1 and spanning both.
        let line0 = range((0, 0), (0, 10));
        check(diagnostic((0, 7), (0, 10)), line0, true);
        check(diagnostic((1, 0), (1, 3)), line0, false);
        check(diagnostic((0, 9), (1, 2)), line0, true);
        // An empty range at a position inside, at the edge of, and outside the diagnostic.
        check(diagnostic((2, 4), (2, 8)), range((2, 6), (2, 6)), true);
        check(diagnostic((2, 4), (2, 8)), range((2, 8), (2, 8)), true);
        check(diagnostic((2, 4), (2, 8)), range((2, 9), (2, 9)), false);
        check(json!({ "message": "no range" }), line0, false);
    }

    #[test]
    fn a_command_that_fails_after_its_edit_names_the_ignored_request() {
        let check = |error: CommandError, expected: &str| {
            assert_eq!(command_failed_after_edit_note(&error), expected);
        };
        check(
            CommandError::Engine(EngineError::Server {
                server: "typescript-language-server".into(),
                method: "workspace/executeCommand".into(),
                code: -32601,
                message: "lspc does not handle the server request _typescript.rename".into(),
            }),
            "the edit was applied; the server then sent the request _typescript.rename, which lspc does not handle and ignored",
        );
        check(
            CommandError::Engine(EngineError::Gone),
            "the edit was applied, but the server's command then failed: the engine has shut down",
        );
    }
}
