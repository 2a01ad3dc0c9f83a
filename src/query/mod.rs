//! Code-intelligence queries (definition, references, hover, symbols, call and type hierarchy,
//! signature help) on top of the engine, with every result normalised into lspc's model.
//!
//! Units: every position in this API is a 1-based line and a 1-based column counted in Unicode
//! characters (`char`s), in input and output; [`Queries`] converts to and from the encoding each
//! server negotiated (LSP 3.17 §`PositionEncodingKind`) for every request and result. Paths are
//! canonical absolute `PathBuf`s; frontends render them relative to the root (see
//! [`RelativePaths`]).
//!
//! Invariants:
//! - Before any `textDocument/*` request the file is synced (`didOpen` or `didChange` with the
//!   current disk text), so servers never answer about a file they have not been told about
//!   (B22). A query's first request crosses the loop once ([`Op::SyncRequest`], issue 15): the
//!   sync, the position conversion from the synced text and the request happen in one loop turn,
//!   unless a readiness wait (below) is due, which keeps its own turns; after the wait the
//!   file is synced again and asked about in that turn (the LRU bound may have closed it, and
//!   the disk may have changed), and it stays open while the request is in flight.
//! - A request goes to the first server claiming the file (primary first) that advertises the
//!   capability; when none does, the query fails at once with [`QueryError::Unsupported`] naming
//!   the primary server.
//! - A user position that does not exist (line past the end, column past the end of the line, a
//!   symbol not on the line) is an error showing the line's text, never clamped.
//! - "Nothing found" (`null`, `[]`, an empty hover) is an empty result, not an error.
//! - Cross-file questions wait (bounded by the timeout) while the server reports `$/progress`;
//!   when the wait runs out the result carries `incomplete`.
//! - Every position query waits for the file's diagnostics to settle, but only the first time a
//!   file is asked about in a session ([`AnalysedFiles`]): typescript-language-server answers
//!   hover and signature help partially until its project has loaded, without reporting
//!   progress, and later requests must stay fast.
//! - The layer talks to the engine only through an `Op` sender, so it runs on any thread.
//!
//! This file holds [`Queries`], the requests themselves. The vocabulary and result types are in
//! `model.rs`, position resolution in `position.rs`, readiness waits in `readiness.rs`, signature
//! help normalisation in `signature.rs`, root-relative paths in `relative_paths.rs`, references
//! beyond the files clangd without a compilation database parsed in `unparsed_files.rs`; result
//! parsing per kind in `locations.rs`, `hover.rs`, `symbols.rs`; human rendering in `render.rs`.

pub mod cleaned_json;
pub mod command;
pub mod hover;
pub mod locations;
mod model;
mod position;
mod readiness;
mod relative_paths;
pub mod render;
mod result_json;
mod signature;
pub mod symbols;
pub(crate) mod typed_answer;
pub(crate) mod unparsed_files;

pub use model::*;
pub use position::resolve_position;
pub use readiness::{wait_analysed, wait_published, wait_until_ready, ANALYSIS_WAIT};
pub use relative_paths::RelativePaths;
pub use result_json::ResultJson;
pub use signature::parse_signature_help;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::doorbell::LoopSender;
use crate::engine::{
    request_with, sync_with, AnswerBody, BuiltRequest, EngineError, Op, ReplyTo, RequestBuilder,
    ServerInfo, SyncedDocument,
};
use crate::transport::RequestParams;
use crate::uri;
use locations::{parse_locations, parse_range, SourceFiles};

/// A synced document, the server chosen for one request, and the converted position.
struct Target {
    doc: SyncedDocument,
    server: ServerInfo,
    /// The LSP position (0-based, server encoding); (0, 0) for whole-file requests.
    position: lsp_types::Position,
    files: SourceFiles,
}

impl Target {
    /// `TextDocumentPositionParams` (LSP 3.17 §`textDocumentPositionParams`) plus `context` when
    /// given, serialised straight into text (issue 15: no `Value` tree; members in the order a
    /// tree would write them).
    fn text_document_position<C: serde::Serialize>(&self, context: Option<C>) -> RequestParams {
        if context.is_none() {
            return RequestParams::Text(position_params_text(&self.doc.path, self.position));
        }
        #[derive(serde::Serialize)]
        struct Params<'a, C> {
            #[serde(skip_serializing_if = "Option::is_none")]
            context: Option<C>,
            position: Position,
            #[serde(rename = "textDocument")]
            text_document: TextDocument<'a>,
        }
        let uri = document_uri(&self.doc.path);
        RequestParams::of(&Params {
            context,
            position: Position {
                character: self.position.character,
                line: self.position.line,
            },
            text_document: TextDocument { uri: &uri },
        })
    }
}

/// An LSP `Position` as the wire writes it (members in a tree's order).
#[derive(serde::Serialize)]
struct Position {
    character: u32,
    line: u32,
}

/// A `TextDocumentIdentifier`.
#[derive(serde::Serialize)]
struct TextDocument<'a> {
    uri: &'a str,
}

/// Builds a query's LSP params from its target (run in the loop, or by the caller after a
/// readiness wait).
type ParamsBuilder = Arc<dyn Fn(&Target) -> RequestParams + Send + Sync>;

/// The wait a query needs before its first request (see the module's invariants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readiness {
    /// The answer is about the file alone (document symbols): no wait before asking, but an
    /// empty answer to the file's first question of the session is asked again once its
    /// diagnostics have settled ([`wait_analysed`]). vim-language-server 2.3 answers
    /// `textDocument/documentSymbol` with `[]` until it has parsed the file, which it does after
    /// `didOpen` (a new user's `lspc symbols autoload/fzf/vim.vim` said "no symbols found"). The
    /// file's first question takes the blocking route; an answer with something in it is
    /// returned at once.
    EmptyAnswerWaits,
    /// The file's first analysis wait of the session ([`wait_analysed`]): hover and signature
    /// help, which typescript-language-server answers partially until its project has loaded.
    Analysed,
    /// The first analysis wait and no `$/progress` work ([`wait_until_ready`]): answers that
    /// may land in another file (definitions, references, hierarchies).
    Indexed,
}

impl Readiness {
    /// Whether `server` must wait before answering about `path`: always on the file's first
    /// question of the session (per server), while documents it was sent again await its
    /// publish ([`ServerInfo::awaiting_publish`], [`wait_published`]), and for
    /// [`Readiness::Indexed`] while the server reports progress.
    fn wait_due(self, analysed: &AnalysedFiles, server: &ServerInfo, path: &Path) -> bool {
        if !server.awaiting_publish.is_empty() {
            return true;
        }
        match self {
            Readiness::Analysed | Readiness::EmptyAnswerWaits => !analysed.contains(server, path),
            Readiness::Indexed => !analysed.contains(server, path) || server.busy,
        }
    }

    /// Whether the blocking route sends the request in the sync's loop turn: when no wait is
    /// due, and always for [`Readiness::EmptyAnswerWaits`], whose wait follows the answer.
    fn sends_in_turn(self, analysed: &AnalysedFiles, server: &ServerInfo, path: &Path) -> bool {
        self == Readiness::EmptyAnswerWaits || !self.wait_due(analysed, server, path)
    }
}

/// Whether a call site's line shows `callee`, the called function's name: a site whose line does
/// not is suspect (a new user's trial on zserge/jsmn: clangd 14 gave `main`'s incoming calls at
/// `  }` and at line 78 of a 77-line file, mixing up the `main`s of several programs). True when
/// the line cannot be read, and for names a call does not spell: operators, constructors
/// (`constructor`, Python's dunder methods), anything that is not an identifier.
fn site_names_callee(site: &Location, callee: &str) -> bool {
    let identifier = !callee.is_empty()
        && callee
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        && !callee.starts_with("operator")
        && callee != "constructor"
        && !(callee.starts_with("__") && callee.ends_with("__"));
    match &site.line_text {
        Some(text) if identifier => text.contains(callee),
        _ => true,
    }
}

/// `files` (in path order) reordered so that the files of the most common extension come first,
/// ties going to the extension met first; path order is kept within an extension. Extensions
/// compare as written (`.py` and `.PY` are two).
fn by_most_common_extension(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let extension = |path: &PathBuf| path.extension().map(|ext| ext.to_os_string());
    let mut counts: HashMap<Option<std::ffi::OsString>, usize> = HashMap::new();
    for file in &files {
        *counts.entry(extension(file)).or_default() += 1;
    }
    let mut files = files;
    // A stable sort: equal counts keep path order, so ties go to the extension met first.
    crate::sorting::sort_by_key(&mut files, |file| {
        std::cmp::Reverse(counts[&extension(file)])
    });
    files
}

