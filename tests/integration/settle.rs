//! Per-server settle rules (issue 15): for each rule, the fast path is taken (the debug log names
//! the rule that settled each file) and the answer equals the one given after a long wait, on the
//! real server and on the fixture server with artificial delays between publishes. A premature
//! "clean" is the failure these tests exist to catch.

use std::time::Duration;

use serde_json::{json, Value};

use crate::require_program;
use crate::support::*;

/// How long "a long wait" is: well past every quiet period (250 ms, 750 ms after a save, 1.5 s
/// unversioned) so that any later publish would have arrived and changed the answer.
const LONG_WAIT: Duration = Duration::from_millis(2500);

fn diagnostics(id: u32, file: &str) -> Value {
    json!({"id": id, "op": "diagnostics", "file": file})
}

/// The answer's rows, after checking that it is complete.
fn complete_rows(answer: &Value) -> Vec<(u64, u64, String, String)> {
    assert_eq!(answer["result"]["complete"], true, "{answer}");
    batch_diagnostics(answer)
}

fn row(line: u64, column: u64, severity: &str, message: &str) -> (u64, u64, String, String) {
    (line, column, severity.to_owned(), message.to_owned())
}

/// clangd 14.0.6, rule `versioned-publish`: each version's one publish settles the file at once,
/// at open, after an edit that adds an include whose header has an error (a new preamble), after
/// an edit of the body only, and after an edit that removes the include; every answer equals
/// the one after a long wait.
#[test]
fn clangd_versioned_publish_settles_at_once_and_matches_a_long_wait() {
    require_program!("clangd");
    let workspace = Workspace::copy_of("c");
    workspace.file("bad.h", "unknown_type_t bad_global;\n");
    let config = workspace.config(json!({ "clangd": clangd_entry() }));
    let mut session = BatchSession::start(&workspace, &config, 30);
    let oops = row(2, 37, "error", "Use of undeclared identifier 'oops'");
    let in_header = row(
        2,
        10,
        "error",
        "In included file: unknown type name 'unknown_type_t'",
    );
    let versions: [(&str, Vec<_>); 4] = [
        (
            "#include \"util.h\"\nint main(void) { return twice(21) + oops; }\n",
            vec![oops.clone()],
        ),
        (
            "#include \"util.h\"\n#include \"bad.h\"\nint main(void) { return twice(21) + oops; }\n",
            vec![in_header.clone(), row(3, 37, "error", "Use of undeclared identifier 'oops'")],
        ),
        (
            "#include \"util.h\"\n#include \"bad.h\"\nint main(void) { return twice(21); }\n",
            vec![in_header],
        ),
        (
            "#include \"util.h\"\nint main(void) { return twice(21) + oops; }\n",
            vec![oops],
        ),
    ];
    let mut id = 0;
    for (text, expected) in &versions {
        workspace.file("main.c", text);
        id += 1;
        let fast = session.ask(diagnostics(id, "main.c"));
        assert_eq!(&complete_rows(&fast), expected, "{text}");
        std::thread::sleep(LONG_WAIT);
        id += 1;
        let later = session.ask(diagnostics(id, "main.c"));
        assert_eq!(
            &complete_rows(&later),
            expected,
            "after a long wait: {text}"
        );
    }
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    for version in 1..=4 {
        let line = format!("main.c v{version} settled by rule versioned-publish");
        assert!(stderr.contains(&line), "no {line:?} in {stderr}");
    }
}

/// pyright 1.1.414, rule `pull`: the file settles by its pull answer, which equals the one after
/// a long wait (and `lspc check`'s exact set for the file).
#[test]
fn pyright_pull_settles_by_its_answer_and_matches_a_long_wait() {
    require_program!("pyright-langserver");
    let workspace = Workspace::copy_of("python");
    let config = workspace.config(json!({ "pyright": pyright_entry() }));
    let mut session = BatchSession::start(&workspace, &config, 60);
    let file = "inventory/report.py";
    let fast = complete_rows(&session.ask(diagnostics(1, file)));
    let messages: Vec<&str> = fast.iter().map(|row| row.3.as_str()).collect();
    assert_eq!(fast.len(), 5, "{fast:?}");
    assert!(
        messages.contains(&"\"missing_footer\" is not defined"),
        "{fast:?}"
    );
    std::thread::sleep(LONG_WAIT);
    let later = complete_rows(&session.ask(diagnostics(2, file)));
    assert_eq!(later, fast);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("report.py v1 settled by rule pull"),
        "{stderr}"
    );
}

/// A fixture server that reports background `$/progress` work that never ends (as clangd's
/// indexer may) and publishes late: 200 ms after the open, and after a change first a stale
/// publish for version 1 at +50 ms, then the current version at +700 ms. `server_name` is its
/// `serverInfo.name`, which picks the rule.
fn delayed_publishes(server_name: &str) -> Value {
    json!({
        "initializeResultExtra": {"serverInfo": {"name": server_name}},
        "capabilities": {"textDocumentSync": {"openClose": true, "change": 1}},
        "publishOnChange": false,
        "rules": [
            {"method": "textDocument/didOpen", "actions": [
                {"notify": {"method": "$/progress", "params": {"token": "index", "value": {"kind": "begin", "title": "indexing"}}}},
                {"after": 200, "actions": [{"publish": {"diagnostics": "markers"}}]}
            ]},
            {"method": "textDocument/didChange", "actions": [
                {"after": 50, "actions": [{"publish": {"version": 1, "diagnostics": [
                    {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                     "severity": 1, "source": "fixture", "message": "stale"}
                ]}}]},
                {"after": 700, "actions": [{"publish": {"diagnostics": "markers"}}]}
            ]}
        ]
    })
}

fn fixture_session(
    name: &str,
    scenario: Value,
    text: &str,
    timeout: u32,
) -> (Workspace, BatchSession) {
    let mut workspace = Workspace::new(name);
    workspace.file("a.py", text);
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let session = BatchSession::start(&workspace, &config, timeout);
    (workspace, session)
}

/// Rule `versioned-publish` (picked by `serverInfo.name` "clangd") with delays between publishes:
/// the publish for the sent version settles at once although progress never ends, and neither
/// the stale version-1 publish after the change nor the silence before the late one is taken
/// for the answer.
#[test]
fn versioned_publish_rule_waits_for_the_sent_version_through_delays() {
    let (workspace, mut session) = fixture_session(
        "settle-vp",
        delayed_publishes("clangd"),
        "ERROR: first\n",
        10,
    );
    let first = complete_rows(&session.ask(diagnostics(1, "a.py")));
    assert_eq!(first, [row(1, 1, "error", "first")]);
    workspace.file("a.py", "x = 1\nERROR: second\n");
    let second = complete_rows(&session.ask(diagnostics(2, "a.py")));
    assert_eq!(second, [row(2, 1, "error", "second")]);
    std::thread::sleep(LONG_WAIT);
    let later = complete_rows(&session.ask(diagnostics(3, "a.py")));
    assert_eq!(later, second);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("a.py v1 settled by rule versioned-publish"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a.py v2 settled by rule versioned-publish"),
        "{stderr}"
    );
}

