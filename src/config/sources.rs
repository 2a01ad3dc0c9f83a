//! Where configuration comes from, in precedence order: each `--config FILE`, each
//! `--plugin-dir DIR` (root `.lsp.json`, then the manifest's `lspServers`), the trusted
//! workspace `.lsp.json`, the user file, the built-in table; reading each file once, keeping the
//! earlier definition of a name across sources and the later one within a source, and naming
//! extension conflicts. Plugin paths stay inside their plugin folder.

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

use super::entry::{MapSource, PluginContext};
use super::json::Json;
use super::*;

/// Loads every source in `options`, reading the process environment (for `${VAR}`, `PATH`,
/// `XDG_DATA_HOME`, `HOME`). Never fails: problems land in [`Config::errors`].
pub fn load(options: &ConfigOptions) -> Config {
    load_with_env(options, &|name| std::env::var(name).ok())
}

/// [`load`] with an injected environment lookup (tests control `PATH` and variables).
pub fn load_with_env(options: &ConfigOptions, env: &dyn Fn(&str) -> Option<String>) -> Config {
    load_sources(options, env, None)
}

/// [`load`] for one file's servers: every configured source is read as by [`load`] (so the
/// errors and notes are the same), but of the built-in table only the servers that serve
/// `extension` (an [`extension_key`], such as `".py"`) are resolved on `PATH` and added. The
/// servers that claim `extension` are then exactly those [`load`] gives for it, in the same
/// order and resolved the same way (the one Python type-checker slot is decided among Python
/// servers only), which is what a one-shot query on such a file needs; other files' servers
/// are missing, so the result must not be used for anything else.
pub fn load_for_extension(options: &ConfigOptions, extension: &str) -> Config {
    load_sources(options, &|name| std::env::var(name).ok(), Some(extension))
}

pub(super) fn load_sources(
    options: &ConfigOptions,
    env: &dyn Fn(&str) -> Option<String>,
    only_extension: Option<&str>,
) -> Config {
    let mut loader = Loader {
        options,
        env,
        servers: Vec::new(),
        errors: Vec::new(),
        notes: Vec::new(),
        loaded_files: HashSet::new(),
    };
    for file in &options.config_files {
        loader.load_file(file, ConfigOrigin::CommandLine(file.clone()), true);
    }
    for dir in &options.plugin_dirs {
        loader.load_plugin(dir);
    }
    let workspace_file = options.root.join(".lsp.json");
    if workspace_file.is_file() {
        if options.trust_workspace {
            loader.load_file(
                &workspace_file,
                ConfigOrigin::Workspace(workspace_file.clone()),
                false,
            );
        } else {
            let note = format!(
                "{} was not loaded because the workspace is not trusted; \
                 pass --trust or set LSPC_TRUST=1 to use it",
                workspace_file.display()
            );
            log::info!("{note}");
            loader.notes.push(note);
        }
    }
    if let Some(user) = &options.user_config {
        loader.load_file(user, ConfigOrigin::User(user.clone()), false);
    }
    let Loader {
        mut servers,
        errors,
        notes,
        ..
    } = loader;
    let mut skipped = Vec::new();
    if options.builtin {
        let path_var = env("PATH");
        let (builtins, unused) =
            builtin::builtin_servers(&servers, &options.root, path_var.as_deref(), only_extension);
        servers.extend(builtins);
        skipped = unused;
    }
    super::linter::turn_off_unusable_features(
        &mut servers,
        &options.root,
        env("PATH").as_deref(),
        env,
    );
    super::gopls::ask_single_phase(&mut servers);
    super::tsserver_routing::ask_full_server_only(&mut servers);
    let conflicts = extension_conflicts(&servers);
    for conflict in &conflicts {
        log::info!("extension conflict: {conflict}");
    }
    Config {
        root: options.root.clone(),
        servers,
        errors,
        conflicts,
        notes,
        skipped,
    }
}

/// Every (earlier, later) pair of available servers sharing an extension, by extension then
/// precedence.
pub(super) fn extension_conflicts(servers: &[ServerConfig]) -> Vec<ExtensionConflict> {
    let mut claimants: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for server in servers.iter().filter(|s| s.resolved_command.is_some()) {
        for extension in server.extension_to_language.keys() {
            claimants.entry(extension).or_default().push(&server.name);
        }
    }
    let mut conflicts = Vec::new();
    for (extension, names) in claimants {
        for secondary in &names[1..] {
            conflicts.push(ExtensionConflict {
                extension: extension.to_string(),
                primary: names[0].to_string(),
                secondary: secondary.to_string(),
            });
        }
    }
    conflicts
}

