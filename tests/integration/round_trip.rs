//! Issue 15, one loop round trip per query: every position and document query is synced,
//! converted and sent in one loop turn (`Op::SyncRequest`), and that must not cost correctness:
//! a file changed on disk just before a query is what that very query is answered about, and a
//! query asked while the server is still loading its project still waits for it.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{session_mode, which, BatchSession, Workspace};

/// The log line lspc writes (at debug level) when a query's request went out in its sync's turn.
const ONE_TURN: &str = "sent in its sync's loop turn";

/// `a.py` for step `k`: `k` copies of `😀; ` before `total` on line 1 (each 3 characters, 4
/// UTF-16 units), so a position converted from an older text lands elsewhere; the function's
/// name `f{k}` changes too, so a symbol looked up in an older text is not found.
fn text(k: usize) -> String {
    format!(
        "{}total = 1\ndef f{k}():\n    return total\n",
        "😀; ".repeat(k)
    )
}

/// The fixture's default capabilities plus signature help (answered by a rule).
fn capabilities() -> Value {
    json!({
        "textDocumentSync": {"openClose": true, "change": 1, "save": {"includeText": false}},
        "hoverProvider": true,
        "definitionProvider": true,
        "declarationProvider": true,
        "typeDefinitionProvider": true,
        "implementationProvider": true,
        "referencesProvider": true,
        "documentSymbolProvider": true,
        "workspaceSymbolProvider": true,
        "callHierarchyProvider": true,
        "renameProvider": true,
        "signatureHelpProvider": {"triggerCharacters": ["("]},
    })
}

fn signature_reply() -> Value {
    json!({"signatures": [{"label": "total(a)", "parameters": [{"label": "a"}]}],
           "activeSignature": 0, "activeParameter": 0})
}