/// [`Target::text_document_position`]'s text without a context, written by hand: the bytes
/// `serde_json` writes for it (issue 15: serialising the struct cost the loop about 2.5k
/// instructions a request, the URI about 1.2k more). The URI's JSON string is remembered for
/// the last path, as the loop asks about the same document again and again.
fn position_params_text(path: &Path, position: lsp_types::Position) -> String {
    thread_local! {
        static LAST_URI: std::cell::RefCell<Option<(PathBuf, String)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST_URI.with(|last| {
        let mut last = last.borrow_mut();
        if last
            .as_ref()
            .is_none_or(|(known, _)| known.as_os_str() != path.as_os_str())
        {
            let uri = serde_json::to_string(&document_uri(path)).unwrap_or_default();
            *last = Some((path.to_path_buf(), uri));
        }
        let uri = last.as_ref().map_or("", |(_, uri)| uri.as_str());
        // Pushed piece by piece: `write!`'s formatting machinery cost about 900 instructions
        // here (issue 15).
        let mut text = String::with_capacity(64 + uri.len());
        text.push_str("{\"position\":{\"character\":");
        push_decimal(&mut text, position.character);
        text.push_str(",\"line\":");
        push_decimal(&mut text, position.line);
        text.push_str("},\"textDocument\":{\"uri\":");
        text.push_str(uri);
        text.push_str("}}");
        text
    })
}

/// `value` in decimal onto `text` (what `write!(text, "{value}")` writes, without the
/// formatting machinery).
pub(crate) fn push_decimal(text: &mut String, mut value: u32) {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    text.extend(digits[start..].iter().map(|&digit| char::from(digit)));
}

fn document_uri(path: &Path) -> String {
    match uri::path_to_uri_string(path) {
        Ok(uri) => uri,
        // Synced paths are canonical, hence absolute; this cannot happen in practice.
        Err(_) => format!("file://{}", path.display()),
    }
}

/// The files whose first analysis wait ([`wait_analysed`]) a session has already done,
/// shared by every clone of a [`Queries`] (and by a frontend that builds one per request, such
/// as MCP, through [`Queries::with_analysed_files`]). Keyed by server and canonical path, as
/// bytes (issue 15: `Path`'s own hash walks a path a byte at a time; for a canonical path byte
/// equality is its equality, and a spelling that is not canonical only waits once more).
#[derive(Debug, Clone, Default)]
pub struct AnalysedFiles(Arc<Mutex<HashMap<AnalysingProcess, HashSet<OsString>>>>);

/// Whose analysis an [`AnalysedFiles`] entry records: one process of one configured server (a
/// restart, or a session's client going on in process, starts one that has analysed nothing:
/// a typescript-language-server asked at once answered a definition with its import line).
type AnalysingProcess = (crate::process::ServerId, u32);

impl AnalysedFiles {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<AnalysingProcess, HashSet<OsString>>) -> R) -> R {
        match self.0.lock() {
            Ok(mut files) => f(&mut files),
            // A panicked holder only loses the cache: waiting again is safe.
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Record that `path`'s first analysis wait on `server`'s process is over. Recorded once the
    /// wait ends, not as it begins: queries asked meanwhile wait too (helper-71: six references
    /// asked at once of a fresh typescript-language-server came back with 1, 5, 1, 17, 20 and
    /// 17 locations where each had 20 or 17, the ones after the first sent at once while the
    /// first waited for the project to load; three `lspc references` printed "no references
    /// found").
    fn record(&self, server: &ServerInfo, path: &Path) {
        self.with(|files| {
            files
                .entry((server.server_id, server.pid))
                .or_default()
                .insert(path.as_os_str().to_owned())
        });
    }

    /// Whether `path` had its first analysis wait on `server`'s process already (no wait is
    /// due). Looked up by the borrowed path: no key is built (issue 15: this runs in every
    /// query's turn).
    fn contains(&self, server: &ServerInfo, path: &Path) -> bool {
        self.with(|files| {
            files
                .get(&(server.server_id, server.pid))
                .is_some_and(|paths| paths.contains(path.as_os_str()))
        })
    }
}

/// Query files found to be canonical regular files ([`uri::canonical`] of the path is the path),
/// shared by every clone of a [`Queries`] (issue 15: `canonicalize` costs one `readlink` per
/// path component on every query). Only the instant route trusts it, and only as far as the
/// loop's own `stat` and read of the file confirm it: a file that went away or became a
/// directory fails its sync, and the query then takes the blocking route, which checks the path
/// afresh (and forgets it here). A path given through a symlink is never recorded, so a
/// retargeted link is always resolved again.
#[derive(Debug, Clone, Default)]
struct CanonicalFiles(Arc<Mutex<HashSet<OsString>>>);

impl CanonicalFiles {
    fn with<R>(&self, f: impl FnOnce(&mut HashSet<OsString>) -> R) -> R {
        match self.0.lock() {
            Ok(mut files) => f(&mut files),
            // A panicked holder only loses the cache's consistency: start over.
            Err(poisoned) => {
                let mut files = poisoned.into_inner();
                files.clear();
                f(&mut files)
            }
        }
    }
}

/// The query layer: one per frontend thread (cheap to clone via [`Queries::with_tag`]).
#[derive(Debug, Clone)]
pub struct Queries {
    op_sender: LoopSender<Op>,
    root: PathBuf,
    timeout: Duration,
    tag: Option<u64>,
    analysed: AnalysedFiles,
    canonical_files: CanonicalFiles,
    /// Texts of the files results point into, checked by one `stat` each (shared by clones).
    source_cache: locations::SourceCache,
}

impl Queries {
    /// Queries through `op_sender`; `root` is the workspace root (for messages and for finding a
    /// file when a workspace query names none); `timeout` bounds each sync, readiness wait and
    /// request.
    pub fn new(op_sender: LoopSender<Op>, root: PathBuf, timeout: Duration) -> Queries {
        Queries {
            op_sender,
            root,
            timeout,
            tag: None,
            analysed: AnalysedFiles::default(),
            canonical_files: CanonicalFiles::default(),
            source_cache: locations::SourceCache::default(),
        }
    }

    /// How many result files' texts came from the session's cache instead of the disk.
    pub fn source_cache_hits(&self) -> u64 {
        self.source_cache.hits()
    }

    /// The same queries, sharing `analysed` (a session's record of first analysis waits) so a
    /// frontend that builds a [`Queries`] per request waits only once per file.
    pub fn with_analysed_files(&self, analysed: AnalysedFiles) -> Queries {
        Queries {
            analysed,
            ..self.clone()
        }
    }

