//! The one operation vocabulary (issue 12): every query, the edit commands, diagnostics and a
//! check of a file set are an [`Operation`], read from one JSON shape and checked in one place.
//!
//! The JSON shape is `{"op": NAME, ARGUMENT: VALUE, ...}` with the names and arguments of
//! [`definitions::OPERATIONS`]: `lspc batch` lines are exactly that object (plus an `id`), MCP
//! `tools/call` arguments are that object without `op` (the tool names it), and the command line
//! builds the same argument object from its flags and `LOC` before calling
//! [`Operation::from_arguments`]. So a bad argument gets the same message in every frontend:
//! `"definition: line must be a whole number from 1, got 0"`.
//!
//! Lines, columns and occurrences are 1-based; columns count Unicode characters. Paths are kept
//! as written: each frontend resolves them (batch and MCP against the workspace root, the CLI
//! against the current directory).

pub mod definitions;
pub mod execute;
pub mod instant;

use std::path::PathBuf;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::edit::commands::Span;
use crate::edit::formatting::FormattingOverrides;
use crate::query::command::QueryRequest;
use crate::query::{CallDirection, ColumnOrSymbol, DefinitionKind, TextPosition, TypeDirection};
use definitions::{find_operation, normalise_name, ArgumentDef, Need, OperationDef, ValueKind};

/// One operation with its arguments checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// A code-intelligence query (definition, references, hover, symbols, hierarchies, ...).
    Query(QueryRequest),
    /// The settled diagnostics of `file`; over MCP without a file, the passive diagnostics not yet
    /// delivered.
    Diagnostics { file: Option<PathBuf> },
    /// `lspc check`: the diagnostics of a set of files and folders (empty: the workspace root).
    Check { paths: Vec<PathBuf> },
    /// `textDocument/rename` at `at`; written only with `apply`.
    Rename {
        at: TextPosition,
        new_name: String,
        apply: bool,
    },
    /// The code actions for a span.
    CodeActions { at: Span },
    /// The code action titled `title` for a span; written only with `apply`.
    ApplyCodeAction {
        at: Span,
        title: String,
        apply: bool,
    },
    /// `textDocument/formatting` of a file with the indentation asked for (unset fields come
    /// from `.editorconfig`, then the file); written only with `apply`.
    Format {
        file: PathBuf,
        options: FormattingOverrides,
        apply: bool,
    },
    /// Replace the one occurrence of `old` with `new` in `file` (always written).
    Edit {
        file: PathBuf,
        old: String,
        new: String,
    },
}

impl Operation {
    /// Whether running it writes files: `edit`, and `rename`, `apply-code-action` and `format`
    /// with `apply`.
    pub fn writes(&self) -> bool {
        match self {
            Operation::Rename { apply, .. }
            | Operation::ApplyCodeAction { apply, .. }
            | Operation::Format { apply, .. } => *apply,
            Operation::Edit { .. } => true,
            Operation::Query(_)
            | Operation::Diagnostics { .. }
            | Operation::Check { .. }
            | Operation::CodeActions { .. } => false,
        }
    }
}

/// Why `operation` is refused when the configuration in force has `errors` (each as text): an
/// operation that would write files writes nothing then, as `lspc rename --apply` refuses.
/// `None` when it may run (it does not write, or there are no errors).
pub fn refused_on_config_errors(operation: &Operation, errors: &[String]) -> Option<String> {
    let first = errors.first().filter(|_| operation.writes())?;
    let more = match errors.len() {
        1 => String::new(),
        n => format!(", and {} more", n - 1),
    };
    Some(format!(
        "nothing written: fix the configuration errors first ({first}{more})"
    ))
}

/// A bad operation or argument: the message names the operation and the argument, and is the
/// same whichever frontend the operation came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError(pub String);

impl std::fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgumentError {}

/// Defaults that differ by frontend, kept as they were before the vocabulary was shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    /// `references` without `include_declaration`: MCP lists the declaration, CLI and batch not.
    pub include_declaration: bool,
}

impl Defaults {
    /// The command line and `lspc batch`.
    pub const CLI: Defaults = Defaults {
        include_declaration: false,
    };
    /// MCP `tools/call`.
    pub const MCP: Defaults = Defaults {
        include_declaration: true,
    };
}

