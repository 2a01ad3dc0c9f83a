//! Issue 17: `lspc check` at repository scale. Per-project server instances in a monorepo (real
//! pyright 1.1.414 and typescript-language-server 5.3.0 + TypeScript 6), baselines, changed
//! files and shards (real ruff 0.17.6), and a 20,000-file tree under `ulimit -n 256` (fixture
//! server). Every wait is bounded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::require_program;
use crate::support::*;

/// Generous: pyright and typescript-language-server start one process per project, on a
/// machine shared by several builds.
const REAL_TIMEOUT: &str = "240";

fn monorepo_config(workspace: &Workspace) -> std::path::PathBuf {
    workspace.config(json!({ "pyright": pyright_entry(), "typescript": typescript_entry() }))
}

/// Each file gets its own project's verdict: `services/beta/pyproject.toml` turns
/// `reportAssignmentType` into a warning and both services resolve `shared` through their own
/// `extraPaths`; `packages/one` is strict and `packages/two` is not. With one pyright at the
/// workspace root instead (`rootMarkers: []`) `shared` cannot be resolved at all.
#[test]
fn monorepo_files_get_their_own_projects_diagnostics() {
    require_program!("pyright-langserver");
    require_program!("typescript-language-server");
    let workspace = Workspace::copy_of("monorepo");
    let config = monorepo_config(&workspace);
    let output = workspace
        .lspc()
        .args([
            "check",
            "--no-builtin",
            "--format",
            "json",
            "--timeout",
            REAL_TIMEOUT,
        ])
        // Hints too: packages/two's 7044 is its non-strict verdict.
        .args(["--severity", "hint", "--config"])
        .arg(&config)
        .timeout(Duration::from_secs(600))
        .run();
    output.status(1);
    let nbsp = "\u{a0}\u{a0}";
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            "packages/one/src/index.ts:3:23-3:28 error [typescript 7006] Parameter 'value' implicitly has an 'any' type.".to_owned(),
            "packages/two/src/index.ts:3:23-3:28 hint [typescript 7044] Parameter 'value' implicitly has an 'any' type, but a better type may be inferred from usage.".to_owned(),
            format!("services/alpha/app/main.py:3:14-3:22 error [Pyright reportAssignmentType] Type \"str\" is not assignable to declared type \"int\"\n{nbsp}\"str\" is not assignable to \"int\""),
            format!("services/beta/app/main.py:3:14-3:22 warning [Pyright reportAssignmentType] Type \"str\" is not assignable to declared type \"int\"\n{nbsp}\"str\" is not assignable to \"int\""),
        ],
        "{}",
        output.story()
    );

    // The control: one instance at the workspace root sees neither project's settings.
    let flat = workspace.config(json!({ "pyright": {
        "command": "pyright-langserver", "args": ["--stdio"],
        "extensionToLanguage": {".py": "python"}, "rootMarkers": []
    }}));
    let output = workspace
        .lspc()
        .args([
            "check",
            "--no-builtin",
            "--format",
            "json",
            "--timeout",
            REAL_TIMEOUT,
        ])
        .arg("--config")
        .arg(&flat)
        .arg("services/beta/app/main.py")
        .timeout(Duration::from_secs(600))
        .run();
    assert_eq!(
        json_diagnostics(&output.json()),
        ["services/beta/app/main.py:1:6-1:12 error [Pyright reportMissingImports] Import \"shared\" could not be resolved"],
        "{}",
        output.story()
    );
}

