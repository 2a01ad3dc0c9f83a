//! `lspc doctor` against a broken fake server (a script that fails the way a Python server with a
//! missing module does), a missing program, a real server (ruff 0.17.6), and a built-in whose
//! binary is not on PATH (its install command is printed).

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};

use crate::require_program;
use crate::support::{which, Workspace};

fn server<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

#[test]
fn doctor_reports_broken_missing_and_working_servers() {
    require_program!("ruff");
    let workspace = Workspace::new("doctor");
    workspace
        .file("a.py", "import os\n")
        .file("notes.md", "# notes\n")
        .file("unused.zzz", "");
    let broken = workspace.root.parent().unwrap().join("broken-server");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho '  File \"x\", line 5' >&2\n\
         echo \"ImportError: cannot import name 'LanguageServer' from 'pygls.server'\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = workspace.config(json!({
        "broken": {"command": broken, "extensionToLanguage": {".py": "python"}},
        "absent": {"command": "lspc-test-no-such-server", "extensionToLanguage": {".md": "markdown"}},
        "ruff": {"command": which("ruff").unwrap(), "args": ["server"],
                 "extensionToLanguage": {".py": "python"}},
        "idle": {"command": which("ruff").unwrap(), "args": ["server"],
                 "extensionToLanguage": {".idle": "idle"}},
    }));
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .args(["doctor", "--format", "json", "--timeout", "30"])
        .run();
    output.status(1);
    let report = output.json();
    let broken = server(&report, "broken");
    assert_eq!(broken["status"], "found-but-broken", "{report}");
    assert_eq!(
        broken["error"],
        "ImportError: cannot import name 'LanguageServer' from 'pygls.server'"
    );
    assert_eq!(broken["files"], 1);
    let absent = server(&report, "absent");
    assert_eq!(absent["status"], "not-found");
    assert_eq!(absent["error"], "lspc-test-no-such-server is not on PATH");
    assert_eq!(absent["path"], Value::Null);
    let ruff = server(&report, "ruff");
    assert_eq!(ruff["status"], "working", "{report}");
    assert_eq!(ruff["positionEncoding"], "utf-8");
    assert_eq!(ruff["diagnosticsMode"], "pull");
    assert_eq!(ruff["sampleFile"], "a.py");
    // F401 `os` imported but unused.
    assert_eq!(ruff["diagnostics"], 1);
    assert!(ruff["initializeMs"].as_u64().is_some());
    assert!(ruff["firstDiagnosticsMs"].as_u64().is_some());
    assert_eq!(server(&report, "idle")["status"], "not-needed");

    let human = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .arg("doctor")
        .run();
    human.status(1);
    human.stdout_contains(
        "): found but broken: ImportError: cannot import name 'LanguageServer' from 'pygls.server'\n",
    );
    human.stdout_contains("absent (--config ");
    human.stdout_contains("): not found: lspc-test-no-such-server is not on PATH\n");
    human.stdout_contains("1 working, 1 found but broken, 1 not found, 1 not needed\n");
}

