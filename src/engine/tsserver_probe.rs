//! Confirming typescript-language-server's unversioned publishes (issue 15).
//!
//! typescript-language-server 5.3.0 (`src/diagnosticsManager.ts`) keeps, per file, the last
//! `syntaxDiag`, `semanticDiag` and `suggestionDiag` event tsserver sent for it and publishes
//! their union, debounced by 50 ms, without a version. Nothing in the protocol says when a round
//! is complete: the syntactic set (often empty) may be published alone before the semantic one
//! (measured here: `app.ts` published `[]`, then TS2322 64 ms later), an update from empty to
//! empty is not published at all, and the `geterr` request's `requestCompleted` stays inside the
//! server. No `$/progress` covers `geterr` (only project loading).
//!
//! But the server offers `workspace/executeCommand` `typescript.tsserverRequest`, which forwards
//! a tsserver request: `syntacticDiagnosticsSync`, `semanticDiagnosticsSync` and
//! `suggestionDiagnosticsSync` answer the three sets for the file's current text (requests are
//! handled in order after the text lspc sent). When the last published set equals their union
//! (same ranges and codes, as a multiset), the publish is the complete answer for that text and
//! the file settles at once; whatever the server publishes later for it is the same set. Until
//! the three are in, the probe counts as work in progress, since tsserver answers only once its
//! check of the file is done and the publish may be the empty syntactic set of a file whose
//! semantic check is still running.
//!
//! When the answers list a diagnostic the publish lacks ([`ProbeOutcome::Lacks`]), the publish is
//! not the whole answer and lspc knows it: the file is held (as work in progress) until a publish
//! that tsserver's answers confirm arrives, and otherwise ends at its deadline as a timeout,
//! never settled with the shorter set (issue 15: the quiet period used to run from the answer
//! and report the early publish, possibly `[]`). The same holds when the publish has a
//! diagnostic the answers lack ([`ProbeOutcome::Extra`]): it describes an older text, and a
//! warm session's folder check after `git checkout` of a file with errors reported those errors
//! (past the file's last line) once the server's silence let that publish stand while its new
//! round was queued behind the other open files. The codes the server drops from its publishes
//! by configuration (`diagnostics.ignoredCodes` in the settings lspc sends it through
//! `workspace/didChangeConfiguration`; typescript-language-server 5.3.0 filters them in
//! `DiagnosticsManager.updateDiagnostics`) are left out of the answers first, so such a user's
//! files still confirm. When a request failed, the quiet period applies as before
//! ([`super::settle::SettleRule::QuietAfterUnversionedPublish`]), counted from the last answer.
//!
//! Units: tsserver positions are 1-based lines and 1-based UTF-16 offsets; LSP ranges in the
//! publish are 0-based lines and UTF-16 characters (typescript-language-server converts by
//! subtracting one from each).

use std::time::Instant;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The command typescript-language-server registers for forwarding tsserver requests.
pub(crate) const COMMAND: &str = "typescript.tsserverRequest";

/// The tsserver requests that together give every diagnostic the server publishes for a file.
pub(crate) const REQUESTS: [&str; 3] = [
    "syntacticDiagnosticsSync",
    "semanticDiagnosticsSync",
    "suggestionDiagnosticsSync",
];

/// One diagnostic reduced to what both sides carry unchanged: 0-based start line, start
/// character, end line, end character (UTF-16) and the code as JSON.
pub(crate) type Key = (u64, u64, u64, u64, String);

/// One confirmation of (server, document): the three requests sent for the document version
/// and the publish (by arrival time) they are compared with.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    pub version: i32,
    pub publish_at: Instant,
    /// Per request of [`REQUESTS`]: not answered yet (`None`), failed (`Some(None)`) or its keys.
    pub answers: [Option<Option<Vec<Key>>>; 3],
    /// When the last of the three answers arrived (`None` while one is missing), or when the
    /// project files asked for with them arrived (`tsserver_project_files.rs`): the check
    /// counts as done only once the watches have them.
    pub answered_at: Option<Instant>,
}

impl Probe {
    pub(crate) fn new(version: i32, publish_at: Instant) -> Probe {
        Probe {
            version,
            publish_at,
            answers: [None, None, None],
            answered_at: None,
        }
    }

