//! Temporary files the servers leave behind (issue 15): lspc gives each server a private `TMPDIR`
//! under `<TMPDIR>/lspc-<uid>/tmp/` and removes it once the server's process group is gone, so a
//! run leaves nothing new in the temporary folder it ran with. Each test runs lspc with its own
//! `TMPDIR`, so parallel tests cannot add to what it lists.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::require_program;
use crate::support::{skip_in_session_mode, typescript_entry, Workspace};

/// Every path below `dir`, relative to it, sorted.
pub fn tree(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, found: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            found.push(path.strip_prefix(base).unwrap().display().to_string());
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                walk(&path, base, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, dir, &mut found);
    found.sort();
    found
}

/// What lspc itself keeps in a temporary folder after a run: the empty parent of the servers'
/// private folders.
pub fn lspc_parent_only() -> Vec<String> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    vec![format!("lspc-{uid}"), format!("lspc-{uid}/tmp")]
}

/// A fresh, empty folder next to `workspace` for lspc's `TMPDIR`.
pub fn private_tmpdir(workspace: &Workspace) -> PathBuf {
    let dir = workspace.root.parent().unwrap().join("tmpdir");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Issue 15 (REAL, typescript-language-server 5.3.0): each start made two `<TMPDIR>/<32 hex
/// digits>/` folders (tsserver's cancellation pipes) that it never removes, even after a clean
/// `shutdown`/`exit`; thousands piled up in `/tmp` on test machines. After `lspc check` the
/// `TMPDIR` it ran with holds only lspc's own empty parent folder.
#[test]
fn typescript_language_server_leaves_no_folder_in_tmpdir_after_check() {
    require_program!("typescript-language-server");
    if skip_in_session_mode("a warm session's servers keep their folders while it runs") {
        return;
    }
    let workspace = Workspace::copy_of("typescript");
    let config = workspace.config(json!({ "typescript": typescript_entry() }));
    let tmpdir = private_tmpdir(&workspace);
    let mut command = workspace.lspc();
    command
        .env("TMPDIR", &tmpdir)
        .arg("check")
        .arg("--config")
        .arg(&config);
    let output = command.args(["--no-builtin", "."]).run();
    output.status(1).stdout_is(
        "src/app.ts:2:7: error: Type 'string' is not assignable to type 'number'. [typescript 2322]\n",
    );
    assert_eq!(tree(&tmpdir), lspc_parent_only(), "{}", output.story());
}
