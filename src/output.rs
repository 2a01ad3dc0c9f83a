//! Rendering `lspc check` results: human, json, jsonl, sarif (2.1.0) and github annotations.
//!
//! Invariants:
//! - Paths are printed relative to `CheckReport::root` with `/` separators, or absolute when the
//!   file is outside the root. Lines and columns are 1-based; columns count Unicode characters.
//! - A file in `Timeout`/`Error` state has incomplete results: its partial set is rendered and the
//!   file is reported as incomplete (stderr lines in human, a state line in jsonl, notifications in
//!   sarif, `::error` in github, its state in json), never as clean.
//! - Library code never prints: [`render`] writes to the writer it is given; [`summary_line`] and
//!   [`state_lines`] return text for the caller to put on stderr.
//! - Output is deterministic: files and diagnostics are rendered in report order.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::json;

use crate::diagnostics::{Diagnostic, Severity};

/// What `lspc check` found, ready to render. Diagnostics are already filtered by `--severity`,
/// sorted (severity, then line, then column) and capped by `--max-per-file` / `--max-total`.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Workspace root; machine formats (json, jsonl, sarif, github) print paths relative to it
    /// (absolute when outside it), as annotations and code scanning resolve them.
    pub root: PathBuf,
    /// The current directory (canonical): human output and the stderr lines print paths
    /// relative to it, as ruff and ripgrep do, so terminals and editors can jump to them.
    pub human_base: PathBuf,
    /// Whether human output uses ANSI colours (`--color`, `NO_COLOR`; see
    /// [`crate::check::ColorChoice`]). Machine formats never do.
    pub color: bool,
    pub files: Vec<FileReport>,
    /// Diagnostics dropped by the caps, per file and in total (0 when nothing was dropped).
    pub n_omitted: usize,
    /// Servers that failed to start or crashed, with the reason (exit status, stderr tail).
    pub server_failures: Vec<ServerFailure>,
    /// The `--severity` threshold and how many diagnostics below it were left out (hints by
    /// default), so the summary can say so.
    pub severity: Severity,
    pub n_below_severity: usize,
    /// Files found while walking a folder that were not checked, in path order.
    pub skipped: Vec<SkippedFile>,
    /// Summary clauses about files left out by project configuration, e.g. `42 files outside
    /// pyright's include not checked`.
    pub notes: Vec<String>,
}

/// A file found while walking a folder that lspc did not check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// Canonical absolute path, or the link it was found as (as [`FileReport::path`]).
    pub path: PathBuf,
    /// Lowercase, e.g. `binary file`, `outside pyright's include`.
    pub reason: String,
    /// True when no server's project configuration includes the file (said once, as a summary
    /// note, rather than per file on stderr).
    pub outside_projects: bool,
}

/// One checked file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// Canonical absolute path; in the finished report, a file found only through a symlink is
    /// shown as the link (`check/found_paths.rs`).
    pub path: PathBuf,
    pub state: FileState,
    pub diagnostics: Vec<Diagnostic>,
    /// How many of this file's diagnostics the caps dropped.
    pub n_omitted: usize,
}

/// The outcome for one file. `Timeout` is never reported as clean: it means the servers did not
/// settle before `--timeout` ("diagnostics incomplete: server still analysing").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Clean,
    Diagnostics,
    Timeout { reason: String },
    Error { message: String },
}

/// A server that could not serve the check.
#[derive(Debug, Clone)]
pub struct ServerFailure {
    pub server: String,
    pub message: String,
}

/// `--format`: `human` (default, for people), `json` (one object), `jsonl` (one diagnostic per
/// line), `sarif` (SARIF 2.1.0 for code scanning), `github` (GitHub Actions workflow commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Jsonl,
    Sarif,
    Github,
}

