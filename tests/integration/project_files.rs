//! Issue 10: `lspc check` gives the same verdict as the project's own tools. Real servers
//! (pyright 1.1.414, ruff 0.17.6, typescript-language-server 5.3.0 with typescript 6) on the
//! `python-project` and `typescript-project` fixtures, compared with `pyright --outputjson`,
//! `ruff check --output-format json` and `tsc -p .` run on the same tree; the slow-file case,
//! configured servers next to the built-ins, URI spellings and skipped files in every format.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{json, Value};

use crate::require_program;
use crate::support::*;

/// `(path, line, column, severity, message)` per diagnostic of `server` in a json report;
/// pyright's two no-break spaces in continuation lines become plain spaces (for a readable
/// expectation; its CLI writes the same no-break spaces).
fn server_rows(report: &Value, server: &str) -> BTreeSet<(String, u64, u64, String, String)> {
    let mut rows = BTreeSet::new();
    for file in report["files"].as_array().unwrap() {
        for diagnostic in file["diagnostics"].as_array().unwrap() {
            if diagnostic["server"] != server {
                continue;
            }
            rows.insert((
                file["path"].as_str().unwrap().to_owned(),
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["column"].as_u64().unwrap(),
                diagnostic["severity"].as_str().unwrap().to_owned(),
                diagnostic["message"]
                    .as_str()
                    .unwrap()
                    .replace('\u{a0}', " "),
            ));
        }
    }
    rows
}

/// pyright's CLI on the tree: `(path, line, column, severity, message)` with 1-based positions
/// (the fixture is ASCII, so UTF-16 offsets are characters).
fn pyright_cli_rows(workspace: &Workspace) -> BTreeSet<(String, u64, u64, String, String)> {
    let text = tool_output(workspace, "pyright", &["--outputjson"]);
    let report: Value = serde_json::from_str(&text).expect("pyright --outputjson");
    let root = workspace.root.canonicalize().unwrap();
    report["generalDiagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| {
            let file = std::path::Path::new(diagnostic["file"].as_str().unwrap());
            (
                file.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                diagnostic["range"]["start"]["line"].as_u64().unwrap() + 1,
                diagnostic["range"]["start"]["character"].as_u64().unwrap() + 1,
                diagnostic["severity"].as_str().unwrap().to_owned(),
                diagnostic["message"]
                    .as_str()
                    .unwrap()
                    .replace('\u{a0}', " "),
            )
        })
        .collect()
}

