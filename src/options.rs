//! Options every command shares ([`GlobalOptions`]: `--root`, `--config`, `--plugin-dir`,
//! `--trust`, `--no-builtin`, `--restart`, `--max-file-size`, `-v`) and how they become a
//! configuration ([`config_options`], [`load_config`]) and engine options ([`engine_options`]);
//! and [`UsageError`], a bad command line or argument (exit status 2).
//!
//! This module sits below every command (`check`, queries, `batch`, edits, `mcp`) so that they
//! take these from here, not from `cli`, which dispatches to them.

use std::path::PathBuf;

use crate::config::{self, ConfigOptions};
use crate::engine::{EngineOptions, RestartPolicy};

/// Options every command accepts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalOptions {
    pub root: Option<PathBuf>,
    pub config_files: Vec<PathBuf>,
    pub plugin_dirs: Vec<PathBuf>,
    pub trust: bool,
    pub no_builtin: bool,
    pub verbose: u8,
    /// `-q/--quiet`: only errors on stderr (no warnings, notes or logs).
    pub quiet: bool,
    /// `--restart never|always|N`; `None` leaves each server's config in charge.
    pub restart: Option<RestartPolicy>,
    /// `--max-file-size BYTES`; `None` means the engine default (10 MiB).
    pub max_file_size: Option<u64>,
    /// `--no-hints` (or `LSPC_NO_HINTS=1`): no install hints for files no server serves.
    pub no_hints: bool,
    /// `--session auto|never|always` or `LSPC_SESSION`; `None` is `auto`.
    pub session: Option<crate::engine::SessionMode>,
}

/// Why the command line could not be parsed; printed with the usage hint, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<lexopt::Error> for UsageError {
    fn from(error: lexopt::Error) -> UsageError {
        UsageError(error.to_string())
    }
}

/// The engine options for `config` (loaded by [`load_config`] for the same `global`) with the
/// global flags applied ([`tune_engine`]) and the configuration's sources recorded.
pub fn engine_options(config: config::Config, global: &GlobalOptions) -> EngineOptions {
    let mut options = EngineOptions::new(config);
    tune_engine(global, &mut options);
    options.config_sources = Some(config_options(global));
    options
}

/// Apply the global options that tune the engine (`--restart`, `--max-file-size`) to `engine`.
/// Every command that starts an engine calls this on its [`EngineOptions`].
pub fn tune_engine(global: &GlobalOptions, engine: &mut EngineOptions) {
    if let Some(restart) = global.restart {
        engine.restart = Some(restart);
    }
    if let Some(max_file_size) = global.max_file_size {
        engine.max_file_size = max_file_size;
    }
    engine.session = global.session.unwrap_or_default();
}

/// What [`load_config`] reads for `global` (also kept by `lspc mcp` to reload on changes).
pub fn config_options(global: &GlobalOptions) -> ConfigOptions {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let root = config::workspace_root(&cwd, global.root.as_deref());
    let mut options = ConfigOptions::new(root);
    options.config_files = global.config_files.clone();
    options.plugin_dirs = global.plugin_dirs.clone();
    options.trust_workspace = global.trust;
    options.builtin = !global.no_builtin;
    options
}

/// Load the configuration for `global`, printing its errors and notes on stderr.
pub fn load_config(global: &GlobalOptions) -> config::Config {
    let config = config::load(&config_options(global));
    print_config_messages(&config, global.quiet);
    config
}

/// Prints `config`'s errors on stderr (`lspc: config error: …`), and its notes unless `quiet`.
pub fn print_config_messages(config: &config::Config, quiet: bool) {
    for error in &config.errors {
        eprintln!("lspc: config error: {error}");
    }
    if !quiet {
        for note in &config.notes {
            eprintln!("lspc: {note}");
        }
    }
}

/// Parse a size in bytes: a whole number with an optional `K`, `M` or `G` suffix (powers of
/// 1024, any case, an optional trailing `B` or `iB`: `512K`, `5M`, `5MiB`, `10485760`). Zero and
/// anything else are refused, naming `option` and the value.
pub fn parse_size(option: &str, value: &str) -> Result<u64, UsageError> {
    let bad = || {
        UsageError(format!(
            "{option}: expected a positive size in bytes (for example 512K or 5M), got {value:?}"
        ))
    };
    let lower = value.trim().to_ascii_lowercase();
    let without_b = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, factor) = match without_b.char_indices().last() {
        Some((index, 'k')) => (&without_b[..index], 1u64 << 10),
        Some((index, 'm')) => (&without_b[..index], 1 << 20),
        Some((index, 'g')) => (&without_b[..index], 1 << 30),
        _ => (without_b, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(bad());
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|number| number.checked_mul(factor))
        .filter(|bytes| *bytes > 0)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_suffixes() {
        let check = |value: &str, expected: Result<u64, ()>| {
            assert_eq!(
                parse_size("--max-file-size", value).map_err(|_| ()),
                expected,
                "{value}"
            );
        };
        check("10485760", Ok(10_485_760));
        check("512K", Ok(512 * 1024));
        check("5M", Ok(5 * 1024 * 1024));
        check("5m", Ok(5 * 1024 * 1024));
        check("5MiB", Ok(5 * 1024 * 1024));
        check("1G", Ok(1 << 30));
        check("2kb", Ok(2048));
        check("0", Err(()));
        check("0K", Err(()));
        check("M", Err(()));
        check("-5M", Err(()));
        check("5.5M", Err(()));
        check("5T", Err(()));
        check("99999999999999999999", Err(()));
        assert_eq!(
            parse_size("--max-file-size", "lots").unwrap_err().0,
            "--max-file-size: expected a positive size in bytes (for example 512K or 5M), got \"lots\""
        );
    }
}
