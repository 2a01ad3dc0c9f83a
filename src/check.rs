//! `lspc check`: turn language servers into a linter with exit codes and machine-readable output.
//!
//! Steps: list the files (directories walked honouring `.gitignore`, files no server serves
//! skipped), ask the engine for each file's settled diagnostics, filter by `--severity`, apply the
//! optional caps, render, and map the outcome to an exit status (see [`crate::exit`]).
//!
//! Repository-scale options live in their own modules and hook in here: `--changed-since`
//! ([`changed`]) and `--shard` ([`shard`]) narrow the file list, `--baseline` /
//! `--write-baseline` ([`baseline`]) record and subtract known findings, and `lspc sarif-merge`
//! ([`sarif_merge`]) joins shard outputs.

pub mod baseline;
pub mod changed;
mod found_paths;
mod include_hint;
pub mod sarif_merge;
pub mod shard;
pub(crate) mod tsconfig_diagnostics;
pub mod verdict;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select};

use crate::diagnostics::{self, Diagnostic};
use crate::engine::{DiagnosticsOutcome, EngineHandle, EngineOptions, Op};
use crate::exit::{EXIT_FOUND, EXIT_OK, EXIT_SERVER, EXIT_USAGE};
use crate::output::{self, CheckReport, FileReport, FileState, Format, ServerFailure, SkippedFile};
use crate::process::ServerId;
use crate::project::ProjectFiles;
use crate::walk;

/// `lspc check` options. Positions in every output are 1-based; columns count characters.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    /// Files or folders; empty means the workspace root.
    pub paths: Vec<PathBuf>,
    pub format: Format,
    /// Which diagnostics are reported (`--severity`; by default information and above, and
    /// every ShellCheck finding, [`verdict::ReportFrom`]); the summary counts what was left out.
    pub severity: verdict::ReportFrom,
    /// Which reported diagnostics make the exit status 1 (default: each server's own CLI's
    /// verdict, [`verdict::FailOn`]).
    pub fail_on: verdict::FailOn,
    /// How long each file's servers may take to settle, counted from the file's sync.
    pub timeout: Duration,
    pub max_per_file: Option<usize>,
    pub max_total: Option<usize>,
    /// Check every claimed file, ignoring the servers' project include/exclude.
    pub all_files: bool,
    /// `--color`: ANSI colours in human output.
    pub color: ColorChoice,
    /// `--exclude` globs (ruff-style: a bare name matches any path component, a path is
    /// relative to the root), validated by the CLI.
    pub exclude: Vec<String>,
    /// Print install hints for walked files no available server serves (off with `--no-hints`
    /// or `LSPC_NO_HINTS=1`; see [`crate::install_hints`]).
    pub hints: bool,
    /// `--baseline FILE`: a previous json or sarif output whose findings are not reported.
    pub baseline: Option<PathBuf>,
    /// `--write-baseline FILE`: write this run's findings (json, before `--baseline` and the
    /// caps) to FILE.
    pub write_baseline: Option<PathBuf>,
    /// `--changed-since REV`: only files changed since this git revision (plus untracked ones).
    pub changed_since: Option<String>,
    /// `--shard K/N`: only this shard's share of the files.
    pub shard: Option<shard::Shard>,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            paths: Vec::new(),
            format: Format::Human,
            severity: verdict::ReportFrom::LikeEachCli,
            fail_on: verdict::FailOn::LikeEachCli,
            timeout: Duration::from_secs(30),
            max_per_file: None,
            hints: true,
            max_total: None,
            all_files: false,
            exclude: Vec::new(),
            color: ColorChoice::Auto,
            baseline: None,
            write_baseline: None,
            changed_since: None,
            shard: None,
        }
    }
}

/// `--color never|always|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty (no-color.org).
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Parses `never`, `always` or `auto`; `None` otherwise.
    pub fn parse(text: &str) -> Option<ColorChoice> {
        match text {
            "auto" => Some(ColorChoice::Auto),
            "always" => Some(ColorChoice::Always),
            "never" => Some(ColorChoice::Never),
            _ => None,
        }
    }

    /// Whether to colour, given whether stdout is a terminal and the value of `NO_COLOR`.
    pub fn resolve(self, stdout_is_terminal: bool, no_color: Option<&str>) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stdout_is_terminal && no_color.is_none_or(str::is_empty),
        }
    }
}

/// The workspace root to use when `--root` is not given and the current directory is not inside
/// the first target's root (its nearest ancestor with `.git` or `.lsp.json`): that root, so
/// `lspc check /abs/proj/src/x.py` from `/tmp` gives the same verdict as from inside the project
/// (issue 10). `None` keeps the usual root (from the current directory).
pub fn root_from_targets(targets: &[PathBuf]) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let target = crate::uri::canonical(&cwd.join(targets.first()?));
    let folder = if target.is_dir() {
        target.clone()
    } else {
        target.parent()?.to_path_buf()
    };
    let target_root = crate::config::workspace_root(&folder, None);
    let cwd = crate::uri::canonical(&cwd);
    // With no marker above the target, the fallback root is its own folder; then the targets
    // decide together: all under the current directory keep it (`lspc check sub/a.toml b.toml`
    // in a folder with no `.git` rooted the check at `sub/`, and `b.toml` was outside the
    // root), else their common folder (`lspc check ../other/c.toml b.toml`).
    let marked =
        target_root != folder || folder.join(".git").exists() || folder.join(".lsp.json").is_file();
    if !marked {
        let folders: Vec<PathBuf> = targets
            .iter()
            .map(|target| crate::uri::canonical(&cwd.join(target)))
            .map(|target| match target.is_dir() {
                true => target,
                false => target.parent().map_or(target.clone(), Path::to_path_buf),
            })
            .collect();
        if folders.iter().all(|folder| folder.starts_with(&cwd)) {
            return None;
        }
        return common_folder(&folders).filter(|common| *common != cwd);
    }
    (!cwd.starts_with(&target_root)).then_some(target_root)
}

/// The deepest folder holding every one of `folders` (absolute); `None` for none.
fn common_folder(folders: &[PathBuf]) -> Option<PathBuf> {
    let (first, rest) = folders.split_first()?;
    let mut common = first.clone();
    for folder in rest {
        while !folder.starts_with(&common) {
            common = common.parent()?.to_path_buf();
        }
    }
    Some(common)
}