/// Queries route to the file's instance: the same `helper` name resolves into each project's
/// own `shared.py` / `util.ts` (the copies differ in their first lines, so a wrong project's
/// answer has a different line).
#[test]
fn monorepo_definitions_route_to_the_files_project() {
    require_program!("pyright-langserver");
    require_program!("typescript-language-server");
    let workspace = Workspace::copy_of("monorepo");
    let config = monorepo_config(&workspace);
    let cases = [
        (
            "services/alpha/app/main.py",
            3,
            "services/alpha/lib/shared.py:1:5  def helper() -> str:",
        ),
        (
            "services/beta/app/main.py",
            3,
            "services/beta/lib/shared.py:3:5  def helper() -> str:",
        ),
        (
            "packages/one/src/index.ts",
            4,
            "packages/one/src/util.ts:1:17  export function helper(value: number): number {",
        ),
        (
            "packages/two/src/index.ts",
            4,
            "packages/two/src/util.ts:2:17  export function helper(value: number): number {",
        ),
    ];
    // One batch session, so all four instances run in one lspc process. Each file's settled
    // diagnostics come first: under load tsserver answers a definition with the import binding
    // until it has loaded its project, and the settled publish says it has.
    let lines: String = cases
        .iter()
        .enumerate()
        .map(|(n, (file, line, _))| {
            let diagnostics = json!({"id": format!("d{n}"), "op": "diagnostics", "file": file});
            let definition =
                json!({"id": n, "op": "definition", "file": file, "line": line, "symbol": "helper"});
            format!("{diagnostics}\n{definition}\n")
        })
        .collect();
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .args(["batch", "--timeout", REAL_TIMEOUT])
        .stdin(lines)
        .timeout(Duration::from_secs(600))
        .run();
    output.status(0);
    let answers: Vec<Value> = output
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("json line"))
        .filter(|answer| answer["id"].is_number())
        .collect();
    assert_eq!(answers.len(), cases.len(), "{}", output.story());
    for (answer, (file, _, expected)) in answers.iter().zip(cases) {
        let location = &answer["result"]["locations"][0];
        let shown = format!(
            "{}:{}:{}  {}",
            location["path"].as_str().unwrap_or("?"),
            location["line"],
            location["column"],
            location["lineText"].as_str().unwrap_or("?")
        );
        assert_eq!(shown, expected, "{file}: {answer}\n{}", output.story());
    }
}

/// A workspace for ruff with only the pyflakes rules, so a user's ruff configuration cannot
/// change the findings.
fn ruff_workspace(name: &str) -> (Workspace, std::path::PathBuf) {
    let workspace = Workspace::new(name);
    workspace.file("ruff.toml", "[lint]\nselect = [\"F\"]\n");
    let config = workspace.config(json!({ "ruff": ruff_entry() }));
    (workspace, config)
}

fn ruff_check(workspace: &Workspace, config: &Path, extra: &[&str]) -> Output {
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--fail-on", "warning", "--config"])
        .arg(config)
        .args(extra)
        .timeout(Duration::from_secs(300))
        .run()
}

