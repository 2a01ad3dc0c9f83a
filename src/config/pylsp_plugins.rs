//! pylsp's diagnostics come only from its lint plugins: which of them can run here.
//!
//! python-lsp-server 1.15.0 loads its plugins through the `pylsp` entry-point group (pluggy), and
//! lints only through those with a `pylsp_lint` hook: the built-in `pyflakes`, `pycodestyle`,
//! `mccabe` (on by default), `pydocstyle`, `pylint`, `flake8` (off by default: their
//! `pylsp_settings` hook says `enabled: false`), and third-party ones (`pylsp_mypy`, `ruff`). A
//! plugin whose library is missing fails to load and is left out ("Failed to load pylsp entry
//! point"); a plugin is off when the `pylsp.plugins.<name>.enabled` setting says so. With no
//! lint plugin loaded and on, pylsp publishes an empty set for every file: without this check its
//! empty answer would be a "clean" nothing checked.
//!
//! Which plugins load is asked of pylsp's own Python once per configuration load (about 0.2 s):
//! [`PROBE`] loads the entry points pylsp would, as pylsp loads them. When the interpreter
//! cannot be told (a wrapper script lspc does not know), no verdict is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::program::is_python;
use super::resolve::find_in_path;
use super::{Program, ServerConfig};

/// Loads every `pylsp` entry point that may lint (the built-in `*_lint` modules and every
/// third-party plugin) and prints `{name: {"enabled": bool} | {"error": text}}` for those with a
/// `pylsp_lint` hook or that failed to load.
const PROBE: &str = r#"
import importlib.metadata as m, json
out = {}
for e in m.entry_points(group="pylsp"):
    if e.value.startswith("pylsp.plugins.") and not e.value.endswith("_lint"):
        continue
    try:
        mod = e.load()
    except Exception as error:
        out[e.name] = {"error": str(error)}
        continue
    if not hasattr(mod, "pylsp_lint"):
        continue
    conf = {}
    settings = getattr(mod, "pylsp_settings", None)
    if settings is not None:
        try:
            conf = settings()
        except TypeError:
            conf = settings(config=None)
    out[e.name] = {"enabled": bool((conf or {}).get("plugins", {}).get(e.name, {}).get("enabled", True))}
print(json.dumps(out))
"#;

/// One lint plugin as pylsp's Python sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plugin {
    /// It loads; `enabled` by its own default.
    Loads { enabled: bool },
    /// It fails to load (its library is missing): the error.
    Fails(String),
}

/// Why `server`, when it runs pylsp, cannot lint: which plugins are missing or off, e.g.
/// "pylsp lints only through its plugins, and none can run: pyflakes, pycodestyle are off in
/// its settings; mccabe is not installed"; `None` when one can, or when it is not pylsp or its
/// Python cannot be told.
pub(super) fn missing_lint_plugins(
    server: &ServerConfig,
    path_var: Option<&str>,
) -> Option<String> {
    let python = pylsp_python(server, path_var)?;
    let plugins = probe(&python, server)?;
    unusable(&server.name, &plugins, server.settings.as_ref())
}

/// The verdict for the probed `plugins` under `settings` (`pylsp.plugins.<name>.enabled` wins
/// over the plugin's default).
pub(super) fn unusable(
    name: &str,
    plugins: &BTreeMap<String, Plugin>,
    settings: Option<&Value>,
) -> Option<String> {
    let mut off_in_settings = Vec::new();
    let mut off_by_default = Vec::new();
    let mut not_installed = Vec::new();
    for (plugin, state) in plugins {
        let setting = settings
            .and_then(|settings| settings.pointer(&format!("/pylsp/plugins/{plugin}/enabled")))
            .and_then(Value::as_bool);
        match (state, setting) {
            (Plugin::Fails(_), _) => not_installed.push(plugin.as_str()),
            (Plugin::Loads { .. }, Some(false)) => off_in_settings.push(plugin.as_str()),
            (Plugin::Loads { enabled: false }, None) => off_by_default.push(plugin.as_str()),
            (Plugin::Loads { .. }, _) => return None,
        }
    }
    let mut parts = Vec::new();
    if !off_in_settings.is_empty() {
        parts.push(format!(
            "{} off in its settings",
            off_in_settings.join(", ")
        ));
    }
    if !off_by_default.is_empty() {
        parts.push(format!("{} off by default", off_by_default.join(", ")));
    }
    if !not_installed.is_empty() {
        parts.push(format!("{} not installed", not_installed.join(", ")));
    }
    if parts.is_empty() {
        parts.push("it has none".to_owned());
    }
    Some(format!(
        "{name} lints only through its plugins, and none can run: {}",
        parts.join("; ")
    ))
}

