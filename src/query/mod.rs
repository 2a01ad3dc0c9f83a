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
//! - Before any `textDocument/*` request the file is synced ([`Op::Sync`]: `didOpen` or
//!   `didChange` with the current disk text), so servers never answer about a file they have not
//!   been told about (B22).
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

pub mod command;
pub mod hover;
pub mod locations;
pub mod position;
pub mod render;
pub mod symbols;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::{request_with, sync_with, EngineError, Op, ServerInfo, SyncedDocument};
use crate::text::{find_symbol_column, LineIndex};
use crate::uri;
use locations::{parse_locations, parse_range, SourceFiles};
pub use position::parse_loc;

/// How often a readiness wait re-reads the server's progress state.
const READINESS_POLL: Duration = Duration::from_millis(200);
/// The longest the first query about a file waits for its diagnostics (see
/// [`wait_analysed`]). Loading a TypeScript project took 10 s on a loaded 2-core
/// machine; a server that never publishes costs this once per file and session.
pub const ANALYSIS_WAIT: Duration = Duration::from_secs(20);

/// A position the user gave: `line` is 1-based; the column is given directly or found by symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPosition {
    /// The file, absolute or relative to the current directory.
    pub file: PathBuf,
    /// 1-based line.
    pub line: u32,
    pub target: ColumnOrSymbol,
}

/// The column of a [`TextPosition`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnOrSymbol {
    /// 1-based column in Unicode characters; one past the last character is allowed (end of line).
    Column(u32),
    /// The `occurrence`-th (1-based) whole-word occurrence of `name` on the line
    /// ([`crate::text::find_symbol_column`]).
    Symbol { name: String, occurrence: u32 },
}

/// Which definition-like request to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinitionKind {
    Definition,
    Declaration,
    TypeDefinition,
    Implementation,
}

impl DefinitionKind {
    /// The LSP method (LSP 3.17 §`textDocument_definition` and siblings).
    pub fn method(self) -> &'static str {
        match self {
            DefinitionKind::Definition => "textDocument/definition",
            DefinitionKind::Declaration => "textDocument/declaration",
            DefinitionKind::TypeDefinition => "textDocument/typeDefinition",
            DefinitionKind::Implementation => "textDocument/implementation",
        }
    }

    /// The `ServerCapabilities` key that advertises it.
    pub fn capability(self) -> &'static str {
        match self {
            DefinitionKind::Definition => "definitionProvider",
            DefinitionKind::Declaration => "declarationProvider",
            DefinitionKind::TypeDefinition => "typeDefinitionProvider",
            DefinitionKind::Implementation => "implementationProvider",
        }
    }

    /// What the user asked for, in words: `"definition"`, `"type definition"`, ...
    pub fn noun(self) -> &'static str {
        match self {
            DefinitionKind::Definition => "definition",
            DefinitionKind::Declaration => "declaration",
            DefinitionKind::TypeDefinition => "type definition",
            DefinitionKind::Implementation => "implementation",
        }
    }
}

/// Direction of a call hierarchy query (LSP 3.17 §`callHierarchy_incomingCalls`/`outgoingCalls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CallDirection {
    Incoming,
    Outgoing,
}

/// Direction of a type hierarchy query (LSP 3.17 §`typeHierarchy_supertypes`/`subtypes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TypeDirection {
    Supertypes,
    Subtypes,
}

/// A place in a file. Lines are 1-based, columns 1-based in Unicode characters; the end is
/// exclusive, as in LSP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    /// The source line at `line` without its terminator; `None` when the file cannot be read.
    pub line_text: Option<String>,
}

/// A 1-based range (columns in Unicode characters, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Range1 {
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// The answer of a definition-like or references query; empty `locations` means nothing found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocationsResult {
    pub locations: Vec<Location>,
    /// The server that answered.
    pub server: String,
    /// Set when lspc stopped waiting for the server's indexing: "server X was still indexing;
    /// results may be incomplete".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// A hover, its markdown rendered as plain text (see [`hover`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HoverResult {
    pub text: String,
    /// The range the hover is about, when the server sent one.
    pub range: Option<Range1>,
    pub server: String,
}