    /// The same queries, whose LSP requests carry `tag` so an [`Op::Cancel`] can cancel them.
    pub fn with_tag(&self, tag: Option<u64>) -> Queries {
        Queries {
            tag,
            ..self.clone()
        }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `textDocument/definition`, `declaration`, `typeDefinition` or `implementation` at `at`.
    /// Waits for indexing (all of them may answer with another file).
    pub fn definition(
        &self,
        at: &TextPosition,
        kind: DefinitionKind,
    ) -> Result<LocationsResult, QueryError> {
        let (mut target, answer, incomplete) =
            self.first_answer(&at.file, Some(at), FirstRequest::definition(kind))?;
        // clangd's background index may be older than the files it points into: each such
        // file is opened (its diagnostics waited for: clangd's index then has its open text)
        // and the question asked once more.
        let locations = definition_locations(&mut target, parse_locations(&answer));
        let not_showing = not_showing_the_name(&target, &locations);
        let behind = behind_the_index(&target, &locations, &not_showing);
        if behind.is_empty() {
            let note = stale_index_note(&target, &not_showing);
            return Ok(LocationsResult {
                incomplete: with_note(incomplete, note),
                locations,
                server: target.server.name,
            });
        }
        for file in &behind {
            log::debug!(
                "{}: the definition in {} may be older than the file (it lacks the name asked, \
                 or the file changed on disk); opening it",
                target.server.name,
                file.display()
            );
            wait_analysed(&self.op_sender, file, &target.server.name, self.timeout);
        }
        let again = FirstRequest::definition(kind);
        let params = (again.params)(&target).into_value();
        let answer = self.request(&target, again.method, params)?;
        Ok(definition_result(target, &answer, incomplete))
    }

    /// `textDocument/references` at `at`, sorted by path, line and column. Waits for indexing.
    /// clangd without a compilation database is asked again once the files that mention the
    /// name are open (see `unparsed_files.rs`).
    pub fn references(
        &self,
        at: &TextPosition,
        include_declaration: bool,
    ) -> Result<LocationsResult, QueryError> {
        let (target, answer, incomplete) = self.first_answer(
            &at.file,
            Some(at),
            FirstRequest::references(include_declaration),
        )?;
        if let Some((again, note)) =
            self.references_from_unparsed_files(&target, include_declaration)
        {
            let incomplete = match (incomplete, note) {
                (Some(first), Some(second)) => Some(format!("{first}; {second}")),
                (first, second) => first.or(second),
            };
            return Ok(references_result(target, &again, incomplete));
        }
        Ok(references_result(target, &answer, incomplete))
    }

    /// `textDocument/hover` at `at`; `None` when the server has nothing to show.
    pub fn hover(&self, at: &TextPosition) -> Result<Option<HoverResult>, QueryError> {
        let (target, answer, _) = self.first_answer(&at.file, Some(at), FirstRequest::hover())?;
        Ok(hover_result(target, &answer))
    }

    /// `textDocument/documentSymbol` for `file`: a tree when the server answers hierarchically.
    pub fn document_symbols(&self, file: &Path) -> Result<Vec<Symbol>, QueryError> {
        let (target, answer, _) =
            self.first_answer(file, None, FirstRequest::document_symbols())?;
        Ok(document_symbols_result(target, &answer))
    }

    /// `workspace/symbol` for `query` (LSP 3.17 §`workspace_symbol`); the contract's shape of
    /// [`Queries::workspace_symbols_result`].
    pub fn workspace_symbols(
        &self,
        query: &str,
        file_hint: Option<&Path>,
    ) -> Result<Vec<Symbol>, QueryError> {
        self.workspace_symbols_result(query, file_hint)
            .map(|result| result.symbols)
    }

    /// `workspace/symbol` for `query`, asked of a server serving `file_hint`, or when none is
    /// given, of the server of the most common kind of file under the root that advertises
    /// `workspaceSymbolProvider` ([`Queries::sync_file_with_capability`]). Waits for
    /// indexing. Every other running instance of that server (one per project root, issue 17)
    /// is asked too and its symbols are appended, duplicates (same name, kind and location)
    /// left out; an instance that fails is logged and skipped.
    pub fn workspace_symbols_result(
        &self,
        query: &str,
        file_hint: Option<&Path>,
    ) -> Result<SymbolsResult, QueryError> {
        let (method, capability) = ("workspace/symbol", "workspaceSymbolProvider");
        let (doc, server) = match file_hint {
            Some(file) => {
                let doc = self.sync(file)?;
                let server = pick_server(&doc, method, capability)?;
                (doc, server)
            }
            None => self.sync_file_with_capability(method, capability)?,
        };
        let files = SourceFiles::new(server.encoding);
        let mut target = Target {
            doc,
            server,
            position: lsp_types::Position::default(),
            files,
        };
        let incomplete = self.wait_ready(&mut target);
        let answer = self.request(&target, method, json!({ "query": query }))?;
        let path = target.doc.path.clone();
        target.files.add_document(&path, target.doc.text.clone());
        let mut found = symbols::parse_symbols(&answer, None, &mut target.files);
        for other in crate::engine::running_servers_with(&self.op_sender) {
            if other.server_id == target.server.server_id
                || other.name != target.server.name
                || !other.supports("workspaceSymbolProvider")
            {
                continue;
            }
            let answer = match self.request_to(&other, method, json!({ "query": query })) {
                Ok(answer) => answer,
                Err(error) => {
                    log::warn!("{method}: one instance of {} failed: {error}", other.name);
                    continue;
                }
            };
            let mut files = SourceFiles::new(other.encoding);
            for symbol in symbols::parse_symbols(&answer, None, &mut files) {
                if !found.iter().any(|known| {
                    known.name == symbol.name
                        && known.kind == symbol.kind
                        && known.location == symbol.location
                }) {
                    found.push(symbol);
                }
            }
        }
        Ok(SymbolsResult {
            symbols: found,
            server: target.server.name,
            incomplete,
        })
    }

    /// `textDocument/prepareCallHierarchy` at `at`, then for a direction
    /// `callHierarchy/incomingCalls` or `outgoingCalls` for every prepared item. Waits for
    /// indexing.
    pub fn call_hierarchy(
        &self,
        at: &TextPosition,
        direction: Option<CallDirection>,
    ) -> Result<CallHierarchyResult, QueryError> {
        let (mut target, answer, incomplete) = self.first_answer(
            &at.file,
            Some(at),
            FirstRequest::position(
                "textDocument/prepareCallHierarchy",
                "callHierarchyProvider",
                Readiness::Indexed,
            ),
        )?;
        let items = symbols::parse_hierarchy_items(&answer, &mut target.files);
        let mut calls = Vec::new();
        let mut incomplete = incomplete;
        let mut add_note = |note: String| {
            incomplete = Some(match incomplete.take() {
                Some(first) => format!("{first}; {note}"),
                None => note,
            });
        };
        // Callers are found where references are: in the files the server has parsed.
        let mut outside_own = Vec::new();
        let mut name = String::new();
        if direction == Some(CallDirection::Incoming) && !items.is_empty() {
            if let Some(opened) = self.open_files_mentioning(&target, "its incoming calls") {
                if let Some(note) = opened.note(&target.server.name) {
                    add_note(note);
                }
                outside_own = opened.outside_own;
                name = opened.name;
            }
        }
        // Call sites whose line does not show the called name, with that name.
        let mut sites_not_naming: Vec<(String, Location)> = Vec::new();
        if let Some(direction) = direction {
            let (calls_method, item_key) = match direction {
                CallDirection::Incoming => ("callHierarchy/incomingCalls", "from"),
                CallDirection::Outgoing => ("callHierarchy/outgoingCalls", "to"),
            };
            for item in &items {
                let answer = self.request(&target, calls_method, json!({ "item": item.raw }))?;
                for call in answer.as_array().into_iter().flatten() {
                    let Some(other) = call
                        .get(item_key)
                        .and_then(|other| symbols::parse_hierarchy_item(other, &mut target.files))
                    else {
                        log::debug!("ignoring a malformed call: {call}");
                        continue;
                    };
                    // `fromRanges` lie in the caller: the `from` item (incoming) or the
                    // prepared item itself (outgoing).
                    let sites_path = match direction {
                        CallDirection::Incoming => other.location.path.clone(),
                        CallDirection::Outgoing => item.location.path.clone(),
                    };
                    // Each site once, in the server's order: pyright 1.1.414 repeats a call's
                    // range in `fromRanges` (a new user's trial on pallets/itsdangerous).
                    let mut call_sites: Vec<Location> = Vec::new();
                    for range in call
                        .get("fromRanges")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(parse_range)
                    {
                        let site = target.files.location(&sites_path, range);
                        if !call_sites.contains(&site) {
                            call_sites.push(site);
                        }
                    }
                    let callee = match direction {
                        CallDirection::Incoming => &item.name,
                        CallDirection::Outgoing => &other.name,
                    };
                    sites_not_naming.extend(
                        call_sites
                            .iter()
                            .filter(|site| !site_names_callee(site, callee))
                            .map(|site| (callee.clone(), site.clone())),
                    );
                    calls.push(Call {
                        item: other,
                        call_sites,
                    });
                }
            }
        }
        if let Some((callee, first)) = sites_not_naming.first() {
            add_note(format!(
                "{} of the call sites {} gave {} not show `{callee}` on {} line ({}:{}): a call \
                 through a macro, or the server taking functions of one name for one (clangd 14 \
                 merges the `main`s of several programs)",
                sites_not_naming.len(),
                target.server.name,
                if sites_not_naming.len() == 1 {
                    "does"
                } else {
                    "do"
                },
                if sites_not_naming.len() == 1 {
                    "its"
                } else {
                    "their"
                },
                self.display(&first.path),
                first.line,
            ));
        }
        // tsserver answers a call hierarchy from the file's own project alone, unlike references
        // (helper-50 on panva/jose: `checkKeyType`'s 56 calls in `test/`, which has its own
        // tsconfig, were missing, where `references` found them), so the files outside it that
        // mention the name and hold no listed call are named (a mention may be a comment).
        let unsearched: Vec<String> = outside_own
            .iter()
            .filter(|path| !calls.iter().any(|call| &call.item.location.path == *path))
            .map(|path| self.display(path))
            .collect();
        if !unsearched.is_empty() {
            const SHOWN: usize = 5;
            let mut files = unsearched
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if unsearched.len() > SHOWN {
                files += &format!(" and {} more", unsearched.len() - SHOWN);
            }
            add_note(format!(
                "{} answers incoming calls from the file's own tsconfig project only: {} that \
                 {} {name} outside it {} not searched: {files} (`references` lists uses there)",
                target.server.name,
                crate::output::plural(unsearched.len(), "file", "files"),
                if unsearched.len() == 1 {
                    "mentions"
                } else {
                    "mention"
                },
                if unsearched.len() == 1 { "was" } else { "were" },
            ));
        }
        Ok(CallHierarchyResult {
            items,
            calls,
            direction,
            server: target.server.name,
            incomplete,
        })
    }

    /// `textDocument/prepareTypeHierarchy` at `at`, then `typeHierarchy/supertypes` or
    /// `subtypes` for every prepared item. Waits for indexing.
    pub fn type_hierarchy(
        &self,
        at: &TextPosition,
        direction: TypeDirection,
    ) -> Result<TypeHierarchyResult, QueryError> {
        let (mut target, answer, incomplete) = self.first_answer(
            &at.file,
            Some(at),
            FirstRequest::position(
                "textDocument/prepareTypeHierarchy",
                "typeHierarchyProvider",
                Readiness::Indexed,
            ),
        )?;
        let items = symbols::parse_hierarchy_items(&answer, &mut target.files);
        let related_method = match direction {
            TypeDirection::Supertypes => "typeHierarchy/supertypes",
            TypeDirection::Subtypes => "typeHierarchy/subtypes",
        };
        let mut types = Vec::new();
        for item in &items {
            let answer = self.request(&target, related_method, json!({ "item": item.raw }))?;
            types.extend(symbols::parse_hierarchy_items(&answer, &mut target.files));
        }
        Ok(TypeHierarchyResult {
            items,
            direction,
            types,
            server: target.server.name,
            incomplete,
        })
    }

    /// `textDocument/signatureHelp` at `at`; `None` when there is no signature there.
    pub fn signature_help(
        &self,
        at: &TextPosition,
    ) -> Result<Option<SignatureHelpResult>, QueryError> {
        let (target, answer, _) =
            self.first_answer(&at.file, Some(at), FirstRequest::signature_help())?;
        Ok(parse_signature_help(&answer, target.server.name))
    }

    // ----- helpers ------------------------------------------------------------------------

    /// Sync `file` (relative to the current directory or absolute).
    fn sync(&self, file: &Path) -> Result<SyncedDocument, QueryError> {
        let path = self.checked_path(file)?;
        Ok(sync_with(&self.op_sender, path, self.timeout)?)
    }

    /// The canonical path of `file`, which must be an existing regular file.
    fn checked_path(&self, file: &Path) -> Result<PathBuf, QueryError> {
        let path = uri::canonical(file);
        // One stat (the common case is a regular file).
        let metadata = std::fs::metadata(&path);
        if metadata.as_ref().is_ok_and(|metadata| metadata.is_file()) {
            if path == file {
                self.canonical_files
                    .with(|files| files.insert(path.clone().into_os_string()));
            }
            return Ok(path);
        }
        self.canonical_files
            .with(|files| files.remove(file.as_os_str()));
        if metadata.is_ok_and(|metadata| metadata.is_dir()) {
            return Err(QueryError::File(format!(
                "cannot read {}: it is a directory (give a file)",
                self.display(&path)
            )));
        }
        Err(QueryError::File(format!(
            "cannot read {}: no such file",
            self.display(&path)
        )))
    }

    /// Sync a file under the root whose servers include one advertising `capability` (for
    /// workspace queries without a file), and that server: the first file, in path order, of
    /// the most common extension whose server does, so the workspace's main language answers
    /// rather than whichever server claims the first path (a `.devcontainer/*.sh` ahead of a
    /// Python package) or a server that cannot answer at all (issue 16: the yaml-language-server
    /// of a Python repository's `.github/*.yml`, more numerous than its `.py` files). Knowing
    /// a capability takes a started server, so one file per extension is synced until one
    /// serves; the servers met that do not are named when none does (exit 3).
    fn sync_file_with_capability(
        &self,
        method: &str,
        capability: &str,
    ) -> Result<(SyncedDocument, ServerInfo), QueryError> {
        let files = crate::walk::list_files(&self.root, std::slice::from_ref(&self.root))
            .map_err(|error| QueryError::File(error.to_string()))?;
        let mut passed_over: Vec<Option<std::ffi::OsString>> = Vec::new();
        let mut without_capability: Vec<String> = Vec::new();
        let mut cannot_start: Option<EngineError> = None;
        // A file its tsconfig leaves out goes last: tsserver would answer from the inferred
        // project that file alone opens (a new user's trial on vercel/ms: `jest.config.ts`, met
        // first, made `workspace-symbols parse` find nothing).
        // So does a Python file pyright's `include` leaves out: opened to pick the server, it
        // got pyright's diagnostics, which the project's own `pyright` never reports (a new
        // user's agent on pallets/itsdangerous: `docs/conf.py`'s unresolved imports among its
        // new diagnostics after a `workspace_symbols`).
        let typescript = crate::project::TypeScriptProjects::new(&self.root);
        let pyright = crate::project::PyrightProject::load(&self.root);
        let pyright_leaves_out = |file: &Path| {
            file.extension()
                .is_some_and(|extension| extension == "py" || extension == "pyi")
                && pyright
                    .as_ref()
                    .is_some_and(|project| project.leaves_out(file))
        };
        let mut left_out: Vec<PathBuf> = Vec::new();
        let mut candidates = by_most_common_extension(files).into_iter();
        let mut trying_left_out = false;
        loop {
            let file = match candidates.next() {
                Some(file)
                    if !trying_left_out
                        && (typescript.leaves_out(&file) || pyright_leaves_out(&file)) =>
                {
                    left_out.push(file);
                    continue;
                }
                Some(file) => file,
                None if !trying_left_out && !left_out.is_empty() => {
                    trying_left_out = true;
                    candidates = std::mem::take(&mut left_out).into_iter();
                    continue;
                }
                None => break,
            };
            let extension = file.extension().map(|ext| ext.to_os_string());
            if passed_over.contains(&extension) {
                continue;
            }
            let doc = match sync_with(&self.op_sender, file, self.timeout) {
                Err(EngineError::NoServer { .. }) | Err(EngineError::InvalidInput(_)) => continue,
                // Said only if no kind of file has a server that can answer.
                Err(error @ EngineError::Spawn { .. }) => {
                    passed_over.push(extension);
                    cannot_start.get_or_insert(error);
                    continue;
                }
                other => other?,
            };
            if let Some(server) = doc
                .servers
                .iter()
                .find(|server| server.supports(capability))
            {
                let server = server.clone();
                return Ok((doc, server));
            }
            passed_over.push(extension);
            for server in &doc.servers {
                if !without_capability.contains(&server.name) {
                    without_capability.push(server.name.clone());
                }
            }
        }
        match without_capability.len() {
            0 => Err(cannot_start
                .map_or_else(|| QueryError::NoServer(self.root.clone()), QueryError::from)),
            1 => Err(QueryError::Unsupported {
                server: without_capability.remove(0),
                capability: capability.to_owned(),
                method: method.to_owned(),
            }),
            _ => Err(QueryError::UnsupportedByAll {
                servers: without_capability,
                capability: capability.to_owned(),
                method: method.to_owned(),
            }),
        }
    }

    /// The first request of a query, `method` at `at` (or about the whole `file` when `at` is
    /// `None`) with the params `params` builds from the target, in one loop round trip when no
    /// readiness wait is due (issue 15, [`Op::SyncRequest`]): the loop syncs the file from disk,
    /// converts the position from exactly the text it sent and sends the request in the same
    /// turn. When `readiness` asks for a wait (the file's first question of the session, or a
    /// server reporting `$/progress` for a cross-file question) nothing is sent in that turn: the
    /// query waits ([`wait_analysed`], [`wait_until_ready`]), then syncs the file again and asks
    /// in that turn ([`Queries::sync_and_ask`]). Returns the target, the server's answer and the
    /// "incomplete" note of a readiness wait that ran out.
    fn first_answer(
        &self,
        file: &Path,
        at: Option<&TextPosition>,
        first: FirstRequest,
    ) -> Result<(Target, Value, Option<String>), QueryError> {
        let path = self.checked_path(file)?;
        let readiness = first.readiness;
        let analysed = self.analysed.clone();
        let (mut target, answer) = self.sync_and_ask(
            &path,
            at,
            &first,
            Box::new(move |target| {
                readiness.sends_in_turn(&analysed, &target.server, &target.doc.path)
            }),
        )?;
        let method = first.method;
        if let Some(answer) = answer {
            let answer = answer.map_err(QueryError::Engine)?;
            if log::log_enabled!(log::Level::Debug) {
                log::debug!(
                    "{}: {method} sent in its sync's loop turn, answered {answer}",
                    target.server.name
                );
            }
            let empty = answer.is_null() || answer.as_array().is_some_and(Vec::is_empty);
            let ask_again = readiness == Readiness::EmptyAnswerWaits
                && empty
                && !self.analysed.contains(&target.server, &target.doc.path);
            if !ask_again {
                return Ok((target, answer, None));
            }
            // Asked again below, once the file's first analysis wait is over.
            log::debug!(
                "{}: {method} answered nothing before the file's diagnostics settled",
                target.server.name
            );
        }
        wait_published(&self.op_sender, &target.server, self.timeout);
        // Waited for: the readiness wait below does not wait for them again.
        target.server.awaiting_publish.clear();
        let incomplete = match readiness {
            Readiness::Analysed | Readiness::EmptyAnswerWaits => {
                if !self.analysed.contains(&target.server, &target.doc.path) {
                    wait_analysed(
                        &self.op_sender,
                        &target.doc.path,
                        &target.server.name,
                        self.timeout,
                    );
                    self.analysed.record(&target.server, &target.doc.path);
                }
                None
            }
            Readiness::Indexed => self.wait_ready(&mut target),
        };
        // Synced again and asked in that turn: the document may have been closed meanwhile
        // (the LRU bound, once its wait unpinned it: typescript-language-server then answers
        // nothing, helper-72 with `--open-documents 2`), and the position is converted from
        // the text the server has now.
        let (target, answer) = self.sync_and_ask(&path, at, &first, Box::new(|_| true))?;
        let answer = answer
            .ok_or(QueryError::Engine(EngineError::Gone))?
            .map_err(QueryError::Engine)?;
        log::debug!("{}: {method} answered {answer}", target.server.name);
        Ok((target, answer, incomplete))
    }

    /// One loop round trip ([`Op::SyncRequest`]): the loop syncs `path` from disk, builds the
    /// target from exactly the text it sent (the position converted into the server's
    /// encoding) and, when `send(target)` says so, sends `first`'s request in the same turn,
    /// the document kept open while it is in flight. The target, and the answer when the
    /// request was sent (`None` when it was not).
    fn sync_and_ask(
        &self,
        path: &Path,
        at: Option<&TextPosition>,
        first: &FirstRequest,
        send: Box<dyn FnOnce(&Target) -> bool + Send>,
    ) -> Result<(Target, Option<Result<Value, EngineError>>), QueryError> {
        let (target_sender, target_receiver) = crossbeam_channel::bounded(1);
        let (answer_sender, answer_receiver) = crossbeam_channel::bounded(1);
        let root = self.root.clone();
        let cache = self.source_cache.clone();
        let at = at.cloned();
        let (timeout, tag) = (self.timeout, self.tag);
        let (method, capability) = (first.method, first.capability);
        let params = Arc::clone(&first.params);
        let build: RequestBuilder = Box::new(move |synced| {
            let target = synced
                .map_err(|error| QueryError::from(error.clone()))
                .and_then(|doc| {
                    build_target(doc.clone(), at.as_ref(), method, capability, &root, cache)
                });
            let request = match &target {
                Ok(target) if send(target) => Some(BuiltRequest {
                    server_id: target.server.server_id,
                    method: method.to_owned(),
                    params: params(target),
                    timeout,
                    retry: true,
                    tag,
                    reply: ReplyTo::Channel(answer_sender),
                    on_sent: None,
                }),
                // Dropping `answer_sender` tells the caller that nothing was sent.
                _ => None,
            };
            let _ = target_sender.send(target);
            request
        });
        self.op_sender
            .send(Op::SyncRequest {
                path: path.to_path_buf(),
                timeout: self.timeout,
                build,
                instant: false,
            })
            .map_err(|_| QueryError::Engine(EngineError::Gone))?;
        // Wait for the answer first: the target is already queued when it comes, so the caller
        // wakes once per request, not once for the target and again for the answer.
        let answer = crate::engine::recv_parked(&answer_receiver).ok();
        let target = target_receiver
            .recv()
            .map_err(|_| QueryError::Engine(EngineError::Gone))??;
        Ok((target, answer))
    }

    /// [`Queries::first_answer`] without blocking at all (issue 15): the loop's turn decides,
    /// and `decided` hears it. When the request went out in the sync's turn (no readiness wait
    /// due, the file synced, a server with the capability, the position on the file),
    /// `decided.sent` runs in the loop once the request is written, and `on_answer` then runs
    /// exactly once with `payload`, the target and the answer: on the server's reader thread for
    /// a successful answer, on the loop (or a session's proxy) for an error, timeout,
    /// cancellation or crash, maybe before `sent`. Otherwise `decided.not_sent(payload)` runs
    /// (on this thread or the loop), nothing sent: the caller runs the blocking route, which
    /// reaches the same outcome (the wait, or the same error). When the engine is gone,
    /// `payload` is dropped.
    fn start_first_answer<T: Send + 'static>(
        &self,
        file: &Path,
        at: Option<&TextPosition>,
        first: FirstRequest,
        payload: T,
        on_answer: OnAnswer<T>,
        decided: Decided<T>,
    ) {
        let FirstRequest {
            method,
            capability,
            readiness,
            params,
        } = first;
        let path = if self
            .canonical_files
            .with(|files| files.contains(file.as_os_str()))
        {
            file.to_path_buf()
        } else {
            match self.checked_path(file) {
                Ok(path) => path,
                Err(_) => return (decided.not_sent)(payload),
            }
        };
        let Decided { not_sent, sent } = decided;
        let analysed = self.analysed.clone();
        let root = self.root.clone();
        let cache = self.source_cache.clone();
        let at = at.cloned();
        let (timeout, tag) = (self.timeout, self.tag);
        let build: RequestBuilder = Box::new(move |synced| {
            let target = synced
                .map_err(|error| QueryError::from(error.clone()))
                .and_then(|doc| {
                    build_target(doc.clone(), at.as_ref(), method, capability, &root, cache)
                });
            let target = match target {
                Ok(target)
                    if method == "textDocument/references"
                        && unparsed_files::may_reach_unopened_files(
                            &target.server,
                            &target.doc.path,
                        ) =>
                {
                    log::debug!(
                        "{}: {method} not sent in its sync's turn: files it has not opened may hold references",
                        target.server.name
                    );
                    not_sent(payload);
                    return None;
                }
                Ok(target) if !readiness.wait_due(&analysed, &target.server, &target.doc.path) => {
                    target
                }
                Ok(target) => {
                    log::debug!(
                        "{}: {method} not sent in its sync's turn: a readiness wait is due",
                        target.server.name
                    );
                    not_sent(payload);
                    return None;
                }
                Err(error) => {
                    log::debug!("{method} not sent in its sync's turn: {error}");
                    not_sent(payload);
                    return None;
                }
            };
            let params = params(&target);
            let server_id = target.server.server_id;
            let continuation = move |answer: Result<AnswerBody, EngineError>| {
                if log::log_enabled!(log::Level::Debug) {
                    let thread = std::thread::current();
                    let shown = match &answer {
                        Ok(body) => body.to_string(),
                        Err(error) => format!("error: {error}"),
                    };
                    log::debug!(
                        "{}: {method} sent in its sync's loop turn, answered in its continuation on thread {}: {shown}",
                        target.server.name,
                        thread.name().unwrap_or("unnamed")
                    );
                }
                on_answer(payload, target, answer);
            };
            Some(BuiltRequest {
                server_id,
                method: method.to_owned(),
                params,
                timeout,
                retry: true,
                tag,
                reply: ReplyTo::continuation(Box::new(continuation)),
                on_sent: sent,
            })
        });
        // A closed loop drops the op, and the payload with it.
        let _ = self.op_sender.send(Op::SyncRequest {
            path,
            timeout: self.timeout,
            build,
            instant: true,
        });
    }

