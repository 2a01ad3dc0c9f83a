//! `lspc check --baseline FILE` / `--write-baseline FILE`: report only what a change adds.
//!
//! A baseline is a previous `lspc check --format json` or `--format sarif` output. Findings are
//! matched without positions, as a multiset on (file, severity, code, source, message), the same
//! comparison the edit commands use for "new diagnostics" ([`crate::edit::commands::new_diagnostics`]):
//! code that only moved is not new, a second copy of a known message is. Files are keyed by
//! their path relative to the workspace root with `/` separators (as both formats print them),
//! so a baseline written in one checkout matches in another. Messages are compared without
//! clangd's "(fix available)" suffix, which comes and goes with its index, and without rustc's
//! lint-level notes, which only the first finding of each lint carries
//! ([`crate::diagnostics::comparison_message`]).
//!
//! SARIF from lspc carries the exact severity, code and source in each result's `properties`;
//! SARIF without them (older lspc, other tools) is matched on (file, SARIF level, `ruleId`,
//! message) instead.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diagnostics::{comparison_message, Diagnostic, Severity};
use crate::output::{display_path, CheckReport};

/// Why a baseline file could not be used. Messages name the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineError {
    Io {
        path: PathBuf,
        message: String,
    },
    /// Not JSON, or JSON of neither shape; `message` says what was expected where.
    InvalidInput {
        path: PathBuf,
        message: String,
    },
}

impl fmt::Display for BaselineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BaselineError::Io { path, message } => {
                write!(f, "cannot read baseline {}: {message}", path.display())
            }
            BaselineError::InvalidInput { path, message } => write!(
                f,
                "baseline {} is not lspc check json or sarif output: {message}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for BaselineError {}

/// How a baseline finding is matched.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    /// (severity, code, source, message): lspc json, or lspc SARIF with its properties.
    Exact(Severity, Option<String>, Option<String>, String),
    /// (SARIF level, ruleId, message): SARIF without lspc's properties.
    Sarif(&'static str, String, String),
}

/// The findings of a previous run: per file (root-relative, `/`-separated) a count per key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baseline {
    findings: BTreeMap<String, HashMap<Key, usize>>,
}

/// What applying a baseline did, for the summary line and the json/sarif summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BaselineCounts {
    /// Current findings the baseline already had (left out of the report and the exit status).
    pub n_matched: usize,
    /// Baseline findings no longer reported for files this run checked completely, or whose file
    /// no longer exists.
    pub n_gone: usize,
}

impl Baseline {
    /// Reads a baseline file (json or SARIF, told apart by the SARIF `runs` key).
    ///
    /// Errors: unreadable file, not JSON, or JSON of neither shape.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|error| BaselineError::Io {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        Baseline::parse(&text).map_err(|message| BaselineError::InvalidInput {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Parses baseline text; the error says which field was wrong.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let value: Value = serde_json::from_str(text.trim())
            .map_err(|error| format!("not a JSON document: {error}"))?;
        if value.get("runs").is_some() {
            parse_sarif(&value)
        } else if value.get("files").is_some() {
            parse_json(&value)
        } else {
            Err("expected an object with \"files\" (json) or \"runs\" (sarif)".to_owned())
        }
    }

    /// The number of findings recorded.
    pub fn len(&self) -> usize {
        self.findings.values().flat_map(|keys| keys.values()).sum()
    }

    /// Whether the baseline records no finding.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes from `report` every diagnostic the baseline has (each baseline finding matches at
    /// most one diagnostic) and counts matched and gone findings. Only files whose check
    /// completed count toward "gone" (a timed-out file proves nothing), plus files that no longer
    /// exist under the root; baseline findings below `severity` are ignored, as the run did not
    /// look for them.
    pub fn apply(
        &self,
        report: &mut CheckReport,
        severity: super::verdict::ReportFrom,
    ) -> BaselineCounts {
        let mut remaining = self.findings.clone();
        for keys in remaining.values_mut() {
            keys.retain(|key, _| match key {
                Key::Exact(found, _, source, _) => severity.reports(*found, source.as_deref()),
                Key::Sarif(level, ..) => sarif_level_at_least(level, severity.level()),
            });
        }
        let mut counts = BaselineCounts::default();
        let mut checked: Vec<String> = Vec::new();
        for file in &mut report.files {
            let path = display_path(&report.root, &file.path);
            if file.state.is_complete() {
                checked.push(path.clone());
            }
            let Some(keys) = remaining.get_mut(&path) else {
                continue;
            };
            file.diagnostics.retain(|diagnostic| {
                for key in keys_of(diagnostic) {
                    if let Some(count) = keys.get_mut(&key).filter(|count| **count > 0) {
                        *count -= 1;
                        counts.n_matched += 1;
                        return false;
                    }
                }
                true
            });
            if file.diagnostics.is_empty() && file.state == crate::output::FileState::Diagnostics {
                file.state = crate::output::FileState::Clean;
            }
        }
        for (path, keys) in &remaining {
            let exists = report.root.join(path).is_file();
            if checked.contains(path) || !exists {
                counts.n_gone += keys.values().sum::<usize>();
            }
        }
        counts
    }
}

