//! pylsp lints only through its lint plugins: with none that can run (not installed, or off in
//! its settings) it publishes an empty set for every file, so it gives no diagnostics and a
//! named file cannot be checked (exit 2), never clean. Real python-lsp-server 1.15.0.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

/// The Python that has pylsp and the folder holding its packages, or `None` (the test skips).
fn pylsp_python() -> Option<(PathBuf, PathBuf)> {
    let output = Command::new("python3")
        .args([
            "-c",
            "import os, sys, pylsp; print(sys.executable); \
             print(os.path.dirname(os.path.dirname(pylsp.__file__)))",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let mut lines = text.lines();
    let python = PathBuf::from(lines.next()?);
    let packages = PathBuf::from(lines.next()?);
    (output.status.success() && python.is_file()).then_some((python, packages))
}

/// `lspc check --no-builtin --config CONFIG a.py` in `workspace`: exit 2 with `reason`.
fn check_named(workspace: &Workspace, server: Value, reason: &str) {
    let config = workspace.config(json!({ "pylsp": server }));
    workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(&config)
        .args(["a.py", "--timeout", "30"])
        .run()
        .status(2)
        .stderr_contains(&format!(
            "a.py: error: no server for a.py gives diagnostics ({reason})"
        ));
}

/// Left over from round nu11 (bash-language-server without ShellCheck): pylsp with its lint
/// plugins off in its settings published an empty set, and lspc reported `1 file checked: 0
/// errors` (exit 0) for a file with an undefined name.
#[test]
fn pylsp_with_every_lint_plugin_off_reports_no_file_clean() {
    let Some(pylsp) = which("pylsp") else {
        eprintln!("skipped: pylsp is not installed (see .ci/run)");
        return;
    };
    let workspace = Workspace::new("pylsp-plugins-off");
    workspace.file("a.py", "import os\nx = undefined_name\n");
    let off = json!({"enabled": false});
    let plugins: serde_json::Map<String, Value> = [
        "pyflakes",
        "pycodestyle",
        "mccabe",
        "pydocstyle",
        "pylint",
        "flake8",
    ]
    .iter()
    .map(|name| (name.to_string(), off.clone()))
    .collect();
    // Whichever of them are installed here, every one is off in the settings.
    let config = workspace.config(json!({"pylsp": {
        "command": pylsp, "extensionToLanguage": {".py": "python"},
        "settings": {"pylsp": {"plugins": plugins}},
    }}));
    let output = workspace
        .lspc()
        .args(["check", "--no-builtin", "--config"])
        .arg(&config)
        .args(["a.py", "--timeout", "30"])
        .run();
    output.status(2);
    let prefix = "a.py: error: no server for a.py gives diagnostics (pylsp lints only through its \
                  plugins, and none can run: ";
    let Some(reason) = output.stderr.lines().find(|line| line.starts_with(prefix)) else {
        output.fail("no reason naming pylsp's plugins");
    };
    if !reason.contains("off in its settings") {
        output.fail("the reason does not say the plugins are off in its settings");
    }
}

/// The same with pylsp installed without any lint plugin: a virtual environment holding only
/// pylsp and the packages it needs (not pyflakes, pycodestyle, mccabe, …).
#[test]
fn pylsp_without_lint_plugins_reports_no_file_clean() {
    let Some((python, packages)) = pylsp_python() else {
        eprintln!("skipped: pylsp is not installed (see .ci/run)");
        return;
    };
    let workspace = Workspace::new("pylsp-no-plugins");
    workspace.file("a.py", "import os\nx = undefined_name\n");
    let venv = workspace.path("venv");
    let made = Command::new(&python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python runs");
    assert!(made.success(), "python -m venv failed");
    let version = Command::new(&python)
        .args([
            "-c",
            "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .expect("python runs");
    let version = String::from_utf8(version.stdout).unwrap();
    let site_packages = venv.join("lib").join(version.trim()).join("site-packages");
    // pylsp and what it imports (python-lsp-server 1.15.0's requirements, and theirs): without
    // a lint plugin it starts and publishes an empty set for every file.
    let needed = [
        "pylsp",
        "pylsp_jsonrpc",
        "python_lsp_server",
        "python_lsp_jsonrpc",
        "jedi",
        "parso",
        "pluggy",
        "docstring_to_markdown",
        "importlib_metadata",
        "typing_extensions",
        "zipp",
        "ujson",
        "lazy_importer",
    ];
    for entry in std::fs::read_dir(&packages).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let wanted = needed.iter().any(|package| {
            name == *package
                || name.starts_with(&format!("{package}-"))
                || name.starts_with(&format!("{package}."))
        });
        if wanted {
            std::os::unix::fs::symlink(packages.join(&name), site_packages.join(&name)).unwrap();
        }
    }
    check_named(
        &workspace,
        json!({"command": venv.join("bin/python"), "args": ["-m", "pylsp"],
               "extensionToLanguage": {".py": "python"}}),
        "pylsp lints only through its plugins, and none can run: pylint off by default; flake8, \
         mccabe, pycodestyle, pydocstyle, pyflakes not installed",
    );
}
