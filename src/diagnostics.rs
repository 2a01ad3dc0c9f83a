//! Diagnostics: the normalised model lspc reports, per-server stores, merge, dedup, order, caps,
//! and the passive (one-time) delivery registry used by the MCP side.
//!
//! Invariants:
//! - A [`Diagnostic`] always carries 1-based lines and 1-based columns counted in Unicode
//!   characters (scalar values). Conversion from the server's encoding happens once, in
//!   [`normalize`], through a converter the engine supplies.
//! - [`DiagnosticStore`] follows LSP 3.17 §`textDocument/publishDiagnostics`: a publish replaces
//!   the previous set of *that server* for *that file*; other servers' sets are untouched (B17).
//! - Every list this module returns is ordered by [`sort`]: severity (errors first), then start
//!   line, start column, end position and message, so output is deterministic.
//! - [`PassiveRegistry`] never delivers the same identity twice for a file until the file is reset,
//!   and never replays a drained entry.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// LSP `DiagnosticSeverity` (spec 3.17 §`Diagnostic`): 1 Error, 2 Warning, 3 Information, 4 Hint.
/// A publish with no severity is treated as Error, as VS Code does. The derived order puts the
/// most severe first (`Error < Warning < Information < Hint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Severity {
    Error = 1,
    Warning = 2,
    Information = 3,
    Hint = 4,
}

impl Severity {
    /// Every severity, most severe first.
    pub const ALL: [Severity; 4] = [
        Severity::Error,
        Severity::Warning,
        Severity::Information,
        Severity::Hint,
    ];

    /// Maps the LSP wire value. A missing severity is Error (clients "interpret" it, LSP 3.17
    /// §`Diagnostic.severity`; VS Code and Neovim pick Error). Values outside 1..=4 (server bugs)
    /// are also treated as Error so they are never hidden by a `--severity` filter.
    pub fn from_lsp(severity: Option<lsp_types::DiagnosticSeverity>) -> Severity {
        match severity {
            Some(lsp_types::DiagnosticSeverity::WARNING) => Severity::Warning,
            Some(lsp_types::DiagnosticSeverity::INFORMATION) => Severity::Information,
            Some(lsp_types::DiagnosticSeverity::HINT) => Severity::Hint,
            Some(lsp_types::DiagnosticSeverity::ERROR) | None => Severity::Error,
            Some(other) => {
                log::debug!("unknown diagnostic severity {other:?}, treating it as error");
                Severity::Error
            }
        }
    }

    /// The word lspc prints: `"error"`, `"warning"`, `"info"` or `"hint"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }

    /// True when `self` is at least as severe as `minimum` (for `--severity warning`, errors and
    /// warnings pass).
    pub fn is_at_least(self, minimum: Severity) -> bool {
        self <= minimum
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--severity` word that is not one of `error`, `warning`, `info`/`information`, `hint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseSeverityError {
    pub input: String,
}

impl fmt::Display for ParseSeverityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown severity `{}` (expected error, warning, info or hint)",
            self.input
        )
    }
}

impl std::error::Error for ParseSeverityError {}

impl FromStr for Severity {
    type Err = ParseSeverityError;

    /// Accepts `error`, `warning`, `info`, `information`, `hint`, ASCII case-insensitively.
    fn from_str(input: &str) -> Result<Severity, ParseSeverityError> {
        match input.to_ascii_lowercase().as_str() {
            "error" => Ok(Severity::Error),
            "warning" => Ok(Severity::Warning),
            "info" | "information" => Ok(Severity::Information),
            "hint" => Ok(Severity::Hint),
            _ => Err(ParseSeverityError {
                input: input.to_string(),
            }),
        }
    }
}

/// One diagnostic as lspc reports it: positions are 1-based lines and 1-based columns counted
/// in Unicode characters (scalar values), already converted from the server's encoding.
/// The end position is exclusive, as in LSP.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Canonical absolute path of the file.
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub severity: Severity,
    pub message: String,
    /// The diagnostic's `source` (`"Pyright"`, `"clang"`), if the server sent one.
    pub source: Option<String>,
    /// The diagnostic's `code` rendered as a string (numbers are stringified).
    pub code: Option<String>,
    /// Name of the server that published it.
    pub server: String,
}

/// Converts one LSP diagnostic (LSP 3.17 §`Diagnostic`) into lspc's model.
///
/// `to_char` maps an LSP position (0-based line, 0-based offset in the negotiated encoding) to a
/// 1-based `(line, column)` where the column counts Unicode characters; the engine builds it from
/// the document text and the negotiated `positionEncoding`. The message keeps its text but loses
/// trailing whitespace and newlines; an empty `source` or `code` becomes `None`; numeric codes are
/// stringified.
pub fn normalize(
    server: &str,
    path: &Path,
    raw: &lsp_types::Diagnostic,
    to_char: impl Fn(lsp_types::Position) -> (u32, u32),
) -> Diagnostic {
    let (line, column) = to_char(raw.range.start);
    let (end_line, end_column) = to_char(raw.range.end);
    let code = match &raw.code {
        Some(lsp_types::NumberOrString::Number(number)) => Some(number.to_string()),
        Some(lsp_types::NumberOrString::String(text)) if !text.trim().is_empty() => {
            Some(text.clone())
        }
        _ => None,
    };
    let source = raw
        .source
        .as_ref()
        .filter(|source| !source.trim().is_empty())
        .cloned();
    Diagnostic {
        path: path.to_path_buf(),
        line,
        column,
        end_line,
        end_column,
        severity: Severity::from_lsp(raw.severity),
        message: raw.message.trim_end().to_string(),
        source,
        code,
        server: server.to_string(),
    }
}

/// A `textDocument/publishDiagnostics` notification whose params do not have the shape LSP 3.17
/// §`PublishDiagnosticsParams` requires (the whole publish is then ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    /// `params` is not a JSON object.
    NotAnObject,
    /// `uri` is missing or not a non-empty string.
    MissingUri,
    /// `diagnostics` is missing or not an array.
    MissingDiagnostics { uri: String },
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::NotAnObject => f.write_str("publishDiagnostics params are not an object"),
            ShapeError::MissingUri => f.write_str("publishDiagnostics params have no string uri"),
            ShapeError::MissingDiagnostics { uri } => {
                write!(f, "publishDiagnostics for {uri} has no diagnostics array")
            }
        }
    }
}

impl std::error::Error for ShapeError {}

/// Parses `textDocument/publishDiagnostics` params (LSP 3.17 §`PublishDiagnosticsParams`)
/// leniently: returns `(uri, version, diagnostics)`.
///
/// - Extra fields anywhere are ignored.
/// - `version` missing, `null` or not an `i32` gives `None` (the last case is logged).
/// - A single malformed diagnostic element is skipped and logged, not the whole publish.
/// - A `message` sent as `MarkupContent` (`{kind, value}`, LSP 3.18) is reduced to its `value`.
///
/// Errors: params not an object, `uri` not a non-empty string, `diagnostics` not an array.
pub fn parse_publish(
    params: &serde_json::Value,
) -> Result<(String, Option<i32>, Vec<lsp_types::Diagnostic>), ShapeError> {
    let object = params.as_object().ok_or(ShapeError::NotAnObject)?;
    let uri = match object.get("uri").and_then(|uri| uri.as_str()) {
        Some(uri) if !uri.is_empty() => uri.to_string(),
        _ => return Err(ShapeError::MissingUri),
    };
    let elements = object
        .get("diagnostics")
        .and_then(|diagnostics| diagnostics.as_array())
        .ok_or_else(|| ShapeError::MissingDiagnostics { uri: uri.clone() })?;
    let version = match object.get("version") {
        None | Some(serde_json::Value::Null) => None,
        Some(value) => match value.as_i64().and_then(|v| i32::try_from(v).ok()) {
            Some(version) => Some(version),
            None => {
                log::warn!("publishDiagnostics for {uri}: ignoring unusable version {value}");
                None
            }
        },
    };
    let mut diagnostics = Vec::with_capacity(elements.len());
    for (index, element) in elements.iter().enumerate() {
        let mut element = element.clone();
        if let Some(message) = element.get_mut("message") {
            if let Some(value) = message.get("value").and_then(|v| v.as_str()) {
                *message = serde_json::Value::String(value.to_string());
            }
        }
        match serde_json::from_value::<lsp_types::Diagnostic>(element) {
            Ok(diagnostic) => diagnostics.push(diagnostic),
            Err(error) => {
                log::warn!("publishDiagnostics for {uri}: skipping diagnostic #{index}: {error}")
            }
        }
    }
    Ok((uri, version, diagnostics))
}

/// The report order: severity (errors first), then start line, start column, end line, end
/// column, message; ties are broken by source, code and server so the order is total.
pub fn compare(a: &Diagnostic, b: &Diagnostic) -> Ordering {
    (a.severity, a.line, a.column, a.end_line, a.end_column)
        .cmp(&(b.severity, b.line, b.column, b.end_line, b.end_column))
        .then_with(|| a.message.cmp(&b.message))
        .then_with(|| a.source.cmp(&b.source))
        .then_with(|| a.code.cmp(&b.code))
        .then_with(|| a.server.cmp(&b.server))
}

/// Sorts in report order (see [`compare`]).
pub fn sort(diags: &mut [Diagnostic]) {
    crate::sorting::sort_by(diags, compare);
}

/// The suffixes clangd appends to a message when it has a fix for the diagnostic (its
/// `DisplayFixesCount`, on by default and not negotiable over LSP).
const FIX_COUNT_SUFFIXES: [&str; 2] = [" (fix available)", " (fixes available)"];