/// The baseline round trip of issue 17: write a baseline, then add one finding (`re`), move
/// another down three lines (`unused`) and fix a third (`sys`): exactly one new finding is
/// reported and one baseline finding is gone, whether the baseline is json or sarif output.
/// ruff 0.17.6.
#[test]
fn baseline_reports_only_new_findings_and_counts_gone_ones() {
    require_program!("ruff");
    let (workspace, config) = ruff_workspace("baseline");
    workspace
        .file(
            "a.py",
            "import os\nimport sys\n\n\ndef f():\n    unused = 1\n    return None\n",
        )
        .file("b.py", "import os\n");
    let baseline_json = workspace.root.parent().unwrap().join("baseline.json");
    let written = ruff_check(
        &workspace,
        &config,
        &[
            "--format",
            "sarif",
            "--write-baseline",
            baseline_json.to_str().unwrap(),
        ],
    );
    written.status(1);
    let baseline_sarif = workspace.root.parent().unwrap().join("baseline.sarif");
    std::fs::write(&baseline_sarif, &written.stdout).unwrap();
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&baseline_json).unwrap())
        .expect("the baseline is json");
    assert_eq!(
        json_diagnostics(&recorded),
        [
            "a.py:1:8-1:10 warning [Ruff F401] `os` imported but unused\n\nhelp: Remove unused import: `os`",
            "a.py:2:8-2:11 warning [Ruff F401] `sys` imported but unused\n\nhelp: Remove unused import: `sys`",
            "a.py:6:5-6:11 warning [Ruff F841] Local variable `unused` is assigned to but never used\n\nhelp: Remove assignment to unused variable `unused`",
            "b.py:1:8-1:10 warning [Ruff F401] `os` imported but unused\n\nhelp: Remove unused import: `os`",
        ]
    );

    // Against an unchanged tree nothing is new: exit 0 although --fail-on warning.
    for baseline in [&baseline_json, &baseline_sarif] {
        let output = ruff_check(
            &workspace,
            &config,
            &["--baseline", baseline.to_str().unwrap()],
        );
        output.status(0).stdout_is("").stderr_contains(
            "2 files checked: 0 errors, 0 warnings, 0 info, 0 hints; baseline: 4 matched, 0 gone",
        );
    }

    workspace.file(
        "a.py",
        "import os\nimport re\n\n\n\n\n\ndef f():\n    unused = 1\n    return None\n",
    );
    for baseline in [&baseline_json, &baseline_sarif] {
        let output = ruff_check(
            &workspace,
            &config,
            &["--format", "json", "--baseline", baseline.to_str().unwrap()],
        );
        output.status(1).stderr_contains(
            "2 files checked: 0 errors, 1 warning, 0 info, 0 hints in 1 file; baseline: 3 matched, 1 gone",
        );
        let report = output.json();
        assert_eq!(
            json_diagnostics(&report),
            ["a.py:2:8-2:10 warning [Ruff F401] `re` imported but unused\n\nhelp: Remove unused import: `re`"],
            "{}",
            output.story()
        );
        assert_eq!(
            report["summary"]["baseline"],
            json!({"matched": 3, "gone": 1})
        );
    }

    // Bad baselines are usage errors naming the file, before any server starts.
    let broken = workspace.root.parent().unwrap().join("broken.json");
    std::fs::write(&broken, "{\"files\": 3}").unwrap();
    ruff_check(
        &workspace,
        &config,
        &["--baseline", broken.to_str().unwrap()],
    )
    .status(2)
    .stderr_contains(&format!(
        "lspc: baseline {} is not lspc check json or sarif output: \"files\": expected an array",
        broken.display()
    ));
    let missing = workspace.root.parent().unwrap().join("missing.json");
    ruff_check(
        &workspace,
        &config,
        &["--baseline", missing.to_str().unwrap()],
    )
    .status(2)
    .stderr_contains(&format!(
        "lspc: cannot read baseline {}: ",
        missing.display()
    ));
}

/// gopls publishes diagnostics for every file of the package of a file it opened. With
/// `--shard 1/2`, `big.go` (the larger file, shard 1) was opened and gopls also published
/// `bad.go`'s type error; `bad.go` is shard 2's file, but shard 1 took it for a file no shard
/// opens and reported it too, as its path's hash names shard 1: the two shards had the error
/// twice. A file another shard checks is left to that shard.
#[test]
fn a_file_gopls_publishes_from_another_shard_is_reported_once() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("go shards");
    workspace.file("go.mod", "module example.com/shard\n\ngo 1.19\n");
    let padding: String = (0..40)
        .map(|n| format!("// Value{n} is padding.\nfunc Value{n}() int {{ return {n} }}\n\n"))
        .collect();
    workspace.file("big.go", &format!("package shard\n\n{padding}"));
    workspace.file(
        "bad.go",
        "package shard\n\nfunc bad() int { return \"no\" }\n",
    );
    let mut reported = Vec::new();
    for shard in ["1/2", "2/2"] {
        let output = workspace
            .lspc()
            .args([
                "check",
                "--shard",
                shard,
                "--format",
                "json",
                "--timeout",
                "30",
            ])
            .timeout(Duration::from_secs(90))
            .run();
        let report = output.json();
        let files: Vec<String> = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                format!(
                    "{} {}",
                    f["path"].as_str().unwrap(),
                    f["state"].as_str().unwrap()
                )
            })
            .collect();
        reported.push((shard, files, json_diagnostics(&report)));
    }
    assert_eq!(
        reported,
        [
            ("1/2", vec!["big.go clean".to_owned()], vec![]),
            (
                "2/2",
                vec!["bad.go diagnostics".to_owned()],
                vec!["bad.go:3:25-3:29 error [compiler IncompatibleAssign] cannot use \"no\" (untyped string constant) as int value in return statement".to_owned()]
            ),
        ]
    );
}