/// `(path, line, column, code)` from `ruff check --output-format json`.
fn ruff_cli_rows(workspace: &Workspace) -> BTreeSet<(String, u64, u64, String)> {
    let text = tool_output(
        workspace,
        "ruff",
        &["check", "--output-format", "json", "."],
    );
    let report: Value = serde_json::from_str(&text).expect("ruff json");
    let root = workspace.root.canonicalize().unwrap();
    report
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| {
            let file = std::path::Path::new(diagnostic["filename"].as_str().unwrap());
            (
                file.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                diagnostic["location"]["row"].as_u64().unwrap(),
                diagnostic["location"]["column"].as_u64().unwrap(),
                diagnostic["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ruff_rows(report: &Value) -> BTreeSet<(String, u64, u64, String)> {
    let mut rows = BTreeSet::new();
    for file in report["files"].as_array().unwrap() {
        for diagnostic in file["diagnostics"].as_array().unwrap() {
            if diagnostic["server"] == "ruff" {
                rows.insert((
                    file["path"].as_str().unwrap().to_owned(),
                    diagnostic["line"].as_u64().unwrap(),
                    diagnostic["column"].as_u64().unwrap(),
                    diagnostic["code"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    rows
}

/// `lspc check --format json` with only the servers of `config`, and `extra` arguments.
fn json_check(workspace: &Workspace, config: &std::path::Path, extra: &[&str]) -> Output {
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(config)
        .args(extra)
        .run()
}

fn python_project_check(workspace: &Workspace, extra: &[&str]) -> Output {
    let config = workspace.config(json!({ "pyright": pyright_entry(), "ruff": ruff_entry() }));
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .args(extra)
        .run()
}

/// pyproject's `[tool.pyright] include = ["src"]` leaves `tests/` and `docs/` to ruff alone
/// (and ruff's `extend-exclude` leaves `docs/conf.py` out entirely): lspc's pyright set equals
/// `pyright --outputjson` and its ruff set equals `ruff check`, on the same tree.
#[test]
fn python_project_checks_what_pyright_and_ruff_clis_check() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    require_program!("ruff");
    let workspace = Workspace::copy_of("python-project");
    let output = python_project_check(&workspace, &[]);
    output.status(1);
    let report = output.json();
    let expected_pyright: BTreeSet<_> = [
        (
            "src/shop/cart.py".to_owned(),
            5,
            18,
            "error".to_owned(),
            "Type \"Literal['none']\" is not assignable to declared type \"int\"\n  \"Literal['none']\" is not assignable to \"int\"".to_owned(),
        ),
        (
            "src/shop/cart.py".to_owned(),
            10,
            23,
            "error".to_owned(),
            "Expected 0 positional arguments".to_owned(),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        server_rows(&report, "pyright"),
        expected_pyright,
        "{}",
        output.story()
    );
    assert_eq!(pyright_cli_rows(&workspace), expected_pyright);
    let expected_ruff: BTreeSet<_> = [
        ("src/shop/cart.py".to_owned(), 1, 8, "F401".to_owned()),
        ("tests/test_cart.py".to_owned(), 1, 8, "F401".to_owned()),
    ]
    .into_iter()
    .collect();
    assert_eq!(ruff_rows(&report), expected_ruff, "{}", output.story());
    assert_eq!(ruff_cli_rows(&workspace), expected_ruff);
    let reason = "outside pyright's include and in ruff's exclude";
    assert_eq!(
        file_states(&report),
        [
            (
                "src/shop/__init__.py".to_owned(),
                "clean".to_owned(),
                String::new()
            ),
            (
                "src/shop/cart.py".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "tests/test_cart.py".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "docs/conf.py".to_owned(),
                "skipped".to_owned(),
                reason.to_owned()
            ),
        ],
        "{}",
        output.story()
    );
    // pyright's "os" is not accessed hint is left out by default and counted.
    assert_eq!(report["summary"]["belowSeverity"], 1);
    output.stderr_contains(&format!(
        "1 file {reason} not checked; `--all-files` checks them"
    ));

    // --all-files restores every server on every file; a file named on the command line is
    // always checked by every server, whatever its project says.
    let all = python_project_check(&workspace, &["--all-files"]);
    let all_pyright = server_rows(&all.json(), "pyright");
    for path in ["docs/conf.py", "tests/test_cart.py"] {
        assert!(
            all_pyright.iter().any(|row| row.0 == path),
            "{path}: {}",
            all.story()
        );
    }
    let named = python_project_check(&workspace, &["tests/test_cart.py"]);
    let named_pyright = server_rows(&named.json(), "pyright");
    assert_eq!(
        named_pyright
            .iter()
            .map(|row| (row.1, row.2))
            .collect::<Vec<_>>(),
        [(7, 18)],
        "{}",
        named.story()
    );
    // --exclude leaves walked files out for every server.
    let excluded = python_project_check(&workspace, &["--exclude", "tests"]);
    assert!(
        !ruff_rows(&excluded.json())
            .iter()
            .any(|row| row.0.starts_with("tests/")),
        "{}",
        excluded.story()
    );
}

/// Found on pallets/click (pyright 1.1.414): each `examples/*/` folder holds a `pyproject.toml`
/// with no `[tool.pyright]`, so lspc ran a pyright instance there and checked every example,
/// while the root's `include = ["src", "tests/typing"]` leaves them out: `pyright` (run at the
/// root, or inside an example) reported none of their 11 errors. pyright reads a `pyproject.toml`
/// without `[tool.pyright]` as no configuration and takes the nearest one above it.
#[test]
fn nested_pyproject_without_tool_pyright_uses_the_include_above_it() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let workspace = Workspace::new("nested-pyproject");
    workspace
        .file(
            "pyproject.toml",
            "[project]\nname = \"top\"\n\n[tool.pyright]\ninclude = [\"src\"]\n",
        )
        .file("src/pkg/core.py", "count: int = \"one\"\n")
        .file(
            "examples/demo/pyproject.toml",
            "[project]\nname = \"demo\"\n",
        )
        .file("examples/demo/demo.py", "label: str = 2\n");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    let report = output.json();
    let expected: BTreeSet<_> = [(
        "src/pkg/core.py".to_owned(),
        1,
        14,
        "error".to_owned(),
        "Type \"Literal['one']\" is not assignable to declared type \"int\"\n  \"Literal['one']\" is not assignable to \"int\"".to_owned(),
    )]
    .into_iter()
    .collect();
    assert_eq!(
        server_rows(&report, "pyright"),
        expected,
        "{}",
        output.story()
    );
    assert_eq!(pyright_cli_rows(&workspace), expected);
    assert_eq!(
        file_states(&report),
        [
            (
                "src/pkg/core.py".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "examples/demo/demo.py".to_owned(),
                "skipped".to_owned(),
                "outside pyright's include".to_owned()
            ),
        ],
        "{}",
        output.story()
    );
}

/// pyright 1.1.414 reads `include` from the base a `pyrightconfig.json` `extends` when it sets
/// none itself; lspc read only the file found, so it checked `tests/` too (one error more than
/// `pyright`).
#[test]
fn pyrightconfig_extends_gives_the_include() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let workspace = Workspace::new("pyright-extends");
    workspace
        .file("base.json", "{\"include\": [\"src\"]}\n")
        .file("pyrightconfig.json", "{\"extends\": \"./base.json\"}\n")
        .file("src/a.py", "x: int = \"a\"\n")
        .file("tests/t.py", "y: int = \"b\"\n");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    let report = output.json();
    let expected: BTreeSet<_> = [(
        "src/a.py".to_owned(),
        1,
        10,
        "error".to_owned(),
        "Type \"Literal['a']\" is not assignable to declared type \"int\"\n  \"Literal['a']\" is not assignable to \"int\"".to_owned(),
    )]
    .into_iter()
    .collect();
    assert_eq!(
        server_rows(&report, "pyright"),
        expected,
        "{}",
        output.story()
    );
    assert_eq!(pyright_cli_rows(&workspace), expected);
    assert_eq!(
        file_states(&report),
        [
            (
                "src/a.py".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "tests/t.py".to_owned(),
                "skipped".to_owned(),
                "outside pyright's include".to_owned()
            ),
        ],
        "{}",
        output.story()
    );
}

/// Found on pallets/click (pyright 1.1.414): `lspc batch`'s `check` operation checked every
/// walked file with every server and kept hints, so it reported 81 pyright errors in `tests/`,
/// outside `[tool.pyright] include = ["src", ...]`, that `pyright` and `lspc check` do not, and
/// 296 "is not accessed" hints. It now checks and reports what `lspc check --format json` does.
#[test]
fn batch_check_gives_the_verdict_of_lspc_check() {
    require_program!("pyright-langserver");
    let workspace = Workspace::new("batch-check-projects");
    workspace
        .file("pyproject.toml", "[tool.pyright]\ninclude = [\"src\"]\n")
        .file("src/core.py", "import os\ncount: int = \"one\"\n")
        .file("tests/test_core.py", "label: str = 2\n");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .arg("batch")
        .stdin("{\"id\": 1, \"op\": \"check\", \"paths\": [\".\"]}\n")
        .timeout(std::time::Duration::from_secs(120))
        .run();
    output.status(0);
    let answer: Value = serde_json::from_str(output.stdout.trim()).expect("one JSON line");
    assert_eq!(
        answer,
        json!({"id": 1, "result": {"files": [
            {"path": "src/core.py", "state": "diagnostics", "diagnostics": [{
                "path": "src/core.py", "line": 2, "column": 14, "endLine": 2, "endColumn": 19,
                "severity": "error",
                "message": "Type \"Literal['one']\" is not assignable to declared type \"int\"\n\u{a0}\u{a0}\"Literal['one']\" is not assignable to \"int\"",
                "source": "Pyright", "code": "reportAssignmentType", "server": "pyright"}]},
            {"path": "tests/test_core.py", "state": "skipped", "reason": "outside pyright's include", "diagnostics": []}
        ]}}),
        "{}",
        output.story()
    );
}

/// Found on unjs/ufo (typescript-language-server 5.3.0, TypeScript 6.0.3): its tsconfig's
/// `"moduleResolution": "Node"` is TS5107 under TypeScript 6, `tsc -p .` exits 2, and `lspc
/// check` said `0 errors` (exit 0), since typescript-language-server drops tsserver's
/// `configFileDiag` event. Reproduced with an option no TypeScript version knows (TS5025).
#[test]
fn tsconfig_errors_are_reported_as_tsc_reports_them() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::new("tsconfig-errors");
    workspace
        .file(
            "tsconfig.json",
            "{\n  \"compilerOptions\": {\n    \"strictt\": true,\n    \"noEmit\": true\n  },\n  \"include\": [\"src\"]\n}\n",
        )
        .file("src/index.ts", "export const n: number = \"x\";\n");
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    let report = output.json();
    let rows = typescript_rows(&report);
    let expected: BTreeSet<_> = [
        (
            "src/index.ts".to_owned(),
            1,
            14,
            "2322".to_owned(),
            "Type 'string' is not assignable to type 'number'.".to_owned(),
        ),
        (
            "tsconfig.json".to_owned(),
            3,
            5,
            "5025".to_owned(),
            "Unknown compiler option 'strictt'. Did you mean 'strict'?".to_owned(),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(rows, expected, "{}", output.story());
    assert_eq!(tsc_rows(&workspace), expected);
    assert_eq!(report["summary"]["errors"], 2, "{}", output.story());
}

/// Found by a new user (trial 26, pmndrs/zustand's `examples/starter`): asked about a
/// `tsconfig.json` alone, the MCP `diagnostics` tool said `no diagnostics`, and `lspc diagnostics
/// tsconfig.json` and `lspc check tsconfig.json` called it clean (exit 0), where `tsc -p` exits 2
/// on its TS5107. tsserver loads a project only for an open file, and no file of the project was
/// open; lspc now asks through one of them.
#[test]
fn a_tsconfig_asked_about_alone_has_tscs_errors_in_it() {
    require_program!("typescript-language-server");
    require_program!("vscode-json-language-server");
    require_program!("tsc");
    let workspace = Workspace::new("tsconfig-alone");
    workspace
        .file(
            "tsconfig.json",
            "{\n  \"compilerOptions\": {\n    \"strictt\": true,\n    \"noEmit\": true\n  },\n  \"include\": [\"src\"]\n}\n",
        )
        .file("src/index.ts", "export const n: number = 1;\n");
    let config = workspace.config(json!({
        "typescript": typescript_entry(),
        "json": {"command": "vscode-json-language-server", "args": ["--stdio"],
                 "extensionToLanguage": {".json": "json"}},
    }));
    let expected: BTreeSet<_> = [(
        "tsconfig.json".to_owned(),
        3,
        5,
        "5025".to_owned(),
        "Unknown compiler option 'strictt'. Did you mean 'strict'?".to_owned(),
    )]
    .into_iter()
    .collect();
    assert_eq!(tsc_rows(&workspace), expected);
    let lspc = |args: &[&str]| workspace.run_with(&config, args);
    let check = lspc(&["check", "tsconfig.json", "--format", "json"]);
    check.status(1);
    assert_eq!(
        typescript_rows(&check.json()),
        expected,
        "{}",
        check.story()
    );
    lspc(&["diagnostics", "tsconfig.json"]).status(1).stdout_is(
        "tsconfig.json:3:5: error: Unknown compiler option 'strictt'. Did you mean 'strict'? \
         [typescript 5025]\n",
    );
    let (answer, run) = mcp_tool_call(
        &workspace,
        &config,
        "diagnostics",
        json!({"file": "tsconfig.json"}),
    );
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with(
            "tsconfig.json:3:5: error: Unknown compiler option 'strictt'. Did you mean 'strict'?"
        ),
        "{}",
        run.story()
    );
}

/// Found by a new user (trial 15): tsc's errors that have no location at all, as `tsc -p .`
/// prints them (`error TS2688: Cannot find type definition file for 'does-not-exist'.`, exit 2),
/// were dropped, so `lspc check` called the project clean (exit 0). zustand without its
/// `node_modules` is such a project: tsc reports only the missing `"types"` entry. They are
/// now reported at the start of the tsconfig.json, with tsc's text.
#[test]
fn tsconfig_errors_without_a_location_fail_the_check_as_they_fail_tsc() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::new("tsconfig-unlocated");
    workspace
        .file(
            "tsconfig.json",
            "{\n  \"compilerOptions\": { \"strict\": true, \"noEmit\": true, \"types\": [\"does-not-exist\"] },\n  \"files\": [\"main.ts\", \"missing.ts\"]\n}\n",
        )
        .file("main.ts", "export const n: number = 1;\n");
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    let root = workspace.root.canonicalize().unwrap();
    let missing = root.join("missing.ts");
    let because = "\n  The file is in the program because:\n    ";
    let expected: BTreeSet<_> = [
        (
            "tsconfig.json".to_owned(),
            1,
            1,
            "2688".to_owned(),
            format!("Cannot find type definition file for 'does-not-exist'.{because}Entry point of type library 'does-not-exist' specified in compilerOptions"),
        ),
        (
            "tsconfig.json".to_owned(),
            1,
            1,
            "6053".to_owned(),
            format!("File '{}' not found.{because}Part of 'files' list in tsconfig.json", missing.display()),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        typescript_rows(&output.json()),
        expected,
        "{}",
        output.story()
    );
    // tsc's own lines: `error TSnnnn: message`, its chain indented below.
    let tsc = tool_output(&workspace, "tsc", &["-p", ".", "--pretty", "false"]);
    let mut from_tsc: BTreeSet<(String, String)> = BTreeSet::new();
    let mut current: Option<(String, String)> = None;
    for line in tsc.lines() {
        if let Some(rest) = line.strip_prefix("error TS") {
            from_tsc.extend(current.take());
            let (code, message) = rest.split_once(": ").unwrap();
            current = Some((code.to_owned(), message.to_owned()));
        } else if let Some((_, message)) = current.as_mut() {
            message.push('\n');
            message.push_str(line);
        }
    }
    from_tsc.extend(current);
    let ours: BTreeSet<(String, String)> = expected
        .into_iter()
        .map(|(_, _, _, code, message)| (code, message))
        .collect();
    assert_eq!(from_tsc, ours, "tsc said:\n{tsc}");
}

/// `(path, line, column, code, message)` of every diagnostic in a `--format json` report, the
/// code without tsc's `TS` prefix.
fn typescript_rows(report: &Value) -> BTreeSet<(String, u64, u64, String, String)> {
    let mut rows = BTreeSet::new();
    for file in report["files"].as_array().unwrap() {
        for diagnostic in file["diagnostics"].as_array().unwrap() {
            rows.insert((
                file["path"].as_str().unwrap().to_owned(),
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["column"].as_u64().unwrap(),
                diagnostic["code"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("TS")
                    .to_owned(),
                diagnostic["message"].as_str().unwrap().to_owned(),
            ));
        }
    }
    rows
}

/// `(path, line, column, code, message)` from `tsc -p . --pretty false`.
fn tsc_rows(workspace: &Workspace) -> BTreeSet<(String, u64, u64, String, String)> {
    tsc_rows_of(workspace, &["-p", ".", "--pretty", "false"])
}

/// `(path, line, column, code, message)` from `tsc ARGS`.
fn tsc_rows_of(
    workspace: &Workspace,
    args: &[&str],
) -> BTreeSet<(String, u64, u64, String, String)> {
    let text = tool_output(workspace, "tsc", args);
    text.lines()
        .filter_map(|line| {
            let (location, rest) = line.split_once("): error ")?;
            let (path, position) = location.split_once('(')?;
            let (row, column) = position.split_once(',')?;
            let (code, message) = rest.split_once(": ")?;
            Some((
                path.to_owned(),
                row.parse().ok()?,
                column.parse().ok()?,
                code.trim_start_matches("TS").to_owned(),
                message.to_owned(),
            ))
        })
        .collect()
}

/// `lspc check` of the workspace with typescript-language-server alone, asserted to exit 1 with
/// exactly the two errors `tsc TSC_ARGS` reports there; returns the json report.
fn check_matching_tscs_two_errors(workspace: &Workspace, tsc_args: &[&str]) -> Value {
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let output = json_check(workspace, &config, &[]);
    output.status(1);
    let report = output.json();
    let expected = tsc_rows_of(workspace, tsc_args);
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert_eq!(typescript_rows(&report), expected, "{}", output.story());
    report
}

/// tsconfig's `include: ["source"]` leaves `test/` out, and its `extends` names a package that
/// is not installed: lspc reports exactly what `tsc -p .` reports, the tsconfig error included.
#[test]
fn typescript_project_checks_what_tsc_checks() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::copy_of("typescript-project");
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    let report = output.json();
    let rows = typescript_rows(&report);
    let expected: BTreeSet<_> = [
        (
            "source/index.ts".to_owned(),
            5,
            38,
            "2345".to_owned(),
            "Argument of type 'string' is not assignable to parameter of type 'number'.".to_owned(),
        ),
        (
            "tsconfig.json".to_owned(),
            2,
            13,
            "6053".to_owned(),
            "File '@lspc-fixture/tsconfig' not found.".to_owned(),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(rows, expected, "{}", output.story());
    assert_eq!(tsc_rows(&workspace), expected);
    assert_eq!(
        file_states(&report),
        [
            (
                "source/index.ts".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "source/util.ts".to_owned(),
                "clean".to_owned(),
                String::new()
            ),
            (
                "tsconfig.json".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "test/index.test.ts".to_owned(),
                "skipped".to_owned(),
                "outside tsconfig's include".to_owned()
            ),
        ],
        "{}",
        output.story()
    );
}

/// `lspc check ARGS` in `workspace` with typescript-language-server alone (its default root
/// markers), human output.
fn typescript_check(workspace: &Workspace, args: &[&str]) -> Output {
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .arg("check")
        .args(args)
        .run()
}

/// A new user's trial (lukeed/kleur with a root tsconfig, and a minimal layout): a
/// `package.json` below the `tsconfig.json` started a tsserver rooted at the package, which
/// looks for a tsconfig only up to its root: `packages/a/src/x.ts` was checked with default
/// options, so tsc's TS6133 (`noUnusedLocals`) went unseen (exit 0) and the root's `paths` alias
/// was "Cannot find module" (exit 1, where tsc passes). A `package.json` marks a project root
/// only where no tsconfig is found above it.
#[test]
fn a_package_json_below_the_tsconfig_is_checked_with_that_tsconfig() {
    require_program!("typescript-language-server");
    let workspace = Workspace::new("package-below-tsconfig");
    workspace.file(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noUnusedLocals": true, "noEmit": true,
            "target": "es2022", "module": "esnext", "moduleResolution": "bundler", "types": [],
            "paths": {"@lib/*": ["./packages/lib/*"]}},
            "include": ["packages"]}"#,
    );
    workspace.file(
        "packages/a/package.json",
        r#"{"name": "a", "private": true}"#,
    );
    workspace.file("packages/lib/one.ts", "export const one: number = 1\n");
    workspace.file(
        "packages/a/src/x.ts",
        "import { one } from \"@lib/one\"\nexport function twice(x: number) {\n  const unused = one\n  return x * 2\n}\n",
    );
    let expected = "packages/a/src/x.ts:3:9: error: 'unused' is declared but its value is never read. [typescript 6133]\n";
    for args in [&[][..], &["packages/a/src/x.ts"][..]] {
        typescript_check(&workspace, args)
            .status(1)
            .stdout_is(expected);
    }
    if which("tsc").is_some() {
        assert_eq!(
            tool_output(&workspace, "tsc", &["--noEmit", "-p", ".", "--pretty", "false"]),
            "packages/a/src/x.ts(3,9): error TS6133: 'unused' is declared but its value is never read.\n"
        );
    }
}

/// helper-45: with `"typeRoots": ["./types"]`, `"types": ["globals"]` and `"include":
/// ["src"]`, tsc checks `types/globals/index.d.ts` (the program holds it) and fails; `lspc
/// check` skipped it as outside the include, exit 0. The packages `types` names are in the
/// project, by their `package.json`'s `types` field or their `index.d.ts`; a type root's folder
/// `types` does not name is not (tsc 6 includes none by default).
#[test]
fn declaration_files_of_the_types_a_tsconfig_names_are_checked_as_tsc_checks_them() {
    require_program!("typescript-language-server");
    let workspace = Workspace::new("type-roots");
    workspace.file(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "typeRoots": ["./types"],
            "types": ["globals", "pkg", "lib", "plain"]}, "include": ["src"]}"#,
    );
    workspace.file(
        "types/globals/index.d.ts",
        "declare const G: number;\ndeclare const worse: Missing;\n",
    );
    workspace.file(
        "types/pkg/package.json",
        r#"{"name": "pkg", "types": "main.d.ts"}"#,
    );
    workspace.file("types/pkg/main.d.ts", "declare const P: Unknown;\n");
    // helper-46: tsc finds `main`'s declaration file, and a plain `NAME.d.ts` in the root.
    workspace.file(
        "types/lib/package.json",
        r#"{"name": "lib", "main": "dist/index.js"}"#,
    );
    workspace.file("types/lib/dist/index.d.ts", "declare const L: Gone;\n");
    workspace.file("types/plain.d.ts", "declare const Q: Absent;\n");
    workspace.file("types/unused/index.d.ts", "declare const U: Nope;\n");
    workspace.file("src/a.ts", "export const a: number = G + P;\n");
    let output = typescript_check(&workspace, &[]);
    output
        .status(1)
        .stdout_is(
            "types/globals/index.d.ts:2:22: error: Cannot find name 'Missing'. [typescript 2304]\n\
             types/lib/dist/index.d.ts:1:18: error: Cannot find name 'Gone'. [typescript 2304]\n\
             types/pkg/main.d.ts:1:18: error: Cannot find name 'Unknown'. [typescript 2304]\n\
             types/plain.d.ts:1:18: error: Cannot find name 'Absent'. [typescript 2304]\n",
        )
        .stderr_contains("1 file outside tsconfig's include not checked");
    if which("tsc").is_some() {
        assert_eq!(
            tool_output(
                &workspace,
                "tsc",
                &["--noEmit", "-p", ".", "--pretty", "false"]
            ),
            "types/globals/index.d.ts(2,22): error TS2304: Cannot find name 'Missing'.\n\
             types/lib/dist/index.d.ts(1,18): error TS2304: Cannot find name 'Gone'.\n\
             types/pkg/main.d.ts(1,18): error TS2304: Cannot find name 'Unknown'.\n\
             types/plain.d.ts(1,18): error TS2304: Cannot find name 'Absent'.\n"
        );
    }
}

/// A new user's trial on sindresorhus/execa: `lspc check test-d`, a folder whose every file is
/// outside tsconfig's `include`, said `0 files checked: … 119 files outside tsconfig's include
/// not checked`, exit 0: a CI step naming a folder passed with nothing checked. Nothing checked
/// is exit 2, with the reason; the same file named, or walked with `--all-files`, is checked
/// with tsc's two errors.
#[test]
fn a_named_folder_wholly_outside_the_project_is_not_a_clean_check() {
    require_program!("typescript-language-server");
    let workspace = Workspace::copy_of("typescript-project");
    let check = |args: &[&str]| typescript_check(&workspace, args);
    check(&["test"])
        .status(2)
        .stdout_is("")
        .stderr_contains(
            "0 files checked: 0 errors, 0 warnings, 0 info, 0 hints; 1 file outside tsconfig's include not checked; `--all-files` checks them\n\
             lspc: no file was checked: the one file found was outside the servers' projects (see the summary)\n",
        );
    let errors = "test/index.test.ts:3:7: error: Type 'number' is not assignable to type 'string'. [typescript 2322]\n\
                  test/index.test.ts:4:17: error: Cannot find name 'notDefined'. Did you mean 'undefined'? [typescript 2552]\n";
    check(&["test/index.test.ts"]).status(1).stdout_is(errors);
    check(&["--all-files", "test"]).status(1).stdout_is(errors);
}

/// Found by trying a solution-style layout (fourteenth round, new-user test), the one every
/// `npm create vite` TypeScript template has: `tsconfig.json` with `"files": []` and
/// `references` to `tsconfig.app.json` (`src`) and `tsconfig.node.json` (`vite.config.ts`).
/// `lspc check .` skipped both sources as "outside tsconfig's include", exit 0, while `tsc -b`
/// reports an error in each (and tsserver, asked about a named file, checks it in its referenced
/// project). A file a referenced configuration includes belongs to the project.
#[test]
fn files_of_referenced_tsconfigs_are_checked_as_tsc_b_checks_them() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::new("tsconfig-references");
    let options = |include: &str| {
        format!(
            "{{\n  \"compilerOptions\": {{ \"composite\": true, \"strict\": true, \"noEmit\": true, \
             \"module\": \"ESNext\", \"moduleResolution\": \"bundler\", \"types\": [] }},\n  \
             \"include\": [\"{include}\"]\n}}\n"
        )
    };
    workspace
        .file(
            "tsconfig.json",
            "{\n  \"files\": [],\n  \"references\": [{ \"path\": \"./tsconfig.app.json\" }, \
             { \"path\": \"./tsconfig.node.json\" }]\n}\n",
        )
        .file("tsconfig.app.json", &options("src"))
        .file("tsconfig.node.json", &options("vite.config.ts"))
        .file("src/main.ts", "export const n: number = \"x\";\n")
        .file("vite.config.ts", "export default { x: 1 as string };\n")
        .file("scripts/build.ts", "export const m: number = \"y\";\n");
    let report = check_matching_tscs_two_errors(&workspace, &["-b", "--pretty", "false"]);
    assert_eq!(
        file_states(&report)
            .into_iter()
            .filter(|(path, _, _)| path.ends_with(".ts"))
            .collect::<Vec<_>>(),
        [
            (
                "src/main.ts".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "vite.config.ts".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "scripts/build.ts".to_owned(),
                "skipped".to_owned(),
                "outside tsconfig's include".to_owned()
            ),
        ],
        "{report}"
    );
}

/// A new user's trial: with `"include": ["src"]` (or `"files": ["src/index.ts"]`), a module
/// `src/index.ts` imports from outside them was skipped as "outside tsconfig's include" and the
/// check passed (exit 0) where `tsc --noEmit -p .` failed on it (exit 2): tsc compiles every
/// module its root files import, whatever `include` and `exclude` say. Relative imports are
/// followed now (also an excluded file, `./x.js` naming `x.ts`, and a folder's `index.ts`); a
/// module nothing imports stays skipped, as tsc leaves it.
#[test]
fn modules_the_included_files_import_are_checked_as_tsc_checks_them() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::new("tsconfig-imports");
    workspace
        .file(
            "tsconfig.json",
            "{ \"compilerOptions\": { \"strict\": true, \"noEmit\": true, \"target\": \"es2022\", \
             \"module\": \"nodenext\", \"types\": [] }, \"include\": [\"src\"], \
             \"exclude\": [\"src/generated\"] }\n",
        )
        .file(
            "src/index.ts",
            "import { helper } from \"../lib/helper.js\";\nimport { made } from \"./generated/made.js\";\n\
             export const both = helper() + made;\n",
        )
        .file(
            "lib/helper.ts",
            "import { deep } from \"./util/index.js\";\nexport function helper(): string {\n  const n: string = deep;\n  return n;\n}\n",
        )
        .file("lib/util/index.ts", "export const deep: number = 1;\n")
        .file("src/generated/made.ts", "export const made: boolean = \"yes\";\n")
        .file("lib/unused.ts", "export const unused: number = \"no\";\n");
    let report =
        check_matching_tscs_two_errors(&workspace, &["--noEmit", "-p", ".", "--pretty", "false"]);
    let states: Vec<(String, String)> = file_states(&report)
        .into_iter()
        .filter(|(path, _, _)| path.ends_with(".ts"))
        .map(|(path, state, _)| (path, state))
        .collect();
    assert_eq!(
        states,
        [
            ("lib/helper.ts", "diagnostics"),
            ("lib/util/index.ts", "clean"),
            ("src/generated/made.ts", "diagnostics"),
            ("src/index.ts", "clean"),
            ("lib/unused.ts", "skipped"),
        ]
        .map(|(path, state)| (path.to_owned(), state.to_owned())),
        "{report}"
    );
}

/// Issue 10's fourth case: `lspc check ok.py big.py` with an 8 MB generated module. The small
/// file's pyright and ruff diagnostics are both reported (it is sent first, the large file only
/// once it is alone); only big.py times out, its state naming pyright and what ruff gave.
#[test]
fn a_slow_file_does_not_sink_the_small_files_results() {
    require_program!("pyright-langserver");
    require_program!("ruff");
    let workspace = Workspace::new("slow-file");
    workspace.file("ok.py", "import os\n\ncount: int = \"one\"\n");
    let mut big = String::with_capacity(8_200_000);
    for index in 0..220_000 {
        big.push_str(&format!("value_{index}: int = {index} + len(\"x\")\n"));
    }
    workspace.file("big.py", &big);
    let config = workspace.config(json!({ "pyright": pyright_entry(), "ruff": ruff_entry() }));
    // The default 30 s: under load pyright alone may need more than 8 s for its first file.
    let output = workspace
        .lspc()
        .args([
            "check",
            "--no-builtin",
            "--timeout",
            "30",
            "--format",
            "json",
            "--config",
        ])
        .arg(&config)
        .args(["ok.py", "big.py"])
        .timeout(std::time::Duration::from_secs(180))
        .run();
    let report = output.json();
    assert_eq!(
        json_diagnostics(&json!({"files": [report["files"][1]]})),
        [
            "ok.py:3:14-3:19 error [Pyright reportAssignmentType] Type \"Literal['one']\" is not assignable to declared type \"int\"\n\u{a0}\u{a0}\"Literal['one']\" is not assignable to \"int\"",
            "ok.py:1:8-1:10 warning [Ruff F401] `os` imported but unused\n\nhelp: Remove unused import: `os`",
        ],
        "{}",
        output.story()
    );
    assert_eq!(report["files"][1]["state"], "diagnostics");
    let big_state = file_states(&report)[0].clone();
    if big_state.1 == "timeout" {
        // Under load ruff may still be reading the 8 MB file too; either way the reason names
        // who did not answer and what the others gave.
        let possible = [
            "pyright still analysing after 30 s; ruff: 0 diagnostics shown",
            "pyright, ruff still analysing after 30 s",
        ];
        assert!(
            possible.contains(&big_state.2.as_str()),
            "{}",
            output.story()
        );
        output.status(3);
        assert_eq!(report["summary"]["timedOut"], 1);
    } else {
        // A machine fast enough for pyright to finish: no timeout at all.
        assert_eq!(big_state.1, "clean", "{}", output.story());
    }
}

/// README's strict-mode `.lsp.json` entry named `pyright` replaces the built-in pyright; ruff
/// keeps serving `.py` (it used to be turned off). A configured server whose program is missing
/// fails alone, said once, and the built-ins still check every file; the files it should have
/// checked are errors, not checked by every server.
#[test]
fn configured_servers_add_to_the_builtins() {
    require_program!("pyright-langserver");
    require_program!("ruff");
    let workspace = Workspace::new("config-merge");
    workspace.file("a.py", "import os\n\ncount: int = \"one\"\n");
    workspace.file("b.py", "import sys\n");
    workspace.file(
        ".lsp.json",
        &json!({"pyright": {"command": "pyright-langserver", "args": ["--stdio"],
                            "extensionToLanguage": {".py": "python"},
                            "settings": {"python": {"analysis": {"typeCheckingMode": "strict"}}}}})
        .to_string(),
    );
    let output = workspace
        .lspc()
        .args(["check", "--trust", "--format", "json", "."])
        .run();
    output.status(1);
    let rows = json_diagnostics(&output.json());
    let tags: Vec<&str> = rows
        .iter()
        .map(|row| row.split(" [").nth(1).unwrap().split(']').next().unwrap())
        .collect();
    assert!(
        tags.contains(&"Ruff F401") && tags.contains(&"Pyright reportAssignmentType"),
        "{}",
        output.story()
    );

    workspace.file(
        ".lsp.json",
        &json!({"py": {"command": "lspc-no-such-server",
                       "extensionToLanguage": {".py": "python"}}})
        .to_string(),
    );
    let output = workspace
        .lspc()
        .args(["check", "--trust", "--format", "json", "."])
        .run();
    output.status(3);
    let report = output.json();
    assert_eq!(
        report["serverFailures"],
        json!([{"server": "py", "message": "cannot start: command not found: lspc-no-such-server"}]),
        "{}",
        output.story()
    );
    assert_eq!(
        output
            .stderr
            .matches("server py: cannot start: command not found: lspc-no-such-server")
            .count(),
        1,
        "{}",
        output.story()
    );
    let states: Vec<(String, String)> = file_states(&report)
        .into_iter()
        .map(|(path, state, _)| (path, state))
        .collect();
    // Each file keeps the built-ins' findings but is not called checked: the configured server
    // never saw it (a new user's trial: with `"command": "no-such-pyright"`, a file with a type
    // error was `clean`).
    assert_eq!(
        states,
        [
            ("a.py".to_owned(), "error".to_owned()),
            ("b.py".to_owned(), "error".to_owned()),
        ],
        "{}",
        output.story()
    );
    assert_eq!(
        report["files"][1]["reason"],
        "not checked by every server: server py failed to start: command not found: \
         lspc-no-such-server",
        "{}",
        output.story()
    );
    assert_eq!(report["files"][1]["diagnostics"][0]["code"], "F401");
    // One whose diagnostics are off would have given the files none: they stay checked.
    workspace.file(
        ".lsp.json",
        &json!({"py": {"command": "lspc-no-such-server", "diagnostics": false,
                       "extensionToLanguage": {".py": "python"}}})
        .to_string(),
    );
    let output = workspace
        .lspc()
        .args(["check", "--trust", "--format", "json", "."])
        .run();
    let states: Vec<String> = file_states(&output.json())
        .into_iter()
        .map(|(_, state, _)| state)
        .collect();
    assert_eq!(states, ["diagnostics", "diagnostics"], "{}", output.story());
}

/// A server that publishes one file under two spellings of its URI (`%C3%A9` then `%c3%a9`)
/// gives the same answer every run: the later publish, for the one document.
#[test]
fn uri_spellings_of_one_document_give_the_same_answer_every_run() {
    let mut workspace = Workspace::new("uri-spellings");
    workspace.file("café.py", "x = 1\n");
    let diagnostic = |message: &str| {
        json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                "severity": 1, "source": "fixture", "message": message}])
    };
    let scenario = json!({
        "publishOnChange": false,
        "rules": [{"method": "textDocument/didOpen", "actions": [
            {"publish": {"uri": "$ROOT/caf%C3%A9.py", "version": 1, "diagnostics": diagnostic("upper")}},
            {"publish": {"uri": "$ROOT/caf%c3%a9.py", "version": 1, "diagnostics": diagnostic("lower")}}
        ]}]
    });
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    for run in 0..4 {
        let output = workspace
            .lspc()
            .args(["check", "--no-builtin", "--format", "json", "--config"])
            .arg(&config)
            .arg("café.py")
            .run();
        assert_eq!(
            json_diagnostics(&output.json()),
            ["café.py:1:1-1:2 error [fixture -] lower"],
            "run {run}: {}",
            output.story()
        );
    }
}

