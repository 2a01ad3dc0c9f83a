//! Validation: parsing both `WorkspaceEdit` shapes and playing the edit in memory against a
//! virtual view of the files it touches ([`Plan`]), in the server's order; every check (paths inside
//! the root, versions, disk content, folders, create/rename/delete options) happens here, before
//! anything is written.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::apply::{apply_text_edits, RawTextEdit};
use super::{EditContext, EditError, Operation};
use crate::uri;

use crate::text::BYTE_ORDER_MARK;

// ----- parsing ---------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub(super) enum RawOperation {
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

pub(super) fn malformed(message: impl Into<String>) -> EditError {
    EditError::Malformed(message.into())
}

pub(super) fn parse(edit: &Value) -> Result<Vec<RawOperation>, EditError> {
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

pub(super) fn parse_document_change(entry: &Value) -> Result<RawOperation, EditError> {
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

pub(super) fn parse_text_edits(edits: &Value) -> Result<Vec<RawTextEdit>, EditError> {
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
pub(super) struct Original {
    pub(super) bytes: Vec<u8>,
    pub(super) permissions: fs::Permissions,
}

/// One path in the virtual view.
#[derive(Debug, Clone)]
pub(super) struct Slot {
    /// `None` when the path did not exist before the edit.
    pub(super) original: Option<Original>,
    /// The path is a folder on disk (operations on it are refused).
    pub(super) is_folder: bool,
    /// Current content in the played edit (`None`: absent).
    pub(super) content: Option<Vec<u8>>,
    /// Whose permissions a write keeps (the original file, or the source of a rename).
    pub(super) permissions: Option<fs::Permissions>,
    /// Whether a text edit already changed it (the disk-content check happens only before).
    pub(super) checked: bool,
}

/// A validated edit ready to be written.
pub(super) struct Plan {
    pub(super) operations: Vec<Operation>,
    pub(super) slots: BTreeMap<PathBuf, Slot>,
}

pub(super) struct Planner<'a, 'c> {
    context: &'a EditContext<'c>,
    root: PathBuf,
    slots: BTreeMap<PathBuf, Slot>,
}

pub(super) fn plan(edit: &Value, context: &EditContext<'_>) -> Result<Plan, EditError> {
    let raw_operations = parse(edit)?;
    let mut planner = Planner {
        context,
        root: uri::canonical(context.root),
        slots: BTreeMap::new(),
    };
    planner.check_versions(&raw_operations)?;
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
    pub(super) fn resolve(&self, uri_text: &str) -> Result<PathBuf, EditError> {
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
    pub(super) fn slot(&mut self, path: &Path) -> Result<&mut Slot, EditError> {
        if !self.slots.contains_key(path) {
            if (self.context.written_since)(path) {
                return Err(EditError::ChangedByAnotherEdit {
                    path: path.to_path_buf(),
                });
            }
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

    pub(super) fn play(&mut self, raw: RawOperation) -> Result<Operation, EditError> {
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

    /// Refuses the edit when a versioned text edit names a version lspc did not send, checking
    /// the files in path order: a server that sends several stale files (ccls, gopls) lists them
    /// in an order of its own, which depends on its index, so the one named is the first path.
    /// A URI that does not resolve is left to [`Planner::play`], which says why.
    fn check_versions(&self, raw_operations: &[RawOperation]) -> Result<(), EditError> {
        let mut versioned: Vec<(PathBuf, i32)> = raw_operations
            .iter()
            .filter_map(|raw| match raw {
                RawOperation::Text {
                    uri,
                    version: Some(version),
                    ..
                } => Some((self.resolve(uri).ok()?, *version)),
                _ => None,
            })
            .collect();
        crate::sorting::sort(&mut versioned);
        for (path, version) in versioned {
            self.check_version(&path, Some(version))?;
        }
        Ok(())
    }

    /// Refuses a text edit of `path` for a `version` lspc did not send.
    fn check_version(&self, path: &Path, version: Option<i32>) -> Result<(), EditError> {
        let sent_document = (self.context.documents)(path);
        let sent = sent_document.as_ref().map(|sent| sent.version);
        // Version 0 from a server that does not track versions (gopls 0.5 for files it was never
        // sent, ccls for every file) means "whatever you gave me": lspc's versions start at 1,
        // so a 0 can only name the disk text (never sent) or the one text lspc sent since it
        // opened the document (its opening version, nothing after it). Neovim reads 0 the same
        // way. The disk check in `play_text` still refuses an edit of a file that changed since.
        let version = version.filter(|&version| {
            version != 0
                || sent_document
                    .as_ref()
                    .is_some_and(|sent| sent.version != sent.opened_version)
        });
        // Any version that carried the text lspc holds now names that text (a re-send of an
        // unchanged document after another file changed on disk: rust-analyzer answered a
        // rename for version 1 while lspc's version 2 of the same text was on its way).
        let carries_text = |version: i32| {
            sent_document
                .as_ref()
                .is_some_and(|sent| (sent.text_version..=sent.version).contains(&version))
        };
        match version {
            Some(version) if !carries_text(version) => Err(EditError::StaleVersion {
                path: path.to_path_buf(),
                version,
                sent,
            }),
            _ => Ok(()),
        }
    }

    pub(super) fn play_text(
        &mut self,
        path: &Path,
        version: Option<i32>,
        edits: &[RawTextEdit],
    ) -> Result<(), EditError> {
        let sent = (self.context.documents)(path);
        let encoding = self.context.encoding;
        self.check_version(path, version)?;
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
        let text = std::str::from_utf8(content).map_err(|_| EditError::NotUtf8 {
            path: path.to_path_buf(),
        })?;
        // The servers hold the text without its byte order mark, and their positions count
        // from there ([`crate::text::without_byte_order_mark`]).
        let unmarked = crate::text::without_byte_order_mark(text);
        if !slot.checked {
            if let Some(sent) = &sent {
                if *sent.text != *unmarked {
                    return Err(EditError::ChangedOnDisk {
                        path: path.to_path_buf(),
                    });
                }
            }
            slot.checked = true;
        }
        let mut new_text = apply_text_edits(path, unmarked, edits, encoding)?;
        // A UTF-8 byte order mark is the file's encoding, not its text: written back as an
        // editor saves it (a new user's trial on sindresorhus/ky: when lspc sent it as text,
        // `lspc format` of a formatted file removed its first three bytes).
        if unmarked.len() != text.len() {
            new_text.insert(0, BYTE_ORDER_MARK);
        }
        slot.content = Some(new_text.into_bytes());
        Ok(())
    }
}

pub(super) fn skipped(path: PathBuf, reason: &str) -> Operation {
    Operation::Skipped {
        path,
        reason: reason.to_owned(),
    }
}
