//! Project roots (issue 17): the folder whose instance of a server serves a file, and the
//! `project roots:` section of `lspc servers`.
//!
//! A project root is the nearest ancestor folder of a file holding one of its server's
//! `rootMarkers`, never above the workspace root; without one it is the workspace root. The
//! engine starts one instance of the server per project root (`engine/instances.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::Config;

/// The nearest folder at or above `folder` and at or below `workspace_root` holding one of
/// `markers` (files or folders), else `workspace_root`; `None` when `folder` is not inside
/// `workspace_root`. Both paths are expected canonical.
pub fn find_project_root(
    folder: &Path,
    workspace_root: &Path,
    markers: &[String],
) -> Option<PathBuf> {
    if !folder.starts_with(workspace_root) {
        return None;
    }
    for dir in folder.ancestors() {
        if markers.iter().any(|marker| dir.join(marker).exists()) {
            return Some(dir.to_path_buf());
        }
        if dir == workspace_root {
            break;
        }
    }
    Some(workspace_root.to_path_buf())
}

/// The `project roots:` lines of `lspc servers` for `files` (canonical paths under the root):
/// per available server with root markers, the project roots its files fall in, relative to the
/// root (`.` for the root itself), then its markers. Empty when no server has markers or no file
/// is served.
pub fn render_project_roots(config: &Config, files: &[PathBuf]) -> Vec<String> {
    let workspace_root = crate::uri::canonical(&config.root);
    let mut roots: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    let mut folder_roots: HashMap<(usize, PathBuf), PathBuf> = HashMap::new();
    for file in files {
        let Some(folder) = file.parent() else {
            continue;
        };
        for index in config.servers_for_path(file) {
            let server = &config.servers[index];
            if server.resolved_command.is_none() {
                continue;
            }
            let root = if server.workspace_folder.is_some() || server.root_markers.is_empty() {
                workspace_root.clone()
            } else {
                folder_roots
                    .entry((index, folder.to_path_buf()))
                    .or_insert_with(|| {
                        find_project_root(folder, &workspace_root, &server.root_markers)
                            .unwrap_or_else(|| workspace_root.clone())
                    })
                    .clone()
            };
            roots
                .entry(index)
                .or_default()
                .insert(crate::uri::relative_display(&root, &workspace_root));
        }
    }
    roots
        .into_iter()
        .filter(|(index, _)| !config.servers[*index].root_markers.is_empty())
        .map(|(index, roots)| {
            let server = &config.servers[index];
            format!(
                "{}: {} (markers: {})",
                server.name,
                roots.into_iter().collect::<Vec<_>>().join(" "),
                server.root_markers.join(" ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_marker_not_above_the_workspace() {
        let dir = std::env::temp_dir().join(format!("lspc-roots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for folder in ["ws/a/src/deep", "ws/b", "ws/c", "ws/plain/x"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        std::fs::write(dir.join("pyproject.toml"), "").unwrap();
        std::fs::write(dir.join("ws/a/pyproject.toml"), "").unwrap();
        std::fs::write(dir.join("ws/a/src/setup.cfg"), "").unwrap();
        std::fs::create_dir_all(dir.join("ws/b/.clangd")).unwrap();
        let markers: Vec<String> = ["pyproject.toml", "setup.cfg", ".clangd"]
            .map(String::from)
            .to_vec();
        let ws = dir.join("ws");
        let check = |folder: &str, expected: Option<&str>| {
            assert_eq!(
                find_project_root(&dir.join(folder), &ws, &markers),
                expected.map(|e| dir.join(e)),
                "{folder}"
            );
        };
        check("ws/a/src/deep", Some("ws/a/src"));
        check("ws/a", Some("ws/a"));
        check("ws/b", Some("ws/b"));
        // The marker above the workspace root does not count.
        check("ws/plain/x", Some("ws"));
        check("ws", Some("ws"));
        check("elsewhere", None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