/// A document or workspace symbol. `location` is the start of the selection range (the name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Symbol {
    pub name: String,
    /// Lowercase LSP `SymbolKind` name: `"function"`, `"class"`, `"enum member"`, ...
    pub kind: String,
    pub detail: Option<String>,
    pub location: Location,
    /// The enclosing symbol's name (parent in the tree, or `containerName`).
    pub container: Option<String>,
    /// Nested symbols (hierarchical answers only).
    pub children: Vec<Symbol>,
}

/// The answer of a workspace symbol query, with the server and readiness note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SymbolsResult {
    pub symbols: Vec<Symbol>,
    pub server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// An item of a call or type hierarchy (LSP 3.17 §`CallHierarchyItem`, §`TypeHierarchyItem`);
/// `location` is its selection range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HierarchyItem {
    pub name: String,
    pub kind: String,
    pub detail: Option<String>,
    pub location: Location,
    /// The item as the server sent it (positions in its encoding), sent back verbatim in
    /// follow-up requests. Not serialised.
    #[serde(skip)]
    pub raw: Value,
}

/// The contract's name for call hierarchy items.
pub type CallHierarchyItem = HierarchyItem;
/// Type hierarchy items have the same shape.
pub type TypeHierarchyItem = HierarchyItem;

/// One incoming or outgoing call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    /// The caller (incoming) or the callee (outgoing).
    pub item: HierarchyItem,
    /// Where the calls are: in the caller's file (incoming: `from`'s file; outgoing: the
    /// prepared item's file).
    pub call_sites: Vec<Location>,
}

/// The answer of a call hierarchy query: the prepared items and, for a direction, the calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallHierarchyResult {
    pub items: Vec<HierarchyItem>,
    /// Empty when no direction was asked.
    pub calls: Vec<Call>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<CallDirection>,
    pub server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// The answer of a type hierarchy query: the prepared items and their super- or subtypes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeHierarchyResult {
    pub items: Vec<HierarchyItem>,
    pub direction: TypeDirection,
    pub types: Vec<HierarchyItem>,
    pub server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// One signature of a signature help answer (LSP 3.17 §`SignatureInformation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signature {
    pub label: String,
    /// Documentation as plain text.
    pub documentation: Option<String>,
    /// Parameter labels (offset labels are resolved to the substring of `label`).
    pub parameters: Vec<String>,
}

/// A signature help answer (LSP 3.17 §`SignatureHelp`); indexes are 0-based as in LSP.
/// `active_signature` indexes `signatures`; `active_parameter` indexes the active signature's
/// `parameters` (its own `activeParameter` when the server sent one), `None` when it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureHelpResult {
    pub signatures: Vec<Signature>,
    pub active_signature: Option<u32>,
    pub active_parameter: Option<u32>,
    pub server: String,
}

/// Why a query failed. Exit statuses: see [`QueryError::exit_status`].
#[derive(Debug, Clone, PartialEq)]
pub enum QueryError {
    /// The engine or the server failed (crash, timeout, JSON-RPC error, ...).
    Engine(EngineError),
    /// The serving server does not advertise `capability` (e.g. `"referencesProvider"`).
    Unsupported {
        server: String,
        capability: String,
        method: String,
    },
    /// The line or column does not exist; the message shows the line's text.
    InvalidPosition(String),
    /// The symbol is not on the line (or the occurrence is missing); shows the line's text.
    Symbol(String),
    /// No configured server claims the file.
    NoServer(PathBuf),
    /// The file does not exist or cannot be read.
    File(String),
}

impl QueryError {
    /// 2 for usage errors (bad position, symbol, file, no server), 3 for server failures and
    /// unsupported operations (see [`crate::exit`]).
    pub fn exit_status(&self) -> i32 {
        match self {
            QueryError::Engine(EngineError::InvalidInput(_))
            | QueryError::InvalidPosition(_)
            | QueryError::Symbol(_)
            | QueryError::NoServer(_)
            | QueryError::File(_) => crate::exit::EXIT_USAGE,
            QueryError::Engine(_) | QueryError::Unsupported { .. } => crate::exit::EXIT_SERVER,
        }
    }
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Engine(error) => error.fmt(f),
            QueryError::Unsupported {
                server,
                capability,
                method,
            } => write!(
                f,
                "server {server} does not support {method} (no {capability})"
            ),
            QueryError::InvalidPosition(message)
            | QueryError::Symbol(message)
            | QueryError::File(message) => f.write_str(message),
            QueryError::NoServer(path) => {
                write!(f, "no language server is configured for {}", path.display())
            }
        }
    }
}

