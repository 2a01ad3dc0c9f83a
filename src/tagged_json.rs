//! Reading internally tagged JSON enums by hand (`{"kind": "rename", "from": …, "to": …}`).
//!
//! serde's derive reads an internally tagged (`#[serde(tag = "…")]`) or flattened enum through
//! its buffered `Content` form, with a copy of every variant's field code for that form; for the
//! session wire's ops that cost the binary about 80 KB. The types here keep the derive for
//! `Serialize` and read their JSON object with [`Fields`] instead, which takes each field out as
//! the derive would read it. Each such reader has a round-trip test over every variant.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The fields of one JSON object, taken out by name as serde's derive reads them: a missing or
/// `null` optional field is `None`, a missing required one is a "missing field" error, fields
/// nobody asks for are ignored.
pub struct Fields(pub Map<String, Value>);

impl Fields {
    pub fn required<T: DeserializeOwned>(
        &mut self,
        name: &'static str,
    ) -> Result<T, serde_json::Error> {
        match self.0.remove(name) {
            Some(value) => T::deserialize(value),
            None => Err(serde::de::Error::missing_field(name)),
        }
    }

    pub fn optional<T: DeserializeOwned>(
        &mut self,
        name: &'static str,
    ) -> Result<Option<T>, serde_json::Error> {
        match self.0.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::deserialize(value).map(Some),
        }
    }
}

/// The error for an enum tag that names no variant (`names`: the ones there are), worded as
/// serde's derive words it.
pub fn unknown_variant(tag: &str, names: &'static [&'static str]) -> serde_json::Error {
    serde::de::Error::unknown_variant(tag, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_as_the_derive_reads_them() {
        let object = serde_json::json!({"a": 1, "b": null, "c": "x"});
        let Value::Object(object) = object else {
            unreachable!()
        };
        let mut fields = Fields(object);
        assert_eq!(fields.required::<u32>("a").unwrap(), 1);
        assert_eq!(fields.optional::<u32>("b").unwrap(), None);
        assert_eq!(fields.optional::<u32>("z").unwrap(), None);
        assert_eq!(
            fields.required::<u32>("z").unwrap_err().to_string(),
            "missing field `z`"
        );
        assert!(fields.required::<u32>("c").is_err());
        assert_eq!(
            unknown_variant("x", &["a", "b"]).to_string(),
            "unknown variant `x`, expected `a` or `b`"
        );
    }
}
