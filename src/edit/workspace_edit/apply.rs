//! Applying text edits in memory: one document's edits at once against its text (sorted, overlaps
//! refused), converted from the server's position encoding, new text in the file's line endings.

use std::path::Path;

use super::EditError;
use crate::text::{LineIndex, PositionEncoding};

/// One text edit in LSP terms (0-based positions in the server's encoding).
#[derive(Debug, Clone)]
pub(super) struct RawTextEdit {
    pub(super) start: lsp_types::Position,
    pub(super) end: lsp_types::Position,
    pub(super) new_text: String,
}

/// The line terminator new text is normalised to: the file's first terminator (`None` when the
/// file has none, so new text is kept as sent).
pub(super) fn line_ending_of(text: &str) -> Option<&'static str> {
    let index = text.find(['\n', '\r'])?;
    match &text.as_bytes()[index..] {
        [b'\r', b'\n', ..] => Some("\r\n"),
        [b'\n', ..] => Some("\n"),
        _ => Some("\r"),
    }
}

pub(super) fn normalize_line_endings(new_text: &str, ending: Option<&str>) -> String {
    let Some(ending) = ending else {
        return new_text.to_owned();
    };
    let unified = new_text.replace("\r\n", "\n").replace('\r', "\n");
    if ending == "\n" {
        unified
    } else {
        unified.replace('\n', ending)
    }
}

/// Applies `edits` (all relative to `text`) at once: sorted by position (stable, so inserts at
/// one position keep their order), overlaps refused, new text in the file's line endings.
pub(super) fn apply_text_edits(
    path: &Path,
    text: &str,
    edits: &[RawTextEdit],
    encoding: PositionEncoding,
) -> Result<String, EditError> {
    let index = LineIndex::new(text);
    let mut resolved: Vec<(usize, usize, &RawTextEdit)> = Vec::with_capacity(edits.len());
    for edit in edits {
        let start = index.offset(text, edit.start, encoding);
        let end = index.offset(text, edit.end, encoding);
        if end < start {
            return Err(EditError::InvalidRange {
                path: path.to_path_buf(),
            });
        }
        resolved.push((start, end, edit));
    }
    crate::sorting::sort_by_key(&mut resolved, |&(start, end, _)| (start, end));
    for pair in resolved.windows(2) {
        let (_, previous_end, previous) = pair[0];
        let (next_start, _, next) = pair[1];
        if next_start < previous_end {
            let human = |position: lsp_types::Position| index.from_lsp(text, position, encoding);
            return Err(EditError::Overlap {
                path: path.to_path_buf(),
                first: human(previous.start),
                second: human(next.start),
            });
        }
    }
    let ending = line_ending_of(text);
    let mut result = String::with_capacity(text.len());
    let mut cursor = 0;
    for (start, end, edit) in resolved {
        result.push_str(&text[cursor..start]);
        result.push_str(&normalize_line_endings(&edit.new_text, ending));
        cursor = end;
    }
    result.push_str(&text[cursor..]);
    Ok(result)
}