/// Files skipped while walking (binary, outside every server's project) are listed in every
/// machine format, not only on stderr.
#[test]
fn skipped_files_are_listed_in_every_format() {
    require_program!("ruff");
    let workspace = Workspace::new("skipped-formats");
    workspace.file("a.py", "x = 1\n");
    workspace.file("ruff.toml", "extend-exclude = [\"gen\"]\n");
    workspace.file("gen/made.py", "x = 1\n");
    std::fs::write(workspace.path("blob.py"), b"x = 1\0\x01\x02\n").unwrap();
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    let run = |format: &str| {
        let output = workspace
            .lspc()
            .args(["check", "--no-builtin", "--format", format, "--config"])
            .arg(&config)
            .run();
        output.status(0);
        output
    };
    let json_report = run("json").json();
    let skipped: Vec<(String, String, String)> = file_states(&json_report)
        .into_iter()
        .filter(|(_, state, _)| state == "skipped")
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "blob.py".to_owned(),
                "skipped".to_owned(),
                "file looks binary (it holds NUL bytes)".to_owned()
            ),
            (
                "gen/made.py".to_owned(),
                "skipped".to_owned(),
                "in ruff's exclude".to_owned()
            ),
        ]
    );
    assert_eq!(json_report["summary"]["skipped"], 2);
    let jsonl = run("jsonl");
    assert_eq!(
        jsonl.stdout,
        concat!(
            r#"{"path":"blob.py","reason":"file looks binary (it holds NUL bytes)","state":"skipped"}"#,
            "\n",
            r#"{"path":"gen/made.py","reason":"in ruff's exclude","state":"skipped"}"#,
            "\n"
        ),
        "{}",
        jsonl.story()
    );
    let github = run("github");
    assert_eq!(
        github.stdout,
        concat!(
            "::notice file=blob.py::skipped: file looks binary (it holds NUL bytes)\n",
            "::notice file=gen/made.py::skipped: in ruff's exclude\n"
        ),
        "{}",
        github.story()
    );
    let sarif: Value = serde_json::from_str(&run("sarif").stdout).unwrap();
    let notifications = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    let texts: Vec<(&str, &str, &str)> = notifications
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["level"].as_str().unwrap(),
                n["message"]["text"].as_str().unwrap(),
                n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            (
                "note",
                "skipped: file looks binary (it holds NUL bytes)",
                "blob.py"
            ),
            ("note", "skipped: in ruff's exclude", "gen/made.py"),
        ]
    );
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
}

