//! The `initialize` request lspc sends: exactly what lspc implements, nothing more.
//!
//! LSP 3.17 §`initialize`. Notes on choices:
//! - Position encodings: lspc converts UTF-8, UTF-16 and UTF-32 in both directions, so it offers all
//!   three (UTF-8 first: cheapest for servers that keep UTF-8 text). clangd ignores
//!   `general.positionEncodings` and negotiates through its `offsetEncoding` extension instead.
//! - Pull diagnostics are advertised with dynamic registration: servers that offer them statically
//!   (ruff, TS 7) or register them (pyright, right after `initialized`) are pulled. A pull answer is
//!   complete by definition, while pushed sets can arrive in rounds (pyright publishes an empty set
//!   first when several files open at once). A registration that arrives while a file is already
//!   waiting switches that wait to pull.
//! - Edits (issue 5, `crate::edit`): `workspace.applyEdit`, `workspaceEdit.documentChanges`, the
//!   three resource operations, `failureHandling: "transactional"` (a half-way failure restores
//!   the files already written) and `normalizesLineEndings` (new text takes the file's line
//!   endings). Not advertised: change annotations, snippets in edits. `fileOperations` lists only
//!   the `did*` notifications lspc sends after applying an edit.

use std::path::Path;

use serde_json::{json, Value};

/// The `InitializeParams` JSON for a server rooted at `workspace_folder`.
///
/// `root_uri` is the folder's `file://` URI and `name` its display name.
pub(crate) fn initialize_params(
    root_uri: &str,
    workspace_folder: &Path,
    initialization_options: Option<&Value>,
) -> Value {
    let name = workspace_folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workspace".to_owned());
    let mut params = json!({
        "processId": std::process::id(),
        "clientInfo": { "name": "lspc", "version": env!("CARGO_PKG_VERSION") },
        "locale": "en",
        "rootPath": workspace_folder.to_string_lossy(),
        "rootUri": root_uri,
        "workspaceFolders": [{ "uri": root_uri, "name": name }],
        "capabilities": client_capabilities(),
        "trace": "off",
    });
    if let Some(options) = initialization_options {
        params["initializationOptions"] = options.clone();
    }
    params
}