/// `message` as two runs compare it (new diagnostics after an edit, `--baseline`): without
/// clangd's ` (fix available)` / ` (fixes available)` suffix, and without rustc's lint-level
/// lines ([`is_lint_level_line`]). Whether clangd has a fix can change with nothing edited: its
/// include fixer ("Unknown type name 'uint32_t'" → include `<stdint.h>`) needs the background
/// index, which loads after the first publish, so the same finding comes back as `Unknown type
/// name 'uint32_t' (fix available)` and would count as new. rustc says which lint level applies
/// only on the first diagnostic of each lint in a crate, and rust-analyzer appends that note to
/// the message (`unused variable: `b`` + "\n`#[warn(unused_variables)]` (part of
/// `#[warn(unused)]`) on by default"): fixing the first unused variable moves the note to the
/// next one, which would count as new. Reports keep the message as the server sent it.
pub fn comparison_message(message: &str) -> Cow<'_, str> {
    let message = FIX_COUNT_SUFFIXES
        .iter()
        .find_map(|suffix| message.strip_suffix(suffix))
        .unwrap_or(message);
    if !message.lines().skip(1).any(is_lint_level_line) {
        return Cow::Borrowed(message);
    }
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default();
    let kept = std::iter::once(first).chain(lines.filter(|line| !is_lint_level_line(line)));
    Cow::Owned(kept.collect::<Vec<_>>().join("\n"))
}

/// Whether a continuation line of a message is one of the notes rustc attaches to the first
/// diagnostic of a lint only (its `lint_level` explanation): "`#[warn(dead_code)]` on by
/// default", "`#[warn(unused_variables)]` (part of `#[warn(unused)]`) on by default",
/// "`-D unused-variables` implied by `-D warnings`", "`#[deny(x)]` implied by `#[deny(y)]`" and
/// the help "to override `-D warnings` add `#[allow(unused_variables)]`".
fn is_lint_level_line(line: &str) -> bool {
    let line = line.trim();
    let names_a_level = line.starts_with("`#[") || line.starts_with("`-");
    (names_a_level && (line.ends_with(" on by default") || line.contains("` implied by `")))
        || (line.starts_with("to override `") && line.contains("` add `#[allow("))
}

/// What makes two diagnostics from *different* servers the same finding: range, severity,
/// message and code. `source` and `server` are ignored (pyright says "Pyright", basedpyright says
/// "basedpyright" for the same error).
type CrossServerKey = (u32, u32, u32, u32, Severity, String, Option<String>);

fn cross_server_key(diagnostic: &Diagnostic) -> CrossServerKey {
    (
        diagnostic.line,
        diagnostic.column,
        diagnostic.end_line,
        diagnostic.end_column,
        diagnostic.severity,
        diagnostic.message.clone(),
        diagnostic.code.clone(),
    )
}

/// Where a server's set for a file came from: a `textDocument/publishDiagnostics` push, or the
/// answer to a `textDocument/diagnostic` pull (LSP 3.17 §`DocumentDiagnosticReport`). A server
/// may do both for one file (rust-analyzer: native diagnostics are pulled, `cargo check`'s are
/// pushed), and the two sets are kept apart: neither replaces the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    Published,
    Pulled,
}

/// One server's sets for one file, by [`Origin`]; `None` until that origin reported.
#[derive(Debug, Default, Clone)]
struct ServerSets {
    published: Option<Vec<Diagnostic>>,
    pulled: Option<Vec<Diagnostic>>,
}

impl ServerSets {
    fn slot(&mut self, origin: Origin) -> &mut Option<Vec<Diagnostic>> {
        match origin {
            Origin::Published => &mut self.published,
            Origin::Pulled => &mut self.pulled,
        }
    }

    /// Both sets, pulled first. A pulled diagnostic the published set repeats under another
    /// source ([`repeats`]) is left out: rust-analyzer pulls its own `E0308` and pushes rustc's
    /// for the same expression from `cargo check`, which counts it once (the pushed copy,
    /// rustc's words, is kept).
    fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        let published = self.published.as_deref().unwrap_or_default();
        self.pulled
            .iter()
            .flatten()
            .filter(move |pulled| {
                !published.iter().any(|pushed| repeats(pushed, pulled))
                    && !inside_a_pushed_error(published, pulled)
            })
            .chain(published)
    }
}

/// Whether the Rust files `a` and `b` belong to one crate, as far as their paths tell: the same
/// package (nearest `Cargo.toml`) and the same target folder (`src`, or `tests`, `examples`,
/// `benches`, … whose files are crates of their own). `None` when either is in no package.
/// An approximation: a package's library and binaries under `src/` count as one crate.
fn same_crate(a: &Path, b: &Path) -> Option<bool> {
    let place = |file: &Path| -> Option<(PathBuf, Option<std::ffi::OsString>)> {
        let package = file
            .ancestors()
            .skip(1)
            .find(|folder| folder.join("Cargo.toml").is_file())?;
        let target = file
            .strip_prefix(package)
            .ok()?
            .components()
            .next()
            .map(|component| component.as_os_str().to_os_string());
        Some((package.to_path_buf(), target))
    };
    Some(place(a)? == place(b)?)
}

/// Whether `pulled`, an error, starts inside the span of a pushed error of another code, under
/// another source, or of one of that error's notes (a pushed diagnostic of its source and
/// code): rust-analyzer puts its `E0107` for a call missing an argument at the closing `)`,
/// rustc its `E0061` at the callee and its note "argument #2 of type `u32` is missing" over the
/// arguments, which may span lines (a trial: `two(` / `1,` / `)` counted two errors, `cargo
/// check` one).
fn inside_a_pushed_error(published: &[Diagnostic], pulled: &Diagnostic) -> bool {
    let start = (pulled.line, pulled.column);
    let covers = |span: &Diagnostic| {
        (span.line, span.column) <= start && start < (span.end_line, span.end_column)
    };
    pulled.severity == Severity::Error
        && published.iter().any(|error| {
            error.severity == Severity::Error
                && error.code.is_some()
                // The same code inside another error's span is another finding (helper-46: a
                // macro's E0308 inside a closure's E0308).
                && error.code != pulled.code
                && error.source != pulled.source
                && published.iter().any(|span| {
                    span.source == error.source && span.code == error.code && covers(span)
                })
        })
}

/// Whether `pushed` reports what `pulled` reports under another source: the same range and the
/// same code and at least the severity (a diagnostic without a code repeats nothing), or both
/// are errors that start on the same line. rust-analyzer's own analysis names some errors
/// differently from rustc: a missing argument is its `E0107` at the argument list's end where
/// rustc says `E0061` at the callee, a missing `;` its `syntax-error` where rustc gives no
/// code; `cargo check` counts one error on the line.
fn repeats(pushed: &Diagnostic, pulled: &Diagnostic) -> bool {
    let range = |d: &Diagnostic| (d.line, d.column, d.end_line, d.end_column);
    // Never a pulled error for a pushed hint: that would make a file look clean.
    let same_finding = pulled.code.is_some()
        && range(pushed) == range(pulled)
        && pushed.code == pulled.code
        && pushed.severity <= pulled.severity;
    let errors_on_one_line = pushed.severity == Severity::Error
        && pulled.severity == Severity::Error
        && pushed.line == pulled.line;
    pushed.source != pulled.source && (same_finding || errors_on_one_line)
}

/// Which server reported a set: its configured name and which of its instances, the engine's
/// server slot number (a server runs one instance per project root with `rootMarkers`). Two
/// instances' sets are kept apart as two servers' are: an instance that publishes an empty set
/// for a file another instance found errors in does not clean it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reporter<'a> {
    pub name: &'a str,
    pub instance: u32,
}

impl Reporter<'_> {
    pub fn new(name: &str, instance: u32) -> Reporter<'_> {
        Reporter { name, instance }
    }
}

/// The server instances that reported for one file, sorted by (name, instance). A sorted `Vec`,
/// not a `BTreeMap`: a file has one or two, and a map's first node (about 800 bytes) was the
/// store's largest cost per checked file (issue 15, `valgrind --tool=massif` over 1,000 ruff
/// files).
#[derive(Debug, Default, Clone)]
struct FileServers(Vec<(String, u32, ServerSets)>);

impl FileServers {
    fn position(&self, reporter: Reporter) -> Result<usize, usize> {
        self.0.binary_search_by(|(name, instance, _)| {
            (name.as_str(), *instance).cmp(&(reporter.name, reporter.instance))
        })
    }

    fn contains_key(&self, reporter: Reporter) -> bool {
        self.position(reporter).is_ok()
    }

    fn has_name(&self, name: &str) -> bool {
        self.0.iter().any(|(have, _, _)| have == name)
    }

    /// `reporter`'s sets, inserted empty when it had none.
    fn entry(&mut self, reporter: Reporter) -> &mut ServerSets {
        let index = match self.position(reporter) {
            Ok(index) => index,
            Err(index) => {
                self.0.insert(
                    index,
                    (
                        reporter.name.to_string(),
                        reporter.instance,
                        ServerSets::default(),
                    ),
                );
                index
            }
        };
        &mut self.0[index].2
    }

    /// Forgets every instance of the server `name`.
    fn remove_name(&mut self, name: &str) {
        self.0.retain(|(have, _, _)| have != name);
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, sorted, each once.
    fn names(&self) -> impl Iterator<Item = &str> {
        let mut last: Option<&str> = None;
        self.0.iter().filter_map(move |(name, _, _)| {
            let fresh = last != Some(name.as_str());
            last = Some(name.as_str());
            fresh.then_some(name.as_str())
        })
    }

    /// Every set of every instance of the server `name`.
    fn sets_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a ServerSets> {
        self.0
            .iter()
            .filter(move |(have, _, _)| have == name)
            .map(|(_, _, sets)| sets)
    }
}

/// The latest set per (server instance, file, [`Origin`]), following LSP 3.17
/// §`textDocument/publishDiagnostics`: each publish replaces only that server's published set for
/// that file, and each full pull answer only its pulled set; a server's diagnostics for the file
/// are the union of the two, and of its instances' sets.
///
/// An empty publish is kept as an empty set, so [`DiagnosticStore::has_published`] can tell
/// "server said clean" from "server said nothing" (B14).
#[derive(Debug, Default, Clone)]
pub struct DiagnosticStore {
    /// file -> server instance -> latest sets.
    by_file: BTreeMap<PathBuf, FileServers>,
}

impl DiagnosticStore {
    pub fn new() -> DiagnosticStore {
        DiagnosticStore::default()
    }

