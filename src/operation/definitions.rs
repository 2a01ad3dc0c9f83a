//! The one definition of every operation and argument (STYLE.md habit 8, after ripgrep's
//! `flags/defs.rs`): each [`ArgumentDef`] has its JSON name, the spellings also accepted, its
//! value type, its documentation and how the command line gives it; each [`OperationDef`] names
//! the operation (CLI command, batch `op`, MCP tool), its arguments and examples.
//!
//! Everything else is generated from these tables: the parser of `lspc batch` lines and MCP
//! `tools/call` arguments ([`super::Operation::from_arguments`]), the command line of every
//! operation command (`cli/parse.rs`), `lspc <command> --help` ([`command_help`]), the MCP
//! `inputSchema` of every tool ([`input_schema`]) and the batch reference in README
//! ([`batch_reference`], checked by a test).

use serde_json::{json, Map, Value};

/// The type of an argument's value, and how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A file path: relative to the workspace root (batch, MCP) or the current directory (CLI).
    File,
    /// A list of file or folder paths.
    Paths,
    /// A whole number from 1 (lines, columns, occurrences: 1-based).
    OneBased,
    /// `true` or `false`.
    Bool,
    /// Any string (may be empty).
    Text,
    /// A string that must not be empty.
    NonEmptyText,
    /// One of these values. `_`, `-` and camelCase spellings are the same value
    /// (`type_definition`, `type-definition`, `typeDefinition`).
    Choice(&'static [&'static str]),
}

/// How the command line gives an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliForm {
    /// Part of the positional `LOC` (`FILE:LINE:COLUMN`, `FILE:LINE:NAME`, `FILE:LINE` with
    /// `--symbol`) or `FILE`/`SPAN`.
    Location,
    /// A positional argument, shown as this placeholder in the usage line.
    Positional(&'static str),
    /// `--FLAG` with no value: sets the argument to `true`.
    Flag(&'static str),
    /// `--OPTION VALUE`.
    Option(&'static str, &'static str),
    /// Flags that each set the argument to one value (`--supertypes`, `--subtypes`).
    Switches(&'static [(&'static str, &'static str)]),
}

/// One argument: its JSON name (the batch/MCP/session wire), accepted aliases, type, docs and
/// command-line form.
#[derive(Debug, PartialEq, Eq)]
pub struct ArgumentDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub value: ValueKind,
    pub doc: &'static str,
    pub cli: CliForm,
}

/// Whether an operation needs an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Required,
    Optional,
}

/// One operation: its name (CLI command and batch `op`), other accepted names, its MCP tool
/// (`None`: not a tool of its own), what it does, its arguments, the CLI usage and examples.
#[derive(Debug)]
pub struct OperationDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub mcp_tool: Option<&'static str>,
    pub summary: &'static str,
    pub arguments: &'static [(&'static ArgumentDef, Need)],
    /// The positional part of `lspc NAME ...` (`LOC`, `FILE`, `QUERY`, `LOC NEW_NAME`).
    pub usage: &'static str,
    pub examples: &'static [&'static str],
}

