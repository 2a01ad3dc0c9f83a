//! Command-line parsing (lexopt, by hand, as ripgrep does) and dispatch.
//!
//! `lspc [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]`; global options may also follow the command.
//! Exit statuses: 0 success, 1 findings, 2 usage or configuration error, 3 a server failed or
//! timed out. A broken stdout pipe exits 0.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::check::{self, CheckOptions};
use crate::config::{self, ConfigOptions};
use crate::diagnostics::Severity;
use crate::mcp::cli::McpCliOptions;

/// Exit statuses shared by every command.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FOUND: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_SERVER: i32 = 3;

const USAGE: &str = "\
lspc: a headless LSP client for agents and scripts

Usage: lspc [OPTIONS] <COMMAND> [ARGS]

Commands:
  check [PATH...]     report the diagnostics language servers publish for files
  servers             list the configured servers and which files they serve
  mcp [-- SERVER ARGS...]
                      serve MCP on stdio: tools and resources over every configured server,
                      or over exactly SERVER when one is given after --

Options (any command):
  --root DIR          workspace root (default: nearest ancestor with .git or .lsp.json)
  --config FILE       a .lsp.json file (repeatable; first wins an extension)
  --plugin-dir DIR    a plugin folder with .lsp.json or a manifest with lspServers (repeatable)
  --trust             load the workspace's own .lsp.json (also LSPC_TRUST=1)
  --no-builtin        do not use lspc's built-in table of well-known servers
  -v, --verbose       more logging on stderr (-vv for debug); RUST_LOG also works
  -h, --help          this help
  -V, --version       print the version

check options:
  --format FORMAT     human (default), json, jsonl, sarif, github
  --severity LEVEL    report only diagnostics at or above LEVEL: error, warning, info, hint (default)
  --fail-on LEVEL     exit 1 when a diagnostic at or above LEVEL is reported (default: error)
  --timeout SECONDS   how long each file's servers may take to settle (default: 30)
  --max-per-file N    report at most N diagnostics per file (default: all)
  --max-total N       report at most N diagnostics in total (default: all)

mcp options:
  --timeout SECONDS   how long one tool call may wait for its server (default: 60)
  --language EXT=ID   with -- SERVER: an extension SERVER serves and its language id
                      (repeatable, e.g. --language py=python; default: the built-in table)
  --init-options JSON with -- SERVER: its initializationOptions
  --settings JSON     with -- SERVER: its settings (workspace/configuration)
  --open-documents N  keep at most N documents open (default: 50)

Exit status: 0 nothing at or above --fail-on, 1 found, 2 usage or config error,
3 a server failed or timed out.
";

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub global: GlobalOptions,
    pub command: Command,
}

/// Options every command accepts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalOptions {
    pub root: Option<PathBuf>,
    pub config_files: Vec<PathBuf>,
    pub plugin_dirs: Vec<PathBuf>,
    pub trust: bool,
    pub no_builtin: bool,
    pub verbose: u8,
}

/// The command to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Check(CheckOptions),
    Servers,
    Mcp(McpCliOptions),
    Help,
    Version,
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

/// Parse `args` (without the program name).
pub fn parse(args: Vec<OsString>) -> Result<Args, UsageError> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let mut global = GlobalOptions::default();
    let mut command_name: Option<String> = None;
    let mut check = CheckOptions::default();
    let mut positionals: Vec<PathBuf> = Vec::new();
    let mut mcp = McpCliOptions::default();
    let mut timeout_given: Option<Duration> = None;
    let mut help = false;
    let mut version = false;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("root") => global.root = Some(parser.value()?.into()),
            Long("config") => global.config_files.push(parser.value()?.into()),
            Long("plugin-dir") => global.plugin_dirs.push(parser.value()?.into()),
            Long("trust") => global.trust = true,
            Long("no-builtin") => global.no_builtin = true,
            Short('v') | Long("verbose") => global.verbose += 1,
            Short('h') | Long("help") => help = true,
            Short('V') | Long("version") => version = true,
            Long("format") => {
                let value: String = parser.value()?.string()?;
                check.format = value.parse().map_err(|_| {
                    UsageError(format!(
                        "--format: unknown format {value:?} (expected human, json, jsonl, sarif or github)"
                    ))
                })?;
            }
            Long("severity") => check.severity = parse_severity("--severity", &mut parser)?,
            Long("fail-on") => check.fail_on = parse_severity("--fail-on", &mut parser)?,
            Long("timeout") => {
                let value: String = parser.value()?.string()?;
                let seconds: f64 = value
                    .parse()
                    .ok()
                    .filter(|seconds: &f64| seconds.is_finite() && *seconds > 0.0)
                    .ok_or_else(|| {
                        UsageError(format!(
                            "--timeout: expected a positive number of seconds, got {value:?}"
                        ))
                    })?;
                check.timeout = Duration::from_secs_f64(seconds);
                timeout_given = Some(check.timeout);
            }
            Long("language") => {
                let value: String = parser.value()?.string()?;
                mcp.languages.push(crate::mcp::cli::parse_language(&value)?);
            }
            Long("init-options") => {
                mcp.init_options = Some(crate::mcp::cli::parse_json("--init-options", &mut parser)?)
            }
            Long("settings") => {
                mcp.settings = Some(crate::mcp::cli::parse_json("--settings", &mut parser)?)
            }
            Long("open-documents") => mcp.open_documents = Some(parser.value()?.parse()?),
            Value(value) if command_name.as_deref() == Some("mcp") => {
                mcp.server_command = Some(value);
                mcp.server_args = parser.raw_args()?.collect();
            }
            Long("max-per-file") => check.max_per_file = Some(parser.value()?.parse()?),
            Long("max-total") => check.max_total = Some(parser.value()?.parse()?),
            Value(value) if command_name.is_none() => command_name = Some(value.string()?),
            Value(value) => positionals.push(value.into()),
            _ => return Err(arg.unexpected().into()),
        }
    }
    if std::env::var_os("LSPC_TRUST").is_some_and(|value| value == "1") {
        global.trust = true;
    }
    let command = if version {
        Command::Version
    } else if help {
        Command::Help
    } else {
        match command_name.as_deref() {
            None => return Err(UsageError("no command given (try lspc --help)".to_owned())),
            Some("check") => {
                check.paths = positionals;
                Command::Check(check)
            }
            Some("servers") => {
                expect_no_positionals("servers", &positionals)?;
                Command::Servers
            }
            Some("mcp") => {
                expect_no_positionals("mcp", &positionals)?;
                mcp.timeout = timeout_given;
                Command::Mcp(mcp)
            }
            Some("help") => Command::Help,
            Some(other) => {
                return Err(UsageError(format!(
                    "unknown command {other:?} (try lspc --help)"
                )))
            }
        }
    };
    Ok(Args { global, command })
}

