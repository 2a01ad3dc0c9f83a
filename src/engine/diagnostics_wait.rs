//! Diagnostics ops in the event loop: a [`DiagnosticsJob`] per `Op::Diagnostics`, advanced once
//! per turn, with one [`FileWait`] per file in flight.
//!
//! A child module of `event_loop` so it can reach the loop's state. Invariants:
//! - At most [`FILES_IN_FLIGHT`] files per job are synced and pinned at once (below the LRU bound);
//!   a finished wait unpins its document.
//! - At most [`instances_at_once`] instances of one server have files of one job in flight
//!   (`instance_gate`); a file that would engage one more waits in the job's `deferred`.
//! - A file's settle timeout counts from its sync, not from the op: servers start first, bounded
//!   by the startup timeout.
//! - Pull servers are asked once per document version; push servers settle by
//!   [`push_settled`] on the [`PushState`] from [`State::push_state`].
//! - A job answers once, with results in the order the op listed its paths.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::super::instance_gate::{instances_at_once, Deferred, Engaged};
use super::super::readiness_scope::ReadinessScope;
use super::super::settle::{push_settled, pushed_part_settled, PushState, SettleRule};
use super::super::tsserver_probe::{self, ProbeOutcome};
use super::super::{DiagnosticsOutcome, FileDiagnostics};
use super::{Purpose, State};
use crate::config::{builtin_publishes_diagnostics, ConfigOrigin};
use crate::diagnostics::Origin;
use crate::engine::not_analysed::{said_not_analysed, schema_not_loaded};
use crate::process::ServerId;

/// How many files one diagnostics op keeps in flight (below the 50-document LRU bound).
pub(super) const FILES_IN_FLIGHT: usize = 32;

/// A file at least this large (bytes) is sent only once every file before it is done, so a
/// server busy with it cannot hold up the answers for small files (issue 10: an 8 MB generated
/// module made pyright time out on every other file).
const LARGE_FILE_BYTES: u64 = 512 * 1024;

/// One diagnostics op in progress.
pub(super) struct DiagnosticsJob {
    pub(super) queue: std::collections::VecDeque<PathBuf>,
    /// Files taken from `queue` that wait for an instance of their server to have room.
    pub(super) deferred: Deferred,
    pub(super) active: Vec<FileWait>,
    pub(super) results: Vec<FileDiagnostics>,
    pub(super) order: Vec<PathBuf>,
    pub(super) timeout: Duration,
    pub(super) reply: Sender<Vec<FileDiagnostics>>,
    /// [`Op::AnalysisWait`](super::super::Op::AnalysisWait): every push server gets the quiet
    /// period, so work a server announces just after its final publish is waited for too (on
    /// clangd and gopls once per unit and process, [`FileWait::scope`]).
    pub(super) readiness: bool,
    /// [`Op::Diagnostics`](super::super::Op::Diagnostics) (an agent's or a script's question
    /// about some files, likely followed by others): a file's wait sends again the other
    /// documents analysed against an older project ([`State::resend_stale_documents`]). Not
    /// for `lspc check`, whose files all wait at once, nor for a query's readiness wait.
    pub(super) resend_stale: bool,
    /// Configured servers (index in the config's list) not to ask about a file
    /// ([`crate::engine::Op::DiagnosticsLeavingOut`]).
    pub(super) leave_out: HashMap<PathBuf, Vec<ServerId>>,
    /// Why a file's servers were left out (`ruff never checks it: it is in ruff's exclude`):
    /// the file's `NotChecked` message when that leaves it none, else its result's
    /// `not_checked_by`.
    pub(super) why_left_out: HashMap<PathBuf, String>,
    /// The queued files that are at least [`LARGE_FILE_BYTES`] long.
    pub(super) large: std::collections::HashSet<PathBuf>,
    /// Gets a copy of each file's result when it is finished.
    pub(super) progress: Option<Sender<FileDiagnostics>>,
    /// `timeout` bounds the servers' start too, not only the settling after the sync: for
    /// [`Op::Diagnostics`](super::super::Op::Diagnostics), whose `--timeout` "bounds server
    /// start" as a query's does (a trial: `lspc diagnostics --timeout 5` with a server that never
    /// answers `initialize` took the 30 s of its startup timeout).
    pub(super) start_within_timeout: bool,
}

impl DiagnosticsJob {
    pub(super) fn new(
        paths: Vec<PathBuf>,
        leave_out: HashMap<PathBuf, Vec<ServerId>>,
        timeout: Duration,
        reply: Sender<Vec<FileDiagnostics>>,
    ) -> DiagnosticsJob {
        // Smallest first: a slow large file is then the last thing each server works on. The
        // answer keeps the op's order (`order`).
        let mut sized: Vec<(u64, PathBuf)> = paths
            .iter()
            .map(|path| (std::fs::metadata(path).map_or(0, |m| m.len()), path.clone()))
            .collect();
        crate::sorting::sort_by_key(&mut sized, |(size, _)| *size);
        let large = sized
            .iter()
            .filter(|(size, _)| *size >= LARGE_FILE_BYTES)
            .map(|(_, path)| path.clone())
            .collect();
        DiagnosticsJob {
            queue: sized.into_iter().map(|(_, path)| path).collect(),
            deferred: Deferred::default(),
            active: Vec::new(),
            results: Vec::new(),
            order: paths,
            timeout,
            reply,
            leave_out,
            why_left_out: HashMap::new(),
            large,
            progress: None,
            start_within_timeout: false,
            readiness: false,
            resend_stale: false,
        }
    }

