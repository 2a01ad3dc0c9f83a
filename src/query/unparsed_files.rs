//! References that a server can only find in files it has parsed: clangd without a
//! `compile_commands.json`.
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

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{Queries, Target};
use crate::engine::DiagnosticsOutcome;
use crate::text::LineIndex;
use crate::word_occurrences;

/// At most this many files are opened for one references query (as for a rename's leftovers).
pub const MAX_FILES_OPENED: usize = 32;

impl Queries {
    /// `textDocument/references` again, once the files that mention the name at `target` are
    /// open, when `target`'s server is clangd without a compilation database (see the module
    /// doc); `None` when that does not apply, no other file mentions the name, or the second
    /// request fails (logged: the first answer stands). Answers the server's second answer and
    /// a note for the result's `incomplete` when some files were not searched.
    pub(super) fn references_from_unparsed_files(
        &self,
        target: &Target,
        include_declaration: bool,
    ) -> Option<(Value, Option<String>)> {
        // clangd's own capability: `{"automaticReload": true}` (clangd 14 and later).
        target.server.capabilities.get("compilationDatabase")?;
        let folder = target.doc.path.parent()?;
        if crate::project::c_header::finds_compile_commands(folder) {
            return None;
        }
        let text = &target.doc.text;
        let index = LineIndex::new(text);
        let (line, column) = index.from_lsp(text, target.position, target.server.encoding);
        let name = word_occurrences::identifier_at(index.line_text(text, line - 1)?, column)?;
        let extensions: Vec<String> = crate::engine::server_details(&self.op_sender)
            .into_iter()
            .find(|details| details.name == target.server.name)
            .map(|details| details.extensions)
            .unwrap_or_default();
        let mentions = word_occurrences::scan(
            &self.root,
            &name,
            &extensions,
            std::slice::from_ref(&target.doc.path),
        );
        let opened = crate::engine::open_on(
            &self.op_sender,
            mentions
                .iter()
                .take(MAX_FILES_OPENED)
                .map(|file| file.path.clone()),
            target.server.server_id,
            self.timeout,
        );
        if opened.is_empty() {
            return None;
        }
        let unsettled = self.wait_settled(&opened);
        log::info!(
            "{}: no compilation database; opened {} file(s) mentioning {name} and asking for its \
             references again",
            target.server.name,
            opened.len()
        );
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
        let mut notes = Vec::new();
        if mentions.len() > opened.len() {
            notes.push(format!(
                "{} has no compilation database and finds references only in the files it has \
                 parsed: lspc opened {} of the {} files that mention {name}",
                target.server.name,
                opened.len(),
                mentions.len()
            ));
        }
        if !unsettled.is_empty() {
            notes.push(format!(
                "{} still analysing {}",
                target.server.name,
                unsettled.join(", ")
            ));
        }
        Some((answer, (!notes.is_empty()).then(|| notes.join("; "))))
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
