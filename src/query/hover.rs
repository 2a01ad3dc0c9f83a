//! Hover contents (LSP 3.17 §`Hover`) rendered as plain text.
//!
//! A server may send `MarkupContent` (`{kind, value}`), a `MarkedString` (a markdown string or
//! `{language, value}`), or an array of `MarkedString`s. Markdown is rendered lightly: code fences
//! are dropped but the code inside them is kept verbatim, inline backticks and `**`/`*` emphasis
//! are removed, backslash escapes and a few HTML entities (which pyright uses) are undone, and
//! runs of blank lines collapse to one. Underscores are left alone: they are far more often part
//! of identifiers (`snake_case`) than emphasis. The result never starts or ends with blank lines.

use serde_json::Value;

/// Plain text of a hover's `contents` value; empty when there is nothing to show (`""`, `[]`,
/// `null`, an unknown shape).
pub fn hover_contents_to_text(contents: &Value) -> String {
    let parts: Vec<String> = match contents {
        Value::Array(items) => items.iter().map(marked_string_to_text).collect(),
        Value::Object(object) if object.contains_key("kind") => {
            let value = object.get("value").and_then(Value::as_str).unwrap_or("");
            vec![markup_to_text(
                object.get("kind").and_then(Value::as_str),
                value,
            )]
        }
        other => vec![marked_string_to_text(other)],
    };
    join_parts(parts)
}

/// One `MarkedString`: a markdown string, or `{language, value}` meaning a code block.
fn marked_string_to_text(item: &Value) -> String {
    match item {
        Value::String(markdown) => markdown_to_text(markdown),
        Value::Object(object) => {
            code_to_text(object.get("value").and_then(Value::as_str).unwrap_or(""))
        }
        _ => String::new(),
    }
}

/// Markdown as plain text (see the module doc for what is rendered).
pub fn markdown_to_text(markdown: &str) -> String {
    // Without any character that starts markdown syntax here (fences, emphasis, escapes,
    // entities, headings, rules), rendering only tidies the text (issue 15: a plain hover, as
    // the fixture server sends, cost 5k instructions through the full renderer).
    if !markdown.contains(['`', '~', '*', '\\', '&', '#', '-', '_']) {
        return tidy(markdown);
    }
    render_markdown(markdown)
}

/// [`markdown_to_text`]'s full renderer.
fn render_markdown(markdown: &str) -> String {
    // The rendered lines, joined by `\n` as they come (one buffer, issue 15).
    let mut joined = String::with_capacity(markdown.len());
    let mut first = true;
    let mut next_line = |joined: &mut String| {
        if !std::mem::take(&mut first) {
            joined.push('\n');
        }
    };
    // The fence that opened the current code block (``` or ~~~, with its length).
    let mut open_fence: Option<String> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        match &open_fence {
            Some(fence) => {
                // A closing fence uses the same marker, at least as many, and nothing after it.
                let marker = fence.chars().next().unwrap_or('`');
                let count = trimmed.chars().take_while(|&ch| ch == marker).count();
                if count >= fence.len() && trimmed[count..].trim().is_empty() {
                    open_fence = None;
                } else {
                    next_line(&mut joined);
                    joined.push_str(line.trim_end());
                }
            }
            None => {
                if let Some(fence) = fence_of(trimmed) {
                    open_fence = Some(fence);
                } else if is_rule(trimmed) {
                    next_line(&mut joined);
                } else {
                    next_line(&mut joined);
                    render_inline(strip_heading(line.trim_end()), &mut joined);
                }
            }
        }
    }
    tidy(&joined)
}

/// The fence string (e.g. "```") when `line` opens a fenced code block.
fn fence_of(line: &str) -> Option<String> {
    for marker in ['`', '~'] {
        let count = line.chars().take_while(|&ch| ch == marker).count();
        if count >= 3 {
            return Some(std::iter::repeat_n(marker, count).collect());
        }
    }
    None
}

/// The text of an ATX heading (`### function twice` -> `function twice`), else the line.
fn strip_heading(line: &str) -> &str {
    let trimmed = line.trim_start();
    let hashes = trimmed.chars().take_while(|&ch| ch == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        trimmed[hashes..].trim_start()
    } else {
        line
    }
}

