//! The query vocabulary and result model: a user position ([`TextPosition`]: 1-based line, a
//! 1-based column in characters or a symbol), the kinds and directions of queries, the normalised
//! results (locations, hover, symbols, hierarchies, signatures; 1-based lines and character
//! columns, end exclusive) and [`QueryError`] with its exit status.
//!
//! Invariant: every result struct declares its fields in the order of their serialised names,
//! so serialising it directly gives the same bytes as serialising it through a `Value` (whose
//! object keys are sorted): answers are rendered straight from these types (issue 15,
//! [`super::ResultJson`]), and a test holds each type to it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::EngineError;

/// A position the user gave: `line` is 1-based; the column is given directly or found by symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextPosition {
    /// The file, absolute or relative to the current directory.
    pub file: PathBuf,
    /// 1-based line.
    pub line: u32,
    pub target: ColumnOrSymbol,
}

/// The column of a [`TextPosition`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnOrSymbol {
    /// 1-based column in Unicode characters; one past the last character is allowed (end of line).
    Column(u32),
    /// The `occurrence`-th (1-based) whole-word occurrence of `name` on the line
    /// ([`crate::text::find_symbol_column`]).
    Symbol { name: String, occurrence: u32 },
}

/// Which definition-like request to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CallDirection {
    Incoming,
    Outgoing,
}

/// Direction of a type hierarchy query (LSP 3.17 §`typeHierarchy_supertypes`/`subtypes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    pub column: u32,
    pub end_column: u32,
    pub end_line: u32,
    pub line: u32,
    /// The source line at `line` without its terminator; `None` when the file cannot be read.
    pub line_text: Option<String>,
    pub path: PathBuf,
}

/// A 1-based range (columns in Unicode characters, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Range1 {
    pub end_column: u32,
    pub end_line: u32,
    pub start_column: u32,
    pub start_line: u32,
}

/// The answer of a definition-like or references query; empty `locations` means nothing found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocationsResult {
    /// Set when lspc stopped waiting for the server's indexing: "server X was still indexing;
    /// results may be incomplete".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub locations: Vec<Location>,
    /// The server that answered.
    pub server: String,
}

/// A hover, its markdown rendered as plain text (see [`super::hover`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HoverResult {
    /// The range the hover is about, when the server sent one.
    pub range: Option<Range1>,
    pub server: String,
    pub text: String,
}

/// A document or workspace symbol. `location` is the start of the selection range (the name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Symbol {
    /// Nested symbols (hierarchical answers only).
    pub children: Vec<Symbol>,
    /// The enclosing symbol's name (parent in the tree, or `containerName`).
    pub container: Option<String>,
    pub detail: Option<String>,
    /// Lowercase LSP `SymbolKind` name: `"function"`, `"class"`, `"enum member"`, ...
    pub kind: String,
    pub location: Location,
    pub name: String,
}

/// The answer of a workspace symbol query, with the server and readiness note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SymbolsResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub server: String,
    pub symbols: Vec<Symbol>,
}

/// An item of a call or type hierarchy (LSP 3.17 §`CallHierarchyItem`, §`TypeHierarchyItem`);
/// `location` is its selection range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HierarchyItem {
    pub detail: Option<String>,
    pub kind: String,
    pub location: Location,
    pub name: String,
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
    /// Where the calls are: in the caller's file (incoming: `from`'s file; outgoing: the
    /// prepared item's file).
    pub call_sites: Vec<Location>,
    /// The caller (incoming) or the callee (outgoing).
    pub item: HierarchyItem,
}

/// The answer of a call hierarchy query: the prepared items and, for a direction, the calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallHierarchyResult {
    /// Empty when no direction was asked.
    pub calls: Vec<Call>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<CallDirection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub items: Vec<HierarchyItem>,
    pub server: String,
}