#[test]
fn doctor_names_the_install_command_of_a_missing_builtin_and_exits_0_when_all_work() {
    let workspace = Workspace::new("doctor-builtin");
    workspace.file("Cargo.toml", "[package]\nname = \"x\"\n");
    let empty_path = workspace.root.parent().unwrap().join("empty-bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let output = workspace
        .lspc()
        .env("PATH", &empty_path)
        .args(["doctor"])
        .run();
    output.status(1);
    output.stdout_contains("taplo (built-in): not found: taplo is not on PATH\n");
    output.stdout_contains("  install: cargo install taplo-cli --locked\n");

    // Nothing needed is missing: exit 0.
    let clean = Workspace::new("doctor-clean");
    clean.file("notes.md", "# notes\n");
    let output = clean.lspc().env("PATH", &empty_path).arg("doctor").run();
    output.status(0);
}

/// Seed 003's recommendation: files no available server serves get one hint per extension per
/// run, naming the built-in server and its install command; `--no-hints` and `LSPC_NO_HINTS=1`
/// turn it off.
#[test]
fn check_hints_once_which_server_to_install() {
    let workspace = Workspace::new("hints");
    workspace
        .file("a.toml", "a = 1\n")
        .file("sub/b.toml", "b = 2\n")
        .file("notes.md", "# notes\n");
    let empty_path = workspace.root.parent().unwrap().join("empty-bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let hint = "lspc: hint: 2 .toml files: taplo is not installed (taplo not on PATH); \
                install taplo: cargo install taplo-cli --locked\n";
    let output = workspace.lspc().env("PATH", &empty_path).arg("check").run();
    output.status(2);
    output.stderr_contains(hint);
    assert_eq!(
        output.stderr.matches("lspc: hint:").count(),
        1,
        "{}",
        output.stderr
    );
    // A query on such a file says the same for that one file.
    let query = workspace
        .lspc()
        .env("PATH", &empty_path)
        .args(["hover", "a.toml:1:1"])
        .run();
    query.status(2);
    query.stderr_contains(
        "lspc: hint: 1 .toml file: taplo is not installed (taplo not on PATH); \
         install taplo: cargo install taplo-cli --locked\n",
    );
    let quiet = workspace
        .lspc()
        .env("PATH", &empty_path)
        .args(["--no-hints", "check"])
        .run();
    assert!(!quiet.stderr.contains("lspc: hint:"), "{}", quiet.stderr);
    let quiet = workspace
        .lspc()
        .env("PATH", &empty_path)
        .env("LSPC_NO_HINTS", "1")
        .arg("check")
        .run();
    assert!(!quiet.stderr.contains("lspc: hint:"), "{}", quiet.stderr);
}

/// Found by a new user (trial 15): `go vet ./...` failed on xxhash's `xxhash_amd64.s` while
/// `lspc check .` said clean, and bats-core's `.bats` tests were passed over without a word.
/// Code that no language server checks is named once per kind; `--no-hints` turns it off.
#[test]
fn check_names_the_source_kinds_no_server_checks() {
    let mut workspace = Workspace::new("unchecked-kinds");
    workspace
        .file("a.py", "x = 1\n")
        .file("go/main.go", "package main\n")
        .file("go/sum_amd64.s", "TEXT ·sum(SB),4,$0\n")
        .file("go/sum_arm64.s", "TEXT ·sum(SB),4,$0\n")
        .file("test/one.bats", "@test \"one\" { true; }\n")
        .file("notes.md", "# notes\n");
    let config = workspace.fixture_config(&[("fx", &[".py", ".go"], json!({}))]);
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(&config)
        .run();
    output.status(0);
    output.stderr_contains(
        "lspc: hint: 2 .s files not checked: no language server checks Go assembly; \
         `go vet ./...` does (its asmdecl analyzer)\n\
         lspc: hint: 1 .bats file not checked: no language server checks Bats tests; \
         `shellcheck` lints them directly\n",
    );
    assert_eq!(
        output.stderr.matches("lspc: hint:").count(),
        2,
        "{}",
        output.stderr
    );
    let quiet = workspace
        .lspc()
        .args(["--no-hints", "check", "--no-builtin", "--config"])
        .arg(&config)
        .run();
    assert!(!quiet.stderr.contains("lspc: hint:"), "{}", quiet.stderr);
}

/// A new user's trial: `lspc doctor` said pyright has `push diagnostics`, read from its
/// `initialize` result, while every check pulled them: pyright 1.1.414 registers its
/// `diagnosticProvider` dynamically, after `initialize`. The mode is the one its diagnostics
/// settled by.
#[test]
fn doctor_names_pyrights_dynamically_registered_pull() {
    require_program!("pyright-langserver");
    let workspace = Workspace::new("doctor-pyright");
    workspace.file("a.py", "x: int = 'a'\n");
    let config = workspace.config(json!({
        "pyright": {"command": "pyright-langserver", "args": ["--stdio"],
                    "extensionToLanguage": {".py": "python"}},
    }));
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .args(["doctor", "--format", "json", "--timeout", "60"])
        .run();
    output.status(0);
    let report = output.json();
    let pyright = server(&report, "pyright");
    assert_eq!(
        (
            &pyright["status"],
            &pyright["diagnosticsMode"],
            &pyright["diagnostics"]
        ),
        (&json!("working"), &json!("pull"), &json!(1)),
        "{}",
        output.story()
    );
}