/// Rule `versioned-publish`: an unversioned publish after the open (clangd's clear for the same
/// file closed just before, which arrives late when clangd is busy) is not the sent version's
/// publish. Its empty set was taken as fresh and settled the file clean after the quiet period
/// (a new user's warm session on DaveGamble/cJSON after the open-document bound closed and
/// reopened files: up to 15 files with errors called clean); the late versioned publish is the
/// answer, and equals the one after a long wait.
#[test]
fn versioned_publish_rule_ignores_an_unversioned_clear_after_the_open() {
    let scenario = json!({
        "initializeResultExtra": {"serverInfo": {"name": "clangd"}},
        "capabilities": {"textDocumentSync": {"openClose": true, "change": 1}},
        "publishOnChange": false,
        "rules": [
            {"method": "textDocument/didOpen", "actions": [
                {"publish": {"version": "omit", "diagnostics": []}},
                {"after": 4000, "actions": [{"publish": {"diagnostics": "markers"}}]}
            ]}
        ]
    });
    let (_workspace, mut session) =
        fixture_session("settle-vp-clear", scenario, "ERROR: late\n", 20);
    let first = complete_rows(&session.ask(diagnostics(1, "a.py")));
    assert_eq!(first, [row(1, 1, "error", "late")]);
    std::thread::sleep(LONG_WAIT);
    let later = complete_rows(&session.ask(diagnostics(2, "a.py")));
    assert_eq!(later, first);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// Rule `versioned-publish`, clangd's `fe_pch_file_overridden`: a publish whose analysis reused a
/// preamble built before the open text of a header it includes changed ("File 'lib.h' from the
/// precompiled header has been overridden") is not the version's final answer, and clangd 14
/// publishes nothing more for that version. It came and went with timing after a rename that
/// changed a header and its callers (CI, 1 run in 3 under load), and was taken as the file's
/// settled diagnostics. lspc now sends the file again as a new version, closed and opened (clangd
/// builds an opened file's preamble afresh), and reports that version's publish.
#[test]
fn versioned_publish_rule_sends_again_a_file_whose_preamble_was_stale() {
    let scenario = json!({
        "initializeResultExtra": {"serverInfo": {"name": "clangd"}},
        "capabilities": {"textDocumentSync": {"openClose": true, "change": 1}},
        "publishOnChange": false,
        "rules": [
            {"method": "textDocument/didOpen", "nth": 1, "actions": [
                {"publish": {"diagnostics": [
                    {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                     "severity": 1, "code": "fe_pch_file_overridden", "source": "clang",
                     "message": "File 'lib.h' from the precompiled header has been overridden"}
                ]}}
            ]},
            {"method": "textDocument/didOpen", "actions": [{"publish": {"diagnostics": "markers"}}]}
        ]
    });
    let (workspace, mut session) =
        fixture_session("settle-vp-stale-preamble", scenario, "ERROR: real\n", 10);
    let first = complete_rows(&session.ask(diagnostics(1, "a.py")));
    assert_eq!(first, [row(1, 1, "error", "real")]);
    std::thread::sleep(LONG_WAIT);
    let later = complete_rows(&session.ask(diagnostics(2, "a.py")));
    assert_eq!(later, first);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("(fe_pch_file_overridden): sent again as a new version"),
        "{stderr}"
    );
    let opens: Vec<Value> = workspace
        .transcript("fx")
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/didOpen")
        .map(|entry| entry["message"]["params"]["textDocument"]["version"].clone())
        .collect();
    assert_eq!(opens, [json!(1), json!(2)]);
}

/// The same server under another name gets rule `quiet-after-publish`: its never-ending progress
/// holds the wait, so the file is reported incomplete at the timeout, never clean.
#[test]
fn quiet_rule_holds_while_progress_never_ends() {
    let (_workspace, mut session) = fixture_session(
        "settle-quiet",
        delayed_publishes("lspc-fixture"),
        "ERROR: first\n",
        1,
    );
    let answer = session.ask(diagnostics(1, "a.py"));
    assert_eq!(answer["result"]["complete"], false, "{answer}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// Rule `pull`: an answer given while the server reports `$/progress` work (here an empty set
/// while "loading the project") is not final; lspc asks again once the work ends and reports the
/// real set.
#[test]
fn pull_answer_during_progress_is_asked_again_after_it_ends() {
    let scenario = json!({
        "capabilities": {"textDocumentSync": 1, "diagnosticProvider": {"interFileDependencies": false, "workspaceDiagnostics": false}},
        "rules": [
            {"method": "textDocument/didOpen", "actions": [
                {"notify": {"method": "$/progress", "params": {"token": "load", "value": {"kind": "begin", "title": "loading project"}}}},
                {"after": 800, "actions": [
                    {"notify": {"method": "$/progress", "params": {"token": "load", "value": {"kind": "end"}}}}
                ]}
            ]},
            {"method": "textDocument/diagnostic", "nth": 1, "actions": [{"reply": {"kind": "full", "items": []}}]}
        ]
    });
    let (workspace, mut session) = fixture_session("settle-pull", scenario, "ERROR: real\n", 10);
    let answer = complete_rows(&session.ask(diagnostics(1, "a.py")));
    assert_eq!(answer, [row(1, 1, "error", "real")]);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("during $/progress work"), "{stderr}");
    let pulls = workspace
        .transcript("fx")
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/diagnostic")
        .count();
    assert_eq!(pulls, 2);
}

/// Issue 15, one loop round trip per query: a repeated hover is synced, converted and sent in one
/// loop turn, and its position comes from the text the server was just sent: after the file
/// gains an emoji on disk, character 4 is UTF-16 unit 4 of the new line (the old text would give
/// 3).
#[test]
fn repeated_hover_is_sent_with_its_sync_and_converted_from_the_new_text() {
    let (workspace, mut session) = fixture_session("one-trip", json!({}), "total = 1\n", 10);
    let hover = |id: u32, column: u32| json!({"id": id, "op": "hover", "file": "a.py", "line": 1, "column": column});
    let first = session.ask(hover(1, 1));
    assert_eq!(first["result"]["text"], "total at 0:0", "{first}");
    workspace.file("a.py", "😀; total = 1\n");
    let second = session.ask(hover(2, 4));
    assert_eq!(second["result"]["text"], "total at 0:4", "{second}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("textDocument/hover sent in its sync's loop turn")
            .count(),
        1,
        "only the repeated hover takes the one-turn path: {stderr}"
    );
}

/// The capabilities of a pull-only fixture server.
fn pull_capabilities() -> Value {
    json!({"textDocumentSync": 1, "diagnosticProvider": {"interFileDependencies": false, "workspaceDiagnostics": false}})
}

/// `workspace/diagnostic/refresh` (LSP 3.17): the server sends the refresh, then answers the pull
/// it was asked before it with an empty set (rust-analyzer while loading). That answer is out of
/// date: lspc drops it, pulls again and reports the real set.
#[test]
fn pull_answer_asked_before_a_refresh_is_replaced_by_the_next_pull() {
    let scenario = json!({
        "capabilities": pull_capabilities(),
        "rules": [
            {"method": "textDocument/diagnostic", "nth": 1, "actions": [
                {"request": {"method": "workspace/diagnostic/refresh", "id": "refresh-1", "params": null}},
                {"sleepMs": 100},
                {"reply": {"kind": "full", "items": []}}
            ]}
        ]
    });
    let (workspace, mut session) = fixture_session("settle-refresh", scenario, "ERROR: real\n", 10);
    let answer = complete_rows(&session.ask(diagnostics(1, "a.py")));
    assert_eq!(answer, [row(1, 1, "error", "real")]);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("dropping the pull answer for"), "{stderr}");
    let transcript = workspace.transcript("fx");
    let pulls = transcript
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/diagnostic")
        .count();
    assert_eq!(pulls, 2);
    // lspc answered the refresh request.
    assert!(
        transcript
            .iter()
            .any(|entry| entry["message"]["id"] == "refresh-1"
                && entry["message"]["result"].is_null()
                && entry["message"].get("error").is_none()),
        "{transcript:?}"
    );
}

