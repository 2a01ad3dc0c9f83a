//! Document sync: reading a file into the document store and bringing every running server that
//! claims it up to date (`didOpen`, `didChange`, `didSave`), `Op::Sync` waits for servers to start,
//! and closing documents beyond the LRU bound (`didClose`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::super::documents::{read_text_with, DiskStamp, Refresh};
use super::super::settle::SettleRule;
use super::super::{BuiltRequest, EngineError, RequestBuilder, SyncedDocument};
use super::State;
use crate::process::ServerId;
use crate::uri;

/// A sync waiting for its servers to start.
pub(super) struct PendingSync {
    pub(super) path: PathBuf,
    pub(super) deadline: Instant,
    pub(super) reply: SyncReply,
}

/// Where a finished sync goes: back to the frontend ([`Op::Sync`](super::super::Op::Sync)), or
/// into the request its builder makes ([`Op::SyncRequest`](super::super::Op::SyncRequest)).
pub(super) enum SyncReply {
    Document(Sender<Result<SyncedDocument, EngineError>>),
    Request(RequestBuilder),
}

impl SyncReply {
    /// Answer with `error`; a builder's request (if any) is not sent.
    pub(super) fn fail(self, error: EngineError) {
        match self {
            SyncReply::Document(reply) => {
                let _ = reply.send(Err(error));
            }
            SyncReply::Request(build) => {
                let _ = build(Err(&error));
            }
        }
    }
}

impl State {
    /// Read the file and bring every running server that claims it up to date: `didOpen` for
    /// servers that do not have it, `didChange` (+ `didSave` where asked) for servers holding an
    /// older version.
    pub(super) fn sync_document(&mut self, path: &Path) -> Result<(), EngineError> {
        let slots = self.slots_for_path(path);
        self.sync_document_on(path, &slots)
    }

    /// [`State::sync_document`] on the server slots `slots` only (the file's `slots_for_path`,
    /// or the ones a diagnostics wait asks).
    pub(super) fn sync_document_on(
        &mut self,
        path: &Path,
        slots: &[usize],
    ) -> Result<(), EngineError> {
        // The `stat` of `resync_changed_documents` earlier in this turn stands when it found the
        // file unchanged (issue 15: one `stat` per query, not two).
        if !self.documents.unchanged_this_turn(path) {
            self.refresh_from_disk(path)?;
        }
        self.finish_document_sync(path, slots);
        Ok(())
    }

    /// Re-reads `path` unless its disk stamp is unchanged (one `stat`).
    fn refresh_from_disk(&mut self, path: &Path) -> Result<(), EngineError> {
        let cannot_read = |error: &dyn std::fmt::Display| {
            EngineError::InvalidInput(format!("cannot read {}: {error}", path.display()))
        };
        let metadata = std::fs::metadata(path).map_err(|error| cannot_read(&error))?;
        if !self.documents.unchanged_on_disk(path, &metadata) {
            let read_at = std::time::SystemTime::now();
            let text = read_text_with(path, &metadata, self.options.max_file_size)
                .map_err(|error| cannot_read(&error))?;
            let uri = uri::path_to_uri(path)
                .map_err(|error| EngineError::InvalidInput(error.to_string()))?
                .as_str()
                .to_owned();
            let refresh = self.documents.refresh(path, uri, text);
            self.documents
                .set_stamp(path, DiskStamp::of(&metadata, read_at));
            if refresh == Refresh::Changed {
                // Seed 003: after an edit, the file's diagnostics start over, and so does their
                // passive delivery (seed 000): a finding the file had before, fixed and then
                // brought back by another tool, is new again (a new user's MCP agent on
                // sindresorhus/p-map: a TS2322 broken, fixed and broken again by `sed` was
                // never delivered again, 4 of 4).
                self.store.clear_file(path);
                self.frontend.restart_delivery(path);
            }
        }
        Ok(())
    }

