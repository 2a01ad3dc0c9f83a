//! The `WorkspaceEdit` engine: parse, validate everything, then write atomically with rollback.
//!
//! LSP 3.17 §`WorkspaceEdit`, §`TextDocumentEdit`, §`CreateFile`/§`RenameFile`/§`DeleteFile`.
//!
//! The edit is first played in memory against a virtual view of the files it touches
//! (`plan`): operations run in the order the server gave them, each text edit is converted from
//! the server's position encoding against the text as it stands at that point of the edit, and
//! every check happens there. Only when the whole edit is valid does [`apply_workspace_edit`]
//! write, so any rejection leaves every byte on disk as it was.
//!
//! Invariants:
//! - Every target is inside the canonical workspace root after resolving `..` and symlinks; a
//!   symlink leading out of the root (or a dangling one) is refused.
//! - A `TextDocumentEdit` with a version must match the version lspc sent for that document; with
//!   `version: null` (or from the `changes` map) it is unversioned. For any document lspc sent,
//!   the file on disk must still hold the text lspc sent (what the server saw).
//! - Edits of one document must not overlap; they all refer to the text before the document's
//!   edit and are applied together (so three renames on one line stay right). Inserts at the
//!   same position keep the server's order.
//! - New text takes the file's line endings (a CRLF file stays CRLF).
//! - Files are written through a temporary file in the same folder (fsync, rename), keeping the
//!   permissions of the file replaced (or of the source of a rename). If a write fails half-way,
//!   the files already written are restored from the in-memory originals.
//! - Folders are not created, renamed or deleted by resource operations (rejected, naming the
//!   folder), except that missing parent folders of a created file are made (and removed on
//!   rollback).
//!
//! Owners: `validate` parses and plays the edit in memory (every check), `apply` applies one
//! document's text edits, `write` writes the plan atomically and rolls back; this file holds the
//! public types and the entry point.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::PositionEncoding;

/// What lspc sent a server for one document: the version and the full text (the version numbers
/// of `textDocument/didOpen`/`didChange`, LSP 3.17 §`VersionedTextDocumentIdentifier`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentDocument {
    pub version: i32,
    /// The version the document was opened with (1, or more when lspc closed it and opened it
    /// again): `version` equals it while lspc has sent only that one text.
    pub opened_version: i32,
    /// The first version lspc sent `text` under: the versions from it up to `version` all
    /// carry `text` (lspc sends an unchanged text again under a new version when another file
    /// changed on disk), and an edit for any of them is an edit of `text`.
    pub text_version: i32,
    pub text: Arc<str>,
}

/// Everything the engine needs besides the edit itself.
pub struct EditContext<'a> {
    /// The workspace root; every target must lie inside it (canonicalised here).
    pub root: &'a Path,
    /// The encoding of `Position.character` in the edit (the sending server's negotiated one).
    pub encoding: PositionEncoding,
    /// The document lspc sent for a canonical path, if any.
    pub documents: &'a dyn Fn(&Path) -> Option<SentDocument>,
    /// Whether another edit lspc wrote changed the canonical path after the caller's edit was
    /// computed: a target for which it is true refuses the whole edit
    /// ([`EditError::ChangedByAnotherEdit`]).
    pub written_since: &'a dyn Fn(&Path) -> bool,
}

/// Whether [`apply_workspace_edit`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApplyMode {
    /// Validate and compute the result; write nothing.
    Preview,
    /// Validate, then write every file atomically (restoring on failure).
    Write,
}

/// One operation of the edit as applied, in the server's order (for "what changed" output).
/// Written by serde's derive, read back (from the session wire) by hand: see
/// [`crate::tagged_json`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Operation {
    /// Text edits to one document; `edits` counts them.
    Edit {
        path: PathBuf,
        edits: usize,
    },
    Create {
        path: PathBuf,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    Delete {
        path: PathBuf,
    },
    /// An operation skipped by its own options (`ignoreIfExists`, `ignoreIfNotExists`).
    Skipped {
        path: PathBuf,
        reason: String,
    },
}

/// The `kind`s [`Operation`] serializes to.
const OPERATION_KINDS: &[&str] = &["edit", "create", "rename", "delete", "skipped"];

impl<'de> Deserialize<'de> for Operation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = serde_json::Map::deserialize(deserializer)?;
        decode_operation(object).map_err(serde::de::Error::custom)
    }
}

fn decode_operation(
    object: serde_json::Map<String, Value>,
) -> Result<Operation, serde_json::Error> {
    let mut fields = crate::tagged_json::Fields(object);
    let kind: String = fields.required("kind")?;
    Ok(match kind.as_str() {
        "edit" => Operation::Edit {
            path: fields.required("path")?,
            edits: fields.required("edits")?,
        },
        "create" => Operation::Create {
            path: fields.required("path")?,
        },
        "rename" => Operation::Rename {
            from: fields.required("from")?,
            to: fields.required("to")?,
        },
        "delete" => Operation::Delete {
            path: fields.required("path")?,
        },
        "skipped" => Operation::Skipped {
            path: fields.required("path")?,
            reason: fields.required("reason")?,
        },
        other => return Err(crate::tagged_json::unknown_variant(other, OPERATION_KINDS)),
    })
}