    /// Wait until the target's server is ready ([`wait_until_ready`]): on the file's first
    /// request of the session (per server) for its diagnostics to settle, then while the server
    /// reports progress. The "incomplete" note when it is still busy after the timeout.
    fn wait_ready(&self, target: &mut Target) -> Option<String> {
        let first_time = !self.analysed.contains(&target.server, &target.doc.path);
        let incomplete = wait_until_ready(
            &self.op_sender,
            &target.doc.path,
            &mut target.server,
            self.timeout,
            first_time,
        );
        if first_time {
            self.analysed.record(&target.server, &target.doc.path);
        }
        incomplete
    }

    fn request(&self, target: &Target, method: &str, params: Value) -> Result<Value, QueryError> {
        self.request_to(&target.server, method, params)
    }

    fn request_to(
        &self,
        server: &ServerInfo,
        method: &str,
        params: Value,
    ) -> Result<Value, QueryError> {
        request_with(
            &self.op_sender,
            server.server_id,
            method,
            params,
            self.timeout,
            self.tag,
        )
        .inspect(|answer| log::debug!("{}: {method} answered {answer}", server.name))
        .map_err(QueryError::Engine)
    }

    fn display(&self, path: &Path) -> String {
        uri::relative_display(path, &self.root)
    }
}

/// A query's first request: its method, the capability that serves it, the wait it needs and
/// how its params are built from the target.
struct FirstRequest {
    method: &'static str,
    capability: &'static str,
    readiness: Readiness,
    params: ParamsBuilder,
}

impl FirstRequest {
    /// `method` with a `TextDocumentPositionParams` (LSP 3.17 §`textDocumentPositionParams`).
    fn position(
        method: &'static str,
        capability: &'static str,
        readiness: Readiness,
    ) -> FirstRequest {
        FirstRequest {
            method,
            capability,
            readiness,
            params: Arc::new(|target: &Target| target.text_document_position(None::<()>)),
        }
    }