    /// Whether all three were answered without an error: tsserver has checked the document
    /// (a readiness wait's signal, whatever the answers list).
    pub(crate) fn ready(&self) -> bool {
        self.answered_at.is_some()
            && self
                .answers
                .iter()
                .all(|answer| matches!(answer, Some(Some(_))))
    }

    /// What the answers say of `published`, the codes in `ignored` ([`ignored_codes`]) left out
    /// of the answers.
    pub(crate) fn outcome(&self, published: &[Box<RawValue>], ignored: &[String]) -> ProbeOutcome {
        if self.answered_at.is_none() {
            return ProbeOutcome::Pending;
        }
        let mut expected: Vec<Key> = Vec::new();
        for answer in &self.answers {
            match answer {
                None => return ProbeOutcome::Pending,
                Some(None) => return ProbeOutcome::Failed,
                Some(Some(keys)) => {
                    expected.extend(keys.iter().filter(|key| !ignored.contains(&key.4)).cloned())
                }
            }
        }
        let Some(mut published) = published_keys(published) else {
            return ProbeOutcome::Failed;
        };
        crate::sorting::sort(&mut published);
        crate::sorting::sort(&mut expected);
        if published == expected {
            return ProbeOutcome::Confirmed;
        }
        match missing(&published, &expected) {
            0 => ProbeOutcome::Extra,
            lacks => ProbeOutcome::Lacks(lacks),
        }
    }
}

/// What a probe's answers say of the publish they were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeOutcome {
    /// An answer is missing: tsserver is still checking the file (work in progress).
    Pending,
    /// The publish equals the answers: the complete set for the sent text.
    Confirmed,
    /// The answers list this many diagnostics the publish lacks: it is not the whole answer.
    Lacks(usize),
    /// The publish has every answered diagnostic and more: it describes an older text, and the
    /// file waits for a publish that matches (as for [`ProbeOutcome::Lacks`]).
    Extra,
    /// A request failed or an answer or the publish had another shape: the quiet period.
    Failed,
}

/// How many of `expected` (sorted) are not in `published` (sorted), as multisets.
fn missing(published: &[Key], expected: &[Key]) -> usize {
    let mut published = published.iter().peekable();
    let mut lacking = 0;
    for key in expected {
        while published.next_if(|candidate| *candidate < key).is_some() {}
        if published.next_if(|candidate| *candidate == key).is_none() {
            lacking += 1;
        }
    }
    lacking
}

/// The codes the server leaves out of its publishes by configuration, as [`Key`] code texts:
/// `diagnostics.ignoredCodes` of the settings lspc sends it (typescript-language-server's
/// `workspace/didChangeConfiguration` settings).
pub(crate) fn ignored_codes(settings: Option<&Value>) -> Vec<String> {
    settings
        .and_then(|settings| settings.pointer("/diagnostics/ignoredCodes"))
        .and_then(Value::as_array)
        .map(|codes| codes.iter().map(Value::to_string).collect())
        .unwrap_or_default()
}

/// Whether the server's capabilities offer [`COMMAND`] (`executeCommandProvider.commands`).
pub(crate) fn offered(capabilities: &Value) -> bool {
    capabilities
        .pointer("/executeCommandProvider/commands")
        .and_then(Value::as_array)
        .is_some_and(|commands| commands.iter().any(|command| command == COMMAND))
}

/// The `workspace/executeCommand` params asking tsserver for `request` (one of [`REQUESTS`])
/// on the file `uri`.
pub(crate) fn params(request: &str, uri: &str) -> Value {
    json!({ "command": COMMAND, "arguments": [request, { "file": uri }] })
}

/// The diagnostics of one answer (a tsserver response `{success, body: [..]}`); `None` when it
/// failed or has another shape.
pub(crate) fn answer_keys(answer: &Value) -> Option<Vec<Key>> {
    if answer.get("success").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    answer
        .get("body")?
        .as_array()?
        .iter()
        .map(|diagnostic| {
            let at = |side: &str, field: &str| {
                diagnostic
                    .pointer(&format!("/{side}/{field}"))
                    .and_then(Value::as_u64)
                    .and_then(|n| n.checked_sub(1))
            };
            Some((
                at("start", "line")?,
                at("start", "offset")?,
                at("end", "line")?,
                at("end", "offset")?,
                code_text(diagnostic.get("code")),
            ))
        })
        .collect()
}