/// The `ClientCapabilities` lspc sends (LSP 3.17 §`clientCapabilities`), as JSON text parsed once
/// per server start: the text costs the binary 3 KB, the same `json!` literal cost 16 KB of
/// machine code. Two entries are extensions: `experimental.serverStatusNotification` is
/// rust-analyzer's (`experimental/serverStatus` says when it is quiescent) and `offsetEncoding`
/// is clangd's (https://clangd.llvm.org/extensions#utf-8-offsets). Both symbol-kind value sets
/// list every kind, 1 to 26.
const CLIENT_CAPABILITIES: &str = r#"{
    "general": {
        "positionEncodings": ["utf-8", "utf-16", "utf-32"],
        "staleRequestSupport": {
            "cancel": true,
            "retryOnContentModified": [
                "textDocument/definition", "textDocument/declaration",
                "textDocument/typeDefinition", "textDocument/implementation",
                "textDocument/references", "textDocument/hover",
                "textDocument/documentSymbol", "workspace/symbol",
                "textDocument/prepareCallHierarchy", "callHierarchy/incomingCalls",
                "callHierarchy/outgoingCalls", "textDocument/signatureHelp",
                "textDocument/diagnostic"
            ]
        }
    },
    "experimental": { "serverStatusNotification": true },
    "offsetEncoding": ["utf-8", "utf-16", "utf-32"],
    "window": {
        "workDoneProgress": true,
        "showMessage": { "messageActionItem": { "additionalPropertiesSupport": false } },
        "showDocument": { "support": false }
    },
    "workspace": {
        "configuration": true,
        "workspaceFolders": true,
        "didChangeConfiguration": { "dynamicRegistration": false },
        "symbol": {
            "dynamicRegistration": false,
            "symbolKind": {
                "valueSet": [
                    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                    14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26
                ]
            }
        },
        "diagnostics": { "refreshSupport": true },
        "applyEdit": true,
        "workspaceEdit": {
            "documentChanges": true,
            "resourceOperations": ["create", "rename", "delete"],
            "failureHandling": "transactional",
            "normalizesLineEndings": true
        },
        "fileOperations": {
            "dynamicRegistration": false,
            "didCreate": true,
            "didRename": true,
            "didDelete": true
        },
        "executeCommand": { "dynamicRegistration": false }
    },
    "textDocument": {
        "synchronization": {
            "dynamicRegistration": false,
            "willSave": false,
            "willSaveWaitUntil": false,
            "didSave": true
        },
        "publishDiagnostics": {
            "relatedInformation": true,
            "versionSupport": true,
            "tagSupport": { "valueSet": [1, 2] },
            "codeDescriptionSupport": true,
            "dataSupport": true
        },
        "diagnostic": { "dynamicRegistration": true, "relatedDocumentSupport": false },
        "hover": { "dynamicRegistration": false, "contentFormat": ["markdown", "plaintext"] },
        "definition": { "dynamicRegistration": false, "linkSupport": true },
        "declaration": { "dynamicRegistration": false, "linkSupport": true },
        "typeDefinition": { "dynamicRegistration": false, "linkSupport": true },
        "implementation": { "dynamicRegistration": false, "linkSupport": true },
        "references": { "dynamicRegistration": false },
        "documentSymbol": {
            "dynamicRegistration": false,
            "hierarchicalDocumentSymbolSupport": true,
            "symbolKind": {
                "valueSet": [
                    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                    14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26
                ]
            }
        },
        "callHierarchy": { "dynamicRegistration": false },
        "typeHierarchy": { "dynamicRegistration": false },
        "rename": { "dynamicRegistration": false, "prepareSupport": true },
        "codeAction": {
            "dynamicRegistration": false,
            "codeActionLiteralSupport": {
                "codeActionKind": {
                    "valueSet": [
                        "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                        "refactor.rewrite", "source", "source.organizeImports", "source.fixAll"
                    ]
                }
            },
            "isPreferredSupport": true,
            "disabledSupport": true,
            "dataSupport": true,
            "resolveSupport": { "properties": ["edit"] }
        },
        "formatting": { "dynamicRegistration": false },
        "signatureHelp": {
            "dynamicRegistration": false,
            "signatureInformation": {
                "documentationFormat": ["markdown", "plaintext"],
                "parameterInformation": { "labelOffsetSupport": true },
                "activeParameterSupport": true
            }
        }
    }
}"#;

fn client_capabilities() -> Value {
    serde_json::from_str(CLIENT_CAPABILITIES).expect("CLIENT_CAPABILITIES is valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_params_carry_pid_root_and_options() {
        let params = initialize_params(
            "file:///tmp/my%20proj",
            Path::new("/tmp/my proj"),
            Some(&json!({"a": 1})),
        );
        assert_eq!(params["processId"], json!(std::process::id()));
        assert_eq!(params["rootUri"], "file:///tmp/my%20proj");
        assert_eq!(params["workspaceFolders"][0]["name"], "my proj");
        assert_eq!(params["initializationOptions"], json!({"a": 1}));
        assert_eq!(
            params["capabilities"]["general"]["positionEncodings"][1],
            "utf-16"
        );
        assert_eq!(params["capabilities"]["workspace"]["configuration"], true);
        let capabilities = &params["capabilities"];
        assert_eq!(capabilities["workspace"]["applyEdit"], true);
        assert_eq!(
            capabilities["workspace"]["workspaceEdit"],
            json!({
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "transactional",
                "normalizesLineEndings": true
            })
        );
        assert_eq!(
            capabilities["textDocument"]["rename"]["prepareSupport"],
            true
        );
        assert_eq!(
            capabilities["textDocument"]["codeAction"]["resolveSupport"],
            json!({"properties": ["edit"]})
        );
        assert!(capabilities["workspace"]["workspaceEdit"]
            .get("changeAnnotationSupport")
            .is_none());
    }
}