    /// Replaces `reporter`'s published set for `path` with `diags` (which may be empty).
    pub fn replace(&mut self, reporter: Reporter, path: &Path, diags: Vec<Diagnostic>) {
        self.replace_from(reporter, path, Origin::Published, diags);
    }

    /// Replaces `reporter`'s set of `origin` for `path` with `diags` (which may be empty); its
    /// set of the other origin, and every other instance's sets, are kept.
    pub fn replace_from(
        &mut self,
        reporter: Reporter,
        path: &Path,
        origin: Origin,
        diags: Vec<Diagnostic>,
    ) {
        *self
            .by_file
            .entry(path.to_path_buf())
            .or_default()
            .entry(reporter)
            .slot(origin) = Some(diags);
    }

    /// Forgets everything any instance of `server` published or was pulled for (it exited or
    /// was restarted).
    pub fn clear_server(&mut self, server: &str) {
        self.by_file.retain(|_, servers| {
            servers.remove_name(server);
            !servers.is_empty()
        });
    }

    /// Forgets every server's sets for `path` (the document was closed or changed).
    pub fn clear_file(&mut self, path: &Path) {
        self.by_file.remove(path);
    }

    /// True when `reporter` has reported for `path` (possibly an empty set, by either origin)
    /// since the last clear.
    pub fn has_published(&self, reporter: Reporter, path: &Path) -> bool {
        self.by_file
            .get(path)
            .is_some_and(|servers| servers.contains_key(reporter))
    }

    /// The server `name`'s diagnostics for `path`, if any of its instances reported: each
    /// instance's pulled set followed by its published set, in instance order, unsorted, with
    /// only a diagnostic another instance already gave (fully identical) left out.
    pub fn get(&self, name: &str, path: &Path) -> Option<Vec<Diagnostic>> {
        let servers = self.by_file.get(path)?;
        if !servers.has_name(name) {
            return None;
        }
        let mut seen: HashSet<&Diagnostic> = HashSet::new();
        Some(
            servers
                .sets_of(name)
                .flat_map(ServerSets::iter)
                .filter(|diagnostic| seen.insert(diagnostic))
                .cloned()
                .collect(),
        )
    }

    /// The union of every server's sets for `path`, in report order.
    ///
    /// Servers are visited in `server_order` (highest precedence first; a name listed twice,
    /// as two instances of one server are, counts once), then any other server that reported
    /// for the file, by name. Duplicates across servers (same range, severity,
    /// message and code; source and server ignored) keep the first, highest-precedence copy;
    /// within one server (both origins of all its instances together) only fully identical
    /// diagnostics collapse.
    pub fn merged(&self, path: &Path, server_order: &[&str]) -> Vec<Diagnostic> {
        let Some(servers) = self.by_file.get(path) else {
            return Vec::new();
        };
        let mut visited_names: HashSet<&str> = HashSet::new();
        let visit: Vec<&str> = server_order
            .iter()
            .copied()
            .filter(|name| servers.has_name(name))
            .chain(servers.names())
            .filter(|name| visited_names.insert(name))
            .collect();
        // First server that contributed each cross-server key.
        let mut owner_of_key: HashMap<CrossServerKey, &str> = HashMap::new();
        let mut merged = Vec::new();
        for name in visit {
            let mut seen_here: HashSet<&Diagnostic> = HashSet::new();
            for diagnostic in servers.sets_of(name).flat_map(ServerSets::iter) {
                if !seen_here.insert(diagnostic) {
                    continue;
                }
                let owner = *owner_of_key
                    .entry(cross_server_key(diagnostic))
                    .or_insert(name);
                if owner == name {
                    let mut diagnostic = diagnostic.clone();
                    if self.is_macro_call_site(name, path, &diagnostic) {
                        diagnostic.severity = Severity::Error;
                    }
                    merged.push(diagnostic);
                }
            }
        }
        sort(&mut merged);
        merged
    }

    /// Whether `hint`, which server `name` reported for `path`, marks where a macro defined
    /// elsewhere was called for an error rustc found in its expansion: rust-analyzer publishes
    /// rustc's error at the macro's definition and, at each call site, a hint with the same code
    /// and message. `cargo check` reports the error at the call site, so that file fails; as a
    /// hint it was hidden and the file clean (a new user's trial on dtolnay/anyhow: `lspc check
    /// tests/` passed where `cargo check --tests` failed). Only rustc's (source `rustc`) hints
    /// with a code are looked at.
    ///
    /// Only for a macro of another crate: `cargo check` reports an error in a macro of the same
    /// crate at its definition only (helper-46: a hint in `src/user.rs` made an error, for a
    /// macro in `src/mac.rs`). Not when the hint may belong to a warning (a rustc diagnostic of
    /// another severity with the same code and message anywhere: `unused variable: x` denied in
    /// one crate and warned in another), nor when an error with its code already starts on the
    /// hint's line (rust-analyzer's own at the call site, the same finding): trials counted such
    /// errors twice.
    fn is_macro_call_site(&self, name: &str, path: &Path, hint: &Diagnostic) -> bool {
        if hint.severity != Severity::Hint
            || hint.code.is_none()
            || hint.source.as_deref() != Some("rustc")
        {
            return false;
        }
        let same_finding = |other: &Diagnostic| {
            other.source == hint.source && other.code == hint.code && other.message == hint.message
        };
        let mut error_elsewhere = false;
        for (file, servers) in &self.by_file {
            for sets in servers.sets_of(name) {
                for other in sets.published.iter().flatten() {
                    let here =
                        file == path && (other.line, other.column) == (hint.line, hint.column);
                    match other.severity {
                        Severity::Error
                            if same_finding(other)
                                && !here
                                && !same_crate(file, path).unwrap_or(true) =>
                        {
                            error_elsewhere = true
                        }
                        Severity::Warning | Severity::Information if same_finding(other) => {
                            return false
                        }
                        _ => {}
                    }
                }
                if file == path
                    && sets.iter().any(|other| {
                        other.severity == Severity::Error
                            && other.line == hint.line
                            && other.code == hint.code
                    })
                {
                    return false;
                }
            }
        }
        error_elsewhere
    }

    /// Every file some server has reported for (possibly an empty set), in path order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.by_file.keys().map(PathBuf::as_path)
    }
}

/// Applies `--max-per-file` then `--max-total` to files whose lists are already in report order.
///
/// The per-file cap truncates each list. The total cap then keeps the most severe diagnostics
/// across files: every kept error comes before any kept warning, and within one severity files
/// earlier in `files` win (stable). Returns how many diagnostics each file lost, index-aligned with
/// `files`.
pub fn apply_caps(
    files: &mut [(PathBuf, Vec<Diagnostic>)],
    max_per_file: Option<usize>,
    max_total: Option<usize>,
) -> Vec<usize> {
    let mut omitted = vec![0; files.len()];
    if let Some(cap) = max_per_file {
        for ((_, diags), omitted) in files.iter_mut().zip(omitted.iter_mut()) {
            if diags.len() > cap {
                *omitted += diags.len() - cap;
                diags.truncate(cap);
            }
        }
    }
    if let Some(cap) = max_total {
        // (severity, file index, position): sorting by this tuple is "most severe first, stable by
        // file order", so the first `cap` entries are the ones to keep.
        let mut ranked: Vec<(Severity, usize, usize)> = files
            .iter()
            .enumerate()
            .flat_map(|(file_index, (_, diags))| {
                diags
                    .iter()
                    .enumerate()
                    .map(move |(position, d)| (d.severity, file_index, position))
            })
            .collect();
        if ranked.len() > cap {
            crate::sorting::sort(&mut ranked);
            let mut keep_counts = vec![0usize; files.len()];
            for &(_, file_index, _) in &ranked[..cap] {
                keep_counts[file_index] += 1;
            }
            // Each list is in report order (severity first), so what is kept is a prefix.
            for (file_index, (_, diags)) in files.iter_mut().enumerate() {
                let keep = keep_counts[file_index];
                omitted[file_index] += diags.len() - keep;
                diags.truncate(keep);
            }
        }
    }
    omitted
}

/// Passive delivery: at most this many diagnostics per file in one drained batch.
pub const MAX_PER_FILE: usize = 10;
/// Passive delivery: at most this many diagnostics in total in one drained batch.
pub const MAX_TOTAL: usize = 30;
/// Passive delivery: delivered identities are remembered for at most this many files (LRU).
pub const MAX_DELIVERED_FILES: usize = 500;

/// What [`PassiveRegistry`] considers "the same diagnostic already delivered": message, severity,
/// range and code, as [`DiagnosticStore::merged`] compares across servers. Seed 000 also keys on
/// `source`, but lspc merges several servers per file: two servers reporting one issue under their
/// own sources must reach the agent once (case B17), as they do in `lspc check`.
type DeliveryIdentity = CrossServerKey;

fn delivery_identity(diagnostic: &Diagnostic) -> DeliveryIdentity {
    cross_server_key(diagnostic)
}

/// One batch handed to the agent by [`PassiveRegistry::drain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainedBatch {
    /// Servers that contributed at least one delivered diagnostic, in registration order.
    pub servers: Vec<String>,
    /// Files in first-registration order, each list in report order, capped.
    pub files: Vec<(PathBuf, Vec<Diagnostic>)>,
    /// How many new diagnostics the caps dropped from this batch.
    pub n_more: usize,
    /// Files reported clean since the last drain after findings of theirs were delivered: a
    /// settled answer has none, so everything delivered for them is gone (fixed by an edit, or
    /// by an edit of another file). In path order; none of them is in `files`.
    #[serde(default)]
    pub cleared: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
