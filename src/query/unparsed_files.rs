//! References that a server can only find in files it has been sent: clangd without a
//! `compile_commands.json`, typescript-language-server outside its tsconfig's project, and
//! pyright (or basedpyright) outside its project's `include`.
//!
//! With `compile_commands.json` clangd indexes every file it lists in the background, and
//! `textDocument/references` answers from that index. Without one (none at all, or only a
//! `compile_flags.txt`, which gives flags but no list of files) it knows the files lspc opened,
//! and answers from those alone. A new user's trial on zserge/jsmn (no database; `jsmn_parse`
//! declared in `jsmn.h`, called 17 times from `test/tests.c` and from `example/*.c`) got "no
//! references found" for `jsmn.h:99:14`. The seventeenth turn fixed the rename's half of it
//! (`edit::commands`, waiting for the files it opened).
//!
//! Here, when the server answering is clangd (it advertises clangd's own `compilationDatabase`
//! capability) and finds no `compile_commands.json` for the file
//! ([`crate::project::c_header::finds_compile_commands`]), the files it serves that hold the
//! name as a whole word ([`crate::word_occurrences::scan`]) are opened, at most
//! [`MAX_FILES_OPENED`], their diagnostics waited for (clangd publishes once it has parsed a
//! file, and then answers from it), and the references are asked again. A note says so when
//! more files hold the name than were opened, or when some did not settle in time.
//!
//! typescript-language-server is the same for the files its tsconfig leaves out: tsserver
//! searches the projects of the documents it has open, so a method of `source/index.ts` called
//! 84 times from `test/*.ts` (outside `"include": ["source"]`) had "no references found" (a new
//! user's trial on sindresorhus/p-queue), while the rename, which opens the files holding the
//! name, renamed all 84. The files the tsconfig leaves out that mention the name are opened
//! the same way (those it includes, tsserver already knows), and so are the files no tsconfig
//! or jsconfig governs (lukeed/dequal: `test/index.js` uses `src/index.js`, and no
//! configuration ties them), and those another tsconfig governs (panva/jose: `test/` has its
//! own `tsconfig.json`; one tsserver serves both, [`crate::config::roots::find_project_root`],
//! but loads `test/`'s project only once a file of it is open). A file another instance
//! serves (a package with its own tsconfig and no tsconfig above it) is not opened here, and
//! the note counts it among the files not searched.
//!
//! pyright searches its program's tracked files (its `include` less its `exclude`) and the open
//! ones: with `include = ["src", "tests/typing"]` (pallets/click) the uses of
//! `_compat.strip_ansi` in `tests/test_compat.py` were missing, with no note, and in one process
//! the answer grew as other questions opened test files. The files the instance's project leaves
//! out ([`crate::project::PyrightProject`], read at the instance's project folder) that mention
//! the name are opened the same way.
//!
//! These servers' `references` take the blocking route, never the instant one
//! ([`may_reach_unopened_files`]), so the search runs on every question, not only a file's first.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Queries, Target};
use crate::engine::DiagnosticsOutcome;
use crate::text::LineIndex;
use crate::word_occurrences;

/// At most this many files are opened for one references query (as for a rename's leftovers).
pub const MAX_FILES_OPENED: usize = 32;

impl Queries {
    /// `textDocument/references` again, once the files that mention the name at `target` are
    /// open, when `target`'s server is one of the module doc's (clangd without a compilation
    /// database, typescript-language-server, pyright); `None` when that does not apply, no
    /// other file mentions the name, or the second request fails (logged: the first answer
    /// stands). Answers the server's second answer and a note for the result's `incomplete`
    /// when some files were not searched.
    pub(super) fn references_from_unparsed_files(
        &self,
        target: &Target,
        include_declaration: bool,
    ) -> Option<(Value, Option<String>)> {
        let opened = self.open_files_mentioning(target, "its references")?;
        let params = json!({
            "textDocument": { "uri": super::document_uri(&target.doc.path) },
            "position": target.position,
            "context": { "includeDeclaration": include_declaration },
        });
        let answer = match self.request(target, "textDocument/references", params) {
            Ok(answer) => answer,
            Err(error) => {
                log::warn!("references asked again: {error}");
                return None;
            }
        };
        Some((answer, opened.note(&target.server.name)))
    }

