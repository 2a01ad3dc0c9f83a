//! Safe edits against REAL language servers (issue 5): rename across files with pyright
//! (`documentChanges`, version null), typescript-language-server (`changes`) and clangd, a code
//! action and formatting with exact results, and refused edits that leave every byte as it was.
//!
//! Each test skips with a printed reason when its server is not on PATH. Every wait is bounded by
//! the commands' timeout (requests and diagnostics settle waits). One test uses the fixture
//! server: a rename preview of a large file is small hunks that `git apply` and `patch` accept.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lspc::config::{self, ConfigOptions};
use lspc::edit::commands::{EditCommands, Span};
use lspc::edit::ApplyMode;
use lspc::engine::{apply_edit_with, EngineHandle, EngineOptions};
use lspc::query::{ColumnOrSymbol, TextPosition};
use lspc::text::PositionEncoding;

const TIMEOUT: Duration = Duration::from_secs(40);

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Whether all `programs` exist; prints the reason to skip otherwise.
fn have(test: &str, programs: &[&str]) -> bool {
    for program in programs {
        if !on_path(program) {
            eprintln!("skipping {test}: {program} is not on PATH");
            return false;
        }
    }
    true
}

/// A temporary workspace (a git root) with files, and an engine using lspc's built-in servers.
struct Project {
    root: PathBuf,
    engine: Option<EngineHandle>,
}

impl Project {
    fn new(files: &[(&str, &str)]) -> Project {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!(
            "lspc-edits-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join(".git")).unwrap();
        let root = fs::canonicalize(&root).unwrap();
        for (name, text) in files {
            let path = root.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let mut options = ConfigOptions::new(root.clone());
        options.user_config = None;
        options.trust_workspace = false;
        let config = config::load(&options);
        let engine = EngineHandle::start(EngineOptions::new(config));
        Project {
            root,
            engine: Some(engine),
        }
    }

    fn commands(&self) -> EditCommands {
        EditCommands::new(
            self.engine.as_ref().unwrap().op_sender(),
            self.root.clone(),
            TIMEOUT,
        )
    }

    fn at(&self, file: &str, line: u32, symbol: &str) -> TextPosition {
        TextPosition {
            file: self.root.join(file),
            line,
            target: ColumnOrSymbol::Symbol {
                name: symbol.to_owned(),
                occurrence: 1,
            },
        }
    }

    fn read(&self, file: &str) -> String {
        fs::read_to_string(self.root.join(file)).unwrap()
    }

    fn check_files(&self, expected: &[(&str, &str)]) {
        for (name, text) in expected {
            assert_eq!(&self.read(name), text, "{name}");
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            engine.shutdown();
        }
        let _ = fs::remove_dir_all(&self.root);
    }
}

const SHAPES_PY: &str = "def area(radius: float) -> float:\n    return 3.14 * radius * radius\n";
const APP_PY: &str = "from shapes import area\n\nprint(area(2), area(3))\n";

#[test]
fn pyright_rename_across_two_files() {
    if !have("pyright_rename_across_two_files", &["pyright-langserver"]) {
        return;
    }
    let project = Project::new(&[("shapes.py", SHAPES_PY), ("app.py", APP_PY)]);
    let commands = project.commands();
    // Preview: a diff, nothing written.
    let preview = commands
        .rename(&project.at("shapes.py", 1, "area"), "surface", false)
        .unwrap();
    assert!(!preview.report.written);
    project.check_files(&[("shapes.py", SHAPES_PY), ("app.py", APP_PY)]);
    assert_eq!(
        preview.diff,
        "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n-from shapes import area\n+from shapes import surface\n \n\
         -print(area(2), area(3))\n+print(surface(2), surface(3))\n\
         --- a/shapes.py\n+++ b/shapes.py\n@@ -1,2 +1,2 @@\n-def area(radius: float) -> float:\n\
         +def surface(radius: float) -> float:\n     return 3.14 * radius * radius\n"
    );
    let outcome = commands
        .rename(&project.at("shapes.py", 1, "area"), "surface", true)
        .unwrap();
    assert!(outcome.report.written);
    project.check_files(&[
        (
            "shapes.py",
            "def surface(radius: float) -> float:\n    return 3.14 * radius * radius\n",
        ),
        (
            "app.py",
            "from shapes import surface\n\nprint(surface(2), surface(3))\n",
        ),
    ]);
    assert_eq!(outcome.new_diagnostics, "");
}

#[test]
fn pyright_edit_reports_only_new_diagnostics() {
    if !have(
        "pyright_edit_reports_only_new_diagnostics",
        &["pyright-langserver"],
    ) {
        return;
    }
    let project = Project::new(&[("a.py", "x: int = \"old\"\ny = 1\n")]);
    let commands = project.commands();
    let outcome = commands
        .edit(&project.root.join("a.py"), "y = 1", "y: str = 2")
        .unwrap();
    assert_eq!(project.read("a.py"), "x: int = \"old\"\ny: str = 2\n");
    // The old error on line 1 was in the baseline; only the new one on line 2 is reported.
    let lines: Vec<&str> = outcome.new_diagnostics.lines().collect();
    assert_eq!(
        lines[0],
        "<new-diagnostics>The following new diagnostic issues were detected:"
    );
    assert_eq!(lines[2], "a.py:");
    assert!(
        lines[3].starts_with(
            "  ✘ [Line 2:10] Type \"Literal[2]\" is not assignable to declared type \"str\""
        ),
        "{}",
        outcome.new_diagnostics
    );
    assert!(
        !outcome.new_diagnostics.contains("Line 1:"),
        "{}",
        outcome.new_diagnostics
    );
    // Zero and several occurrences are errors naming the count; nothing is written.
    let error = commands
        .edit(&project.root.join("a.py"), "=", "==")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the old text occurs 2 times in "),
        "{error}"
    );
    let error = commands
        .edit(&project.root.join("a.py"), "zzz", "q")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the old text does not occur in "),
        "{error}"
    );
    assert_eq!(project.read("a.py"), "x: int = \"old\"\ny: str = 2\n");
}

