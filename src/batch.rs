//! `lspc batch`: many queries over one engine session, as JSON lines.
//!
//! Input (stdin): one JSON object per line, `{"id": any, "op": "<command name>", ...arguments}`,
//! with arguments named as the MCP tools' inputs: `file`, `line`, `column`, `symbol`,
//! `occurrence`, `query`, `includeDeclaration`, `kind`, `direction`. Lines and columns are 1-based;
//! columns count Unicode characters (all three are 1-based, so 0 is refused). A relative `file`
//! is resolved against the workspace root, as MCP does (batch lines are a machine interface, not
//! a shell); absolute paths are used as given. Blank lines are skipped.
//!
//! Output (stdout): exactly one JSON line per request, in input order, flushed at once:
//! `{"id": <the request's id>, "result": ...}` (the same object `lspc <op> --format json` prints)
//! or `{"id": ..., "error": {"message": "..."}}`. A malformed line gets an error line (with `id`
//! `null` when none could be read) and the batch goes on. Requests run one at a time, so order is
//! preserved. The batch ends at EOF; the exit status is 0 unless stdout fails.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::engine::{DiagnosticsOutcome, EngineOptions, Op};
use crate::exit::{EXIT_OK, EXIT_SERVER};
use crate::query::command::{execute, QueryRequest};
use crate::query::{
    CallDirection, ColumnOrSymbol, DefinitionKind, Queries, TextPosition, TypeDirection,
};
use crate::uri;

/// One parsed batch line.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchOp {
    Query(QueryRequest),
    /// Settled diagnostics of one file (via [`Op::Diagnostics`]).
    Diagnostics {
        file: PathBuf,
    },
}

/// Why a batch line could not become an op; the message goes into the error line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchLineError(pub String);

impl std::fmt::Display for BatchLineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BatchLineError {}

fn error(message: impl Into<String>) -> BatchLineError {
    BatchLineError(message.into())
}

/// `"type_definition"`, `"typeDefinition"` and `"type-definition"` all name the same op.
fn normalise_op_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for ch in name.chars() {
        if ch.is_ascii_uppercase() {
            out.push('-');
            out.push(ch.to_ascii_lowercase());
        } else if ch == '_' {
            out.push('-');
        } else {
            out.push(ch);
        }
    }
    out
}

fn string_arg(args: &Map<String, Value>, key: &str) -> Result<Option<String>, BatchLineError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(error(format!("`{key}` must be a string, got {other}"))),
    }
}

fn number_arg(args: &Map<String, Value>, key: &str) -> Result<Option<u32>, BatchLineError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|number| u32::try_from(number).ok())
            .filter(|number| *number >= 1)
            .map(Some)
            .ok_or_else(|| {
                error(format!(
                    "`{key}` must be a positive integer (1-based), got {value}"
                ))
            }),
    }
}

fn bool_arg(args: &Map<String, Value>, key: &str) -> Result<bool, BatchLineError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(other) => Err(error(format!("`{key}` must be true or false, got {other}"))),
    }
}

fn file_arg(args: &Map<String, Value>) -> Result<PathBuf, BatchLineError> {
    string_arg(args, "file")?
        .map(PathBuf::from)
        .ok_or_else(|| error("missing `file`"))
}

/// `file` + `line` + (`column` or `symbol` [+ `occurrence`]).
fn position_arg(args: &Map<String, Value>) -> Result<TextPosition, BatchLineError> {
    let file = file_arg(args)?;
    let line = number_arg(args, "line")?.ok_or_else(|| error("missing `line`"))?;
    let column = number_arg(args, "column")?;
    let symbol = string_arg(args, "symbol")?;
    let occurrence = number_arg(args, "occurrence")?;
    let target = match (column, symbol) {
        (Some(_), Some(_)) => return Err(error("give either `column` or `symbol`, not both")),
        (Some(column), None) => {
            if occurrence.is_some() {
                return Err(error("`occurrence` needs `symbol`"));
            }
            ColumnOrSymbol::Column(column)
        }
        (None, Some(name)) => ColumnOrSymbol::Symbol {
            name,
            occurrence: occurrence.unwrap_or(1),
        },
        (None, None) => return Err(error("missing `column` or `symbol`")),
    };
    Ok(TextPosition { file, line, target })
}

