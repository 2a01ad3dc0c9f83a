//! Resolving a user position (1-based line; a 1-based column in characters, or a symbol on the
//! line) in a document's text into an LSP position in the server's encoding, with errors that
//! show the line.

use crate::text::{find_symbol_column, LineIndex};

use super::*;

/// Convert a user position in `text` into an LSP position in `encoding`. Errors show `shown`
/// (the file as the user sees it) and the line's text.
pub fn resolve_position(
    text: &str,
    at: &TextPosition,
    encoding: crate::text::PositionEncoding,
    shown: &str,
) -> Result<lsp_types::Position, QueryError> {
    resolve_position_in(text, &LineIndex::new(text), at, encoding, &|| {
        shown.to_owned()
    })
}

/// [`resolve_position`] with `text`'s line index already built (the engine keeps one per
/// document); `shown` is asked for only when the position is an error.
pub(super) fn resolve_position_in(
    text: &str,
    index: &LineIndex,
    at: &TextPosition,
    encoding: crate::text::PositionEncoding,
    shown: &dyn Fn() -> String,
) -> Result<lsp_types::Position, QueryError> {
    let line_text = at
        .line
        .checked_sub(1)
        .and_then(|line0| index.line_text(text, line0));
    let Some(line_text) = line_text else {
        // Count lines as an editor shows them: the empty "line" after a final newline is a
        // valid position but not a line the user would count.
        let shown_lines = if text.ends_with('\n') {
            index.n_lines().saturating_sub(1)
        } else {
            index.n_lines()
        };
        let size = match shown_lines {
            _ if text.is_empty() => "the file is empty".to_owned(),
            1 => "the file has 1 line".to_owned(),
            lines => format!("the file has {lines} lines"),
        };
        return Err(QueryError::InvalidPosition(format!(
            "{}:{}: line {} is out of range ({size})",
            shown(),
            at.line,
            at.line,
        )));
    };
    let column = match &at.target {
        ColumnOrSymbol::Column(column) => *column,
        ColumnOrSymbol::Symbol { name, occurrence } => {
            find_symbol_column(line_text, name, *occurrence)
                .map_err(|error| QueryError::Symbol(format!("{}:{}: {error}", shown(), at.line)))?
        }
    };
    index
        .to_lsp(text, at.line, column, encoding)
        .map_err(|error| {
            QueryError::InvalidPosition(format!(
                "{}:{}:{column}: {error}; the line is: `{line_text}`",
                shown(),
                at.line
            ))
        })
}
