//! Server configuration: the seeds' `.lsp.json` format, its sources and extension routing.
//!
//! Sources, in precedence order (earlier wins an extension and a server name):
//! each `--config FILE`; each `--plugin-dir DIR` (root `.lsp.json`, then the manifest's
//! `lspServers`, seed 003 "插件开发"); the workspace's `<root>/.lsp.json` (only when trusted);
//! the user file `$XDG_CONFIG_HOME/lspc/lsp.json`; the built-in table.
//!
//! Invariants: loading never fails as a whole; every problem becomes a [`ConfigError`] and the
//! other entries and files still load (seed 000 "Failure behavior"). Server names in
//! [`Config::servers`] are unique. Extension keys are lowercased with one leading dot. Routing
//! only considers servers whose command resolved to an existing executable.
//!
//! Owners: `sources.rs` reads the sources in precedence order; `resolve.rs` resolves commands and
//! the workspace root; `entry.rs` validates one entry, `expand.rs` expands variables,
//! `builtin.rs` is the built-in table, `json_with_comments.rs` the `.json` files sent as `jsonc`,
//! `program.rs` tells which known program an entry runs (through launchers such as `python3 -m`
//! or `uvx`); this file holds the model and routing.

mod builtin;
pub use builtin::{builtin_for_extension, builtin_publishes_diagnostics};
pub mod roots;
pub use builtin::{default_root_markers, default_root_markers_of};
mod entry;
mod expand;
pub mod gopls;
mod json;
mod json_with_comments;
pub mod linter;
pub mod probe;
pub mod program;
mod pylsp_plugins;
mod resolve;
mod sources;
pub mod tsserver_routing;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use json::SyntaxError;
pub use program::{ConfigurationReads, Program};
pub use resolve::{find_in_path, resolve_command, workspace_root};
use sources::merge_by_name;
pub use sources::{load, load_for_extension, load_with_env};

/// One language server lspc may start, after loading, validation and `${VAR}` expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Name shown to users: the `.lsp.json` key, `plugin:<plugin>:<server>` for plugin servers,
    /// or the built-in name (`pyright`, `clangd`, …).
    pub name: String,
    /// The program to run, as configured (after expansion).
    pub command: String,
    /// The program found on PATH (or the absolute/relative path as given) when it exists and is a
    /// file; `None` when it was not found (the server is listed but never started).
    pub resolved_command: Option<PathBuf>,
    pub args: Vec<String>,
    /// Extra environment for the server process, on top of lspc's own environment.
    pub env: BTreeMap<String, String>,
    /// Lowercased extension with its leading dot (`".py"`) to LSP language id (`"python"`).
    /// Never empty.
    pub extension_to_language: BTreeMap<String, String>,
    pub transport: Transport,
    /// Sent as `initialize.initializationOptions`.
    pub initialization_options: Option<Value>,
    /// Sent through `workspace/didChangeConfiguration` and used to answer
    /// `workspace/configuration` by dotted section.
    pub settings: Option<Value>,
    /// The server's workspace folder; `None` means the workspace root. When set, the server
    /// runs as one instance at that folder and `root_markers` are not used.
    pub workspace_folder: Option<PathBuf>,
    /// File or folder names that mark a project root (`pyproject.toml`, `tsconfig.json`): each
    /// file is served by the server's instance for the nearest ancestor folder holding one (the
    /// outermost for `tsconfig.json`/`jsconfig.json`; not above the workspace root), else by the
    /// instance at the workspace root. From the entry's
    /// `rootMarkers` (an lspc extension to the seeds' format), else the defaults for its program
    /// or the languages it serves ([`builtin::default_root_markers_of`]); empty means one
    /// instance. A marker is a name or `FILE:TABLE` ([`roots::holds_marker`]).
    pub root_markers: Vec<String>,
    /// Milliseconds from spawn to the `initialize` result; `None` means lspc's default.
    pub startup_timeout_ms: Option<u64>,
    /// Milliseconds granted to the `shutdown` request; `None` means lspc's default.
    pub shutdown_timeout_ms: Option<u64>,
    /// `false` never restarts the server after a crash (seed 003 `restartOnCrash`).
    pub restart_on_crash: bool,
    /// Crash restarts allowed in one streak (seed 003 `maxRestarts`, default 3).
    pub max_restarts: u32,
    /// `false` (seed 000 `diagnostics:false`) keeps the server for queries but ignores its
    /// diagnostics.
    pub diagnostics: bool,
    /// Why lspc turned `diagnostics` off on this machine: the program or plugins its
    /// diagnostics come from are missing (`linter.rs`), e.g. "bash-language-server lints only
    /// through ShellCheck, and `shellcheck` is not on its PATH"; `None` otherwise.
    pub diagnostics_off_reason: Option<String>,
    /// Why this server cannot format on this machine although it advertises formatting: the
    /// program its formatting runs is missing (`linter.rs`), e.g. "bash-language-server formats
    /// only through shfmt, and `shfmt` is not on its PATH"; `None` otherwise. `format` refuses
    /// its files with this reason, as it refuses a server without `documentFormattingProvider`.
    pub formatting_off_reason: Option<String>,
    /// Where this entry came from, for `lspc servers` and error messages.
    pub origin: ConfigOrigin,
}

impl ServerConfig {
    /// An entry `name` running `command`, from `origin`, with every other field at the seeds'
    /// defaults: not yet found on PATH, no arguments, environment, languages, options, settings
    /// or root markers, stdio, lspc's timeouts, restarted on a crash at most 3 times in a row,
    /// diagnostics on. Callers set what differs with struct-update syntax.
    pub fn new(name: &str, command: &str, origin: ConfigOrigin) -> ServerConfig {
        ServerConfig {
            name: name.to_owned(),
            command: command.to_owned(),
            resolved_command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            extension_to_language: BTreeMap::new(),
            transport: Transport::Stdio,
            initialization_options: None,
            settings: None,
            workspace_folder: None,
            root_markers: Vec::new(),
            startup_timeout_ms: None,
            shutdown_timeout_ms: None,
            restart_on_crash: true,
            max_restarts: 3,
            diagnostics: true,
            diagnostics_off_reason: None,
            formatting_off_reason: None,
            origin,
        }
    }
}

/// How lspc talks to a server: `stdio` (its stdin/stdout), or `socket` (lspc listens on a
/// loopback port and starts the server with `--socket=PORT`; see `process/socket.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Socket,
}

/// The source of a [`ServerConfig`], in precedence order (first wins an extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// `--config FILE`.
    CommandLine(PathBuf),
    /// `--plugin-dir DIR`: the plugin's name and the file the entry came from.
    Plugin { plugin: String, file: PathBuf },
    /// The workspace's own `.lsp.json` (only loaded when the workspace is trusted).
    Workspace(PathBuf),
    /// `$XDG_CONFIG_HOME/lspc/lsp.json`.
    User(PathBuf),
    /// lspc's built-in table of well-known servers.
    BuiltIn,
}

/// What [`load`] reads. Paths are used as given (relative ones against the process cwd) and
/// shown as given in errors and in `lspc servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOptions {
    /// The workspace root (see [`workspace_root`]).
    pub root: PathBuf,
    /// `--config FILE`, repeatable, highest precedence first. A missing file is an error.
    pub config_files: Vec<PathBuf>,
    /// `--plugin-dir DIR`, repeatable, after the config files.
    pub plugin_dirs: Vec<PathBuf>,
    /// Load `<root>/.lsp.json` (`--trust` or `LSPC_TRUST=1`): it names programs to run.
    pub trust_workspace: bool,
    /// The user file; a missing one is not an error.
    pub user_config: Option<PathBuf>,
    /// Append lspc's built-in table (servers found on PATH).
    pub builtin: bool,
}

impl ConfigOptions {
    /// Options for `root` from the process environment: `user_config` is
    /// `$XDG_CONFIG_HOME/lspc/lsp.json` (else `$HOME/.config/lspc/lsp.json`), `builtin` is
    /// true and `trust_workspace` is true when `LSPC_TRUST` is `1` or `true`.
    pub fn new(root: PathBuf) -> ConfigOptions {
        ConfigOptions::from_env(root, &|name| std::env::var(name).ok())
    }

    /// [`ConfigOptions::new`] with an injected environment lookup.
    pub fn from_env(root: PathBuf, env: &dyn Fn(&str) -> Option<String>) -> ConfigOptions {
        let user_config = absolute_env_dir(env, "XDG_CONFIG_HOME")
            .or_else(|| absolute_env_dir(env, "HOME").map(|home| home.join(".config")))
            .map(|dir| dir.join("lspc").join("lsp.json"));
        let trust_workspace = matches!(env("LSPC_TRUST").as_deref(), Some("1" | "true"));
        ConfigOptions {
            root,
            config_files: Vec::new(),
            plugin_dirs: Vec::new(),
            trust_workspace,
            user_config,
            builtin: true,
        }
    }
}