/// Found trying lspc on cespare/xxhash (round nu11): its nested module `xxhashbench/go.mod`
/// cannot load offline and gopls reports that on `go.mod`, a file lspc does not open. Two gopls
/// instances (one per `go.mod`) share the server's name, and the report of files no check
/// opened visited that name once per instance: every go.mod error was listed twice.
#[test]
fn a_nested_go_mod_error_from_gopls_is_reported_once() {
    require_program!("gopls");
    require_program!("go");
    let workspace = Workspace::new("go nested module");
    workspace.file("go.mod", "module example.com/root\n\ngo 1.19\n");
    workspace.file("root.go", "package root\n\nfunc Root() int { return 1 }\n");
    workspace.file(
        "sub/go.mod",
        "module example.com/sub\n\ngo 1.19\n\nrequire example.com/missing v1.0.0\n",
    );
    workspace.file(
        "sub/sub.go",
        "package sub\n\nimport \"example.com/missing\"\n\nvar X = missing.Y\n",
    );
    let output = workspace
        .lspc()
        .env("GOPROXY", "off")
        .args(["check", "sub", "--format", "json", "--timeout", "5"])
        .timeout(Duration::from_secs(90))
        .run();
    let report = output.json();
    let go_mod: Vec<String> = json_diagnostics(&report)
        .into_iter()
        .filter(|line| line.starts_with("sub/go.mod:"))
        .collect();
    if go_mod.is_empty() {
        output.fail("gopls reported nothing on sub/go.mod");
    }
    let distinct: BTreeSet<&String> = go_mod.iter().collect();
    if distinct.len() != go_mod.len() {
        output.fail(&format!(
            "a go.mod diagnostic was reported twice: {go_mod:#?}"
        ));
    }
}

/// Sharding with ruff 0.17.6 over files of varied sizes: for N = 1, 2, 3 and 7 every file is in
/// exactly one shard, the union of the shards' findings is the full check's, each SARIF run
/// names its shard in `automationDetails`, and `lspc sarif-merge` of the shards has the full
/// check's results.
#[test]
fn shards_partition_the_files_and_merge_back_to_the_full_check() {
    require_program!("ruff");
    let (workspace, config) = ruff_workspace("shards");
    for n in 0..23 {
        let padding = "# padding\n".repeat(n * 7 % 40);
        let text = format!("import os\n{padding}value_{n} = undefined_{n}\n");
        workspace.file(&format!("pkg/m{n:02}.py"), &text);
    }
    let full = ruff_check(&workspace, &config, &["--format", "json"]);
    full.status(1);
    let full_rows = json_diagnostics(&full.json());
    assert_eq!(full_rows.len(), 46, "{}", full.story());
    let full_sarif = ruff_check(&workspace, &config, &["--format", "sarif"]);
    let mut full_results = sarif_results(&full_sarif.json());
    full_results.sort();
    for count in [1, 2, 3, 7] {
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        let mut rows = Vec::new();
        let mut sarif_files = Vec::new();
        for index in 1..=count {
            let shard = format!("{index}/{count}");
            let output = ruff_check(
                &workspace,
                &config,
                &["--format", "json", "--shard", &shard],
            );
            let report = output.json();
            assert_eq!(report["summary"]["shard"], json!(shard));
            for file in report["files"].as_array().unwrap() {
                let path = file["path"].as_str().unwrap().to_owned();
                let earlier = seen.insert(path.clone(), index);
                assert_eq!(
                    earlier, None,
                    "{path} in shards {earlier:?} and {index} of {count}"
                );
            }
            rows.extend(json_diagnostics(&report));
            let sarif = ruff_check(
                &workspace,
                &config,
                &["--format", "sarif", "--shard", &shard],
            );
            let document = sarif.json();
            assert_eq!(
                document["runs"][0]["automationDetails"]["id"],
                json!(format!("lspc/shard-{index}-of-{count}/"))
            );
            let path = workspace
                .root
                .parent()
                .unwrap()
                .join(format!("shard-{index}-of-{count}.sarif"));
            std::fs::write(&path, &sarif.stdout).unwrap();
            sarif_files.push(path);
        }
        assert_eq!(seen.len(), 23, "N = {count}: every file in a shard");
        if count == 7 {
            let sizes: BTreeSet<usize> = (1..=7)
                .map(|index| seen.values().filter(|shard| **shard == index).count())
                .collect();
            assert!(sizes.iter().all(|n| *n >= 1), "no empty shard: {seen:?}");
        }
        rows.sort();
        let mut expected = full_rows.clone();
        expected.sort();
        assert_eq!(rows, expected, "N = {count}");

        let merged = workspace
            .lspc()
            .arg("sarif-merge")
            .args(&sarif_files)
            .timeout(Duration::from_secs(60))
            .run();
        merged.status(0);
        let document = merged.json();
        assert_eq!(document["runs"].as_array().unwrap().len(), 1);
        assert_eq!(
            document["runs"][0]["automationDetails"],
            json!({"id": "lspc/"})
        );
        let mut results = sarif_results(&document);
        results.sort();
        assert_eq!(results, full_results, "merged N = {count}");
    }
    workspace
        .lspc()
        .args(["check", "--shard", "3/2"])
        .run()
        .status(2)
        .stderr_contains("lspc: --shard: expected K/N with 1 <= K <= N (e.g. 2/4), got \"3/2\": K must be between 1 and N");
    workspace
        .lspc()
        .arg("sarif-merge")
        .run()
        .status(2)
        .stderr_contains("sarif-merge: missing FILE");
}