/// The net effect of the edit on one path. `before`/`after` are `None` when the file does not
/// exist before/after; texts are lossy UTF-8 (for diffs and reports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Canonical absolute path.
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What an edit did (or would do, in [`ApplyMode::Preview`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditReport {
    pub operations: Vec<Operation>,
    /// Paths whose bytes change, sorted by path; unchanged files are not listed.
    pub files: Vec<FileChange>,
    /// Whether the files were written.
    pub written: bool,
    /// The engine's edit generation after this edit (it grows by one with every edit lspc
    /// writes): a caller passes it back as `based_on` to write the edit it previewed only if no
    /// other edit wrote its files meanwhile ([`EditContext::written_since`]). 0 outside the
    /// engine.
    #[serde(default)]
    pub generation: u64,
}

impl EditReport {
    /// The paths whose content changed (created, modified, deleted), sorted.
    pub fn changed_paths(&self) -> Vec<PathBuf> {
        self.files
            .iter()
            .map(|change| change.path.clone())
            .collect()
    }
}

/// Why an edit was rejected. Every variant names the file; nothing was written unless the variant
/// says so ([`EditError::WriteFailed`] reports what was restored).
///
/// Written by serde's derive, read back (from the session wire) by hand: see
/// [`crate::tagged_json`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum EditError {
    /// The JSON is not a `WorkspaceEdit` (or a part of it is malformed).
    Malformed(String),
    /// A URI that is not a usable `file://` URI.
    BadUri { uri: String, message: String },
    /// A target outside the workspace root (`resolved` is where it really leads).
    OutsideRoot {
        path: PathBuf,
        resolved: PathBuf,
        root: PathBuf,
    },
    /// A symlink whose target does not exist: where a write would land cannot be checked.
    DanglingSymlink { path: PathBuf },
    /// A versioned edit for a version lspc did not send (`sent` is what lspc sent, if anything).
    StaleVersion {
        path: PathBuf,
        version: i32,
        sent: Option<i32>,
    },
    /// The file on disk no longer holds the text the server saw.
    ChangedOnDisk { path: PathBuf },
    /// Another edit lspc wrote changed the file after this edit was computed (two renames in
    /// flight at once): its positions are for the text before that edit.
    ChangedByAnotherEdit { path: PathBuf },
    /// The edit would change or remove a read-only file (no write permission bit, or not
    /// writable by this user): lspc leaves it, and the whole edit, alone. `mode` is the file's
    /// permission bits.
    ReadOnly { path: PathBuf, mode: u32 },
    /// Two edits of one document overlap; positions are 1-based line and 1-based character.
    Overlap {
        path: PathBuf,
        first: (u32, u32),
        second: (u32, u32),
    },
    /// An edit range whose end is before its start.
    InvalidRange { path: PathBuf },
    /// The operation needs the file to exist.
    Missing {
        path: PathBuf,
        operation: OperationName,
    },
    /// The operation would replace an existing file without `overwrite`.
    Exists {
        path: PathBuf,
        operation: OperationName,
    },
    /// Text edits to a file that is not UTF-8.
    NotUtf8 { path: PathBuf },
    /// Resource operations on folders are not supported.
    Folder {
        path: PathBuf,
        operation: OperationName,
    },
    /// Reading a file failed.
    Io { path: PathBuf, message: String },
    /// Writing `path` failed after validation; the files already written were restored
    /// (`restore_errors` lists any that could not be).
    WriteFailed {
        path: PathBuf,
        message: String,
        restored: Vec<PathBuf>,
        restore_errors: Vec<String>,
    },
}

/// The name of a resource operation in an [`EditError`] (`"create"`, `"rename"`...).
type OperationName = &'static str;

/// Reads an [`EditError`]'s `operation` back from the session wire (`crate::session`): one of
/// the names the edit code uses, so the field can stay `&'static str`.
fn operation_name(
    fields: &mut crate::tagged_json::Fields,
) -> Result<&'static str, serde_json::Error> {
    let name: String = fields.required("operation")?;
    ["create", "delete", "edit", "rename", "rename onto"]
        .into_iter()
        .find(|known| *known == name)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown edit operation {name:?}")))
}

/// The variant names [`EditError`] serializes to.
const EDIT_ERRORS: &[&str] = &[
    "Malformed",
    "BadUri",
    "OutsideRoot",
    "DanglingSymlink",
    "StaleVersion",
    "ChangedOnDisk",
    "ChangedByAnotherEdit",
    "ReadOnly",
    "Overlap",
    "InvalidRange",
    "Missing",
    "Exists",
    "NotUtf8",
    "Folder",
    "Io",
    "WriteFailed",
];