impl Format {
    /// The `--format` word.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Sarif => "sarif",
            Format::Github => "github",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--format` word that lspc does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseFormatError {
    pub input: String,
}

impl fmt::Display for ParseFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown format `{}` (expected human, json, jsonl, sarif or github)",
            self.input
        )
    }
}

impl std::error::Error for ParseFormatError {}

impl FromStr for Format {
    type Err = ParseFormatError;

    /// Accepts `human`, `json`, `jsonl`, `sarif`, `github`, ASCII case-insensitively.
    fn from_str(input: &str) -> Result<Format, ParseFormatError> {
        match input.to_ascii_lowercase().as_str() {
            "human" => Ok(Format::Human),
            "json" => Ok(Format::Json),
            "jsonl" => Ok(Format::Jsonl),
            "sarif" => Ok(Format::Sarif),
            "github" => Ok(Format::Github),
            _ => Err(ParseFormatError {
                input: input.to_string(),
            }),
        }
    }
}

impl FileState {
    /// The state word used by the json format: `clean`, `diagnostics`, `timeout`, `error`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FileState::Clean => "clean",
            FileState::Diagnostics => "diagnostics",
            FileState::Timeout { .. } => "timeout",
            FileState::Error { .. } => "error",
        }
    }

    /// True for `Clean` and `Diagnostics`: the servers settled and the file's set is complete.
    pub fn is_complete(&self) -> bool {
        matches!(self, FileState::Clean | FileState::Diagnostics)
    }

    /// What went wrong, for `Timeout` (the reason) and `Error` (the message).
    pub fn reason(&self) -> Option<&str> {
        match self {
            FileState::Timeout { reason } => Some(reason),
            FileState::Error { message } => Some(message),
            FileState::Clean | FileState::Diagnostics => None,
        }
    }
}

impl FileReport {
    /// The diagnostics to render: all of them for a complete file, what had arrived for a
    /// timed-out one (partial results from the servers that answered, issue 10; the state still
    /// says it is incomplete), and for a failed one what the servers that did not fail found
    /// (none when every server failed).
    pub fn reported_diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// `path` as printed: relative to `root` with `/` separators, absolute when outside `root`.
pub fn display_path(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) if !relative.as_os_str().is_empty() => slash_path(relative),
        _ => slash_path(path),
    }
}

fn slash_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if cfg!(windows) {
        text.replace('\\', "/")
    } else {
        text.into_owned()
    }
}

/// Writes `report` to `out` in `format`, ending with a newline when anything was written. Human,
/// jsonl and github write nothing for a report without diagnostics (states go to stderr through
/// [`state_lines`], except github which annotates them); json and sarif always write one document.
///
/// Errors: only those of `out`.
pub fn render(report: &CheckReport, format: Format, out: &mut dyn Write) -> io::Result<()> {
    render_with(report, format, &RunDetails::default(), out)
}

/// What the repository-scale options of `lspc check` (issue 17) add to the json and sarif
/// documents; the other formats ignore it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunDetails {
    /// `--baseline`: how many baseline findings were matched and how many are gone
    /// (json `summary.baseline`, sarif run `properties.baseline`).
    pub baseline: Option<(usize, usize)>,
    /// `--shard K/N`: `"K/N"` (json `summary.shard`) and the SARIF `runAutomationDetails.id`
    /// (SARIF 2.1.0 §3.17, the run's `automationDetails`).
    pub shard: Option<(String, String)>,
    /// The configuration's errors (the run exits 2): json `configErrors`, sarif
    /// `toolConfigurationNotifications` at level `error` with `executionSuccessful: false`
    /// (SARIF 2.1.0 §3.20.22), github an `::error` line each. A job that reads only the report
    /// does not see a clean run whose configuration was broken.
    pub config_errors: Vec<String>,
}

/// [`render`] with the [`RunDetails`] of a baseline or shard run.
pub fn render_with(
    report: &CheckReport,
    format: Format,
    details: &RunDetails,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Human => render_human(report, out),
        Format::Json => render_json(report, details, out),
        Format::Jsonl => render_jsonl(report, out),
        Format::Sarif => render_sarif(report, details, out),
        Format::Github => render_github(report, details, out),
    }
}

/// `source code` of a diagnostic, either part omitted when missing; `None` when both are.
fn source_and_code(diagnostic: &Diagnostic) -> Option<String> {
    match (&diagnostic.source, &diagnostic.code) {
        (Some(source), Some(code)) => Some(format!("{source} {code}")),
        (Some(only), None) | (None, Some(only)) => Some(only.clone()),
        (None, None) => None,
    }
}

/// `path:line:column: severity: message [source code]`; further message lines are indented by
/// four spaces ([`human_diagnostic`]).
fn render_human(report: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
    for file in &report.files {
        let path = display_path(&report.human_base, &file.path);
        for diagnostic in file.reported_diagnostics() {
            out.write_all(human_diagnostic(&path, diagnostic, report.color).as_bytes())?;
        }
    }
    Ok(())
}

/// One diagnostic as every human output of lspc writes it (`lspc check`, the `diagnostics`
/// operation, MCP's text content): `path:line:column: severity: first message line [source
/// code]`, then each further message line indented by four spaces (a blank line stays blank:
/// ruff's "\n\nhelp: …"), every line ending in `\n`. Line and column are 1-based, the column in
/// Unicode characters. `color` adds ANSI SGR colours: a bold location, the severity in red,
/// yellow, blue or cyan.
pub fn human_diagnostic(path: &str, diagnostic: &Diagnostic, color: bool) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let mut lines = diagnostic.message.lines();
    let first = lines.next().unwrap_or("");
    let (line, column, severity) = (diagnostic.line, diagnostic.column, diagnostic.severity);
    if color {
        // SGR: 31 red, 33 yellow, 34 blue, 36 cyan.
        let colour = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Information => "1;34",
            Severity::Hint => "1;36",
        };
        let _ = write!(
            text,
            "\x1b[1m{path}:{line}:{column}:\x1b[0m \x1b[{colour}m{severity}\x1b[0m: {first}"
        );
    } else {
        let _ = write!(text, "{path}:{line}:{column}: {severity}: {first}");
    }
    if let Some(tag) = source_and_code(diagnostic) {
        let _ = write!(text, " [{tag}]");
    }
    text.push('\n');
    for line in lines {
        if !line.trim().is_empty() {
            text.push_str("    ");
            text.push_str(line);
        }
        text.push('\n');
    }
    text
}

/// Per-severity and per-state counts over the rendered diagnostics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    errors: usize,
    warnings: usize,
    information: usize,
    hints: usize,
    files_with_diagnostics: usize,
    /// Files a server looked at: every file of the report but the failed ones (a timed-out
    /// file is among them, its diagnostics incomplete).
    checked: usize,
    timed_out: usize,
    /// Files in `Error` state: a server failed on them, or they were named and no server
    /// could take them.
    failed: usize,
    /// Walked files skipped for a reason of their own (binary, too large, rust-analyzer's
    /// `unlinked-file`), each said on its own stderr line; not those outside every server's
    /// project, which the report's notes count.
    skipped_alone: usize,
}

fn counts(report: &CheckReport) -> Counts {
    let mut counts = Counts {
        skipped_alone: report
            .skipped
            .iter()
            .filter(|skipped| !skipped.outside_projects)
            .count(),
        ..Counts::default()
    };
    for file in &report.files {
        match file.state {
            FileState::Timeout { .. } => counts.timed_out += 1,
            FileState::Error { .. } => counts.failed += 1,
            FileState::Clean | FileState::Diagnostics => {}
        }
        counts.checked += usize::from(!matches!(file.state, FileState::Error { .. }));
        let diagnostics = file.reported_diagnostics();
        if !diagnostics.is_empty() {
            counts.files_with_diagnostics += 1;
        }
        for diagnostic in diagnostics {
            match diagnostic.severity {
                Severity::Error => counts.errors += 1,
                Severity::Warning => counts.warnings += 1,
                Severity::Information => counts.information += 1,
                Severity::Hint => counts.hints += 1,
            }
        }
    }
    counts
}