pub const FILE: ArgumentDef = ArgumentDef {
    name: "file",
    aliases: &[],
    value: ValueKind::File,
    doc: "File path, relative to the workspace root or absolute inside it",
    cli: CliForm::Location,
};
pub const LINE: ArgumentDef = ArgumentDef {
    name: "line",
    aliases: &[],
    value: ValueKind::OneBased,
    doc: "1-based line number",
    cli: CliForm::Location,
};
pub const COLUMN: ArgumentDef = ArgumentDef {
    name: "column",
    aliases: &[],
    value: ValueKind::OneBased,
    doc: "1-based column in Unicode characters (give column or symbol)",
    cli: CliForm::Location,
};
pub const SYMBOL: ArgumentDef = ArgumentDef {
    name: "symbol",
    aliases: &[],
    value: ValueKind::NonEmptyText,
    doc: "A name on that line to point at instead of a column",
    cli: CliForm::Option("--symbol", "NAME"),
};
pub const OCCURRENCE: ArgumentDef = ArgumentDef {
    name: "occurrence",
    aliases: &[],
    value: ValueKind::OneBased,
    doc: "Which occurrence of symbol on the line (1-based, default 1)",
    cli: CliForm::Option("--occurrence", "N"),
};
pub const END_LINE: ArgumentDef = ArgumentDef {
    name: "end_line",
    aliases: &["endLine"],
    value: ValueKind::OneBased,
    doc: "1-based last line of the range (default: line)",
    cli: CliForm::Location,
};
pub const KIND: ArgumentDef = ArgumentDef {
    name: "kind",
    aliases: &[],
    value: ValueKind::Choice(&[
        "definition",
        "declaration",
        "type_definition",
        "implementation",
    ]),
    doc: "What to go to (default definition)",
    cli: CliForm::Option("--kind", "KIND"),
};
pub const INCLUDE_DECLARATION: ArgumentDef = ArgumentDef {
    name: "include_declaration",
    aliases: &["includeDeclaration"],
    value: ValueKind::Bool,
    doc:
        "Also list the declaration (default: true over MCP, false on the command line and in batch)",
    cli: CliForm::Flag("--include-declaration"),
};
pub const QUERY: ArgumentDef = ArgumentDef {
    name: "query",
    aliases: &[],
    value: ValueKind::Text,
    doc: "Name or part of a name",
    cli: CliForm::Positional("QUERY"),
};
pub const SERVER_FILE: ArgumentDef = ArgumentDef {
    name: "file",
    aliases: &[],
    value: ValueKind::File,
    doc: "A file whose language server to ask (default: the server of the most common kind of file under the root that answers workspace/symbol)",
    cli: CliForm::Option("--file", "FILE"),
};
pub const CALL_DIRECTION: ArgumentDef = ArgumentDef {
    name: "direction",
    aliases: &[],
    value: ValueKind::Choice(&["incoming", "outgoing"]),
    doc: "Callers (incoming) or callees (outgoing); default: the item only",
    cli: CliForm::Option("--direction", "DIRECTION"),
};
pub const TYPE_DIRECTION: ArgumentDef = ArgumentDef {
    name: "direction",
    aliases: &["kind"],
    value: ValueKind::Choice(&["supertypes", "subtypes"]),
    doc: "Supertypes or subtypes (default supertypes)",
    cli: CliForm::Switches(&[("--supertypes", "supertypes"), ("--subtypes", "subtypes")]),
};
pub const DIAGNOSTICS_FILE: ArgumentDef = ArgumentDef {
    name: "file",
    aliases: &[],
    value: ValueKind::File,
    doc: "File path, relative to the workspace root or absolute inside it (MCP: without file, every diagnostic not yet delivered)",
    cli: CliForm::Location,
};
pub const PATHS: ArgumentDef = ArgumentDef {
    name: "paths",
    aliases: &[],
    value: ValueKind::Paths,
    doc: "Files and folders to check (default: the workspace root)",
    cli: CliForm::Positional("PATH..."),
};
pub const NEW_NAME: ArgumentDef = ArgumentDef {
    name: "new_name",
    aliases: &["newName"],
    value: ValueKind::NonEmptyText,
    doc: "The new name",
    cli: CliForm::Positional("NEW_NAME"),
};
pub const APPLY: ArgumentDef = ArgumentDef {
    name: "apply",
    aliases: &[],
    value: ValueKind::Bool,
    doc: "Write the change (default false: only preview it as a unified diff)",
    cli: CliForm::Flag("--apply"),
};
pub const TITLE: ArgumentDef = ArgumentDef {
    name: "title",
    aliases: &[],
    value: ValueKind::Text,
    doc: "The action's exact title, as code_actions lists it",
    cli: CliForm::Option("--apply", "TITLE"),
};
pub const TAB_SIZE: ArgumentDef = ArgumentDef {
    name: "tab_size",
    aliases: &["tabSize"],
    value: ValueKind::OneBased,
    doc: "Spaces per tab and per indentation level, 1 to 64 (default: .editorconfig, else the file's indentation, else 4)",
    cli: CliForm::Option("--tab-size", "N"),
};
pub const INSERT_SPACES: ArgumentDef = ArgumentDef {
    name: "insert_spaces",
    aliases: &["insertSpaces"],
    value: ValueKind::Bool,
    doc: "true: indent with spaces, false: with tabs (default: .editorconfig, else the file's indentation, else spaces)",
    cli: CliForm::Switches(&[("--insert-spaces", "true"), ("--use-tabs", "false")]),
};
pub const OLD: ArgumentDef = ArgumentDef {
    name: "old",
    aliases: &[],
    value: ValueKind::NonEmptyText,
    doc: "The exact text to replace; must occur exactly once (add surrounding lines to make it unique)",
    cli: CliForm::Option("--old", "TEXT"),
};
pub const NEW: ArgumentDef = ArgumentDef {
    name: "new",
    aliases: &[],
    value: ValueKind::Text,
    doc: "The replacement text",
    cli: CliForm::Option("--new", "TEXT"),
};