/// An environment variable holding an absolute folder (the XDG spec ignores relative ones).
fn absolute_env_dir(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<PathBuf> {
    env(name).map(PathBuf::from).filter(|dir| dir.is_absolute())
}

/// The loaded configuration: every server in precedence order plus what went wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The workspace root (`${CLAUDE_PROJECT_DIR}`).
    pub root: PathBuf,
    /// Servers in precedence order, names unique. Entries with `resolved_command: None` are
    /// listed but never started or routed to.
    pub servers: Vec<ServerConfig>,
    /// Invalid files and entries (each skipped; everything else still loaded).
    pub errors: Vec<ConfigError>,
    /// A later available server claiming an extension an earlier one claims.
    pub conflicts: Vec<ExtensionConflict>,
    /// Advice for the user, e.g. an untrusted workspace `.lsp.json` that was not loaded.
    pub notes: Vec<String>,
    /// Built-in servers found on PATH but not used, with the reason (for `lspc servers`).
    pub skipped: Vec<SkippedServer>,
}

/// A built-in server that was found but is not used.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedServer {
    pub server: ServerConfig,
    /// Lowercase reason, e.g. `pyright is preferred`.
    pub reason: String,
}

/// Two available servers claim one extension (seed 000 "Extension conflicts"): `primary`
/// (earlier in precedence) serves requests for it; lspc still merges `secondary`'s diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionConflict {
    /// Lowercased, with its dot (`".py"`).
    pub extension: String,
    /// Server name of the earlier claimant.
    pub primary: String,
    /// Server name of the later claimant.
    pub secondary: String,
}

impl fmt::Display for ExtensionConflict {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{}: {} serves requests; {} also claims it (its diagnostics are merged)",
            self.extension, self.primary, self.secondary
        )
    }
}

/// One problem in a configuration file. Displays as
/// `/p/.lsp.json: server "py": key "args": expected an array of strings`, or for a JSON syntax
/// error `/p/.lsp.json:3:5: invalid json: trailing comma`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or plugin folder) as given.
    pub file: PathBuf,
    /// The server's key in the file (not the `plugin:` name).
    pub server: Option<String>,
    /// The entry key (`"args"`) or file-level key (`"lspServers"`).
    pub key: Option<String>,
    /// Lowercase, no trailing period.
    pub message: String,
    /// 1-based line and column of a JSON syntax error.
    pub position: Option<(usize, usize)>,
}

impl ConfigError {
    fn new(file: &Path, server: Option<&str>, key: Option<&str>, message: &str) -> ConfigError {
        ConfigError {
            file: file.to_path_buf(),
            server: server.map(str::to_string),
            key: key.map(str::to_string),
            message: message.to_string(),
            position: None,
        }
    }

    fn syntax(file: &Path, error: SyntaxError) -> ConfigError {
        ConfigError {
            file: file.to_path_buf(),
            server: None,
            key: None,
            message: format!("invalid json: {}", error.message),
            position: Some((error.line, error.column)),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        if let Some(server) = &self.server {
            write!(f, ": server \"{server}\"")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key \"{key}\"")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Indexes into [`Config::servers`] of every available server (command resolved) claiming
    /// `path`'s extension (lowercased, e.g. `".py"`), in precedence order. The first is the
    /// primary: it serves queries. Empty when no server claims the file.
    pub fn servers_for_path(&self, path: &Path) -> Vec<usize> {
        let Some(extension) = extension_key(path) else {
            return Vec::new();
        };
        self.servers
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.resolved_command.is_some() && s.extension_to_language.contains_key(&extension)
            })
            .map(|(index, _)| index)
            .collect()
    }

    /// Whether `path` should be checked when found by walking a folder: an available server
    /// claims it, or a configured (not built-in) server whose command is missing does.
    pub fn claims(&self, path: &Path) -> bool {
        let Some(extension) = extension_key(path) else {
            return false;
        };
        self.servers.iter().any(|server| {
            server.extension_to_language.contains_key(&extension)
                && (server.resolved_command.is_some() || server.origin != ConfigOrigin::BuiltIn)
        })
    }

    /// Why no server serves `path`: for configured (not built-in) servers that claim its
    /// extension but whose command was not found, `server X cannot start: command not found: C`;
    /// otherwise `no language server is configured for .ext files`.
    pub fn why_unserved(&self, path: &Path) -> String {
        let broken: Vec<String> = self
            .unavailable_for(path)
            .map(|server| {
                format!(
                    "server {} cannot start: command not found: {}",
                    server.name, server.command
                )
            })
            .collect();
        if !broken.is_empty() {
            return broken.join("; ");
        }
        no_server_message(path)
    }

    /// The servers configured (not built in) for `path`'s extension whose command was not
    /// found, in precedence order: listed, never started or routed to.
    ///
    /// Asked on every sync (the event loop's hot path): the file's extension is computed only
    /// when some configured server is unavailable at all.
    pub fn unavailable_for<'a>(&'a self, path: &Path) -> impl Iterator<Item = &'a ServerConfig> {
        let mut unavailable = self
            .servers
            .iter()
            .filter(|server| server.resolved_command.is_none())
            .filter(|server| server.origin != ConfigOrigin::BuiltIn)
            .peekable();
        let extension = unavailable.peek().and_then(|_| extension_key(path));
        unavailable.filter(move |server| {
            extension
                .as_ref()
                .is_some_and(|extension| server.extension_to_language.contains_key(extension))
        })
    }

    /// The LSP language id (`textDocument.languageId`) server `server` uses for `path`; `None`
    /// when the index is out of range or the server does not claim the extension. A `.json`
    /// file VS Code opens as JSON with comments (`.vscode/settings.json`, `.eslintrc.json`,
    /// [`json_with_comments`]) is `jsonc` instead of `json` for a server that also claims some
    /// extension as `jsonc` (the built-in vscode-json-language-server's `.jsonc`): such a server
    /// then ignores the file's comments and warns of a trailing comma, as in VS Code.
    pub fn language_id(&self, server: usize, path: &Path) -> Option<&str> {
        let extension = extension_key(path)?;
        let languages = &self.servers.get(server)?.extension_to_language;
        let language = languages.get(&extension)?;
        if language == "json"
            && json_with_comments::is_json_with_comments(path)
            && languages.values().any(|language| language == "jsonc")
        {
            return Some("jsonc");
        }
        Some(language)
    }

    /// Every extension (`".py"`) some available server claims.
    pub fn served_extensions(&self) -> BTreeSet<String> {
        let mut extensions = BTreeSet::new();
        extensions.extend(
            self.servers
                .iter()
                .filter(|s| s.resolved_command.is_some())
                .flat_map(|s| s.extension_to_language.keys().cloned()),
        );
        extensions
    }

    /// The index of the server named `name` (e.g. `plugin:foo:ts`).
    pub fn server_index(&self, name: &str) -> Option<usize> {
        self.servers.iter().position(|s| s.name == name)
    }
}

/// `no language server is configured for .ext files` (or `for files without an extension`):
/// what serves a file is decided by its extension, and the message names no absolute path
/// (every frontend shows paths relative to the workspace root).
pub fn no_server_message(path: &Path) -> String {
    match extension_key(path) {
        Some(extension) => format!("no language server is configured for {extension} files"),
        None => "no language server is configured for files without an extension".to_owned(),
    }
}

/// The routing key of `path`: its last extension, lowercased, with a dot (`"a/B.PY"` →
/// `".py"`). Files whose language is given by their name route as that language's extension:
/// `CMakeLists.txt` as `.cmake`, and as `.dockerfile` what VS Code opens as a Dockerfile
/// ([`is_dockerfile_name`]: `Dockerfile`, `Containerfile`, `Dockerfile.dev`, `app.containerfile`).
/// A file without an extension routes by its `#!` line when that names a shell ShellCheck
/// knows ([`shebang_key`]: `bin/tool` starting `#!/usr/bin/env bash` as `.sh`); else `None`
/// (`Makefile`, `.bashrc`, a missing file). A name that is not UTF-8 (`caf\xE9.py`) routes by
/// its extension all the same (the servers take its URI's percent-encoded bytes).
pub fn extension_key(path: &Path) -> Option<String> {
    let file_name = path.file_name()?.to_string_lossy();
    if is_dockerfile_name(&file_name) {
        return Some(".dockerfile".to_owned());
    }
    if file_name == "CMakeLists.txt" {
        return Some(".cmake".to_owned());
    }
    match path.extension().map(|e| e.to_string_lossy()) {
        Some(e) if !e.is_empty() => {
            // One allocation: this runs for every request (issue 15).
            let mut key = String::with_capacity(e.len() + 1);
            key.push('.');
            key.extend(e.chars().flat_map(char::to_lowercase));
            Some(key)
        }
        Some(_) => None,
        None => shebang_key(path),
    }
}

/// Whether a file name is a Dockerfile's by the patterns of VS Code's Dockerfile language
/// (`extensions/docker/package.json`: `Dockerfile`, `Containerfile`, `Dockerfile.*`,
/// `Containerfile.*`, `*.dockerfile`, `*.containerfile`). The whole name and the extension
/// ignore case (`CONTAINERFILE`, `api.Dockerfile`); the `Dockerfile.*` prefix does not, so a Go
/// `dockerfile.go` stays Go. BuildKit's per-Dockerfile ignore files (`Dockerfile.dockerignore`,
/// `api.Dockerfile.dockerignore`) are not Dockerfiles.
fn is_dockerfile_name(file_name: &str) -> bool {
    let name = file_name.to_ascii_lowercase();
    if name.ends_with(".dockerignore") {
        return false;
    }
    ["dockerfile", "containerfile"].iter().any(|stem| {
        name == *stem
            || name
                .strip_suffix(stem)
                .is_some_and(|rest| rest.ends_with('.'))
    }) || ["Dockerfile.", "Containerfile."]
        .iter()
        .any(|prefix| file_name.starts_with(prefix))
}

