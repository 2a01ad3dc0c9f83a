//! Servers whose diagnostics or formatting all come from another program, which must be there
//! for them to check or format anything.
//!
//! bash-language-server (5.8.1, `out/config.js`, `out/shellcheck/index.js`) lints only through
//! ShellCheck: the program named by its `bashIde.shellcheckPath` setting, else the
//! `SHELLCHECK_PATH` environment variable, else `shellcheck` on its `PATH`, started in the
//! server's own working directory (its workspace folder), so a relative path is taken from
//! there, never from lspc's. When that program is missing it logs "ShellCheck: disabling
//! linting as no executable was found" and publishes an empty set for every script: without the
//! program, its empty answer would be a "clean" nothing checked. Such a server is loaded with
//! `diagnostics: false` (queries still work), and a check says why no server gives a script's
//! diagnostics.
//!
//! It formats only through shfmt (`out/shfmt/index.js`), found the same way: its
//! `bashIde.shfmt.path` setting, else `SHFMT_PATH`, else `shfmt` on its `PATH`, in its working
//! directory. When that program is missing it logs "Shfmt: disabling formatting as no
//! executable was found" and answers every `textDocument/formatting` with no edits (`null`
//! when the setting is empty), which `lspc format` showed as "no changes". Such a server keeps
//! advertising `documentFormattingProvider`; its [`ServerConfig::formatting_off_reason`] makes
//! `format` refuse its files as it refuses a server without formatting.
//!
//! pylsp likewise lints only through its lint plugins (`pylsp_plugins.rs`).

use std::path::Path;

use super::resolve::{find_in_path, is_executable_file};
use super::{Program, ServerConfig};

/// A feature some servers give only through another program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Their diagnostics: bash-language-server's come from ShellCheck, pylsp's from its lint
    /// plugins.
    Diagnostics,
    /// Their formatting: bash-language-server's runs shfmt.
    Formatting,
}

/// Why `server` cannot give `feature` on this machine: the program it comes from is missing,
/// e.g. "bash lints only through ShellCheck, and `shellcheck` is not on its PATH", "bash formats
/// only through shfmt, and `shfmt` is not on its PATH", or pylsp has no lint plugin that can
/// run; `None` when it can (or lspc knows of no such program for it).
///
/// `root` is the workspace root, the server's working directory unless its entry names a
/// `workspaceFolder` (a server runs in its workspace folder, `engine/lifecycle.rs`). `path_var`
/// is lspc's `PATH` and `env` its environment; the server's own `env` entries (`PATH`,
/// `SHELLCHECK_PATH`, `SHFMT_PATH`) win over them, as the server inherits lspc's environment
/// plus those.
pub fn missing_program(
    server: &ServerConfig,
    feature: Feature,
    root: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let is_bash = runs_bash_language_server(server);
    missing_program_of(server, is_bash, feature, root, path_var, env)
}

/// [`missing_program`] for a server already known to run bash-language-server or not
/// (`is_bash`, [`runs_bash_language_server`], which may resolve the command's symlinks).
fn missing_program_of(
    server: &ServerConfig,
    is_bash: bool,
    feature: Feature,
    root: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let cwd = server.workspace_folder.as_deref().unwrap_or(root);
    match (feature, is_bash) {
        (Feature::Diagnostics, true) => missing_helper(&SHELLCHECK, server, cwd, path_var, env),
        (Feature::Formatting, true) => missing_helper(&SHFMT, server, cwd, path_var, env),
        (Feature::Diagnostics, false) => {
            super::pylsp_plugins::missing_lint_plugins(server, path_var)
        }
        (Feature::Formatting, false) => None,
    }
}

/// A program bash-language-server runs for one of its features, and where it reads its name.
struct Helper {
    /// What the server does through it, for messages: "lints".
    does: &'static str,
    /// Its name in messages: "ShellCheck".
    title: &'static str,
    /// Its keys in the `bashIde` settings section and in `initializationOptions`:
    /// `["shellcheckPath"]`, `["shfmt", "path"]`.
    setting: &'static [&'static str],
    /// The environment variable naming it: `SHELLCHECK_PATH`.
    variable: &'static str,
    /// The program when nothing names one: `shellcheck`.
    default: &'static str,
}

const SHELLCHECK: Helper = Helper {
    does: "lints",
    title: "ShellCheck",
    setting: &["shellcheckPath"],
    variable: "SHELLCHECK_PATH",
    default: "shellcheck",
};

const SHFMT: Helper = Helper {
    does: "formats",
    title: "shfmt",
    setting: &["shfmt", "path"],
    variable: "SHFMT_PATH",
    default: "shfmt",
};

/// Where bash-language-server's helper program came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HelperSource {
    /// The `bashIde` section lspc answers to `workspace/configuration`.
    Setting,
    /// `initializationOptions`.
    InitializationOptions,
    /// The environment variable.
    Environment,
    /// None of them: the default.
    Default,
}

