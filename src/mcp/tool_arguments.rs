//! What every MCP tool call shares (issue 4, seed 004): the call's [`ToolContext`], its failure
//! type ([`ToolFailure`], rendered as an `isError` result), reading its arguments (strings,
//! 1-based integers, booleans, files inside the root, positions), the JSON schema of a position,
//! and cleaning a result's JSON (nulls dropped, paths relative to the root).
//!
//! Both tool families ([`super::tools`] and [`super::edit_tools`]) read their arguments here, so
//! neither depends on the other for it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{json, Map, Value};

use crate::engine::Op;
use crate::query::{ColumnOrSymbol, TextPosition};

/// Everything a tool handler needs; cheap to clone onto a worker thread.
#[derive(Clone)]
pub struct ToolContext {
    pub op_sender: Sender<Op>,
    /// Canonical absolute workspace root.
    pub root: PathBuf,
    /// How long one query may wait for a server (start-up included).
    pub timeout: Duration,
    /// The files this session has already waited on once (hover and signature help wait for
    /// a file's first analysis only; see [`crate::query::AnalysedFiles`]).
    pub analysed_files: crate::query::AnalysedFiles,
    /// Whose passive-diagnostics queue `newDiagnostics` drains: `None` for the engine's shared
    /// one (stdio, stateless requests), an HTTP session's id for its own (issue 14).
    pub passive_consumer: Option<String>,
}

pub fn position_properties() -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert(
        "file".to_owned(),
        json!({"type": "string", "description": "File path, relative to the workspace root or absolute inside it"}),
    );
    properties.insert(
        "line".to_owned(),
        json!({"type": "integer", "minimum": 1, "description": "1-based line number"}),
    );
    properties.insert(
        "column".to_owned(),
        json!({"type": "integer", "minimum": 1, "description": "1-based column in Unicode characters (give column or symbol)"}),
    );
    properties.insert(
        "symbol".to_owned(),
        json!({"type": "string", "description": "A name on that line to point at instead of a column"}),
    );
    properties.insert(
        "occurrence".to_owned(),
        json!({"type": "integer", "minimum": 1, "description": "Which occurrence of symbol on the line (1-based, default 1)"}),
    );
    properties
}

pub fn position_schema(extra: &[(&str, Value)]) -> Value {
    let mut properties = position_properties();
    for (key, value) in extra {
        properties.insert((*key).to_owned(), value.clone());
    }
    json!({"type": "object", "properties": properties, "required": ["file", "line"]})
}

/// A failed call, rendered as an `isError` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure(pub String);

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolFailure {}

/// Resolve a `file` argument: relative to `root` (canonical), or absolute inside it. The file
/// must exist and be a regular file.
///
/// Containment is decided on the path itself before the file system is touched (issue 11: an
/// existence oracle): `..` and `.` are resolved lexically, and a path that leaves the root gets
/// one message whether or not it exists. Only then is the path canonicalized; a symlink inside
/// the root that leads out gets the same message, and so does a path through a symlink that
/// leads nowhere (its target might be outside).
///
/// Errors ([`ToolFailure`]): empty, outside the root, cannot be opened (inside the root), not a
/// regular file.
pub fn resolve_file(root: &Path, file: &str) -> Result<PathBuf, ToolFailure> {
    if file.is_empty() {
        return Err(ToolFailure(
            "file is empty; give a path relative to the workspace root".to_owned(),
        ));
    }
    let outside = || {
        ToolFailure(format!(
            "{file} is outside the workspace root {}; lspc only serves files inside it",
            root.display()
        ))
    };
    let given = Path::new(file);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let Some(lexical) = lexically_inside(root, &joined) else {
        return Err(outside());
    };
    let canonical = match lexical.canonicalize() {
        Ok(canonical) => canonical,
        Err(_) if passes_a_symlink(root, &lexical) => return Err(outside()),
        Err(error) => {
            return Err(ToolFailure(format!(
                "cannot open {file}: {error} (paths are relative to the workspace root {})",
                root.display()
            )))
        }
    };
    if !canonical.starts_with(root) {
        return Err(outside());
    }
    if !canonical.is_file() {
        return Err(ToolFailure(format!("{file} is not a file")));
    }
    Ok(canonical)
}