/// Within one source, a later entry with the same name replaces the earlier one in place
/// (seed 000: manifest `lspServers` are "merged afterward" over the root `.lsp.json`).
pub(super) fn merge_by_name(servers: &mut Vec<ServerConfig>, server: ServerConfig) {
    match servers.iter_mut().find(|s| s.name == server.name) {
        Some(existing) => {
            log::debug!("server \"{}\" redefined; the later entry wins", server.name);
            *existing = server;
        }
        None => servers.push(server),
    }
}

/// The manifest locations tried in a plugin folder, first found wins.
pub(super) const MANIFEST_PATHS: &[&str] =
    &[".claude-plugin/plugin.json", "plugin.json", "manifest.json"];

pub(super) struct Loader<'a> {
    options: &'a ConfigOptions,
    env: &'a dyn Fn(&str) -> Option<String>,
    servers: Vec<ServerConfig>,
    errors: Vec<ConfigError>,
    notes: Vec<String>,
    /// Canonical paths already read, so one file reached twice loads once.
    loaded_files: HashSet<PathBuf>,
}

impl Loader<'_> {
    /// Across sources the earlier definition of a name wins.
    fn add_server(&mut self, server: ServerConfig) {
        if let Some(existing) = self.servers.iter().find(|s| s.name == server.name) {
            log::info!(
                "server \"{}\" from {} ignored: already defined by {}",
                server.name,
                origin_label(&server.origin),
                origin_label(&existing.origin)
            );
            return;
        }
        self.servers.push(server);
    }

    /// Reads and parses `file` unless already read; `None` (with an error unless missing and
    /// not `required`) when it cannot be used.
    fn read_json(&mut self, file: &Path, required: bool) -> Option<Json> {
        let canonical = match file.canonicalize() {
            Ok(canonical) => canonical,
            // A pipe (`--config <(…)`, `/dev/stdin`) exists but has no canonical path: its
            // `/proc/self/fd/N` link names `pipe:[…]`. Read it as named.
            Err(_) if std::fs::metadata(file).is_ok() => file.to_path_buf(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !required => return None,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                self.errors
                    .push(ConfigError::new(file, None, None, "file not found"));
                return None;
            }
            Err(err) => {
                let message = format!("cannot read: {err}");
                self.errors
                    .push(ConfigError::new(file, None, None, &message));
                return None;
            }
        };
        self.read_canonical(file, canonical)
    }

    fn read_canonical(&mut self, file: &Path, canonical: PathBuf) -> Option<Json> {
        if !self.loaded_files.insert(canonical.clone()) {
            log::debug!("{} already loaded", file.display());
            return None;
        }
        let text = match std::fs::read_to_string(&canonical) {
            Ok(text) => text,
            Err(err) => {
                let message = format!("cannot read: {err}");
                self.errors
                    .push(ConfigError::new(file, None, None, &message));
                return None;
            }
        };
        match Json::parse(&text) {
            Ok(json) => Some(json),
            Err(err) => {
                self.errors.push(ConfigError::syntax(file, err));
                None
            }
        }
    }

    /// Loads a plain server-map file (`--config`, workspace, user).
    fn load_file(&mut self, file: &Path, origin: ConfigOrigin, required: bool) {
        let Some(json) = self.read_json(file, required) else {
            return;
        };
        let base_dir = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let source = MapSource {
            file,
            origin,
            base_dir,
            plugin: None,
            root: &self.options.root,
            env: self.env,
        };
        let servers = entry::parse_server_map(&json, &source, &mut self.errors);
        for server in servers {
            self.add_server(server);
        }
    }

    /// Loads a plugin folder: root `.lsp.json`, then the manifest's `lspServers`.
    fn load_plugin(&mut self, dir: &Path) {
        let canonical_root = match dir.canonicalize() {
            Ok(root) if root.is_dir() => root,
            Ok(_) => {
                let error = ConfigError::new(dir, None, None, "plugin folder is not a folder");
                self.errors.push(error);
                return;
            }
            Err(err) => {
                let message = format!("cannot open plugin folder: {err}");
                self.errors
                    .push(ConfigError::new(dir, None, None, &message));
                return;
            }
        };
        let manifest_file = MANIFEST_PATHS
            .iter()
            .map(|p| dir.join(p))
            .find(|p| p.is_file());
        let manifest = manifest_file
            .clone()
            .and_then(|file| self.read_json(&file, true).map(|json| (file, json)));
        let folder_name = canonical_root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".into());
        let name = manifest
            .as_ref()
            .and_then(|(_, json)| json.get("name"))
            .and_then(Json::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .unwrap_or(folder_name);
        let plugin = PluginContext {
            data: plugin_data_dir(self.env, &name),
            name,
            root: canonical_root.clone(),
        };

        let mut plugin_servers = Vec::new();
        let root_file = dir.join(".lsp.json");
        if root_file.symlink_metadata().is_ok() {
            self.load_plugin_file(&plugin, dir, ".lsp.json", &root_file, &mut plugin_servers);
        }
        if let Some((manifest_file, manifest)) = &manifest {
            let mut refs = Vec::new();
            match manifest.get("lspServers") {
                None | Some(Json::Null) => {}
                Some(Json::Array(items)) => {
                    for (index, item) in items.iter().enumerate() {
                        match item {
                            Json::Object(_) | Json::String(_) => refs.push(item),
                            _ => {
                                let message =
                                    format!("item {index}: expected an object or a relative path");
                                self.errors.push(ConfigError::new(
                                    manifest_file,
                                    None,
                                    Some("lspServers"),
                                    &message,
                                ));
                            }
                        }
                    }
                }
                Some(item @ (Json::Object(_) | Json::String(_))) => refs.push(item),
                Some(_) => self.errors.push(ConfigError::new(
                    manifest_file,
                    None,
                    Some("lspServers"),
                    "expected an object, a relative path or an array of those",
                )),
            }
            for item in refs {
                match item {
                    Json::String(relative) => self.load_plugin_file(
                        &plugin,
                        dir,
                        relative,
                        manifest_file,
                        &mut plugin_servers,
                    ),
                    inline => {
                        let source = MapSource {
                            file: manifest_file,
                            origin: ConfigOrigin::Plugin {
                                plugin: plugin.name.clone(),
                                file: manifest_file.clone(),
                            },
                            base_dir: &canonical_root,
                            plugin: Some(&plugin),
                            root: &self.options.root,
                            env: self.env,
                        };
                        let servers = entry::parse_server_map(inline, &source, &mut self.errors);
                        for server in servers {
                            merge_by_name(&mut plugin_servers, server);
                        }
                    }
                }
            }
        }
        for server in plugin_servers {
            self.add_server(server);
        }
    }

    /// Loads the server map at `relative` inside plugin folder `dir` after checking that it
    /// stays inside the folder once `..` and symlinks are resolved (checked before reading).
    /// `referrer` is named in the error when it does not.
    fn load_plugin_file(
        &mut self,
        plugin: &PluginContext,
        dir: &Path,
        relative: &str,
        referrer: &Path,
        plugin_servers: &mut Vec<ServerConfig>,
    ) {
        let file = dir.join(relative);
        let canonical = match contained_path(&plugin.root, relative) {
            Ok(canonical) => canonical,
            Err(message) => {
                let key = (referrer != file).then_some("lspServers");
                self.errors
                    .push(ConfigError::new(referrer, None, key, &message));
                return;
            }
        };
        let Some(json) = self.read_canonical(&file, canonical.clone()) else {
            return;
        };
        let base_dir = canonical.parent().unwrap_or(&plugin.root).to_path_buf();
        let source = MapSource {
            file: &file,
            origin: ConfigOrigin::Plugin {
                plugin: plugin.name.clone(),
                file: file.clone(),
            },
            base_dir: &base_dir,
            plugin: Some(plugin),
            root: &self.options.root,
            env: self.env,
        };
        for server in entry::parse_server_map(&json, &source, &mut self.errors) {
            merge_by_name(plugin_servers, server);
        }
    }
}

