//! Server-message handling for the event loop: route each [`ServerEvent`] of the current
//! generation, answer server requests, track `$/progress`, and turn published or pulled
//! diagnostics into the [`DiagnosticStore`](crate::diagnostics::DiagnosticStore).
//!
//! A child module of `event_loop` so it can reach the loop's state; it adds no state. Invariants:
//! - Events from an older server generation (a process since restarted) are dropped.
//! - `publishDiagnostics` is queued per (server, document), whatever the URI's spelling, in
//!   arrival order (`pending_publishes.rs`), and converted once per turn in
//!   [`State::flush_publishes`]; a publish for an older document version than lspc sent is dropped
//!   (LSP 3.17 §`publishDiagnostics`).
//! - After shutdown began, server requests are answered with `null` and no edits are applied.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::value::RawValue;
use serde_json::Value;

use super::super::documents::read_text;
use super::super::given_up;
use super::super::server_health;
use super::super::server_requests::{self, SideEffect};
use super::super::settle::{PublishInfo, SettleRule};
use super::State;
use crate::diagnostics::{self, Diagnostic, Origin, Reporter};
use crate::process::{ServerEvent, ServerId};
use crate::text::{LineIndex, PositionEncoding};
use crate::transport::{IncomingMessage, Outgoing};
use crate::uri;

