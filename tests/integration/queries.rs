//! Integration tests of the query commands and `lspc batch`: the built `lspc` binary against real
//! language servers (pyright, clangd, typescript-language-server) and the fixture server, each on
//! its own temporary workspace. A test whose server is not on PATH prints why and returns.
//! Every run of the binary is bounded (its `--timeout`, and a kill after [`RUN_LIMIT`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use wait_timeout::ChildExt;

/// The longest one `lspc` run may take before the test kills it and fails.
const RUN_LIMIT: Duration = Duration::from_secs(180);

/// A temporary workspace folder, removed on drop.
struct Workspace {
    root: PathBuf,
}

impl Workspace {
    fn new(name: &str) -> Workspace {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "lspc-queries-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("creating the workspace");
        // Canonical, so paths printed by servers match.
        let root = std::fs::canonicalize(&root).expect("canonical workspace");
        Workspace { root }
    }

    fn write(&self, relative: &str, text: &str) -> &Workspace {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("creating a folder");
        }
        std::fs::write(path, text).expect("writing a file");
        self
    }

    /// Run `lspc --root ROOT --no-builtin --config lsp.json ARGS` in the workspace.
    fn lspc(&self, args: &[&str], stdin: &str) -> Output {
        self.lspc_in(&self.root, args, stdin)
    }

    /// [`Workspace::lspc`] with `dir` as the current directory.
    fn lspc_in(&self, dir: &Path, args: &[&str], stdin: &str) -> Output {
        self.run(dir, args, stdin, &[])
    }

    /// [`Workspace::lspc`] with lspc's debug log on stderr (`RUST_LOG=lspc=debug`; a session's
    /// log is not there, see [`crate::support::skip_in_session_mode`]).
    fn lspc_logged(&self, args: &[&str], stdin: &str) -> Output {
        self.run(&self.root, args, stdin, &[("RUST_LOG", "lspc=debug")])
    }

    fn run(&self, dir: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lspc"));
        crate::support::session_env(&mut command);
        command.envs(env.iter().copied());
        command
            .current_dir(dir)
            .arg("--root")
            .arg(&self.root)
            .args(["--no-builtin", "--config"])
            .arg(self.root.join("lsp.json"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawning lspc");
        let mut child_stdin = child.stdin.take().expect("stdin");
        let input = stdin.to_owned();
        let writer = std::thread::spawn(move || {
            let _ = child_stdin.write_all(input.as_bytes());
        });
        let mut stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let out_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let err_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let status = match child.wait_timeout(RUN_LIMIT).expect("waiting for lspc") {
            Some(status) => status,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("lspc {args:?} did not finish within {RUN_LIMIT:?}");
            }
        };
        let _ = writer.join();
        Output {
            status: status.code().unwrap_or(-1),
            stdout: out_reader.join().unwrap_or_default(),
            stderr: err_reader.join().unwrap_or_default(),
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[derive(Debug)]
struct Output {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {self:?}"))
    }

    /// The JSON lines of a batch.
    fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }
}

/// Whether `program` is on PATH; prints the skip reason when not.
fn have(program: &str, test: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    if !found {
        eprintln!("skipping {test}: {program} is not on PATH");
    }
    found
}

fn config(command: &str, args: &[&str], extensions: Value) -> String {
    json!({ "server": { "command": command, "args": args, "extensionToLanguage": extensions } })
        .to_string()
}

/// `(path, line, column)` of every location in a LocationsResult JSON.
fn positions(result: &Value) -> Vec<(String, u64, u64)> {
    result["locations"]
        .as_array()
        .expect("locations")
        .iter()
        .map(|location| {
            (
                location["path"].as_str().unwrap_or("").to_owned(),
                location["line"].as_u64().unwrap_or(0),
                location["column"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn at(path: &str, line: u64, column: u64) -> (String, u64, u64) {
    (path.to_owned(), line, column)
}

// ----- pyright (UTF-16) ---------------------------------------------------------------------

fn pyright_workspace(name: &str) -> Workspace {
    let workspace = Workspace::new(name);
    workspace
        .write(
            "lsp.json",
            &config("pyright-langserver", &["--stdio"], json!({".py": "python"})),
        )
        .write("a.py", "a = 42\nb = a + a\ns = \"😀😀\"; total = a + 1\n")
        .write("b.py", "名前 = 1\nprint(名前, \"数据😀\", 名前)\n")
        .write(
            "c.py",
            "def helper(x):\n    return x * 2\n\n\nclass Greeter:\n    def greet(self):\n        return helper(1)\n",
        );
    workspace
}

#[test]
fn pyright_b08_columns_after_emoji_in_both_directions() {
    if !have("pyright-langserver", "pyright_b08") {
        return;
    }
    let workspace = pyright_workspace("b08");
    // The `a` after two emojis is character 19; pyright needs UTF-16 unit 20.
    let hover = workspace.lspc(&["hover", "a.py:3:19"], "");
    assert_eq!(hover.status, 0, "{hover:?}");
    assert_eq!(hover.stdout, "(variable) a: Literal[42]\n");
    let hover = workspace.lspc(&["hover", "a.py:3", "--symbol", "a"], "");
    assert_eq!(hover.stdout, "(variable) a: Literal[42]\n", "{hover:?}");

    let references = workspace.lspc(&["references", "a.py:1:1"], "");
    assert_eq!(references.status, 0, "{references:?}");
    assert_eq!(
        references.stdout,
        "a.py:2:5  b = a + a\na.py:2:9  b = a + a\na.py:3:19  s = \"😀😀\"; total = a + 1\n"
    );
    let references = workspace.lspc(
        &[
            "references",
            "a.py:1:1",
            "--include-declaration",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(
        positions(&references.json()),
        vec![
            at("a.py", 1, 1),
            at("a.py", 2, 5),
            at("a.py", 2, 9),
            at("a.py", 3, 19)
        ]
    );
    assert_eq!(references.json()["server"], "server");
    assert_eq!(
        references.json()["locations"][3]["lineText"],
        "s = \"😀😀\"; total = a + 1"
    );

    // CJK counts one column and one UTF-16 unit; the emoji before the second 名前 counts two.
    let references = workspace.lspc(&["references", "b.py:1:1"], "");
    assert_eq!(
        references.stdout,
        "b.py:2:7  print(名前, \"数据😀\", 名前)\nb.py:2:18  print(名前, \"数据😀\", 名前)\n",
        "{references:?}"
    );
    let definition = workspace.lspc(
        &[
            "definition",
            "b.py:2",
            "--symbol",
            "名前",
            "--occurrence",
            "2",
        ],
        "",
    );
    assert_eq!(definition.stdout, "b.py:1:1  名前 = 1\n", "{definition:?}");
}

#[test]
fn pyright_symbols_and_call_hierarchy() {
    if !have("pyright-langserver", "pyright_symbols") {
        return;
    }
    let workspace = pyright_workspace("symbols");
    let symbols = workspace.lspc(&["symbols", "c.py"], "");
    assert_eq!(
        symbols.stdout,
        "helper function 1:5\n  x variable 1:12\nGreeter class 5:7\n  greet method 6:9\n",
        "{symbols:?}"
    );
    let incoming = workspace.lspc(&["incoming-calls", "c.py:1", "--symbol", "helper"], "");
    assert_eq!(
        incoming.stdout,
        "c.py:1:5  helper function\nincoming calls:\n  c.py:6:9  greet function\n    c.py:7:16  return helper(1)\n",
        "{incoming:?}"
    );
    let outgoing = workspace.lspc(&["outgoing-calls", "c.py:6", "--symbol", "greet"], "");
    assert_eq!(
        outgoing.stdout,
        "c.py:6:9  greet method\noutgoing calls:\n  c.py:1:5  helper function\n    c.py:7:16  return helper(1)\n",
        "{outgoing:?}"
    );
    let found = workspace.lspc(&["workspace-symbols", "Gree", "--file", "c.py"], "");
    assert_eq!(
        found.stdout, "c.py:5:7  Greeter class\nc.py:6:9  greet method (in Greeter)\n",
        "{found:?}"
    );
}

/// A new user's trial on pallets/itsdangerous: pyright 1.1.414 repeats each range of a method
/// call in `fromRanges` (`self.derive_key()` inside a method), and lspc listed every call site
/// twice. Each site is listed once, in the server's order.
#[test]
fn pyright_call_sites_are_listed_once() {
    if !have("pyright-langserver", "pyright_call_sites_once") {
        return;
    }
    let workspace = Workspace::new("call-sites-once");
    let servers = json!({
        "pyright": { "command": "pyright-langserver", "args": ["--stdio"],
                     "extensionToLanguage": { ".py": "python" } }
    });
    workspace.write("lsp.json", &servers.to_string()).write(
        "s.py",
        "class Signer:\n    def derive_key(self) -> bytes:\n        return b\"k\"\n\n    def get_signature(self) -> bytes:\n        key = self.derive_key()\n        return key\n\n    def verify(self) -> bool:\n        return self.derive_key() == b\"k\"\n",
    );
    let incoming = workspace.lspc(&["incoming-calls", "s.py:2", "--symbol", "derive_key"], "");
    assert_eq!(
        incoming.stdout,
        "s.py:2:9  derive_key method\nincoming calls:\n  s.py:5:9  get_signature function\n    s.py:6:20  key = self.derive_key()\n  s.py:9:9  verify function\n    s.py:10:21  return self.derive_key() == b\"k\"\n",
        "{incoming:?}"
    );
}

/// Found on pallets/itsdangerous: `workspace-symbols` without `--file` asked the server of the first
/// file in path order (there `.devcontainer/on-create-command.sh`, bash-language-server), which knows no
/// Python class, and said "no matching symbols found". It must ask the server of the workspace's
/// most common kind of file (here pyright, for the `.py` files).
#[test]
fn workspace_symbols_without_file_ask_the_server_of_the_most_common_files() {
    if !have("pyright-langserver", "workspace_symbols_most_common")
        || !have("bash-language-server", "workspace_symbols_most_common")
    {
        return;
    }
    let workspace = Workspace::new("wsym-common");
    let servers = json!({
        "pyright": { "command": "pyright-langserver", "args": ["--stdio"],
                     "extensionToLanguage": { ".py": "python" } },
        "bash": { "command": "bash-language-server", "args": ["start"],
                  "extensionToLanguage": { ".sh": "shellscript" } }
    });
    workspace
        .write("lsp.json", &servers.to_string())
        .write("ci/setup.sh", "#!/bin/sh\necho hello\n")
        .write("pkg/a.py", "from pkg import lib\n\nlib.Greeter()\n")
        .write("pkg/lib.py", "class Greeter:\n    pass\n");
    let found = workspace.lspc(&["workspace-symbols", "Greeter", "--format", "json"], "");
    assert_eq!(found.status, 0, "{found:?}");
    let result: Value = serde_json::from_str(&found.stdout).expect("JSON");
    assert_eq!(result["server"], "pyright", "{found:?}");
    let found = workspace.lspc(&["workspace-symbols", "Greeter"], "");
    assert_eq!(found.stdout, "pkg/lib.py:1:7  Greeter class\n", "{found:?}");
}

#[test]
fn pyright_usage_errors_show_the_line() {
    if !have("pyright-langserver", "pyright_usage_errors") {
        return;
    }
    let workspace = pyright_workspace("usage");
    let past_end = workspace.lspc(&["hover", "a.py:3:40"], "");
    assert_eq!(past_end.status, 2, "{past_end:?}");
    assert_eq!(
        past_end.stderr,
        "lspc: a.py:3:40: column 40 is out of range on line 3 (columns are 1 to 24, the line has 23 characters); the line is: `s = \"😀😀\"; total = a + 1`\n"
    );
    let missing = workspace.lspc(&["definition", "a.py:2", "--symbol", "zz"], "");
    assert_eq!(missing.status, 2, "{missing:?}");
    assert_eq!(
        missing.stderr,
        "lspc: a.py:2: symbol `zz` not found on line: `b = a + a`\n"
    );
    let bad_loc = workspace.lspc(&["hover", "a.py"], "");
    assert_eq!(bad_loc.status, 2, "{bad_loc:?}");
    let nothing = workspace.lspc(&["definition", "a.py:1:5"], "");
    assert_eq!(
        (nothing.status, nothing.stdout.as_str()),
        (1, ""),
        "{nothing:?}"
    );
    assert_eq!(nothing.stderr, "no definition found\n");
}

/// Regression (usertest P1-7): pyright sends `signatures[0].activeParameter` (the right one) and a
/// top-level `activeParameter` equal to the parameter count; lspc reported the top-level one and
/// the human output dropped its "active parameter:" line.
#[test]
fn pyright_signature_help_uses_the_signatures_own_active_parameter() {
    if !have("pyright-langserver", "pyright_signature_help") {
        return;
    }
    let workspace = pyright_workspace("signature");
    workspace.write("sig.py", "def f(a, b):\n    return a\n\n\nf(1, 2)\n");
    let first = workspace.lspc(&["signature-help", "sig.py:5:3"], "");
    assert_eq!(first.status, 0, "{first:?}");
    assert_eq!(
        first.stdout, "(a: Unknown, b: Unknown) -> Unknown\nactive parameter: a: Unknown\n",
        "{first:?}"
    );
    let batch = [
        json!({"id": 1, "op": "signature-help", "file": "sig.py", "line": 5, "column": 3}),
        json!({"id": 2, "op": "signature-help", "file": "sig.py", "line": 5, "column": 6}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let output = workspace.lspc(&["batch", "--timeout", "60"], &batch);
    let lines = output.lines();
    assert_eq!(lines.len(), 2, "{output:?}");
    let active = |line: &Value| {
        (
            line["result"]["activeSignature"].clone(),
            line["result"]["activeParameter"].clone(),
        )
    };
    assert_eq!(active(&lines[0]), (json!(0), json!(0)), "{output:?}");
    assert_eq!(active(&lines[1]), (json!(0), json!(1)), "{output:?}");
}

/// Regression (usertest P2-8): batch resolved a relative `file` against the current directory
/// while MCP used the root; run from a subfolder, `"file": "pkg/m.py"` read `pkg/pkg/m.py`.
#[test]
fn batch_paths_are_relative_to_the_root_not_the_cwd() {
    if !have("pyright-langserver", "batch_paths") {
        return;
    }
    let workspace = pyright_workspace("batch-paths");
    workspace.write("pkg/m.py", "value = 1\n");
    let batch = [
        json!({"id": 1, "op": "hover", "file": "pkg/m.py", "line": 1, "column": 1}),
        json!({"id": 2, "op": "hover", "file": "m.py", "line": 1, "column": 1}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let output = workspace.lspc_in(
        &workspace.root.join("pkg"),
        &["batch", "--timeout", "60"],
        &batch,
    );
    let lines = output.lines();
    assert_eq!(lines.len(), 2, "{output:?}");
    assert_eq!(
        lines[0]["result"]["text"], "(variable) value: Literal[1]",
        "{output:?}"
    );
    assert_eq!(
        lines[1]["error"]["message"], "cannot read m.py: no such file",
        "{output:?}"
    );
}

/// Regression (usertest P1-1, P2-4): absurd `--timeout` values panicked converting to a
/// `Duration` (exit 134), and `--root FILE` was accepted and failed later as a server error.
#[test]
fn usage_errors_for_huge_timeouts_and_a_file_root() {
    let workspace = Workspace::new("usage-errors");
    workspace
        .write("lsp.json", &config("cat", &[], json!({".py": "python"})))
        .write("a.py", "a = 1\n");
    for args in [
        &["hover", "a.py:1:1", "--timeout", "1e30"][..],
        &["check", "--timeout", "18446744073709551616"],
        &["mcp", "--timeout", "1e30"],
    ] {
        let output = workspace.lspc(args, "");
        assert_eq!(output.status, 2, "{args:?}: {output:?}");
        assert!(
            output
                .stderr
                .starts_with("lspc: --timeout: at most 86400 seconds (one day), got "),
            "{args:?}: {output:?}"
        );
    }
    let file_root = workspace.lspc(&["--root", "a.py", "check"], "");
    assert_eq!(
        (file_root.status, file_root.stderr.as_str()),
        (2, "lspc: --root: a.py is not a directory\n"),
        "{file_root:?}"
    );
    let directory = workspace.lspc(&["hover", ".:1:1"], "");
    assert_eq!(
        (directory.status, directory.stderr.as_str()),
        (2, "lspc: cannot read .: it is a directory (give a file)\n"),
        "{directory:?}"
    );
}

// ----- clangd (UTF-8 when offered) ----------------------------------------------------------

#[test]
fn clangd_navigation_with_multibyte_lines() {
    if !have("clangd", "clangd_navigation") {
        return;
    }
    let workspace = Workspace::new("clangd");
    let root = workspace.root.display().to_string();
    workspace
        .write(
            "lsp.json",
            &config("clangd", &[], json!({".c": "c", ".h": "c"})),
        )
        .write("util.h", "int twice(int x);\n")
        .write("util.c", "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n")
        .write(
            "main.c",
            "#include \"util.h\"\nint main(void) { return twice(21); }\n/* 😀 名前 */ int z(void) { return twice(1); }\n",
        )
        .write(
            "compile_commands.json",
            &json!([
                {"directory": root, "file": format!("{root}/util.c"), "arguments": ["cc", "-c", "util.c"]},
                {"directory": root, "file": format!("{root}/main.c"), "arguments": ["cc", "-c", "main.c"]}
            ])
            .to_string(),
        );
    let batch = [
        json!({"id": 1, "op": "references", "file": "util.c", "line": 2, "symbol": "twice"}),
        json!({"id": 2, "op": "definition", "file": "main.c", "line": 3, "symbol": "twice"}),
        json!({"id": 3, "op": "incoming-calls", "file": "util.c", "line": 2, "column": 5}),
        json!({"id": 4, "op": "hover", "file": "main.c", "line": 3, "column": 33}),
        json!({"id": 5, "op": "symbols", "file": "main.c"}),
        json!({"id": 6, "op": "declaration", "file": "main.c", "line": 2, "column": 25}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let output = workspace.lspc(&["batch"], &batch);
    let lines = output.lines();
    assert_eq!(lines.len(), 6, "{output:?}");
    assert_eq!(
        positions(&lines[0]["result"]),
        vec![at("main.c", 2, 25), at("main.c", 3, 33)],
        "{output:?}"
    );
    assert_eq!(
        positions(&lines[1]["result"]),
        vec![at("util.c", 2, 5)],
        "{output:?}"
    );
    let calls = &lines[2]["result"]["calls"];
    let callers: Vec<(&str, u64, u64)> = calls
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| {
            (
                call["item"]["name"].as_str().unwrap_or(""),
                call["callSites"][0]["line"].as_u64().unwrap_or(0),
                call["callSites"][0]["column"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(callers, vec![("main", 2, 25), ("z", 3, 33)], "{output:?}");
    let hover = lines[3]["result"]["text"].as_str().unwrap_or("");
    assert!(hover.starts_with("function twice\n"), "{hover}");
    assert!(hover.ends_with("int twice(int x)"), "{hover}");
    let names: Vec<(&str, u64)> = lines[4]["result"]["symbols"]
        .as_array()
        .expect("symbols")
        .iter()
        .map(|symbol| {
            (
                symbol["name"].as_str().unwrap_or(""),
                symbol["location"]["column"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(names, vec![("main", 5), ("z", 16)], "{output:?}");
    assert_eq!(
        positions(&lines[5]["result"]),
        vec![at("util.h", 1, 5)],
        "{output:?}"
    );
}

// ----- typescript-language-server ---------------------------------------------------------

/// An empty workspace whose `lsp.json` has typescript-language-server for `.ts`.
fn typescript_configured(name: &str) -> Workspace {
    let workspace = Workspace::new(name);
    workspace.write(
        "lsp.json",
        &config(
            "typescript-language-server",
            &["--stdio"],
            json!({".ts": "typescript"}),
        ),
    );
    workspace
}

fn typescript_workspace(name: &str) -> Workspace {
    let workspace = typescript_configured(name);
    workspace
        .write(
            "tsconfig.json",
            r#"{"compilerOptions":{"strict":true},"include":["src"]}"#,
        )
        .write(
            "src/shapes.ts",
            "export function area(radius: number): number {\n  return 3.14 * radius * radius;\n}\nexport interface Shape {\n  size(): number;\n}\nexport class Circle implements Shape {\n  size(): number { return area(1); }\n}\n",
        )
        .write(
            "src/app.ts",
            "import { area, Shape } from \"./shapes\";\nconst label: number = \"big\";\nconsole.log(area(2), label);\nclass Square implements Shape { size() { return 4; } }\n",
        );
    workspace
}

/// Regression (usertest P1-3): on a fresh run typescript-language-server answered signature help
/// with nothing and hover on an imported name with only `import area`, because it answers before
/// its project has loaded (without reporting progress). Each run below is a fresh session.
#[test]
fn typescript_fresh_hover_and_signature_help_wait_for_the_project() {
    if !have("typescript-language-server", "typescript_fresh") {
        return;
    }
    let workspace = typescript_workspace("ts-fresh");
    let signature = workspace.lspc(
        &["signature-help", "src/app.ts:3:18", "--timeout", "60"],
        "",
    );
    assert_eq!(
        (signature.status, signature.stdout.as_str()),
        (
            0,
            "area(radius: number): number\nactive parameter: radius: number\n"
        ),
        "{signature:?}"
    );
    let hover = workspace.lspc(&["hover", "src/app.ts:3:13", "--timeout", "60"], "");
    assert_eq!(
        (hover.status, hover.stdout.as_str()),
        (0, "(alias) area(radius: number): number\nimport area\n"),
        "{hover:?}"
    );
}

/// Issue 15: a file's first question on a server that has loaded the file's project waits for
/// tsserver's check of the file only (its answers to the three diagnostics requests, asked at
/// the open), not for typescript-language-server's first publish (about 300 ms after the open)
/// and a 1.5 s quiet period after it: ten new files of a loaded project took 20.4 s in `lspc
/// batch`, now 2.1 s. The answers are those of the long wait: the first file's, on a fresh
/// server, and a file of a second tsconfig project, which tsserver loads at its open (while it
/// loads, typescript-language-server answers a definition from its syntax server, with the
/// import line), wait for the load.
#[test]
fn typescript_first_questions_on_a_loaded_project_wait_for_tsservers_check_only() {
    if !have("typescript-language-server", "typescript_first_questions") {
        return;
    }
    let workspace = typescript_workspace("ts-first-questions");
    for n in 1..=3 {
        workspace.write(
            &format!("src/use{n}.ts"),
            &format!("import {{ area }} from \"./shapes\";\nexport const u{n} = area({n});\n"),
        );
    }
    workspace
        .write(
            "other/tsconfig.json",
            r#"{"compilerOptions":{"strict":true},"include":["."]}"#,
        )
        .write(
            "other/b.ts",
            "import { area } from \"../src/shapes\";\nexport const b = area(3);\n",
        );
    let definition = |id: &str, file: &str, line: u32| json!({"id": id, "op": "definition", "file": file, "line": line, "symbol": "area"});
    let lines = [
        definition("app", "src/app.ts", 3),
        definition("use1", "src/use1.ts", 2),
        definition("use2", "src/use2.ts", 2),
        json!({"id": "hover3", "op": "hover", "file": "src/use3.ts", "line": 2, "symbol": "area"}),
        definition("other", "other/b.ts", 2),
    ];
    let batch: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let output = workspace.lspc_logged(&["batch", "--timeout", "60"], &batch);
    assert_eq!(output.status, 0, "{output:?}");
    let answers = output.lines();
    let places: Vec<(String, String)> = answers
        .iter()
        .map(|answer| {
            let result = &answer["result"];
            let place = match result["locations"].as_array() {
                Some(locations) => locations
                    .iter()
                    .map(|location| {
                        format!(
                            "{}:{}:{}",
                            location["path"].as_str().unwrap_or("?"),
                            location["line"],
                            location["column"]
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                None => result["text"].as_str().unwrap_or("?").to_owned(),
            };
            (answer["id"].as_str().unwrap_or("?").to_owned(), place)
        })
        .collect();
    let expected = [
        ("app", "src/shapes.ts:1:17"),
        ("use1", "src/shapes.ts:1:17"),
        ("use2", "src/shapes.ts:1:17"),
        (
            "hover3",
            "(alias) area(radius: number): number\nimport area",
        ),
        ("other", "src/shapes.ts:1:17"),
    ]
    .map(|(id, place)| (id.to_owned(), place.to_owned()));
    assert_eq!(places, expected, "{output:?}");
    if crate::support::skip_in_session_mode("the wait's log is the session's") {
        return;
    }
    for file in [
        "src/app.ts",
        "src/use1.ts",
        "src/use2.ts",
        "src/use3.ts",
        "other/b.ts",
    ] {
        let ready = format!("{file} v1 ready: tsserver answered its diagnostics");
        assert!(
            output.stderr.contains(&ready),
            "the first wait on {file} ended on tsserver's answers: {output:?}"
        );
    }
}

/// helper-75: a fresh server's first question on a file in no tsconfig project (tsserver's
/// inferred project). typescript-language-server 5.3 answers from its syntax server from its
/// start until its semantic tsserver's first diagnostics event (an inferred project sends no
/// project-load events), and tsserver's answers to lspc's diagnostics requests are responses,
/// not events: a readiness wait that ended on those answers alone got `import add` for the
/// hover, the import line for the definition and no signature help. The wait now also needs the
/// server's first publish. Each command is a fresh session.
#[test]
fn typescript_first_questions_in_no_tsconfig_project_wait_for_the_first_diagnostics() {
    if !have("typescript-language-server", "typescript_inferred_first") {
        return;
    }
    let workspace = typescript_configured("ts-inferred-first");
    workspace
        .write("package.json", "{\"name\":\"plain\",\"version\":\"1.0.0\"}\n")
        .write(
            "b.ts",
            "/** add doc */\nexport function add(left: number, right: number): number {\n  return left + right;\n}\n",
        )
        .write("a.ts", "import { add } from './b';\n\nexport const total = add(1, 2);\n");
    let asked = [
        (
            vec!["hover", "a.ts:3:22"],
            "(alias) add(left: number, right: number): number\nimport add\nadd doc\n",
        ),
        (
            vec!["definition", "a.ts:3:22"],
            "b.ts:2:17  export function add(left: number, right: number): number {\n",
        ),
        (
            vec!["signature-help", "a.ts:3:30"],
            "add(left: number, right: number): number\nactive parameter: right: number\nadd doc\n",
        ),
    ];
    for (args, expected) in asked {
        let mut args = args.clone();
        args.extend(["--timeout", "60"]);
        let output = workspace.lspc(&args, "");
        assert_eq!(
            (output.status, output.stdout.as_str()),
            (0, expected),
            "{output:?}"
        );
    }
}

/// helper-72: with `--open-documents 1`, questions asked at once about two files each get their
/// answer. The LRU bound closed a file once its readiness wait was over and before its question
/// was sent, and closed it again while the question was in flight; typescript-language-server
/// answered a question about a closed file with nothing (30 of 34 empty on 17 files with
/// `--open-documents 2`). Now the question after a wait syncs the file again, and a file a
/// question in flight was built for stays open until it is answered.
#[test]
fn typescript_questions_at_once_over_the_open_documents_bound_are_all_answered() {
    if !have("typescript-language-server", "typescript_lru_at_once") {
        return;
    }
    let workspace = typescript_workspace("ts-lru-at-once");
    let definition = |file: &str, line: u32| {
        (
            "tools/call",
            json!({"name": "definition", "arguments": {"file": file, "line": line,
                "symbol": "area"}}),
        )
    };
    let hover = |file: &str, line: u32| {
        (
            "tools/call",
            json!({"name": "hover", "arguments": {"file": file, "line": line, "symbol": "area"}}),
        )
    };
    let calls = [
        definition("src/app.ts", 3),
        hover("src/shapes.ts", 1),
        definition("src/shapes.ts", 8),
        hover("src/app.ts", 3),
        definition("src/app.ts", 3),
        hover("src/shapes.ts", 8),
    ];
    // Three rounds of the six at once: ids 2-7, 8-13, 14-19.
    let calls: Vec<_> = calls.iter().cycle().take(18).cloned().collect();
    let stdin = crate::support::mcp_stdin(&calls);
    let output = workspace.lspc(&["mcp", "--open-documents", "1"], &stdin);
    let lines = output.lines();
    let answer = |id: i64| {
        lines
            .iter()
            .find(|line| line["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {output:?}"))["result"]["structuredContent"]
            .clone()
    };
    for round in [0, 6, 12] {
        for id in [2, 4, 6].map(|id| id + round) {
            assert_eq!(
                positions(&answer(id)),
                vec![at("src/shapes.ts", 1, 17)],
                "call {id}: {output:?}"
            );
        }
        for (id, text) in [
            (3, "function area(radius: number): number"),
            (5, "(alias) area(radius: number): number\nimport area"),
            (7, "function area(radius: number): number"),
        ] {
            let id = id + round;
            assert_eq!(answer(id)["hover"]["text"], text, "call {id}: {output:?}");
        }
    }
}

/// helper-71: references asked at once of a fresh typescript-language-server (an agent asking in
/// parallel) each wait for its project: only the first used to, and the others, sent at once
/// while it waited, answered from the one file the server had loaded (the 2 locations in
/// `shapes.ts` of 4; on a larger project `lspc references` printed "no references found").
#[test]
fn typescript_references_asked_at_once_of_a_fresh_server_each_wait_for_the_project() {
    if !have("typescript-language-server", "typescript_at_once") {
        return;
    }
    let workspace = typescript_workspace("ts-at-once");
    let call = (
        "tools/call",
        json!({"name": "references", "arguments": {"file": "src/shapes.ts", "line": 1,
            "symbol": "area", "includeDeclaration": true}}),
    );
    let stdin = crate::support::mcp_stdin(&[call.clone(), call.clone(), call.clone(), call]);
    let output = workspace.lspc(&["mcp"], &stdin);
    let lines = output.lines();
    let all = vec![
        at("src/app.ts", 1, 10),
        at("src/app.ts", 3, 13),
        at("src/shapes.ts", 1, 17),
        at("src/shapes.ts", 8, 27),
    ];
    for id in 2..6 {
        let answer = lines
            .iter()
            .find(|line| line["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {output:?}"));
        let mut found = positions(&answer["result"]["structuredContent"]);
        found.sort();
        assert_eq!(found, all, "call {id}: {output:?}");
    }
}

#[test]
fn typescript_b22_first_hover_and_implementations() {
    if !have("typescript-language-server", "typescript") {
        return;
    }
    let workspace = typescript_workspace("ts");
    // B22: the very first request of a session, on a file the server was not told about.
    let hover = workspace.lspc(&["hover", "src/shapes.ts:1:17", "--timeout", "60"], "");
    assert_eq!(hover.status, 0, "{hover:?}");
    assert_eq!(hover.stdout, "function area(radius: number): number\n");

    // Diagnostics first so the project is loaded, then the cross-file questions.
    let batch = [
        json!({"id": "d", "op": "diagnostics", "file": "src/app.ts"}),
        json!({"id": "i", "op": "implementation", "file": "src/shapes.ts", "line": 4, "symbol": "Shape"}),
        json!({"id": "r", "op": "references", "file": "src/shapes.ts", "line": 1, "column": 17, "includeDeclaration": true}),
        json!({"id": "c", "op": "incoming-calls", "file": "src/shapes.ts", "line": 1, "column": 17}),
        json!({"id": "s", "op": "signature-help", "file": "src/app.ts", "line": 3, "column": 18}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let output = workspace.lspc(&["batch", "--timeout", "60"], &batch);
    let lines = output.lines();
    assert_eq!(lines.len(), 5, "{output:?}");
    assert_eq!(lines[0]["id"], "d");
    assert_eq!(
        lines[0]["result"]["diagnostics"][0]["message"],
        "Type 'string' is not assignable to type 'number'."
    );
    let mut implementations = positions(&lines[1]["result"]);
    implementations.sort();
    assert_eq!(
        implementations,
        vec![at("src/app.ts", 4, 7), at("src/shapes.ts", 7, 14)],
        "{output:?}"
    );
    assert_eq!(
        positions(&lines[2]["result"]),
        vec![
            at("src/app.ts", 1, 10),
            at("src/app.ts", 3, 13),
            at("src/shapes.ts", 1, 17),
            at("src/shapes.ts", 8, 27)
        ],
        "{output:?}"
    );
    let mut callers: Vec<String> = lines[3]["result"]["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| call["item"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    callers.sort();
    assert_eq!(callers, vec!["app.ts", "size"], "{output:?}");
    assert_eq!(
        lines[4]["result"]["signatures"][0]["label"], "area(radius: number): number",
        "{output:?}"
    );
}

// ----- the fixture server ------------------------------------------------------------------

fn fixture_workspace(name: &str, scenario: &str) -> Workspace {
    let workspace = Workspace::new(name);
    let scenario_path = workspace.root.join("scenario.json");
    workspace.write("scenario.json", scenario).write(
        "lsp.json",
        &config(
            env!("CARGO_BIN_EXE_lspc-fixture-server"),
            &["--scenario", &scenario_path.display().to_string()],
            json!({".fx": "fixture"}),
        ),
    );
    workspace
}

#[test]
fn fixture_b29_every_definition_shape() {
    let scenario = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scenarios/definition_shapes.json"),
    )
    .expect("the definition_shapes scenario");
    let workspace = fixture_workspace("b29", &scenario);
    workspace.write("a.fx", "alpha beta\n    gamma\nend\n");
    let request = |id: u32, op: &str| {
        format!(
            "{}\n",
            json!({"id": id, "op": op, "file": "a.fx", "line": 1, "column": 1})
        )
    };
    let batch: String = [
        request(1, "definition"),
        request(2, "definition"),
        request(3, "definition"),
        request(4, "definition"),
        request(5, "implementation"),
        request(6, "type-definition"),
    ]
    .concat();
    let output = workspace.lspc(&["batch"], &batch);
    let lines = output.lines();
    assert_eq!(lines.len(), 6, "{output:?}");
    // (a) a single Location; (b) a link: targetSelectionRange, not targetRange.
    assert_eq!(positions(&lines[0]["result"]), vec![at("a.fx", 1, 1)]);
    assert_eq!(positions(&lines[1]["result"]), vec![at("a.fx", 2, 5)]);
    assert_eq!(lines[1]["result"]["locations"][0]["lineText"], "    gamma");
    // (c) null and (d) [] are empty results, not errors.
    assert_eq!(positions(&lines[2]["result"]), vec![]);
    assert_eq!(positions(&lines[3]["result"]), vec![]);
    assert_eq!(positions(&lines[4]["result"]), vec![at("a.fx", 2, 5)]);
    assert_eq!(positions(&lines[5]["result"]), vec![at("a.fx", 1, 1)]);

    // Through the CLI, null is "no definition found" with exit status 1.
    let workspace = fixture_workspace(
        "b29-null",
        r#"{"rules": [{"method": "textDocument/definition", "actions": [{"reply": null}]}]}"#,
    );
    workspace.write("a.fx", "alpha\n");
    let nothing = workspace.lspc(&["definition", "a.fx:1:1"], "");
    assert_eq!(
        (
            nothing.status,
            nothing.stdout.as_str(),
            nothing.stderr.as_str()
        ),
        (1, "", "no definition found\n")
    );
}

#[test]
fn fixture_b19_content_modified_is_retried_and_capabilities_gate() {
    let scenario = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scenarios/content_modified.json"),
    )
    .expect("the content_modified scenario");
    let workspace = fixture_workspace("b19", &scenario);
    workspace.write("a.fx", "word other word\n");
    let references = workspace.lspc(&["references", "a.fx:1:1"], "");
    assert_eq!(references.status, 0, "{references:?}");
    assert_eq!(
        references.stdout,
        "a.fx:1:1  word other word\na.fx:1:12  word other word\n"
    );
    // ServerCancelled with retriggerRequest:false is not retried: a server error, status 3.
    let hover = workspace.lspc(&["hover", "a.fx:1:1"], "");
    assert_eq!(hover.status, 3, "{hover:?}");

    let workspace = fixture_workspace(
        "gate",
        r#"{"capabilities": {"textDocumentSync": 1, "hoverProvider": true}}"#,
    );
    workspace.write("a.fx", "word\n");
    let references = workspace.lspc(&["references", "a.fx:1:1"], "");
    assert_eq!(references.status, 3, "{references:?}");
    assert_eq!(
        references.stderr,
        "lspc: server server does not support textDocument/references (no referencesProvider)\n"
    );
}

#[test]
fn fixture_batch_of_a_thousand_mixed_queries_in_order() {
    let workspace = fixture_workspace("batch", "{}");
    // Emoji and CJK before the words: the fixture echoes the UTF-16 position it received.
    workspace.write("a.fx", "alpha 😀 beta\n名前 gamma alpha\n");
    let words = [
        (1, 1, "alpha", 0),
        (1, 9, "beta", 9),
        (2, 4, "gamma", 3),
        (2, 10, "alpha", 9),
    ];
    let mut batch = String::new();
    let mut expected = Vec::new();
    for index in 0..1000u32 {
        let (line, column, word, utf16) = words[index as usize % words.len()];
        match index % 3 {
            0 | 1 => {
                batch.push_str(&format!(
                    "{}\n",
                    json!({"id": index, "op": "hover", "file": "a.fx", "line": line, "column": column})
                ));
                expected.push(json!({"id": index, "result": {
                    "text": format!("{word} at {}:{utf16}", line - 1),
                    "range": null, "server": "server"}}));
            }
            _ => {
                batch.push_str(&format!(
                    "{}\n",
                    json!({"id": index, "op": "definition", "file": "a.fx", "line": line, "symbol": word})
                ));
                let (def_line, def_column, text) = match word {
                    "alpha" => (1, 1, "alpha 😀 beta"),
                    "beta" => (1, 9, "alpha 😀 beta"),
                    _ => (2, 4, "名前 gamma alpha"),
                };
                expected.push(json!({"id": index, "result": {"locations": [{
                    "path": "a.fx", "line": def_line, "column": def_column,
                    "endLine": def_line, "endColumn": def_column + word.chars().count() as u64,
                    "lineText": text}], "server": "server"}}));
            }
        }
        if index == 500 {
            batch.push_str("this is not json\n");
        }
    }
    let output = workspace.lspc(&["batch"], &batch);
    assert_eq!(output.status, 0, "{}", output.stderr);
    let mut lines = output.lines();
    assert_eq!(lines.len(), 1001);
    let malformed = lines.remove(501);
    assert_eq!(malformed["id"], Value::Null);
    assert!(malformed["error"]["message"]
        .as_str()
        .unwrap_or("")
        .starts_with("malformed JSON line"));
    for (got, want) in lines.iter().zip(&expected) {
        assert_eq!(got, want);
    }
}

/// Regression (issue 15, item 4): batch echoed an integer id beyond 64 bits as a float
/// (`18446744073709551616` came back as `1.8446744073709552e19`). Every id comes back exactly as
/// sent, on the instant line reader and on the generic one (a line with another key).
#[test]
fn batch_ids_come_back_exactly_as_sent() {
    let workspace = fixture_workspace("batch-ids", "{}");
    workspace.write("a.fx", "alpha beta\n");
    let ids = [
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "-0",
        "7",
        "\"7\"",
        "{\"n\":7}",
    ];
    let mut batch = String::new();
    for id in ids {
        batch.push_str(&format!(
            "{{\"id\":{id},\"op\":\"hover\",\"file\":\"a.fx\",\"line\":1,\"column\":1}}\n"
        ));
        batch.push_str(&format!(
            "{{\"id\":{id},\"op\":\"definition\",\"kind\":\"definition\",\"file\":\"a.fx\",\"line\":1,\"column\":1}}\n"
        ));
        batch.push_str(&format!("{{\"id\":{id},\"op\":\"frob\"}}\n"));
    }
    let output = workspace.lspc(&["batch"], &batch);
    assert_eq!(output.status, 0, "{}", output.stderr);
    let lines: Vec<&str> = output.stdout.lines().collect();
    assert_eq!(lines.len(), ids.len() * 3, "{}", output.stdout);
    for (index, id) in ids.iter().enumerate() {
        let hover = format!(
            "{{\"id\":{id},\"result\":{{\"range\":null,\"server\":\"server\",\"text\":\"alpha at 0:0\"}}}}"
        );
        assert_eq!(lines[index * 3], hover);
        let definition = format!("{{\"id\":{id},\"result\":{{\"locations\":[");
        assert!(
            lines[index * 3 + 1].starts_with(&definition),
            "{}",
            lines[index * 3 + 1]
        );
        assert!(
            lines[index * 3 + 2].ends_with(&format!("}},\"id\":{id}}}")),
            "{}",
            lines[index * 3 + 2]
        );
    }
}