/// The program bash-language-server 5.8.1 runs for `helper`, trimmed (empty means the feature
/// is off), and where it came from. The server settles it in `onInitialized` (`out/server.js`,
/// `out/config.js`): the environment variable (set but empty turns the feature off), then the
/// initialization option, then the `bashIde` section lspc answers to `workspace/configuration`,
/// which it parses whole: an object there without the setting means the default again,
/// whatever the environment said; `null` (no such section) keeps the earlier value.
fn helper_program(
    helper: &Helper,
    server: &ServerConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> (String, HelperSource) {
    let section = server
        .settings
        .as_ref()
        .and_then(|settings| settings.get("bashIde"));
    match section.and_then(|section| section_value(section, helper.setting)) {
        Some(Some(program)) => return (program.trim().to_owned(), HelperSource::Setting),
        Some(None) => return (helper.default.to_owned(), HelperSource::Default),
        None => {}
    }
    let pointer: String = helper.setting.iter().map(|key| format!("/{key}")).collect();
    let from_options = server
        .initialization_options
        .as_ref()
        .and_then(|options| options.pointer(&pointer))
        .and_then(|program| program.as_str());
    if let Some(program) = from_options {
        return (
            program.trim().to_owned(),
            HelperSource::InitializationOptions,
        );
    }
    let from_env = server
        .env
        .get(helper.variable)
        .cloned()
        .or_else(|| env(helper.variable));
    match from_env {
        Some(program) => (program.trim().to_owned(), HelperSource::Environment),
        None => (helper.default.to_owned(), HelperSource::Default),
    }
}

/// What bash-language-server reads at `keys` of its `bashIde` section, which it parses whole:
/// `Some(Some(program))` when set, `Some(None)` when missing (the schema's default), `None` when
/// a value of the wrong type fails its parse (the server then ignores the section).
fn section_value<'a>(section: &'a serde_json::Value, keys: &[&str]) -> Option<Option<&'a str>> {
    let mut value = section;
    for key in keys {
        match value.as_object()?.get(*key) {
            None => return Some(None),
            Some(inner) => value = inner,
        }
    }
    value.as_str().map(Some)
}

