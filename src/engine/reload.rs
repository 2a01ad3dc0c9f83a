//! Configuration reload (issue 4: "servers whose configuration changed are shut down and start
//! again lazily; others keep running"), for long-lived frontends such as `lspc mcp`.
//!
//! A child module of the event loop (it reads the loop's state directly); the loop calls it for
//! [`Op::Reload`](crate::engine::Op::Reload) and
//! [`Op::FilesChanged`](crate::engine::Op::FilesChanged) only.
//!
//! A project configuration file that changed on disk (`pyproject.toml`, `tsconfig.json`) is
//! announced to the servers as `workspace/didChangeWatchedFiles`, but a server that applies it
//! late, on a timer of its own ([`Program::reloads_configuration_late`]: pyright, tsserver),
//! answers the next pull or publish with its old configuration, and a warm check right after
//! an agent turned on `strict` said clean. Those servers' instances are restarted instead (the
//! same stop and fresh slot as a reload), before the change is announced to the others, so the
//! request that asked for the scan is answered by a server that read the new file.
//!
//! Invariants:
//! - A [`ServerId`] is a slot index and never changes meaning: the new configuration is aligned to
//!   the old configured servers by name ([`align`]), and a change to a server applies to every
//!   slot of it (its workspace-root instance and its project instances, see `instances.rs`). Unchanged servers keep their slot and their process;
//!   changed ones keep their slot, are stopped, and start again lazily with the new config;
//!   removed ones keep a tombstone slot (no extensions, no command: never routed to) marked
//!   `failed: removed by a configuration reload`; added ones get new slots at the end.
//! - Routing uses the aligned configuration, so a removed server is never chosen again. Within an
//!   extension, servers are tried in slot order, so a reload that only reorders servers does not
//!   change which one is primary (a documented limitation).
//! - Stopping is the LSP sequence (`shutdown`, `exit`, then close/SIGTERM/SIGKILL), bounded by the
//!   server's shutdown timeout; other servers' events that arrive meanwhile are handled normally.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crossbeam_channel::Receiver;

use super::{Purpose, Server, ServerState, State};
use crate::config::{Config, ConfigurationReads, ServerConfig};
use crate::engine::{EngineError, WatchedChange};
use crate::process::{ServerEvent, ServerId};

/// Why a reload stops a server (the status its waiting requests fail with).
const RELOAD: &str = "by a configuration reload";

/// What a reload did, by server name (each list in slot order). Serialisable: the session wire
/// carries it (`reload` op).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReloadReport {
    /// Same configuration: still running (or still not started).
    pub unchanged: Vec<String>,
    /// Configuration changed: stopped, starts again lazily with the new configuration.
    pub restarted: Vec<String>,
    /// No longer configured: stopped for good.
    pub removed: Vec<String>,
    /// Newly configured: available, started lazily.
    pub added: Vec<String>,
}

impl ReloadReport {
    /// Whether anything changed.
    pub fn is_empty(&self) -> bool {
        self.restarted.is_empty() && self.removed.is_empty() && self.added.is_empty()
    }
}

/// Why a change of `path` restarts `server`'s running instance (see the module doc), or `None`
/// when it does not. The file must lie in the instance's workspace folder or in a folder above
/// it (a configuration the server finds by looking up, for a program that looks up:
/// [`crate::config::Program::looks_up_configuration`]), and be one that its program applies
/// late; or one it reads ([`crate::config::Program::reads_configuration`]: ruff) when the
/// instance could not resolve its configuration (ruff says nothing when a reload succeeds), or
/// when it lies above the workspace folder: ruff 0.17.6 told of an edited `../ruff.toml` kept
/// its old rules, where `ruff check` applies the new ones.
fn restarts_for_change(server: &Server, path: &Path) -> Option<&'static str> {
    let program = server.program?;
    let name = path.file_name()?.to_str()?;
    let inside = path.starts_with(&server.workspace_folder);
    let above = !inside
        && program.looks_up_configuration()
        && path
            .parent()
            .is_some_and(|folder| server.workspace_folder.starts_with(folder));
    if !inside && !above {
        return None;
    }
    if program.reads_configuration(name) && server.check_failure.is_some() {
        Some("the server could not resolve its configuration")
    } else if program.reloads_configuration_late(name) {
        Some("the server applies it late")
    } else if program.reads_configuration(name) && above {
        Some("the server applies a configuration above its workspace folder only as it starts")
    } else {
        None
    }
}

/// What happens to one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotChange {
    Unchanged,
    Restart,
    Remove,
    /// Already a tombstone from an earlier reload.
    StillRemoved,
    Add,
}

