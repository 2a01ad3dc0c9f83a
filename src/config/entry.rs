//! Validation of one `.lsp.json` server map (seed 003 "LSP 服务器配置 Schema") into
//! [`ServerConfig`]s.
//!
//! Invariants: an entry with any error is skipped whole and every one of its errors is
//! reported; other entries still load. Unknown keys are logged, never fatal. Extension keys
//! are lowercased with one leading dot. Expansion runs after validation, on the validated
//! strings, so a variable's value can never make an entry invalid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::expand::{expand, ExpandVars, Unexpanded};
use super::json::Json;
use super::{resolve_command, ConfigError, ConfigOrigin, ServerConfig, Transport};

/// The keys of a server entry lspc understands (camelCase, as in the seeds).
const KNOWN_KEYS: &[&str] = &[
    "command",
    "args",
    "extensionToLanguage",
    "transport",
    "env",
    "initializationOptions",
    "settings",
    "workspaceFolder",
    "startupTimeout",
    "shutdownTimeout",
    "restartOnCrash",
    "maxRestarts",
    "diagnostics",
    "rootMarkers",
];

/// The plugin a server map belongs to, for namespacing and `${CLAUDE_PLUGIN_*}`.
#[derive(Debug, Clone)]
pub(crate) struct PluginContext {
    /// The manifest's `name`, else the folder name.
    pub name: String,
    /// The plugin folder as given on the command line.
    pub root: PathBuf,
    /// `$XDG_DATA_HOME/lspc/plugins/<name>` (never created by lspc).
    pub data: PathBuf,
}

/// Where a server map came from and what its entries expand against.
pub(crate) struct MapSource<'a> {
    /// The file named in errors and in [`ConfigOrigin::Plugin`].
    pub file: &'a Path,
    pub origin: ConfigOrigin,
    /// The folder a relative `command` containing `/` is resolved against.
    pub base_dir: &'a Path,
    pub plugin: Option<&'a PluginContext>,
    /// The workspace root (`${CLAUDE_PROJECT_DIR}`, relative `workspaceFolder`).
    pub root: &'a Path,
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Validates every entry of a server-name map, in document order. A later entry with the same
/// name replaces an earlier one (JSON object semantics).
pub(crate) fn parse_server_map(
    json: &Json,
    source: &MapSource,
    errors: &mut Vec<ConfigError>,
) -> Vec<ServerConfig> {
    // Accept a manifest-shaped file (`{"lspServers": {...}}`) too: people paste those.
    let json = match json.get("lspServers") {
        Some(inner @ Json::Object(_)) => inner,
        _ => json,
    };
    let Json::Object(members) = json else {
        errors.push(ConfigError::new(
            source.file,
            None,
            None,
            "expected an object mapping server names to server entries",
        ));
        return Vec::new();
    };
    let mut servers = Vec::new();
    for (name, entry) in members {
        if let Some(server) = parse_entry(name, entry, source, errors) {
            super::merge_by_name(&mut servers, server);
        }
    }
    servers
}

