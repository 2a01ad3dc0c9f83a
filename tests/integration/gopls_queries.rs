//! Queries to gopls go out without a readiness wait (`engine/query_gate.rs`): each gopls request
//! waits for its own workspace load, so waiting for the file's diagnostics first only delayed the
//! answer (a one-shot `lspc definition` on hashicorp/golang-lru took 2.1 s against
//! `gopls definition`'s 1.1 s). The fixture server stands in for gopls (it runs under the
//! program name `gopls`) where the route must be seen; Debian's gopls shows the answers are the
//! ones gopls's own CLI gives.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::require_program;
use crate::support::*;

/// A fixture server named `name` that never publishes diagnostics, with `--timeout 3`: a query
/// that waits for the file's diagnostics waits out the whole timeout first.
/// Returns the answer and the configuration.
fn silent_server_definition(workspace: &mut Workspace, name: &str) -> (Output, PathBuf) {
    let scenario = json!({
        "capabilities": {"textDocumentSync": {"openClose": true, "change": 1}, "definitionProvider": true},
        "publishOnChange": false,
    });
    let config = workspace.fixture_config(&[(name, &[".go"], scenario)]);
    let config = if name == "gopls" {
        // Run under the program name `gopls`, as the real one is found on PATH.
        let link = config.with_file_name("bin").join("gopls");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(fixture_bin(), &link).unwrap();
        let mut entries: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
        entries[name]["command"] = json!(link);
        std::fs::write(&config, entries.to_string()).unwrap();
        config
    } else {
        config
    };
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--timeout", "3", "--config"])
        .arg(&config)
        .args(["definition", "a.go:3:total"])
        .env("RUST_LOG", "lspc=debug")
        .run();
    (output, config)
}

/// The gopls entry's first query about a file is sent in the turn that opened the file; another
/// server's first query waits for the file's diagnostics (here: the whole timeout, as it never
/// publishes). The answer is the same, and `lspc servers` names the rule.
#[test]
fn a_first_query_to_gopls_is_sent_without_waiting_for_diagnostics() {
    if skip_in_session_mode("the route is seen in the engine's debug log, which a session keeps") {
        return;
    }
    let text = "package a\n\nfunc total() int { return 1 }\nvar x = total()\n";
    let mut gopls = Workspace::new("gopls-query-at-once");
    gopls.file("a.go", text);
    let (at_once, config) = silent_server_definition(&mut gopls, "gopls");
    let mut other = Workspace::new("other-query-waits");
    other.file("a.go", text);
    let (waited, _) = silent_server_definition(&mut other, "fx");
    for output in [&at_once, &waited] {
        output
            .status(0)
            .stdout_is("a.go:3:6  func total() int { return 1 }\n");
    }
    assert!(
        at_once
            .stderr
            .contains("gopls: textDocument/definition sent in its sync's loop turn"),
        "{}",
        at_once.story()
    );
    assert!(
        !at_once.stderr.contains("analysis wait"),
        "{}",
        at_once.story()
    );
    assert!(
        waited.stderr.contains("fx: analysis wait for ")
            && !waited.stderr.contains("sent in its sync's loop turn"),
        "{}",
        waited.story()
    );
    let servers = gopls.run_with(&config, &["servers"]);
    servers.status(0);
    assert!(
        servers.stdout.contains(
            "  gopls: quiet-after-publish: the publish for the sent version, then a quiet period \
             with no $/progress work (no completeness signal); queries are sent at once, without \
             waiting for the file's diagnostics: each request waits for the server's own \
             workspace load;"
        ),
        "{}",
        servers.story()
    );
}

/// Debian's gopls, a fresh module of two packages: the one-shot definition and references of a
/// function used across packages, asked before gopls has published anything, are the locations
/// `gopls definition` and `gopls references` print (both leave the declaration out of the
/// references).
#[test]
fn real_gopls_answers_a_first_query_as_its_cli_does() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("gopls-first-query");
    workspace
        .file("go.mod", "module example.com/q\n\ngo 1.19\n")
        .file(
            "util/util.go",
            "package util\n\n// Twice doubles x.\nfunc Twice(x int) int {\n\treturn 2 * x\n}\n",
        )
        .file(
            "main.go",
            "package main\n\nimport \"example.com/q/util\"\n\nfunc main() {\n\tprintln(util.Twice(1), util.Twice(2))\n}\n",
        );
    let cli = |args: &[&str]| -> String {
        let output = std::process::Command::new("gopls")
            .args(args)
            .current_dir(workspace.path("."))
            .output()
            .unwrap();
        assert!(output.status.success(), "gopls {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let root = workspace.path(".").canonicalize().unwrap();
    let relative = |line: &str| -> String {
        // `/root/util/util.go:4:6-11` → `util/util.go:4:6`
        let location = line
            .split_whitespace()
            .next()
            .unwrap()
            .trim_end_matches(':');
        let location = location.rsplit_once('-').unwrap().0;
        Path::new(location)
            .strip_prefix(&root)
            .unwrap_or_else(|_| panic!("{line:?} is not below {root:?}"))
            .display()
            .to_string()
    };
    let definition = workspace.lspc().args(["definition", "main.go:6:15"]).run();
    definition.status(0);
    // `gopls definition` prints `PATH:LINE:COL-END: defined here as …` and the doc comment.
    assert_eq!(
        first_fields(&definition.stdout),
        [relative(
            cli(&["definition", "main.go:6:15"]).lines().next().unwrap()
        )],
        "{}",
        definition.story()
    );
    let references = workspace.lspc().args(["references", "main.go:6:15"]).run();
    references.status(0);
    let mut expected: Vec<String> = cli(&["references", "main.go:6:15"])
        .lines()
        .map(relative)
        .collect();
    expected.sort();
    let mut got = first_fields(&references.stdout);
    got.sort();
    assert_eq!(got, expected, "{}", references.story());
}

/// The `FILE:LINE:COLUMN` that starts each line of a query's text output.
fn first_fields(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|line| line.split_whitespace().next().unwrap().to_owned())
        .collect()
}
