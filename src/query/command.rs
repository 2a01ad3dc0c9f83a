//! The query commands (`lspc definition`, `references`, `hover`, ...): one [`QueryRequest`] run
//! through [`Queries`] and rendered as human text or one JSON object, with the exit status.
//!
//! [`execute`] is shared with `lspc batch` and with a session's `query` op, so a batch answer's
//! `result` is exactly what `lspc <command> --format json` prints, and a warm one-shot prints
//! what an in-process one does ([`report`]). JSON paths are relative to the root; positions are
//! 1-based lines and 1-based character columns. Exit statuses: 0 found, 1 nothing found, 2 usage
//! error, 3 server failure (see [`crate::exit`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::{
    render, CallDirection, DefinitionKind, Queries, QueryError, RelativePaths, ResultJson,
    TextPosition, TypeDirection,
};
use crate::exit::{EXIT_FOUND, EXIT_OK, EXIT_SERVER};

/// One query, with its arguments already parsed (serialisable: the session wire's `query` op,
/// read back by hand in [`crate::session::wire`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum QueryRequest {
    Definition {
        at: TextPosition,
        kind: DefinitionKind,
    },
    References {
        at: TextPosition,
        include_declaration: bool,
    },
    Hover {
        at: TextPosition,
    },
    Symbols {
        file: PathBuf,
    },
    WorkspaceSymbols {
        query: String,
        file: Option<PathBuf>,
    },
    CallHierarchy {
        at: TextPosition,
        direction: Option<CallDirection>,
    },
    TypeHierarchy {
        at: TextPosition,
        direction: TypeDirection,
    },
    SignatureHelp {
        at: TextPosition,
    },
}

impl QueryRequest {
    /// The file the query is about, when it names one.
    pub fn file(&self) -> Option<&std::path::Path> {
        match self {
            QueryRequest::Definition { at, .. }
            | QueryRequest::References { at, .. }
            | QueryRequest::Hover { at }
            | QueryRequest::CallHierarchy { at, .. }
            | QueryRequest::TypeHierarchy { at, .. }
            | QueryRequest::SignatureHelp { at } => Some(&at.file),
            QueryRequest::Symbols { file } => Some(file),
            QueryRequest::WorkspaceSymbols { file, .. } => file.as_deref(),
        }
    }

    /// The same query with its file canonical ([`crate::uri::canonical`]: a relative path is
    /// taken against the current directory), as a session in another directory must get it.
    pub fn canonical(&self) -> QueryRequest {
        let mut request = self.clone();
        match &mut request {
            QueryRequest::Definition { at, .. }
            | QueryRequest::References { at, .. }
            | QueryRequest::Hover { at }
            | QueryRequest::CallHierarchy { at, .. }
            | QueryRequest::TypeHierarchy { at, .. }
            | QueryRequest::SignatureHelp { at } => at.file = crate::uri::canonical(&at.file),
            QueryRequest::Symbols { file } => *file = crate::uri::canonical(file),
            QueryRequest::WorkspaceSymbols { file, .. } => {
                if let Some(file) = file {
                    *file = crate::uri::canonical(file);
                }
            }
        }
        request
    }

    /// What "nothing found" says for this query: `"no definition found"`, ...
    pub fn nothing_found(&self) -> String {
        let what = match self {
            QueryRequest::Definition { kind, .. } => kind.noun(),
            QueryRequest::References { .. } => "references",
            QueryRequest::Hover { .. } => "hover information",
            QueryRequest::Symbols { .. } => "symbols",
            QueryRequest::WorkspaceSymbols { .. } => "matching symbols",
            QueryRequest::CallHierarchy {
                direction: None, ..
            } => "call hierarchy item",
            QueryRequest::CallHierarchy {
                direction: Some(CallDirection::Incoming),
                ..
            } => "incoming calls",
            QueryRequest::CallHierarchy {
                direction: Some(CallDirection::Outgoing),
                ..
            } => "outgoing calls",
            QueryRequest::TypeHierarchy {
                direction: TypeDirection::Supertypes,
                ..
            } => "supertypes",
            QueryRequest::TypeHierarchy {
                direction: TypeDirection::Subtypes,
                ..
            } => "subtypes",
            QueryRequest::SignatureHelp { .. } => "signature help",
        };
        format!("no {what} found")
    }
}

/// A query's outcome in both renderings (serialisable: the session wire's `query` reply).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueryAnswer {
    /// The result object (paths relative to the root), `null` for an absent hover/signature.
    pub json: ResultJson,
    /// The human rendering (empty when nothing was found).
    pub human: String,
    /// Whether anything was found (exit 0) or not (exit 1).
    pub found: bool,
    /// "server X was still indexing; results may be incomplete".
    pub incomplete: Option<String>,
}