    /// Every kind can land in another file, which the server must have indexed: clangd answers
    /// a definition with the header's declaration until its index has the source.
    fn definition(kind: DefinitionKind) -> FirstRequest {
        FirstRequest::position(kind.method(), kind.capability(), Readiness::Indexed)
    }

    fn references(include_declaration: bool) -> FirstRequest {
        FirstRequest {
            method: "textDocument/references",
            capability: "referencesProvider",
            readiness: Readiness::Indexed,
            params: Arc::new(move |target: &Target| {
                #[derive(serde::Serialize)]
                struct Context {
                    #[serde(rename = "includeDeclaration")]
                    include_declaration: bool,
                }
                target.text_document_position(Some(Context {
                    include_declaration,
                }))
            }),
        }
    }

    fn hover() -> FirstRequest {
        FirstRequest::position("textDocument/hover", "hoverProvider", Readiness::Analysed)
    }

    fn document_symbols() -> FirstRequest {
        FirstRequest {
            method: "textDocument/documentSymbol",
            capability: "documentSymbolProvider",
            readiness: Readiness::EmptyAnswerWaits,
            params: Arc::new(|target: &Target| {
                #[derive(serde::Serialize)]
                struct Params<'a> {
                    #[serde(rename = "textDocument")]
                    text_document: TextDocument<'a>,
                }
                let uri = document_uri(&target.doc.path);
                RequestParams::of(&Params {
                    text_document: TextDocument { uri: &uri },
                })
            }),
        }
    }