/// Ctrl-C during a long check: the servers are stopped, the files that were complete are
/// reported, stderr says `interrupted after N of M files`, and the exit status is 128 + SIGINT.
#[test]
fn ctrl_c_reports_what_was_complete() {
    let mut workspace = Workspace::new("interrupted");
    workspace.file("a.py", "ERROR: boom\n");
    workspace.file("b.txt", "ERROR: never settles\n");
    // `quick` publishes its markers at once; `stuck` never publishes.
    let stuck = json!({"publishOnChange": false, "rules": [
        {"method": "textDocument/didOpen", "actions": []}
    ]});
    let config =
        workspace.fixture_config(&[("quick", &[".py"], json!({})), ("stuck", &[".txt"], stuck)]);
    let mut command = Command::new(lspc_bin());
    crate::support::session_env(&mut command);
    let child = command
        .args([
            "check",
            "--no-builtin",
            "--timeout",
            "60",
            "--format",
            "json",
            "--config",
        ])
        .arg(&config)
        .current_dir(&workspace.root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // a.py settles within a second (250 ms quiet period); b.txt would wait 60 s.
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: kill(2) with a pid this test spawned and has not reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let (sender, receiver) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = receiver
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("lspc ends within 30 s of SIGINT")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("lspc: interrupted after 1 of 2 files"),
        "{stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(
        json_diagnostics(&report),
        ["a.py:1:1-1:12 error [fixture FX1] boom"],
        "{stderr}"
    );
    assert_eq!(report["files"].as_array().unwrap().len(), 1, "{stdout}");
}