impl QueryAnswer {
    /// The answer of a query whose result may be absent (hover, signature help): `null`, empty
    /// and not found for `None`.
    fn optional<T: serde::Serialize>(
        result: Option<T>,
        render: fn(&T) -> String,
        rendering: Rendering,
        root: &std::path::Path,
    ) -> QueryAnswer {
        match result {
            Some(result) => QueryAnswer {
                json: json_for(rendering, &result, root),
                human: rendered(rendering, || render(&result)),
                found: true,
                incomplete: None,
            },
            None => QueryAnswer {
                json: ResultJson::null(),
                human: String::new(),
                found: false,
                incomplete: None,
            },
        }
    }
}

/// `value` as JSON text, serialised straight from the type (no `Value` tree, issue 15).
fn to_json<T: serde::Serialize>(value: &T) -> ResultJson {
    ResultJson::of(value)
}

/// `value` as JSON text in the form `rendering` asks for (paths already relative to `root`).
fn json_for<T: serde::Serialize>(
    rendering: Rendering,
    value: &T,
    root: &std::path::Path,
) -> ResultJson {
    match rendering {
        Rendering::Structured => ResultJson::cleaned(value, root),
        Rendering::Both | Rendering::JsonOnly => to_json(value),
    }
}

/// A document symbols answer's object: `{"symbols": [...]}`.
#[derive(serde::Serialize)]
struct SymbolsObject<'a> {
    symbols: &'a [super::Symbol],
}

/// Which renderings of an answer a caller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// `json` and `human` (the CLI, MCP's worker route, the session wire).
    Both,
    /// `human`, and `json` in MCP's cleaned form ([`ResultJson::Cleaned`]: `null` members left
    /// out), which MCP's instant answers copy into their structured content as they are (issue
    /// 15: cleaning the text afterwards cost an MCP definition about 15k instructions).
    Structured,
    /// `json` only, `human` left empty (`lspc batch`, issue 15: rendering text nobody reads cost
    /// about a tenth of a definition's instructions).
    JsonOnly,
}

/// `render()` when the caller reads the human rendering, else empty.
fn rendered(rendering: Rendering, render: impl FnOnce() -> String) -> String {
    match rendering {
        Rendering::Both | Rendering::Structured => render(),
        Rendering::JsonOnly => String::new(),
    }
}

/// Run `request` and render its answer.
pub fn execute(queries: &Queries, request: &QueryRequest) -> Result<QueryAnswer, QueryError> {
    execute_rendering(queries, request, Rendering::Both)
}

/// [`execute`] with only the renderings `rendering` names.
pub fn execute_rendering(
    queries: &Queries,
    request: &QueryRequest,
    rendering: Rendering,
) -> Result<QueryAnswer, QueryError> {
    let root = queries.root().to_path_buf();
    let answer = match request {
        QueryRequest::Definition { at, kind } => {
            locations_answer(queries.definition(at, *kind)?, &root, rendering)
        }
        QueryRequest::References {
            at,
            include_declaration,
        } => locations_answer(
            queries.references(at, *include_declaration)?,
            &root,
            rendering,
        ),
        QueryRequest::Hover { at } => {
            QueryAnswer::optional(queries.hover(at)?, render::hover, rendering, &root)
        }
        QueryRequest::Symbols { file } => {
            symbols_answer(queries.document_symbols(file)?, &root, rendering)
        }
        QueryRequest::WorkspaceSymbols { query, file } => {
            let mut result = queries.workspace_symbols_result(query, file.as_deref())?;
            let human = rendered(rendering, || {
                render::workspace_symbols(&result.symbols, &root)
            });
            result.make_relative(&root);
            QueryAnswer {
                json: to_json(&result),
                human,
                found: !result.symbols.is_empty(),
                incomplete: result.incomplete,
            }
        }
        QueryRequest::CallHierarchy { at, direction } => {
            let mut result = queries.call_hierarchy(at, *direction)?;
            let found = match direction {
                None => !result.items.is_empty(),
                Some(_) => !result.calls.is_empty(),
            };
            let human = if result.items.is_empty() {
                String::new()
            } else {
                rendered(rendering, || render::call_hierarchy(&result, &root))
            };
            result.make_relative(&root);
            QueryAnswer {
                json: to_json(&result),
                human,
                found,
                incomplete: result.incomplete,
            }
        }
        QueryRequest::TypeHierarchy { at, direction } => {
            let mut result = queries.type_hierarchy(at, *direction)?;
            let human = if result.items.is_empty() {
                String::new()
            } else {
                rendered(rendering, || render::type_hierarchy(&result, &root))
            };
            result.make_relative(&root);
            QueryAnswer {
                json: to_json(&result),
                human,
                found: !result.types.is_empty(),
                incomplete: result.incomplete,
            }
        }
        QueryRequest::SignatureHelp { at } => QueryAnswer::optional(
            queries.signature_help(at)?,
            render::signature_help,
            rendering,
            &root,
        ),
    };
    Ok(answer)
}