    fn signature_help() -> FirstRequest {
        FirstRequest {
            method: "textDocument/signatureHelp",
            capability: "signatureHelpProvider",
            readiness: Readiness::Analysed,
            params: Arc::new(|target: &Target| {
                // `SignatureHelpContext`: invoked (triggerKind 1), not a retrigger.
                #[derive(serde::Serialize)]
                struct Context {
                    #[serde(rename = "isRetrigger")]
                    is_retrigger: bool,
                    #[serde(rename = "triggerKind")]
                    trigger_kind: u32,
                }
                target.text_document_position(Some(Context {
                    is_retrigger: false,
                    trigger_kind: 1,
                }))
            }),
        }
    }
}

/// What an instant query does with its first answer (or the error that ended its request), run
/// by the thread that has it: the server's reader, or the loop ([`Queries::start_first_answer`]).
type OnAnswer<T> = Box<dyn FnOnce(T, Target, Result<AnswerBody, EngineError>) + Send>;

/// How the caller of [`Queries::start_first_answer`] hears the loop's decision.
struct Decided<T> {
    /// Nothing was sent: the payload comes back.
    not_sent: Box<dyn FnOnce(T) + Send>,
    /// The loop took the request (run once it is written).
    sent: Option<Box<dyn FnOnce() + Send>>,
}

/// The locations of a definition or references answer that resolve to files, in the server's
/// order.
fn resolved_locations(target: &mut Target, answer: &Value) -> Vec<Location> {
    resolve_all(target, parse_locations(answer))
}

fn resolve_all(target: &mut Target, raw: Vec<locations::RawLocation>) -> Vec<Location> {
    raw.iter()
        .filter_map(|raw| target.files.resolve(raw))
        .collect()
}

/// A definition-like or references answer's raw locations: typed from the reader's raw text
/// ([`typed_answer::locations`]), else through a `Value` as [`parse_locations`] reads them.
fn raw_locations_of(answer: &AnswerBody) -> Vec<locations::RawLocation> {
    match answer {
        AnswerBody::Raw(raw) => match typed_answer::locations(raw.get()) {
            Some(found) => {
                log::debug!("locations read by the typed route");
                found
            }
            None => parse_locations(&serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
        },
        AnswerBody::Tree(value) => parse_locations(value),
    }
}

/// A definition answer's locations, resolved, in the server's order without exact duplicates.
fn definition_locations(target: &mut Target, raw: Vec<locations::RawLocation>) -> Vec<Location> {
    let mut locations = resolve_all(target, raw);
    dedup_in_order(&mut locations);
    locations
}

/// An instant definition answer (typed when it is raw), resolved once: its result, and whether
/// it points into a file other than the asked one that may be newer than the server's index
/// ([`behind_the_index`]; only for servers that answer from a disk index), when the caller
/// asks again the blocking way rather than finish with the result's note.
fn instant_definition(mut target: Target, answer: &AnswerBody) -> (LocationsResult, bool) {
    let locations = definition_locations(&mut target, raw_locations_of(answer));
    let not_showing = not_showing_the_name(&target, &locations);
    let behind = !behind_the_index(&target, &locations, &not_showing).is_empty();
    let incomplete = stale_index_note(&target, &not_showing);
    let result = LocationsResult {
        incomplete,
        locations,
        server: target.server.name,
    };
    (result, behind)
}

/// The identifier at the asked position of `target`'s document; `None` for a whole-file
/// request or a position on no identifier.
fn asked_name(target: &Target) -> Option<String> {
    let doc = &target.doc;
    let line = match &doc.line_index {
        // The engine's index: no scan of a long file per definition (issue 15).
        Some(index) => index.line_text(&doc.text, target.position.line)?,
        None => doc.text.split('\n').nth(target.position.line as usize)?,
    };
    let encoding = target.server.encoding;
    let mut units = 0;
    let mut column = 1;
    for character in line.chars() {
        if units >= target.position.character {
            break;
        }
        units += encoding.units_of(character);
        column += 1;
    }
    crate::word_occurrences::identifier_at(line, column)
}

/// The locations of a definition answer that do not show the name asked about, with that
/// name ([`not_showing_the_name`]).
struct NotShowing<'a> {
    name: String,
    locations: Vec<&'a Location>,
}

/// The locations of a definition answer from a server answering from a disk index
/// ([`ServerInfo::indexed_from_disk`], clangd) that do not show the name asked about where
/// they point on disk (the name, whole, at the location's start column): the index may
/// describe an older text of that file. Comparing the whole line passed a comment naming the
/// function on the line above it and a column shifted on the same line (a new user's trial on
/// DaveGamble/cJSON: `cJSON.c:2594` where 2595 was right, `1968:23` for `1968:25`). None for
/// other servers.
fn not_showing_the_name<'a>(target: &Target, locations: &'a [Location]) -> NotShowing<'a> {
    let none = NotShowing {
        name: String::new(),
        locations: Vec::new(),
    };
    if !target.server.indexed_from_disk {
        return none;
    }
    let Some(name) = asked_name(target) else {
        return none;
    };
    let locations = locations
        .iter()
        .filter(|location| {
            location
                .line_text
                .as_deref()
                .is_some_and(|text| !shows_at(text, location.column, &name))
        })
        .collect();
    NotShowing { name, locations }
}

/// Whether `line` holds the identifier `name`, whole, at 1-based character `column`.
fn shows_at(line: &str, column: u32, name: &str) -> bool {
    let mut rest = line.chars().skip(column.saturating_sub(1) as usize);
    name.chars().all(|expected| rest.next() == Some(expected))
        && !rest
            .next()
            .is_some_and(crate::word_occurrences::is_identifier_char)
        && (column <= 1
            || !line
                .chars()
                .nth(column as usize - 2)
                .is_some_and(crate::word_occurrences::is_identifier_char))
}

/// The files other than the asked one that a definition answer from a disk index points into
/// and that may be newer than the index, each once: those that do not show the asked name
/// where the answer points (`not_showing`, [`not_showing_the_name`] of `locations`), and
/// those changed on disk since the server last had them open
/// ([`ServerInfo::changed_behind_index`]), whatever they show.
fn behind_the_index(
    target: &Target,
    locations: &[Location],
    not_showing: &NotShowing,
) -> Vec<PathBuf> {
    let changed = locations
        .iter()
        .filter(|location| target.server.changed_behind_index.contains(&location.path));
    let mut files: Vec<PathBuf> = Vec::new();
    for location in not_showing.locations.iter().copied().chain(changed) {
        if location.path != target.doc.path && !files.contains(&location.path) {
            files.push(location.path.clone());
        }
    }
    files
}