/// Each SARIF result as `path:line ruleId (rules[ruleIndex].id) message`, so a wrong `ruleIndex`
/// after a merge shows.
fn sarif_results(document: &Value) -> Vec<String> {
    let run = &document["runs"][0];
    run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| {
            let location = &result["locations"][0]["physicalLocation"];
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            format!(
                "{}:{} {} ({}) {}",
                location["artifactLocation"]["uri"].as_str().unwrap(),
                location["region"]["startLine"],
                result["ruleId"].as_str().unwrap(),
                run["tool"]["driver"]["rules"][index]["id"]
                    .as_str()
                    .unwrap(),
                result["message"]["text"].as_str().unwrap()
            )
        })
        .collect()
}

/// `--changed-since REV` checks the files changed since REV (committed, staged or not) plus
/// untracked files that are not ignored, and nothing else; no change at all is a clean run.
/// ruff 0.17.6.
#[test]
fn changed_since_checks_changed_and_untracked_files_only() {
    require_program!("ruff");
    require_program!("git");
    let (workspace, config) = ruff_workspace("changed");
    std::fs::remove_dir_all(workspace.path(".git")).unwrap();
    for name in ["a.py", "b.py", "c.py", "d.py"] {
        workspace.file(name, "import os\n");
    }
    workspace.file(".gitignore", "ignored.py\n");
    git(&workspace, &["init", "-q"]);
    git(&workspace, &["add", "."]);
    git(&workspace, &["commit", "-qm", "base"]);
    git(&workspace, &["tag", "base"]);
    ruff_check(&workspace, &config, &["--changed-since", "base"])
        .status(0)
        .stderr_contains("0 files checked: 0 errors, 0 warnings, 0 info, 0 hints");
    workspace.file("a.py", "import os\nimport sys\n");
    git(&workspace, &["commit", "-qam", "change a"]);
    workspace.file("b.py", "import re\n");
    workspace.file("new.py", "import json\n");
    workspace.file("ignored.py", "import os\n");
    std::fs::remove_file(workspace.path("d.py")).unwrap();
    let output = ruff_check(
        &workspace,
        &config,
        &["--format", "json", "--changed-since", "base"],
    );
    output.status(1);
    let report = output.json();
    let paths: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a.py", "b.py", "new.py"], "{}", output.story());
    // A trial: a change that broke a file using it was "clean"; the run says what it skipped.
    output.stderr_contains(
        "1 unchanged file not checked (`--changed-since`): errors the changes cause in it are \
         not reported; a check without the option finds them",
    );
    ruff_check(&workspace, &config, &["--changed-since", "no-such-revision"])
        .status(2)
        .stderr_contains("lspc: --changed-since: `git diff --name-only -z --no-renames --end-of-options no-such-revision --` failed: fatal: bad revision 'no-such-revision'");
}