/// Found on pallets/click (ruff 0.17.6): a file in ruff's `exclude` named on the command line
/// was reported checked and clean (`lspc check docs/conf.py`: exit 0), while `ruff check
/// docs/conf.py` lints a named file and reports F401. ruff's server answers nothing for an
/// excluded document even when it is open, so that "clean" was nobody's verdict. Now ruff is
/// left out of such a file, named or walked with `--all-files`, and the run says so: a named file
/// nothing else checks is an error (exit 2), never clean.
#[test]
fn a_file_in_ruffs_exclude_is_never_reported_clean_by_ruff() {
    require_program!("ruff");
    let workspace = Workspace::copy_of("python-project");
    // ruff's CLI lints the named file despite the exclude.
    let cli = tool_output(
        &workspace,
        "ruff",
        &["check", "--output-format", "concise", "docs/conf.py"],
    );
    assert!(cli.contains("docs/conf.py:1:8: F401"), "{cli}");
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    let check = |extra: &[&str]| json_check(&workspace, &config, extra);
    let named = check(&["docs/conf.py"]);
    named.status(2);
    assert_eq!(
        file_states(&named.json()),
        [(
            "docs/conf.py".to_owned(),
            "error".to_owned(),
            RUFF_NEVER_CHECKS_CONF.to_owned()
        )],
        "{}",
        named.story()
    );
    named.stderr_contains(
        "1 file in ruff's exclude not checked by that server (its server never checks an \
         excluded file, even one named; its CLI lints it when named)",
    );
    // With another file, ruff checks that one and still leaves the excluded one out.
    let both = check(&["docs/conf.py", "tests/test_cart.py"]);
    both.status(2);
    let report = both.json();
    assert_eq!(
        ruff_rows(&report),
        [("tests/test_cart.py".to_owned(), 1, 8, "F401".to_owned())]
            .into_iter()
            .collect(),
        "{}",
        both.story()
    );
    // --all-files cannot have ruff check it either: skipped, with the reason.
    let all = check(&["--all-files"]);
    let states_all = file_states(&all.json());
    assert!(
        states_all.contains(&(
            "docs/conf.py".to_owned(),
            "skipped".to_owned(),
            RUFF_NEVER_CHECKS_CONF.to_owned()
        )),
        "{}",
        all.story()
    );
    // A plain walk says --all-files would not help for it.
    let walked = check(&[]);
    walked.stderr_contains(
        "1 file in ruff's exclude not checked (its server never checks an excluded file, even \
         with `--all-files`)",
    );
    // The diagnostics operation, on the command line, in batch and over MCP: not checked,
    // never an empty (clean) answer. Before, all three answered `[]`.
    let cli = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .args(["diagnostics", "docs/conf.py"])
        .run();
    cli.status(3);
    // Session mode logs at debug level on stderr too; the message is the last line.
    assert_eq!(
        cli.stderr.lines().last(),
        Some(format!("lspc: {RUFF_NEVER_CHECKS_CONF}").as_str()),
        "{}",
        cli.story()
    );
    let batch = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .arg("batch")
        .stdin("{\"id\": 1, \"op\": \"diagnostics\", \"file\": \"docs/conf.py\"}\n")
        .run();
    assert_eq!(
        batch.json(),
        json!({"id": 1, "error": {"message": RUFF_NEVER_CHECKS_CONF}}),
        "{}",
        batch.story()
    );
    let mcp = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .arg("mcp")
        .stdin(concat!(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"diagnostics","arguments":{"file":"docs/conf.py"}}}"#,
            "\n",
        ))
        .run();
    let reply: Value = mcp
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|message| message["id"] == 1)
        .unwrap_or_else(|| mcp.fail("no reply to the tools/call"));
    assert_eq!(
        reply["result"],
        json!({"content": [{"type": "text", "text": RUFF_NEVER_CHECKS_CONF}], "isError": true}),
        "{}",
        mcp.story()
    );
}

/// What every diagnostics route says of `docs/conf.py` (in ruff's `extend-exclude`) when ruff
/// is its only server.
const RUFF_NEVER_CHECKS_CONF: &str = "conf.py not checked: ruff never checks it: it is in \
    ruff's exclude (the server does not lint an excluded file even when it is open)";

/// ruff's server reads the configuration above its workspace folder: with the root at `docs/`
/// (no `.git` above a named file), the `pyproject.toml` one level up still excludes
/// `docs/conf.py`. lspc stopped looking at the root and called the file clean.
#[test]
fn ruffs_exclude_above_the_workspace_root_still_counts() {
    require_program!("ruff");
    let workspace = Workspace::copy_of("python-project");
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    let run = workspace
        .lspc()
        .args(["--no-builtin", "--root", "docs", "--config"])
        .arg(&config)
        .args(["check", "--format", "json", "docs/conf.py"])
        .run();
    run.status(2);
    assert_eq!(
        file_states(&run.json()),
        [(
            "conf.py".to_owned(),
            "error".to_owned(),
            RUFF_NEVER_CHECKS_CONF.to_owned()
        )],
        "{}",
        run.story()
    );
}

/// The Python interpreter that has ruff installed as a module (`python3 -m ruff`), resolved past
/// any pyenv shim; `None` (the test skips) when there is none.
fn python_with_ruff() -> Option<std::path::PathBuf> {
    let output = Command::new("python3")
        .args(["-c", "import sys, ruff; print(sys.executable)"])
        .output()
        .ok()?;
    let python = std::path::PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    (output.status.success() && python.is_file()).then_some(python)
}

/// Reported for prog14: a configuration running ruff through a launcher (`python3 -m ruff
/// server`, as `uvx ruff server` or `pipx run ruff server` also do) was not known as ruff, so
/// lspc never read ruff's `exclude` and `lspc check gen.py` said clean (exit 0) for a file
/// ruff's server never lints. Now the launcher is seen through: the same verdict as with the
/// plain `ruff` command (ruff 0.17.6 from PyPI).
#[test]
fn ruff_run_through_python_m_keeps_its_exclude() {
    require_program!("ruff");
    let Some(python) = python_with_ruff() else {
        eprintln!("skipped: no python3 with the ruff module");
        return;
    };
    let workspace = Workspace::new("ruff-python-m");
    workspace
        .file("pyproject.toml", "[tool.ruff]\nexclude = [\"gen.py\"]\n")
        .file("gen.py", "import os\n");
    let reason = "gen.py not checked: ruff never checks it: it is in ruff's exclude (the server \
                  does not lint an excluded file even when it is open)";
    let mut wrapped = ruff_entry();
    wrapped["command"] = json!(python);
    wrapped["args"] = json!(["-m", "ruff", "server"]);
    for entry in [ruff_entry(), wrapped] {
        let config = workspace.config(json!({ "ruff": entry }));
        let run = json_check(&workspace, &config, &["gen.py"]);
        run.status(2);
        assert_eq!(
            file_states(&run.json()),
            [("gen.py".to_owned(), "error".to_owned(), reason.to_owned())],
            "{}",
            run.story()
        );
        run.stderr_contains("1 file in ruff's exclude not checked by that server");
    }
}

/// Found breaking 7f82a98/287398b (round brk11): four layouts where ruff's server answers
/// nothing for the open file while lspc, reading ruff's configuration its own way, called it
/// clean. `.ruff.toml` wins over `ruff.toml` in one folder (lspc read `ruff.toml`: `b/y.py`
/// clean, and ruff left out of `a/x.py`, which `ruff check .` lints); `lint.exclude` covers a
/// folder for the server; a `ruff.toml` inside a folder the parent configuration excludes is
/// never read; `extend = "~/…"` is under `$HOME`; `{out,dist2}` is globset alternation and `deep/*.py`'s `*` crosses `/`. Each excluded file has an unused import ruff
/// would report. Now each is skipped, in ruff's exclude, and `a/x.py` gets its F401.
#[test]
fn ruffs_server_and_lspc_read_the_same_exclusions() {
    require_program!("ruff");
    let workspace = Workspace::new("ruff-exclusions");
    workspace.file("ruff.toml", "extend-exclude = [\"a\"]\n");
    workspace.file(
        ".ruff.toml",
        "extend = \"~/base.toml\"\nextend-exclude = [\"b\", \"sub\", \"{out,dist2}\", \"deep/*.py\"]\n\
         [lint]\nexclude = [\"gen\"]\n",
    );
    workspace.file("home/base.toml", "extend-exclude = [\"from_home\"]\n");
    workspace.file("a/x.py", "import os\n");
    workspace.file("b/y.py", "import os\n");
    workspace.file("gen/z.py", "import os\n");
    workspace.file("sub/ruff.toml", "line-length = 100\n");
    workspace.file("sub/w.py", "import os\n");
    workspace.file("from_home/v.py", "import os\n");
    workspace.file("out/u.py", "import os\n");
    workspace.file("deep/er/t.py", "import os\n");
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    let run = workspace
        .lspc()
        .env("HOME", workspace.root.join("home"))
        .env("XDG_CONFIG_HOME", "")
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    let report = run.json();
    assert_eq!(
        ruff_rows(&report),
        [("a/x.py".to_owned(), 1, 8, "F401".to_owned())]
            .into_iter()
            .collect(),
        "{}",
        run.story()
    );
    let skipped: Vec<String> = file_states(&report)
        .into_iter()
        .filter(|(_, state, _)| state == "skipped")
        .map(|(path, _, _)| path)
        .collect();
    assert_eq!(
        skipped,
        [
            "b/y.py",
            "deep/er/t.py",
            "from_home/v.py",
            "gen/z.py",
            "out/u.py",
            "sub/w.py"
        ],
        "{}",
        run.story()
    );
}