/// A thematic break (`---`, `***`, `___`), which servers use between hover sections.
fn is_rule(line: &str) -> bool {
    let line = line.trim();
    line.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|&marker| line.chars().all(|ch| ch == marker || ch == ' '))
}

/// Inline markdown of one line outside code blocks, rendered as text onto `out`. Walks the
/// bytes: every marker is ASCII, and text between markers is copied a run at a time (issue 15:
/// a `Vec<char>` and a push per character cost 3k instructions on a one-line hover).
fn render_inline(line: &str, out: &mut String) {
    // Only escapes, code spans, emphasis and entities change a line.
    if !line.contains(['\\', '`', '*', '&']) {
        out.push_str(line);
        return;
    }
    let bytes = line.as_bytes();
    let run_of = |start: usize, marker: u8| {
        bytes[start..]
            .iter()
            .take_while(|&&byte| byte == marker)
            .count()
    };
    // Every index below is at an ASCII marker or the end, so a char boundary.
    let mut index = 0;
    // Where the text not yet copied to `out` starts.
    let mut plain = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\'
                if bytes
                    .get(index + 1)
                    .is_some_and(|next| next.is_ascii_punctuation()) =>
            {
                out.push_str(&line[plain..index]);
                out.push(char::from(bytes[index + 1]));
                index += 2;
                plain = index;
            }
            b'`' => {
                // An inline code span: keep its content verbatim.
                let ticks = run_of(index, b'`');
                let after = index + ticks;
                let close = (after..bytes.len())
                    .find(|&start| run_of(start, b'`') == ticks && bytes[start - 1] != b'`');
                out.push_str(&line[plain..index]);
                match close {
                    Some(close) => {
                        out.push_str(&line[after..close]);
                        index = close + ticks;
                    }
                    None => {
                        out.push_str(&line[index..after]);
                        index = after;
                    }
                }
                plain = index;
            }
            b'*' => {
                let stars = run_of(index, b'*');
                let prev = line[..index].chars().next_back();
                let next = line[index + stars..].chars().next();
                // Emphasis markers touch text on one side; a lone `*` between spaces (as in
                // `a * b`) is an operator and stays.
                let opens = next.is_some_and(|c| !c.is_whitespace());
                let closes = prev.is_some_and(|c| !c.is_whitespace());
                if stars <= 3 && (opens || closes) {
                    out.push_str(&line[plain..index]);
                    plain = index + stars;
                }
                index += stars;
            }
            b'&' => {
                let entity = [
                    ("&nbsp;", ' '),
                    ("&lt;", '<'),
                    ("&gt;", '>'),
                    ("&amp;", '&'),
                    ("&quot;", '"'),
                ]
                .into_iter()
                .find(|(name, _)| bytes[index..].starts_with(name.as_bytes()));
                if let Some((name, replacement)) = entity {
                    out.push_str(&line[plain..index]);
                    out.push(replacement);
                    plain = index + name.len();
                    index = plain;
                } else {
                    index += 1;
                }
            }
            _ => index += 1,
        }
    }
    out.push_str(&line[plain..]);
}

/// Plain text of a `MarkupContent` (`kind` `markdown` is rendered, any other kind tidied).
pub(super) fn markup_to_text(kind: Option<&str>, value: &str) -> String {
    match kind {
        Some("markdown") => markdown_to_text(value),
        _ => tidy(value),
    }
}

/// Plain text of a `MarkedString`'s `{language, value}` form (a code block: tidied).
pub(super) fn code_to_text(value: &str) -> String {
    tidy(value)
}

/// The hover text of its rendered parts: the non-empty ones, a blank line between them.
pub(super) fn join_parts(parts: Vec<String>) -> String {
    let parts: Vec<String> = parts.into_iter().filter(|part| !part.is_empty()).collect();
    parts.join("\n\n")
}