/// Run the check; returns the exit status. `tune` adjusts the engine options built from the
/// config (the global `--restart`/`--max-file-size`, see [`crate::options::tune_engine`]).
pub fn run(mut engine_options: EngineOptions, options: &CheckOptions) -> i32 {
    // The engine takes the options; the check keeps its own copy of the configuration.
    let config_copy = engine_options.config.clone();
    let config = &config_copy;
    let root = config.root.clone();
    let (interrupted_sender, interrupted_receiver) = crossbeam_channel::bounded(1);
    engine_options.interrupted_sender = Some(interrupted_sender);
    // Nothing here drains the passive queue (an engine in a session queues anyway).
    engine_options.passive_delivery = false;
    // Started before the walk: the engine's thread, signal handlers and state come up while the
    // files are listed and selected, instead of after (issue 15: 0.4 ms of a 17 ms ruff check).
    // No server starts until the engine is asked about a file. A check that ends before asking
    // drops it (in a session: closes only this connection). Not with `--session always`, which
    // would start a session process for a check that may find nothing to check.
    let early_engine = (engine_options.session != crate::session::SessionMode::Always)
        .then(|| crate::session::start_engine(engine_options.clone()));
    // The servers' watchdog starts now too, in the background, instead of next to the first
    // server, where its `/bin/sh` competed with the server's own start (engine::watchdog). Not
    // for an engine in a session, whose process has its own. Dropped after the engine.
    let _watchdog_hold = early_engine
        .as_ref()
        .filter(|engine| !engine.is_remote())
        .map(|_| crate::engine::prepare_watchdog());
    let targets = if options.paths.is_empty() {
        vec![root.clone()]
    } else {
        options.paths.clone()
    };
    let listing = match walk::list_files_found(&root, &targets) {
        Ok(listing) => listing,
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_USAGE;
        }
    };
    // The report shows a file found through a symlink as the link (`found_paths.rs`).
    let found_paths = found_paths::FoundPaths::new(&listing.files);
    let files: Vec<PathBuf> = listing.files.iter().map(|file| file.path.clone()).collect();
    if options.hints {
        for hint in crate::install_hints::hints_for(config, &files) {
            eprintln!("lspc: hint: {}", hint.message());
        }
        for note in crate::unchecked_kinds::notes_for(config, &files) {
            eprintln!("lspc: hint: {note}");
        }
    }
    // Files named explicitly are checked even when no server serves them (they get an error);
    // files found by walking a folder are skipped unless a server claims them (a configured
    // server whose command is missing still claims its files, so they are reported, not skipped).
    let named = NamedPaths::new(&targets);
    let explicit = named.files.clone();
    let folders = named.folders.clone();
    let mut narrowing = match Narrowing::new(&root, options) {
        Ok(narrowing) => narrowing,
        Err(message) => {
            eprintln!("lspc: {message}");
            return EXIT_USAGE;
        }
    };
    let mut selection = select_files(config, options, &named, listing, narrowing.changed.as_ref());
    // Paths below the root print relative to it, as everywhere in the report.
    let root_prefix = format!("{}/", root.display());
    let config_errors: Vec<String> = config
        .errors
        .iter()
        .map(|error| error.to_string().replace(&root_prefix, ""))
        .collect();
    if selection.files.is_empty() {
        if !selection.skipped.is_empty() || selection.n_unchanged_left_out > 0 {
            // Everything walked was skipped: outside the servers' projects, or for a reason of
            // its own. Say why; nothing was checked, so it is no clean run.
            let mut report = empty_report(&root, options, selection);
            found_paths.apply(&mut report);
            let ending = Ending {
                config_errors,
                n_unsent: n_unsent(config, &report),
                // `--changed-since`: a change the projects leave out has nothing to check.
                nothing_in_projects: narrowing.changed.is_none(),
                ..Ending::default()
            };
            return finish(&report, options, ending);
        }
        // A check that checks nothing is a misconfigured job, not a clean one.
        if selection.n_excluded > 0 {
            // A helper's trial: `--exclude middleware` on `tests/middleware` was reported as
            // "no configured language server serves the given paths".
            eprintln!(
                "lspc: no files to check: --exclude left out {} the servers serve under the \
                 given paths",
                match selection.n_excluded {
                    1 => "the one file".to_owned(),
                    n => format!("all {n} files"),
                }
            );
        } else {
            eprintln!(
                "lspc: no files to check: no configured language server serves the given paths"
            );
        }
        return EXIT_USAGE;
    }
    let baseline = match options.baseline.as_deref().map(baseline::Baseline::load) {
        Some(Err(error)) => {
            eprintln!("lspc: {error}");
            return EXIT_USAGE;
        }
        Some(Ok(baseline)) => Some(baseline),
        None => None,
    };
    selection.files = narrowing.files(&root, std::mem::take(&mut selection.files));
    // Nothing changed, nothing broken: no note then.
    if let Some(note) = narrowing
        .unchanged_note()
        .filter(|_| !selection.files.is_empty())
    {
        selection.notes.push(note);
    }
    if selection.files.is_empty() {
        // An empty shard or an unchanged tree is a clean run: nothing starts.
        let mut report = empty_report(&root, options, selection);
        found_paths.apply(&mut report);
        let ending = Ending {
            config_errors,
            baseline: baseline
                .as_ref()
                .map(|_| baseline::BaselineCounts::default()),
            ..Ending::default()
        };
        return finish(&report, options, ending);
    }

    let config_servers: Vec<crate::config::ServerConfig> = config
        .servers
        .iter()
        .filter(|server| server.resolved_command.is_none())
        .filter(|server| server.origin != crate::config::ConfigOrigin::BuiltIn)
        .cloned()
        .collect();
    let checked_files = selection.files.clone();
    // The session wire is JSON, which has no form for a path that is not UTF-8 (`caf\xE9.py`):
    // such a check runs in process, with the same verdict.
    let engine = match checked_files.iter().find(|path| path.to_str().is_none()) {
        Some(path) if engine_options.session != crate::session::SessionMode::Never => {
            if engine_options.session == crate::session::SessionMode::Always {
                eprintln!(
                    "lspc: warning: {} has a name that is not UTF-8, which the session wire cannot carry; running without a session",
                    output::display_path(&root, path)
                );
            }
            if let Some(early_engine) = early_engine {
                early_engine.shutdown();
            }
            engine_options.session = crate::session::SessionMode::Never;
            crate::session::start_engine(engine_options)
        }
        _ => match early_engine {
            Some(early_engine) => early_engine,
            None => crate::session::start_engine(engine_options),
        },
    };
    let leave_out = selection.leave_out.clone();
    // On a terminal, human output streams each file when it is settled (no caps: they need
    // every file); otherwise files come out in path order at the end.
    let stream = options.format == Format::Human
        && options.baseline.is_none()
        && std::io::stdout().is_terminal()
        && options.max_per_file.is_none()
        && options.max_total.is_none();
    let human_base = empty_report(&root, options, Selection::default()).human_base;
    let mut streamed: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut on_file = |result: &crate::engine::FileDiagnostics| {
        if !stream {
            return;
        }
        let Classified::File {
            path, state, found, ..
        } = classify(config, &leave_out, &explicit, result.clone())
        else {
            return;
        };
        let mut one = empty_report(&root, options, Selection::default());
        push_file(&mut one, options.severity, path.clone(), state, found);
        found_paths.apply(&mut one);
        let mut stdout = std::io::stdout().lock();
        let _ = output::render(&one, Format::Human, &mut stdout).and_then(|()| stdout.flush());
        streamed.insert(found_paths.shown(&path));
    };
    let waited = wait_with_progress(
        &engine,
        WaitRequest {
            files: selection.files.clone(),
            leave_out: leave_out.clone(),
            timeout: options.timeout,
            interrupted: interrupted_receiver,
            human_base,
        },
        &mut on_file,
    );
    let (unrequested, statuses) = match waited.interrupted {
        // The engine is gone: what it had is what the finished files say.
        Some(_) => (Vec::new(), Vec::new()),
        // What servers published for files lspc did not open (tsconfig.json's TS6053), inside
        // the checked folders.
        None => after_the_files(&engine),
    };

    let mut config_diagnostics = std::mem::take(&mut selection.config_diagnostics);
    if waited.interrupted.is_none() {
        // tsc's errors in a tsconfig.json itself, which typescript-language-server never
        // publishes; lspc's own TS6053 for a missing `extends` base stays the one reported.
        add_tsconfig_errors(
            &engine.op_sender(),
            &root,
            &checked_files,
            options.timeout,
            &mut config_diagnostics,
        );
    }
    let mut report = empty_report(&root, options, selection);
    report.server_failures = statuses
        .iter()
        .filter_map(|status| {
            let message = status.failure.clone()?;
            Some(ServerFailure {
                server: match &status.project {
                    Some(project) => format!("{} ({project})", status.name),
                    None => status.name.clone(),
                },
                message,
            })
        })
        .collect();
    // A configured server whose program is missing fails alone, once (the built-ins for its
    // extensions keep serving).
    for server in &config_servers {
        let claims_a_file = checked_files.iter().any(|file| {
            crate::config::extension_key(file)
                .is_some_and(|key| server.extension_to_language.contains_key(&key))
        });
        let said = report
            .server_failures
            .iter()
            .any(|f| f.server == server.name);
        if claims_a_file && !said {
            report.server_failures.push(ServerFailure {
                server: server.name.clone(),
                message: format!("cannot start: command not found: {}", server.command),
            });
        }
    }
    let mut n_named_not_checked = 0;
    let n_finished = waited.results.len();
    for result in waited.results {
        match classify(config, &leave_out, &explicit, result) {
            Classified::Skipped(skipped) => report.skipped.push(skipped),
            Classified::File {
                path,
                state,
                found,
                named_not_checked,
            } => {
                n_named_not_checked += usize::from(named_not_checked);
                push_file(&mut report, options.severity, path, state, found);
            }
        }
    }
    let known: std::collections::HashSet<PathBuf> = report
        .files
        .iter()
        .map(|file| file.path.clone())
        .chain(report.skipped.iter().map(|skipped| skipped.path.clone()))
        .collect();
    let mut extra: Vec<(PathBuf, Vec<diagnostics::Diagnostic>)> = unrequested;
    // Problems in the project configuration, as the project's CLI reports them (tsc -p: TS6053
    // for a missing `extends`), belong to that configuration file.
    // A configuration file some server checked (vscode-json-language-server on tsconfig.json)
    // gets them added to what that server found.
    for diagnostic in config_diagnostics {
        if let Some(file) = report
            .files
            .iter_mut()
            .find(|file| file.path == diagnostic.path)
        {
            add_config_diagnostic(
                file,
                &mut report.n_below_severity,
                options.severity,
                diagnostic,
            );
            continue;
        }
        match extra.iter_mut().find(|(path, _)| *path == diagnostic.path) {
            Some((_, found)) => found.push(diagnostic),
            None => extra.push((diagnostic.path.clone(), vec![diagnostic])),
        }
    }
    for (path, found) in extra {
        let inside = folders.iter().any(|folder| path.starts_with(folder));
        if !inside || known.contains(&path) || excluded_by_flag(options, &root, &path) {
            continue;
        }
        // Each shard (or a changed-files run) reports a file it did not open only when that
        // file is its own, so the shards' union has it once.
        if !narrowing.keeps_unopened(&root, &path) {
            continue;
        }
        push_file(
            &mut report,
            options.severity,
            path,
            FileState::Diagnostics,
            found,
        );
    }
    found_paths.apply(&mut report);
    crate::sorting::sort_by(&mut report.files, |a, b| a.path.cmp(&b.path));
    crate::sorting::sort_by(&mut report.skipped, |a, b| a.path.cmp(&b.path));
    if let Some(path) = &options.write_baseline {
        if let Err(error) = write_baseline(&report, path) {
            eprintln!("lspc: cannot write baseline {}: {error}", path.display());
            return EXIT_USAGE;
        }
    }
    let baseline_counts = baseline
        .as_ref()
        .map(|baseline| baseline.apply(&mut report, options.severity));
    // The exit status counts every reported diagnostic (new ones only, with a baseline),
    // including those the caps leave out.
    let verdict = verdict::Verdict::new(config, options.fail_on);
    let failing: Vec<&Diagnostic> = report
        .files
        .iter()
        .flat_map(|file| &file.diagnostics)
        .filter(|diagnostic| verdict.fails(diagnostic))
        .collect();
    let found = !failing.is_empty();
    let cli_verdict_note = verdict_note(&verdict, &failing);
    if options.max_per_file.is_some() || options.max_total.is_some() {
        let mut capped: Vec<_> = report
            .files
            .iter_mut()
            .map(|file| (file.path.clone(), std::mem::take(&mut file.diagnostics)))
            .collect();
        let omitted = diagnostics::apply_caps(&mut capped, options.max_per_file, options.max_total);
        for ((file, (_, kept)), n_omitted) in report.files.iter_mut().zip(capped).zip(omitted) {
            file.diagnostics = kept;
            file.n_omitted = n_omitted;
            report.n_omitted += n_omitted;
        }
    }
    let ending = Ending {
        found,
        cli_verdict_note,
        n_unsent: n_unsent(config, &report),
        nothing_in_projects: false,
        n_named_not_checked,
        config_errors,
        baseline: baseline_counts,
        streamed,
        interrupted: waited
            .interrupted
            .map(|signal| (signal, n_finished, checked_files.len())),
    };
    let status = finish(&report, options, ending);
    // The report is out before the servers' `shutdown`/`exit` and the reaping of their process
    // groups (about 3 ms for ruff, up to the shutdown timeout for a server that ignores
    // `shutdown`): it says nothing a server's stop could change, since the statuses were taken
    // above. lspc still exits only once every process is gone.
    engine.shutdown();
    status
}