/// rust-analyzer's `experimental/serverStatus`: lspc advertises it, and a pull answered
/// while the server said `quiescent: false` (an empty set while "loading the workspace") is not
/// final: once it says `quiescent: true` the file is asked again and the real set is reported.
#[test]
fn pull_answer_while_not_quiescent_is_asked_again_once_quiescent() {
    let status = |quiescent: bool| json!({"notify": {"method": "experimental/serverStatus", "params": {"health": "ok", "quiescent": quiescent}}});
    let scenario = json!({
        "capabilities": pull_capabilities(),
        "afterInitialized": [status(false)],
        "rules": [
            {"method": "textDocument/diagnostic", "nth": 1, "actions": [
                {"reply": {"kind": "full", "items": []}},
                {"after": 600, "actions": [status(true)]}
            ]}
        ]
    });
    let (workspace, mut session) =
        fixture_session("settle-quiescent", scenario, "ERROR: real\n", 10);
    let answer = complete_rows(&session.ask(diagnostics(1, "a.py")));
    assert_eq!(answer, [row(1, 1, "error", "real")]);
    let (status_code, stderr) = session.finish();
    assert_eq!(status_code, Some(0), "{stderr}");
    assert!(stderr.contains("during $/progress work"), "{stderr}");
    let transcript = workspace.transcript("fx");
    let initialize = transcript
        .iter()
        .find(|entry| entry["message"]["method"] == "initialize")
        .expect("initialize in the transcript");
    assert_eq!(
        initialize["message"]["params"]["capabilities"]["experimental"]["serverStatusNotification"],
        true
    );
    let pulls = transcript
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/diagnostic")
        .count();
    assert_eq!(pulls, 2);
}

/// bash-language-server 5.8.1 lints only the last of the scripts opened before it has its
/// `workspace/configuration` answer (issue 15's P1: `lspc check` timed out on cJSON's
/// `fuzzing/*.sh`). lspc holds the opens until that request is answered: `lspc check` on six
/// scripts opened together reports every one, each exactly as shellcheck itself does (same
/// arguments as the server: `--external-sources --source-path=SCRIPTDIR`), with no file timed out.
#[test]
fn bash_language_server_lints_every_script_opened_at_start() {
    require_program!("bash-language-server");
    require_program!("shellcheck");
    let workspace = Workspace::new("bash-many");
    let scripts = [
        ("a.sh", "#!/bin/bash\necho $A\n"),
        ("b.sh", "#!/bin/bash\ncd /tmp\n"),
        ("c.sh", "#!/bin/bash\nls `pwd`\n"),
        (
            "d.sh",
            "#!/bin/bash\nfor f in $(ls); do echo \"$f\"; done\n",
        ),
        ("e.sh", "#!/bin/bash\nread line\necho \"$line\"\n"),
        ("f.sh", "#!/bin/bash\n[ $1 == x ] && echo yes\n"),
    ];
    for (name, text) in scripts {
        workspace.file(name, text);
    }
    let names: Vec<&str> = scripts.iter().map(|(name, _)| *name).collect();
    let output = workspace
        .lspc()
        .args([
            "check",
            "--format",
            "json",
            "--severity",
            "hint",
            "--timeout",
            "20",
        ])
        .args(&names)
        .timeout(Duration::from_secs(60))
        .run();
    let report = output.json();
    let lspc_rows = json_diagnostics(&report);
    let shellcheck = TestCommand::new("shellcheck")
        .current_dir(&workspace.root)
        .args([
            "--external-sources",
            "--source-path=SCRIPTDIR",
            "-f",
            "json1",
        ])
        .args(&names)
        .run();
    let comments: Value = serde_json::from_str(&shellcheck.stdout).expect("shellcheck json1");
    let severity = |level: &str| match level {
        "error" => "error",
        "warning" => "warning",
        "info" => "info",
        _ => "hint",
    };
    let mut expected: Vec<String> = comments["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|comment| {
            format!(
                "{}:{}:{}-{}:{} {} [shellcheck SC{}] {}",
                comment["file"].as_str().unwrap(),
                comment["line"],
                comment["column"],
                comment["endLine"],
                comment["endColumn"],
                severity(comment["level"].as_str().unwrap()),
                comment["code"],
                comment["message"].as_str().unwrap()
            )
        })
        .collect();
    let mut got = lspc_rows.clone();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "{}", output.story());
    let files_with_findings: std::collections::BTreeSet<&str> = got
        .iter()
        .map(|row| row.split(':').next().unwrap())
        .collect();
    assert_eq!(files_with_findings.len(), 6, "{got:?}");
    assert_eq!(report["summary"]["timedOut"], 0, "{}", output.story());
}

/// The time (`t_ms`) of the first transcript entry `matches` selects.
fn first_at(transcript: &[Value], matches: impl Fn(&Value) -> bool) -> Option<u64> {
    transcript
        .iter()
        .find(|entry| matches(&entry["message"]))
        .and_then(|entry| entry["t_ms"].as_u64())
}

/// The configuration hold with delays, on a fixture server named "bash-language-server" by its
/// `serverInfo.name`: it asks for `workspace/configuration` 400 ms after `initialized`, and no
/// `didOpen` reaches it before lspc's answer; a server of that name that never asks gets its
/// documents once the 2 s bound passes, and a server under another name is not held at all.
#[test]
fn configuration_hold_keeps_opens_until_the_first_configuration_answer() {
    let asks_late = json!({
        "initializeResultExtra": {"serverInfo": {"name": "bash-language-server"}},
        "afterInitialized": [{"after": 400, "actions": [{"request": {
            "method": "workspace/configuration", "id": "cfg-late",
            "params": {"items": [{"section": "bashIde"}]}}}]}]
    });
    let never_asks =
        json!({"initializeResultExtra": {"serverInfo": {"name": "bash-language-server"}}});
    let other_name = json!({"initializeResultExtra": {"serverInfo": {"name": "lspc-fixture"}}});
    let mut gaps = Vec::new();
    for (name, scenario) in [
        ("asks", asks_late),
        ("never", never_asks),
        ("other", other_name),
    ] {
        let (workspace, mut session) =
            fixture_session(&format!("hold-{name}"), scenario, "ERROR: real\n", 10);
        let answer = complete_rows(&session.ask(diagnostics(1, "a.py")));
        assert_eq!(answer, [row(1, 1, "error", "real")], "{name}");
        let (status, stderr) = session.finish();
        assert_eq!(status, Some(0), "{stderr}");
        let transcript = workspace.transcript("fx");
        let initialized = first_at(&transcript, |m| m["method"] == "initialized").unwrap();
        let opened = first_at(&transcript, |m| m["method"] == "textDocument/didOpen").unwrap();
        if name == "asks" {
            let answered = first_at(&transcript, |m| m["id"] == "cfg-late").unwrap();
            let order = |wanted: &dyn Fn(&Value) -> bool| {
                transcript
                    .iter()
                    .position(|e| wanted(&e["message"]))
                    .unwrap()
            };
            assert!(
                order(&|m| m["id"] == "cfg-late")
                    < order(&|m| m["method"] == "textDocument/didOpen"),
                "{transcript:?}"
            );
            assert!(answered >= initialized + 400, "{transcript:?}");
            assert!(opened >= answered, "{transcript:?}");
        }
        gaps.push(opened - initialized);
    }
    assert!(
        gaps[1] >= 1900,
        "never asks: opened {} ms after initialized",
        gaps[1]
    );
    assert!(
        gaps[2] < 1000,
        "not held: opened {} ms after initialized",
        gaps[2]
    );
}