    /// A query's readiness wait on `path` ([`Op::AnalysisWait`](super::super::Op::AnalysisWait),
    /// and a request retried on a restarted server): one file, [`DiagnosticsJob::readiness`] set.
    pub(super) fn analysis(
        path: PathBuf,
        timeout: Duration,
        reply: Sender<Vec<FileDiagnostics>>,
    ) -> DiagnosticsJob {
        let mut job = DiagnosticsJob::new(vec![path], HashMap::new(), timeout, reply);
        job.readiness = true;
        job
    }

    /// Fails at once each queued file that a server configured for it cannot check because its
    /// command is missing ([`crate::config::Config::unavailable_for`]): the other servers'
    /// diagnostics, or none, are not the file's. For `Op::Diagnostics` (`lspc diagnostics` and
    /// batch's, the MCP `diagnostics` tool; a new user's trial: with pyright's command missing beside ruff,
    /// a file was "clean", exit 0); `lspc check` keeps the others' findings and reports the
    /// server's failure.
    pub(super) fn fail_where_a_server_cannot_start(&mut self, config: &crate::config::Config) {
        let mut failed = Vec::new();
        self.queue
            .retain(|path| match config.unavailable_for(path).next() {
                Some(server) => {
                    let message = super::super::EngineError::command_not_found(server).to_string();
                    failed.push((path.clone(), message));
                    false
                }
                None => true,
            });
        for (path, message) in failed {
            self.finish(FileDiagnostics {
                path,
                outcome: DiagnosticsOutcome::Failed(message),
                not_checked_by: None,
            });
        }
    }

    /// Records one file's result (and sends it to `progress`).
    fn finish(&mut self, result: FileDiagnostics) {
        if let Some(progress) = &self.progress {
            if progress.send(result.clone()).is_err()
                && (!self.queue.is_empty() || !self.deferred.is_empty())
            {
                // Nobody reads the results any more (a session's `lspc check` client was
                // killed): no more files are opened for it. A new user's trial on madler/zlib
                // saw the session go on starting servers for the abandoned check.
                log::info!(
                    "the caller of a diagnostics wait is gone: {} file(s) not started",
                    self.queue.len() + self.deferred.len()
                );
                self.queue.clear();
                self.deferred = Deferred::default();
            }
        }
        self.results.push(result);
    }

    /// Whether the next queued file may be taken now: the window has room, and a large file waits
    /// until it would be alone. (A file the instance gate defers is taken from `deferred` when a
    /// file finishes, not by this.)
    pub(super) fn may_start_next(&self) -> bool {
        let Some(next) = self.queue.front() else {
            return false;
        };
        self.active.len() < FILES_IN_FLIGHT
            && (self.active.is_empty() || !self.large.contains(next))
    }

    /// Whether every file has its result.
    fn is_finished(&self) -> bool {
        self.queue.is_empty() && self.active.is_empty() && self.deferred.is_empty()
    }
}

/// Why a file's diagnostics wait could not begin.
#[derive(Debug)]
pub(super) enum FileWaitError {
    /// Every server serving the file was left out of it (the job's `leave_out`).
    LeftOut,
    /// No server gives the file diagnostics; the message says why.
    Unserved(String),
}

/// One file's diagnostics wait.
pub(super) struct FileWait {
    pub(super) path: PathBuf,
    pub(super) servers: Vec<ServerId>,
    /// How long the servers may take to settle, counted from the sync.
    pub(super) timeout: Duration,
    /// Set once every server has started (or failed) and the document was synced.
    pub(super) deadline: Option<Instant>,
    pub(super) start_deadline: Instant,
    /// Per server: settled (pull answered / push settled) or failed.
    pub(super) done: BTreeMap<ServerId, Result<(), String>>,
    /// Copied from the job's `readiness`.
    pub(super) readiness: bool,
    /// A readiness wait on a server with a [`ReadinessScope`]: that kind and the folder of the
    /// file's unit (`None`: in none), read once such a server is asked; `None` until then.
    pub(super) scope: Option<(ReadinessScope, Option<PathBuf>)>,
    /// Copied from the job's `resend_stale`.
    pub(super) resend_stale: bool,
    pub(super) pinned: bool,
}

impl State {
    /// For a diagnostics op on `paths` (canonical): the configured servers that never check a
    /// file though they serve it (ruff and a file in its `exclude`: its server answers nothing
    /// for such a file, so its empty answer would be a "clean" nothing checked), and for each
    /// such file why (`ruff never checks it: it is in ruff's exclude`). Reads only those
    /// servers' configurations, and nothing when none is configured.
    pub(super) fn never_checked(
        &self,
        paths: &[PathBuf],
    ) -> (HashMap<PathBuf, Vec<ServerId>>, HashMap<PathBuf, String>) {
        let config = &self.options.config;
        let mut leave_out = HashMap::new();
        let mut why = HashMap::new();
        let mut projects = None;
        for path in paths {
            let mut left_out = Vec::new();
            let mut reasons: Vec<String> = Vec::new();
            for index in config.servers_for_path(path) {
                if !config.servers[index].diagnostics {
                    continue;
                }
                let projects = projects.get_or_insert_with(|| {
                    crate::project::ProjectFiles::load_never_checking(&config.root, &config.servers)
                });
                if let Some(reason) = projects.never_checks(index, path) {
                    left_out.push(ServerId(index as u32));
                    let name = &config.servers[index].name;
                    reasons.push(format!("{name} never checks it: it is {reason}"));
                }
            }
            if !left_out.is_empty() {
                why.insert(path.clone(), reasons.join("; "));
                leave_out.insert(path.clone(), left_out);
            }
        }
        (leave_out, why)
    }