/// The routing key of a script without an extension, from its first line: `.sh` when its `#!`
/// runs `sh`, `bash`, `dash` or `ksh` (the shells ShellCheck, and so bash-language-server,
/// lints), by path (`#!/bin/bash -e`) or through `env` (`#!/usr/bin/env bash`, `#!/usr/bin/env
/// -S bash -e`); `None` for any other file, a `zsh` or `python` script, or one that cannot be
/// read. Reads at most the first 128 bytes, of a regular file only: opening a named pipe would
/// wait for a writer (rbenv's `libexec/` and shunit2's `shunit2` are such scripts: without it,
/// `lspc check .` passed over them without a word).
///
/// Answers are remembered by path, modification time and length, since one file is routed
/// several times (what claims it, which servers serve it, its language id): rbenv's
/// `libexec/rbenv-which` was read 6 times by one `lspc check`.
pub fn shebang_key(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    let stamp = (metadata.modified().ok()?, metadata.len());
    if let Some(key) = recent_sniffs::recall(path, stamp) {
        return key;
    }
    let key = sniff_shebang(path);
    recent_sniffs::remember(path, stamp, key.clone());
    key
}

/// [`shebang_key`]'s answers, at most [`recent_sniffs::KEPT`] (all forgotten when full).
mod recent_sniffs {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;
    use std::time::SystemTime;

    /// How many answers are kept: a check routes every file in a few passes (hints, selection,
    /// servers), so each pass must find the whole tree's scripts still there.
    pub(super) const KEPT: usize = 4096;

    type Stamp = (SystemTime, u64);

    /// Path → (stamp, key).
    type Known = HashMap<PathBuf, (Stamp, Option<String>)>;

    static KNOWN: Mutex<Option<Known>> = Mutex::new(None);

    /// The remembered key of `path` if its stamp (modification time, length) is unchanged.
    pub(super) fn recall(path: &Path, stamp: Stamp) -> Option<Option<String>> {
        let known = KNOWN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (known_stamp, key) = known.as_ref()?.get(path)?;
        (*known_stamp == stamp).then(|| key.clone())
    }

    pub(super) fn remember(path: &Path, stamp: Stamp, key: Option<String>) {
        let mut known = KNOWN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let known = known.get_or_insert_with(HashMap::new);
        if known.len() >= KEPT {
            known.clear();
        }
        known.insert(path.to_path_buf(), (stamp, key));
    }
}

/// [`shebang_key`]'s reading, of a regular file.
fn sniff_shebang(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 128];
    let mut file = std::fs::File::open(path).ok()?;
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let line = head[..read].strip_prefix(b"#!")?;
    let line = line.split(|&byte| byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_ascii_whitespace();
    let mut program = words.next()?.rsplit('/').next()?;
    if program == "env" {
        program = words.find(|word| !word.starts_with('-') && !word.contains('='))?;
    }
    matches!(program, "sh" | "bash" | "dash" | "ksh").then(|| ".sh".to_owned())
}

/// How `lspc servers` names an origin: `--config ./x.json`, `plugin foo`, `workspace`,
/// `user`, `built-in`.
pub fn origin_label(origin: &ConfigOrigin) -> String {
    match origin {
        ConfigOrigin::CommandLine(file) => format!("--config {}", file.display()),
        ConfigOrigin::Plugin { plugin, .. } => format!("plugin {plugin}"),
        ConfigOrigin::Workspace(_) => "workspace".into(),
        ConfigOrigin::User(_) => "user".into(),
        ConfigOrigin::BuiltIn => "built-in".into(),
    }
}

/// The `lspc servers` report: an aligned table (NAME, ORIGIN, STATUS, EXTENSIONS; one row
/// per server in precedence order, extensions sorted and space-separated), then sections
/// `not used:`, `conflicts:`, `errors:` and `notes:` when non-empty. Ends with a newline.
pub fn render_servers(config: &Config) -> String {
    render_servers_with(config, &|_| None)
}