/// `n` and the word for it: `1 file`, `2 files`.
pub fn plural(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// One line for stderr, e.g. `5 files checked: 2 errors, 1 warning, 0 info, 0 hints in 2 files;
/// 1 file timed out; 1 file could not be checked; 2 files skipped; 3 more diagnostics not shown
/// (caps); 1 server failed`. The counts cover the rendered diagnostics; the `;` clauses appear
/// only when non-zero. Every file of the report is counted once, as the json summary counts it:
/// "checked" is its `checked` (timed-out files included, "timed out" says how many of them),
/// "could not be checked" its `failed` (files in `Error` state, never among the checked ones),
/// "skipped" its `skipped` but the files outside every server's project, which the notes count
/// (`3 files outside pyright's include not checked`); "not shown" is `report.n_omitted`.
pub fn summary_line(report: &CheckReport) -> String {
    let c = counts(report);
    let mut line = format!(
        "{} checked: {}, {}, {} info, {}",
        plural(c.checked, "file", "files"),
        plural(c.errors, "error", "errors"),
        plural(c.warnings, "warning", "warnings"),
        c.information,
        plural(c.hints, "hint", "hints"),
    );
    if c.files_with_diagnostics > 0 {
        line += &format!(" in {}", plural(c.files_with_diagnostics, "file", "files"));
    }
    if c.timed_out > 0 {
        line += &format!("; {} timed out", plural(c.timed_out, "file", "files"));
    }
    if c.failed > 0 {
        line += &format!(
            "; {} could not be checked",
            plural(c.failed, "file", "files")
        );
    }
    if c.skipped_alone > 0 {
        line += &format!("; {} skipped", plural(c.skipped_alone, "file", "files"));
    }
    if report.n_omitted > 0 {
        line += &format!(
            "; {} not shown (caps)",
            plural(report.n_omitted, "more diagnostic", "more diagnostics")
        );
    }
    if !report.server_failures.is_empty() {
        line += &format!(
            "; {} failed",
            plural(report.server_failures.len(), "server", "servers")
        );
    }
    if report.n_below_severity > 0 {
        line += &match report.severity {
            Severity::Information => format!(
                "; {} not shown (`--severity hint` shows them)",
                plural(report.n_below_severity, "hint", "hints")
            ),
            threshold => format!(
                "; {} below {threshold} not shown",
                plural(report.n_below_severity, "diagnostic", "diagnostics")
            ),
        };
    }
    for note in &report.notes {
        line += &format!("; {note}");
    }
    line
}

/// Lines for stderr about incomplete results, in report order: `path: diagnostics incomplete:
/// <reason>` for timed-out files, `path: error: <message>` for failed ones, then `server <name>
/// failed: <message>` per server failure.
///
/// Files that share one reason, [`COLLAPSE_AT`] or more of them, get it once, where the first
/// of them would be, with their paths on the next line: `17 files not checked: gopls: Error
/// loading workspace: …` then `  a.go, b.go, …` (a module gopls cannot load made every file
/// repeat the same 300-character message). A failed file's message starts with its own name
/// (`a.go not checked: <reason>`); the reason after that is what is compared.
pub fn state_lines(report: &CheckReport) -> Vec<String> {
    struct Group {
        kind: &'static str,
        reason: String,
        /// (shown path, the line it would have alone).
        files: Vec<(String, String)>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for file in &report.files {
        let path = display_path(&report.human_base, &file.path);
        let (kind, reason, alone) = match &file.state {
            FileState::Timeout { reason } => (
                "diagnostics incomplete",
                reason.clone(),
                format!("{path}: diagnostics incomplete: {reason}"),
            ),
            FileState::Error { message } => {
                let own_prefix = file
                    .path
                    .file_name()
                    .map(|name| format!("{} not checked: ", name.to_string_lossy()));
                let reason = own_prefix
                    .and_then(|prefix| message.strip_prefix(&prefix))
                    .map_or_else(|| message.clone(), str::to_owned);
                ("error", reason, format!("{path}: error: {message}"))
            }
            FileState::Clean | FileState::Diagnostics => continue,
        };
        match groups
            .iter_mut()
            .find(|group| group.kind == kind && group.reason == reason)
        {
            Some(group) => group.files.push((path, alone)),
            None => groups.push(Group {
                kind,
                reason,
                files: vec![(path, alone)],
            }),
        }
    }
    let mut lines = Vec::new();
    for group in groups {
        if group.files.len() < COLLAPSE_AT {
            lines.extend(group.files.into_iter().map(|(_, alone)| alone));
            continue;
        }
        let n = group.files.len();
        lines.push(match group.kind {
            "error" => format!("{n} files not checked: {}", group.reason),
            kind => format!("{n} files: {kind}: {}", group.reason),
        });
        let paths: Vec<String> = group.files.into_iter().map(|(path, _)| path).collect();
        lines.push(format!("  {}", paths.join(", ")));
    }
    for failure in &report.server_failures {
        lines.push(format!("server {}: {}", failure.server, failure.message));
    }
    lines
}

/// How many files sharing one reason [`state_lines`] says it for once.
pub const COLLAPSE_AT: usize = 3;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonDiagnostic<'a> {
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    severity: &'static str,
    message: &'a str,
    source: Option<&'a str>,
    code: Option<&'a str>,
    server: &'a str,
}

impl<'a> JsonDiagnostic<'a> {
    fn new(diagnostic: &'a Diagnostic) -> JsonDiagnostic<'a> {
        JsonDiagnostic {
            line: diagnostic.line,
            column: diagnostic.column,
            end_line: diagnostic.end_line,
            end_column: diagnostic.end_column,
            severity: diagnostic.severity.as_str(),
            message: &diagnostic.message,
            source: diagnostic.source.as_deref(),
            code: diagnostic.code.as_deref(),
            server: &diagnostic.server,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonFile<'a> {
    path: String,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    omitted: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonBaseline {
    matched: usize,
    gone: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonSummary {
    files: usize,
    /// `files` but the failed ones: the count the human summary gives as "N files checked".
    checked: usize,
    skipped: usize,
    below_severity: usize,
    errors: usize,
    warnings: usize,
    information: usize,
    hints: usize,
    timed_out: usize,
    failed: usize,
    omitted: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<JsonBaseline>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonFailure<'a> {
    server: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    root: String,
    files: Vec<JsonFile<'a>>,
    summary: JsonSummary,
    server_failures: Vec<JsonFailure<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    config_errors: &'a [String],
}

fn write_json_line(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)?;
    writeln!(out)
}

fn render_json(report: &CheckReport, details: &RunDetails, out: &mut dyn Write) -> io::Result<()> {
    let c = counts(report);
    let document = JsonReport {
        root: slash_path(&report.root),
        files: report
            .files
            .iter()
            .map(|file| JsonFile {
                path: display_path(&report.root, &file.path),
                state: file.state.as_str(),
                reason: file.state.reason(),
                diagnostics: file
                    .reported_diagnostics()
                    .iter()
                    .map(JsonDiagnostic::new)
                    .collect(),
                omitted: file.n_omitted,
            })
            .chain(report.skipped.iter().map(|skipped| JsonFile {
                path: display_path(&report.root, &skipped.path),
                state: "skipped",
                reason: Some(&skipped.reason),
                diagnostics: Vec::new(),
                omitted: 0,
            }))
            .collect(),
        summary: JsonSummary {
            files: report.files.len(),
            checked: c.checked,
            skipped: report.skipped.len(),
            below_severity: report.n_below_severity,
            errors: c.errors,
            warnings: c.warnings,
            information: c.information,
            hints: c.hints,
            timed_out: c.timed_out,
            failed: c.failed,
            omitted: report.n_omitted,
            baseline: details
                .baseline
                .map(|(matched, gone)| JsonBaseline { matched, gone }),
            shard: details.shard.as_ref().map(|(shard, _)| shard.clone()),
        },
        server_failures: report
            .server_failures
            .iter()
            .map(|failure| JsonFailure {
                server: &failure.server,
                message: &failure.message,
            })
            .collect(),
        config_errors: &details.config_errors,
    };
    write_json_line(out, &document)
}

#[derive(Serialize)]
struct JsonlDiagnostic<'a> {
    path: &'a str,
    #[serde(flatten)]
    diagnostic: JsonDiagnostic<'a>,
}

fn render_jsonl(report: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
    for file in &report.files {
        let path = display_path(&report.root, &file.path);
        for diagnostic in file.reported_diagnostics() {
            let line = JsonlDiagnostic {
                path: &path,
                diagnostic: JsonDiagnostic::new(diagnostic),
            };
            write_json_line(out, &line)?;
        }
        if let Some(reason) = file.state.reason() {
            let line = json!({
                "path": path,
                "state": file.state.as_str(),
                "reason": reason,
            });
            write_json_line(out, &line)?;
        }
    }
    for skipped in &report.skipped {
        let line = json!({
            "path": display_path(&report.root, &skipped.path),
            "state": "skipped",
            "reason": skipped.reason,
        });
        write_json_line(out, &line)?;
    }
    Ok(())
}

/// Percent-encodes a path's bytes for use in a URI (RFC 3986): every byte except unreserved
/// characters and `/` becomes `%XX` (so spaces are `%20`, non-ASCII is encoded as its UTF-8
/// bytes, and a file name that is not UTF-8 keeps its own bytes: `caf%E9.py`).
fn percent_encode_path(path: &[u8]) -> String {
    let mut encoded = String::with_capacity(path.len());
    for &byte in path {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A path's bytes as a URI path takes them: the raw bytes on Unix (a name need not be UTF-8),
/// `/`-separated text elsewhere.
fn uri_path_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        slash_path(path).into_bytes()
    }
}

/// `file://` URI of an absolute path (RFC 8089), percent-encoded.
fn file_uri(path: &Path) -> String {
    let bytes = uri_path_bytes(path);
    if bytes.starts_with(b"/") {
        format!("file://{}", percent_encode_path(&bytes))
    } else {
        // Windows drive paths (`C:/x`) need a `/` before the drive letter.
        format!("file:///{}", percent_encode_path(&bytes))
    }
}

/// SARIF `artifactLocation`: relative to `%SRCROOT%` for files under the root, an absolute
/// `file://` URI otherwise.
fn sarif_artifact(root: &Path, path: &Path) -> serde_json::Value {
    match path.strip_prefix(root) {
        Ok(relative) if !relative.as_os_str().is_empty() => json!({
            "uri": percent_encode_path(&uri_path_bytes(relative)),
            "uriBaseId": "%SRCROOT%",
        }),
        _ => json!({ "uri": file_uri(path) }),
    }
}

/// SARIF `ruleId`: the code, else the source, else `lspc`.
fn sarif_rule_id(diagnostic: &Diagnostic) -> &str {
    diagnostic
        .code
        .as_deref()
        .or(diagnostic.source.as_deref())
        .unwrap_or("lspc")
}

fn sarif_rule_description(diagnostic: &Diagnostic) -> String {
    match (&diagnostic.source, &diagnostic.code) {
        (Some(source), Some(code)) => format!("{source} {code}"),
        (None, Some(code)) => code.clone(),
        (Some(source), None) => format!("{source} diagnostic"),
        (None, None) => "Diagnostic reported by a language server".to_string(),
    }
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Information | Severity::Hint => "note",
    }
}

/// SARIF 2.1.0 (OASIS), one run, in the subset GitHub code scanning accepts. Columns are
/// `unicodeCodePoints`; regions use 1-based lines and columns with an exclusive end column, which
/// is what LSP ranges give after conversion.
fn render_sarif(report: &CheckReport, details: &RunDetails, out: &mut dyn Write) -> io::Result<()> {
    let mut rule_ids: Vec<&str> = Vec::new();
    let mut rules = Vec::new();
    let mut results = Vec::new();
    for file in &report.files {
        let artifact = sarif_artifact(&report.root, &file.path);
        for diagnostic in file.reported_diagnostics() {
            let rule_id = sarif_rule_id(diagnostic);
            let rule_index = match rule_ids.iter().position(|id| *id == rule_id) {
                Some(index) => index,
                None => {
                    rule_ids.push(rule_id);
                    rules.push(json!({
                        "id": rule_id,
                        "shortDescription": { "text": sarif_rule_description(diagnostic) },
                    }));
                    rule_ids.len() - 1
                }
            };
            results.push(json!({
                "ruleId": rule_id,
                "ruleIndex": rule_index,
                "level": sarif_level(diagnostic.severity),
                "message": { "text": diagnostic.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": {
                            "startLine": diagnostic.line,
                            "startColumn": diagnostic.column,
                            "endLine": diagnostic.end_line,
                            "endColumn": diagnostic.end_column,
                        },
                    },
                }],
                // The exact severity, code and source, so a SARIF file can serve as a
                // `--baseline` (SARIF levels fold info and hint into `note`).
                "properties": {
                    "server": diagnostic.server,
                    "severity": diagnostic.severity.as_str(),
                    "code": diagnostic.code,
                    "source": diagnostic.source,
                },
            }));
        }
    }
    let mut notifications = Vec::new();
    for file in &report.files {
        let text = match &file.state {
            FileState::Timeout { reason } => format!("diagnostics incomplete: {reason}"),
            FileState::Error { message } => message.clone(),
            FileState::Clean | FileState::Diagnostics => continue,
        };
        notifications.push(json!({
            "level": "error",
            "message": { "text": text },
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": sarif_artifact(&report.root, &file.path),
                },
            }],
        }));
    }
    for failure in &report.server_failures {
        notifications.push(json!({
            "level": "error",
            "message": { "text": format!("server {}: {}", failure.server, failure.message) },
        }));
    }
    // Skipped files are notes: the run is still successful (executionSuccessful counts errors).
    let execution_successful = notifications.is_empty() && details.config_errors.is_empty();
    for skipped in &report.skipped {
        notifications.push(json!({
            "level": "note",
            "message": { "text": format!("skipped: {}", skipped.reason) },
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": sarif_artifact(&report.root, &skipped.path),
                },
            }],
        }));
    }
    let mut driver = json!({
        "name": "lspc",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rules,
    });
    // Cargo leaves these empty unless Cargo.toml sets `homepage`/`repository`.
    let information_uri = [env!("CARGO_PKG_HOMEPAGE"), env!("CARGO_PKG_REPOSITORY")]
        .into_iter()
        .find(|uri| !uri.is_empty());
    if let Some(uri) = information_uri {
        driver["informationUri"] = json!(uri);
    }
    let mut root_uri = file_uri(&report.root);
    if !root_uri.ends_with('/') {
        root_uri.push('/');
    }
    let mut document = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": driver },
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": { "%SRCROOT%": { "uri": root_uri } },
            "invocations": [{
                "executionSuccessful": execution_successful,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    });
    let run = &mut document["runs"][0];
    if !details.config_errors.is_empty() {
        run["invocations"][0]["toolConfigurationNotifications"] = details
            .config_errors
            .iter()
            .map(|error| {
                json!({
                    "level": "error",
                    "message": { "text": format!("configuration error: {error}") },
                })
            })
            .collect();
    }
    if let Some((_, automation_id)) = &details.shard {
        run["automationDetails"] = json!({ "id": automation_id });
    }
    if let Some((matched, gone)) = details.baseline {
        run["properties"] = json!({ "baseline": { "matched": matched, "gone": gone } });
    }
    write_json_line(out, &document)
}