struct PendingEntry {
    server: String,
    path: PathBuf,
    diags: Vec<Diagnostic>,
}

/// Pending-then-delivered registry for diagnostics pushed to an agent without being asked
/// (modelled on Claude Code's plugin-LSP registry, seed 000 "Passive diagnostic delivery").
///
/// - [`register`](Self::register) queues a server's latest non-empty set for a file; a later
///   publish from the same server for the same file replaces the queued set (LSP replace
///   semantics), and an empty publish only withdraws it.
/// - [`drain`](Self::drain) delivers everything queued once: deduplicated within the batch and
///   against identities already delivered for the file, sorted, at most [`MAX_PER_FILE`] per file
///   and [`MAX_TOTAL`] in total. Queued entries are removed whether delivered or capped: nothing is
///   replayed. Only delivered identities are remembered, so a capped diagnostic is delivered when a
///   later publish repeats it.
/// - [`mark_shown`](Self::mark_shown) records a file's whole current set as delivered when a
///   tool has just shown it in full, so none of it comes again as new, and none of its queued
///   diagnostics count in a later drain's caps or [`DrainedBatch::n_more`].
/// - [`settled`](Self::settled) hears a file's settled set: delivered identities it no longer
///   has are forgotten (fixed, so each is new again if it comes back: a new user's agent on
///   go-chi/chi broke, fixed and broke a package again, and the third drain said "no new
///   diagnostics"), and a file whose delivered findings are all gone is reported
///   [`DrainedBatch::cleared`] once.
/// - Delivered identities are remembered for the [`MAX_DELIVERED_FILES`] most recently delivered
///   files.
#[derive(Debug, Default, Clone)]
pub struct PassiveRegistry {
    pending: Vec<PendingEntry>,
    delivered: HashMap<PathBuf, Delivered>,
    /// Files found clean by [`Self::settled`] after findings of theirs were delivered.
    cleared: std::collections::BTreeSet<PathBuf>,
    tick: u64,
}

/// What [`PassiveRegistry`] remembers of one file.
#[derive(Debug, Default, Clone)]
struct Delivered {
    /// Last use, for the LRU bound.
    tick: u64,
    identities: HashSet<DeliveryIdentity>,
    /// The agent was told of findings here and has not yet been told they are gone (kept
    /// across [`PassiveRegistry::reset_file`]: an edit that fixed the file is reported too).
    reported: bool,
}

impl PassiveRegistry {
    pub fn new() -> PassiveRegistry {
        PassiveRegistry::default()
    }

    /// Queues `server`'s latest set for `path`. An empty set registers nothing (it only withdraws a
    /// queued, not yet drained set from the same server for the file, which it supersedes).
    pub fn register(&mut self, server: &str, path: &Path, diags: Vec<Diagnostic>) {
        self.pending
            .retain(|entry| !(entry.server == server && entry.path == path));
        if diags.is_empty() {
            return;
        }
        self.pending.push(PendingEntry {
            server: server.to_string(),
            path: path.to_path_buf(),
            diags,
        });
    }

    /// True when something is queued.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Delivers every queued entry once (see the type doc). `None` when nothing new remains after
    /// deduplication; the queue is emptied either way.
    pub fn drain(&mut self) -> Option<DrainedBatch> {
        let pending = std::mem::take(&mut self.pending);
        let mut registration_order: Vec<String> = Vec::new();
        for entry in &pending {
            if !registration_order.contains(&entry.server) {
                registration_order.push(entry.server.clone());
            }
        }
        let mut file_order: Vec<PathBuf> = Vec::new();
        let mut by_file: HashMap<PathBuf, Vec<Diagnostic>> = HashMap::new();
        let mut batch_seen: HashSet<(PathBuf, DeliveryIdentity)> = HashSet::new();
        for entry in pending {
            let delivered = self
                .delivered
                .get(&entry.path)
                .map(|delivered| &delivered.identities);
            for diagnostic in entry.diags {
                let identity = delivery_identity(&diagnostic);
                if delivered.is_some_and(|set| set.contains(&identity)) {
                    continue;
                }
                if !batch_seen.insert((entry.path.clone(), identity)) {
                    continue;
                }
                by_file
                    .entry(entry.path.clone())
                    .or_insert_with(|| {
                        file_order.push(entry.path.clone());
                        Vec::new()
                    })
                    .push(diagnostic);
            }
        }
        let cleared: Vec<PathBuf> = std::mem::take(&mut self.cleared)
            .into_iter()
            .filter(|path| !by_file.contains_key(path))
            .collect();
        if file_order.is_empty() && cleared.is_empty() {
            return None;
        }
        let mut files: Vec<(PathBuf, Vec<Diagnostic>)> = file_order
            .into_iter()
            .map(|path| {
                let mut diags = by_file.remove(&path).unwrap_or_default();
                sort(&mut diags);
                (path, diags)
            })
            .collect();
        let n_more = apply_caps(&mut files, Some(MAX_PER_FILE), Some(MAX_TOTAL))
            .iter()
            .sum();
        files.retain(|(_, diags)| !diags.is_empty());
        let mut contributing: HashSet<&str> = HashSet::new();
        for (path, diags) in &files {
            self.tick += 1;
            let delivered = self.delivered.entry(path.clone()).or_default();
            delivered.tick = self.tick;
            delivered.reported = true;
            for diagnostic in diags {
                delivered.identities.insert(delivery_identity(diagnostic));
                contributing.insert(diagnostic.server.as_str());
            }
        }
        let servers = registration_order
            .iter()
            .filter(|name| contributing.contains(name.as_str()))
            .cloned()
            .collect();
        self.evict_delivered();
        Some(DrainedBatch {
            servers,
            files,
            n_more,
            cleared,
        })
    }

    /// `current`, `path`'s whole set (every server's, merged) in a settled answer: delivered
    /// identities not in it are forgotten, and a file the agent was told of findings in that
    /// now has none is [`DrainedBatch::cleared`] at the next drain. Not for a set that may be
    /// partial (a timed-out wait, a server's first publish of several): a finding forgotten
    /// while still there would be delivered twice.
    pub fn settled(&mut self, path: &Path, current: &[Diagnostic]) {
        let Some(delivered) = self.delivered.get_mut(path) else {
            return;
        };
        if current.is_empty() {
            delivered.identities.clear();
            if std::mem::take(&mut delivered.reported) {
                self.cleared.insert(path.to_path_buf());
            }
            return;
        }
        self.cleared.remove(path);
        let present: HashSet<DeliveryIdentity> = current.iter().map(delivery_identity).collect();
        delivered
            .identities
            .retain(|identity| present.contains(identity));
    }

    /// `diags`, the whole current set of `path`, were just shown in full (the MCP `diagnostics`
    /// tool with a file): each counts as delivered, queued or not, so the next
    /// [`drain`](Self::drain) neither delivers nor counts them, and a later publish repeating one
    /// does not bring it back as new.
    /// The agent saw the file's whole set, so it knows the file is clean when `diags` is empty
    /// (it is not [`DrainedBatch::cleared`] later).
    pub fn mark_shown(&mut self, path: &Path, diags: &[Diagnostic]) {
        self.tick += 1;
        let delivered = self.delivered.entry(path.to_path_buf()).or_default();
        delivered.tick = self.tick;
        delivered
            .identities
            .extend(diags.iter().map(delivery_identity));
        delivered.reported = !diags.is_empty();
        self.cleared.remove(path);
        self.evict_delivered();
    }

    /// After `path` was edited: forgets what was delivered for it (so diagnostics that reappear are
    /// delivered again) and drops its queued sets (they describe the old content). Whether the
    /// agent was told of findings there stays, so a fix is reported as
    /// [`DrainedBatch::cleared`].
    pub fn reset_file(&mut self, path: &Path) {
        if let Some(delivered) = self.delivered.get_mut(path) {
            delivered.identities.clear();
        }
        self.pending.retain(|entry| entry.path != path);
    }

    /// New session: forgets everything queued and delivered.
    pub fn reset_all(&mut self) {
        self.pending.clear();
        self.delivered.clear();
        self.cleared.clear();
    }

    /// How many files currently have remembered delivered identities (at most
    /// [`MAX_DELIVERED_FILES`]).
    pub fn delivered_file_count(&self) -> usize {
        self.delivered.len()
    }