/// Regression (user test P1-2): rename sent right after `didOpen`, before tsserver had loaded the
/// tsconfig project, edited only the file it was asked about. It must wait for the server the way
/// cross-file queries do, so no file is opened beforehand here.
#[test]
fn typescript_rename_edits_importing_files_it_has_not_opened() {
    if !have(
        "typescript_rename_edits_importing_files_it_has_not_opened",
        &["typescript-language-server"],
    ) {
        return;
    }
    let project = Project::new(&[
        ("tsconfig.json", "{\"compilerOptions\":{\"strict\":true},\"include\":[\"src\"]}\n"),
        (
            "src/shapes.ts",
            "export function area(radius: number): number {\n  return 3.14 * radius * radius;\n}\n",
        ),
        (
            "src/app.ts",
            "import { area } from \"./shapes\";\nconst label: number = 1;\nconsole.log(area(2), label);\n",
        ),
    ]);
    let commands = project.commands();
    let outcome = commands
        .rename(&project.at("src/shapes.ts", 1, "area"), "surface", true)
        .unwrap();
    assert!(outcome.report.written);
    project.check_files(&[
        (
            "src/shapes.ts",
            "export function surface(radius: number): number {\n  return 3.14 * radius * radius;\n}\n",
        ),
        (
            "src/app.ts",
            "import { surface } from \"./shapes\";\nconst label: number = 1;\nconsole.log(surface(2), label);\n",
        ),
    ]);
}

#[test]
fn clangd_rename_across_header_and_sources() {
    if !have("clangd_rename_across_header_and_sources", &["clangd"]) {
        return;
    }
    let project = Project::new(&[
        ("compile_flags.txt", "-Wall\n"),
        ("util.h", "int twice(int x);\n"),
        (
            "util.c",
            "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n",
        ),
        (
            "main.c",
            "#include \"util.h\"\nint main(void) { return twice(21); }\n",
        ),
    ]);
    let commands = project.commands();
    // clangd renames across the files it has indexed: open every file and let it settle.
    let files: Vec<PathBuf> = ["util.h", "util.c", "main.c"]
        .iter()
        .map(|file| project.root.join(file))
        .collect();
    project.engine.as_ref().unwrap().diagnostics(files, TIMEOUT);
    let outcome = commands
        .rename(&project.at("main.c", 2, "twice"), "double_it", true)
        .unwrap();
    assert!(outcome.report.written);
    project.check_files(&[
        ("util.h", "int double_it(int x);\n"),
        (
            "util.c",
            "#include \"util.h\"\nint double_it(int x) { return 2 * x; }\n",
        ),
        (
            "main.c",
            "#include \"util.h\"\nint main(void) { return double_it(21); }\n",
        ),
    ]);
}

#[test]
fn clangd_formats_c() {
    if !have("clangd_formats_c", &["clangd"]) {
        return;
    }
    let project = Project::new(&[
        ("compile_flags.txt", "-Wall\n"),
        ("main.c", "int main(void){return 0;}\n"),
    ]);
    let commands = project.commands();
    let preview = commands
        .format(&project.root.join("main.c"), false)
        .unwrap();
    assert_eq!(project.read("main.c"), "int main(void){return 0;}\n");
    assert_eq!(
        preview.diff,
        "--- a/main.c\n+++ b/main.c\n@@ -1 +1 @@\n-int main(void){return 0;}\n+int main(void) { return 0; }\n"
    );
    commands.format(&project.root.join("main.c"), true).unwrap();
    assert_eq!(project.read("main.c"), "int main(void) { return 0; }\n");
}

