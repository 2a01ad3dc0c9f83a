//! The loop's side of safe edits (issue 5): run a `WorkspaceEdit` through [`crate::edit`] with
//! the document versions only the loop knows, then tell the servers what changed.
//!
//! A child module of `event_loop` so it can reach the loop's state; it adds no state besides the
//! bounded [`ServerEditLog`] and [`WrittenFiles`].
//!
//! An edit is computed (by a server's rename, formatting or code action, or from the disk text)
//! before it is written, and other edits may be written in between: two renames an agent sends at
//! once, a server's `workspace/applyEdit`. A caller passes the [`EditReport::generation`] or
//! [`super::super::SyncedDocument::edit_generation`] it read before the edit was computed as
//! `based_on`, and an edit touching a file written since is refused whole
//! ([`EditError::ChangedByAnotherEdit`]): its positions are for the older text. Versioned edits
//! of open documents were already refused then (the version moved on); this covers files the
//! servers read from disk.
//!
//! After a written edit (LSP 3.17 §`workspace/applyEdit`, §"File Operations"):
//! - documents lspc has open get `didChange` (+ `didSave` where the server asked for saves);
//! - a renamed open document gets `didClose` under its old URI and `didOpen` under the new one;
//!   a deleted open document gets `didClose`;
//! - servers advertising `workspace.fileOperations.didCreate`/`didRename`/`didDelete` get
//!   `workspace/didCreateFiles`/`didRenameFiles`/`didDeleteFiles` (filters are not evaluated: a
//!   server that asked for some file operations hears about all of them);
//! - changed files lspc does not have open are announced with `workspace/didChangeWatchedFiles`
//!   to the running servers that claim them, so their caches do not keep the old text;
//! - every other document open on a server that claims an edited file is sent again under a
//!   new version (`stale_analysis`), so its diagnostics settle again before they are reported
//!   (a source file that includes an edited header); on clangd at its next sync (a `didChange`
//!   for a query, closed and opened again for a diagnostics wait).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::super::settle::SettleRule;
use super::State;
use crate::edit::{
    apply_workspace_edit, ApplyMode, EditContext, EditError, EditReport, Operation, SentDocument,
};
use crate::process::ServerId;
use crate::text::PositionEncoding;
use crate::uri;

/// How many server-applied edits [`ServerEditLog`] keeps.
const SERVER_EDIT_LOG_SIZE: usize = 32;

/// The last edits servers applied, with growing sequence numbers (1-based).
#[derive(Debug, Default)]
pub(super) struct ServerEditLog {
    entries: VecDeque<(u64, EditReport)>,
    next: u64,
}

/// Which files lspc's own edits wrote, by edit generation (see the module doc).
#[derive(Debug, Default)]
pub(super) struct WrittenFiles {
    /// How many edits lspc wrote so far.
    generation: u64,
    /// Canonical path → the generation of the last edit that wrote, created, deleted or
    /// renamed it (both names of a rename).
    last: std::collections::HashMap<PathBuf, u64>,
}

impl WrittenFiles {
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether an edit after generation `based_on` wrote `path`.
    fn since(&self, path: &Path, based_on: u64) -> bool {
        self.last.get(path).is_some_and(|&at| at > based_on)
    }

    fn record(&mut self, report: &EditReport) {
        self.generation += 1;
        let generation = self.generation;
        for change in &report.files {
            self.last.insert(change.path.clone(), generation);
        }
        for operation in &report.operations {
            if let Operation::Rename { from, to } = operation {
                self.last.insert(from.clone(), generation);
                self.last.insert(to.clone(), generation);
            }
        }
    }
}

impl ServerEditLog {
    fn push(&mut self, report: EditReport) {
        self.next += 1;
        self.entries.push_back((self.next, report));
        while self.entries.len() > SERVER_EDIT_LOG_SIZE {
            self.entries.pop_front();
        }
    }

    pub(super) fn entries(&self) -> Vec<(u64, EditReport)> {
        self.entries.iter().cloned().collect()
    }
}

/// `file://` URI text of a path, empty when it cannot be built (never for canonical paths).
fn uri_of(path: &Path) -> String {
    uri::path_to_uri(path)
        .map(|uri| uri.as_str().to_owned())
        .unwrap_or_default()
}

impl State {
    /// Validate and (in [`ApplyMode::Write`]) apply `edit`, then re-sync the servers.
    pub(super) fn apply_edit(
        &mut self,
        edit: &Value,
        encoding: PositionEncoding,
        mode: ApplyMode,
        based_on: Option<u64>,
    ) -> Result<EditReport, EditError> {
        let root = self.options.config.root.clone();
        let written = &self.written;
        let written_since =
            |path: &Path| based_on.is_some_and(|generation| written.since(path, generation));
        let documents = &self.documents;
        let lookup = |path: &Path| {
            documents.get(path).map(|doc| SentDocument {
                version: doc.version,
                opened_version: doc.opened_version,
                text_version: doc.text_version,
                text: Arc::clone(&doc.text),
            })
        };
        let context = EditContext {
            root: &root,
            encoding,
            documents: &lookup,
            written_since: &written_since,
        };
        let mut report = apply_workspace_edit(edit, &context, mode)?;
        if report.written {
            self.written.record(&report);
            self.after_edit(&report);
        }
        report.generation = self.written.generation();
        Ok(report)
    }

