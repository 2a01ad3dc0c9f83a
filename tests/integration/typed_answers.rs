//! Issue 15, instructions per request: an instant query's answer is parsed typed from the
//! server's raw result and rendered straight to its JSON text, its params are serialised without
//! a `Value`, and the texts of result files are cached behind one `stat`. None of it may change
//! a byte: these tests hold the answer lines to what main at 434dfc1 (the `Value` route
//! throughout) wrote for the same requests, and a result file changed on disk to a stale
//! lineText.

use serde_json::{json, Value};

use crate::support::{session_mode, which, BatchSession, Workspace};

/// The debug lines that say the typed route read an answer.
const TYPED_HOVER: &str = "hover read by the typed route";
const TYPED_LOCATIONS: &str = "locations read by the typed route";

/// On clangd 14: definition, declaration, hover, references, document symbols and signature help
/// through `lspc batch`, asked twice (the first round includes the file's first question, which
/// takes the blocking route), give exactly the lines main at 434dfc1 gave, and the instant ones
/// were read by the typed route.
#[test]
fn clangd_answer_lines_are_byte_identical_to_the_value_routes() {
    if which("clangd").is_none() {
        eprintln!(
            "skipping clangd_answer_lines_are_byte_identical_to_the_value_routes: clangd is not on PATH"
        );
        return;
    }
    let workspace = Workspace::new("typed-clangd");
    workspace.file(
        "main.c",
        "#include \"util.h\"\nint main(void) { return twice(3); }\n",
    );
    workspace.file("util.h", "int twice(int x);\n");
    workspace.file(
        "util.c",
        "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n",
    );
    let root = workspace.root.display().to_string();
    workspace.file(
        "compile_commands.json",
        &json!([
            {"directory": root, "command": "cc -c main.c", "file": "main.c"},
            {"directory": root, "command": "cc -c util.c", "file": "util.c"},
        ])
        .to_string(),
    );
    let config = workspace.root.parent().unwrap().join("typed-clangd.json");
    std::fs::write(
        &config,
        json!({"clangd": crate::support::clangd_entry()}).to_string(),
    )
    .unwrap();
    let queries = [
        json!({"op": "definition", "file": "main.c", "line": 2, "symbol": "twice"}),
        json!({"op": "definition", "file": "main.c", "line": 2, "symbol": "twice", "kind": "declaration"}),
        json!({"op": "hover", "file": "main.c", "line": 2, "symbol": "twice"}),
        json!({"op": "references", "file": "util.c", "line": 2, "symbol": "twice"}),
        json!({"op": "symbols", "file": "util.c"}),
        json!({"op": "signature-help", "file": "main.c", "line": 2, "column": 31}),
    ];
    // Written by main at 434dfc1 for these requests (clangd 14.0).
    let expected = [
        r#"{"id":0,"result":{"locations":[{"column":5,"endColumn":10,"endLine":2,"line":2,"lineText":"int twice(int x) { return 2 * x; }","path":"util.c"}],"server":"clangd"}}"#,
        r#"{"id":1,"result":{"locations":[{"column":5,"endColumn":10,"endLine":1,"line":1,"lineText":"int twice(int x);","path":"util.h"}],"server":"clangd"}}"#,
        r#"{"id":2,"result":{"range":{"endColumn":30,"endLine":2,"startColumn":25,"startLine":2},"server":"clangd","text":"function twice\n\n→ int\nParameters:\n- int x\n\nint twice(int x)"}}"#,
        r#"{"id":3,"result":{"locations":[{"column":25,"endColumn":30,"endLine":2,"line":2,"lineText":"int main(void) { return twice(3); }","path":"main.c"}],"server":"clangd"}}"#,
        r#"{"id":4,"result":{"symbols":[{"children":[],"container":null,"detail":"int (int)","kind":"function","location":{"column":5,"endColumn":10,"endLine":2,"line":2,"lineText":"int twice(int x) { return 2 * x; }","path":"util.c"},"name":"twice"}]}}"#,
        r#"{"id":5,"result":{"activeParameter":0,"activeSignature":0,"server":"clangd","signatures":[{"documentation":null,"label":"twice(int x) -> int","parameters":["int x"]}]}}"#,
    ];
    let mut session = BatchSession::start(&workspace, &config, 60);
    for round in 0..2 {
        for (id, (query, expected)) in queries.iter().zip(expected).enumerate() {
            let mut line = query.clone();
            line["id"] = json!(id);
            assert_eq!(session.ask_line(line), expected, "round {round}: {query}");
        }
    }
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    if !session_mode() {
        // Round two: definition, declaration and references typed; the hover in both rounds
        // once its file had its first question.
        assert!(stderr.matches(TYPED_LOCATIONS).count() >= 3, "{stderr}");
        assert!(stderr.matches(TYPED_HOVER).count() >= 1, "{stderr}");
    }
}

