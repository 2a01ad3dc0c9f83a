//! Reading tagged JSON enums by hand: internally tagged (`{"kind": "rename", "from": …}`) and
//! externally tagged (serde's default, `"Gone"` or `{"Spawn": {"server": …}}`).
//!
//! serde's derive reads an internally tagged (`#[serde(tag = "…")]`) or flattened enum through
//! its buffered `Content` form, with a copy of every variant's field code for that form (for the
//! session wire's ops that cost the binary about 80 KB), and an externally tagged one with two
//! readers per struct variant (its object and its array form). The enums that cross lspc's own
//! session socket keep the derive for `Serialize` and are read with [`Fields`] instead, which
//! takes each field out as the derive would read it; only the array form of a struct variant,
//! which serde_json never writes, is not read. Each such reader has a round-trip test over every
//! variant.

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

impl Fields {
    /// A struct variant's content (externally tagged: the value under the variant's name).
    pub fn object(content: Value) -> Result<Fields, serde_json::Error> {
        match content {
            Value::Object(object) => Ok(Fields(object)),
            _ => Err(serde::de::Error::custom(
                "expected a struct variant's object",
            )),
        }
    }
}

/// An externally tagged enum value split into its variant name and content: `"Gone"` is
/// `("Gone", null)`, `{"Spawn": {…}}` is `("Spawn", {…})`.
pub fn external(value: Value) -> Result<(String, Value), serde_json::Error> {
    match value {
        Value::String(name) => Ok((name, Value::Null)),
        Value::Object(object) if object.len() == 1 => {
            Ok(object.into_iter().next().expect("one entry"))
        }
        _ => Err(serde::de::Error::custom(
            "expected a variant name or an object with one entry",
        )),
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
