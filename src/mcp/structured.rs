//! An instant tool's structured content written straight from its result's JSON text (issue 15:
//! parsing the text into a `Value`, cleaning it and serialising it again cost the server's reader
//! about 7k instructions per MCP hover).
//!
//! [`cleaned`] copies the text as [`crate::operation::execute::clean_json`] would leave it, one
//! pass, no tree: object members that are `null` are dropped and `path`/`file` strings go through
//! [`crate::operation::execute::display_path`]; every value is written back by `serde_json`, so
//! the bytes are those of the `Value` route (strings escaped, numbers formatted the same way).
//!
//! Invariant: the answer is the `Value` route's bytes or `None`. The `Value` route writes object
//! keys sorted; a result's text has them sorted already (its types declare their fields in that
//! order, `query::result_json`), and an object whose keys are not strictly increasing (out of
//! order, or a duplicate, which a `Value` would collapse) makes [`cleaned`] decline.

use std::cell::Cell;
use std::fmt;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::operation::execute::display_path;
use crate::query::typed_answer::Text;

/// `text` (one JSON value) cleaned as `clean_json` cleans a `Value`, serialised compact; `None`
/// when it is not valid JSON or an object's keys are not strictly increasing, and, with
/// `required`, unless it is an object holding that member (not `null`).
#[cfg(test)]
fn cleaned(text: &str, root: &Path, required: Option<&str>) -> Option<String> {
    let mut out = Vec::new();
    cleaned_into(text, root, required, &mut out).then(|| String::from_utf8(out).unwrap())
}

/// [`cleaned`], appended to `out`; `false` (and `out` as it was) when declined.
pub(super) fn cleaned_into(
    text: &str,
    root: &Path,
    required: Option<&str>,
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    let written = clean_value(text, root, required, out);
    if !written {
        out.truncate(start);
    }
    written
}

fn clean_value(text: &str, root: &Path, required: Option<&str>, out: &mut Vec<u8>) -> bool {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let found = Cell::new(false);
    let read = Clean {
        root,
        out,
        path_value: false,
        required: required.map(|key| (key, &found)),
    }
    .deserialize(&mut deserializer);
    read.is_ok() && deserializer.end().is_ok() && (required.is_none() || found.get())
}

/// Writes one value into `out`; its result says whether the value was `null`.
struct Clean<'a> {
    root: &'a Path,
    out: &'a mut Vec<u8>,
    /// The value of a `path` or `file` member: a string is shown relative to the root.
    path_value: bool,
    /// At the top only: the member whose presence is reported, and where.
    required: Option<(&'a str, &'a Cell<bool>)>,
}

impl Clean<'_> {
    fn write<T: serde::Serialize + ?Sized>(self, value: &T) -> Result<bool, String> {
        serde_json::to_writer(&mut *self.out, value).map_err(|error| error.to_string())?;
        Ok(false)
    }
}

impl<'de> DeserializeSeed<'de> for Clean<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Clean<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<bool, E> {
        self.out.extend_from_slice(b"null");
        Ok(true)
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<bool, E> {
        self.write(&value).map_err(E::custom)
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<bool, E> {
        self.write(&value).map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<bool, E> {
        self.write(&value).map_err(E::custom)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<bool, E> {
        // As a `Value` holds it: a non-finite float (which JSON text cannot carry) is `null`.
        self.write(&serde_json::Number::from_f64(value))
            .map_err(E::custom)
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<bool, E> {
        if self.path_value {
            let shown = display_path(self.root, Path::new(value));
            return self.write(shown.as_str()).map_err(E::custom);
        }
        self.write(value).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<bool, A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            let item = Clean {
                root: self.root,
                out: &mut *self.out,
                path_value: false,
                required: None,
            };
            if items.next_element_seed(item)?.is_none() {
                // Nothing came after the separator.
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<bool, A::Error> {
        self.out.push(b'{');
        let mut previous: Option<Text<'de>> = None;
        let mut written = 0usize;
        while let Some(key) = members.next_key::<Text<'de>>()? {
            if previous
                .as_ref()
                .is_some_and(|previous| previous.0.as_ref() >= key.0.as_ref())
            {
                return Err(serde::de::Error::custom(
                    "object keys not strictly increasing",
                ));
            }
            let mark = self.out.len();
            if written > 0 {
                self.out.push(b',');
            }
            serde_json::to_writer(&mut *self.out, key.0.as_ref())
                .map_err(serde::de::Error::custom)?;
            self.out.push(b':');
            let value = Clean {
                root: self.root,
                out: &mut *self.out,
                path_value: key.0 == "path" || key.0 == "file",
                required: None,
            };
            if members.next_value_seed(value)? {
                // A `null` member is dropped, as `clean_json` drops it.
                self.out.truncate(mark);
            } else {
                written += 1;
                if let Some((required, found)) = self.required {
                    if key.0 == required {
                        found.set(true);
                    }
                }
            }
            previous = Some(key);
        }
        self.out.push(b'}');
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::execute::clean_json;
    use serde_json::Value;

    /// The text is cleaned exactly as `clean_json` cleans its `Value` (same bytes), or declined.
    #[test]
    fn cleaned_text_is_the_value_routes_bytes() {
        let root = Path::new("/w");
        let check = |text: &str| {
            let mut value: Value = serde_json::from_str(text).unwrap();
            clean_json(&mut value, root);
            assert_eq!(
                cleaned(text, root, None).as_deref(),
                Some(value.to_string().as_str()),
                "{text}"
            );
        };
        check("null");
        check(r#"{"range":null,"server":"fx","text":"greet \"at\" 0:4\n\u00e9😀\u2028"}"#);
        check(r#"{"a":null,"b":null}"#);
        check(
            r#"{"a":[null,1,-2,3.5,1e300,18446744073709551615,18446744073709551616,true,{}],"b":null}"#,
        );
        check(
            r#"{"locations":[{"column":1,"endColumn":6,"file":"/w/a.c","lineText":null,"path":"/w/src/a.c"},{"path":"/usr/include/stdio.h"},{"path":7},{"path":{"file":"/w/x"}}],"server":"clangd"}"#,
        );
        check(r#"[{"path":"/w"},{"file":"/w/"},"/w/a"]"#);
        check(r#"{"":1,"a":{"z":null,"zz":[]},"b":"\ud83d\ude00"}"#);
        check(r#" {"x" : [ ] , "y" : { } } "#);
        check("-0.0");
        check(r#""path""#);
        // Declined: keys out of order or repeated, bad or trailing text.
        for text in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"y":1,"x":2}}"#,
            r#"{"a":1} x"#,
            r#"{"a":"#,
            "",
        ] {
            assert_eq!(cleaned(text, root, None), None, "{text}");
        }
        // With a required member: only an object holding it, not null.
        let required = |text: &str| cleaned(text, root, Some("locations"));
        assert_eq!(
            required(r#"{"locations":[],"server":null}"#).as_deref(),
            Some(r#"{"locations":[]}"#)
        );
        assert_eq!(required(r#"{"locations":null,"server":"s"}"#), None);
        assert_eq!(required(r#"{"server":"s"}"#), None);
        assert_eq!(required(r#"{"a":{"locations":[]}}"#), None);
        assert_eq!(required(r#"[{"locations":[]}]"#), None);
        assert_eq!(required("null"), None);
    }
}