/// What the report needs from the engine once every file is finished: what servers published
/// for files lspc did not open, and each server's status. The three ops go out together and
/// the loop answers them in one turn (issue 15: asked one after another they were six thread
/// hand-offs, 0.2–0.4 ms of a ruff check on the loaded machine). Empty once the engine is gone.
fn after_the_files(
    engine: &EngineHandle,
) -> (
    Vec<(PathBuf, Vec<diagnostics::Diagnostic>)>,
    Vec<crate::engine::ServerStatus>,
) {
    let op_sender = engine.op_sender();
    let (open_reply, open_receiver) = bounded(1);
    let (current_reply, current_receiver) = bounded(1);
    let (status_reply, status_receiver) = bounded(1);
    let ops = [
        Op::OpenDocuments { reply: open_reply },
        Op::CurrentDiagnostics {
            reply: current_reply,
        },
        Op::Status {
            reply: status_reply,
        },
    ];
    if ops.into_iter().any(|op| op_sender.send(op).is_err()) {
        return (Vec::new(), Vec::new());
    }
    // In a session the engine also holds files other commands opened: those are source files
    // some other run checks, not files no one opened (in process, every open file is this run's
    // own and already reported).
    let open: std::collections::HashSet<PathBuf> = open_receiver
        .recv()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let unrequested = current_receiver
        .recv()
        .unwrap_or_default()
        .into_iter()
        .filter(|(path, _)| !open.contains(path))
        .collect();
    (unrequested, status_receiver.recv().unwrap_or_default())
}