/// The keys a current diagnostic may match, exact first.
fn keys_of(diagnostic: &Diagnostic) -> [Key; 2] {
    [
        Key::Exact(
            diagnostic.severity,
            diagnostic.code.clone(),
            diagnostic.source.clone(),
            comparison_message(&diagnostic.message).into_owned(),
        ),
        Key::Sarif(
            sarif_level(diagnostic.severity),
            diagnostic
                .code
                .clone()
                .or_else(|| diagnostic.source.clone())
                .unwrap_or_else(|| "lspc".to_owned()),
            comparison_message(&diagnostic.message).into_owned(),
        ),
    ]
}

/// The SARIF level lspc writes for a severity (as `output.rs` does).
fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Information | Severity::Hint => "note",
    }
}

fn sarif_level_at_least(level: &str, severity: Severity) -> bool {
    match level {
        "error" => true,
        "warning" => severity >= Severity::Warning,
        _ => severity >= Severity::Information,
    }
}

fn text_field(value: &Value, field: &str, at: &str) -> Result<Option<String>, String> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("{at}.{field}: expected a string, got {other}")),
    }
}

fn parse_json(value: &Value) -> Result<Baseline, String> {
    let Some(files) = value["files"].as_array() else {
        return Err("\"files\": expected an array".to_owned());
    };
    let mut baseline = Baseline::default();
    for (n_file, file) in files.iter().enumerate() {
        let at = format!("files[{n_file}]");
        let path = text_field(file, "path", &at)?.ok_or(format!("{at}.path: missing"))?;
        let Some(diagnostics) = file.get("diagnostics").and_then(Value::as_array) else {
            return Err(format!("{at}.diagnostics: expected an array"));
        };
        for (n, diagnostic) in diagnostics.iter().enumerate() {
            let at = format!("{at}.diagnostics[{n}]");
            let severity = text_field(diagnostic, "severity", &at)?
                .ok_or(format!("{at}.severity: missing"))?;
            let severity: Severity = severity
                .parse()
                .map_err(|_| format!("{at}.severity: unknown severity {severity:?}"))?;
            let message =
                text_field(diagnostic, "message", &at)?.ok_or(format!("{at}.message: missing"))?;
            let message = comparison_message(&message).into_owned();
            let key = Key::Exact(
                severity,
                text_field(diagnostic, "code", &at)?,
                text_field(diagnostic, "source", &at)?,
                message,
            );
            *baseline
                .findings
                .entry(path.clone())
                .or_default()
                .entry(key)
                .or_default() += 1;
        }
    }
    Ok(baseline)
}

