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
//! the file settles at once; whatever the server publishes later for it is the same set. When it
//! differs, or the command fails, the quiet period applies as before
//! ([`super::settle::SettleRule::QuietAfterUnversionedPublish`]), counted from the last answer:
//! until the three are in, the probe counts as work in progress, since tsserver answers only
//! once its check of the file is done and the publish may be the empty syntactic set of a file
//! whose semantic check is still running.
//!
//! Units: tsserver positions are 1-based lines and 1-based UTF-16 offsets; LSP ranges in the
//! publish are 0-based lines and UTF-16 characters (typescript-language-server converts by
//! subtracting one from each).

use std::time::Instant;

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
    /// When the last of the three answers arrived (`None` while one is missing).
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

    /// `Some(true)` when every answer is in and they equal `published`; `Some(false)` when
    /// they differ or one failed; `None` while answers are missing.
    pub(crate) fn outcome(&self, published: &[Value]) -> Option<bool> {
        let mut answers = Vec::with_capacity(3);
        for answer in &self.answers {
            match answer {
                None => return None,
                Some(None) => return Some(false),
                Some(Some(keys)) => answers.push(keys.clone()),
            }
        }
        Some(confirms(published, &answers))
    }
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

/// The published diagnostics (raw LSP objects) as keys; `None` if one lacks a range.
pub(crate) fn published_keys(published: &[Value]) -> Option<Vec<Key>> {
    published
        .iter()
        .map(|diagnostic| {
            let at = |pointer: &str| diagnostic.pointer(pointer).and_then(Value::as_u64);
            Some((
                at("/range/start/line")?,
                at("/range/start/character")?,
                at("/range/end/line")?,
                at("/range/end/character")?,
                code_text(diagnostic.get("code")),
            ))
        })
        .collect()
}

fn code_text(code: Option<&Value>) -> String {
    code.map(Value::to_string).unwrap_or_default()
}

/// Whether the published set equals the union of the three answers, as multisets.
pub(crate) fn confirms(published: &[Value], answers: &[Vec<Key>]) -> bool {
    let Some(mut published) = published_keys(published) else {
        return false;
    };
    let mut expected: Vec<Key> = answers.iter().flatten().cloned().collect();
    published.sort();
    expected.sort();
    published == expected
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsp(line: u64, character: u64, end: u64, code: Value) -> Value {
        json!({"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": end}}, "code": code, "message": "m"})
    }

    fn ts(line: u64, offset: u64, end: u64, code: Value) -> Value {
        json!({"start": {"line": line, "offset": offset}, "end": {"line": line, "offset": end}, "code": code, "text": "m"})
    }

    #[test]
    fn the_publish_is_confirmed_only_by_the_same_ranges_and_codes() {
        let answer =
            |body: Vec<Value>| answer_keys(&json!({"success": true, "body": body})).unwrap();
        let semantic = answer(vec![ts(2, 7, 12, json!(2322))]);
        let answers = [answer(vec![]), semantic, answer(vec![])];
        assert!(confirms(&[lsp(1, 6, 11, json!(2322))], &answers));
        // The syntactic set published alone (empty) is not the whole answer.
        assert!(!confirms(&[], &answers));
        // Another position or code, or one more diagnostic, is not the same set.
        assert!(!confirms(&[lsp(1, 5, 11, json!(2322))], &answers));
        assert!(!confirms(&[lsp(1, 6, 11, json!(2345))], &answers));
        assert!(!confirms(
            &[lsp(1, 6, 11, json!(2322)), lsp(1, 6, 11, json!(2322))],
            &answers
        ));
        // A clean file: three empty answers confirm an empty publish.
        assert!(confirms(
            &[],
            &[answer(vec![]), answer(vec![]), answer(vec![])]
        ));
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