    /// Opens the files that mention the name at `target` on its server, when the server is one
    /// of the module doc's, and waits for their diagnostics (the server has then parsed them);
    /// `None` when that does not apply or no other file mentions the name. `what` names what
    /// will be asked again, for the log. `incoming-calls` needs it as `references` does
    /// (helper-39: execa's `createDeferred`, outside the tsconfig, had "no incoming calls
    /// found" where `references` found its 5 callers).
    pub(super) fn open_files_mentioning(&self, target: &Target, what: &str) -> Option<Opened> {
        let details = crate::engine::server_details(&self.op_sender)
            .into_iter()
            .find(|details| details.server_id == Some(target.server.server_id))?;
        let unparsed = Unparsed::of(target, &details, &self.root)?;
        let text = &target.doc.text;
        let index = LineIndex::new(text);
        let (line, column) = index.from_lsp(text, target.position, target.server.encoding);
        let language = crate::edit::identifier::Language::of(&target.doc.path);
        let name =
            word_occurrences::declared_name_at(index.line_text(text, line - 1)?, column, |word| {
                language.is_some_and(|language| crate::edit::identifier::is_keyword(language, word))
            })?;
        let extensions = &details.extensions;
        let typescript = crate::project::TypeScriptProjects::new(&self.root);
        let mentions = word_occurrences::scan_where(
            &self.root,
            &name,
            extensions,
            std::slice::from_ref(&target.doc.path),
            |path| match &unparsed {
                Unparsed::NoCompilationDatabase => true,
                Unparsed::OutsideTheTsconfig => {
                    typescript.leaves_out(path)
                        || typescript.ungoverned(path)
                        || typescript.governed_apart(path, &target.doc.path)
                }
                Unparsed::OutsidePyrightsProject(project) => project.leaves_out(path),
            },
        );
        // A file another instance of the server serves would be opened there, where this
        // question is not asked, and start that instance for nothing.
        let (mut here, elsewhere): (Vec<_>, Vec<_>) = mentions
            .into_iter()
            .partition(|file| served_here(&details, &self.root, &file.path));
        // Every one of them is outside the file's own project (a call hierarchy does not reach
        // them, opened or not).
        let outside_own: Vec<PathBuf> = match unparsed {
            Unparsed::OutsideTheTsconfig => here.iter().map(|file| file.path.clone()).collect(),
            _ => Vec::new(),
        };
        here = in_opening_order(here, &typescript, &target.doc.path);
        let opened = crate::engine::open_on(
            &self.op_sender,
            here.iter()
                .take(MAX_FILES_OPENED)
                .map(|file| file.path.clone()),
            target.server.server_id,
            self.timeout,
        );
        if opened.is_empty() && elsewhere.is_empty() {
            return None;
        }
        let unsettled = self.wait_settled(&opened);
        log::info!(
            "{}: {}; opened {} file(s) mentioning {name} and asking for {what} again",
            target.server.name,
            unparsed.why(),
            opened.len()
        );
        Some(Opened {
            name,
            outside_own,
            opened: opened.len(),
            mentions: here.len(),
            elsewhere: elsewhere.len(),
            unsettled,
            finds_only: unparsed.finds_only(),
        })
    }

    /// Waits (bounded by the timeout) for the settled diagnostics of `paths`; answers the
    /// root-relative paths of those that did not settle in time.
    fn wait_settled(&self, paths: &[PathBuf]) -> Vec<String> {
        crate::engine::diagnostics_with(&self.op_sender, paths.to_vec(), self.timeout)
            .unwrap_or_default()
            .into_iter()
            .filter(|file| matches!(file.outcome, DiagnosticsOutcome::TimedOut { .. }))
            .map(|file| self.display(&file.path))
            .collect()
    }
}

/// What [`Queries::open_files_mentioning`] opened.
pub(super) struct Opened {
    /// The name looked for.
    pub(super) name: String,
    /// For typescript-language-server, the files this instance serves that mention the name
    /// outside the file's own tsconfig project (canonical, opened or not), most uses first.
    pub(super) outside_own: Vec<PathBuf>,
    /// How many files were opened, of how many that mention the name and this instance serves.
    opened: usize,
    mentions: usize,
    /// How many files that mention the name other instances of the server serve.
    elsewhere: usize,
    /// The root-relative paths of opened files whose diagnostics did not settle in time.
    unsettled: Vec<String>,
    /// What the server finds on its own ([`Unparsed::finds_only`]).
    finds_only: &'static str,
}