    /// The answer to a server's `workspace/applyEdit` (LSP 3.17 `ApplyWorkspaceEditResult`).
    pub(super) fn answer_apply_edit(&mut self, server_id: ServerId, params: &Value) -> Value {
        let server = &self.servers[server_id.0 as usize];
        let name = server.config.name.clone();
        let encoding = server.encoding;
        let edit = params.get("edit").cloned().unwrap_or(Value::Null);
        match self.apply_edit(&edit, encoding, ApplyMode::Write, None) {
            Ok(report) => {
                log::info!(
                    "{name}: applied a workspace edit to {} file(s)",
                    report.files.len()
                );
                self.server_edits.push(report);
                json!({ "applied": true })
            }
            Err(error) => {
                log::warn!("{name}: refused a workspace edit: {error}");
                json!({ "applied": false, "failureReason": error.to_string() })
            }
        }
    }

    fn after_edit(&mut self, report: &EditReport) {
        // lspc just wrote files: what a `stat` earlier in this turn said about them is old.
        self.documents.next_turn();
        let mut created = Vec::new();
        let mut renamed = Vec::new();
        let mut deleted = Vec::new();
        let mut reopen = Vec::new();
        for operation in &report.operations {
            match operation {
                Operation::Create { path } => created.push(json!({ "uri": uri_of(path) })),
                Operation::Rename { from, to } => {
                    renamed.push(json!({ "oldUri": uri_of(from), "newUri": uri_of(to) }));
                    if self.close_document(from) {
                        reopen.push(to.clone());
                    }
                }
                Operation::Delete { path } => {
                    deleted.push(json!({ "uri": uri_of(path) }));
                    self.close_document(path);
                }
                Operation::Edit { .. } | Operation::Skipped { .. } => {}
            }
        }
        let mut watched: Vec<(PathBuf, u32)> = Vec::new();
        for change in &report.files {
            let open = self.documents.get(&change.path).is_some();
            if change.after.is_some() && (open || reopen.contains(&change.path)) {
                if let Err(error) = self.sync_document(&change.path) {
                    log::warn!("cannot re-sync {}: {error}", change.path.display());
                }
            } else {
                // FileChangeType: 1 created, 2 changed, 3 deleted.
                let kind = match (&change.before, &change.after) {
                    (None, _) => 1,
                    (Some(_), Some(_)) => 2,
                    (Some(_), None) => 3,
                };
                watched.push((change.path.clone(), kind));
            }
        }
        for server in &self.servers {
            if !server.is_running() {
                continue;
            }
            let operations = server.capabilities.pointer("/workspace/fileOperations");
            let wants = |name: &str| operations.and_then(|ops| ops.get(name)).is_some();
            if wants("didCreate") && !created.is_empty() {
                server.notify("workspace/didCreateFiles", json!({ "files": created }));
            }
            if wants("didRename") && !renamed.is_empty() {
                server.notify("workspace/didRenameFiles", json!({ "files": renamed }));
            }
            if wants("didDelete") && !deleted.is_empty() {
                server.notify("workspace/didDeleteFiles", json!({ "files": deleted }));
            }
            // Every instance of the server hears of the change: a file in one project may be
            // imported by another.
            let changes: Vec<Value> = watched
                .iter()
                .filter(|(path, _)| self.claims(server, path))
                .map(|(path, kind)| json!({ "uri": uri_of(path), "type": kind }))
                .collect();
            if !changes.is_empty() {
                server.notify(
                    "workspace/didChangeWatchedFiles",
                    json!({ "changes": changes }),
                );
            }
        }
        // Last, once every server knows the new text of every edited file.
        self.resend_dependents(report);
    }

    /// Marks every other document open on a server of an edited file for a new version
    /// ([`super::documents::Document::stale_analysis`]), as a change behind lspc's back does:
    /// `util.c` settled clean against `util.h`, and after an edit of `util.h` clangd analyses
    /// `util.c` again only later and publishes the conflicting declaration under the version it
    /// had, which lspc had settled already. Servers other than clangd get the new version in
    /// the edit's own turn; on clangd it is sent at the file's next sync, as a close and open
    /// again when that sync is for a diagnostics wait (a fresh analysis, which always publishes:
    /// a `didChange` of the same text is not analysed again when the file's includes did not
    /// change, and its wait got no publish until the timeout).
    fn resend_dependents(&mut self, report: &EditReport) {
        let changed: Vec<&Path> = report
            .files
            .iter()
            .map(|change| change.path.as_path())
            .collect();
        let servers: Vec<ServerId> = self
            .servers
            .iter()
            .enumerate()
            .filter(|(_, server)| server.is_running())
            .filter(|(_, server)| changed.iter().any(|path| self.claims(server, path)))
            .map(|(index, _)| ServerId(index as u32))
            .collect();
        let dependents = self
            .documents
            .mark_stale_analysis_except(&servers, &changed);
        for path in dependents {
            // On clangd the new version waits, marked, for the file's next sync, which knows
            // whether a publish is due (`open_on_server`): an edit rebuilds no open file.
            let eager = self.documents.get(&path).is_some_and(|doc| {
                doc.open_on.keys().any(|server_id| {
                    servers.contains(server_id)
                        && self.servers[server_id.0 as usize].settle_rule()
                            != SettleRule::VersionedPublish
                })
            });
            if !eager {
                continue;
            }
            if let Err(error) = self.sync_document(&path) {
                log::debug!("cannot re-send {}: {error}", path.display());
            }
        }
    }

    /// `didClose` an open document on every server holding it and forget it (with its
    /// diagnostics). Returns whether it was open.
    fn close_document(&mut self, path: &Path) -> bool {
        let Some(doc) = self.documents.forget(path) else {
            return false;
        };
        for server_id in doc.open_on.keys() {
            self.servers[server_id.0 as usize].notify(
                "textDocument/didClose",
                json!({ "textDocument": { "uri": doc.uri } }),
            );
        }
        self.store.clear_file(path);
        true
    }
}
