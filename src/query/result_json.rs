//! A query's result object as JSON ([`ResultJson`]): either a `Value` tree or the text it
//! serialises to, written once from the typed result (issue 15: building a `Value` only to
//! serialise it cost a definition about a quarter of its instructions).
//!
//! Invariant: the tree and text forms stand for the same JSON, and the text form is exactly
//! what the tree form serialises to (compact, object keys sorted), so writing either gives the
//! same bytes. The cleaned form (MCP's instant answers only) is that text as MCP's structured
//! content shows it.
//! The text is only ever made by serde_json's serialiser, so it is valid JSON (it is not
//! parsed again to check).
//! Results are serialised directly only from types whose fields are declared in the order of
//! their serialised names (see `model.rs`).

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// A result object: a tree, or its compact JSON text.
#[derive(Debug, Clone)]
pub enum ResultJson {
    Tree(Value),
    /// Written by `serde_json` ([`ResultJson::of`]): valid JSON.
    Text(String),
    /// The text in MCP's cleaned form ([`ResultJson::cleaned`]): `null` members left out,
    /// `path`/`file` members relative to the root. Only MCP's instant answers hold it
    /// ([`crate::query::command::Rendering::Structured`]).
    Cleaned(String),
}

impl ResultJson {
    /// `result` serialised straight into text; `null` (logged) when it cannot be serialised
    /// (a path that is not UTF-8), as a `Value` would have been.
    pub fn of<T: Serialize>(result: &T) -> ResultJson {
        match serde_json::to_string(result) {
            Ok(text) => ResultJson::Text(text),
            Err(error) => {
                log::warn!("cannot serialise a result: {error}");
                ResultJson::Tree(Value::Null)
            }
        }
    }

    /// `result` serialised straight into MCP's cleaned form ([`super::cleaned_json`]), or,
    /// where that declines, [`ResultJson::of`] (which MCP cleans as it cleans any text).
    pub fn cleaned<T: Serialize>(result: &T, root: &std::path::Path) -> ResultJson {
        match super::cleaned_json::cleaned(result, root) {
            Some(text) => ResultJson::Cleaned(text),
            None => ResultJson::of(result),
        }
    }

    /// The JSON `null`.
    pub fn null() -> ResultJson {
        ResultJson::Tree(Value::Null)
    }

    /// As a tree (parsing the text form).
    pub fn into_value(self) -> Value {
        match self {
            ResultJson::Tree(value) => value,
            ResultJson::Text(text) | ResultJson::Cleaned(text) => {
                serde_json::from_str(&text).unwrap_or(Value::Null)
            }
        }
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> bool {
        match self {
            ResultJson::Tree(value) => value.is_null(),
            ResultJson::Text(text) | ResultJson::Cleaned(text) => text == "null",
        }
    }

    /// Append its compact JSON text to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            ResultJson::Tree(value) => {
                let _ = serde_json::to_writer(&mut *out, value);
            }
            ResultJson::Text(text) | ResultJson::Cleaned(text) => {
                out.extend_from_slice(text.as_bytes())
            }
        }
    }
}

impl From<Value> for ResultJson {
    fn from(value: Value) -> ResultJson {
        ResultJson::Tree(value)
    }
}

impl PartialEq for ResultJson {
    /// Equal when they stand for the same JSON, whatever their forms.
    fn eq(&self, other: &ResultJson) -> bool {
        match (self, other) {
            (ResultJson::Text(a), ResultJson::Text(b)) => a == b,
            _ => self.clone().into_value() == other.clone().into_value(),
        }
    }
}

impl PartialEq<Value> for ResultJson {
    fn eq(&self, other: &Value) -> bool {
        &self.clone().into_value() == other
    }
}

impl std::fmt::Display for ResultJson {
    /// The compact JSON text (what `Value`'s `Display` writes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResultJson::Tree(value) => write!(f, "{value}"),
            ResultJson::Text(text) | ResultJson::Cleaned(text) => f.write_str(text),
        }
    }
}