/// Found trying lspc on google/btree (round nu11): `go vet ./...` is clean there, but
/// `lspc check .` exited 1. gopls type-checks any file it is given, and lspc gave it every
/// `.go` file: `btree_mem.go` (`// +build ignore`) became a package of its own whose import
/// did not resolve (an error), `btree.go` (`//go:build !go1.18`) got "No packages found for
/// open file" (a warning). Now the files the go command leaves out (build constraints, as
/// `go list` names them, and `testdata`, `vendor`, `_` and `.` names) are skipped, as tsconfig
/// and pyright projects leave files out. Real gopls and go from `golang-go`.
#[test]
fn go_module_checks_what_go_vet_checks() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("go-vet-file-set");
    workspace.file("go.mod", "module example.com/demo\n\ngo 1.19\n");
    workspace.file("main.go", "package demo\n\nfunc Main() int { return 1 }\n");
    workspace.file(
        "util.go",
        "package demo\n\nfunc bad() int { return \"no\" }\n",
    );
    workspace.file(
        "mem.go",
        "//go:build ignore\n\npackage main\n\nimport \"example.com/nowhere\"\n\nvar _ = nowhere.X\n",
    );
    workspace.file(
        "old.go",
        "//go:build !go1.18\n\npackage demo\n\nfunc Old() int { return 2 }\n",
    );
    workspace.file(
        "demo_windows.go",
        "package demo\n\nfunc Win() int { return 3 }\n",
    );
    // A folder whose every file is excluded is no package: `go list ./...` does not name it.
    workspace.file(
        "winonly/console_windows.go",
        "package winonly\n\nfunc f() int { return \"s\" }\n",
    );
    workspace.file(
        "testdata/broken.go",
        "package broken\n\nfunc f() int { return \"s\" }\n",
    );
    workspace.file(
        "_scratch/try.go",
        "package scratch\n\nfunc g() int { return \"s\" }\n",
    );
    let vet = Command::new("go")
        .args(["vet", "./..."])
        .current_dir(&workspace.root)
        .output()
        .expect("go vet runs");
    let vet_text = String::from_utf8_lossy(&vet.stderr);
    assert!(vet_text.contains("util.go:3:"), "go vet: {vet_text}");
    for left_out in ["mem.go", "old.go", "_windows.go", "broken.go", "try.go"] {
        assert!(!vet_text.contains(left_out), "go vet: {vet_text}");
    }
    let output = workspace
        .lspc()
        .args(["check", ".", "--format", "json", "--timeout", "60"])
        .timeout(std::time::Duration::from_secs(120))
        .run();
    output.status(1);
    let report = output.json();
    let constrained = "excluded by Go build constraints".to_owned();
    let not_matched = "outside `go vet ./...` (testdata, vendor, `_` or `.` names)".to_owned();
    assert_eq!(
        file_states(&report),
        [
            ("main.go".to_owned(), "clean".to_owned(), String::new()),
            (
                "util.go".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
            (
                "_scratch/try.go".to_owned(),
                "skipped".to_owned(),
                not_matched.clone()
            ),
            (
                "demo_windows.go".to_owned(),
                "skipped".to_owned(),
                constrained.clone()
            ),
            (
                "mem.go".to_owned(),
                "skipped".to_owned(),
                constrained.clone()
            ),
            (
                "old.go".to_owned(),
                "skipped".to_owned(),
                constrained.clone()
            ),
            (
                "testdata/broken.go".to_owned(),
                "skipped".to_owned(),
                not_matched
            ),
            (
                "winonly/console_windows.go".to_owned(),
                "skipped".to_owned(),
                constrained
            ),
        ],
        "{}",
        output.story()
    );
    assert_eq!(
        json_diagnostics(&report),
        ["util.go:3:25-3:29 error [compiler IncompatibleAssign] cannot use \"no\" (untyped string constant) as int value in return statement"],
        "{}",
        output.story()
    );
    // Named on the command line, a left-out file is still checked, as `go vet FILE` would.
    workspace
        .lspc()
        .args(["check", "mem.go", "--timeout", "60"])
        .timeout(std::time::Duration::from_secs(120))
        .run()
        .status(1)
        .stdout_contains("mem.go:5:8: error:");
}