/// The Python that runs pylsp for `server`: the interpreter itself for `python -m pylsp`, the
/// `#!` interpreter of a `pylsp` console script, or the `python3` next to a pyenv shim; `None`
/// when the server does not run pylsp ([`Program::of`]) or the interpreter cannot be told (a
/// launcher such as `uvx pylsp` picks its own).
fn pylsp_python(server: &ServerConfig, path_var: Option<&str>) -> Option<PathBuf> {
    let resolved = server.resolved_command.as_ref()?;
    if Program::of(server) != Some(Program::Pylsp) {
        return None;
    }
    let command_name = Path::new(&server.command).file_name()?.to_str()?;
    if is_python(command_name) {
        return Some(resolved.clone());
    }
    // A launcher (`uvx`, `env`) runs whichever Python it finds.
    if Program::from_name(command_name) != Some(Program::Pylsp) {
        return None;
    }
    let text = std::fs::read(resolved).ok()?;
    let first_line = text.split(|&byte| byte == b'\n').next()?;
    let shebang = std::str::from_utf8(first_line.strip_prefix(b"#!")?).ok()?;
    let mut words = shebang.split_whitespace();
    let interpreter = words.next()?;
    let interpreter = if interpreter.ends_with("/env") {
        let name = words.next()?;
        if name.starts_with("python") {
            find_in_path(
                name,
                server.env.get("PATH").map(String::as_str).or(path_var),
            )?
        } else {
            // pyenv's shim runs the version's `pylsp`; the shim `python3` beside it runs the
            // same version's interpreter.
            let shim_python = resolved.parent()?.join("python3");
            return (resolved.parent()?.file_name()? == "shims" && shim_python.is_file())
                .then_some(shim_python);
        }
    } else {
        PathBuf::from(interpreter)
    };
    interpreter
        .file_name()?
        .to_str()?
        .starts_with("python")
        .then_some(interpreter)
}

/// How long [`PROBE`] may take (it takes about 0.2 s); past it no verdict is given.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs [`PROBE`] with `python` in the server's environment; `None` when it cannot run or
/// takes longer than [`PROBE_TIMEOUT`].
fn probe(python: &Path, server: &ServerConfig) -> Option<BTreeMap<String, Plugin>> {
    // Bounded: a plugin whose import hangs must not hold lspc's start up.
    let output = crate::bounded_run::output(
        Command::new(python).args(["-c", PROBE]).envs(&server.env),
        "pylsp's plugin probe",
        PROBE_TIMEOUT,
    )
    .map_err(|error| log::debug!("{}: plugin probe failed: {error}", server.name))
    .ok()?;
    if !output.status.success() {
        log::debug!(
            "{}: plugin probe exited with {}",
            server.name,
            output.status
        );
        return None;
    }
    let report: BTreeMap<String, Value> = serde_json::from_slice(&output.stdout).ok()?;
    Some(
        report
            .into_iter()
            .map(|(name, state)| {
                let plugin = match state.get("error").and_then(Value::as_str) {
                    Some(error) => Plugin::Fails(error.to_owned()),
                    None => Plugin::Loads {
                        enabled: state.get("enabled").and_then(Value::as_bool) != Some(false),
                    },
                };
                (name, plugin)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pylsp_cannot_lint_when_no_lint_plugin_loads_and_is_on() {
        let plugins = |list: &[(&str, Plugin)]| -> BTreeMap<String, Plugin> {
            list.iter()
                .map(|(name, plugin)| (name.to_string(), plugin.clone()))
                .collect()
        };
        let on = Plugin::Loads { enabled: true };
        let off = Plugin::Loads { enabled: false };
        let missing = Plugin::Fails("No module named 'mccabe'".to_owned());
        let here = plugins(&[
            ("mccabe", missing.clone()),
            ("pycodestyle", on.clone()),
            ("pyflakes", on.clone()),
            ("pylint", off.clone()),
        ]);
        assert_eq!(unusable("pylsp", &here, None), None);
        let settings = json!({"pylsp": {"plugins": {"pyflakes": {"enabled": false},
                                                    "pycodestyle": {"enabled": false}}}});
        assert_eq!(
            unusable("pylsp", &here, Some(&settings)).as_deref(),
            Some(
                "pylsp lints only through its plugins, and none can run: pycodestyle, pyflakes \
                 off in its settings; pylint off by default; mccabe not installed"
            )
        );
        // A plugin off by default that the settings turn on lints.
        let pylint_on = json!({"pylsp": {"plugins": {"pylint": {"enabled": true}}}});
        let only_pylint = plugins(&[("pylint", off.clone()), ("pyflakes", missing.clone())]);
        assert_eq!(unusable("pylsp", &only_pylint, Some(&pylint_on)), None);
        assert_eq!(
            unusable("pylsp", &only_pylint, None).as_deref(),
            Some(
                "pylsp lints only through its plugins, and none can run: pylint off by default; \
                 pyflakes not installed"
            )
        );
        assert_eq!(
            unusable("pylsp", &BTreeMap::new(), None).as_deref(),
            Some("pylsp lints only through its plugins, and none can run: it has none")
        );
    }
}
