//! Issue 15, the instant route (`operation::execute::start_detached`): a query that is one request long
//! has its whole continuation (answer → result → answer line) run by the thread that has the
//! server's answer, and that must not cost correctness. Its answers equal the blocking route's
//! (a one-shot `lspc <query> --format json`, whose first question always waits), a
//! ContentModified answer is retried and answered once, a crash mid-request answers once, and
//! batch answers stay in input order behind a slow request.

use serde_json::{json, Value};

use crate::support::{session_mode, which, BatchSession, Workspace};

/// The debug line of a continuation; the thread that ran it follows.
const CONTINUATION: &str = "answered in its continuation on thread ";

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
        "signatureHelpProvider": {"triggerCharacters": ["("]},
    })
}

/// How many continuations ran on `thread` (in process: the server's reader; in session mode the
/// proxy's thread runs them, as it holds the answer).
fn continuations_on(stderr: &str, thread: &str) -> usize {
    let thread = if session_mode() {
        "lspc-session-proxy"
    } else {
        thread
    };
    stderr.matches(&format!("{CONTINUATION}{thread}")).count()
}

/// `lspc OP FILE:LINE ARGS --format json` in `workspace` (a fresh engine: the blocking route).
fn one_shot(workspace: &Workspace, config: &std::path::Path, args: &[&str]) -> Value {
    let output = workspace
        .lspc()
        .args(args)
        .args(["--format", "json", "--no-builtin", "--timeout", "30"])
        .arg("--config")
        .arg(config)
        .run();
    output.json()
}

/// Every instant query kind on the fixture server: after the file's first question (which waits
/// for its analysis, so takes the blocking route), each is answered on the server's reader
/// thread, with exactly the result object a one-shot command prints.
#[test]
fn instant_answers_are_written_by_the_reader_and_equal_the_blocking_route() {
    let scenario = json!({
        "capabilities": capabilities(),
        "rules": [{"method": "textDocument/signatureHelp", "actions": [{"reply":
            {"signatures": [{"label": "total(a)", "parameters": [{"label": "a"}]}],
             "activeSignature": 0, "activeParameter": 0}}]}],
    });
    let mut workspace = Workspace::new("instant-fixture");
    workspace.file(
        "a.py",
        "😀; total = 1\ndef area(r):\n    return total\nvalue = area(total)\n",
    );
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 30);
    let first =
        session.ask(json!({"id": 0, "op": "hover", "file": "a.py", "line": 1, "symbol": "total"}));
    assert_eq!(first["result"]["text"], "total at 0:4", "{first}");
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"op": "definition", "file": "a.py", "line": 3, "symbol": "total"}),
            vec!["definition", "a.py:3", "--symbol", "total"],
        ),
        (
            json!({"op": "type-definition", "file": "a.py", "line": 4, "symbol": "area"}),
            vec!["type-definition", "a.py:4", "--symbol", "area"],
        ),
        (
            json!({"op": "references", "file": "a.py", "line": 1, "symbol": "total"}),
            vec!["references", "a.py:1", "--symbol", "total"],
        ),
        (
            json!({"op": "hover", "file": "a.py", "line": 4, "symbol": "total"}),
            vec!["hover", "a.py:4", "--symbol", "total"],
        ),
        (
            json!({"op": "symbols", "file": "a.py"}),
            vec!["symbols", "a.py"],
        ),
        (
            json!({"op": "signature-help", "file": "a.py", "line": 4, "column": 14}),
            vec!["signature-help", "a.py:4:14"],
        ),
    ];
    let mut answers = Vec::new();
    for (id, (mut line, _)) in cases.clone().into_iter().enumerate() {
        line["id"] = json!(id + 1);
        let answer = session.ask(line);
        assert_eq!(answer["id"], json!(id + 1), "{answer}");
        answers.push(answer);
    }
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    // The first hover waited (the blocking route); every later query ran on the reader.
    assert_eq!(
        continuations_on(&stderr, "fx-reader"),
        cases.len(),
        "{stderr}"
    );
    for ((_, args), answer) in cases.iter().zip(&answers) {
        let blocking = one_shot(&workspace, &config, args);
        assert_eq!(answer["result"], blocking, "{args:?}: {answer}");
    }
    // Exact values, so that both routes being equally wrong fails too.
    assert_eq!(
        answers[0]["result"]["locations"][0]["line"],
        json!(1),
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[3]["result"]["text"], "total at 3:13",
        "{}",
        answers[3]
    );
    assert_eq!(
        answers[5]["result"]["signatures"][0]["label"], "total(a)",
        "{}",
        answers[5]
    );
}

