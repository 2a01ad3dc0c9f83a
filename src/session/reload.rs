//! A session's configuration reload (issue 13: "a configuration change reloads as `lspc mcp`
//! already does"): the session process watches the files its configuration came from and applies
//! a change to its engine with [`Op::Reload`] (unchanged servers keep running, changed ones
//! restart lazily, removed ones stop: `engine/reload.rs`).
//!
//! The [`Reloader`] lives on the session's main thread, which calls [`Reloader::check`] on its
//! periodic tick and for each client's `reload` request (sent when the client's configuration hash
//! differs from the session's: a one-shot command's hello check, or `lspc mcp`'s own watch). Its
//! state is published as a [`ConfigState`] snapshot that connection threads read for hellos and
//! `info`.
//!
//! Invariants:
//! - The session key does not change on a reload: it names the configuration's sources, not their
//!   content (`paths::session_key`), so the next command finds this session.
//! - A new configuration with errors the one in force did not have is not applied: the session
//!   keeps serving the previous one, logs the errors and shows them in `lspc session status`
//!   (`lastReload.error`) until the files change again.
//! - Reloads are serialised (one thread), so two clients asking at once cause one reload.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crossbeam_channel::{bounded, Sender};

use super::wire::{ConfigState, LastReload};
use crate::config::{Config, ConfigOptions};
use crate::doorbell::LoopSender;
use crate::engine::{Op, ReloadReport};
use crate::mcp::reload::ConfigWatch;

/// How long applying a reload may take: stopping changed servers is bounded by their shutdown
/// timeouts (a few seconds each).
const APPLY_TIMEOUT: Duration = Duration::from_secs(90);

/// A client's `reload` request, answered on `reply`.
pub struct ReloadRequest {
    /// The client's own [`super::hash::config_hash`].
    pub client_hash: String,
    pub reply: Sender<ReloadOutcome>,
}

/// What a check found, for a `reload` reply.
#[derive(Debug, Clone)]
pub struct ReloadOutcome {
    /// The hash the session serves after the check.
    pub config_hash: String,
    /// [`ConfigState::generation`] after the check.
    pub generation: u64,
    /// What the latest applied reload changed.
    pub report: ReloadReport,
    /// Why the files could not be applied, when they could not.
    pub error: Option<String>,
}

/// The published snapshot (written by the reloader only; see the module doc).
pub type SharedConfigState = Arc<Mutex<ConfigState>>;

