//! JSON with comments, as `tsconfig.json` and `pyrightconfig.json` are written: `//` and `/* */`
//! comments and trailing commas are removed (outside strings), then `serde_json` parses the rest.
//! Removed text is replaced by spaces, so serde_json's 1-based line and column still point into
//! the original file.

use serde_json::Value;

/// Parses JSONC `text`. Errors: serde_json's message with its 1-based line and column.
pub fn parse(text: &str) -> Result<Value, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(&strip(text)).map_err(|error| error.to_string())
}

/// `text` with comments and trailing commas blanked out.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    // Index in `out` (bytes) of the last comma outside strings and whether only whitespace and
    // comments followed it.
    let mut pending_comma: Option<usize> = None;
    while index < chars.len() {
        let c = chars[index];
        match c {
            '"' => {
                pending_comma = None;
                out.push(c);
                index += 1;
                while index < chars.len() {
                    let c = chars[index];
                    out.push(c);
                    index += 1;
                    if c == '\\' && index < chars.len() {
                        out.push(chars[index]);
                        index += 1;
                    } else if c == '"' {
                        break;
                    }
                }
            }
            '/' if chars.get(index + 1) == Some(&'/') => {
                while index < chars.len() && chars[index] != '\n' {
                    out.push(' ');
                    index += 1;
                }
            }
            '/' if chars.get(index + 1) == Some(&'*') => {
                out.push_str("  ");
                index += 2;
                while index < chars.len()
                    && !(chars[index] == '*' && chars.get(index + 1) == Some(&'/'))
                {
                    out.push(if chars[index] == '\n' { '\n' } else { ' ' });
                    index += 1;
                }
                if index < chars.len() {
                    out.push_str("  ");
                    index += 2;
                }
            }
            ',' => {
                pending_comma = Some(out.len());
                out.push(c);
                index += 1;
            }
            '}' | ']' => {
                if let Some(at) = pending_comma.take() {
                    out.replace_range(at..at + 1, " ");
                }
                out.push(c);
                index += 1;
            }
            c if c.is_whitespace() => {
                out.push(c);
                index += 1;
            }
            c => {
                pending_comma = None;
                out.push(c);
                index += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(input: &str, expected: Value) {
        assert_eq!(parse(input), Ok(expected), "{input}");
    }

    #[test]
    fn comments_and_trailing_commas() {
        check(r#"{"a": 1}"#, json!({"a": 1}));
        check(
            "{\n // c\n \"a\": [1, 2,], /* x\n y */ \"b\": \"//not\",\n}",
            json!({"a": [1, 2], "b": "//not"}),
        );
        check(r#"{"a": "q\"//", }"#, json!({"a": "q\"//"}));
        // Blanked comments keep serde_json's 1-based line and column pointing into the file.
        let error = parse("{ /* c */\n  \"a\": 1 2\n}").unwrap_err();
        assert_eq!(error, "expected `,` or `}` at line 2 column 10");
    }
}