/// A note for definitions whose line does not show the name asked about
/// ([`not_showing_the_name`]), naming the first.
fn stale_index_note(target: &Target, not_showing: &NotShowing) -> Option<String> {
    let suspect = &not_showing.locations;
    let first = suspect.first()?;
    let name = &not_showing.name;
    Some(format!(
        "{} of the definitions {} gave {} not show `{name}` where {} ({}:{}:{}): its index \
         may be older than that file (clangd's background index follows a file changed on \
         disk once the file is open: ask for the file's diagnostics, then ask again), or the \
         name comes from a macro",
        suspect.len(),
        target.server.name,
        if suspect.len() == 1 { "does" } else { "do" },
        if suspect.len() == 1 {
            "it points"
        } else {
            "they point"
        },
        first
            .path
            .file_name()
            .map(|name| name.to_string_lossy())
            .unwrap_or_default(),
        first.line,
        first.column,
    ))
}

/// `first` and `second` joined with "; ", or whichever is there.
fn with_note(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(first), Some(second)) => Some(format!("{first}; {second}")),
        (first, second) => first.or(second),
    }
}

/// [`references_result`] of an instant answer (typed when it is raw).
fn references_result_of(
    mut target: Target,
    answer: &AnswerBody,
    incomplete: Option<String>,
) -> LocationsResult {
    let raw = raw_locations_of(answer);
    let locations = resolve_all(&mut target, raw);
    sorted_references(target, locations, incomplete)
}

/// [`hover_result`] of an instant answer: typed from the reader's raw text
/// ([`typed_answer::hover`]), else through a `Value`.
fn hover_result_of(target: Target, answer: AnswerBody) -> Option<HoverResult> {
    match answer {
        AnswerBody::Raw(raw) => match typed_answer::hover(raw.get()) {
            Some((text, range)) => {
                log::debug!("hover read by the typed route");
                hover_of(target, text, range)
            }
            None => hover_result(target, &AnswerBody::Raw(raw).into_value()),
        },
        AnswerBody::Tree(value) => hover_result(target, &value),
    }
}

/// A definition answer's locations, in the server's order without exact duplicates.
fn definition_result(
    mut target: Target,
    answer: &Value,
    incomplete: Option<String>,
) -> LocationsResult {
    let locations = definition_locations(&mut target, parse_locations(answer));
    let note = stale_index_note(&target, &not_showing_the_name(&target, &locations));
    LocationsResult {
        incomplete: with_note(incomplete, note),
        locations,
        server: target.server.name,
    }
}

/// A references answer's locations, sorted by path, line and column, without duplicates.
fn references_result(
    mut target: Target,
    answer: &Value,
    incomplete: Option<String>,
) -> LocationsResult {
    let locations = resolved_locations(&mut target, answer);
    sorted_references(target, locations, incomplete)
}

/// References sorted by path, line and column, without duplicates.
fn sorted_references(
    target: Target,
    mut locations: Vec<Location>,
    incomplete: Option<String>,
) -> LocationsResult {
    crate::sorting::sort_by(&mut locations, |a, b| {
        (&a.path, a.line, a.column, a.end_line, a.end_column).cmp(&(
            &b.path,
            b.line,
            b.column,
            b.end_line,
            b.end_column,
        ))
    });
    locations.dedup();
    LocationsResult {
        locations,
        server: target.server.name,
        incomplete,
    }
}

/// A hover answer's text and range; `None` when the server has nothing to show.
fn hover_result(target: Target, answer: &Value) -> Option<HoverResult> {
    let text = answer
        .get("contents")
        .map(hover::hover_contents_to_text)
        .unwrap_or_default();
    if text.is_empty() {
        return None;
    }
    let range = answer.get("range").and_then(parse_range);
    hover_of(target, text, range)
}

/// The hover of `text` (rendered) and its LSP `range`; `None` when `text` is empty.
fn hover_of(
    mut target: Target,
    text: String,
    range: Option<lsp_types::Range>,
) -> Option<HoverResult> {
    if text.is_empty() {
        return None;
    }
    let path = target.doc.path.clone();
    let range = range.map(|range| target.files.range(&path, range));
    Some(HoverResult {
        text,
        range,
        server: target.server.name,
    })
}

/// A documentSymbol answer as lspc's symbols (a tree when the server answers hierarchically).
fn document_symbols_result(mut target: Target, answer: &Value) -> Vec<Symbol> {
    let path = target.doc.path.clone();
    symbols::parse_symbols(answer, Some(&path), &mut target.files)
}

/// The [`Target`] of `at` in the synced `doc`: the server for `capability` and the position in
/// its encoding, (0, 0) without `at` (runs in the loop, in [`Op::SyncRequest`]'s builder).
fn build_target(
    doc: SyncedDocument,
    at: Option<&TextPosition>,
    method: &str,
    capability: &str,
    root: &Path,
    cache: locations::SourceCache,
) -> Result<Target, QueryError> {
    let server = pick_server(&doc, method, capability)?;
    let index = match &doc.line_index {
        Some(index) => Arc::clone(index),
        None => Arc::new(crate::text::LineIndex::new(&doc.text)),
    };
    let position = match at {
        Some(at) => position::resolve_position_in(&doc.text, &index, at, server.encoding, &|| {
            uri::relative_display(&doc.path, root)
        })?,
        None => lsp_types::Position::default(),
    };
    let mut files = SourceFiles::with_cache(server.encoding, cache);
    files.add_indexed_document(&doc.path, doc.text.clone(), index);
    Ok(Target {
        doc,
        server,
        position,
        files,
    })
}

/// The first server (primary first) advertising `capability`; [`QueryError::Unsupported`]
/// naming the primary when none does, and [`QueryError::PrimaryFailed`] when the primary is
/// not running.
fn pick_server(
    doc: &SyncedDocument,
    method: &str,
    capability: &str,
) -> Result<ServerInfo, QueryError> {
    if let Some(failure) = &doc.primary_failure {
        return Err(QueryError::PrimaryFailed(failure.clone()));
    }
    if let Some(server) = doc
        .servers
        .iter()
        .find(|server| server.supports(capability))
    {
        return Ok(server.clone());
    }
    match doc.servers.first() {
        Some(primary) => Err(QueryError::Unsupported {
            server: primary.name.clone(),
            capability: capability.to_owned(),
            method: method.to_owned(),
        }),
        None => Err(QueryError::NoServer(doc.path.clone())),
    }
}

