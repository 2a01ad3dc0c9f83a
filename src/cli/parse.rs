//! The lexopt command-line parser (by hand, as ripgrep does): [`parse`] turns the arguments
//! into [`Args`]; operation commands (`LOC` and their flags) are read by `operation_args.rs`.
//!
//! Invariants: parsing does no I/O besides reading the arguments and never exits; every
//! rejection is a [`UsageError`] naming the option or argument (exit status 2 in the caller).
//! Global options are accepted before or after the command.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::{operation_args, Args, Command, GlobalOptions, UsageError};
use crate::check::{
    verdict::{FailOn, ReportFrom},
    CheckOptions,
};
use crate::diagnostics::Severity;
use crate::mcp::cli::McpCliOptions;
use crate::output::Format;
use crate::query::command::QueryFormat;

/// The largest `--timeout` accepted: one day, in seconds. Larger values (up to `1e30`) cannot
/// be a real intent and would overflow `Duration` or `Instant` arithmetic further on.
const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;

/// Parse a `--timeout` value: a positive, finite number of seconds (fractions allowed), at most
/// [`MAX_TIMEOUT_SECONDS`]. Errors name the option and the value.
fn parse_timeout(value: &str) -> Result<Duration, UsageError> {
    let seconds: f64 = value
        .parse()
        .ok()
        .filter(|seconds: &f64| seconds.is_finite() && *seconds > 0.0)
        .ok_or_else(|| {
            UsageError(format!(
                "--timeout: expected a positive number of seconds, got {value:?}"
            ))
        })?;
    if seconds > MAX_TIMEOUT_SECONDS {
        return Err(UsageError(format!(
            "--timeout: at most 86400 seconds (one day), got {value:?}"
        )));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        UsageError(format!(
            "--timeout: expected a positive number of seconds, got {value:?}"
        ))
    })
}