/// A slot's config after its server was removed: no extensions and no command, so it is never
/// routed to or started.
fn tombstone(server: &ServerConfig) -> ServerConfig {
    let mut server = server.clone();
    server.extension_to_language.clear();
    server.resolved_command = None;
    server
}

fn is_tombstone(server: &ServerConfig) -> bool {
    server.extension_to_language.is_empty() && server.resolved_command.is_none()
}

/// Align `new` to the slots of `old` by server name: old slots first (new config, or a tombstone
/// when removed), then servers new by name. Returns the aligned config (everything but `servers`
/// taken from `new`) and each slot's change, index-aligned with its `servers`.
pub(super) fn align(old: &[ServerConfig], mut new: Config) -> (Config, Vec<SlotChange>) {
    let mut servers = Vec::with_capacity(old.len() + new.servers.len());
    let mut plan = Vec::with_capacity(old.len() + new.servers.len());
    for old_server in old {
        match new.servers.iter().find(|s| s.name == old_server.name) {
            Some(server) => {
                plan.push(if server == old_server {
                    SlotChange::Unchanged
                } else {
                    SlotChange::Restart
                });
                servers.push(server.clone());
            }
            None if is_tombstone(old_server) => {
                plan.push(SlotChange::StillRemoved);
                servers.push(old_server.clone());
            }
            None => {
                plan.push(SlotChange::Remove);
                servers.push(tombstone(old_server));
            }
        }
    }
    for server in &new.servers {
        if !old.iter().any(|o| o.name == server.name) {
            plan.push(SlotChange::Add);
            servers.push(server.clone());
        }
    }
    new.servers = servers;
    (new, plan)
}

impl State {
    /// [`Op::Reload`](crate::engine::Op::Reload): apply `config` (see the module doc).
    pub(super) fn reload(
        &mut self,
        config: Config,
        event_receiver: &Receiver<ServerEvent>,
    ) -> ReloadReport {
        let (aligned, plan) = align(&self.options.config.servers, config);
        // `plan` is indexed by configured server; each has one slot per project instance.
        let n_configured = self.options.config.servers.len();
        let stopping: Vec<ServerId> = plan
            .iter()
            .enumerate()
            .filter(|(index, change)| {
                matches!(change, SlotChange::Restart | SlotChange::Remove) && *index < n_configured
            })
            .flat_map(|(index, _)| self.instances.slots_of(index))
            .collect();
        self.stop_servers(&stopping, event_receiver, "for a configuration reload");
        let mut report = ReloadReport::default();
        for (index, change) in plan.iter().enumerate() {
            let config = aligned.servers[index].clone();
            let name = config.name.clone();
            match change {
                SlotChange::Unchanged => report.unchanged.push(name),
                SlotChange::StillRemoved => {}
                SlotChange::Restart => {
                    for slot in self.instances.slots_of(index) {
                        self.replace_slot(slot.0 as usize, config.clone(), None, RELOAD);
                    }
                    report.restarted.push(name);
                }
                SlotChange::Remove => {
                    let reason = EngineError::Spawn {
                        server: name.clone(),
                        message: "removed by a configuration reload".to_owned(),
                    };
                    for slot in self.instances.slots_of(index) {
                        self.replace_slot(
                            slot.0 as usize,
                            config.clone(),
                            Some(reason.clone()),
                            RELOAD,
                        );
                    }
                    report.removed.push(name);
                }
                SlotChange::Add => {
                    let slot = ServerId(self.servers.len() as u32);
                    let server = Server::new_at(&self.options, slot, &config, index, None);
                    self.servers.push(server);
                    self.instances.add_default(slot);
                    report.added.push(name);
                }
            }
        }
        self.options.config = aligned;
        self.instances.forget_lookups();
        log::info!(
            "configuration reloaded: restarted {:?}, removed {:?}, added {:?}, unchanged {:?}",
            report.restarted,
            report.removed,
            report.added,
            report.unchanged
        );
        report
    }