use Need::{Optional, Required};

/// `file`, `line` and `column` or `symbol` (+ `occurrence`): a position, then `extra`.
macro_rules! position_and {
    ($($extra:expr),*) => {
        &[
            (&FILE, Required),
            (&LINE, Required),
            (&COLUMN, Optional),
            (&SYMBOL, Optional),
            (&OCCURRENCE, Optional),
            $($extra),*
        ]
    };
}

/// A span (a position, or the lines `line..=end_line`), then `extra`.
macro_rules! span_and {
    ($($extra:expr),*) => {
        &[
            (&FILE, Required),
            (&LINE, Required),
            (&END_LINE, Optional),
            (&COLUMN, Optional),
            (&SYMBOL, Optional),
            (&OCCURRENCE, Optional),
            $($extra),*
        ]
    };
}

/// Every operation, in `tools/list` and `--help` order.
pub const OPERATIONS: &[OperationDef] = &[
    OperationDef {
        name: "definition",
        aliases: &[],
        mcp_tool: Some("definition"),
        summary: "Go to the definition (or declaration, type definition, implementation) of the symbol at a position.",
        arguments: position_and!((&KIND, Optional)),
        usage: "LOC",
        examples: &["lspc definition src/app.py:12:8", "lspc definition src/app.py:12:load_config"],
    },
    OperationDef {
        name: "declaration",
        aliases: &[],
        mcp_tool: None,
        summary: "Go to the declaration of the symbol at a position (textDocument/declaration).",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc declaration src/main.c:40:5"],
    },
    OperationDef {
        name: "type-definition",
        aliases: &[],
        mcp_tool: None,
        summary: "Go to the definition of the type of the symbol at a position.",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc type-definition src/app.ts:7 --symbol user"],
    },
    OperationDef {
        name: "implementation",
        aliases: &[],
        mcp_tool: None,
        summary: "Implementations of the interface or method at a position.",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc implementation src/shapes.ts:3:18"],
    },
    OperationDef {
        name: "references",
        aliases: &[],
        mcp_tool: Some("references"),
        summary: "Find every reference to the symbol at a position.",
        arguments: position_and!((&INCLUDE_DECLARATION, Optional)),
        usage: "LOC",
        examples: &[
            "lspc references src/app.py:3:5",
            "lspc references src/app.py:3:total --include-declaration",
        ],
    },
    OperationDef {
        name: "hover",
        aliases: &[],
        mcp_tool: Some("hover"),
        summary: "Type and documentation of the symbol at a position.",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc hover src/app.py:12:8", "lspc hover src/app.py:12 --symbol parse --occurrence 2"],
    },
    OperationDef {
        name: "symbols",
        aliases: &["document-symbols"],
        mcp_tool: Some("document_symbols"),
        summary: "The outline of a file: classes, functions, variables, with positions.",
        arguments: &[(&FILE, Required)],
        usage: "FILE",
        examples: &["lspc symbols src/app.py"],
    },
    OperationDef {
        name: "workspace-symbols",
        aliases: &[],
        mcp_tool: Some("workspace_symbols"),
        summary: "Search symbols by name across the workspace. Give file to pick the language server (any file of that language).",
        arguments: &[(&QUERY, Required), (&SERVER_FILE, Optional)],
        usage: "QUERY",
        examples: &["lspc workspace-symbols Config", "lspc workspace-symbols parse --file src/app.py"],
    },
    OperationDef {
        name: "call-hierarchy",
        aliases: &[],
        mcp_tool: Some("call_hierarchy"),
        summary: "The call hierarchy item at a position, with its incoming callers or outgoing callees when direction is given.",
        arguments: position_and!((&CALL_DIRECTION, Optional)),
        usage: "LOC",
        examples: &["lspc call-hierarchy src/app.py:20:5 --direction incoming"],
    },
    OperationDef {
        name: "incoming-calls",
        aliases: &[],
        mcp_tool: None,
        summary: "Who calls the function at a position.",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc incoming-calls src/app.py:20:5"],
    },
    OperationDef {
        name: "outgoing-calls",
        aliases: &[],
        mcp_tool: None,
        summary: "What the function at a position calls.",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc outgoing-calls src/app.py:20:main"],
    },
    OperationDef {
        name: "type-hierarchy",
        aliases: &[],
        mcp_tool: Some("type_hierarchy"),
        summary: "Supertypes or subtypes of the type at a position.",
        arguments: position_and!((&TYPE_DIRECTION, Optional)),
        usage: "LOC",
        examples: &["lspc type-hierarchy src/shapes.ts:10:14 --subtypes"],
    },
    OperationDef {
        name: "signature-help",
        aliases: &[],
        mcp_tool: Some("signature_help"),
        summary: "Signatures of the call surrounding a position, with the active parameter.",
        arguments: position_and!(),
        usage: "LOC",
        examples: &["lspc signature-help src/app.py:14:22"],
    },
    OperationDef {
        name: "diagnostics",
        aliases: &[],
        mcp_tool: Some("diagnostics"),
        summary: "Diagnostics (errors, warnings) for a file once its servers have settled; over MCP without file, every diagnostic not yet delivered (at most 10 per file, 30 in total).",
        arguments: &[(&DIAGNOSTICS_FILE, Optional)],
        usage: "FILE",
        examples: &["lspc diagnostics src/app.py"],
    },
    OperationDef {
        name: "check",
        aliases: &[],
        mcp_tool: None,
        summary: "Report the diagnostics language servers publish for files (walks folders, honouring .gitignore).",
        arguments: &[(&PATHS, Optional)],
        usage: "[PATH...]",
        examples: &["lspc check", "lspc check src tests/test_app.py --format json"],
    },
    OperationDef {
        name: "rename",
        aliases: &[],
        mcp_tool: Some("rename"),
        summary: "Rename the symbol at a position across the workspace (through the language server). Previews a diff unless apply is true.",
        arguments: position_and!((&NEW_NAME, Required), (&APPLY, Optional)),
        usage: "LOC NEW_NAME",
        examples: &["lspc rename src/app.py:3:5 total_count", "lspc rename src/app.py:3:total total_count --apply"],
    },
    OperationDef {
        name: "code-actions",
        aliases: &[],
        mcp_tool: Some("code_actions"),
        summary: "List the code actions (quick fixes, refactorings, organize imports) for a line range or a position.",
        arguments: span_and!(),
        usage: "LOC|FILE:LINE|FILE:LINE-LINE",
        examples: &["lspc code-actions src/app.py:1-20", "lspc code-actions src/app.py:4:8"],
    },
    OperationDef {
        name: "apply-code-action",
        aliases: &[],
        mcp_tool: Some("apply_code_action"),
        summary: "Apply the code action with this exact title (see code_actions) for a line range or a position. Previews a diff unless apply is true.",
        arguments: span_and!((&TITLE, Required), (&APPLY, Optional)),
        usage: "LOC|FILE:LINE|FILE:LINE-LINE --apply TITLE",
        examples: &["lspc code-actions src/app.py:1-20 --apply 'Organize imports'"],
    },
    OperationDef {
        name: "format",
        aliases: &[],
        mcp_tool: Some("format"),
        summary: "Format a whole file with its language server. Indentation comes from tab_size/insert_spaces when given, else the file's .editorconfig, else the file's own indentation. Previews a diff unless apply is true.",
        arguments: &[
            (&FILE, Required),
            (&TAB_SIZE, Optional),
            (&INSERT_SPACES, Optional),
            (&APPLY, Optional),
        ],
        usage: "FILE",
        examples: &["lspc format src/app.py", "lspc format src/app.py --tab-size 2 --apply"],
    },
    OperationDef {
        name: "edit",
        aliases: &[],
        mcp_tool: Some("edit"),
        summary: "Replace one exact, unique occurrence of old with new in a file, write it, and return the diagnostics the change introduced.",
        arguments: &[(&FILE, Required), (&OLD, Required), (&NEW, Required)],
        usage: "FILE --old TEXT --new TEXT",
        examples: &["lspc edit src/app.py --old 'x = 1' --new 'x = 2'"],
    },
];