fn parse_sarif(value: &Value) -> Result<Baseline, String> {
    let Some(runs) = value["runs"].as_array() else {
        return Err("\"runs\": expected an array".to_owned());
    };
    let mut baseline = Baseline::default();
    for (n_run, run) in runs.iter().enumerate() {
        let results = match run.get("results") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(results)) => results,
            Some(_) => return Err(format!("runs[{n_run}].results: expected an array")),
        };
        for (n, result) in results.iter().enumerate() {
            let at = format!("runs[{n_run}].results[{n}]");
            let message = result["message"]["text"]
                .as_str()
                .map(comparison_message)
                .ok_or(format!("{at}.message.text: missing"))?
                .into_owned();
            let location = &result["locations"][0]["physicalLocation"]["artifactLocation"];
            let uri = location["uri"]
                .as_str()
                .ok_or(format!("{at}.locations[0]: no artifactLocation.uri"))?;
            let path = sarif_path(uri).ok_or(format!("{at}: bad artifact uri {uri:?}"))?;
            let properties = &result["properties"];
            let key = match properties.get("severity").and_then(Value::as_str) {
                Some(severity) => Key::Exact(
                    severity
                        .parse()
                        .map_err(|_| format!("{at}.properties.severity: {severity:?}"))?,
                    text_field(properties, "code", &at)?,
                    text_field(properties, "source", &at)?,
                    message,
                ),
                None => {
                    let level = match result["level"].as_str().unwrap_or("warning") {
                        "error" => "error",
                        "warning" => "warning",
                        _ => "note",
                    };
                    let rule_id = result["ruleId"].as_str().unwrap_or("lspc").to_owned();
                    Key::Sarif(level, rule_id, message)
                }
            };
            *baseline
                .findings
                .entry(path)
                .or_default()
                .entry(key)
                .or_default() += 1;
        }
    }
    Ok(baseline)
}

