//! Typed, borrowed parsing of the instant queries' answers (issue 15): a hover's text and range
//! and a definition's or references' locations read straight from the server's raw `result`
//! text, with no `Value` tree in between.
//!
//! Invariant: each parser accepts only the shapes it reads exactly as the `Value` route does
//! (`hover.rs`, `locations.rs`) and gives the same result for them; anything else (a member of
//! an unexpected type, a duplicate key, an entry the `Value` route would skip) makes it return
//! `None`, and the caller takes the `Value` route, so malformed answers keep their exact
//! behaviour. Strings are borrowed unless they hold escapes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::hover::{code_to_text, join_parts, markdown_to_text, markup_to_text};
use super::locations::RawLocation;

/// A hover answer's plain text and LSP range (`("", None)` for `null` or no contents), or
/// `None` to take the `Value` route.
pub(super) fn hover(raw: &str) -> Option<(String, Option<lsp_types::Range>)> {
    let answer: Option<HoverAnswer> = serde_json::from_str(raw).ok()?;
    let Some(answer) = answer else {
        return Some((String::new(), None));
    };
    let text = answer
        .contents
        .map(|contents| contents.0)
        .unwrap_or_default();
    Some((text, answer.range))
}

/// A definition-like or references answer's locations in the server's order (`null` is none),
/// or `None` to take the `Value` route.
pub(super) fn locations(raw: &str) -> Option<Vec<RawLocation>> {
    serde_json::from_str::<Locations>(raw)
        .ok()
        .map(|locations| locations.0)
}

/// The error that sends a parse back to the `Value` route.
fn unexpected<E: de::Error>(what: &str) -> E {
    E::custom(format_args!("not read by the typed route: {what}"))
}

/// `Hover` (LSP 3.17 §`Hover`) as far as lspc reads it.
struct HoverAnswer {
    contents: Option<HoverText>,
    range: Option<lsp_types::Range>,
}

impl<'de> Deserialize<'de> for HoverAnswer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HoverAnswer, D::Error> {
        struct HoverVisitor;
        impl<'de> Visitor<'de> for HoverVisitor {
            type Value = HoverAnswer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a hover object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HoverAnswer, A::Error> {
                let (mut contents, mut range) = (None, None);
                let (mut seen_contents, mut seen_range) = (false, false);
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "contents" if !seen_contents => {
                            seen_contents = true;
                            contents = map.next_value::<Option<HoverText>>()?;
                        }
                        "range" if !seen_range => {
                            seen_range = true;
                            range = map.next_value::<Option<lsp_types::Range>>()?;
                        }
                        "contents" | "range" => return Err(unexpected("a duplicate key")),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(HoverAnswer { contents, range })
            }
        }
        deserializer.deserialize_map(HoverVisitor)
    }
}

/// A hover's `contents` rendered as text: `MarkupContent`, a `MarkedString` or an array of them
/// (`hover::hover_contents_to_text`'s shapes).
struct HoverText(String);

