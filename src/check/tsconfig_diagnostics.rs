//! The errors `tsc -p` reports in a `tsconfig.json` itself (a deprecated or unknown compiler
//! option, a missing `extends` base), which typescript-language-server never publishes.
//!
//! tsserver announces them with a `configFileDiag` event, and typescript-language-server 5.3.0
//! drops that event (`onTsEvent` handles only `syntaxDiag`, `semanticDiag` and
//! `suggestionDiag`). So on unjs/ufo, whose `"moduleResolution": "Node"` is TS5107 under
//! TypeScript 6 (`tsc -p .` exits 2 with `tsconfig.json(5,25): error TS5107: …`), `lspc check`
//! called the project clean. Once the files are settled, lspc asks tsserver itself through the
//! server's `typescript.tsserverRequest` command: `projectInfo` on one checked file per folder
//! with a `tsconfig.json`/`jsconfig.json` gives the configuration tsserver checks it with, and
//! `semanticDiagnosticsSync` with that configuration as both `file` and `projectFileName`
//! answers its errors (tsserver's `getConfigFileDiagnostics`: the project's errors and option
//! errors located in that file). They are reported with the configuration file, as tsc does.
//!
//! The project's errors that have no location at all (tsc prints them as `error TS2688: Cannot
//! find type definition file for 'x'.`, with no file) come from `compilerOptionsDiagnostics-full`
//! with the configuration as `projectFileName` (tsserver's `getCompilerOptionsDiagnostics`, which
//! keeps exactly the diagnostics without a file): a `"types"` entry that is not installed
//! (TS2688), a `"files"` entry that does not exist (TS6053), a `"lib"` without the global types
//! (TS2318). `tsc -p` fails on each, and `lspc check` called such a project clean. They are
//! reported at line 1, column 1 of the configuration file.
//!
//! A TS6053 `File '…' not found` that says the file is `Matched by include pattern` names a file
//! tsserver's project still lists after it was deleted (tsc, globbing the disk anew, cannot match
//! a file that is not there): right after `rm` of a source in a warm session, `lspc check .`
//! reported it at `tsconfig.json:1:1` for about 2 s (a new user's trial on sindresorhus/is).
//! Such an entry is left out when the file does not exist; one from a `"files"` entry stays.
//!
//! Invariants: only servers offering the command are asked, and only after every file settled;
//! a request that fails or times out adds nothing (the files' own verdicts are unchanged);
//! configuration files outside the workspace root are not reported. Positions: tsserver's are
//! 1-based lines and 1-based UTF-16 offsets; the diagnostics here have 1-based lines and 1-based
//! character columns, like every other.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::diagnostics::{Diagnostic, Severity};
use crate::doorbell::LoopSender;
use crate::engine::{Op, ServerInfo};
use crate::text::{LineIndex, PositionEncoding};

/// typescript-language-server's command forwarding a request to tsserver.
const COMMAND: &str = "typescript.tsserverRequest";

/// Extensions tsserver checks.
const EXTENSIONS: &[&str] = &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"];

/// The configuration files' own diagnostics for the checked `files` (canonical paths), asked of
/// the servers that serve them. All the asking together is bounded by `timeout` (a monorepo's
/// many configurations on a server that stopped answering must not hold the report up once per
/// configuration); what is not asked by then adds nothing.
pub fn tsconfig_diagnostics(
    op_sender: &LoopSender<Op>,
    root: &Path,
    files: &[PathBuf],
    timeout: Duration,
) -> Vec<Diagnostic> {
    let mut asked_folders: BTreeSet<PathBuf> = BTreeSet::new();
    let mut asked_configs: BTreeSet<(String, PathBuf)> = BTreeSet::new();
    let mut found = Vec::new();
    let deadline = std::time::Instant::now() + timeout;
    let remaining = || deadline.saturating_duration_since(std::time::Instant::now());
    // The source files first: a configuration whose folder one of them already asked about
    // needs no stand-in.
    let (configs, sources): (Vec<&PathBuf>, Vec<&PathBuf>) =
        files.iter().partition(|file| is_discovered_config(file));
    for named in sources.into_iter().chain(configs) {
        if remaining().is_zero() {
            log::debug!("tsconfig diagnostics: out of time, the rest not asked");
            break;
        }
        // A configuration checked without any file of its project (`lspc check tsconfig.json`)
        // is asked through one of its project's files, as tsserver only loads a project for an
        // open file.
        let stand_in = match is_discovered_config(named) {
            true if named
                .parent()
                .is_some_and(|folder| asked_folders.contains(folder)) =>
            {
                continue
            }
            true => project_file_of(root, named),
            false => None,
        };
        let file = stand_in.as_ref().unwrap_or(named);
        let is_typescript = file
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| EXTENSIONS.contains(&extension));
        if !is_typescript {
            continue;
        }
        let Some(config_folder) = nearest_config_folder(file, root) else {
            continue;
        };
        if !asked_folders.insert(config_folder) {
            continue;
        }
        let document = match crate::engine::sync_with(op_sender, file.clone(), remaining()) {
            Ok(document) => document,
            Err(error) => {
                log::debug!("tsconfig diagnostics: {}: {error}", file.display());
                continue;
            }
        };
        for server in document
            .servers
            .iter()
            .filter(|server| offers_command(server))
        {
            let Some(config_file) = project_config(op_sender, server, file, remaining()) else {
                continue;
            };
            if !config_file.starts_with(root)
                || !asked_configs.insert((server.name.clone(), config_file.clone()))
            {
                continue;
            }
            found.extend(config_errors(op_sender, server, &config_file, remaining()));
            found.extend(unlocated_errors(
                op_sender,
                server,
                &config_file,
                remaining(),
            ));
        }
    }
    found
}

