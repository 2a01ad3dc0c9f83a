//! Servers whose diagnostics all come from another program, which must be there for them to
//! check anything.
//!
//! bash-language-server (5.8.1, `out/config.js`, `out/shellcheck/index.js`) lints only through
//! ShellCheck: the program named by its `bashIde.shellcheckPath` setting, else the
//! `SHELLCHECK_PATH` environment variable, else `shellcheck` on its `PATH`, started in the
//! server's own working directory (its workspace folder), so a relative path is taken from
//! there, never from lspc's. When that program is missing it logs "ShellCheck: disabling
//! linting as no executable was found" and publishes an empty set for every script: without the
//! program, its empty answer would be a "clean" nothing checked. Such a server is loaded with `diagnostics: false` (queries still work), and
//! a check says why no server gives a script's diagnostics.
//!
//! pylsp likewise lints only through its lint plugins (`pylsp_plugins.rs`).

use std::path::Path;

use super::resolve::{find_in_path, is_executable_file};
use super::{Program, ServerConfig};

/// Why `server` cannot give diagnostics on this machine: the program its diagnostics come from
/// is missing, e.g. "bash lints only through ShellCheck, and `shellcheck` is not on its PATH",
/// or pylsp has no lint plugin that can run; `None` when it can (or lspc knows of no such
/// program for it).
///
/// `root` is the workspace root, the server's working directory unless its entry names a
/// `workspaceFolder` (a server runs in its workspace folder, `engine/lifecycle.rs`). `path_var`
/// is lspc's `PATH` and `env` its environment; the server's own `env` entries (`PATH`,
/// `SHELLCHECK_PATH`) win over them, as the server inherits lspc's environment plus those.
pub fn missing_linter(
    server: &ServerConfig,
    root: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if !runs_bash_language_server(server) {
        return super::pylsp_plugins::missing_lint_plugins(server, path_var);
    }
    let cwd = server.workspace_folder.as_deref().unwrap_or(root);
    missing_shellcheck(server, cwd, path_var, env)
}

/// Where bash-language-server's ShellCheck program came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellcheckSource {
    /// The `bashIde` section lspc answers to `workspace/configuration`.
    Setting,
    /// `initializationOptions.shellcheckPath`.
    InitializationOptions,
    /// The `SHELLCHECK_PATH` environment variable.
    Environment,
    /// None of them: the default, `shellcheck`.
    Default,
}