#[test]
fn ruff_formats_python_and_organizes_imports() {
    if !have("ruff_formats_python_and_organizes_imports", &["ruff"]) {
        return;
    }
    let project = Project::new(&[
        ("fmt.py", "x=[1,2 ,3]\r\ny = {'a':1}\r\n"),
        (
            "imports.py",
            "import sys\nimport os\n\nprint(os.sep, sys.argv)\n",
        ),
    ]);
    let commands = project.commands();
    // CRLF stays CRLF.
    commands.format(&project.root.join("fmt.py"), true).unwrap();
    assert_eq!(
        project.read("fmt.py"),
        "x = [1, 2, 3]\r\ny = {\"a\": 1}\r\n"
    );
    let span = Span::Lines {
        path: project.root.join("imports.py"),
        start_line: 1,
        end_line: 2,
    };
    let actions = commands.code_actions(&span).unwrap();
    let organize = actions
        .iter()
        .find(|action| action.kind.as_deref() == Some("source.organizeImports.ruff"))
        .unwrap_or_else(|| panic!("no organize imports action in {actions:?}"));
    let outcome = commands
        .apply_code_action(&span, &organize.title.clone(), true)
        .unwrap();
    assert!(outcome.report.written);
    assert_eq!(
        project.read("imports.py"),
        "import os\nimport sys\n\nprint(os.sep, sys.argv)\n"
    );
    let error = commands
        .apply_code_action(&span, "No such action", true)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("no code action titled \"No such action\""),
        "{error}"
    );
}

#[test]
fn a_refused_edit_leaves_every_byte_as_it_was() {
    // No server needed: the engine validates against the root and the disk.
    let project = Project::new(&[("a.py", "a = 1\r\n"), ("b.py", "b = 2\n")]);
    let outside = Project::new(&[("secret.py", "keep = 1\n")]);
    let sender = project.engine.as_ref().unwrap().op_sender();
    let uri = |path: &Path| lspc::uri::path_to_uri(path).unwrap().as_str().to_owned();
    let edit = serde_json::json!({ "documentChanges": [
        { "textDocument": { "uri": uri(&project.root.join("a.py")), "version": null },
          "edits": [{ "range": { "start": { "line": 0, "character": 0 },
                                 "end": { "line": 0, "character": 1 } }, "newText": "z" }] },
        { "kind": "delete", "uri": uri(&project.root.join("b.py")) },
        { "textDocument": { "uri": uri(&outside.root.join("secret.py")), "version": null },
          "edits": [{ "range": { "start": { "line": 0, "character": 0 },
                                 "end": { "line": 0, "character": 4 } }, "newText": "lost" }] }
    ]});
    let error = apply_edit_with(
        &sender,
        edit,
        PositionEncoding::Utf16,
        ApplyMode::Write,
        None,
    )
    .unwrap()
    .unwrap_err();
    assert!(
        error.to_string().contains("is outside the workspace root"),
        "{error}"
    );
    assert_eq!(fs::read(project.root.join("a.py")).unwrap(), b"a = 1\r\n");
    assert_eq!(fs::read(project.root.join("b.py")).unwrap(), b"b = 2\n");
    assert_eq!(
        fs::read(outside.root.join("secret.py")).unwrap(),
        b"keep = 1\n"
    );
    // `lspc edit` on a file outside the root is refused the same way.
    let error = project
        .commands()
        .edit(&outside.root.join("secret.py"), "keep", "lost")
        .unwrap_err();
    assert!(error.to_string().starts_with("edit refused: "), "{error}");
    assert_eq!(
        fs::read(outside.root.join("secret.py")).unwrap(),
        b"keep = 1\n"
    );
}

const WEB_TSCONFIG: &str = "{\"compilerOptions\":{\"strict\":true,\"target\":\"es2020\",\"module\":\"commonjs\",\"noEmit\":true},\"include\":[\"src\"]}\n";
const WEB_UTIL_TS: &str = "export function helper(a: number): number { return a; }\n";
/// Four errors that exist before any code action, and an untyped parameter on line 5.
const WEB_INDEX_TS: &str = "import { helper } from \"./util\";\nconst n: number = \"str\";\nhelper(1, 2);\n\
const s = \"x\"; let m: string = 5;\nfunction f(x) { return x; }\nmissing();\nexport { n, s, m, f };\n";

fn web_project() -> Project {
    Project::new(&[
        ("tsconfig.json", WEB_TSCONFIG),
        ("src/util.ts", WEB_UTIL_TS),
        ("src/index.ts", WEB_INDEX_TS),
    ])
}

fn line_span(project: &Project, file: &str, line: u32) -> Span {
    Span::Lines {
        path: project.root.join(file),
        start_line: line,
        end_line: line,
    }
}

