//! What a server loads as one unit before it answers about the files in it, for a query's
//! readiness wait (issue 15): the wait before a file's first question keeps a push server's
//! quiet period after its publish, since a server may announce work just after it; for the
//! servers below that work is the loading of the file's unit, which happens once per unit and
//! process, so a later file of a unit already waited for is ready at its own publish while no
//! `$/progress` is active ([`super::settle::PushState::ready_at_publish`]).
//!
//! - clangd 14 ([`super::settle::SettleRule::VersionedPublish`]): a compilation database. It loads
//!   the database and starts its background index when it first opens a file of it, and was
//!   seen announcing that index just after the file's publish (a1e033b).
//! - gopls: a Go module (the nearest `go.mod` above the file). It loads the module's packages
//!   at start and when it first sees a file of a module, under `$/progress`; a file of a loaded
//!   module is type-checked on demand, and its publish follows that check.
//!
//! Other servers keep the quiet period for every file: nothing is known of what they do after
//! a publish.

use std::path::{Path, PathBuf};

use super::settle::SettleRule;

/// The kind of unit a server loads as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadinessScope {
    /// clangd: the folder of the compilation database it takes for a file
    /// ([`crate::project::c_header::compilation_database_folder`]).
    CompilationDatabase,
    /// gopls: the folder of the file's `go.mod`.
    GoModule,
}

impl ReadinessScope {
    /// The scope kind of a server with settle rule `rule` whose `serverInfo.name` or known
    /// program is `known_name`; `None` for a server whose readiness keeps the quiet period
    /// for every file.
    pub(super) fn of(rule: SettleRule, known_name: Option<&str>) -> Option<ReadinessScope> {
        match (rule, known_name) {
            (SettleRule::VersionedPublish, _) => Some(ReadinessScope::CompilationDatabase),
            (SettleRule::QuietAfterPublish, Some("gopls")) => Some(ReadinessScope::GoModule),
            _ => None,
        }
    }

    /// The folder of `file`'s unit (canonical `file`); `None` when it has none (no database:
    /// clangd's fallback command; no `go.mod`: GOPATH mode). Files without one share that key.
    pub(super) fn folder(self, file: &Path) -> Option<PathBuf> {
        let folder = file.parent()?;
        match self {
            ReadinessScope::CompilationDatabase => {
                crate::project::c_header::compilation_database_folder(folder)
            }
            ReadinessScope::GoModule => crate::project::go_module_folder(folder),
        }
    }

    /// The unit's name in the debug log.
    pub(super) fn name(self) -> &'static str {
        match self {
            ReadinessScope::CompilationDatabase => "compilation database",
            ReadinessScope::GoModule => "Go module",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clangd_and_gopls_have_scopes_and_other_servers_none() {
        use ReadinessScope::*;
        assert_eq!(
            ReadinessScope::of(SettleRule::VersionedPublish, Some("clangd")),
            Some(CompilationDatabase)
        );
        assert_eq!(
            ReadinessScope::of(SettleRule::QuietAfterPublish, Some("gopls")),
            Some(GoModule)
        );
        assert_eq!(
            ReadinessScope::of(SettleRule::QuietAfterPublish, Some("pylsp")),
            None
        );
        assert_eq!(
            ReadinessScope::of(SettleRule::QuietAfterPublish, None),
            None
        );
        assert_eq!(ReadinessScope::of(SettleRule::Pull, Some("gopls")), None);
    }

    #[test]
    fn a_go_files_scope_is_its_nearest_module() {
        let temp = std::env::temp_dir().join(format!("lspc-go-scope-{}", std::process::id()));
        std::fs::create_dir_all(temp.join("m/sub/pkg")).unwrap();
        let file = temp.join("m/sub/pkg/a.go");
        assert_eq!(ReadinessScope::GoModule.folder(&file), None);
        std::fs::write(temp.join("m/go.mod"), "module m\n").unwrap();
        assert_eq!(ReadinessScope::GoModule.folder(&file), Some(temp.join("m")));
        std::fs::write(temp.join("m/sub/go.mod"), "module m/sub\n").unwrap();
        assert_eq!(
            ReadinessScope::GoModule.folder(&file),
            Some(temp.join("m/sub"))
        );
        std::fs::remove_dir_all(&temp).unwrap();
    }
}
