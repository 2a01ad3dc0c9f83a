//! A result serialised straight into the form MCP's structured content shows (issue 15: writing
//! the result's JSON text and then reading it again to clean it cost the server's reader about
//! 15k instructions per MCP definition): object members that are `null` are left out, and a
//! `path` or `file` member's string is shown as [`display_path`] shows it, relative to the root.
//!
//! [`cleaned`] runs `serde_json`'s serialiser with a [`serde_json::ser::Formatter`] that holds
//! each member's key back until its value starts: a `null` value drops the key, any other value
//! writes it. Everything else is the compact formatter's output, so the bytes are those of
//! `crate::operation::execute::clean_json` applied to the result's `Value` (which the
//! `mcp::structured` pass over the text also gives).
//!
//! Invariant: the answer is those bytes or `None`. What the formatter cannot hold to them is
//! declined: a key that is not a plain string (escapes, a number), keys not strictly increasing
//! (a `Value` sorts them and keeps one of a duplicate), a raw JSON fragment, a path string with
//! an escape in it.

use std::cell::Cell;
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// `path` relative to `root` when inside it, else as is (MCP's form of a path member).
pub fn display_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|relative| relative.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// `result` serialised compact in MCP's cleaned form; `None` when declined or when it cannot be
/// serialised (a path that is not UTF-8).
pub fn cleaned<T: Serialize + ?Sized>(result: &T, root: &Path) -> Option<String> {
    let mut out = Vec::with_capacity(256);
    let declined = Cell::new(false);
    let formatter = CleanFormatter {
        root,
        objects: Vec::new(),
        depth: 0,
        key: Vec::new(),
        path: Vec::new(),
        state: State::Value,
        declined: &declined,
    };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    if result.serialize(&mut serializer).is_err() || declined.get() {
        return None;
    }
    // Only serde_json's escaped output and whole keys and paths were written: UTF-8.
    String::from_utf8(out).ok()
}

/// [`cleaned`] for a definition-like answer (definition, references), written directly
/// (issue 15: the generic formatter cost an MCP definition about 5k instructions a location):
/// the same bytes, or `None` where [`cleaned`] declines (a path that is not UTF-8 or holds a
/// character JSON escapes), and the caller then takes [`cleaned`]'s route.
pub fn cleaned_locations(result: &super::LocationsResult, root: &Path) -> Option<String> {
    let mut out = String::with_capacity(48 + result.locations.len() * 112);
    out.push('{');
    // The members in their sorted order, as a `Value` writes them; `None`s left out.
    if let Some(incomplete) = &result.incomplete {
        out.push_str("\"incomplete\":");
        push_json_string(&mut out, incomplete);
        out.push(',');
    }
    out.push_str("\"locations\":[");
    for (n, location) in result.locations.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        for (key, value) in [
            ("{\"column\":", location.column),
            (",\"endColumn\":", location.end_column),
            (",\"endLine\":", location.end_line),
            (",\"line\":", location.line),
        ] {
            out.push_str(key);
            super::push_decimal(&mut out, value);
        }
        if let Some(text) = &location.line_text {
            out.push_str(",\"lineText\":");
            push_json_string(&mut out, text);
        }
        out.push_str(",\"path\":");
        let path = location.path.to_str()?;
        if needs_escape(path) {
            return None;
        }
        if path.starts_with('/') {
            push_json_string(&mut out, &display_path(root, Path::new(path)));
        } else {
            out.push('"');
            out.push_str(path);
            out.push('"');
        }
        out.push('}');
    }
    out.push_str("],\"server\":");
    push_json_string(&mut out, &result.server);
    out.push('}');
    Some(out)
}

/// Whether `text` holds a character a JSON string escapes (serde_json: `"`, `\\`, controls).
fn needs_escape(text: &str) -> bool {
    text.bytes()
        .any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\')
}

/// `text` as a JSON string, as serde_json writes it.
fn push_json_string(out: &mut String, text: &str) {
    if needs_escape(text) {
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

/// What the serialiser is writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value (or nothing yet): hooks write through.
    Value,
    /// A member's key: its fragments go to `key`.
    InKey,
    /// A member's key is complete and held back until its value starts.
    KeyDone { path_value: bool },
    /// A `path`/`file` member's string: its fragments go to `path`.
    PathString,
}

/// One open object: how many members it has written and its last key (to check the order).
#[derive(Default)]
struct Object {
    written: usize,
    previous_key: Vec<u8>,
    has_previous: bool,
}

struct CleanFormatter<'a> {
    root: &'a Path,
    /// Open objects, innermost at `depth - 1`; entries past `depth` are kept for reuse.
    objects: Vec<Object>,
    depth: usize,
    /// The key held back (raw, which without escapes is also its JSON text).
    key: Vec<u8>,
    /// A `path`/`file` string being collected.
    path: Vec<u8>,
    state: State,
    /// Set when the output cannot be held to the `Value` route's bytes.
    declined: &'a Cell<bool>,
}