/// ruff's `include` (and `extend-include`) decide which files `ruff check .` walks into: with
/// `include = ["src/**/*.py"]` and `extend-include = ["tools/*.pyi"]` it lints `src/pkg/a.py`
/// and `tools/y.pyi` only. lspc's walk had ruff lint every `.py`/`.pyi` file (four F401s where
/// ruff's CLI reports two). A file outside the include is one ruff's server still lints when it
/// is opened, so a named one is checked, as `ruff check scripts/x.py` lints it.
#[test]
fn a_walk_leaves_ruff_out_of_files_outside_its_include() {
    require_program!("ruff");
    let workspace = Workspace::new("ruff-include");
    workspace.file(
        "pyproject.toml",
        "[tool.ruff]\ninclude = [\"src/**/*.py\"]\nextend-include = [\"tools/*.pyi\"]\n",
    );
    for file in ["src/pkg/a.py", "src/b.pyi", "scripts/x.py", "tools/y.pyi"] {
        workspace.file(file, "import os\n");
    }
    let cli = tool_output(
        &workspace,
        "ruff",
        &["check", "--output-format", "json", "."],
    );
    let root = workspace.root.canonicalize().unwrap();
    let cli_rows: BTreeSet<(String, u64, u64, String)> = serde_json::from_str::<Value>(&cli)
        .expect("ruff check --output-format json")
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| {
            let file = std::path::Path::new(diagnostic["filename"].as_str().unwrap());
            (
                file.strip_prefix(&root).unwrap().display().to_string(),
                diagnostic["location"]["row"].as_u64().unwrap(),
                diagnostic["location"]["column"].as_u64().unwrap(),
                diagnostic["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, u64, u64, String)> = [
        ("src/pkg/a.py".to_owned(), 1, 8, "F401".to_owned()),
        ("tools/y.pyi".to_owned(), 1, 8, "F401".to_owned()),
    ]
    .into_iter()
    .collect();
    assert_eq!(cli_rows, expected, "{cli}");
    let config = workspace.config(json!({ "ruff": {
        "command": "ruff", "args": ["server"],
        "extensionToLanguage": {".py": "python", ".pyi": "python"}}}));
    let check = |extra: &[&str]| json_check(&workspace, &config, extra);
    // F401 fails `ruff check`, and so the check too.
    let walked = check(&[]);
    walked.status(1);
    assert_eq!(ruff_rows(&walked.json()), expected, "{}", walked.story());
    walked.stderr_contains("2 files outside ruff's include not checked");
    let named = check(&["scripts/x.py"]);
    named.status(1);
    assert_eq!(
        ruff_rows(&named.json()),
        [("scripts/x.py".to_owned(), 1, 8, "F401".to_owned())]
            .into_iter()
            .collect(),
        "{}",
        named.story()
    );
}

/// A `pyproject.toml` without pyright settings.
const PLAIN_PYPROJECT: &str = "[project]\nname = \"x\"\nversion = \"0\"\n";

/// [`PLAIN_PYPROJECT`] with pyright's `strict` mode.
fn strict_pyproject() -> String {
    format!("{PLAIN_PYPROJECT}\n[tool.pyright]\ntypeCheckingMode = \"strict\"\n")
}

/// A package whose `pkg/b.py` imports `pkg/a.py`'s `_priv` (reportPrivateUsage in `strict`),
/// with `pyproject`, and a `lspc batch` with pyright alone on it.
fn private_usage_batch(name: &str, pyproject: &str) -> (Workspace, BatchSession) {
    let workspace = Workspace::new(name);
    workspace
        .file("pyproject.toml", pyproject)
        .file("pkg/__init__.py", "")
        .file("pkg/a.py", "def _priv() -> int:\n    return 1\n")
        .file("pkg/b.py", "from pkg.a import _priv\n\nprint(_priv())\n");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let batch = BatchSession::start(&workspace, &config, 60);
    (workspace, batch)
}

/// pyright's reportPrivateUsage row for `pkg/b.py` of [`private_usage_batch`]'s workspace.
fn private_usage_row() -> (u64, u64, String, String, String) {
    (
        1,
        19,
        "error".to_owned(),
        "reportPrivateUsage".to_owned(),
        "\"_priv\" is private and used outside of the module in which it is declared".to_owned(),
    )
}

/// How many lines of `log` contain every one of `words`.
fn lines_with_all(log: &str, words: &[&str]) -> usize {
    log.lines()
        .filter(|line| words.iter().all(|word| line.contains(word)))
        .count()
}

/// A new user's trial: in a running `lspc batch` (as in a session or `lspc mcp`), an agent turns
/// on pyright's `strict` in `pyproject.toml` and asks for diagnostics at once. pyright applies a
/// changed configuration file late, so the pull right after `didChangeWatchedFiles` answered
/// with the old mode and lspc said clean where `pyright` reports reportPrivateUsage; turning it
/// off again left the error behind. lspc now restarts pyright's instance when its
/// configuration file changes (`Program::reloads_configuration_late`).
#[test]
fn a_changed_pyproject_is_applied_to_the_very_next_diagnostics() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let (workspace, mut batch) = private_usage_batch("pyproject-changed", PLAIN_PYPROJECT);
    let (plain, strict) = (PLAIN_PYPROJECT, strict_pyproject());
    let mut diagnostics = |id: u64| {
        batch_rows(&batch.ask(json!({"id": id, "op": "diagnostics", "file": "pkg/b.py"})))
    };
    assert_eq!(diagnostics(1), []);
    workspace.file("pyproject.toml", &strict);
    let private = private_usage_row();
    assert_eq!(diagnostics(2), std::slice::from_ref(&private));
    // pyright's own CLI on the same tree agrees.
    let cli = tool_output(&workspace, "pyright", &["pkg/b.py"]);
    assert!(
        cli.contains("b.py:1:19 - error: \"_priv\" is private and used outside of the module in which it is declared (reportPrivateUsage)"),
        "{cli}"
    );
    // Saved again unedited, once as an editor saves (a copy renamed over it) and once in
    // place, after a workspace scan has run since pyright's first diagnostics: pyright cannot
    // have read other bytes, so nothing restarts (issue 15: 0.8-2.4 s a save on psf/requests),
    // and the findings stay.
    std::thread::sleep(std::time::Duration::from_secs(3));
    workspace.file("pyproject.toml.tmp", &strict);
    std::fs::rename(
        workspace.path("pyproject.toml.tmp"),
        workspace.path("pyproject.toml"),
    )
    .unwrap();
    assert_eq!(diagnostics(3), std::slice::from_ref(&private));
    workspace.file("pyproject.toml", &strict);
    assert_eq!(diagnostics(4), std::slice::from_ref(&private));
    workspace.file("pyproject.toml", plain);
    assert_eq!(diagnostics(5), []);
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let count = |words: &[&str]| lines_with_all(&stderr, words);
    let restarts = count(&[
        "pyright: restarting: ",
        "pyproject.toml changed, and the server applies it late",
    ]);
    assert_eq!(restarts, 2, "strict on, then off: {stderr}");
    let skipped = count(&[
        "pyproject.toml was written again with the bytes it had, and no server read it since",
    ]);
    assert_eq!(skipped, 2, "{stderr}");
}

/// helper-69's trial (psf/requests): `pyproject.toml` written, a diagnostics request restarting
/// pyright for it, and another tool writing the file again while pyright starts (and reads it);
/// then the first text is written back. A session scan that compared the file's content with
/// what the previous scan hashed took that last write for no change, and pyright kept the text
/// it read during its start: `strict` where the file said basic, an error where `pyright`
/// reports none, for as long as the server ran. Whatever content comparison a scan does, the
/// configuration the server holds must be the file's.
#[test]
fn a_configuration_written_while_pyright_restarts_for_it_is_the_one_applied() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let (plain, strict) = (PLAIN_PYPROJECT, strict_pyproject());
    let (workspace, mut batch) = private_usage_batch("pyproject-restart-race", &strict);
    let mut ask = |id: u64| batch.ask(json!({"id": id, "op": "diagnostics", "file": "pkg/b.py"}));
    assert_eq!(batch_rows(&ask(1)).len(), 1, "strict: reportPrivateUsage");
    workspace.file("pyproject.toml", plain);
    assert_eq!(batch_rows(&ask(2)).len(), 0);
    workspace.file("pyproject.toml", &strict);
    let pyproject = workspace.path("pyproject.toml");
    let racer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(150));
        std::fs::write(&pyproject, plain).unwrap();
    });
    // Either mode; when the write lands while it waits, the request runs again on the pyright
    // restarted for it (it failed, `pyright: crashed (stopped because its configuration file
    // changed)`, 1 in 8 runs under load).
    let during = ask(3);
    assert!(during["result"]["diagnostics"].is_array(), "{during}");
    racer.join().unwrap();
    workspace.file("pyproject.toml", &strict);
    assert_eq!(
        batch_rows(&ask(4)).len(),
        1,
        "strict again: the file's mode, not the one read in between"
    );
    let cli = tool_output(&workspace, "pyright", &["pkg/b.py"]);
    assert!(cli.contains("(reportPrivateUsage)"), "{cli}");
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// A configuration change that restarts pyright while a diagnostics request waits for the file
/// (here for a second, slow server that publishes 5 s after the edit): the request is answered
/// by the new pyright, under the file's new configuration. Before, pyright had settled the file
/// under the old one, its findings were dropped with the old process, and the answer came
/// without them (clean for pyright, where `pyright` reports reportPrivateUsage); a request
/// still waiting for pyright itself failed with `pyright: crashed (stopped because its
/// configuration file changed)` (helper-69).
#[test]
fn diagnostics_in_flight_when_pyright_restarts_for_its_configuration_are_answered_by_the_new_one() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let workspace = Workspace::new("pyproject-restart-in-flight");
    let b = "from pkg.a import _priv\n\nprint(_priv())\n";
    workspace
        .file("pyproject.toml", PLAIN_PYPROJECT)
        .file("pkg/__init__.py", "")
        .file("pkg/a.py", "def _priv() -> int:\n    return 1\n")
        .file("pkg/b.py", b)
        .file("slow.json", &json!({ "publishDelayMs": 5000 }).to_string());
    let slow = json!({
        "command": fixture_bin(),
        "args": ["--scenario", workspace.path("slow.json")],
        "extensionToLanguage": {".py": "python"},
    });
    let config = workspace.config(json!({ "pyright": pyright_entry(), "slow": slow }));
    let mut batch = BatchSession::start(&workspace, &config, 60);
    let mut ask = |id: u64| batch.ask(json!({"id": id, "op": "diagnostics", "file": "pkg/b.py"}));
    assert_eq!(batch_rows(&ask(1)), []);
    // An edit (a new version the slow server publishes for 5 s later), and 1 s into the wait
    // `strict`, which a workspace scan finds within the wait (one runs every 2 s).
    workspace.file("pkg/b.py", &format!("{b}# edited\n"));
    let pyproject = workspace.path("pyproject.toml");
    let strict = strict_pyproject();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(1));
        std::fs::write(&pyproject, strict).unwrap();
    });
    let answer = ask(2);
    writer.join().unwrap();
    let private = private_usage_row();
    assert_eq!(batch_rows(&answer), [private], "{answer}");
    let cli = tool_output(&workspace, "pyright", &["pkg/b.py"]);
    assert!(cli.contains("(reportPrivateUsage)"), "{cli}");
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        lines_with_all(&stderr, &["pyright: started again at once"]),
        1,
        "{stderr}"
    );
}