/// Regression (user test P1-5): the baseline of a code action that runs a server command was
/// taken for the span's path as given (relative), so it was empty and every existing error was
/// reported as new. The baseline is now the settled diagnostics before the edit, as for `edit`.
#[test]
fn typescript_code_action_reports_no_existing_errors_as_new() {
    if !have(
        "typescript_code_action_reports_no_existing_errors_as_new",
        &["typescript-language-server"],
    ) {
        return;
    }
    let project = web_project();
    let commands = project.commands();
    // A relative path, as the CLI passes it: up from the current directory to `/`, then down.
    let mut relative = PathBuf::new();
    for _ in std::env::current_dir().unwrap().components().skip(1) {
        relative.push("..");
    }
    relative.push(project.root.join("src/index.ts").strip_prefix("/").unwrap());
    let span = Span::Lines {
        path: relative,
        start_line: 5,
        end_line: 5,
    };
    let outcome = commands
        .apply_code_action(&span, "Infer parameter types from usage", true)
        .unwrap();
    assert!(outcome.report.written);
    assert!(
        project
            .read("src/index.ts")
            .contains("function f(x: any) { return x; }"),
        "{}",
        project.read("src/index.ts")
    );
    assert_eq!(outcome.new_diagnostics, "");
    assert_eq!(outcome.note, None);
}

/// Regression (user test P1-6): after "Extract to function" typescript-language-server sends
/// `_typescript.rename`, lspc declines it, and tsls fails `workspace/executeCommand`. The edit was
/// applied, so the command succeeds, lists the file and names the ignored request.
#[test]
fn typescript_extract_to_function_succeeds_despite_the_ignored_follow_up_request() {
    if !have(
        "typescript_extract_to_function_succeeds_despite_the_ignored_follow_up_request",
        &["typescript-language-server"],
    ) {
        return;
    }
    let project = web_project();
    let commands = project.commands();
    let outcome = commands
        .apply_code_action(
            &line_span(&project, "src/index.ts", 5),
            "Extract to function in module scope",
            true,
        )
        .unwrap();
    assert!(outcome.report.written);
    let files: Vec<PathBuf> = outcome.report.changed_paths();
    assert_eq!(files, [project.root.join("src/index.ts")]);
    assert!(
        project
            .read("src/index.ts")
            .contains("function newFunction()"),
        "{}",
        project.read("src/index.ts")
    );
    assert_eq!(
        outcome.note.as_deref(),
        Some("the edit was applied; the server then sent the request _typescript.rename, which lspc does not handle and ignored")
    );
}

/// Regression (user test P1-4): the code-action context carried diagnostics rebuilt from lspc's
/// model, without ruff's `data`, so ruff offered no quick fixes. The servers' raw diagnostics are
/// sent now, each to the server that produced them.
#[test]
fn ruff_quick_fixes_appear_with_the_raw_diagnostics() {
    if !have(
        "ruff_quick_fixes_appear_with_the_raw_diagnostics",
        &["ruff"],
    ) {
        return;
    }
    let project = Project::new(&[("d.py", "import sys\nimport os\nx = 1\nprint(os, x)\n")]);
    let commands = project.commands();
    let actions = commands
        .code_actions(&line_span(&project, "d.py", 1))
        .unwrap();
    let ruff_titles: Vec<&str> = actions
        .iter()
        .filter(|action| action.server == "ruff")
        .map(|action| action.title.as_str())
        .collect();
    assert!(
        ruff_titles.contains(&"Ruff (F401): Remove unused import: `sys`"),
        "{ruff_titles:?}"
    );
    let outcome = commands
        .apply_code_action(
            &line_span(&project, "d.py", 1),
            "Ruff (F401): Remove unused import: `sys`",
            true,
        )
        .unwrap();
    assert!(outcome.report.written);
    assert_eq!(project.read("d.py"), "import os\nx = 1\nprint(os, x)\n");
}

/// Regression (user test P2-5, P2-6): `edit --old` that does not occur is a refused edit (exit 1,
/// not 2), and an `--old` written with `\n` matches a CRLF file.
#[test]
fn edit_refusals_exit_1_and_crlf_files_match_lf_old_text() {
    let workspace = crate::support::Workspace::new("edit-exit-crlf");
    workspace.file("notes.txt", "import sys\r\nx = 1\r\ny = 2\r\n");
    // .txt: no server checks it, so no server is needed.
    workspace
        .lspc()
        .args([
            "--no-builtin",
            "edit",
            "notes.txt",
            "--old",
            "x = 1\ny = 2",
            "--new",
            "z = 3\nw = 4",
        ])
        .run()
        .status(0);
    assert_eq!(
        workspace.read("notes.txt"),
        "import sys\r\nz = 3\r\nw = 4\r\n"
    );
    workspace
        .lspc()
        .args([
            "--no-builtin",
            "edit",
            "notes.txt",
            "--old",
            "nothere",
            "--new",
            "x",
        ])
        .run()
        .status(1)
        .stderr_contains("the old text does not occur in");
    workspace
        .lspc()
        .args([
            "--no-builtin",
            "edit",
            "notes.txt",
            "--old",
            "\r\n",
            "--new",
            "x",
        ])
        .run()
        .status(1)
        .stderr_contains("the old text occurs 3 times in");
    workspace
        .lspc()
        .args([
            "--no-builtin",
            "edit",
            "notes.txt",
            "--old",
            "",
            "--new",
            "x",
        ])
        .run()
        .status(2);
    assert_eq!(
        workspace.read("notes.txt"),
        "import sys\r\nz = 3\r\nw = 4\r\n"
    );
}

