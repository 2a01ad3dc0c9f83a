//! Unified diffs (the `diff -u` / `git diff` format) of what an edit would change.
//!
//! Lines are compared with their terminators, so a change of line ending shows. The line match is
//! a shortest edit script (Myers' greedy O(ND) algorithm) after trimming the common prefix and
//! suffix, so a few changed lines in a large file give a few small hunks. Its trace grows with
//! the square of the number of changed lines; past [`MAX_TRACE_CELLS`] (about 2,000 changed
//! lines) the middle is shown as replaced wholesale: still a correct diff, only not minimal.
//! Hunks carry 3 lines of context and merge when their contexts touch. A last line without a
//! terminator is followed by `\ No newline at end of file`.

/// Above this many trace cells (about the square of the number of changed lines) the middle of
/// a diff is not matched line by line.
pub const MAX_TRACE_CELLS: usize = 4_000_000;
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
    match myers_script(old_middle, new_middle) {
        Some(middle) => script.extend(middle.into_iter().map(|line| match line {
            Line::Same(a, b) => Line::Same(a + prefix, b + prefix),
            Line::Removed(a) => Line::Removed(a + prefix),
            Line::Added(b) => Line::Added(b + prefix),
        })),
        None => {
            script.extend((0..old_middle.len()).map(|i| Line::Removed(i + prefix)));
            script.extend((0..new_middle.len()).map(|i| Line::Added(i + prefix)));
        }
    }
    let old_tail = old.len() - suffix;
    let new_tail = new.len() - suffix;
    script.extend((0..suffix).map(|i| Line::Same(old_tail + i, new_tail + i)));
    script
}

/// A shortest edit script from `old` to `new` (E. Myers, "An O(ND) Difference Algorithm and
/// Its Variations", 1986, §3 greedy forward search, then the path traced back); removals come
/// before additions within a change. `None` when the trace would exceed [`MAX_TRACE_CELLS`].
fn myers_script(old: &[&str], new: &[&str]) -> Option<Vec<Line>> {
    let (n, m) = (old.len() as isize, new.len() as isize);
    // frontier[k + offset]: the furthest old index reached on diagonal k = x - y.
    let offset = n + m + 1;
    let mut frontier = vec![0isize; 2 * offset as usize + 1];
    // trace[d]: the frontier on diagonals -(d + 1)..=d + 1 before round d.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut n_cells = 0usize;
    let at = |k: isize| (k + offset) as usize;
    for d in 0..=n + m {
        n_cells += 2 * d as usize + 3;
        if n_cells > MAX_TRACE_CELLS {
            return None;
        }
        trace.push(frontier[at(-d - 1)..=at(d + 1)].to_vec());
        for k in (-d..=d).step_by(2) {
            let down = k == -d || (k != d && frontier[at(k - 1)] < frontier[at(k + 1)]);
            let mut x = if down {
                frontier[at(k + 1)]
            } else {
                frontier[at(k - 1)] + 1
            };
            let mut y = x - k;
            while x < n && y < m && old[x as usize] == new[y as usize] {
                x += 1;
                y += 1;
            }
            frontier[at(k)] = x;
            if x >= n && y >= m {
                return Some(trace_back(&trace, n, m));
            }
        }
    }
    None
}

