//! Having tsserver reload its projects when a file it resolves imports to appears, disappears or
//! is made again behind it (issue 15).
//!
//! typescript-language-server 5.3.0 ignores `workspace/didChangeWatchedFiles` (see
//! [`crate::config::Program::ignores_watched_files`]); tsserver watches the files and the
//! `node_modules` folders itself. A file deleted and written again 70-200 ms later (a generator
//! that regenerates `index.d.ts`) can leave tsserver resolving `../index.js` to the JavaScript
//! file for good: its watch saw the deletion, re-resolved the import, and missed the creation.
//! Every later answer used the JavaScript fallback (`on(event: any, cb: any)`), and an edit that
//! broke the declarations was reported clean where `tsc` said TS2554 (a helper's trial on
//! ai/nanoevents, 1 stuck state in about 10 rewrites). Sending the file open and closed does not
//! heal that: the import stays resolved to the other file. tsserver's `reloadProjects` does (it
//! rebuilds each project's file list and module resolutions from the disk; 0.1 s there), and
//! typescript-language-server forwards it through `workspace/executeCommand`
//! `typescript.tsserverRequest`.
//!
//! The loop sends it when a file the server claims was created, deleted or replaced (a new
//! inode) on disk, or when the packages of a `node_modules` folder changed (a package removed by
//! `npm uninstall` was still resolved, by tsserver's own watch, about 4 s later). A change
//! written in place is left to the open-and-close of `frontend_events.rs`, which costs the
//! server less than rebuilding its projects.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::WatchedChange;

/// The tsserver request that rebuilds every project from the disk.
const RELOAD_PROJECTS: &str = "reloadProjects";

/// Whether `changes` need tsserver to reload its projects: a file `claims` holds (the server
/// serves it) created, deleted or replaced, or a `node_modules` folder whose packages changed
/// (`session/watch.rs` reports the folder itself).
pub(crate) fn needed(changes: &[(PathBuf, WatchedChange)], claims: impl Fn(&Path) -> bool) -> bool {
    changes.iter().any(|(path, kind)| {
        let packages = path.file_name().is_some_and(|name| name == "node_modules");
        packages || (*kind != WatchedChange::Changed && claims(path))
    })
}

/// Whether `changes` need the server restarted rather than reloaded: a package linked in a
/// `node_modules` folder changed (`session/watch.rs` reports the folder
/// [`WatchedChange::Replaced`]). tsserver keeps the files it resolved through the old link: a
/// pnpm-style link pointed at another version of a package was answered from the old version's
/// declarations for 60 s and more, `reloadProjects` or not (helper-66 on sindresorhus/ky); a
/// new tsserver resolves through the new link.
pub(crate) fn needs_restart(changes: &[(PathBuf, WatchedChange)]) -> Option<&Path> {
    changes.iter().find_map(|(path, kind)| {
        let packages = path.file_name().is_some_and(|name| name == "node_modules");
        (packages && *kind == WatchedChange::Replaced).then_some(path.as_path())
    })
}

/// The `workspace/executeCommand` params asking tsserver to reload its projects.
pub(crate) fn params() -> Value {
    json!({ "command": super::tsserver_probe::COMMAND, "arguments": [RELOAD_PROJECTS] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_made_or_removed_and_packages_need_a_reload_writes_in_place_do_not() {
        let claims = |path: &Path| path.extension().is_some_and(|ext| ext == "ts");
        let change = |path: &str, kind| vec![(PathBuf::from(path), kind)];
        assert!(!needed(&change("/w/a.ts", WatchedChange::Changed), claims));
        assert!(needed(&change("/w/a.ts", WatchedChange::Replaced), claims));
        assert!(needed(&change("/w/a.d.ts", WatchedChange::Created), claims));
        assert!(needed(&change("/w/a.ts", WatchedChange::Deleted), claims));
        assert!(!needed(&change("/w/a.py", WatchedChange::Deleted), claims));
        assert!(needed(
            &change("/w/node_modules", WatchedChange::Changed),
            claims
        ));
        let relinked = change("/w/node_modules", WatchedChange::Replaced);
        assert_eq!(needs_restart(&relinked), Some(Path::new("/w/node_modules")));
        assert_eq!(
            needs_restart(&change("/w/node_modules", WatchedChange::Changed)),
            None
        );
        assert_eq!(
            params(),
            json!({"command": "typescript.tsserverRequest", "arguments": ["reloadProjects"]})
        );
    }
}