    pub(super) fn advance_jobs(&mut self, now: Instant) {
        let mut jobs = std::mem::take(&mut self.jobs);
        for job in &mut jobs {
            // A finished file may free an instance that deferred files wait for: fill again
            // until a round finishes nothing or nothing waits.
            loop {
                let mut engaged = self.engaged_instances(job);
                self.fill_window(job, &mut engaged, now);
                let finished_any = self.advance_active(job, now);
                if !finished_any || job.deferred.is_empty() {
                    break;
                }
            }
        }
        for job in jobs {
            if job.is_finished() {
                let mut results = job.results;
                let position: HashMap<&PathBuf, usize> = job
                    .order
                    .iter()
                    .enumerate()
                    .map(|(index, path)| (path, index))
                    .collect();
                crate::sorting::sort_by_key(&mut results, |result| {
                    position.get(&result.path).copied()
                });
                let _ = job.reply.send(results);
            } else {
                self.jobs.push(job);
            }
        }
    }

    /// The instances with a file of `job` in flight (`instance_gate`).
    fn engaged_instances(&self, job: &DiagnosticsJob) -> Engaged {
        let mut engaged = Engaged::new(instances_at_once());
        for wait in &job.active {
            for &slot in &wait.servers {
                engaged.engage(slot, self.servers[slot.0 as usize].config_index);
            }
        }
        engaged
    }

    /// Starts files until the job's window is full: deferred files whose instance has room
    /// first (they came first in the queue), then the queue's, deferring each file whose
    /// instance has none.
    fn fill_window(&mut self, job: &mut DiagnosticsJob, engaged: &mut Engaged, now: Instant) {
        while job.active.len() < FILES_IN_FLIGHT {
            let alone = job.active.is_empty();
            let servers = &self.servers;
            let large = &job.large;
            let deferred = job.deferred.pop_first(|slot, path| {
                engaged.admits(slot, servers[slot.0 as usize].config_index)
                    && (alone || !large.contains(path))
            });
            let path = match deferred {
                Some(path) => path,
                None if job.may_start_next() => match job.queue.pop_front() {
                    Some(path) => path,
                    None => break,
                },
                None => break,
            };
            let leave_out = job.leave_out.get(&path).map(Vec::as_slice).unwrap_or(&[]);
            let slots = self.diagnostic_slots(&path, leave_out);
            if let Some(&slot) = slots
                .iter()
                .find(|&&slot| !engaged.admits(slot, self.servers[slot.0 as usize].config_index))
            {
                job.deferred.push(slot, path);
                continue;
            }
            let begun =
                self.begin_file_wait(&path, slots, leave_out, job.timeout, job.readiness, now);
            match begun {
                Ok(mut wait) => {
                    wait.resend_stale = job.resend_stale;
                    if job.start_within_timeout {
                        wait.start_deadline = wait.start_deadline.min(now + job.timeout);
                    }
                    for &slot in &wait.servers {
                        engaged.engage(slot, self.servers[slot.0 as usize].config_index);
                    }
                    job.active.push(wait);
                }
                Err(FileWaitError::LeftOut) => {
                    let message = match job.why_left_out.remove(&path) {
                        Some(reasons) => format!(
                            "{} not checked: {reasons} (the server does not lint an excluded \
                             file even when it is open)",
                            file_name(&path)
                        ),
                        None => format!(
                            "every server for {} is left out of it by its project configuration",
                            file_name(&path)
                        ),
                    };
                    job.finish(FileDiagnostics {
                        path,
                        outcome: DiagnosticsOutcome::NotChecked(message),
                        not_checked_by: None,
                    });
                }
                Err(FileWaitError::Unserved(message)) => {
                    // A configured server whose command is missing is a server failure; no
                    // server for the extension (or diagnostics turned off) is not.
                    let broken_server = self.options.config.servers_for_path(&path).is_empty()
                        && self.options.config.claims(&path);
                    let outcome = if broken_server {
                        DiagnosticsOutcome::Failed(message)
                    } else {
                        DiagnosticsOutcome::NotChecked(message)
                    };
                    job.finish(FileDiagnostics {
                        path,
                        outcome,
                        not_checked_by: None,
                    });
                }
            }
        }
    }

    /// Advances the job's files in flight; whether any finished.
    fn advance_active(&mut self, job: &mut DiagnosticsJob, now: Instant) -> bool {
        let mut finished_any = false;
        let mut index = 0;
        while index < job.active.len() {
            if let Some(outcome) = self.advance_file_wait(&mut job.active[index], now) {
                let wait = job.active.swap_remove(index);
                if wait.pinned {
                    if let Some(doc) = self.documents.get_mut(&wait.path) {
                        doc.pins = doc.pins.saturating_sub(1);
                    }
                }
                if matches!(outcome, DiagnosticsOutcome::Settled(_)) {
                    // The file's findings now: what was delivered and is gone is fixed.
                    let current = self.store.merged(&wait.path, &self.server_order());
                    self.frontend.settled(&wait.path, &current);
                }
                let not_checked_by = job.why_left_out.remove(&wait.path);
                job.finish(FileDiagnostics {
                    path: wait.path,
                    outcome,
                    not_checked_by,
                });
                finished_any = true;
            } else {
                index += 1;
            }
        }
        finished_any
    }

