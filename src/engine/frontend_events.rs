//! Engine support for long-lived frontends (the MCP server): passive diagnostic delivery, event
//! subscriptions and snapshots of current diagnostics and server capabilities.
//!
//! This is a child module of the event loop so it can read the loop's state directly; the loop
//! calls into it from four places only (a new publish or pull, a server initialized, a server
//! failed, and the ops defined here). Invariants:
//! - Every publish that reaches the [`DiagnosticStore`](crate::diagnostics::DiagnosticStore) is
//!   also registered with the [`PassiveRegistry`] (seed 000 "Passive diagnostic delivery").
//! - Subscribers get events over unbounded channels, so the loop never blocks on a slow frontend;
//!   a subscriber whose receiver is gone is forgotten on the next send.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::Sender;
use serde_json::Value;

use super::{Server, ServerState, State};
use crate::config::Program;
use crate::diagnostics::{Diagnostic, DrainedBatch, Origin, PassiveRegistry, Reporter};
use crate::doorbell::LoopSender;
use crate::engine::{EngineError, Op};
use crate::process::ServerId;

/// Something a frontend may want to tell its own client about.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FrontendEvent {
    /// A server published (or a pull answered) diagnostics for the file (canonical absolute path).
    DiagnosticsChanged { path: PathBuf },
    /// A server finished `initialize`: its capabilities are now known.
    ServerInitialized { server: String },
    /// A server crashed or failed to start; `message` names it and says why (already formatted
    /// by [`EngineError`]'s `Display`). `permanent` is true once lspc stops restarting it.
    ServerFailed {
        server: String,
        message: String,
        permanent: bool,
    },
}

/// One configured server as a frontend sees it, for tool gating and `lsp://servers`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ServerDetails {
    pub name: String,
    /// The instance's id (each project root runs its own instance of a server).
    #[serde(default)]
    pub server_id: Option<crate::process::ServerId>,
    /// The project root of this instance relative to the workspace root (`None`: the instance
    /// at the workspace root), as in [`crate::engine::ServerStatus::project`].
    pub project: Option<String>,
    /// `not started`, `starting`, `running`, `running (busy)` or `failed: …`.
    pub state: String,
    /// The raw `ServerCapabilities` of the first process; `None` until it initialized.
    pub capabilities: Option<Arc<Value>>,
    /// Extensions the server claims (lowercase with a dot, `".py"`).
    pub extensions: Vec<String>,
    /// Whether its command was found (only available servers are started or routed to).
    pub available: bool,
    pub pid: Option<u32>,
    pub restarts: u32,
    /// The last stderr lines of the running process.
    pub stderr_tail: String,
    /// How the server signals complete diagnostics (issue 15).
    pub settle_rule: crate::engine::SettleRule,
    /// Why lspc does not use its diagnostics on this machine (the program or plugins they come
    /// from are missing: [`crate::config::ServerConfig::diagnostics_off_reason`]).
    #[serde(default)]
    pub diagnostics_off: Option<String>,
    /// Why it cannot format on this machine ([`crate::config::ServerConfig::formatting_off_reason`]).
    #[serde(default)]
    pub formatting_off: Option<String>,
    /// The markers of its project roots ([`crate::config::ServerConfig::root_markers`]); empty
    /// when it runs as one instance.
    #[serde(default)]
    pub root_markers: Vec<String>,
}

/// The frontend-facing state the loop owns.
#[derive(Default)]
pub(super) struct FrontendHub {
    passive: PassiveRegistry,
    /// Queues of consumers that have their own ([`Op::OpenPassive`]).
    consumers: std::collections::BTreeMap<String, PassiveRegistry>,
    subscribers: Vec<Sender<FrontendEvent>>,
    /// A fingerprint of the last non-empty set subscribers heard of, per server and file.
    announced: HashMap<(String, PathBuf), u64>,
    /// Sets queued for passive delivery, shared with frontends ([`Op::PassiveCounter`]).
    queued: crate::engine::PassiveCounter,
}

impl FrontendHub {
    fn broadcast(&mut self, event: FrontendEvent) {
        self.subscribers
            .retain(|subscriber| subscriber.send(event.clone()).is_ok());
    }

