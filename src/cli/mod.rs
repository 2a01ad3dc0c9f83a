//! The command line: usage text, the parsed [`Args`]/[`Command`] types, and dispatch
//! ([`main_with_args`]); the lexopt parser itself lives in `parse.rs` (re-exported as
//! [`parse()`]) and the command line of every operation command in `operation_args.rs`.
//!
//! `lspc [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]`; global options may also follow the command.
//! Exit statuses: 0 success, 1 findings, 2 usage or configuration error, 3 a server failed or
//! timed out. A broken stdout pipe exits 0.

use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use crate::check::{self, CheckOptions};
use crate::config;
use crate::engine::EngineOptions;
use crate::mcp::cli::McpCliOptions;
use crate::operation::Operation;
use crate::query::command::{QueryFormat, QueryOptions};
use crate::session::SessionMode;

pub use crate::exit::{EXIT_FOUND, EXIT_OK, EXIT_SERVER, EXIT_USAGE};
pub use crate::options::{
    config_options, engine_options, load_config, tune_engine, GlobalOptions, UsageError,
};

/// The options of `lspc mcp`, in `lspc --help` and `lspc mcp --help` alike.
macro_rules! mcp_options {
    () => {
        "  --timeout SECONDS   how long one tool call may wait for its server (default: 60)
  --language EXT=ID   with -- SERVER: an extension SERVER serves and its language id
                      (repeatable, e.g. --language py=python; default: the built-in table)
  --init-options JSON with -- SERVER: its initializationOptions
  --settings JSON     with -- SERVER: its settings (workspace/configuration)
  --open-documents N  keep at most N documents open (default: 50)
  --http ADDR:PORT    serve MCP over Streamable HTTP at http://ADDR:PORT/mcp instead of stdio
                      (port 0 picks a free one; the address is printed on stderr)
  --token TOKEN       with --http: require Authorization: Bearer TOKEN (also LSPC_MCP_TOKEN;
                      required for a non-loopback ADDR)
  --allow-origin ORIGIN  with --http: accept this browser Origin too (repeatable; * for any)
  --max-connections N with --http: connections open at once (default: 64; more get 503)
  --header-timeout SECONDS  with --http: time for a request head (default: 10)
"
    };
}

const USAGE: &str = concat!(
    "\
lspc: a headless LSP client for agents and scripts

Usage: lspc [OPTIONS] <COMMAND> [ARGS]

Commands:
  check [PATH...]     report the diagnostics language servers publish for files
  servers             list the configured servers and which files they serve
  doctor              start every server the workspace needs and report: found, not found
                      or found but broken, initialize time, encoding, diagnostics mode and
                      first-diagnostics time; the install command of what is missing
                      (--format human|json, --timeout SECONDS; exit 1 when something is)
  rename LOC NEW_NAME [--apply]
                      rename the symbol at LOC; prints a unified diff, or with --apply writes
                      and lists the files changed
  code-actions LOC|FILE:LINE|FILE:LINE-LINE [--apply TITLE]
                      list code actions (title, kind, preferred), or apply the one titled TITLE
  format FILE [--apply] [--tab-size N] [--insert-spaces|--use-tabs]
                      format FILE with its server; prints a diff, or writes with --apply;
                      indentation from the flags, .editorconfig, or the file's own
  edit FILE --old TEXT --new TEXT
                      replace the one exact occurrence of TEXT, then report new diagnostics
  definition LOC      where the symbol at LOC is defined (textDocument/definition)
  declaration LOC     its declaration
  type-definition LOC the definition of its type
  implementation LOC  implementations of the interface/method at LOC
  references LOC      every reference to it (--include-declaration adds the declaration)
  hover LOC           the hover text (type, signature, documentation) as plain text
  symbols FILE        the file's symbols as an indented tree
  workspace-symbols QUERY  symbols matching QUERY in the workspace
  call-hierarchy LOC  the call hierarchy item at LOC
  incoming-calls LOC  who calls the function at LOC
  outgoing-calls LOC  what the function at LOC calls
  type-hierarchy LOC  --supertypes (default) or --subtypes of the type at LOC
  signature-help LOC  the signature of the call around LOC
  diagnostics FILE    the settled diagnostics of FILE (exit 1 when there are any);
                      --severity LEVEL shows only those at or above LEVEL
  batch               JSON-lines operations on stdin, one JSON answer line each on stdout
  sarif-merge FILE... join the SARIF outputs of `check --shard` jobs into one log on stdout
  mcp [-- SERVER ARGS...]
                      serve MCP on stdio: tools and resources over every configured server,
                      or over exactly SERVER when one is given after --
  ide [--diff accept|reject] [-- COMMAND ARGS...]
                      be the IDE an agent connects to: MCP over WebSocket on a loopback port,
                      advertised by <config>/ide/<port>.lock; with a COMMAND, run it with
                      CLAUDE_CODE_SSE_PORT set and exit when it does
  ide list            the agent's IDE discovery: every lock file and whether it would be chosen
  session start [--idle DURATION]
                      start the workspace's warm session (servers stay running between
                      commands); prints its socket path. --idle: exit after DURATION
                      (90s, 15m, 2h) with no client (default: LSPC_SESSION_IDLE, else 15m)
  session status [--format json]
                      list this user's sessions: root, pid, uptime, clients, log, config
                      sources and last reload, each server instance with state, pid, RSS
  session stop [--all]
                      stop the workspace's session (or every session of this user)