impl<'de> Deserialize<'de> for HoverText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HoverText, D::Error> {
        struct ContentsVisitor;
        impl<'de> Visitor<'de> for ContentsVisitor {
            type Value = HoverText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("hover contents")
            }
            fn visit_str<E: de::Error>(self, markdown: &str) -> Result<HoverText, E> {
                Ok(HoverText(markdown_to_text(markdown)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<HoverText, A::Error> {
                let mut parts = Vec::new();
                while let Some(item) = items.next_element::<MarkedString>()? {
                    parts.push(item.0);
                }
                Ok(HoverText(join_parts(parts)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<HoverText, A::Error> {
                let (kind, value) = kind_and_value(map)?;
                let value = value.as_deref().unwrap_or("");
                Ok(HoverText(join_parts(vec![match kind {
                    // `MarkupContent` (a `kind` member, even `null`, is read as one).
                    Some(kind) => markup_to_text(kind.as_deref(), value),
                    // A `MarkedString` `{language, value}`.
                    None => code_to_text(value),
                }])))
            }
        }
        deserializer.deserialize_any(ContentsVisitor)
    }
}

/// One `MarkedString` of an array: markdown text, or `{language, value}` (a code block; its
/// `kind`, if any, is not looked at).
struct MarkedString(String);

impl<'de> Deserialize<'de> for MarkedString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<MarkedString, D::Error> {
        struct MarkedVisitor;
        impl<'de> Visitor<'de> for MarkedVisitor {
            type Value = MarkedString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a marked string")
            }
            fn visit_str<E: de::Error>(self, markdown: &str) -> Result<MarkedString, E> {
                Ok(MarkedString(markdown_to_text(markdown)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MarkedString, A::Error> {
                let (_, value) = kind_and_value(map)?;
                Ok(MarkedString(code_to_text(value.as_deref().unwrap_or(""))))
            }
        }
        deserializer.deserialize_any(MarkedVisitor)
    }
}

/// An object's `kind` (`Some(None)`: present but `null`) and `value` (`None` when absent or
/// `null`); other members are skipped.
#[allow(clippy::type_complexity)]
fn kind_and_value<'de, A: MapAccess<'de>>(
    mut map: A,
) -> Result<(Option<Option<Cow<'de, str>>>, Option<Cow<'de, str>>), A::Error> {
    let (mut kind, mut value) = (None, None);
    let mut seen_value = false;
    while let Some(key) = map.next_key::<Text<'de>>()? {
        match key.0.as_ref() {
            "kind" if kind.is_none() => kind = Some(map.next_value::<Option<Text<'de>>>()?),
            "value" if !seen_value => {
                seen_value = true;
                value = map.next_value::<Option<Text<'de>>>()?;
            }
            "kind" | "value" => return Err(unexpected("a duplicate key")),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok((
        kind.map(|kind| kind.map(|text| text.0)),
        value.map(|text| text.0),
    ))
}

/// A JSON string, borrowed when it holds no escapes (serde's own `Cow<str>` always copies).
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text<'de>, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// `Location | Location[] | LocationLink[] | null` (LSP 3.17 §`textDocument_definition`).
struct Locations(Vec<RawLocation>);

impl<'de> Deserialize<'de> for Locations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Locations, D::Error> {
        struct LocationsVisitor;
        impl<'de> Visitor<'de> for LocationsVisitor {
            type Value = Locations;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("locations")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Locations, E> {
                Ok(Locations(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Locations, A::Error> {
                let mut locations = Vec::new();
                while let Some(location) = items.next_element::<OneLocation>()? {
                    locations.push(location.0);
                }
                Ok(Locations(locations))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Locations, A::Error> {
                Ok(Locations(vec![one_location(map)?]))
            }
        }
        deserializer.deserialize_any(LocationsVisitor)
    }
}

/// One `Location` or `LocationLink` of an array.
struct OneLocation(RawLocation);

impl<'de> Deserialize<'de> for OneLocation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<OneLocation, D::Error> {
        struct OneVisitor;
        impl<'de> Visitor<'de> for OneVisitor {
            type Value = OneLocation;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a location")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OneLocation, A::Error> {
                one_location(map).map(OneLocation)
            }
        }
        deserializer.deserialize_map(OneVisitor)
    }
}

/// A `Location` (`uri` + `range`) or a `LocationLink` (`targetUri` + `targetSelectionRange`,
/// else `targetRange`); one the `Value` route would skip is an error here.
fn one_location<'de, A: MapAccess<'de>>(mut map: A) -> Result<RawLocation, A::Error> {
    #[derive(Default)]
    struct Members<'a> {
        uri: Option<Option<Text<'a>>>,
        range: Option<Option<lsp_types::Range>>,
        target_uri: Option<Option<Text<'a>>>,
        target_selection_range: Option<Option<lsp_types::Range>>,
        target_range: Option<Option<lsp_types::Range>>,
    }
    fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
        slot: &mut Option<Option<T>>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if slot.is_some() {
            return Err(unexpected("a duplicate key"));
        }
        *slot = Some(map.next_value::<Option<T>>()?);
        Ok(())
    }
    let mut members = Members::default();
    while let Some(key) = map.next_key::<Text<'de>>()? {
        match key.0.as_ref() {
            "uri" => once(&mut members.uri, &mut map)?,
            "range" => once(&mut members.range, &mut map)?,
            "targetUri" => once(&mut members.target_uri, &mut map)?,
            "targetSelectionRange" => once(&mut members.target_selection_range, &mut map)?,
            "targetRange" => once(&mut members.target_range, &mut map)?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    let flat = |member: Option<Option<lsp_types::Range>>| member.flatten();
    let (uri, range) = match members.target_uri.flatten() {
        Some(target_uri) => (
            Some(target_uri),
            flat(members.target_selection_range).or(flat(members.target_range)),
        ),
        None => (members.uri.flatten(), flat(members.range)),
    };
    match (uri, range) {
        (Some(uri), Some(range)) => Ok(RawLocation {
            uri: uri.0.into_owned(),
            range,
        }),
        _ => Err(unexpected("a location the value route skips")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The typed hover reads what the `Value` route reads, or declines.
    fn check_hover(answer: Value, typed: bool) {
        let raw = answer.to_string();
        let through_value = {
            let text = answer
                .get("contents")
                .map(super::super::hover::hover_contents_to_text)
                .unwrap_or_default();
            let range = answer
                .get("range")
                .and_then(super::super::locations::parse_range);
            (text, range)
        };
        match hover(&raw) {
            Some((text, range)) => {
                assert!(typed, "read by the typed route: {raw}");
                assert_eq!(text, through_value.0, "{raw}");
                if !text.is_empty() {
                    assert_eq!(range, through_value.1, "{raw}");
                }
            }
            None => assert!(!typed, "declined by the typed route: {raw}"),
        }
    }

    #[test]
    fn hovers_read_as_the_value_route_reads_them() {
        let range =
            json!({"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 9}});
        check_hover(json!(null), true);
        check_hover(json!({"contents": "hello at 0:4"}), true);
        check_hover(json!({"contents": "`a`: *int*", "range": range}), true);
        check_hover(
            json!({"contents": {"kind": "markdown", "value": "```python\n(variable) a: int\n```"}, "range": range}),
            true,
        );
        check_hover(
            json!({"contents": {"kind": "plaintext", "value": "int x  \n\n\n"}}),
            true,
        );
        check_hover(json!({"contents": {"kind": null, "value": "**x**"}}), true);
        check_hover(json!({"contents": {"kind": "markdown"}}), true);
        check_hover(
            json!({"contents": {"kind": "markdown", "value": null}}),
            true,
        );
        check_hover(
            json!({"contents": {"language": "c", "value": "int twice(int x)"}}),
            true,
        );
        check_hover(
            json!({"contents": [{"language": "python", "value": "def f()"}, "", "Docs with `code`", {"kind": "markdown", "value": "**k**"}]}),
            true,
        );
        check_hover(json!({"contents": []}), true);
        check_hover(json!({"contents": null, "range": range}), true);
        check_hover(json!({}), true);
        check_hover(
            json!({"contents": "x", "range": null, "other": [1, {"a": 2}]}),
            true,
        );
        check_hover(
            json!({"contents": "esc\u{e9}\\\"q\"", "range": range}),
            true,
        );
        // Declined: the `Value` route's tolerance decides.
        check_hover(json!({"contents": 42}), false);
        check_hover(json!({"contents": [42]}), false);
        check_hover(json!({"contents": [null]}), false);
        check_hover(json!({"contents": {"kind": 1, "value": "x"}}), false);
        check_hover(json!({"contents": {"value": 7}}), false);
        check_hover(json!({"contents": "x", "range": {"start": 1}}), false);
        check_hover(json!({"contents": "x", "range": "whole"}), false);
        check_hover(json!([1]), false);
        check_hover(json!("text"), false);
        assert_eq!(hover(r#"{"contents":"a","contents":"b"}"#), None);
        assert_eq!(hover("{"), None);
    }

    fn check_locations(answer: Value, typed: bool) {
        let raw = answer.to_string();
        match locations(&raw) {
            Some(found) => {
                assert!(typed, "read by the typed route: {raw}");
                assert_eq!(
                    found,
                    super::super::locations::parse_locations(&answer),
                    "{raw}"
                );
            }
            None => assert!(!typed, "declined by the typed route: {raw}"),
        }
    }

    #[test]
    fn locations_read_as_the_value_route_reads_them() {
        let range =
            json!({"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}});
        let other =
            json!({"start": {"line": 7, "character": 0}, "end": {"line": 9, "character": 1}});
        check_locations(json!(null), true);
        check_locations(json!([]), true);
        check_locations(json!({"uri": "file:///w/a.c", "range": range}), true);
        check_locations(
            json!([{"uri": "file:///w/a.c", "range": range}, {"uri": "file:///w/b%20c.h", "range": other}]),
            true,
        );
        check_locations(
            json!([{"targetUri": "file:///w/a.ts", "targetRange": other, "targetSelectionRange": range, "originSelectionRange": other}]),
            true,
        );
        check_locations(
            json!([{"targetUri": "file:///w/a.ts", "targetRange": other}]),
            true,
        );
        check_locations(
            json!([{"targetUri": "file:///w/a.ts", "targetRange": other, "targetSelectionRange": null}]),
            true,
        );
        check_locations(
            json!([{"targetUri": null, "uri": "file:///w/a.c", "range": range}]),
            true,
        );
        check_locations(
            json!([{"uri": "file:///w/a.c", "range": range, "targetRange": "ignored"}]),
            false,
        );
        // Declined: entries the `Value` route skips or types it tolerates.
        check_locations(json!([{"uri": "file:///w/a.c"}]), false);
        check_locations(json!([{"range": range}]), false);
        check_locations(json!([{"uri": 5, "range": range}]), false);
        check_locations(
            json!([{"targetUri": "file:///a", "targetRange": null}]),
            false,
        );
        check_locations(json!([{"uri": "file:///a", "range": {"start": 1}}]), false);
        check_locations(json!([1, {"uri": "file:///w/a.c", "range": range}]), false);
        check_locations(json!("file:///w/a.c"), false);
        check_locations(json!(3), false);
        assert_eq!(
            locations(
                r#"[{"uri":"file:///a","uri":"file:///b","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}]"#
            ),
            None
        );
    }
}