/// The program bash-language-server 5.8.1 lints with, trimmed (empty means linting is off), and
/// where it came from. The server settles it in `onInitialized` (`out/server.js`,
/// `out/config.js`): `SHELLCHECK_PATH` (set but empty turns linting off), then
/// `initializationOptions.shellcheckPath`, then the `bashIde` section lspc answers to
/// `workspace/configuration`, which it parses whole: an object there without `shellcheckPath`
/// means the default again, whatever the environment said; `null` (no such section) keeps the
/// earlier value.
fn shellcheck_program(
    server: &ServerConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> (String, ShellcheckSource) {
    let section = server
        .settings
        .as_ref()
        .and_then(|settings| settings.get("bashIde"))
        .and_then(|section| section.as_object());
    if let Some(section) = section {
        // A non-string value fails the server's parse of the whole section, which it then
        // ignores.
        match section.get("shellcheckPath") {
            None => return ("shellcheck".to_owned(), ShellcheckSource::Default),
            Some(serde_json::Value::String(program)) => {
                return (program.trim().to_owned(), ShellcheckSource::Setting)
            }
            Some(_) => {}
        }
    }
    let from_options = server
        .initialization_options
        .as_ref()
        .and_then(|options| options.get("shellcheckPath"))
        .and_then(|program| program.as_str());
    if let Some(program) = from_options {
        return (
            program.trim().to_owned(),
            ShellcheckSource::InitializationOptions,
        );
    }
    let from_env = server
        .env
        .get("SHELLCHECK_PATH")
        .cloned()
        .or_else(|| env("SHELLCHECK_PATH"));
    match from_env {
        Some(program) => (program.trim().to_owned(), ShellcheckSource::Environment),
        None => ("shellcheck".to_owned(), ShellcheckSource::Default),
    }
}

/// [`missing_linter`] for bash-language-server, whose working directory is `cwd`: ShellCheck,
/// found as the server finds it. It spawns the program with Node's `child_process.spawn` in its
/// own working directory (`out/shellcheck/index.js`: the `Linter` gets no `cwd`, so
/// `process.cwd()`), so a path holding a `/` is taken from `cwd`, and a bare name is looked up
/// in the server's `PATH`, whose relative entries are also taken from `cwd`.
fn missing_shellcheck(
    server: &ServerConfig,
    cwd: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let name = &server.name;
    let (program, source) = shellcheck_program(server, env);
    if program.is_empty() {
        let turned_off_by = match source {
            ShellcheckSource::Setting => "its bashIde.shellcheckPath setting",
            ShellcheckSource::InitializationOptions => "its shellcheckPath initialization option",
            ShellcheckSource::Environment | ShellcheckSource::Default => {
                "its empty SHELLCHECK_PATH"
            }
        };
        return Some(format!(
            "{name} lints only through ShellCheck, which {turned_off_by} turns off"
        ));
    }
    if program.contains('/') {
        let path = cwd.join(&program);
        return (!is_executable_file(&path)).then(|| {
            if Path::new(&program).is_absolute() {
                format!("{name} lints only through ShellCheck, and `{program}` is not executable")
            } else {
                format!(
                    "{name} lints only through ShellCheck, and `{program}` is not executable in \
                     its working directory {}",
                    cwd.display()
                )
            }
        });
    }
    let server_path = server.env.get("PATH").map(String::as_str).or(path_var);
    let path_from_cwd = server_path.map(|path_var| {
        let dirs = std::env::split_paths(path_var).map(|dir| {
            if dir.as_os_str().is_empty() {
                dir
            } else {
                cwd.join(dir)
            }
        });
        std::env::join_paths(dirs).map_or_else(
            |_| path_var.to_owned(),
            |joined| joined.to_string_lossy().into_owned(),
        )
    });
    let found = find_in_path(&program, path_from_cwd.as_deref()).is_some();
    (!found).then(|| {
        format!("{name} lints only through ShellCheck, and `{program}` is not on its PATH")
    })
}

/// Turns off the diagnostics of every server in `servers` whose linter is missing
/// ([`missing_linter`], with the workspace `root`), saying why in the log; the server stays for
/// queries.
pub fn turn_off_unusable_diagnostics(
    servers: &mut [ServerConfig],
    root: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) {
    for server in servers
        .iter_mut()
        .filter(|server| server.diagnostics && server.resolved_command.is_some())
    {
        if let Some(reason) = missing_linter(server, root, path_var, env) {
            log::info!("{reason}: its diagnostics are not used");
            server.diagnostics = false;
            server.diagnostics_off_reason = Some(reason);
        }
    }
}

/// Whether `server` runs bash-language-server ([`Program::of`]: the npm bin link, `npx
/// bash-language-server`, `node …/bash-language-server/out/cli.js`), or its command resolves
/// into an npm package of that name (a link named otherwise to `…/bash-language-server/out/cli.js`).
fn runs_bash_language_server(server: &ServerConfig) -> bool {
    const PROGRAM: Program = Program::BashLanguageServer;
    if Program::of(server) == Some(PROGRAM) {
        return true;
    }
    server
        .resolved_command
        .as_ref()
        .and_then(|resolved| std::fs::canonicalize(resolved).ok())
        .is_some_and(|target| Program::of_script(&target) == Some(PROGRAM))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(settings: Option<serde_json::Value>, env: &[(&str, &str)]) -> ServerConfig {
        ServerConfig {
            resolved_command: None,
            args: vec!["start".into()],
            env: env
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
            extension_to_language: [(".sh".to_owned(), "shellscript".to_owned())].into(),
            settings,
            ..crate::config::test_entry("bash-language-server", "bash-language-server")
        }
    }

    /// An executable `shellcheck` stand-in at `path`.
    fn executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn shellcheck_is_looked_up_as_bash_language_server_does() {
        let dir = std::env::temp_dir().join(format!("lspc-linter-{}", std::process::id()));
        let bin = dir.join("bin");
        let shellcheck = bin.join("shellcheck");
        executable(&shellcheck);
        // A workspace holding its own ShellCheck, and one without.
        let workspace = dir.join("ws");
        executable(&workspace.join("tools/shellcheck"));
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let with_bin = bin.to_str().unwrap();
        let no_env = |_: &str| None;
        let check = |server: &ServerConfig, path_var: Option<&str>, expected: Option<&str>| {
            assert_eq!(
                missing_linter(server, &workspace, path_var, &no_env).as_deref(),
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
                 `/nonexistent/shellcheck` is not executable",
            ),
        );
        let turned_off = Some(
            "bash-language-server lints only through ShellCheck, which its \
             bashIde.shellcheckPath setting turns off",
        );
        check(&bash(setting(""), &[]), Some(with_bin), turned_off);
        // The server trims the setting: blank is empty.
        check(&bash(setting("  "), &[]), Some(with_bin), turned_off);
        // A relative path is the server's: from its working directory (the workspace root, or
        // its entry's workspaceFolder), not lspc's.
        check(
            &bash(setting(" tools/shellcheck "), &[]),
            Some("/nonexistent"),
            None,
        );
        check(
            &bash(None, &[("SHELLCHECK_PATH", "./tools/shellcheck")]),
            Some("/nonexistent"),
            None,
        );
        let mut in_elsewhere = bash(setting("tools/shellcheck"), &[]);
        in_elsewhere.workspace_folder = Some(elsewhere.clone());
        let not_in_elsewhere = format!(
            "bash-language-server lints only through ShellCheck, and `tools/shellcheck` is not \
             executable in its working directory {}",
            elsewhere.display()
        );
        check(
            &in_elsewhere,
            Some(with_bin),
            Some(not_in_elsewhere.as_str()),
        );
        // So is a relative PATH entry.
        check(
            &bash(None, &[("PATH", "tools")]),
            Some("/nonexistent"),
            None,
        );
        in_elsewhere.settings = None;
        in_elsewhere.env = [("PATH".to_owned(), "tools".to_owned())].into();
        check(&in_elsewhere, Some(with_bin), missing);
        // An empty SHELLCHECK_PATH turns linting off; a `bashIde` section without the setting
        // brings back the default, whatever SHELLCHECK_PATH says.
        check(
            &bash(None, &[("SHELLCHECK_PATH", "")]),
            Some(with_bin),
            Some(
                "bash-language-server lints only through ShellCheck, which its empty \
                 SHELLCHECK_PATH turns off",
            ),
        );
        let empty_section = Some(serde_json::json!({"bashIde": {}}));
        check(
            &bash(empty_section.clone(), &[("SHELLCHECK_PATH", "")]),
            Some(with_bin),
            None,
        );
        check(
            &bash(empty_section, &[("SHELLCHECK_PATH", absolute)]),
            Some("/nonexistent"),
            missing,
        );
        // initializationOptions win over the environment, the section over both.
        let mut with_options = bash(None, &[("SHELLCHECK_PATH", "/nonexistent/shellcheck")]);
        with_options.initialization_options = Some(serde_json::json!({"shellcheckPath": ""}));
        check(
            &with_options,
            Some(with_bin),
            Some(
                "bash-language-server lints only through ShellCheck, which its shellcheckPath \
                 initialization option turns off",
            ),
        );
        with_options.settings = setting(absolute);
        check(&with_options, Some("/nonexistent"), None);
        // Other servers have no such program.
        let mut other = bash(None, &[]);
        other.command = "pyright-langserver".into();
        check(&other, None, None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