fn parse_severity(flag: &str, parser: &mut lexopt::Parser) -> Result<Severity, UsageError> {
    use lexopt::prelude::*;
    let value: String = parser.value()?.string()?;
    value.parse().map_err(|_| {
        UsageError(format!(
            "{flag}: unknown severity {value:?} (expected error, warning, info or hint)"
        ))
    })
}

fn expect_no_positionals(command: &str, positionals: &[PathBuf]) -> Result<(), UsageError> {
    match positionals.first() {
        None => Ok(()),
        Some(extra) => Err(UsageError(format!(
            "{command}: unexpected argument {:?}",
            extra.display()
        ))),
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let env = env_logger::Env::default().default_filter_or(default);
    let _ = env_logger::Builder::from_env(env)
        .format_timestamp(None)
        .try_init();
}

/// Parse, run, and return the exit status. `main` only calls this.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let args = match parse(args) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_USAGE;
        }
    };
    init_logging(args.global.verbose);
    match args.command {
        Command::Help => write_stdout(USAGE),
        Command::Version => write_stdout(&format!("lspc {}\n", env!("CARGO_PKG_VERSION"))),
        Command::Servers => {
            let config = load_config(&args.global);
            write_stdout(&config::render_servers(&config))
        }
        Command::Check(options) => {
            let config = load_config(&args.global);
            check::run(config, &options)
        }
        Command::Mcp(options) => crate::mcp::cli::run(&args.global, options),
    }
}

/// Load the configuration for `global`, printing its errors and notes on stderr.
pub fn load_config(global: &GlobalOptions) -> config::Config {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let root = config::workspace_root(&cwd, global.root.as_deref());
    let mut options = ConfigOptions::new(root);
    options.config_files = global.config_files.clone();
    options.plugin_dirs = global.plugin_dirs.clone();
    options.trust_workspace = global.trust;
    options.builtin = !global.no_builtin;
    let config = config::load(&options);
    for error in &config.errors {
        eprintln!("lspc: config error: {error}");
    }
    for note in &config.notes {
        eprintln!("lspc: {note}");
    }
    config
}

/// Write to stdout; a closed pipe (`lspc servers | head -1`) is success.
fn write_stdout(text: &str) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => EXIT_OK,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(error) => {
            eprintln!("lspc: cannot write to stdout: {error}");
            EXIT_USAGE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;

    fn parse_str(line: &str) -> Result<Args, UsageError> {
        parse(line.split_whitespace().map(OsString::from).collect())
    }

    #[test]
    fn check_options_parse_in_any_order() {
        let args =
            parse_str("--root /w check --format json src --severity warning -v a.py").unwrap();
        assert_eq!(args.global.root, Some(PathBuf::from("/w")));
        assert_eq!(args.global.verbose, 1);
        let Command::Check(check) = args.command else {
            panic!("not check")
        };
        assert_eq!(check.format, Format::Json);
        assert_eq!(check.severity, Severity::Warning);
        assert_eq!(
            check.paths,
            vec![PathBuf::from("src"), PathBuf::from("a.py")]
        );
        assert_eq!(check.fail_on, Severity::Error);
    }

    #[test]
    fn usage_errors_name_the_problem() {
        let check = |line: &str, expected: &str| {
            assert_eq!(parse_str(line).unwrap_err().0, expected, "{line}");
        };
        check("", "no command given (try lspc --help)");
        check(
            "frobnicate",
            "unknown command \"frobnicate\" (try lspc --help)",
        );
        check(
            "check --format xml",
            "--format: unknown format \"xml\" (expected human, json, jsonl, sarif or github)",
        );
        check(
            "check --severity bad",
            "--severity: unknown severity \"bad\" (expected error, warning, info or hint)",
        );
        check(
            "check --timeout 0",
            "--timeout: expected a positive number of seconds, got \"0\"",
        );
        check("servers extra", "servers: unexpected argument \"extra\"");
    }
}