/// One finished file, as the report takes it.
enum Classified {
    File {
        path: PathBuf,
        state: FileState,
        found: Vec<diagnostics::Diagnostic>,
        /// A file named on the command line that no server could take.
        named_not_checked: bool,
    },
    /// Found by walking a folder and not sendable (binary, too large, not UTF-8).
    Skipped(SkippedFile),
}

fn classify(
    config: &crate::config::Config,
    leave_out: &HashMap<PathBuf, Vec<ServerId>>,
    explicit: &[PathBuf],
    result: crate::engine::FileDiagnostics,
) -> Classified {
    let path = result.path;
    let (state, found, named_not_checked) = match result.outcome {
        DiagnosticsOutcome::Settled(found) => (FileState::Diagnostics, found, false),
        DiagnosticsOutcome::TimedOut {
            diagnostics,
            servers,
            after,
        } => {
            let answered = answered_servers(config, leave_out, &path, &servers);
            let reason = timeout_reason(&diagnostics, &servers, &answered, after);
            (FileState::Timeout { reason }, diagnostics, false)
        }
        // Not clean, and not a timeout: an error, with the other servers' findings kept.
        DiagnosticsOutcome::PartlyFailed {
            diagnostics,
            failures,
        } => {
            let message = format!("not checked by every server: {failures}");
            (FileState::Error { message }, diagnostics, false)
        }
        DiagnosticsOutcome::Failed(message) => (FileState::Error { message }, Vec::new(), false),
        DiagnosticsOutcome::NotChecked(message) if !explicit.contains(&path) => {
            // Found by walking a folder (a binary `.py`, a 20 MB generated file): skipped, said
            // on stderr and in the machine formats, and not counted as a failure. The reason
            // goes without the absolute path (machine formats name the file already).
            let reason = walked_skip_reason(&path, &message);
            return Classified::Skipped(SkippedFile {
                path,
                reason,
                outside_projects: false,
            });
        }
        DiagnosticsOutcome::NotChecked(message) => (FileState::Error { message }, Vec::new(), true),
    };
    Classified::File {
        path,
        state,
        found,
        named_not_checked,
    }
}

/// Renders the report, writes the stderr lines and returns the exit status.
fn finish(report: &CheckReport, options: &CheckOptions, ending: Ending) -> i32 {
    let mut stdout = std::io::stdout().lock();
    let details = output::RunDetails {
        baseline: ending
            .baseline
            .map(|counts| (counts.n_matched, counts.n_gone)),
        shard: options
            .shard
            .map(|shard| (shard.to_string(), shard.automation_id())),
        config_errors: ending.config_errors.clone(),
    };
    let written = if ending.streamed.is_empty() {
        output::render_with(report, options.format, &details, &mut stdout)
    } else {
        // Streamed files are on the terminal already; the rest (files lspc did not open) follow.
        let mut rest = report.clone();
        rest.files
            .retain(|file| !ending.streamed.contains(&file.path));
        output::render(&rest, options.format, &mut stdout)
    }
    .and_then(|()| stdout.flush());
    if let Err(error) = written {
        if error.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("lspc: cannot write the report: {error}");
            return EXIT_USAGE;
        }
    }
    for skipped in report.skipped.iter().filter(|s| !s.outside_projects) {
        let shown = output::display_path(&report.human_base, &skipped.path);
        eprintln!("lspc: skipped {shown}: {}", skipped.reason);
    }
    for line in output::state_lines(report) {
        eprintln!("{line}");
    }
    let mut summary = output::summary_line(report);
    if let Some(counts) = ending.baseline {
        summary += &format!(
            "; baseline: {} matched, {} gone",
            counts.n_matched, counts.n_gone
        );
    }
    if let Some(shard) = options.shard {
        summary += &format!("; shard {shard}");
    }
    eprintln!("{summary}");
    if let Some((signal, n_finished, n_total)) = ending.interrupted {
        eprintln!(
            "lspc: interrupted after {n_finished} of {n_total} files; the results above are the \
             files that were complete"
        );
        return 128 + signal;
    }
    // Files were found, but every one was skipped for a reason of its own (not UTF-8, too
    // large, unreadable) or left out by the servers' projects (a named `test-d` folder outside
    // tsconfig's `include`): nothing was checked, as when nothing was found.
    let n_unsent = ending.n_unsent;
    let n_outside = report
        .skipped
        .iter()
        .filter(|skipped| skipped.outside_projects)
        .count();
    if report.files.is_empty() && (n_unsent > 0 || (ending.nothing_in_projects && n_outside > 0)) {
        eprintln!("lspc: {}", nothing_checked_line(n_unsent, n_outside));
        // A graver status (a configuration error, a server failure) stands.
        return match exit_status(
            report,
            false,
            ending.n_named_not_checked,
            !ending.config_errors.is_empty(),
        ) {
            EXIT_OK => EXIT_USAGE,
            graver => graver,
        };
    }
    let status = exit_status(
        report,
        ending.found,
        ending.n_named_not_checked,
        !ending.config_errors.is_empty(),
    );
    if let (EXIT_FOUND, Some(note)) = (status, &ending.cli_verdict_note) {
        eprintln!("{note}");
    }
    if status == EXIT_FOUND {
        if let Some(note) = include_hint::note(report) {
            eprintln!("{note}");
        }
    }
    status
}

/// The error line of a check that found files but checked none of them: `n_unsent` skipped for
/// a reason of their own (listed above it on stderr), `n_outside` left out by the servers'
/// projects (counted in the summary line).
fn nothing_checked_line(n_unsent: usize, n_outside: usize) -> String {
    let files = files_found;
    match (n_unsent, n_outside) {
        (0, n_outside) => format!(
            "no file was checked: {} outside the servers' projects (see the summary)",
            files(n_outside)
        ),
        (n_unsent, 0) => format!(
            "no file was checked: {} skipped (see above)",
            files(n_unsent)
        ),
        (n_unsent, n_outside) => format!(
            "no file was checked: {} skipped (see above), and {} outside the servers' projects",
            files(n_unsent),
            if n_outside == 1 {
                "one more".to_string()
            } else {
                format!("{n_outside} more")
            }
        ),
    }
}