/// The answer of a type hierarchy query: the prepared items and their super- or subtypes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeHierarchyResult {
    pub direction: TypeDirection,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub items: Vec<HierarchyItem>,
    pub server: String,
    pub types: Vec<HierarchyItem>,
}

/// One signature of a signature help answer (LSP 3.17 §`SignatureInformation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signature {
    /// Documentation as plain text.
    pub documentation: Option<String>,
    pub label: String,
    /// Parameter labels (offset labels are resolved to the substring of `label`).
    pub parameters: Vec<String>,
}

/// A signature help answer (LSP 3.17 §`SignatureHelp`); indexes are 0-based as in LSP.
/// `active_signature` indexes `signatures`; `active_parameter` indexes the active signature's
/// `parameters` (its own `activeParameter` when the server sent one), `None` when it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureHelpResult {
    pub active_parameter: Option<u32>,
    pub active_signature: Option<u32>,
    pub server: String,
    pub signatures: Vec<Signature>,
}

/// Why a query failed. Exit statuses: see [`QueryError::exit_status`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum QueryError {
    /// The engine or the server failed (crash, timeout, JSON-RPC error, ...).
    Engine(EngineError),
    /// The serving server does not advertise `capability` (e.g. `"referencesProvider"`).
    Unsupported {
        server: String,
        capability: String,
        method: String,
    },
    /// A workspace query without a file: none of the servers tried (`servers`, two or more, in
    /// the order met) advertises `capability`.
    UnsupportedByAll {
        servers: Vec<String>,
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
    /// The file's primary server is not running (its failure, as
    /// [`crate::engine::SyncedDocument::primary_failure`] says it): the others are not asked
    /// in its place.
    PrimaryFailed(String),
}

impl QueryError {
    /// 1 for a server's "nothing there" error ([`NOTHING_AT_THE_POSITION`]), 2 for usage errors
    /// (bad position, symbol, file, no server), 3 for server failures and unsupported
    /// operations (see [`crate::exit`]).
    pub fn exit_status(&self) -> i32 {
        match self {
            // "Nothing there", said as an error: exit 1 as for an empty answer.
            QueryError::Engine(EngineError::Server { message, .. })
                if NOTHING_AT_THE_POSITION
                    .iter()
                    .any(|nothing| message.starts_with(nothing)) =>
            {
                crate::exit::EXIT_FOUND
            }
            QueryError::Engine(EngineError::InvalidInput(_))
            | QueryError::InvalidPosition(_)
            | QueryError::Symbol(_)
            | QueryError::NoServer(_)
            | QueryError::File(_) => crate::exit::EXIT_USAGE,
            QueryError::Engine(_)
            | QueryError::PrimaryFailed(_)
            | QueryError::Unsupported { .. }
            | QueryError::UnsupportedByAll { .. } => crate::exit::EXIT_SERVER,
        }
    }
}

/// Error messages a server answers a position request with where others answer `null`: gopls
/// (0.x) on a keyword or a literal, "no identifier found" (`type-definition flag.go:427:4` on
/// `return`) and "no object found" (references); on a name with nothing of the kind, "no type
/// definition for s" (type-definition of a `string` parameter `s`) and "not a type name or
/// method" (implementation). New users' trials: exit 3, "a server failed", for a position with
/// nothing to find. Each is the start of the message.
const NOTHING_AT_THE_POSITION: &[&str] = &[
    "no identifier found",
    "no object found",
    "no type definition for ",
    "not a type name or method",
];

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
            QueryError::UnsupportedByAll {
                servers,
                capability,
                method,
            } => write!(
                f,
                "no server here supports {method}: {} (no {capability})",
                servers.join(", ")
            ),
            QueryError::InvalidPosition(message)
            | QueryError::Symbol(message)
            | QueryError::File(message)
            | QueryError::PrimaryFailed(message) => f.write_str(message),
            QueryError::NoServer(path) => f.write_str(&crate::config::no_server_message(path)),
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