/// Parse one input object (without its `id`) into an op.
pub fn parse_op(args: &Map<String, Value>) -> Result<BatchOp, BatchLineError> {
    let op = string_arg(args, "op")?.ok_or_else(|| error("missing `op`"))?;
    let definition = |kind| -> Result<BatchOp, BatchLineError> {
        Ok(BatchOp::Query(QueryRequest::Definition {
            at: position_arg(args)?,
            kind,
        }))
    };
    let name = normalise_op_name(&op);
    let call = |direction| -> Result<BatchOp, BatchLineError> {
        Ok(BatchOp::Query(QueryRequest::CallHierarchy {
            at: position_arg(args)?,
            direction,
        }))
    };
    match name.as_str() {
        "definition" => match string_arg(args, "kind")?.map(|kind| normalise_op_name(&kind)) {
            None => definition(DefinitionKind::Definition),
            Some(kind) => match kind.as_str() {
                "definition" => definition(DefinitionKind::Definition),
                "declaration" => definition(DefinitionKind::Declaration),
                "type-definition" => definition(DefinitionKind::TypeDefinition),
                "implementation" => definition(DefinitionKind::Implementation),
                _ => Err(error(format!(
                    "unknown definition `kind` {kind:?} (expected definition, declaration, type-definition or implementation)"
                ))),
            },
        },
        "declaration" => definition(DefinitionKind::Declaration),
        "type-definition" => definition(DefinitionKind::TypeDefinition),
        "implementation" => definition(DefinitionKind::Implementation),
        "references" => Ok(BatchOp::Query(QueryRequest::References {
            at: position_arg(args)?,
            include_declaration: bool_arg(args, "includeDeclaration")?,
        })),
        "hover" => Ok(BatchOp::Query(QueryRequest::Hover {
            at: position_arg(args)?,
        })),
        "symbols" | "document-symbols" => Ok(BatchOp::Query(QueryRequest::Symbols {
            file: file_arg(args)?,
        })),
        "workspace-symbols" => Ok(BatchOp::Query(QueryRequest::WorkspaceSymbols {
            query: string_arg(args, "query")?.ok_or_else(|| error("missing `query`"))?,
            file: string_arg(args, "file")?.map(PathBuf::from),
        })),
        "call-hierarchy" => {
            let direction = match string_arg(args, "direction")?.as_deref() {
                None => None,
                Some("incoming") => Some(CallDirection::Incoming),
                Some("outgoing") => Some(CallDirection::Outgoing),
                Some(other) => {
                    return Err(error(format!(
                        "unknown call hierarchy `direction` {other:?} (expected incoming or outgoing)"
                    )))
                }
            };
            call(direction)
        }
        "incoming-calls" => call(Some(CallDirection::Incoming)),
        "outgoing-calls" => call(Some(CallDirection::Outgoing)),
        "type-hierarchy" => {
            let wanted = match string_arg(args, "direction")? {
                Some(direction) => Some(direction),
                None => string_arg(args, "kind")?,
            };
            let direction = match wanted.as_deref() {
                None | Some("supertypes") => TypeDirection::Supertypes,
                Some("subtypes") => TypeDirection::Subtypes,
                Some(other) => {
                    return Err(error(format!(
                        "unknown type hierarchy `direction` {other:?} (expected supertypes or subtypes)"
                    )))
                }
            };
            Ok(BatchOp::Query(QueryRequest::TypeHierarchy {
                at: position_arg(args)?,
                direction,
            }))
        }
        "signature-help" => Ok(BatchOp::Query(QueryRequest::SignatureHelp {
            at: position_arg(args)?,
        })),
        "diagnostics" => Ok(BatchOp::Diagnostics {
            file: file_arg(args)?,
        }),
        _ => Err(error(format!("unknown op {op:?}"))),
    }
}

/// Parse one input line into its id and op. The id is `null` when the line is not an object.
pub fn parse_line(line: &str) -> (Value, Result<BatchOp, BatchLineError>) {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(parse_error) => {
            return (
                Value::Null,
                Err(error(format!("malformed JSON line: {parse_error}"))),
            )
        }
    };
    let Value::Object(object) = value else {
        return (
            Value::Null,
            Err(error("a batch line must be a JSON object")),
        );
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    (id, parse_op(&object))
}