/// A definition in a file no server has open takes its lineText from the disk, through the
/// session's cache of source texts: the cache serves an unchanged file, and a file rewritten
/// with the same size (its mtime even put back) shows its new line at once.
#[test]
fn a_result_file_changed_on_disk_never_gives_a_stale_line_text() {
    let mut workspace = Workspace::new("typed-line-text");
    workspace.file("a.py", "from b import old_name\nold_name()\n");
    workspace.file("b.py", "def old_name():\n    pass\n");
    let b_uri = format!(
        "file://{}",
        std::fs::canonicalize(workspace.root.join("b.py"))
            .unwrap()
            .display()
    );
    let reply = json!({"uri": b_uri, "range": {"start": {"line": 0, "character": 4},
        "end": {"line": 0, "character": 12}}});
    let scenario = json!({"rules": [{"method": "textDocument/definition",
        "actions": [{"reply": reply}]}]});
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    // Older than the cache's settling time, so its text is cached once read.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let mut session = BatchSession::start(&workspace, &config, 30);
    let ask = |session: &mut BatchSession, id: u64| -> Value {
        session.ask(json!({"id": id, "op": "definition", "file": "a.py", "line": 2, "column": 1}))
    };
    let line_text = |answer: &Value| answer["result"]["locations"][0]["lineText"].clone();
    for id in 0..3 {
        let answer = ask(&mut session, id);
        assert_eq!(line_text(&answer), json!("def old_name():"), "{answer}");
    }
    let b = workspace.root.join("b.py");
    let modified = std::fs::metadata(&b).unwrap().modified().unwrap();
    std::fs::write(&b, "def new_name():\n    pass\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&b)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    for id in 3..5 {
        let answer = ask(&mut session, id);
        assert_eq!(line_text(&answer), json!("def new_name():"), "{answer}");
        assert_eq!(
            answer["result"]["locations"][0],
            json!({"column": 5, "endColumn": 13, "endLine": 1, "line": 1,
                "lineText": "def new_name():", "path": "b.py"}),
            "{answer}"
        );
    }
    std::fs::remove_file(&b).unwrap();
    let answer = ask(&mut session, 5);
    // Unreadable now: the server's numbers + 1 and no lineText.
    assert_eq!(
        answer["result"]["locations"][0],
        json!({"column": 5, "endColumn": 13, "endLine": 1, "line": 1, "lineText": null,
            "path": "b.py"}),
        "{answer}"
    );
    let (status, stderr) = session.finish();
    assert_eq!(status, Some(0), "{stderr}");
    if !session_mode() {
        assert!(stderr.matches(TYPED_LOCATIONS).count() >= 4, "{stderr}");
        // Queries 1 and 2 (0 read and cached it; 3 and 4 read the changed file, too new to
        // cache).
        assert_eq!(
            stderr.matches("b.py: text from the source cache").count(),
            2,
            "{stderr}"
        );
    }
}
