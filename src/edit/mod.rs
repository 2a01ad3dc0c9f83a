//! Safe edits: every `WorkspaceEdit` lspc applies (from `textDocument/rename`, a code action,
//! `textDocument/formatting`, a server's `workspace/applyEdit`, or `lspc edit`) goes through this
//! module (issue 5; cases B04 and B28 in `CASES.md`).
//!
//! - [`workspace_edit`]: the engine. Parses both `WorkspaceEdit` shapes, validates everything
//!   (paths inside the root after resolving `..` and symlinks, versions, overlaps, disk content)
//!   before writing anything, then writes atomically and rolls back on a half-way failure.
//! - [`diff`]: the unified diff shown before an edit is applied.
//! - [`formatting`]: the `FormattingOptions` of a file, from `.editorconfig` and its text.
//! - whole-word occurrences of the old name a rename left are found by [`crate::word_occurrences`].
//! - [`identifier`]: whether a rename's new name can be a name in Python or JavaScript/TypeScript,
//!   whose servers rename to anything.
//! - [`commands`]: `rename`, `code-actions`, `format` and `edit`, callable from the CLI and MCP,
//!   each returning the files changed and the block of diagnostics new since before the edit.
//!
//! Invariants: a file is either fully updated or untouched; nothing outside the workspace root is
//! ever written; positions from servers are converted with the server's negotiated encoding.

pub mod commands;
pub mod diff;
pub mod formatting;
pub mod identifier;
pub mod local_rename;
pub mod workspace_edit;

pub use workspace_edit::{
    apply_workspace_edit, ApplyMode, EditContext, EditError, EditReport, FileChange, Operation,
    SentDocument,
};