/// A pull server that also publishes a check pass for the same file, modelled on rust-analyzer
/// (native diagnostics pulled; `cargo check`'s pushed with the version, under `$/progress`
/// "rust-analyzer/flycheck/0", at start-up and on save), with delays: the pull answers at once
/// with the markers; the check pass begins its progress at the open and at each save, publishes
/// 300 ms (open) or 400 ms (save) later, then ends its progress. Rule `pull-and-publish` keeps
/// both sets and reports their union: the answer holds the pushed set although the pull
/// answered first, a save's pushed set replaces the old one (not the pulled set), and every
/// answer equals the one after a long wait. Under another name the rule is learned from the
/// first publish. Before, the later of the two replaced the other.
#[test]
fn pull_and_publish_reports_the_union_and_waits_for_the_check_pass() {
    let check_pass = |delay: u64, message: &str| {
        let progress = |kind: &str| json!({"notify": {"method": "$/progress", "params": {"token": "rust-analyzer/flycheck/0", "value": {"kind": kind, "title": "cargo check"}}}});
        json!([progress("begin"), {"after": delay, "actions": [
            {"publish": {"version": "$VERSION", "diagnostics": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2}},
                 "severity": 2, "source": "check", "message": message}]}},
            progress("end")
        ]}])
    };
    for server_name in ["rust-analyzer", "lspc-fixture"] {
        let scenario = json!({
            "initializeResultExtra": {"serverInfo": {"name": server_name}},
            "capabilities": {
                "textDocumentSync": {"openClose": true, "change": 1, "save": {"includeText": false}},
                "diagnosticProvider": {"interFileDependencies": false, "workspaceDiagnostics": false}
            },
            "rules": [
                {"method": "textDocument/didOpen", "actions": check_pass(300, "check: open")},
                {"method": "textDocument/didSave", "actions": check_pass(400, "check: saved")}
            ]
        });
        let (workspace, mut session) = fixture_session(
            &format!("pull-push-{server_name}"),
            scenario,
            "ERROR: first\n",
            10,
        );
        let first = complete_rows(&session.ask(diagnostics(1, "a.py")));
        assert_eq!(
            first,
            [
                row(1, 1, "error", "first"),
                row(1, 1, "warning", "check: open")
            ],
            "{server_name}"
        );
        workspace.file("a.py", "ERROR: second\n");
        let second = complete_rows(&session.ask(diagnostics(2, "a.py")));
        let expected = [
            row(1, 1, "error", "second"),
            row(1, 1, "warning", "check: saved"),
        ];
        assert_eq!(second, expected, "{server_name}");
        std::thread::sleep(LONG_WAIT);
        let later = complete_rows(&session.ask(diagnostics(3, "a.py")));
        assert_eq!(later, expected, "{server_name}: after a long wait");
        let (status, stderr) = session.finish();
        assert_eq!(status, Some(0), "{stderr}");
        for version in 1..=2 {
            let line = format!("a.py v{version} settled by rule pull-and-publish");
            assert!(stderr.contains(&line), "no {line:?} in {stderr}");
        }
    }
}

/// `tsc --noEmit -p . --pretty false` in `workspace`, as `(file, line, column, message)` rows
/// for `file` (tsc's columns are UTF-16; these files are ASCII).
fn tsc_rows(workspace: &Workspace, file: &str) -> Vec<(u64, u64, String, String)> {
    let output = TestCommand::new("tsc")
        .current_dir(&workspace.root)
        .args(["--noEmit", "-p", ".", "--pretty", "false"])
        .timeout(Duration::from_secs(120))
        .run();
    let prefix = format!("{file}(");
    let mut rows: Vec<_> = output
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|rest| {
            let (position, rest) = rest.split_once("): error TS").unwrap();
            let (line, column) = position.split_once(',').unwrap();
            let (_, message) = rest.split_once(": ").unwrap();
            row(
                line.parse().unwrap(),
                column.parse().unwrap(),
                "error",
                message,
            )
        })
        .collect();
    rows.sort();
    rows
}

/// typescript-language-server 5.3.0 (TypeScript 6), rule `unversioned-publish-confirmed`: each
/// file settles as soon as its publish equals tsserver's own three diagnostics sets (asked with
/// `typescript.tsserverRequest`), never on the empty syntactic set published first for a file
/// with a type error. Files: a type error (`app.ts`), a clean file (`shapes.ts`), an error in
/// an imported file (`broken.ts`) and the error it causes in its importer (`uses.ts`); then
/// `app.ts` fixed. Every answer equals the one after a long wait and tsc's.
#[test]
fn typescript_publish_confirmed_by_tsserver_settles_at_once_and_matches_tsc() {
    require_program!("typescript-language-server");
    require_program!("tsc");
    let workspace = Workspace::copy_of("typescript");
    workspace.file("src/broken.ts", "export const n: number = \"x\";\n");
    workspace.file(
        "src/uses.ts",
        "import { n } from \"./broken\";\nexport const m: string = n;\n",
    );
    let config = workspace.config(json!({ "typescript-language-server": typescript_entry() }));
    let mut session = BatchSession::start(&workspace, &config, 90);
    let files = [
        "src/app.ts",
        "src/shapes.ts",
        "src/uses.ts",
        "src/broken.ts",
    ];
    let mut id = 0;
    let mut ask = |session: &mut BatchSession, file: &str| {
        id += 1;
        let mut rows = complete_rows(&session.ask(diagnostics(id, file)));
        rows.sort();
        rows
    };
    let fast: Vec<_> = files.iter().map(|file| ask(&mut session, file)).collect();
    assert_eq!(
        fast[0],
        [row(
            2,
            7,
            "error",
            "Type 'string' is not assignable to type 'number'."
        )]
    );
    assert_eq!(fast[1], []);
    assert_eq!(
        fast[2],
        [row(
            2,
            14,
            "error",
            "Type 'number' is not assignable to type 'string'."
        )]
    );
    for (file, rows) in files.iter().zip(&fast) {
        assert_eq!(rows, &tsc_rows(&workspace, file), "{file} against tsc");
    }
    std::thread::sleep(LONG_WAIT);
    let later: Vec<_> = files.iter().map(|file| ask(&mut session, file)).collect();
    assert_eq!(later, fast, "after a long wait");
    workspace.file("src/app.ts", "export const total: number = 2;\n");
    assert_eq!(ask(&mut session, "src/app.ts"), []);
    assert_eq!(tsc_rows(&workspace, "src/app.ts"), []);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    // The fast path: every file's answer was confirmed, not left to the quiet period.
    for file in files {
        let line = format!("{file} v1 confirmed by tsserver");
        assert!(stderr.contains(&line), "no {line:?} in {stderr}");
    }
    assert!(
        stderr.contains("src/app.ts v2 confirmed by tsserver"),
        "{stderr}"
    );
}