    /// `path`'s settled set, every server's merged ([`PassiveRegistry::settled`]), for every
    /// queue.
    pub(super) fn settled(&mut self, path: &std::path::Path, current: &[Diagnostic]) {
        self.passive.settled(path, current);
        for registry in self.consumers.values_mut() {
            registry.settled(path, current);
        }
    }

    /// After `path`'s text changed: its passive delivery starts over in every queue (the shared
    /// one and each consumer's, [`PassiveRegistry::reset_file`]), so the findings of the new
    /// text are delivered, repeated or not.
    pub(super) fn restart_delivery(&mut self, path: &std::path::Path) {
        self.passive.reset_file(path);
        for registry in self.consumers.values_mut() {
            registry.reset_file(path);
        }
    }
}

/// How many files changed on disk at once a server that ignores watched-file events
/// ([`Program::ignores_watched_files`]) is sent open and closed; more (a `git checkout` of
/// another branch) restart it instead: tsserver brings its project up to date at each open, so
/// a thousand opens would cost a thousand project updates, where a restart loads the project
/// once.
pub(super) const MAX_OPENED_FOR_A_CHANGE: usize = 64;

/// How many files changed behind clangd's index ([`super::Server::changed_behind_index`]) are
/// kept per server.
const MAX_CHANGED_BEHIND_INDEX: usize = 1024;

impl State {
    /// Sends each running server `workspace/didChangeWatchedFiles` for the changed files it
    /// claims or that are one of its project files (its root markers: `pyproject.toml`,
    /// `tsconfig.json`, `compile_commands.json`, …, which a `git checkout` rewrites and the
    /// server reads its configuration from), and does not have open (an open document is
    /// re-synced when next used). The documents open on a server that heard of a change are
    /// sent again under a new version when next used, so their diagnostics are settled anew.
    /// A server that ignores the event ([`Program::ignores_watched_files`]) is sent the files
    /// written open and closed instead, and asked to reload its projects when files were made
    /// or removed (`tsserver_reload.rs`).
    pub(super) fn announce_watched_changes(
        &mut self,
        changes: &[(PathBuf, crate::engine::WatchedChange)],
    ) {
        let mut told = Vec::new();
        let mut behind_index = Vec::new();
        let mut reloading = Vec::new();
        for server in &self.servers {
            if !server.is_running() {
                continue;
            }
            let claims = |path: &Path| self.claims(server, path);
            let events: Vec<Value> = changes
                .iter()
                .filter(|(path, _)| self.hears_of(server, path))
                .filter(|(path, _)| {
                    !self
                        .documents
                        .get(path)
                        .is_some_and(|doc| doc.open_on.contains_key(&server.server_id))
                })
                .filter_map(|(path, kind)| {
                    let uri = crate::uri::path_to_uri(path).ok()?;
                    Some(serde_json::json!({"uri": uri.as_str(), "type": kind.file_change_type()}))
                })
                .collect();
            if !events.is_empty() {
                server.notify(
                    "workspace/didChangeWatchedFiles",
                    serde_json::json!({ "changes": events }),
                );
                told.push(server.server_id);
            }
            if server.program == Some(Program::Clangd) {
                let written = self.written_unopened(changes, server);
                behind_index.push((
                    server.server_id,
                    written
                        .into_iter()
                        .map(Path::to_path_buf)
                        .collect::<Vec<_>>(),
                ));
            }
            if server.program.is_some_and(Program::ignores_watched_files) {
                let written = self.written_unopened(changes, server);
                // More than that restarts the server instead (`State::files_changed`).
                if written.len() <= MAX_OPENED_FOR_A_CHANGE {
                    self.open_and_close(server, &written);
                }
                if crate::engine::tsserver_reload::needed(changes, claims)
                    && crate::engine::tsserver_probe::offered(&server.capabilities)
                {
                    reloading.push(server.server_id);
                    // Its open documents are analysed anew when next used: their findings may
                    // have changed with no event naming a file (a package removed).
                    if !told.contains(&server.server_id) {
                        told.push(server.server_id);
                    }
                }
            }
        }
        for server_id in reloading {
            log::debug!(
                "{}: files made or removed on disk: tsserver reloads its projects",
                self.servers[server_id.0 as usize].config.name
            );
            self.send_request(server_id, super::requests::Purpose::ReloadProjects);
            self.project_files.forget_asked(server_id);
        }
        for (server_id, paths) in behind_index {
            let set = &mut self.servers[server_id.0 as usize].changed_behind_index;
            // Bounded: every sync's snapshot carries the set (a checkout of thousands of files
            // would copy them for each query); past the bound, answers into the files left out
            // get the name check alone, as before.
            let room = MAX_CHANGED_BEHIND_INDEX.saturating_sub(set.len());
            set.extend(paths.into_iter().take(room));
        }
        for server_id in &told {
            // A file made or written may bring project files it imports.
            self.project_files.forget_asked(*server_id);
        }
        if !told.is_empty() {
            self.documents
                .mark_stale_analysis(&told, std::path::Path::new(""));
        }
    }

