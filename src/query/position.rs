//! Reading a location as the command line writes it (`LOC`): `FILE:LINE:COLUMN`, or `FILE:LINE`
//! with a symbol name, into a [`TextPosition`] (1-based line, 1-based column in Unicode
//! characters). Every command that takes a LOC parses it here.

use std::path::PathBuf;

use super::{ColumnOrSymbol, TextPosition};

/// Parse a LOC: `FILE:LINE:COLUMN`, or `FILE:LINE` with `symbol` (and optional 1-based
/// `occurrence`, default 1). Lines and columns are 1-based, columns in Unicode characters; the
/// file may itself contain `:` (the numbers are taken from the end).
pub fn parse_loc(
    loc: &str,
    symbol: Option<&str>,
    occurrence: Option<u32>,
) -> Result<TextPosition, String> {
    let expected =
        || format!("expected LOC as FILE:LINE:COLUMN or FILE:LINE with --symbol NAME, got {loc:?}");
    let number = |text: &str| -> Option<u32> {
        if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    };
    let mut parts = loc.rsplitn(3, ':');
    let last = parts.next().unwrap_or("");
    let middle = parts.next();
    let first = parts.next();
    let (file, line, column) = match (first, middle.and_then(number), number(last)) {
        (Some(file), Some(line), Some(column)) => (file.to_owned(), line, Some(column)),
        (_, _, Some(line)) => match middle {
            // `FILE:LINE` where FILE may hold colons: everything before the last `:`.
            Some(_) => (loc[..loc.len() - last.len() - 1].to_owned(), line, None),
            None => return Err(expected()),
        },
        _ => return Err(expected()),
    };
    if file.is_empty() {
        return Err(expected());
    }
    if occurrence.is_some() && symbol.is_none() {
        return Err("--occurrence needs --symbol".to_owned());
    }
    let target = match (column, symbol) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{loc:?} already has a column; give FILE:LINE with --symbol, or no --symbol"
            ))
        }
        (Some(column), None) => ColumnOrSymbol::Column(column),
        (None, Some(name)) => ColumnOrSymbol::Symbol {
            name: name.to_owned(),
            occurrence: occurrence.unwrap_or(1),
        },
        (None, None) => {
            // `a.py:+1:1` would otherwise read as file `a.py:+1`, line 1: name the bad number.
            if let Some(bad) = middle.filter(|middle| number(middle).is_none()) {
                if first.is_some() && bad.parse::<f64>().is_ok() {
                    return Err(format!(
                        "{loc:?}: line {bad:?} is not a whole number from 1 (give FILE:LINE:COLUMN)"
                    ));
                }
            }
            return Err(format!(
                "{loc:?} has no column: give FILE:LINE:COLUMN, or FILE:LINE with --symbol NAME"
            ));
        }
    };
    Ok(TextPosition {
        file: PathBuf::from(file),
        line,
        target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locs_parse_into_positions() {
        let check = |loc: &str,
                     symbol: Option<&str>,
                     occurrence: Option<u32>,
                     expected: Result<(&str, u32, ColumnOrSymbol), &str>| {
            let got = parse_loc(loc, symbol, occurrence)
                .map(|position| (position.file, position.line, position.target));
            let expected = expected
                .map(|(file, line, target)| (PathBuf::from(file), line, target))
                .map_err(str::to_owned);
            assert_eq!(got, expected, "{loc}");
        };
        let symbol = |name: &str, occurrence| ColumnOrSymbol::Symbol {
            name: name.to_owned(),
            occurrence,
        };
        check(
            "a.py:3:19",
            None,
            None,
            Ok(("a.py", 3, ColumnOrSymbol::Column(19))),
        );
        check(
            "/w/src/a.py:1:1",
            None,
            None,
            Ok(("/w/src/a.py", 1, ColumnOrSymbol::Column(1))),
        );
        check("a.py:3", Some("a"), None, Ok(("a.py", 3, symbol("a", 1))));
        check(
            "a.py:3",
            Some("a"),
            Some(2),
            Ok(("a.py", 3, symbol("a", 2))),
        );
        // A file name with a colon: the numbers come from the end.
        check(
            "we:ird.py:2:4",
            None,
            None,
            Ok(("we:ird.py", 2, ColumnOrSymbol::Column(4))),
        );
        check(
            "we:ird.py:2",
            Some("x"),
            None,
            Ok(("we:ird.py", 2, symbol("x", 1))),
        );
        check(
            "a.py",
            None,
            None,
            Err("expected LOC as FILE:LINE:COLUMN or FILE:LINE with --symbol NAME, got \"a.py\""),
        );
        check(
            ":3:4",
            None,
            None,
            Err("expected LOC as FILE:LINE:COLUMN or FILE:LINE with --symbol NAME, got \":3:4\""),
        );
        check(
            "a.py:3",
            None,
            None,
            Err("\"a.py:3\" has no column: give FILE:LINE:COLUMN, or FILE:LINE with --symbol NAME"),
        );
        check(
            "a.py:3:1",
            Some("a"),
            None,
            Err("\"a.py:3:1\" already has a column; give FILE:LINE with --symbol, or no --symbol"),
        );
        check(
            "a.py:3:1",
            None,
            Some(2),
            Err("--occurrence needs --symbol"),
        );
        check(
            "a.py:x:1",
            None,
            None,
            Err("\"a.py:x:1\" has no column: give FILE:LINE:COLUMN, or FILE:LINE with --symbol NAME"),
        );
        check(
            "a.py:+1:1",
            None,
            None,
            Err("\"a.py:+1:1\": line \"+1\" is not a whole number from 1 (give FILE:LINE:COLUMN)"),
        );
        check(
            "a.py:-2:1",
            None,
            None,
            Err("\"a.py:-2:1\": line \"-2\" is not a whole number from 1 (give FILE:LINE:COLUMN)"),
        );
    }
}
