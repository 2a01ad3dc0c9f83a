//! Showing each file of a check as the user has it. lspc keys a file by its canonical path
//! (symlinks resolved), so a `compile_commands.json` that links to the build folder's (CMake's
//! `CMAKE_EXPORT_COMPILE_COMMANDS` plus the usual `ln -s build/compile_commands.json .`) was
//! reported as `build/compile_commands.json`, a path in an ignored folder the user never named.
//! The report shows it under the link it was found as ([`crate::walk::list_files_found`]);
//! everything before the report keeps the canonical path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::output::CheckReport;
use crate::walk::ListedFile;

/// Canonical path → the path of the symlink it was found as, for the files listed only
/// through a link.
#[derive(Debug, Default)]
pub(crate) struct FoundPaths {
    found_as: HashMap<PathBuf, PathBuf>,
}

impl FoundPaths {
    /// The links among `listed`.
    pub(crate) fn new(listed: &[ListedFile]) -> FoundPaths {
        let found_as = listed
            .iter()
            .filter_map(|file| Some((file.path.clone(), file.found_as.clone()?)))
            .collect();
        FoundPaths { found_as }
    }

    /// How `path` (canonical) is shown: as the link it was found as, else as it is.
    pub(crate) fn shown(&self, path: &Path) -> PathBuf {
        self.found_as
            .get(path)
            .cloned()
            .unwrap_or_else(|| path.to_path_buf())
    }

    /// Shows every file of `report` (and its diagnostics, and the skipped files) as it was
    /// found; the caller sorts the files afterwards.
    pub(crate) fn apply(&self, report: &mut CheckReport) {
        if self.found_as.is_empty() {
            return;
        }
        for file in &mut report.files {
            file.path = self.shown(&file.path);
            for diagnostic in &mut file.diagnostics {
                diagnostic.path = self.shown(&diagnostic.path);
            }
        }
        for skipped in &mut report.skipped {
            skipped.path = self.shown(&skipped.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Severity;
    use crate::output::{FileReport, FileState, SkippedFile};

    #[test]
    fn files_found_through_a_link_are_shown_as_the_link() {
        let listed = [
            ListedFile {
                path: "/w/build/compile_commands.json".into(),
                found_as: Some("/w/compile_commands.json".into()),
            },
            ListedFile {
                path: "/w/main.c".into(),
                found_as: None,
            },
            ListedFile {
                path: "/w/data/blob.c".into(),
                found_as: Some("/w/blob.c".into()),
            },
        ];
        let found = FoundPaths::new(&listed);
        let check = |path: &str, expected: &str| {
            assert_eq!(found.shown(Path::new(path)), Path::new(expected), "{path}");
        };
        check("/w/build/compile_commands.json", "/w/compile_commands.json");
        check("/w/main.c", "/w/main.c");
        check("/w/other.c", "/w/other.c");
        let diagnostic = crate::diagnostics::Diagnostic {
            path: "/w/build/compile_commands.json".into(),
            line: 1,
            column: 78,
            end_line: 1,
            end_column: 79,
            severity: Severity::Error,
            message: "Trailing comma".to_owned(),
            source: Some("json".to_owned()),
            code: Some("519".to_owned()),
            server: "vscode-json-language-server".to_owned(),
        };
        let mut report = CheckReport {
            root: "/w".into(),
            human_base: "/w".into(),
            color: false,
            files: vec![FileReport {
                path: "/w/build/compile_commands.json".into(),
                state: FileState::Diagnostics,
                diagnostics: vec![diagnostic],
                n_omitted: 0,
            }],
            n_omitted: 0,
            server_failures: Vec::new(),
            severity: Severity::Information,
            n_below_severity: 0,
            skipped: vec![SkippedFile {
                path: "/w/data/blob.c".into(),
                reason: "binary file".to_owned(),
                outside_projects: false,
            }],
            notes: Vec::new(),
        };
        found.apply(&mut report);
        assert_eq!(report.files[0].path, Path::new("/w/compile_commands.json"));
        assert_eq!(
            report.files[0].diagnostics[0].path,
            Path::new("/w/compile_commands.json")
        );
        assert_eq!(report.skipped[0].path, Path::new("/w/blob.c"));
    }
}
