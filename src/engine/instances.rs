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
//!   `rootMarkers`, never above the workspace root; no marker (or a file outside the workspace)
//!   means the workspace-root instance. A server with a `workspaceFolder` or no markers has only
//!   its workspace-root instance.
//! - Each (server, project root) has exactly one slot, for the life of the loop; a reload that
//!   changes the server replaces every slot of it in place (see `reload.rs`).
//! - Each folder's markers are looked up at most once per server: a 20,000-file check stats
//!   folders, not files times markers.

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
}

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

    /// Every slot of configured server `config_index`: the workspace-root one first, then its
    /// project instances in slot order.
    pub(super) fn slots_of(&self, config_index: usize) -> Vec<ServerId> {
        let mut slots: Vec<ServerId> = self
            .by_root
            .iter()
            .filter(|((index, _), _)| *index == config_index)
            .map(|(_, slot)| *slot)
            .collect();
        slots.sort();
        slots.insert(0, self.default_slots[config_index]);
        slots
    }
}

impl State {
    /// The slots (indexes into `servers`) serving `path`, one per configured server claiming
    /// it, in configuration order (primary first); creates missing project instances (not
    /// started).
    pub(super) fn slots_for_path(&mut self, path: &Path) -> Vec<usize> {
        self.options
            .config
            .servers_for_path(path)
            .into_iter()
            .map(|config_index| self.slot_for(config_index, path).0 as usize)
            .collect()
    }

    /// The slots serving `path` ([`Self::slots_for_path`]), each started if it is not running:
    /// what every sync of a file does first. `NoServer` when no server claims the file.
    pub(super) fn start_servers_for(&mut self, path: &Path) -> Result<Vec<usize>, EngineError> {
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