/// `path` (absolute) with `.` and `..` resolved lexically, when that stays inside `root`;
/// `None` when it leaves the root. Touches nothing on disk.
fn lexically_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                // Never above the root: `ROOT/../ROOT-NAME/x` is refused rather than re-entered.
                if !normal.starts_with(root) || normal == root {
                    return None;
                }
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    normal.starts_with(root).then_some(normal)
}

/// Whether some component of `path` below `root` is a symbolic link.
fn passes_a_symlink(root: &Path, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(root) else {
        return false;
    };
    let mut prefix = root.to_path_buf();
    relative.components().any(|component| {
        prefix.push(component.as_os_str());
        prefix
            .symlink_metadata()
            .is_ok_and(|metadata| metadata.file_type().is_symlink())
    })
}

/// `path` relative to `root` when inside it, else as is.
pub fn display_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|relative| relative.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

pub fn arg_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolFailure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(ToolFailure(format!("{key} must be a string, got {other}"))),
    }
}

pub fn arg_u32(args: &Value, key: &str) -> Result<Option<u32>, ToolFailure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|n| *n >= 1 && *n <= u32::MAX as u64)
            .map(|n| Some(n as u32))
            .ok_or_else(|| {
                ToolFailure(format!(
                    "{key} must be an integer >= 1 (1-based), got {value}"
                ))
            }),
    }
}

pub fn arg_bool(args: &Value, key: &str) -> Result<Option<bool>, ToolFailure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(ToolFailure(format!(
            "{key} must be true or false, got {other}"
        ))),
    }
}

pub fn required_file(root: &Path, args: &Value) -> Result<PathBuf, ToolFailure> {
    let file = arg_str(args, "file")?.ok_or_else(|| {
        ToolFailure("file is required (relative to the workspace root)".to_owned())
    })?;
    resolve_file(root, file)
}

/// Parse `file`, `line` and `column` or `symbol` (+ `occurrence`).
pub fn text_position(root: &Path, args: &Value) -> Result<TextPosition, ToolFailure> {
    let file = required_file(root, args)?;
    let line = arg_u32(args, "line")?
        .ok_or_else(|| ToolFailure("line is required (1-based)".to_owned()))?;
    let column = arg_u32(args, "column")?;
    let symbol = arg_str(args, "symbol")?;
    let target = match (column, symbol) {
        (Some(column), None) => ColumnOrSymbol::Column(column),
        (None, Some(name)) if !name.is_empty() => ColumnOrSymbol::Symbol {
            name: name.to_owned(),
            occurrence: arg_u32(args, "occurrence")?.unwrap_or(1),
        },
        (Some(_), Some(_)) => {
            return Err(ToolFailure(
                "give either column or symbol, not both".to_owned(),
            ))
        }
        _ => {
            return Err(ToolFailure(
                "give column (1-based, in characters) or symbol (a name on that line)".to_owned(),
            ))
        }
    };
    Ok(TextPosition { file, line, target })
}