    /// The slots that would give `path` diagnostics in a job leaving `leave_out` out of it:
    /// its servers' instances with diagnostics on (a project root's instance is left out with
    /// its configured server).
    fn diagnostic_slots(&mut self, path: &Path, leave_out: &[ServerId]) -> Vec<ServerId> {
        let slots = self.slots_for_path(path);
        slots
            .into_iter()
            .filter(|&index| self.servers[index].config.diagnostics)
            .filter(|&index| {
                !leave_out.contains(&ServerId(self.servers[index].config_index as u32))
            })
            .map(|index| ServerId(index as u32))
            .collect()
    }

    /// Begins the wait for `path`, given its [`Self::diagnostic_slots`] in a job leaving
    /// `leave_out` out of it, starting those servers.
    fn begin_file_wait(
        &mut self,
        path: &Path,
        diagnostic_slots: Vec<ServerId>,
        leave_out: &[ServerId],
        timeout: Duration,
        readiness: bool,
        now: Instant,
    ) -> Result<FileWait, FileWaitError> {
        let slots = self.slots_for_path(path);
        let indexes: Vec<usize> = diagnostic_slots
            .into_iter()
            .map(|slot| slot.0 as usize)
            .collect();
        if indexes.is_empty() && !leave_out.is_empty() {
            return Err(FileWaitError::LeftOut);
        }
        if indexes.is_empty() {
            if self.options.config.servers_for_path(path).is_empty() {
                return Err(FileWaitError::Unserved(
                    self.options.config.why_unserved(path),
                ));
            }
            let servers: Vec<String> = slots
                .iter()
                .map(|&index| {
                    let config = &self.servers[index].config;
                    if let Some(reason) = &config.diagnostics_off_reason {
                        reason.clone()
                    } else if config.origin == ConfigOrigin::BuiltIn
                        && !builtin_publishes_diagnostics(&config.name)
                    {
                        format!("{} publishes none", config.name)
                    } else {
                        format!("{} has \"diagnostics\": false", config.name)
                    }
                })
                .collect();
            return Err(FileWaitError::Unserved(format!(
                "no server for {} gives diagnostics ({})",
                file_name(path),
                servers.join(", ")
            )));
        }
        for &index in &indexes {
            self.ensure_started(ServerId(index as u32));
        }
        Ok(FileWait {
            path: path.to_path_buf(),
            servers: indexes
                .iter()
                .map(|&index| ServerId(index as u32))
                .collect(),
            timeout,
            deadline: None,
            // Servers fail by their own startup timeout; this only bounds a stuck start.
            start_deadline: now + self.options.startup_timeout + timeout,
            done: BTreeMap::new(),
            readiness,
            scope: None,
            resend_stale: false,
            pinned: false,
        })
    }