/// `(method, the text of a.py the server held when the request arrived)` for every request in
/// `transcript` whose method is in `methods`, in order; the text is the last `didOpen` or
/// `didChange` before it.
fn texts_seen(transcript: &[Value], methods: &[&str]) -> Vec<(String, String)> {
    let mut held = String::new();
    let mut seen = Vec::new();
    for entry in transcript {
        let message = &entry["message"];
        let method = message["method"].as_str().unwrap_or("");
        match method {
            "textDocument/didOpen" => {
                held = message["params"]["textDocument"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
            }
            "textDocument/didChange" => {
                held = message["params"]["contentChanges"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
            }
            _ if methods.contains(&method) => seen.push((method.to_owned(), held.clone())),
            _ => {}
        }
    }
    seen
}

/// The `(line, column)` of each location in a batch answer's `locations`.
fn positions(answer: &Value) -> Vec<(u64, u64)> {
    answer["result"]["locations"]
        .as_array()
        .unwrap_or_else(|| panic!("no locations in {answer}"))
        .iter()
        .map(|location| {
            (
                location["line"].as_u64().unwrap(),
                location["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Every query kind, each asked right after `a.py` was rewritten on disk, is answered about the
/// new text: the server got the new text before the request (the transcript), the position was
/// converted from it (UTF-16 units after the emoji), and symbols are looked up in it. Every
/// query after the first went out in its sync's loop turn.
#[test]
fn each_query_sees_the_file_written_just_before_it_in_one_loop_turn() {
    let scenario = json!({
        "capabilities": capabilities(),
        "rules": [{"method": "textDocument/signatureHelp", "actions": [{"reply": signature_reply()}]}],
    });
    let mut workspace = Workspace::new("one-trip-all");
    workspace.file("a.py", &text(0));
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 20);
    let at = |id: usize, op: &str, line: u32, symbol: &str| json!({"id": id, "op": op, "file": "a.py", "line": line, "symbol": symbol});

    // The file's first question waits for its analysis (not one turn).
    let first = session.ask(at(0, "hover", 1, "total"));
    assert_eq!(first["result"]["text"], "total at 0:0", "{first}");

    let mut step = 0;
    let mut rewrite = |workspace: &Workspace| {
        step += 1;
        workspace.file("a.py", &text(step));
        step
    };

    let k = rewrite(&workspace);
    let definition = session.ask(at(k, "definition", 3, "total"));
    assert_eq!(positions(&definition), [(1, 4)], "{definition}");

    let k = rewrite(&workspace);
    let references = session.ask(at(k, "references", 1, "total"));
    assert_eq!(positions(&references), [(1, 7), (3, 12)], "{references}");

    let k = rewrite(&workspace);
    let symbols = session.ask(json!({"id": k, "op": "symbols", "file": "a.py"}));
    let names: Vec<&str> = symbols["result"]["symbols"]
        .as_array()
        .unwrap_or_else(|| panic!("no symbols in {symbols}"))
        .iter()
        .map(|symbol| symbol["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["f3"], "{symbols}");

    let k = rewrite(&workspace);
    let calls = session.ask(at(k, "call-hierarchy", 2, "f4"));
    let items: Vec<(&str, u64)> = calls["result"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {calls}"))
        .iter()
        .map(|item| {
            (
                item["name"].as_str().unwrap(),
                item["location"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(items, [("f4", 2)], "{calls}");

    let k = rewrite(&workspace);
    let signature = session.ask(at(k, "signature-help", 1, "total"));
    assert_eq!(
        signature["result"]["signatures"][0]["label"], "total(a)",
        "{signature}"
    );

    let k = rewrite(&workspace);
    let hover = session.ask(at(k, "hover", 1, "total"));
    // 6 × `😀; ` is 24 UTF-16 units (18 characters).
    assert_eq!(hover["result"]["text"], "total at 0:24", "{hover}");

    let k = rewrite(&workspace);
    let implementation = session.ask(at(k, "implementation", 3, "total"));
    assert_eq!(positions(&implementation), [(1, 22)], "{implementation}");

    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");

    let methods = [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/references",
        "textDocument/documentSymbol",
        "textDocument/prepareCallHierarchy",
        "textDocument/signatureHelp",
        "textDocument/implementation",
    ];
    let expected: Vec<(String, String)> = [
        (0, "hover"),
        (1, "definition"),
        (2, "references"),
        (3, "documentSymbol"),
        (4, "prepareCallHierarchy"),
        (5, "signatureHelp"),
        (6, "hover"),
        (7, "implementation"),
    ]
    .iter()
    .map(|(k, method)| (format!("textDocument/{method}"), text(*k)))
    .collect();
    let transcript = workspace.transcript("fx");
    assert_eq!(texts_seen(&transcript, &methods), expected);

    // The positions sent: UTF-16 units of the text of that step.
    let sent: Vec<(String, Value)> = transcript
        .iter()
        .map(|entry| &entry["message"])
        .filter(|message| {
            message["method"] == "textDocument/signatureHelp"
                || message["method"] == "textDocument/definition"
        })
        .map(|message| {
            (
                message["method"].as_str().unwrap().to_owned(),
                message["params"]["position"].clone(),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [
            (
                "textDocument/definition".to_owned(),
                json!({"line": 2, "character": 11})
            ),
            (
                "textDocument/signatureHelp".to_owned(),
                json!({"line": 0, "character": 20})
            ),
        ]
    );
    if !session_mode() {
        // The session proxy runs a sync and then the request (two wire ops), so the log line
        // is the in-process engine's only.
        assert_eq!(stderr.matches(ONE_TURN).count(), 7, "{stderr}");
    }
}

/// A query asked while the server reports `$/progress` work (loading its project, begun when
/// the file's first hover arrived) waits for the work to end before it is sent, although the
/// file was analysed: the definition reaches the server only after the progress ended (1.5 s
/// after the hover, by the server's own clock), and not in its sync's turn.
#[test]
fn a_query_during_project_load_still_waits_for_readiness() {
    let scenario = json!({
        "rules": [{"method": "textDocument/hover", "nth": 1, "actions": [
            {"progress": {"token": "load", "begin": "loading project", "durationMs": 1500}},
            // The begin goes out before the hover's answer.
            {"sleepMs": 100},
            {"default": true}
        ]}],
    });
    let mut workspace = Workspace::new("one-trip-load");
    workspace.file("a.py", &text(0));
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 20);
    let first =
        session.ask(json!({"id": 0, "op": "hover", "file": "a.py", "line": 1, "symbol": "total"}));
    assert_eq!(first["result"]["text"], "total at 0:0", "{first}");
    workspace.file("a.py", &text(1));
    let definition = session
        .ask(json!({"id": 1, "op": "definition", "file": "a.py", "line": 3, "symbol": "total"}));
    assert_eq!(positions(&definition), [(1, 4)], "{definition}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");

    let transcript = workspace.transcript("fx");
    let arrival = |method: &str| {
        transcript
            .iter()
            .find(|entry| entry["message"]["method"] == method)
            .and_then(|entry| entry["t_ms"].as_f64())
            .unwrap_or_else(|| panic!("no {method} in {transcript:?}"))
    };
    let hovered = arrival("textDocument/hover");
    let asked = arrival("textDocument/definition");
    assert!(
        asked >= hovered + 1500.0,
        "the definition arrived {} ms after the hover, before the progress ended",
        asked - hovered
    );
    // It was asked about the text written before it.
    assert_eq!(
        texts_seen(&transcript, &["textDocument/definition"]),
        [("textDocument/definition".to_owned(), text(1))]
    );
    if !session_mode() {
        assert!(
            !stderr.contains(&format!("textDocument/definition {ONE_TURN}")),
            "{stderr}"
        );
    }
}

/// The same with a real server (pyright 1.1.414): after the file is rewritten on disk (emoji
/// before the names, a renamed function), each query at once is answered about the new text.
#[test]
fn pyright_answers_each_query_about_the_file_written_just_before_it() {
    if which("pyright-langserver").is_none() {
        eprintln!("skipping pyright_answers_each_query_about_the_file_written_just_before_it: pyright-langserver is not on PATH");
        return;
    }
    let source = |k: usize| {
        format!(
            "s = \"{}\"; total = 1\n\n\ndef area{k}(radius: int) -> int:\n    return radius * total\n\n\nvalue = area{k}(2)\n",
            "😀".repeat(k)
        )
    };
    let workspace = Workspace::new("one-trip-pyright");
    workspace.file("a.py", &source(0));
    let config = write_pyright_config(&workspace);
    let mut session = BatchSession::start(&workspace, &config, 60);
    let first =
        session.ask(json!({"id": 0, "op": "hover", "file": "a.py", "line": 8, "symbol": "area0"}));
    assert_eq!(
        first["result"]["text"], "(function) def area0(radius: int) -> int",
        "{first}"
    );

    workspace.file("a.py", &source(1));
    let references = session.ask(
        json!({"id": 1, "op": "references", "file": "a.py", "line": 1, "symbol": "total", "includeDeclaration": true}),
    );
    // `total` after `s = "😀"; `: column 10 in characters (11 in UTF-16 units).
    assert_eq!(positions(&references), [(1, 10), (5, 21)], "{references}");

    workspace.file("a.py", &source(2));
    let definition = session
        .ask(json!({"id": 2, "op": "definition", "file": "a.py", "line": 5, "symbol": "total"}));
    assert_eq!(positions(&definition), [(1, 11)], "{definition}");

    workspace.file("a.py", &source(3));
    let symbols = session.ask(json!({"id": 3, "op": "symbols", "file": "a.py"}));
    let names: Vec<&str> = symbols["result"]["symbols"]
        .as_array()
        .unwrap_or_else(|| panic!("no symbols in {symbols}"))
        .iter()
        .map(|symbol| symbol["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["s", "total", "area3", "value"], "{symbols}");

    workspace.file("a.py", &source(4));
    let signature = session
        .ask(json!({"id": 4, "op": "signature-help", "file": "a.py", "line": 8, "column": 15}));
    assert_eq!(
        signature["result"]["signatures"][0]["label"], "(radius: int) -> int",
        "{signature}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    if !session_mode() {
        assert_eq!(stderr.matches(ONE_TURN).count(), 4, "{stderr}");
    }
}

/// A config with only pyright, next to the workspace (outside its root).
fn write_pyright_config(workspace: &Workspace) -> std::path::PathBuf {
    let path = workspace
        .root
        .parent()
        .unwrap_or(Path::new("/"))
        .join("lsp.json");
    std::fs::write(
        &path,
        json!({"pyright": crate::support::pyright_entry()}).to_string(),
    )
    .unwrap();
    path
}

/// `compile_flags.txt` for C and a config running `clangd` for `.c` and `.h`; returns its path.
fn c_workspace_config(workspace: &Workspace, clangd: &std::path::Path) -> std::path::PathBuf {
    workspace.file("compile_flags.txt", "-xc\n");
    let config = workspace.path("lsp.json");
    std::fs::write(
        &config,
        json!({"clangd": {"command": clangd, "extensionToLanguage": {".c": "c", ".h": "c"}}})
            .to_string(),
    )
    .unwrap();
    config
}

/// Found trying lspc on benhoyt/inih (round nu11), over MCP: `diagnostics ini.c` (clean), then
/// `edit ini.h` to give `ini_parse` a fourth parameter, then `diagnostics ini.c` answered "no
/// diagnostics" at once, though clangd had not analysed `ini.c` against the new header (its
/// "Conflicting types for 'ini_parse'" came a moment later, with the next call's new
/// diagnostics). An edit lspc writes now leaves the other documents open on the servers of the
/// edited files to be analysed again, as a change behind lspc's back already did. clangd 14.
#[test]
fn an_edited_header_leaves_the_diagnostics_of_the_open_source_file_to_be_settled_again() {
    let Some(clangd) = which("clangd") else {
        eprintln!("skipping: clangd is not on PATH");
        return;
    };
    let workspace = Workspace::new("edit-header");
    workspace.file("util.h", "int twice(int x);\n");
    workspace.file(
        "util.c",
        "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n",
    );
    let config = c_workspace_config(&workspace, &clangd);
    let mut session = BatchSession::start(&workspace, &config, 30);
    let before = session.ask(json!({"id": 1, "op": "diagnostics", "file": "util.c"}));
    assert_eq!(before["result"]["diagnostics"], json!([]), "{before}");
    let edit = session.ask(json!({
        "id": 2, "op": "edit", "file": "util.h",
        "old": "int twice(int x);", "new": "int twice(int x, int y);",
    }));
    assert_eq!(edit["result"]["applied"], true, "{edit}");
    let after = session.ask(json!({"id": 3, "op": "diagnostics", "file": "util.c"}));
    let messages: Vec<&str> = after["result"]["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnostics in {after}"))
        .iter()
        .filter_map(|diagnostic| diagnostic["message"].as_str())
        .collect();
    assert_eq!(messages, ["Conflicting types for 'twice'"], "{after}");
    session.finish();
}

/// Found reading the rename leftovers of round 20: after any edit, every other document open on
/// clangd was sent again under a new version with the same text, and clangd 14 analyses such a
/// version again only when the file's includes changed: for `macro.h`, which includes no edited
/// file, it published nothing, and `diagnostics macro.h` was `clangd still analysing` after the
/// whole timeout (8 s with `--timeout 8`, 30 s by default). Changed behind lspc's back, even
/// `util.c`, which includes the edited header, never got its conflict reported: clangd had
/// analysed it again under its old version on a `didSave`, and skipped the new one. Such a
/// version is now a `didClose` and `didOpen` on clangd (a fresh analysis, one publish), sent at
/// the file's next sync. Each wait below would be the 30 s timeout otherwise.
#[test]
fn documents_open_on_clangd_settle_at_once_after_a_header_they_do_not_include_changed() {
    let Some(clangd) = which("clangd") else {
        eprintln!("skipping: clangd is not on PATH");
        return;
    };
    let workspace = Workspace::new("edit-header-elsewhere");
    workspace.file("util.h", "int add(int a, int b);\n");
    workspace.file(
        "util.c",
        "#include \"util.h\"\nint add(int a, int b) { return a + b; }\n",
    );
    workspace.file(
        "macro.h",
        "#define TWICE(x) ((x) * 2)\nstatic inline int twice(int x) { return TWICE(x) }\n",
    );
    let config = c_workspace_config(&workspace, &clangd);
    let messages = |answer: &Value| -> Vec<String> {
        assert_eq!(answer["result"]["complete"], true, "{answer}");
        answer["result"]["diagnostics"]
            .as_array()
            .unwrap_or_else(|| panic!("no diagnostics in {answer}"))
            .iter()
            .map(|diagnostic| {
                format!(
                    "{}:{} {}",
                    diagnostic["line"], diagnostic["column"], diagnostic["message"]
                )
            })
            .collect()
    };
    let missing_semicolon =
        ["2:50 \"Expected ';' after return statement (fix available)\"".to_owned()];
    let conflict = ["2:5 \"Conflicting types for 'add'\"".to_owned()];
    let mut session = BatchSession::start(&workspace, &config, 30);
    let macros = json!({"id": 1, "op": "diagnostics", "file": "macro.h"});
    let util = json!({"id": 2, "op": "diagnostics", "file": "util.c"});
    assert_eq!(messages(&session.ask(macros.clone())), missing_semicolon);
    assert_eq!(messages(&session.ask(util.clone())), [] as [String; 0]);
    // An edit lspc writes.
    let edit = session.ask(json!({
        "id": 3, "op": "edit", "file": "util.h",
        "old": "int add(int a, int b);", "new": "long add(int a, int b);",
    }));
    assert_eq!(edit["result"]["applied"], true, "{edit}");
    assert_eq!(messages(&session.ask(macros.clone())), missing_semicolon);
    assert_eq!(messages(&session.ask(util.clone())), conflict);
    // An edit behind lspc's back (another tool), seen by the next line's scan.
    workspace.file("util.h", "int add(int a, int b);\n");
    assert_eq!(messages(&session.ask(macros.clone())), missing_semicolon);
    assert_eq!(messages(&session.ask(util.clone())), [] as [String; 0]);
    workspace.file("util.h", "short add(int a, int b);\n");
    assert_eq!(messages(&session.ask(util)), conflict);
    assert_eq!(messages(&session.ask(macros.clone())), missing_semicolon);
    // A query first sends the unchanged text as a `didChange` (no fresh analysis for a hover);
    // the diagnostics wait after it still gets its publish.
    workspace.file("util.h", "int add(int a, int b);\n");
    let hover = session.ask(json!({
        "id": 4, "op": "hover", "file": "macro.h", "line": 2, "symbol": "twice",
    }));
    assert_eq!(
        hover["result"]["text"],
        "function twice\n\n→ int\nParameters:\n- int x\n\nstatic inline int twice(int x)",
        "{hover}"
    );
    assert_eq!(messages(&session.ask(macros)), missing_semicolon);
    session.finish();
}
