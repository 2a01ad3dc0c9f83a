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
pub mod sarif_merge;
pub mod shard;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select};

use crate::diagnostics::{self, Severity};
use crate::engine::{DiagnosticsOutcome, EngineHandle, EngineOptions, Op};
use crate::exit::{EXIT_FOUND, EXIT_OK, EXIT_SERVER, EXIT_USAGE};
use crate::output::{self, CheckReport, FileReport, FileState, Format, ServerFailure};
use crate::walk;

/// `lspc check` options. Positions in every output are 1-based; columns count characters.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    /// Files or folders; empty means the workspace root.
    pub paths: Vec<PathBuf>,
    pub format: Format,
    /// Report only diagnostics at or above this severity.
    pub severity: Severity,
    /// Exit 1 when a reported diagnostic is at or above this severity.
    pub fail_on: Severity,
    /// How long each file's servers may take to settle, counted from the file's sync.
    pub timeout: Duration,
    pub max_per_file: Option<usize>,
    pub max_total: Option<usize>,
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
            severity: Severity::Hint,
            fail_on: Severity::Error,
            timeout: Duration::from_secs(30),
            max_per_file: None,
            max_total: None,
            baseline: None,
            write_baseline: None,
            changed_since: None,
            shard: None,
        }
    }
}

/// Run the check; returns the exit status. `tune` adjusts the engine options built from the
/// config (the global `--restart`/`--max-file-size`, see [`crate::options::tune_engine`]).
pub fn run(engine_options: EngineOptions, options: &CheckOptions) -> i32 {
    let config = &engine_options.config;
    let root = config.root.clone();
    let targets = if options.paths.is_empty() {
        vec![root.clone()]
    } else {
        options.paths.clone()
    };
    let files = match walk::list_files(&root, &targets) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_USAGE;
        }
    };
    // Files named explicitly are checked even when no server serves them (they get an error);
    // files found by walking a folder are skipped unless a server claims them (a configured
    // server whose command is missing still claims its files, so they are reported, not skipped).
    let explicit: Vec<PathBuf> = targets
        .iter()
        .filter(|target| target.is_file())
        .map(|target| crate::uri::canonical(target))
        .collect();
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|file| explicit.contains(file) || config.claims(file))
        .collect();
    let had_config_errors = !config.errors.is_empty();
    if files.is_empty() {
        // A check that checks nothing is a misconfigured job, not a clean one.
        eprintln!("lspc: no files to check: no configured language server serves the given paths");
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
    let files = match narrow(&root, files, options) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("lspc: {message}");
            return EXIT_USAGE;
        }
    };

    // An empty shard or an unchanged tree is a clean run: nothing starts.
    let (results, statuses) = if files.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let engine = EngineHandle::start(engine_options);
        let results = wait_with_progress(&engine, files.clone(), options.timeout);
        let statuses = engine.status();
        engine.shutdown();
        (results, statuses)
    };

    let mut report = CheckReport {
        root: root.clone(),
        files: Vec::new(),
        n_omitted: 0,
        server_failures: statuses
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
            .collect(),
    };
    let mut n_named_not_checked = 0;
    for result in results {
        let (state, mut found) = match result.outcome {
            DiagnosticsOutcome::Settled(found) => (FileState::Diagnostics, found),
            DiagnosticsOutcome::TimedOut {
                diagnostics,
                servers,
                after,
            } => (
                FileState::Timeout {
                    reason: format!(
                        "{} still analysing after {} s",
                        servers.join(", "),
                        after.as_secs_f64()
                    ),
                },
                diagnostics,
            ),
            DiagnosticsOutcome::Failed(message) => (FileState::Error { message }, Vec::new()),
            DiagnosticsOutcome::NotChecked(message) if !explicit.contains(&result.path) => {
                // Found by walking a folder (a binary `.py`, a 20 MB generated file): skipped,
                // said on stderr, and not counted as a failure.
                let shown = crate::uri::relative_display(&result.path, &root);
                eprintln!("lspc: skipped {shown}: {message}");
                continue;
            }
            DiagnosticsOutcome::NotChecked(message) => {
                n_named_not_checked += 1;
                (FileState::Error { message }, Vec::new())
            }
        };
        found.retain(|diagnostic| diagnostic.severity <= options.severity);
        let state = match state {
            FileState::Diagnostics if found.is_empty() => FileState::Clean,
            other => other,
        };
        report.files.push(FileReport {
            path: result.path,
            state,
            diagnostics: found,
            n_omitted: 0,
        });
    }
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
    let found = report
        .files
        .iter()
        .flat_map(|file| &file.diagnostics)
        .any(|diagnostic| diagnostic.severity <= options.fail_on);
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

    let mut stdout = std::io::stdout().lock();
    let details = output::RunDetails {
        baseline: baseline_counts.map(|counts| (counts.n_matched, counts.n_gone)),
        shard: options
            .shard
            .map(|shard| (shard.to_string(), shard.automation_id())),
    };
    let written = output::render_with(&report, options.format, &details, &mut stdout)
        .and_then(|()| stdout.flush());
    if let Err(error) = written {
        if error.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("lspc: cannot write the report: {error}");
            return EXIT_USAGE;
        }
    }
    for line in output::state_lines(&report) {
        eprintln!("{line}");
    }
    let mut summary = output::summary_line(&report);
    if let Some(counts) = baseline_counts {
        summary += &format!(
            "; baseline: {} matched, {} gone",
            counts.n_matched, counts.n_gone
        );
    }
    if let Some(shard) = options.shard {
        summary += &format!("; shard {shard}");
    }
    eprintln!("{summary}");
    exit_status(&report, found, n_named_not_checked, had_config_errors)
}