/// The options of `lspc check` beyond its paths (parsed with the check options in `cli/parse.rs`).
pub const CHECK_OPTIONS: &[(&str, &str)] = &[
    (
        "--format FORMAT",
        "human (default), json, jsonl, sarif, github",
    ),
    (
        "--severity LEVEL",
        "report only diagnostics at or above LEVEL: error, warning, info, hint (default: info, \
         and every ShellCheck finding, as shellcheck)",
    ),
    (
        "--fail-on LEVEL",
        "exit 1 when a diagnostic at or above LEVEL is reported (default: an error, or a \
         finding the server's own CLI fails on: ruff, go vet, shellcheck)",
    ),
    (
        "--timeout SECONDS",
        "how long each file's servers may take to settle (default: 30)",
    ),
    (
        "--max-per-file N",
        "report at most N diagnostics per file (default: all)",
    ),
    (
        "--max-total N",
        "report at most N diagnostics in total (default: all)",
    ),
    (
        "--baseline FILE",
        "report only findings not in FILE (a previous json or sarif output; matched without positions)",
    ),
    (
        "--write-baseline FILE",
        "record this run's findings in FILE (json)",
    ),
    (
        "--changed-since REV",
        "check only files changed since git revision REV, plus untracked ones",
    ),
    (
        "--shard K/N",
        "check only shard K of N (deterministic, balanced by size)",
    ),
    (
        "--all-files",
        "check every file a server claims, ignoring the servers' project include/exclude \
         (pyrightconfig/pyproject, tsconfig, ruff)",
    ),
    (
        "--exclude GLOB",
        "leave out walked files matching GLOB (a name such as tests, or a path relative to the \
         root such as docs/*.py; repeatable)",
    ),
    (
        "--color WHEN",
        "colour human output: auto (default: on a terminal, unless NO_COLOR is set), always, \
         never",
    ),
];