    /// Advance one file's wait; `Some(outcome)` when it is finished.
    fn advance_file_wait(
        &mut self,
        wait: &mut FileWait,
        now: Instant,
    ) -> Option<DiagnosticsOutcome> {
        if wait.deadline.is_none() {
            let starting = wait.servers.iter().any(|id| {
                let server = &self.servers[id.0 as usize];
                server.is_starting() || server.is_restart_pending()
            });
            if starting && now < wait.start_deadline {
                return None;
            }
            for id in &wait.servers {
                let server = &self.servers[id.0 as usize];
                if !server.is_running() {
                    let reason = server
                        .failure()
                        .map(|error| error.to_string())
                        .unwrap_or_else(|| {
                            format!(
                                "server {} was still starting when the wait ended",
                                server.config.name
                            )
                        });
                    wait.done.insert(*id, Err(reason));
                }
            }
            if wait.done.len() == wait.servers.len() {
                let reasons: Vec<String> = wait
                    .done
                    .values()
                    .filter_map(|done| done.clone().err())
                    .collect();
                return Some(DiagnosticsOutcome::Failed(reasons.join("; ")));
            }
            // Only the servers asked: a server the job leaves out of the file (pyright for a
            // file outside its `include`) is not sent it either. A new user's warm session on
            // python-attrs/attrs (include: one file) sent pyright all 65 files outside it from
            // the second `check .` on, once pyright ran: 1 GB, and the one file it checks timed
            // out at 30 s.
            let slots: Vec<usize> = wait.servers.iter().map(|id| id.0 as usize).collect();
            let synced = self.sync_document_on(&wait.path, &slots);
            if let Err(error) = synced {
                return Some(DiagnosticsOutcome::NotChecked(error.to_string()));
            }
            if let Some(doc) = self.documents.get_mut(&wait.path) {
                doc.pins += 1;
                wait.pinned = true;
            }
            if wait.resend_stale {
                self.resend_stale_documents(&slots);
            }
            // The settle timeout counts from the sync, not from the op (servers start first).
            wait.deadline = Some(now + wait.timeout);
        }
        let doc_version = self
            .documents
            .get(&wait.path)
            .map(|doc| doc.version)
            .unwrap_or(1);
        for id in wait.servers.clone() {
            if wait.done.contains_key(&id) {
                continue;
            }
            let server = &self.servers[id.0 as usize];
            if let Some(reason) = server.permanent_failure() {
                wait.done.insert(id, Err(reason.to_string()));
                continue;
            }
            // Its last word on the file: no publish follows (`given_up.rs`).
            if self.given_up_since_sync(id, &wait.path).is_some() {
                wait.done.insert(id, Ok(()));
                continue;
            }
            if !server.pull_diagnostics && self.cpu_counts(id, &wait.path) {
                if let Some(pid) = server.process().map(|process| process.pid()) {
                    self.servers[id.0 as usize].cpu.sample(pid, now);
                }
            }
            let server = &self.servers[id.0 as usize];
            let key = (id, wait.path.clone());
            let provisional = self.provisional_pulls.contains(&key);
            let ask_again = provisional && !server.busy();
            if server.pull_diagnostics
                && (self.pulled.get(&key) != Some(&doc_version) || ask_again)
                && !self.pulls_in_flight.contains(&key)
            {
                // Pull servers are asked once per version. A dynamic registration that arrives
                // after the wait began (pyright registers after `initialized`) switches it here.
                let purpose = Purpose::Pull {
                    path: wait.path.clone(),
                    version: doc_version,
                    attempts: 0,
                };
                self.send_request(id, purpose);
                continue;
            }
            let server = &self.servers[id.0 as usize];
            let scope = wait
                .readiness
                .then(|| ReadinessScope::of(server.settle_rule(), server.known_name()))
                .flatten();
            if let Some(kind) = scope {
                if wait.scope.as_ref().is_none_or(|(read, _)| *read != kind) {
                    wait.scope = Some((kind, kind.folder(&wait.path)));
                }
            }
            let settled = if server.pull_diagnostics {
                let pulled = self.pulled.get(&key) == Some(&doc_version) && !provisional;
                // The pushed part of a server that also publishes, by its own rule.
                pulled
                    && (server.settle_rule() != SettleRule::PullAndPublish
                        || self.push_state(id, wait).is_some_and(|state| {
                            pushed_part_settled(&state, now, self.options.settle_quiet)
                        }))
            } else {
                self.publish_confirmed(id, &wait.path, wait.readiness)
                    || self.push_state(id, wait).is_some_and(|state| {
                        push_settled(
                            &state,
                            now,
                            self.options.settle_quiet,
                            self.options.settle_quiet_unversioned,
                        )
                    })
            };
            if settled {
                if !self.servers[id.0 as usize].pull_diagnostics {
                    self.restore_standing_publish(id, &wait.path);
                }
                // How a readiness wait on a server with units ended: by the quiet period, for
                // its unit's first file on this process, or at its publish, for a later one.
                let mut how = String::new();
                if let (Some(kind), Some((_, folder))) = (scope, &wait.scope) {
                    let scopes = &mut self.servers[id.0 as usize].readiness_scopes;
                    if scopes.contains(folder) {
                        how = format!(" (readiness: its {} was waited for before)", kind.name());
                    } else {
                        how = format!(
                            " (readiness: the quiet period, its {}'s first)",
                            kind.name()
                        );
                        scopes.push(folder.clone());
                    }
                }
                let server = &self.servers[id.0 as usize];
                log::debug!(
                    "{}: {} v{doc_version} settled by rule {}{how} after {} ms",
                    server.config.name,
                    wait.path.display(),
                    server.settle_rule().name(),
                    wait.deadline
                        .map(|deadline| (now + wait.timeout).saturating_duration_since(deadline))
                        .unwrap_or_default()
                        .as_millis()
                );
                wait.done.insert(id, Ok(()));
            }
        }
        let names: Vec<&str> = wait
            .servers
            .iter()
            .map(|id| self.servers[id.0 as usize].config.name.as_str())
            .collect();
        // Only the servers asked about the file count: a server left out by its project
        // (pyright's `include`) may still hold diagnostics for it from an earlier command that
        // opened it there (a named file, a query), and a warm session keeps those. `merged`
        // visits `names` first, so dropping the rest keeps each duplicate's asked-server copy.
        let mut merged = self.store.merged(&wait.path, &names);
        merged.retain(|diagnostic| names.contains(&diagnostic.server.as_str()));
        if wait.done.len() == wait.servers.len() {
            let failures: Vec<String> = wait
                .done
                .values()
                .filter_map(|done| done.clone().err())
                .collect();
            if failures.len() == wait.servers.len() {
                return Some(DiagnosticsOutcome::Failed(failures.join("; ")));
            }
            // A server configured for the file whose command is missing never joined the wait
            // (`lspc check` keeps the others' findings): the file was not checked by it, and
            // is not clean (a new user's trial: `"command": "no-such-pyright"` beside the
            // built-in ruff made a file with a type error `clean`).
            let mut failures = failures;
            failures.extend(
                self.options
                    .config
                    .unavailable_for(&wait.path)
                    // One whose diagnostics are off would have given the file none anyway.
                    .filter(|server| server.diagnostics)
                    .map(|server| super::super::EngineError::command_not_found(server).to_string()),
            );
            // The servers that answered, by name, and the outcome of a file not checked for
            // `reasons` (after the other servers' failures, when there are some).
            let answered = || {
                names
                    .iter()
                    .zip(&wait.servers)
                    .filter(|(_, id)| wait.done.get(id).is_some_and(Result::is_ok))
            };
            let not_checked = |reasons: &[String], failed: bool| {
                let message = format!(
                    "{} not checked: {}",
                    file_name(&wait.path),
                    reasons.join("; ")
                );
                if failures.is_empty() && !failed {
                    DiagnosticsOutcome::NotChecked(message)
                } else if failures.is_empty() {
                    DiagnosticsOutcome::Failed(message)
                } else {
                    DiagnosticsOutcome::Failed(format!("{}; {message}", failures.join("; ")))
                }
            };
            // A server whose whole check failed (rust-analyzer's `cargo check`, ruff's project
            // settings) did not check the file the project's way, whatever the others found.
            let check_failures: Vec<String> = answered()
                .filter_map(|(name, id)| {
                    let check_failure = self.servers[id.0 as usize].check_failure.as_ref()?;
                    Some(format!("{name}: {check_failure}"))
                })
                .collect();
            let failing: Vec<&str> = answered()
                .filter(|(_, id)| self.servers[id.0 as usize].check_failure.is_some())
                .map(|(name, _)| *name)
                .collect();
            if !check_failures.is_empty() && failing.len() == answered().count() {
                return Some(not_checked(&check_failures, true));
            }
            if !check_failures.is_empty() {
                // The others' findings stand beside the failure (a trial: a broken
                // `sub/ruff.toml` made ruff's whole check fail, and pyright's type error in an
                // unrelated file was dropped with it).
                merged.retain(|diagnostic| !failing.contains(&diagnostic.server.as_str()));
                let failures: Vec<String> =
                    failures.iter().cloned().chain(check_failures).collect();
                return Some(DiagnosticsOutcome::PartlyFailed {
                    diagnostics: merged,
                    failures: failures.join("; "),
                });
            }
            // Every server that answered said it did not analyse the file: not a clean. A
            // server whose health is `error` and that gave the file nothing says so too
            // (rust-analyzer's `Failed to load workspaces.`); that is a server failure, as
            // `cargo check` failing there is: exit 3, walked or named, never a skip. So is a
            // server that gave up checking the file (bash-language-server's ShellCheck
            // timeout).
            let mut unhealthy = false;
            let not_analysed: Vec<String> = answered()
                .map(|(name, id)| {
                    let said = said_not_analysed(&merged, name)
                        .map(|d| format!("{name}: {}", d.message.lines().next().unwrap_or("")));
                    let server = &self.servers[id.0 as usize];
                    said.or_else(|| {
                        let given_up = self.given_up_since_sync(*id, &wait.path)?;
                        unhealthy = true;
                        Some(format!("{name}: {given_up}"))
                    })
                    .or_else(|| {
                        let health_error = server.health_error.as_ref()?;
                        unhealthy = true;
                        (!merged.iter().any(|d| d.server == *name))
                            .then(|| format!("{name}: {health_error}"))
                    })
                    // gopls 0.5 answers a file below `testdata` or a `_`/`.` folder with one
                    // empty set (helper-41: `lspc diagnostics`, batch and MCP called such a
                    // file with a syntax error clean; `lspc check` already left it out).
                    .or_else(|| {
                        (server.program == Some(crate::config::Program::Gopls)
                            && !merged.iter().any(|d| d.server == *name)
                            && crate::project::in_a_folder_go_ignores(&wait.path))
                        .then(|| {
                            format!(
                                "{name}: the file is in a folder the go command ignores \
                                 (testdata, `_` or `.` names), which gopls does not check"
                            )
                        })
                    })
                })
                .collect::<Option<_>>()
                .unwrap_or_default();
            if !not_analysed.is_empty() {
                return Some(not_checked(&not_analysed, unhealthy));
            }
            // A schema the file names that its server could not load: checked for syntax only
            // (never clean, and the network fault is no finding of the file's).
            for (name, _) in answered() {
                if let Some(said) = schema_not_loaded(&merged, name) {
                    let message = said.message.clone();
                    merged.retain(|d| !(d.server == *name && d.message == message));
                    failures.push(format!(
                        "{name}: only its syntax was checked: {}",
                        message.trim_end_matches('.')
                    ));
                }
            }
            if !failures.is_empty() {
                return Some(DiagnosticsOutcome::PartlyFailed {
                    diagnostics: merged,
                    failures: failures.join("; "),
                });
            }
            return Some(DiagnosticsOutcome::Settled(merged));
        }
        let deadline = wait.deadline?;
        if now >= deadline {
            for id in wait.servers.iter().filter(|id| !wait.done.contains_key(id)) {
                let lacks = self
                    .current_probe(*id, &wait.path)
                    .filter(|probe| probe.answered_at.is_some())
                    .map(|probe| self.probe_outcome(*id, &wait.path, probe));
                let name = &self.servers[id.0 as usize].config.name;
                match lacks {
                    Some(ProbeOutcome::Lacks(lacking)) => log::warn!(
                        "{name}: its last publish for {} lacks {lacking} of the diagnostics \
                         tsserver lists for the file (typescript.tsserverRequest), and no later \
                         publish matched them: reported as incomplete, not with the shorter set",
                        wait.path.display()
                    ),
                    Some(ProbeOutcome::Extra) => log::warn!(
                        "{name}: its last publish for {} has diagnostics tsserver no longer lists \
                         for the file's text (typescript.tsserverRequest), and no later publish \
                         matched: reported as incomplete, not with the older set",
                        wait.path.display()
                    ),
                    _ => {}
                }
            }
            let servers = wait
                .servers
                .iter()
                .filter(|id| !wait.done.contains_key(id))
                .map(|id| self.servers[id.0 as usize].config.name.clone())
                .collect();
            return Some(DiagnosticsOutcome::TimedOut {
                diagnostics: merged,
                servers,
                after: wait.timeout,
            });
        }
        None
    }

