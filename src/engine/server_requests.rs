//! Answers to server-to-client requests. Every request a server sends gets an answer: silence
//! stalls real servers (cases B01–B04 in `CASES.md`; `SERVERS.md` §"Behaviour a client must
//! handle").
//!
//! This module is pure: it maps a request to its result, and tells the loop what the request
//! means for the server's state (a pull-diagnostics registration, a progress token).

use std::path::Path;

use lsp_server::{ErrorCode, ResponseError};
use serde_json::{json, Value};

/// What a server request implies for the loop beyond its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideEffect {
    None,
    /// `window/workDoneProgress/create`: a token the server will report `$/progress` on.
    ProgressCreated(String),
    /// `client/registerCapability` for `textDocument/diagnostic`, with the registration ids:
    /// pull from now on.
    PullDiagnosticsRegistered(Vec<String>),
    /// `client/unregisterCapability` ids (any method; the loop forgets those it knew).
    Unregistered(Vec<String>),
    /// `workspace/diagnostic/refresh`: pulled diagnostics are stale.
    DiagnosticsRefresh,
}

/// The answer to a server request `method` with `params`, for a server whose `settings` come from
/// its config and whose workspace folder is `workspace_folder` (with URI `root_uri`).
///
/// - `workspace/configuration`: one element per item, in order, each the dotted `section` looked
///   up in `settings` (the whole settings for an item without section), else `null`. Never `[]`.
/// - `window/workDoneProgress/create`, `client/registerCapability`,
///   `client/unregisterCapability`, `window/showMessageRequest` and the `*/refresh` requests:
///   `null` (success; for `showMessageRequest`, "no action chosen").
/// - `workspace/workspaceFolders`: the one folder lspc uses.
/// - `workspace/applyEdit`: `applied: false` with the reason (lspc does not apply server edits).
/// - `window/showDocument`: `success: false` (there is no screen).
/// - anything else: `MethodNotFound`.
pub fn answer(
    method: &str,
    params: &Value,
    settings: Option<&Value>,
    workspace_folder: &Path,
    root_uri: &str,
) -> (Result<Value, ResponseError>, SideEffect) {
    match method {
        "workspace/configuration" => (Ok(configuration(params, settings)), SideEffect::None),
        "window/workDoneProgress/create" => {
            let token = params.get("token").map(token_key).unwrap_or_default();
            (Ok(Value::Null), SideEffect::ProgressCreated(token))
        }
        "client/registerCapability" => {
            let ids = registration_ids(params, "registrations", Some("textDocument/diagnostic"));
            let effect = if ids.is_empty() {
                SideEffect::None
            } else {
                SideEffect::PullDiagnosticsRegistered(ids)
            };
            (Ok(Value::Null), effect)
        }
        "client/unregisterCapability" => {
            // LSP 3.17 keeps the historical misspelling `unregisterations`.
            let ids = registration_ids(params, "unregisterations", None);
            (Ok(Value::Null), SideEffect::Unregistered(ids))
        }
        "workspace/diagnostic/refresh" => (Ok(Value::Null), SideEffect::DiagnosticsRefresh),
        "window/showMessageRequest"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/inlineValue/refresh"
        | "workspace/codeLens/refresh"
        | "workspace/foldingRange/refresh" => (Ok(Value::Null), SideEffect::None),
        "workspace/workspaceFolders" => {
            let name = workspace_folder
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            (
                Ok(json!([{ "uri": root_uri, "name": name }])),
                SideEffect::None,
            )
        }
        "workspace/applyEdit" => (
            Ok(json!({
                "applied": false,
                "failureReason": "lspc does not apply server-initiated edits in this mode"
            })),
            SideEffect::None,
        ),
        "window/showDocument" => (Ok(json!({ "success": false })), SideEffect::None),
        _ => (
            Err(ResponseError {
                code: ErrorCode::MethodNotFound as i32,
                message: format!("lspc does not handle the server request {method}"),
                data: None,
            }),
            SideEffect::None,
        ),
    }
}

/// The `id`s of registrations in `params[list_key]`, only those for `method` when given.
fn registration_ids(params: &Value, list_key: &str, method: Option<&str>) -> Vec<String> {
    let Some(registrations) = params.get(list_key).and_then(Value::as_array) else {
        return Vec::new();
    };
    registrations
        .iter()
        .filter(|registration| {
            method.is_none_or(|method| {
                registration.get("method").and_then(Value::as_str) == Some(method)
            })
        })
        .filter_map(|registration| registration.get("id").map(token_key))
        .collect()
}