/// Found on unjs/ufo in a warm session (typescript-language-server 5.3.0, TypeScript 6.0.3):
/// after `tsconfig.json` changed, the next `lspc check` called both files with type errors clean.
/// The change made lspc forget every open document's diagnostics and send each again; tsserver
/// reloads its project before it publishes, so its answers to lspc's probe confirmed the last
/// publish (the same errors) while lspc's diagnostics store, just cleared, held nothing: the
/// file settled as clean. The set the confirmation made stand is now the one reported.
#[test]
fn typescript_publish_confirmed_after_a_tsconfig_change_is_reported() {
    require_program!("typescript-language-server");
    let workspace = Workspace::new("ts-tsconfig-change");
    workspace
        .file(
            "tsconfig.json",
            "{\n  \"compilerOptions\": { \"strict\": true, \"target\": \"ES2020\" },\n  \"include\": [\"src\"]\n}\n",
        )
        .file("src/a.ts", "export const a: number = \"x\";\n")
        .file("src/b.ts", "export const b: string = 1;\n");
    let config = workspace.config(json!({ "typescript-language-server": typescript_entry() }));
    let mut session = BatchSession::start(&workspace, &config, 60);
    let check = |session: &mut BatchSession, id: u32| {
        let answer = session.ask(json!({"id": id, "op": "check", "paths": ["src"]}));
        let mut rows: Vec<(String, String, u64, u64)> = Vec::new();
        for file in answer["result"]["files"].as_array().unwrap() {
            assert_eq!(file["state"], "diagnostics", "{answer}");
            for diagnostic in file["diagnostics"].as_array().unwrap() {
                rows.push((
                    file["path"].as_str().unwrap().to_owned(),
                    diagnostic["code"].as_str().unwrap().to_owned(),
                    diagnostic["line"].as_u64().unwrap(),
                    diagnostic["column"].as_u64().unwrap(),
                ));
            }
        }
        rows.sort();
        rows
    };
    let expected = [
        ("src/a.ts".to_owned(), "2322".to_owned(), 1, 14),
        ("src/b.ts".to_owned(), "2322".to_owned(), 1, 14),
    ];
    assert_eq!(check(&mut session, 1), expected);
    workspace.file(
        "tsconfig.json",
        "{\n  \"compilerOptions\": { \"strict\": true, \"target\": \"ES2022\" },\n  \"include\": [\"src\"]\n}\n",
    );
    assert_eq!(check(&mut session, 2), expected);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// typescript-language-server 5.3.0 with `diagnostics.ignoredCodes: [2322]` in its settings: it
/// drops `app.ts`'s TS2322 from its publishes while tsserver's answers still list it. The code is
/// left out of the answers, so the empty publish is confirmed at once and equals the answer
/// after a long wait; without that, lspc would hold the file to its deadline (the answers list a
/// diagnostic the publish lacks) and report a timeout for every file such a user checks.
#[test]
fn typescript_ignored_codes_are_confirmed_not_held() {
    require_program!("typescript-language-server");
    let workspace = Workspace::copy_of("typescript");
    let mut entry = typescript_entry();
    entry["settings"] = json!({"diagnostics": {"ignoredCodes": [2322]}});
    let config = workspace.config(json!({ "typescript-language-server": entry }));
    let mut session = BatchSession::start(&workspace, &config, 90);
    let fast = complete_rows(&session.ask(diagnostics(1, "src/app.ts")));
    assert_eq!(fast, []);
    std::thread::sleep(LONG_WAIT);
    assert_eq!(
        complete_rows(&session.ask(diagnostics(2, "src/app.ts"))),
        fast
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("src/app.ts v1 confirmed by tsserver"),
        "{stderr}"
    );
}

/// Rule `unversioned-publish-confirmed` on a fixture server named typescript-language-server,
/// with delays: it publishes an empty (syntactic) set at the open and the real set 600 ms later,
/// without versions, and answers `typescript.tsserverRequest` with tsserver-shaped sets. The
/// empty publish does not match tsserver's sets, so it never settles the file; the later one does
/// at once (before the 1.5 s quiet period could). When tsserver's semantic request fails, the
/// quiet period applies as before and the answer is the same.
#[test]
fn confirmed_unversioned_publish_through_delays_and_its_fallback() {
    let marker = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": "FX1", "category": "error", "text": "real"});
    let fails = json!({"replyError": {"code": -32603, "message": "no project"}});
    for (name, semantic_reply) in [
        ("matches", json!([tsserver_reply(json!([marker]))])),
        ("fails", json!([fails])),
    ] {
        let scenario = tsserver_like_scenario(600, semantic_reply.clone(), semantic_reply);
        let mut workspace = Workspace::new(&format!("confirm-{name}"));
        workspace.file("a.ts", "ERROR: real\n");
        let config =
            workspace.fixture_config(&[("typescript-language-server", &[".ts"], scenario)]);
        let mut session = BatchSession::start(&workspace, &config, 10);
        let started = std::time::Instant::now();
        let answer = complete_rows(&session.ask(diagnostics(1, "a.ts")));
        let elapsed = started.elapsed();
        assert_eq!(answer, [row(1, 1, "error", "real")], "{name}");
        std::thread::sleep(LONG_WAIT);
        let later = complete_rows(&session.ask(diagnostics(2, "a.ts")));
        assert_eq!(later, answer, "{name}: after a long wait");
        let (status, stderr) = session.finish();
        assert_eq!(status, Some(0), "{stderr}");
        let confirmed = stderr.contains("a.ts v1 confirmed by tsserver");
        assert_eq!(confirmed, name == "matches", "{name}: {stderr}");
        if name == "fails" {
            // Settled by the quiet period after the 600 ms publish.
            assert!(elapsed >= Duration::from_millis(2000), "{elapsed:?}");
        }
        let commands: Vec<Value> = workspace
            .transcript("typescript-language-server")
            .iter()
            .filter(|entry| entry["message"]["method"] == "workspace/executeCommand")
            .map(|entry| entry["message"]["params"]["arguments"][0].clone())
            .collect();
        let probes = commands.iter().filter(|command| *command != "projectInfo");
        assert_eq!(
            probes.count(),
            6,
            "{name}: two publishes, three requests each"
        );
        // The project's files, for the watch, once the first publish was confirmed or not.
        let project = commands.iter().filter(|command| *command == "projectInfo");
        assert_eq!(project.count(), 1, "{name}: {commands:?}");
    }
}

/// Issue 15 (round 8): tsserver's answers list an error the publish lacks. The fixture
/// publishes `[]` (the syntactic set) at the open and the real set only after 2.5 s, and answers
/// the first probe at once with the real set: lspc knows the empty publish is not the whole
/// answer, and holds the file until the publish the second probe confirms. Before, the quiet
/// period ran from the first probe's answer and the file was reported clean at about 1.5 s.
#[test]
fn a_probe_listing_errors_the_publish_lacks_holds_the_file_until_they_are_published() {
    let marker = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": "FX1", "category": "error", "text": "real"});
    let semantic_reply = json!([tsserver_reply(json!([marker]))]);
    let scenario = tsserver_like_scenario(2500, semantic_reply.clone(), semantic_reply);
    let elapsed = confirmed_real_marker("probe-lacks", scenario);
    assert!(elapsed >= Duration::from_millis(2500), "{elapsed:?}");
}

/// Issue 15, a new user's warm session on sindresorhus/ky: after `git checkout` restored a file
/// with a type error, `lspc check .` reported the old error (past the file's last line): the
/// server's new round for the file was queued behind the other open files, and 3 s of silence
/// let the publish for the old text stand although tsserver's answers for the new text no
/// longer listed it. The fixture publishes the marker at the open, and after the file is made
/// clean on disk publishes again only 4 s after the change; tsserver's answers for the clean
/// text are empty. The file is held until that publish, which they confirm: complete and
/// clean, never the old error.
#[test]
fn a_publish_tsserver_no_longer_confirms_is_held_until_the_server_publishes_again() {
    let marker = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": "FX1", "category": "error", "text": "real"});
    let scenario = tsserver_like(json!([
        {"method": "textDocument/didOpen", "actions": [
            {"publish": {"version": "omit", "diagnostics": "markers"}}
        ]},
        {"method": "textDocument/didChange", "actions": [
            {"after": 4000, "actions": [{"publish": {"version": "omit", "diagnostics": "markers"}}]}
        ]},
        // The first probe's semantic request (the open text); every later answer is empty.
        {"method": "workspace/executeCommand", "nth": 2, "actions": [tsserver_reply(json!([marker]))]},
        {"method": "workspace/executeCommand", "actions": [tsserver_reply(json!([]))]}
    ]));
    let mut workspace = Workspace::new("probe-extra");
    workspace.file("a.ts", "ERROR: real\n");
    let config = workspace.fixture_config(&[("typescript-language-server", &[".ts"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 20);
    let first = complete_rows(&session.ask(diagnostics(1, "a.ts")));
    assert_eq!(first, [row(1, 1, "error", "real")]);
    workspace.file("a.ts", "let fine = 1;\n");
    let started = std::time::Instant::now();
    let restored = complete_rows(&session.ask(diagnostics(2, "a.ts")));
    let elapsed = started.elapsed();
    assert_eq!(
        restored,
        [],
        "the old text's error reported for the new text"
    );
    assert!(elapsed >= Duration::from_millis(4000), "{elapsed:?}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("a.ts v2 confirmed by tsserver"), "{stderr}");
}

/// `a.ts` holding the marker `ERROR: real`, asked for over a batch session on the fixture
/// `scenario` (named typescript-language-server): the answer is complete, the marker alone,
/// and confirmed by tsserver. How long the answer took.
fn confirmed_real_marker(name: &str, scenario: Value) -> Duration {
    let mut workspace = Workspace::new(name);
    workspace.file("a.ts", "ERROR: real\n");
    let config = workspace.fixture_config(&[("typescript-language-server", &[".ts"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 20);
    let started = std::time::Instant::now();
    let answer = complete_rows(&session.ask(diagnostics(1, "a.ts")));
    let elapsed = started.elapsed();
    assert_eq!(answer, [row(1, 1, "error", "real")]);
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("a.ts v1 confirmed by tsserver"), "{stderr}");
    elapsed
}

/// The hold is bounded by the file's deadline: when no publish ever matches tsserver's answers
/// (here they give the error another code), the file ends as a timeout with the publish's set,
/// never as settled, and the warning says why. The codes `diagnostics.ignoredCodes` in the
/// server's settings tells typescript-language-server to drop from its publishes are left out
/// of the answers, so the same answers with that code ignored confirm the publish at once.
#[test]
fn a_probe_no_publish_matches_ends_as_a_timeout_unless_its_codes_are_ignored() {
    let marker = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": "FX1", "category": "error", "text": "real"});
    let other = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": 7, "category": "error", "text": "other"});
    for ignored in [false, true] {
        let semantic_reply = json!([tsserver_reply(json!([marker, other]))]);
        let scenario = tsserver_like_scenario(600, semantic_reply.clone(), semantic_reply);
        let mut workspace = Workspace::new(&format!("probe-never-matches-{ignored}"));
        workspace.file("a.ts", "ERROR: real\n");
        let config =
            workspace.fixture_config(&[("typescript-language-server", &[".ts"], scenario)]);
        if ignored {
            let mut lsp: Value =
                serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
            lsp["typescript-language-server"]["settings"] =
                json!({"diagnostics": {"ignoredCodes": [7]}});
            std::fs::write(&config, lsp.to_string()).unwrap();
        }
        let mut session = BatchSession::start(&workspace, &config, 4);
        let answer = session.ask(diagnostics(1, "a.ts"));
        assert_eq!(batch_diagnostics(&answer), [row(1, 1, "error", "real")]);
        let (status, stderr) = session.finish();
        assert_eq!(status, Some(0), "{stderr}");
        assert_eq!(answer["result"]["complete"], ignored, "{answer}");
        let warning = "typescript-language-server: its last publish for";
        assert_eq!(stderr.contains(warning), !ignored, "{stderr}");
        if ignored {
            assert!(stderr.contains("a.ts v1 confirmed by tsserver"), "{stderr}");
        } else {
            assert_eq!(
                answer["result"]["incomplete"],
                "diagnostics incomplete: typescript-language-server still analysing after 4 s",
                "{answer}"
            );
        }
    }
}

/// Probe requests have no deadline of their own: a server that never answers
/// `typescript.tsserverRequest` (tsserver answers only once its check is done, which took 10 s
/// on ky's `Ky.ts`) holds the file to its deadline, and it ends as a timeout naming the server,
/// with what was published; never settled by the quiet period after the publish.
#[test]
fn an_unanswered_probe_ends_as_a_timeout_at_the_files_deadline() {
    let silent = json!([{"noReply": true}]);
    let mut scenario = tsserver_like_scenario(600, silent.clone(), silent.clone());
    scenario["rules"][3]["actions"] = silent;
    let mut workspace = Workspace::new("probe-unanswered");
    workspace.file("a.ts", "ERROR: real\n");
    let config = workspace.fixture_config(&[("typescript-language-server", &[".ts"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 4);
    let started = std::time::Instant::now();
    let answer = session.ask(diagnostics(1, "a.ts"));
    let elapsed = started.elapsed();
    assert_eq!(batch_diagnostics(&answer), [row(1, 1, "error", "real")]);
    assert_eq!(answer["result"]["complete"], false, "{answer}");
    assert_eq!(
        answer["result"]["incomplete"],
        "diagnostics incomplete: typescript-language-server still analysing after 4 s",
        "{answer}"
    );
    assert!(elapsed >= Duration::from_secs(4), "{elapsed:?}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
}

/// Rule `unversioned-publish-confirmed` while tsserver is still checking the file: found on
/// ky's `source/core/Ky.ts` (typescript-language-server 5, TypeScript 5.9), where the empty
/// syntactic set was published at once and the 15 semantic errors 10 s later, and `lspc check`
/// reported the file clean one run in three: the probe's semantic request is answered only when
/// the check is done, and the quiet period after the empty publish ran out first. Here the
/// fixture publishes `[]` at the open and the real set after 3 s, and answers the first probe's
/// semantic request after 2.5 s: the unanswered probe holds the file, so the answer is the real
/// set, confirmed by the second probe.
#[test]
fn an_unanswered_tsserver_probe_holds_the_empty_first_publish() {
    let marker = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": "FX1", "category": "error", "text": "real"});
    let scenario = tsserver_like_scenario(
        3000,
        json!([{"after": 2500, "actions": [tsserver_reply(json!([marker]))]}]),
        json!([tsserver_reply(json!([marker]))]),
    );
    confirmed_real_marker("probe-held", scenario);
}

/// The same hold for a query's readiness wait (the file's first hover of the session): an
/// unanswered probe means tsserver has not finished checking the file, i.e. its project may not
/// have loaded, when typescript-language-server answers hover and signature help partially
/// (queries::typescript_fresh_hover_and_signature_help_wait_for_the_project once failed so on a
/// loaded machine). Before, the wait settled 1.5 s after the empty publish; now it cannot settle
/// before the probe's semantic answer at 2.5 s.
#[test]
fn an_unanswered_tsserver_probe_holds_a_first_query() {
    let marker = json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 12}, "code": "FX1", "category": "error", "text": "real"});
    let mut scenario = tsserver_like_scenario(
        3000,
        json!([{"after": 2500, "actions": [tsserver_reply(json!([marker]))]}]),
        json!([tsserver_reply(json!([marker]))]),
    );
    scenario["capabilities"]["hoverProvider"] = json!(true);
    let mut workspace = Workspace::new("probe-held-query");
    workspace.file("a.ts", "ERROR: real\n");
    let config = workspace.fixture_config(&[("typescript-language-server", &[".ts"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 20);
    let answer =
        session.ask(json!({"id": 1, "op": "hover", "file": "a.ts", "line": 1, "column": 1}));
    assert_eq!(answer["result"]["text"], "ERROR at 0:0", "{answer}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let waited: Vec<u64> = stderr
        .lines()
        .filter_map(|line| line.split("a.ts v1 settled by rule ").nth(1))
        .filter_map(|rest| {
            rest.split(" after ")
                .nth(1)?
                .strip_suffix(" ms")?
                .parse()
                .ok()
        })
        .collect();
    assert!(
        waited.len() == 1 && waited[0] >= 2500,
        "one readiness wait, held past the probe's answer at 2.5 s: {waited:?}\n{stderr}"
    );
}

/// A fixture server named typescript-language-server offering `typescript.tsserverRequest`: at
/// the open it publishes `[]` (the syntactic set), then the markers after `publish_after_ms`,
/// without versions. The semantic request of the first probe (the 2nd `executeCommand`) runs
/// `first_semantic`, that of the second probe (the 6th: the 4th asks for the project's files,
/// once the first probe is answered) `second_semantic`; the others answer `[]`.
fn tsserver_like_scenario(
    publish_after_ms: u64,
    first_semantic: Value,
    second_semantic: Value,
) -> Value {
    tsserver_like(json!([
        {"method": "textDocument/didOpen", "actions": [
            {"publish": {"version": "omit", "diagnostics": []}},
            {"after": publish_after_ms, "actions": [{"publish": {"version": "omit", "diagnostics": "markers"}}]}
        ]},
        {"method": "workspace/executeCommand", "nth": 2, "actions": first_semantic},
        {"method": "workspace/executeCommand", "nth": 6, "actions": second_semantic},
        {"method": "workspace/executeCommand", "actions": [tsserver_reply(json!([]))]}
    ]))
}

/// A fixture scenario named typescript-language-server (unversioned publishes, none on a
/// change unless `rules` says so, `typescript.tsserverRequest` offered) following `rules`.
fn tsserver_like(rules: Value) -> Value {
    json!({
        "initializeResultExtra": {"serverInfo": {"name": "typescript-language-server"}},
        "capabilities": {"textDocumentSync": {"openClose": true, "change": 1},
                         "executeCommandProvider": {"commands": ["typescript.tsserverRequest"]}},
        "publishOnChange": false,
        "rules": rules
    })
}

/// The fixture action answering a `typescript.tsserverRequest` with a tsserver response.
fn tsserver_reply(body: Value) -> Value {
    json!({"reply": {"seq": 0, "type": "response", "success": true, "body": body}})
}

/// A query's readiness wait on a server that loads files by unit (clangd's compilation databases,
/// gopls's modules: `src/engine/readiness_scope.rs`), with
/// delays, on a fixture server named `server_name` by its `serverInfo.name`: the server may
/// announce loading a unit just after the publish of the first file it opens from it, so that
/// file's first question keeps the quiet period (here the work begins 100 ms after the publish
/// and runs 800 ms, and the hover waits for it); a later file of the same unit is ready at its
/// own publish; one opened while work runs (begun at its open, 800 ms) waits for its end; and
/// the first file of another unit (`sub/`, with its own `marker_below`) keeps the quiet period
/// again. `(marker, marker_below)` make the units; `unit` is its name in the log.
fn readiness_keeps_the_quiet_period_once_per_unit(
    server_name: &str,
    extension: &str,
    (marker, marker_below): (&str, &str),
    unit: &str,
) {
    let publish = json!({"after": 50, "actions": [{"publish": {"diagnostics": "markers"}}]});
    let scenario = json!({
        "initializeResultExtra": {"serverInfo": {"name": server_name}},
        "publishOnChange": false,
        "rules": [
            {"method": "textDocument/didOpen", "nth": 1, "actions": [
                publish.clone(),
                {"after": 150, "actions": [
                    {"progress": {"token": "index", "begin": "indexing", "durationMs": 800}}
                ]}
            ]},
            {"method": "textDocument/didOpen", "nth": 3, "actions": [
                {"progress": {"token": "index2", "begin": "indexing", "durationMs": 800}},
                publish.clone()
            ]},
            {"method": "textDocument/didOpen", "actions": [publish]}
        ]
    });
    let mut workspace = Workspace::new(&format!("readiness-units-{server_name}"));
    let files = ["a", "b", "c", "sub/d"].map(|name| format!("{name}{extension}"));
    for file in &files {
        workspace.file(file, "int a;\n");
    }
    workspace.file(marker, "[]\n");
    workspace.file(&format!("sub/{marker_below}"), "-xc\n");
    let config = workspace.fixture_config(&[("fx", &[extension], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 20);
    for (id, file) in files.iter().enumerate() {
        let answer =
            session.ask(json!({"id": id, "op": "hover", "file": file, "line": 1, "column": 1}));
        assert_eq!(answer["result"]["text"], "int at 0:0", "{file}: {answer}");
    }
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let first = format!("(readiness: the quiet period, its {unit}'s first)");
    let later = format!("(readiness: its {unit} was waited for before)");
    for (file, how) in files.iter().zip([&first, &later, &later, &first]) {
        let line = format!("/{file} v1 settled by rule ");
        let settled = stderr
            .lines()
            .find(|text| text.contains(&line))
            .unwrap_or_else(|| panic!("no {line:?} in {stderr}"));
        assert!(settled.contains(how.as_str()), "{file}: {settled}");
    }
    // The hovers on the first and third files reached the server only once the work had ended.
    let transcript = workspace.transcript("fx");
    let at = |method: &str, file: &str| {
        first_at(&transcript, |message| {
            message["method"] == method
                && message["params"]["textDocument"]["uri"]
                    .as_str()
                    .is_some_and(|uri| uri.ends_with(&format!("/{file}")))
        })
        .unwrap_or_else(|| panic!("no {method} for {file} in {transcript:?}"))
    };
    for (file, work_end) in [(&files[0], 1000), (&files[2], 800)] {
        let waited = at("textDocument/hover", file) - at("textDocument/didOpen", file);
        assert!(
            waited >= work_end,
            "{file}: hovered {waited} ms after its open, before the work ended"
        );
    }
}

/// [`readiness_keeps_the_quiet_period_once_per_unit`] for rule `versioned-publish` (clangd): its
/// units are compilation databases (`compile_commands.json`, `sub/compile_flags.txt`), whose
/// background index clangd starts when it opens a database's first file.
#[test]
fn clangd_readiness_keeps_the_quiet_period_once_per_compilation_database() {
    readiness_keeps_the_quiet_period_once_per_unit(
        "clangd",
        ".c",
        ("compile_commands.json", "compile_flags.txt"),
        "compilation database",
    );
}

/// [`readiness_keeps_the_quiet_period_once_per_unit`] for gopls (rule `quiet-after-publish`): its
/// units are Go modules (`go.mod`, `sub/go.mod`).
#[test]
fn gopls_readiness_keeps_the_quiet_period_once_per_module() {
    readiness_keeps_the_quiet_period_once_per_unit(
        "gopls",
        ".go",
        ("go.mod", "go.mod"),
        "Go module",
    );
}

/// clangd 14.0.6, rule `versioned-publish` in a query's readiness wait: the first file of a
/// compilation database keeps the quiet period (clangd loads the database and starts indexing
/// it just after that file's publish), and each later file's first question waits only for its
/// own publish (265 ms a file before, about 12 ms now on this machine). Each definition lands
/// on `twice`'s body in `lib.c` (from the index, not the header's declaration), and the last
/// equals the answer after a long wait.
#[test]
fn clangd_first_questions_on_a_loaded_database_wait_for_their_publish_only() {
    require_program!("clangd");
    let workspace = Workspace::new("clangd-first-questions");
    workspace.file("lib.h", "int twice(int x);\n").file(
        "lib.c",
        "#include \"lib.h\"\nint twice(int x) {\n  return 2 * x;\n}\n",
    );
    let files = ["use1.c", "use2.c", "use3.c", "use4.c"];
    for (n, file) in files.iter().enumerate() {
        workspace.file(
            file,
            &format!("#include \"lib.h\"\nint use{n}(void) {{\n  return twice({n});\n}}\n"),
        );
    }
    let database = json!(["lib.c"]
        .iter()
        .chain(&files)
        .map(|file| json!({
            "directory": workspace.root, "file": file, "command": format!("cc -c {file}"),
        }))
        .collect::<Vec<_>>());
    workspace.file("compile_commands.json", &database.to_string());
    let config = workspace.config(json!({ "clangd": clangd_entry() }));
    let session = BatchSession::start(&workspace, &config, 30);
    let body = ("lib.c".to_owned(), 2, 5, "int twice(int x) {".to_owned());
    first_questions_wait_for_their_publish_only(
        session,
        &files,
        (3, "twice"),
        body,
        ("versioned-publish", "compilation database"),
    );
}

/// gopls (Debian's 0.5, rule `quiet-after-publish`) in a query's readiness wait: the first file
/// of a Go module keeps the quiet period (gopls loads the module's packages under `$/progress`),
/// and each later file's first question waits only for its own publish (about 258 ms a file
/// before, 5-7 ms now on this machine). Each definition lands on `Area` in `shapes/shapes.go`,
/// and the last equals the answer after a long wait.
#[test]
fn gopls_first_questions_on_a_loaded_module_wait_for_their_publish_only() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-first-questions");
    workspace
        .file("go.mod", "module example.com/g\n\ngo 1.19\n")
        .file(
            "shapes/shapes.go",
            "package shapes\n\n// Area is a square's area.\nfunc Area(r int) int { return r * r }\n",
        );
    let files = ["app/u1.go", "app/u2.go", "app/u3.go", "app/u4.go"];
    for (n, file) in files.iter().enumerate() {
        workspace.file(
            file,
            &format!(
                "package app\n\nimport \"example.com/g/shapes\"\n\nfunc U{n}() int {{ return shapes.Area({n}) }}\n"
            ),
        );
    }
    let config = workspace.config(json!({
        "gopls": {"command": "gopls", "extensionToLanguage": {".go": "go"}},
    }));
    let session = BatchSession::start(&workspace, &config, 60);
    let area = (
        "shapes/shapes.go".to_owned(),
        4,
        6,
        "func Area(r int) int { return r * r }".to_owned(),
    );
    first_questions_wait_for_their_publish_only(
        session,
        &files,
        (5, "Area"),
        area,
        ("quiet-after-publish", "Go module"),
    );
}

/// Asks the definition of `symbol` on `line` of each of `files` in turn, each its file's first
/// question, and once more for the last after a long wait: every answer's first location is
/// `expected`. The debug log shows the first file's readiness wait ended by the quiet period
/// (its `unit`'s first) and each later one's at its publish, under settle rule `rule`.
fn first_questions_wait_for_their_publish_only(
    mut session: BatchSession,
    files: &[&str],
    (line, symbol): (u32, &str),
    expected: (String, u64, u64, String),
    (rule, unit): (&str, &str),
) {
    for (id, file) in files.iter().enumerate() {
        let answer = first_definition(&mut session, id, file, line, symbol);
        assert_eq!(answer, expected, "{file}");
    }
    std::thread::sleep(LONG_WAIT);
    let last = files[files.len() - 1];
    let again = first_definition(&mut session, 100, last, line, symbol);
    assert_eq!(again, expected, "after a long wait");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    for (n, file) in files.iter().enumerate() {
        let how = match n {
            0 => format!("the quiet period, its {unit}'s first"),
            _ => format!("its {unit} was waited for before"),
        };
        let line = format!("/{file} v1 settled by rule {rule} (readiness: {how})");
        assert!(stderr.contains(&line), "no {line:?} in {stderr}");
    }
}

/// The first location of the definition of `symbol` on `line` (1-based) of `file`: path, line,
/// column and line text (empty values when there is none).
fn first_definition(
    session: &mut BatchSession,
    id: usize,
    file: &str,
    line: u32,
    symbol: &str,
) -> (String, u64, u64, String) {
    let answer = session
        .ask(json!({"id": id, "op": "definition", "file": file, "line": line, "symbol": symbol}));
    let location = &answer["result"]["locations"][0];
    (
        location["path"].as_str().unwrap_or("").to_owned(),
        location["line"].as_u64().unwrap_or(0),
        location["column"].as_u64().unwrap_or(0),
        location["lineText"].as_str().unwrap_or("").to_owned(),
    )
}