    /// LSP 3.17 §`workspace/diagnostic/refresh` from `server_id`: its pulled diagnostics are out
    /// of date. Every document open on it is pulled again (a pull in flight is answered, dropped
    /// and asked again: [`State::pull_again`]), and a file wait in progress that this server
    /// had settled waits for the new answer. Results already delivered stay delivered.
    pub(super) fn on_diagnostics_refresh(&mut self, server_id: ServerId) {
        let server = &self.servers[server_id.0 as usize];
        log::debug!("{}: workspace/diagnostic/refresh", server.config.name);
        if !server.pull_diagnostics || !server.is_running() {
            return;
        }
        self.pulled.retain(|(id, _), _| *id != server_id);
        self.provisional_pulls.retain(|(id, _)| *id != server_id);
        for job in &mut self.jobs {
            for wait in &mut job.active {
                if wait.done.get(&server_id).is_some_and(Result::is_ok) {
                    wait.done.remove(&server_id);
                }
            }
        }
        for path in self.documents.open_on(server_id) {
            let key = (server_id, path);
            if self.pulls_in_flight.contains(&key) {
                self.stale_pulls.insert(key);
            } else {
                self.pull_again(server_id, &key.1);
            }
        }
    }

    /// Pulls `path` from `server_id` for the version open on it, if it is still open there.
    pub(super) fn pull_again(&mut self, server_id: ServerId, path: &Path) {
        let Some(doc) = self.documents.get(path) else {
            return;
        };
        let Some(&(version, _)) = doc.open_on.get(&server_id) else {
            return;
        };
        if !self.servers[server_id.0 as usize].pull_diagnostics {
            return;
        }
        let purpose = Purpose::Pull {
            path: path.to_path_buf(),
            version,
            attempts: 0,
        };
        self.send_request(server_id, purpose);
    }