/// Escapes workflow-command data (the message) as GitHub's toolkit does (`escapeData`).
fn github_escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow-command property value as GitHub's toolkit does (`escapeProperty`).
fn github_escape_property(text: &str) -> String {
    github_escape_data(text)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// GitHub Actions workflow commands (`::error file=…,line=…::message`). Columns are given only
/// for single-line ranges, because GitHub accepts `col`/`endColumn` only when the start and end
/// lines are the same.
fn render_github(
    report: &CheckReport,
    details: &RunDetails,
    out: &mut dyn Write,
) -> io::Result<()> {
    for error in &details.config_errors {
        let text = format!("configuration error: {error}");
        writeln!(out, "::error title=lspc::{}", github_escape_data(&text))?;
    }
    for file in &report.files {
        let path = github_escape_property(&display_path(&report.root, &file.path));
        for diagnostic in file.reported_diagnostics() {
            let command = match diagnostic.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Information | Severity::Hint => "notice",
            };
            let mut properties = format!("file={path},line={}", diagnostic.line);
            if diagnostic.end_line == diagnostic.line {
                properties += &format!(
                    ",col={},endLine={},endColumn={}",
                    diagnostic.column, diagnostic.end_line, diagnostic.end_column
                );
            } else {
                properties += &format!(",endLine={}", diagnostic.end_line);
            }
            if let Some(title) = source_and_code(diagnostic) {
                properties += &format!(",title={}", github_escape_property(&title));
            }
            writeln!(
                out,
                "::{command} {properties}::{}",
                github_escape_data(&diagnostic.message)
            )?;
        }
        let problem = match &file.state {
            FileState::Timeout { reason } => format!("diagnostics incomplete: {reason}"),
            FileState::Error { message } => format!("error: {message}"),
            FileState::Clean | FileState::Diagnostics => continue,
        };
        writeln!(out, "::error file={path}::{}", github_escape_data(&problem))?;
    }
    for failure in &report.server_failures {
        let text = format!("server {}: {}", failure.server, failure.message);
        writeln!(out, "::error::{}", github_escape_data(&text))?;
    }
    for skipped in &report.skipped {
        let path = github_escape_property(&display_path(&report.root, &skipped.path));
        let text = format!("skipped: {}", skipped.reason);
        writeln!(out, "::notice file={path}::{}", github_escape_data(&text))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn dg(
        path: &str,
        (line, column, end_line, end_column): (u32, u32, u32, u32),
        severity: Severity,
        message: &str,
        source: Option<&str>,
        code: Option<&str>,
        server: &str,
    ) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from(path),
            line,
            column,
            end_line,
            end_column,
            severity,
            message: message.to_string(),
            source: source.map(str::to_string),
            code: code.map(str::to_string),
            server: server.to_string(),
        }
    }

    fn file(
        path: &str,
        state: FileState,
        diagnostics: Vec<Diagnostic>,
        n_omitted: usize,
    ) -> FileReport {
        FileReport {
            path: PathBuf::from(path),
            state,
            diagnostics,
            n_omitted,
        }
    }

    const CJK: &str = "名前 `猫🐈` は未使用です: 100%, 本当";

    /// One error with a code, one warning without source (two-line message), a CJK/emoji info in a
    /// path with spaces, a multi-line hint, one timed-out file and one clean file.
    fn sample() -> CheckReport {
        CheckReport {
            root: PathBuf::from("/ws"),
            human_base: PathBuf::from("/ws"),
            color: false,
            files: vec![
                file(
                    "/ws/src/a.py",
                    FileState::Diagnostics,
                    vec![
                        dg(
                            "/ws/src/a.py",
                            (2, 10, 2, 15),
                            Severity::Error,
                            "Type \"str\" is not assignable to declared type \"int\"",
                            Some("Pyright"),
                            Some("reportAssignmentType"),
                            "pyright",
                        ),
                        dg(
                            "/ws/src/a.py",
                            (4, 1, 4, 7),
                            Severity::Warning,
                            "`os` imported but unused\nRemove the import",
                            None,
                            Some("F401"),
                            "ruff",
                        ),
                    ],
                    3,
                ),
                file(
                    "/ws/my dir/b c.py",
                    FileState::Diagnostics,
                    vec![
                        dg(
                            "/ws/my dir/b c.py",
                            (1, 5, 1, 8),
                            Severity::Information,
                            CJK,
                            None,
                            None,
                            "pyright",
                        ),
                        dg(
                            "/ws/my dir/b c.py",
                            (3, 1, 5, 2),
                            Severity::Hint,
                            "Unused",
                            Some("ruff"),
                            None,
                            "ruff",
                        ),
                    ],
                    0,
                ),
                file(
                    "/ws/src/slow.py",
                    FileState::Timeout {
                        reason: "server still analysing (timed out after 30 s)".into(),
                    },
                    // Partial results of an unsettled file are rendered (issue 10); its state
                    // says the set is incomplete.
                    vec![dg(
                        "/ws/src/slow.py",
                        (1, 1, 1, 2),
                        Severity::Error,
                        "partial",
                        None,
                        None,
                        "pyright",
                    )],
                    0,
                ),
                file("/ws/src/ok.py", FileState::Clean, vec![], 0),
            ],
            n_omitted: 3,
            server_failures: vec![],
            severity: Severity::Hint,
            n_below_severity: 0,
            skipped: vec![],
            notes: vec![],
        }
    }

    /// A report with a failed file, a file outside the root and two server failures.
    fn failing() -> CheckReport {
        CheckReport {
            root: PathBuf::from("/ws"),
            human_base: PathBuf::from("/ws"),
            color: false,
            files: vec![
                file(
                    "/elsewhere/x.py",
                    FileState::Diagnostics,
                    vec![dg(
                        "/elsewhere/x.py",
                        (1, 1, 1, 2),
                        Severity::Error,
                        "e",
                        None,
                        None,
                        "pyright",
                    )],
                    0,
                ),
                file(
                    "/ws/c.py",
                    FileState::Error {
                        message: "no server for .py".into(),
                    },
                    vec![],
                    0,
                ),
            ],
            n_omitted: 0,
            server_failures: vec![
                ServerFailure {
                    server: "ruff".into(),
                    message: "exited with status 2".into(),
                },
                ServerFailure {
                    server: "mypy".into(),
                    message: "not found".into(),
                },
            ],
            severity: Severity::Information,
            n_below_severity: 2,
            skipped: vec![SkippedFile {
                path: PathBuf::from("/ws/tests/t.py"),
                reason: "outside pyright's include".into(),
                outside_projects: true,
            }],
            notes: vec![
                "1 file outside pyright's include not checked; `--all-files` checks them".into(),
            ],
        }
    }

    fn rendered(report: &CheckReport, format: Format) -> String {
        let mut out = Vec::new();
        render(report, format, &mut out).expect("render into a Vec");
        String::from_utf8(out).expect("utf-8 output")
    }

    fn check(report: &CheckReport, format: Format, expected: &str) {
        assert_eq!(rendered(report, format), expected, "format {format}");
    }

    /// Checks a one-document format: exactly one line, and equal to `expected` as JSON.
    fn check_document(report: &CheckReport, format: Format, expected: serde_json::Value) {
        let text = rendered(report, format);
        assert!(text.ends_with('\n'), "{text}");
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        let got: serde_json::Value = serde_json::from_str(&text).expect("valid json");
        assert_eq!(got, expected);
    }

    #[test]
    fn format_words() {
        fn check_word(input: &str, expected: Result<Format, &str>) {
            let got = input.parse::<Format>().map_err(|e| e.to_string());
            assert_eq!(got, expected.map_err(str::to_string), "input {input:?}");
        }
        check_word("human", Ok(Format::Human));
        check_word("json", Ok(Format::Json));
        check_word("JSONL", Ok(Format::Jsonl));
        check_word("sarif", Ok(Format::Sarif));
        check_word("github", Ok(Format::Github));
        check_word(
            "xml",
            Err("unknown format `xml` (expected human, json, jsonl, sarif or github)"),
        );
        assert_eq!(Format::Jsonl.to_string(), "jsonl");
    }

    #[test]
    fn paths() {
        fn check_path(root: &str, path: &str, expected: &str) {
            assert_eq!(display_path(Path::new(root), Path::new(path)), expected);
        }
        check_path("/ws", "/ws/src/a.py", "src/a.py");
        check_path("/ws", "/ws/my dir/b c.py", "my dir/b c.py");
        check_path("/ws", "/elsewhere/x.py", "/elsewhere/x.py");
        check_path("/ws", "/wsx/a.py", "/wsx/a.py");
        check_path("/ws", "/ws", "/ws");
        fn check_encode(path: &str, expected: &str) {
            assert_eq!(percent_encode_path(path.as_bytes()), expected);
        }
        assert_eq!(percent_encode_path(b"caf\xe9.py"), "caf%E9.py");
        check_encode("my dir/b c.py", "my%20dir/b%20c.py");
        check_encode("naïve #1%/a?.py", "na%C3%AFve%20%231%25/a%3F.py");
        check_encode("a-b_c.d~e/F9", "a-b_c.d~e/F9");
        assert_eq!(file_uri(Path::new("/my ws/a.py")), "file:///my%20ws/a.py");
    }

    #[test]
    fn human() {
        check(
            &sample(),
            Format::Human,
            concat!(
                "src/a.py:2:10: error: Type \"str\" is not assignable to declared type \"int\" [Pyright reportAssignmentType]\n",
                "src/a.py:4:1: warning: `os` imported but unused [F401]\n",
                "    Remove the import\n",
                "my dir/b c.py:1:5: info: 名前 `猫🐈` は未使用です: 100%, 本当\n",
                "my dir/b c.py:3:1: hint: Unused [ruff]\n",
                "src/slow.py:1:1: error: partial\n",
            ),
        );
        check(&failing(), Format::Human, "/elsewhere/x.py:1:1: error: e\n");
        // A blank line inside a message (ruff's "\n\nhelp: …") gets no trailing indentation.
        let mut blank_line = sample();
        blank_line.files[0].diagnostics[1].message =
            "`os` imported but unused\n\nhelp: Remove the import".to_owned();
        blank_line.files.truncate(1);
        check(
            &blank_line,
            Format::Human,
            concat!(
                "src/a.py:2:10: error: Type \"str\" is not assignable to declared type \"int\" [Pyright reportAssignmentType]\n",
                "src/a.py:4:1: warning: `os` imported but unused [F401]\n",
                "\n",
                "    help: Remove the import\n",
            ),
        );
    }

    #[test]
    fn human_colour() {
        let mut coloured = failing();
        coloured.color = true;
        check(
            &coloured,
            Format::Human,
            "\x1b[1m/elsewhere/x.py:1:1:\x1b[0m \x1b[1;31merror\x1b[0m: e\n",
        );
        // Machine formats never colour.
        assert!(!rendered(&coloured, Format::Jsonl).contains('\x1b'));
    }

    #[test]
    fn stderr_lines() {
        fn check_lines(report: &CheckReport, expected: &[&str]) {
            assert_eq!(state_lines(report), expected);
        }
        check_lines(
            &sample(),
            &["src/slow.py: diagnostics incomplete: server still analysing (timed out after 30 s)"],
        );
        check_lines(
            &failing(),
            &[
                "c.py: error: no server for .py",
                "server ruff: exited with status 2",
                "server mypy: not found",
            ],
        );
        // Three files with one reason get it once; two keep a line each.
        let mut shared = failing();
        shared.server_failures.clear();
        shared
            .files
            .retain(|file| matches!(file.state, FileState::Error { .. }));
        let load_error = "gopls: Error loading workspace: missing go.sum entry";
        for name in ["a.go", "sub/b.go", "c.go"] {
            let path = PathBuf::from("/ws").join(name);
            let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
            shared.files.push(FileReport {
                path,
                state: FileState::Error {
                    message: format!("{file_name} not checked: {load_error}"),
                },
                diagnostics: Vec::new(),
                n_omitted: 0,
            });
        }
        for name in ["x.rs", "y.rs"] {
            shared.files.push(FileReport {
                path: PathBuf::from("/ws").join(name),
                state: FileState::Timeout {
                    reason: "rust-analyzer still analysing after 30 s".into(),
                },
                diagnostics: Vec::new(),
                n_omitted: 0,
            });
        }
        check_lines(
            &shared,
            &[
                "c.py: error: no server for .py",
                "3 files not checked: gopls: Error loading workspace: missing go.sum entry",
                "  a.go, sub/b.go, c.go",
                "x.rs: diagnostics incomplete: rust-analyzer still analysing after 30 s",
                "y.rs: diagnostics incomplete: rust-analyzer still analysing after 30 s",
            ],
        );
    }

    #[test]
    fn summary() {
        fn check_summary(report: &CheckReport, expected: &str) {
            assert_eq!(summary_line(report), expected);
        }
        check_summary(
            &sample(),
            "4 files checked: 2 errors, 1 warning, 1 info, 1 hint in 3 files; 1 file timed out; \
             3 more diagnostics not shown (caps)",
        );
        // A file that could not be checked is not counted as checked (its server failed, or
        // it was named and no server could take it); the outside-the-project one is in its
        // note.
        check_summary(
            &failing(),
            "1 file checked: 1 error, 0 warnings, 0 info, 0 hints in 1 file; \
             1 file could not be checked; 2 servers failed; 2 hints not shown \
             (`--severity hint` shows them); 1 file outside pyright's include not checked; \
             `--all-files` checks them",
        );
        // A walked file skipped for another reason (binary, rust-analyzer's `unlinked-file`)
        // is counted too: its reason is on the line lspc printed for it.
        let mut skipped = failing();
        skipped.skipped.push(SkippedFile {
            path: PathBuf::from("/ws/src/orphan.rs"),
            reason: "orphan.rs not checked: rust-analyzer: This file is not included anywhere \
                     in the module tree, so rust-analyzer can't offer IDE services."
                .into(),
            outside_projects: false,
        });
        skipped.files.remove(1);
        skipped.server_failures.clear();
        skipped.notes.clear();
        check_summary(
            &skipped,
            "1 file checked: 1 error, 0 warnings, 0 info, 0 hints in 1 file; \
             1 file skipped; 2 hints not shown (`--severity hint` shows them)",
        );
        let mut one = failing();
        one.files.truncate(1);
        one.server_failures.truncate(1);
        one.n_omitted = 1;
        one.severity = Severity::Warning;
        one.n_below_severity = 1;
        one.notes.clear();
        check_summary(
            &one,
            "1 file checked: 1 error, 0 warnings, 0 info, 0 hints in 1 file; \
             1 more diagnostic not shown (caps); 1 server failed; 1 diagnostic below warning \
             not shown",
        );
        let empty = CheckReport {
            root: PathBuf::from("/ws"),
            human_base: PathBuf::from("/ws"),
            color: false,
            files: vec![],
            n_omitted: 0,
            server_failures: vec![],
            severity: Severity::Hint,
            n_below_severity: 0,
            skipped: vec![],
            notes: vec![],
        };
        check_summary(
            &empty,
            "0 files checked: 0 errors, 0 warnings, 0 info, 0 hints",
        );
        check(&empty, Format::Human, "");
        check(&empty, Format::Jsonl, "");
        check(&empty, Format::Github, "");
    }

    #[test]
    fn json() {
        check(
            &failing(),
            Format::Json,
            concat!(
                r#"{"root":"/ws","files":[{"path":"/elsewhere/x.py","state":"diagnostics","diagnostics":"#,
                r#"[{"line":1,"column":1,"endLine":1,"endColumn":2,"severity":"error","message":"e","#,
                r#""source":null,"code":null,"server":"pyright"}],"omitted":0},"#,
                r#"{"path":"c.py","state":"error","reason":"no server for .py","diagnostics":[],"omitted":0},"#,
                r#"{"path":"tests/t.py","state":"skipped","reason":"outside pyright's include","diagnostics":[],"omitted":0}],"#,
                r#""summary":{"files":2,"checked":1,"skipped":1,"belowSeverity":2,"errors":1,"warnings":0,"information":0,"hints":0,"timedOut":0,"failed":1,"omitted":0},"#,
                r#""serverFailures":[{"server":"ruff","message":"exited with status 2"},"#,
                r#"{"server":"mypy","message":"not found"}]}"#,
                "\n"
            ),
        );
        check_document(
            &sample(),
            Format::Json,
            json!({
                "root": "/ws",
                "files": [
                    {"path": "src/a.py", "state": "diagnostics", "omitted": 3, "diagnostics": [
                        {"line": 2, "column": 10, "endLine": 2, "endColumn": 15, "severity": "error",
                         "message": "Type \"str\" is not assignable to declared type \"int\"",
                         "source": "Pyright", "code": "reportAssignmentType", "server": "pyright"},
                        {"line": 4, "column": 1, "endLine": 4, "endColumn": 7, "severity": "warning",
                         "message": "`os` imported but unused\nRemove the import",
                         "source": null, "code": "F401", "server": "ruff"},
                    ]},
                    {"path": "my dir/b c.py", "state": "diagnostics", "omitted": 0, "diagnostics": [
                        {"line": 1, "column": 5, "endLine": 1, "endColumn": 8, "severity": "info",
                         "message": CJK, "source": null, "code": null, "server": "pyright"},
                        {"line": 3, "column": 1, "endLine": 5, "endColumn": 2, "severity": "hint",
                         "message": "Unused", "source": "ruff", "code": null, "server": "ruff"},
                    ]},
                    {"path": "src/slow.py", "state": "timeout",
                     "reason": "server still analysing (timed out after 30 s)",
                     "diagnostics": [
                        {"line": 1, "column": 1, "endLine": 1, "endColumn": 2, "severity": "error",
                         "message": "partial", "source": null, "code": null, "server": "pyright"},
                     ], "omitted": 0},
                    {"path": "src/ok.py", "state": "clean", "diagnostics": [], "omitted": 0},
                ],
                "summary": {"files": 4, "checked": 4, "skipped": 0, "belowSeverity": 0, "errors": 2, "warnings": 1, "information": 1, "hints": 1,
                            "timedOut": 1, "failed": 0, "omitted": 3},
                "serverFailures": [],
            }),
        );
    }

    #[test]
    fn jsonl() {
        check(
            &sample(),
            Format::Jsonl,
            concat!(
                r#"{"path":"src/a.py","line":2,"column":10,"endLine":2,"endColumn":15,"severity":"error","#,
                r#""message":"Type \"str\" is not assignable to declared type \"int\"","source":"Pyright","#,
                r#""code":"reportAssignmentType","server":"pyright"}"#,
                "\n",
                r#"{"path":"src/a.py","line":4,"column":1,"endLine":4,"endColumn":7,"severity":"warning","#,
                r#""message":"`os` imported but unused\nRemove the import","source":null,"code":"F401","server":"ruff"}"#,
                "\n",
                r#"{"path":"my dir/b c.py","line":1,"column":5,"endLine":1,"endColumn":8,"severity":"info","#,
                r#""message":"名前 `猫🐈` は未使用です: 100%, 本当","source":null,"code":null,"server":"pyright"}"#,
                "\n",
                r#"{"path":"my dir/b c.py","line":3,"column":1,"endLine":5,"endColumn":2,"severity":"hint","#,
                r#""message":"Unused","source":"ruff","code":null,"server":"ruff"}"#,
                "\n",
                r#"{"path":"src/slow.py","line":1,"column":1,"endLine":1,"endColumn":2,"severity":"error","#,
                r#""message":"partial","source":null,"code":null,"server":"pyright"}"#,
                "\n",
                r#"{"path":"src/slow.py","reason":"server still analysing (timed out after 30 s)","#,
                r#""state":"timeout"}"#,
                "\n",
            ),
        );
        // A failed file outside the root keeps its absolute path, as its diagnostics do.
        check(
            &failing(),
            Format::Jsonl,
            concat!(
                r#"{"path":"/elsewhere/x.py","line":1,"column":1,"endLine":1,"endColumn":2,"#,
                r#""severity":"error","message":"e","source":null,"code":null,"server":"pyright"}"#,
                "\n",
                r#"{"path":"c.py","reason":"no server for .py","state":"error"}"#,
                "\n",
                r#"{"path":"tests/t.py","reason":"outside pyright's include","state":"skipped"}"#,
                "\n",
            ),
        );
        let mut skipped = failing();
        skipped.files.clear();
        check(
            &skipped,
            Format::Jsonl,
            concat!(
                r#"{"path":"tests/t.py","reason":"outside pyright's include","state":"skipped"}"#,
                "\n"
            ),
        );
    }

    #[test]
    fn github() {
        check(
            &sample(),
            Format::Github,
            concat!(
                "::error file=src/a.py,line=2,col=10,endLine=2,endColumn=15,title=Pyright reportAssignmentType::",
                "Type \"str\" is not assignable to declared type \"int\"\n",
                "::warning file=src/a.py,line=4,col=1,endLine=4,endColumn=7,title=F401::",
                "`os` imported but unused%0ARemove the import\n",
                "::notice file=my dir/b c.py,line=1,col=5,endLine=1,endColumn=8::",
                "名前 `猫🐈` は未使用です: 100%25, 本当\n",
                "::notice file=my dir/b c.py,line=3,endLine=5,title=ruff::Unused\n",
                "::error file=src/slow.py,line=1,col=1,endLine=1,endColumn=2::partial\n",
                "::error file=src/slow.py::diagnostics incomplete: server still analysing (timed out after 30 s)\n",
            ),
        );
        check(
            &failing(),
            Format::Github,
            concat!(
                "::error file=/elsewhere/x.py,line=1,col=1,endLine=1,endColumn=2::e\n",
                "::error file=c.py::error: no server for .py\n",
                "::error::server ruff: exited with status 2\n",
                "::error::server mypy: not found\n",
                "::notice file=tests/t.py::skipped: outside pyright's include\n",
            ),
        );
        fn check_escape(input: &str, data: &str, property: &str) {
            assert_eq!(github_escape_data(input), data);
            assert_eq!(github_escape_property(input), property);
        }
        check_escape("a%b\r\nc", "a%25b%0D%0Ac", "a%25b%0D%0Ac");
        check_escape("x: y, z", "x: y, z", "x%3A y%2C z");
        check_escape("%3A", "%253A", "%253A");
    }

    fn region(line: u32, column: u32, end_line: u32, end_column: u32) -> serde_json::Value {
        json!({"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column})
    }

    #[test]
    fn sarif() {
        let driver = |rules: serde_json::Value| {
            let mut driver =
                json!({"name": "lspc", "version": env!("CARGO_PKG_VERSION"), "rules": rules});
            if let Some(uri) = [env!("CARGO_PKG_HOMEPAGE"), env!("CARGO_PKG_REPOSITORY")]
                .into_iter()
                .find(|uri| !uri.is_empty())
            {
                driver["informationUri"] = json!(uri);
            }
            driver
        };
        let src = |uri: &str| json!({"uri": uri, "uriBaseId": "%SRCROOT%"});
        check_document(
            &sample(),
            Format::Sarif,
            json!({
                "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
                "version": "2.1.0",
                "runs": [{
                    "tool": {"driver": driver(json!([
                        {"id": "reportAssignmentType", "shortDescription": {"text": "Pyright reportAssignmentType"}},
                        {"id": "F401", "shortDescription": {"text": "F401"}},
                        {"id": "lspc", "shortDescription": {"text": "Diagnostic reported by a language server"}},
                        {"id": "ruff", "shortDescription": {"text": "ruff diagnostic"}},
                    ]))},
                    "columnKind": "unicodeCodePoints",
                    "originalUriBaseIds": {"%SRCROOT%": {"uri": "file:///ws/"}},
                    "invocations": [{
                        "executionSuccessful": false,
                        "toolExecutionNotifications": [{
                            "level": "error",
                            "message": {"text": "diagnostics incomplete: server still analysing (timed out after 30 s)"},
                            "locations": [{"physicalLocation": {"artifactLocation": src("src/slow.py")}}],
                        }],
                    }],
                    "results": [
                        {"ruleId": "reportAssignmentType", "ruleIndex": 0, "level": "error",
                         "message": {"text": "Type \"str\" is not assignable to declared type \"int\""},
                         "locations": [{"physicalLocation": {"artifactLocation": src("src/a.py"), "region": region(2, 10, 2, 15)}}],
                         "properties": {"server": "pyright", "severity": "error", "code": "reportAssignmentType", "source": "Pyright"}},
                        {"ruleId": "F401", "ruleIndex": 1, "level": "warning",
                         "message": {"text": "`os` imported but unused\nRemove the import"},
                         "locations": [{"physicalLocation": {"artifactLocation": src("src/a.py"), "region": region(4, 1, 4, 7)}}],
                         "properties": {"server": "ruff", "severity": "warning", "code": "F401", "source": null}},
                        {"ruleId": "lspc", "ruleIndex": 2, "level": "note",
                         "message": {"text": CJK},
                         "locations": [{"physicalLocation": {"artifactLocation": src("my%20dir/b%20c.py"), "region": region(1, 5, 1, 8)}}],
                         "properties": {"server": "pyright", "severity": "info", "code": null, "source": null}},
                        {"ruleId": "ruff", "ruleIndex": 3, "level": "note",
                         "message": {"text": "Unused"},
                         "locations": [{"physicalLocation": {"artifactLocation": src("my%20dir/b%20c.py"), "region": region(3, 1, 5, 2)}}],
                         "properties": {"server": "ruff", "severity": "hint", "code": null, "source": "ruff"}},
                        {"ruleId": "lspc", "ruleIndex": 2, "level": "error", "message": {"text": "partial"},
                         "locations": [{"physicalLocation": {"artifactLocation": src("src/slow.py"), "region": region(1, 1, 1, 2)}}],
                         "properties": {"server": "pyright", "severity": "error", "code": null, "source": null}},
                    ],
                }],
            }),
        );
        check_document(
            &failing(),
            Format::Sarif,
            json!({
                "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
                "version": "2.1.0",
                "runs": [{
                    "tool": {"driver": driver(json!([
                        {"id": "lspc", "shortDescription": {"text": "Diagnostic reported by a language server"}},
                    ]))},
                    "columnKind": "unicodeCodePoints",
                    "originalUriBaseIds": {"%SRCROOT%": {"uri": "file:///ws/"}},
                    "invocations": [{
                        "executionSuccessful": false,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": "no server for .py"},
                             "locations": [{"physicalLocation": {"artifactLocation": src("c.py")}}]},
                            {"level": "error", "message": {"text": "server ruff: exited with status 2"}},
                            {"level": "error", "message": {"text": "server mypy: not found"}},
                            {"level": "note", "message": {"text": "skipped: outside pyright's include"},
                             "locations": [{"physicalLocation": {"artifactLocation": src("tests/t.py")}}]},
                        ],
                    }],
                    "results": [
                        {"ruleId": "lspc", "ruleIndex": 0, "level": "error", "message": {"text": "e"},
                         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///elsewhere/x.py"},
                                                             "region": region(1, 1, 1, 2)}}],
                         "properties": {"server": "pyright", "severity": "error", "code": null, "source": null}},
                    ],
                }],
            }),
        );
        // A clean run succeeds and has empty arrays.
        let mut clean = sample();
        clean.files = vec![file("/ws/src/ok.py", FileState::Clean, vec![], 0)];
        let text = rendered(&clean, Format::Sarif);
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid json");
        assert_eq!(
            value["runs"][0]["invocations"][0]["executionSuccessful"],
            json!(true)
        );
        assert_eq!(value["runs"][0]["results"], json!([]));
    }
}
