//! gopls's two-phase diagnostics (`config/gopls.rs`): since gopls 0.6 a change gets its
//! type-check errors at once and its analyzers' findings `diagnosticsDelay` later (1 s by
//! default since 0.12), for the same version. lspc asks every gopls for one phase
//! (`diagnosticsDelay: "0s"`), keeps a delay the entry sets and waits it out. The fixture server
//! stands in for gopls with exact timings (it runs under the program name `gopls`); Debian's
//! gopls (packaged as 0.5.0, two phases with a 250 ms delay by default) shows the setting is
//! accepted and the analyzers' findings are reported.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::require_program;
use crate::support::*;

/// A fixture server that publishes as gopls does with a `diagnosticsDelay` of 1 s: at once an
/// empty set for the opened version (its type check found nothing), then 1 s later the
/// document's markers for the same version (its analyzers' findings).
fn two_phases() -> Value {
    json!({
        "capabilities": {"textDocumentSync": {"openClose": true, "change": 1}},
        "publishOnChange": false,
        "rules": [
            {"method": "textDocument/didOpen", "actions": [
                {"publish": {"diagnostics": []}},
                {"after": 1000, "actions": [{"publish": {"diagnostics": "markers"}}]}
            ]}
        ]
    })
}

/// The fixture's config in `workspace` with its command replaced by a link to it named `gopls`,
/// and `extra` merged into its entry; returns the config path.
fn as_gopls(workspace: &mut Workspace, scenario: Value, extra: Value) -> PathBuf {
    let config = workspace.fixture_config(&[("go", &[".go"], scenario)]);
    let link = config.with_file_name("gopls");
    std::os::unix::fs::symlink(fixture_bin(), &link).unwrap();
    let mut entries: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    let entry = entries["go"].as_object_mut().unwrap();
    entry.insert("command".to_owned(), json!(link));
    for (key, value) in extra.as_object().unwrap() {
        entry.insert(key.clone(), value.clone());
    }
    std::fs::write(&config, entries.to_string()).unwrap();
    config
}

/// The `settings` of every `workspace/didChangeConfiguration` lspc sent the server `name`.
fn configuration_sent(workspace: &Workspace, name: &str) -> Vec<Value> {
    workspace
        .transcript(name)
        .iter()
        .filter(|entry| entry["message"]["method"] == "workspace/didChangeConfiguration")
        .map(|entry| entry["message"]["params"]["settings"].clone())
        .collect()
}

/// `lspc servers` line of the `gopls` settle rule, with `config`.
fn servers_rule_line(workspace: &Workspace, config: &Path) -> String {
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(config)
        .arg("servers")
        .run();
    output.status(0);
    output
        .stdout
        .lines()
        .find(|line| line.starts_with("  go: "))
        .unwrap_or_else(|| panic!("no settle rule line for go: {}", output.story()))
        .to_owned()
}

/// A gopls entry with no delay of its own is sent `diagnosticsDelay: "0s"` next to its other
/// settings, and `lspc servers` says so.
#[test]
fn lspc_asks_gopls_for_one_phase_of_diagnostics() {
    let mut workspace = Workspace::new("gopls-one-phase");
    workspace.file("a.go", "package a\nERROR: found\n");
    let config = as_gopls(
        &mut workspace,
        json!({}),
        json!({"settings": {"gopls": {"buildFlags": ["-tags=x"]}}}),
    );
    let mut session = BatchSession::start(&workspace, &config, 10);
    let answer = session.ask(json!({"id": 1, "op": "diagnostics", "file": "a.go"}));
    assert_eq!(
        batch_diagnostics(&answer),
        [(2, 1, "error".to_owned(), "found".to_owned())],
        "{answer}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        configuration_sent(&workspace, "go"),
        [json!({"gopls": {"buildFlags": ["-tags=x"], "diagnosticsDelay": "0s"}})]
    );
    assert!(
        servers_rule_line(&workspace, &config).ends_with(
            "; its diagnosticsDelay is 0s (lspc sends that unless the entry sets a delay), so \
             each change gets one round of diagnostics, analyzers' findings included"
        ),
        "{}",
        servers_rule_line(&workspace, &config)
    );
}