/// The script of the path [`myers_script`] found, walked back from `(n, m)` through `trace`.
fn trace_back(trace: &[Vec<isize>], n: isize, m: isize) -> Vec<Line> {
    let mut script = Vec::with_capacity((n + m) as usize);
    let (mut x, mut y) = (n, m);
    for (d, frontier) in trace.iter().enumerate().rev() {
        let d = d as isize;
        let at = |k: isize| (k + d + 1) as usize;
        let k = x - y;
        let down = k == -d || (k != d && frontier[at(k - 1)] < frontier[at(k + 1)]);
        let previous_k = if down { k + 1 } else { k - 1 };
        let previous_x = frontier[at(previous_k)];
        let previous_y = previous_x - previous_k;
        while x > previous_x && y > previous_y {
            x -= 1;
            y -= 1;
            script.push(Line::Same(x as usize, y as usize));
        }
        if d > 0 {
            if down {
                script.push(Line::Added(previous_y as usize));
            } else {
                script.push(Line::Removed(previous_x as usize));
            }
        }
        (x, y) = (previous_x, previous_y);
    }
    script.reverse();
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
    fn shortest_edit_script_keeps_the_common_lines() {
        check(
            Some("x\na\ny\nb\n"),
            Some("a\nz\nb\nw\n"),
            "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n-x\n a\n-y\n+z\n b\n+w\n",
        );
    }

    /// Found renaming `echo` in pallets/click@2c8cd3a: five changed lines in the 3,000-line
    /// `core.py` were previewed as one 2,734-line hunk (the middle was too large for the LCS
    /// table and was shown as replaced wholesale).
    #[test]
    fn a_few_edits_in_a_large_file_give_small_hunks() {
        let before: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
        let after: String = (1..=3000)
            .flat_map(|i| {
                let line = match i {
                    10 | 700 | 1500 | 2999 => format!("LINE {i}\n"),
                    _ => format!("line {i}\n"),
                };
                let inserted = (i == 2200).then(|| "new line\n".to_owned());
                std::iter::once(line).chain(inserted)
            })
            .collect();
        let context = |lines: std::ops::RangeInclusive<usize>| -> String {
            lines.map(|i| format!(" line {i}\n")).collect()
        };
        let mut expected = "--- a/a.py\n+++ b/a.py\n".to_owned();
        for (old_start, new_start, changed) in [(7, 7, 10), (697, 697, 700), (1497, 1497, 1500)] {
            expected.push_str(&format!("@@ -{old_start},7 +{new_start},7 @@\n"));
            expected.push_str(&context(changed - 3..=changed - 1));
            expected.push_str(&format!("-line {changed}\n+LINE {changed}\n"));
            expected.push_str(&context(changed + 1..=changed + 3));
        }
        expected.push_str("@@ -2198,6 +2198,7 @@\n");
        expected.push_str(&context(2198..=2200));
        expected.push_str("+new line\n");
        expected.push_str(&context(2201..=2203));
        expected.push_str("@@ -2996,5 +2997,5 @@\n");
        expected.push_str(&context(2996..=2998));
        expected.push_str("-line 2999\n+LINE 2999\n line 3000\n");
        check(Some(&before), Some(&after), &expected);
    }

    /// Past [`MAX_TRACE_CELLS`] (here 4,200 changed lines) the middle is replaced wholesale.
    #[test]
    fn too_many_changes_replace_the_middle_wholesale() {
        let before: String = (1..=2100).map(|i| format!("a{i}\n")).collect();
        let after: String = (1..=2100).map(|i| format!("b{i}\n")).collect();
        let removed: String = (1..=2100).map(|i| format!("-a{i}\n")).collect();
        let added: String = (1..=2100).map(|i| format!("+b{i}\n")).collect();
        check(
            Some(&format!("same\n{before}same\n")),
            Some(&format!("same\n{after}same\n")),
            &format!(
                "--- a/a.py\n+++ b/a.py\n@@ -1,2102 +1,2102 @@\n same\n{removed}{added} same\n"
            ),
        );
    }

    /// The script turns `old` into `new` and is as short as a longest common subsequence allows,
    /// on pseudo-random texts over a small alphabet (many ties).
    #[test]
    fn scripts_are_correct_and_shortest() {
        fn lcs_length(old: &[&str], new: &[&str]) -> usize {
            let mut row = vec![0usize; new.len() + 1];
            for a in old {
                let mut diagonal = 0;
                for (j, b) in new.iter().enumerate() {
                    let above = row[j + 1];
                    row[j + 1] = if a == b {
                        diagonal + 1
                    } else {
                        above.max(row[j])
                    };
                    diagonal = above;
                }
            }
            row[new.len()]
        }
        let mut seed = 0x2545_f491_u64;
        let mut next = |bound: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % bound
        };
        let words = ["a\n", "b\n", "c\n", "d\n"];
        for _ in 0..500 {
            let old: Vec<&str> = (0..next(12)).map(|_| words[next(4) as usize]).collect();
            let new: Vec<&str> = (0..next(12)).map(|_| words[next(4) as usize]).collect();
            let script = myers_script(&old, &new).expect("small");
            let rebuilt: Vec<&str> = script
                .iter()
                .filter_map(|line| match *line {
                    Line::Same(a, b) => {
                        assert_eq!(old[a], new[b]);
                        Some(new[b])
                    }
                    Line::Added(b) => Some(new[b]),
                    Line::Removed(_) => None,
                })
                .collect();
            assert_eq!(rebuilt, new, "{old:?} -> {new:?}: {script:?}");
            let rebuilt_old: Vec<&str> = script
                .iter()
                .filter_map(|line| match *line {
                    Line::Same(a, _) | Line::Removed(a) => Some(old[a]),
                    Line::Added(_) => None,
                })
                .collect();
            assert_eq!(rebuilt_old, old, "{old:?} -> {new:?}: {script:?}");
            let n_same = script
                .iter()
                .filter(|l| matches!(l, Line::Same(..)))
                .count();
            assert_eq!(n_same, lcs_length(&old, &new), "{old:?} -> {new:?}");
            assert_eq!(script.len(), old.len() + new.len() - n_same);
        }
    }
}