impl CleanFormatter<'_> {
    /// A value starts: the held key, if any, is written first (with its separator).
    fn value_starts<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.state {
            State::Value => Ok(()),
            State::KeyDone { .. } => {
                self.state = State::Value;
                self.write_key(writer)
            }
            State::InKey | State::PathString => {
                self.declined.set(true);
                Ok(())
            }
        }
    }

    fn write_key<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        let Some(object) = innermost(&mut self.objects, self.depth) else {
            self.declined.set(true);
            return Ok(());
        };
        if object.written > 0 {
            writer.write_all(b",")?;
        }
        object.written += 1;
        writer.write_all(b"\"")?;
        writer.write_all(&self.key)?;
        writer.write_all(b"\":")
    }

    /// The collected path string, shown relative to the root when inside it.
    fn write_path<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        let Ok(text) = std::str::from_utf8(&self.path) else {
            self.declined.set(true);
            return Ok(());
        };
        if !text.starts_with('/') {
            // A relative path is never inside an absolute root: shown as is, and it held no
            // escape, so its bytes are its JSON text.
            writer.write_all(b"\"")?;
            writer.write_all(&self.path)?;
            return writer.write_all(b"\"");
        }
        let shown = display_path(self.root, Path::new(text));
        serde_json::to_writer(writer, shown.as_str()).map_err(io::Error::other)
    }
}

/// The innermost of the open objects (`depth` of them open); `None` outside every object.
fn innermost(objects: &mut [Object], depth: usize) -> Option<&mut Object> {
    objects.get_mut(depth.checked_sub(1)?)
}

/// A number hook: a value start, then the compact formatter's output; declined inside a key.
macro_rules! number_hooks {
    ($($name:ident: $type:ty),*) => {$(
        fn $name<W: ?Sized + Write>(&mut self, writer: &mut W, value: $type) -> io::Result<()> {
            self.value_starts(writer)?;
            CompactFormatter.$name(writer, value)
        }
    )*};
}