/// The subject of a "no file was checked" message for `n` files found: `the one file found was`,
/// `the 3 files found were` (`lspc check` and batch's `check` say it alike).
pub(crate) fn files_found(n: usize) -> String {
    match n {
        1 => "the one file found was".to_string(),
        n => format!("the {n} files found were"),
    }
}

/// How many of `report`'s skipped files a server would have checked but could not be sent to
/// one (not UTF-8, too large, binary, unreadable) or that it said it did not analyse (taplo's
/// excluded files, rust-analyzer's `unlinked-file`: a trial's `lspc check gen` said the one
/// file "could not be sent to a server"). Not counted: files the servers' projects
/// leave out, and files whose every server gives no diagnostics (cmake-language-server, a
/// bash-language-server without ShellCheck), which no server checks on any machine as
/// configured, like files no server serves.
fn n_unsent(config: &crate::config::Config, report: &CheckReport) -> usize {
    report
        .skipped
        .iter()
        .filter(|skipped| {
            !skipped.outside_projects
                && config
                    .servers_for_path(&skipped.path)
                    .into_iter()
                    .any(|index| config.servers[index].diagnostics)
        })
        .count()
}

/// When every diagnostic that fails the check is a warning that fails it only because its
/// server's own CLI fails on it (ruff's, gopls's `go vet` analyzers), the note saying so, e.g.
/// "lspc: exit status 1: ruff's 2 warnings fail `ruff check` too (`--fail-on error` fails on
/// errors only)". `None` when an error (or `--fail-on`) decides.
fn verdict_note(verdict: &verdict::Verdict, failing: &[&Diagnostic]) -> Option<String> {
    if failing.is_empty()
        || !failing
            .iter()
            .all(|diagnostic| verdict.fails_only_like_its_cli(diagnostic))
    {
        return None;
    }
    let mut by_server: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for diagnostic in failing {
        let cli = verdict.cli_for(diagnostic).unwrap_or("its CLI");
        *by_server.entry((&diagnostic.server, cli)).or_default() += 1;
    }
    let parts: Vec<String> = by_server
        .into_iter()
        .map(|((server, cli), n)| {
            let noun = match (cli, n) {
                ("shellcheck", 1) => "finding fails",
                ("shellcheck", _) => "findings fail",
                (_, 1) => "warning fails",
                _ => "warnings fail",
            };
            format!("{server}'s {n} {noun} `{cli}` too")
        })
        .collect();
    Some(format!(
        "lspc: exit status 1: {} (`--fail-on error` fails on errors only)",
        parts.join("; ")
    ))
}

/// `--changed-since` and `--shard`: which of the selected files this run checks.
struct Narrowing {
    changed: Option<std::collections::BTreeSet<PathBuf>>,
    shard: Option<shard::Shard>,
    /// The selected files [`Narrowing::files`] left out: another shard checks them, or they did
    /// not change.
    left_out: std::collections::HashSet<PathBuf>,
}

impl Narrowing {
    /// Lists the changed files when `--changed-since` is given; the error is the message to
    /// print.
    fn new(root: &Path, options: &CheckOptions) -> Result<Narrowing, String> {
        let changed = match &options.changed_since {
            Some(revision) => {
                Some(changed::changed_files(root, revision).map_err(|error| error.to_string())?)
            }
            None => None,
        };
        Ok(Narrowing {
            changed,
            shard: options.shard,
            left_out: std::collections::HashSet::new(),
        })
    }

    /// `files` narrowed to the changed ones, then to this shard's share; the rest are
    /// remembered as left out.
    fn files(&mut self, _root: &Path, files: Vec<PathBuf>) -> Vec<PathBuf> {
        let selected = files.clone();
        let files: Vec<PathBuf> = match &self.changed {
            Some(changed) => files
                .into_iter()
                .filter(|file| changed.contains(file))
                .collect(),
            None => files,
        };
        let files = match self.shard {
            Some(shard) => shard.select(files),
            None => files,
        };
        let kept: std::collections::HashSet<&PathBuf> = files.iter().collect();
        self.left_out = selected
            .into_iter()
            .filter(|file| !kept.contains(file))
            .collect();
        files
    }

    /// With `--changed-since`, what the run did not look at: a change can break the files that
    /// use it (a new user's trial on sindresorhus/p-queue: a changed return type broke
    /// `source/priority-queue.ts`, which `tsc` reports and `--changed-since HEAD` called clean).
    /// `None` without the option, or when every selected file changed.
    fn unchanged_note(&self) -> Option<String> {
        self.changed.as_ref()?;
        let unchanged = self
            .left_out
            .iter()
            .filter(|file| {
                self.changed
                    .as_ref()
                    .is_some_and(|changed| !changed.contains(*file))
            })
            .count();
        let (files, them) = match unchanged {
            0 => return None,
            1 => ("file", "it"),
            _ => ("files", "them"),
        };
        Some(format!(
            "{unchanged} unchanged {files} not checked (`--changed-since`): errors the changes \
             cause in {them} are not reported; a check without the option finds them"
        ))
    }

    /// Whether diagnostics for `path`, a file this run did not open (a `tsconfig.json`), are
    /// reported here: a changed file, and in a shard the one shard that owns its path. A file
    /// another shard checks is that shard's, though a server may publish it here too (gopls
    /// publishes every file of the package of the file it opened).
    fn keeps_unopened(&self, root: &Path, path: &Path) -> bool {
        if self.left_out.contains(path) {
            return false;
        }
        if let Some(changed) = &self.changed {
            if !changed.contains(path) {
                return false;
            }
        }
        match self.shard {
            Some(shard) => shard.owns_unopened(&output::display_path(root, path)),
            None => true,
        }
    }
}

