//! gopls when it cannot load the workspace: a file it then gives nothing is not checked (a
//! server failure, exit 3, as `go vet ./...` fails there too), never clean, and the check ends
//! as soon as gopls has said so instead of waiting out `--timeout`. Real gopls and go from
//! Debian's `gopls` and `golang-go` (Go 1.19).

use std::time::Duration;

use serde_json::json;

use crate::require_program;
use crate::support::*;

/// `lspc check --format json --timeout 30 ARGS` in `workspace`, with `GOPROXY=off`.
fn check(workspace: &Workspace, args: &[&str]) -> Output {
    workspace
        .lspc()
        .env("GOPROXY", "off")
        .args(["check", "--format", "json", "--timeout", "30"])
        .args(args)
        .timeout(Duration::from_secs(90))
        .run()
}

/// Left over from round brk11: with a `go.mod` it cannot parse, gopls 0.5 (Debian) publishes an
/// empty set for the file and keeps a `$/progress` "Error loading workspace" open until the
/// error is gone; lspc took that for work in progress and waited the whole `--timeout`
/// (20.2 s with `--timeout 20`), then reported a timeout. Now that progress is gopls's health
/// error: the file is not checked, a server failure, at once.
#[test]
fn a_go_file_of_a_module_gopls_cannot_load_is_not_checked_at_once() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("go-broken-go-mod");
    workspace.file("go.mod", "module example.com/x\n\ngo 1.19\nrequire (\n");
    workspace.file("a.go", "package x\n\nfunc F() int { return \"no\" }\n");
    let reason = "a.go not checked: gopls: Error loading workspace: go.mod:5: syntax error \
                  (unterminated block started at go.mod:4:1)";
    let named = check(&workspace, &["a.go"]);
    named.status(3);
    assert_eq!(
        file_states(&named.json()),
        [("a.go".to_owned(), "error".to_owned(), reason.to_owned())],
        "{}",
        named.story()
    );
}

/// Left over from round brk11: a module requiring one that is not in the module cache, with
/// `GOPROXY=off`: gopls keeps its "Error loading workspace" progress open, and lspc waited out
/// `--timeout` (exit 3, a timeout). Now every file of the module is not checked at once, with
/// gopls's load error as the reason, as `go vet ./...` fails with it. (In two phases, gopls's
/// first one type-checked the importing file alone and reported its broken import; lspc asks
/// gopls for one phase, `config/gopls.rs`, whose whole-workspace pass gives that file nothing
/// while the load fails.) `go.mod` keeps gopls's finding on it.
#[test]
fn a_go_module_missing_a_dependency_is_reported_at_once() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("go-missing-module");
    workspace.file(
        "go.mod",
        "module example.com/x\n\ngo 1.19\n\nrequire example.com/missing v1.0.0\n",
    );
    workspace.file(
        "a.go",
        "package x\n\nimport \"example.com/missing\"\n\nvar X = missing.Y\n",
    );
    workspace.file("other/b.go", "package other\n\nfunc G() int { return 1 }\n");
    let walked = check(&workspace, &["."]);
    walked.status(3);
    let report = walked.json();
    let error = "Error loading workspace: 1 modules have errors: \
                 example.com/x:example.com/missing@v1.0.0: missing go.sum entry; to add it: go \
                 mod download example.com/missing";
    assert_eq!(
        file_states(&report),
        [
            (
                "a.go".to_owned(),
                "error".to_owned(),
                format!("a.go not checked: gopls: {error}")
            ),
            ("go.mod".to_owned(), "diagnostics".to_owned(), String::new()),
            (
                "other/b.go".to_owned(),
                "error".to_owned(),
                format!("b.go not checked: gopls: {error}")
            ),
        ],
        "{}",
        walked.story()
    );
    assert_eq!(
        json_diagnostics(&report),
        ["go.mod:1:1-1:21 error [go list -] go.sum is out of sync with go.mod. Please update it by \
          applying the quick fix."],
        "{}",
        walked.story()
    );
}

/// Left over from round brk11: gopls with no `go` on its `PATH` makes no view of the folder
/// (`window/showMessage` "Error loading workspace folders (expected 1, got 0)") and never
/// publishes; lspc waited out `--timeout` and reported a timeout. Now the file is not checked,
/// a server failure, as soon as gopls has said so.
#[test]
fn a_go_file_is_not_checked_when_gopls_finds_no_go_command() {
    let Some(gopls) = which("gopls") else {
        eprintln!("skipped: gopls is not installed (see .ci/run)");
        return;
    };
    let workspace = Workspace::new("go-without-go");
    workspace.file("go.mod", "module example.com/x\n\ngo 1.19\n");
    workspace.file("a.go", "package x\n\nfunc F() int { return \"no\" }\n");
    // A PATH holding gopls and nothing else.
    let bin = workspace.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&gopls, bin.join("gopls")).unwrap();
    let config = workspace.config(json!({
        "gopls": {"command": gopls, "env": {"PATH": bin}, "extensionToLanguage": {".go": "go"}}
    }));
    let named = workspace
        .lspc()
        .args([
            "check",
            "--no-builtin",
            "--format",
            "json",
            "--timeout",
            "30",
        ])
        .arg("--config")
        .arg(&config)
        .arg("a.go")
        .timeout(Duration::from_secs(90))
        .run();
    named.status(3);
    let report = named.json();
    let reason = report["files"][0]["reason"].as_str().unwrap_or_default();
    let expected = "a.go not checked: gopls: Error loading workspace folders (expected 1, got 0): ";
    if !reason.starts_with(expected) || report["files"][0]["state"] != "error" {
        named.fail(&format!(
            "expected an error state with a reason from {expected:?}"
        ));
    }
}
