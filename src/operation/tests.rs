//! Tests of the operation vocabulary: the JSON shape, its messages, and the generated schemas.

use serde_json::json;

use super::definitions::{batch_reference, input_schema, OPERATIONS};
use super::*;

fn parse(value: Value) -> Result<Operation, String> {
    Operation::from_json(&value, Defaults::CLI).map_err(|error| error.0)
}

fn at(file: &str, line: u32, column: u32) -> TextPosition {
    TextPosition {
        file: PathBuf::from(file),
        line,
        target: ColumnOrSymbol::Column(column),
    }
}

#[test]
fn json_shapes_read_into_operations() {
    let check = |value: Value, expected: Operation| {
        assert_eq!(parse(value.clone()), Ok(expected), "{value}");
    };
    check(
        json!({"op": "definition", "file": "a.py", "line": 3, "column": 5}),
        Operation::Query(QueryRequest::Definition {
            at: at("a.py", 3, 5),
            kind: DefinitionKind::Definition,
        }),
    );
    // Every spelling of a name and of a choice is the same.
    check(
        json!({"op": "definition", "file": "a.py", "line": 3, "column": 5, "kind": "typeDefinition"}),
        Operation::Query(QueryRequest::Definition {
            at: at("a.py", 3, 5),
            kind: DefinitionKind::TypeDefinition,
        }),
    );
    check(
        json!({"op": "type_definition", "file": "a.py", "line": 3, "column": 5}),
        Operation::Query(QueryRequest::Definition {
            at: at("a.py", 3, 5),
            kind: DefinitionKind::TypeDefinition,
        }),
    );
    check(
        json!({"op": "references", "file": "a.py", "line": 1, "symbol": "x", "includeDeclaration": true}),
        Operation::Query(QueryRequest::References {
            at: TextPosition {
                file: "a.py".into(),
                line: 1,
                target: ColumnOrSymbol::Symbol {
                    name: "x".into(),
                    occurrence: 1,
                },
            },
            include_declaration: true,
        }),
    );
    check(
        json!({"op": "document_symbols", "file": "a.py"}),
        Operation::Query(QueryRequest::Symbols {
            file: "a.py".into(),
        }),
    );
    check(
        json!({"op": "type-hierarchy", "file": "a.ts", "line": 2, "column": 7, "kind": "subtypes"}),
        Operation::Query(QueryRequest::TypeHierarchy {
            at: at("a.ts", 2, 7),
            direction: TypeDirection::Subtypes,
        }),
    );
    check(
        json!({"op": "code_actions", "file": "a.py", "line": 2, "end_line": 4}),
        Operation::CodeActions {
            at: Span::Lines {
                path: "a.py".into(),
                start_line: 2,
                end_line: 4,
            },
        },
    );
    check(
        json!({"op": "rename", "file": "a.py", "line": 1, "column": 1, "new_name": "y"}),
        Operation::Rename {
            at: at("a.py", 1, 1),
            new_name: "y".into(),
            apply: false,
        },
    );
    check(
        json!({"op": "check", "paths": ["src", "a.py"]}),
        Operation::Check {
            paths: vec!["src".into(), "a.py".into()],
        },
    );
    check(
        json!({"op": "diagnostics"}),
        Operation::Diagnostics { file: None },
    );
}