/// tsserver's errors in `config` itself (a `tsconfig.json` or `jsconfig.json`, canonical), as
/// `tsc -p` reports them, for a question about that one file (`lspc diagnostics tsconfig.json`,
/// the MCP `diagnostics` tool): asked through a file of its project, bounded by `timeout`.
/// Empty for another file, for a configuration that includes no file, and when no server
/// offers tsserver's command; the JSON server's own findings for the file come apart.
pub fn of_config_file(
    op_sender: &LoopSender<Op>,
    root: &Path,
    config: &Path,
    timeout: Duration,
) -> Vec<Diagnostic> {
    if !is_discovered_config(config) {
        return Vec::new();
    }
    let mut found = tsconfig_diagnostics(op_sender, root, &[config.to_path_buf()], timeout);
    found.retain(|diagnostic| diagnostic.path == config);
    found
}

/// Whether `path` is named as tsserver looks configurations up (`tsconfig.json`,
/// `jsconfig.json`); a `tsconfig.build.json` is one only for the tools told its name.
fn is_discovered_config(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name == "tsconfig.json" || name == "jsconfig.json")
}

/// A file of `config`'s own project (the first in path order that it includes, references
/// followed, and for which no nearer configuration exists), from the walk of its folder
/// (`.gitignore` and `node_modules` left out); `None` when it includes none.
fn project_file_of(root: &Path, config: &Path) -> Option<PathBuf> {
    let folder = config.parent()?;
    let listing = crate::walk::list_files_found(root, &[folder.to_path_buf()]).ok()?;
    let projects = crate::project::TypeScriptProjects::new(root);
    listing
        .files
        .into_iter()
        .map(|listed| listed.path)
        .find(|file| {
            file.extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| EXTENSIONS.contains(&extension))
                && nearest_config_folder(file, root).as_deref() == Some(folder)
                && !projects.leaves_out(file)
        })
}

/// The folder of the `tsconfig.json` or `jsconfig.json` nearest above `file`, up to `root`.
fn nearest_config_folder(file: &Path, root: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .take_while(|folder| folder.starts_with(root))
        .find(|folder| {
            folder.join("tsconfig.json").is_file() || folder.join("jsconfig.json").is_file()
        })
        .map(Path::to_path_buf)
}

fn offers_command(server: &ServerInfo) -> bool {
    server
        .capabilities
        .pointer("/executeCommandProvider/commands")
        .and_then(Value::as_array)
        .is_some_and(|commands| commands.iter().any(|command| command == COMMAND))
}

/// One tsserver request through `server`; its response body when it succeeded.
fn tsserver_request(
    op_sender: &LoopSender<Op>,
    server: &ServerInfo,
    request: &str,
    arguments: Value,
    timeout: Duration,
) -> Option<Value> {
    let params = json!({ "command": COMMAND, "arguments": [request, arguments] });
    match crate::engine::request_with(
        op_sender,
        server.server_id,
        "workspace/executeCommand",
        params,
        timeout,
        None,
    ) {
        Ok(answer) if answer.get("success").and_then(Value::as_bool) == Some(true) => {
            answer.get("body").cloned()
        }
        Ok(answer) => {
            log::debug!("{}: tsserver {request} failed: {answer}", server.name);
            None
        }
        Err(error) => {
            log::debug!("{}: tsserver {request} failed: {error}", server.name);
            None
        }
    }
}

/// The configuration file tsserver checks `file` with (`projectInfo`'s `configFileName`);
/// `None` for an inferred project (no configuration) or a failed request.
fn project_config(
    op_sender: &LoopSender<Op>,
    server: &ServerInfo,
    file: &Path,
    timeout: Duration,
) -> Option<PathBuf> {
    let uri = crate::uri::path_to_uri_string(file).ok()?;
    let arguments = json!({ "file": uri, "needFileNameList": false });
    let body = tsserver_request(op_sender, server, "projectInfo", arguments, timeout)?;
    let config_file = Path::new(body.get("configFileName")?.as_str()?);
    // An inferred project is named `/dev/null/inferredProject1*`.
    if !config_file.is_file() {
        return None;
    }
    Some(crate::uri::canonical(config_file))
}