/// Resolves `relative` inside the canonical plugin folder `root`: rejects absolute paths and
/// paths that leave the folder lexically (`..`) or through a symlink. `Err` is the message.
pub(super) fn contained_path(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let escapes = || format!("path \"{relative}\" escapes the plugin folder");
    let path = Path::new(relative);
    if path.is_absolute() {
        return Err(format!(
            "path \"{relative}\" must be relative to the plugin folder"
        ));
    }
    let mut depth: usize = 0;
    for component in path.components() {
        match component {
            Component::ParentDir => depth = depth.checked_sub(1).ok_or_else(escapes)?,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(escapes()),
        }
    }
    match root.join(path).canonicalize() {
        Ok(canonical) if canonical.starts_with(root) => Ok(canonical),
        Ok(_) => Err(escapes()),
        Err(err) => Err(format!("cannot read \"{relative}\": {err}")),
    }
}

/// `$XDG_DATA_HOME/lspc/plugins/<plugin>`, else `$HOME/.local/share/lspc/plugins/<plugin>`
/// (the temp dir when neither is set). Never created here. The name is made path-safe.
pub(super) fn plugin_data_dir(env: &dyn Fn(&str) -> Option<String>, plugin: &str) -> PathBuf {
    let safe: String = plugin
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = if safe.chars().all(|c| c == '.') {
        "_".to_string()
    } else {
        safe
    };
    absolute_env_dir(env, "XDG_DATA_HOME")
        .or_else(|| absolute_env_dir(env, "HOME").map(|home| home.join(".local/share")))
        .unwrap_or_else(std::env::temp_dir)
        .join("lspc/plugins")
        .join(safe)
}