/// Remove `null` object members everywhere and turn absolute paths under `root` (values of keys
/// named `path`, `file` or `uri`-less path strings) into root-relative ones.
pub fn clean_json(value: &mut Value, root: &Path) {
    match value {
        Value::Object(object) => {
            object.retain(|_, member| !member.is_null());
            for (key, member) in object.iter_mut() {
                if key == "path" || key == "file" {
                    if let Value::String(text) = member {
                        *text = display_path(root, Path::new(text.as_str()));
                        continue;
                    }
                }
                clean_json(member, root);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| clean_json(item, root)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_resolve_inside_the_root_only() {
        let dir = std::env::temp_dir().join(format!("lspc-mcp-tools-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/a.py"), "x = 1\n").unwrap();
        let root = dir.canonicalize().unwrap();
        let check = |file: &str, expected: Result<&str, &str>| {
            let actual = resolve_file(&root, file)
                .map(|path| display_path(&root, &path))
                .map_err(|error| error.0.replace(&root.display().to_string(), "ROOT"));
            assert_eq!(
                actual.as_deref().map_err(String::as_str),
                expected,
                "{file}"
            );
        };
        check("src/a.py", Ok("src/a.py"));
        check("./src/../src/a.py", Ok("src/a.py"));
        let absolute = root.join("src/a.py").display().to_string();
        check(&absolute, Ok("src/a.py"));
        check(
            "/etc/hostname",
            Err("/etc/hostname is outside the workspace root ROOT; lspc only serves files inside it"),
        );
        // Issue 11: one answer outside the root, whether or not the file exists.
        for outside in [
            "/etc/no_such_file",
            "../../../etc/hostname",
            "../../../no/such/file",
            "src/../../x.py",
        ] {
            check(
                outside,
                Err(&format!(
                    "{outside} is outside the workspace root ROOT; lspc only serves files inside it"
                )),
            );
        }
        std::os::unix::fs::symlink("/etc/hostname", root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/no_such_file", root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        for through_a_link in ["out", "dangling", "etc/hostname", "etc/no_such_file"] {
            check(
                through_a_link,
                Err(&format!(
                    "{through_a_link} is outside the workspace root ROOT; lspc only serves files inside it"
                )),
            );
        }
        check(
            "missing.py",
            Err("cannot open missing.py: No such file or directory (os error 2) (paths are relative to the workspace root ROOT)"),
        );
        check("src", Err("src is not a file"));
        check(
            "",
            Err("file is empty; give a path relative to the workspace root"),
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn positions_need_column_or_symbol() {
        let dir = std::env::temp_dir().join(format!("lspc-mcp-pos-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.py"), "x = 1\n").unwrap();
        let root = dir.canonicalize().unwrap();
        let check = |args: Value, expected: Result<(u32, ColumnOrSymbol), &str>| {
            let actual = text_position(&root, &args)
                .map(|at| (at.line, at.target))
                .map_err(|error| error.0);
            match (&actual, &expected) {
                (Ok((line, target)), Ok((want_line, want_target))) => {
                    assert_eq!(line, want_line, "{args}");
                    assert_eq!(format!("{target:?}"), format!("{want_target:?}"), "{args}");
                }
                (Err(message), Err(want)) => assert_eq!(message, want, "{args}"),
                _ => panic!("{args}: got {actual:?}"),
            }
        };
        check(
            json!({"file": "a.py", "line": 1, "column": 3}),
            Ok((1, ColumnOrSymbol::Column(3))),
        );
        check(
            json!({"file": "a.py", "line": 1, "symbol": "x"}),
            Ok((
                1,
                ColumnOrSymbol::Symbol {
                    name: "x".to_owned(),
                    occurrence: 1,
                },
            )),
        );
        check(
            json!({"file": "a.py", "line": 1, "symbol": "x", "occurrence": 2}),
            Ok((
                1,
                ColumnOrSymbol::Symbol {
                    name: "x".to_owned(),
                    occurrence: 2,
                },
            )),
        );
        check(
            json!({"file": "a.py", "line": 0, "column": 1}),
            Err("line must be an integer >= 1 (1-based), got 0"),
        );
        check(
            json!({"file": "a.py", "column": 1}),
            Err("line is required (1-based)"),
        );
        check(
            json!({"file": "a.py", "line": 1}),
            Err("give column (1-based, in characters) or symbol (a name on that line)"),
        );
        check(
            json!({"file": "a.py", "line": 1, "column": 1, "symbol": "x"}),
            Err("give either column or symbol, not both"),
        );
        check(
            json!({"line": 1, "column": 1}),
            Err("file is required (relative to the workspace root)"),
        );
        check(
            json!({"file": 3, "line": 1}),
            Err("file must be a string, got 3"),
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_is_cleaned_and_relativized() {
        let root = Path::new("/w");
        let check = |mut input: Value, expected: Value| {
            clean_json(&mut input, root);
            assert_eq!(input, expected);
        };
        check(
            json!({"path": "/w/src/a.py", "line": 1, "lineText": null}),
            json!({"path": "src/a.py", "line": 1}),
        );
        check(
            json!([{"location": {"path": "/elsewhere/b.py"}, "detail": null}]),
            json!([{"location": {"path": "/elsewhere/b.py"}}]),
        );
        check(json!({"a": [null, {"b": null}]}), json!({"a": [null, {}]}));
    }
}