/// Validates and expands one entry; `None` (with errors pushed) when it is invalid.
fn parse_entry(
    name: &str,
    entry: &Json,
    source: &MapSource,
    errors: &mut Vec<ConfigError>,
) -> Option<ServerConfig> {
    let before = errors.len();
    let mut fail = |key: Option<&str>, message: &str| {
        errors.push(ConfigError::new(source.file, Some(name), key, message));
    };
    if name.trim().is_empty() {
        fail(None, "server name must not be empty");
        return None;
    }
    let Json::Object(members) = entry else {
        fail(None, "expected an object");
        return None;
    };
    for (key, _) in members {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            log::warn!(
                "{}: server \"{name}\": unknown key \"{key}\" ignored",
                source.file.display()
            );
        }
    }
    // Optional keys treat `null` as absent.
    let get = |key: &str| entry.get(key).filter(|v| **v != Json::Null);

    let args = match get("args") {
        None => Vec::new(),
        Some(value) => string_array(value).unwrap_or_else(|| {
            fail(Some("args"), "expected an array of strings");
            Vec::new()
        }),
    };
    let command = match entry.get("command") {
        None => {
            fail(Some("command"), "missing required key");
            String::new()
        }
        Some(Json::String(command)) if command.trim().is_empty() => {
            fail(Some("command"), "must not be empty");
            String::new()
        }
        // Seed 003: the command holds no spaces; a space with no args is almost always
        // `"command": "ruff server"`. With args, a space is part of a real path.
        Some(Json::String(command)) if command.contains(' ') && args.is_empty() => {
            fail(
                Some("command"),
                "must be a program without arguments; put arguments in \"args\"",
            );
            String::new()
        }
        Some(Json::String(command)) => command.clone(),
        Some(_) => {
            fail(Some("command"), "expected a string");
            String::new()
        }
    };
    let extension_to_language = match entry.get("extensionToLanguage") {
        None => {
            fail(Some("extensionToLanguage"), "missing required key");
            BTreeMap::new()
        }
        Some(value) => match extension_map(value) {
            Ok(map) => map,
            Err(message) => {
                fail(Some("extensionToLanguage"), &message);
                BTreeMap::new()
            }
        },
    };
    let transport = match get("transport") {
        None => Transport::Stdio,
        Some(Json::String(t)) if t == "stdio" => Transport::Stdio,
        Some(Json::String(t)) if t == "socket" => Transport::Socket,
        Some(_) => {
            fail(Some("transport"), "expected \"stdio\" or \"socket\"");
            Transport::Stdio
        }
    };
    let env_entries = match get("env") {
        None => Vec::new(),
        Some(Json::Object(members))
            if members.iter().all(|(_, v)| matches!(v, Json::String(_))) =>
        {
            members
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        }
        Some(_) => {
            fail(Some("env"), "expected an object of string values");
            Vec::new()
        }
    };
    let workspace_folder = match get("workspaceFolder") {
        None => None,
        Some(Json::String(folder)) => Some(folder.clone()),
        Some(_) => {
            fail(Some("workspaceFolder"), "expected a string");
            None
        }
    };
    let root_markers = match get("rootMarkers") {
        None => None,
        Some(value) => match string_array(value) {
            Some(markers)
                if markers.iter().all(|marker| {
                    !marker.is_empty() && !marker.contains('/') && marker != "." && marker != ".."
                }) =>
            {
                Some(markers)
            }
            _ => {
                fail(
                    Some("rootMarkers"),
                    "expected an array of file or folder names (no '/')",
                );
                None
            }
        },
    };
    let mut millis = |key: &str| match get(key) {
        None => None,
        Some(value) => non_negative_integer(value).or_else(|| {
            fail(Some(key), "expected a non-negative integer (milliseconds)");
            None
        }),
    };
    let startup_timeout_ms = millis("startupTimeout");
    let shutdown_timeout_ms = millis("shutdownTimeout");
    let mut boolean = |key: &str| match get(key) {
        None => true,
        Some(Json::Bool(b)) => *b,
        Some(_) => {
            fail(Some(key), "expected a boolean");
            true
        }
    };
    let restart_on_crash = boolean("restartOnCrash");
    let diagnostics = boolean("diagnostics");
    let max_restarts = match get("maxRestarts") {
        None => 3,
        Some(value) => match non_negative_integer(value).map(u32::try_from) {
            Some(Ok(n)) => n,
            _ => {
                fail(Some("maxRestarts"), "expected a non-negative integer");
                3
            }
        },
    };
    if errors.len() > before {
        return None;
    }

    let server_name = match source.plugin {
        Some(plugin) => format!("plugin:{}:{name}", plugin.name),
        None => name.to_string(),
    };
    let plugin_root = source.plugin.map(|p| p.root.display().to_string());
    let plugin_data = source.plugin.map(|p| p.data.display().to_string());
    let project_dir = source.root.display().to_string();
    let vars = ExpandVars {
        env: source.env,
        plugin_root: plugin_root.as_deref(),
        plugin_data: plugin_data.as_deref(),
        project_dir: &project_dir,
    };
    let mut unexpanded = Vec::new();
    let command = expand(&command, &vars, &mut unexpanded);
    let args: Vec<String> = args
        .iter()
        .map(|a| expand(a, &vars, &mut unexpanded))
        .collect();
    let mut env = BTreeMap::new();
    for (k, v) in env_entries {
        env.insert(k, expand(&v, &vars, &mut unexpanded));
    }
    let workspace_folder = workspace_folder.map(|folder| {
        let folder = PathBuf::from(expand(&folder, &vars, &mut unexpanded));
        if folder.is_absolute() {
            folder
        } else {
            source.root.join(folder)
        }
    });
    for item in &unexpanded {
        match item {
            Unexpanded::Missing(variable) => log::warn!(
                "server \"{server_name}\": environment variable {variable} is not set; \
                 expanded to an empty string"
            ),
            Unexpanded::UserConfig(key) => log::warn!(
                "server \"{server_name}\": ${{user_config.{key}}} is not supported by lspc; \
                 left unexpanded"
            ),
        }
    }
    // The seeds' runtime environment: explicit `env` entries win over these.
    env.entry("CLAUDE_PROJECT_DIR".into())
        .or_insert(project_dir);
    if let (Some(root), Some(data)) = (plugin_root, plugin_data) {
        env.entry("CLAUDE_PLUGIN_ROOT".into()).or_insert(root);
        env.entry("CLAUDE_PLUGIN_DATA".into()).or_insert(data);
    }
    // A server whose own env sets PATH is looked up on that PATH, like the process it becomes.
    let path_var = env.get("PATH").cloned().or_else(|| (source.env)("PATH"));
    let resolved_command = resolve_command(&command, source.base_dir, path_var.as_deref());

    let default_markers = root_markers.is_none();
    let mut server = ServerConfig {
        name: server_name,
        command,
        resolved_command,
        args,
        env,
        extension_to_language,
        transport,
        initialization_options: get("initializationOptions").map(Json::to_value),
        settings: get("settings").map(Json::to_value),
        workspace_folder,
        root_markers: root_markers.unwrap_or_default(),
        startup_timeout_ms,
        shutdown_timeout_ms,
        restart_on_crash,
        max_restarts,
        diagnostics,
        diagnostics_off_reason: None,
        formatting_off_reason: None,
        origin: source.origin.clone(),
    };
    if default_markers {
        server.root_markers = super::builtin::default_root_markers_of(&server);
    }
    Some(server)
}

