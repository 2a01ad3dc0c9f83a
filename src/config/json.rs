//! An order-preserving JSON value for configuration files.
//!
//! `serde_json::Value` sorts object keys (lspc does not enable `preserve_order`), but the order
//! of servers inside one `.lsp.json` is their precedence: the first server claiming an extension
//! serves requests for it. [`Json`] keeps object members in document order. Duplicate keys are
//! kept as written; [`Json::get`] returns the last one, as JSON parsers conventionally do.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// A parsed JSON document whose objects keep their members in document order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    /// Members in document order, duplicates included.
    Object(Vec<(String, Json)>),
}

/// A JSON syntax error: the message without serde_json's location suffix, and the 1-based
/// line and column (in characters, as serde_json counts them) where it was detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl Json {
    /// Parses `text` as one JSON document.
    pub(crate) fn parse(text: &str) -> Result<Json, SyntaxError> {
        serde_json::from_str::<Json>(text).map_err(|err| {
            let (line, column) = (err.line(), err.column());
            let full = err.to_string();
            let suffix = format!(" at line {line} column {column}");
            let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
            // serde_json says column 0 for an error right after a newline (an unexpected end of
            // input on an empty last line); positions lspc prints are 1-based.
            SyntaxError {
                message,
                line,
                column: column.max(1),
            }
        })
    }

    /// The last member named `key` when `self` is an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string when `self` is a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// Converts to a `serde_json::Value` (object keys sorted; later duplicates win).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => {
                let mut object = serde_json::Map::new();
                object.extend(members.iter().map(|(k, v)| (k.clone(), v.to_value())));
                Value::Object(object)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // serde_json never yields NaN or infinity from text, so `from_f64` only fails in theory.
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        Json::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Json>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            members.push((key, value));
        }
        Ok(Json::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_keys(text: &str, expected: &[&str]) {
        let Ok(Json::Object(members)) = Json::parse(text) else {
            panic!("not an object: {text}");
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, expected, "{text}");
    }

    fn check_error(text: &str, expected: (&str, usize, usize)) {
        let err = Json::parse(text).expect_err(text);
        assert_eq!(
            (err.message.as_str(), err.line, err.column),
            expected,
            "{text}"
        );
    }

    #[test]
    fn keeps_document_order() {
        check_keys(
            r#"{"zeta": 1, "alpha": 2, "mid": 3}"#,
            &["zeta", "alpha", "mid"],
        );
        check_keys(r#"{"b": 1, "a": 2, "b": 3}"#, &["b", "a", "b"]);
        check_keys("{}", &[]);
    }

    #[test]
    fn get_returns_last_duplicate() {
        let json = Json::parse(r#"{"a": 1, "a": "two"}"#).unwrap();
        assert_eq!(json.get("a"), Some(&Json::String("two".into())));
        assert_eq!(json.get("b"), None);
    }

    #[test]
    fn syntax_errors_have_location() {
        check_error("{\n  \"a\": ,\n}", ("expected value", 2, 8));
        check_error("{\"a\": 1,}", ("trailing comma", 1, 9));
        // Columns are 1-based even where serde_json says 0 (issue 10).
        check_error("", ("EOF while parsing a value", 1, 1));
        check_error("{\n  \"a\": 1\n", ("EOF while parsing an object", 3, 1));
    }

    #[test]
    fn converts_to_value() {
        let json = Json::parse(r#"{"x": [1, 2.5, null, true, "s"], "o": {}}"#).unwrap();
        assert_eq!(
            json.to_value(),
            serde_json::json!({"x": [1, 2.5, null, true, "s"], "o": {}})
        );
    }
}