impl Formatter for CleanFormatter<'_> {
    number_hooks!(write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64, write_i128: i128,
        write_u8: u8, write_u16: u16, write_u32: u32, write_u64: u64, write_u128: u128,
        write_f32: f32, write_f64: f64, write_bool: bool);

    fn write_null<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.state {
            // A `null` member is left out, key and all.
            State::KeyDone { .. } => {
                self.state = State::Value;
                Ok(())
            }
            State::Value => writer.write_all(b"null"),
            State::InKey | State::PathString => {
                self.declined.set(true);
                Ok(())
            }
        }
    }

    fn write_number_str<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        value: &str,
    ) -> io::Result<()> {
        self.value_starts(writer)?;
        writer.write_all(value.as_bytes())
    }

    fn begin_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.state {
            State::InKey => Ok(()),
            State::KeyDone { path_value: true } => {
                self.state = State::Value;
                self.write_key(writer)?;
                self.path.clear();
                self.state = State::PathString;
                Ok(())
            }
            _ => {
                self.value_starts(writer)?;
                writer.write_all(b"\"")
            }
        }
    }

    fn end_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.state {
            State::InKey => Ok(()),
            State::PathString => {
                self.state = State::Value;
                self.write_path(writer)
            }
            _ => writer.write_all(b"\""),
        }
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        match self.state {
            State::InKey => {
                self.key.extend_from_slice(fragment.as_bytes());
                Ok(())
            }
            State::PathString => {
                self.path.extend_from_slice(fragment.as_bytes());
                Ok(())
            }
            _ => writer.write_all(fragment.as_bytes()),
        }
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        match self.state {
            State::InKey | State::PathString => {
                self.declined.set(true);
                Ok(())
            }
            _ => CompactFormatter.write_char_escape(writer, char_escape),
        }
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.value_starts(writer)?;
        writer.write_all(b"[")
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.value_starts(writer)?;
        if self.depth == self.objects.len() {
            self.objects.push(Object::default());
        }
        let object = &mut self.objects[self.depth];
        object.written = 0;
        object.has_previous = false;
        self.depth += 1;
        writer.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.depth.checked_sub(1) {
            Some(depth) => self.depth = depth,
            None => self.declined.set(true),
        }
        writer.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        _writer: &mut W,
        _first: bool,
    ) -> io::Result<()> {
        // The separator is written with the key, once its value is known not to be `null`.
        if self.state != State::Value {
            self.declined.set(true);
        }
        self.key.clear();
        self.state = State::InKey;
        Ok(())
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        let in_order = match innermost(&mut self.objects, self.depth) {
            Some(object) => {
                let in_order = !object.has_previous || object.previous_key < self.key;
                object.previous_key.clear();
                object.previous_key.extend_from_slice(&self.key);
                object.has_previous = true;
                in_order
            }
            None => false,
        };
        if !in_order {
            self.declined.set(true);
        }
        self.state = State::KeyDone {
            path_value: self.key == b"path" || self.key == b"file",
        };
        Ok(())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        // The `:` is written with the key.
        Ok(())
    }

    fn write_raw_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // A raw `null` member would have to be dropped: not read here.
        self.declined.set(true);
        writer.write_all(fragment.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The direct writer for locations gives [`cleaned`]'s bytes, and declines only where it
    /// declines: random answers over strings and paths with escapes, non-ASCII text, paths
    /// inside, outside and relative to the root.
    #[test]
    fn cleaned_locations_matches_the_formatter() {
        use crate::query::{Location, LocationsResult};
        let root = Path::new("/w");
        let pieces = [
            "a", "/", "\"", "\\", "\n", "\u{1}", "é", "😀", " ", "w", ".", "\t",
        ];
        let mut seed: u64 = 2024;
        let mut next = |bound: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % bound
        };
        let mut declined = 0;
        for round in 0..3000 {
            let text = |next: &mut dyn FnMut(usize) -> usize| {
                (0..next(6))
                    .map(|_| pieces[next(pieces.len())])
                    .collect::<String>()
            };
            let locations = (0..next(4))
                .map(|_| {
                    let path = match next(4) {
                        0 => format!("/w/{}", text(&mut next)),
                        1 => format!("/elsewhere/{}", text(&mut next)),
                        2 => text(&mut next),
                        _ => "/w/src/a.c".to_owned(),
                    };
                    Location {
                        column: next(3) as u32,
                        end_column: u32::MAX - next(2) as u32,
                        end_line: next(100_000) as u32,
                        line: next(10) as u32,
                        line_text: (next(3) > 0).then(|| text(&mut next)),
                        path: path.into(),
                    }
                })
                .collect();
            let result = LocationsResult {
                incomplete: (next(3) == 0).then(|| text(&mut next)),
                locations,
                server: text(&mut next),
            };
            let direct = cleaned_locations(&result, root);
            let formatter = cleaned(&result, root);
            assert_eq!(direct, formatter, "round {round}: {result:?}");
            declined += usize::from(direct.is_none());
        }
        // Both routes were taken.
        assert!((100..2900).contains(&declined), "{declined} declined");
        let typical = LocationsResult {
            incomplete: None,
            locations: vec![Location {
                column: 5,
                end_column: 9,
                end_line: 1,
                line: 1,
                line_text: Some("int twice(int x);".to_owned()),
                path: "/w/util.h".into(),
            }],
            server: "clangd".to_owned(),
        };
        assert_eq!(
            cleaned_locations(&typical, root).as_deref(),
            Some(
                r#"{"locations":[{"column":5,"endColumn":9,"endLine":1,"line":1,"lineText":"int twice(int x);","path":"util.h"}],"server":"clangd"}"#
            )
        );
    }

    /// `null` members go, key and all, at any depth; `null` items of arrays and a `null`
    /// result stay; a `path` or `file` string inside the root is shown relative. (Each result
    /// type against `clean_json`: `result_json`'s tests.)
    #[test]
    fn null_members_are_left_out_and_paths_shown_relative() {
        let root = Path::new("/w");
        let check = |value: &serde_json::Value, expected: &str| {
            assert_eq!(cleaned(value, root).as_deref(), Some(expected), "{value}");
        };
        check(&json!(null), "null");
        check(&json!([null, 1, {"a": null}]), "[null,1,{}]");
        check(
            &json!({"a": null, "b": {"c": null, "d": [null]}, "e": null}),
            r#"{"b":{"d":[null]}}"#,
        );
        check(
            &json!({"file": "/w/src/a.c", "path": "/w", "x": "/w/a.c", "z": {"path": "b/c"}}),
            r#"{"file":"src/a.c","path":"","x":"/w/a.c","z":{"path":"b/c"}}"#,
        );
        check(
            &json!({"path": 1, "t": "a\"b\u{1}"}),
            r#"{"path":1,"t":"a\"b\u0001"}"#,
        );
        assert_eq!(cleaned(&(), root).as_deref(), Some("null"));
    }

    /// What the formatter cannot hold to the `Value` route's bytes is declined: keys out of
    /// order or repeated, a key with an escape or not a string, a path with an escape, a raw
    /// fragment.
    #[test]
    fn what_a_value_would_change_is_declined() {
        #[derive(Serialize)]
        struct Unsorted {
            b: u32,
            a: u32,
        }
        #[derive(Serialize)]
        struct Repeated {
            a: u32,
            #[serde(rename = "a")]
            again: u32,
        }
        let root = Path::new("/w");
        assert_eq!(cleaned(&Unsorted { b: 1, a: 2 }, root), None);
        assert_eq!(cleaned(&Repeated { a: 1, again: 2 }, root), None);
        assert_eq!(cleaned(&json!({"a\nb": 1}), root), None);
        assert_eq!(cleaned(&json!({"path": "/w/a\"b.c"}), root), None);
        let numbered: std::collections::BTreeMap<u32, u32> = [(1, 2)].into();
        assert_eq!(cleaned(&numbered, root), None);
        let raw = serde_json::value::RawValue::from_string("null".to_owned()).unwrap();
        assert_eq!(cleaned(&[raw], root), None);
        // Declining one result leaves nothing behind for the next.
        assert_eq!(
            cleaned(&json!({"a": 1}), root).as_deref(),
            Some(r#"{"a":1}"#)
        );
    }
}
