//! The common shape of a position query, read typed from its JSON text (issue 15): a batch line
//! `{"id": ..., "op": "definition", "file": ..., "line": N, "column": N}` or an MCP `tools/call`
//! arguments object `{"file": ..., "line": N, "symbol": ...}`, without building a `Value` tree
//! and running the generic argument reader ([`super::Operation::from_arguments`]), which cost
//! the batch thread about 12k instructions a line and MCP's stdin reader about 9k a call.
//!
//! Invariant: this is a shortcut, never a second definition. Anything it does not read exactly
//! as the generic reader does (another key, a key twice, a `null`, an empty string, a number out
//! of range, a spelling the generic reader normalises, column and symbol together) is declined
//! (`None`), and the caller falls back to the generic reader with its exact messages; for an
//! object both read, both give the same operation (tested for batch lines and MCP arguments).

use std::borrow::Cow;
use std::path::PathBuf;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{Defaults, Operation};
use crate::query::command::QueryRequest;
use crate::query::typed_answer::Text;
use crate::query::{ColumnOrSymbol, DefinitionKind, TextPosition};

/// The keys of a position query's object, each at most once, borrowed from its text.
#[derive(Default)]
pub struct Fields<'a> {
    /// A batch line's request id, as written.
    pub id: Option<&'a RawValue>,
    /// A batch line's operation name.
    pub op: Option<Cow<'a, str>>,
    file: Option<Cow<'a, str>>,
    line: Option<u64>,
    column: Option<u64>,
    symbol: Option<Cow<'a, str>>,
    occurrence: Option<u64>,
    /// `definition`'s `kind` (MCP).
    kind: Option<Cow<'a, str>>,
    /// `references`' `include_declaration` (MCP).
    include_declaration: Option<bool>,
}

/// `text`'s object read into [`Fields`]; `None` for anything else: not one object, a key not
/// listed in [`Fields`] (aliases included), a key twice, a value of another type (`null` too).
pub fn read_fields(text: &str) -> Option<Fields<'_>> {
    struct FieldsVisitor;
    impl<'de> Visitor<'de> for FieldsVisitor {
        type Value = Fields<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a position query")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
            fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), &'static str> {
                match slot.replace(value) {
                    None => Ok(()),
                    Some(_) => Err("a duplicate key"),
                }
            }
            let mut fields = Fields::default();
            while let Some(key) = map.next_key::<Text<'de>>()? {
                let filled = match key.0.as_ref() {
                    "id" => once(&mut fields.id, map.next_value::<&'de RawValue>()?),
                    "op" => once(&mut fields.op, map.next_value::<Text<'de>>()?.0),
                    "file" => once(&mut fields.file, map.next_value::<Text<'de>>()?.0),
                    "line" => once(&mut fields.line, map.next_value::<u64>()?),
                    "column" => once(&mut fields.column, map.next_value::<u64>()?),
                    "symbol" => once(&mut fields.symbol, map.next_value::<Text<'de>>()?.0),
                    "occurrence" => once(&mut fields.occurrence, map.next_value::<u64>()?),
                    "kind" => once(&mut fields.kind, map.next_value::<Text<'de>>()?.0),
                    "include_declaration" => {
                        once(&mut fields.include_declaration, map.next_value::<bool>()?)
                    }
                    _ => Err("another key"),
                };
                filled.map_err(serde::de::Error::custom)?;
            }
            Ok(fields)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let fields = (&mut deserializer).deserialize_map(FieldsVisitor).ok()?;
    deserializer.end().ok()?;
    Some(fields)
}

/// A 1-based number as the generic reader takes it (a whole number from 1 that fits a `u32`).
fn one_based(number: u64) -> Option<u32> {
    u32::try_from(number).ok().filter(|number| *number >= 1)
}

impl Fields<'_> {
    /// The non-empty `file`.
    fn file(&self) -> Option<PathBuf> {
        let file = self.file.as_deref().filter(|file| !file.is_empty())?;
        Some(PathBuf::from(file))
    }

    /// `file`, `line` and either `column` or `symbol` (with `occurrence`, default 1).
    fn position(&self) -> Option<TextPosition> {
        let target = match (self.column, self.symbol.as_deref(), self.occurrence) {
            (Some(column), None, None) => ColumnOrSymbol::Column(one_based(column)?),
            (None, Some(name), occurrence) if !name.is_empty() => ColumnOrSymbol::Symbol {
                name: name.to_owned(),
                occurrence: match occurrence {
                    Some(occurrence) => one_based(occurrence)?,
                    None => 1,
                },
            },
            _ => return None,
        };
        Some(TextPosition {
            file: self.file()?,
            line: one_based(self.line?)?,
            target,
        })
    }

    /// Whether only `file` (and the batch keys) was given: `symbols` takes nothing else.
    fn file_only(&self) -> bool {
        self.line.is_none()
            && self.column.is_none()
            && self.symbol.is_none()
            && self.occurrence.is_none()
            && self.kind.is_none()
            && self.include_declaration.is_none()
    }

    /// The query that operation `name` (an operation's name or MCP tool name, exactly as
    /// [`super::definitions::OPERATIONS`] spells it) asks with these fields, with `defaults`; `None`
    /// when the name is not a position query read here or a field is not its own.
    pub fn query(&self, name: &str, defaults: Defaults) -> Option<Operation> {
        if name == "symbols" || name == "document_symbols" {
            let file = self.file().filter(|_| self.file_only())?;
            return Some(Operation::Query(QueryRequest::Symbols { file }));
        }
        let kind = match (name, self.kind.as_deref()) {
            (_, Some(_)) if name != "definition" => return None,
            ("definition", None | Some("definition")) => Some(DefinitionKind::Definition),
            ("definition", Some("declaration")) | ("declaration", None) => {
                Some(DefinitionKind::Declaration)
            }
            ("definition", Some("type_definition")) | ("type-definition", None) => {
                Some(DefinitionKind::TypeDefinition)
            }
            ("definition", Some("implementation")) | ("implementation", None) => {
                Some(DefinitionKind::Implementation)
            }
            ("definition", Some(_)) => return None,
            _ => None,
        };
        if self.include_declaration.is_some() && name != "references" {
            return None;
        }
        let at = self.position()?;
        let request = match (name, kind) {
            (_, Some(kind)) => QueryRequest::Definition { at, kind },
            ("hover", None) => QueryRequest::Hover { at },
            ("references", None) => QueryRequest::References {
                at,
                include_declaration: self
                    .include_declaration
                    .unwrap_or(defaults.include_declaration),
            },
            ("signature-help" | "signature_help", None) => QueryRequest::SignatureHelp { at },
            _ => return None,
        };
        Some(Operation::Query(request))
    }
}