/// Why bash-language-server, whose working directory is `cwd`, cannot run `helper`: the
/// program found as the server finds it. It spawns the program with Node's
/// `child_process.spawn` in its own working directory (`out/shellcheck/index.js`,
/// `out/shfmt/index.js`: neither gets a `cwd`, so `process.cwd()`), so a path holding a `/` is
/// taken from `cwd`, and a bare name is looked up in the server's `PATH`, whose relative
/// entries are also taken from `cwd`.
fn missing_helper(
    helper: &Helper,
    server: &ServerConfig,
    cwd: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let only_through = format!(
        "{} {} only through {}",
        server.name, helper.does, helper.title
    );
    let (program, source) = helper_program(helper, server, env);
    if program.is_empty() {
        let setting = helper.setting.join(".");
        let turned_off_by = match source {
            HelperSource::Setting => format!("its bashIde.{setting} setting"),
            HelperSource::InitializationOptions => format!("its {setting} initialization option"),
            HelperSource::Environment | HelperSource::Default => {
                format!("its empty {}", helper.variable)
            }
        };
        return Some(format!("{only_through}, which {turned_off_by} turns off"));
    }
    if program.contains('/') {
        let path = cwd.join(&program);
        return (!is_executable_file(&path)).then(|| {
            if Path::new(&program).is_absolute() {
                format!("{only_through}, and `{program}` is not executable")
            } else {
                format!(
                    "{only_through}, and `{program}` is not executable in its working directory \
                     {}",
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
    (!found).then(|| format!("{only_through}, and `{program}` is not on its PATH"))
}

/// Turns off what a missing program breaks, for every available server in `servers`, saying
/// why in the log ([`missing_program`]): the diagnostics of a server whose linter is missing (the
/// server stays for queries), and the formatting of one whose formatter is missing (`format`
/// then refuses its files). `root` is the workspace root.
pub fn turn_off_unusable_features(
    servers: &mut [ServerConfig],
    root: &Path,
    path_var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) {
    for server in servers
        .iter_mut()
        .filter(|server| server.resolved_command.is_some())
    {
        // Asked once for both features: it may resolve the command's symlinks.
        let is_bash = runs_bash_language_server(server);
        let missing = |server: &ServerConfig, feature| {
            missing_program_of(server, is_bash, feature, root, path_var, env)
        };
        if server.diagnostics {
            if let Some(reason) = missing(server, Feature::Diagnostics) {
                log::info!("{reason}: its diagnostics are not used");
                server.diagnostics = false;
                server.diagnostics_off_reason = Some(reason);
            }
        }
        if let Some(reason) = missing(server, Feature::Formatting) {
            log::info!("{reason}: `format` refuses its files");
            server.formatting_off_reason = Some(reason);
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
    use std::path::PathBuf;

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

    /// An executable stand-in program at `path`.
    fn executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A temporary folder (removed by the caller) with stand-ins for `program` in `bin/` and in
    /// the workspace `ws/`'s `tools/`, and `check(server, path_var, expected)`, which asserts
    /// what [`missing_program`] says of `server`'s `feature` in that workspace with no
    /// environment of lspc's.
    fn stand_ins(
        program: &str,
        feature: Feature,
    ) -> (PathBuf, impl Fn(&ServerConfig, Option<&str>, Option<&str>)) {
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("lspc-linter-{program}-{pid}"));
        executable(&dir.join("bin").join(program));
        let workspace = dir.join("ws");
        executable(&workspace.join("tools").join(program));
        let check = move |server: &ServerConfig, path_var: Option<&str>, expected: Option<&str>| {
            assert_eq!(
                missing_program(server, feature, &workspace, path_var, &|_| None).as_deref(),
                expected,
                "{server:?}"
            );
        };
        (dir, check)
    }

    #[test]
    fn shellcheck_is_looked_up_as_bash_language_server_does() {
        // A workspace holding its own ShellCheck, and one without.
        let (dir, check) = stand_ins("shellcheck", Feature::Diagnostics);
        let bin = dir.join("bin");
        let shellcheck = bin.join("shellcheck");
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let with_bin = bin.to_str().unwrap();
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

    #[test]
    fn shfmt_is_looked_up_as_bash_language_server_does() {
        let (dir, check) = stand_ins("shfmt", Feature::Formatting);
        let bin = dir.join("bin");
        let shfmt = bin.join("shfmt");
        let with_bin = bin.to_str().unwrap();
        let missing =
            Some("bash-language-server formats only through shfmt, and `shfmt` is not on its PATH");
        check(&bash(None, &[]), Some(with_bin), None);
        check(&bash(None, &[]), Some("/nonexistent"), missing);
        check(
            &bash(None, &[("PATH", "/nonexistent")]),
            Some(with_bin),
            missing,
        );
        // The setting is `bashIde.shfmt.path`, the variable `SHFMT_PATH`; a relative path is
        // taken from the server's working directory.
        let setting = |path: serde_json::Value| {
            Some(serde_json::json!({"bashIde": {"shfmt": {"path": path}}}))
        };
        let absolute = shfmt.to_str().unwrap();
        check(
            &bash(setting(absolute.into()), &[]),
            Some("/nonexistent"),
            None,
        );
        check(
            &bash(setting(" tools/shfmt ".into()), &[]),
            Some("/nonexistent"),
            None,
        );
        check(
            &bash(None, &[("SHFMT_PATH", absolute)]),
            Some("/nonexistent"),
            None,
        );
        check(
            &bash(setting("/nonexistent/shfmt".into()), &[]),
            Some(with_bin),
            Some(
                "bash-language-server formats only through shfmt, and `/nonexistent/shfmt` is \
                 not executable",
            ),
        );
        check(
            &bash(setting("".into()), &[]),
            Some(with_bin),
            Some(
                "bash-language-server formats only through shfmt, which its bashIde.shfmt.path \
                 setting turns off",
            ),
        );
        check(
            &bash(None, &[("SHFMT_PATH", "")]),
            Some(with_bin),
            Some(
                "bash-language-server formats only through shfmt, which its empty SHFMT_PATH \
                 turns off",
            ),
        );
        // A `bashIde` section without `shfmt`, or a `shfmt` without `path`, is the default
        // again; a `path` that is no string fails the server's parse of the section, which it
        // then ignores (SHFMT_PATH stands).
        for section in [
            serde_json::json!({"bashIde": {}}),
            serde_json::json!({"bashIde": {"shfmt": {}}}),
        ] {
            check(
                &bash(Some(section), &[("SHFMT_PATH", absolute)]),
                Some("/nonexistent"),
                missing,
            );
        }
        check(
            &bash(setting(7.into()), &[("SHFMT_PATH", absolute)]),
            Some("/nonexistent"),
            None,
        );
        // The initialization option `shfmt.path` wins over the environment.
        let mut with_options = bash(None, &[("SHFMT_PATH", absolute)]);
        with_options.initialization_options = Some(serde_json::json!({"shfmt": {"path": ""}}));
        check(
            &with_options,
            Some(with_bin),
            Some(
                "bash-language-server formats only through shfmt, which its shfmt.path \
                 initialization option turns off",
            ),
        );
        let mut other = bash(None, &[]);
        other.command = "pyright-langserver".into();
        check(&other, None, None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