    /// Why `server_id` gave up checking `path` ([`super::super::given_up`]), if it said so after
    /// the document's text was last sent to it.
    fn given_up_since_sync(&self, server_id: ServerId, path: &Path) -> Option<&str> {
        let &(_, sent_at) = self.documents.get(path)?.open_on.get(&server_id)?;
        let (at, reason) = self.servers[server_id.0 as usize].given_up.get(path)?;
        (*at >= sent_at).then_some(reason.as_str())
    }

    /// [`SettleRule::ConfirmedUnversionedPublish`]: whether the server's last publish for `path`
    /// is confirmed complete for the sent version by tsserver's own answers
    /// (`tsserver_probe.rs`). Sends the three requests when that publish (or the version) has
    /// not been asked about yet, and the server reports no work in progress.
    ///
    /// A readiness wait (a query's first wait on the file) asks at once, without waiting for a
    /// publish, and is `true` once tsserver has answered the three without an error, whatever
    /// they list, and the server has published since its start: tsserver answers only once its
    /// check of the file is done, i.e. once the file's project has loaded, and
    /// typescript-language-server answers hover, signature help and definitions partially only
    /// while a project loads and, on a new process, until its first diagnostics event
    /// ([`Server::published_since_start`](super::lifecycle::Server)). Until then an unanswered
    /// request holds the wait as work in progress ([`Self::push_state`]); a failed one leaves it
    /// to the quiet period. (It used to keep the 1.5 s quiet period after the answers too, and to
    /// ask only after typescript-language-server's first publish for the file, which comes about
    /// 300 ms after the open: each new file's first question took 1.86 s on a loaded project.)
    fn publish_confirmed(&mut self, server_id: ServerId, path: &Path, readiness: bool) -> bool {
        let server = &self.servers[server_id.0 as usize];
        if server.settle_rule() != SettleRule::ConfirmedUnversionedPublish
            || server.busy()
            || !tsserver_probe::offered(&server.capabilities)
        {
            return false;
        }
        let Some(&(sent_version, sent_at)) = self
            .documents
            .get(path)
            .and_then(|doc| doc.open_on.get(&server_id))
        else {
            return false;
        };
        let publish = server.publishes.get(path).copied();
        let key = (server_id, path.to_path_buf());
        let probe = self.probes.get(&key);
        let decided = if readiness {
            probe
                .filter(|probe| probe.version == sent_version)
                .map(|probe| {
                    (
                        probe.ready() && server.published_since_start,
                        "ready: tsserver answered its diagnostics",
                    )
                })
        } else {
            let Some(publish) = publish else {
                return false;
            };
            probe
                .filter(|probe| probe.version == sent_version && probe.publish_at == publish.at)
                .map(|probe| {
                    let outcome = self.probe_outcome(server_id, path, probe);
                    (outcome == ProbeOutcome::Confirmed, "confirmed by tsserver")
                })
        };
        if let Some((done, what)) = decided {
            if done {
                log::debug!(
                    "{}: {} v{sent_version} {what}",
                    server.config.name,
                    path.display()
                );
            }
            return done;
        }
        // A readiness probe asked before any publish is dated by the text's sending: tsserver
        // had read the project's files by its answer, which came later.
        let publish_at = publish.map_or(sent_at, |publish| publish.at);
        self.probes
            .insert(key, tsserver_probe::Probe::new(sent_version, publish_at));
        for index in 0..tsserver_probe::REQUESTS.len() {
            let purpose = Purpose::Probe {
                path: path.to_path_buf(),
                version: sent_version,
                publish_at,
                index,
            };
            self.send_request(server_id, purpose);
        }
        false
    }

    /// What `probe`'s answers say of the server's last publish for `path`, leaving out the codes
    /// its settings tell it to drop ([`tsserver_probe::ignored_codes`]).
    fn probe_outcome(
        &self,
        server_id: ServerId,
        path: &Path,
        probe: &tsserver_probe::Probe,
    ) -> ProbeOutcome {
        let server = &self.servers[server_id.0 as usize];
        let published = server
            .raw_diagnostics
            .get(&(path.to_path_buf(), Origin::Published))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let ignored = tsserver_probe::ignored_codes(server.config.settings.as_ref());
        probe.outcome(published, &ignored)
    }