fn string_array(value: &Json) -> Option<Vec<String>> {
    match value {
        Json::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}

/// A JSON integer ≥ 0 (`5000` or `5000.0`).
fn non_negative_integer(value: &Json) -> Option<u64> {
    let Json::Number(n) = value else {
        return None;
    };
    n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < u64::MAX as f64)
            .map(|f| f as u64)
    })
}

/// Normalises an extension key: trimmed, lowercased, exactly one leading dot
/// (`"py"`, `".PY"` → `".py"`); `None` when nothing is left.
pub(crate) fn normalise_extension(key: &str) -> Option<String> {
    let bare = key.trim().trim_start_matches('.');
    if bare.is_empty() {
        None
    } else {
        Some(format!(".{}", bare.to_lowercase()))
    }
}

/// Validates `extensionToLanguage`: a non-empty object of non-empty language id strings.
fn extension_map(value: &Json) -> Result<BTreeMap<String, String>, String> {
    let Json::Object(members) = value else {
        return Err("expected an object mapping extensions to language ids".into());
    };
    if members.is_empty() {
        return Err("must map at least one extension".into());
    }
    let mut map = BTreeMap::new();
    for (key, language) in members {
        let Some(extension) = normalise_extension(key) else {
            return Err(format!("extension \"{key}\" is empty"));
        };
        let language = match language {
            Json::String(language) if !language.trim().is_empty() => language.trim().to_string(),
            _ => {
                return Err(format!(
                    "extension \"{key}\": expected a non-empty language id string"
                ))
            }
        };
        // ".py" and "PY" in one map: the first spelling wins, as it would in routing.
        map.entry(extension).or_insert(language);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_extension(key: &str, expected: Option<&str>) {
        assert_eq!(normalise_extension(key).as_deref(), expected, "{key:?}");
    }

    #[test]
    fn normalises_extensions() {
        check_extension("py", Some(".py"));
        check_extension(".PY", Some(".py"));
        check_extension(".py", Some(".py"));
        check_extension("..Py", Some(".py"));
        check_extension(" .Tsx ", Some(".tsx"));
        check_extension("d.ts", Some(".d.ts"));
        check_extension(".", None);
        check_extension("", None);
    }

    fn check_integer(text: &str, expected: Option<u64>) {
        let json = Json::parse(text).unwrap();
        assert_eq!(non_negative_integer(&json), expected, "{text}");
    }

    #[test]
    fn integers() {
        check_integer("0", Some(0));
        check_integer("5000", Some(5000));
        check_integer("5000.0", Some(5000));
        check_integer("-1", None);
        check_integer("1.5", None);
        check_integer("\"5\"", None);
    }
}