const KY_TS: &str = "export function retry(limit: number, delay: number): number[] {\n\tconst waits: number[] = [];\n\tfor (let attempt = 0; attempt < limit; attempt++) {\n\t\tif (attempt > 0) {\n\t\t\twaits.push(delay * attempt);\n\t\t}\n\t}\n\treturn waits;\n}\n";

/// Regression (issue 11, found on sindresorhus/ky): `format` always sent `tabSize: 4,
/// insertSpaces: true`, so a preview of a tab-indented file re-indented every line. The options
/// now come from `.editorconfig` (section globs, `root = true`), else the file's indentation, and
/// the flags override both. typescript-language-server 5.3.0 + TypeScript 6.
#[test]
fn typescript_formats_a_tab_indented_file_to_zero_changes() {
    if !have(
        "typescript_formats_a_tab_indented_file_to_zero_changes",
        &["typescript-language-server"],
    ) {
        return;
    }
    let project = Project::new(&[
        ("tsconfig.json", WEB_TSCONFIG),
        (
            ".editorconfig",
            "root = true\n\n[src/**]\nindent_style = tab\n\n[*.{yml,yaml,mts}]\nindent_style = space\nindent_size = 2\n",
        ),
        ("src/ky.ts", KY_TS),
        // No section matches lib/: the file's own tabs decide.
        ("lib/own.ts", KY_TS),
        (
            "config.mts",
            "export const options = {\n    retries: 2,\n    hooks: {\n        beforeRequest: [],\n    },\n};\n",
        ),
    ]);
    let commands = project.commands();
    for file in ["src/ky.ts", "lib/own.ts"] {
        let preview = commands.format(&project.root.join(file), false).unwrap();
        assert_eq!(preview.diff, "", "{file}");
        assert!(preview.report.files.is_empty(), "{file}: {preview:?}");
    }
    // The two-space section is honoured for a file it matches.
    commands
        .format(&project.root.join("config.mts"), true)
        .unwrap();
    assert_eq!(
        project.read("config.mts"),
        "export const options = {\n  retries: 2,\n  hooks: {\n    beforeRequest: [],\n  },\n};\n"
    );
    // Overrides win over .editorconfig.
    let overrides = lspc::edit::formatting::FormattingOverrides {
        tab_size: Some(2),
        insert_spaces: Some(true),
    };
    commands
        .format_with(&project.root.join("src/ky.ts"), overrides, true)
        .unwrap();
    assert_eq!(project.read("src/ky.ts"), KY_TS.replace('\t', "  "));
}

/// A new user's trial on sindresorhus/ky: renaming a function's local `value` scanned the whole
/// root for the word, listed every `value` of other files as "not renamed" (243 places), and
/// opened 32 of those files in tsserver to ask again (6.4 s; their diagnostics reached the agent
/// as new). A rename whose every edit lies inside one function (by the server's document
/// symbols) is of a name no other file can use: nothing else is searched or opened.
#[test]
fn renaming_a_local_searches_no_other_file() {
    if !have(
        "renaming_a_local_searches_no_other_file",
        &["pyright-langserver", "typescript-language-server"],
    ) {
        return;
    }
    let project = Project::new(&[
        (
            "a.py",
            "def area(value):\n    double = value * 2\n    return value * double\n",
        ),
        ("b.py", "value = 3\nprint(value)\n"),
        (
            "weird.ts",
            "export function f(value: number): number {\n  const x = value + 1;\n  return x * value;\n}\n",
        ),
        ("other.ts", "export const value = 3;\n"),
        ("tsconfig.json", "{\"compilerOptions\": {\"strict\": true}, \"files\": [\"weird.ts\"]}\n"),
    ]);
    let commands = project.commands();
    for (file, line) in [("a.py", 1), ("weird.ts", 1)] {
        let at = project.at(file, line, "value");
        let preview = commands.rename(&at, "width", false).unwrap();
        assert_eq!(preview.not_renamed, [], "{file}: {:?}", preview.note);
        assert_eq!(preview.note, None, "{file}");
        assert_eq!(preview.report.files.len(), 1, "{file}: {}", preview.diff);
        let renamed: String = project
            .read(file)
            .lines()
            .filter(|line| line.contains("value"))
            .map(|line| format!("{}\n", line.replace("value", "width")))
            .collect();
        let added: String = preview
            .diff
            .lines()
            .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
            .map(|line| format!("{}\n", &line[1..]))
            .collect();
        assert_eq!(added, renamed, "{file}: {}", preview.diff);
    }
    // The files holding another `value` were never opened.
    let open = lspc::engine::open_documents(&project.engine.as_ref().unwrap().op_sender());
    assert!(
        !open
            .iter()
            .any(|path| path.ends_with("b.py") || path.ends_with("other.ts")),
        "{open:?}"
    );
}

