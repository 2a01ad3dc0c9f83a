//! Unified diffs (the `diff -u` / `git diff` format) of what an edit would change.
//!
//! Lines are compared with their terminators, so a change of line ending shows. The line match is
//! a longest common subsequence after trimming the common prefix and suffix; when the remaining
//! middle is too large for the quadratic table (over [`MAX_TABLE_CELLS`]), the middle is shown as
//! replaced wholesale: still a correct diff, only not minimal. Hunks carry 3 lines of context and
//! merge when their contexts touch. A last line without a terminator is followed by
//! `\ No newline at end of file`.

/// Above this many LCS table cells the middle of a diff is not matched line by line.
pub const MAX_TABLE_CELLS: usize = 4_000_000;
/// Lines of context around each change.
pub const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// The unified diff from `before` to `after` for `label` (a path relative to the root). `None`
/// texts stand for a file that does not exist (shown as `/dev/null`). Empty when equal.
pub fn unified_diff(label: &str, before: Option<&str>, after: Option<&str>) -> String {
    if before == after {
        return String::new();
    }
    let old_lines = split_lines(before.unwrap_or(""));
    let new_lines = split_lines(after.unwrap_or(""));
    let script = line_script(&old_lines, &new_lines);
    let mut out = String::new();
    out.push_str(&match before {
        Some(_) => format!("--- a/{label}\n"),
        None => "--- /dev/null\n".to_owned(),
    });
    out.push_str(&match after {
        Some(_) => format!("+++ b/{label}\n"),
        None => "+++ /dev/null\n".to_owned(),
    });
    for (start, end) in hunks(&script) {
        let lines = &script[start..end];
        let old_count = lines
            .iter()
            .filter(|l| !matches!(l, Line::Added(_)))
            .count();
        let new_count = lines
            .iter()
            .filter(|l| !matches!(l, Line::Removed(_)))
            .count();
        // The first old/new line number of the hunk (1-based); for an empty side, the line before.
        let old_start = script[..start]
            .iter()
            .filter(|l| !matches!(l, Line::Added(_)))
            .count()
            + usize::from(old_count > 0);
        let new_start = script[..start]
            .iter()
            .filter(|l| !matches!(l, Line::Removed(_)))
            .count()
            + usize::from(new_count > 0);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range_text(old_start, old_count),
            range_text(new_start, new_count)
        ));
        for line in lines {
            let (prefix, text) = match *line {
                Line::Same(old, _) => (' ', old_lines[old]),
                Line::Removed(old) => ('-', old_lines[old]),
                Line::Added(new) => ('+', new_lines[new]),
            };
            out.push(prefix);
            match text.strip_suffix('\n') {
                Some(content) => {
                    out.push_str(content);
                    out.push('\n');
                }
                None => {
                    out.push_str(text);
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

fn range_text(start: usize, count: usize) -> String {
    if count == 1 {
        start.to_string()
    } else {
        format!("{start},{count}")
    }
}

/// Lines with their `\n` terminators (a `\r` before it stays part of the line).
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn line_script(old: &[&str], new: &[&str]) -> Vec<Line> {
    let prefix = old
        .iter()
        .zip(new.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_middle = &old[prefix..old.len() - suffix];
    let new_middle = &new[prefix..new.len() - suffix];
    let mut script: Vec<Line> = (0..prefix).map(|i| Line::Same(i, i)).collect();
    if old_middle.len().saturating_mul(new_middle.len()) <= MAX_TABLE_CELLS {
        script.extend(
            lcs_script(old_middle, new_middle)
                .into_iter()
                .map(|line| match line {
                    Line::Same(a, b) => Line::Same(a + prefix, b + prefix),
                    Line::Removed(a) => Line::Removed(a + prefix),
                    Line::Added(b) => Line::Added(b + prefix),
                }),
        );
    } else {
        script.extend((0..old_middle.len()).map(|i| Line::Removed(i + prefix)));
        script.extend((0..new_middle.len()).map(|i| Line::Added(i + prefix)));
    }
    let old_tail = old.len() - suffix;
    let new_tail = new.len() - suffix;
    script.extend((0..suffix).map(|i| Line::Same(old_tail + i, new_tail + i)));
    script
}

/// Classic LCS table, walked forward; removals come before additions within a change.
fn lcs_script(old: &[&str], new: &[&str]) -> Vec<Line> {
    let (n, m) = (old.len(), new.len());
    // table[i][j] = LCS length of old[i..] and new[j..].
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if old[i] == new[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let mut script = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            script.push(Line::Same(i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || table[at(i + 1, j)] >= table[at(i, j + 1)]) {
            script.push(Line::Removed(i));
            i += 1;
        } else {
            script.push(Line::Added(j));
            j += 1;
        }
    }
    script
}

/// Hunks as `[start, end)` ranges of the script: each change with up to [`CONTEXT`] lines around
/// it, merged when they touch.
fn hunks(script: &[Line]) -> Vec<(usize, usize)> {
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for (index, line) in script.iter().enumerate() {
        if matches!(line, Line::Same(..)) {
            continue;
        }
        let start = index.saturating_sub(CONTEXT);
        let end = (index + 1 + CONTEXT).min(script.len());
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => hunks.push((start, end)),
        }
    }
    hunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(before: Option<&str>, after: Option<&str>, expected: &str) {
        assert_eq!(unified_diff("a.py", before, after), expected);
    }

    #[test]
    fn equal_texts_give_no_diff() {
        check(Some("x\n"), Some("x\n"), "");
        check(None, None, "");
    }

    #[test]
    fn one_changed_line_with_context() {
        check(
            Some("1\n2\n3\n4\n5\n6\n7\n8\n9\n"),
            Some("1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n"),
            "--- a/a.py\n+++ b/a.py\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n",
        );
    }

    #[test]
    fn distant_changes_make_two_hunks_and_near_ones_merge() {
        let before: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let after = before
            .replacen("2\n", "two\n", 1)
            .replace("19\n", "nineteen\n");
        check(
            Some(&before),
            Some(&after),
            "--- a/a.py\n+++ b/a.py\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n\
             @@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n",
        );
        let after = before
            .replacen("2\n", "two\n", 1)
            .replacen("8\n", "eight\n", 1);
        check(
            Some(&before),
            Some(&after),
            "--- a/a.py\n+++ b/a.py\n@@ -1,11 +1,11 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n-8\n+eight\n 9\n 10\n 11\n",
        );
    }

    #[test]
    fn created_deleted_and_no_newline_files() {
        check(
            None,
            Some("a\nb\n"),
            "--- /dev/null\n+++ b/a.py\n@@ -0,0 +1,2 @@\n+a\n+b\n",
        );
        check(
            Some("a\n"),
            None,
            "--- a/a.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
        );
        check(
            Some("a\nb"),
            Some("a\nc"),
            "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
        );
        check(None, Some(""), "--- /dev/null\n+++ b/a.py\n");
    }

    #[test]
    fn insertions_and_deletions_in_the_middle() {
        check(
            Some("a\nb\nc\n"),
            Some("a\nx\nb\nc\n"),
            "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n a\n+x\n b\n c\n",
        );
        check(
            Some("a\nb\nc\nd\n"),
            Some("a\nd\n"),
            "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,2 @@\n a\n-b\n-c\n d\n",
        );
        check(
            Some("a\r\nb\r\n"),
            Some("a\r\nB\r\n"),
            "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n",
        );
    }

    #[test]
    fn lcs_finds_the_common_lines() {
        check(
            Some("x\na\ny\nb\n"),
            Some("a\nz\nb\nw\n"),
            "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n-x\n a\n-y\n+z\n b\n+w\n",
        );
    }
}