    /// Whether `server`'s configured entry claims `path` by its extension (any of the entry's
    /// instances, whichever project `path` lies in).
    pub(super) fn claims(&self, server: &Server, path: &Path) -> bool {
        self.options
            .config
            .servers_for_path(path)
            .contains(&server.config_index)
    }

    /// Whether `server` is told of a change of `path` on disk (when it does not have it open):
    /// it claims the file, or the file is one of its project files (its root markers:
    /// `pyproject.toml`, `tsconfig.json`, `compile_commands.json`, …, which a `git checkout`
    /// rewrites and the server reads its configuration from), or a configuration file its
    /// program reads ([`Program::reads_configuration`]: ruff's `ruff.toml`, which is no root
    /// marker; a warm ruff kept its old rule selection after an edit of it). Every instance of
    /// the server hears of the change: a file in one project may be imported by another (as
    /// for edits, see edit_sync.rs).
    pub(super) fn hears_of(&self, server: &Server, path: &Path) -> bool {
        self.claims(server, path)
            || path.file_name().is_some_and(|name| {
                server
                    .config
                    .root_markers
                    .iter()
                    .any(|marker| name == crate::config::roots::marker_file(marker))
                    || name.to_str().is_some_and(|name| {
                        server
                            .program
                            .is_some_and(|program| program.reads_configuration(name))
                    })
            })
    }