/// Regression (issue 11, found on pallets/click): pyright's project (`include = ["src"]`) does
/// not cover `tests/`, so a rename edited `src/` and silently left the calls in `tests/` broken.
/// lspc now scans the root (`.gitignore` honoured, files of the server's extensions) for the old
/// name as a whole word, opens those files and asks again; pyright 1.1.414 still renames only in
/// its tracked files (its `isUserCode`), so the places left are listed: in the preview's note, in
/// the applied result, and as MCP `notRenamed`.
#[test]
fn pyright_rename_lists_references_outside_its_project() {
    if !have(
        "pyright_rename_lists_references_outside_its_project",
        &["pyright-langserver"],
    ) {
        return;
    }
    let utils = "def format_filename(name: str) -> str:\n    return name\n";
    let test_utils = "from pkg.utils import format_filename\n\n\ndef test_it() -> None:\n    assert format_filename(\"x\") == \"x\"\n";
    let helpers = "def format_filename(x):  # same name, another function\n    return x\n";
    let project = Project::new(&[
        ("pyproject.toml", "[tool.pyright]\ninclude = [\"src\"]\n"),
        (".gitignore", "build/\n"),
        ("src/pkg/__init__.py", ""),
        ("src/pkg/utils.py", utils),
        (
            "src/pkg/core.py",
            "from .utils import format_filename\n\nprint(format_filename(\"a\"))\n",
        ),
        ("tests/test_utils.py", test_utils),
        ("tests/helpers.py", helpers),
        // Ignored by .gitignore, and not a Python file: neither is listed.
        ("build/lib/pkg/utils.py", utils),
        ("docs/usage.md", "Call format_filename to show a path.\n"),
    ]);
    let commands = project.commands();
    let at = project.at("src/pkg/utils.py", 1, "format_filename");
    let expected_note = "not renamed by the server: tests/helpers.py:1, tests/test_utils.py:1, \
                         tests/test_utils.py:5 (each is another symbol of that name, a comment or a \
                         string, a use the server did not rename, or code outside \
                         the server's project: check it before editing it by hand)";
    let preview = commands.rename(&at, "format_file_name", false).unwrap();
    let left: Vec<(PathBuf, Vec<u32>)> = preview
        .not_renamed
        .iter()
        .map(|file| (file.path.clone(), file.lines.clone()))
        .collect();
    assert_eq!(
        left,
        [
            (project.root.join("tests/helpers.py"), vec![1]),
            (project.root.join("tests/test_utils.py"), vec![1, 5])
        ]
    );
    assert_eq!(preview.note.as_deref(), Some(expected_note));
    let (_, preview_text) = lspc::mcp::edit_tools::outcome_result(&project.root, &preview);
    assert!(
        preview_text.contains(&format!("note: {expected_note}\n")),
        "{preview_text}"
    );
    let outcome = commands.rename(&at, "format_file_name", true).unwrap();
    assert!(outcome.report.written);
    project.check_files(&[
        (
            "src/pkg/utils.py",
            &utils.replace("format_filename", "format_file_name"),
        ),
        (
            "src/pkg/core.py",
            "from .utils import format_file_name\n\nprint(format_file_name(\"a\"))\n",
        ),
        ("tests/test_utils.py", test_utils),
        ("tests/helpers.py", helpers),
        ("build/lib/pkg/utils.py", utils),
    ]);
    assert_eq!(outcome.note.as_deref(), Some(expected_note));
    let (json, text) = lspc::mcp::edit_tools::outcome_result(&project.root, &outcome);
    assert_eq!(
        json["notRenamed"],
        serde_json::json!([
            {"file": "tests/helpers.py", "line": 1},
            {"file": "tests/test_utils.py", "line": 1},
            {"file": "tests/test_utils.py", "line": 5}
        ])
    );
    assert!(text.contains(&format!("note: {expected_note}\n")), "{text}");
    // The files still naming the old name are compared too (a trial's zlib rename broke a call
    // clangd left in a macro, and the result said "no new diagnostics"): the test's import now
    // names nothing.
    assert_eq!(outcome.watched, 2);
    assert!(
        outcome.new_diagnostics.contains("tests/test_utils.py:\n")
            && outcome
                .new_diagnostics
                .contains("\"format_filename\" is unknown import symbol"),
        "{}",
        outcome.new_diagnostics
    );
}