/// Applies `--changed-since` and then `--shard` to the claimed files. The error is the message
/// to print.
fn narrow(
    root: &std::path::Path,
    files: Vec<PathBuf>,
    options: &CheckOptions,
) -> Result<Vec<PathBuf>, String> {
    let files = match &options.changed_since {
        Some(revision) => {
            let changed =
                changed::changed_files(root, revision).map_err(|error| error.to_string())?;
            files
                .into_iter()
                .filter(|file| changed.contains(file))
                .collect()
        }
        None => files,
    };
    Ok(match options.shard {
        Some(shard) => shard.select(files),
        None => files,
    })
}

/// Writes `report` as `--format json` to `path` (through a temporary file renamed into place, so
/// a failed run never leaves half a baseline).
fn write_baseline(report: &CheckReport, path: &std::path::Path) -> std::io::Result<()> {
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

/// Ask the engine and wait, drawing a one-line progress indicator on stderr when it is a
/// terminal.
fn wait_with_progress(
    engine: &EngineHandle,
    files: Vec<PathBuf>,
    timeout: Duration,
) -> Vec<crate::engine::FileDiagnostics> {
    let n_files = files.len();
    let (reply, receiver) = bounded(1);
    if engine
        .op_sender()
        .send(Op::Diagnostics {
            paths: files,
            timeout,
            reply,
        })
        .is_err()
    {
        return Vec::new();
    }
    let show_progress = std::io::stderr().is_terminal();
    let started = Instant::now();
    let ticker = if show_progress {
        crossbeam_channel::tick(Duration::from_millis(200))
    } else {
        crossbeam_channel::never()
    };
    let results = loop {
        select! {
            recv(receiver) -> results => break results.unwrap_or_default(),
            recv(ticker) -> _ => {
                eprint!(
                    "\rlspc: checking {n_files} file{} … {:.1} s",
                    if n_files == 1 { "" } else { "s" },
                    started.elapsed().as_secs_f64()
                );
            }
        }
    };
    if show_progress && started.elapsed() >= Duration::from_millis(200) {
        eprint!("\r\x1b[K");
    }
    results
}