impl Opened {
    /// The note for a result's `incomplete` when some files were not searched (server
    /// `server`): more files mention the name than were opened, or some did not settle.
    pub(super) fn note(&self, server: &str) -> Option<String> {
        let mut notes = Vec::new();
        if self.mentions > self.opened {
            notes.push(format!(
                "{server} {}: lspc opened {} of the {} files that mention {}",
                self.finds_only, self.opened, self.mentions, self.name
            ));
        }
        if self.elsewhere > 0 {
            notes.push(format!(
                "{} that mention{} {} {} served by another instance of {server} (a project \
                 root of its own) and not searched",
                crate::output::plural(self.elsewhere, "file", "files"),
                if self.elsewhere == 1 { "s" } else { "" },
                self.name,
                if self.elsewhere == 1 { "is" } else { "are" },
            ));
        }
        if !self.unsettled.is_empty() {
            notes.push(format!(
                "{server} still analysing {}",
                self.unsettled.join(", ")
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

/// Whether the instance `details` describes serves `path` (canonical, under the workspace
/// `root`): its project root is the instance's ([`crate::config::roots::find_project_root`]).
/// `files` that mention a name used in `target`, in the order to open them when only some can
/// be: with a TypeScript or JavaScript `target`, one file of each other tsconfig project first
/// ([`one_per_tsconfig_project_first`]); then the files with the most uses (a helper's trial on
/// pallets/werkzeug had 35 files naming the function once in a comment, in path order before
/// the test file calling it 9 times, and the bound of files opened reached only those), ties
/// in path order. The rename's leftovers are opened in this order too (helper-50: `examples/`
/// before `test/` left the test project unrenamed, where `references` found its uses).
pub(crate) fn in_opening_order(
    mut files: Vec<word_occurrences::Occurrences>,
    typescript: &crate::project::TypeScriptProjects,
    target: &Path,
) -> Vec<word_occurrences::Occurrences> {
    files.sort_by(|a, b| b.lines.len().cmp(&a.lines.len()).then(a.path.cmp(&b.path)));
    if crate::edit::identifier::Language::of(target)
        == Some(crate::edit::identifier::Language::JavaScript)
    {
        files = one_per_tsconfig_project_first(files, typescript, target);
    }
    files
}

/// `files` (each mentioning the name) with, first, one file of each tsconfig project other than
/// `target`'s, and without the other files those projects include: tsserver loads a configured
/// project when one of its files opens and then searches every file of it, while a file no
/// configuration includes opens an inferred project of its own. A helper's trial on
/// tj/commander.js with a `tests/tsconfig.json`: the 32 files opened were all in `examples/`
/// (no tsconfig), in path order, and none of the 97 tests' uses were found.
fn one_per_tsconfig_project_first(
    files: Vec<word_occurrences::Occurrences>,
    typescript: &crate::project::TypeScriptProjects,
    target: &Path,
) -> Vec<word_occurrences::Occurrences> {
    let own = typescript.configuration(target);
    let mut loaded = std::collections::HashSet::new();
    let mut first = Vec::new();
    let mut rest = Vec::new();
    for file in files {
        let project = typescript
            .configuration(&file.path)
            .filter(|configuration| Some(configuration) != own.as_ref())
            .filter(|_| !typescript.leaves_out(&file.path));
        match project {
            Some(project) => {
                if loaded.insert(project) {
                    first.push(file);
                }
            }
            None => rest.push(file),
        }
    }
    first.extend(rest);
    first
}

fn served_here(details: &crate::engine::ServerDetails, root: &Path, path: &Path) -> bool {
    if details.root_markers.is_empty() {
        return true;
    }
    let instance_root = match &details.project {
        Some(project) => root.join(project),
        None => root.to_path_buf(),
    };
    path.parent()
        .and_then(|folder| {
            crate::config::roots::find_project_root(folder, root, &details.root_markers)
        })
        .is_none_or(|project_root| project_root == instance_root)
}

/// Why a server's references miss files it has not been sent.
enum Unparsed {
    /// clangd without a `compile_commands.json` above the file.
    NoCompilationDatabase,
    /// typescript-language-server, for the files the file's tsconfig leaves out.
    OutsideTheTsconfig,
    /// pyright or basedpyright, for the files its project's `include`/`exclude` leave out.
    OutsidePyrightsProject(crate::project::PyrightProject),
}

/// Whether [`Queries::references_from_unparsed_files`] may reach further than `server`'s own
/// answer about `path`: clangd without a `compile_commands.json` above the file,
/// typescript-language-server, pyright and basedpyright. Such `references` take the blocking
/// route, where that search runs, and never the instant one (which skipped it: in one process
/// the answer depended on which files earlier questions had opened).
pub(super) fn may_reach_unopened_files(server: &crate::engine::ServerInfo, path: &Path) -> bool {
    if server.capabilities.get("compilationDatabase").is_some() {
        return path
            .parent()
            .is_some_and(|folder| !crate::project::c_header::finds_compile_commands(folder));
    }
    server.pyright_family || crate::engine::is_typescript_language_server(&server.capabilities)
}

impl Unparsed {
    /// Which applies to `target`'s server (the instance `details` describes; `root` is the
    /// workspace root), if any.
    fn of(
        target: &Target,
        details: &crate::engine::ServerDetails,
        root: &Path,
    ) -> Option<Unparsed> {
        if target.server.pyright_family {
            let folder = match &details.project {
                Some(project) => root.join(project),
                None => root.to_path_buf(),
            };
            return crate::project::PyrightProject::load(&folder)
                .map(Unparsed::OutsidePyrightsProject);
        }
        let capabilities = &target.server.capabilities;
        // clangd's own capability: `{"automaticReload": true}` (clangd 14 and later).
        if capabilities.get("compilationDatabase").is_some() {
            let folder = target.doc.path.parent()?;
            return (!crate::project::c_header::finds_compile_commands(folder))
                .then_some(Unparsed::NoCompilationDatabase);
        }
        crate::engine::is_typescript_language_server(capabilities)
            .then_some(Unparsed::OutsideTheTsconfig)
    }

    fn why(&self) -> &'static str {
        match self {
            Unparsed::NoCompilationDatabase => "no compilation database",
            Unparsed::OutsideTheTsconfig => "files outside the tsconfig's project",
            Unparsed::OutsidePyrightsProject(_) => "files outside its project's include",
        }
    }

    fn finds_only(&self) -> &'static str {
        match self {
            Unparsed::NoCompilationDatabase => {
                "has no compilation database and finds references only in the files it has parsed"
            }
            Unparsed::OutsideTheTsconfig => {
                "finds references outside its tsconfig's project only in the files it has open"
            }
            Unparsed::OutsidePyrightsProject(_) => {
                "finds references outside its project's include only in the files it has open"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One file of `test/`'s project stands for it, its other files are left to tsserver, and
    /// the files no tsconfig governs follow in their given order.
    #[test]
    fn one_file_opens_each_other_tsconfig_project() {
        let dir = std::env::temp_dir().join(format!("lspc-one-per-project-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for folder in ["src", "test", "examples"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        std::fs::write(dir.join("tsconfig.json"), r#"{"include": ["src"]}"#).unwrap();
        std::fs::write(dir.join("test/tsconfig.json"), "{}").unwrap();
        let root = crate::uri::canonical(&dir);
        let occurrences = |path: &str| word_occurrences::Occurrences {
            path: root.join(path),
            lines: vec![1],
        };
        let files = ["test/a.ts", "examples/x.ts", "test/b.ts", "examples/y.ts"]
            .map(occurrences)
            .to_vec();
        let typescript = crate::project::TypeScriptProjects::new(&root);
        let ordered = one_per_tsconfig_project_first(files, &typescript, &root.join("src/i.ts"));
        let paths: Vec<&Path> = ordered
            .iter()
            .map(|file| file.path.strip_prefix(&root).unwrap())
            .collect();
        assert_eq!(
            paths,
            ["test/a.ts", "examples/x.ts", "examples/y.ts"].map(Path::new)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