/// Reads the snapshot (a poisoned lock still holds the last complete state).
pub fn snapshot(state: &SharedConfigState) -> ConfigState {
    match state.lock() {
        Ok(state) => state.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Watches a session's configuration files and applies their changes.
pub struct Reloader {
    /// `None` for a configuration that does not come from files (never reloads).
    watch: Option<ConfigWatch>,
    op_sender: LoopSender<Op>,
    /// The errors of the configuration in force (a reload that adds none is applied).
    accepted_errors: Vec<String>,
    last_report: ReloadReport,
    state: SharedConfigState,
}

/// The files and folders `options` loads, absolute, for `status` (the workspace `.lsp.json` only
/// when trusted, the user file only when it exists).
fn sources(options: &ConfigOptions) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut sources: Vec<PathBuf> = options
        .config_files
        .iter()
        .chain(&options.plugin_dirs)
        .map(|path| {
            let joined = cwd.join(path);
            joined.canonicalize().unwrap_or(joined)
        })
        .collect();
    if options.trust_workspace {
        sources.push(options.root.join(".lsp.json"));
    }
    if let Some(user) = options.user_config.as_ref().filter(|user| user.is_file()) {
        sources.push(user.clone());
    }
    sources
}

fn error_texts(config: &Config) -> Vec<String> {
    config.errors.iter().map(ToString::to_string).collect()
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Reloader {
    /// The reloader of a session that serves `config`, loaded from `sources` (`None`: not from
    /// files). Its fingerprint is taken now, so a file edited between the session's own load and
    /// this call is seen on a client's `reload` (the hashes differ) rather than on the tick.
    pub fn new(
        config: &Config,
        sources_options: Option<ConfigOptions>,
        op_sender: LoopSender<Op>,
    ) -> Reloader {
        let state = ConfigState {
            sources: sources_options.as_ref().map(sources).unwrap_or_default(),
            config_hash: super::hash::config_hash(config),
            extension_hashes: std::sync::Arc::new(super::hash::config_hashes_by_extension(config)),
            generation: 0,
            last_reload: None,
        };
        Reloader {
            watch: sources_options.map(ConfigWatch::new),
            op_sender,
            accepted_errors: error_texts(config),
            last_report: ReloadReport::default(),
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The snapshot connection threads read.
    pub fn state(&self) -> SharedConfigState {
        Arc::clone(&self.state)
    }

    fn publish(&self, update: impl FnOnce(&mut ConfigState)) {
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        update(&mut state);
    }

    /// The periodic tick: a few `stat` calls, and a reload when a file changed.
    pub fn tick(&mut self) {
        let changed = self.watch.as_mut().is_some_and(ConfigWatch::changed);
        if changed {
            self.reload();
        }
    }

    /// A client's `reload`: reload when a file changed or the client's hash differs from the
    /// session's (a change within the file system's timestamp granularity is caught this way).
    pub fn handle(&mut self, request: ReloadRequest) {
        let changed = self.watch.as_mut().is_some_and(ConfigWatch::changed);
        let current = snapshot(&self.state);
        let error =
            if changed || (request.client_hash != current.config_hash && self.watch.is_some()) {
                self.reload()
            } else {
                current.last_reload.and_then(|last| last.error)
            };
        let state = snapshot(&self.state);
        let _ = request.reply.send(ReloadOutcome {
            config_hash: state.config_hash,
            generation: state.generation,
            report: self.last_report.clone(),
            error,
        });
    }

    /// Loads the files again and applies them unless they are broken; returns the error that
    /// kept them from being applied.
    fn reload(&mut self) -> Option<String> {
        let Some(watch) = &self.watch else {
            return None;
        };
        let config = crate::config::load(watch.options());
        let errors = error_texts(&config);
        let new_errors: Vec<&String> = errors
            .iter()
            .filter(|error| !self.accepted_errors.contains(error))
            .collect();
        if !new_errors.is_empty() {
            let error = new_errors
                .iter()
                .map(|error| error.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            let known = snapshot(&self.state)
                .last_reload
                .is_some_and(|last| last.error.as_deref() == Some(error.as_str()));
            if known {
                // Asked again by a client that loaded the same broken files: said already.
                return Some(error);
            }
            eprintln!(
                "lspc session: configuration not reloaded, keeping the previous one: {error}"
            );
            let record = LastReload {
                unix_ms: unix_ms(),
                restarted: Vec::new(),
                removed: Vec::new(),
                added: Vec::new(),
                error: Some(error.clone()),
            };
            self.publish(|state| state.last_reload = Some(record));
            return Some(error);
        }
        let hash = super::hash::config_hash(&config);
        let current = snapshot(&self.state);
        if hash == current.config_hash {
            // Same servers (a touched file, or errors that went away): nothing to apply, but an
            // error shown for the files is over.
            if current
                .last_reload
                .as_ref()
                .is_some_and(|last| last.error.is_some())
            {
                let record = LastReload {
                    unix_ms: unix_ms(),
                    restarted: Vec::new(),
                    removed: Vec::new(),
                    added: Vec::new(),
                    error: None,
                };
                self.publish(|state| state.last_reload = Some(record));
            }
            self.accepted_errors = errors;
            return None;
        }
        let extension_hashes = Arc::new(super::hash::config_hashes_by_extension(&config));
        let (reply, receiver) = bounded(1);
        if self.op_sender.send(Op::Reload { config, reply }).is_err() {
            return Some("the engine has shut down".to_owned());
        }
        let report = match receiver.recv_timeout(APPLY_TIMEOUT) {
            Ok(report) => report,
            Err(_) => {
                let error = format!(
                    "the engine did not apply the configuration within {} s",
                    APPLY_TIMEOUT.as_secs()
                );
                eprintln!("lspc session: {error}");
                return Some(error);
            }
        };
        eprintln!(
            "lspc session: configuration reloaded: restarted {:?}, removed {:?}, added {:?}",
            report.restarted, report.removed, report.added
        );
        self.accepted_errors = errors;
        let record = LastReload {
            unix_ms: unix_ms(),
            restarted: report.restarted.clone(),
            removed: report.removed.clone(),
            added: report.added.clone(),
            error: None,
        };
        self.last_report = report;
        self.publish(|state| {
            state.config_hash = hash;
            state.extension_hashes = extension_hashes;
            state.generation += 1;
            state.last_reload = Some(record);
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reloader over one config file, with a stand-in engine that answers every
    /// [`Op::Reload`] with the names it was given as added, and counts them.
    #[test]
    fn edits_apply_broken_files_are_kept_out_and_errors_clear() {
        let dir = std::env::temp_dir().join(format!("lspc-session-reload-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("lsp.json");
        let entry = |name: &str| {
            format!(
                r#""{name}": {{"command": "sh", "extensionToLanguage": {{".{name}": "{name}"}}}}"#
            )
        };
        let write = |text: String| std::fs::write(&file, text).unwrap();
        write(format!("{{{}}}", entry("a")));
        let mut options = ConfigOptions::new(dir.clone());
        options.config_files = vec![file.clone()];
        options.builtin = false;
        options.user_config = None;
        let config = crate::config::load(&options);
        assert!(config.errors.is_empty(), "{:?}", config.errors);
        let (op_sender, op_receiver) = crate::doorbell::unbounded::<Op>();
        let engine = std::thread::spawn(move || {
            let mut n_reloads = 0;
            for op in op_receiver {
                if let Op::Reload { config, reply } = op {
                    n_reloads += 1;
                    let added = config.servers.iter().map(|s| s.name.clone()).collect();
                    let _ = reply.send(ReloadReport {
                        added,
                        ..Default::default()
                    });
                }
            }
            n_reloads
        });
        let mut reloader = Reloader::new(&config, Some(options), op_sender);
        let first_hash = snapshot(&reloader.state()).config_hash;
        let ask = |reloader: &mut Reloader, client_hash: &str| {
            let (reply, receiver) = bounded(1);
            reloader.handle(ReloadRequest {
                client_hash: client_hash.to_owned(),
                reply,
            });
            receiver.recv().unwrap()
        };

        // Nothing changed: the client's hash matches, nothing is applied.
        let outcome = ask(&mut reloader, &first_hash);
        assert_eq!((outcome.generation, outcome.error), (0, None));
        assert_eq!(outcome.config_hash, first_hash);

        // A server added: the tick applies it.
        write(format!("{{{}, {}}}", entry("a"), entry("b")));
        reloader.tick();
        let state = snapshot(&reloader.state());
        assert_eq!(state.generation, 1);
        assert_ne!(state.config_hash, first_hash);
        let last = state.last_reload.unwrap();
        assert_eq!(
            (last.added, last.error),
            (vec!["a".to_owned(), "b".to_owned()], None)
        );
        let second_hash = state.config_hash;

        // Broken: not applied, the error is shown, the hash stays; a client asking is told.
        write("{ \"a\": ".to_owned());
        reloader.tick();
        let state = snapshot(&reloader.state());
        assert_eq!((state.generation, &state.config_hash), (1, &second_hash));
        let error = state.last_reload.unwrap().error.unwrap();
        assert!(error.contains("lsp.json"), "{error}");
        let outcome = ask(&mut reloader, "0000000000000000");
        assert_eq!(outcome.error.as_deref(), Some(error.as_str()));
        assert_eq!(outcome.config_hash, second_hash);

        // Fixed back to the servers in force: nothing to apply, the error is over.
        write(format!("{{ {}, {} }}", entry("a"), entry("b")));
        reloader.tick();
        let state = snapshot(&reloader.state());
        assert_eq!((state.generation, &state.config_hash), (1, &second_hash));
        assert_eq!(state.last_reload.unwrap().error, None);

        drop(reloader);
        assert_eq!(engine.join().unwrap(), 1, "one reload reached the engine");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
