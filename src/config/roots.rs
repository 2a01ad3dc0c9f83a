//! Project roots (issue 17): the folder whose instance of a server serves a file, and the
//! `project roots:` section of `lspc servers`.
//!
//! A project root is the nearest ancestor folder of a file holding one of its server's
//! `rootMarkers` (the outermost for `tsconfig.json` and `jsconfig.json`, which tsserver finds
//! for itself below its root), never above the workspace root; without one it is the workspace
//! root. The
//! engine starts one instance of the server per project root (`engine/instances.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::Config;

/// The file or folder name of a root marker: `pyproject.toml` for `pyproject.toml:tool.pyright`.
pub fn marker_file(marker: &str) -> &str {
    marker.split_once(':').map_or(marker, |(file, _)| file)
}

/// Whether `dir` holds `marker`: a file or folder name, or `FILE:TABLE`, a TOML file with that
/// table (`pyproject.toml:tool.pyright`), in any form TOML allows: a `[tool.pyright]` header, a
/// sub-table `[tool.pyright.…]`/`[[tool.pyright.…]]`, or dotted keys and inline tables
/// (`[tool]` then `pyright = {…}` or `pyright.strict = […]`). pyright reads only a
/// `pyproject.toml` with its table, so a folder whose `pyproject.toml` has none is no pyright
/// project. A file that is not valid TOML counts when a line of it is such a header (pyright then
/// reports the file's error, which is the project's to see).
pub fn holds_marker(dir: &Path, marker: &str) -> bool {
    let Some((file, table)) = marker.split_once(':') else {
        return dir.join(marker).exists();
    };
    let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
        return false;
    };
    match toml::from_str::<serde_json::Value>(&text) {
        Ok(document) => table
            .split('.')
            .try_fold(&document, |value, key| value.get(key))
            .is_some_and(serde_json::Value::is_object),
        Err(_) => has_table_header(&text, table),
    }
}

/// Whether a line of `text` is the header of `table` or of one of its sub-tables.
fn has_table_header(text: &str, table: &str) -> bool {
    text.lines().any(|line| {
        let header = line.trim_start();
        let Some(name) = header
            .strip_prefix("[[")
            .or_else(|| header.strip_prefix('['))
        else {
            return false;
        };
        let name = name.trim_start();
        name.strip_prefix(table).is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.starts_with(']') || rest.starts_with('.')
        })
    })
}

/// The folder at or above `folder` and at or below `workspace_root` whose instance serves it:
/// the outermost one holding a marker that spans nested projects ([`spans_nested_projects`]:
/// `tsconfig.json`, `jsconfig.json`), else the nearest holding another of `markers`
/// ([`holds_marker`]: files or folders, or `FILE:TABLE`; a weak marker only where no other is
/// found, [`is_weak`]), else `workspace_root`; `None` when `folder` is not inside
/// `workspace_root`. Both paths are expected canonical.
pub fn find_project_root(
    folder: &Path,
    workspace_root: &Path,
    markers: &[String],
) -> Option<PathBuf> {
    if !folder.starts_with(workspace_root) {
        return None;
    }
    let (weak, strong): (Vec<&String>, Vec<&String>) =
        markers.iter().partition(|marker| is_weak(marker, markers));
    let (spanning, strong): (Vec<&String>, Vec<&String>) = strong
        .into_iter()
        .partition(|marker| spans_nested_projects(marker));
    if let Some(outermost) = outermost_spanning(folder, workspace_root, &spanning) {
        return Some(outermost);
    }
    let nearest = |markers: &[&String]| {
        folders_holding(folder, workspace_root, markers)
            .next()
            .map(Path::to_path_buf)
    };
    nearest(&strong)
        .or_else(|| nearest(&weak))
        .or_else(|| Some(workspace_root.to_path_buf()))
}

/// The outermost folder from `folder` up to `workspace_root` holding one of the `spanning`
/// markers, not above the nearest one that has its own TypeScript (`node_modules/typescript`):
/// typescript-language-server runs the TypeScript of its root's `node_modules`, so a package
/// that installs its own version is served by an instance of its own (helper-50: `tool/` with
/// TypeScript 5.4.5 was checked by the root's 6.0.3, whose `strict` default added two errors
/// `tsc -p tool` does not have).
fn outermost_spanning(
    folder: &Path,
    workspace_root: &Path,
    spanning: &[&String],
) -> Option<PathBuf> {
    let mut outermost = None;
    for dir in folder
        .ancestors()
        .take_while(|dir| dir.starts_with(workspace_root))
    {
        if spanning.iter().any(|marker| holds_marker(dir, marker)) {
            outermost = Some(dir.to_path_buf());
            if dir.join("node_modules/typescript").is_dir() {
                break;
            }
        }
    }
    outermost
}

/// The folders from `folder` up to `workspace_root` (both included) holding one of `markers`,
/// nearest first.
fn folders_holding<'a>(
    folder: &'a Path,
    workspace_root: &'a Path,
    markers: &'a [&String],
) -> impl Iterator<Item = &'a Path> {
    folder
        .ancestors()
        .take_while(move |dir| dir.starts_with(workspace_root))
        .filter(move |dir| markers.iter().any(|marker| holds_marker(dir, marker)))
}