/// `type_definition`, `typeDefinition` and `type-definition` all read `type-definition`.
pub fn normalise_name(name: &str) -> String {
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

/// The operation called `name` (its name, an alias or its MCP tool, in any spelling).
pub fn find_operation(name: &str) -> Option<&'static OperationDef> {
    // The common spelling, exactly an operation's name, needs no normalising (which allocates
    // once per operation's MCP tool): names are unique and already in normal form.
    if let Some(def) = OPERATIONS.iter().find(|def| def.name == name) {
        return Some(def);
    }
    let wanted = normalise_name(name);
    OPERATIONS.iter().find(|def| {
        def.name == wanted
            || def.aliases.contains(&wanted.as_str())
            || def
                .mcp_tool
                .is_some_and(|tool| normalise_name(tool) == wanted)
    })
}

/// The operation behind MCP tool `tool` (exact tool name).
pub fn find_tool(tool: &str) -> Option<&'static OperationDef> {
    OPERATIONS.iter().find(|def| def.mcp_tool == Some(tool))
}

fn value_schema(argument: &ArgumentDef) -> Value {
    let mut schema = match argument.value {
        ValueKind::File | ValueKind::Text | ValueKind::NonEmptyText => json!({"type": "string"}),
        ValueKind::Paths => json!({"type": "array", "items": {"type": "string"}}),
        ValueKind::OneBased => json!({"type": "integer", "minimum": 1}),
        ValueKind::Bool => json!({"type": "boolean"}),
        ValueKind::Choice(values) => json!({"type": "string", "enum": values}),
    };
    schema["description"] = json!(argument.doc);
    schema
}