/// Writes `report` as `--format json` to `path` (through a temporary file renamed into place, so
/// a failed run never leaves half a baseline).
fn write_baseline(report: &CheckReport, path: &Path) -> std::io::Result<()> {
    let mut text = Vec::new();
    output::render(report, Format::Json, &mut text)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".lspc-tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, &text)?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

/// How the run ended, for [`finish`].
#[derive(Default)]
struct Ending {
    /// A reported diagnostic fails the check (`--fail-on`; counted before the caps).
    found: bool,
    /// Why the exit status is 1 when only warnings some server's CLI fails on make it so.
    cli_verdict_note: Option<String>,
    /// Skipped files a server would have checked ([`n_unsent`]).
    n_unsent: usize,
    /// Every file found was skipped before any server was asked (outside the servers'
    /// projects, or unsendable): nothing was checked, which is not a clean run (exit 2).
    nothing_in_projects: bool,
    n_named_not_checked: usize,
    /// The configuration's errors: the exit status is 2, and the report carries them.
    config_errors: Vec<String>,
    /// `--baseline`: what matching it did.
    baseline: Option<baseline::BaselineCounts>,
    /// Files whose human output was streamed while the run went on.
    streamed: std::collections::HashSet<PathBuf>,
    /// (signal, files finished, files sent) when a signal ended the run.
    interrupted: Option<(i32, usize, usize)>,
}

/// Adds one file's result, leaving out (and counting) what `--severity` does not report.
fn push_file(
    report: &mut CheckReport,
    severity: verdict::ReportFrom,
    path: PathBuf,
    state: FileState,
    mut found: Vec<diagnostics::Diagnostic>,
) {
    let before = found.len();
    found.retain(|diagnostic| severity.reports(diagnostic.severity, diagnostic.source.as_deref()));
    report.n_below_severity += before - found.len();
    let state = match state {
        FileState::Diagnostics if found.is_empty() => FileState::Clean,
        other => other,
    };
    report.files.push(FileReport {
        path,
        state,
        diagnostics: found,
        n_omitted: 0,
    });
}

/// Adds lspc's own finding about a project configuration (TS6053) to the report of a file a
/// server checked too, as [`push_file`] would have: below `severity` it is only counted; a clean
/// file becomes one with diagnostics (a timed-out or failed one keeps its state).
fn add_config_diagnostic(
    file: &mut FileReport,
    n_below_severity: &mut usize,
    severity: verdict::ReportFrom,
    diagnostic: diagnostics::Diagnostic,
) {
    if !severity.reports(diagnostic.severity, diagnostic.source.as_deref()) {
        *n_below_severity += 1;
        return;
    }
    file.diagnostics.push(diagnostic);
    diagnostics::sort(&mut file.diagnostics);
    if file.state == FileState::Clean {
        file.state = FileState::Diagnostics;
    }
}

/// The servers that were asked about `path` and settled: every server with diagnostics for it,
/// less those left out by their project and those `still_analysing`, in precedence order.
fn answered_servers(
    config: &crate::config::Config,
    leave_out: &HashMap<PathBuf, Vec<ServerId>>,
    path: &Path,
    still_analysing: &[String],
) -> Vec<String> {
    let left_out = leave_out.get(path).map(Vec::as_slice).unwrap_or(&[]);
    config
        .servers_for_path(path)
        .into_iter()
        .filter(|&index| config.servers[index].diagnostics)
        .filter(|&index| !left_out.contains(&ServerId(index as u32)))
        .map(|index| config.servers[index].name.clone())
        .filter(|name| !still_analysing.contains(name))
        .collect()
}

/// `pyright still analysing after 30 s; ruff: 2 diagnostics shown`: which servers did not
/// answer, and what each of the others gave (those results are in the report).
fn timeout_reason(
    diagnostics: &[diagnostics::Diagnostic],
    still_analysing: &[String],
    answered: &[String],
    after: Duration,
) -> String {
    let mut reason = format!(
        "{} still analysing after {} s",
        still_analysing.join(", "),
        after.as_secs_f64()
    );
    for server in answered {
        let n = diagnostics.iter().filter(|d| d.server == *server).count();
        let noun = if n == 1 { "diagnostic" } else { "diagnostics" };
        reason += &format!("; {server}: {n} {noun} shown");
    }
    reason
}

fn empty_report(root: &Path, options: &CheckOptions, selection: Selection) -> CheckReport {
    let cwd = std::env::current_dir().map(|cwd| crate::uri::canonical(&cwd));
    CheckReport {
        root: root.to_path_buf(),
        human_base: cwd.unwrap_or_else(|_| root.to_path_buf()),
        color: options.format == Format::Human
            && options.color.resolve(
                std::io::stdout().is_terminal(),
                std::env::var("NO_COLOR").ok().as_deref(),
            ),
        files: Vec::new(),
        n_omitted: 0,
        server_failures: Vec::new(),
        severity: options.severity.level(),
        n_below_severity: 0,
        skipped: selection.skipped,
        notes: selection.notes,
    }
}

/// The files to send, which servers to leave out of which file, and what was skipped.
#[derive(Default)]
pub(crate) struct Selection {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) leave_out: HashMap<PathBuf, Vec<ServerId>>,
    pub(crate) skipped: Vec<SkippedFile>,
    /// `--changed-since`: unchanged files left out before any server's project was asked, so
    /// neither skipped nor counted in the notes (a trial listed every unchanged file outside
    /// tsconfig's `include` as skipped).
    pub(crate) n_unchanged_left_out: usize,
    /// How many walked files a server claims that `--exclude` left out.
    pub(crate) n_excluded: usize,
    notes: Vec<String>,
    /// Problems lspc found in the project configurations themselves (tsc's TS6053).
    pub(crate) config_diagnostics: Vec<diagnostics::Diagnostic>,
}

/// Why a walked file the engine did not check (`DiagnosticsOutcome::NotChecked`) is skipped:
/// `message` without its `cannot read PATH: ` prefix (machine formats name the file already).
pub(crate) fn walked_skip_reason(path: &Path, message: &str) -> String {
    let prefix = format!("cannot read {}: ", path.display());
    message.strip_prefix(&prefix).unwrap_or(message).to_owned()
}

/// What `lspc check` with its default options checks among `walked` (files named on the
/// command line in `explicit`, canonical), so `lspc batch`'s `check` operation checks the same
/// files with the same servers and gives the project's own verdict too.
pub(crate) fn default_selection(
    config: &crate::config::Config,
    named: &NamedPaths,
    walked: walk::Listing,
) -> Selection {
    select_files(config, &CheckOptions::default(), named, walked, None)
}

/// The paths named on `lspc check`'s command line (or in batch's `check` operation), canonical:
/// files, checked whole, and folders, under which a server's CLI may judge files differently
/// from a walk of the whole project ([`ProjectFiles::leaves_out_when_named`]).
pub(crate) struct NamedPaths {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) folders: Vec<PathBuf>,
}

impl NamedPaths {
    /// The named `targets` (as given; relative ones against the current directory).
    pub(crate) fn new(targets: &[PathBuf]) -> NamedPaths {
        let canonical = |wanted: fn(&Path) -> bool| -> Vec<PathBuf> {
            targets
                .iter()
                .filter(|target| wanted(target))
                .map(|target| crate::uri::canonical(target))
                .collect()
        };
        NamedPaths {
            files: canonical(Path::is_file),
            folders: canonical(Path::is_dir),
        }
    }
}

/// Adds to `config_diagnostics` the errors tsserver reports in the configuration files of the
/// checked `files` ([`tsconfig_diagnostics`]), leaving out those lspc found itself (its TS6053
/// for a missing `extends` base). Ask only once every file has settled.
pub(crate) fn add_tsconfig_errors(
    op_sender: &crate::doorbell::LoopSender<Op>,
    root: &Path,
    files: &[PathBuf],
    timeout: Duration,
    config_diagnostics: &mut Vec<diagnostics::Diagnostic>,
) {
    let asked = tsconfig_diagnostics::tsconfig_diagnostics(op_sender, root, files, timeout);
    for diagnostic in asked {
        let own = config_diagnostics.iter().any(|known| {
            known.path == diagnostic.path
                && (known.line, known.column) == (diagnostic.line, diagnostic.column)
                && known
                    .code
                    .as_deref()
                    .and_then(|code| code.strip_prefix("TS"))
                    == diagnostic.code.as_deref()
        });
        if !own {
            config_diagnostics.push(diagnostic);
        }
    }
}

