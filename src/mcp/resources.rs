//! MCP resources: `lsp://servers`, `lsp://diagnostics` and the template `lsp://diagnostics/{file}`.
//!
//! Every resource is JSON text (`application/json`). `{file}` is a path relative to the workspace
//! root (percent-encoding is decoded). Reads that wait for a server run on worker threads.

use std::path::Path;

use serde_json::{json, Value};

use super::tools::{diagnostic_json, display_path, resolve_file, ToolContext};
use crate::engine::{self, DiagnosticsOutcome, Op};

/// MCP error code for an unknown resource (MCP 2025-06-18 §resources "Error Handling").
pub const RESOURCE_NOT_FOUND: i64 = -32002;

pub const SERVERS_URI: &str = "lsp://servers";
pub const DIAGNOSTICS_URI: &str = "lsp://diagnostics";
pub const DIAGNOSTICS_PREFIX: &str = "lsp://diagnostics/";

/// The `resources/list` result.
pub fn list() -> Value {
    json!({"resources": [
        {"uri": SERVERS_URI, "name": "servers", "title": "Language servers",
         "description": "Each configured language server: state, capabilities, extensions, restarts, stderr tail, settle rule (what ends a diagnostics wait)",
         "mimeType": "application/json"},
        {"uri": DIAGNOSTICS_URI, "name": "diagnostics", "title": "All current diagnostics",
         "description": "Every diagnostic the language servers currently report, by file (1-based lines and columns)",
         "mimeType": "application/json"}
    ]})
}

/// The `resources/templates/list` result.
pub fn templates() -> Value {
    json!({"resourceTemplates": [
        {"uriTemplate": "lsp://diagnostics/{file}", "name": "file-diagnostics",
         "title": "Diagnostics of one file",
         "description": "Settled diagnostics of one file; file is relative to the workspace root",
         "mimeType": "application/json"}
    ]})
}

/// Why a read failed: a JSON-RPC error code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadError {
    pub code: i64,
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReadError {}

/// Decode `%XX` escapes; invalid escapes are kept as written.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' && index + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                index += 3;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The resource URI of one file's diagnostics.
pub fn file_uri(root: &Path, path: &Path) -> String {
    format!("{DIAGNOSTICS_PREFIX}{}", display_path(root, path))
}

/// The `resources/read` result for `uri`.
pub fn read(context: &ToolContext, uri: &str) -> Result<Value, ReadError> {
    let text = if uri == SERVERS_URI {
        servers_json(context)
    } else if uri == DIAGNOSTICS_URI {
        let files: Vec<Value> = engine::current_diagnostics(&context.op_sender)
            .iter()
            .map(|(path, diags)| {
                json!({
                    "file": display_path(&context.root, path),
                    "diagnostics": diags.iter().map(|d| diagnostic_json(&context.root, d)).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({ "files": files })
    } else if let Some(file) = uri.strip_prefix(DIAGNOSTICS_PREFIX) {
        file_diagnostics(context, &percent_decode(file))?
    } else {
        return Err(ReadError {
            code: RESOURCE_NOT_FOUND,
            message: format!(
                "resource not found: {uri} (lspc serves lsp://servers, lsp://diagnostics and lsp://diagnostics/{{file}})"
            ),
        });
    };
    Ok(json!({"contents": [{
        "uri": uri,
        "mimeType": "application/json",
        "text": serde_json::to_string_pretty(&text).unwrap_or_default(),
    }]}))
}

fn servers_json(context: &ToolContext) -> Value {
    let servers: Vec<Value> = engine::server_details(&context.op_sender)
        .into_iter()
        .map(|server| {
            let mut object = json!({
                "name": server.name,
                "state": server.state,
                "available": server.available,
                "extensions": server.extensions,
                "restarts": server.restarts,
                "stderrTail": server.stderr_tail,
                "settleRule": {
                    "name": server.settle_rule.name(),
                    "description": server.settle_rule.description(),
                },
            });
            if let Some(note) = engine::opens_note(&server.name) {
                object["settleRule"]["opens"] = json!(note);
            }
            if let Some(reason) = &server.diagnostics_off {
                object["diagnosticsOff"] = json!(reason);
            }
            if let Some(reason) = &server.formatting_off {
                object["formattingOff"] = json!(reason);
            }
            if let Some(capabilities) = server.capabilities {
                object["capabilities"] = (*capabilities).clone();
            }
            if let Some(pid) = server.pid {
                object["pid"] = json!(pid);
            }
            // One entry per instance: a server runs once per project root (issue 17).
            object["project"] = json!(server.project.as_deref().unwrap_or("."));
            object
        })
        .collect();
    json!({
        "root": context.root.display().to_string(),
        "servers": servers,
        "installHints": *context.install_hints,
        "configErrors": *context.config_errors.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
    })
}

fn file_diagnostics(context: &ToolContext, file: &str) -> Result<Value, ReadError> {
    let path = resolve_file(&context.root, file).map_err(|error| ReadError {
        code: RESOURCE_NOT_FOUND,
        message: error.0,
    })?;
    let (reply, receiver) = crossbeam_channel::bounded(1);
    let gone = || ReadError {
        code: super::protocol::INTERNAL_ERROR,
        message: "the engine has shut down".to_owned(),
    };
    context
        .op_sender
        .send(Op::Diagnostics {
            paths: vec![path.clone()],
            timeout: context.timeout,
            reply,
        })
        .map_err(|_| gone())?;
    let results = receiver
        .recv_timeout(context.timeout * 2 + std::time::Duration::from_secs(5))
        .map_err(|_| gone())?;
    let relative = display_path(&context.root, &path);
    let Some(result) = results.into_iter().next() else {
        return Err(gone());
    };
    let (diags, state) = match result.outcome {
        DiagnosticsOutcome::Settled(diags) => (diags, "settled".to_owned()),
        DiagnosticsOutcome::TimedOut { diagnostics, .. } => (diagnostics, "timed out".to_owned()),
        DiagnosticsOutcome::PartlyFailed {
            diagnostics,
            failures,
        } => (diagnostics, format!("incomplete: {failures}")),
        DiagnosticsOutcome::Failed(message) | DiagnosticsOutcome::NotChecked(message) => {
            (Vec::new(), format!("failed: {message}"))
        }
    };
    Ok(json!({
        "file": relative,
        "state": state,
        "diagnostics": diags.iter().map(|d| diagnostic_json(&context.root, d)).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        let check = |input: &str, expected: &str| assert_eq!(percent_decode(input), expected);
        check("src/a.py", "src/a.py");
        check("src%2Fa%20b.py", "src/a b.py");
        check("caf%C3%A9.py", "café.py");
        check("100%", "100%");
        check("%zz.py", "%zz.py");
        check("a%2", "a%2");
    }

    #[test]
    fn static_lists() {
        assert_eq!(list()["resources"][0]["uri"], "lsp://servers");
        assert_eq!(list()["resources"][1]["uri"], "lsp://diagnostics");
        assert_eq!(
            templates()["resourceTemplates"][0]["uriTemplate"],
            "lsp://diagnostics/{file}"
        );
        assert_eq!(
            file_uri(Path::new("/w"), Path::new("/w/src/a.py")),
            "lsp://diagnostics/src/a.py"
        );
    }
}