impl std::error::Error for QueryError {}

impl From<EngineError> for QueryError {
    fn from(error: EngineError) -> QueryError {
        match error {
            EngineError::NoServer { path } => QueryError::NoServer(path),
            other => QueryError::Engine(other),
        }
    }
}

/// A synced document, the server chosen for one request, and the converted position.
struct Target {
    doc: SyncedDocument,
    server: ServerInfo,
    /// The LSP position (0-based, server encoding); (0, 0) for whole-file requests.
    position: lsp_types::Position,
    files: SourceFiles,
}

impl Target {
    fn text_document_position(&self) -> Value {
        json!({
            "textDocument": { "uri": document_uri(&self.doc.path) },
            "position": { "line": self.position.line, "character": self.position.character },
        })
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
    files.sort_by_key(|file| std::cmp::Reverse(counts[&extension(file)]));
    files
}

fn document_uri(path: &Path) -> String {
    match uri::path_to_uri(path) {
        Ok(uri) => uri.as_str().to_owned(),
        // Synced paths are canonical, hence absolute; this cannot happen in practice.
        Err(_) => format!("file://{}", path.display()),
    }
}

/// The files whose first analysis wait ([`wait_analysed`]) a session has already done,
/// shared by every clone of a [`Queries`] (and by a frontend that builds one per request, such
/// as MCP, through [`Queries::with_analysed_files`]). Keyed by server and canonical path.
#[derive(Debug, Clone, Default)]
pub struct AnalysedFiles(Arc<Mutex<HashSet<(crate::process::ServerId, PathBuf)>>>);

impl AnalysedFiles {
    /// Record `(server_id, path)`; `true` when it was not recorded before (the first request).
    fn first_time(&self, server_id: crate::process::ServerId, path: &Path) -> bool {
        match self.0.lock() {
            Ok(mut files) => files.insert((server_id, path.to_path_buf())),
            // A panicked holder only loses the cache: waiting again is safe.
            Err(poisoned) => poisoned
                .into_inner()
                .insert((server_id, path.to_path_buf())),
        }
    }
}

/// The query layer: one per frontend thread (cheap to clone via [`Queries::with_tag`]).
#[derive(Debug, Clone)]
pub struct Queries {
    op_sender: Sender<Op>,
    root: PathBuf,
    timeout: Duration,
    tag: Option<u64>,
    analysed: AnalysedFiles,
}

impl Queries {
    /// Queries through `op_sender`; `root` is the workspace root (for messages and for finding a
    /// file when a workspace query names none); `timeout` bounds each sync, readiness wait and
    /// request.
    pub fn new(op_sender: Sender<Op>, root: PathBuf, timeout: Duration) -> Queries {
        Queries {
            op_sender,
            root,
            timeout,
            tag: None,
            analysed: AnalysedFiles::default(),
        }
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
        let mut target = self.target(at, kind.method(), kind.capability())?;
        // Every kind can land in another file, which the server must have indexed: clangd
        // answers a definition with the header's declaration until its index has the source.
        let incomplete = self.wait_ready(&mut target);
        let answer = self.request(&target, kind.method(), target.text_document_position())?;
        let mut locations: Vec<Location> = parse_locations(&answer)
            .iter()
            .filter_map(|raw| target.files.resolve(raw))
            .collect();
        dedup_in_order(&mut locations);
        Ok(LocationsResult {
            locations,
            server: target.server.name,
            incomplete,
        })
    }

    /// `textDocument/references` at `at`, sorted by path, line and column. Waits for indexing.
    pub fn references(
        &self,
        at: &TextPosition,
        include_declaration: bool,
    ) -> Result<LocationsResult, QueryError> {
        let method = "textDocument/references";
        let mut target = self.target(at, method, "referencesProvider")?;
        let incomplete = self.wait_ready(&mut target);
        let mut params = target.text_document_position();
        params["context"] = json!({ "includeDeclaration": include_declaration });
        let answer = self.request(&target, method, params)?;
        let mut locations: Vec<Location> = parse_locations(&answer)
            .iter()
            .filter_map(|raw| target.files.resolve(raw))
            .collect();
        locations.sort_by(|a, b| {
            (&a.path, a.line, a.column, a.end_line, a.end_column).cmp(&(
                &b.path,
                b.line,
                b.column,
                b.end_line,
                b.end_column,
            ))
        });
        locations.dedup();
        Ok(LocationsResult {
            locations,
            server: target.server.name,
            incomplete,
        })
    }