/// A gopls entry that sets `diagnosticsDelay` itself (1 s, gopls's default) keeps it, and lspc
/// waits it out: the analyzers' finding published 1 s after the empty first round is reported,
/// not a clean file 250 ms after that round; the answer equals the one after a long wait.
#[test]
fn a_gopls_entrys_own_diagnostics_delay_is_waited_for() {
    let mut workspace = Workspace::new("gopls-two-phases");
    workspace.file("a.go", "package a\nERROR: printf finding\n");
    let config = as_gopls(
        &mut workspace,
        two_phases(),
        json!({"settings": {"gopls": {"diagnosticsDelay": "1s"}}}),
    );
    let mut session = BatchSession::start(&workspace, &config, 10);
    let expected = [(2, 1, "error".to_owned(), "printf finding".to_owned())];
    let fast = session.ask(json!({"id": 1, "op": "diagnostics", "file": "a.go"}));
    assert_eq!(fast["result"]["complete"], true, "{fast}");
    assert_eq!(batch_diagnostics(&fast), expected, "{fast}");
    std::thread::sleep(Duration::from_millis(2500));
    let later = session.ask(json!({"id": 2, "op": "diagnostics", "file": "a.go"}));
    assert_eq!(batch_diagnostics(&later), expected, "{later}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        configuration_sent(&workspace, "go"),
        [json!({"gopls": {"diagnosticsDelay": "1s"}})]
    );
    assert!(
        servers_rule_line(&workspace, &config).ends_with(
            "; its diagnosticsDelay (1000 ms) is added to the quiet period, since gopls \
             publishes its analyzers' findings that long after its first round"
        ),
        "{}",
        servers_rule_line(&workspace, &config)
    );
}

/// The same delay given in `initializationOptions` (which gopls reads as settings too) is kept:
/// lspc sends no settings of its own that would override it, and waits it out.
#[test]
fn a_diagnostics_delay_in_initialization_options_is_kept() {
    let mut workspace = Workspace::new("gopls-init-delay");
    workspace.file("a.go", "package a\nERROR: late finding\n");
    let config = as_gopls(
        &mut workspace,
        two_phases(),
        json!({"initializationOptions": {"diagnosticsDelay": "1s"}}),
    );
    let mut session = BatchSession::start(&workspace, &config, 10);
    let answer = session.ask(json!({"id": 1, "op": "diagnostics", "file": "a.go"}));
    assert_eq!(
        batch_diagnostics(&answer),
        [(2, 1, "error".to_owned(), "late finding".to_owned())],
        "{answer}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        configuration_sent(&workspace, "go").is_empty(),
        "{:?}",
        configuration_sent(&workspace, "go")
    );
}

/// Debian's gopls with the built-in entry: it accepts `diagnosticsDelay` without an
/// "Invalid settings" warning, and an analyzer's finding in a package opened after the first
/// is reported (`go vet` reports the same line).
#[test]
fn real_gopls_accepts_the_setting_and_reports_an_analyzers_finding() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-printf");
    workspace.file("go.mod", "module example.com/g\n\ngo 1.19\n");
    workspace.file(
        "main.go",
        "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/g/util\"\n)\n\n\
         func main() {\n\tfmt.Println(util.Greet(\"x\"))\n}\n",
    );
    workspace.file(
        "util/util.go",
        "package util\n\nimport \"fmt\"\n\nfunc Greet(name string) string {\n\
         \tfmt.Printf(\"%d\\n\", name)\n\treturn name\n}\n",
    );
    let mut session = BatchSession::start_with(&workspace, &["--timeout", "60"]);
    let first = session.ask(json!({"id": 1, "op": "diagnostics", "file": "main.go"}));
    assert_eq!(batch_diagnostics(&first), [], "{first}");
    let second = session.ask(json!({"id": 2, "op": "diagnostics", "file": "util/util.go"}));
    assert_eq!(second["result"]["complete"], true, "{second}");
    assert_eq!(
        batch_diagnostics(&second),
        [(
            6,
            2,
            "warning".to_owned(),
            "fmt.Printf format %d has arg name of wrong type string, see also \
             https://pkg.go.dev/fmt#hdr-Printing"
                .to_owned()
        )],
        "{second}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(!stderr.contains("Invalid settings"), "{stderr}");
}

