//! Per-project server instances (issue 17): a file is served by the instance of its server for
//! its nearest project root.
//!
//! A child module of the event loop (it reads and grows the loop's server table). The table's
//! first slots are one per configured server, the instance at the workspace root, so a
//! [`ServerId`] below the number of configured servers still names "that server" as before.
//! Instances for project roots below the workspace root are appended lazily, the first time a
//! file under that root is needed, and then start lazily like any server (seed 000), each under
//! its own restart policy; the open-document LRU bound counts documents, not instances.
//!
//! Invariants:
//! - A project root is the nearest ancestor folder of the file holding one of the server's
//!   `rootMarkers` (the outermost for tsconfig's, [`crate::config::roots::find_project_root`]),
//!   never above the workspace root; no marker (or a file outside the workspace)
//!   means the workspace-root instance. A server with a `workspaceFolder` or no markers has only
//!   its workspace-root instance.
//! - Each (server, project root) has exactly one slot, for the life of the loop; a reload that
//!   changes the server replaces every slot of it in place (see `reload.rs`).
//! - Each folder's markers are looked up at most once per server: a 20,000-file check stats
//!   folders, not files times markers.
//! - The last few answers of [`State::slots_for_path`] are remembered by the path's bytes
//!   (issue 15: the lookup, with its extension key and `Path` hashing, cost every request about
//!   4k instructions); they depend only on the configuration and the tables above, which only
//!   grow for a path not yet looked up, so they are forgotten only when a reload changes the
//!   configuration ([`Instances::forget_lookups`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{Server, State};
use crate::engine::EngineError;
use crate::process::ServerId;

/// The instance table next to the loop's `servers`.
#[derive(Debug, Default)]
pub(super) struct Instances {
    /// Configured-server index → the slot of its workspace-root instance.
    default_slots: Vec<ServerId>,
    /// (configured-server index, project root) → slot, for roots below the workspace root.
    by_root: HashMap<(usize, PathBuf), ServerId>,
    /// (configured-server index, folder) → that folder's nearest project root.
    folder_roots: HashMap<(usize, PathBuf), PathBuf>,
    /// The latest [`State::slots_for_path`] answers, most recent first, at most
    /// [`RECENT_LOOKUPS`].
    recent: Vec<(PathBuf, Vec<usize>)>,
}

/// How many [`State::slots_for_path`] answers are remembered: a request's syncs ask for the same
/// path several times, and requests in a row mostly ask about a few files.
const RECENT_LOOKUPS: usize = 4;

impl Instances {
    /// The table for `n_configured` servers in slots `0..n_configured`.
    pub(super) fn new(n_configured: usize) -> Instances {
        Instances {
            default_slots: (0..n_configured).map(|i| ServerId(i as u32)).collect(),
            ..Instances::default()
        }
    }

    /// Records the workspace-root slot of a server a reload added.
    pub(super) fn add_default(&mut self, slot: ServerId) {
        self.default_slots.push(slot);
    }

    /// Forgets the remembered lookups: the configuration changed.
    pub(super) fn forget_lookups(&mut self) {
        self.recent.clear();
    }

    /// The remembered slots of `path` (compared byte for byte), moved to the front.
    fn recalled(&mut self, path: &Path) -> Option<Vec<usize>> {
        let position = self
            .recent
            .iter()
            .position(|(known, _)| known.as_os_str() == path.as_os_str())?;
        self.recent[..=position].rotate_right(1);
        Some(self.recent[0].1.clone())
    }

    /// Remembers the slots of `path`, dropping the oldest answer when full.
    fn remember(&mut self, path: &Path, slots: &[usize]) {
        self.recent.truncate(RECENT_LOOKUPS - 1);
        self.recent.insert(0, (path.to_path_buf(), slots.to_vec()));
    }

    /// Every slot of configured server `config_index`: the workspace-root one first, then its
    /// project instances in slot order.
    pub(super) fn slots_of(&self, config_index: usize) -> Vec<ServerId> {
        let mut slots: Vec<ServerId> = self
            .by_root
            .iter()
            .filter(|((index, _), _)| *index == config_index)
            .map(|(_, slot)| *slot)
            .collect();
        crate::sorting::sort(&mut slots);
        slots.insert(0, self.default_slots[config_index]);
        slots
    }
}