/// `op` with every relative `file` joined to `root` (absolute paths stay as given), so batch
/// paths mean what MCP paths mean whatever the current directory.
pub fn resolve_against_root(op: BatchOp, root: &Path) -> BatchOp {
    let resolve = |file: PathBuf| {
        if file.is_absolute() {
            file
        } else {
            root.join(file)
        }
    };
    let at = |at: TextPosition| TextPosition {
        file: resolve(at.file.clone()),
        ..at
    };
    match op {
        BatchOp::Diagnostics { file } => BatchOp::Diagnostics {
            file: resolve(file),
        },
        BatchOp::Query(request) => BatchOp::Query(match request {
            QueryRequest::Definition { at: position, kind } => QueryRequest::Definition {
                at: at(position),
                kind,
            },
            QueryRequest::References {
                at: position,
                include_declaration,
            } => QueryRequest::References {
                at: at(position),
                include_declaration,
            },
            QueryRequest::Hover { at: position } => QueryRequest::Hover { at: at(position) },
            QueryRequest::Symbols { file } => QueryRequest::Symbols {
                file: resolve(file),
            },
            QueryRequest::WorkspaceSymbols { query, file } => QueryRequest::WorkspaceSymbols {
                query,
                file: file.map(resolve),
            },
            QueryRequest::CallHierarchy {
                at: position,
                direction,
            } => QueryRequest::CallHierarchy {
                at: at(position),
                direction,
            },
            QueryRequest::TypeHierarchy {
                at: position,
                direction,
            } => QueryRequest::TypeHierarchy {
                at: at(position),
                direction,
            },
            QueryRequest::SignatureHelp { at: position } => {
                QueryRequest::SignatureHelp { at: at(position) }
            }
        }),
    }
}

/// Answer one op as the `result` value, or an error message.
fn answer(
    queries: &Queries,
    op: &BatchOp,
    op_sender: &crossbeam_channel::Sender<Op>,
    timeout: Duration,
) -> Result<Value, String> {
    match op {
        BatchOp::Query(request) => execute(queries, request)
            .map(|answer| answer.json)
            .map_err(|error| error.to_string()),
        BatchOp::Diagnostics { file } => {
            let path = uri::canonical(file);
            if !path.is_file() {
                return Err(format!(
                    "cannot read {}: no such file",
                    uri::relative_display(&path, queries.root())
                ));
            }
            let (reply, receiver) = crossbeam_channel::bounded(1);
            op_sender
                .send(Op::Diagnostics {
                    paths: vec![path],
                    timeout,
                    reply,
                })
                .map_err(|_| "the engine has shut down".to_owned())?;
            let results = receiver
                .recv()
                .map_err(|_| "the engine has shut down".to_owned())?;
            let Some(result) = results.into_iter().next() else {
                return Err("no diagnostics result".to_owned());
            };
            let root = queries.root();
            let render = |diagnostics: &[crate::diagnostics::Diagnostic]| -> Vec<Value> {
                diagnostics
                    .iter()
                    .map(|diagnostic| {
                        json!({
                            "path": uri::relative_display(&diagnostic.path, root),
                            "line": diagnostic.line,
                            "column": diagnostic.column,
                            "endLine": diagnostic.end_line,
                            "endColumn": diagnostic.end_column,
                            "severity": diagnostic.severity.as_str(),
                            "message": diagnostic.message,
                            "source": diagnostic.source,
                            "code": diagnostic.code,
                            "server": diagnostic.server,
                        })
                    })
                    .collect()
            };
            match result.outcome {
                DiagnosticsOutcome::Settled(diagnostics) => Ok(json!({
                    "diagnostics": render(&diagnostics),
                    "complete": true,
                })),
                DiagnosticsOutcome::TimedOut {
                    diagnostics,
                    servers,
                    after,
                } => Ok(json!({
                    "diagnostics": render(&diagnostics),
                    "complete": false,
                    "incomplete": format!(
                        "diagnostics incomplete: {} still analysing after {} s",
                        servers.join(", "),
                        after.as_secs_f64()
                    ),
                })),
                DiagnosticsOutcome::Failed(message) | DiagnosticsOutcome::NotChecked(message) => {
                    Err(message)
                }
            }
        }
    }
}