    /// [`Op::FilesChanged`](crate::engine::Op::FilesChanged): restart the running instances
    /// that read one of the changed files late (see the module doc), then announce the changes
    /// to the servers still running. Each of `rewritten` (a configuration file written again
    /// with the bytes the scan that began at its `Instant` saw) joins the changes only when a
    /// server that would hear of it may have read it since ([`Self::rewrite_reader`]).
    pub(super) fn files_changed(
        &mut self,
        mut changes: Vec<(PathBuf, WatchedChange)>,
        rewritten: &[(PathBuf, Instant)],
        event_receiver: &Receiver<ServerEvent>,
    ) {
        for (path, since) in rewritten {
            if let Some(reader) = self.rewrite_reader(path, *since) {
                log::info!(
                    "{} was written again with the bytes it had, but {reader} may have read it \
                     since the previous scan: taken as changed",
                    path.display()
                );
                changes.push((path.clone(), WatchedChange::Changed));
            } else {
                log::info!(
                    "{} was written again with the bytes it had, and no server read it since: \
                     nothing restarted or told",
                    path.display()
                );
            }
        }
        if !rewritten.is_empty() {
            crate::sorting::sort_by(&mut changes, |a, b| a.0.cmp(&b.0));
        }
        if changes.is_empty() {
            return;
        }
        let changes = changes.as_slice();
        let mut restarting = Vec::new();
        for server in &self.servers {
            if !server.is_running() {
                continue;
            }
            let Some(program) = server.program else {
                continue;
            };
            let changed = changes
                .iter()
                .find_map(|(path, _)| restarts_for_change(server, path).map(|why| (path, why)));
            // A server that ignores watched-file events is sent each changed file open and
            // closed (`State::announce_watched_changes`), up to a bound.
            let written = match program.ignores_watched_files() {
                true => self.written_unopened(changes, server).len(),
                false => 0,
            };
            let relinked = match program.ignores_watched_files() {
                true => crate::engine::tsserver_reload::needs_restart(changes)
                    .filter(|folder| folder.starts_with(&server.workspace_folder)),
                false => None,
            };
            if let (None, Some(folder)) = (changed, relinked) {
                log::info!(
                    "{}: restarting: a linked package in {} changed, and it keeps the files it \
                     resolved through the old link",
                    server.config.name,
                    folder.display()
                );
                restarting.push(server.server_id);
                continue;
            }
            if changed.is_none() && written > super::frontend_events::MAX_OPENED_FOR_A_CHANGE {
                log::info!(
                    "{}: restarting: {written} of its files changed on disk, and it ignores \
                     watched-file events",
                    server.config.name
                );
                restarting.push(server.server_id);
                continue;
            }
            if let Some((path, why)) = changed {
                log::info!(
                    "{}: restarting: {} changed, and {why}",
                    server.config.name,
                    path.display()
                );
                restarting.push(server.server_id);
            }
        }
        if !restarting.is_empty() {
            self.stop_servers(
                &restarting,
                event_receiver,
                "for a change of its configuration file",
            );
            for server_id in restarting {
                let index = server_id.0 as usize;
                let config = self.servers[index].config.clone();
                self.replace_slot(
                    index,
                    config,
                    None,
                    "because its configuration file changed",
                );
            }
        }
        self.announce_watched_changes(changes);
    }

