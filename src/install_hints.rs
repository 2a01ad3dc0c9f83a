//! Install hints (seed 003's recommendation): when lspc meets files that no available server
//! serves, say once which server would serve them and the exact command that installs it,
//! e.g. `14 .go files: no language server; install gopls: apt-get install -y gopls golang-go`.
//!
//! Invariants: a hint names only servers of the built-in table (lspc knows how to run those with
//! no configuration); extensions that no built-in serves (`.md`, `.txt`) get no hint; hints are
//! off with `--no-hints` or `LSPC_NO_HINTS=1`. The commands are the ones `.ci/run` uses (Debian
//! apt, npm, PyPI, crates.io).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{builtin_for_extension, extension_key, find_in_path, Config, ConfigOrigin};

/// The command that installs the built-in server `name`, or `None` for names outside the table.
pub fn install_command(name: &str) -> Option<&'static str> {
    Some(match name {
        "pyright" => "npm install -g pyright",
        "basedpyright" => "pip install basedpyright",
        "pylsp" => "pip install 'python-lsp-server[pyflakes,pycodestyle]'",
        "ty" => "pip install ty",
        "pyrefly" => "pip install pyrefly",
        "jedi-language-server" => "pip install jedi-language-server",
        "ruff" => "pip install ruff",
        "typescript-language-server" => "npm install -g typescript-language-server typescript@6",
        "clangd" => "apt-get install -y clangd",
        "rust-analyzer" => "rustup component add rust-analyzer",
        "gopls" => "apt-get install -y gopls golang-go",
        "bash-language-server" => {
            "npm install -g bash-language-server && apt-get install -y shellcheck"
        }
        "taplo" => "cargo install taplo-cli --locked",
        "yaml-language-server" => "npm install -g yaml-language-server",
        "vscode-json-language-server"
        | "vscode-css-language-server"
        | "vscode-html-language-server" => "npm install -g vscode-langservers-extracted",
        "dockerfile-language-server" => "npm install -g dockerfile-language-server-nodejs",
        "cmake-language-server" => "pip install cmake-language-server 'pygls<2'",
        "fortls" => "pip install fortls",
        "esbonio" => "pip install esbonio sphinx",
        "vim-language-server" => "npm install -g vim-language-server",
        "intelephense" => "npm install -g intelephense",
        _ => return None,
    })
}

/// Whether hints are on: not `--no-hints` (`flag`) and not `LSPC_NO_HINTS=1`.
pub fn hints_enabled(no_hints_flag: bool) -> bool {
    !no_hints_flag && std::env::var_os("LSPC_NO_HINTS").is_none_or(|value| value != "1")
}

/// One extension's worth of files that no available server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallHint {
    /// Lowercase, with its dot (`.go`).
    pub extension: String,
    pub n_files: usize,
    /// The built-in server that would serve them.
    pub server: &'static str,
    pub install: &'static str,
    /// The built-in claims the extension but its command is not on PATH (`taplo`), as opposed
    /// to no server claiming it at all (`--no-builtin`, or a configured server took the name).
    pub command_missing: Option<String>,
}

impl InstallHint {
    /// `14 .go files: no language server; install gopls: apt-get install -y gopls golang-go`.
    pub fn message(&self) -> String {
        let files = if self.n_files == 1 { "file" } else { "files" };
        let why = match &self.command_missing {
            Some(command) => format!("{} is not installed ({command} not on PATH)", self.server),
            None => "no language server".to_owned(),
        };
        format!(
            "{} {} {files}: {why}; install {}: {}",
            self.n_files, self.extension, self.server, self.install
        )
    }
}

/// The hints for `files` under `config`, one per extension, in extension order.
pub fn hints_for(config: &Config, files: &[PathBuf]) -> Vec<InstallHint> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        if let Some(extension) = extension_key(file) {
            *counts.entry(extension).or_default() += 1;
        }
    }
    let path_var = std::env::var("PATH").ok();
    let mut hints = Vec::new();
    for (extension, n_files) in counts {
        let claimants: Vec<_> = config
            .servers
            .iter()
            .filter(|server| server.extension_to_language.contains_key(&extension))
            .collect();
        if claimants
            .iter()
            .any(|server| server.resolved_command.is_some())
        {
            continue;
        }
        // A configured server whose command is missing is reported as a failure elsewhere.
        if claimants
            .iter()
            .any(|server| server.origin != ConfigOrigin::BuiltIn)
        {
            continue;
        }
        let Some((server, command)) = builtin_for_extension(&extension) else {
            continue;
        };
        // Installed but not used (`--no-builtin`): not something an install fixes.
        if claimants.is_empty() && find_in_path(command, path_var.as_deref()).is_some() {
            continue;
        }
        let Some(install) = install_command(server) else {
            continue;
        };
        let command_missing = claimants
            .iter()
            .find(|claimant| claimant.name == server)
            .map(|claimant| claimant.command.clone());
        hints.push(InstallHint {
            extension,
            n_files,
            server,
            install,
            command_missing,
        });
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_extension_has_an_install_command() {
        for extension in [
            ".py", ".ts", ".c", ".rs", ".go", ".sh", ".toml", ".yaml", ".json",
        ] {
            let (server, _) = builtin_for_extension(extension).unwrap();
            assert!(install_command(server).is_some(), "{server}");
        }
        for extension in [
            ".css",
            ".html",
            ".dockerfile",
            ".cmake",
            ".f90",
            ".rst",
            ".vim",
            ".php",
        ] {
            let (server, _) = builtin_for_extension(extension).unwrap();
            assert!(install_command(server).is_some(), "{server}");
        }
        assert_eq!(builtin_for_extension(".md"), None);
    }

    #[test]
    fn messages() {
        let mut hint = InstallHint {
            extension: ".go".into(),
            n_files: 14,
            server: "gopls",
            install: "apt-get install -y gopls golang-go",
            command_missing: None,
        };
        assert_eq!(
            hint.message(),
            "14 .go files: no language server; install gopls: apt-get install -y gopls golang-go"
        );
        hint.n_files = 1;
        hint.command_missing = Some("gopls".into());
        assert_eq!(
            hint.message(),
            "1 .go file: gopls is not installed (gopls not on PATH); install gopls: apt-get install -y gopls golang-go"
        );
    }

    #[test]
    fn hints_only_for_unserved_extensions_with_a_builtin() {
        let config = crate::config::load_with_env(
            &crate::config::ConfigOptions {
                builtin: true,
                ..crate::config::test_options(std::path::Path::new("/r"))
            },
            &|name| (name == "PATH").then(|| "/nonexistent".to_owned()),
        );
        let files: Vec<PathBuf> = ["a.go", "b.go", "c.md", "d.toml"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let messages: Vec<String> = hints_for(&config, &files)
            .iter()
            .map(InstallHint::message)
            .collect();
        assert_eq!(
            messages,
            [
                "2 .go files: gopls is not installed (gopls not on PATH); install gopls: apt-get install -y gopls golang-go",
                "1 .toml file: taplo is not installed (taplo not on PATH); install taplo: cargo install taplo-cli --locked",
            ]
        );
    }
}