/// A ContentModified error to a request on the instant route goes through the loop, which
/// retries it (500 ms backoff); the retry's answer is the one answer line, written by the
/// reader, and the continuation runs once.
#[test]
fn a_content_modified_instant_request_is_retried_and_answered_once() {
    let scenario = json!({
        "rules": [{"method": "textDocument/definition", "nth": 1, "actions": [
            {"replyError": {"code": -32801, "message": "content modified"}}
        ]}],
    });
    let mut workspace = Workspace::new("instant-content-modified");
    workspace.file("a.py", "total = 1\nprint(total)\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let mut session = BatchSession::start(&workspace, &config, 30);
    session.ask(json!({"id": 0, "op": "hover", "file": "a.py", "line": 1, "column": 1}));
    let definition = session
        .ask(json!({"id": 1, "op": "definition", "file": "a.py", "line": 2, "symbol": "total"}));
    assert_eq!(definition["id"], 1, "{definition}");
    assert_eq!(
        definition["result"]["locations"][0]["line"], 1,
        "{definition}"
    );
    let after =
        session.ask(json!({"id": 2, "op": "hover", "file": "a.py", "line": 1, "column": 1}));
    assert_eq!(after["id"], 2, "{after}");
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    let definitions = workspace
        .transcript("fx")
        .iter()
        .filter(|entry| entry["message"]["method"] == "textDocument/definition")
        .count();
    assert_eq!(definitions, 2, "the error, then the retry");
    assert_eq!(continuations_on(&stderr, "fx-reader"), 2, "{stderr}");
    assert!(
        stderr.contains("textDocument/definition got -32801, retrying") || session_mode(),
        "{stderr}"
    );
}

/// A server that crashes on an instant request: the loop re-sends it once to the restarted
/// server (B24) and its answer is the request's one line; when every run crashes, the one line
/// is the error. Either way the next request gets its own line, and nothing is answered twice.
#[test]
fn a_crash_mid_instant_request_answers_exactly_once() {
    for (name, always) in [("once", false), ("always", true)] {
        let rule = if always {
            json!({"method": "textDocument/definition", "actions": [{"exit": 134}]})
        } else {
            json!({"method": "textDocument/definition", "run": 1, "nth": 1, "actions": [{"exit": 134}]})
        };
        let scenario = json!({"rules": [rule]});
        let mut workspace = Workspace::new(&format!("instant-crash-{name}"));
        workspace.file("a.py", "total = 1\nprint(total)\n");
        let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
        let mut session = BatchSession::start(&workspace, &config, 30);
        session.ask(json!({"id": 0, "op": "hover", "file": "a.py", "line": 1, "column": 1}));
        let definition = session.ask(
            json!({"id": 1, "op": "definition", "file": "a.py", "line": 2, "symbol": "total"}),
        );
        assert_eq!(definition["id"], 1, "{definition}");
        if always {
            let message = definition["error"]["message"].as_str().unwrap_or("");
            assert!(message.contains("fx"), "{definition}");
        } else {
            assert_eq!(
                definition["result"]["locations"][0]["line"], 1,
                "{definition}"
            );
        }
        let symbols = session.ask(json!({"id": 2, "op": "symbols", "file": "a.py"}));
        assert_eq!(symbols["id"], 2, "{symbols}");
        let (status, stderr) = session.finish();
        assert_eq!(status, Some(0), "{stderr}");
        let continuations = stderr.matches(CONTINUATION).count();
        // The definition's continuation ran once (on the new reader, or the loop with the
        // error); the symbols query's once, unless the server was given up on.
        assert!(
            (1..=2).contains(&continuations),
            "{name}: {continuations} continuations\n{stderr}"
        );
        let definition_lines = stderr
            .lines()
            .filter(|line| line.contains(CONTINUATION) && line.contains("textDocument/definition"))
            .count();
        assert_eq!(definition_lines, 1, "{name}\n{stderr}");
    }
}

/// Batch keeps its order when a slow request (a workspace-symbols answer 400 ms late, not an
/// instant operation) is followed at once by instant ones: the lines arrive in input order, one
/// per request.
#[test]
fn batch_order_holds_with_a_slow_request_before_instant_ones() {
    let scenario = json!({
        "rules": [{"method": "workspace/symbol", "actions": [{"sleepMs": 400}, {"default": true}]},
                  {"method": "textDocument/references", "nth": 2, "actions": [{"sleepMs": 300}, {"default": true}]}],
    });
    let mut workspace = Workspace::new("instant-order");
    workspace.file("a.py", "def total():\n    return 1\ntotal()\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    let lines = [
        json!({"id": "warm", "op": "hover", "file": "a.py", "line": 1, "symbol": "total"}),
        json!({"id": "slow", "op": "workspace-symbols", "query": "total", "file": "a.py"}),
        json!({"id": "h", "op": "hover", "file": "a.py", "line": 3, "column": 1}),
        json!({"id": "r1", "op": "references", "file": "a.py", "line": 3, "column": 1}),
        json!({"id": "r2-slow", "op": "references", "file": "a.py", "line": 3, "column": 1}),
        json!({"id": "d", "op": "definition", "file": "a.py", "line": 3, "column": 1}),
    ];
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let output = workspace
        .lspc()
        .args(["batch", "--no-builtin", "--timeout", "30", "--config"])
        .arg(&config)
        .env("RUST_LOG", "lspc=debug")
        .stdin(input)
        .run();
    output.status(0);
    let answers = output.json_lines();
    let ids: Vec<&Value> = answers.iter().map(|answer| &answer["id"]).collect();
    assert_eq!(
        ids,
        ["warm", "slow", "h", "r1", "r2-slow", "d"],
        "{}",
        output.story()
    );
    assert_eq!(
        answers[1]["result"]["symbols"][0]["name"],
        "total",
        "{}",
        output.story()
    );
    assert_eq!(
        answers[2]["result"]["text"],
        "total at 2:0",
        "{}",
        output.story()
    );
    assert_eq!(
        answers[3]["result"],
        answers[4]["result"],
        "{}",
        output.story()
    );
    assert_eq!(
        answers[5]["result"]["locations"][0]["line"],
        1,
        "{}",
        output.story()
    );
    // Hover, both references and the definition took the instant route.
    assert_eq!(
        continuations_on(&output.stderr, "fx-reader"),
        4,
        "{}",
        output.story()
    );
}

/// On clangd 14 (a real server): definition, hover and references equal what a one-shot command
/// prints; definition and hover ran on the instant route (clangd's reader thread), references
/// on the blocking one, since without a `compile_commands.json` (only `compile_flags.txt`)
/// clangd finds references only in the files it has parsed, and lspc opens the others first.
#[test]
fn clangd_instant_answers_equal_the_blocking_route() {
    if which("clangd").is_none() {
        eprintln!(
            "skipping clangd_instant_answers_equal_the_blocking_route: clangd is not on PATH"
        );
        return;
    }
    let workspace = Workspace::new("instant-clangd");
    workspace.file(
        "main.c",
        "static int area(int radius) { return radius * radius; }\n\nint main(void) {\n    int total = area(2);\n    return total + area(3);\n}\n",
    );
    workspace.file("compile_flags.txt", "-std=c11\n");
    let config = workspace.root.parent().unwrap().join("lsp.json");
    std::fs::write(
        &config,
        json!({"clangd": crate::support::clangd_entry()}).to_string(),
    )
    .unwrap();
    let mut session = BatchSession::start(&workspace, &config, 60);
    let first =
        session.ask(json!({"id": 0, "op": "hover", "file": "main.c", "line": 4, "symbol": "area"}));
    assert!(first["result"]["text"].as_str().is_some(), "{first}");
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"op": "definition", "file": "main.c", "line": 5, "symbol": "area"}),
            vec!["definition", "main.c:5", "--symbol", "area"],
        ),
        (
            json!({"op": "hover", "file": "main.c", "line": 5, "symbol": "total"}),
            vec!["hover", "main.c:5", "--symbol", "total"],
        ),
        (
            json!({"op": "references", "file": "main.c", "line": 1, "symbol": "area"}),
            vec!["references", "main.c:1", "--symbol", "area"],
        ),
    ];
    let mut answers = Vec::new();
    for (id, (mut line, _)) in cases.clone().into_iter().enumerate() {
        line["id"] = json!(id + 1);
        answers.push(session.ask(line));
    }
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        continuations_on(&stderr, "clangd-reader"),
        cases.len() - 1,
        "{stderr}"
    );
    // clangd 14: the definition is `area` on line 1, column 12.
    assert_eq!(
        (
            &answers[0]["result"]["locations"][0]["line"],
            &answers[0]["result"]["locations"][0]["column"]
        ),
        (&json!(1), &json!(12)),
        "{}",
        answers[0]
    );
    let lines: Vec<&Value> = answers[2]["result"]["locations"]
        .as_array()
        .unwrap_or_else(|| panic!("no locations in {}", answers[2]))
        .iter()
        .map(|location| &location["line"])
        .collect();
    // Without the declaration (batch's default): the two calls.
    assert_eq!(lines, [&json!(4), &json!(5)], "{}", answers[2]);
    for ((_, args), answer) in cases.iter().zip(&answers) {
        let blocking = one_shot(&workspace, &config, args);
        assert_eq!(answer["result"], blocking, "{args:?}: {answer}");
    }
}