/// A progress token as a map key: strings as themselves, numbers as their decimal text.
pub fn token_key(token: &Value) -> String {
    match token {
        Value::String(token) => token.clone(),
        other => other.to_string(),
    }
}

/// A section the settings do not set is answered `null`, as LSP 3.17 §workspace/configuration
/// asks ("If the client can't provide a configuration setting for a given scope then null needs
/// to be present in the returned array"), not `{}`: servers tell "unset" from "set, empty", and
/// `{}` is no safe default. vscode-html-language-server 4.10.0 throws on a null `css` but also
/// on an empty `js/ts` (it reads `js/ts.implicitProjectConfig.strictNullChecks`), so what a
/// server needs is given by its entry's settings (`builtin_settings`), not guessed here.
fn configuration(params: &Value, settings: Option<&Value>) -> Value {
    let items = params
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let answers = items
        .iter()
        .map(|item| {
            let Some(settings) = settings else {
                return Value::Null;
            };
            match item.get("section").and_then(Value::as_str) {
                None | Some("") => settings.clone(),
                Some(section) => lookup_section(settings, section)
                    .cloned()
                    .unwrap_or(Value::Null),
            }
        })
        .collect();
    Value::Array(answers)
}

/// `settings` looked up by a dotted section (`"python.analysis"`): first as nested objects, then
/// as a literal key holding dots (VS Code style flat settings).
fn lookup_section<'a>(settings: &'a Value, section: &str) -> Option<&'a Value> {
    if let Some(value) = settings.get(section) {
        return Some(value);
    }
    let mut current = settings;
    for part in section.split('.') {
        current = current.get(part)?;
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(method: &str, params: Value, settings: Option<Value>, expected: Value) {
        let (result, _) = answer(
            method,
            &params,
            settings.as_ref(),
            Path::new("/w/proj"),
            "file:///w/proj",
        );
        assert_eq!(result.ok(), Some(expected), "{method} {params}");
    }

    #[test]
    fn configuration_answers_one_element_per_item() {
        let items = json!({"items": [
            {"section": "python"}, {"section": "python.analysis"},
            {"scopeUri": "file:///w/proj/a.py", "section": "missing"}
        ]});
        let settings = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}});
        check(
            "workspace/configuration",
            items.clone(),
            Some(settings),
            json!([
                {"analysis": {"typeCheckingMode": "strict"}},
                {"typeCheckingMode": "strict"},
                null
            ]),
        );
        check(
            "workspace/configuration",
            items,
            None,
            json!([null, null, null]),
        );
        check(
            "workspace/configuration",
            json!({"items": [{}]}),
            Some(json!({"a": 1})),
            json!([{"a": 1}]),
        );
        check(
            "workspace/configuration",
            json!({"items": [{"section": "a.b"}]}),
            Some(json!({"a.b": 2})),
            json!([2]),
        );
    }

    #[test]
    fn void_requests_get_null() {
        check(
            "window/workDoneProgress/create",
            json!({"token": "T1"}),
            None,
            Value::Null,
        );
        check("client/unregisterCapability", json!({}), None, Value::Null);
        check(
            "window/showMessageRequest",
            json!({"type": 2, "message": "m"}),
            None,
            Value::Null,
        );
        check(
            "workspace/workspaceFolders",
            Value::Null,
            None,
            json!([{"uri": "file:///w/proj", "name": "proj"}]),
        );
    }

    #[test]
    fn registrations_and_unknown_methods() {
        let params = json!({"registrations": [{"id": "1", "method": "textDocument/diagnostic"}]});
        let (result, effect) = answer(
            "client/registerCapability",
            &params,
            None,
            Path::new("/w"),
            "file:///w",
        );
        assert_eq!(result.ok(), Some(Value::Null));
        assert_eq!(
            effect,
            SideEffect::PullDiagnosticsRegistered(vec!["1".to_owned()])
        );
        let params =
            json!({"unregisterations": [{"id": "1", "method": "textDocument/diagnostic"}]});
        let (result, effect) = answer(
            "client/unregisterCapability",
            &params,
            None,
            Path::new("/w"),
            "file:///w",
        );
        assert_eq!(result.ok(), Some(Value::Null));
        assert_eq!(effect, SideEffect::Unregistered(vec!["1".to_owned()]));
        let (result, _) = answer("foo/bar", &Value::Null, None, Path::new("/w"), "file:///w");
        assert_eq!(result.err().map(|error| error.code), Some(-32601));
        let (_, effect) = answer(
            "window/workDoneProgress/create",
            &json!({"token": 7}),
            None,
            Path::new("/w"),
            "file:///w",
        );
        assert_eq!(effect, SideEffect::ProgressCreated("7".to_owned()));
    }
}