/// Run the batch over `input`, writing answers to `output`; returns the exit status.
pub fn run_with(
    engine_options: EngineOptions,
    timeout: Duration,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> i32 {
    let root = engine_options.config.root.clone();
    let engine = crate::session::start_engine(engine_options);
    let op_sender = engine.op_sender();
    let queries = Queries::new(op_sender.clone(), root.clone(), timeout);
    let mut buffer = Vec::new();
    let status = loop {
        buffer.clear();
        match input.read_until(b'\n', &mut buffer) {
            Ok(0) => break EXIT_OK,
            Ok(_) => {}
            Err(read_error) => {
                eprintln!("lspc: cannot read stdin: {read_error}");
                break EXIT_SERVER;
            }
        }
        let reply = match std::str::from_utf8(&buffer) {
            Err(_) => json!({"id": null, "error": {"message": "a batch line must be UTF-8"}}),
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => {
                let (id, parsed) = parse_line(line.trim());
                match parsed
                    .map_err(|error| error.to_string())
                    .map(|op| resolve_against_root(op, &root))
                    .and_then(|op| answer(&queries, &op, &op_sender, timeout))
                {
                    Ok(result) => json!({"id": id, "result": result}),
                    Err(message) => json!({"id": id, "error": {"message": message}}),
                }
            }
        };
        let written = writeln!(output, "{reply}").and_then(|()| output.flush());
        if let Err(write_error) = written {
            if write_error.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!("lspc: cannot write to stdout: {write_error}");
                break EXIT_SERVER;
            }
            break EXIT_OK;
        }
    };
    engine.shutdown();
    status
}