/// The JSON objects of a publish's `diagnostics` or a pull report's `items`, unchanged (anything
/// that is not an object is left out), each as its JSON text; empty when the array is missing.
fn raw_diagnostic_values(list: Option<&Value>) -> Vec<Box<RawValue>> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|item| item.is_object())
                .filter_map(|item| serde_json::value::to_raw_value(item).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The objects [`raw_diagnostic_values`] kept, parsed back (the same `Value`s: the text was
/// written from them).
pub(super) fn parse_raw_diagnostics<'a>(
    raw: impl IntoIterator<Item = &'a Box<RawValue>>,
) -> Vec<Value> {
    raw.into_iter()
        .filter_map(|item| serde_json::from_str(item.get()).ok())
        .collect()
}

impl State {
    pub(super) fn handle_server_event(&mut self, event: ServerEvent) {
        if !matches!(event, ServerEvent::Delivered { .. }) {
            self.drain_delivered();
        }
        match event {
            ServerEvent::Message {
                server_id,
                generation,
                message,
            } => {
                if self.servers[server_id.0 as usize].generation != generation {
                    return;
                }
                self.handle_message(server_id, message);
            }
            ServerEvent::Delivered {
                server_id,
                generation,
                id,
            } => {
                if self.servers[server_id.0 as usize].generation != generation {
                    return;
                }
                // The reader handed the answer to its caller; only the bookkeeping is left.
                self.servers[server_id.0 as usize].supervisor.on_answer();
                self.pending.remove(&(server_id, id));
            }
            ServerEvent::Closed {
                server_id,
                generation,
                reason,
            } => {
                if self.servers[server_id.0 as usize].generation != generation {
                    return;
                }
                self.on_closed(server_id, reason);
            }
        }
    }

    fn handle_message(&mut self, server_id: ServerId, message: IncomingMessage) {
        if matches!(message, IncomingMessage::Response { .. }) {
            // Any answer, even a late one, shows the server is not hung.
            self.servers[server_id.0 as usize].supervisor.on_answer();
        }
        match message {
            IncomingMessage::Request { id, method, params }
                if method == "workspace/applyEdit" && !self.shutting_down =>
            {
                let result = self.answer_apply_edit(server_id, &params);
                if let Some(process) = self.servers[server_id.0 as usize].process() {
                    let _ = process.send(Outgoing::Response {
                        id,
                        result: Ok(result),
                    });
                }
            }
            IncomingMessage::Request { id, method, params } => {
                let server = &mut self.servers[server_id.0 as usize];
                log::debug!("{}: server request {method} {params}", server.config.name);
                let (result, effect) = if self.shutting_down {
                    (Ok(Value::Null), SideEffect::None)
                } else {
                    server_requests::answer(
                        &method,
                        &params,
                        server.config.settings.as_ref(),
                        &server.workspace_folder,
                        &server.root_uri,
                    )
                };
                if method == "window/showMessageRequest" {
                    let text = params
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    log::info!("{}: {text}", server.config.name);
                }
                let refresh = effect == SideEffect::DiagnosticsRefresh;
                match effect {
                    SideEffect::None => {}
                    SideEffect::ProgressCreated(_) => {}
                    SideEffect::PullDiagnosticsRegistered(ids) => {
                        server.pull_registrations.extend(ids);
                        server.pull_diagnostics = true;
                    }
                    SideEffect::Unregistered(ids) => {
                        for id in ids {
                            server.pull_registrations.remove(&id);
                        }
                        server.pull_diagnostics =
                            server.static_pull || !server.pull_registrations.is_empty();
                    }
                    SideEffect::DiagnosticsRefresh => {}
                }
                if let Some(process) = server.process() {
                    let _ = process.send(Outgoing::Response { id, result });
                }
                if method == "workspace/configuration" {
                    // After the answer, on the same pipe: the server has its configuration
                    // before it reads the first didOpen (configuration_gate.rs).
                    self.end_configuration_hold(server_id, "workspace/configuration answered");
                }
                if refresh {
                    self.on_diagnostics_refresh(server_id);
                }
            }
            IncomingMessage::Notification { method, params } => {
                self.handle_notification(server_id, &method, params)
            }
            IncomingMessage::Response {
                id: Some(id),
                result,
            } => match serde_json::to_value(&id).ok().and_then(|id| id.as_i64()) {
                Some(id) => self.on_response(server_id, id as i32, result),
                None => log::debug!("ignoring a reply with id {id}"),
            },
            IncomingMessage::Response { id: None, result } => {
                if let Err(error) = result {
                    log::warn!(
                        "{}: error reply without id: {}",
                        self.servers[server_id.0 as usize].config.name,
                        error.message
                    );
                }
            }
        }
    }

    fn handle_notification(&mut self, server_id: ServerId, method: &str, params: Value) {
        // A field borrow, not a copy: this runs for every notification (publishes included).
        let root = &self.options.config.root;
        let server = &mut self.servers[server_id.0 as usize];
        match method {
            "textDocument/publishDiagnostics" => self.queue_publish(server_id, params),
            "$/progress" => {
                let Some(token) = params.get("token").map(server_requests::token_key) else {
                    return;
                };
                let value = params.get("value").unwrap_or(&Value::Null);
                let workspace_root = root.to_string_lossy();
                if let Some(reason) = server_health::load_failure_began(value, &workspace_root) {
                    log::warn!("{}: {reason}", server.config.name);
                    server.health_error = Some(reason);
                    server.health_error_token = Some(token);
                    server.last_progress_change = Some(Instant::now());
                    return;
                }
                if server.health_error_token.as_ref() == Some(&token) {
                    let previous = server.health_error.as_deref().unwrap_or_default();
                    server.health_error =
                        server_health::load_failure_update(value, previous, &workspace_root);
                    if server.health_error.is_none() {
                        server.health_error_token = None;
                    }
                    server.last_progress_change = Some(Instant::now());
                    return;
                }
                let kind = value.get("kind").and_then(Value::as_str);
                // Tokens the server never created are accepted (pylsp does this, B03).
                match kind {
                    Some("begin") | Some("report") => {
                        server.active_progress.insert(token);
                    }
                    Some("end") => {
                        server.active_progress.remove(&token);
                    }
                    _ => return,
                }
                server.last_progress_change = Some(Instant::now());
            }
            // rust-analyzer's extension (advertised as `experimental.serverStatusNotification`):
            // `{health: "ok"|"warning"|"error", quiescent, message?}`. While not quiescent it is
            // loading the workspace and its pull answers may be empty.
            "experimental/serverStatus" => {
                let quiescent = params
                    .get("quiescent")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                let health = params.get("health").and_then(Value::as_str).unwrap_or("ok");
                let message = params.get("message").and_then(Value::as_str);
                match message {
                    Some(message) if health == "ok" => {
                        log::debug!("{}: {message}", server.config.name)
                    }
                    // Sent again with every change of quiescence: logged once per instance.
                    Some(message) if server.logged_statuses.first_time(health, message) => {
                        log::warn!("{} ({health}): {message}", server.config.name)
                    }
                    _ => {}
                }
                server.health_error = server_health::health_error(health, message);
                server.check_failure = server_health::check_failure(message);
                log::debug!(
                    "{}: serverStatus quiescent {quiescent}, health {health}",
                    server.config.name
                );
                if server.not_quiescent == quiescent {
                    server.not_quiescent = !quiescent;
                    server.last_progress_change = Some(Instant::now());
                }
            }
            "window/logMessage" | "window/showMessage" => {
                let text = params
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let message_type = params.get("type").and_then(Value::as_u64);
                match message_type {
                    Some(1) if method == "window/showMessage" && !is_developer_note(text) => {
                        log::warn!("{}: {text}", server.config.name)
                    }
                    _ => log::debug!("{}: {text}", server.config.name),
                }
                if let Some(status) = server_health::tsserver_exited(server.program, text) {
                    if server.is_running() {
                        let reason = super::super::EngineError::ServerExited {
                            server: server.config.name.clone(),
                            status,
                            stderr_tail: String::new(),
                        };
                        self.fail_server(server_id, reason, false);
                        return;
                    }
                }
                if let Some((uri, reason)) = given_up::gave_up_on(text) {
                    if let Ok(path) = uri::uri_to_path(uri) {
                        let path = uri::canonical(&path);
                        server.given_up.insert(path, (Instant::now(), reason));
                    }
                }
                if method == "window/showMessage" {
                    if let Some(reason) = server_health::no_view(message_type, text) {
                        server.health_error = Some(reason);
                        server.last_progress_change = Some(Instant::now());
                    }
                    if let Some(reason) =
                        server_health::settings_failure(server.program, message_type, text)
                    {
                        server.check_failure = Some(reason);
                    }
                }
            }
            _ => log::trace!("{}: ignoring notification {method}", server.config.name),
        }
    }

    /// Keep only the latest publish per (server, uri) until the end of the turn
    /// ([`Self::flush_publishes`]): a later publish for the same document replaces the earlier
    /// one anyway (LSP 3.17 §`publishDiagnostics`), so a flood costs one conversion per document.
    fn queue_publish(&mut self, server_id: ServerId, params: Value) {
        let at = Instant::now();
        match params.get("uri").and_then(Value::as_str) {
            Some(uri) => {
                let uri = uri.to_owned();
                self.pending_publishes.push(server_id, &uri, params, at);
            }
            None => self.pending_malformed_publishes.push((server_id, params)),
        }
    }

    /// Handle the publishes queued this turn.
    pub(super) fn flush_publishes(&mut self) {
        for (server_id, params) in std::mem::take(&mut self.pending_malformed_publishes) {
            self.on_publish(server_id, &params, Instant::now());
        }
        for (server_id, params, at) in self.pending_publishes.take() {
            self.on_publish(server_id, &params, at);
        }
    }

    fn on_publish(&mut self, server_id: ServerId, params: &Value, at: Instant) {
        let name = self.servers[server_id.0 as usize].config.name.clone();
        let (uri, version, raw) = match diagnostics::parse_publish(params) {
            Ok(parsed) => parsed,
            Err(error) => {
                log::warn!("{name}: malformed publishDiagnostics: {error}");
                return;
            }
        };
        let Ok(path) = uri::uri_to_path(&uri) else {
            log::debug!("{name}: diagnostics for a non-file URI {uri}");
            return;
        };
        let path = uri::canonical(&path);
        log::debug!(
            "{name}: publishDiagnostics {uri} v{version:?}: {} diagnostics",
            raw.len()
        );
        if let (Some(version), Some(doc)) = (version, self.documents.get(&path)) {
            if version < doc.version {
                log::debug!(
                    "{name}: dropped diagnostics for {uri} v{version} (now v{})",
                    doc.version
                );
                return;
            }
            if version > doc.version {
                log::info!(
                    "{name}: diagnostics for {uri} v{version}, ahead of v{}",
                    doc.version
                );
            }
        }
        // A publish for a document lspc opened on it (not, say, tsgo's tsconfig.json diagnostics)
        // shows the server pushes alongside its pull answers.
        let open_here = self
            .documents
            .get(&path)
            .is_some_and(|doc| doc.open_on.contains_key(&server_id));
        let server = &mut self.servers[server_id.0 as usize];
        if server.reopened.remove(&path) && version.is_none() {
            // clangd clears a file's diagnostics without a version on `didClose`; for a file
            // lspc closed and opened again at once, that empty set describes no version of the
            // open text (and, taken as a fresh unversioned publish, would settle it clean).
            log::debug!("{name}: ignored the unversioned publish for re-opened {uri}");
            return;
        }
        if !server.busy() {
            server.read_moments.on_diagnostics();
        }
        if server.settle_rule() == SettleRule::VersionedPublish && version.is_some() {
            if raw.iter().any(describes_stale_preamble) {
                let resends = server
                    .stale_preamble_resends
                    .entry(path.clone())
                    .or_default();
                if *resends < STALE_PREAMBLE_RESENDS {
                    *resends += 1;
                    if self.reopen_as_new_version(server_id, &path) {
                        log::info!(
                            "{name}: {uri} v{}: its preamble predates the open text of a file it \
                             includes (fe_pch_file_overridden): sent again as a new version",
                            version.unwrap_or_default()
                        );
                        return;
                    }
                }
            } else {
                server.stale_preamble_resends.remove(&path);
            }
        }
        let server = &mut self.servers[server_id.0 as usize];
        if server.pull_diagnostics && !server.publishes_with_pull && open_here {
            log::debug!(
                "{name}: publishes besides pull diagnostics: settle rule pull-and-publish from now on"
            );
            server.publishes_with_pull = true;
        }
        server
            .publishes
            .insert(path.clone(), PublishInfo { version, at });
        server.published_since_start = true;
        server.raw_diagnostics.insert(
            (path.clone(), Origin::Published),
            raw_diagnostic_values(params.get("diagnostics")),
        );
        if !server.config.diagnostics {
            return;
        }
        let encoding = server.encoding;
        let converted = self.convert(server_id, &path, &raw, encoding);
        self.record_diagnostics(server_id, &name, &path, Origin::Published, converted);
    }

    /// Records again `server_id`'s last publish for `path` when a settle rule made it stand for
    /// the version lspc sent (tsserver's answers confirmed it, or the server's silence since
    /// the send), though the file's diagnostics were cleared after it arrived: the text was
    /// sent again (an edit, or a change elsewhere that left the file's analysis stale), and
    /// typescript-language-server publishes again only after it has reloaded its project. The
    /// store then held nothing for the server, and the settled file was reported clean (unjs/ufo
    /// in a warm session, after a `tsconfig.json` change). Positions are converted against the
    /// text sent, which the rule says the set describes.
    pub(super) fn restore_standing_publish(&mut self, server_id: ServerId, path: &Path) {
        let server = &self.servers[server_id.0 as usize];
        let name = server.config.name.clone();
        if !server.config.diagnostics
            || self
                .store
                .has_published(Reporter::new(&name, server_id.0), path)
        {
            return;
        }
        let Some(raw) = server
            .raw_diagnostics
            .get(&(path.to_path_buf(), Origin::Published))
        else {
            return;
        };
        let params = serde_json::json!({
            "uri": "file:///",
            "diagnostics": parse_raw_diagnostics(raw),
        });
        let Ok((_, _, parsed)) = diagnostics::parse_publish(&params) else {
            return;
        };
        log::debug!(
            "{name}: its publish for {} stands for the sent text: {} diagnostics recorded again",
            path.display(),
            parsed.len()
        );
        let encoding = server.encoding;
        let converted = self.convert(server_id, path, &parsed, encoding);
        self.record_diagnostics(server_id, &name, path, Origin::Published, converted);
    }

    /// `raw` as lspc's diagnostics of `path`, positions converted from `encoding` (the
    /// server's). bash-language-server 5 gives ShellCheck's columns, which count characters
    /// (code points), as if they were UTF-16 offsets: after an emoji on the line, each column
    /// was one short (`echo "😀😀😀" $x1`: shellcheck 2:12, lspc 2:9). Those are read as the
    /// characters they are.
    fn convert(
        &mut self,
        server_id: ServerId,
        path: &Path,
        raw: &[lsp_types::Diagnostic],
        encoding: PositionEncoding,
    ) -> Vec<Diagnostic> {
        let config = &self.servers[server_id.0 as usize].config;
        let server = config.name.clone();
        let shellcheck_in_characters =
            crate::config::Program::of(config) == Some(crate::config::Program::BashLanguageServer);
        let (text, index) = match self.documents.get(path) {
            Some(doc) => (Arc::clone(&doc.text), Arc::clone(&doc.line_index)),
            None => {
                let entry = self
                    .disk_texts
                    .entry(path.to_path_buf())
                    .or_insert_with(|| {
                        let text = read_text(path, 10 * 1024 * 1024).unwrap_or_default();
                        let index = Arc::new(LineIndex::new(&text));
                        (Arc::from(text), index)
                    });
                (Arc::clone(&entry.0), Arc::clone(&entry.1))
            }
        };
        raw.iter()
            .map(|diagnostic| {
                let encoding = match diagnostic.source.as_deref() {
                    Some("shellcheck") if shellcheck_in_characters => PositionEncoding::Utf32,
                    _ => encoding,
                };
                diagnostics::normalize(&server, path, diagnostic, |position| {
                    index.from_lsp(&text, position, encoding)
                })
            })
            .collect()
    }

    pub(super) fn on_pulled(
        &mut self,
        server_id: ServerId,
        path: &Path,
        version: i32,
        report: &Value,
    ) {
        let server = &self.servers[server_id.0 as usize];
        let name = server.config.name.clone();
        let encoding = server.encoding;
        let diagnostics_enabled = server.config.diagnostics;
        let key = (server_id, path.to_path_buf());
        if !server.busy() {
            self.servers[server_id.0 as usize]
                .read_moments
                .on_diagnostics();
            self.provisional_pulls.remove(&key);
        } else {
            // The server is still working (loading its project, analysing): this answer may
            // be partial, so it stands only until the work ends and the file is asked again.
            log::debug!(
                "{name}: pull answer for {} during $/progress work (or while not quiescent): asked again when it ends",
                path.display()
            );
            self.provisional_pulls.insert(key.clone());
        }
        self.pulled.insert(key, version);
        // LSP 3.17 §`DocumentDiagnosticReport`: "full" carries items; "unchanged" keeps the last.
        if report.get("kind").and_then(Value::as_str) == Some("unchanged") {
            return;
        }
        self.servers[server_id.0 as usize].raw_diagnostics.insert(
            (path.to_path_buf(), Origin::Pulled),
            raw_diagnostic_values(report.get("items")),
        );
        if !diagnostics_enabled {
            return;
        }
        let items: Vec<lsp_types::Diagnostic> = report
            .get("items")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| serde_json::from_value(item.clone()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let converted = self.convert(server_id, path, &items, encoding);
        self.record_diagnostics(server_id, &name, path, Origin::Pulled, converted);
    }
}

/// Whether a `window/showMessage` error is a note for the server's own developers: a
/// rust-analyzer built from source (as `cargo install ra_ap_rust-analyzer` builds it) shows its
/// performance notes as errors (`overly long loop turn took 177ms (event handling took …)`, its
/// `poke_rust_analyzer_developer`). They say nothing of the user's code or the server's health
/// and the user can do nothing about them, so they are logged at debug level, not as warnings.
fn is_developer_note(text: &str) -> bool {
    text.starts_with("overly long loop turn took ")
}

/// How many times in a row lspc sends a file again for a publish [`describes_stale_preamble`]:
/// clangd builds a fresh preamble for an opened file, so one resend is expected to do; a
/// second publish carrying it is then reported as it is.
const STALE_PREAMBLE_RESENDS: u8 = 2;

/// Whether a clangd diagnostic says the publish's analysis used a preamble built before the
/// open text of a file it includes changed: `fe_pch_file_overridden` ("File 'lib.h' from the
/// precompiled header has been overridden"). clangd reused the preamble for the version lspc
/// sent while another `didChange` or `didOpen` changed a header under it, and it publishes
/// nothing more for that version (CI, a rename that changed a header and its callers: 1 run
/// in 3 under load), so that publish is not the version's final answer
/// ([`SettleRule::VersionedPublish`]).
fn describes_stale_preamble(diagnostic: &lsp_types::Diagnostic) -> bool {
    matches!(
        &diagnostic.code,
        Some(lsp_types::NumberOrString::String(code)) if code == "fe_pch_file_overridden"
    )
}

#[cfg(test)]
mod tests {
    use super::{is_developer_note, parse_raw_diagnostics, raw_diagnostic_values};
    use serde_json::json;

    #[test]
    fn raw_diagnostics_kept_as_text_parse_back_to_the_same_objects() {
        // ruff's `data` (a fix with edits), a float and a big integer, unicode, a non-object.
        let list = json!([
            {"range": {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 9}},
             "message": "`os` imported but unused — F401", "code": "F401", "severity": 2,
             "data": {"fix": {"edits": [{"newText": ""}]}, "noqa_row": 1, "score": 0.1,
                      "id": 18446744073709551615u64, "tags": null}},
            "not an object",
            {"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 1}},
             "message": "second"}
        ]);
        let raw = raw_diagnostic_values(Some(&list));
        assert_eq!(raw.len(), 2);
        assert_eq!(
            parse_raw_diagnostics(&raw),
            [list[0].clone(), list[2].clone()]
        );
        assert!(raw_diagnostic_values(None).is_empty());
    }

    #[test]
    fn developer_notes_are_not_warnings() {
        assert!(is_developer_note(
            "overly long loop turn took 177.30ms (event handling took 176.1ms): PrimeCaches(End { cancelled: false })"
        ));
        assert!(!is_developer_note("Failed to load workspaces."));
        assert!(!is_developer_note(
            "rust-analyzer: overly long loop turn took 1s"
        ));
    }
}