/// Remove exact duplicates, keeping the first of each (servers sometimes repeat a location),
/// in place: the kept ones move to the front in order, with no copy of any (issue 15: a clone
/// per location for the comparison cost a one-location definition about 0.8k instructions).
fn dedup_in_order(locations: &mut Vec<Location>) {
    let mut kept = 0;
    for index in 0..locations.len() {
        if !locations[..kept].contains(&locations[index]) {
            locations.swap(kept, index);
            kept += 1;
        }
    }
    locations.truncate(kept);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::PositionEncoding;

    /// The name, whole, at the column: not in a comment above or beside it, not one column off,
    /// not inside a longer identifier.
    #[test]
    fn a_location_shows_the_name_only_where_it_points() {
        let line = "int twice(int x) { /* twice */ return x; }";
        assert!(shows_at(line, 5, "twice"));
        for column in [4, 6, 24, 0, 100] {
            assert!(!shows_at(line, column, "twice"), "column {column}");
        }
        assert!(shows_at("twice", 1, "twice"));
        assert!(!shows_at("twice_more", 1, "twice"));
        assert!(!shows_at("a_twice", 3, "twice"));
        assert!(shows_at("é twice", 3, "twice"), "columns count characters");
    }

    /// Duplicates go, the first of each stays, in the server's order.
    #[test]
    fn duplicate_locations_are_removed_in_order() {
        let at = |path: &str, line: u32| Location {
            column: 1,
            end_column: 2,
            end_line: line,
            line,
            line_text: None,
            path: PathBuf::from(path),
        };
        let (a, b, c) = (at("/w/a", 1), at("/w/b", 1), at("/w/a", 2));
        for (given, expected) in [
            (vec![], vec![]),
            (vec![a.clone()], vec![a.clone()]),
            (vec![a.clone(), a.clone()], vec![a.clone()]),
            (
                vec![
                    b.clone(),
                    a.clone(),
                    b.clone(),
                    c.clone(),
                    a.clone(),
                    c.clone(),
                ],
                vec![b.clone(), a.clone(), c.clone()],
            ),
            (
                vec![a.clone(), a.clone(), b.clone(), b.clone(), c.clone()],
                vec![a.clone(), b.clone(), c.clone()],
            ),
        ] {
            let mut locations = given.clone();
            dedup_in_order(&mut locations);
            assert_eq!(locations, expected, "{given:?}");
        }
    }

    /// The hand-written position params are the bytes serde_json writes for them, for each
    /// path asked in turn (the remembered URI follows the path, byte for byte).
    #[test]
    fn position_params_are_serde_jsons_bytes() {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            position: Position,
            #[serde(rename = "textDocument")]
            text_document: TextDocument<'a>,
        }
        for (path, line, character) in [
            ("/w/a.py", 0, 0),
            ("/w/a.py", 7, 41),
            ("/w/b c/é😀.py", 1, 2),
            ("/w/a.py", u32::MAX, 3),
            ("/w/q\"uote\\%25.py", 4, 5),
            ("/w//a.py", 1, 1),
            ("/w/a.py", 1, 1),
        ] {
            let uri = document_uri(Path::new(path));
            let expected = serde_json::to_string(&Params {
                position: Position { character, line },
                text_document: TextDocument { uri: &uri },
            })
            .unwrap();
            let position = lsp_types::Position { line, character };
            assert_eq!(position_params_text(Path::new(path), position), expected);
        }
    }

    #[test]
    fn workspace_files_of_the_most_common_extension_come_first() {
        let files = [
            "ci/setup.sh",
            "docs/a.md",
            "pkg/a.py",
            "pkg/b.py",
            "z.sh",
            "zz.py",
        ]
        .map(PathBuf::from)
        .to_vec();
        let ordered = by_most_common_extension(files);
        let names: Vec<_> = ordered.iter().map(|path| path.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "pkg/a.py",
                "pkg/b.py",
                "zz.py",
                "ci/setup.sh",
                "z.sh",
                "docs/a.md"
            ]
        );
    }

    fn at(line: u32, target: ColumnOrSymbol) -> TextPosition {
        TextPosition {
            file: PathBuf::from("a.py"),
            line,
            target,
        }
    }

    fn symbol(name: &str, occurrence: u32) -> ColumnOrSymbol {
        ColumnOrSymbol::Symbol {
            name: name.to_owned(),
            occurrence,
        }
    }

    const TEXT: &str = "a = 42\nb = a + a\ns = \"😀😀\"; total = a + 1\n";

    fn check(
        position: TextPosition,
        encoding: PositionEncoding,
        expected: Result<(u32, u32), &str>,
    ) {
        let got = resolve_position(TEXT, &position, encoding, "a.py")
            .map(|position| (position.line, position.character))
            .map_err(|error| error.to_string());
        assert_eq!(
            got,
            expected.map_err(str::to_owned),
            "{position:?} {encoding}"
        );
    }

    #[test]
    fn positions_convert_into_the_server_encoding() {
        use ColumnOrSymbol::Column;
        use PositionEncoding::*;
        // B08: the `a` after two emojis is character 19 -> UTF-16 20, UTF-8 24, UTF-32 18.
        check(at(3, Column(19)), Utf16, Ok((2, 20)));
        check(at(3, Column(19)), Utf8, Ok((2, 24)));
        check(at(3, Column(19)), Utf32, Ok((2, 18)));
        check(at(3, symbol("a", 1)), Utf16, Ok((2, 20)));
        check(at(2, symbol("a", 2)), Utf16, Ok((1, 8)));
        check(at(1, Column(7)), Utf16, Ok((0, 6)));
    }

    #[test]
    fn bad_positions_are_errors_showing_the_line() {
        use ColumnOrSymbol::Column;
        use PositionEncoding::Utf16;
        check(
            at(3, Column(26)),
            Utf16,
            Err("a.py:3:26: column 26 is out of range on line 3 (columns are 1 to 24, the line has 23 characters); the line is: `s = \"😀😀\"; total = a + 1`"),
        );
        check(
            at(3, Column(0)),
            Utf16,
            Err("a.py:3:0: column 0 is out of range on line 3 (columns are 1 to 24, the line has 23 characters); the line is: `s = \"😀😀\"; total = a + 1`"),
        );
        check(
            at(9, Column(1)),
            Utf16,
            Err("a.py:9: line 9 is out of range (the file has 3 lines)"),
        );
        check(
            at(0, Column(1)),
            Utf16,
            Err("a.py:0: line 0 is out of range (the file has 3 lines)"),
        );
        check(
            at(1, symbol("zzz", 1)),
            Utf16,
            Err("a.py:1: symbol `zzz` not found on line: `a = 42`"),
        );
        check(
            at(2, symbol("a", 3)),
            Utf16,
            Err("a.py:2: occurrence 3 of symbol `a` asked for but it occurs 2 times on line: `b = a + a`"),
        );
    }

    #[test]
    fn error_messages_and_exit_statuses() {
        let check = |error: QueryError, message: &str, status: i32| {
            assert_eq!(error.to_string(), message);
            assert_eq!(error.exit_status(), status, "{message}");
        };
        check(
            QueryError::Unsupported {
                server: "ruff".into(),
                capability: "referencesProvider".into(),
                method: "textDocument/references".into(),
            },
            "server ruff does not support textDocument/references (no referencesProvider)",
            3,
        );
        check(
            QueryError::UnsupportedByAll {
                servers: vec!["yaml-language-server".into(), "taplo".into()],
                capability: "workspaceSymbolProvider".into(),
                method: "workspace/symbol".into(),
            },
            "no server here supports workspace/symbol: yaml-language-server, taplo (no \
             workspaceSymbolProvider)",
            3,
        );
        check(
            QueryError::from(EngineError::NoServer {
                path: PathBuf::from("/w/x.zz"),
            }),
            "no language server is configured for .zz files",
            2,
        );
        check(
            QueryError::from(EngineError::Timeout {
                server: "pyright".into(),
                method: "textDocument/hover".into(),
                after: Duration::from_secs(2),
            }),
            "textDocument/hover timed out after 2 s (server pyright)",
            3,
        );
        check(QueryError::Symbol("x".into()), "x", 2);
    }

    /// pyright 1.1 answers `f(1, 2)` (in `def f(a, b)`) with a per-signature `activeParameter`
    /// and a wrong top-level one (always the parameter count); the per-signature one wins.
    #[test]
    fn signature_help_active_parameter_per_signature() {
        let check = |answer: Value, expected: (Option<u32>, Option<u32>)| {
            let result = parse_signature_help(&answer, "s".into()).unwrap();
            assert_eq!(
                (result.active_signature, result.active_parameter),
                expected,
                "{answer}"
            );
        };
        let pyright = |own: u64| {
            json!({"activeParameter": 2, "activeSignature": 0, "signatures": [{
                "activeParameter": own, "label": "(a: Unknown, b: Unknown) -> Unknown",
                "parameters": [{"label": [1, 11]}, {"label": [13, 23]}]}]})
        };
        check(pyright(0), (Some(0), Some(0)));
        check(pyright(1), (Some(0), Some(1)));
        let two = |active_signature: Value, top: Value| {
            json!({"activeSignature": active_signature, "activeParameter": top, "signatures": [
                {"label": "f()", "parameters": []},
                {"label": "f(a, b)", "parameters": [{"label": "a"}, {"label": "b"}],
                 "activeParameter": 1}]})
        };
        // The active signature's own value, not the first signature's.
        check(two(json!(1), json!(0)), (Some(1), Some(1)));
        // A signature without parameters has no active parameter.
        check(two(json!(0), json!(1)), (Some(0), None));
        // activeSignature out of range or absent: the first signature.
        check(two(json!(7), json!(0)), (Some(0), None));
        check(two(json!(null), json!(0)), (Some(0), None));
        // Top-level only, absent or out of range: the first parameter (LSP 3.17 default).
        let top = |value: Value| {
            json!({"activeParameter": value, "signatures": [
                {"label": "g(x, y)", "parameters": [{"label": "x"}, {"label": "y"}]}]})
        };
        check(top(json!(1)), (Some(0), Some(1)));
        check(top(json!(2)), (Some(0), Some(0)));
        check(top(json!(null)), (Some(0), Some(0)));
    }

    #[test]
    fn signature_help_shapes() {
        let answer = json!({"signatures": [{"label": "area(radius: number): number",
            "documentation": {"kind": "markdown", "value": "Area of a **circle**"},
            "parameters": [{"label": [5, 19]}, {"label": "extra"}, {"label": [99, 120]}]}],
            "activeSignature": 0, "activeParameter": 0});
        let result = parse_signature_help(&answer, "ts".into()).unwrap();
        assert_eq!(
            result.signatures[0].parameters,
            vec!["radius: number", "extra"]
        );
        assert_eq!(
            result.signatures[0].documentation.as_deref(),
            Some("Area of a circle")
        );
        assert_eq!(
            (result.active_signature, result.active_parameter),
            (Some(0), Some(0))
        );
        assert_eq!(parse_signature_help(&json!(null), "ts".into()), None);
        assert_eq!(
            parse_signature_help(&json!({"signatures": []}), "ts".into()),
            None
        );
    }
}