/// `lspc batch` on stdin and stdout.
pub fn run(engine_options: EngineOptions, timeout: Duration) -> i32 {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut output = stdout.lock();
    run_with(engine_options, timeout, &mut input, &mut output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, expected: Result<BatchOp, &str>) {
        let (_, parsed) = parse_line(line);
        assert_eq!(parsed, expected.map_err(error), "{line}");
    }

    fn at(file: &str, line: u32, target: ColumnOrSymbol) -> TextPosition {
        TextPosition {
            file: PathBuf::from(file),
            line,
            target,
        }
    }

    #[test]
    fn lines_parse_into_ops() {
        check(
            r#"{"id":1,"op":"definition","file":"a.py","line":3,"column":19}"#,
            Ok(BatchOp::Query(QueryRequest::Definition {
                at: at("a.py", 3, ColumnOrSymbol::Column(19)),
                kind: DefinitionKind::Definition,
            })),
        );
        check(
            r#"{"id":"x","op":"type_definition","file":"a.py","line":2,"symbol":"a","occurrence":2}"#,
            Ok(BatchOp::Query(QueryRequest::Definition {
                at: at(
                    "a.py",
                    2,
                    ColumnOrSymbol::Symbol {
                        name: "a".into(),
                        occurrence: 2,
                    },
                ),
                kind: DefinitionKind::TypeDefinition,
            })),
        );
        check(
            r#"{"op":"definition","kind":"implementation","file":"a.ts","line":1,"symbol":"I"}"#,
            Ok(BatchOp::Query(QueryRequest::Definition {
                at: at(
                    "a.ts",
                    1,
                    ColumnOrSymbol::Symbol {
                        name: "I".into(),
                        occurrence: 1,
                    },
                ),
                kind: DefinitionKind::Implementation,
            })),
        );
        check(
            r#"{"op":"references","file":"a.py","line":1,"column":1,"includeDeclaration":true}"#,
            Ok(BatchOp::Query(QueryRequest::References {
                at: at("a.py", 1, ColumnOrSymbol::Column(1)),
                include_declaration: true,
            })),
        );
        check(
            r#"{"op":"workspaceSymbols","query":"area"}"#,
            Ok(BatchOp::Query(QueryRequest::WorkspaceSymbols {
                query: "area".into(),
                file: None,
            })),
        );
        check(
            r#"{"op":"call-hierarchy","file":"u.c","line":2,"column":5,"direction":"incoming"}"#,
            Ok(BatchOp::Query(QueryRequest::CallHierarchy {
                at: at("u.c", 2, ColumnOrSymbol::Column(5)),
                direction: Some(CallDirection::Incoming),
            })),
        );
        check(
            r#"{"op":"type-hierarchy","file":"s.ts","line":3,"column":7,"direction":"subtypes"}"#,
            Ok(BatchOp::Query(QueryRequest::TypeHierarchy {
                at: at("s.ts", 3, ColumnOrSymbol::Column(7)),
                direction: TypeDirection::Subtypes,
            })),
        );
        check(
            r#"{"op":"diagnostics","file":"a.py"}"#,
            Ok(BatchOp::Diagnostics {
                file: PathBuf::from("a.py"),
            }),
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        check(
            "not json",
            Err("malformed JSON line: expected ident at line 1 column 2"),
        );
        check("[1]", Err("a batch line must be a JSON object"));
        check(r#"{"id":1}"#, Err("missing `op`"));
        check(r#"{"op":"frob"}"#, Err("unknown op \"frob\""));
        check(
            r#"{"op":"hover","line":1,"column":1}"#,
            Err("missing `file`"),
        );
        check(
            r#"{"op":"hover","file":"a.py","column":1}"#,
            Err("missing `line`"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":1}"#,
            Err("missing `column` or `symbol`"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":1,"column":1,"symbol":"a"}"#,
            Err("give either `column` or `symbol`, not both"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":-1,"column":1}"#,
            Err("`line` must be a positive integer (1-based), got -1"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":0,"column":1}"#,
            Err("`line` must be a positive integer (1-based), got 0"),
        );
        check(
            r#"{"op":"hover","file":"a.py","line":1,"column":0}"#,
            Err("`column` must be a positive integer (1-based), got 0"),
        );
        check(r#"{"op":"workspace-symbols"}"#, Err("missing `query`"));
        check(
            r#"{"op":"call-hierarchy","file":"a","line":1,"column":1,"direction":"up"}"#,
            Err("unknown call hierarchy `direction` \"up\" (expected incoming or outgoing)"),
        );
        let (id, _) = parse_line(r#"{"id":{"n":7},"op":"frob"}"#);
        assert_eq!(id, json!({"n": 7}));
    }

    /// Batch paths are relative to the root, as MCP's are (not to the current directory).
    #[test]
    fn batch_paths_resolve_against_the_root() {
        let check = |line: &str, expected: Option<&str>| {
            let op = parse_line(line).1.unwrap();
            let resolved = resolve_against_root(op, Path::new("/w"));
            let file = match &resolved {
                BatchOp::Diagnostics { file } => Some(file.clone()),
                BatchOp::Query(QueryRequest::Symbols { file }) => Some(file.clone()),
                BatchOp::Query(QueryRequest::WorkspaceSymbols { file, .. }) => file.clone(),
                BatchOp::Query(
                    QueryRequest::Hover { at }
                    | QueryRequest::SignatureHelp { at }
                    | QueryRequest::Definition { at, .. }
                    | QueryRequest::References { at, .. }
                    | QueryRequest::CallHierarchy { at, .. }
                    | QueryRequest::TypeHierarchy { at, .. },
                ) => Some(at.file.clone()),
            };
            assert_eq!(file, expected.map(PathBuf::from), "{line}");
        };
        check(
            r#"{"op":"hover","file":"py/app.py","line":1,"column":1}"#,
            Some("/w/py/app.py"),
        );
        check(
            r#"{"op":"hover","file":"/elsewhere/a.py","line":1,"column":1}"#,
            Some("/elsewhere/a.py"),
        );
        check(r#"{"op":"diagnostics","file":"a.py"}"#, Some("/w/a.py"));
        check(r#"{"op":"symbols","file":"src/a.ts"}"#, Some("/w/src/a.ts"));
        check(
            r#"{"op":"workspace-symbols","query":"x","file":"a.c"}"#,
            Some("/w/a.c"),
        );
        check(r#"{"op":"workspace-symbols","query":"x"}"#, None);
        check(
            r#"{"op":"references","file":"a.py","line":1,"symbol":"a"}"#,
            Some("/w/a.py"),
        );
        check(
            r#"{"op":"signature-help","file":"../b.py","line":2,"column":3}"#,
            Some("/w/../b.py"),
        );
    }
}