    fn evict_delivered(&mut self) {
        while self.delivered.len() > MAX_DELIVERED_FILES {
            let oldest = self
                .delivered
                .iter()
                .min_by_key(|(_, delivered)| delivered.tick)
                .map(|(path, _)| path.clone());
            match oldest {
                Some(path) => {
                    self.delivered.remove(&path);
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Builds a diagnostic from a compact spec; `sev` is 'E', 'W', 'I' or 'H'.
    #[allow(clippy::too_many_arguments)]
    fn dg(
        server: &str,
        file: &str,
        line: u32,
        column: u32,
        sev: char,
        message: &str,
        source: Option<&str>,
        code: Option<&str>,
    ) -> Diagnostic {
        let severity = match sev {
            'E' => Severity::Error,
            'W' => Severity::Warning,
            'I' => Severity::Information,
            _ => Severity::Hint,
        };
        Diagnostic {
            path: PathBuf::from("/ws").join(file),
            line,
            column,
            end_line: line,
            end_column: column + 1,
            severity,
            message: message.to_string(),
            source: source.map(str::to_string),
            code: code.map(str::to_string),
            server: server.to_string(),
        }
    }

    /// What two runs compare: clangd's fix count and rustc's lint-level notes (rust-analyzer
    /// 0.0.330's flycheck messages on dtolnay/semver, fixing the first of two unused variables)
    /// are left out; every other line, and a message without them, is kept as sent.
    #[test]
    fn comparison_message_leaves_out_what_comes_and_goes_between_runs() {
        fn check(message: &str, expected: &str) {
            assert_eq!(comparison_message(message), expected, "{message:?}");
        }
        check("unused variable: `wrong`", "unused variable: `wrong`");
        check(
            "unused variable: `wrong`\n`#[warn(unused_variables)]` (part of `#[warn(unused)]`) on by default",
            "unused variable: `wrong`",
        );
        check(
            "function `f` is never used\n`#[warn(dead_code)]` on by default",
            "function `f` is never used",
        );
        check(
            "unused variable: `x`\n`-D unused-variables` implied by `-D warnings`\nto override `-D warnings` add `#[allow(unused_variables)]`",
            "unused variable: `x`",
        );
        check(
            "mismatched types\nexpected `u32`, found `&str`",
            "mismatched types\nexpected `u32`, found `&str`",
        );
        check(
            "cannot find value `y`\n`#[warn(dead_code)]` on by default\nnot found in this scope",
            "cannot find value `y`\nnot found in this scope",
        );
        // Only continuation lines: a message that is itself such a sentence stays.
        check(
            "`#[warn(dead_code)]` on by default",
            "`#[warn(dead_code)]` on by default",
        );
        check(
            "Unknown type name 'uint32_t' (fix available)",
            "Unknown type name 'uint32_t'",
        );
        check(
            "Unknown type name 'size_t' (fixes available)",
            "Unknown type name 'size_t'",
        );
    }

    /// One-line summary used to compare results exactly.
    fn show(d: &Diagnostic) -> String {
        let file = d.path.strip_prefix("/ws").unwrap_or(&d.path).display();
        format!(
            "{file} {}:{}-{}:{} {} {} src={} code={} @{}",
            d.line,
            d.column,
            d.end_line,
            d.end_column,
            d.severity,
            d.message,
            d.source.as_deref().unwrap_or("-"),
            d.code.as_deref().unwrap_or("-"),
            d.server
        )
    }

    fn shows(diags: &[Diagnostic]) -> Vec<String> {
        diags.iter().map(show).collect()
    }

    #[test]
    fn severity_from_lsp() {
        fn check(input: Option<i32>, expected: Severity) {
            let raw = input.map(|n| serde_json::from_value(json!(n)).expect("severity"));
            assert_eq!(Severity::from_lsp(raw), expected, "input {input:?}");
        }
        check(None, Severity::Error);
        check(Some(1), Severity::Error);
        check(Some(2), Severity::Warning);
        check(Some(3), Severity::Information);
        check(Some(4), Severity::Hint);
        check(Some(0), Severity::Error);
        check(Some(9), Severity::Error);
    }

    #[test]
    fn severity_words() {
        fn check(input: &str, expected: Result<Severity, &str>) {
            let got = input.parse::<Severity>().map_err(|e| e.to_string());
            assert_eq!(got, expected.map_err(str::to_string), "input {input:?}");
        }
        check("error", Ok(Severity::Error));
        check("warning", Ok(Severity::Warning));
        check("info", Ok(Severity::Information));
        check("information", Ok(Severity::Information));
        check("HINT", Ok(Severity::Hint));
        check(
            "fatal",
            Err("unknown severity `fatal` (expected error, warning, info or hint)"),
        );
        check(
            "",
            Err("unknown severity `` (expected error, warning, info or hint)"),
        );
        let words: Vec<String> = Severity::ALL.iter().map(|s| s.to_string()).collect();
        assert_eq!(words, ["error", "warning", "info", "hint"]);
        assert!(Severity::Error.is_at_least(Severity::Warning));
        assert!(Severity::Warning.is_at_least(Severity::Warning));
        assert!(!Severity::Information.is_at_least(Severity::Warning));
    }

    #[test]
    fn normalize_fields() {
        fn check(raw: serde_json::Value, expected: &str) {
            let raw: lsp_types::Diagnostic = serde_json::from_value(raw).expect("diagnostic");
            // A converter that only shifts to 1-based, and doubles the column so we can see it ran.
            let got = normalize("pyright", Path::new("/ws/a.py"), &raw, |p| {
                (p.line + 1, p.character * 2 + 1)
            });
            assert_eq!(show(&got), expected);
        }
        let range =
            json!({"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 6}});
        check(
            json!({"range": range, "severity": 1, "message": "bad\n", "source": "Pyright", "code": "reportX"}),
            "a.py 2:9-2:13 error bad src=Pyright code=reportX @pyright",
        );
        check(
            json!({"range": range, "message": "two\nlines  \r\n\n", "source": "", "code": 401}),
            "a.py 2:9-2:13 error two\nlines src=- code=401 @pyright",
        );
        check(
            json!({"range": range, "severity": 4, "message": "m", "code": ""}),
            "a.py 2:9-2:13 hint m src=- code=- @pyright",
        );
    }

    #[test]
    fn parse_publish_shapes() {
        fn check(
            params: serde_json::Value,
            expected: Result<(&str, Option<i32>, Vec<&str>), &str>,
        ) {
            let got = parse_publish(&params)
                .map(|(uri, version, diags)| {
                    let messages: Vec<String> = diags.into_iter().map(|d| d.message).collect();
                    (uri, version, messages)
                })
                .map_err(|e| e.to_string());
            let expected = expected
                .map(|(uri, version, messages)| {
                    let messages: Vec<String> = messages.into_iter().map(str::to_string).collect();
                    (uri.to_string(), version, messages)
                })
                .map_err(str::to_string);
            assert_eq!(got, expected, "params {params}");
        }
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}});
        let good = json!({"range": range, "message": "ok", "extra": true});
        check(
            json!({"uri": "file:///a.py", "version": 3, "diagnostics": [good], "x": 1}),
            Ok(("file:///a.py", Some(3), vec!["ok"])),
        );
        check(
            json!({"uri": "file:///a.py", "diagnostics": []}),
            Ok(("file:///a.py", None, vec![])),
        );
        check(
            json!({"uri": "file:///a.py", "version": null, "diagnostics": [good]}),
            Ok(("file:///a.py", None, vec!["ok"])),
        );
        check(
            json!({"uri": "file:///a.py", "version": "7", "diagnostics": [good]}),
            Ok(("file:///a.py", None, vec!["ok"])),
        );
        check(
            json!({"uri": "file:///a.py", "version": 1, "diagnostics": [
                {"message": "no range"},
                {"range": range, "message": 5},
                {"range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}, "message": "neg"},
                "junk",
                {"range": range, "message": {"kind": "markdown", "value": "**md**"}},
                good,
            ]}),
            Ok(("file:///a.py", Some(1), vec!["**md**", "ok"])),
        );
        check(
            json!([1]),
            Err("publishDiagnostics params are not an object"),
        );
        check(
            json!({"diagnostics": []}),
            Err("publishDiagnostics params have no string uri"),
        );
        check(
            json!({"uri": "", "diagnostics": []}),
            Err("publishDiagnostics params have no string uri"),
        );
        check(
            json!({"uri": "file:///a.py"}),
            Err("publishDiagnostics for file:///a.py has no diagnostics array"),
        );
        check(
            json!({"uri": "file:///a.py", "diagnostics": {}}),
            Err("publishDiagnostics for file:///a.py has no diagnostics array"),
        );
    }

    #[test]
    fn sort_order() {
        fn check(input: Vec<Diagnostic>, expected: &[&str]) {
            let mut diags = input;
            sort(&mut diags);
            assert_eq!(shows(&diags), expected);
        }
        check(
            vec![
                dg("s", "a.py", 1, 1, 'H', "h", None, None),
                dg("s", "a.py", 9, 1, 'E', "late", None, None),
                dg("s", "a.py", 1, 1, 'W', "w", None, None),
                dg("s", "a.py", 2, 5, 'E', "b", None, None),
                dg("s", "a.py", 2, 5, 'E', "a", None, None),
                dg("s", "a.py", 2, 3, 'E', "z", None, None),
                dg("s", "a.py", 1, 1, 'I', "i", None, None),
            ],
            &[
                "a.py 2:3-2:4 error z src=- code=- @s",
                "a.py 2:5-2:6 error a src=- code=- @s",
                "a.py 2:5-2:6 error b src=- code=- @s",
                "a.py 9:1-9:2 error late src=- code=- @s",
                "a.py 1:1-1:2 warning w src=- code=- @s",
                "a.py 1:1-1:2 info i src=- code=- @s",
                "a.py 1:1-1:2 hint h src=- code=- @s",
            ],
        );
        // Same start, the shorter range first.
        let mut long = dg("s", "a.py", 1, 1, 'E', "m", None, None);
        long.end_column = 9;
        check(
            vec![long, dg("s", "a.py", 1, 1, 'E', "m", None, None)],
            &[
                "a.py 1:1-1:2 error m src=- code=- @s",
                "a.py 1:1-1:9 error m src=- code=- @s",
            ],
        );
    }

    /// Runs `(server, file, set)` publishes in order and compares `merged(file, order)`.
    fn check_store(
        publishes: Vec<(&str, &str, Vec<Diagnostic>)>,
        file: &str,
        order: &[&str],
        expected: &[&str],
    ) {
        let mut store = DiagnosticStore::new();
        for (server, path, diags) in publishes {
            store.replace(
                Reporter::new(server, 0),
                &Path::new("/ws").join(path),
                diags,
            );
        }
        let got = store.merged(&Path::new("/ws").join(file), order);
        assert_eq!(shows(&got), expected);
    }

    #[test]
    fn store_replace_and_merge() {
        let e1 = || dg("A", "a.py", 1, 1, 'E', "E1", Some("srcA"), Some("c1"));
        let e1b = || dg("B", "a.py", 1, 1, 'E', "E1", Some("srcB"), Some("c1"));
        let e2 = || dg("A", "a.py", 5, 1, 'E', "E2", Some("srcA"), None);
        let w = || dg("A", "a.py", 2, 1, 'W', "W", None, None);
        // B17: A [E1] then [E1, E2]; B [E1'] then []: B's empty publish does not wipe A's.
        check_store(
            vec![
                ("A", "a.py", vec![e1()]),
                ("A", "a.py", vec![e1(), e2()]),
                ("B", "a.py", vec![e1b()]),
                ("B", "a.py", vec![]),
            ],
            "a.py",
            &["A", "B"],
            &[
                "a.py 1:1-1:2 error E1 src=srcA code=c1 @A",
                "a.py 5:1-5:2 error E2 src=srcA code=- @A",
            ],
        );
        // A later publish replaces the earlier one of the same server.
        check_store(
            vec![("A", "a.py", vec![e1(), e2()]), ("A", "a.py", vec![w()])],
            "a.py",
            &["A"],
            &["a.py 2:1-2:2 warning W src=- code=- @A"],
        );
        // Cross-server duplicate kept once; precedence decides which copy.
        check_store(
            vec![("A", "a.py", vec![e1(), w()]), ("B", "a.py", vec![e1b()])],
            "a.py",
            &["B", "A"],
            &[
                "a.py 1:1-1:2 error E1 src=srcB code=c1 @B",
                "a.py 2:1-2:2 warning W src=- code=- @A",
            ],
        );
        // Different code across servers is not a duplicate.
        let mut other_code = e1b();
        other_code.code = Some("c2".into());
        check_store(
            vec![("A", "a.py", vec![e1()]), ("B", "a.py", vec![other_code])],
            "a.py",
            &["A", "B"],
            &[
                "a.py 1:1-1:2 error E1 src=srcA code=c1 @A",
                "a.py 1:1-1:2 error E1 src=srcB code=c2 @B",
            ],
        );
        // Within one server: exact duplicates collapse, a different source does not.
        let mut e1_other_source = e1();
        e1_other_source.source = Some("other".into());
        check_store(
            vec![("A", "a.py", vec![e1(), e1(), e1_other_source])],
            "a.py",
            &["A"],
            &[
                "a.py 1:1-1:2 error E1 src=other code=c1 @A",
                "a.py 1:1-1:2 error E1 src=srcA code=c1 @A",
            ],
        );
        // Servers missing from the order still count, after the listed ones, by name.
        check_store(
            vec![("Z", "a.py", vec![e1b()]), ("A", "a.py", vec![e1()])],
            "a.py",
            &[],
            &["a.py 1:1-1:2 error E1 src=srcA code=c1 @A"],
        );
        // Another file's sets are separate.
        check_store(vec![("A", "b.py", vec![e1()])], "a.py", &["A"], &[]);
        // Two instances of one server (a gopls per `go.mod`) share its name, so the order may
        // name it twice: its set still counts once (a gopls error in a nested module's go.mod,
        // a file no check opened, was reported twice).
        check_store(
            vec![("A", "a.py", vec![e1()])],
            "a.py",
            &["A", "A"],
            &["a.py 1:1-1:2 error E1 src=srcA code=c1 @A"],
        );
    }

    #[test]
    fn store_keeps_published_and_pulled_sets_apart() {
        let pulled = || dg("A", "a.py", 1, 1, 'E', "native", None, Some("E1"));
        let pushed = || dg("A", "a.py", 3, 1, 'E', "check", Some("rustc"), Some("E1"));
        let a = Path::new("/ws/a.py");
        let mut store = DiagnosticStore::new();
        store.replace_from(Reporter::new("A", 0), a, Origin::Pulled, vec![pulled()]);
        store.replace_from(
            Reporter::new("A", 0),
            a,
            Origin::Published,
            vec![pushed(), pulled()],
        );
        // The union, the identical copy kept once.
        assert_eq!(
            shows(&store.merged(a, &["A"])),
            [
                "a.py 1:1-1:2 error native src=- code=E1 @A",
                "a.py 3:1-3:2 error check src=rustc code=E1 @A",
            ]
        );
        // A later pull answer replaces only the pulled set, an empty publish only the pushed.
        store.replace_from(Reporter::new("A", 0), a, Origin::Pulled, vec![]);
        assert_eq!(
            shows(&store.merged(a, &["A"])),
            [
                "a.py 1:1-1:2 error native src=- code=E1 @A",
                "a.py 3:1-3:2 error check src=rustc code=E1 @A",
            ]
        );
        store.replace_from(Reporter::new("A", 0), a, Origin::Published, vec![]);
        assert_eq!(store.merged(a, &["A"]), vec![]);
        assert_eq!(store.get("A", a).map(|set| set.len()), Some(0));
    }

    /// New users' trials on rust-lang/log and dtolnay/semver: each error was counted twice,
    /// rust-analyzer's pulled one and rustc's pushed one (`cargo check`'s), where `cargo check`
    /// reports one: `E0308` at the same range under two messages; `E0107` at the argument list's
    /// end against rustc's `E0061` at the callee; `syntax-error` against rustc's code-less
    /// `expected `;``. The pushed copy is kept; a pulled finding rustc does not repeat stays.
    #[test]
    fn a_pulled_finding_the_pushed_set_repeats_under_another_source_counts_once() {
        let a = Path::new("/ws/a.rs");
        let at = |source: &str, line, column, severity, code| {
            dg(
                "A",
                "a.rs",
                line,
                column,
                severity,
                source,
                Some(source),
                code,
            )
        };
        let native =
            |line, column, severity, code| at("rust-analyzer", line, column, severity, code);
        let rustc = |line, column, severity, code| at("rustc", line, column, severity, code);
        let mut store = DiagnosticStore::new();
        store.replace_from(
            Reporter::new("A", 0),
            a,
            Origin::Pulled,
            vec![
                native(2, 19, 'E', Some("E0308")),
                native(4, 18, 'E', Some("E0107")),
                native(6, 14, 'E', Some("syntax-error")),
                native(8, 5, 'E', Some("E0425")),
                native(10, 9, 'W', Some("unused_variables")),
                native(12, 9, 'W', Some("dead_code")),
                native(14, 1, 'E', Some("E0433")),
            ],
        );
        store.replace_from(
            Reporter::new("A", 0),
            a,
            Origin::Published,
            vec![
                rustc(2, 19, 'E', Some("E0308")),
                rustc(4, 13, 'E', Some("E0061")),
                rustc(6, 14, 'E', None),
                rustc(8, 5, 'H', Some("E0425")),
                rustc(10, 9, 'W', Some("unused_variables")),
                rustc(12, 1, 'E', Some("E0277")),
            ],
        );
        assert_eq!(
            shows(&store.merged(a, &["A"])),
            [
                "a.rs 2:19-2:20 error rustc src=rustc code=E0308 @A",
                "a.rs 4:13-4:14 error rustc src=rustc code=E0061 @A",
                "a.rs 6:14-6:15 error rustc src=rustc code=- @A",
                "a.rs 8:5-8:6 error rust-analyzer src=rust-analyzer code=E0425 @A",
                "a.rs 12:1-12:2 error rustc src=rustc code=E0277 @A",
                "a.rs 14:1-14:2 error rust-analyzer src=rust-analyzer code=E0433 @A",
                "a.rs 10:9-10:10 warning rustc src=rustc code=unused_variables @A",
                "a.rs 12:9-12:10 warning rust-analyzer src=rust-analyzer code=dead_code @A",
                "a.rs 8:5-8:6 hint rustc src=rustc code=E0425 @A",
            ]
        );
        assert_eq!(store.get("A", a).map(|set| set.len()), Some(9));
        // Before `cargo check` has pushed, the pulled set stands alone.
        store.replace_from(Reporter::new("A", 0), a, Origin::Published, vec![]);
        assert_eq!(store.merged(a, &["A"]).len(), 7);
    }

    /// rustc's error in a macro's expansion is published at the macro (`lib.rs`) and as a hint
    /// with its code and message at the call site (`t.rs`), where `cargo check` reports it: the
    /// hint counts as an error. Other rustc hints, and another source's, stay hints.
    #[test]
    fn a_macro_call_site_hint_of_a_rustc_error_is_an_error() {
        // A package: `src/` is one crate, `tests/t.rs` another.
        let package = std::env::temp_dir().join(format!("lspc-crates-{}", std::process::id()));
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("Cargo.toml"), "[package]\n").unwrap();
        let lib = &package.join("src/lib.rs");
        let t = &package.join("tests/t.rs");
        let user = &package.join("src/user.rs");
        let rustc = |file: &Path, line, severity, message| Diagnostic {
            path: file.to_path_buf(),
            ..dg(
                "A",
                "x.rs",
                line,
                5,
                severity,
                message,
                Some("rustc"),
                Some("E0599"),
            )
        };
        let mut store = DiagnosticStore::new();
        store.replace(
            Reporter::new("A", 0),
            lib,
            vec![rustc(lib, 4, 'E', "no method")],
        );
        store.replace(
            Reporter::new("A", 0),
            t,
            vec![
                rustc(t, 4, 'H', "no method"),
                rustc(t, 6, 'H', "method defined here"),
                dg(
                    "A",
                    "t.rs",
                    8,
                    5,
                    'H',
                    "no method",
                    Some("clippy"),
                    Some("E0599"),
                ),
            ],
        );
        let lines = |merged: Vec<Diagnostic>| {
            merged
                .into_iter()
                .map(|d| (d.line, d.severity, d.source.unwrap_or_default()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            lines(store.merged(t, &["A"])),
            [
                (4, Severity::Error, "rustc".to_string()),
                (6, Severity::Hint, "rustc".to_string()),
                (8, Severity::Hint, "clippy".to_string()),
            ]
        );
        // Without the error it is a hint again.
        store.replace(Reporter::new("A", 0), lib, vec![]);
        assert_eq!(store.merged(t, &["A"])[0].severity, Severity::Hint);
        // helper-45: the hint may belong to a warning with the same words (`unused variable:
        // x` warned in one crate, denied in another): it stays a hint.
        store.replace(
            Reporter::new("A", 0),
            lib,
            vec![
                rustc(lib, 4, 'E', "no method"),
                rustc(lib, 9, 'W', "no method"),
            ],
        );
        assert_eq!(store.merged(t, &["A"])[0].severity, Severity::Hint);
        store.replace(
            Reporter::new("A", 0),
            lib,
            vec![rustc(lib, 4, 'E', "no method")],
        );
        let errors = |store: &DiagnosticStore, file: &Path| {
            store
                .merged(file, &["A"])
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| d.code.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        // rust-analyzer's own error of the hint's code on its line is the same finding: one.
        let native = |code| {
            vec![Diagnostic {
                path: t.clone(),
                ..dg(
                    "A",
                    "t.rs",
                    4,
                    9,
                    'E',
                    "native",
                    Some("rust-analyzer"),
                    Some(code),
                )
            }]
        };
        store.replace_from(Reporter::new("A", 0), t, Origin::Pulled, native("E0599"));
        assert_eq!(errors(&store, t), ["E0599"]);
        // helper-46: another error on the line is another finding; the hint is still one.
        store.replace_from(Reporter::new("A", 0), t, Origin::Pulled, native("E0308"));
        assert_eq!(errors(&store, t), ["E0599", "E0308"]);
        // helper-46: a macro of the same crate (`src/`) is reported at its definition only.
        store.replace(
            Reporter::new("A", 0),
            user,
            vec![rustc(user, 2, 'H', "no method")],
        );
        assert!(errors(&store, user).is_empty());
        let _ = std::fs::remove_dir_all(&package);
    }

    /// helper-45: a call missing an argument written over three lines, `two(` / `1,` / `)`:
    /// rust-analyzer's `E0107` at the `)` (8:5) and rustc's `E0061` at `two` (6:5), with its note
    /// over the arguments (6:8-8:6). `cargo check` counts one error.
    #[test]
    fn a_pulled_error_inside_the_span_of_a_pushed_errors_note_counts_once() {
        let a = Path::new("/ws/a.rs");
        let span =
            |line, column, end_line, end_column, severity, source: &str, code: &str| Diagnostic {
                end_line,
                end_column,
                ..dg(
                    "A",
                    "a.rs",
                    line,
                    column,
                    severity,
                    source,
                    Some(source),
                    Some(code),
                )
            };
        let mut store = DiagnosticStore::new();
        store.replace_from(
            Reporter::new("A", 0),
            a,
            Origin::Pulled,
            vec![
                span(8, 5, 8, 6, 'E', "rust-analyzer", "E0107"),
                span(12, 1, 12, 3, 'E', "rust-analyzer", "E0425"),
            ],
        );
        store.replace_from(
            Reporter::new("A", 0),
            a,
            Origin::Published,
            vec![
                span(6, 5, 6, 8, 'E', "rustc", "E0061"),
                span(6, 8, 8, 6, 'H', "rustc", "E0061"),
                // A note of another code covers nothing of E0061's.
                span(11, 1, 13, 1, 'H', "rustc", "E0308"),
            ],
        );
        assert_eq!(
            shows(&store.merged(a, &["A"])),
            [
                "a.rs 6:5-6:8 error rustc src=rustc code=E0061 @A",
                "a.rs 12:1-12:3 error rust-analyzer src=rust-analyzer code=E0425 @A",
                "a.rs 6:8-8:6 hint rustc src=rustc code=E0061 @A",
                "a.rs 11:1-13:1 hint rustc src=rustc code=E0308 @A",
            ]
        );
    }

    #[test]
    fn store_clear_and_files() {
        let mut store = DiagnosticStore::new();
        let a = Path::new("/ws/a.py");
        let b = Path::new("/ws/b.py");
        store.replace(
            Reporter::new("A", 0),
            b,
            vec![dg("A", "b.py", 1, 1, 'E', "x", None, None)],
        );
        store.replace(Reporter::new("A", 0), a, vec![]);
        store.replace(
            Reporter::new("B", 0),
            a,
            vec![dg("B", "a.py", 1, 1, 'E', "y", None, None)],
        );
        let files: Vec<&Path> = store.files().collect();
        assert_eq!(files, [a, b]);
        assert!(store.has_published(Reporter::new("A", 0), a));
        assert!(!store.has_published(Reporter::new("C", 0), a));
        assert_eq!(store.get("A", a).map(|set| set.len()), Some(0));
        store.clear_server("B");
        assert!(!store.has_published(Reporter::new("B", 0), a));
        assert_eq!(store.merged(a, &["A", "B"]), vec![]);
        store.clear_server("A");
        assert_eq!(store.files().count(), 0);
        store.replace(Reporter::new("A", 0), a, vec![]);
        store.clear_file(a);
        assert!(!store.has_published(Reporter::new("A", 0), a));
    }

    /// Two instances of one server (one per project root) keep their own sets: an empty publish
    /// from one leaves the other's; a diagnostic both give counts once; clearing the server
    /// clears both.
    #[test]
    fn store_keeps_each_instance_of_a_server_apart() {
        let mut store = DiagnosticStore::new();
        let a = Path::new("/ws/a.py");
        let error = dg("A", "a.py", 1, 1, 'E', "x", None, None);
        let warning = dg("A", "a.py", 2, 1, 'W', "y", None, None);
        store.replace(Reporter::new("A", 0), a, vec![error.clone()]);
        store.replace(Reporter::new("A", 3), a, vec![]);
        assert_eq!(store.merged(a, &["A"]), vec![error.clone()]);
        assert!(store.has_published(Reporter::new("A", 3), a));
        assert!(!store.has_published(Reporter::new("A", 1), a));
        store.replace(
            Reporter::new("A", 3),
            a,
            vec![warning.clone(), error.clone()],
        );
        assert_eq!(
            store.merged(a, &["A"]),
            vec![error.clone(), warning.clone()]
        );
        assert_eq!(store.get("A", a), Some(vec![error.clone(), warning]));
        store.replace(Reporter::new("A", 0), a, vec![]);
        store.replace(Reporter::new("A", 3), a, vec![]);
        assert_eq!(store.get("A", a), Some(vec![]));
        assert_eq!(store.merged(a, &["A"]), vec![]);
        store.replace(Reporter::new("A", 3), a, vec![error]);
        store.clear_server("A");
        assert_eq!(store.files().count(), 0);
    }

    fn file_of(name: &str, diags: Vec<Diagnostic>) -> (PathBuf, Vec<Diagnostic>) {
        (PathBuf::from("/ws").join(name), diags)
    }

    fn warnings(server: &str, file: &str, n: u32) -> Vec<Diagnostic> {
        (1..=n)
            .map(|line| dg(server, file, line, 1, 'W', "w", None, None))
            .collect()
    }

    /// Applies caps and compares (kept count per file, omitted per file).
    fn check_caps(
        files: Vec<(PathBuf, Vec<Diagnostic>)>,
        per_file: Option<usize>,
        total: Option<usize>,
        expected_kept: &[usize],
        expected_omitted: &[usize],
    ) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        let mut files = files;
        let omitted = apply_caps(&mut files, per_file, total);
        let kept: Vec<usize> = files.iter().map(|(_, d)| d.len()).collect();
        assert_eq!(kept, expected_kept);
        assert_eq!(omitted, expected_omitted);
        files
    }

    #[test]
    fn caps() {
        // B17: a.py has E1, E2 and 12 warnings; five other files have 5 warnings each.
        let b17 = || {
            let mut a = vec![
                dg("A", "a.py", 1, 1, 'E', "E1", None, None),
                dg("A", "a.py", 5, 1, 'E', "E2", None, None),
            ];
            a.extend(warnings("A", "a.py", 12));
            sort(&mut a);
            let mut files = vec![file_of("a.py", a)];
            for i in 1..=5 {
                let name = format!("f{i}.py");
                files.push(file_of(&name, warnings("A", &name, 5)));
            }
            files
        };
        let kept = check_caps(
            b17(),
            Some(10),
            Some(30),
            &[10, 5, 5, 5, 5, 0],
            &[4, 0, 0, 0, 0, 5],
        );
        assert_eq!(
            shows(&kept[0].1[..3]),
            [
                "a.py 1:1-1:2 error E1 src=- code=- @A",
                "a.py 5:1-5:2 error E2 src=- code=- @A",
                "a.py 1:1-1:2 warning w src=- code=- @A",
            ]
        );
        check_caps(b17(), None, None, &[14, 5, 5, 5, 5, 5], &[0; 6]);
        check_caps(
            b17(),
            Some(10),
            None,
            &[10, 5, 5, 5, 5, 5],
            &[4, 0, 0, 0, 0, 0],
        );
        check_caps(
            b17(),
            None,
            Some(12),
            &[12, 0, 0, 0, 0, 0],
            &[2, 5, 5, 5, 5, 5],
        );
        check_caps(b17(), Some(0), None, &[0; 6], &[14, 5, 5, 5, 5, 5]);
        // Errors in a later file win over warnings in an earlier one.
        let kept = check_caps(
            vec![
                file_of("a.py", warnings("A", "a.py", 3)),
                file_of(
                    "b.py",
                    vec![
                        dg("A", "b.py", 1, 1, 'E', "x", None, None),
                        dg("A", "b.py", 2, 1, 'E', "y", None, None),
                        dg("A", "b.py", 3, 1, 'H', "z", None, None),
                    ],
                ),
            ],
            None,
            Some(3),
            &[1, 2],
            &[2, 1],
        );
        assert_eq!(
            shows(&kept[1].1),
            [
                "b.py 1:1-1:2 error x src=- code=- @A",
                "b.py 2:1-2:2 error y src=- code=- @A"
            ]
        );
        check_caps(vec![], Some(1), Some(1), &[], &[]);
    }

    /// Summarises a drained batch as (servers, "file:count" list, n_more).
    fn batch_summary(batch: Option<DrainedBatch>) -> Option<(Vec<String>, Vec<String>, usize)> {
        batch.map(|b| {
            let files = b
                .files
                .iter()
                .map(|(p, d)| format!("{}:{}", p.display(), d.len()))
                .collect();
            (b.servers, files, b.n_more)
        })
    }

    fn check_drain(registry: &mut PassiveRegistry, expected: Option<(&[&str], &[&str], usize)>) {
        let expected = expected.map(|(servers, files, n_more)| {
            (
                servers.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                files.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                n_more,
            )
        });
        assert_eq!(batch_summary(registry.drain()), expected);
    }

    #[test]
    fn registry_delivers_once() {
        let a = Path::new("/ws/a.py");
        let e1 = || dg("A", "a.py", 1, 1, 'E', "E1", Some("src"), None);
        let e2 = || dg("A", "a.py", 2, 1, 'E', "E2", Some("src"), None);
        let mut registry = PassiveRegistry::new();
        check_drain(&mut registry, None);
        registry.register("A", a, vec![]);
        assert!(!registry.has_pending());
        registry.register("A", a, vec![e1()]);
        // Same identity from another server in the same batch: delivered once.
        let mut e1_from_b = e1();
        e1_from_b.server = "B".into();
        registry.register("B", a, vec![e1_from_b]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:1"], 0)));
        // Not replayed.
        check_drain(&mut registry, None);
        // A republish of E1 plus a new E2: only E2 is new.
        registry.register("A", a, vec![e1(), e2()]);
        let batch = registry.drain().expect("batch");
        assert_eq!(
            shows(&batch.files[0].1),
            ["a.py 2:1-2:2 error E2 src=src code=- @A"]
        );
        // Everything already delivered: nothing to drain, queue emptied.
        registry.register("A", a, vec![e1(), e2()]);
        check_drain(&mut registry, None);
        assert!(!registry.has_pending());
        // After an edit, reappearing diagnostics are delivered again.
        registry.reset_file(a);
        registry.register("A", a, vec![e1(), e2()]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:2"], 0)));
        registry.reset_all();
        registry.register("A", a, vec![e2()]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:1"], 0)));
    }

    #[test]
    fn registry_replace_and_withdraw() {
        let a = Path::new("/ws/a.py");
        let b = Path::new("/ws/b.py");
        let e = |server: &str, file: &str, msg: &str| dg(server, file, 1, 1, 'E', msg, None, None);
        let mut registry = PassiveRegistry::new();
        // A later publish of the same server replaces the queued one.
        registry.register("A", a, vec![e("A", "a.py", "old")]);
        registry.register("A", a, vec![e("A", "a.py", "new")]);
        let batch = registry.drain().expect("batch");
        assert_eq!(
            shows(&batch.files[0].1),
            ["a.py 1:1-1:2 error new src=- code=- @A"]
        );
        // An empty publish withdraws that server's queued set only.
        registry.register("A", a, vec![e("A", "a.py", "x")]);
        registry.register("B", a, vec![e("B", "a.py", "y")]);
        registry.register("B", b, vec![e("B", "b.py", "z")]);
        registry.register("A", a, vec![]);
        check_drain(
            &mut registry,
            Some((&["B"], &["/ws/a.py:1", "/ws/b.py:1"], 0)),
        );
        // reset_file drops queued sets for the file.
        registry.register("A", a, vec![e("A", "a.py", "q")]);
        registry.register("A", b, vec![e("A", "b.py", "r")]);
        registry.reset_file(a);
        check_drain(&mut registry, Some((&["A"], &["/ws/b.py:1"], 0)));
    }

    #[test]
    fn registry_caps() {
        let mut registry = PassiveRegistry::new();
        let mut a = vec![dg("A", "a.py", 20, 1, 'E', "E1", None, None)];
        a.extend(warnings("A", "a.py", 12));
        registry.register("A", Path::new("/ws/a.py"), a);
        for i in 1..=5 {
            let name = format!("f{i}.py");
            registry.register("B", &Path::new("/ws").join(&name), warnings("B", &name, 5));
        }
        let batch = registry.drain().expect("batch");
        assert_eq!(batch.files[0].1[0].message, "E1");
        assert_eq!(
            batch_summary(Some(batch)),
            Some((
                vec!["A".to_string(), "B".to_string()],
                vec![
                    "/ws/a.py:10".to_string(),
                    "/ws/f1.py:5".to_string(),
                    "/ws/f2.py:5".to_string(),
                    "/ws/f3.py:5".to_string(),
                    "/ws/f4.py:5".to_string(),
                ],
                3 + 5,
            ))
        );
        // The capped diagnostics were not marked delivered: a republish delivers them.
        registry.register("B", Path::new("/ws/f5.py"), warnings("B", "f5.py", 5));
        check_drain(&mut registry, Some((&["B"], &["/ws/f5.py:5"], 0)));
    }

    /// Found with `lspc mcp` on pallets/click@2c8cd3a (pyright): the `diagnostics` tool showed
    /// all 14 of `_compat.py`'s, yet its own `newDiagnostics` said "4 more diagnostics not
    /// shown", and a later call delivered those 4 as new. A shown file's whole set now counts as
    /// delivered; other files are capped as before.
    #[test]
    fn registry_shown_file_counts_as_delivered() {
        let a = Path::new("/ws/a.py");
        let a_set = || {
            let mut set: Vec<Diagnostic> = (1..=3)
                .map(|line| dg("A", "a.py", line, 1, 'E', "e", None, None))
                .collect();
            set.extend((4..=14).map(|line| dg("A", "a.py", line, 1, 'H', "h", None, None)));
            set
        };
        let mut registry = PassiveRegistry::new();
        registry.register("A", a, a_set());
        registry.register("A", Path::new("/ws/b.py"), warnings("A", "b.py", 12));
        registry.mark_shown(a, &a_set());
        check_drain(&mut registry, Some((&["A"], &["/ws/b.py:10"], 2)));
        // A republish of the shown set is not new; a diagnostic it did not have is.
        registry.register("A", a, a_set());
        check_drain(&mut registry, None);
        let mut grown = a_set();
        grown.push(dg("A", "a.py", 15, 1, 'W', "w", None, None));
        registry.register("A", a, grown);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:1"], 0)));
        // Shown with nothing queued (an earlier drain capped the file): the rest is not new later.
        registry.reset_file(a);
        registry.register("A", a, a_set());
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:10"], 4)));
        registry.mark_shown(a, &a_set());
        check_drain(&mut registry, None);
        registry.register("A", a, a_set());
        check_drain(&mut registry, None);
    }

    #[test]
    fn registry_lru_bound() {
        let mut registry = PassiveRegistry::new();
        let e = |file: &str| vec![dg("A", file, 1, 1, 'E', "E", None, None)];
        for i in 0..(MAX_DELIVERED_FILES + 20) {
            let name = format!("f{i}.py");
            registry.register("A", &Path::new("/ws").join(&name), e(&name));
            assert!(registry.drain().is_some());
        }
        assert_eq!(registry.delivered_file_count(), MAX_DELIVERED_FILES);
        // The oldest file was forgotten, so its diagnostic is delivered again; the newest was not.
        registry.register("A", Path::new("/ws/f0.py"), e("f0.py"));
        check_drain(&mut registry, Some((&["A"], &["/ws/f0.py:1"], 0)));
        let newest = format!("f{}.py", MAX_DELIVERED_FILES + 19);
        registry.register("A", &Path::new("/ws").join(&newest), e(&newest));
        check_drain(&mut registry, None);
        assert_eq!(registry.delivered_file_count(), MAX_DELIVERED_FILES);
    }

    /// A settled set forgets the delivered findings it lacks (so they are new when they come
    /// back) and keeps the rest; a file whose delivered findings are all gone is cleared once.
    #[test]
    fn registry_settled_sets_forget_fixed_findings_and_clear_clean_files() {
        let a = Path::new("/ws/a.py");
        let b = Path::new("/ws/b.py");
        let one = dg("A", "a.py", 1, 1, 'E', "one", None, None);
        let two = dg("A", "a.py", 2, 1, 'E', "two", None, None);
        let mut registry = PassiveRegistry::new();
        registry.register("A", a, vec![one.clone(), two.clone()]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:2"], 0)));
        // `two` fixed: `one` stays delivered, the file is not clean.
        registry.settled(a, std::slice::from_ref(&one));
        registry.register("A", a, vec![one.clone(), two.clone()]);
        let batch = registry.drain().expect("two is new again");
        assert_eq!(batch.files.len(), 1);
        assert_eq!(batch.files[0].1, vec![two.clone()]);
        assert!(batch.cleared.is_empty());
        // Both fixed: cleared once, with nothing new; a file never delivered is not cleared.
        registry.settled(a, &[]);
        registry.settled(b, &[]);
        let batch = registry.drain().expect("a cleared file");
        assert!(batch.files.is_empty());
        assert_eq!(batch.cleared, vec![a.to_path_buf()]);
        registry.settled(a, &[]);
        assert_eq!(registry.drain(), None);
        // Broken again: delivered again.
        registry.register("A", a, vec![one.clone()]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:1"], 0)));
        // Fixed by an edit of the file itself (`reset_file`), then settled clean: cleared.
        registry.reset_file(a);
        registry.settled(a, &[]);
        assert_eq!(
            registry.drain().map(|batch| batch.cleared),
            Some(vec![a.to_path_buf()])
        );
        // Shown clean by the diagnostics tool: the agent knows, nothing is cleared later.
        registry.register("A", a, vec![one.clone()]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:1"], 0)));
        registry.mark_shown(a, &[]);
        registry.settled(a, &[]);
        assert_eq!(registry.drain(), None);
        // Cleared and broken again before the drain: delivered, not called clean.
        registry.register("A", a, vec![one.clone()]);
        check_drain(&mut registry, Some((&["A"], &["/ws/a.py:1"], 0)));
        registry.settled(a, &[]);
        registry.register("A", a, vec![two.clone()]);
        let batch = registry.drain().expect("two is new");
        assert_eq!(batch.files[0].1, vec![two]);
        assert!(batch.cleared.is_empty());
    }
}