/// tsserver's diagnostics located in `config_file`, the configuration of a loaded project.
fn config_errors(
    op_sender: &LoopSender<Op>,
    server: &ServerInfo,
    config_file: &Path,
    timeout: Duration,
) -> Vec<Diagnostic> {
    let path_text = config_file.to_string_lossy();
    let arguments = json!({ "file": path_text, "projectFileName": path_text });
    let Some(body) = tsserver_request(
        op_sender,
        server,
        "semanticDiagnosticsSync",
        arguments,
        timeout,
    ) else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(config_file).unwrap_or_default();
    from_tsserver(&server.name, config_file, &text, &body, Unlocated::LeftOut)
}

/// The diagnostics of the project of `config_file` that have no file (see the module doc),
/// placed at the start of `config_file`.
fn unlocated_errors(
    op_sender: &LoopSender<Op>,
    server: &ServerInfo,
    config_file: &Path,
    timeout: Duration,
) -> Vec<Diagnostic> {
    let arguments = json!({ "projectFileName": config_file.to_string_lossy() });
    let Some(body) = tsserver_request(
        op_sender,
        server,
        "compilerOptionsDiagnostics-full",
        arguments,
        timeout,
    ) else {
        return Vec::new();
    };
    from_tsserver(&server.name, config_file, "", &body, Unlocated::AtStart)
}

/// What [`from_tsserver`] does with an entry that has no position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unlocated {
    /// Leaves it out.
    LeftOut,
    /// Reports it at line 1, column 1.
    AtStart,
}

/// tsserver diagnostics (`[{start: {line, offset}, end, text, code, category}]`, 1-based lines
/// and UTF-16 offsets; or `[{message, code, category}]`, a `-full` request's entries without a
/// file) of `path`, whose text is `text`, as lspc's; an entry without a position as `unlocated`
/// says.
fn from_tsserver(
    server: &str,
    path: &Path,
    text: &str,
    body: &Value,
    unlocated: Unlocated,
) -> Vec<Diagnostic> {
    let line_index = LineIndex::new(text);
    let position = |diagnostic: &Value, side: &str| {
        let at = |field: &str| {
            diagnostic
                .pointer(&format!("/{side}/{field}"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n.checked_sub(1)?).ok())
        };
        let position = lsp_types::Position {
            line: at("line")?,
            character: at("offset")?,
        };
        Some(line_index.from_lsp(text, position, PositionEncoding::Utf16))
    };
    let Some(entries) = body.as_array() else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|diagnostic| !names_a_deleted_file(diagnostic))
        .filter_map(|diagnostic| {
            let located = position(diagnostic, "start").zip(position(diagnostic, "end"));
            let ((line, column), (end_line, end_column)) = match (located, unlocated) {
                (Some(located), _) => located,
                (None, Unlocated::AtStart) => ((1, 1), (1, 1)),
                (None, Unlocated::LeftOut) => return None,
            };
            let severity = match diagnostic.get("category").and_then(Value::as_str) {
                Some("warning") => Severity::Warning,
                Some("suggestion") => Severity::Hint,
                Some("message") => Severity::Information,
                _ => Severity::Error,
            };
            Some(Diagnostic {
                path: path.to_path_buf(),
                line,
                column,
                end_line,
                end_column,
                severity,
                message: entry_text(diagnostic).trim_end().to_string(),
                source: Some("typescript".to_string()),
                code: diagnostic.get("code").map(|code| match code {
                    Value::String(code) => code.clone(),
                    code => code.to_string(),
                }),
                server: server.to_string(),
            })
        })
        .collect()
}