    /// The files of `changes` created or changed on disk that `server` claims by extension and
    /// does not have open: what a server that ignores `workspace/didChangeWatchedFiles`
    /// ([`Program::ignores_watched_files`]) must be sent open and closed.
    pub(super) fn written_unopened<'a>(
        &self,
        changes: &'a [(PathBuf, crate::engine::WatchedChange)],
        server: &Server,
    ) -> Vec<&'a Path> {
        changes
            .iter()
            .filter(|(_, kind)| *kind != crate::engine::WatchedChange::Deleted)
            .map(|(path, _)| path.as_path())
            .filter(|path| self.claims(server, path))
            .filter(|path| {
                !self
                    .documents
                    .get(path)
                    .is_some_and(|doc| doc.open_on.contains_key(&server.server_id))
            })
            .collect()
    }

    /// Sends `server` each of `paths` open with the disk's text and closed at once
    /// (§`textDocument/didOpen`, §`textDocument/didClose`): a server that watches unopened
    /// files itself then holds their text as it is now, whatever its own watch saw
    /// ([`Program::ignores_watched_files`]). A file that cannot be read as a document (gone
    /// again, too large, binary) is skipped, and logged.
    fn open_and_close(&self, server: &Server, paths: &[&Path]) {
        for path in paths {
            let text = match crate::engine::documents::read_text(path, self.options.max_file_size) {
                Ok(text) => text,
                Err(error) => {
                    log::debug!("{}: not re-read: {error}", path.display());
                    continue;
                }
            };
            let Ok(uri) = crate::uri::path_to_uri(path) else {
                continue;
            };
            let language_id = self
                .options
                .config
                .language_id(server.config_index, path)
                .unwrap_or("plaintext");
            log::debug!(
                "{}: {} changed on disk: sent open and closed (the server ignores watched-file events)",
                server.config.name,
                path.display()
            );
            server.notify(
                "textDocument/didOpen",
                serde_json::json!({ "textDocument": {
                    "uri": uri.as_str(), "languageId": language_id, "version": 0, "text": text
                }}),
            );
            server.notify(
                "textDocument/didClose",
                serde_json::json!({ "textDocument": { "uri": uri.as_str() } }),
            );
        }
    }

    /// Store `server`'s latest diagnostics of `origin` for `path` (LSP replace semantics, per
    /// origin), queue the server's union of both origins for passive delivery and tell
    /// subscribers. Replaces a bare `store.replace` in the loop.
    ///
    /// Subscribers hear of a change only: a set equal to the last one they heard of for that
    /// server and file (a re-publish after `didSave`, a second pull answering the same) is not
    /// news (issue 11: one edit produced two `notifications/resources/updated`). The store itself
    /// cannot tell: it is cleared while a new version is analysed. A first empty set equals
    /// "nothing published".
    pub(super) fn record_diagnostics(
        &mut self,
        server_id: ServerId,
        server: &str,
        path: &Path,
        origin: Origin,
        diags: Vec<Diagnostic>,
    ) {
        // The server's set for the file is the union of what each of its instances pulled and
        // pushed.
        self.store
            .replace_from(Reporter::new(server, server_id.0), path, origin, diags);
        let diags = self.store.get(server, path).unwrap_or_default();
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            diags.hash(&mut hasher);
            hasher.finish()
        };
        // Frontends serve files inside the workspace root only: a file outside it (an in-root
        // symlink to `/tmp/secret.txt` that gopls parsed as Go, its publish naming the link,
        // canonical here) is not theirs to see, nor its text quoted in a message (a new user's
        // agent on go-chi/chi read another file's first token in `newDiagnostics` and
        // `lsp://diagnostics`, where `hover` refused the file). `lspc check` keeps it.
        if !path.starts_with(&self.workspace_root) {
            return;
        }
        let key = (server.to_owned(), path.to_path_buf());
        let empty = diags.is_empty();
        let previous = if empty {
            self.frontend.announced.remove(&key)
        } else {
            self.frontend.announced.insert(key, fingerprint)
        };
        let changed = match previous {
            Some(previous) => empty || previous != fingerprint,
            None => !empty,
        };
        if self.options.passive_delivery {
            self.frontend.passive.register(server, path, diags.clone());
        }
        for registry in self.frontend.consumers.values_mut() {
            registry.register(server, path, diags.clone());
        }
        if self.options.passive_delivery || !self.frontend.consumers.is_empty() {
            self.frontend.queued.add_one();
        }
        if changed {
            self.frontend.broadcast(FrontendEvent::DiagnosticsChanged {
                path: path.to_path_buf(),
            });
        }
    }

    /// A server answered `initialize`.
    pub(super) fn frontend_server_initialized(&mut self, server: &str) {
        self.frontend.broadcast(FrontendEvent::ServerInitialized {
            server: server.to_owned(),
        });
    }

    /// A server failed (crash or start-up failure).
    pub(super) fn frontend_server_failed(&mut self, reason: &EngineError, permanent: bool) {
        let server = match reason {
            EngineError::Spawn { server, .. }
            | EngineError::ServerExited { server, .. }
            | EngineError::Server { server, .. }
            | EngineError::Timeout { server, .. }
            | EngineError::Cancelled { server, .. } => server.clone(),
            _ => String::new(),
        };
        self.frontend.broadcast(FrontendEvent::ServerFailed {
            server,
            message: reason.to_string(),
            permanent,
        });
    }

    /// The configured servers' names, highest precedence first (the order
    /// [`crate::diagnostics::DiagnosticStore::merged`] takes).
    pub(super) fn server_order(&self) -> Vec<&str> {
        self.servers
            .iter()
            .map(|server| server.config.name.as_str())
            .collect()
    }

    /// Handle one of the frontend ops ([`Op::DrainPassive`], [`Op::OpenPassive`],
    /// [`Op::ClosePassive`], [`Op::SubscribeEvents`], [`Op::SubscribeProjectFiles`],
    /// [`Op::CurrentDiagnostics`],
    /// [`Op::ServerDetails`], [`Op::OpenDocuments`]).
    pub(super) fn handle_frontend_op(&mut self, op: Op) {
        match op {
            Op::DrainPassive {
                consumer,
                shown_file,
                reply,
            } => {
                let shown = shown_file.map(|path| {
                    let diags = self.store.merged(&path, &self.server_order());
                    (path, diags)
                });
                let registry = match consumer {
                    None => &mut self.frontend.passive,
                    Some(consumer) => self.frontend.consumers.entry(consumer).or_default(),
                };
                if let Some((path, diags)) = shown {
                    registry.mark_shown(&path, &diags);
                }
                let _ = reply.send(registry.drain());
            }
            Op::OpenPassive { consumer } => {
                self.frontend.consumers.entry(consumer).or_default();
            }
            Op::PassiveCounter { reply } => {
                let _ = reply.send(self.frontend.queued.clone());
            }
            Op::ClosePassive { consumer } => {
                self.frontend.consumers.remove(&consumer);
            }
            Op::SubscribeEvents { sender } => self.frontend.subscribers.push(sender),
            Op::SubscribeProjectFiles { sender, sent } => {
                self.project_files.subscribe(sender, sent)
            }
            Op::CurrentDiagnostics { reply } => {
                let order = self.server_order();
                let files: Vec<(PathBuf, Vec<Diagnostic>)> = self
                    .store
                    .files()
                    .filter(|path| path.starts_with(&self.workspace_root))
                    .map(|path| (path.to_path_buf(), self.store.merged(path, &order)))
                    .filter(|(_, diags)| !diags.is_empty())
                    .collect();
                let _ = reply.send(files);
            }
            Op::ServerDetails { reply } => {
                let statuses = self.status();
                let details = self
                    .servers
                    .iter()
                    .zip(statuses)
                    .map(|(server, status)| ServerDetails {
                        name: status.name,
                        server_id: Some(server.server_id),
                        project: status.project,
                        state: status.state,
                        capabilities: (!server.capabilities.is_null())
                            .then(|| Arc::clone(&server.capabilities)),
                        extensions: server
                            .config
                            .extension_to_language
                            .keys()
                            .cloned()
                            .collect(),
                        available: server.config.resolved_command.is_some()
                            && !matches!(
                                server.state,
                                ServerState::Failed {
                                    permanent: true,
                                    ..
                                }
                            ),
                        pid: status.pid,
                        restarts: status.restarts,
                        stderr_tail: status.stderr_tail,
                        settle_rule: status.settle_rule,
                        diagnostics_off: server.config.diagnostics_off_reason.clone(),
                        formatting_off: server.config.formatting_off_reason.clone(),
                        root_markers: match server.config.workspace_folder {
                            Some(_) => Vec::new(),
                            None => server.config.root_markers.clone(),
                        },
                    })
                    .collect();
                let _ = reply.send(details);
            }
            Op::OpenDocuments { reply } => {
                let _ = reply.send(self.documents.paths());
            }
            _ => log::error!("handle_frontend_op got a non-frontend op"),
        }
    }
}