/// `ruff.toml` edits reach a warm ruff, as `ruff check` sees them: one in a folder above the
/// workspace (ruff finds it by looking up; lspc's scan listed only the workspace, and ruff told
/// of it keeps its old rules, so it is restarted), and one in the workspace (no root marker of
/// ruff's, so it was never announced and ruff kept its old rule selection). helper-69, and a
/// check of both.
#[test]
fn ruff_toml_edits_in_the_workspace_and_above_it_reach_a_warm_ruff() {
    require_program!("ruff");
    let workspace = Workspace::new("ruff-toml-edits");
    workspace.file("m.py", "import os\n\n\ndef f(x):\n    return x\n");
    let above = workspace.root.parent().unwrap().join("ruff.toml");
    std::fs::write(&above, "lint.select = [\"F\"]\n").unwrap();
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    let mut batch = BatchSession::start(&workspace, &config, 60);
    let mut rows = |id: u64| {
        let answer = batch.ask(json!({"id": id, "op": "diagnostics", "file": "m.py"}));
        let rows: BTreeSet<(String, u64, u64, String)> = answer["result"]["diagnostics"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .map(|diagnostic| {
                (
                    diagnostic["path"].as_str().unwrap().to_owned(),
                    diagnostic["line"].as_u64().unwrap(),
                    diagnostic["column"].as_u64().unwrap(),
                    diagnostic["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        rows
    };
    let row =
        |line: u64, column: u64, code: &str| ("m.py".to_owned(), line, column, code.to_owned());
    let unused = row(1, 8, "F401");
    let annotations = [row(4, 5, "ANN201"), row(4, 7, "ANN001")];
    assert_eq!(rows(1), BTreeSet::from([unused.clone()]));
    std::fs::write(&above, "lint.select = [\"F\", \"ANN\"]\n").unwrap();
    let expected = BTreeSet::from([
        unused.clone(),
        annotations[0].clone(),
        annotations[1].clone(),
    ]);
    assert_eq!(ruff_cli_rows(&workspace), expected);
    assert_eq!(rows(2), expected);
    // A `ruff.toml` of the workspace's own now takes over, then is edited.
    workspace.file("ruff.toml", "lint.select = [\"ANN\"]\n");
    let expected = BTreeSet::from(annotations.clone());
    assert_eq!(ruff_cli_rows(&workspace), expected);
    assert_eq!(rows(3), expected);
    workspace.file("ruff.toml", "lint.select = [\"F\"]\n");
    assert_eq!(ruff_cli_rows(&workspace), BTreeSet::from([unused.clone()]));
    assert_eq!(rows(4), BTreeSet::from([unused]));
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        lines_with_all(
            &stderr,
            &["ruff: restarting: ", "above its workspace folder"]
        ),
        1,
        "{stderr}"
    );
}

/// A `pyrightconfig.json` that is a symlink to a shared file outside the workspace, under
/// another name (helper-69's trial on psf/requests): an edit of the shared file reaches the
/// warm pyright, as the `pyright` CLI sees it. The scan listed the file by its target only,
/// whose name and place are no configuration of pyright's, so pyright was never restarted and
/// lspc said clean where `pyright` reports reportPrivateUsage.
#[test]
fn a_symlinked_pyrightconfig_whose_shared_target_is_edited_is_applied() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let workspace = Workspace::new("pyrightconfig-symlinked");
    workspace
        .file("pkg/__init__.py", "")
        .file("pkg/a.py", "def _priv() -> int:\n    return 1\n")
        .file("pkg/b.py", "from pkg.a import _priv\n\nprint(_priv())\n");
    let shared = workspace
        .root
        .parent()
        .unwrap()
        .join("shared/pyright-base.json");
    std::fs::create_dir_all(shared.parent().unwrap()).unwrap();
    let (basic, strict) = (
        "{\"typeCheckingMode\": \"basic\"}\n",
        "{\"typeCheckingMode\": \"strict\"}\n",
    );
    std::fs::write(&shared, basic).unwrap();
    std::os::unix::fs::symlink(&shared, workspace.path("pyrightconfig.json")).unwrap();
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let mut batch = BatchSession::start(&workspace, &config, 60);
    let mut diagnostics = |id: u64| {
        batch_rows(&batch.ask(json!({"id": id, "op": "diagnostics", "file": "pkg/b.py"})))
    };
    assert_eq!(diagnostics(1), []);
    std::fs::write(&shared, strict).unwrap();
    let cli = tool_output(&workspace, "pyright", &["pkg/b.py"]);
    assert!(cli.contains("(reportPrivateUsage)"), "{cli}");
    let private = private_usage_row();
    assert_eq!(diagnostics(2), [private]);
    std::fs::write(&shared, basic).unwrap();
    assert_eq!(diagnostics(3), []);
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// A compilation flags file written again with the bytes it had (a build writing it anew) is
/// no reason to restart clangd when clangd cannot have read it since the previous workspace
/// scan; once clangd was sent a document since that scan (it looks its flags up again when it
/// rebuilds one), the same rewrite restarts it, since another writer may have put other flags
/// there in between (`engine/configuration_reads.rs`).
#[test]
fn a_compile_flags_file_written_again_unedited_restarts_clangd_only_if_it_may_have_read_it() {
    require_program!("clangd");
    let workspace = Workspace::new("clangd-flags-rewritten");
    let flags = "-xc\n-DBAD\n";
    let source = "#ifdef BAD\nint x = ;\n#endif\nint y;\n";
    workspace
        .file("compile_flags.txt", flags)
        .file("a.c", source);
    let config = workspace.config(json!({ "clangd": clangd_entry() }));
    let mut batch = BatchSession::start(&workspace, &config, 60);
    let mut diagnostics =
        |id: u64| batch_rows(&batch.ask(json!({"id": id, "op": "diagnostics", "file": "a.c"})));
    let expected = [(
        2,
        9,
        "error".to_owned(),
        "expected_expression".to_owned(),
        "Expected expression".to_owned(),
    )];
    assert_eq!(diagnostics(1), expected);
    // A workspace scan runs after clangd's first diagnostics; then the rewrite.
    std::thread::sleep(std::time::Duration::from_secs(3));
    workspace.file("compile_flags.txt", flags);
    assert_eq!(diagnostics(2), expected);
    // The document edited on disk: its request's scan runs, then clangd is sent the new text.
    workspace.file("a.c", &format!("{source}int z;\n"));
    assert_eq!(diagnostics(3), expected);
    workspace.file("compile_flags.txt", flags);
    assert_eq!(diagnostics(4), expected);
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let count = |words: &[&str]| lines_with_all(&stderr, words);
    let restarts = count(&["clangd: restarting: ", "compile_flags.txt changed"]);
    let skipped = count(&[
        "compile_flags.txt was written again",
        "no server read it since",
    ]);
    let counted = count(&["compile_flags.txt was written again", "taken as changed"]);
    assert_eq!((skipped, counted, restarts), (1, 1, 1), "{stderr}");
}

/// The same for typescript-language-server: tsserver re-reads a changed `tsconfig.json` on a
/// throttled watch of its own, so a check right after `noUnusedParameters` was turned on said
/// clean where `tsc` reports TS6133.
#[test]
fn a_changed_tsconfig_is_applied_to_the_very_next_diagnostics() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::new("tsconfig-changed");
    let loose = "{\n  \"compilerOptions\": { \"strict\": true, \"noEmit\": true }\n}\n";
    let unused = "{\n  \"compilerOptions\": { \"strict\": true, \"noEmit\": true, \"noUnusedParameters\": true }\n}\n";
    workspace.file("tsconfig.json", loose).file(
        "u.ts",
        "export function f(x: number): number {\n  return 1;\n}\n",
    );
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let mut batch = BatchSession::start(&workspace, &config, 60);
    let mut diagnostics =
        |id: u64| batch_rows(&batch.ask(json!({"id": id, "op": "diagnostics", "file": "u.ts"})));
    // Without the option tsserver still reports the unused parameter, as a hint (its
    // "unnecessary" suggestion), which tsc does not print.
    let unread = |severity: &str| {
        (
            1,
            19,
            severity.to_owned(),
            "6133".to_owned(),
            "'x' is declared but its value is never read.".to_owned(),
        )
    };
    assert_eq!(diagnostics(1), [unread("hint")]);
    workspace.file("tsconfig.json", unused);
    let expected = unread("error");
    assert_eq!(diagnostics(2), [expected]);
    let cli = tool_output(&workspace, "tsc", &["-p", "."]);
    assert!(
        cli.contains("u.ts(1,19): error TS6133: 'x' is declared but its value is never read."),
        "{cli}"
    );
    let (status, stderr) = batch.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// The eighteenth note's leftover, on psf/requests: `lspc diagnostics docs/conf.py` (in ruff's
/// `exclude`) gave pyright's answer alone, and nothing said ruff had not looked: an empty
/// answer read as both servers' "clean". Now each diagnostics route says which server never
/// checked the file, beside the others' findings (pyright and ruff 0.17.6).
#[test]
fn diagnostics_say_which_server_never_checked_an_excluded_file() {
    require_program!("ruff");
    require_program!("pyright-langserver");
    let workspace = Workspace::copy_of("python-project");
    let config = workspace.config(json!({ "pyright": pyright_entry(), "ruff": ruff_entry() }));
    let reason = "ruff never checks it: it is in ruff's exclude";
    let pyright_error = "docs/conf.py:3:16: error: Type \"Literal['shop']\" is not assignable to \
                         declared type \"int\" [Pyright reportAssignmentType]";
    let lspc = || {
        let mut command = workspace.lspc();
        command.args(["--no-builtin", "--config"]).arg(&config);
        command
    };
    lspc()
        .args(["diagnostics", "docs/conf.py"])
        .run()
        .status(1)
        .stdout_contains(pyright_error)
        .stderr_contains(&format!("lspc: not checked by every server: {reason}\n"));
    let batch = lspc()
        .arg("batch")
        .stdin("{\"id\":1,\"op\":\"diagnostics\",\"file\":\"docs/conf.py\"}\n")
        .run();
    batch.status(0);
    let line: Value = serde_json::from_str(batch.stdout.trim()).unwrap();
    assert_eq!(line["result"]["notCheckedBy"], reason, "{}", batch.story());
    assert_eq!(
        line["result"]["diagnostics"][0]["line"],
        3,
        "{}",
        batch.story()
    );
    // A file ruff does check has no such field.
    let checked = lspc()
        .args(["diagnostics", "--format", "json", "tests/test_cart.py"])
        .run();
    assert_eq!(
        checked.json().get("notCheckedBy"),
        None,
        "{}",
        checked.story()
    );
    let mcp = lspc()
        .arg("mcp")
        .stdin(mcp_stdin(&[(
            "tools/call",
            json!({"name": "diagnostics", "arguments": {"file": "docs/conf.py"}}),
        )]))
        .run();
    let answer = mcp.mcp_answer(2);
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{}", mcp.story());
    assert_eq!(
        result["structuredContent"]["files"][0]["notCheckedBy"],
        reason,
        "{}",
        mcp.story()
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(pyright_error)
            && text.ends_with(&format!("not checked by every server: {reason}")),
        "{text}"
    );
}

/// A new user's trial on encode/httpx: a `tests/setup.cfg` holding only flake8's settings made
/// `tests/` a project of its own, and its pyright, rooted there, could not import the package
/// beside it: `lspc check .` gave 108 errors (32 `Import "httpx" could not be resolved`) where
/// `pyright --outputjson` at the root gives 81, and missed 15 real ones. A sub-folder
/// `pyproject.toml` with only `[project]` did the same. pyright reads neither file, so neither
/// marks a pyright project now: only `pyrightconfig.json` and a `pyproject.toml` with a
/// `[tool.pyright]` table do (the monorepo fixture's services keep their own instances).
#[test]
fn folders_pyright_reads_no_configuration_from_are_no_pyright_projects() {
    require_program!("pyright-langserver");
    require_program!("pyright");
    let workspace = Workspace::new("pyright-plain-markers");
    workspace
        .file("pkg/__init__.py", "def answer() -> int:\n    return 42\n")
        .file("tests/setup.cfg", "[flake8]\nmax-line-length = 120\n")
        .file(
            "tests/test_answer.py",
            "import pkg\n\nvalue: str = pkg.answer()\n",
        )
        .file("tools/pyproject.toml", "[project]\nname = \"tools\"\n")
        .file(
            "tools/run.py",
            "from pkg import answer\n\ncount: bytes = answer()\n",
        )
        .file(
            "typed/pyproject.toml",
            "[tool.pyright]\ntypeCheckingMode = \"off\"\n",
        )
        .file(
            "typed/loose.py",
            "import pkg\n\nvalue: str = pkg.answer()\n",
        );
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(workspace.config(json!({"pyright": crate::support::pyright_entry()})))
        .arg(".")
        .run();
    output.status(1);
    let rows = server_rows(&output.json(), "pyright");
    let assigned = |file: &str, line: u64, declared: &str| {
        (
            file.to_owned(),
            line,
            // The column of the value after `name: type = `.
            if declared == "str" { 14 } else { 16 },
            "error".to_owned(),
            format!(
                "Type \"int\" is not assignable to declared type \"{declared}\"\n  \"int\" is not assignable to \"{declared}\""
            ),
        )
    };
    // `typed/` keeps its own instance and its own `typeCheckingMode = "off"`, rooted where
    // `pkg` is out of reach.
    let typed = (
        "typed/loose.py".to_owned(),
        1,
        8,
        "warning".to_owned(),
        "Import \"pkg\" could not be resolved".to_owned(),
    );
    assert_eq!(
        rows,
        BTreeSet::from([
            assigned("tests/test_answer.py", 3, "str"),
            assigned("tools/run.py", 3, "bytes"),
            typed.clone(),
        ]),
        "{}",
        output.story()
    );
    // pyright's CLI at the root (one project: it reads no sub-folder configuration) agrees on
    // the two folders without a pyright configuration.
    let cli: BTreeSet<_> = pyright_cli_rows(&workspace)
        .into_iter()
        .filter(|(path, ..)| !path.starts_with("typed/"))
        .collect();
    let mut without_typed = rows;
    without_typed.remove(&typed);
    assert_eq!(cli, without_typed);
    workspace
        .lspc()
        .args(["servers", "--no-builtin", "--config"])
        .arg(workspace.config(json!({"pyright": crate::support::pyright_entry()})))
        .run()
        .stdout_contains(
            "pyright: . typed (markers: pyrightconfig.json pyproject.toml:tool.pyright)",
        );
}