    /// The rest of a sync once the text is current: a new version after a stale analysis, room
    /// in the LRU bound, `didOpen`/`didChange` to each running server in `slots`.
    fn finish_document_sync(&mut self, path: &Path, slots: &[usize]) {
        if self.documents.take_stale_analysis(path) {
            // A file this one may depend on changed behind lspc's back: what the servers
            // settled for this version describes the old project.
            self.store.clear_file(path);
        }
        // Make room before opening, so the LRU bound holds at every moment and not only at the
        // end of a turn: a diagnostics job opens up to `FILES_IN_FLIGHT` files in one turn, which
        // held 50 + 32 documents open on a 2,000-file check (issue 17's scale test).
        if self
            .documents
            .get(path)
            .is_some_and(|doc| doc.open_on.is_empty())
        {
            self.evict_documents_beyond(self.options.max_open_documents.saturating_sub(1));
        }
        for &index in slots {
            let server_id = ServerId(index as u32);
            if !self.servers[index].is_running() {
                continue;
            }
            self.open_on_server(server_id, path);
        }
    }

    /// Re-reads every open document whose file changed on disk behind lspc's back (another tool,
    /// a `git checkout`), before an op that syncs a file: a server answers a cross-file question
    /// (a definition in that file, references listed from it, the diagnostics of a file that
    /// imports it) from the text it was sent, so that text must be the disk's. A changed file
    /// gets `didChange`; a file that is gone or can no longer be sent gets `didClose` (unless a
    /// wait has it pinned). Every other document open on the same servers is then marked
    /// [`Document::stale_analysis`](super::super::documents::Document::stale_analysis). Costs one
    /// `ioctl` when no event named an open document
    /// ([`Documents::changed_on_disk`](super::super::documents::Documents::changed_on_disk)).
    pub(super) fn resync_changed_documents(&mut self) {
        for path in self.documents.changed_on_disk() {
            let Some(doc) = self.documents.get(&path) else {
                continue;
            };
            let version = doc.version;
            let servers: Vec<ServerId> = doc.open_on.keys().copied().collect();
            // Sent again to the servers holding it only: opening it on every server that claims
            // it sent pyright the files outside its `include` a check had left out (a file
            // changed within a second of its read counts as changed here).
            let holding: Vec<usize> = servers.iter().map(|id| id.0 as usize).collect();
            match self.sync_document_on(&path, &holding) {
                Ok(()) => {
                    if self.documents.get(&path).map(|doc| doc.version) == Some(version) {
                        continue;
                    }
                    log::debug!("{} changed on disk; re-sent", path.display());
                    // The running servers that claim it without holding it (one restarted
                    // since, or one it was never opened on) read it from disk: told as the
                    // client's watched-file event (LSP 3.17 §`workspace/didChangeWatchedFiles`;
                    // the holders are left out). helper-68: a restarted pyright kept the old
                    // text of a file written and kept open (no event for the folder watch)
                    // until the periodic scan, 2 s, answering its importers from it.
                    self.announce_watched_changes(&[(
                        path.clone(),
                        crate::engine::WatchedChange::Changed,
                    )]);
                }
                Err(error) => {
                    if self.documents.get(&path).is_some_and(|doc| doc.pins > 0) {
                        continue;
                    }
                    log::debug!("closing {}: {error}", path.display());
                    if let Some(doc) = self.documents.forget(&path) {
                        for server_id in doc.open_on.keys() {
                            self.servers[server_id.0 as usize].notify(
                                "textDocument/didClose",
                                json!({ "textDocument": { "uri": doc.uri } }),
                            );
                        }
                    }
                    self.store.clear_file(&path);
                    // Closed, a document is the disk's again, and a server hears that it is
                    // gone only from the client's watched-files event (LSP 3.17
                    // §`workspace/didChangeWatchedFiles`): pyright kept the deleted module as
                    // an empty file, so its importer got `"f" is not a known attribute` where
                    // `pyright` says `Import "pkg.t_mod" could not be resolved` (a helper's
                    // agent trial). A session's or MCP's watcher that saw the deletion first
                    // left it out, the document being open then.
                    if std::fs::symlink_metadata(&path).is_err() {
                        self.announce_watched_changes(&[(
                            path.clone(),
                            crate::engine::WatchedChange::Deleted,
                        )]);
                    }
                }
            }
            self.documents.mark_stale_analysis(&servers, &path);
        }
    }