/// Receiver-side helpers for frontends: blocking round trips through an op sender. Each returns
/// an empty answer when the engine is gone.
///
/// [`Op::DrainPassive`] of `consumer`'s queue, `shown_file`'s whole set counted as delivered
/// first.
pub fn drain_passive(
    op_sender: &LoopSender<Op>,
    consumer: Option<&str>,
    shown_file: Option<&Path>,
) -> Option<DrainedBatch> {
    let (reply, receiver) = crossbeam_channel::bounded(1);
    op_sender
        .send(Op::DrainPassive {
            consumer: consumer.map(str::to_owned),
            shown_file: shown_file.map(Path::to_path_buf),
            reply,
        })
        .ok()?;
    receiver.recv().ok().flatten()
}

/// [`Op::CurrentDiagnostics`], blocking.
pub fn current_diagnostics(op_sender: &LoopSender<Op>) -> Vec<(PathBuf, Vec<Diagnostic>)> {
    let (reply, receiver) = crossbeam_channel::bounded(1);
    if op_sender.send(Op::CurrentDiagnostics { reply }).is_err() {
        return Vec::new();
    }
    receiver.recv().unwrap_or_default()
}

/// [`Op::OpenDocuments`], blocking; empty once the engine is gone.
pub fn open_documents(op_sender: &LoopSender<Op>) -> Vec<PathBuf> {
    let (reply, receiver) = crossbeam_channel::bounded(1);
    if op_sender.send(Op::OpenDocuments { reply }).is_err() {
        return Vec::new();
    }
    receiver.recv().unwrap_or_default()
}

/// [`Op::ServerDetails`], blocking.
pub fn server_details(op_sender: &LoopSender<Op>) -> Vec<ServerDetails> {
    let (reply, receiver) = crossbeam_channel::bounded(1);
    if op_sender.send(Op::ServerDetails { reply }).is_err() {
        return Vec::new();
    }
    receiver.recv().unwrap_or_default()
}