/// A new user's trial (execa): `--changed-since HEAD` listed every unchanged file outside the
/// servers' projects as skipped ("119 files outside tsconfig's include not checked"), though the
/// run was about the change. Only changed files are listed; a change inside the exclude is
/// listed as skipped, and a change with nothing the projects check is a clean run (exit 0), as
/// a change of nothing is. ruff 0.17.6.
#[test]
fn changed_since_lists_only_changed_files_outside_the_projects() {
    require_program!("ruff");
    require_program!("git");
    let (workspace, config) = ruff_workspace("changed-outside");
    std::fs::remove_dir_all(workspace.path(".git")).unwrap();
    workspace.file(
        "ruff.toml",
        "extend-exclude = [\"gen\"]\n[lint]\nselect = [\"F\"]\n",
    );
    workspace.file("a.py", "x = 1\n");
    for name in ["gen/one.py", "gen/two.py"] {
        workspace.file(name, "import os\n");
    }
    git(&workspace, &["init", "-q"]);
    git(&workspace, &["add", "."]);
    git(&workspace, &["commit", "-qm", "base"]);
    workspace.file("a.py", "import os\n");
    let output = ruff_check(
        &workspace,
        &config,
        &["--format", "json", "--changed-since", "HEAD"],
    );
    output.status(1);
    assert_eq!(
        file_states(&output.json()),
        [("a.py".to_owned(), "diagnostics".to_owned(), String::new())],
        "{}",
        output.story()
    );
    assert!(!output.stderr.contains("exclude"), "{}", output.story());
    // The whole tree still says what its exclude leaves out.
    ruff_check(&workspace, &config, &[]).status(1).stderr_contains(
        "1 file checked: 0 errors, 1 warning, 0 info, 0 hints in 1 file; 2 files in ruff's exclude \
         not checked (its server never checks an excluded file, even with `--all-files`)",
    );
    git(&workspace, &["commit", "-qam", "a"]);
    workspace.file("gen/two.py", "import sys\n");
    let output = ruff_check(
        &workspace,
        &config,
        &["--format", "json", "--changed-since", "HEAD"],
    );
    output.status(0);
    assert_eq!(
        file_states(&output.json()),
        [(
            "gen/two.py".to_owned(),
            "skipped".to_owned(),
            "in ruff's exclude".to_owned()
        )],
        "{}",
        output.story()
    );
    output.stderr_contains(
        "0 files checked: 0 errors, 0 warnings, 0 info, 0 hints; 1 file in ruff's exclude not \
         checked (its server never checks an excluded file, even with `--all-files`)",
    );
}

/// helper-45: `lspc check gen` on a folder wholly in ruff's exclude exits 2 (nothing was
/// checked), but batch's `check` operation answered a plain result listing the file as skipped.
/// It answers the error `lspc check` exits 2 with. ruff 0.17.6.
#[test]
fn batch_check_of_a_folder_wholly_outside_the_projects_is_an_error() {
    require_program!("ruff");
    let (workspace, config) = ruff_workspace("batch-outside");
    workspace.file(
        "ruff.toml",
        "extend-exclude = [\"gen\"]\n[lint]\nselect = [\"F\"]\n",
    );
    workspace.file("gen/one.py", "import os\n");
    workspace.file("a.py", "import os\n");
    let output = workspace
        .lspc()
        .args(["--no-builtin", "--config"])
        .arg(&config)
        .arg("batch")
        .stdin(
            "{\"id\": 1, \"op\": \"check\", \"paths\": [\"gen\"]}\n\
             {\"id\": 2, \"op\": \"check\", \"paths\": [\"a.py\"]}\n",
        )
        .run();
    output.status(0);
    let answers = output.json_lines();
    assert_eq!(
        answers[0],
        json!({"id": 1, "error": {"message": "check: no file was checked: the one file found was skipped (gen/one.py: in ruff's exclude)"}}),
        "{}",
        output.story()
    );
    assert_eq!(answers[1]["result"]["files"][0]["state"], "diagnostics");
    ruff_check(&workspace, &config, &["gen"])
        .status(2)
        .stderr_contains("lspc: no file was checked: the one file found was outside the servers' projects (see the summary)\n");
}