/// Parse the value of a count option (`--max-per-file`, `--max-total`): a non-negative integer.
/// The error names `option`, unlike lexopt's bare "cannot parse argument".
fn parse_count(option: &str, parser: &mut lexopt::Parser) -> Result<usize, UsageError> {
    use lexopt::prelude::*;
    let value: String = parser.value()?.string()?;
    value.parse::<usize>().map_err(|_| {
        UsageError(format!(
            "{option}: expected a non-negative whole number, got {value:?}"
        ))
    })
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
    let mut ide = crate::ide::IdeCliOptions::default();
    let mut timeout_given: Option<Duration> = None;
    let mut severity_given: Option<crate::diagnostics::Severity> = None;
    let mut help = false;
    let mut version = false;
    // Operation flags (`--symbol`, `--apply`, ...), in order, checked once the command is known.
    let mut op_flags: Vec<(String, Option<String>)> = Vec::new();
    let mut session_idle: Option<Duration> = None;
    let mut session_all = false;
    while let Some(arg) = parser.next()? {
        match arg {
            // `--apply` is a flag, except for code-actions where it names the action.
            Long("apply") if command_name.as_deref() == Some("code-actions") => {
                op_flags.push(("--apply".to_owned(), Some(parser.value()?.string()?)))
            }
            Long("root") => global.root = Some(parser.value()?.into()),
            Long("config") => global.config_files.push(parser.value()?.into()),
            Long("plugin-dir") => global.plugin_dirs.push(parser.value()?.into()),
            Long("trust") => global.trust = true,
            Long("no-builtin") => global.no_builtin = true,
            Long("no-hints") => global.no_hints = true,
            Short('v') | Long("verbose") => global.verbose += 1,
            Long("restart") => {
                let value: String = parser.value()?.string()?;
                global.restart = Some(value.parse().map_err(
                    |error: crate::engine::supervisor::RestartPolicyError| {
                        UsageError(error.to_string())
                    },
                )?);
            }
            Long("max-file-size") => {
                let value: String = parser.value()?.string()?;
                global.max_file_size = Some(crate::options::parse_size("--max-file-size", &value)?);
            }
            Short('q') | Long("quiet") => global.quiet = true,
            Long("session") => {
                let value: String = parser.value()?.string()?;
                global.session = Some(value.parse().map_err(UsageError)?);
            }
            Long("idle") => {
                let value: String = parser.value()?.string()?;
                session_idle = Some(
                    crate::session::parse_duration(&value)
                        .map_err(|message| UsageError(format!("--idle: {message}")))?,
                );
            }
            Long("all") => session_all = true,
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
            Long("severity") => {
                let level = parse_severity("--severity", &mut parser)?;
                check.severity = ReportFrom::AtLeast(level);
                severity_given = Some(level);
            }
            Long("fail-on") => {
                check.fail_on = FailOn::AtLeast(parse_severity("--fail-on", &mut parser)?)
            }
            Long("timeout") => {
                let value: String = parser.value()?.string()?;
                check.timeout = parse_timeout(&value)?;
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
            Long("diff") => {
                let value: String = parser.value()?.string()?;
                ide.diff_mode = crate::ide::parse_diff_mode(&value).map_err(UsageError)?;
            }
            Long("port") => {
                let value: String = parser.value()?.string()?;
                ide.port = value.parse().map_err(|_| {
                    UsageError(format!(
                        "--port: expected a port number (0-65535), got {value:?}"
                    ))
                })?;
            }
            Value(value)
                if command_name.as_deref() == Some("ide")
                    && !ide.list
                    && ide.command.is_none()
                    && value == "list" =>
            {
                ide.list = true
            }
            Value(value) if command_name.as_deref() == Some("ide") && !ide.list => {
                ide.command = Some((value, parser.raw_args()?.collect()));
            }
            Long("http") => mcp.http.address = Some(parser.value()?.string()?),
            Long("token") => mcp.http.token = Some(parser.value()?.string()?),
            Long("allow-origin") => mcp.http.allowed_origins.push(parser.value()?.string()?),
            Long("max-connections") => {
                mcp.http.max_connections = Some(parse_count("--max-connections", &mut parser)?)
            }
            Long("header-timeout") => {
                let value: String = parser.value()?.string()?;
                mcp.http.header_timeout = Some(parse_timeout(&value).map_err(|error| {
                    UsageError(error.0.replace("--timeout", "--header-timeout"))
                })?);
            }
            Value(value) if command_name.as_deref() == Some("mcp") => {
                mcp.server_command = Some(value);
                mcp.server_args = parser.raw_args()?.collect();
            }
            Long("max-per-file") => {
                check.max_per_file = Some(parse_count("--max-per-file", &mut parser)?)
            }
            Long("max-total") => check.max_total = Some(parse_count("--max-total", &mut parser)?),
            Long("baseline") => check.baseline = Some(parser.value()?.into()),
            Long("write-baseline") => check.write_baseline = Some(parser.value()?.into()),
            Long("changed-since") => check.changed_since = Some(parser.value()?.string()?),
            Long("shard") => {
                let value: String = parser.value()?.string()?;
                check.shard = Some(value.parse().map_err(
                    |error: crate::check::shard::ParseShardError| UsageError(error.to_string()),
                )?);
            }
            Long("all-files") => check.all_files = true,
            Long("color") | Long("colour") => {
                let value: String = parser.value()?.string()?;
                check.color = crate::check::ColorChoice::parse(&value).ok_or_else(|| {
                    UsageError(format!(
                        "--color: unknown choice {value:?} (expected never, always or auto)"
                    ))
                })?;
            }
            Long("exclude") => {
                let value: String = parser.value()?.string()?;
                if crate::project::pattern::NamePattern::new(&value).is_none() {
                    return Err(UsageError(format!(
                        "--exclude: not a usable pattern: {value:?} (expected a glob such as tests or docs/*.py)"
                    )));
                }
                check.exclude.push(value);
            }
            Long(name) if operation_args::flag_takes_value(name).is_some() => {
                let flag = format!("--{name}");
                let value = match operation_args::flag_takes_value(name) {
                    Some(true) => Some(parser.value()?.string()?),
                    _ => None,
                };
                op_flags.push((flag, value));
            }
            Value(value) if command_name.is_none() => command_name = Some(value.string()?),
            Value(value) => positionals.push(value.into()),
            _ => return Err(arg.unexpected().into()),
        }
    }
    if std::env::var_os("LSPC_TRUST").is_some_and(|value| value == "1") {
        global.trust = true;
    }
    if let Ok(value) = std::env::var("LSPC_SESSION") {
        // `serve` is set by lspc itself on the session process it starts, whose command line
        // may carry `--session always`: it wins. Otherwise the flag beats the variable.
        if value == "serve" {
            global.session = Some(crate::session::SessionMode::Serve);
        } else if global.session.is_none() && !value.is_empty() {
            global.session = Some(value.parse().map_err(|message: String| {
                UsageError(message.replacen("--session", "LSPC_SESSION", 1))
            })?);
        }
    }
    if global.session == Some(crate::session::SessionMode::Serve)
        && std::env::var("LSPC_SESSION").as_deref() != Ok("serve")
    {
        return Err(UsageError(
            "--session: expected auto, never or always, got \"serve\"".to_owned(),
        ));
    }
    // Operation flags belong to operation commands only (`lspc check --use-tabs` is a mistake).
    if let (Some(name), Some((flag, _))) = (command_name.as_deref(), op_flags.first()) {
        if !operation_args::is_operation_command(name) && !help && !version {
            return Err(UsageError(format!("{name}: {flag} does not apply")));
        }
    }
    let command = if version {
        Command::Version
    } else if help {
        match command_name {
            Some(name) if name != "help" => Command::HelpFor(name),
            _ => Command::Help,
        }
    } else {
        match command_name.as_deref() {
            None => return Err(UsageError("no command given (try lspc --help)".to_owned())),
            Some("check") => {
                check.paths = positionals;
                Command::Check(check)
            }
            Some("sarif-merge") => {
                if positionals.is_empty() {
                    return Err(UsageError(
                        "sarif-merge: missing FILE (the SARIF outputs to join)".to_owned(),
                    ));
                }
                Command::SarifMerge { files: positionals }
            }
            Some("servers") => {
                expect_no_positionals("servers", &positionals)?;
                Command::Servers
            }
            Some("doctor") => {
                expect_no_positionals("doctor", &positionals)?;
                let json = match check.format {
                    Format::Human => false,
                    Format::Json => true,
                    other => {
                        return Err(UsageError(format!(
                            "doctor: --format {} is not available (expected human or json)",
                            other.as_str()
                        )))
                    }
                };
                Command::Doctor {
                    json,
                    timeout: check.timeout,
                }
            }
            Some("mcp") => {
                expect_no_positionals("mcp", &positionals)?;
                mcp.timeout = timeout_given;
                Command::Mcp(mcp)
            }
            Some("ide") => {
                expect_no_positionals("ide", &positionals)?;
                ide.timeout = timeout_given;
                ide.json = matches!(check.format, crate::output::Format::Json);
                if !matches!(
                    check.format,
                    crate::output::Format::Json | crate::output::Format::Human
                ) {
                    return Err(UsageError(
                        "ide list: --format must be human or json".to_owned(),
                    ));
                }
                Command::Ide(ide)
            }
            Some("help") => Command::Help,
            Some("session") => {
                use crate::session::commands::SessionCommand;
                let action = match positionals.as_slice() {
                    [action] => action.to_string_lossy().into_owned(),
                    _ => {
                        return Err(UsageError(
                            "session: expected one action: start, status or stop".to_owned(),
                        ))
                    }
                };
                Command::Session(match action.as_str() {
                    "start" => SessionCommand::Start { idle: session_idle },
                    "status" => SessionCommand::Status {
                        json: match check.format {
                            Format::Human => false,
                            Format::Json => true,
                            other => {
                                return Err(UsageError(format!(
                                    "session status: --format {} is not available (expected human or json)",
                                    other.as_str()
                                )))
                            }
                        },
                    },
                    "stop" => SessionCommand::Stop { all: session_all },
                    other => {
                        return Err(UsageError(format!(
                            "session: unknown action {other:?} (expected start, status or stop)"
                        )))
                    }
                })
            }
            Some("batch") => {
                expect_no_positionals("batch", &positionals)?;
                Command::Batch {
                    timeout: check.timeout,
                }
            }
            Some(name) if operation_args::is_operation_command(name) => {
                let format = match check.format {
                    Format::Human => QueryFormat::Human,
                    Format::Json => QueryFormat::Json,
                    other => {
                        return Err(UsageError(format!(
                            "{name}: --format {} is not available here (expected human or json)",
                            other.as_str()
                        )))
                    }
                };
                let positionals: Vec<OsString> = positionals
                    .into_iter()
                    .map(PathBuf::into_os_string)
                    .collect();
                let mut command = operation_args::operation_command(
                    name,
                    &positionals,
                    &op_flags,
                    format,
                    check.timeout,
                )?;
                if let Command::Operation { severity, .. } = &mut command {
                    *severity = severity_given;
                }
                command
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tune_engine;
    use crate::edit::commands::Span;
    use crate::engine::{EngineOptions, RestartPolicy};
    use crate::operation::Operation;
    use crate::output::Format;
    use crate::query::command::QueryRequest;
    use crate::query::{ColumnOrSymbol, TextPosition, TypeDirection};

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
        assert_eq!(check.severity, ReportFrom::AtLeast(Severity::Warning));
        assert_eq!(
            check.paths,
            vec![PathBuf::from("src"), PathBuf::from("a.py")]
        );
        assert_eq!(check.fail_on, FailOn::LikeEachCli);
        let Command::Check(check) = parse_str("check --fail-on error").unwrap().command else {
            panic!("not check")
        };
        assert_eq!(check.fail_on, FailOn::AtLeast(Severity::Error));
    }

    fn operation(line: &str) -> (Operation, QueryFormat, Duration) {
        match parse_str(line).unwrap().command {
            Command::Operation {
                operation,
                format,
                timeout,
                ..
            } => (operation, format, timeout),
            other => panic!("not an operation: {other:?}"),
        }
    }

    #[test]
    fn query_commands_parse() {
        let (references, format, timeout) =
            operation("references src/a.py:1:1 --include-declaration --format json --timeout 5");
        assert_eq!(format, QueryFormat::Json);
        assert_eq!(timeout, Duration::from_secs(5));
        assert_eq!(
            references,
            Operation::Query(QueryRequest::References {
                at: TextPosition {
                    file: PathBuf::from("src/a.py"),
                    line: 1,
                    target: ColumnOrSymbol::Column(1)
                },
                include_declaration: true
            })
        );
        assert!(matches!(
            operation("type-hierarchy s.ts:3 --symbol Circle --subtypes").0,
            Operation::Query(QueryRequest::TypeHierarchy {
                direction: TypeDirection::Subtypes,
                ..
            })
        ));
        // FILE:LINE:NAME in every command.
        assert_eq!(
            operation("hover a.py:2:total").0,
            Operation::Query(QueryRequest::Hover {
                at: TextPosition {
                    file: PathBuf::from("a.py"),
                    line: 2,
                    target: ColumnOrSymbol::Symbol {
                        name: "total".into(),
                        occurrence: 1
                    }
                }
            })
        );
        assert_eq!(
            parse_str("batch --timeout 2").unwrap().command,
            Command::Batch {
                timeout: Duration::from_secs(2)
            }
        );
        assert_eq!(
            parse_str("hover --help").unwrap().command,
            Command::HelpFor("hover".into())
        );
        assert_eq!(parse_str("--help").unwrap().command, Command::Help);
        let check = |line: &str, expected: &str| {
            assert_eq!(parse_str(line).unwrap_err().0, expected, "{line}");
        };
        check(
            "hover",
            "hover: missing LOC (FILE:LINE:COLUMN, FILE:LINE:NAME or FILE:LINE --symbol NAME)",
        );
        check(
            "hover a.py:1:1 b.py:1:1",
            "hover: unexpected argument \"b.py:1:1\"",
        );
        check(
            "hover a.py:1:1 --format sarif",
            "hover: --format sarif is not available here (expected human or json)",
        );
        check(
            "hover a.py:1:1 --include-declaration",
            "hover: --include-declaration does not apply",
        );
        check(
            "type-hierarchy a.ts:1:1 --supertypes --subtypes",
            "type-hierarchy: give --supertypes or --subtypes, not both",
        );
        check(
            "symbols a.py --symbol x",
            "symbols: --symbol does not apply",
        );
        check(
            "hover a.py:0:3",
            "hover: line must be a whole number from 1, got 0",
        );
        check(
            "hover a.py:3:1 --symbol x",
            "hover: give either column or symbol, not both",
        );
        check(
            "hover a.py:3 --symbol x --occurrence 0",
            "hover: occurrence must be a whole number from 1, got 0",
        );
        check(
            "hover a.py:3 --symbol x --occurrence two",
            "hover: occurrence must be a whole number from 1, got \"two\"",
        );
        check("batch extra", "batch: unexpected argument \"extra\"");
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
        check(
            "hover a.py:1:1 --timeout 1e30",
            "--timeout: at most 86400 seconds (one day), got \"1e30\"",
        );
        check(
            "check --timeout 18446744073709551616",
            "--timeout: at most 86400 seconds (one day), got \"18446744073709551616\"",
        );
        check(
            "mcp --timeout 86401",
            "--timeout: at most 86400 seconds (one day), got \"86401\"",
        );
        check(
            "check --timeout nan",
            "--timeout: expected a positive number of seconds, got \"nan\"",
        );
        check(
            "check --max-per-file -1",
            "--max-per-file: expected a non-negative whole number, got \"-1\"",
        );
        check(
            "check --max-total x",
            "--max-total: expected a non-negative whole number, got \"x\"",
        );
        check("servers extra", "servers: unexpected argument \"extra\"");
        check(
            "rename a.py:1:1",
            "rename: expected LOC NEW_NAME, got 1 argument(s)",
        );
        check("edit a.py --old x", "edit: new is required");
        check("format", "format: missing FILE");
        check(
            "format a.ts --tab-size 0",
            "format: tab_size must be a whole number from 1, got 0",
        );
        check(
            "format a.ts --tab-size 65",
            "format: tab_size must be from 1 to 64, got 65",
        );
        check(
            "format a.ts --use-tabs --insert-spaces",
            "format: give --insert-spaces or --use-tabs, not both",
        );
        check("check --use-tabs", "check: --use-tabs does not apply");
        check(
            "hover a.ts:1:1 --tab-size 2",
            "hover: --tab-size does not apply",
        );
        check(
            "rename a.py:1 y",
            "rename: \"a.py:1\" has no column: give FILE:LINE:COLUMN, FILE:LINE:NAME, or FILE:LINE with --symbol NAME",
        );
        check(
            "--restart sometimes check",
            "--restart: expected never, always or a number of restarts, got \"sometimes\"",
        );
        check(
            "--max-file-size 0 check",
            "--max-file-size: expected a positive size in bytes (for example 512K or 5M), got \"0\"",
        );
    }

    #[test]
    fn format_takes_indentation_overrides() {
        use crate::edit::formatting::FormattingOverrides;
        let check = |line: &str, tab_size: Option<u32>, insert_spaces: Option<bool>| {
            assert_eq!(
                operation(line).0,
                Operation::Format {
                    file: "a.ts".into(),
                    apply: false,
                    options: FormattingOverrides {
                        tab_size,
                        insert_spaces
                    },
                },
                "{line}"
            );
        };
        check("format a.ts", None, None);
        check(
            "format a.ts --tab-size 2 --insert-spaces",
            Some(2),
            Some(true),
        );
        check("format --use-tabs a.ts --use-tabs", None, Some(false));
    }

    #[test]
    fn edit_commands_parse() {
        assert_eq!(
            operation("rename a.py:3:5 total --apply"),
            (
                Operation::Rename {
                    at: TextPosition {
                        file: "a.py".into(),
                        line: 3,
                        target: ColumnOrSymbol::Column(5),
                    },
                    new_name: "total".into(),
                    apply: true,
                },
                QueryFormat::Human,
                Duration::from_secs(30)
            )
        );
        assert_eq!(
            operation("code-actions a.py:1-4 --apply Organize --timeout 5"),
            (
                Operation::ApplyCodeAction {
                    at: Span::Lines {
                        path: "a.py".into(),
                        start_line: 1,
                        end_line: 4,
                    },
                    title: "Organize".into(),
                    apply: true,
                },
                QueryFormat::Human,
                Duration::from_secs(5)
            )
        );
        assert_eq!(
            operation("code-actions a.py:2 --symbol x --occurrence 2").0,
            Operation::CodeActions {
                at: Span::At(TextPosition {
                    file: "a.py".into(),
                    line: 2,
                    target: ColumnOrSymbol::Symbol {
                        name: "x".into(),
                        occurrence: 2,
                    },
                }),
            }
        );
        assert_eq!(
            operation("code-actions a.py:7").0,
            Operation::CodeActions {
                at: Span::Lines {
                    path: "a.py".into(),
                    start_line: 7,
                    end_line: 7,
                },
            }
        );
        assert_eq!(
            parse(["rename", "a.py:1:x", " "].map(OsString::from).to_vec()),
            Err(UsageError("rename: new_name must not be empty".to_owned()))
        );
        let args = parse(
            ["edit", "a.py", "--old", "x = 1", "--new", "x = 2"]
                .iter()
                .map(OsString::from)
                .collect(),
        )
        .unwrap();
        assert_eq!(
            args.command,
            Command::Operation {
                operation: Operation::Edit {
                    file: "a.py".into(),
                    old: "x = 1".into(),
                    new: "x = 2".into(),
                },
                format: QueryFormat::Human,
                timeout: Duration::from_secs(30),
                severity: None,
            }
        );
    }

    #[test]
    fn engine_options_follow_the_global_flags() {
        let check = |line: &str, restart: Option<RestartPolicy>, max_file_size: u64| {
            let args = parse_str(line).unwrap();
            let config = crate::config::Config {
                root: PathBuf::from("/w"),
                servers: Vec::new(),
                errors: Vec::new(),
                conflicts: Vec::new(),
                notes: Vec::new(),
                skipped: Vec::new(),
            };
            let mut engine = EngineOptions::new(config);
            tune_engine(&args.global, &mut engine);
            assert_eq!(engine.restart, restart, "{line}");
            assert_eq!(engine.max_file_size, max_file_size, "{line}");
        };
        check("check", None, 10 * 1024 * 1024);
        check(
            "--restart never check",
            Some(RestartPolicy::Never),
            10 * 1024 * 1024,
        );
        check(
            "check --restart always",
            Some(RestartPolicy::Always),
            10 * 1024 * 1024,
        );
        check(
            "--restart 5 --max-file-size 100 check",
            Some(RestartPolicy::Limit(5)),
            100,
        );
    }

    #[test]
    fn ide_commands_parse() {
        use crate::ide::tools::DiffMode;
        use crate::ide::IdeCliOptions;
        let ide = |line: &str| match parse_str(line).unwrap().command {
            Command::Ide(options) => options,
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(ide("ide"), IdeCliOptions::default());
        assert_eq!(ide("ide").diff_mode, DiffMode::Reject);
        let options = ide("ide --diff accept --port 4100 --timeout 9");
        assert_eq!(options.diff_mode, DiffMode::Accept);
        assert_eq!(options.port, 4100);
        assert_eq!(options.timeout, Some(Duration::from_secs(9)));
        let options = ide("ide list --format json");
        assert!(options.list && options.json);
        let options = ide("ide --diff reject -- claude --ide");
        assert_eq!(
            options.command,
            Some((OsString::from("claude"), vec![OsString::from("--ide")]))
        );
        assert!(!options.list);
        let check = |line: &str, expected: &str| {
            assert_eq!(parse_str(line).unwrap_err().0, expected, "{line}");
        };
        check(
            "ide --diff maybe",
            "--diff: expected accept or reject, got \"maybe\"",
        );
        check(
            "ide --port 70000",
            "--port: expected a port number (0-65535), got \"70000\"",
        );
        check("ide list extra", "ide: unexpected argument \"extra\"");
        check(
            "ide list --format sarif",
            "ide list: --format must be human or json",
        );
    }
}