/// Applies `--exclude` and each server's project file set (unless `--all-files`) to the walked
/// files; files named on the command line, and with `--all-files` every walked file, are kept
/// whole, except that a server that never checks a file its set leaves out (ruff: its server
/// answers nothing for an excluded file) is left out of it, with a note, rather than counted
/// as having found it clean.
///
/// A walked file is judged by `--exclude` and the project file sets under the path it was
/// found as (a symlink's own path inside the root, as pyright's and ruff's CLIs judge it), and
/// checked under its canonical path: `util.py -> ../shared/util.py` is in a default `include`,
/// its target outside the root is not (issue 16). A walked entry that cannot be read (a symlink
/// loop) is skipped with the OS error, as a walked file no server can be sent is.
///
/// With `changed` (`--changed-since`), a walked file not in it is selected when a server's
/// project has it (the narrowing after this counts it as unchanged) and otherwise left out
/// unseen: it is neither skipped nor counted in the notes.
fn select_files(
    config: &crate::config::Config,
    options: &CheckOptions,
    named: &NamedPaths,
    walked: walk::Listing,
    changed: Option<&std::collections::BTreeSet<PathBuf>>,
) -> Selection {
    let explicit = named.files.as_slice();
    let projects = ProjectFiles::load(&config.root, &config.servers);
    let mut selection = Selection {
        files: Vec::new(),
        leave_out: HashMap::new(),
        skipped: Vec::new(),
        n_unchanged_left_out: 0,
        n_excluded: 0,
        notes: Vec::new(),
        config_diagnostics: Vec::new(),
    };
    let unchanged = |file: &Path| changed.is_some_and(|changed| !changed.contains(file));
    // Reason → how many files it kept out, and whether `--all-files` would have them checked
    // (not when every server leaving them out never checks such a file), in first-seen order.
    let mut outside: Vec<(String, usize, bool)> = Vec::new();
    // Reason → how many files kept whole that a server will not check anyway.
    let mut never_checked: Vec<(String, usize)> = Vec::new();
    // Reason → how many files some of their servers' projects leave out while others check
    // them (`tests/` outside pyright's `include`, still linted by ruff), in first-seen order.
    let mut partly: Vec<(String, usize)> = Vec::new();
    let mut keep_whole = |file: PathBuf, selection: &mut Selection| {
        let left_out: Vec<(ServerId, String)> = config
            .servers_for_path(&file)
            .into_iter()
            .filter(|&index| config.servers[index].diagnostics)
            .filter_map(|index| {
                Some((ServerId(index as u32), projects.never_checks(index, &file)?))
            })
            .collect();
        for (_, reason) in left_out.iter().filter(|_| !unchanged(&file)) {
            match never_checked.iter_mut().find(|(known, _)| known == reason) {
                Some((_, n)) => *n += 1,
                None => never_checked.push((reason.clone(), 1)),
            }
        }
        if !left_out.is_empty() {
            let ids = left_out.into_iter().map(|(id, _)| id).collect();
            selection.leave_out.insert(file.clone(), ids);
        }
        selection.files.push(file);
    };
    let readable = walked.files.into_iter().map(|file| {
        let found_as = file.found_as.unwrap_or_else(|| file.path.clone());
        (file.path, found_as, None)
    });
    let unreadable = walked
        .unreadable
        .into_iter()
        .map(|file| (file.path.clone(), file.path, Some(file.error)));
    for (file, found_as, unreadable) in readable.chain(unreadable) {
        if explicit.contains(&file) {
            keep_whole(file, &mut selection);
            continue;
        }
        if !config.claims(&file) {
            continue;
        }
        if excluded_by_flag(options, &config.root, &found_as) {
            selection.n_excluded += 1;
            continue;
        }
        let unreadable_skip = |error: std::io::Error| SkippedFile {
            path: file.clone(),
            reason: format!("cannot read it: {error}"),
            outside_projects: false,
        };
        if options.all_files {
            match unreadable {
                Some(_) if unchanged(&file) => selection.n_unchanged_left_out += 1,
                Some(error) => selection.skipped.push(unreadable_skip(error)),
                None => keep_whole(file, &mut selection),
            }
            continue;
        }
        let servers: Vec<usize> = config
            .servers_for_path(&file)
            .into_iter()
            .filter(|&index| config.servers[index].diagnostics)
            .collect();
        let named_folder = named
            .folders
            .iter()
            .find(|folder| found_as.starts_with(folder));
        let reasons: Vec<(usize, String)> = servers
            .iter()
            .filter_map(|&index| {
                let reason = match named_folder {
                    Some(folder) => projects.leaves_out_when_named(index, &found_as, folder),
                    None => projects.leaves_out(index, &found_as),
                };
                Some((index, reason?))
            })
            .collect();
        let reason = reasons
            .iter()
            .map(|(_, reason)| reason.as_str())
            .collect::<Vec<_>>()
            .join(" and ");
        if (!servers.is_empty() && reasons.len() == servers.len() || unreadable.is_some())
            && unchanged(&file)
        {
            selection.n_unchanged_left_out += 1;
            continue;
        }
        if !servers.is_empty() && reasons.len() == servers.len() {
            match outside.iter_mut().find(|(known, _, _)| *known == reason) {
                Some((_, n, _)) => *n += 1,
                None => {
                    let checkable = reasons
                        .iter()
                        .any(|(index, _)| projects.never_checks(*index, &file).is_none());
                    outside.push((reason.clone(), 1, checkable));
                }
            }
            selection.skipped.push(SkippedFile {
                path: file,
                reason,
                outside_projects: true,
            });
            continue;
        }
        if let Some(error) = unreadable {
            selection.skipped.push(unreadable_skip(error));
            continue;
        }
        if !reasons.is_empty() && !unchanged(&file) {
            match partly.iter_mut().find(|(known, _)| *known == reason) {
                Some((_, n)) => *n += 1,
                None => partly.push((reason, 1)),
            }
            let ids = reasons
                .iter()
                .map(|(index, _)| ServerId(*index as u32))
                .collect();
            selection.leave_out.insert(file.clone(), ids);
        }
        selection.files.push(file);
    }
    for (reason, n) in partly {
        let files = if n == 1 { "file" } else { "files" };
        selection.notes.push(format!(
            "{n} {files} {reason} checked by the other servers only"
        ));
    }
    if !options.all_files {
        for error in projects.errors() {
            eprintln!("lspc: warning: {error}");
        }
        selection.config_diagnostics = projects.diagnostics();
    }
    for (reason, n) in never_checked {
        let (files, its) = if n == 1 {
            ("file", "it")
        } else {
            ("files", "them")
        };
        selection.notes.push(format!(
            "{n} {files} {reason} not checked by that server (its server never checks an \
             excluded file, even one named; its CLI lints {its} when named)"
        ));
    }
    let last_checkable = outside.iter().rposition(|(_, _, checkable)| *checkable);
    for (index, (reason, n, checkable)) in outside.into_iter().enumerate() {
        let files = if n == 1 { "file" } else { "files" };
        let mut note = format!("{n} {files} {reason} not checked");
        if !checkable {
            note += " (its server never checks an excluded file, even with `--all-files`)";
        }
        if Some(index) == last_checkable {
            note += "; `--all-files` checks them";
        }
        selection.notes.push(note);
    }
    selection
}