/// A tsserver entry's message: `text` in a `Diagnostic`, `message` in a
/// `DiagnosticWithLinePosition` (the `-full` answers); empty when neither is a string.
fn entry_text(diagnostic: &Value) -> &str {
    diagnostic
        .get("text")
        .or_else(|| diagnostic.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether a tsserver diagnostic is a TS6053 for a file an include pattern matched and that no
/// longer exists (see the module doc).
fn names_a_deleted_file(diagnostic: &Value) -> bool {
    if diagnostic.get("code").and_then(Value::as_u64) != Some(6053) {
        return false;
    }
    let message = entry_text(diagnostic);
    let named = message
        .strip_prefix("File '")
        .and_then(|rest| rest.split_once("' not found"))
        .map(|(file, _)| file);
    match named {
        Some(file) if message.contains("Matched by include pattern") => {
            let gone = !Path::new(file).exists();
            if gone {
                log::debug!(
                    "left out tsserver's TS6053 for {file}: deleted since its project listed it"
                );
            }
            gone
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TS6053 for a file an include pattern matched is left out once the file is gone, and
    /// kept while it exists; one for a `"files"` entry is always kept (tsc reports it too).
    #[test]
    fn a_missing_file_matched_by_an_include_pattern_is_left_out() {
        let dir = std::env::temp_dir().join(format!("lspc-ts6053-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let present = dir.join("present.ts");
        std::fs::write(&present, "").unwrap();
        let gone = dir.join("gone.ts");
        let entry = |file: &Path, why: &str| {
            json!({"code": 6053, "category": "error", "message": format!(
                "File '{}' not found.\n  The file is in the program because:\n    {why}",
                file.display()
            )})
        };
        let include = "Matched by include pattern 'source' in '/w/tsconfig.json'";
        let files = "Part of 'files' list in tsconfig.json";
        let body = json!([
            entry(&gone, include),
            entry(&present, include),
            entry(&gone, files)
        ]);
        let found = from_tsserver(
            "ts",
            Path::new("/w/tsconfig.json"),
            "",
            &body,
            Unlocated::AtStart,
        );
        let kept: Vec<bool> = found
            .iter()
            .map(|diagnostic| diagnostic.message.contains("gone.ts"))
            .collect();
        assert_eq!(kept, [false, true], "{found:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// tsserver's answer for unjs/ufo's tsconfig under TypeScript 6.0.3, on a line with a
    /// character outside the BMP before the option (offsets count UTF-16 units).
    #[test]
    fn tsserver_positions_become_character_columns() {
        let text = "{\n  \"compilerOptions\": {\n    \"moduleResolution\": \"Node\" /* 😀 */, \"x\": 1\n  }\n}\n";
        let body = json!([
            {"start": {"line": 3, "offset": 25}, "end": {"line": 3, "offset": 31},
             "text": "Option 'moduleResolution=node10' is deprecated.\n  Visit https://aka.ms/ts6 for migration information.\n",
             "code": 5107, "category": "error"},
            {"start": {"line": 3, "offset": 42}, "end": {"line": 3, "offset": 45},
             "text": "Unknown compiler option 'x'.", "code": 5023, "category": "warning"},
            {"text": "no position", "code": 1, "category": "error"}
        ]);
        let path = Path::new("/p/tsconfig.json");
        let rows: Vec<String> = from_tsserver(
            "typescript-language-server",
            path,
            text,
            &body,
            Unlocated::LeftOut,
        )
        .into_iter()
        .map(|d| {
            format!(
                "{}:{}-{}:{} {:?} {:?} {}",
                d.line, d.column, d.end_line, d.end_column, d.severity, d.code, d.message
            )
        })
        .collect();
        assert_eq!(
            rows,
            [
                "3:25-3:31 Error Some(\"5107\") Option 'moduleResolution=node10' is deprecated.\n  Visit https://aka.ms/ts6 for migration information.",
                "3:41-3:44 Warning Some(\"5023\") Unknown compiler option 'x'.",
            ]
        );
    }

    /// A `compilerOptionsDiagnostics-full` answer (TypeScript 6.0.3 for `"types": ["nope"]`):
    /// `message`, no location; placed at 1:1 only when asked to.
    #[test]
    fn unlocated_entries_go_to_the_start_when_asked() {
        let body = json!([{"message": "Cannot find type definition file for 'nope'.", "code": 2688,
                           "category": "error", "start": null, "length": null}]);
        let path = Path::new("/p/tsconfig.json");
        let at_start = from_tsserver("ts", path, "", &body, Unlocated::AtStart);
        let found: Vec<_> = at_start
            .iter()
            .map(|d| {
                (
                    d.line,
                    d.column,
                    d.end_line,
                    d.end_column,
                    d.message.as_str(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [(1, 1, 1, 1, "Cannot find type definition file for 'nope'.")]
        );
        assert_eq!(at_start[0].code.as_deref(), Some("2688"));
        assert!(from_tsserver("ts", path, "", &body, Unlocated::LeftOut).is_empty());
    }

    #[test]
    fn the_nearest_configuration_folder_stays_inside_the_root() {
        let root = std::env::temp_dir().join(format!("lspc-tsconfig-up-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("packages/a/src/deep")).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("packages/a/tsconfig.json"), "{}").unwrap();
        std::fs::write(root.join("jsconfig.json"), "{}").unwrap();
        let nearest = |file: &str| nearest_config_folder(&root.join(file), &root.join("packages"));
        assert_eq!(
            nearest("packages/a/src/deep/x.ts"),
            Some(root.join("packages/a"))
        );
        // The root given is `packages`: the jsconfig.json above it is not looked at.
        assert_eq!(nearest("packages/b.ts"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