#[test]
fn bad_arguments_name_the_operation_and_the_argument() {
    let check = |value: Value, expected: &str| {
        assert_eq!(parse(value.clone()), Err(expected.to_owned()), "{value}");
    };
    check(json!([1]), "an operation must be a JSON object");
    check(json!({"file": "a.py"}), "missing op");
    check(
        json!({"op": "frobnicate"}),
        &format!(
            "unknown op \"frobnicate\" (expected one of {})",
            OPERATIONS
                .iter()
                .map(|def| def.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    check(
        json!({"op": "hover", "file": "a.py", "line": 0, "column": 1}),
        "hover: line must be a whole number from 1, got 0",
    );
    check(
        json!({"op": "hover", "file": "a.py", "line": "3", "column": 1}),
        "hover: line must be a whole number from 1, got \"3\"",
    );
    check(
        json!({"op": "hover", "file": "a.py", "column": 1}),
        "hover: line is required",
    );
    check(
        json!({"op": "hover", "file": "a.py", "line": 1}),
        "hover: give column (1-based, in characters) or symbol (a name on that line)",
    );
    check(
        json!({"op": "hover", "file": "a.py", "line": 1, "column": 2, "symbol": "x"}),
        "hover: give either column or symbol, not both",
    );
    check(
        json!({"op": "hover", "file": "a.py", "line": 1, "column": 2, "occurrence": 2}),
        "hover: occurrence needs symbol",
    );
    check(
        json!({"op": "hover", "file": "a.py", "line": 1, "colum": 2}),
        "hover: unknown argument \"colum\" (expected file, line, column, symbol, occurrence)",
    );
    check(
        json!({"op": "definition", "file": "a.py", "line": 1, "column": 2, "kind": "usage"}),
        "definition: kind \"usage\" is not one of definition, declaration, type_definition, implementation",
    );
    check(
        json!({"op": "references", "file": "a.py", "line": 1, "column": 2, "include_declaration": "yes"}),
        "references: include_declaration must be true or false, got \"yes\"",
    );
    check(
        json!({"op": "code-actions", "file": "a.py", "line": 4, "end_line": 2}),
        "code-actions: end_line 2 is before line 4",
    );
    check(
        json!({"op": "rename", "file": "a.py", "line": 1, "column": 1, "new_name": ""}),
        "rename: new_name must not be empty",
    );
    check(
        json!({"op": "check", "paths": "src"}),
        "check: paths must be a list of paths (strings), got \"src\"",
    );
    check(
        json!({"op": "edit", "file": "a.py", "old": "x"}),
        "edit: new is required",
    );
}

#[test]
fn operations_round_trip_through_their_json_shape() {
    let values = [
        json!({"op": "definition", "file": "a.py", "line": 3, "column": 5, "kind": "implementation"}),
        json!({"op": "references", "file": "a.py", "line": 3, "symbol": "x", "occurrence": 2, "include_declaration": true}),
        json!({"op": "workspace-symbols", "query": "Con", "file": "a.py"}),
        json!({"op": "call-hierarchy", "file": "a.py", "line": 3, "column": 5, "direction": "outgoing"}),
        json!({"op": "apply-code-action", "file": "a.py", "line": 3, "end_line": 9, "title": "Fix", "apply": true}),
        json!({"op": "edit", "file": "a.py", "old": "x", "new": ""}),
        json!({"op": "check", "paths": []}),
    ];
    for value in values {
        let operation: Operation = serde_json::from_value(value.clone()).expect("parses");
        assert_eq!(operation.to_json(), value);
        let again: Operation =
            serde_json::from_str(&serde_json::to_string(&operation).unwrap()).unwrap();
        assert_eq!(again, operation);
    }
    let error = serde_json::from_str::<Operation>(r#"{"op": "hover", "file": "a.py"}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(error, "hover: line is required");
}

#[test]
fn every_operation_has_a_reader_and_its_schema_lists_its_arguments() {
    for def in OPERATIONS {
        // Every argument the schema names is read (an unknown-argument error would say so) and
        // every required one is required.
        let schema = input_schema(def);
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.len(), def.arguments.len(), "{}", def.name);
        for argument in required_arguments(def) {
            assert!(
                schema["required"]
                    .as_array()
                    .unwrap()
                    .contains(&json!(argument.name)),
                "{}: {}",
                def.name,
                argument.name
            );
            let mut arguments = Map::new();
            arguments.insert("op".into(), json!(def.name));
            let error = Operation::from_arguments(def.name, &arguments, Defaults::CLI)
                .expect_err("an operation with a required argument needs it");
            assert!(error.0.starts_with(&format!("{}: ", def.name)), "{error}");
        }
    }
    assert!(batch_reference().contains("| `symbols`, `document-symbols` | `document_symbols` |"));
}

/// README's batch reference is generated from the definitions (`LSPC_BLESS=1` rewrites it).
#[test]
fn readme_batch_reference_is_the_definitions() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let begin = "<!-- operations:begin -->\n";
    let end = "<!-- operations:end -->";
    let start = readme
        .find(begin)
        .expect("README has the operations:begin marker")
        + begin.len();
    let stop = readme[start..]
        .find(end)
        .expect("README has the operations:end marker")
        + start;
    let expected = batch_reference();
    if std::env::var_os("LSPC_BLESS").is_some() {
        let updated = format!("{}{expected}{}", &readme[..start], &readme[stop..]);
        std::fs::write(&path, updated).expect("write README.md");
        return;
    }
    assert_eq!(
        &readme[start..stop],
        expected,
        "README's operation table is stale: run LSPC_BLESS=1 cargo test --lib readme_batch_reference"
    );
}

/// `find_operation`'s exact-name fast path agrees with the full lookup: no operation's name is
/// another one's alias or MCP tool, in any spelling.
#[test]
fn operation_names_are_unique_in_every_spelling() {
    use crate::operation::definitions::{normalise_name, OPERATIONS};
    for def in OPERATIONS {
        let others = OPERATIONS.iter().filter(|other| other.name != def.name);
        for other in others {
            let spellings = other
                .aliases
                .iter()
                .map(|alias| alias.to_string())
                .chain(other.mcp_tool.map(normalise_name));
            for spelling in spellings {
                assert_ne!(spelling, def.name, "{} vs {}", def.name, other.name);
            }
        }
        assert_eq!(
            crate::operation::definitions::find_operation(def.name).map(|found| found.name),
            Some(def.name)
        );
    }
}