/// Whether a walked file matches one of the `--exclude` patterns (relative to the root).
fn excluded_by_flag(options: &CheckOptions, root: &Path, file: &Path) -> bool {
    let Some(relative) = crate::project::pattern::relative_to(file, root) else {
        return false;
    };
    options
        .exclude
        .iter()
        .filter_map(|pattern| crate::project::pattern::NamePattern::new(pattern))
        .any(|pattern| pattern.covers(&relative))
}

/// The exit status, most serious first: 2 when the configuration had errors; 3 when a server
/// failed or a file timed out; 2 when a file named on the command line could not be checked (no
/// server for it, binary, too large, not UTF-8); 1 when a diagnostic at or above `--fail-on` was
/// found (`found`, counted before the caps); else 0.
fn exit_status(
    report: &CheckReport,
    found: bool,
    n_named_not_checked: usize,
    had_config_errors: bool,
) -> i32 {
    if had_config_errors {
        return EXIT_USAGE;
    }
    let n_incomplete = report
        .files
        .iter()
        .filter(|file| {
            matches!(
                file.state,
                FileState::Timeout { .. } | FileState::Error { .. }
            )
        })
        .count();
    if n_incomplete > n_named_not_checked || !report.server_failures.is_empty() {
        EXIT_SERVER
    } else if n_named_not_checked > 0 {
        EXIT_USAGE
    } else if found {
        EXIT_FOUND
    } else {
        EXIT_OK
    }
}

/// What [`wait_with_progress`] sends and listens to.
struct WaitRequest {
    files: Vec<PathBuf>,
    leave_out: HashMap<PathBuf, Vec<ServerId>>,
    timeout: Duration,
    /// Gets the signal number when SIGINT/SIGTERM/SIGHUP ended the engine.
    interrupted: crossbeam_channel::Receiver<i32>,
    /// Paths in the progress line are relative to this (the current directory).
    human_base: PathBuf,
}

/// What the wait gave: every file's result in the order sent, or after a signal the files
/// finished before it (in finishing order).
struct Waited {
    results: Vec<crate::engine::FileDiagnostics>,
    interrupted: Option<i32>,
}

/// Ask the engine and wait. `on_file` sees each file's result as soon as it is finished. On a
/// terminal, stderr shows one progress line: files done of total and the file waited on longest
/// (files are sent smallest first, so the oldest unfinished file in that order).
fn wait_with_progress(
    engine: &EngineHandle,
    request: WaitRequest,
    on_file: &mut dyn FnMut(&crate::engine::FileDiagnostics),
) -> Waited {
    let n_files = request.files.len();
    let (reply, receiver) = bounded(1);
    let (progress_sender, progress_receiver) = crossbeam_channel::unbounded();
    let show_progress = std::io::stderr().is_terminal();
    let mut by_size: Vec<(u64, PathBuf)> = if show_progress {
        request
            .files
            .iter()
            .map(|path| (std::fs::metadata(path).map_or(0, |m| m.len()), path.clone()))
            .collect()
    } else {
        Vec::new()
    };
    crate::sorting::sort_by_key(&mut by_size, |(size, _)| *size);
    if engine
        .op_sender()
        .send(Op::DiagnosticsLeavingOut {
            paths: request.files,
            leave_out: request.leave_out,
            timeout: request.timeout,
            progress: Some(progress_sender),
            reply,
        })
        .is_err()
    {
        // The engine is gone: a signal during the walk (it handles them from its start) ended
        // it, and that is an interruption, not a run that found nothing.
        return Waited {
            results: Vec::new(),
            interrupted: request.interrupted.try_recv().ok(),
        };
    }
    let started = Instant::now();
    let ticker = if show_progress {
        crossbeam_channel::tick(Duration::from_millis(200))
    } else {
        crossbeam_channel::never()
    };
    let mut finished: Vec<crate::engine::FileDiagnostics> = Vec::new();
    let mut done: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut drawn = false;
    let clear = |drawn: &mut bool| {
        if *drawn {
            eprint!("\r\x1b[K");
            *drawn = false;
        }
    };
    let waited = loop {
        select! {
            recv(receiver) -> results => {
                // Results streamed but not yet seen (the reply raced the progress channel).
                for result in progress_receiver.try_iter() {
                    if done.insert(result.path.clone()) {
                        clear(&mut drawn);
                        on_file(&result);
                        finished.push(result);
                    }
                }
                if let Ok(signal) = request.interrupted.try_recv() {
                    // Shutting down answered the op: only the files finished before count.
                    break Waited { results: finished, interrupted: Some(signal) };
                }
                break Waited { results: results.unwrap_or_default(), interrupted: None };
            }
            recv(progress_receiver) -> result => {
                if let Ok(result) = result {
                    clear(&mut drawn);
                    done.insert(result.path.clone());
                    on_file(&result);
                    finished.push(result);
                }
            }
            recv(request.interrupted) -> signal => {
                finished.extend(progress_receiver.try_iter());
                break Waited { results: finished, interrupted: Some(signal.unwrap_or(libc::SIGINT)) };
            }
            recv(ticker) -> _ => {
                let waiting = by_size
                    .iter()
                    .find(|(_, path)| !done.contains(path))
                    .map(|(_, path)| output::display_path(&request.human_base, path))
                    .unwrap_or_default();
                eprint!(
                    "\r\x1b[Klspc: {}/{n_files} files, waiting on {waiting} … {:.1} s",
                    done.len(),
                    started.elapsed().as_secs_f64()
                );
                drawn = true;
            }
        }
    };
    clear(&mut drawn);
    waited
}

#[cfg(test)]
mod colour_tests {
    use super::ColorChoice;

    #[test]
    fn colour_choice() {
        let check =
            |choice: ColorChoice, terminal: bool, no_color: Option<&str>, expected: bool| {
                assert_eq!(
                    choice.resolve(terminal, no_color),
                    expected,
                    "{choice:?} {terminal} {no_color:?}"
                );
            };
        check(ColorChoice::Auto, true, None, true);
        check(ColorChoice::Auto, true, Some(""), true);
        check(ColorChoice::Auto, true, Some("1"), false);
        check(ColorChoice::Auto, false, None, false);
        check(ColorChoice::Always, false, Some("1"), true);
        check(ColorChoice::Never, true, None, false);
        assert_eq!(ColorChoice::parse("always"), Some(ColorChoice::Always));
        assert_eq!(ColorChoice::parse("yes"), None);
    }
}