/// An edit that adds a second analyzer finding, on Debian's gopls asked for one phase: the new
/// version's answer has both findings, and equals the answer after a long wait. (In two phases
/// this gopls keeps the previous analysis in its first round, so the edit never showed the bug
/// here; gopls 0.12 and later replace it with the type check alone, which the fixture tests
/// above reproduce.)
#[test]
fn real_gopls_edit_keeps_the_analyzers_findings() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-edit");
    workspace.file("go.mod", "module example.com/g\n\ngo 1.19\n");
    let body = |calls: &str| {
        format!(
            "package util\n\nimport \"fmt\"\n\nfunc Greet(name string) string {{\n{calls}\treturn name\n}}\n"
        )
    };
    workspace.file("util/util.go", &body("\tfmt.Printf(\"%d\\n\", name)\n"));
    let mut session = BatchSession::start_with(&workspace, &["--timeout", "60"]);
    let printf = |line: u64| {
        (
            line,
            2,
            "warning".to_owned(),
            "fmt.Printf format %d has arg name of wrong type string, see also \
             https://pkg.go.dev/fmt#hdr-Printing"
                .to_owned(),
        )
    };
    let ask = |session: &mut BatchSession, id: u32| {
        let answer = session.ask(json!({"id": id, "op": "diagnostics", "file": "util/util.go"}));
        assert_eq!(answer["result"]["complete"], true, "{answer}");
        batch_diagnostics(&answer)
    };
    assert_eq!(ask(&mut session, 1), [printf(6)]);
    workspace.file(
        "util/util.go",
        &body("\tfmt.Printf(\"%d\\n\", name)\n\tfmt.Printf(\"%d\\n\", name)\n"),
    );
    assert_eq!(ask(&mut session, 2), [printf(6), printf(7)]);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(ask(&mut session, 3), [printf(6), printf(7)]);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// A generated module of 150 packages (600 files, each package importing the one before),
/// with an analyzer's `printf` finding in `p0/f3.go` and `p100/f3.go` (`go vet ./...` reports
/// both). With gopls's two phases, lspc opening 50 files at a time kept gopls re-diagnosing.
/// Six runs of the previous lspc took 80–171 s: three timed files out (exit 3), two called
/// `p100/f3.go` clean, one was right. Asked for one phase: both findings, nothing timed out,
/// 15–38 s in five runs.
#[test]
fn real_gopls_reports_every_analyzer_finding_of_a_large_module() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-large");
    workspace.file("go.mod", "module example.com/big\n\ngo 1.19\n");
    let bad = "func Bad(name string) { fmt.Printf(\"%d\\n\", name) }\n";
    for package in 0..150 {
        for file in 0..4 {
            let mut text = format!("package p{package}\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n");
            if package > 0 && file == 0 {
                text += &format!("\t\"example.com/big/p{}\"\n", package - 1);
            }
            text += ")\n\n";
            for k in 0..40 {
                text += &format!(
                    "func F{file}_{k}(s string) string {{ return strings.ToUpper(fmt.Sprint(s, {k})) }}\n"
                );
            }
            if package > 0 && file == 0 {
                text += &format!(
                    "func Use() string {{ return p{}.F0_0(\"x\") }}\n",
                    package - 1
                );
            }
            if (package == 0 || package == 100) && file == 3 {
                text += bad;
            }
            workspace.file(&format!("p{package}/f{file}.go"), &text);
        }
    }
    let output = workspace
        .lspc()
        .env("GOPROXY", "off")
        .args(["check", "--format", "json", "--timeout", "120", "."])
        .timeout(Duration::from_secs(300))
        .run();
    // printf is one of `go vet`'s analyzers: its warnings fail the check, as `go vet` fails.
    output.status(1);
    let report = output.json();
    let printf = |file: &str| {
        format!(
            "{file}:48:25-48:49 warning [printf -] fmt.Printf format %d has arg name of wrong \
             type string, see also https://pkg.go.dev/fmt#hdr-Printing"
        )
    };
    assert_eq!(
        json_diagnostics(&report),
        [printf("p0/f3.go"), printf("p100/f3.go")],
        "{}",
        output.story()
    );
    assert_eq!(report["summary"]["files"], 600, "{}", output.story());
    assert_eq!(report["summary"]["timedOut"], 0, "{}", output.story());
}