/// The JSON Schema of `def`'s arguments (MCP `Tool.inputSchema`, JSON Schema 2020-12 subset):
/// one property per argument under its JSON name, `required` listing the required ones.
pub fn input_schema(def: &OperationDef) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (argument, need) in def.arguments {
        properties.insert(argument.name.to_owned(), value_schema(argument));
        if *need == Need::Required {
            required.push(argument.name);
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

fn cli_form_text(argument: &ArgumentDef) -> Option<String> {
    match argument.cli {
        CliForm::Location | CliForm::Positional(_) => None,
        CliForm::Flag(flag) => Some(flag.to_owned()),
        CliForm::Option(flag, value) => Some(format!("{flag} {value}")),
        CliForm::Switches(switches) => Some(
            switches
                .iter()
                .map(|(flag, _)| *flag)
                .collect::<Vec<_>>()
                .join(", "),
        ),
    }
}

/// `lspc NAME --help`: the usage line, what the command does, its options with their docs, and
/// examples.
pub fn command_help(def: &OperationDef) -> String {
    let mut text = format!(
        "lspc {}: {}\n\nUsage: lspc {} {} [OPTIONS]\n",
        def.name, def.summary, def.name, def.usage
    );
    if def.usage.contains("LOC") {
        text.push_str(
            "\nLOC is FILE:LINE:COLUMN, FILE:LINE:NAME (the first NAME on the line), or FILE:LINE\n\
             with --symbol NAME; lines and columns count from 1, columns in characters.\n",
        );
    }
    let options: Vec<(String, &str)> = def
        .arguments
        .iter()
        .filter_map(|(argument, _)| Some((cli_form_text(argument)?, argument.doc)))
        .collect();
    text.push_str("\nOptions:\n");
    let mut rows = options;
    if def.name == "check" {
        rows.extend(
            CHECK_OPTIONS
                .iter()
                .map(|(flag, doc)| ((*flag).to_owned(), *doc)),
        );
    } else {
        rows.push((
            "--format FORMAT".to_owned(),
            "human (default) or json (the batch result object)",
        ));
        rows.push((
            "--timeout SECONDS".to_owned(),
            "bound on server start, indexing wait and each request (default: 30)",
        ));
    }
    rows.push(("-h, --help".to_owned(), "this help"));
    let width = rows.iter().map(|(flag, _)| flag.len()).max().unwrap_or(0);
    for (flag, doc) in rows {
        text.push_str(&format!("  {flag:width$}  {doc}\n"));
    }
    text.push_str(
        "\nGlobal options (--root, --config, --trust, -q, -v, ...): see lspc --help.\n\nExamples:\n",
    );
    for example in def.examples {
        text.push_str(&format!("  {example}\n"));
    }
    text
}

/// The batch reference in README (between `<!-- operations:begin -->` and
/// `<!-- operations:end -->`): one table row per operation with its arguments.
pub fn batch_reference() -> String {
    let mut text = String::from(
        "| `op` | MCP tool | arguments (required in **bold**) |\n| --- | --- | --- |\n",
    );
    for def in OPERATIONS {
        let mut names = vec![format!("`{}`", def.name)];
        names.extend(def.aliases.iter().map(|alias| format!("`{alias}`")));
        let tool = def
            .mcp_tool
            .map(|tool| format!("`{tool}`"))
            .unwrap_or_else(|| "—".to_owned());
        let arguments: Vec<String> = def
            .arguments
            .iter()
            .map(|(argument, need)| {
                let mut shown = argument.name.to_owned();
                if let ValueKind::Choice(values) = argument.value {
                    shown.push_str(&format!(" ({})", values.join(" \\| ")));
                }
                match need {
                    Need::Required => format!("**{shown}**"),
                    Need::Optional => shown,
                }
            })
            .collect();
        text.push_str(&format!(
            "| {} | {tool} | {} |\n",
            names.join(", "),
            arguments.join(", ")
        ));
    }
    text
}
