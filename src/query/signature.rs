//! Normalising a `textDocument/signatureHelp` answer (LSP 3.17 §`SignatureHelp`): the active
//! signature and parameter, parameter labels given as strings or UTF-16 offsets.

use serde_json::Value;

use super::*;

/// A `SignatureHelp` answer; `None` for `null` or no signatures (LSP 3.17 §`SignatureHelp`).
///
/// The active signature is `activeSignature`, or the first when it is absent or out of range.
/// Its active parameter is the signature's own `activeParameter` when present (LSP 3.16+: it
/// overrides the top-level one; pyright sends both, with a top-level value that is wrong),
/// else the top-level `activeParameter`; absent or out of range means the first parameter, and
/// a signature without parameters has none. Indexes are 0-based.
pub fn parse_signature_help(answer: &Value, server: String) -> Option<SignatureHelpResult> {
    let raw_signatures = answer.get("signatures")?.as_array()?;
    let index_in = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|value| u32::try_from(value).ok())
    };
    let raw_active = index_in(answer, "activeSignature")
        .map(|index| index as usize)
        .filter(|index| *index < raw_signatures.len())
        .unwrap_or(0);
    let mut active_signature = None;
    let mut active_parameter = None;
    let mut signatures: Vec<Signature> = Vec::new();
    for (raw_index, raw) in raw_signatures.iter().enumerate() {
        let Some(label) = raw.get("label").and_then(Value::as_str) else {
            continue;
        };
        let documentation = raw
            .get("documentation")
            .map(hover::hover_contents_to_text)
            .filter(|text| !text.is_empty());
        let parameters: Vec<String> = raw
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|parameter| parameter_label(label, parameter.get("label")?))
            .collect();
        if raw_index == raw_active {
            active_signature = u32::try_from(signatures.len()).ok();
            active_parameter = index_in(raw, "activeParameter")
                .or_else(|| index_in(answer, "activeParameter"))
                .filter(|index| (*index as usize) < parameters.len())
                .or(if parameters.is_empty() { None } else { Some(0) });
        }
        signatures.push(Signature {
            label: label.to_owned(),
            documentation,
            parameters,
        });
    }
    if signatures.is_empty() {
        return None;
    }
    Some(SignatureHelpResult {
        signatures,
        active_signature: active_signature.or(Some(0)),
        active_parameter,
        server,
    })
}

/// A parameter label: a string, or `[start, end]` UTF-16 offsets into the signature label
/// (LSP 3.17 §`ParameterInformation`).
fn parameter_label(signature_label: &str, label: &Value) -> Option<String> {
    if let Some(text) = label.as_str() {
        return Some(text.to_owned());
    }
    let bounds = label.as_array()?;
    let start = u32::try_from(bounds.first()?.as_u64()?).ok()?;
    let end = u32::try_from(bounds.get(1)?.as_u64()?).ok()?;
    let encoding = crate::text::PositionEncoding::Utf16;
    let start = crate::text::byte_offset_of_units(signature_label, start, encoding);
    let end = crate::text::byte_offset_of_units(signature_label, end, encoding);
    signature_label
        .get(start..end)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}
