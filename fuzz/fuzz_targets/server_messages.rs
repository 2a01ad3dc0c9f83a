//! Fuzz target: an arbitrary message body as a `publishDiagnostics` (lenient parsing, then
//! position conversion in every encoding against a fixed text with multi-byte characters).
//! Invariant checked: server output never makes lspc panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lspc::diagnostics::{normalize, parse_publish};
use lspc::text::{LineIndex, PositionEncoding};
use lspc::transport::decode;

const TEXT: &str = "fn main() {\n    let 😀 = \"é\";\r\n}\n\tlast";

fuzz_target!(|data: &[u8]| {
    let _ = decode(data);
    let Ok(params) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok((_uri, _version, raw)) = parse_publish(&params) else {
        return;
    };
    let index = LineIndex::new(TEXT);
    for encoding in [
        PositionEncoding::Utf8,
        PositionEncoding::Utf16,
        PositionEncoding::Utf32,
    ] {
        for diagnostic in &raw {
            let _ = normalize("fuzz", Path::new("/w/a.rs"), diagnostic, |position| {
                index.from_lsp(TEXT, position, encoding)
            });
        }
    }
});