/// [`render_servers`] where `broken` says why a found program cannot run (see
/// [`probe::broken_reason`]); such rows read `found but broken`, and a `broken:` section gives
/// `name: path: reason`.
pub fn render_servers_with(
    config: &Config,
    broken: &dyn Fn(&ServerConfig) -> Option<String>,
) -> String {
    // Probed once per server; the reasons get their own section (they are long).
    let broken_reasons: Vec<(String, String)> = config
        .servers
        .iter()
        .filter_map(|server| {
            let path = server.resolved_command.as_ref()?;
            let reason = broken(server)?;
            Some((server.name.clone(), format!("{}: {reason}", path.display())))
        })
        .collect();
    let status = |server: &ServerConfig| match &server.resolved_command {
        Some(_) if broken_reasons.iter().any(|(name, _)| *name == server.name) => {
            "found but broken".to_string()
        }
        Some(path) => format!("found {}", path.display()),
        None => "not found".to_string(),
    };
    let extensions = |server: &ServerConfig| {
        server
            .extension_to_language
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut rows = vec![[
        "NAME".to_string(),
        "ORIGIN".to_string(),
        "STATUS".to_string(),
        "EXTENSIONS".to_string(),
    ]];
    for server in &config.servers {
        rows.push([
            server.name.clone(),
            origin_label(&server.origin),
            status(server),
            extensions(server),
        ]);
    }
    let mut widths = [0usize; 3];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row.iter()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    if config.servers.is_empty() {
        out.push_str("no servers configured\n");
    } else {
        for row in &rows {
            let mut line = String::new();
            for (cell, width) in row.iter().zip(widths.iter()) {
                line.push_str(&format!("{cell:<width$}  "));
            }
            line.push_str(&row[3]);
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    let mut section = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            out.push_str(&format!("{title}:\n"));
            for line in lines {
                out.push_str(&format!("  {line}\n"));
            }
        }
    };
    section(
        "not used",
        config
            .skipped
            .iter()
            .map(|s| {
                format!(
                    "{} ({}, {}): {}",
                    s.server.name,
                    origin_label(&s.server.origin),
                    status(&s.server),
                    s.reason
                )
            })
            .collect(),
    );
    section(
        "broken",
        broken_reasons
            .iter()
            .map(|(name, reason)| format!("{name}: {reason}"))
            .collect(),
    );
    section(
        "diagnostics off",
        config
            .servers
            .iter()
            .filter_map(|server| {
                let reason = server.diagnostics_off_reason.as_ref()?;
                Some(format!(
                    "{}: {reason}; its diagnostics are not used, queries still are",
                    server.name
                ))
            })
            .collect(),
    );
    section(
        "formatting off",
        config
            .servers
            .iter()
            .filter_map(|server| {
                let reason = server.formatting_off_reason.as_ref()?;
                Some(format!(
                    "{}: {reason}; `format` refuses its files",
                    server.name
                ))
            })
            .collect(),
    );
    section(
        "conflicts",
        config.conflicts.iter().map(ToString::to_string).collect(),
    );
    section(
        "errors",
        config.errors.iter().map(ToString::to_string).collect(),
    );
    section("notes", config.notes.clone());
    out
}

/// Options loading nothing but what a test adds: no files, no plugins, no user configuration,
/// no built-ins, rooted at `root`.
#[cfg(test)]
pub(crate) fn test_options(root: &Path) -> ConfigOptions {
    ConfigOptions {
        root: root.to_path_buf(),
        config_files: Vec::new(),
        plugin_dirs: Vec::new(),
        trust_workspace: false,
        user_config: None,
        builtin: false,
    }
}

/// A built-in-like entry `name` running `command` (found at that path), serving `.go` files,
/// with every option at its default: the base of unit tests' entries.
#[cfg(test)]
pub(crate) fn test_entry(name: &str, command: &str) -> ServerConfig {
    ServerConfig {
        resolved_command: Some(command.into()),
        extension_to_language: [(".go".to_owned(), "go".to_owned())].into(),
        ..ServerConfig::new(name, command, ConfigOrigin::BuiltIn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_script_without_an_extension_routes_by_its_shebang() {
        let dir = std::env::temp_dir().join(format!("lspc-shebang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = |name: &str, text: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            extension_key(&path)
        };
        let sh = Some(".sh".to_owned());
        assert_eq!(key("a", b"#!/bin/bash\necho hi\n"), sh);
        assert_eq!(key("b", b"#!/bin/sh -e\n"), sh);
        assert_eq!(key("c", b"#!/usr/bin/env bash\n"), sh);
        assert_eq!(key("d", b"#!/usr/bin/env -S bash -e\n"), sh);
        assert_eq!(key("e", b"#! /usr/bin/env LC_ALL=C dash\n"), sh);
        assert_eq!(key("f", b"#!/bin/ksh"), sh);
        for (name, text) in [
            ("g", &b"#!/usr/bin/env zsh\n"[..]),
            ("h", b"#!/usr/bin/env python3\n"),
            ("i", b"echo no shebang\n"),
            ("j", b""),
            ("k", b"#!/usr/bin/env\n"),
            ("l", b"#!\xff\xfe\n"),
            ("m", b"\n#!/bin/bash\n"),
        ] {
            assert_eq!(key(name, text), None, "{name}");
        }
        // An extension wins; a missing file, a folder and a named pipe (never opened: that
        // would wait for a writer) have no key.
        assert_eq!(key("n.txt", b"#!/bin/bash\n").as_deref(), Some(".txt"));
        assert_eq!(extension_key(&dir.join("missing")), None);
        std::fs::create_dir(dir.join("folder")).unwrap();
        assert_eq!(extension_key(&dir.join("folder")), None);
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            assert_eq!(extension_key(&fifo), None);
        }
        // A remembered answer holds while the file is unchanged, and not after it changes.
        let script = dir.join("script");
        std::fs::write(&script, b"#!/bin/bash\n").unwrap();
        assert_eq!(extension_key(&script), sh);
        assert_eq!(extension_key(&script), sh);
        std::fs::write(&script, b"#!/usr/bin/env python3\n").unwrap();
        assert_eq!(extension_key(&script), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn extension_key_routes_by_extension_and_by_whole_name() {
        let check = |path: &str, expected: Option<&str>| {
            assert_eq!(
                extension_key(Path::new(path)).as_deref(),
                expected,
                "{path}"
            );
        };
        check("a/B.PY", Some(".py"));
        check("Makefile", None);
        check(".bashrc", None);
        check("srv/Dockerfile", Some(".dockerfile"));
        check("Containerfile", Some(".dockerfile"));
        check("build.Dockerfile", Some(".dockerfile"));
        check("Dockerfile.dev", Some(".dockerfile"));
        check("deploy/Dockerfile.prod", Some(".dockerfile"));
        check("Containerfile.ci", Some(".dockerfile"));
        check("app.containerfile", Some(".dockerfile"));
        check("App.Containerfile", Some(".dockerfile"));
        check("Dockerfile.dockerignore", Some(".dockerignore"));
        check("api.Dockerfile.dockerignore", Some(".dockerignore"));
        check("Dockerfile.", Some(".dockerfile"));
        check("dockerfile.dev", Some(".dev"));
        check("dockerfile.go", Some(".go"));
        check("pkg/containerfile.rs", Some(".rs"));
        check("CONTAINERFILE", Some(".dockerfile"));
        check("NotADockerfile.txt", Some(".txt"));
        check("sub/CMakeLists.txt", Some(".cmake"));
        check("notes.txt", Some(".txt"));
        check("cmakelists.txt", Some(".txt"));
        // A file name that is not UTF-8 still routes by its extension.
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.py");
            assert_eq!(extension_key(Path::new(latin1)).as_deref(), Some(".py"));
        }
    }

    /// A unique temp folder (canonical path), removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let n = COUNTER.fetch_add(1, Ordering::SeqCst);
            let dir = std::env::temp_dir()
                .join(format!("lspc-config-test-{}-{n}-{tag}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir.canonicalize().unwrap())
        }

        fn path(&self, relative: &str) -> PathBuf {
            self.0.join(relative)
        }

        fn write(&self, relative: &str, content: &str) -> PathBuf {
            let path = self.path(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, content).unwrap();
            path
        }

        /// A fake executable (mode 755).
        fn exe(&self, relative: &str) -> PathBuf {
            use std::os::unix::fs::PermissionsExt;
            let path = self.write(relative, "#!/bin/sh\n");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        }

        /// The display form of this dir, for substituting `{dir}` in expectations.
        fn show(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    fn names(config: &Config) -> Vec<&str> {
        config.servers.iter().map(|s| s.name.as_str()).collect()
    }

    fn error_strings(config: &Config, dir: &TempDir) -> Vec<String> {
        config
            .errors
            .iter()
            .map(|e| e.to_string().replace(&dir.show(), "{dir}"))
            .collect()
    }

    /// Loads `{"py": <valid entry + extra>, "ok": <valid>}` from one `--config` file and
    /// checks the errors; the valid sibling must always load.
    fn check_entry_errors(extra: &str, expected: &[&str]) {
        let dir = TempDir::new("entry");
        let text = format!(
            r#"{{"py": {{"command": "srv", "extensionToLanguage": {{".py": "python"}}{extra}}},
                "ok": {{"command": "ok", "extensionToLanguage": {{".ok": "ok"}}}}}}"#
        );
        let file = dir.write("x.json", &text);
        let mut options = test_options(&dir.0);
        options.config_files.push(file);
        let config = load_with_env(&options, &env_of(&[]));
        assert_eq!(error_strings(&config, &dir), expected, "{extra}");
        let expected_names: &[&str] = if expected.is_empty() {
            &["py", "ok"]
        } else {
            &["ok"]
        };
        assert_eq!(names(&config), expected_names, "{extra}");
    }

    #[test]
    fn entry_type_errors() {
        let p = |key: &str, message: &str| {
            format!("{{dir}}/x.json: server \"py\": key \"{key}\": {message}")
        };
        check_entry_errors("", &[]);
        check_entry_errors(
            r#", "args": 5"#,
            &[&p("args", "expected an array of strings")],
        );
        check_entry_errors(
            r#", "args": ["a", 1]"#,
            &[&p("args", "expected an array of strings")],
        );
        check_entry_errors(r#", "command": 5"#, &[&p("command", "expected a string")]);
        check_entry_errors(
            r#", "command": "  ""#,
            &[&p("command", "must not be empty")],
        );
        check_entry_errors(
            r#", "command": "ruff server""#,
            &[&p(
                "command",
                "must be a program without arguments; put arguments in \"args\"",
            )],
        );
        // With args, a space is taken to be part of the program's path.
        check_entry_errors(r#", "command": "/opt/my tools/srv", "args": ["x"]"#, &[]);
        check_entry_errors(
            r#", "extensionToLanguage": []"#,
            &[&p(
                "extensionToLanguage",
                "expected an object mapping extensions to language ids",
            )],
        );
        check_entry_errors(
            r#", "extensionToLanguage": {}"#,
            &[&p("extensionToLanguage", "must map at least one extension")],
        );
        check_entry_errors(
            r#", "extensionToLanguage": {".py": 1}"#,
            &[&p(
                "extensionToLanguage",
                "extension \".py\": expected a non-empty language id string",
            )],
        );
        check_entry_errors(
            r#", "extensionToLanguage": {".": "x"}"#,
            &[&p("extensionToLanguage", "extension \".\" is empty")],
        );
        check_entry_errors(
            r#", "transport": "tcp""#,
            &[&p("transport", "expected \"stdio\" or \"socket\"")],
        );
        check_entry_errors(
            r#", "env": {"A": 1}"#,
            &[&p("env", "expected an object of string values")],
        );
        check_entry_errors(
            r#", "env": ["A"]"#,
            &[&p("env", "expected an object of string values")],
        );
        for markers in [
            r#""pyproject.toml""#,
            "[1]",
            r#"["a/b"]"#,
            r#"[""]"#,
            r#"[".."]"#,
        ] {
            check_entry_errors(
                &format!(r#", "rootMarkers": {markers}"#),
                &[&p(
                    "rootMarkers",
                    "expected an array of file or folder names (no '/')",
                )],
            );
        }
        check_entry_errors(
            r#", "workspaceFolder": 3"#,
            &[&p("workspaceFolder", "expected a string")],
        );
        check_entry_errors(
            r#", "startupTimeout": -1"#,
            &[&p(
                "startupTimeout",
                "expected a non-negative integer (milliseconds)",
            )],
        );
        check_entry_errors(
            r#", "shutdownTimeout": "5s""#,
            &[&p(
                "shutdownTimeout",
                "expected a non-negative integer (milliseconds)",
            )],
        );
        check_entry_errors(
            r#", "restartOnCrash": "yes""#,
            &[&p("restartOnCrash", "expected a boolean")],
        );
        check_entry_errors(
            r#", "diagnostics": 0"#,
            &[&p("diagnostics", "expected a boolean")],
        );
        check_entry_errors(
            r#", "maxRestarts": 1.5"#,
            &[&p("maxRestarts", "expected a non-negative integer")],
        );
        check_entry_errors(
            r#", "maxRestarts": 5000000000"#,
            &[&p("maxRestarts", "expected a non-negative integer")],
        );
        // Unknown keys and nulls in optional keys are fine.
        check_entry_errors(
            r#", "loggingConfig": {}, "args": null, "settings": null"#,
            &[],
        );
        // Every error of one entry is reported.
        check_entry_errors(
            r#", "args": 1, "diagnostics": "no""#,
            &[
                &p("args", "expected an array of strings"),
                &p("diagnostics", "expected a boolean"),
            ],
        );
    }

    #[test]
    fn required_keys_and_entry_shape() {
        let dir = TempDir::new("required");
        let file = dir.write(
            "x.json",
            r#"{"a": {"extensionToLanguage": {"py": "python"}},
                "b": {"command": "srv"},
                "c": "srv",
                "": {"command": "srv", "extensionToLanguage": {"py": "python"}}}"#,
        );
        let mut options = test_options(&dir.0);
        options.config_files.push(file);
        let config = load_with_env(&options, &env_of(&[]));
        assert_eq!(
            error_strings(&config, &dir),
            [
                "{dir}/x.json: server \"a\": key \"command\": missing required key",
                "{dir}/x.json: server \"b\": key \"extensionToLanguage\": missing required key",
                "{dir}/x.json: server \"c\": expected an object",
                "{dir}/x.json: server \"\": server name must not be empty",
            ]
        );
        assert!(config.servers.is_empty());
    }

    #[test]
    fn file_level_errors() {
        let dir = TempDir::new("files");
        let broken = dir.write("broken.json", "{\n  \"py\": {\"command\": \"srv\",}\n}");
        let array = dir.write("array.json", "[]");
        let good = dir.write(
            "good.json",
            r#"{"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}}}"#,
        );
        let mut options = test_options(&dir.0);
        options.config_files = vec![broken, dir.path("missing.json"), array, good];
        options.user_config = Some(dir.path("no-user.json"));
        let config = load_with_env(&options, &env_of(&[]));
        assert_eq!(
            error_strings(&config, &dir),
            [
                "{dir}/broken.json:2:27: invalid json: trailing comma",
                "{dir}/missing.json: file not found",
                "{dir}/array.json: expected an object mapping server names to server entries",
            ]
        );
        assert_eq!(names(&config), ["go"]);
    }

    #[test]
    fn full_entry() {
        let dir = TempDir::new("full");
        let bin = dir.exe("bin/srv");
        let file = dir.write(
            "cfg/x.json",
            r#"{"py": {
                "command": "../bin/srv",
                "args": ["--stdio", "${HOME}/x"],
                "extensionToLanguage": {"PY": "python", ".Pyi": "python"},
                "transport": "socket",
                "env": {"A": "${HOME}", "CLAUDE_PROJECT_DIR": "mine"},
                "initializationOptions": {"b": [1]},
                "settings": {"python": {"x": true}},
                "workspaceFolder": "sub",
                "startupTimeout": 5000,
                "shutdownTimeout": 100,
                "restartOnCrash": false,
                "maxRestarts": 7,
                "diagnostics": false,
                "rootMarkers": ["BUILD", ".project"]
            }}"#,
        );
        let mut options = test_options(&dir.0);
        options.config_files.push(file.clone());
        let config = load_with_env(&options, &env_of(&[("HOME", "/home/u")]));
        assert_eq!(config.errors, []);
        let expected = ServerConfig {
            name: "py".into(),
            command: "../bin/srv".into(),
            resolved_command: Some(dir.path("cfg/../bin/srv")),
            args: vec!["--stdio".into(), "/home/u/x".into()],
            env: BTreeMap::from([
                ("A".to_string(), "/home/u".to_string()),
                ("CLAUDE_PROJECT_DIR".to_string(), "mine".to_string()),
            ]),
            extension_to_language: BTreeMap::from([
                (".py".to_string(), "python".to_string()),
                (".pyi".to_string(), "python".to_string()),
            ]),
            transport: Transport::Socket,
            initialization_options: Some(serde_json::json!({"b": [1]})),
            settings: Some(serde_json::json!({"python": {"x": true}})),
            workspace_folder: Some(dir.path("sub")),
            root_markers: vec!["BUILD".into(), ".project".into()],
            startup_timeout_ms: Some(5000),
            shutdown_timeout_ms: Some(100),
            restart_on_crash: false,
            max_restarts: 7,
            diagnostics: false,
            diagnostics_off_reason: None,
            formatting_off_reason: None,
            origin: ConfigOrigin::CommandLine(file),
        };
        assert_eq!(config.servers, [expected]);
        assert!(bin.exists());
    }

    #[test]
    fn defaults_and_project_dir_env() {
        let dir = TempDir::new("defaults");
        let file = dir.write(
            "x.json",
            r#"{"py": {"command": "srv", "extensionToLanguage": {".py": "python"},
                       "workspaceFolder": "/abs/${MISSING}w"}}"#,
        );
        let mut options = test_options(&dir.0);
        options.config_files.push(file);
        let config = load_with_env(&options, &env_of(&[]));
        let server = &config.servers[0];
        assert_eq!(
            (
                server.transport,
                server.restart_on_crash,
                server.max_restarts,
                server.diagnostics,
                server.startup_timeout_ms,
                server.resolved_command.clone(),
                server.workspace_folder.clone(),
            ),
            (
                Transport::Stdio,
                true,
                3,
                true,
                None,
                None,
                Some(PathBuf::from("/abs/w"))
            )
        );
        assert_eq!(
            server.env,
            BTreeMap::from([("CLAUDE_PROJECT_DIR".to_string(), dir.show())])
        );
    }

    /// Loads plugin folder `plugin` inside a fresh temp dir populated with `files`, and
    /// returns (server name, command, args, extensions, origin file relative to the dir) plus
    /// the errors.
    #[allow(clippy::type_complexity)]
    fn check_plugin(
        files: &[(&str, &str)],
        expected_servers: &[(&str, &str, &[&str], &str)],
        expected_errors: &[&str],
    ) {
        let dir = TempDir::new("plugin");
        for (path, content) in files {
            dir.write(path, content);
        }
        let mut options = test_options(&dir.path("ws"));
        options.plugin_dirs.push(dir.path("plug"));
        let env = env_of(&[("XDG_DATA_HOME", "/data")]);
        let config = load_with_env(&options, &env);
        let servers: Vec<(String, String, Vec<String>, String)> = config
            .servers
            .iter()
            .map(|s| {
                let ConfigOrigin::Plugin { file, .. } = &s.origin else {
                    panic!("not a plugin origin: {:?}", s.origin);
                };
                let extensions: Vec<&str> =
                    s.extension_to_language.keys().map(String::as_str).collect();
                (
                    s.name.clone(),
                    s.command.replace(&dir.show(), "{dir}"),
                    s.args.clone(),
                    format!(
                        "{} {}",
                        extensions.join(","),
                        file.strip_prefix(&dir.0).unwrap().display()
                    ),
                )
            })
            .collect();
        let expected: Vec<(String, String, Vec<String>, String)> = expected_servers
            .iter()
            .map(|(n, c, a, o)| {
                (
                    n.to_string(),
                    c.to_string(),
                    a.iter().map(|s| s.to_string()).collect(),
                    o.to_string(),
                )
            })
            .collect();
        assert_eq!(servers, expected);
        assert_eq!(error_strings(&config, &dir), expected_errors);
    }

    const TS_ENTRY: &str = r#"{"command": "typescript-language-server", "args": ["--stdio"],
        "extensionToLanguage": {".ts": "typescript", ".tsx": "typescriptreact"}}"#;

    #[test]
    fn plugin_manifest_formats() {
        // 1. Inline map in the manifest (seed 003 format 1), name from the manifest.
        let inline =
            format!(r#"{{"name": "typescript-lsp", "lspServers": {{"typescript": {TS_ENTRY}}}}}"#);
        check_plugin(
            &[("plug/manifest.json", &inline)],
            &[(
                "plugin:typescript-lsp:typescript",
                "typescript-language-server",
                &["--stdio"],
                ".ts,.tsx plug/manifest.json",
            )],
            &[],
        );
        // 2. A relative path (format 2), manifest under .claude-plugin/, no name: folder name.
        let lsp = format!(r#"{{"typescript": {TS_ENTRY}}}"#);
        check_plugin(
            &[
                (".claude-plugin/ignored", ""),
                (
                    "plug/.claude-plugin/plugin.json",
                    r#"{"lspServers": "path/to/.lsp.json"}"#,
                ),
                ("plug/path/to/.lsp.json", &lsp),
            ],
            &[(
                "plugin:plug:typescript",
                "typescript-language-server",
                &["--stdio"],
                ".ts,.tsx plug/path/to/.lsp.json",
            )],
            &[],
        );
        // 3. An array of both (format 3), plus a root .lsp.json loaded first; the manifest
        // entry with the same name replaces the root one in place.
        let manifest = r#"{"name": "multi", "lspServers": [
            "path/to/.lsp.json",
            {"another-server": {"command": "another", "extensionToLanguage": {"x": "x"}}},
            {"root-one": {"command": "replaced", "extensionToLanguage": {"r": "r"}}},
            7
        ]}"#;
        check_plugin(
            &[
                ("plug/plugin.json", manifest),
                (
                    "plug/.lsp.json",
                    r#"{"root-one": {"command": "root", "extensionToLanguage": {"r": "r"}},
                        "root-two": {"command": "two", "extensionToLanguage": {"t": "t"}}}"#,
                ),
                ("plug/path/to/.lsp.json", &lsp),
            ],
            &[
                ("plugin:multi:root-one", "replaced", &[], ".r plug/plugin.json"),
                ("plugin:multi:root-two", "two", &[], ".t plug/.lsp.json"),
                (
                    "plugin:multi:typescript",
                    "typescript-language-server",
                    &["--stdio"],
                    ".ts,.tsx plug/path/to/.lsp.json",
                ),
                ("plugin:multi:another-server", "another", &[], ".x plug/plugin.json"),
            ],
            &["{dir}/plug/plugin.json: key \"lspServers\": item 3: expected an object or a relative path"],
        );
        // Plugin root expansion in commands.
        check_plugin(
            &[(
                "plug/.lsp.json",
                r#"{"s": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/s", "extensionToLanguage": {"s": "s"}}}"#,
            )],
            &[(
                "plugin:plug:s",
                "{dir}/plug/bin/s",
                &[],
                ".s plug/.lsp.json",
            )],
            &[],
        );
        // Wrong lspServers type; an invalid manifest still lets the root .lsp.json load.
        check_plugin(
            &[("plug/plugin.json", r#"{"lspServers": 5}"#)],
            &[],
            &["{dir}/plug/plugin.json: key \"lspServers\": expected an object, a relative path or an array of those"],
        );
        check_plugin(
            &[("plug/plugin.json", "{"), ("plug/.lsp.json", &lsp)],
            &[(
                "plugin:plug:typescript",
                "typescript-language-server",
                &["--stdio"],
                ".ts,.tsx plug/.lsp.json",
            )],
            &["{dir}/plug/plugin.json:1:1: invalid json: EOF while parsing an object"],
        );
        check_plugin(
            &[("other/x", "")],
            &[],
            &["{dir}/plug: cannot open plugin folder: No such file or directory (os error 2)"],
        );
    }

    #[test]
    fn plugin_path_escape_is_rejected_before_reading() {
        // The outside files are invalid JSON: reading them would add a syntax error.
        let outside = "{ not json";
        check_plugin(
            &[
                ("plug/plugin.json", r#"{"lspServers": ["../outside.json", "sub/../../outside.json", "/etc/passwd", "nope.json"]}"#),
                ("outside.json", outside),
                ("plug/sub/keep", ""),
            ],
            &[],
            &[
                "{dir}/plug/plugin.json: key \"lspServers\": path \"../outside.json\" escapes the plugin folder",
                "{dir}/plug/plugin.json: key \"lspServers\": path \"sub/../../outside.json\" escapes the plugin folder",
                "{dir}/plug/plugin.json: key \"lspServers\": path \"/etc/passwd\" must be relative to the plugin folder",
                "{dir}/plug/plugin.json: key \"lspServers\": cannot read \"nope.json\": No such file or directory (os error 2)",
            ],
        );
        // A symlink inside the folder pointing outside, as a reference and as the root file.
        let dir = TempDir::new("symlink");
        dir.write("outside.json", outside);
        dir.write("plug/plugin.json", r#"{"lspServers": "link.json"}"#);
        std::os::unix::fs::symlink(dir.path("outside.json"), dir.path("plug/link.json")).unwrap();
        std::os::unix::fs::symlink(dir.path("outside.json"), dir.path("plug/.lsp.json")).unwrap();
        let mut options = test_options(&dir.path("ws"));
        options.plugin_dirs.push(dir.path("plug"));
        let config = load_with_env(&options, &env_of(&[]));
        assert_eq!(
            error_strings(&config, &dir),
            [
                "{dir}/plug/.lsp.json: path \".lsp.json\" escapes the plugin folder",
                "{dir}/plug/plugin.json: key \"lspServers\": path \"link.json\" escapes the plugin folder",
            ]
        );
    }

    #[test]
    fn plugin_env_and_data_dir() {
        let dir = TempDir::new("plugenv");
        dir.write(
            "plug/.lsp.json",
            r#"{"s": {"command": "s", "args": ["${CLAUDE_PLUGIN_DATA}", "${user_config.token}", "${NOPE}"],
                      "env": {"P": "${CLAUDE_PROJECT_DIR}"},
                      "extensionToLanguage": {"s": "s"}}}"#,
        );
        dir.write("plug/plugin.json", r#"{"name": "my plugin"}"#);
        let mut options = test_options(&dir.path("ws"));
        options.plugin_dirs.push(dir.path("plug"));
        let config = load_with_env(&options, &env_of(&[("HOME", "/home/u")]));
        let server = &config.servers[0];
        assert_eq!(server.name, "plugin:my plugin:s");
        assert_eq!(
            server.args,
            [
                "/home/u/.local/share/lspc/plugins/my_plugin",
                "${user_config.token}",
                ""
            ]
        );
        let ws = dir.path("ws").display().to_string();
        assert_eq!(
            server.env,
            BTreeMap::from([
                (
                    "CLAUDE_PLUGIN_DATA".to_string(),
                    "/home/u/.local/share/lspc/plugins/my_plugin".to_string()
                ),
                (
                    "CLAUDE_PLUGIN_ROOT".to_string(),
                    dir.path("plug").display().to_string()
                ),
                ("CLAUDE_PROJECT_DIR".to_string(), ws.clone()),
                ("P".to_string(), ws),
            ])
        );
        assert!(!Path::new("/home/u/.local/share/lspc").exists());
    }

    #[test]
    fn precedence_conflicts_and_routing() {
        let dir = TempDir::new("precedence");
        dir.exe("bin/a");
        dir.exe("bin/b");
        dir.exe("bin/c");
        dir.exe("bin/d");
        let entry = |command: &str, exts: &str| {
            format!(r#"{{"command": "{command}", "extensionToLanguage": {exts}}}"#)
        };
        let cli = dir.write(
            "cli.json",
            &format!(
                r#"{{"zeta": {}, "alpha": {}, "missing": {}}}"#,
                entry("a", r#"{".py": "python"}"#),
                entry("b", r#"{".PY": "python3", ".rs": "rust"}"#),
                entry("not-installed", r#"{".go": "go"}"#)
            ),
        );
        dir.write(
            "plug/.lsp.json",
            &format!(r#"{{"p": {}}}"#, entry("c", r#"{".rs": "rust"}"#)),
        );
        dir.write(
            "ws/.lsp.json",
            &format!(
                r#"{{"w": {}, "zeta": {}}}"#,
                entry("d", r#"{"GO": "go"}"#),
                entry("d", r#"{".zz": "z"}"#)
            ),
        );
        let user = dir.write(
            "user.json",
            &format!(r#"{{"u": {}}}"#, entry("a", r#"{"go": "golang"}"#)),
        );
        let mut options = test_options(&dir.path("ws"));
        options.config_files.push(cli);
        options.plugin_dirs.push(dir.path("plug"));
        options.user_config = Some(user);
        options.trust_workspace = true;
        let path_var = dir.path("bin").display().to_string();
        let config = load_with_env(&options, &env_of(&[("PATH", &path_var)]));
        assert_eq!(config.errors, []);
        // Document order within a file; "zeta" from the workspace loses to the --config one.
        assert_eq!(
            names(&config),
            ["zeta", "alpha", "missing", "plugin:plug:p", "w", "u"]
        );
        let conflicts: Vec<String> = config.conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            conflicts,
            [
                ".go: w serves requests; u also claims it (its diagnostics are merged)",
                ".py: zeta serves requests; alpha also claims it (its diagnostics are merged)",
                ".rs: alpha serves requests; plugin:plug:p also claims it (its diagnostics are merged)",
            ]
        );
        let check_route = |path: &str, expected: &[(&str, &str)]| {
            let got: Vec<(&str, &str)> = config
                .servers_for_path(Path::new(path))
                .into_iter()
                .map(|i| {
                    (
                        config.servers[i].name.as_str(),
                        config.language_id(i, Path::new(path)).unwrap_or("?"),
                    )
                })
                .collect();
            assert_eq!(got, expected, "{path}");
        };
        check_route("src/m.py", &[("zeta", "python"), ("alpha", "python3")]);
        check_route("M.PY", &[("zeta", "python"), ("alpha", "python3")]);
        check_route("lib.rs", &[("alpha", "rust"), ("plugin:plug:p", "rust")]);
        check_route("main.go", &[("w", "go"), ("u", "golang")]);
        check_route("x.zz", &[]);
        check_route("Makefile", &[]);
        check_route(".py", &[]);
        assert_eq!(config.language_id(0, Path::new("a.rs")), None);
        assert_eq!(config.language_id(99, Path::new("a.py")), None);
        assert_eq!(
            config.served_extensions().into_iter().collect::<Vec<_>>(),
            [".go", ".py", ".rs"]
        );
        assert_eq!(config.server_index("w"), Some(4));
    }

    #[test]
    fn json_with_comments_files_are_jsonc_for_a_server_that_claims_jsonc() {
        let dir = TempDir::new("jsonc-language-id");
        dir.exe("bin/a");
        let cli = dir.write(
            "cli.json",
            r#"{"plain": {"command": "a", "extensionToLanguage": {".json": "json"}},
                "both": {"command": "a",
                         "extensionToLanguage": {".json": "json", ".jsonc": "jsonc"}}}"#,
        );
        let mut options = test_options(&dir.path("ws"));
        options.config_files.push(cli);
        let path_var = dir.path("bin").display().to_string();
        let config = load_with_env(&options, &env_of(&[("PATH", &path_var)]));
        assert_eq!(config.errors, []);
        let check = |path: &str, plain: &str, both: &str| {
            assert_eq!(
                [
                    config.language_id(0, Path::new(path)),
                    config.language_id(1, Path::new(path))
                ],
                [Some(plain), Some(both)],
                "{path}"
            );
        };
        check(".vscode/settings.json", "json", "jsonc");
        check(".eslintrc.json", "json", "jsonc");
        check("package.json", "json", "json");
        check("settings.json", "json", "json");
        assert_eq!(config.language_id(0, Path::new("a.jsonc")), None);
        assert_eq!(config.language_id(1, Path::new("a.jsonc")), Some("jsonc"));
    }

    #[test]
    fn workspace_trust_gating() {
        let dir = TempDir::new("trust");
        dir.write(
            ".lsp.json",
            r#"{"w": {"command": "w", "extensionToLanguage": {".w": "w"}}}"#,
        );
        let mut options = test_options(&dir.0);
        let untrusted = load_with_env(&options, &env_of(&[]));
        assert_eq!(names(&untrusted), Vec::<&str>::new());
        assert_eq!(
            untrusted.notes,
            [format!(
                "{}/.lsp.json was not loaded because the workspace is not trusted; \
                 pass --trust or set LSPC_TRUST=1 to use it",
                dir.show()
            )]
        );
        options.trust_workspace = true;
        let trusted = load_with_env(&options, &env_of(&[]));
        assert_eq!(names(&trusted), ["w"]);
        assert_eq!(trusted.notes, Vec::<String>::new());
        assert_eq!(
            trusted.servers[0].origin,
            ConfigOrigin::Workspace(dir.path(".lsp.json"))
        );
    }

    #[test]
    fn options_from_env() {
        let check = |vars: &[(&str, &str)], user: Option<&str>, trust: bool| {
            let options = ConfigOptions::from_env(PathBuf::from("/r"), &env_of(vars));
            assert_eq!(options.user_config, user.map(PathBuf::from), "{vars:?}");
            assert_eq!(options.trust_workspace, trust, "{vars:?}");
            assert!(options.builtin);
        };
        check(
            &[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")],
            Some("/x/lspc/lsp.json"),
            false,
        );
        check(&[("HOME", "/h")], Some("/h/.config/lspc/lsp.json"), false);
        check(
            &[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")],
            Some("/h/.config/lspc/lsp.json"),
            false,
        );
        check(&[], None, false);
        check(&[("LSPC_TRUST", "1")], None, true);
        check(&[("LSPC_TRUST", "0")], None, false);
    }

    /// Built-ins with a fake PATH holding `executables`; `configured` is a `--config` file's
    /// text (or empty). Checks the rows of [`render_servers`] for built-ins and the unused list.
    fn check_builtins(
        executables: &[&str],
        configured: &str,
        expected_used: &[(&str, &str)],
        expected_skipped: &[&str],
    ) {
        let dir = TempDir::new("builtin");
        for exe in executables {
            dir.exe(&format!("bin/{exe}"));
        }
        // Present but not executable: must count as not found.
        dir.write("bin/gopls", "");
        let mut options = test_options(&dir.0);
        options.builtin = true;
        if !configured.is_empty() {
            options.config_files.push(dir.write("x.json", configured));
        }
        let path_var = format!("/nonexistent::{}", dir.path("bin").display());
        let config = load_with_env(&options, &env_of(&[("PATH", &path_var)]));
        assert_eq!(config.errors, []);
        let used: Vec<(&str, String)> = config
            .servers
            .iter()
            .filter(|s| s.resolved_command.is_some())
            .map(|s| {
                let exts: Vec<&str> = s.extension_to_language.keys().map(String::as_str).collect();
                (s.name.as_str(), exts.join(" "))
            })
            .collect();
        let expected_used: Vec<(&str, String)> = expected_used
            .iter()
            .map(|(n, e)| (*n, e.to_string()))
            .collect();
        assert_eq!(used, expected_used);
        let skipped: Vec<String> = config
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.server.name, s.reason))
            .collect();
        assert_eq!(skipped, expected_skipped);
        // A one-shot query's load for one extension gives that extension's servers exactly as
        // the whole load does (the session compares these hashes), and the same errors and notes.
        let mut extensions: Vec<&String> = config
            .servers
            .iter()
            .flat_map(|s| s.extension_to_language.keys())
            .collect();
        extensions.sort();
        extensions.dedup();
        assert!(extensions.len() > 3, "{extensions:?}");
        for extension in extensions {
            let one =
                sources::load_sources(&options, &env_of(&[("PATH", &path_var)]), Some(extension));
            assert_eq!(
                crate::session::hash::config_hash_for_extension(&one, extension),
                crate::session::hash::config_hash_for_extension(&config, extension),
                "{extension}"
            );
            assert_eq!((&one.errors, &one.notes), (&config.errors, &config.notes));
            assert!(one.servers.len() < config.servers.len(), "{extension}");
        }
        // Unavailable built-ins are listed, unresolved.
        for server in &config.servers {
            if server.origin == ConfigOrigin::BuiltIn
                && !executables.contains(&server.command.as_str())
            {
                assert_eq!(server.resolved_command, None, "{}", server.name);
            }
        }
    }

    #[test]
    fn builtin_selection() {
        check_builtins(
            &["pyright-langserver", "ruff", "pylsp"],
            "",
            &[("pyright", ".py .pyi"), ("ruff", ".py .pyi")],
            &["pylsp: pyright is preferred"],
        );
        check_builtins(
            &["pylsp", "basedpyright-langserver", "clangd"],
            "",
            &[
                ("basedpyright", ".py .pyi"),
                ("clangd", ".c .cc .cpp .cxx .h .hh .hpp .hxx"),
            ],
            &["pylsp: basedpyright is preferred"],
        );
        check_builtins(&["pylsp"], "", &[("pylsp", ".py .pyi")], &[]);
        check_builtins(&[], "", &[], &[]);
        // Configured servers add to the built-ins (issue 10): one that is not installed, or that
        // runs another program, leaves the built-ins for its extensions serving.
        check_builtins(
            &["pyright-langserver", "ruff", "clangd", "my-c"],
            r#"{"py": {"command": "not-installed", "extensionToLanguage": {".py": "python", ".pyi": "python"}},
                "h": {"command": "my-c", "extensionToLanguage": {".H": "c"}}}"#,
            &[
                ("h", ".h"),
                ("pyright", ".py .pyi"),
                ("ruff", ".py .pyi"),
                ("clangd", ".c .cc .cpp .cxx .h .hh .hpp .hxx"),
            ],
            &[],
        );
        // README's strict-mode entry named `pyright` replaces the built-in pyright; ruff keeps
        // serving `.py` (it used to be turned off).
        check_builtins(
            &["pyright-langserver", "ruff"],
            r#"{"pyright": {"command": "pyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}}"#,
            &[("pyright", ".py"), ("ruff", ".py .pyi")],
            &[],
        );
        // An entry running a built-in's program replaces it under its own name and takes the
        // one Python type-checker slot.
        check_builtins(
            &["pyright-langserver", "basedpyright-langserver", "ruff"],
            r#"{"strict": {"command": "pyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}}"#,
            &[("strict", ".py"), ("ruff", ".py .pyi")],
            &["basedpyright: strict is preferred"],
        );
        // Entries running a built-in's program through a launcher replace it as the plain
        // command does, and a Python type checker so run takes the one slot (prog14).
        check_builtins(
            &[
                "pyright-langserver",
                "ruff",
                "clangd",
                "python3",
                "uvx",
                "env",
            ],
            r#"{"lint": {"command": "python3", "args": ["-m", "ruff", "server"], "extensionToLanguage": {".py": "python"}},
                "types": {"command": "uvx", "args": ["--from", "basedpyright", "basedpyright-langserver", "--stdio"], "extensionToLanguage": {".pyi": "python"}},
                "c": {"command": "env", "args": ["CLANGD_FLAGS=-j=1", "clangd-14"], "extensionToLanguage": {".c": "c", ".h": "c"}}}"#,
            &[("lint", ".py"), ("types", ".pyi"), ("c", ".c .h")],
            &["pyright: types is preferred"],
        );
        // A configured server named like a built-in replaces it.
        check_builtins(
            &["taplo", "my-taplo"],
            r#"{"taplo": {"command": "my-taplo", "extensionToLanguage": {".tml": "toml"}}}"#,
            &[("taplo", ".tml")],
            &[],
        );
    }

    #[test]
    fn builtin_table_rows() {
        let config = load_with_env(
            &ConfigOptions {
                builtin: true,
                ..test_options(Path::new("/r"))
            },
            &env_of(&[]),
        );
        let rows: Vec<String> = config
            .servers
            .iter()
            .map(|s| {
                let exts: Vec<String> = s
                    .extension_to_language
                    .iter()
                    .map(|(e, l)| format!("{e}={l}"))
                    .collect();
                format!("{} {} {:?} {}", s.name, s.command, s.args, exts.join(","))
            })
            .collect();
        assert_eq!(
            rows,
            [
                "pyright pyright-langserver [\"--stdio\"] .py=python,.pyi=python",
                "basedpyright basedpyright-langserver [\"--stdio\"] .py=python,.pyi=python",
                "pylsp pylsp [] .py=python,.pyi=python",
                "ty ty [\"server\"] .py=python,.pyi=python",
                "pyrefly pyrefly [\"lsp\"] .py=python,.pyi=python",
                "jedi-language-server jedi-language-server [] .py=python,.pyi=python",
                "ruff ruff [\"server\"] .py=python,.pyi=python",
                "typescript-language-server typescript-language-server [\"--stdio\"] .cjs=javascript,.cts=typescript,.js=javascript,.jsx=javascriptreact,.mjs=javascript,.mts=typescript,.ts=typescript,.tsx=typescriptreact",
                "clangd clangd [] .c=c,.cc=cpp,.cpp=cpp,.cxx=cpp,.h=c,.hh=cpp,.hpp=cpp,.hxx=cpp",
                "rust-analyzer rust-analyzer [] .rs=rust",
                "gopls gopls [] .go=go",
                "bash-language-server bash-language-server [\"start\"] .bash=shellscript,.sh=shellscript",
                "taplo taplo [\"lsp\", \"stdio\"] .toml=toml",
                "yaml-language-server yaml-language-server [\"--stdio\"] .yaml=yaml,.yml=yaml",
                "vscode-json-language-server vscode-json-language-server [\"--stdio\"] .code-workspace=jsonc,.json=json,.jsonc=jsonc",
                "vscode-css-language-server vscode-css-language-server [\"--stdio\"] .css=css,.less=less,.scss=scss",
                "vscode-html-language-server vscode-html-language-server [\"--stdio\"] .htm=html,.html=html",
                "dockerfile-language-server docker-langserver [\"--stdio\"] .dockerfile=dockerfile",
                "cmake-language-server cmake-language-server [] .cmake=cmake",
                "fortls fortls [] .f=fortran,.f03=fortran,.f08=fortran,.f90=fortran,.f95=fortran,.for=fortran",
                "esbonio esbonio [\"server\"] .rst=restructuredtext",
                "vim-language-server vim-language-server [\"--stdio\"] .vim=vim",
                "intelephense intelephense [\"--stdio\"] .php=php",
            ]
        );
        assert_eq!(config.conflicts, []);
        assert!(config.servers_for_path(Path::new("a.py")).is_empty());
    }

    #[test]
    fn path_lookup() {
        let dir = TempDir::new("path");
        let a = dir.exe("a/tool");
        dir.exe("b/tool");
        dir.write("a/plain", "");
        std::fs::create_dir_all(dir.path("a/folder")).unwrap();
        let path_var = format!("{}:{}", dir.path("a").display(), dir.path("b").display());
        // Also through a missing entry, an empty one and a file named as an entry.
        let searched = format!("{}/missing::{}:{path_var}", dir.0.display(), a.display());
        let search = resolve::PathSearch::new(Some(&searched));
        let check = |program: &str, expected: Option<&Path>| {
            assert_eq!(
                find_in_path(program, Some(&path_var)).as_deref(),
                expected,
                "{program}"
            );
            assert_eq!(search.find(program).as_deref(), expected, "{program}");
        };
        std::os::unix::fs::symlink(&a, dir.path("b/link")).unwrap();
        std::os::unix::fs::symlink(dir.path("b/nothing"), dir.path("b/dangling")).unwrap();
        check("tool", Some(&a));
        check("link", Some(&dir.path("b/link")));
        check("dangling", None);
        check("plain", None);
        check("folder", None);
        check("absent", None);
        check("", None);
        check("a/tool", None);
        assert_eq!(find_in_path("tool", None), None);
        assert_eq!(
            resolve_command("./a/tool", &dir.0, None),
            Some(dir.path("./a/tool"))
        );
        assert_eq!(
            resolve_command(&a.display().to_string(), Path::new("/x"), None),
            Some(a.clone())
        );
        assert_eq!(resolve_command("a/plain", &dir.0, None), None);
        assert_eq!(resolve_command("tool", &dir.0, Some(&path_var)), Some(a));
    }

    #[test]
    fn workspace_roots() {
        let dir = TempDir::new("root");
        std::fs::create_dir_all(dir.path("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path("repo/sub/deep")).unwrap();
        dir.write("repo/sub/.lsp.json", "{}");
        dir.write("plain/x/y", "");
        let check = |cwd: &str, explicit: Option<&str>, expected: &str| {
            let got = workspace_root(&dir.path(cwd), explicit.map(Path::new));
            assert_eq!(got, dir.path(expected), "{cwd} {explicit:?}");
        };
        check("repo/sub/deep", None, "repo/sub");
        check("repo/sub", None, "repo/sub");
        check("repo", None, "repo");
        check("repo/sub/deep", Some("../.."), "repo");
        check(
            "repo/sub/deep",
            Some(&dir.path("plain").display().to_string()),
            "plain",
        );
        // No marker up to the temp dir (assuming none above it): the cwd itself.
        let plain = workspace_root(&dir.path("plain/x"), None);
        assert!(
            plain == dir.path("plain/x") || !plain.starts_with(&dir.0),
            "{plain:?}"
        );
    }

    #[test]
    fn renders_servers() {
        let builtins = load_with_env(
            &ConfigOptions {
                builtin: true,
                ..test_options(Path::new("/r"))
            },
            &env_of(&[]),
        );
        let builtin = |name: &str, resolved: Option<&str>| {
            let index = builtins.server_index(name).unwrap();
            let mut server = builtins.servers[index].clone();
            server.resolved_command = resolved.map(PathBuf::from);
            server
        };
        let mine = ServerConfig {
            name: "plugin:tools:mine".into(),
            origin: ConfigOrigin::Plugin {
                plugin: "tools".into(),
                file: PathBuf::from("/p/.lsp.json"),
            },
            extension_to_language: BTreeMap::from([(".rs".into(), "rust".into())]),
            ..builtin("rust-analyzer", Some("/p/bin/mine"))
        };
        let cli = ServerConfig {
            name: "x".into(),
            origin: ConfigOrigin::CommandLine(PathBuf::from("./x.json")),
            ..builtin("gopls", None)
        };
        let config = Config {
            root: PathBuf::from("/r"),
            servers: vec![
                cli,
                mine,
                builtin("pyright", Some("/usr/bin/pyright-langserver")),
                builtin("clangd", Some("/usr/bin/clangd")),
            ],
            errors: vec![ConfigError::new(
                Path::new("/p/.lsp.json"),
                Some("py"),
                Some("args"),
                "expected an array of strings",
            )],
            conflicts: vec![ExtensionConflict {
                extension: ".py".into(),
                primary: "pyright".into(),
                secondary: "ruff".into(),
            }],
            notes: vec!["a note".into()],
            skipped: vec![SkippedServer {
                server: builtin("pylsp", Some("/usr/bin/pylsp")),
                reason: "pyright is preferred".into(),
            }],
        };
        let expected = [
            "NAME               ORIGIN             STATUS                             EXTENSIONS",
            "x                  --config ./x.json  not found                          .go",
            "plugin:tools:mine  plugin tools       found /p/bin/mine                  .rs",
            "pyright            built-in           found /usr/bin/pyright-langserver  .py .pyi",
            "clangd             built-in           found /usr/bin/clangd              .c .cc .cpp .cxx .h .hh .hpp .hxx",
            "not used:",
            "  pylsp (built-in, found /usr/bin/pylsp): pyright is preferred",
            "conflicts:",
            "  .py: pyright serves requests; ruff also claims it (its diagnostics are merged)",
            "errors:",
            "  /p/.lsp.json: server \"py\": key \"args\": expected an array of strings",
            "notes:",
            "  a note",
            "",
        ]
        .join("\n");
        assert_eq!(render_servers(&config), expected);
        // A found program that cannot run: `found but broken`, with its reason in a section.
        let broken = render_servers_with(&config, &|server| {
            (server.name == "clangd").then(|| "error: Unknown binary 'clangd'".to_string())
        });
        assert!(
            broken.contains(
                "clangd             built-in           found but broken                   .c"
            ),
            "{broken}"
        );
        assert!(
            broken.contains(
                "broken:\n  clangd: /usr/bin/clangd: error: Unknown binary 'clangd'\nconflicts:"
            ),
            "{broken}"
        );
        let empty = Config {
            servers: Vec::new(),
            conflicts: Vec::new(),
            errors: Vec::new(),
            notes: Vec::new(),
            skipped: Vec::new(),
            ..config
        };
        assert_eq!(render_servers(&empty), "no servers configured\n");
    }

    #[test]
    fn manifest_shaped_config_file_and_duplicate_file() {
        let dir = TempDir::new("shape");
        let file = dir.write(
            "x.json",
            r#"{"lspServers": {"a": {"command": "a", "extensionToLanguage": {"a": "a"}}}}"#,
        );
        let mut options = test_options(&dir.0);
        options.config_files = vec![file.clone(), dir.path("./x.json")];
        options.user_config = Some(file);
        let config = load_with_env(&options, &env_of(&[]));
        assert_eq!(names(&config), ["a"]);
        assert_eq!(config.errors, []);
    }
}
