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

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::{LineIndex, PositionEncoding};
use crate::uri;

/// What lspc sent a server for one document: the version and the full text (the version numbers
/// of `textDocument/didOpen`/`didChange`, LSP 3.17 §`VersionedTextDocumentIdentifier`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentDocument {
    pub version: i32,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        #[serde(deserialize_with = "operation_name")]
        operation: OperationName,
    },
    /// The operation would replace an existing file without `overwrite`.
    Exists {
        path: PathBuf,
        #[serde(deserialize_with = "operation_name")]
        operation: OperationName,
    },
    /// Text edits to a file that is not UTF-8.
    NotUtf8 { path: PathBuf },
    /// Resource operations on folders are not supported.
    Folder {
        path: PathBuf,
        #[serde(deserialize_with = "operation_name")]
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

/// The name of a resource operation in an [`EditError`] (`"create"`, `"rename"`...). An alias,
/// so serde's derive does not treat the field as borrowed from the input.
type OperationName = &'static str;

/// Reads an [`EditError`]'s `operation` back from the session wire (`crate::session`): one of
/// the names the edit code uses, so the field can stay `&'static str`.
fn operation_name<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<&'static str, D::Error> {
    let name = String::deserialize(deserializer)?;
    ["create", "delete", "edit", "rename", "rename onto"]
        .into_iter()
        .find(|known| *known == name)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown edit operation {name:?}")))
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

// ----- parsing ---------------------------------------------------------------------------------

/// One text edit in LSP terms (0-based positions in the server's encoding).
#[derive(Debug, Clone)]
struct RawTextEdit {
    start: lsp_types::Position,
    end: lsp_types::Position,
    new_text: String,
}

#[derive(Debug, Clone)]
enum RawOperation {
    Text {
        uri: String,
        version: Option<i32>,
        edits: Vec<RawTextEdit>,
    },
    Create {
        uri: String,
        overwrite: bool,
        ignore_if_exists: bool,
    },
    Rename {
        old_uri: String,
        new_uri: String,
        overwrite: bool,
        ignore_if_exists: bool,
    },
    Delete {
        uri: String,
        ignore_if_not_exists: bool,
    },
}

fn malformed(message: impl Into<String>) -> EditError {
    EditError::Malformed(message.into())
}

fn parse(edit: &Value) -> Result<Vec<RawOperation>, EditError> {
    if !edit.is_object() {
        return Err(malformed("expected an object"));
    }
    if let Some(document_changes) = edit.get("documentChanges").filter(|v| !v.is_null()) {
        let entries = document_changes
            .as_array()
            .ok_or_else(|| malformed("documentChanges is not an array"))?;
        return entries.iter().map(parse_document_change).collect();
    }
    let mut operations = Vec::new();
    if let Some(changes) = edit.get("changes").filter(|v| !v.is_null()) {
        let changes = changes
            .as_object()
            .ok_or_else(|| malformed("changes is not an object"))?;
        for (uri, edits) in changes {
            operations.push(RawOperation::Text {
                uri: uri.clone(),
                version: None,
                edits: parse_text_edits(edits)?,
            });
        }
    }
    Ok(operations)
}

fn parse_document_change(entry: &Value) -> Result<RawOperation, EditError> {
    let options = |name: &str| {
        entry
            .pointer(&format!("/options/{name}"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let string = |name: &str| {
        entry
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| malformed(format!("a {name} is missing in {entry}")))
    };
    match entry.get("kind").and_then(Value::as_str) {
        Some("create") => Ok(RawOperation::Create {
            uri: string("uri")?,
            overwrite: options("overwrite"),
            ignore_if_exists: options("ignoreIfExists"),
        }),
        Some("rename") => Ok(RawOperation::Rename {
            old_uri: string("oldUri")?,
            new_uri: string("newUri")?,
            overwrite: options("overwrite"),
            ignore_if_exists: options("ignoreIfExists"),
        }),
        Some("delete") => {
            if options("recursive") {
                log::debug!("deleteFile with recursive: folders are refused anyway");
            }
            Ok(RawOperation::Delete {
                uri: string("uri")?,
                ignore_if_not_exists: options("ignoreIfNotExists"),
            })
        }
        Some(other) => Err(malformed(format!("unknown resource operation {other:?}"))),
        None => {
            let document = entry
                .get("textDocument")
                .ok_or_else(|| malformed("a documentChanges entry has no textDocument or kind"))?;
            let uri = document
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a textDocument has no uri"))?
                .to_owned();
            let version = match document.get("version") {
                None | Some(Value::Null) => None,
                Some(version) => Some(
                    version
                        .as_i64()
                        .and_then(|version| i32::try_from(version).ok())
                        .ok_or_else(|| malformed(format!("version {version} of {uri}")))?,
                ),
            };
            let edits = entry.get("edits").unwrap_or(&Value::Null);
            Ok(RawOperation::Text {
                uri,
                version,
                edits: parse_text_edits(edits)?,
            })
        }
    }
}

fn parse_text_edits(edits: &Value) -> Result<Vec<RawTextEdit>, EditError> {
    let edits = match edits {
        Value::Null => return Ok(Vec::new()),
        Value::Array(edits) => edits,
        _ => return Err(malformed("edits is not an array")),
    };
    edits
        .iter()
        .map(|edit| {
            let position = |pointer: &str| -> Result<lsp_types::Position, EditError> {
                let value = edit
                    .pointer(pointer)
                    .ok_or_else(|| malformed(format!("a text edit has no {pointer}")))?;
                serde_json::from_value(value.clone())
                    .map_err(|error| malformed(format!("{pointer}: {error}")))
            };
            // `SnippetTextEdit` (3.18) carries `snippet` instead of `newText`: lspc does not
            // advertise snippets, so only `newText` is accepted.
            let new_text = edit
                .get("newText")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a text edit has no newText"))?;
            Ok(RawTextEdit {
                start: position("/range/start")?,
                end: position("/range/end")?,
                new_text: new_text.to_owned(),
            })
        })
        .collect()
}

// ----- the virtual view ------------------------------------------------------------------------

/// A file as found on disk before the edit.
#[derive(Debug, Clone)]
struct Original {
    bytes: Vec<u8>,
    permissions: fs::Permissions,
}

/// One path in the virtual view.
#[derive(Debug, Clone)]
struct Slot {
    /// `None` when the path did not exist before the edit.
    original: Option<Original>,
    /// The path is a folder on disk (operations on it are refused).
    is_folder: bool,
    /// Current content in the played edit (`None`: absent).
    content: Option<Vec<u8>>,
    /// Whose permissions a write keeps (the original file, or the source of a rename).
    permissions: Option<fs::Permissions>,
    /// Whether a text edit already changed it (the disk-content check happens only before).
    checked: bool,
}

/// A validated edit ready to be written.
struct Plan {
    operations: Vec<Operation>,
    slots: BTreeMap<PathBuf, Slot>,
}

struct Planner<'a, 'c> {
    context: &'a EditContext<'c>,
    root: PathBuf,
    slots: BTreeMap<PathBuf, Slot>,
}

fn plan(edit: &Value, context: &EditContext<'_>) -> Result<Plan, EditError> {
    let raw_operations = parse(edit)?;
    let mut planner = Planner {
        context,
        root: uri::canonical(context.root),
        slots: BTreeMap::new(),
    };
    let mut operations = Vec::new();
    for raw in raw_operations {
        operations.push(planner.play(raw)?);
    }
    Ok(Plan {
        operations,
        slots: planner.slots,
    })
}

impl Planner<'_, '_> {
    /// The canonical path of `uri`, refused when it leads outside the root.
    fn resolve(&self, uri_text: &str) -> Result<PathBuf, EditError> {
        let path = uri::uri_to_path(uri_text).map_err(|error| EditError::BadUri {
            uri: uri_text.to_owned(),
            message: error.to_string(),
        })?;
        // A dangling symlink cannot be resolved, so where a write would land is unknown.
        if let Ok(metadata) = fs::symlink_metadata(&path) {
            if metadata.file_type().is_symlink() && fs::metadata(&path).is_err() {
                return Err(EditError::DanglingSymlink { path });
            }
        }
        let resolved = uri::canonical(&path);
        if !resolved.starts_with(&self.root) || resolved == self.root {
            return Err(EditError::OutsideRoot {
                path,
                resolved,
                root: self.root.clone(),
            });
        }
        Ok(resolved)
    }

    /// The slot of `path`, read from disk the first time.
    fn slot(&mut self, path: &Path) -> Result<&mut Slot, EditError> {
        if !self.slots.contains_key(path) {
            let slot = match fs::metadata(path) {
                Ok(metadata) if metadata.is_dir() => Slot {
                    original: None,
                    is_folder: true,
                    content: None,
                    permissions: None,
                    checked: true,
                },
                Ok(metadata) => {
                    let bytes = fs::read(path).map_err(|error| EditError::Io {
                        path: path.to_path_buf(),
                        message: error.to_string(),
                    })?;
                    Slot {
                        original: Some(Original {
                            bytes: bytes.clone(),
                            permissions: metadata.permissions(),
                        }),
                        is_folder: false,
                        content: Some(bytes),
                        permissions: Some(metadata.permissions()),
                        checked: false,
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Slot {
                    original: None,
                    is_folder: false,
                    content: None,
                    permissions: None,
                    checked: true,
                },
                Err(error) => {
                    return Err(EditError::Io {
                        path: path.to_path_buf(),
                        message: error.to_string(),
                    })
                }
            };
            self.slots.insert(path.to_path_buf(), slot);
        }
        Ok(self.slots.get_mut(path).expect("inserted above"))
    }

    fn play(&mut self, raw: RawOperation) -> Result<Operation, EditError> {
        match raw {
            RawOperation::Text {
                uri,
                version,
                edits,
            } => {
                let path = self.resolve(&uri)?;
                self.play_text(&path, version, &edits)?;
                Ok(Operation::Edit {
                    path,
                    edits: edits.len(),
                })
            }
            RawOperation::Create {
                uri,
                overwrite,
                ignore_if_exists,
            } => {
                let path = self.resolve(&uri)?;
                let slot = self.slot(&path)?;
                if slot.is_folder {
                    return if ignore_if_exists && !overwrite {
                        Ok(skipped(path, "the folder exists"))
                    } else {
                        Err(EditError::Folder {
                            path,
                            operation: "create",
                        })
                    };
                }
                if slot.content.is_some() {
                    if overwrite {
                        slot.content = Some(Vec::new());
                        slot.checked = true;
                        return Ok(Operation::Create { path });
                    }
                    if ignore_if_exists {
                        return Ok(skipped(path, "the file exists (ignoreIfExists)"));
                    }
                    return Err(EditError::Exists {
                        path,
                        operation: "create",
                    });
                }
                slot.content = Some(Vec::new());
                slot.checked = true;
                Ok(Operation::Create { path })
            }
            RawOperation::Rename {
                old_uri,
                new_uri,
                overwrite,
                ignore_if_exists,
            } => {
                let from = self.resolve(&old_uri)?;
                let to = self.resolve(&new_uri)?;
                let source = self.slot(&from)?;
                if source.is_folder {
                    return Err(EditError::Folder {
                        path: from,
                        operation: "rename",
                    });
                }
                let Some(content) = source.content.clone() else {
                    return Err(EditError::Missing {
                        path: from,
                        operation: "rename",
                    });
                };
                let permissions = source.permissions.clone();
                if from == to {
                    return Ok(skipped(from, "renamed onto itself"));
                }
                let target = self.slot(&to)?;
                if target.is_folder {
                    return Err(EditError::Folder {
                        path: to,
                        operation: "rename onto",
                    });
                }
                if target.content.is_some() && !overwrite {
                    if ignore_if_exists {
                        return Ok(skipped(to, "the target exists (ignoreIfExists)"));
                    }
                    return Err(EditError::Exists {
                        path: to,
                        operation: "rename onto",
                    });
                }
                target.content = Some(content);
                target.permissions = permissions;
                target.checked = true;
                let source = self.slot(&from)?;
                source.content = None;
                Ok(Operation::Rename { from, to })
            }
            RawOperation::Delete {
                uri,
                ignore_if_not_exists,
            } => {
                let path = self.resolve(&uri)?;
                let slot = self.slot(&path)?;
                if slot.is_folder {
                    return Err(EditError::Folder {
                        path,
                        operation: "delete",
                    });
                }
                if slot.content.is_none() {
                    if ignore_if_not_exists {
                        return Ok(skipped(path, "the file does not exist (ignoreIfNotExists)"));
                    }
                    return Err(EditError::Missing {
                        path,
                        operation: "delete",
                    });
                }
                slot.content = None;
                Ok(Operation::Delete { path })
            }
        }
    }

    fn play_text(
        &mut self,
        path: &Path,
        version: Option<i32>,
        edits: &[RawTextEdit],
    ) -> Result<(), EditError> {
        let sent = (self.context.documents)(path);
        let encoding = self.context.encoding;
        if let Some(version) = version {
            if sent.as_ref().map(|sent| sent.version) != Some(version) {
                return Err(EditError::StaleVersion {
                    path: path.to_path_buf(),
                    version,
                    sent: sent.map(|sent| sent.version),
                });
            }
        }
        let slot = self.slot(path)?;
        if slot.is_folder {
            return Err(EditError::Folder {
                path: path.to_path_buf(),
                operation: "edit",
            });
        }
        let Some(content) = slot.content.as_ref() else {
            return Err(EditError::Missing {
                path: path.to_path_buf(),
                operation: "edit",
            });
        };
        if !slot.checked {
            if let Some(sent) = &sent {
                if sent.text.as_bytes() != content.as_slice() {
                    return Err(EditError::ChangedOnDisk {
                        path: path.to_path_buf(),
                    });
                }
            }
            slot.checked = true;
        }
        let text = std::str::from_utf8(content).map_err(|_| EditError::NotUtf8 {
            path: path.to_path_buf(),
        })?;
        let new_text = apply_text_edits(path, text, edits, encoding)?;
        slot.content = Some(new_text.into_bytes());
        Ok(())
    }
}

fn skipped(path: PathBuf, reason: &str) -> Operation {
    Operation::Skipped {
        path,
        reason: reason.to_owned(),
    }
}

/// The line terminator new text is normalised to: the file's first terminator (`None` when the
/// file has none, so new text is kept as sent).
fn line_ending_of(text: &str) -> Option<&'static str> {
    let index = text.find(['\n', '\r'])?;
    match &text.as_bytes()[index..] {
        [b'\r', b'\n', ..] => Some("\r\n"),
        [b'\n', ..] => Some("\n"),
        _ => Some("\r"),
    }
}

fn normalize_line_endings(new_text: &str, ending: Option<&str>) -> String {
    let Some(ending) = ending else {
        return new_text.to_owned();
    };
    let unified = new_text.replace("\r\n", "\n").replace('\r', "\n");
    if ending == "\n" {
        unified
    } else {
        unified.replace('\n', ending)
    }
}

/// Applies `edits` (all relative to `text`) at once: sorted by position (stable, so inserts at
/// one position keep their order), overlaps refused, new text in the file's line endings.
fn apply_text_edits(
    path: &Path,
    text: &str,
    edits: &[RawTextEdit],
    encoding: PositionEncoding,
) -> Result<String, EditError> {
    let index = LineIndex::new(text);
    let mut resolved: Vec<(usize, usize, &RawTextEdit)> = Vec::with_capacity(edits.len());
    for edit in edits {
        let start = index.offset(text, edit.start, encoding);
        let end = index.offset(text, edit.end, encoding);
        if end < start {
            return Err(EditError::InvalidRange {
                path: path.to_path_buf(),
            });
        }
        resolved.push((start, end, edit));
    }
    resolved.sort_by_key(|&(start, end, _)| (start, end));
    for pair in resolved.windows(2) {
        let (_, previous_end, previous) = pair[0];
        let (next_start, _, next) = pair[1];
        if next_start < previous_end {
            let human = |position: lsp_types::Position| index.from_lsp(text, position, encoding);
            return Err(EditError::Overlap {
                path: path.to_path_buf(),
                first: human(previous.start),
                second: human(next.start),
            });
        }
    }
    let ending = line_ending_of(text);
    let mut result = String::with_capacity(text.len());
    let mut cursor = 0;
    for (start, end, edit) in resolved {
        result.push_str(&text[cursor..start]);
        result.push_str(&normalize_line_endings(&edit.new_text, ending));
        cursor = end;
    }
    result.push_str(&text[cursor..]);
    Ok(result)
}

// ----- writing ---------------------------------------------------------------------------------

/// One completed disk step, for rollback.
enum Done {
    /// `path` was written (or deleted); restore `original` (remove the file when `None`).
    Touched {
        path: PathBuf,
        original: Option<Original>,
    },
    /// A folder created for a new file.
    Folder(PathBuf),
}

impl Plan {
    fn report(&self) -> EditReport {
        let files = self
            .slots
            .iter()
            .filter(|(_, slot)| slot.changes())
            .map(|(path, slot)| FileChange {
                path: path.clone(),
                before: slot
                    .original
                    .as_ref()
                    .map(|original| String::from_utf8_lossy(&original.bytes).into_owned()),
                after: slot
                    .content
                    .as_ref()
                    .map(|content| String::from_utf8_lossy(content).into_owned()),
            })
            .collect();
        EditReport {
            operations: self.operations.clone(),
            files,
            written: false,
        }
    }

    /// Writes every changed slot (writes first, then deletes, each in path order); on failure
    /// restores what was done, newest first.
    fn write(&self, hook: &mut dyn FnMut(&Path) -> std::io::Result<()>) -> Result<(), EditError> {
        // The disk must still be as validated: a file changed since then is not overwritten.
        for (path, slot) in self.slots.iter().filter(|(_, slot)| slot.changes()) {
            let now = match fs::read(path) {
                Ok(bytes) => Some(bytes),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
                Err(error) => {
                    return Err(EditError::Io {
                        path: path.clone(),
                        message: error.to_string(),
                    })
                }
            };
            if now.as_deref() != slot.original.as_ref().map(|o| o.bytes.as_slice()) {
                return Err(EditError::ChangedOnDisk { path: path.clone() });
            }
        }
        let mut done: Vec<Done> = Vec::new();
        let writes = self
            .slots
            .iter()
            .filter(|(_, slot)| slot.changes() && slot.content.is_some());
        let deletes = self
            .slots
            .iter()
            .filter(|(_, slot)| slot.changes() && slot.content.is_none());
        for (path, slot) in writes.chain(deletes) {
            let result = self.write_one(path, slot, hook, &mut done);
            if let Err(error) = result {
                let (restored, restore_errors) = rollback(done);
                return Err(EditError::WriteFailed {
                    path: path.clone(),
                    message: error.to_string(),
                    restored,
                    restore_errors,
                });
            }
        }
        Ok(())
    }

    fn write_one(
        &self,
        path: &Path,
        slot: &Slot,
        hook: &mut dyn FnMut(&Path) -> std::io::Result<()>,
        done: &mut Vec<Done>,
    ) -> std::io::Result<()> {
        hook(path)?;
        match &slot.content {
            Some(content) => {
                if let Some(parent) = path.parent() {
                    let mut missing = Vec::new();
                    let mut folder = parent;
                    while !folder.exists() {
                        missing.push(folder.to_path_buf());
                        match folder.parent() {
                            Some(up) => folder = up,
                            None => break,
                        }
                    }
                    for folder in missing.into_iter().rev() {
                        fs::create_dir(&folder)?;
                        done.push(Done::Folder(folder));
                    }
                }
                write_atomically(path, content, slot.permissions.as_ref())?;
            }
            None => fs::remove_file(path)?,
        }
        done.push(Done::Touched {
            path: path.to_path_buf(),
            original: slot.original.clone(),
        });
        Ok(())
    }
}

impl Slot {
    fn changes(&self) -> bool {
        !self.is_folder && self.original.as_ref().map(|o| &o.bytes) != self.content.as_ref()
    }
}

/// Undo `done`, newest first. Returns the paths restored and the errors of those that failed.
fn rollback(done: Vec<Done>) -> (Vec<PathBuf>, Vec<String>) {
    let mut restored = Vec::new();
    let mut errors = Vec::new();
    for step in done.into_iter().rev() {
        match step {
            Done::Touched { path, original } => {
                let result = match &original {
                    Some(original) => {
                        write_atomically(&path, &original.bytes, Some(&original.permissions))
                    }
                    None => fs::remove_file(&path),
                };
                match result {
                    Ok(()) => restored.push(path),
                    Err(error) => errors.push(format!("{}: {error}", path.display())),
                }
            }
            Done::Folder(folder) => {
                if let Err(error) = fs::remove_dir(&folder) {
                    errors.push(format!("{}: {error}", folder.display()));
                }
            }
        }
    }
    restored.reverse();
    (restored, errors)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `content` to `path` through a temporary file in the same folder (fsync, then rename),
/// so readers see the old or the new file, never a half-written one. `permissions` (the replaced
/// file's) are applied to the new file; the folder is fsynced best-effort.
pub(crate) fn write_atomically(
    path: &Path,
    content: &[u8],
    permissions: Option<&fs::Permissions>,
) -> std::io::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = folder.join(format!(
        ".{name}.lspc-{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(content)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions.clone())?;
        }
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    if let Ok(folder) = fs::File::open(folder) {
        let _ = folder.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    /// A temporary workspace with files; removed on drop.
    struct Workspace {
        root: PathBuf,
        sent: HashMap<PathBuf, SentDocument>,
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
            out.sort();
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