/// Trailing whitespace removed per line, blank-line runs collapsed, outer blank lines removed.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // A blank line after some text, written only if more text follows.
    let mut blank_pending = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_pending = !out.is_empty();
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank_pending {
                out.push('\n');
            }
        }
        blank_pending = false;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(contents: Value, expected: &str) {
        assert_eq!(hover_contents_to_text(&contents), expected, "{contents}");
    }

    #[test]
    fn every_hover_shape_becomes_text() {
        // pyright: MarkupContent with a python fence.
        check(
            json!({"kind": "markdown", "value": "```python\n(variable) a: int\n```"}),
            "(variable) a: int",
        );
        // typescript-language-server: fence plus documentation.
        check(
            json!({"kind": "markdown", "value": "\n```typescript\nfunction area(radius: number): number\n```\nComputes the **area**.\n\n\n*@param* `radius` — the radius"}),
            "function area(radius: number): number\nComputes the area.\n\n@param radius — the radius",
        );
        check(
            json!({"kind": "plaintext", "value": "int x  \n\n\n"}),
            "int x",
        );
        check(json!("`a`: *int*"), "a: int");
        check(
            json!({"language": "c", "value": "int twice(int x)"}),
            "int twice(int x)",
        );
        check(
            json!([{"language": "python", "value": "def f()"}, "", "Docs with `code`"]),
            "def f()\n\nDocs with code",
        );
        check(json!(null), "");
        check(json!([]), "");
        check(json!({"kind": "markdown", "value": ""}), "");
        check(json!(42), "");
    }

    #[test]
    fn markdown_is_rendered_lightly() {
        let check = |markdown: &str, expected: &str| {
            assert_eq!(markdown_to_text(markdown), expected, "{markdown:?}");
        };
        // Code inside fences is verbatim, including markdown-looking characters.
        check(
            "```\nx = a * b  # **not bold**\n```",
            "x = a * b  # **not bold**",
        );
        check("~~~~rust\nfn f() {}\n~~~~\nafter", "fn f() {}\nafter");
        check("a * b stays", "a * b stays");
        check("snake_case_name stays", "snake_case_name stays");
        check("**bold** and *em* and ***both***", "bold and em and both");
        check("escaped \\_name\\_ and \\*", "escaped _name_ and *");
        check("a&nbsp;b &lt;T&gt; &amp; &unknown", "a b <T> & &unknown");
        check("``code with ` tick``", "code with ` tick");
        check("unclosed `tick", "unclosed `tick");
        check("top\n---\nbottom", "top\n\nbottom");
        check("\n\n\nfirst\n\n\n\nsecond\n\n", "first\n\nsecond");
        check("😀 `数据`", "😀 数据");
        // clangd's hover starts with a heading.
        check(
            "### function `twice`  \n\n→ `int`",
            "function twice\n\n→ int",
        );
        check("#hashtag stays", "#hashtag stays");
    }

    // The renderer as it was before issue 15's allocation cuts: the oracle for the one above.
    /// [`markdown_to_text`]'s full renderer.
    fn reference_render_markdown(markdown: &str) -> String {
        let mut lines: Vec<String> = Vec::new();
        // The fence that opened the current code block (``` or ~~~, with its length).
        let mut open_fence: Option<String> = None;
        for line in markdown.lines() {
            let trimmed = line.trim_start();
            match &open_fence {
                Some(fence) => {
                    // A closing fence uses the same marker, at least as many, and nothing after it.
                    let marker = fence.chars().next().unwrap_or('`');
                    let count = trimmed.chars().take_while(|&ch| ch == marker).count();
                    if count >= fence.len() && trimmed[count..].trim().is_empty() {
                        open_fence = None;
                    } else {
                        lines.push(line.trim_end().to_owned());
                    }
                }
                None => {
                    if let Some(fence) = fence_of(trimmed) {
                        open_fence = Some(fence);
                    } else if is_rule(trimmed) {
                        lines.push(String::new());
                    } else {
                        lines.push(reference_render_inline(strip_heading(line.trim_end())));
                    }
                }
            }
        }
        reference_tidy(&lines.join("\n"))
    }

    /// Inline markdown of one line outside code blocks, rendered as text.
    fn reference_render_inline(line: &str) -> String {
        let chars: Vec<char> = line.chars().collect();
        let mut out = String::with_capacity(line.len());
        let mut index = 0;
        while index < chars.len() {
            let ch = chars[index];
            match ch {
                '\\' if chars
                    .get(index + 1)
                    .is_some_and(|next| next.is_ascii_punctuation()) =>
                {
                    out.push(chars[index + 1]);
                    index += 2;
                }
                '`' => {
                    // An inline code span: keep its content verbatim.
                    let ticks = chars[index..].iter().take_while(|&&c| c == '`').count();
                    let after = index + ticks;
                    let close = (after..chars.len()).find(|&start| {
                        chars[start..].iter().take_while(|&&c| c == '`').count() == ticks
                            && (start == 0 || chars[start - 1] != '`')
                    });
                    match close {
                        Some(close) => {
                            out.extend(&chars[after..close]);
                            index = close + ticks;
                        }
                        None => {
                            out.extend(&chars[index..after]);
                            index = after;
                        }
                    }
                }
                '*' => {
                    let stars = chars[index..].iter().take_while(|&&c| c == '*').count();
                    let prev = index.checked_sub(1).map(|i| chars[i]);
                    let next = chars.get(index + stars).copied();
                    // Emphasis markers touch text on one side; a lone `*` between spaces (as in
                    // `a * b`) is an operator and stays.
                    let opens = next.is_some_and(|c| !c.is_whitespace());
                    let closes = prev.is_some_and(|c| !c.is_whitespace());
                    if stars <= 3 && (opens || closes) {
                        index += stars;
                    } else {
                        out.extend(&chars[index..index + stars]);
                        index += stars;
                    }
                }
                '&' => {
                    let rest: String = chars[index..chars.len().min(index + 6)].iter().collect();
                    let entity = [
                        ("&nbsp;", ' '),
                        ("&lt;", '<'),
                        ("&gt;", '>'),
                        ("&amp;", '&'),
                        ("&quot;", '"'),
                    ]
                    .into_iter()
                    .find(|(name, _)| rest.starts_with(name));
                    match entity {
                        Some((name, replacement)) => {
                            out.push(replacement);
                            index += name.chars().count();
                        }
                        None => {
                            out.push('&');
                            index += 1;
                        }
                    }
                }
                _ => {
                    out.push(ch);
                    index += 1;
                }
            }
        }
        out
    }

    /// Trailing whitespace removed per line, blank-line runs collapsed, outer blank lines removed.
    fn reference_tidy(text: &str) -> String {
        let mut out: Vec<&str> = Vec::new();
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() && out.last().is_none_or(|last| last.is_empty()) {
                continue;
            }
            out.push(line);
        }
        while out.last().is_some_and(|last| last.is_empty()) {
            out.pop();
        }
        out.join("\n")
    }

    /// The one-buffer renderer gives exactly what the renderer before it gave, on random text
    /// full of markdown syntax.
    #[test]
    fn markdown_renderer_matches_the_reference() {
        let alphabet: Vec<char> = "a b_*`~#-&\\\n \t;é😀1<>lt;nbsp;amp;\u{a0}"
            .chars()
            .collect();
        let mut seed: u64 = 1515;
        for _ in 0..20000 {
            let mut text = String::new();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..(seed >> 58) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push(alphabet[(seed >> 33) as usize % alphabet.len()]);
            }
            assert_eq!(
                render_markdown(&text),
                reference_render_markdown(&text),
                "{text:?}"
            );
            assert_eq!(tidy(&text), reference_tidy(&text), "{text:?}");
        }
        for text in [
            "**hello** at 0:4",
            "```python\n(variable) a: int\n```",
            "\n```typescript\nfunction area(radius: number): number\n```\nComputes the **area**.\n\n\n*@param* `radius` — the radius",
            "### function `twice`  \n\n→ `int`\n---\nParameters:\n- `int x`",
            "~~~~rust\nfn f() {}\n~~~~\nafter",
        ] {
            assert_eq!(render_markdown(text), reference_render_markdown(text), "{text:?}");
        }
    }

    /// The plain-text fast path of `markdown_to_text` gives what the full renderer gives.
    #[test]
    fn plain_markdown_fast_path_matches_the_renderer() {
        let alphabet: Vec<char> = "ab Z9 \n\r\t.,:;()<>=!?é😀[]{}|/'\"+%$@^".chars().collect();
        let mut seed: u64 = 15;
        for _ in 0..2000 {
            let mut text = String::new();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..(seed >> 58) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push(alphabet[(seed >> 33) as usize % alphabet.len()]);
            }
            assert_eq!(markdown_to_text(&text), render_markdown(&text), "{text:?}");
        }
        for text in ["hello at 0:4", "  \n\nint x  \r\n\n\n y\n", "", "\n"] {
            assert_eq!(markdown_to_text(text), render_markdown(text), "{text:?}");
        }
    }
}