    /// Sends again now every other document marked
    /// [`Document::stale_analysis`](super::super::documents::Document::stale_analysis) on the servers of
    /// `slots` that publish without a completeness signal (the quiet rules and
    /// typescript-language-server's): a diagnostics wait for one of them has begun, and the rest
    /// are likely asked next. Each such wait costs the server's publish and a quiet period
    /// (750 ms after the `didSave` a resend carries); sent one by one, a new user's agent on
    /// google/uuid paid that per file after an outside edit, 0.8 s × 22 open Go files. Sent
    /// together, the quiet periods overlap. Not on clangd (a resend is a fresh AST each, and its
    /// queries wait for them: `awaiting_publish`) nor on pull servers (a pull asks for the file
    /// it needs). A document that cannot be read stays marked, for its own wait to report.
    pub(super) fn resend_stale_documents(&mut self, slots: &[usize]) {
        let eager: Vec<ServerId> = slots
            .iter()
            .filter(|&&index| {
                let server = &self.servers[index];
                server.is_running()
                    && !server.pull_diagnostics
                    && server.settle_rule() != SettleRule::VersionedPublish
            })
            .map(|&index| ServerId(index as u32))
            .collect();
        if eager.is_empty() {
            return;
        }
        for (path, holding) in self.documents.stale_on(&eager) {
            let holding: Vec<usize> = holding.iter().map(|id| id.0 as usize).collect();
            if let Err(error) = self.sync_document_on(&path, &holding) {
                log::debug!("not sent again yet: {error}");
            }
        }
    }

    pub(super) fn open_on_server(&mut self, server_id: ServerId, path: &Path) {
        self.send_document(server_id, path);
    }

    /// Sends `path` to `server_id` again as a new version of unchanged text, closed and opened:
    /// clangd builds the preamble of an opened file afresh. For a publish that describes a
    /// preamble older than the open text of a file it includes (`fe_pch_file_overridden`,
    /// [`super::server_messages`]). Other servers holding the document get the new version at
    /// their next sync (a `didChange` of the same text). Returns whether it was sent: only a
    /// document the server holds at its current version is.
    pub(super) fn reopen_as_new_version(&mut self, server_id: ServerId, path: &Path) -> bool {
        let Some(doc) = self.documents.get_mut(path) else {
            return false;
        };
        if doc.open_on.get(&server_id).map(|&(version, _)| version) != Some(doc.version) {
            return false;
        }
        doc.version += 1;
        self.send_document(server_id, path);
        true
    }