/// The published diagnostics (the raw LSP objects' JSON text the engine keeps) as keys; `None`
/// if one lacks a range. Only the range and `code` are read (typed: no `Value` tree for the
/// rest), since the settle rule asks on every loop turn while a file waits.
pub(crate) fn published_keys(published: &[Box<RawValue>]) -> Option<Vec<Key>> {
    #[derive(Deserialize)]
    struct At {
        line: u64,
        character: u64,
    }
    #[derive(Deserialize)]
    struct Range {
        start: At,
        end: At,
    }
    #[derive(Deserialize)]
    struct Published {
        range: Range,
        /// `Some(Value::Null)` for `"code": null`, `None` when there is no `code`.
        #[serde(default, deserialize_with = "present")]
        code: Option<Value>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(value: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(value).map(Some)
    }
    published
        .iter()
        .map(|raw| {
            let diagnostic: Published = serde_json::from_str(raw.get()).ok()?;
            let Range { start, end } = diagnostic.range;
            Some((
                start.line,
                start.character,
                end.line,
                end.character,
                code_text(diagnostic.code.as_ref()),
            ))
        })
        .collect()
}

fn code_text(code: Option<&Value>) -> String {
    code.map(Value::to_string).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A published diagnostic as the engine keeps it (its JSON text).
    fn lsp(line: u64, character: u64, end: u64, code: Value) -> Box<RawValue> {
        raw(
            json!({"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": end}}, "code": code, "message": "m"}),
        )
    }

    fn raw(value: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&value).unwrap()
    }

    fn ts(line: u64, offset: u64, end: u64, code: Value) -> Value {
        json!({"start": {"line": line, "offset": offset}, "end": {"line": line, "offset": end}, "code": code, "text": "m"})
    }

    /// A probe whose three answers are `bodies` (tsserver diagnostics; `None`: failed), done.
    fn probe(bodies: [Option<Vec<Value>>; 3]) -> Probe {
        let mut probe = Probe::new(1, Instant::now());
        probe.answers = bodies.map(|body| {
            Some(body.map(|body| answer_keys(&json!({"success": true, "body": body})).unwrap()))
        });
        probe.answered_at = Some(Instant::now());
        probe
    }

    #[test]
    fn the_publish_is_confirmed_only_by_the_same_ranges_and_codes() {
        let semantic = || Some(vec![ts(2, 7, 12, json!(2322))]);
        let answered = probe([Some(vec![]), semantic(), Some(vec![])]);
        let outcome = |published: &[Box<RawValue>]| answered.outcome(published, &[]);
        assert_eq!(
            outcome(&[lsp(1, 6, 11, json!(2322))]),
            ProbeOutcome::Confirmed
        );
        // The syntactic set published alone (empty) is not the whole answer, and lspc knows.
        assert_eq!(outcome(&[]), ProbeOutcome::Lacks(1));
        // Another position or code lacks the answered one.
        assert_eq!(
            outcome(&[lsp(1, 5, 11, json!(2322))]),
            ProbeOutcome::Lacks(1)
        );
        assert_eq!(
            outcome(&[lsp(1, 6, 11, json!(2345))]),
            ProbeOutcome::Lacks(1)
        );
        // One more than answered (a stale one) lacks nothing.
        assert_eq!(
            outcome(&[lsp(1, 6, 11, json!(2322)), lsp(1, 6, 11, json!(2322))]),
            ProbeOutcome::Extra
        );
        assert_eq!(
            outcome(&[lsp(1, 6, 11, json!(2322)), lsp(4, 0, 1, json!(1005))]),
            ProbeOutcome::Extra
        );
        // Twice the same diagnostic answered, once published: one lacking.
        let twice = probe([Some(vec![]), Some(vec![ts(2, 7, 12, json!(2322)); 2]), None]);
        assert_eq!(
            twice.outcome(&[lsp(1, 6, 11, json!(2322))], &[]),
            ProbeOutcome::Failed
        );
        let twice = probe([
            Some(vec![]),
            Some(vec![ts(2, 7, 12, json!(2322)); 2]),
            Some(vec![]),
        ]);
        assert_eq!(
            twice.outcome(&[lsp(1, 6, 11, json!(2322))], &[]),
            ProbeOutcome::Lacks(1)
        );
        // A clean file: three empty answers confirm an empty publish.
        let clean = probe([Some(vec![]), Some(vec![]), Some(vec![])]);
        assert_eq!(clean.outcome(&[], &[]), ProbeOutcome::Confirmed);
        // Its project's files still on their way to the watches: not done yet.
        let mut held = clean.clone();
        held.answered_at = None;
        assert_eq!(held.outcome(&[], &[]), ProbeOutcome::Pending);
        // Unanswered, then failed.
        let mut pending = probe([Some(vec![]), Some(vec![]), Some(vec![])]);
        pending.answers[1] = None;
        assert_eq!(pending.outcome(&[], &[]), ProbeOutcome::Pending);
        pending.answers[1] = Some(None);
        assert_eq!(pending.outcome(&[], &[]), ProbeOutcome::Failed);
        // A published diagnostic without a range cannot be compared.
        assert_eq!(
            clean.outcome(&[raw(json!({"message": "m"}))], &[]),
            ProbeOutcome::Failed
        );
        // The key's code is the JSON text of `code`: a string keeps its quotes, `null` is
        // `null`, no `code` is empty.
        let range =
            json!({"start": {"line": 1, "character": 6}, "end": {"line": 1, "character": 11}});
        assert_eq!(
            published_keys(&[
                raw(json!({"range": range, "code": "E1"})),
                raw(json!({"range": range, "code": null})),
                raw(json!({"range": range})),
            ]),
            Some(vec![
                (1, 6, 1, 11, "\"E1\"".to_owned()),
                (1, 6, 1, 11, "null".to_owned()),
                (1, 6, 1, 11, String::new()),
            ])
        );
        // Failed or odd answers give no keys.
        assert_eq!(
            answer_keys(&json!({"success": false, "message": "no project"})),
            None
        );
        assert_eq!(
            answer_keys(&json!({"success": true, "body": [{"start": {}}]})),
            None
        );
        assert_eq!(answer_keys(&Value::Null), None);
    }

    /// `diagnostics.ignoredCodes` in the server's settings: typescript-language-server drops
    /// those codes from its publishes, so they are left out of tsserver's answers too.
    #[test]
    fn ignored_codes_are_left_out_of_the_answers() {
        let settings = json!({"diagnostics": {"ignoredCodes": [6133, 2322]}});
        let ignored = ignored_codes(Some(&settings));
        assert_eq!(ignored, ["6133", "2322"]);
        assert_eq!(ignored_codes(None), Vec::<String>::new());
        assert_eq!(
            ignored_codes(Some(&json!({"diagnostics": {}}))),
            Vec::<String>::new()
        );
        let answered = probe([
            Some(vec![]),
            Some(vec![ts(2, 7, 12, json!(2322)), ts(3, 1, 2, json!(2345))]),
            Some(vec![ts(1, 7, 8, json!(6133))]),
        ]);
        let published = [lsp(2, 0, 1, json!(2345))];
        assert_eq!(
            answered.outcome(&published, &ignored),
            ProbeOutcome::Confirmed
        );
        assert_eq!(answered.outcome(&published, &[]), ProbeOutcome::Lacks(2));
        assert_eq!(answered.outcome(&[], &ignored), ProbeOutcome::Lacks(1));
    }

    #[test]
    fn offered_and_params() {
        assert!(offered(
            &json!({"executeCommandProvider": {"commands": ["x", COMMAND]}})
        ));
        assert!(!offered(
            &json!({"executeCommandProvider": {"commands": ["x"]}})
        ));
        assert!(!offered(&json!({})));
        assert_eq!(
            params("semanticDiagnosticsSync", "file:///a.ts"),
            json!({"command": "typescript.tsserverRequest", "arguments": ["semanticDiagnosticsSync", {"file": "file:///a.ts"}]})
        );
    }
}