/// The answer of a definition or references query.
fn locations_answer(
    mut result: super::LocationsResult,
    root: &std::path::Path,
    rendering: Rendering,
) -> QueryAnswer {
    let human = rendered(rendering, || render::locations(&result, root));
    result.make_relative(root);
    let direct = match rendering {
        Rendering::Structured => super::cleaned_json::cleaned_locations(&result, root),
        Rendering::Both | Rendering::JsonOnly => None,
    };
    QueryAnswer {
        json: direct.map_or_else(|| json_for(rendering, &result, root), ResultJson::Cleaned),
        human,
        found: !result.locations.is_empty(),
        incomplete: result.incomplete,
    }
}

/// The answer of a document symbols query.
fn symbols_answer(
    mut symbols: Vec<super::Symbol>,
    root: &std::path::Path,
    rendering: Rendering,
) -> QueryAnswer {
    let human = rendered(rendering, || render::symbol_tree(&symbols));
    symbols.make_relative(root);
    QueryAnswer {
        found: !symbols.is_empty(),
        json: json_for(rendering, &SymbolsObject { symbols: &symbols }, root),
        human,
        incomplete: None,
    }
}

/// What an instant query's caller does with its rendered answer, given its own `payload` back.
pub type FinishQuery<T> = fn(T, Result<QueryAnswer, QueryError>);

/// What [`start_detached`] hands back when `request` is not instant (now).
pub type NotInstant<T> = Box<dyn FnOnce(QueryRequest, T) + Send>;

/// Where [`start_detached`] hands a request it does not end on the instant route.
pub struct Handoff<T> {
    /// The request is not instant now: the caller runs it the blocking way
    /// ([`execute_rendering`]). Runs on the calling thread or the loop's; must not block.
    pub not_instant: NotInstant<T>,
    /// The instant answer is to be asked again the blocking way, which waits where the instant
    /// route cannot: a definition from a disk index into a file other than the asked one that
    /// does not show the asked name where it points, or that changed on disk since the server
    /// last had it open (`query::instant_definition`; the blocking route
    /// opens that file, waits for the server to analyse it and asks once more). Runs on the
    /// thread that got the answer (the server's reader), instead of `finish`; must not block.
    /// `None`: such an answer is finished as it is, with its note.
    pub ask_again: Option<NotInstant<T>>,
}