/// The instant route trusts a query file found canonical once (no `canonicalize` per query),
/// but only as far as the loop's `stat` and read confirm: a file deleted, or replaced by a
/// directory, after earlier instant queries gets the blocking route's own error, and a file
/// written back is answered again.
#[test]
fn a_known_query_file_that_goes_away_gets_the_blocking_routes_error() {
    let mut workspace = Workspace::new("instant-gone");
    workspace.file("a.py", "total = 1\nprint(total)\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let mut session = BatchSession::start(&workspace, &config, 30);
    let hover = |id: u32| json!({"id": id, "op": "hover", "file": "a.py", "line": 1, "column": 1});
    session.ask(hover(0));
    let known = session.ask(hover(1));
    assert_eq!(known["result"]["text"], "total at 0:0", "{known}");
    std::fs::remove_file(workspace.path("a.py")).unwrap();
    std::fs::create_dir(workspace.path("a.py")).unwrap();
    let directory = session.ask(hover(2));
    assert_eq!(
        directory["error"]["message"], "cannot read a.py: it is a directory (give a file)",
        "{directory}"
    );
    std::fs::remove_dir(workspace.path("a.py")).unwrap();
    workspace.file("a.py", "  total = 2\n");
    let back =
        session.ask(json!({"id": 3, "op": "hover", "file": "a.py", "line": 1, "symbol": "total"}));
    assert_eq!(back["result"]["text"], "total at 0:2", "{back}");
    std::fs::remove_file(workspace.path("a.py")).unwrap();
    let gone = session.ask(hover(4));
    assert_eq!(
        gone["error"]["message"], "cannot read a.py: no such file",
        "{gone}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    // Both failures were first tried on the instant route, from the trusted path: the loop's
    // sync refused them (it names the absolute path), then the blocking route answered.
    let refused = stderr
        .lines()
        .filter(|line| line.contains("textDocument/hover not sent in its sync's turn: cannot read"))
        .count();
    assert_eq!(refused, 2, "{stderr}");
}

/// A batch whose reader closes its stdout ends with status 0 (as on a broken pipe), though its
/// stdin stays open and no line comes: the batch thread waits for its next line with `poll`
/// beside stdout's hang-up (issue 15: it reads on while answers are written by other threads,
/// so no failed write of its own can end it; before, it waited in `read` until stdin closed).
/// An interactive client also gets a not-instant answer (a diagnostics wait, run on the batch's
/// worker) without sending another line first.
#[test]
fn batch_ends_when_its_stdout_closes_and_answers_not_instant_lines_at_once() {
    use std::io::{BufRead, Write};
    use wait_timeout::ChildExt;
    let mut workspace = Workspace::new("batch-stdout-closed");
    workspace.file("a.py", "def total():\n    return 1\ntotal()\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let mut command = std::process::Command::new(crate::support::lspc_bin());
    crate::support::session_env(&mut command);
    let mut child = command
        .current_dir(&workspace.root)
        .args(["batch", "--no-builtin", "--timeout", "30", "--config"])
        .arg(&config)
        .env("RUST_LOG", "off")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawning lspc batch");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: Value| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|_| panic!("answer to {line}: {answer:?}"))
    };
    // Not instant (a diagnostics wait), then a first query (its readiness wait), then an
    // instant one: each answered before the next line is sent.
    let diagnostics = ask(json!({"id": 1, "op": "diagnostics", "file": "a.py"}));
    assert_eq!(diagnostics["id"], 1, "{diagnostics}");
    assert_eq!(diagnostics["result"]["complete"], true, "{diagnostics}");
    for id in [2, 3] {
        let hover = ask(json!({"id": id, "op": "hover", "file": "a.py", "line": 3, "column": 1}));
        assert_eq!(hover["result"]["text"], "total at 2:0", "{hover}");
    }
    // The reader of the answers goes away; stdin stays open and idle.
    drop(stdout);
    let status = child
        .wait_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    if status.is_none() {
        let _ = child.kill();
    }
    assert_eq!(status.and_then(|status| status.code()), Some(0));
    drop(stdin);
}