/// Issue 17's scale figure: a tree of 20,000 files (2,000 of them Python, served by the fixture
/// server) plus an ignored `node_modules/` of 20,000 files and 5,000 files inside `.git/`, checked
/// under `ulimit -n 256`: no EMFILE, lspc's open descriptors stay under a small bound that does
/// not grow with the tree (sampled from `/proc` every 20 ms), no ignored file reaches the server,
/// and the server never holds more than the LRU bound of 50 open documents (counted from its
/// transcript: `didOpen` minus `didClose`).
#[test]
fn twenty_thousand_files_under_ulimit_256_keep_fds_flat_and_the_lru_bound() {
    require_program!("git");
    require_program!("sh");
    let mut workspace = Workspace::new("scale");
    std::fs::remove_dir_all(workspace.path(".git")).unwrap();
    git(&workspace, &["init", "-q"]);
    workspace.file(".gitignore", "node_modules/\n");
    for n in 0..20_000 {
        let folder = format!("src/d{:03}", n % 200);
        if n % 10 == 0 {
            let marker = if n % 1000 == 0 {
                "# WARNING: marker"
            } else {
                "# plain"
            };
            workspace.file(
                &format!("{folder}/m{n}.py"),
                &format!("{marker} {n}\nx = {n}\n"),
            );
        } else {
            workspace.file(&format!("{folder}/f{n}.txt"), "text\n");
        }
    }
    for n in 0..20_000 {
        workspace.file(&format!("node_modules/p{:03}/i{n}.py", n % 100), "x = 1\n");
    }
    for n in 0..5_000 {
        workspace.file(&format!(".git/junk/{:02}/o{n}.py", n % 50), "x = 1\n");
    }
    let config = workspace.fixture_config(&[("fx", &[".py"], json!({}))]);
    let lspc = lspc_bin();
    let mut command = Command::new("sh");
    crate::support::session_env(&mut command);
    let mut child = command
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(&lspc)
        .args([
            "check",
            "--no-builtin",
            "--format",
            "json",
            "--timeout",
            "60",
            "--config",
        ])
        .arg(&config)
        .current_dir(&workspace.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lspc");
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read_all(Box::new(stdout));
    let stderr = read_all(Box::new(stderr));
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut max_fds = 0;
    let mut samples = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            max_fds = max_fds.max(entries.count());
            samples += 1;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lspc check of 20,000 files did not finish in 600 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    let story = format!("status {status:?}\nstderr:\n{stderr}");
    assert_eq!(status.code(), Some(0), "{story}");
    assert!(!stderr.contains("Too many open files"), "{story}");
    assert!(
        stderr.contains("2000 files checked: 0 errors, 20 warnings, 0 info, 0 hints in 20 files"),
        "{story}"
    );
    let report: Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(report["files"].as_array().unwrap().len(), 2000);
    // lspc's own descriptors: stdio, the server's three pipes, the signal pipe and a few more;
    // 20,000 files must not show here.
    assert!(samples > 10, "sampled /proc only {samples} times");
    assert!(
        max_fds <= 40,
        "lspc held up to {max_fds} descriptors\n{story}"
    );

    let transcript = workspace.transcript("fx");
    let mut open = 0i64;
    let mut max_open = 0i64;
    let mut opened = BTreeSet::new();
    for entry in &transcript {
        let message = &entry["message"];
        match message["method"].as_str() {
            Some("textDocument/didOpen") => {
                open += 1;
                max_open = max_open.max(open);
                let uri = message["params"]["textDocument"]["uri"].as_str().unwrap();
                assert!(
                    !uri.contains("node_modules") && !uri.contains("/.git/"),
                    "{uri}"
                );
                opened.insert(uri.to_owned());
            }
            Some("textDocument/didClose") => open -= 1,
            _ => {}
        }
    }
    eprintln!("{samples} samples: at most {max_fds} descriptors, {max_open} open documents");
    assert_eq!(opened.len(), 2000);
    assert!(
        max_open <= 50,
        "the server held {max_open} open documents at once"
    );
}

/// A file outside its own project's pyright `include`, with pyright running one instance per
/// project root, is left to ruff alone: `lspc check` named the configured server to leave out
/// and the engine compared that with the instance's slot, so the project's own instance
/// checked the file anyway (a pyright error `pyright` itself, run in the project, never
/// reports).
#[test]
fn a_file_outside_its_projects_include_is_left_out_of_that_projects_pyright() {
    require_program!("pyright-langserver");
    require_program!("ruff");
    let workspace = Workspace::copy_of("monorepo");
    workspace.file(
        "services/beta/pyproject.toml",
        "[project]\nname = \"beta\"\nversion = \"0.1.0\"\n\n[tool.pyright]\n\
         include = [\"app\", \"lib\"]\nextraPaths = [\"lib\"]\n",
    );
    workspace.file(
        "services/beta/tests/test_main.py",
        "import os\n\ncount: int = \"three\"\n",
    );
    let config = workspace.config(json!({ "pyright": pyright_entry(), "ruff": ruff_entry() }));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--format", "json"])
        .args(["--timeout", REAL_TIMEOUT, "--config"])
        .arg(&config)
        .arg("services/beta")
        .timeout(Duration::from_secs(600))
        .run();
    output.status(1);
    let nbsp = "\u{a0}\u{a0}";
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            format!("services/beta/app/main.py:3:14-3:22 error [Pyright reportAssignmentType] Type \"str\" is not assignable to declared type \"int\"\n{nbsp}\"str\" is not assignable to \"int\""),
            "services/beta/tests/test_main.py:1:8-1:10 warning [Ruff F401] `os` imported but unused\n\nhelp: Remove unused import: `os`".to_owned(),
        ],
        "{}",
        output.story()
    );
}