/// The arguments of one operation, checked against its definition as they are read.
struct Reader<'a> {
    def: &'static OperationDef,
    arguments: &'a Map<String, Value>,
}

impl Reader<'_> {
    fn error(&self, message: impl std::fmt::Display) -> ArgumentError {
        ArgumentError(format!("{}: {message}", self.def.name))
    }

    /// The value given for `argument` (under its name or an alias), `None` when absent or null.
    fn raw(&self, argument: &ArgumentDef) -> Option<&Value> {
        std::iter::once(argument.name)
            .chain(argument.aliases.iter().copied())
            .find_map(|key| self.arguments.get(key).filter(|value| !value.is_null()))
    }

    fn one_based(&self, argument: &ArgumentDef) -> Result<Option<u32>, ArgumentError> {
        let Some(value) = self.raw(argument) else {
            return Ok(None);
        };
        value
            .as_u64()
            .and_then(|number| u32::try_from(number).ok())
            .filter(|number| *number >= 1)
            .map(Some)
            .ok_or_else(|| {
                self.error(format!(
                    "{} must be a whole number from 1, got {value}",
                    argument.name
                ))
            })
    }

    fn boolean(&self, argument: &ArgumentDef) -> Result<Option<bool>, ArgumentError> {
        match self.raw(argument) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(other) => Err(self.error(format!(
                "{} must be true or false, got {other}",
                argument.name
            ))),
        }
    }

    fn text(&self, argument: &ArgumentDef) -> Result<Option<String>, ArgumentError> {
        match self.raw(argument) {
            None => Ok(None),
            Some(Value::String(text)) => {
                if text.is_empty() && argument.value != ValueKind::Text {
                    return Err(self.error(format!("{} must not be empty", argument.name)));
                }
                if let ValueKind::Choice(values) = argument.value {
                    let wanted = normalise_name(text);
                    return values
                        .iter()
                        .find(|value| normalise_name(value) == wanted)
                        .map(|value| Some((*value).to_owned()))
                        .ok_or_else(|| {
                            self.error(format!(
                                "{} {text:?} is not one of {}",
                                argument.name,
                                values.join(", ")
                            ))
                        });
                }
                Ok(Some(text.clone()))
            }
            Some(other) => {
                Err(self.error(format!("{} must be a string, got {other}", argument.name)))
            }
        }
    }

    fn paths(&self, argument: &ArgumentDef) -> Result<Vec<PathBuf>, ArgumentError> {
        let Some(value) = self.raw(argument) else {
            return Ok(Vec::new());
        };
        let bad = || {
            self.error(format!(
                "{} must be a list of paths (strings), got {value}",
                argument.name
            ))
        };
        let items = value.as_array().ok_or_else(bad)?;
        items
            .iter()
            .map(|item| match item {
                Value::String(path) if !path.is_empty() => Ok(PathBuf::from(path)),
                _ => Err(bad()),
            })
            .collect()
    }

    fn required<T>(&self, argument: &ArgumentDef, value: Option<T>) -> Result<T, ArgumentError> {
        value.ok_or_else(|| self.error(format!("{} is required", argument.name)))
    }

    fn file(&self, argument: &ArgumentDef) -> Result<Option<PathBuf>, ArgumentError> {
        Ok(self.text(argument)?.map(PathBuf::from))
    }

    fn position(&self) -> Result<TextPosition, ArgumentError> {
        use definitions::{COLUMN, FILE, LINE, OCCURRENCE, SYMBOL};
        let file = self.required(&FILE, self.file(&FILE)?)?;
        let line = self.required(&LINE, self.one_based(&LINE)?)?;
        let column = self.one_based(&COLUMN)?;
        let symbol = self.text(&SYMBOL)?;
        let occurrence = self.one_based(&OCCURRENCE)?;
        let target = match (column, symbol) {
            (Some(_), Some(_)) => return Err(self.error("give either column or symbol, not both")),
            (Some(column), None) => {
                if occurrence.is_some() {
                    return Err(self.error("occurrence needs symbol"));
                }
                ColumnOrSymbol::Column(column)
            }
            (None, Some(name)) => ColumnOrSymbol::Symbol {
                name,
                occurrence: occurrence.unwrap_or(1),
            },
            (None, None) => {
                return Err(self
                    .error("give column (1-based, in characters) or symbol (a name on that line)"))
            }
        };
        Ok(TextPosition { file, line, target })
    }

    /// A position when `column` or `symbol` is given, else whole lines `line..=end_line`.
    fn span(&self) -> Result<Span, ArgumentError> {
        use definitions::{COLUMN, END_LINE, FILE, LINE, SYMBOL};
        let end_line = self.one_based(&END_LINE)?;
        if self.raw(&COLUMN).is_some() || self.raw(&SYMBOL).is_some() {
            if end_line.is_some() {
                return Err(self.error(
                    "give end_line for a line range, or column/symbol for one position, not both",
                ));
            }
            return self.position().map(Span::At);
        }
        let path = self.required(&FILE, self.file(&FILE)?)?;
        let start_line = self.required(&LINE, self.one_based(&LINE)?)?;
        let end_line = end_line.unwrap_or(start_line);
        if end_line < start_line {
            return Err(self.error(format!("end_line {end_line} is before line {start_line}")));
        }
        Ok(Span::Lines {
            path,
            start_line,
            end_line,
        })
    }

    /// Every given key is an argument of this operation (or `op`/`id`, or `_meta`-style keys).
    fn no_unknown(&self) -> Result<(), ArgumentError> {
        for key in self.arguments.keys() {
            if key == "op" || key == "id" || key.starts_with('_') {
                continue;
            }
            let known = self.def.arguments.iter().any(|(argument, _)| {
                argument.name == key.as_str() || argument.aliases.contains(&key.as_str())
            });
            if !known {
                let expected: Vec<&str> = self
                    .def
                    .arguments
                    .iter()
                    .map(|(argument, _)| argument.name)
                    .collect();
                return Err(self.error(format!(
                    "unknown argument {key:?} (expected {})",
                    if expected.is_empty() {
                        "none".to_owned()
                    } else {
                        expected.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }
}

impl Operation {
    /// Read operation `name` (a name, alias or MCP tool name, in any of the `_`/`-`/camelCase
    /// spellings) from its `arguments`, checking every argument against its definition.
    pub fn from_arguments(
        name: &str,
        arguments: &Map<String, Value>,
        defaults: Defaults,
    ) -> Result<Operation, ArgumentError> {
        use definitions as d;
        let def = find_operation(name).ok_or_else(|| {
            let names: Vec<&str> = d::OPERATIONS.iter().map(|def| def.name).collect();
            ArgumentError(format!(
                "unknown op {name:?} (expected one of {})",
                names.join(", ")
            ))
        })?;
        let reader = Reader { def, arguments };
        reader.no_unknown()?;
        let query = |request: QueryRequest| Ok(Operation::Query(request));
        let definition = |kind| {
            query(QueryRequest::Definition {
                at: reader.position()?,
                kind,
            })
        };
        let call = |direction| {
            query(QueryRequest::CallHierarchy {
                at: reader.position()?,
                direction,
            })
        };
        let apply = || Ok(reader.boolean(&d::APPLY)?.unwrap_or(false));
        match def.name {
            "definition" => {
                let kind = match reader.text(&d::KIND)?.as_deref() {
                    None | Some("definition") => DefinitionKind::Definition,
                    Some("declaration") => DefinitionKind::Declaration,
                    Some("type_definition") => DefinitionKind::TypeDefinition,
                    _ => DefinitionKind::Implementation,
                };
                definition(kind)
            }
            "declaration" => definition(DefinitionKind::Declaration),
            "type-definition" => definition(DefinitionKind::TypeDefinition),
            "implementation" => definition(DefinitionKind::Implementation),
            "references" => query(QueryRequest::References {
                at: reader.position()?,
                include_declaration: reader
                    .boolean(&d::INCLUDE_DECLARATION)?
                    .unwrap_or(defaults.include_declaration),
            }),
            "hover" => query(QueryRequest::Hover {
                at: reader.position()?,
            }),
            "symbols" => query(QueryRequest::Symbols {
                file: reader.required(&d::FILE, reader.file(&d::FILE)?)?,
            }),
            "workspace-symbols" => query(QueryRequest::WorkspaceSymbols {
                query: reader.required(&d::QUERY, reader.text(&d::QUERY)?)?,
                file: reader.file(&d::SERVER_FILE)?,
            }),
            "call-hierarchy" => call(match reader.text(&d::CALL_DIRECTION)?.as_deref() {
                None => None,
                Some("incoming") => Some(CallDirection::Incoming),
                _ => Some(CallDirection::Outgoing),
            }),
            "incoming-calls" => call(Some(CallDirection::Incoming)),
            "outgoing-calls" => call(Some(CallDirection::Outgoing)),
            "type-hierarchy" => query(QueryRequest::TypeHierarchy {
                direction: match reader.text(&d::TYPE_DIRECTION)?.as_deref() {
                    None | Some("supertypes") => TypeDirection::Supertypes,
                    _ => TypeDirection::Subtypes,
                },
                at: reader.position()?,
            }),
            "signature-help" => query(QueryRequest::SignatureHelp {
                at: reader.position()?,
            }),
            "diagnostics" => Ok(Operation::Diagnostics {
                file: reader.file(&d::DIAGNOSTICS_FILE)?,
            }),
            "check" => Ok(Operation::Check {
                paths: reader.paths(&d::PATHS)?,
            }),
            "rename" => {
                let at = reader.position()?;
                let new_name = reader.required(&d::NEW_NAME, reader.text(&d::NEW_NAME)?)?;
                if new_name.trim().is_empty() {
                    return Err(reader.error("new_name must not be empty"));
                }
                Ok(Operation::Rename {
                    at,
                    new_name,
                    apply: apply()?,
                })
            }
            "code-actions" => Ok(Operation::CodeActions { at: reader.span()? }),
            "apply-code-action" => Ok(Operation::ApplyCodeAction {
                at: reader.span()?,
                title: reader.required(&d::TITLE, reader.text(&d::TITLE)?)?,
                apply: apply()?,
            }),
            "format" => {
                let file = reader.required(&d::FILE, reader.file(&d::FILE)?)?;
                let tab_size = reader.one_based(&d::TAB_SIZE)?;
                if let Some(size) = tab_size.filter(|size| *size > 64) {
                    return Err(reader.error(format!("tab_size must be from 1 to 64, got {size}")));
                }
                Ok(Operation::Format {
                    file,
                    options: FormattingOverrides {
                        tab_size,
                        insert_spaces: reader.boolean(&d::INSERT_SPACES)?,
                    },
                    apply: apply()?,
                })
            }
            "edit" => Ok(Operation::Edit {
                file: reader.required(&d::FILE, reader.file(&d::FILE)?)?,
                old: reader.required(&d::OLD, reader.text(&d::OLD)?)?,
                new: reader.required(&d::NEW, reader.text(&d::NEW)?)?,
            }),
            other => unreachable!("operation {other} has a definition but no reader"),
        }
    }

    /// Read the whole JSON shape `{"op": NAME, ...arguments}`.
    pub fn from_json(value: &Value, defaults: Defaults) -> Result<Operation, ArgumentError> {
        let Value::Object(object) = value else {
            return Err(ArgumentError(
                "an operation must be a JSON object".to_owned(),
            ));
        };
        let name = match object.get("op") {
            Some(Value::String(name)) => name,
            None | Some(Value::Null) => return Err(ArgumentError("missing op".to_owned())),
            Some(other) => return Err(ArgumentError(format!("op must be a string, got {other}"))),
        };
        Operation::from_arguments(name, object, defaults)
    }

    /// This operation with every path argument passed through `resolve` (batch joins relative
    /// paths to the workspace root, as MCP does).
    pub fn map_paths(self, resolve: &dyn Fn(PathBuf) -> PathBuf) -> Operation {
        match self.try_map_paths(&|path| Ok::<PathBuf, std::convert::Infallible>(resolve(path))) {
            Ok(operation) => operation,
            Err(never) => match never {},
        }
    }

    /// [`Operation::map_paths`] with a resolution that can fail (MCP: the file must exist
    /// inside the root); the first failure is returned.
    pub fn try_map_paths<E>(
        self,
        resolve: &dyn Fn(PathBuf) -> Result<PathBuf, E>,
    ) -> Result<Operation, E> {
        let at = |at: TextPosition| -> Result<TextPosition, E> {
            Ok(TextPosition {
                file: resolve(at.file.clone())?,
                ..at
            })
        };
        let span = |span: Span| -> Result<Span, E> {
            Ok(match span {
                Span::At(position) => Span::At(at(position)?),
                Span::Lines {
                    path,
                    start_line,
                    end_line,
                } => Span::Lines {
                    path: resolve(path)?,
                    start_line,
                    end_line,
                },
            })
        };
        Ok(match self {
            Operation::Query(request) => Operation::Query(match request {
                QueryRequest::Definition { at: position, kind } => QueryRequest::Definition {
                    at: at(position)?,
                    kind,
                },
                QueryRequest::References {
                    at: position,
                    include_declaration,
                } => QueryRequest::References {
                    at: at(position)?,
                    include_declaration,
                },
                QueryRequest::Hover { at: position } => QueryRequest::Hover { at: at(position)? },
                QueryRequest::Symbols { file } => QueryRequest::Symbols {
                    file: resolve(file)?,
                },
                QueryRequest::WorkspaceSymbols { query, file } => QueryRequest::WorkspaceSymbols {
                    query,
                    file: file.map(resolve).transpose()?,
                },
                QueryRequest::CallHierarchy {
                    at: position,
                    direction,
                } => QueryRequest::CallHierarchy {
                    at: at(position)?,
                    direction,
                },
                QueryRequest::TypeHierarchy {
                    at: position,
                    direction,
                } => QueryRequest::TypeHierarchy {
                    at: at(position)?,
                    direction,
                },
                QueryRequest::SignatureHelp { at: position } => {
                    QueryRequest::SignatureHelp { at: at(position)? }
                }
            }),
            Operation::Diagnostics { file } => Operation::Diagnostics {
                file: file.map(resolve).transpose()?,
            },
            Operation::Check { paths } => Operation::Check {
                paths: paths.into_iter().map(resolve).collect::<Result<_, E>>()?,
            },
            Operation::Rename {
                at: position,
                new_name,
                apply,
            } => Operation::Rename {
                at: at(position)?,
                new_name,
                apply,
            },
            Operation::CodeActions { at } => Operation::CodeActions { at: span(at)? },
            Operation::ApplyCodeAction { at, title, apply } => Operation::ApplyCodeAction {
                at: span(at)?,
                title,
                apply,
            },
            Operation::Format {
                file,
                options,
                apply,
            } => Operation::Format {
                file: resolve(file)?,
                options,
                apply,
            },
            Operation::Edit { file, old, new } => Operation::Edit {
                file: resolve(file)?,
                old,
                new,
            },
        })
    }

    /// The definition this operation follows.
    pub fn definition(&self) -> &'static OperationDef {
        let name = match self {
            Operation::Query(request) => match request {
                QueryRequest::Definition { .. } => "definition",
                QueryRequest::References { .. } => "references",
                QueryRequest::Hover { .. } => "hover",
                QueryRequest::Symbols { .. } => "symbols",
                QueryRequest::WorkspaceSymbols { .. } => "workspace-symbols",
                QueryRequest::CallHierarchy { .. } => "call-hierarchy",
                QueryRequest::TypeHierarchy { .. } => "type-hierarchy",
                QueryRequest::SignatureHelp { .. } => "signature-help",
            },
            Operation::Diagnostics { .. } => "diagnostics",
            Operation::Check { .. } => "check",
            Operation::Rename { .. } => "rename",
            Operation::CodeActions { .. } => "code-actions",
            Operation::ApplyCodeAction { .. } => "apply-code-action",
            Operation::Format { .. } => "format",
            Operation::Edit { .. } => "edit",
        };
        find_operation(name).expect("every operation has a definition")
    }

    /// The JSON shape of this operation (`{"op": ..., ...}`), which [`Operation::from_json`]
    /// reads back to the same operation.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("op".to_owned(), Value::from(self.definition().name));
        let put = |object: &mut Map<String, Value>, key: &str, value: Value| {
            object.insert(key.to_owned(), value);
        };
        let o = &mut object;
        match self {
            Operation::Query(request) => match request {
                QueryRequest::Definition { at, kind } => {
                    put_position(o, at);
                    let kind = match kind {
                        DefinitionKind::Definition => "definition",
                        DefinitionKind::Declaration => "declaration",
                        DefinitionKind::TypeDefinition => "type_definition",
                        DefinitionKind::Implementation => "implementation",
                    };
                    put(o, "kind", Value::from(kind));
                }
                QueryRequest::References {
                    at,
                    include_declaration,
                } => {
                    put_position(o, at);
                    put(o, "include_declaration", Value::from(*include_declaration));
                }
                QueryRequest::Hover { at } | QueryRequest::SignatureHelp { at } => {
                    put_position(o, at)
                }
                QueryRequest::Symbols { file } => put(o, "file", path_value(file)),
                QueryRequest::WorkspaceSymbols { query, file } => {
                    put(o, "query", Value::from(query.clone()));
                    if let Some(file) = file {
                        put(o, "file", path_value(file));
                    }
                }
                QueryRequest::CallHierarchy { at, direction } => {
                    put_position(o, at);
                    match direction {
                        Some(CallDirection::Incoming) => put(o, "direction", "incoming".into()),
                        Some(CallDirection::Outgoing) => put(o, "direction", "outgoing".into()),
                        None => {}
                    }
                }
                QueryRequest::TypeHierarchy { at, direction } => {
                    put_position(o, at);
                    let direction = match direction {
                        TypeDirection::Supertypes => "supertypes",
                        TypeDirection::Subtypes => "subtypes",
                    };
                    put(o, "direction", Value::from(direction));
                }
            },
            Operation::Diagnostics { file } => {
                if let Some(file) = file {
                    put(o, "file", path_value(file));
                }
            }
            Operation::Check { paths } => put(
                o,
                "paths",
                Value::Array(paths.iter().map(|path| path_value(path)).collect()),
            ),
            Operation::Rename {
                at,
                new_name,
                apply,
            } => {
                put_position(o, at);
                put(o, "new_name", Value::from(new_name.clone()));
                put(o, "apply", Value::from(*apply));
            }
            Operation::CodeActions { at } => put_span(o, at),
            Operation::ApplyCodeAction { at, title, apply } => {
                put_span(o, at);
                put(o, "title", Value::from(title.clone()));
                put(o, "apply", Value::from(*apply));
            }
            Operation::Format {
                file,
                options,
                apply,
            } => {
                put(o, "file", path_value(file));
                if let Some(size) = options.tab_size {
                    put(o, "tab_size", Value::from(size));
                }
                if let Some(spaces) = options.insert_spaces {
                    put(o, "insert_spaces", Value::from(spaces));
                }
                put(o, "apply", Value::from(*apply));
            }
            Operation::Edit { file, old, new } => {
                put(o, "file", path_value(file));
                put(o, "old", Value::from(old.clone()));
                put(o, "new", Value::from(new.clone()));
            }
        }
        Value::Object(object)
    }
}

fn path_value(path: &std::path::Path) -> Value {
    Value::from(path.to_string_lossy().into_owned())
}

fn put_position(object: &mut Map<String, Value>, at: &TextPosition) {
    object.insert("file".to_owned(), path_value(&at.file));
    object.insert("line".to_owned(), Value::from(at.line));
    match &at.target {
        ColumnOrSymbol::Column(column) => {
            object.insert("column".to_owned(), Value::from(*column));
        }
        ColumnOrSymbol::Symbol { name, occurrence } => {
            object.insert("symbol".to_owned(), Value::from(name.clone()));
            object.insert("occurrence".to_owned(), Value::from(*occurrence));
        }
    }
}

fn put_span(object: &mut Map<String, Value>, at: &Span) {
    match at {
        Span::At(at) => put_position(object, at),
        Span::Lines {
            path,
            start_line,
            end_line,
        } => {
            object.insert("file".to_owned(), path_value(path));
            object.insert("line".to_owned(), Value::from(*start_line));
            object.insert("end_line".to_owned(), Value::from(*end_line));
        }
    }
}

/// Reads the JSON shape (`{"op": ...}`) with the command-line/batch defaults; the wire of
/// `lspc batch` and of sessions.
impl<'de> Deserialize<'de> for Operation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Operation, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Operation::from_json(&value, Defaults::CLI).map_err(D::Error::custom)
    }
}

impl Serialize for Operation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// The arguments `def` requires.
pub fn required_arguments(def: &OperationDef) -> impl Iterator<Item = &'static ArgumentDef> + '_ {
    def.arguments
        .iter()
        .filter(|(_, need)| *need == Need::Required)
        .map(|(argument, _)| *argument)
}

#[cfg(test)]
mod tests;