    /// The server that makes `path`, written again with the bytes the scan that began at
    /// `since` saw, count as changed: a running instance that would be restarted for it or told
    /// of it and may have read it since (`engine/configuration_reads.rs`); `None` when there is
    /// none.
    fn rewrite_reader(&self, path: &Path, since: Instant) -> Option<String> {
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
            return Some("a server".to_owned());
        };
        let hearing = self
            .servers
            .iter()
            // A starting instance has given no diagnostics yet, so it counts.
            .filter(|server| server.is_running() || server.is_starting())
            .filter(|server| {
                restarts_for_change(server, path).is_some() || self.hears_of(server, path)
            })
            .map(|server| {
                let reads = server
                    .program
                    .map_or(ConfigurationReads::AnyTime, |program| {
                        program.configuration_reads(name)
                    });
                let working = server.busy()
                    || server
                        .last_progress_change
                        .is_some_and(|changed| changed >= since);
                (&server.config.name, &server.read_moments, reads, working)
            });
        super::super::configuration_reads::first_reader(since, hearing).cloned()
    }

    /// Put a fresh server for `config` in slot `index` (not started; `failed` when given), after
    /// failing the requests that waited on the old one (`why` it stopped) and forgetting its
    /// per-server state. The diagnostics waits of files it was to check run again: on the new
    /// server, started at once, when it is a restart (helper-69: a check in flight when a
    /// configuration change restarted pyright failed with `pyright: crashed (stopped because
    /// its configuration file changed)`), or they fail with the removal's reason.
    fn replace_slot(
        &mut self,
        index: usize,
        config: ServerConfig,
        failed: Option<EngineError>,
        why: &str,
    ) {
        let server_id = ServerId(index as u32);
        let old_name = self.servers[index].config.name.clone();
        let reason = EngineError::Restarted {
            server: old_name.clone(),
            why: why.to_owned(),
        };
        for purpose in self.take_pending_of(server_id) {
            if let Purpose::Frontend { reply, .. } = purpose {
                reply.send(Err(reason.clone()));
            }
        }
        let (kept, dropped): (Vec<_>, Vec<_>) = std::mem::take(&mut self.retries)
            .into_iter()
            .partition(|retry| retry.server_id != server_id);
        self.retries = kept;
        for retry in dropped {
            if let Purpose::Frontend { reply, .. } = retry.purpose {
                reply.send(Err(reason.clone()));
            }
        }
        self.pulled.retain(|(id, _), _| *id != server_id);
        self.pulls_in_flight.retain(|(id, _)| *id != server_id);
        self.provisional_pulls.retain(|(id, _)| *id != server_id);
        self.stale_pulls.retain(|(id, _)| *id != server_id);
        self.pending_publishes.remove_server(server_id);
        for path in self.documents.open_on(server_id) {
            if let Some(doc) = self.documents.get_mut(&path) {
                doc.open_on.remove(&server_id);
            }
        }
        let now = Instant::now();
        let mut rerun = false;
        for job in &mut self.jobs {
            for wait in &mut job.active {
                if !wait.servers.contains(&server_id) {
                    continue;
                }
                if failed.is_some() {
                    wait.done
                        .entry(server_id)
                        .or_insert_with(|| Err(format!("{old_name}: removed {why}")));
                    continue;
                }
                // Even when this server had settled the file: its findings are forgotten
                // below, and were the old configuration's.
                if std::mem::take(&mut wait.pinned) {
                    if let Some(doc) = self.documents.get_mut(&wait.path) {
                        doc.pins = doc.pins.saturating_sub(1);
                    }
                }
                wait.deadline = None;
                wait.done.clear();
                wait.start_deadline = now + self.options.startup_timeout + wait.timeout;
                rerun = true;
            }
        }
        self.store.clear_server(&old_name);
        let old = &self.servers[index];
        let generation = old.generation + 1;
        let mut server = Server::new_at(
            &self.options,
            server_id,
            &config,
            old.config_index,
            old.project_root.clone(),
        );
        server.generation = generation;
        if let Some(reason) = failed {
            server.state = ServerState::Failed {
                reason,
                permanent: true,
            };
        }
        self.servers[index] = server;
        if rerun {
            log::info!("{old_name}: started again at once: diagnostics in flight wait for it");
            self.ensure_started(server_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn server(name: &str, command: &str) -> ServerConfig {
        ServerConfig {
            resolved_command: Some(PathBuf::from(format!("/bin/{command}"))),
            extension_to_language: [(".py".to_owned(), "python".to_owned())]
                .into_iter()
                .collect(),
            ..crate::config::test_entry(name, command)
        }
    }

    fn config(servers: Vec<ServerConfig>) -> Config {
        Config {
            root: PathBuf::from("/w"),
            servers,
            errors: Vec::new(),
            conflicts: Vec::new(),
            notes: Vec::new(),
            skipped: Vec::new(),
        }
    }

    #[test]
    fn new_configs_align_to_old_slots_by_name() {
        use SlotChange::*;
        let check = |old: Vec<ServerConfig>,
                     new: Vec<ServerConfig>,
                     expected: &[(&str, SlotChange, bool)]| {
            let (aligned, plan) = align(&old, config(new));
            let actual: Vec<(&str, SlotChange, bool)> = aligned
                .servers
                .iter()
                .zip(plan)
                .map(|(s, change)| (s.name.as_str(), change, is_tombstone(s)))
                .collect();
            assert_eq!(actual, expected);
        };
        let a = server("a", "fx");
        let b = server("b", "fx");
        let a2 = server("a", "other");
        let c = server("c", "fx");
        check(
            vec![a.clone(), b.clone()],
            vec![a.clone(), b.clone()],
            &[("a", Unchanged, false), ("b", Unchanged, false)],
        );
        check(
            vec![a.clone(), b.clone()],
            vec![b.clone(), a2.clone()],
            &[("a", Restart, false), ("b", Unchanged, false)],
        );
        check(
            vec![a.clone(), b.clone()],
            vec![c.clone(), b.clone()],
            &[
                ("a", Remove, true),
                ("b", Unchanged, false),
                ("c", Add, false),
            ],
        );
        check(
            vec![tombstone(&a), b.clone()],
            vec![b.clone()],
            &[("a", StillRemoved, true), ("b", Unchanged, false)],
        );
        check(
            vec![tombstone(&a), b.clone()],
            vec![a.clone(), b.clone()],
            &[("a", Restart, false), ("b", Unchanged, false)],
        );
        check(vec![], vec![c.clone()], &[("c", Add, false)]);
    }
}
