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
    let index = LineIndex::new(text);
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
            "{shown}:{}: line {} is out of range ({size})",
            at.line, at.line,
        )));
    };
    let column = match &at.target {
        ColumnOrSymbol::Column(column) => *column,
        ColumnOrSymbol::Symbol { name, occurrence } => {
            find_symbol_column(line_text, name, *occurrence)
                .map_err(|error| QueryError::Symbol(format!("{shown}:{}: {error}", at.line)))?
        }
    };
    index
        .to_lsp(text, at.line, column, encoding)
        .map_err(|error| {
            QueryError::InvalidPosition(format!(
                "{shown}:{}:{column}: {error}; the line is: `{line_text}`",
                at.line
            ))
        })
}