/// Issue 15: a check over many projects keeps few instances of one server busy at once. Six
/// projects (a `proj.marker` each) get six instances of the fixture server, each publishing
/// 300 ms after `didOpen`. At most the machine's parallelism, from 2 to 4, may have a file in
/// flight at once: an instance starts (lazily, for its first file) only while fewer than that
/// many started instances have yet to publish, counted in the shared transcript, which every
/// instance appends to in order. Before, all six started at once (BurntSushi/memchr: 11
/// rust-analyzers on 2 cores, 32 files timed out).
#[test]
fn a_check_over_many_projects_keeps_few_instances_of_a_server_busy_at_once() {
    let mut workspace = Workspace::new("instances");
    for n in 0..6 {
        workspace.file(&format!("p{n}/proj.marker"), "");
        workspace.file(&format!("p{n}/m.py"), "# WARNING: marker\n");
    }
    let config = workspace.fixture_config(&[(
        "fx",
        &[".py"],
        json!({"publishDelayMs": 300, "recordPublishes": true}),
    )]);
    let mut entries: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    entries["fx"]["rootMarkers"] = json!(["proj.marker"]);
    std::fs::write(&config, entries.to_string()).unwrap();
    let output = workspace
        .lspc()
        .args([
            "check",
            "--no-builtin",
            "--format",
            "json",
            "--timeout",
            "60",
        ])
        .arg("--config")
        .arg(&config)
        .timeout(Duration::from_secs(120))
        .run();
    output.status(0);
    let expected: Vec<String> = (0..6)
        .map(|n| format!("p{n}/m.py:1:3-1:18 warning [fixture FX2] marker"))
        .collect();
    assert_eq!(
        json_diagnostics(&output.json()),
        expected,
        "{}",
        output.story()
    );
    let at_once = std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .clamp(2, 4);
    let mut busy: BTreeSet<u64> = BTreeSet::new();
    let mut started = 0;
    let mut most_busy = 0;
    for line in workspace.transcript("fx") {
        let pid = line["pid"].as_u64().unwrap();
        match line["event"].as_str() {
            Some("start") => {
                started += 1;
                busy.insert(pid);
                most_busy = most_busy.max(busy.len());
            }
            Some("published") => {
                busy.remove(&pid);
            }
            _ => {}
        }
    }
    assert_eq!(started, 6, "one instance per project\n{}", output.story());
    assert!(
        most_busy <= at_once,
        "{most_busy} instances were busy at once, more than {at_once}\n{}",
        output.story()
    );
}