    /// `textDocument/hover` at `at`; `None` when the server has nothing to show.
    pub fn hover(&self, at: &TextPosition) -> Result<Option<HoverResult>, QueryError> {
        let method = "textDocument/hover";
        let mut target = self.target(at, method, "hoverProvider")?;
        if self
            .analysed
            .first_time(target.server.server_id, &target.doc.path)
        {
            wait_analysed(
                &self.op_sender,
                &target.doc.path,
                &target.server.name,
                self.timeout,
            );
        }
        let answer = self.request(&target, method, target.text_document_position())?;
        let text = answer
            .get("contents")
            .map(hover::hover_contents_to_text)
            .unwrap_or_default();
        if text.is_empty() {
            return Ok(None);
        }
        let path = target.doc.path.clone();
        let range = answer
            .get("range")
            .and_then(parse_range)
            .map(|range| target.files.range(&path, range));
        Ok(Some(HoverResult {
            text,
            range,
            server: target.server.name,
        }))
    }

    /// `textDocument/documentSymbol` for `file`: a tree when the server answers hierarchically.
    pub fn document_symbols(&self, file: &Path) -> Result<Vec<Symbol>, QueryError> {
        let method = "textDocument/documentSymbol";
        let doc = self.sync(file)?;
        let server = pick_server(&doc, method, "documentSymbolProvider")?;
        let mut files = SourceFiles::new(server.encoding);
        files.add_document(&doc.path, doc.text.clone());
        let params = json!({ "textDocument": { "uri": document_uri(&doc.path) } });
        let answer = self.request_to(&server, method, params)?;
        Ok(symbols::parse_symbols(&answer, Some(&doc.path), &mut files))
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
    /// given, of the server of the first file under the root that some server serves. Waits for
    /// indexing.
    pub fn workspace_symbols_result(
        &self,
        query: &str,
        file_hint: Option<&Path>,
    ) -> Result<SymbolsResult, QueryError> {
        let method = "workspace/symbol";
        let doc = match file_hint {
            Some(file) => self.sync(file)?,
            None => self.sync_any_served_file()?,
        };
        let server = pick_server(&doc, method, "workspaceSymbolProvider")?;
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
        Ok(SymbolsResult {
            symbols: symbols::parse_symbols(&answer, None, &mut target.files),
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
        let method = "textDocument/prepareCallHierarchy";
        let mut target = self.target(at, method, "callHierarchyProvider")?;
        let incomplete = self.wait_ready(&mut target);
        let answer = self.request(&target, method, target.text_document_position())?;
        let items = symbols::parse_hierarchy_items(&answer, &mut target.files);
        let mut calls = Vec::new();
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
                    let call_sites = call
                        .get("fromRanges")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(parse_range)
                        .map(|range| target.files.location(&sites_path, range))
                        .collect();
                    calls.push(Call {
                        item: other,
                        call_sites,
                    });
                }
            }
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
        let method = "textDocument/prepareTypeHierarchy";
        let mut target = self.target(at, method, "typeHierarchyProvider")?;
        let incomplete = self.wait_ready(&mut target);
        let answer = self.request(&target, method, target.text_document_position())?;
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
        let method = "textDocument/signatureHelp";
        let target = self.target(at, method, "signatureHelpProvider")?;
        if self
            .analysed
            .first_time(target.server.server_id, &target.doc.path)
        {
            wait_analysed(
                &self.op_sender,
                &target.doc.path,
                &target.server.name,
                self.timeout,
            );
        }
        let mut params = target.text_document_position();
        params["context"] = json!({ "triggerKind": 1, "isRetrigger": false });
        let answer = self.request(&target, method, params)?;
        Ok(parse_signature_help(&answer, target.server.name))
    }

    // ----- helpers ------------------------------------------------------------------------

    /// Sync `file` (relative to the current directory or absolute).
    fn sync(&self, file: &Path) -> Result<SyncedDocument, QueryError> {
        let path = uri::canonical(file);
        if path.is_dir() {
            return Err(QueryError::File(format!(
                "cannot read {}: it is a directory (give a file)",
                self.display(&path)
            )));
        }
        if !path.is_file() {
            return Err(QueryError::File(format!(
                "cannot read {}: no such file",
                self.display(&path)
            )));
        }
        Ok(sync_with(&self.op_sender, path, self.timeout)?)
    }

    /// Sync a file under the root that a server serves (for workspace queries without a file):
    /// the first, in path order, of the most common extension that a server serves, so the
    /// workspace's main language answers rather than whichever server claims the first path (a
    /// `.devcontainer/*.sh` ahead of a Python package).
    fn sync_any_served_file(&self) -> Result<SyncedDocument, QueryError> {
        let files = crate::walk::list_files(&self.root, std::slice::from_ref(&self.root))
            .map_err(|error| QueryError::File(error.to_string()))?;
        for file in by_most_common_extension(files) {
            match sync_with(&self.op_sender, file, self.timeout) {
                Err(EngineError::NoServer { .. }) | Err(EngineError::InvalidInput(_)) => continue,
                other => return Ok(other?),
            }
        }
        Err(QueryError::NoServer(self.root.clone()))
    }

    /// Sync the file, choose the server for `capability`, and convert the position.
    fn target(
        &self,
        at: &TextPosition,
        method: &str,
        capability: &str,
    ) -> Result<Target, QueryError> {
        let doc = self.sync(&at.file)?;
        let server = pick_server(&doc, method, capability)?;
        let position = resolve_position(&doc.text, at, server.encoding, &self.display(&doc.path))?;
        let mut files = SourceFiles::new(server.encoding);
        files.add_document(&doc.path, doc.text.clone());
        Ok(Target {
            doc,
            server,
            position,
            files,
        })
    }

    /// Wait until the target's server is ready ([`wait_until_ready`]): on the file's first
    /// request of the session (per server) for its diagnostics to settle, then while the server
    /// reports progress. The "incomplete" note when it is still busy after the timeout.
    fn wait_ready(&self, target: &mut Target) -> Option<String> {
        let first_time = self
            .analysed
            .first_time(target.server.server_id, &target.doc.path);
        wait_until_ready(
            &self.op_sender,
            &target.doc.path,
            &mut target.server,
            self.timeout,
            first_time,
        )
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

/// Wait until `server` is ready to answer about `path` (a synced file): first, when `analyse` is
/// set (the file's first question of a session), at most [`ANALYSIS_WAIT`] (bounded by `timeout`)
/// for the file's diagnostics to settle, then while the
/// server reports `$/progress`, re-reading its state every 200 ms, until `timeout` has passed in
/// all. `server` is refreshed with each re-read. Returns the "incomplete" note ("server X was
/// still indexing; results may be incomplete") when it is still busy at the end.
///
/// Why the diagnostics wait: some servers report no progress while they discover the workspace
/// (pyright answers `workspace/symbol` with `[]` until it has found its source files;
/// typescript-language-server renames in one file until it has loaded the tsconfig project), and
/// a settled publish for the file shows the server has analysed it. A server that never
/// publishes costs at most that cap; the outcome is otherwise ignored. Cross-file queries and
/// the edit commands ([`crate::edit::commands`]) share this wait.
pub fn wait_until_ready(
    op_sender: &Sender<Op>,
    path: &Path,
    server: &mut ServerInfo,
    timeout: Duration,
    analyse: bool,
) -> Option<String> {
    let started = Instant::now();
    let deadline = started + timeout;
    if analyse {
        wait_analysed(op_sender, path, &server.name, timeout);
    }
    loop {
        if !server.busy {
            return None;
        }
        let now = Instant::now();
        if now >= deadline {
            return Some(format!(
                "server {} was still indexing; results may be incomplete",
                server.name
            ));
        }
        std::thread::sleep(READINESS_POLL.min(deadline - now));
        match sync_with(op_sender, path.to_path_buf(), timeout) {
            Ok(doc) => {
                match doc
                    .servers
                    .iter()
                    .find(|fresh| fresh.server_id == server.server_id)
                {
                    Some(fresh) => *server = fresh.clone(),
                    // The server went away; the request will report why.
                    None => return None,
                }
            }
            Err(error) => {
                log::debug!("readiness wait: {error}");
                return None;
            }
        }
    }
}

/// Wait at most [`ANALYSIS_WAIT`] (bounded by `timeout`) for `path`'s diagnostics to settle: a
/// settled publish shows the server has analysed the file (see [`wait_until_ready`]). The
/// outcome is only logged.
pub fn wait_analysed(op_sender: &Sender<Op>, path: &Path, server_name: &str, timeout: Duration) {
    let started = Instant::now();
    let (reply, receiver) = crossbeam_channel::bounded(1);
    let analysis = Op::Diagnostics {
        paths: vec![path.to_path_buf()],
        timeout: ANALYSIS_WAIT.min(timeout),
        reply,
    };
    if op_sender.send(analysis).is_ok() {
        let settled = receiver
            .recv()
            .ok()
            .and_then(|results| results.into_iter().next());
        log::debug!(
            "{}: analysis wait for {} ended after {:?}: {}",
            server_name,
            path.display(),
            started.elapsed(),
            match settled.map(|result| result.outcome) {
                Some(crate::engine::DiagnosticsOutcome::Settled(_)) => "settled",
                Some(crate::engine::DiagnosticsOutcome::TimedOut { .. }) => "timed out",
                _ => "failed",
            }
        );
    }
}

/// The first server (primary first) advertising `capability`; [`QueryError::Unsupported`]
/// naming the primary when none does.
fn pick_server(
    doc: &SyncedDocument,
    method: &str,
    capability: &str,
) -> Result<ServerInfo, QueryError> {
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

/// Convert a user position in `text` into an LSP position in `encoding`. Errors show `shown`
/// (the file as the user sees it) and the line's text.
pub fn resolve_position(
    text: &str,
    at: &TextPosition,
    encoding: crate::text::PositionEncoding,
    shown: &str,
) -> Result<lsp_types::Position, QueryError> {
    let index = LineIndex::new(text);
    let line_text = at
        .line
        .checked_sub(1)
        .and_then(|line0| index.line_text(text, line0));
    let Some(line_text) = line_text else {
        // Count lines as an editor shows them: the empty "line" after a final newline is a
        // valid position but not a line the user would count.
        let shown_lines = if text.ends_with('\n') {
            index.n_lines().saturating_sub(1)
        } else {
            index.n_lines()
        };
        let size = match shown_lines {
            _ if text.is_empty() => "the file is empty".to_owned(),
            1 => "the file has 1 line".to_owned(),
            lines => format!("the file has {lines} lines"),
        };
        return Err(QueryError::InvalidPosition(format!(
            "{shown}:{}: line {} is out of range ({size})",
            at.line, at.line,
        )));
    };
    let column = match &at.target {
        ColumnOrSymbol::Column(column) => *column,
        ColumnOrSymbol::Symbol { name, occurrence } => {
            find_symbol_column(line_text, name, *occurrence)
                .map_err(|error| QueryError::Symbol(format!("{shown}:{}: {error}", at.line)))?
        }
    };
    index
        .to_lsp(text, at.line, column, encoding)
        .map_err(|error| {
            QueryError::InvalidPosition(format!(
                "{shown}:{}:{column}: {error}; the line is: `{line_text}`",
                at.line
            ))
        })
}

/// Remove exact duplicates, keeping the first of each (servers sometimes repeat a location).
fn dedup_in_order(locations: &mut Vec<Location>) {
    let mut seen: Vec<Location> = Vec::new();
    locations.retain(|location| {
        if seen.contains(location) {
            false
        } else {
            seen.push(location.clone());
            true
        }
    });
}

/// A `SignatureHelp` answer; `None` for `null` or no signatures (LSP 3.17 §`SignatureHelp`).
///
/// The active signature is `activeSignature`, or the first when it is absent or out of range.
/// Its active parameter is the signature's own `activeParameter` when present (LSP 3.16+: it
/// overrides the top-level one; pyright sends both, with a top-level value that is wrong),
/// else the top-level `activeParameter`; absent or out of range means the first parameter, and
/// a signature without parameters has none. Indexes are 0-based.
pub fn parse_signature_help(answer: &Value, server: String) -> Option<SignatureHelpResult> {
    let raw_signatures = answer.get("signatures")?.as_array()?;
    let index_in = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|value| u32::try_from(value).ok())
    };
    let raw_active = index_in(answer, "activeSignature")
        .map(|index| index as usize)
        .filter(|index| *index < raw_signatures.len())
        .unwrap_or(0);
    let mut active_signature = None;
    let mut active_parameter = None;
    let mut signatures: Vec<Signature> = Vec::new();
    for (raw_index, raw) in raw_signatures.iter().enumerate() {
        let Some(label) = raw.get("label").and_then(Value::as_str) else {
            continue;
        };
        let documentation = raw
            .get("documentation")
            .map(hover::hover_contents_to_text)
            .filter(|text| !text.is_empty());
        let parameters: Vec<String> = raw
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|parameter| parameter_label(label, parameter.get("label")?))
            .collect();
        if raw_index == raw_active {
            active_signature = u32::try_from(signatures.len()).ok();
            active_parameter = index_in(raw, "activeParameter")
                .or_else(|| index_in(answer, "activeParameter"))
                .filter(|index| (*index as usize) < parameters.len())
                .or(if parameters.is_empty() { None } else { Some(0) });
        }
        signatures.push(Signature {
            label: label.to_owned(),
            documentation,
            parameters,
        });
    }
    if signatures.is_empty() {
        return None;
    }
    Some(SignatureHelpResult {
        signatures,
        active_signature: active_signature.or(Some(0)),
        active_parameter,
        server,
    })
}

/// A parameter label: a string, or `[start, end]` UTF-16 offsets into the signature label
/// (LSP 3.17 §`ParameterInformation`).
fn parameter_label(signature_label: &str, label: &Value) -> Option<String> {
    if let Some(text) = label.as_str() {
        return Some(text.to_owned());
    }
    let bounds = label.as_array()?;
    let start = u32::try_from(bounds.first()?.as_u64()?).ok()?;
    let end = u32::try_from(bounds.get(1)?.as_u64()?).ok()?;
    let encoding = crate::text::PositionEncoding::Utf16;
    let start = crate::text::byte_offset_of_units(signature_label, start, encoding);
    let end = crate::text::byte_offset_of_units(signature_label, end, encoding);
    signature_label
        .get(start..end)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// Rewrites the paths of a result relative to the workspace root (`src/a.py`), as the CLI and
/// batch print them. Paths outside the root stay absolute.
pub trait RelativePaths {
    fn make_relative(&mut self, root: &Path);
}

impl RelativePaths for Location {
    fn make_relative(&mut self, root: &Path) {
        self.path = PathBuf::from(uri::relative_display(&self.path, root));
    }
}

impl RelativePaths for LocationsResult {
    fn make_relative(&mut self, root: &Path) {
        self.locations.make_relative(root);
    }
}

impl RelativePaths for Symbol {
    fn make_relative(&mut self, root: &Path) {
        self.location.make_relative(root);
        self.children.make_relative(root);
    }
}

impl RelativePaths for SymbolsResult {
    fn make_relative(&mut self, root: &Path) {
        self.symbols.make_relative(root);
    }
}

impl RelativePaths for HierarchyItem {
    fn make_relative(&mut self, root: &Path) {
        self.location.make_relative(root);
    }
}

impl RelativePaths for Call {
    fn make_relative(&mut self, root: &Path) {
        self.item.make_relative(root);
        self.call_sites.make_relative(root);
    }
}

impl RelativePaths for CallHierarchyResult {
    fn make_relative(&mut self, root: &Path) {
        self.items.make_relative(root);
        self.calls.make_relative(root);
    }
}

impl RelativePaths for TypeHierarchyResult {
    fn make_relative(&mut self, root: &Path) {
        self.items.make_relative(root);
        self.types.make_relative(root);
    }
}

impl<T: RelativePaths> RelativePaths for Vec<T> {
    fn make_relative(&mut self, root: &Path) {
        for item in self {
            item.make_relative(root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::PositionEncoding;

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
            QueryError::from(EngineError::NoServer {
                path: PathBuf::from("/w/x.zz"),
            }),
            "no language server is configured for /w/x.zz",
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
