//! gopls's file set: the `.go` files `go vet ./...` and `go build ./...` compile on this machine,
//! as the go command selects them (`go help packages`, `go help buildconstraint`).
//!
//! gopls type-checks any `.go` file it is given, also one the go command leaves out: a file
//! with `//go:build ignore` becomes a package of its own (its imports then fail to resolve), a
//! file for another system gets "No packages found for open file". `go vet ./...` reports
//! neither, so `lspc check` leaves out, as that CLI does:
//!
//! - files below a folder named `testdata` or `vendor`, or whose name or a folder's name below
//!   the module root starts with `_` or `.` (the `./...` pattern never matches them);
//! - files whose build constraints (`//go:build`, `// +build`, `_GOOS`/`_GOARCH` name
//!   suffixes) exclude them: the go command's own `IgnoredGoFiles`, listed once per module by
//!   `go list -e -find ./...` run in the module root (the folder of the nearest `go.mod`), with
//!   the server's environment and its `gopls.buildFlags` setting (`-tags=…`), and
//!   `GOPROXY=off`: `-find` loads no dependency, and a listing must never wait on the network.
//!   A folder whose every file is excluded is no package at all, so `./...` does not list it:
//!   the files of a folder the listing does not name are excluded too.
//!
//! A file under no `go.mod`, or in a module whose listing fails (no `go` on `PATH`, a `go.mod`
//! that cannot be loaded offline), is kept: gopls then says what it makes of it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::FileSet;
use crate::config::ServerConfig;

/// Why a file the `./...` pattern never matches is left out.
const NOT_MATCHED: &str = "outside `go vet ./...` (testdata, vendor, `_` or `.` names)";
/// Why a file the go command's build constraints exclude is left out.
const CONSTRAINED: &str = "excluded by Go build constraints";
/// Why gopls never checks a file below a folder the go command ignores, even named.
const IGNORED_FOLDER: &str = "in a folder the go command ignores (testdata, `_` or `.` names)";

/// The Go file set of one gopls server; each module is listed once, when a file of it is first
/// asked about.
pub struct GoFiles {
    /// The server's environment (`env`), added to lspc's for `go list`.
    env: Vec<(String, String)>,
    /// The `gopls.buildFlags` setting, passed to `go list`.
    build_flags: Vec<String>,
    /// Folder → its module root (`None`: no `go.mod` above it).
    module_roots: std::cell::RefCell<HashMap<PathBuf, Option<PathBuf>>>,
    /// Module root → its `go list` (`None`: the listing failed).
    listings: std::cell::RefCell<HashMap<PathBuf, Option<Listing>>>,
}

impl GoFiles {
    pub fn new(server: &ServerConfig) -> GoFiles {
        GoFiles {
            env: server
                .env
                .iter()
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
            build_flags: build_flags(server.settings.as_ref()),
            module_roots: Default::default(),
            listings: Default::default(),
        }
    }

    fn module_root(&self, folder: &Path) -> Option<PathBuf> {
        self.module_roots
            .borrow_mut()
            .entry(folder.to_path_buf())
            .or_insert_with(|| module_folder(folder))
            .clone()
    }

    fn constrained(&self, module_root: &Path, file: &Path) -> bool {
        self.listings
            .borrow_mut()
            .entry(module_root.to_path_buf())
            .or_insert_with(|| self.list_module(module_root))
            .as_ref()
            .is_some_and(|listing| listing.excludes(file))
    }

    /// `go list` of the module at `module_root`; `None` when `go list` cannot run or fails.
    fn list_module(&self, module_root: &Path) -> Option<Listing> {
        let output = crate::bounded_run::output(
            Command::new("go")
                .args(["list", "-e", "-find"])
                .args(&self.build_flags)
                .args([
                    "-f",
                    "{{.Dir}}{{range .IgnoredGoFiles}}|{{.}}{{end}}",
                    "./...",
                ])
                .current_dir(module_root)
                .envs(self.env.iter().map(|(key, value)| (key, value)))
                .env("GOPROXY", "off"),
            "go list",
            LIST_TIMEOUT,
        );
        let output = match output {
            Ok(output) if output.status.success() => output,
            Ok(output) => {
                log::debug!(
                    "go list in {} failed ({}): {}; its Go files are all checked",
                    module_root.display(),
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                );
                return None;
            }
            Err(error) => {
                log::debug!("cannot run go list: {error}; Go files are all checked");
                return None;
            }
        };
        Some(Listing::parse(&String::from_utf8_lossy(&output.stdout)))
    }
}

/// How long one module's `go list` may take; past it the module keeps every file (a listing
/// must never hold `lspc check` up: a stuck file system, a go command waiting on a lock).
const LIST_TIMEOUT: std::time::Duration = crate::bounded_run::DEFAULT_TIMEOUT;

/// What `go list -f '{{.Dir}}{{range .IgnoredGoFiles}}|{{.}}{{end}}' ./...` says of a module:
/// one package a line, its folder then its ignored file names, `|`-separated. Paths canonical.
#[derive(Debug, Default)]
struct Listing {
    package_folders: HashSet<PathBuf>,
    ignored: HashSet<PathBuf>,
}

impl Listing {
    fn parse(listing: &str) -> Listing {
        let mut parsed = Listing::default();
        for line in listing.lines() {
            let mut parts = line.split('|');
            let Some(folder) = parts.next().filter(|folder| !folder.is_empty()) else {
                continue;
            };
            let folder = crate::uri::canonical(Path::new(folder));
            parsed.ignored.extend(parts.map(|name| folder.join(name)));
            parsed.package_folders.insert(folder);
        }
        parsed
    }