impl Serialize for ResultJson {
    /// Inline JSON (the session wire carries it as the value itself).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ResultJson::Tree(value) => value.serialize(serializer),
            ResultJson::Text(text) | ResultJson::Cleaned(text) => {
                RawValue::from_string(text.clone())
                    .map_err(serde::ser::Error::custom)?
                    .serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for ResultJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ResultJson, D::Error> {
        Value::deserialize(deserializer).map(ResultJson::Tree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::*;
    use std::path::PathBuf;

    /// Direct serialisation equals the `Value` route's bytes for every result type (fields
    /// declared in the order of their serialised names).
    #[test]
    fn results_serialise_as_their_value_trees_do() {
        // And MCP's cleaned form is `clean_json` of the same `Value`.
        fn check<T: Serialize>(result: &T) {
            let direct = ResultJson::of(result).to_string();
            let mut through_value = serde_json::to_value(result).unwrap();
            assert_eq!(direct, through_value.to_string());
            let root = std::path::Path::new("/w");
            crate::operation::execute::clean_json(&mut through_value, root);
            match ResultJson::cleaned(result, root) {
                ResultJson::Cleaned(text) => assert_eq!(text, through_value.to_string()),
                other => panic!("{direct}: not cleaned directly: {other:?}"),
            }
        }
        let location = Location {
            column: 5,
            end_column: 10,
            end_line: 2,
            line: 2,
            line_text: Some("int twice(int x) { return \"2\" * x; } // é😀".into()),
            path: PathBuf::from("src/util.c"),
        };
        let no_text = Location {
            line_text: None,
            ..location.clone()
        };
        check(&location);
        check(&no_text);
        let at = |path: &str| Location {
            path: PathBuf::from(path),
            ..no_text.clone()
        };
        let absolute = ["/w/inside.c", "/w", "/usr/include/stdio.h", "/wx/a.c"].map(at);
        for incomplete in [None, Some("server x was still indexing".to_owned())] {
            check(&LocationsResult {
                incomplete: incomplete.clone(),
                locations: [location.clone(), no_text.clone()]
                    .into_iter()
                    .chain(absolute.clone())
                    .collect(),
                server: "clangd".into(),
            });
            check(&SymbolsResult {
                incomplete: incomplete.clone(),
                server: "s".into(),
                symbols: vec![],
            });
        }
        for range in [
            None,
            Some(Range1 {
                end_column: 1,
                end_line: 2,
                start_column: 3,
                start_line: 4,
            }),
        ] {
            check(&HoverResult {
                range,
                server: "pyright".into(),
                text: "def hello(name)\n\n**x**".into(),
            });
        }
        let symbol = Symbol {
            children: vec![],
            container: Some("C".into()),
            detail: None,
            kind: "function".into(),
            location: location.clone(),
            name: "twice".into(),
        };
        check(&Symbol {
            children: vec![symbol.clone()],
            container: None,
            detail: Some("int (int)".into()),
            ..symbol.clone()
        });
        let item = HierarchyItem {
            detail: None,
            kind: "class".into(),
            location: location.clone(),
            name: "A".into(),
            raw: serde_json::json!({"z": 1}),
        };
        for direction in [None, Some(CallDirection::Incoming)] {
            check(&CallHierarchyResult {
                calls: vec![Call {
                    call_sites: vec![location.clone()],
                    item: item.clone(),
                }],
                direction,
                incomplete: None,
                items: vec![item.clone()],
                server: "clangd".into(),
            });
        }
        check(&TypeHierarchyResult {
            direction: TypeDirection::Subtypes,
            incomplete: Some("n".into()),
            items: vec![item.clone()],
            server: "s".into(),
            types: vec![item],
        });
        for (active_parameter, documentation) in [(None, None), (Some(1), Some("d".to_owned()))] {
            check(&SignatureHelpResult {
                active_parameter,
                active_signature: Some(0),
                server: "s".into(),
                signatures: vec![Signature {
                    documentation,
                    label: "f(a, b)".into(),
                    parameters: vec!["a".into(), "b".into()],
                }],
            });
        }
    }

    #[test]
    fn both_forms_write_and_compare_alike() {
        let tree = ResultJson::Tree(serde_json::json!({"b": [1, null], "a": "x"}));
        let text = ResultJson::of(&serde_json::json!({"b": [1, null], "a": "x"}));
        assert_eq!(tree.to_string(), r#"{"a":"x","b":[1,null]}"#);
        assert_eq!(text.to_string(), tree.to_string());
        assert_eq!(tree, text);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        tree.write_to(&mut a);
        text.write_to(&mut b);
        assert_eq!(a, b);
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            serde_json::to_string(&tree).unwrap()
        );
        assert!(ResultJson::null().is_null() && ResultJson::of(&()).is_null());
        assert_eq!(
            text.into_value(),
            serde_json::json!({"a": "x", "b": [1, null]})
        );
    }
}