/// Whether `marker` counts only where none of the other `markers` is found at or above the
/// folder: `package.json` beside `tsconfig.json` or `jsconfig.json`. tsserver looks for a
/// file's tsconfig from its folder up to the instance's root and no further, so an instance
/// rooted at `packages/a/package.json` below the project's `tsconfig.json` checked
/// `packages/a/src/x.ts` with default options (a new user's trial: tsc's `noUnusedLocals`
/// error unseen, a `paths` alias reported unresolved); a package with no tsconfig above it
/// still gets its own instance.
fn is_weak(marker: &str, markers: &[String]) -> bool {
    marker == "package.json" && markers.iter().any(|other| spans_nested_projects(other))
}

/// Whether one instance at the outermost folder holding `marker` serves the projects it marks
/// below that folder too: tsserver finds each open file's nearest `tsconfig.json` or
/// `jsconfig.json` itself (up to its instance's root) and holds every such project at once, and
/// its references and rename search the projects it holds. One instance per tsconfig folder
/// answered `references` of a function in `src/` without its uses in `test/` (a `test/`
/// with its own `tsconfig.json`: panva/jose), and a rename left them (a new user's trial).
fn spans_nested_projects(marker: &str) -> bool {
    marker == "tsconfig.json" || marker == "jsconfig.json"
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

    #[test]
    fn a_package_json_below_a_tsconfig_is_no_project_root() {
        let dir = std::env::temp_dir().join(format!("lspc-weak-roots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for folder in [
            "ws/packages/a/src",
            "ws/packages/b/src",
            "js/lib/src",
            "ws/tool/src",
            "ws/tool/node_modules/typescript",
        ] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        for file in [
            "ws/tsconfig.json",
            "ws/package.json",
            "ws/packages/a/package.json",
            "ws/packages/b/package.json",
            "ws/packages/b/tsconfig.json",
            "ws/tool/tsconfig.json",
            "js/package.json",
            "js/lib/package.json",
        ] {
            std::fs::write(dir.join(file), "{}").unwrap();
        }
        let markers: Vec<String> = ["tsconfig.json", "jsconfig.json", "package.json"]
            .map(String::from)
            .to_vec();
        let root = |folder: &str, ws: &str| {
            find_project_root(&dir.join(folder), &dir.join(ws), &markers)
                .map(|root| root.strip_prefix(&dir).unwrap().to_path_buf())
        };
        assert_eq!(root("ws/packages/a/src", "ws"), Some("ws".into()));
        // A tsconfig below another is served by the outer one's instance.
        assert_eq!(root("ws/packages/b/src", "ws"), Some("ws".into()));
        assert_eq!(
            root("ws/packages/b/src", "ws/packages"),
            Some("ws/packages/b".into())
        );
        // A tsconfig folder with its own TypeScript is served by its own instance.
        assert_eq!(root("ws/tool/src", "ws"), Some("ws/tool".into()));
        // With no tsconfig anywhere up to the root, the nearest package.json.
        assert_eq!(root("js/lib/src", "js"), Some("js/lib".into()));
        // Without tsconfig.json among the markers, package.json is an ordinary marker.
        let only_package = vec!["package.json".to_string()];
        assert_eq!(
            find_project_root(
                &dir.join("ws/packages/a/src"),
                &dir.join("ws"),
                &only_package
            ),
            Some(dir.join("ws/packages/a"))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_table_marker_needs_its_table() {
        let dir = std::env::temp_dir().join(format!("lspc-table-roots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let files = [
            ("plain", "[project]\nname = \"x\"\n# [tool.pyright]\n"),
            ("own", "[project]\n\n[tool.pyright]\nstrict = [\"src\"]\n"),
            (
                "sub",
                "[[ tool.pyright.executionEnvironments ]]\nroot = \"src\"\n",
            ),
            ("other", "[tool.pyrightish]\n[tool.ruff]\n"),
            ("inline", "[tool]\npyright = { strict = [\"src\"] }\n"),
            ("dotted", "tool.pyright.strict = [\"src\"]\n"),
            ("quoted", "[ \"tool\" . pyright ]\n"),
            ("value", "[tool]\npyright = \"yes\"\n"),
            ("broken", "[tool.pyright]\nstrict = [\n"),
        ];
        for (folder, text) in files {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
            std::fs::write(dir.join(folder).join("pyproject.toml"), text).unwrap();
        }
        let holds = |folder: &str| holds_marker(&dir.join(folder), "pyproject.toml:tool.pyright");
        assert_eq!(
            ["plain", "own", "sub", "other", "missing"].map(holds),
            [false, true, true, false, false]
        );
        assert_eq!(
            ["inline", "dotted", "quoted", "value", "broken"].map(holds),
            [true, true, true, false, true]
        );
        assert!(holds_marker(&dir.join("plain"), "pyproject.toml"));
        assert_eq!(marker_file("pyproject.toml:tool.pyright"), "pyproject.toml");
        assert_eq!(marker_file("setup.cfg"), "setup.cfg");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