/// The root-relative `/` path of a SARIF artifact URI: percent-decoded when relative (lspc writes
/// files under the root relative to `%SRCROOT%`), the absolute path of a `file://` URI otherwise.
fn sarif_path(uri: &str) -> Option<String> {
    if uri.starts_with("file:") {
        let path = crate::uri::uri_to_path(uri).ok()?;
        return Some(path.to_string_lossy().into_owned());
    }
    let bytes = uri.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::verdict::ReportFrom;
    use crate::output::{FileReport, FileState};

    fn diagnostic(path: &str, line: u32, severity: Severity, message: &str) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from(path),
            line,
            column: 1,
            end_line: line,
            end_column: 2,
            severity,
            message: message.to_owned(),
            source: Some("Pyright".to_owned()),
            code: Some("reportX".to_owned()),
            server: "pyright".to_owned(),
        }
    }

    fn report(diagnostics: Vec<Diagnostic>) -> CheckReport {
        CheckReport {
            root: PathBuf::from("/nonexistent-root"),
            files: vec![FileReport {
                path: PathBuf::from("/nonexistent-root/a b.py"),
                state: FileState::Diagnostics,
                diagnostics,
                n_omitted: 0,
            }],
            n_omitted: 0,
            server_failures: Vec::new(),
            human_base: PathBuf::from("/nonexistent-root"),
            color: false,
            severity: Severity::Hint,
            n_below_severity: 0,
            skipped: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn json_and_sarif_baselines_match_without_positions() {
        let json = r#"{"root":"/old","files":[{"path":"a b.py","state":"diagnostics","diagnostics":[
            {"line":3,"column":1,"endLine":3,"endColumn":2,"severity":"error","message":"m1","source":"Pyright","code":"reportX","server":"pyright"},
            {"line":9,"column":1,"endLine":9,"endColumn":2,"severity":"error","message":"m2","source":"Pyright","code":"reportX","server":"pyright"}],"omitted":0}]}"#;
        let sarif = r#"{"version":"2.1.0","runs":[{"results":[
            {"ruleId":"reportX","level":"error","message":{"text":"m1"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a%20b.py","uriBaseId":"%SRCROOT%"}}}],"properties":{"server":"pyright","severity":"error","code":"reportX","source":"Pyright"}},
            {"ruleId":"reportX","level":"error","message":{"text":"m2"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a%20b.py","uriBaseId":"%SRCROOT%"}}}]}]}]}"#;
        for text in [json, sarif] {
            let baseline = Baseline::parse(text).unwrap();
            assert_eq!(baseline.len(), 2);
            // m1 moved down three lines, m2 fixed, m3 new, a second m1 is new too.
            let mut current = report(vec![
                diagnostic("/nonexistent-root/a b.py", 6, Severity::Error, "m1"),
                diagnostic("/nonexistent-root/a b.py", 7, Severity::Error, "m1"),
                diagnostic("/nonexistent-root/a b.py", 8, Severity::Error, "m3"),
            ]);
            let counts = baseline.apply(&mut current, ReportFrom::AtLeast(Severity::Hint));
            assert_eq!(
                counts,
                BaselineCounts {
                    n_matched: 1,
                    n_gone: 1
                }
            );
            let left: Vec<(u32, &str)> = current.files[0]
                .diagnostics
                .iter()
                .map(|d| (d.line, d.message.as_str()))
                .collect();
            assert_eq!(left, [(7, "m1"), (8, "m3")]);
        }
    }

    /// A baseline written while clangd's index was loading has `Unknown type name 'uint32_t'`;
    /// the next run, index loaded, says `… (fix available)` for the same finding (clangd 14 on
    /// json-c's `json_pointer_private.h`). It matches, in both baseline formats and both ways.
    #[test]
    fn clangd_fix_counts_do_not_make_a_known_finding_new() {
        let json = r#"{"files":[{"path":"a b.py","diagnostics":[
            {"severity":"error","message":"Unknown type name 'uint32_t'","source":"clang","code":"unknown_typename"},
            {"severity":"error","message":"Unknown type name 'size_t' (fix available)","source":"clang","code":"unknown_typename"}]}]}"#;
        let sarif = r#"{"version":"2.1.0","runs":[{"results":[
            {"ruleId":"unknown_typename","level":"error","message":{"text":"Unknown type name 'uint32_t'"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a%20b.py"}}}],"properties":{"server":"clangd","severity":"error","code":"unknown_typename","source":"clang"}},
            {"ruleId":"unknown_typename","level":"error","message":{"text":"Unknown type name 'size_t' (fix available)"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a%20b.py"}}}]}]}]}"#;
        for text in [json, sarif] {
            let baseline = Baseline::parse(text).unwrap();
            let clang = |message: &str| Diagnostic {
                source: Some("clang".to_owned()),
                code: Some("unknown_typename".to_owned()),
                server: "clangd".to_owned(),
                ..diagnostic("/nonexistent-root/a b.py", 26, Severity::Error, message)
            };
            let mut current = report(vec![
                clang("Unknown type name 'uint32_t' (fix available)"),
                clang("Unknown type name 'size_t'"),
            ]);
            let counts = baseline.apply(&mut current, ReportFrom::AtLeast(Severity::Hint));
            assert_eq!(
                counts,
                BaselineCounts {
                    n_matched: 2,
                    n_gone: 0
                }
            );
            assert_eq!(current.files[0].state, FileState::Clean);
        }
    }

    #[test]
    fn a_fully_matched_file_becomes_clean_and_severity_filters_gone() {
        let json = r#"{"files":[{"path":"a b.py","diagnostics":[
            {"severity":"error","message":"m1","source":"Pyright","code":"reportX"},
            {"severity":"hint","message":"h","source":"Pyright","code":"reportX"}]}]}"#;
        let baseline = Baseline::parse(json).unwrap();
        let mut current = report(vec![diagnostic(
            "/nonexistent-root/a b.py",
            1,
            Severity::Error,
            "m1",
        )]);
        let counts = baseline.apply(&mut current, ReportFrom::AtLeast(Severity::Warning));
        assert_eq!(
            counts,
            BaselineCounts {
                n_matched: 1,
                n_gone: 0
            }
        );
        assert_eq!(current.files[0].state, FileState::Clean);
    }

    #[test]
    fn bad_baselines_name_the_problem() {
        let check = |text: &str, expected: &str| {
            assert_eq!(Baseline::parse(text).unwrap_err(), expected, "{text}");
        };
        check(
            "[1]",
            "expected an object with \"files\" (json) or \"runs\" (sarif)",
        );
        check("{\"files\": 3}", "\"files\": expected an array");
        check(
            "{\"files\": [{\"path\": \"a\"}]}",
            "files[0].diagnostics: expected an array",
        );
        check(
            "{\"files\": [{\"path\": \"a\", \"diagnostics\": [{\"severity\": \"bad\", \"message\": \"m\"}]}]}",
            "files[0].diagnostics[0].severity: unknown severity \"bad\"",
        );
        check(
            "{\"files\": [{\"path\": 1, \"diagnostics\": []}]}",
            "files[0].path: expected a string, got 1",
        );
        check(
            "{\"runs\": [{\"results\": [{\"message\": {\"text\": \"m\"}}]}]}",
            "runs[0].results[0].locations[0]: no artifactLocation.uri",
        );
        assert!(Baseline::parse("not json")
            .unwrap_err()
            .starts_with("not a JSON document: "));
    }
}