    /// [`State::open_on_server`] and [`State::reopen_as_new_version`]: `didOpen`, `didChange`
    /// (+ `didSave`), or on a [`SettleRule::VersionedPublish`] server for unchanged text
    /// `didClose` and `didOpen`.
    fn send_document(&mut self, server_id: ServerId, path: &Path) {
        // Only a `.h` is looked up twice (issue 15: this runs in every query's turn).
        let opening = path.extension().is_some_and(|extension| extension == "h")
            && self
                .documents
                .get(path)
                .is_some_and(|doc| !doc.open_on.contains_key(&server_id));
        if opening {
            self.send_c_header_command(server_id, path);
        }
        let Some(doc) = self.documents.get_mut(path) else {
            return;
        };
        let server = &self.servers[server_id.0 as usize];
        if !server.is_running() {
            return;
        }
        // A server whose first versioned publish is final (clangd) publishes nothing for a
        // version whose text and preamble are those of its last analysis: the same text sent
        // again after a stale analysis, for a file that includes none of the changed ones,
        // would wait for a publish that never comes (the whole timeout). So the file is closed
        // and opened again: a fresh analysis and one publish for the new version, whatever it
        // includes. Also for a query: clangd 14 answers a `didChange`d file's hover and
        // definitions from its old preamble while it builds the new one (a new user's warm
        // session on antirez/sds: a header's old signature in 10 hovers of 10 after `git
        // stash pop`), so a query waits for the publish ([`State::awaiting_publish`]).
        let held = doc.open_on.get(&server_id).map(|&(version, _)| version);
        if held == Some(doc.version) {
            return;
        }
        let versioned_publish = server.settle_rule() == SettleRule::VersionedPublish;
        let reopen = versioned_publish && held.is_some_and(|held| held >= doc.text_version);
        match held {
            Some(_) if !reopen => {
                server.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": { "uri": doc.uri, "version": doc.version },
                        "contentChanges": [{ "text": &*doc.text }]
                    }),
                );
                if let Some(include_text) = server.save {
                    let mut params = json!({ "textDocument": { "uri": doc.uri } });
                    if include_text {
                        params["text"] = Value::String(doc.text.to_string());
                    }
                    server.notify("textDocument/didSave", params);
                }
                doc.open_on.insert(server_id, (doc.version, Instant::now()));
                if versioned_publish {
                    let server = &mut self.servers[server_id.0 as usize];
                    server.awaiting_publish.insert(path.to_path_buf());
                }
                return;
            }
            Some(_) => {
                log::debug!(
                    "{}: re-opening {} as v{} (unchanged text, stale analysis)",
                    server.config.name,
                    path.display(),
                    doc.version
                );
                server.notify(
                    "textDocument/didClose",
                    json!({ "textDocument": { "uri": doc.uri } }),
                );
            }
            None => {}
        }
        let language_id = self
            .options
            .config
            .language_id(server.config_index, path)
            .unwrap_or("plaintext");
        server.notify(
            "textDocument/didOpen",
            json!({
                "textDocument": {
                    "uri": doc.uri,
                    "languageId": language_id,
                    "version": doc.version,
                    "text": &*doc.text
                }
            }),
        );
        doc.open_on.insert(server_id, (doc.version, Instant::now()));
        let server = &mut self.servers[server_id.0 as usize];
        server.changed_behind_index.remove(path);
        if reopen {
            server.reopened.insert(path.to_path_buf());
            server.awaiting_publish.insert(path.to_path_buf());
        }
    }

    /// The documents `server_id` (a [`SettleRule::VersionedPublish`] server) was sent again and
    /// has not published for since ([`super::lifecycle`]'s `awaiting_publish`), in path order;
    /// empty for other servers. Drops the entries that no longer wait: closed, or published for.
    pub(super) fn awaiting_publish(&mut self, server_id: ServerId) -> Vec<PathBuf> {
        let server = &mut self.servers[server_id.0 as usize];
        if server.awaiting_publish.is_empty() {
            return Vec::new();
        }
        let documents = &self.documents;
        let publishes = &server.publishes;
        server.awaiting_publish.retain(|path| {
            let held = documents
                .get(path)
                .and_then(|doc| doc.open_on.get(&server_id).map(|&(version, _)| version));
            held.is_some_and(|held| {
                publishes
                    .get(path)
                    .is_none_or(|publish| publish.version.is_none_or(|version| version < held))
            })
        });
        let mut waiting: Vec<PathBuf> = server.awaiting_publish.iter().cloned().collect();
        waiting.sort();
        waiting
    }

    /// Before `path` is opened on `server_id`: when it is a `.h` of a C project that clangd would
    /// parse as Objective-C++ ([`crate::project::c_header`]), give clangd a C header command for
    /// it. Sent before every open (a restarted clangd has forgotten it; clangd ignores a command
    /// equal to the one it has).
    fn send_c_header_command(&mut self, server_id: ServerId, path: &Path) {
        use crate::project::c_header;
        let server = &self.servers[server_id.0 as usize];
        if !c_header::wants_c_header_command(&server.config, path) {
            return;
        }
        let folder = server.workspace_folder.clone();
        let is_c_project =
            *self.c_projects.entry(folder).or_insert_with_key(
                |folder| match crate::walk::list_files(folder, std::slice::from_ref(folder)) {
                    Ok(files) => c_header::is_c_project(files.iter().map(PathBuf::as_path)),
                    Err(error) => {
                        log::debug!("cannot list {} for C headers: {error}", folder.display());
                        false
                    }
                },
            );
        if !is_c_project {
            return;
        }
        log::debug!(
            "{} is a C header for {}",
            path.display(),
            server.config.name
        );
        server.notify(
            "workspace/didChangeConfiguration",
            json!({ "settings": c_header::c_header_settings(path) }),
        );
    }

    pub(super) fn evict_documents(&mut self) {
        self.evict_documents_beyond(self.options.max_open_documents);
    }

    /// `didClose` the least recently used unpinned documents until at most `max_open` are open;
    /// a document a request in flight was built for stays open ([`State::document_in_use`]),
    /// so more than `max_open` are while such requests are.
    fn evict_documents_beyond(&mut self, max_open: usize) {
        let candidates = self
            .documents
            .eviction_candidates(max_open, &|path| self.document_in_use(path));
        for path in candidates {
            let Some(doc) = self.documents.forget(&path) else {
                continue;
            };
            for server_id in doc.open_on.keys() {
                let server = &self.servers[server_id.0 as usize];
                server.notify(
                    "textDocument/didClose",
                    json!({ "textDocument": { "uri": doc.uri } }),
                );
                self.forget_pulls(*server_id, &path);
            }
            // A closed document's diagnostics are no one's current findings: servers that
            // publish clear them on `didClose`, and a pull answer described the open text. Kept,
            // a later check in the same session would report them for a file it did not open
            // (one deleted or ignored since).
            self.store.clear_file(&path);
            self.probes.retain(|(_, probed), _| probed != &path);
            log::debug!("closed {} (LRU bound)", path.display());
        }
    }
    /// Before an [`Op::Request`](super::super::Op::Request) built for the document `path` in an
    /// earlier turn (a session's split `SyncRequest`): `path` synced again on `server_id`,
    /// opened again if the LRU bound closed it since. Whether it is open there now.
    pub(super) fn resync_for_request(&mut self, server_id: ServerId, path: &Path) -> bool {
        let index = server_id.0 as usize;
        if !self
            .servers
            .get(index)
            .is_some_and(|server| server.is_running())
        {
            return false;
        }
        if let Err(error) = self.sync_document_on(path, &[index]) {
            log::debug!(
                "cannot sync {} again for a request: {error}",
                path.display()
            );
            return false;
        }
        self.documents
            .get(path)
            .is_some_and(|doc| doc.open_on.contains_key(&server_id))
    }

    /// Whether a frontend request in flight, or waiting to be sent again, was built for the open
    /// document `path` (the `document` of [`super::Purpose::Frontend`]).
    fn document_in_use(&self, path: &Path) -> bool {
        let retries = self.retries.iter().map(|retry| &retry.purpose);
        self.pending.values().chain(retries).any(|purpose| {
            matches!(purpose, super::Purpose::Frontend { document: Some(document), .. }
                if document == path)
        })
    }

    /// Forgets what was pulled from `server_id` for `path`, a document just closed on it: its
    /// raw items and the pull bookkeeping (an answer still in flight is dropped on arrival).
    fn forget_pulls(&mut self, server_id: ServerId, path: &Path) {
        let key = (server_id, path.to_path_buf());
        self.pulled.remove(&key);
        self.provisional_pulls.remove(&key);
        self.stale_pulls.remove(&key);
        self.servers[server_id.0 as usize]
            .raw_diagnostics
            .remove(&(path.to_path_buf(), crate::diagnostics::Origin::Pulled));
    }

    pub(super) fn advance_syncs(&mut self, now: Instant) {
        let mut still_waiting = Vec::new();
        for sync in std::mem::take(&mut self.syncs) {
            let indexes = self.slots_for_path(&sync.path);
            let starting = indexes.iter().any(|&index| {
                self.servers[index].is_starting() || self.servers[index].is_restart_pending()
            });
            if starting && now < sync.deadline {
                still_waiting.push(sync);
                continue;
            }
            let result = self.finish_sync(&sync.path, &indexes);
            self.answer_sync(result, sync.reply);
        }
        self.syncs.extend(still_waiting);
    }

    /// Send a finished sync's outcome where it goes; a built request is sent in the same turn.
    pub(super) fn answer_sync(
        &mut self,
        result: Result<SyncedDocument, EngineError>,
        reply: SyncReply,
    ) {
        match reply {
            SyncReply::Document(reply) => {
                let _ = reply.send(result);
            }
            SyncReply::Request(build) => {
                if let Some(mut request) = build(result.as_ref()) {
                    let on_sent = request.on_sent.take();
                    let document = result.ok().map(|synced| synced.path);
                    self.send_frontend_request(request, document);
                    if let Some(on_sent) = on_sent {
                        on_sent();
                    }
                }
            }
        }
    }

    /// Send a frontend's request ([`Op::Request`](super::super::Op::Request)); its deadline
    /// counts from now. `document`: the open document it was built for, kept open while it is
    /// in flight.
    pub(super) fn send_frontend_request(
        &mut self,
        request: BuiltRequest,
        document: Option<PathBuf>,
    ) {
        let purpose = super::Purpose::Frontend {
            method: request.method,
            params: request.params,
            reply: request.reply,
            deadline: Instant::now() + request.timeout,
            timeout: request.timeout,
            attempts: 0,
            retry: request.retry,
            tag: request.tag,
            crash_retried: false,
            document,
        };
        self.send_request(request.server_id, purpose);
    }

    pub(super) fn finish_sync(
        &mut self,
        path: &Path,
        indexes: &[usize],
    ) -> Result<SyncedDocument, EngineError> {
        let running: Vec<usize> = indexes
            .iter()
            .copied()
            .filter(|&index| self.servers[index].is_running())
            .collect();
        if running.is_empty() {
            let first = &self.servers[indexes[0]];
            return Err(first.failure().unwrap_or(EngineError::Spawn {
                server: first.config.name.clone(),
                message: "still starting when the timeout hit".to_owned(),
            }));
        }
        let primary = &self.servers[indexes[0]];
        let primary_failure = (!primary.is_running()).then(|| {
            primary
                .failure()
                .unwrap_or(EngineError::Spawn {
                    server: primary.config.name.clone(),
                    message: "still starting when the timeout hit".to_owned(),
                })
                .to_string()
        });
        self.sync_document_on(path, indexes)?;
        let doc = self.documents.get(path).ok_or(EngineError::Gone)?;
        Ok(SyncedDocument {
            primary_failure,
            path: path.to_path_buf(),
            text: Arc::clone(&doc.text),
            version: doc.version,
            edit_generation: self.written.generation(),
            line_index: Some(Arc::clone(&doc.line_index)),
            servers: running
                .iter()
                .map(|&index| {
                    let mut info = self.servers[index].info();
                    info.awaiting_publish = self.awaiting_publish(ServerId(index as u32));
                    info.changed_behind_index = self.servers[index]
                        .changed_behind_index
                        .iter()
                        .cloned()
                        .collect();
                    info
                })
                .collect(),
        })
    }
}