Options (any command):
  --root DIR          workspace root (default: nearest ancestor with .git or .lsp.json)
  --config FILE       a .lsp.json file (repeatable; first wins an extension)
  --plugin-dir DIR    a plugin folder with .lsp.json or a manifest with lspServers (repeatable)
  --trust             load the workspace's own .lsp.json (also LSPC_TRUST=1)
  --no-builtin        do not use lspc's built-in table of well-known servers
  --no-hints          no install hints for files no server serves (also LSPC_NO_HINTS=1)
  --restart POLICY    restart crashed servers: never, always, or at most N times in a row
                      (default: each server's restartOnCrash/maxRestarts, else 3)
  --max-file-size SIZE  do not send files larger than SIZE to servers: bytes, or with K, M or G
                      (default: 10M)
  -q, --quiet         only errors on stderr (no warnings or notes)
  --session MODE      auto (default): use the workspace's running session, else run in
                      process; always: start the session when none runs; never: run in
                      process (also LSPC_SESSION)
  -v, --verbose       more logging on stderr (-vv for debug); RUST_LOG also works
  -h, --help          this help (COMMAND --help: that command's options and examples)
  -V, --version       print the version

check options:
  --format FORMAT     human (default), json, jsonl, sarif, github
  --severity LEVEL    report only diagnostics at or above LEVEL: error, warning, info,
                      hint (default: info, and every ShellCheck finding, as shellcheck)
  --fail-on LEVEL     exit 1 when a diagnostic at or above LEVEL is reported (default: an
                      error, or a finding the server's own CLI fails on: ruff, go vet,
                      shellcheck)
  --timeout SECONDS   how long each file's servers may take to settle (default: 30)
  --max-per-file N    report at most N diagnostics per file (default: all)
  --max-total N       report at most N diagnostics in total (default: all)
  --baseline FILE     report only findings not in FILE (a previous json or sarif output);
                      matched by file, severity, code, source and message, not position
  --write-baseline FILE  record this run's findings in FILE (json)
  --changed-since REV check only files changed since git revision REV, plus untracked ones
  --shard K/N         check only shard K of N (deterministic, balanced by size)
  --all-files         check every file a server claims, ignoring the servers' project
                      include/exclude (pyrightconfig/pyproject, tsconfig, ruff)
  --exclude GLOB      leave out walked files matching GLOB (a name such as tests, or a
                      path relative to the root such as docs/*.py; repeatable)
  --color WHEN        colour human output: auto (default: on a terminal, unless NO_COLOR
                      is set), always, never

Edit commands (rename, code-actions, format, edit): LOC as for queries (--symbol NAME and
--occurrence N apply); lines and columns count from 1, columns in characters. Every write goes through one engine: all targets inside the root, versions and
disk contents checked, files written atomically, nothing written when any check fails.
Writing commands print the <new-diagnostics> the edit introduced. --timeout bounds each
server request and diagnostics wait. Exit status: 0 done, 1 edit refused, 2 usage, 3 server.

Query options (LOC is FILE:LINE:COLUMN, FILE:LINE:NAME, or FILE:LINE with --symbol NAME, in every
command; 1-based, columns in characters):
  --symbol NAME       the column is the first occurrence of NAME on the line
  --occurrence N      with --symbol: the Nth occurrence instead (default 1)
  --format FORMAT     human (default: path:line:col and the source line) or json
  --timeout SECONDS   bound on server start, indexing wait and each request (default: 30)
  --include-declaration  references: include the declaration itself
  --supertypes, --subtypes  type-hierarchy direction
  --direction DIR     call-hierarchy: incoming or outgoing
  --kind KIND         definition: declaration, type_definition or implementation
  --file FILE         workspace-symbols: ask the server that serves FILE

mcp options:
",
    mcp_options!(),
    "
ide options:
  --diff MODE         openDiff: accept (write the new contents, inside the root only) or
                      reject (default: write nothing)
  --port N            listen on port N (default: a free port)
  --timeout SECONDS   how long one tool call may wait for its servers (default: 60)
  --format FORMAT     ide list: human (default) or json

Exit status: check: 0 nothing that fails (--fail-on), 1 found; queries: 0 found, 1 nothing
found; all: 2 usage or config error, 3 a server failed, timed out or lacks the feature.
"
);

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub global: GlobalOptions,
    pub command: Command,
}

/// The command to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Check(CheckOptions),
    Servers,
    /// `lspc doctor [--format human|json] [--timeout SECONDS]`: probe every server the
    /// workspace needs; `timeout` bounds each server's start and its first diagnostics.
    Doctor {
        json: bool,
        timeout: Duration,
    },
    /// An operation command (every query, `diagnostics`, the edit commands), parsed into the
    /// one [`Operation`] type; `format` is `--format human|json`, `timeout` bounds each server
    /// request and diagnostics wait.
    Operation {
        operation: Operation,
        format: QueryFormat,
        timeout: Duration,
        /// `--severity`, when given: `diagnostics` reports only diagnostics at or above it.
        severity: Option<crate::diagnostics::Severity>,
    },
    /// `lspc batch`: JSON-lines queries on stdin; `timeout` bounds each one.
    Batch {
        timeout: Duration,
    },
    Mcp(McpCliOptions),
    /// `lspc sarif-merge FILE...`: join shard SARIF outputs.
    SarifMerge {
        files: Vec<std::path::PathBuf>,
    },
    /// `lspc ide ...` and `lspc ide list`.
    Ide(crate::ide::IdeCliOptions),
    /// `lspc session start|status|stop`.
    Session(crate::session::commands::SessionCommand),
    Help,
    /// `lspc COMMAND --help`.
    HelpFor(String),
    Version,
}

mod operation_args;
mod parse;

pub use parse::parse;

/// Logs go to stderr as `lspc: warning: ...` (`error`, `info`, `debug`, `trace` likewise), not in
/// the logger's own format. `-q` keeps errors only; `-v`/`-vv` add info/debug; `RUST_LOG` wins.
fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    // The effective filter, also sent to a session so it forwards the same records.
    let spec = std::env::var("RUST_LOG")
        .ok()
        .filter(|spec| !spec.is_empty())
        .unwrap_or_else(|| default.to_owned());
    crate::session::logs::set_client_filter(spec.clone());
    let logger = env_logger::Builder::new()
        .parse_filters(&spec)
        .format(|out, record| {
            let level = match record.level() {
                log::Level::Error => "error",
                log::Level::Warn => "warning",
                log::Level::Info => "info",
                log::Level::Debug => "debug",
                log::Level::Trace => "trace",
            };
            writeln!(out, "lspc: {level}: {}", record.args())
        })
        .build();
    // The session process forwards records to its clients as well as to its log file.
    if std::env::var("LSPC_SESSION").as_deref() == Ok("serve") {
        let _ = crate::session::logs::install_session_logger(logger);
    } else {
        let level = logger.filter();
        if log::set_boxed_logger(Box::new(logger)).is_ok() {
            log::set_max_level(level);
        }
    }
}

/// Reject a `--root` that names a file (or nothing) at once, as a usage error: otherwise the
/// servers fail later with a misleading "working directory does not exist".
fn check_root(global: &GlobalOptions) -> Result<(), UsageError> {
    let Some(root) = &global.root else {
        return Ok(());
    };
    match std::fs::metadata(root) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(UsageError(format!(
            "--root: {} is not a directory",
            root.display()
        ))),
        Err(error) => Err(UsageError(format!(
            "--root: cannot use {}: {error}",
            root.display()
        ))),
    }
}

/// Parse, run, and return the exit status. `main` only calls this.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let mut args = match parse(args) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_USAGE;
        }
    };
    init_logging(args.global.verbose, args.global.quiet);
    if let Err(error) = check_root(&args.global) {
        eprintln!("lspc: {error}");
        return EXIT_USAGE;
    }
    match args.command {
        Command::Help => write_stdout(USAGE),
        Command::Version => write_stdout(&format!("lspc {}\n", env!("CARGO_PKG_VERSION"))),
        Command::Servers => {
            let config = load_config(&args.global);
            let mut text = config::render_servers_with(&config, &config::probe::broken_reason);
            // A server with `"diagnostics": false` is never waited for: it has no rule.
            text.push_str(&crate::engine::SettleRule::render_expected(
                config.servers.iter().filter(|server| server.diagnostics),
            ));
            // Which instances a check would start: one per server and project root (issue 17).
            let root = config.root.clone();
            if let Ok(files) = crate::walk::list_files(&root, std::slice::from_ref(&root)) {
                let lines = config::roots::render_project_roots(&config, &files);
                if !lines.is_empty() {
                    text.push_str("project roots:\n");
                    for line in lines {
                        text.push_str(&format!("  {line}\n"));
                    }
                }
            }
            write_stdout(&text)
        }
        Command::Doctor { json, timeout } => {
            let config = load_config(&args.global);
            match crate::doctor::run(engine_options(config, &args.global), json, timeout) {
                Ok((report, failed)) => match write_stdout(&report) {
                    0 => i32::from(failed),
                    status => status,
                },
                Err(error) => {
                    eprintln!("lspc: {error}");
                    EXIT_USAGE
                }
            }
        }
        Command::Check(mut options) => {
            options.hints = crate::install_hints::hints_enabled(args.global.no_hints);
            let mut global = args.global.clone();
            if global.root.is_none() {
                global.root = check::root_from_targets(&options.paths);
            }
            let config = load_config(&global);
            check::run(engine_options(config, &global), &options)
        }
        Command::Mcp(options) => crate::mcp::cli::run(&args.global, options),
        Command::SarifMerge { files } => match check::sarif_merge::merge_files(&files) {
            Ok(merged) => write_stdout(&format!("{merged}\n")),
            Err(error) => {
                eprintln!("lspc: {error}");
                EXIT_USAGE
            }
        },
        Command::Ide(options) => crate::ide::run_cli(&args.global, options),
        Command::Session(command) => {
            let config = load_config(&args.global);
            crate::session::commands::run(engine_options(config, &args.global), &command)
        }
        Command::Batch { timeout } => {
            let config = load_config(&args.global);
            let had_config_errors = !config.errors.is_empty();
            let status = crate::batch::run(engine_options(config, &args.global), timeout);
            with_config_errors(status, had_config_errors)
        }
        Command::Operation {
            operation,
            format,
            timeout,
            severity,
        } => {
            if let Operation::Query(request) = &operation {
                let options = QueryOptions {
                    request: request.clone(),
                    format,
                    timeout,
                };
                match warm_query(&args.global, &options) {
                    Warm::Answered(status) => return status,
                    Warm::NotUsed => {}
                    // Reported once; the in-process run below does not try the session again.
                    Warm::SessionFailed => args.global.session = Some(SessionMode::Never),
                }
            }
            let config = load_config(&args.global);
            if let Operation::Query(request) = &operation {
                print_query_hints(&args.global, &config, request);
            }
            let had_config_errors = !config.errors.is_empty();
            if had_config_errors && operation.writes() {
                // A helper's trial: `rename --apply` wrote its files, then exited 2; a script
                // reading any failure as "nothing written" was wrong.
                eprintln!("lspc: nothing written: fix the configuration errors above first");
                return EXIT_USAGE;
            }
            let status = run_operation(
                engine_options(config, &args.global),
                operation,
                (format, severity),
                timeout,
                args.global.quiet,
            );
            with_config_errors(status, had_config_errors)
        }
        Command::HelpFor(name) => write_stdout(&command_help(&name)),
    }
}

/// The exit status of a query or edit that ran although its configuration had errors (printed
/// as it loaded): 2, as for `lspc check` ("Exit status: … 2 usage or config error"), whatever it
/// found. A new user's trial: `--config /nonexistent.json` and a `.lsp.json` that did not parse
/// each gave a hover and exit 0, so a script never learnt that its configuration was not used.
fn with_config_errors(status: i32, had_config_errors: bool) -> i32 {
    if had_config_errors {
        EXIT_USAGE
    } else {
        status
    }
}

/// Runs one operation on a fresh engine and prints its answer (human text or the JSON object).
/// Queries keep their own runner (exit 1 when nothing is found, and the "no ... found" line).
fn run_operation(
    engine_options: EngineOptions,
    operation: Operation,
    (format, severity): (QueryFormat, Option<crate::diagnostics::Severity>),
    timeout: Duration,
    quiet: bool,
) -> i32 {
    use crate::edit::commands::EditCommands;
    use crate::operation::execute::{execute, Context};
    if let Operation::Query(request) = operation {
        let options = QueryOptions {
            request,
            format,
            timeout,
        };
        return crate::query::command::report(run_query(engine_options, &options), &options);
    }
    let root = engine_options.config.root.clone();
    let config = engine_options.config.clone();
    let engine = crate::session::start_engine(engine_options);
    let op_sender = engine.op_sender();
    let queries = crate::query::Queries::new(op_sender.clone(), root.clone(), timeout);
    let edits = EditCommands::new(op_sender.clone(), root, timeout);
    let context = Context {
        op_sender: &op_sender,
        queries: &queries,
        edits: &edits,
        timeout,
        config: &config,
        rendering: crate::query::command::Rendering::Both,
        severity,
    };
    let result = execute(&context, &operation);
    engine.shutdown();
    match result {
        Ok(answer) => {
            if let (Some(note), false) = (&answer.note, quiet) {
                eprintln!("lspc: {note}");
            }
            let status = write_stdout(&match format {
                QueryFormat::Json => format!("{}\n", answer.json),
                QueryFormat::Human => answer.human,
            });
            // Diagnostics are findings (exit 1), as for check; an incomplete set (a server
            // failed or timed out) is a server failure (exit 3), as for check.
            match (&operation, answer.found) {
                (Operation::Diagnostics { .. }, _) if status == EXIT_OK && answer.incomplete => {
                    EXIT_SERVER
                }
                (Operation::Diagnostics { .. }, true) if status == EXIT_OK => EXIT_FOUND,
                // A written edit that brought errors is no success for a script: its new
                // diagnostics are findings, as `ruff check --fix` exits 1 on what remains.
                _ if status == EXIT_OK && answer.new_errors > 0 => {
                    let errors = match answer.new_errors {
                        1 => "1 new error".to_owned(),
                        n => format!("{n} new errors"),
                    };
                    eprintln!(
                        "lspc: exit status 1: the edit was written and brought {errors} \
                         (listed above)"
                    );
                    EXIT_FOUND
                }
                _ => status,
            }
        }
        Err(failure) => {
            eprintln!("lspc: {failure}");
            failure.exit_status()
        }
    }
}

/// A query command on one file through the workspace's running session (or, with `--session
/// always`, a started one), loading only the servers for that file
/// ([`config::load_for_extension`]: the built-in table's other programs are not searched on
/// `PATH`) and letting the session check that it runs the same servers for it
/// (the query's lines carry that file's configuration hash, [`client::query_lines`], written
/// before the hello is even read). [`Warm::NotUsed`] when no session is used this way
/// (`never`, the session process itself, no session, a workspace-symbol query, a file without an
/// extension): the command then runs as every other one; [`Warm::SessionFailed`] when the
/// session could not be reached or started (said once on stderr, and not tried again).
///
/// Output and exit status are those of the in-process run: the configuration's errors and notes
/// are the same (every configured source is read), and so are the install hints for the file.
/// When the session runs other servers for the file (a configuration file edited since it
/// loaded it, a server installed), the whole configuration is loaded and the query takes
/// [`run_query`]'s route, whose hello check makes the session reload first.
fn warm_query(global: &GlobalOptions, options: &QueryOptions) -> Warm {
    use crate::session::client;
    let mode = global.session.unwrap_or_default();
    if !matches!(mode, SessionMode::Auto | SessionMode::Always)
        || matches!(
            options.request,
            crate::query::command::QueryRequest::WorkspaceSymbols { .. }
        )
    {
        return Warm::NotUsed;
    }
    let Some(extension) = options.request.file().and_then(config::extension_key) else {
        return Warm::NotUsed;
    };
    let sources = config_options(global);
    let config = config::load_for_extension(&sources, &extension);
    let config_hash = crate::session::hash::config_hash_for_extension(&config, &extension);
    let mut engine_options = EngineOptions::new(config);
    tune_engine(global, &mut engine_options);
    engine_options.config_sources = Some(sources);
    let canonical = options.request.canonical();
    let early = |key: &str| {
        client::query_lines(key, &canonical, options.timeout, Some(config_hash.clone()))
    };
    let connected =
        match client::find_or_start_sending(&engine_options, mode == SessionMode::Always, &early) {
            Ok(connected) => connected,
            Err(client::AttachError::Failed(error)) => {
                eprintln!("lspc: warning: {error}; running without a session");
                return Warm::SessionFailed;
            }
            Err(_) => return Warm::NotUsed,
        };
    crate::options::print_config_messages(&engine_options.config, global.quiet);
    print_query_hints(global, &engine_options.config, &options.request);
    let had_config_errors = !engine_options.config.errors.is_empty();
    let outcome = match client::read_answer(connected) {
        client::QueryExchange::Answered(outcome) => outcome,
        client::QueryExchange::ConfigMismatch => {
            // The errors, notes and hints above are those of the whole configuration too.
            let Some(sources) = engine_options.config_sources.take() else {
                return Warm::NotUsed;
            };
            let mut engine_options = EngineOptions::new(config::load(&sources));
            tune_engine(global, &mut engine_options);
            engine_options.config_sources = Some(sources);
            run_query(engine_options, options)
        }
    };
    Warm::Answered(with_config_errors(
        crate::query::command::report(outcome, options),
        had_config_errors,
    ))
}

/// What [`warm_query`] did.
enum Warm {
    /// The query ran (in the session, or in process after a configuration mismatch): its exit
    /// status.
    Answered(i32),
    /// No session route applies; the command runs as every other one.
    NotUsed,
    /// The session could not be reached or started (already reported on stderr): the command
    /// runs in process without trying it again.
    SessionFailed,
}

/// Prints the install hints for a query's file (`lspc: hint: …`), unless hints are off.
fn print_query_hints(
    global: &GlobalOptions,
    config: &config::Config,
    request: &crate::query::command::QueryRequest,
) {
    if !crate::install_hints::hints_enabled(global.no_hints) {
        return;
    }
    let files: Vec<std::path::PathBuf> = request
        .file()
        .map(std::path::PathBuf::from)
        .into_iter()
        .collect();
    for hint in crate::install_hints::hints_for(config, &files) {
        eprintln!("lspc: hint: {}", hint.message());
    }
}

/// One query command's outcome: from the workspace's session in one round trip when one serves
/// it ([`crate::session::query`]), else from an engine of its own.
fn run_query(
    mut engine_options: EngineOptions,
    options: &QueryOptions,
) -> Result<crate::query::command::QueryAnswer, crate::query::QueryError> {
    let canonical = options.request.canonical();
    if let Some(outcome) = crate::session::query(&mut engine_options, &canonical, options.timeout) {
        return outcome;
    }
    let root = engine_options.config.root.clone();
    let engine = crate::session::start_engine(engine_options);
    let queries = crate::query::Queries::new(engine.op_sender(), root, options.timeout);
    let outcome = crate::query::command::execute(&queries, &options.request);
    engine.shutdown();
    outcome
}

/// `lspc COMMAND --help`: the command's options with examples, from its definition.
fn command_help(name: &str) -> String {
    match crate::operation::definitions::find_operation(name) {
        Some(def) if def.name == name => crate::operation::definitions::command_help(def),
        _ => match name {
            "batch" => BATCH_HELP.to_owned(),
            "mcp" => MCP_HELP.to_owned(),
            "servers" => SERVERS_HELP.to_owned(),
            "session" => SESSION_HELP.to_owned(),
            "doctor" => DOCTOR_HELP.to_owned(),
            "sarif-merge" => SARIF_MERGE_HELP.to_owned(),
            "ide" => IDE_HELP.to_owned(),
            _ => USAGE.to_owned(),
        },
    }
}

const BATCH_HELP: &str = "\
lspc batch: run operations given as JSON lines on stdin, one JSON answer line each on stdout

Usage: lspc batch [--timeout SECONDS]

Each line is one operation in the shape every frontend shares: {\"id\": ANY, \"op\": NAME, ARGUMENT: VALUE, ...}
(the operation names and arguments are those of the commands; see README \"lspc batch\").
Answers: {\"id\": ..., \"result\": ...} (what `lspc NAME --format json` prints) or
{\"id\": ..., \"error\": {\"message\": ...}}, in input order. Relative files are relative to the root.

Options:
  --timeout SECONDS  bound on each operation's server requests and diagnostics wait (default: 30)

Examples:
  echo '{\"id\": 1, \"op\": \"definition\", \"file\": \"src/app.py\", \"line\": 12, \"column\": 8}' | lspc batch
  lspc batch < operations.jsonl
";

const MCP_HELP: &str = concat!(
    "\
lspc mcp: serve MCP on stdio, or over Streamable HTTP with --http (tools and resources over
every configured server)

Usage: lspc mcp [OPTIONS] [-- SERVER ARGS...]

Options:
",
    mcp_options!(),
    "
Global options (--root, --config, --session, -q, -v, ...): see lspc --help.

Examples:
  lspc mcp
  lspc mcp --language py=python -- pyright-langserver --stdio
  lspc mcp --http 127.0.0.1:8765
"
);

const SERVERS_HELP: &str = "\
lspc servers: list the configured servers and which files they serve

Usage: lspc servers

Examples:
  lspc servers
  lspc --no-builtin --config my.lsp.json servers
";

const SESSION_HELP: &str = "\
lspc session: the workspace's warm session (servers stay running between commands)

Usage: lspc session start [--idle DURATION]
       lspc session status [--format json]
       lspc session stop [--all]

start prints the session's socket path; --idle ends it after DURATION (90s, 15m, 2h) with no
client (default: LSPC_SESSION_IDLE, else 15m). status lists this user's sessions: root, pid,
uptime, clients, log, configuration sources and last reload, and each server instance with its
state, pid and RSS. stop ends the workspace's session, or with --all every session of this user.
Other commands use a running session of their workspace unless --session never is given.

Examples:
  lspc session start --idle 2h
  lspc check src && lspc references src/app.py:12:8
  lspc session stop
";

const DOCTOR_HELP: &str = "\
lspc doctor: start every server the workspace needs and report what works

Usage: lspc doctor [--format human|json] [--timeout SECONDS]

For each server: found, not found, or found but broken; its initialize time, position encoding,
diagnostics mode and first-diagnostics time; the install command of what is missing.
Exit status 1 when something is missing or broken.

Examples:
  lspc doctor
  lspc doctor --format json --timeout 60
";

const SARIF_MERGE_HELP: &str = "\
lspc sarif-merge: join the SARIF outputs of `lspc check --shard` jobs into one log on stdout

Usage: lspc sarif-merge FILE...

Examples:
  lspc check --shard 1/2 --format sarif > a.sarif
  lspc check --shard 2/2 --format sarif > b.sarif
  lspc sarif-merge a.sarif b.sarif > lspc.sarif
";

const IDE_HELP: &str = "\
lspc ide: be the IDE an agent connects to (MCP over WebSocket on a loopback port)

Usage: lspc ide [--diff accept|reject] [-- COMMAND ARGS...]
       lspc ide list

The port is advertised by <config>/ide/<port>.lock. With a COMMAND, lspc runs it with
CLAUDE_CODE_SSE_PORT set and exits when it does. --diff accept writes the file an openDiff
proposes (inside the root only); reject, the default, writes nothing. `ide list` prints the agent's IDE discovery: every lock file and whether it would be chosen.

Examples:
  lspc ide -- claude
  lspc ide list
";

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