/// Issue 11: a test file outside `tsconfig.json`'s `include` is in no project until it is open;
/// lspc opens the files that hold the old name and asks again, and typescript-language-server
/// 5.3.0 (TS 6) then renames there too, so nothing is left to list.
#[test]
fn typescript_rename_includes_files_outside_the_project_once_opened() {
    if !have(
        "typescript_rename_includes_files_outside_the_project_once_opened",
        &["typescript-language-server"],
    ) {
        return;
    }
    let project = Project::new(&[
        ("tsconfig.json", WEB_TSCONFIG),
        ("src/util.ts", WEB_UTIL_TS),
        (
            "tests/util.test.ts",
            "import { helper } from \"../src/util\";\n\nconsole.log(helper(1));\n",
        ),
    ]);
    let commands = project.commands();
    let outcome = commands
        .rename(&project.at("src/util.ts", 1, "helper"), "assist", true)
        .unwrap();
    assert!(outcome.report.written);
    project.check_files(&[
        (
            "src/util.ts",
            "export function assist(a: number): number { return a; }\n",
        ),
        (
            "tests/util.test.ts",
            "import { assist } from \"../src/util\";\n\nconsole.log(assist(1));\n",
        ),
    ]);
    assert!(outcome.not_renamed.is_empty(), "{:?}", outcome.not_renamed);
    assert_eq!(outcome.note, None);
}

/// Found renaming `echo` in pallets/click@2c8cd3a (pyright 1.1.414): five renamed lines in the
/// 3,000-line `core.py` were previewed as one 2,734-line hunk (`@@ -44,2734 +44,2734 @@`), the
/// whole preview 5,800 lines for 82 changed ones. The preview of five renamed lines in a 3,000-line
/// file is now five 7-line hunks; `git apply --check` and `patch --dry-run` accept it, and
/// applying it gives the file `--apply` writes.
#[test]
fn a_rename_preview_of_a_large_file_is_small_hunks_that_apply_as_the_rename() {
    crate::require_program!("git");
    crate::require_program!("patch");
    use crate::support::{TestCommand, Workspace};
    const RENAMED_LINES: [usize; 5] = [10, 700, 1500, 2200, 2999];
    let text_with = |name: &str| -> String {
        (1..=3000)
            .map(|i| match RENAMED_LINES.contains(&i) {
                true => format!("{name}({i})\n"),
                false => format!("line_{i} = {i}\n"),
            })
            .collect()
    };
    let mut workspace = Workspace::new("rename-preview-large");
    workspace.file("big.py", &text_with("target"));
    let config = workspace.fixture_config(&[("fx", &[".py"], serde_json::json!({}))]);
    let rename = |extra: &[&str]| {
        workspace
            .lspc()
            .args(["rename", "--no-builtin", "--config"])
            .arg(&config)
            .args(["big.py:10:1", "renamed"])
            .args(extra)
            .run()
    };
    let preview = rename(&[]);
    preview.status(0);
    let mut expected = "--- a/big.py\n+++ b/big.py\n".to_owned();
    for i in RENAMED_LINES {
        let after = if i == 2999 { 1 } else { 3 };
        expected.push_str(&format!("@@ -{0},{1} +{0},{1} @@\n", i - 3, 4 + after));
        for context in i - 3..i {
            expected.push_str(&format!(" line_{context} = {context}\n"));
        }
        expected.push_str(&format!("-target({i})\n+renamed({i})\n"));
        for context in i + 1..=i + after {
            expected.push_str(&format!(" line_{context} = {context}\n"));
        }
    }
    preview.stdout_is(&expected);
    assert_eq!(workspace.read("big.py"), text_with("target"));
    for check in [
        &["git", "apply", "--check"][..],
        &["patch", "-p1", "--dry-run", "--quiet"][..],
        &["git", "apply"][..],
    ] {
        TestCommand::new(check[0])
            .args(&check[1..])
            .current_dir(&workspace.root)
            .stdin(preview.stdout.clone())
            .run()
            .status(0);
    }
    assert_eq!(workspace.read("big.py"), text_with("renamed"));
    workspace.file("big.py", &text_with("target"));
    rename(&["--apply"]).status(0);
    assert_eq!(workspace.read("big.py"), text_with("renamed"));
}