    /// The probe of the server's current publish for `path` at the sent version
    /// ([`SettleRule::ConfirmedUnversionedPublish`]), if one was sent.
    fn current_probe(&self, server_id: ServerId, path: &Path) -> Option<&tsserver_probe::Probe> {
        let server = &self.servers[server_id.0 as usize];
        let &(sent_version, _) = self.documents.get(path)?.open_on.get(&server_id)?;
        let publish = server.publishes.get(path)?;
        self.probes
            .get(&(server_id, path.to_path_buf()))
            .filter(|probe| {
                server.settle_rule() == SettleRule::ConfirmedUnversionedPublish
                    && probe.version == sent_version
                    && probe.publish_at == publish.at
            })
    }

    /// The probe of the sent version of `path`, for whatever publish (or none) it was sent:
    /// the one a readiness wait waits for ([`Self::publish_confirmed`]).
    fn version_probe(&self, server_id: ServerId, path: &Path) -> Option<&tsserver_probe::Probe> {
        let server = &self.servers[server_id.0 as usize];
        let &(sent_version, _) = self.documents.get(path)?.open_on.get(&server_id)?;
        self.probes
            .get(&(server_id, path.to_path_buf()))
            .filter(|probe| {
                server.settle_rule() == SettleRule::ConfirmedUnversionedPublish
                    && probe.version == sent_version
            })
    }

    /// Whether the server computing counts as its work in progress on the document: a rule
    /// without a completeness signal, and no publish for the sent version yet
    /// (`server_cpu.rs`: gopls 0.5 publishes its analyzers' findings seconds after an
    /// unversioned type-check set, or nothing when they find none). Only then is its CPU
    /// sampled.
    fn cpu_counts(&self, server_id: ServerId, path: &Path) -> bool {
        self.servers[server_id.0 as usize]
            .settle_rule()
            .quiet_only()
            && self.published_the_sent_version(server_id, path) == Some(false)
    }

    /// Whether the server's last publish for `path` carries the version lspc last sent it (or a
    /// higher one); `None` when the document is not open on it.
    fn published_the_sent_version(&self, server_id: ServerId, path: &Path) -> Option<bool> {
        let &(sent_version, _) = self.documents.get(path)?.open_on.get(&server_id)?;
        let publish = self.servers[server_id.0 as usize].publishes.get(path);
        Some(publish.is_some_and(|publish| {
            publish
                .version
                .is_some_and(|version| version >= sent_version)
        }))
    }

    /// The settle inputs of (server, the document of `wait`). A readiness wait (an analysis wait
    /// before a query) turns the [`SettleRule::VersionedPublish`] fast path off, and is ready at
    /// the sent version's publish (`ready_at_publish`) once the file's unit
    /// ([`ReadinessScope`]) had its quiet period on the running process
    /// ([`Server::readiness_scopes`](super::lifecycle::Server)).
    pub(super) fn push_state(&self, server_id: ServerId, wait: &FileWait) -> Option<PushState> {
        let (path, readiness) = (wait.path.as_path(), wait.readiness);
        let server = &self.servers[server_id.0 as usize];
        let doc = self.documents.get(path)?;
        let &(sent_version, sent_at) = doc.open_on.get(&server_id)?;
        let last_publish = server.publishes.get(path).copied();
        let mut progress_active = server.busy();
        let mut last_progress_change = server.last_progress_change;
        if self.cpu_counts(server_id, path) {
            last_progress_change = last_progress_change.max(server.cpu.last_busy());
        }
        // A tsserver probe of the last publish counts as work: tsserver answers it only when
        // its check of the file is done, so while it is unanswered the publish may be the
        // empty syntactic set of a file whose semantic check is still running (ky's 38 KB
        // `Ky.ts` took 10 s), and the quiet period counts from its answer. Answers that differ
        // from the publish hold it too, until a publish they confirm replaces it or the file's
        // deadline makes it a timeout: never the shorter set as settled, and never a set with
        // findings tsserver no longer reports for the sent text (the publish for the text
        // before it: a warm session's folder check after `git checkout` of a file reported
        // its old errors, past its last line, once 3 s of silence let that publish stand
        // while the server's new round was still queued behind the other open files). A
        // readiness wait only needs tsserver's check done.
        let probe = if readiness {
            self.version_probe(server_id, path)
        } else {
            self.current_probe(server_id, path)
        };
        if let Some(probe) = probe {
            match probe.answered_at {
                None => progress_active = true,
                Some(_)
                    if !readiness
                        && matches!(
                            self.probe_outcome(server_id, path, probe),
                            ProbeOutcome::Lacks(_) | ProbeOutcome::Extra
                        ) =>
                {
                    progress_active = true
                }
                Some(at) => last_progress_change = last_progress_change.max(Some(at)),
            }
        }
        Some(PushState {
            sent_version,
            sent_at,
            last_publish,
            progress_active,
            last_progress_change,
            // lspc sends `didSave` with every later version to servers that asked for saves.
            saved: sent_version > doc.opened_version && server.save.is_some(),
            versioned_final: !readiness && server.settle_rule() == SettleRule::VersionedPublish,
            ready_at_publish: readiness
                && wait.scope.as_ref().is_some_and(|(kind, folder)| {
                    ReadinessScope::of(server.settle_rule(), server.known_name()) == Some(*kind)
                        && server.readiness_scopes.contains(folder)
                }),
            unhealthy: server.health_error.is_some(),
            deferred_round: server.deferred_round,
        })
    }
}

/// The file name of `path` for a reason text (which reports carry next to the root-relative
/// path, in every format): the whole path would reveal where the root lives.
fn file_name(path: &Path) -> std::borrow::Cow<'_, str> {
    path.file_name()
        .map_or_else(|| path.to_string_lossy(), |name| name.to_string_lossy())
}