/// A server with no completeness signal that publishes an unversioned set at once and then
/// computes for 2.5 s before its real set (gopls 0.5: its type-check set as on disk, then its
/// analyzers' findings for the opened version) is waited for while it computes
/// (`engine/server_cpu.rs`): the late finding is reported, where 1.5 s after the first set the
/// file was called clean. The answer equals the one after a long wait.
#[test]
fn a_server_computing_after_an_unversioned_set_is_waited_for() {
    let mut workspace = Workspace::new("gopls-computing");
    workspace.file("a.go", "package a\nERROR: printf finding\n");
    let config = as_gopls(
        &mut workspace,
        json!({
            "capabilities": {"textDocumentSync": {"openClose": true, "change": 1}},
            "publishOnChange": false,
            "rules": [
                {"method": "textDocument/didOpen", "actions": [
                    {"publish": {"version": "omit", "diagnostics": []}},
                    {"after": 0, "actions": [
                        {"busyMs": 2500},
                        {"publish": {"diagnostics": "markers"}}
                    ]}
                ]}
            ]
        }),
        json!({}),
    );
    let mut session = BatchSession::start(&workspace, &config, 20);
    let expected = [(2, 1, "error".to_owned(), "printf finding".to_owned())];
    let first = session.ask(json!({"id": 1, "op": "diagnostics", "file": "a.go"}));
    assert_eq!(first["result"]["complete"], true, "{first}");
    assert_eq!(batch_diagnostics(&first), expected, "{first}");
    std::thread::sleep(Duration::from_millis(1000));
    let later = session.ask(json!({"id": 2, "op": "diagnostics", "file": "a.go"}));
    assert_eq!(batch_diagnostics(&later), expected, "{later}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// Debian's gopls 0.5 on a package of 40 files (1.6 MB) with one `printf` finding: the
/// analyzers' set comes 2-5 s after an unversioned empty one, and `lspc check` of the file now
/// fails as `go vet` does (a new user's trial: clean, exit 0, in 7 runs of 7).
#[test]
fn real_gopls_analyzers_finding_in_a_large_package_is_not_called_clean() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-large-package");
    workspace.file("go.mod", "module example.com/big\n\ngo 1.19\n");
    for file in 0..40 {
        let mut text = String::from("package big\n\nimport \"fmt\"\n\nvar _ = fmt.Sprint\n");
        for function in 0..500 {
            text.push_str(&format!(
                "func F{file}_{function}(a int) int {{ if a > {function} {{ return a * {function} }}; return F{file}_{}(a+1) }}\n",
                function.max(1) - 1
            ));
        }
        if file == 0 {
            text.push_str("func Bad() string { fmt.Printf(\"%d\\n\", \"s\"); return \"\" }\n");
        }
        workspace.file(&format!("f{file:02}.go"), &text);
    }
    let output = workspace
        .lspc()
        .args(["--timeout", "60", "check", "f00.go", "--format", "json"])
        .run();
    let report: Value = serde_json::from_str(&output.stdout)
        .unwrap_or_else(|_| panic!("JSON report: {}", output.story()));
    let found: Vec<(u64, u64, String)> = report["files"][0]["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("diagnostics: {}", output.story()))
        .iter()
        .map(|diagnostic| {
            (
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["column"].as_u64().unwrap(),
                diagnostic["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(found.len(), 1, "{}", output.story());
    assert_eq!((found[0].0, found[0].1), (506, 21), "{}", output.story());
    assert!(
        found[0]
            .2
            .starts_with("fmt.Printf format %d has arg \"s\" of wrong type string"),
        "{}",
        output.story()
    );
    output.status(1);
}

/// A Go file below `testdata` (or a `_` or `.` folder) is one gopls 0.5 answers with an empty
/// set: named, it is not checked (exit 2, with the reason), where it was called clean; `go vet
/// ./broken.go` reports its syntax error. Walked with `--all-files`, it is skipped. A file whose
/// own name starts with `_` gets gopls's "No packages found": not checked either (`go vet`
/// says "no Go files").
#[test]
fn a_go_file_in_a_folder_the_go_command_ignores_is_not_called_clean() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-testdata");
    workspace.file("go.mod", "module example.com/td\n\ngo 1.19\n");
    workspace.file("td.go", "package td\n\nfunc A() int { return 1 }\n");
    workspace.file("testdata/broken.go", "package broken\n\nfunc B( {\n}\n");
    let named = workspace
        .lspc()
        .args(["check", "testdata/broken.go"])
        .timeout(Duration::from_secs(60))
        .run();
    named.status(2).stderr_contains(
        "1 file in a folder the go command ignores (testdata, `_` or `.` names) not checked by that server",
    );
    // Asked outside `lspc check` (a query, batch, MCP), the engine says so too (helper-41).
    workspace
        .lspc()
        .args(["diagnostics", "testdata/broken.go"])
        .timeout(Duration::from_secs(60))
        .run()
        .status(3)
        .stderr_contains(
            "broken.go not checked: gopls: the file is in a folder the go command ignores \
             (testdata, `_` or `.` names), which gopls does not check",
        );
    // A file whose own name starts with `_` is in no package: gopls says "No packages found".
    workspace.file(
        "_under.go",
        "package td

func W() int { return \"x\" }
",
    );
    workspace
        .lspc()
        .args(["check", "_under.go"])
        .timeout(Duration::from_secs(60))
        .run()
        .status(2)
        .stderr_contains(
            "_under.go: error: _under.go not checked: gopls: No packages found for open file",
        );
    std::fs::remove_file(workspace.path("_under.go")).unwrap();
    let walked = workspace
        .lspc()
        .args(["check", "--all-files", ".", "--format", "json"])
        .timeout(Duration::from_secs(60))
        .run();
    walked.status(0);
    let report: Value = serde_json::from_str(&walked.stdout)
        .unwrap_or_else(|_| panic!("JSON report: {}", walked.story()));
    assert_eq!(
        file_states(&report),
        [
            ("td.go".to_owned(), "clean".to_owned(), String::new()),
            (
                "testdata/broken.go".to_owned(),
                "skipped".to_owned(),
                "every server for broken.go is left out of it by its project configuration"
                    .to_owned()
            ),
        ],
        "{}",
        walked.story()
    );
}

/// After another tool changes a Go file, every other open file of the package is analysed
/// against the old one, and gopls is sent each again. A new user's agent on google/uuid asked
/// 23 open files one by one and paid gopls's publish and lspc's quiet period per file (0.8 s
/// each, 17.7 s in all); now the first file's wait sends all of them, and the answers after it
/// are the same as the first: here, each importer of the changed function gets gopls's own
/// type error (`go build` names the same three lines).
#[test]
fn real_gopls_files_asked_one_by_one_after_an_outside_edit_get_their_new_errors() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-outside-edit");
    workspace.file("go.mod", "module example.com/g\n\ngo 1.19\n");
    let define = |kind: &str| format!("package g\n\nfunc F() {kind} {{\n\treturn 1\n}}\n");
    workspace.file("a.go", &define("int"));
    for name in ["b", "c", "d"] {
        workspace.file(
            &format!("{name}.go"),
            &format!(
                "package g\n\nfunc {}() int {{\n\treturn F() + 1\n}}\n",
                name.to_uppercase()
            ),
        );
    }
    let mut session = BatchSession::start_with(&workspace, &["--timeout", "60"]);
    let mut id = 0;
    let mut ask = |session: &mut BatchSession, file: &str| {
        id += 1;
        let answer = session.ask(json!({"id": id, "op": "diagnostics", "file": file}));
        assert_eq!(answer["result"]["complete"], true, "{answer}");
        batch_diagnostics(&answer)
    };
    for file in ["a.go", "b.go", "c.go", "d.go"] {
        assert_eq!(ask(&mut session, file), [], "{file} before the edit");
    }
    workspace.file("a.go", &define("string"));
    let mismatched = (
        4,
        9,
        "error".to_owned(),
        "invalid operation: F() + 1 (mismatched types string and untyped int)".to_owned(),
    );
    let returned = (
        4,
        9,
        "error".to_owned(),
        "cannot use 1 (untyped int constant) as string value in return statement".to_owned(),
    );
    for file in ["b.go", "c.go", "d.go"] {
        assert_eq!(
            ask(&mut session, file),
            std::slice::from_ref(&mismatched),
            "{file}"
        );
    }
    assert_eq!(ask(&mut session, "a.go"), [returned]);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}