impl<'de> Deserialize<'de> for EditError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        decode_edit_error(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

fn decode_edit_error(value: Value) -> Result<EditError, serde_json::Error> {
    use crate::tagged_json::{external, unknown_variant, Fields};
    let (name, content) = external(value)?;
    if !EDIT_ERRORS.contains(&name.as_str()) {
        return Err(unknown_variant(&name, EDIT_ERRORS));
    }
    if name == "Malformed" {
        return Ok(EditError::Malformed(String::deserialize(content)?));
    }
    // Every other variant is a struct variant.
    let mut fields = Fields::object(content)?;
    Ok(match name.as_str() {
        "BadUri" => EditError::BadUri {
            uri: fields.required("uri")?,
            message: fields.required("message")?,
        },
        "OutsideRoot" => EditError::OutsideRoot {
            path: fields.required("path")?,
            resolved: fields.required("resolved")?,
            root: fields.required("root")?,
        },
        "DanglingSymlink" => EditError::DanglingSymlink {
            path: fields.required("path")?,
        },
        "StaleVersion" => EditError::StaleVersion {
            path: fields.required("path")?,
            version: fields.required("version")?,
            sent: fields.optional("sent")?,
        },
        "ChangedOnDisk" => EditError::ChangedOnDisk {
            path: fields.required("path")?,
        },
        "ChangedByAnotherEdit" => EditError::ChangedByAnotherEdit {
            path: fields.required("path")?,
        },
        "ReadOnly" => EditError::ReadOnly {
            path: fields.required("path")?,
            mode: fields.required("mode")?,
        },
        "Overlap" => EditError::Overlap {
            path: fields.required("path")?,
            first: fields.required("first")?,
            second: fields.required("second")?,
        },
        "InvalidRange" => EditError::InvalidRange {
            path: fields.required("path")?,
        },
        "Missing" => EditError::Missing {
            path: fields.required("path")?,
            operation: operation_name(&mut fields)?,
        },
        "Exists" => EditError::Exists {
            path: fields.required("path")?,
            operation: operation_name(&mut fields)?,
        },
        "NotUtf8" => EditError::NotUtf8 {
            path: fields.required("path")?,
        },
        "Folder" => EditError::Folder {
            path: fields.required("path")?,
            operation: operation_name(&mut fields)?,
        },
        "Io" => EditError::Io {
            path: fields.required("path")?,
            message: fields.required("message")?,
        },
        "WriteFailed" => EditError::WriteFailed {
            path: fields.required("path")?,
            message: fields.required("message")?,
            restored: fields.required("restored")?,
            restore_errors: fields.required("restore_errors")?,
        },
        other => return Err(unknown_variant(other, EDIT_ERRORS)),
    })
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::Malformed(message) => write!(f, "malformed workspace edit: {message}"),
            EditError::BadUri { uri, message } => write!(f, "unusable uri {uri}: {message}"),
            EditError::OutsideRoot {
                path,
                resolved,
                root,
            } => {
                if path == resolved {
                    write!(
                        f,
                        "{} is outside the workspace root {}",
                        path.display(),
                        root.display()
                    )
                } else {
                    write!(
                        f,
                        "{} leads to {}, outside the workspace root {}",
                        path.display(),
                        resolved.display(),
                        root.display()
                    )
                }
            }
            EditError::DanglingSymlink { path } => {
                write!(f, "{} is a symlink to a missing target", path.display())
            }
            EditError::StaleVersion {
                path,
                version,
                sent: Some(sent),
            } => write!(
                f,
                "{}: the edit is for version {version} but lspc sent version {sent}",
                path.display()
            ),
            EditError::StaleVersion {
                path,
                version,
                sent: None,
            } => write!(
                f,
                "{}: the edit is for version {version} but lspc never sent that document",
                path.display()
            ),
            EditError::ChangedOnDisk { path } => write!(
                f,
                "{} changed on disk since the server saw it",
                path.display()
            ),
            EditError::ChangedByAnotherEdit { path } => write!(
                f,
                "{} was changed by another lspc edit after the server computed this one, whose \
                 positions are for the text before it (ask again)",
                path.display()
            ),
            EditError::ReadOnly { path, mode } => write!(
                f,
                "{} is read-only (mode {mode:04o}), and lspc does not change read-only files \
                 (make it writable, e.g. `chmod u+w`, to let the edit through)",
                path.display()
            ),
            EditError::Overlap {
                path,
                first,
                second,
            } => write!(
                f,
                "{}: overlapping edits at {}:{} and {}:{}",
                path.display(),
                first.0,
                first.1,
                second.0,
                second.1
            ),
            EditError::InvalidRange { path } => {
                write!(f, "{}: an edit range ends before it starts", path.display())
            }
            EditError::Missing { path, operation } => {
                write!(
                    f,
                    "cannot {operation} {}: it does not exist",
                    path.display()
                )
            }
            EditError::Exists { path, operation } => write!(
                f,
                "cannot {operation} {}: it already exists and overwrite is not set",
                path.display()
            ),
            EditError::NotUtf8 { path } => {
                write!(f, "cannot edit {}: it is not valid UTF-8", path.display())
            }
            EditError::Folder { path, operation } => write!(
                f,
                "cannot {operation} {}: folders are not supported",
                path.display()
            ),
            EditError::Io { path, message } => {
                write!(f, "cannot read {}: {message}", path.display())
            }
            EditError::WriteFailed {
                path,
                message,
                restored,
                restore_errors,
            } => {
                write!(
                    f,
                    "writing {} failed ({message}); {} file(s) already written were restored",
                    path.display(),
                    restored.len()
                )?;
                if !restore_errors.is_empty() {
                    write!(f, "; could not restore: {}", restore_errors.join("; "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for EditError {}

/// Validate `edit` (a `WorkspaceEdit` JSON value) and, with [`ApplyMode::Write`], apply it.
///
/// `documentChanges` wins over `changes` when both are present (LSP 3.17). Returns the report of
/// what changed, or the first reason the edit cannot be applied, with nothing written.
pub fn apply_workspace_edit(
    edit: &Value,
    context: &EditContext<'_>,
    mode: ApplyMode,
) -> Result<EditReport, EditError> {
    apply_with_hook(edit, context, mode, &mut |_| Ok(()))
}

/// [`apply_workspace_edit`] with a hook called before each file write or delete (tests inject
/// failures with it).
pub(crate) fn apply_with_hook(
    edit: &Value,
    context: &EditContext<'_>,
    mode: ApplyMode,
    hook: &mut dyn FnMut(&Path) -> std::io::Result<()>,
) -> Result<EditReport, EditError> {
    let plan = plan(edit, context)?;
    let mut report = plan.report();
    if mode == ApplyMode::Write {
        plan.write(hook)?;
        report.written = true;
    }
    Ok(report)
}

/// The text one edit of a `WorkspaceEdit` replaces: its file (canonical), where it starts
/// (1-based line and column, characters) and the replaced text (empty for an insertion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplacedText {
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
    pub text: String,
}

/// What each text edit of `edit` replaces in the file on disk (read as lspc sends it: without
/// a byte order mark), its positions read in `encoding`; edits of files that cannot be read as
/// UTF-8 and malformed edits are left out (applying the edit refuses those).
pub fn replaced_texts(edit: &Value, encoding: PositionEncoding) -> Vec<ReplacedText> {
    let Ok(operations) = validate::parse(edit) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for operation in operations {
        let validate::RawOperation::Text { uri, edits, .. } = operation else {
            continue;
        };
        let Ok(path) = crate::uri::uri_to_path(&uri) else {
            continue;
        };
        let path = crate::uri::canonical(&path);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let text = crate::text::without_byte_order_mark(&text);
        let index = crate::text::LineIndex::new(text);
        for edit in &edits {
            let start = index.offset(text, edit.start, encoding);
            let end = index.offset(text, edit.end, encoding).max(start);
            let (line, column) = index.from_lsp(text, edit.start, encoding);
            found.push(ReplacedText {
                path: path.clone(),
                line,
                column,
                text: text[start..end].to_owned(),
            });
        }
    }
    found
}

// Validation (parse, play in memory), applying text edits, writing with rollback.
mod apply;
mod validate;
mod write;

use validate::plan;

#[cfg(test)]
mod tests {
    use super::apply::{line_ending_of, normalize_line_endings};
    use super::*;
    use crate::uri;
    use serde_json::json;
    use std::collections::HashMap;
    use std::fs;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A temporary workspace with files; removed on drop.
    struct Workspace {
        root: PathBuf,
        sent: HashMap<PathBuf, SentDocument>,
        /// The paths another edit wrote after the one under test was computed.
        written_since: std::collections::HashSet<PathBuf>,
    }

    impl Workspace {
        fn new(files: &[(&str, &str)]) -> Workspace {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let root = std::env::temp_dir().join(format!(
                "lspc-edit-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(&root).unwrap();
            let root = fs::canonicalize(&root).unwrap();
            for (name, text) in files {
                let path = root.join(name);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, text).unwrap();
            }
            Workspace {
                root,
                sent: HashMap::new(),
                written_since: Default::default(),
            }
        }

        fn uri(&self, name: &str) -> String {
            uri::path_to_uri(&self.root.join(name))
                .unwrap()
                .as_str()
                .to_owned()
        }

        /// Record that lspc sent `name` at `version` with its current disk text.
        fn send(&mut self, name: &str, version: i32) {
            let path = self.root.join(name);
            let text = fs::read_to_string(&path).unwrap();
            self.sent.insert(
                path,
                SentDocument {
                    version,
                    opened_version: 1,
                    text_version: version,
                    text: Arc::from(text),
                },
            );
        }

        fn run(&self, edit: Value, mode: ApplyMode) -> Result<EditReport, EditError> {
            self.run_with_hook(edit, mode, &mut |_| Ok(()))
        }

        fn run_with_hook(
            &self,
            edit: Value,
            mode: ApplyMode,
            hook: &mut dyn FnMut(&Path) -> std::io::Result<()>,
        ) -> Result<EditReport, EditError> {
            let lookup = |path: &Path| self.sent.get(path).cloned();
            let context = EditContext {
                root: &self.root,
                encoding: PositionEncoding::Utf16,
                documents: &lookup,
                written_since: &|path: &Path| self.written_since.contains(path),
            };
            apply_with_hook(&edit, &context, mode, hook)
        }

        /// Every file under the root with its bytes, as (relative name, text).
        fn files(&self) -> Vec<(String, String)> {
            let mut out = Vec::new();
            let mut stack = vec![self.root.clone()];
            while let Some(folder) = stack.pop() {
                for entry in fs::read_dir(&folder).unwrap() {
                    let path = entry.unwrap().path();
                    let kind = fs::symlink_metadata(&path).unwrap().file_type();
                    if kind.is_symlink() {
                        continue;
                    }
                    if path.is_dir() {
                        stack.push(path);
                    } else {
                        let name = path.strip_prefix(&self.root).unwrap();
                        out.push((
                            name.to_string_lossy().into_owned(),
                            fs::read_to_string(&path).unwrap(),
                        ));
                    }
                }
            }
            crate::sorting::sort(&mut out);
            out
        }

        fn error(&self, edit: Value) -> String {
            let before = self.files();
            let error = self.run(edit, ApplyMode::Write).unwrap_err();
            assert_eq!(self.files(), before, "a rejected edit changed files");
            error
                .to_string()
                .replace(&self.root.display().to_string(), "<root>")
        }
    }

    impl Drop for Workspace {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }

    fn edit(line: u32, start: u32, end_line: u32, end: u32, text: &str) -> Value {
        json!({
            "range": {
                "start": { "line": line, "character": start },
                "end": { "line": end_line, "character": end }
            },
            "newText": text
        })
    }

    fn owned(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()))
            .collect()
    }

    /// Applies `edit` to a workspace holding `files` and compares every file afterwards.
    fn check(
        files: &[(&str, &str)],
        make_edit: impl Fn(&Workspace) -> Value,
        expected: &[(&str, &str)],
    ) {
        let workspace = Workspace::new(files);
        let edit = make_edit(&workspace);
        // The preview computes the result and writes nothing.
        let preview = workspace.run(edit.clone(), ApplyMode::Preview).unwrap();
        assert_eq!(workspace.files(), owned(files));
        assert!(!preview.written);
        let report = workspace.run(edit, ApplyMode::Write).unwrap();
        assert!(report.written);
        assert_eq!(workspace.files(), owned(expected));
        assert_eq!(report.files, preview.files);
    }

    /// Every [`EditError`] reads back (from the session wire) what its derive wrote; the
    /// exhaustive match makes a new variant fail to compile until it is covered here.
    #[test]
    fn edit_errors_read_back_what_was_written() {
        let path = || PathBuf::from("/w/a.py");
        let errors = [
            EditError::Malformed("no changes".to_owned()),
            EditError::BadUri {
                uri: "http://x".to_owned(),
                message: "not a file uri".to_owned(),
            },
            EditError::OutsideRoot {
                path: path(),
                resolved: PathBuf::from("/etc/passwd"),
                root: PathBuf::from("/w"),
            },
            EditError::DanglingSymlink { path: path() },
            EditError::StaleVersion {
                path: path(),
                version: 3,
                sent: None,
            },
            EditError::StaleVersion {
                path: path(),
                version: 3,
                sent: Some(2),
            },
            EditError::ChangedOnDisk { path: path() },
            EditError::ChangedByAnotherEdit { path: path() },
            EditError::ReadOnly {
                path: path(),
                mode: 0o444,
            },
            EditError::Overlap {
                path: path(),
                first: (1, 2),
                second: (1, 3),
            },
            EditError::InvalidRange { path: path() },
            EditError::Missing {
                path: path(),
                operation: "rename onto",
            },
            EditError::Exists {
                path: path(),
                operation: "create",
            },
            EditError::NotUtf8 { path: path() },
            EditError::Folder {
                path: path(),
                operation: "delete",
            },
            EditError::Io {
                path: path(),
                message: "denied".to_owned(),
            },
            EditError::WriteFailed {
                path: path(),
                message: "disk full".to_owned(),
                restored: vec![path()],
                restore_errors: vec!["x".to_owned()],
            },
        ];
        let mut names: Vec<&str> = errors
            .iter()
            .map(|error| match error {
                EditError::Malformed(_) => "Malformed",
                EditError::BadUri { .. } => "BadUri",
                EditError::OutsideRoot { .. } => "OutsideRoot",
                EditError::DanglingSymlink { .. } => "DanglingSymlink",
                EditError::StaleVersion { .. } => "StaleVersion",
                EditError::ChangedOnDisk { .. } => "ChangedOnDisk",
                EditError::ChangedByAnotherEdit { .. } => "ChangedByAnotherEdit",
                EditError::ReadOnly { .. } => "ReadOnly",
                EditError::Overlap { .. } => "Overlap",
                EditError::InvalidRange { .. } => "InvalidRange",
                EditError::Missing { .. } => "Missing",
                EditError::Exists { .. } => "Exists",
                EditError::NotUtf8 { .. } => "NotUtf8",
                EditError::Folder { .. } => "Folder",
                EditError::Io { .. } => "Io",
                EditError::WriteFailed { .. } => "WriteFailed",
            })
            .collect();
        names.dedup();
        assert_eq!(names, EDIT_ERRORS);
        for error in errors {
            let value = serde_json::to_value(&error).unwrap();
            let read: EditError = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(read, error, "{value}");
        }
        let unknown = serde_json::json!({"Missing": {"path": "/w/a.py", "operation": "move"}});
        assert_eq!(
            serde_json::from_value::<EditError>(unknown)
                .unwrap_err()
                .to_string(),
            "unknown edit operation \"move\""
        );
        let unknown = serde_json::json!("Oops");
        assert!(serde_json::from_value::<EditError>(unknown)
            .unwrap_err()
            .to_string()
            .starts_with("unknown variant `Oops`"));
    }

    /// Every [`Operation`] reads back (from the session wire) what its derive wrote.
    #[test]
    fn operations_read_back_what_was_written() {
        let path = || PathBuf::from("/w/a.py");
        let operations = [
            Operation::Edit {
                path: path(),
                edits: 3,
            },
            Operation::Create { path: path() },
            Operation::Rename {
                from: path(),
                to: PathBuf::from("/w/b.py"),
            },
            Operation::Delete { path: path() },
            Operation::Skipped {
                path: path(),
                reason: "exists".to_owned(),
            },
        ];
        let kinds: Vec<&str> = operations
            .iter()
            .map(|operation| match operation {
                Operation::Edit { .. } => "edit",
                Operation::Create { .. } => "create",
                Operation::Rename { .. } => "rename",
                Operation::Delete { .. } => "delete",
                Operation::Skipped { .. } => "skipped",
            })
            .collect();
        assert_eq!(kinds, OPERATION_KINDS);
        for operation in operations {
            let value = serde_json::to_value(&operation).unwrap();
            let read: Operation = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(read, operation, "{value}");
        }
        let error = serde_json::from_value::<Operation>(serde_json::json!({"kind": "move"}));
        assert!(error
            .unwrap_err()
            .to_string()
            .starts_with("unknown variant `move`"));
    }

    #[test]
    fn changes_map_applies_every_edit_against_the_original_text() {
        // Three renames on one line stay right because all refer to the original text.
        check(
            &[("a.py", "a = a + a\n")],
            |w| {
                json!({ "changes": { w.uri("a.py"): [
                    edit(0, 8, 0, 9, "total"), edit(0, 0, 0, 1, "total"), edit(0, 4, 0, 5, "total")
                ]}})
            },
            &[("a.py", "total = total + total\n")],
        );
        // Inserts at the same position keep the server's order; a deletion spans lines.
        check(
            &[("a.py", "x\ny\nz\n")],
            |w| {
                json!({ "changes": { w.uri("a.py"): [
                    edit(0, 0, 0, 0, "1"), edit(0, 0, 0, 0, "2"), edit(1, 0, 2, 0, "")
                ]}})
            },
            &[("a.py", "12x\nz\n")],
        );
    }

    #[test]
    fn utf16_positions_after_an_emoji() {
        // B08: `a` at UTF-16 character 20 on the third line is the 19th character.
        check(
            &[("a.py", "a = 42\nb = a + a\ns = \"😀😀\"; total = a + 1\n")],
            |w| {
                json!({ "changes": { w.uri("a.py"): [
                    edit(0, 0, 0, 1, "n"), edit(1, 4, 1, 5, "n"), edit(1, 8, 1, 9, "n"),
                    edit(2, 20, 2, 21, "n")
                ]}})
            },
            &[("a.py", "n = 42\nb = n + n\ns = \"😀😀\"; total = n + 1\n")],
        );
    }

    #[test]
    fn crlf_files_stay_crlf() {
        check(
            &[("a.py", "def f():\r\n    return 1\r\n")],
            |w| {
                json!({ "changes": { w.uri("a.py"): [
                    edit(1, 4, 1, 12, "x = 1\n    return x")
                ]}})
            },
            &[("a.py", "def f():\r\n    x = 1\r\n    return x\r\n")],
        );
        check(
            &[("a.py", "a\nb\n")],
            |w| json!({ "changes": { w.uri("a.py"): [edit(0, 1, 0, 1, "\r\nc")] }}),
            &[("a.py", "a\nc\nb\n")],
        );
    }

    #[test]
    fn every_document_changes_shape_in_order() {
        // B28: versioned and null-versioned edits, rename then edit of the new name, create
        // with ignoreIfExists, delete.
        let workspace_files = [
            ("a.py", "old_a\n"),
            ("b.py", "old_b\n"),
            ("c.py", "old_c\n"),
            ("e.py", "kept\n"),
            ("f.py", "gone\n"),
        ];
        let mut workspace = Workspace::new(&workspace_files);
        workspace.send("a.py", 3);
        let edit = json!({ "documentChanges": [
            { "textDocument": { "uri": workspace.uri("a.py"), "version": 3 },
              "edits": [edit(0, 0, 0, 5, "new_a")] },
            { "textDocument": { "uri": workspace.uri("b.py"), "version": null },
              "edits": [edit(0, 0, 0, 5, "new_b")] },
            { "kind": "rename", "oldUri": workspace.uri("c.py"), "newUri": workspace.uri("d.py") },
            { "textDocument": { "uri": workspace.uri("d.py"), "version": null },
              "edits": [edit(0, 0, 0, 5, "new_d")] },
            { "kind": "create", "uri": workspace.uri("e.py"), "options": { "ignoreIfExists": true } },
            { "kind": "create", "uri": workspace.uri("sub/g.py") },
            { "kind": "delete", "uri": workspace.uri("f.py") },
            { "kind": "delete", "uri": workspace.uri("h.py"), "options": { "ignoreIfNotExists": true } }
        ]});
        let report = workspace.run(edit, ApplyMode::Write).unwrap();
        assert_eq!(
            workspace.files(),
            owned(&[
                ("a.py", "new_a\n"),
                ("b.py", "new_b\n"),
                ("d.py", "new_d\n"),
                ("e.py", "kept\n"),
                ("sub/g.py", ""),
            ])
        );
        let root = workspace.root.clone();
        assert_eq!(
            report.operations,
            vec![
                Operation::Edit {
                    path: root.join("a.py"),
                    edits: 1
                },
                Operation::Edit {
                    path: root.join("b.py"),
                    edits: 1
                },
                Operation::Rename {
                    from: root.join("c.py"),
                    to: root.join("d.py")
                },
                Operation::Edit {
                    path: root.join("d.py"),
                    edits: 1
                },
                Operation::Skipped {
                    path: root.join("e.py"),
                    reason: "the file exists (ignoreIfExists)".into()
                },
                Operation::Create {
                    path: root.join("sub/g.py")
                },
                Operation::Delete {
                    path: root.join("f.py")
                },
                Operation::Skipped {
                    path: root.join("h.py"),
                    reason: "the file does not exist (ignoreIfNotExists)".into()
                },
            ]
        );
        let changed: Vec<PathBuf> = report.changed_paths();
        let names: Vec<String> = changed
            .iter()
            .map(|path| uri::relative_display(path, &root))
            .collect();
        assert_eq!(names, ["a.py", "b.py", "c.py", "d.py", "f.py", "sub/g.py"]);
        workspace.sent.clear();
    }

    #[test]
    fn version_zero_means_the_only_text_the_server_had() {
        // gopls 0.5 for a file lspc never sent, ccls for one lspc opened at version 1.
        let mut workspace = Workspace::new(&[("a.go", "x := 1\n"), ("b.go", "y := x\n")]);
        workspace.send("a.go", 1);
        let edit = json!({ "documentChanges": [
            { "textDocument": { "uri": workspace.uri("a.go"), "version": 0 },
              "edits": [edit(0, 0, 0, 1, "z")] },
            { "textDocument": { "uri": workspace.uri("b.go"), "version": 0 },
              "edits": [edit(0, 5, 0, 6, "z")] }
        ]});
        workspace.run(edit, ApplyMode::Write).unwrap();
        assert_eq!(
            workspace.files(),
            owned(&[("a.go", "z := 1\n"), ("b.go", "y := z\n")])
        );
        workspace.sent.clear();
    }

    #[test]
    fn create_and_rename_options() {
        check(
            &[("a.py", "x\n"), ("b.py", "y\n")],
            |w| {
                json!({ "documentChanges": [
                    { "kind": "create", "uri": w.uri("a.py"), "options": { "overwrite": true } },
                    { "kind": "rename", "oldUri": w.uri("b.py"), "newUri": w.uri("a.py"),
                      "options": { "overwrite": true } }
                ]})
            },
            &[("a.py", "y\n")],
        );
        check(
            &[("a.py", "x\n"), ("b.py", "y\n")],
            |w| {
                json!({ "documentChanges": [
                    { "kind": "rename", "oldUri": w.uri("b.py"), "newUri": w.uri("a.py"),
                      "options": { "ignoreIfExists": true } }
                ]})
            },
            &[("a.py", "x\n"), ("b.py", "y\n")],
        );
    }

    /// lspc sends an unchanged document again under a new version when another file changed on
    /// disk; a server that answered for the earlier version of the same text (rust-analyzer's
    /// rename, a new user's trial on dtolnay/semver) edits that text, so the edit applies. An
    /// edit for a version before the text changed is still refused.
    #[test]
    fn an_edit_for_an_earlier_version_of_the_same_text_applies() {
        let mut workspace = Workspace::new(&[("a.py", "x = 1\n")]);
        workspace.send("a.py", 3);
        let a = workspace.uri("a.py");
        let sent = workspace
            .sent
            .get_mut(&workspace.root.join("a.py"))
            .unwrap();
        sent.text_version = 2;
        let edit_for = |version: i32| {
            json!({ "documentChanges": [
                { "textDocument": { "uri": a, "version": version }, "edits": [edit(0, 0, 0, 1, "y")] }
            ]})
        };
        assert_eq!(
            workspace.error(edit_for(1)),
            "<root>/a.py: the edit is for version 1 but lspc sent version 3"
        );
        let report = workspace.run(edit_for(2), ApplyMode::Write).unwrap();
        assert!(report.written);
        assert_eq!(workspace.files()[0].1, "y = 1\n");
    }

    #[test]
    fn rejections_name_the_file_and_write_nothing() {
        let mut workspace = Workspace::new(&[("a.py", "x = 1\n"), ("b.py", "y = 2\n")]);
        workspace.send("a.py", 2);
        let a = workspace.uri("a.py");
        let b = workspace.uri("b.py");
        let good_b = json!({ "textDocument": { "uri": b, "version": null },
                             "edits": [edit(0, 0, 0, 1, "z")] });
        // Variant S: a stale version, even after a valid edit of another file.
        assert_eq!(
            workspace.error(json!({ "documentChanges": [good_b.clone(),
                { "textDocument": { "uri": a, "version": 1 }, "edits": [edit(0, 0, 0, 1, "q")] }
            ]})),
            "<root>/a.py: the edit is for version 1 but lspc sent version 2"
        );
        assert_eq!(
            workspace.error(json!({ "documentChanges": [
                { "textDocument": { "uri": b, "version": 4 }, "edits": [] }
            ]})),
            "<root>/b.py: the edit is for version 4 but lspc never sent that document"
        );
        // Version 0 names no version lspc sent, except "the only text there was" (gopls, ccls):
        // refused once lspc sent a second version of the document.
        assert_eq!(
            workspace.error(json!({ "documentChanges": [
                { "textDocument": { "uri": a, "version": 0 }, "edits": [edit(0, 0, 0, 1, "q")] }
            ]})),
            "<root>/a.py: the edit is for version 0 but lspc sent version 2"
        );
        assert_eq!(
            workspace.error(json!({ "changes": { a.clone(): [
                edit(0, 0, 0, 3, "q"), edit(0, 2, 0, 4, "r")
            ]}})),
            "<root>/a.py: overlapping edits at 1:1 and 1:3"
        );
        assert_eq!(
            workspace.error(json!({ "changes": { a.clone(): [edit(0, 3, 0, 1, "q")] }})),
            "<root>/a.py: an edit range ends before it starts"
        );
        assert_eq!(
            workspace.error(json!({ "documentChanges": [good_b.clone(),
                { "kind": "create", "uri": a }
            ]})),
            "cannot create <root>/a.py: it already exists and overwrite is not set"
        );
        assert_eq!(
            workspace.error(json!({ "documentChanges": [
                { "kind": "delete", "uri": workspace.uri("nope.py") }
            ]})),
            "cannot delete <root>/nope.py: it does not exist"
        );
        assert_eq!(
            workspace.error(json!({ "documentChanges": [
                { "textDocument": { "uri": workspace.uri("nope.py"), "version": null },
                  "edits": [edit(0, 0, 0, 0, "x")] }
            ]})),
            "cannot edit <root>/nope.py: it does not exist"
        );
        fs::create_dir(workspace.root.join("pkg")).unwrap();
        assert_eq!(
            workspace.error(json!({ "documentChanges": [
                { "kind": "delete", "uri": workspace.uri("pkg"), "options": { "recursive": true } }
            ]})),
            "cannot delete <root>/pkg: folders are not supported"
        );
        assert_eq!(
            workspace.error(json!({ "documentChanges": [{ "kind": "move" }] })),
            "malformed workspace edit: unknown resource operation \"move\""
        );
        assert_eq!(
            workspace.error(json!({ "changes": { "http://x/a.py": [] } })),
            "unusable uri http://x/a.py: `http://x/a.py` is not a file:// uri"
        );
        // The disk changed after lspc sent version 2.
        fs::write(workspace.root.join("a.py"), "x = 10\n").unwrap();
        assert_eq!(
            workspace.error(json!({ "documentChanges": [good_b,
                { "textDocument": { "uri": a, "version": 2 }, "edits": [edit(0, 0, 0, 1, "q")] }
            ]})),
            "<root>/a.py changed on disk since the server saw it"
        );
    }

    #[test]
    fn targets_outside_the_root_are_refused() {
        let workspace = Workspace::new(&[("a.py", "x\n")]);
        let outside = Workspace::new(&[("secret.py", "keep\n")]);
        let outside_uri = outside.uri("secret.py");
        let message = workspace.error(json!({ "changes": {
            workspace.uri("a.py"): [edit(0, 0, 0, 1, "y")],
            outside_uri.clone(): [edit(0, 0, 0, 4, "lost")]
        }}));
        assert!(
            message.ends_with(&format!(
                "{} is outside the workspace root <root>",
                outside.root.join("secret.py").display()
            )),
            "{message}"
        );
        // `..` is resolved before the check.
        let dotted = format!(
            "{}/../{}/secret.py",
            workspace.uri(""),
            outside.root.file_name().unwrap().to_string_lossy()
        );
        assert!(workspace
            .error(json!({ "changes": { dotted: [edit(0, 0, 0, 4, "lost")] } }))
            .contains("outside the workspace root"));
        // A symlink inside the root leading out.
        std::os::unix::fs::symlink(
            outside.root.join("secret.py"),
            workspace.root.join("link.py"),
        )
        .unwrap();
        assert_eq!(
            workspace.error(
                json!({ "changes": { workspace.uri("link.py"): [edit(0, 0, 0, 4, "lost")] } })
            ),
            format!(
                "<root>/link.py leads to {}, outside the workspace root <root>",
                outside.root.join("secret.py").display()
            )
        );
        std::os::unix::fs::symlink(
            outside.root.join("missing.py"),
            workspace.root.join("dangling.py"),
        )
        .unwrap();
        assert_eq!(
            workspace.error(json!({ "documentChanges": [
                { "kind": "create", "uri": workspace.uri("dangling.py"), "options": { "overwrite": true } }
            ]})),
            "<root>/dangling.py is a symlink to a missing target"
        );
        assert_eq!(outside.files(), owned(&[("secret.py", "keep\n")]));
    }

    #[test]
    fn a_failure_on_the_third_of_five_files_restores_the_first_two() {
        let files = [
            ("1.py", "one\n"),
            ("2.py", "two\n"),
            ("3.py", "three\n"),
            ("4.py", "four\n"),
            ("5.py", "five\n"),
        ];
        let workspace = Workspace::new(&files);
        let changes: serde_json::Map<String, Value> = files
            .iter()
            .map(|(name, _)| (workspace.uri(name), json!([edit(0, 0, 0, 0, "# edited\n")])))
            .collect();
        let mut calls = Vec::new();
        let error = workspace
            .run_with_hook(
                json!({ "changes": changes }),
                ApplyMode::Write,
                &mut |path| {
                    calls.push(path.file_name().unwrap().to_string_lossy().into_owned());
                    if calls.len() == 3 {
                        Err(std::io::Error::other("injected failure"))
                    } else {
                        Ok(())
                    }
                },
            )
            .unwrap_err();
        assert_eq!(calls, ["1.py", "2.py", "3.py"]);
        assert_eq!(workspace.files(), owned(&files));
        let EditError::WriteFailed {
            path,
            restored,
            restore_errors,
            ..
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!(path, &workspace.root.join("3.py"));
        assert_eq!(
            restored,
            &[workspace.root.join("1.py"), workspace.root.join("2.py")]
        );
        assert!(restore_errors.is_empty());
        assert_eq!(
            error.to_string().replace(&workspace.root.display().to_string(), "<root>"),
            "writing <root>/3.py failed (injected failure); 2 file(s) already written were restored"
        );
        // Created files and their new folders are removed again; deleted files come back.
        let error = workspace
            .run_with_hook(
                json!({ "documentChanges": [
                    { "kind": "create", "uri": workspace.uri("new/x.py") },
                    { "kind": "delete", "uri": workspace.uri("1.py") },
                    { "kind": "rename", "oldUri": workspace.uri("2.py"), "newUri": workspace.uri("9.py") }
                ]}),
                ApplyMode::Write,
                &mut |path| {
                    if path.ends_with("2.py") {
                        Err(std::io::Error::other("injected"))
                    } else {
                        Ok(())
                    }
                },
            )
            .unwrap_err();
        assert!(matches!(error, EditError::WriteFailed { .. }));
        assert_eq!(workspace.files(), owned(&files));
        assert!(!workspace.root.join("new").exists());
    }

    /// Another process appends to a file after the edit was validated and checked against the
    /// disk (the hook runs then): its bytes are kept, the files already written are restored,
    /// and the edit is refused as a change on disk, for a write and for a delete alike.
    #[test]
    fn a_file_changed_while_the_edit_is_written_keeps_the_other_writers_bytes() {
        let files = [("1.py", "one\n"), ("2.py", "two\n"), ("3.py", "three\n")];
        let workspace = Workspace::new(&files);
        let changes: serde_json::Map<String, Value> = files
            .iter()
            .map(|(name, _)| (workspace.uri(name), json!([edit(0, 0, 0, 0, "# edited\n")])))
            .collect();
        let append = |path: &Path| {
            if path.ends_with("2.py") {
                let mut file = fs::OpenOptions::new().append(true).open(path)?;
                std::io::Write::write_all(&mut file, b"appended\n")?;
            }
            Ok(())
        };
        let error = workspace
            .run_with_hook(
                json!({ "changes": changes }),
                ApplyMode::Write,
                &mut |path| append(path),
            )
            .unwrap_err();
        assert_eq!(
            error
                .to_string()
                .replace(&workspace.root.display().to_string(), "<root>"),
            "<root>/2.py changed on disk since the server saw it"
        );
        let mut expected = owned(&files);
        expected[1].1 = "two\nappended\n".to_owned();
        assert_eq!(workspace.files(), expected);
        let error = workspace
            .run_with_hook(
                json!({ "documentChanges": [{ "kind": "delete", "uri": workspace.uri("2.py") }] }),
                ApplyMode::Write,
                &mut |path| append(path),
            )
            .unwrap_err();
        assert!(matches!(error, EditError::ChangedOnDisk { .. }), "{error}");
        expected[1].1 = "two\nappended\nappended\n".to_owned();
        assert_eq!(workspace.files(), expected);
    }

    /// A new user's trial: an edit replaced a `chmod 0444` file (a rename needs only the folder
    /// to be writable). It is refused whole now, for a text edit and for a delete, and nothing
    /// is written.
    #[test]
    fn an_edit_touching_a_read_only_file_is_refused_whole() {
        use std::os::unix::fs::PermissionsExt;
        let files = [("a.py", "one\n"), ("b.py", "two\n")];
        let workspace = Workspace::new(&files);
        let path = workspace.root.join("b.py");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
        let edits = [
            json!({ "changes": {
                workspace.uri("a.py"): [edit(0, 0, 0, 3, "ONE")],
                workspace.uri("b.py"): [edit(0, 0, 0, 3, "TWO")],
            } }),
            json!({ "documentChanges": [{ "kind": "delete", "uri": workspace.uri("b.py") }] }),
        ];
        for edit in edits {
            let error = workspace.run(edit, ApplyMode::Write).unwrap_err();
            assert_eq!(
                error
                    .to_string()
                    .replace(&workspace.root.display().to_string(), "<root>"),
                "<root>/b.py is read-only (mode 0444), and lspc does not change read-only files \
                 (make it writable, e.g. `chmod u+w`, to let the edit through)"
            );
            assert_eq!(workspace.files(), owned(&files));
        }
    }

    /// A new user's agent sent two renames at once over MCP: the second one's edit, computed by
    /// the server before the first was written, landed at its old columns in the first one's
    /// text (`EnvironMaEnvironFailureror`). A target another edit wrote since is refused whole,
    /// in a preview too, and nothing is written.
    #[test]
    fn an_edit_touching_a_file_another_edit_wrote_since_is_refused_whole() {
        let files = [("a.py", "one\n"), ("b.py", "two\n")];
        let mut workspace = Workspace::new(&files);
        workspace.written_since.insert(workspace.root.join("b.py"));
        let edit = json!({ "changes": {
            workspace.uri("a.py"): [edit(0, 0, 0, 3, "ONE")],
            workspace.uri("b.py"): [edit(0, 0, 0, 3, "TWO")],
        } });
        for mode in [ApplyMode::Preview, ApplyMode::Write] {
            let error = workspace.run(edit.clone(), mode).unwrap_err();
            assert_eq!(
                error
                    .to_string()
                    .replace(&workspace.root.display().to_string(), "<root>"),
                "<root>/b.py was changed by another lspc edit after the server computed this \
                 one, whose positions are for the text before it (ask again)"
            );
            assert_eq!(workspace.files(), owned(&files));
        }
        workspace.written_since.clear();
        workspace.run(edit, ApplyMode::Write).unwrap();
        assert_eq!(
            workspace.files(),
            owned(&[("a.py", "ONE\n"), ("b.py", "TWO\n")])
        );
    }

    #[cfg(unix)]
    #[test]
    fn writes_keep_permissions_and_leave_no_temporary_files() {
        use std::os::unix::fs::PermissionsExt;
        let workspace = Workspace::new(&[("run.sh", "echo a\n")]);
        let path = workspace.root.join("run.sh");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        workspace
            .run(
                json!({ "changes": { workspace.uri("run.sh"): [edit(0, 5, 0, 6, "b")] } }),
                ApplyMode::Write,
            )
            .unwrap();
        assert_eq!(workspace.files(), owned(&[("run.sh", "echo b\n")]));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o751
        );
    }

    #[test]
    fn line_endings() {
        let check = |text: &str, new: &str, expected: &str| {
            assert_eq!(
                normalize_line_endings(new, line_ending_of(text)),
                expected,
                "{text:?}"
            );
        };
        check("a\r\nb", "x\ny\r\nz", "x\r\ny\r\nz");
        check("a\nb\r\n", "x\r\ny", "x\ny");
        check("ab", "x\r\ny", "x\r\ny");
        check("a\rb", "x\ny", "x\ry");
    }

    #[test]
    fn empty_edits_change_nothing() {
        check(&[("a.py", "x\n")], |_| json!({}), &[("a.py", "x\n")]);
        check(
            &[("a.py", "x\n")],
            |w| {
                json!({ "documentChanges": [
                { "textDocument": { "uri": w.uri("a.py"), "version": null }, "edits": [] }
            ], "changes": { w.uri("a.py"): [edit(0, 0, 0, 1, "ignored")] } })
            },
            &[("a.py", "x\n")],
        );
    }
}