/// Start `request` on the instant route (issue 15) when it is one request long: hover,
/// definition (every kind), references, document symbols, signature help. The loop's turn
/// decides, and this returns at once (it never waits for the loop nor the server):
/// - the request goes out in its sync's turn, then `sent` runs in the loop;
///   `finish(payload, answer)` runs exactly once, with exactly what [`execute_rendering`]
///   returns, on the thread that ends the request (the server's reader for an answer; the loop,
///   or a session's proxy, for an error, timeout, cancellation or crash), maybe before this
///   returns;
/// - or nothing is sent (another kind of query, a readiness wait due, the file's server still
///   starting, a sync or position error): `not_instant(request, payload)` runs instead, on this
///   thread or the loop's (it must not block), and the caller runs [`execute_rendering`], which
///   waits, or reports the same error;
/// - or the request was sent and its answer is to be asked again the blocking way
///   ([`Handoff::ask_again`]): that runs instead of `finish`, on the thread that got the answer.
///
/// An op the loop drops unrun (the engine gone) drops the payload, and neither callback runs.
/// `lspc batch` (through [`crate::operation::execute::start_detached`]) and `lspc mcp`'s stdio
/// reader ([`crate::mcp`]'s fast path) use it.
pub fn start_detached<T: Send + 'static>(
    queries: &Queries,
    request: QueryRequest,
    rendering: Rendering,
    payload: T,
    finish: FinishQuery<T>,
    handoff: Handoff<T>,
    sent: Option<Box<dyn FnOnce() + Send>>,
) {
    let Handoff {
        not_instant,
        ask_again,
    } = handoff;
    let root = queries.root().to_path_buf();
    let (file, at, first, on_answer): (PathBuf, _, _, super::OnAnswer<T>) = match &request {
        QueryRequest::Definition { at, kind } => (
            at.file.clone(),
            Some(at.clone()),
            super::FirstRequest::definition(*kind),
            {
                let again = request.clone();
                Box::new(move |payload, target, answer| {
                    let (result, behind) = match answer {
                        Ok(body) => super::instant_definition(target, &body),
                        Err(error) => return finish(payload, Err(QueryError::Engine(error))),
                    };
                    match ask_again {
                        Some(ask_again) if behind => {
                            log::debug!(
                                "instant definition: a file behind the server's index; asked \
                                 again the blocking way"
                            );
                            ask_again(again, payload)
                        }
                        _ => finish(payload, Ok(locations_answer(result, &root, rendering))),
                    }
                })
            },
        ),
        QueryRequest::References {
            at,
            include_declaration,
        } => (
            at.file.clone(),
            Some(at.clone()),
            super::FirstRequest::references(*include_declaration),
            Box::new(move |payload, target, answer| {
                let answer = answer.map_err(QueryError::Engine).map(|answer| {
                    locations_answer(
                        super::references_result_of(target, &answer, None),
                        &root,
                        rendering,
                    )
                });
                finish(payload, answer);
            }),
        ),
        QueryRequest::Hover { at } => (
            at.file.clone(),
            Some(at.clone()),
            super::FirstRequest::hover(),
            Box::new(move |payload, target, answer| {
                let answer = answer.map_err(QueryError::Engine).map(|answer| {
                    QueryAnswer::optional(
                        super::hover_result_of(target, answer),
                        render::hover,
                        rendering,
                        &root,
                    )
                });
                finish(payload, answer);
            }),
        ),
        QueryRequest::Symbols { file } => (
            file.clone(),
            None,
            super::FirstRequest::document_symbols(),
            Box::new(move |payload, target, answer| {
                let answer = answer.map_err(QueryError::Engine).map(|answer| {
                    symbols_answer(
                        super::document_symbols_result(target, &answer.into_value()),
                        &root,
                        rendering,
                    )
                });
                finish(payload, answer);
            }),
        ),
        QueryRequest::SignatureHelp { at } => (
            at.file.clone(),
            Some(at.clone()),
            super::FirstRequest::signature_help(),
            Box::new(move |payload, target, answer| {
                let answer = answer.map_err(QueryError::Engine).map(|answer| {
                    QueryAnswer::optional(
                        super::parse_signature_help(&answer.into_value(), target.server.name),
                        render::signature_help,
                        rendering,
                        &root,
                    )
                });
                finish(payload, answer);
            }),
        ),
        QueryRequest::WorkspaceSymbols { .. }
        | QueryRequest::CallHierarchy { .. }
        | QueryRequest::TypeHierarchy { .. } => return not_instant(request, payload),
    };
    queries.start_first_answer(
        &file,
        at.as_ref(),
        first,
        payload,
        on_answer,
        super::Decided {
            not_sent: Box::new(move |payload| not_instant(request, payload)),
            sent,
        },
    );
}

/// Output format of a query command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryFormat {
    Human,
    Json,
}

/// A parsed query command line.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOptions {
    pub request: QueryRequest,
    pub format: QueryFormat,
    /// Bounds the server start and sync, the readiness wait, and each LSP request.
    pub timeout: Duration,
}

/// Prints one query command's `outcome` (human text or the JSON object on stdout; the error, the
/// "incomplete" note and "no ... found" on stderr) and returns the exit status. The outcome comes
/// from an engine of the command's own or from the workspace's session (`cli` chooses), and
/// prints the same either way.
pub fn report(outcome: Result<QueryAnswer, QueryError>, options: &QueryOptions) -> i32 {
    let answer = match outcome {
        Ok(answer) => answer,
        Err(error) => {
            eprintln!("lspc: {error}");
            return error.exit_status();
        }
    };
    if let Some(note) = &answer.incomplete {
        eprintln!("lspc: {note}");
    }
    let text = match options.format {
        QueryFormat::Json => format!("{}\n", answer.json),
        QueryFormat::Human => answer.human.clone(),
    };
    if !answer.found && options.format == QueryFormat::Human {
        eprintln!("{}", options.request.nothing_found());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(error) => {
            eprintln!("lspc: cannot write to stdout: {error}");
            return EXIT_SERVER;
        }
    }
    if answer.found {
        EXIT_OK
    } else {
        EXIT_FOUND
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::ColumnOrSymbol;

    #[test]
    fn nothing_found_messages() {
        let at = TextPosition {
            file: PathBuf::from("a.py"),
            line: 1,
            target: ColumnOrSymbol::Column(1),
        };
        let check = |request: QueryRequest, expected: &str| {
            assert_eq!(request.nothing_found(), expected);
        };
        check(
            QueryRequest::Definition {
                at: at.clone(),
                kind: DefinitionKind::Definition,
            },
            "no definition found",
        );
        check(
            QueryRequest::Definition {
                at: at.clone(),
                kind: DefinitionKind::TypeDefinition,
            },
            "no type definition found",
        );
        check(
            QueryRequest::References {
                at: at.clone(),
                include_declaration: false,
            },
            "no references found",
        );
        check(
            QueryRequest::Hover { at: at.clone() },
            "no hover information found",
        );
        check(
            QueryRequest::CallHierarchy {
                at,
                direction: Some(CallDirection::Incoming),
            },
            "no incoming calls found",
        );
    }
}