/// helper-39 on troydhanson/uthash: clangd renamed the `hh_next` field where it is declared
/// and used in code, but not its uses inside the same header's macro bodies, which broke 62
/// files; lspc listed nothing, since only files the edit did not change were searched. The
/// occurrences a rename leaves in the files it changes are listed now too (on each line, those
/// beyond the ones its edits replace), in the note and as MCP `notRenamed`.
#[test]
fn clangd_rename_lists_the_uses_it_leaves_in_the_files_it_changes() {
    if !have(
        "clangd_rename_lists_the_uses_it_leaves_in_the_files_it_changes",
        &["clangd"],
    ) {
        return;
    }
    let header = "#define GET(p) ((p)->fld)\nstruct S { int fld; };\n\
                  int f(struct S *s) { return s->fld + GET(s); }\n";
    let project = Project::new(&[
        ("a.h", header),
        (
            "b.c",
            "#include \"a.h\"\nint g(struct S *s) { return s->fld; }\n",
        ),
    ]);
    let commands = project.commands();
    let at = project.at("a.h", 2, "fld");
    let outcome = commands.rename(&at, "fl2", true).unwrap();
    assert!(outcome.report.written);
    project.check_files(&[
        (
            "a.h",
            "#define GET(p) ((p)->fld)\nstruct S { int fl2; };\n\
             int f(struct S *s) { return s->fl2 + GET(s); }\n",
        ),
        (
            "b.c",
            "#include \"a.h\"\nint g(struct S *s) { return s->fl2; }\n",
        ),
    ]);
    let (json, _) = lspc::mcp::edit_tools::outcome_result(&project.root, &outcome);
    assert_eq!(
        json["notRenamed"],
        serde_json::json!([{"file": "a.h", "line": 1}]),
        "{json}"
    );
    assert!(
        outcome
            .note
            .as_deref()
            .is_some_and(|note| note.starts_with("not renamed by the server: a.h:1 ")),
        "{:?}",
        outcome.note
    );
}

/// helper-48 on dtolnay/ryu: a cold `lspc rename` printed `nothing to rename at …` (exit 2) for a
/// real function, which the same command renamed right after. The readiness wait judged the
/// server by the state read before its 20 s analysis wait: rust-analyzer had not begun its
/// progress then, and was loading its crate graph when the rename went out, answering `null`.
/// The state is read again after that wait, and a `null` answer while the server is still busy
/// is "still indexing" (exit 3), not "nothing to rename". Fixture server: no publish, progress
/// begun 300 ms after `initialized` and never ended, `rename` answered `null`.
#[test]
fn a_null_rename_from_a_server_still_indexing_is_not_nothing_to_rename() {
    use crate::support::Workspace;
    let mut workspace = Workspace::new("rename-still-indexing");
    workspace.file("a.py", "target = 1\n");
    let scenario = serde_json::json!({
        "publishOnChange": false,
        "afterInitialized": [{"after": 300, "actions": [
            {"progress": {"token": "load", "create": true, "begin": "Loading", "end": false}}
        ]}],
        "rules": [{"method": "textDocument/rename", "actions": [{"reply": null}]}]
    });
    let config = workspace.fixture_config(&[("fx", &[".py"], scenario)]);
    workspace
        .lspc()
        .args(["rename", "--no-builtin", "--config"])
        .arg(&config)
        .args(["a.py:1:1", "renamed", "--timeout", "2"])
        .run()
        .status(3)
        .stderr_contains(
            "lspc: fx was still indexing when the wait ended and found nothing to rename at \
             a.py:1:1; nothing was written (try again, or with a longer --timeout)\n",
        );
    assert_eq!(workspace.read("a.py"), "target = 1\n");
}

/// Two new users' trials (helper-52, helper-53), and a third's (helper-56: "a rename can break
/// the build and still exit 0"): a written edit that brings new errors exits 1, with a line
/// on stderr saying why, and `--format json` counts them in `newErrors`; an edit that brings
/// none exits 0. The fixture server reports each `ERROR: message` line as an error.
#[test]
fn a_written_edit_that_brings_new_errors_exits_1() {
    let mut workspace = crate::support::Workspace::new("edit-new-errors");
    workspace.file("a.py", "x = 1\ny = 2\n");
    let config = workspace.fixture_config(&[("fx", &[".py"], serde_json::json!({}))]);
    let edit = |old: &str, new: &str, extra: &[&str]| {
        workspace
            .lspc()
            .args(["--no-builtin", "--config"])
            .arg(&config)
            .args(["edit", "a.py", "--old", old, "--new", new])
            .args(extra)
            .run()
    };
    edit("x = 1", "ERROR: broken", &[])
        .status(1)
        .stdout_contains("[Line 1:1] broken")
        .stderr_contains(
            "lspc: exit status 1: the edit was written and brought 1 new error (listed above)",
        );
    assert_eq!(workspace.read("a.py"), "ERROR: broken\ny = 2\n");
    let json = edit("y = 2", "ERROR: again", &["--format", "json"]);
    json.status(1);
    let answer: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(answer["applied"], true, "{answer}");
    assert_eq!(answer["newErrors"], 1, "{answer}");
    // The old errors are no longer new: fixing one brings none.
    edit("ERROR: again", "y = 2", &[]).status(0);
    assert_eq!(workspace.read("a.py"), "ERROR: broken\ny = 2\n");
}