    /// Whether the build constraints exclude `file` (canonical, in the module, matched by
    /// `./...`): the listing names it as ignored, or does not name its folder.
    fn excludes(&self, file: &Path) -> bool {
        self.ignored.contains(file)
            || file
                .parent()
                .is_some_and(|folder| !self.package_folders.contains(folder))
    }
}

impl FileSet for GoFiles {
    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        if file.extension().is_none_or(|extension| extension != "go") {
            return None;
        }
        let module_root = self.module_root(file.parent()?)?;
        let relative = file.strip_prefix(&module_root).ok()?;
        if !matched_by_dot_dot_dot(relative) {
            return Some(NOT_MATCHED);
        }
        self.constrained(&module_root, file).then_some(CONSTRAINED)
    }

    /// gopls 0.5 publishes one empty set for a file below `testdata` or a folder whose name
    /// starts with `_` or `.` (a new user's trial: `lspc check query/testdata/broken.go`, a
    /// syntax error, was clean, exit 0; `go vet ./broken.go` and `gopls check` report it): it
    /// is not checked, also when named or walked with `--all-files`. A file its build
    /// constraints exclude is still checked when named (`// +build ignore` makes a package of
    /// its own), as `go vet FILE` checks it.
    fn never_checks(&self, file: &Path) -> Option<&'static str> {
        let is_go = file.extension().is_some_and(|extension| extension == "go");
        (is_go && in_an_ignored_folder(file)).then_some(IGNORED_FOLDER)
    }
}

/// The module folder of the files in `folder`: the nearest of `folder` and the folders above it
/// holding a `go.mod` file; `None` outside any module (GOPATH mode).
pub fn module_folder(folder: &Path) -> Option<PathBuf> {
    folder
        .ancestors()
        .find(|dir| dir.join("go.mod").is_file())
        .map(Path::to_path_buf)
}

/// Whether `file` (canonical) lies below a folder of its module ([`module_folder`]) that the go
/// command ignores ([`below_an_ignored_folder`]); false outside any module.
pub fn in_an_ignored_folder(file: &Path) -> bool {
    let Some(module_root) = file.parent().and_then(module_folder) else {
        return false;
    };
    file.strip_prefix(module_root)
        .is_ok_and(below_an_ignored_folder)
}

/// Whether a folder of `relative` (a path below the module root, its file name aside) is one the
/// go command ignores: `testdata`, or a name starting with `_` or `.`.
fn below_an_ignored_folder(relative: &Path) -> bool {
    let Some(folders) = relative.parent() else {
        return false;
    };
    folders.components().any(|component| {
        let name = component.as_os_str().to_string_lossy();
        name == "testdata" || name.starts_with('_') || name.starts_with('.')
    })
}

/// Whether the `./...` pattern of the module can match `relative` (a path below the module
/// root): no folder named `testdata` or `vendor`, and no component starting with `_` or `.`.
fn matched_by_dot_dot_dot(relative: &Path) -> bool {
    let components: Vec<String> = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    let Some((name, folders)) = components.split_last() else {
        return true;
    };
    let hidden = |part: &str| part.starts_with('_') || part.starts_with('.');
    !hidden(name)
        && !folders
            .iter()
            .any(|folder| hidden(folder) || folder == "testdata" || folder == "vendor")
}

/// The `gopls.buildFlags` setting (a list of strings), as the server gets it.
fn build_flags(settings: Option<&Value>) -> Vec<String> {
    settings
        .and_then(|settings| settings.get("gopls"))
        .and_then(|gopls| gopls.get("buildFlags"))
        .and_then(Value::as_array)
        .map(|flags| {
            flags
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dot_dot_dot_pattern_skips_testdata_vendor_and_hidden_names() {
        let check = |relative: &str, expected: bool| {
            assert_eq!(
                matched_by_dot_dot_dot(Path::new(relative)),
                expected,
                "{relative}"
            );
        };
        check("main.go", true);
        check("internal/x/y.go", true);
        check("cmd/tool/main_test.go", true);
        check("testdata/bad.go", false);
        check("analysis/testdata/src/a/a.go", false);
        check("vendor/github.com/x/y.go", false);
        check("_examples/main.go", false);
        check(".github/tool.go", false);
        check("_scratch.go", false);
        check(".hidden.go", false);
        check("my_testdata/x.go", true);
        check("x_/y.go", true);
    }

    #[test]
    fn a_listing_excludes_ignored_files_and_folders_it_does_not_name() {
        let root = crate::uri::canonical(&std::env::temp_dir());
        let listing = Listing::parse(&format!(
            "{root}|btree.go|btree_mem.go\n{root}/sub\n\n{root}/other|plugin.go\n",
            root = root.display()
        ));
        let check = |relative: &str, expected: bool| {
            assert_eq!(
                listing.excludes(&root.join(relative)),
                expected,
                "{relative}"
            );
        };
        check("btree.go", true);
        check("btree_mem.go", true);
        check("btree_generic.go", false);
        check("sub/a.go", false);
        check("other/plugin.go", true);
        check("other/main.go", false);
        // `./...` names no folder whose every file is excluded (`winonly/x_windows.go`).
        check("winonly/x_windows.go", true);
    }

    #[test]
    fn build_flags_come_from_the_gopls_settings() {
        let settings = serde_json::json!({"gopls": {"buildFlags": ["-tags=integration", 3]}});
        assert_eq!(build_flags(Some(&settings)), ["-tags=integration"]);
        assert!(build_flags(Some(&serde_json::json!({"gopls": {}}))).is_empty());
        assert!(build_flags(None).is_empty());
    }
}