impl State {
    /// The slots (indexes into `servers`) serving `path`, one per configured server claiming
    /// it, in configuration order (primary first); creates missing project instances (not
    /// started).
    pub(super) fn slots_for_path(&mut self, path: &Path) -> Vec<usize> {
        if let Some(slots) = self.instances.recalled(path) {
            return slots;
        }
        let slots: Vec<usize> = self
            .options
            .config
            .servers_for_path(path)
            .into_iter()
            .map(|config_index| self.slot_for(config_index, path).0 as usize)
            .collect();
        self.instances.remember(path, &slots);
        slots
    }

    /// The slots serving `path` ([`Self::slots_for_path`]), each started if it is not running:
    /// what every sync of a file does first. `Spawn` when a server configured for the file
    /// (not a built-in one) cannot start because its command is missing, whatever other servers
    /// claim it; `NoServer` when no server claims the file. A new user's trial: with a
    /// `.lsp.json` naming `gopls-nonexistent`, a query said "no language server is configured
    /// for .go files"; with `nonexistent-pyright` beside ruff, `hover` said "no hover
    /// information found" and `definition` "server ruff does not support
    /// textDocument/definition", where `lspc check` said pyright's command was not found.
    pub(super) fn start_servers_for(&mut self, path: &Path) -> Result<Vec<usize>, EngineError> {
        if let Some(server) = self.options.config.unavailable_for(path).next() {
            return Err(EngineError::command_not_found(server));
        }
        let servers = self.slots_for_path(path);
        if servers.is_empty() {
            return Err(EngineError::NoServer {
                path: path.to_path_buf(),
            });
        }
        for &index in &servers {
            self.ensure_started(ServerId(index as u32));
        }
        Ok(servers)
    }

    /// The project root serving `path` for configured server `config_index` (the workspace
    /// root when it has no nearer one).
    fn project_root(&mut self, config_index: usize, path: &Path) -> PathBuf {
        let workspace_root = &self.workspace_root;
        let config = &self.options.config.servers[config_index];
        let Some(folder) = path.parent() else {
            return workspace_root.clone();
        };
        if config.workspace_folder.is_some() || config.root_markers.is_empty() {
            return workspace_root.clone();
        }
        let key = (config_index, folder.to_path_buf());
        if let Some(root) = self.instances.folder_roots.get(&key) {
            return root.clone();
        }
        let root =
            crate::config::roots::find_project_root(folder, workspace_root, &config.root_markers)
                .unwrap_or_else(|| workspace_root.clone());
        self.instances.folder_roots.insert(key, root.clone());
        root
    }

    fn slot_for(&mut self, config_index: usize, path: &Path) -> ServerId {
        let default = self.instances.default_slots[config_index];
        let root = self.project_root(config_index, path);
        if root == self.workspace_root {
            return default;
        }
        let key = (config_index, root);
        if let Some(&slot) = self.instances.by_root.get(&key) {
            return slot;
        }
        let slot = ServerId(self.servers.len() as u32);
        let config = self.options.config.servers[config_index].clone();
        log::info!(
            "{}: a new instance for project {}",
            config.name,
            key.1.display()
        );
        let server = Server::new_at(
            &self.options,
            slot,
            &config,
            config_index,
            Some(key.1.clone()),
        );
        self.servers.push(server);
        self.instances.by_root.insert(key, slot);
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup memo answers the paths it holds (byte for byte, not `Path` equality: `a//b`
    /// is another key), keeps the most recent `RECENT_LOOKUPS`, and forgets all on a reload.
    #[test]
    fn recent_lookups_are_recalled_until_evicted_or_forgotten() {
        let mut instances = Instances::new(2);
        let path = |index: usize| PathBuf::from(format!("/w/f{index}.py"));
        for index in 0..RECENT_LOOKUPS {
            instances.remember(&path(index), &[index, 9]);
        }
        assert_eq!(instances.recalled(&path(0)), Some(vec![0, 9]));
        // f0 is now the most recent, so a new path evicts f1.
        instances.remember(&path(7), &[]);
        assert_eq!(instances.recalled(&path(1)), None);
        assert_eq!(instances.recalled(&path(7)), Some(vec![]));
        assert_eq!(instances.recalled(&path(0)), Some(vec![0, 9]));
        assert_eq!(instances.recalled(Path::new("/w//f0.py")), None);
        assert_eq!(instances.recent.len(), RECENT_LOOKUPS);
        instances.forget_lookups();
        assert_eq!(instances.recalled(&path(0)), None);
    }
}
