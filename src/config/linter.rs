//! Servers whose diagnostics all come from another program, which must be there for them to
//! check anything.
//!
//! bash-language-server (5.8.1, `out/config.js`, `out/shellcheck/index.js`) lints only through
//! ShellCheck: the program named by its `bashIde.shellcheckPath` setting, else the
//! `SHELLCHECK_PATH` environment variable, else `shellcheck` on its `PATH`. When that program
//! is missing it logs "ShellCheck: disabling linting as no executable was found" and publishes
//! an empty set for every script: without the program, its empty answer would be a "clean"
//! nothing checked. Such a server is loaded with `diagnostics: false` (queries still work), and
//! a check says why no server gives a script's diagnostics.
//!
//! pylsp likewise lints only through its lint plugins (`pylsp_plugins.rs`).

use std::path::Path;

use super::resolve::{find_in_path, is_executable_file};
use super::ServerConfig;

/// Why `server` cannot give diagnostics on this machine: the program its diagnostics come from
/// is missing, e.g. "bash lints only through ShellCheck, and `shellcheck` is not on its PATH",
/// or pylsp has no lint plugin that can run; `None` when it can (or lspc knows of no such
/// program for it).
///
/// `path_var` is lspc's `PATH` and `env` its environment; the server's own `env` entries
/// (`PATH`, `SHELLCHECK_PATH`) win over them, as the server inherits lspc's environment plus
/// those.
pub fn missing_linter(
    server: &ServerConfig,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if !runs_bash_language_server(server) {
        return super::pylsp_plugins::missing_lint_plugins(server, path_var);
    }
    missing_shellcheck(server, path_var, env)
}

/// [`missing_linter`] for bash-language-server: ShellCheck, looked up as it looks it up.
fn missing_shellcheck(
    server: &ServerConfig,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let name = &server.name;
    let setting = server
        .settings
        .as_ref()
        .and_then(|settings| settings.pointer("/bashIde/shellcheckPath"))
        .and_then(|value| value.as_str());
    let program = match setting {
        Some("") => {
            return Some(format!(
                "{name} lints only through ShellCheck, which its bashIde.shellcheckPath setting \
                 turns off"
            ))
        }
        Some(program) => program.to_owned(),
        None => server
            .env
            .get("SHELLCHECK_PATH")
            .cloned()
            .or_else(|| env("SHELLCHECK_PATH"))
            .filter(|program| !program.is_empty())
            .unwrap_or_else(|| "shellcheck".to_owned()),
    };
    let found = if program.contains('/') {
        is_executable_file(Path::new(&program))
    } else {
        let server_path = server.env.get("PATH").map(String::as_str);
        find_in_path(&program, server_path.or(path_var)).is_some()
    };
    (!found).then(|| {
        format!("{name} lints only through ShellCheck, and `{program}` is not on its PATH")
    })
}

/// Turns off the diagnostics of every server in `servers` whose linter is missing
/// ([`missing_linter`]), saying why in the log; the server stays for queries.
pub fn turn_off_unusable_diagnostics(
    servers: &mut [ServerConfig],
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) {
    for server in servers
        .iter_mut()
        .filter(|server| server.diagnostics && server.resolved_command.is_some())
    {
        if let Some(reason) = missing_linter(server, path_var, env) {
            log::info!("{reason}: its diagnostics are not used");
            server.diagnostics = false;
            server.diagnostics_off_reason = Some(reason);
        }
    }
}

/// Whether `server` runs bash-language-server: its command is named so (the npm bin link), or
/// resolves into an npm package of that name (`…/bash-language-server/out/cli.js`).
fn runs_bash_language_server(server: &ServerConfig) -> bool {
    const PROGRAM: &str = "bash-language-server";
    if Path::new(&server.command)
        .file_name()
        .is_some_and(|name| name == PROGRAM)
    {
        return true;
    }
    server
        .resolved_command
        .as_ref()
        .and_then(|resolved| std::fs::canonicalize(resolved).ok())
        .is_some_and(|target| target.components().any(|part| part.as_os_str() == PROGRAM))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(settings: Option<serde_json::Value>, env: &[(&str, &str)]) -> ServerConfig {
        ServerConfig {
            name: "bash-language-server".into(),
            command: "bash-language-server".into(),
            resolved_command: None,
            args: vec!["start".into()],
            env: env
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
            extension_to_language: [(".sh".to_owned(), "shellscript".to_owned())].into(),
            transport: super::super::Transport::Stdio,
            initialization_options: None,
            settings,
            workspace_folder: None,
            root_markers: Vec::new(),
            startup_timeout_ms: None,
            shutdown_timeout_ms: None,
            restart_on_crash: true,
            max_restarts: 3,
            diagnostics: true,
            diagnostics_off_reason: None,
            origin: super::super::ConfigOrigin::BuiltIn,
        }
    }

    #[test]
    fn shellcheck_is_looked_up_as_bash_language_server_does() {
        let dir = std::env::temp_dir().join(format!("lspc-linter-{}", std::process::id()));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let shellcheck = bin.join("shellcheck");
        std::fs::write(&shellcheck, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shellcheck, std::fs::Permissions::from_mode(0o755)).unwrap();
        let with_bin = bin.to_str().unwrap();
        let no_env = |_: &str| None;
        let check = |server: &ServerConfig, path_var: Option<&str>, expected: Option<&str>| {
            assert_eq!(
                missing_linter(server, path_var, &no_env).as_deref(),
                expected,
                "{server:?}"
            );
        };
        let missing = Some(
            "bash-language-server lints only through ShellCheck, and `shellcheck` is not on its \
             PATH",
        );
        check(&bash(None, &[]), Some(with_bin), None);
        check(&bash(None, &[]), Some("/nonexistent"), missing);
        check(&bash(None, &[]), None, missing);
        // The server's own PATH wins over lspc's.
        check(
            &bash(None, &[("PATH", "/nonexistent")]),
            Some(with_bin),
            missing,
        );
        check(
            &bash(None, &[("PATH", with_bin)]),
            Some("/nonexistent"),
            None,
        );
        // An absolute path in the setting or in SHELLCHECK_PATH.
        let absolute = shellcheck.to_str().unwrap();
        let setting = |path: &str| Some(serde_json::json!({"bashIde": {"shellcheckPath": path}}));
        check(&bash(setting(absolute), &[]), Some("/nonexistent"), None);
        check(
            &bash(None, &[("SHELLCHECK_PATH", absolute)]),
            Some("/nonexistent"),
            None,
        );
        check(
            &bash(setting("/nonexistent/shellcheck"), &[]),
            Some(with_bin),
            Some(
                "bash-language-server lints only through ShellCheck, and \
                 `/nonexistent/shellcheck` is not on its PATH",
            ),
        );
        check(
            &bash(setting(""), &[]),
            Some(with_bin),
            Some(
                "bash-language-server lints only through ShellCheck, which its \
                 bashIde.shellcheckPath setting turns off",
            ),
        );
        // Other servers have no such program.
        let mut other = bash(None, &[]);
        other.command = "pyright-langserver".into();
        check(&other, None, None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
