//! The built-in web and container servers from a new user's trial: vscode-html-language-server,
//! vscode-css-language-server and vscode-json-language-server (vscode-langservers-extracted
//! 4.10.0) and dockerfile-language-server (`docker-langserver` 0.15.0), used with no
//! configuration at all. Each test names what broke, runs the real server and asserts exact
//! positions (1-based lines, columns in characters) and exact text.

use crate::require_program;
use crate::support::*;

/// A page whose embedded style has a stray `}` and an unknown property, and whose embedded
/// script does not parse, with non-ASCII text before the errors on their lines.
const BROKEN_EMBEDDED_PAGE: &str = r#"<!DOCTYPE html>
<html lang="zh">
<head>
  <style>
    .库存 { color: red; } }
    p { colr: 1px; }
  </style>
</head>
<body>
  <p>📦 库存</p>
  <script>const 名 = "📦"; function f( { let x = ; }</script>
</body>
</html>
"#;

/// A new user's trial: `lspc check p.html` on a page with a broken `<style>` and `<script>` said
/// `0 errors`, exit 0. lspc answered the server's `workspace/configuration` request (sections
/// `css`, `html`, `javascript`, `js/ts`) with nulls, and vscode-html-language-server 4.10.0's CSS
/// mode reads `settings.css` unguarded (`Cannot read properties of null (reading
/// 'validProperties')`, logged only with `-vv`), which aborted the whole validation, scripts
/// included. The built-in entry now gives it a `css` section, and the embedded CSS and
/// JavaScript errors are reported where they are.
#[test]
fn html_embedded_style_and_script_errors_are_reported() {
    require_program!("vscode-html-language-server");
    let workspace = Workspace::new("html-embedded");
    workspace.file("p.html", BROKEN_EMBEDDED_PAGE);
    let output = workspace
        .lspc()
        .args(["check", "--format", "json", "p.html"])
        .run();
    assert_eq!(
        json_diagnostics(&output.json()),
        [
            "p.html:5:25-5:26 error [css css-ruleorselectorexpected] at-rule or selector expected",
            "p.html:11:44-11:45 error [javascript -] ',' expected.",
            "p.html:11:48-11:49 error [javascript -] Expression expected.",
            "p.html:14:1-14:1 error [javascript -] ')' expected.",
            "p.html:6:9-6:13 warning [css unknownProperties] Unknown property: 'colr'",
        ],
        "{}",
        output.story()
    );
    output.status(1);
    assert!(
        !output.stderr.contains("Error while validating"),
        "the server failed to validate\n{}",
        output.story()
    );
}

/// `lspc format FILE --apply` in a fresh workspace holding `FILE` with `text`; returns the run
/// and the bytes written.
fn format_applied(name: &str, file: &str, text: &str) -> (Output, String) {
    let workspace = Workspace::new(name);
    workspace.file(file, text);
    let output = workspace.lspc().args(["format", file, "--apply"]).run();
    let written = workspace.read(file);
    (output, written)
}

/// A new user's trial: `lspc format` refused every JSON, CSS, SCSS and HTML file (`no language
/// server for … offers documentFormattingProvider`, exit 3). vscode-langservers-extracted 4.10.0
/// advertises formatting only when `initializationOptions.provideFormatter` is `true`
/// (`jsonServer.js`, `cssServer.js`, `htmlServer.js`: `documentFormattingProvider:
/// initializationOptions.provideFormatter === true`), which VS Code's extensions send and the
/// built-in entries did not. Each file has CRLF line ends and non-ASCII text; both survive, and
/// so does the final line break, which these servers delete unless asked to keep it
/// (`insertFinalNewline`, sent for a file that ends with one); a file without one gets none.
#[test]
fn json_files_are_formatted() {
    require_program!("vscode-json-language-server");
    let (output, written) = format_applied(
        "format-json",
        "data.json",
        "{\"名前\":\"📦\",\"a\":[1,2],\r\n\"b\":{\"c\":true}}\r\n",
    );
    output.status(0);
    assert_eq!(
        written,
        "{\r\n    \"名前\": \"📦\",\r\n    \"a\": [\r\n        1,\r\n        2\r\n    ],\r\n    \
         \"b\": {\r\n        \"c\": true\r\n    }\r\n}\r\n",
        "{}",
        output.story()
    );
    let (output, written) = format_applied("format-json-unended", "a.json", "{\"a\":1}");
    output.status(0);
    assert_eq!(written, "{\n    \"a\": 1\n}", "{}", output.story());
}

/// As [`json_files_are_formatted`], for vscode-css-language-server's three languages.
#[test]
fn css_scss_and_less_files_are_formatted() {
    require_program!("vscode-css-language-server");
    let cases = [
        (
            "s.css",
            ".库存{color:red;margin:0}\r\n@media (max-width:600px){.a{color:blue}}\r\n",
            ".库存 {\r\n    color: red;\r\n    margin: 0\r\n}\r\n\r\n@media (max-width:600px) {\r\n    \
             .a {\r\n        color: blue\r\n    }\r\n}\r\n",
        ),
        (
            "t.scss",
            "$c: red;\r\n.a{.b{color:$c}}\r\n",
            "$c: red;\r\n\r\n.a {\r\n    .b {\r\n        color: $c\r\n    }\r\n}\r\n",
        ),
        (
            "u.less",
            "@w: 1px;\r\n.a{.b{border:@w solid}}\r\n",
            "@w: 1px;\r\n\r\n.a {\r\n    .b {\r\n        border: @w solid\r\n    }\r\n}\r\n",
        ),
    ];
    for (file, text, formatted) in cases {
        let (output, written) = format_applied("format-css", file, text);
        output.status(0);
        assert_eq!(written, formatted, "{file}\n{}", output.story());
    }
}

/// As [`json_files_are_formatted`], for vscode-html-language-server.
#[test]
fn html_files_are_formatted() {
    require_program!("vscode-html-language-server");
    let (output, written) = format_applied(
        "format-html",
        "p.html",
        "<!DOCTYPE html>\r\n<html><head><title>库存</title></head>\r\n\
         <body><p>📦 <span>3</span></p><div><ul><li>a</li><li>b</li></ul></div></body></html>\r\n",
    );
    output.status(0);
    assert_eq!(
        written,
        "<!DOCTYPE html>\r\n<html>\r\n\r\n<head>\r\n    <title>库存</title>\r\n</head>\r\n\r\n\
         <body>\r\n    <p>📦 <span>3</span></p>\r\n    <div>\r\n        <ul>\r\n            \
         <li>a</li>\r\n            <li>b</li>\r\n        </ul>\r\n    </div>\r\n</body>\r\n\r\n</html>\r\n",
        "{}",
        output.story()
    );
}

/// A new user's trial: `lspc check Dockerfile.dev` said `no language server is configured for
/// .dev files` (exit 2) and `lspc check .` passed over `Dockerfile.dev` and `Dockerfile.prod`
/// without a word; lspc knew only `Dockerfile`, `Containerfile` and `*.dockerfile`. VS Code's
/// Dockerfile language also takes `Dockerfile.*`, `Containerfile.*` and `*.containerfile`, and
/// so does the built-in dockerfile-language-server entry now, except BuildKit's per-Dockerfile
/// ignore files (`Dockerfile.dockerignore`), which are not Dockerfiles.
#[test]
fn dockerfile_variants_are_checked_walked_and_named() {
    require_program!("docker-langserver");
    let workspace = Workspace::new("dockerfile-variants");
    workspace
        .file("Dockerfile.dev", "FROM alpine:3.20\nLABEL 名=\"📦\" x\n")
        .file("Dockerfile.prod", "FROM alpine:3.20\nexpose 80\n")
        .file("ci/Containerfile.ci", "FROM alpine:3.20\nWORKDIR app\n")
        .file("app.containerfile", "FROM alpine:3.20\nSTOPSIGNAL 库\n")
        .file("Dockerfile.dockerignore", "node_modules\n");
    let walked = workspace
        .lspc()
        .args(["check", "--format", "json", "."])
        .run();
    assert_eq!(
        json_diagnostics(&walked.json()),
        [
            "Dockerfile.dev:2:13-2:14 error [dockerfile-utils 33] Syntax error - can't find = in \
             \"x\". Must be of the form: name=value",
            "Dockerfile.prod:2:1-2:7 warning [dockerfile-utils 0] Instructions should be written \
             in uppercase letters",
            "app.containerfile:2:12-2:13 error [dockerfile-utils 27] Invalid signal: 库",
            "ci/Containerfile.ci:2:9-2:12 warning [dockerfile-utils 50] WORKDIR paths should be \
             absolute",
        ],
        "{}",
        walked.story()
    );
    assert_eq!(
        file_states(&walked.json()),
        [
            ("Dockerfile.dev".into(), "diagnostics".into(), String::new()),
            (
                "Dockerfile.prod".into(),
                "diagnostics".into(),
                String::new()
            ),
            (
                "app.containerfile".into(),
                "diagnostics".into(),
                String::new()
            ),
            (
                "ci/Containerfile.ci".into(),
                "diagnostics".into(),
                String::new()
            ),
        ],
        "{}",
        walked.story()
    );
    walked.status(1);
    let named = workspace.lspc().args(["check", "Dockerfile.dev"]).run();
    named.status(1).stdout_is(
        "Dockerfile.dev:2:13: error: Syntax error - can't find = in \"x\". Must be of the form: \
         name=value [dockerfile-utils 33]\n",
    );
}

/// A new user's trial on python-attrs/attrs, offline: `codspeed.yml` names its schema
/// (`$schema: https://…`), yaml-language-server could not fetch it and said `Unable to load
/// schema from '…': getaddrinfo ENOTFOUND …` as an error, and `lspc check` failed the file on
/// it (exit 1): a network fault as the file's finding, while its content was never validated.
/// vscode-json-language-server says the same as a warning. Such a file now keeps its syntax
/// findings and is not fully checked (exit 3), in both servers alike.
#[test]
fn a_schema_the_server_cannot_load_leaves_the_file_checked_for_syntax_only() {
    require_program!("yaml-language-server");
    require_program!("vscode-json-language-server");
    let workspace = Workspace::new("schema-offline");
    workspace
        .file(
            "a.yml",
            "$schema: https://example.invalid/s.json\nname: x\nbad: [1, 2\n",
        )
        .file(
            "b.json",
            "{\n  \"$schema\": \"https://example.invalid/s.json\",\n  \"a\": 1,\n}\n",
        );
    let output = workspace
        .lspc()
        .args(["check", "--format", "json", "a.yml", "b.json"])
        .run();
    output.status(3);
    let report = output.json();
    assert_eq!(
        json_diagnostics(&report),
        [
            "a.yml:4:1-4:1 error [YAML 0] Flow sequence in block collection must be sufficiently indented and end with a ]",
            "b.json:3:9-3:10 error [json 519] Trailing comma",
        ],
        "{}",
        output.story()
    );
    // The cause after the URL is the resolver's (ENOTFOUND here, EAI_AGAIN without DNS).
    let states = file_states(&report);
    let servers = ["yaml-language-server", "vscode-json-language-server"];
    assert_eq!(states.len(), 2, "{}", output.story());
    for ((file, state, reason), (expected_file, server)) in states
        .iter()
        .zip(["a.yml", "b.json"].into_iter().zip(servers))
    {
        assert_eq!((file.as_str(), state.as_str()), (expected_file, "error"));
        let expected = format!(
            "not checked by every server: {server}: only its syntax was checked: Unable to load \
             schema from 'https://example.invalid/s.json': getaddrinfo "
        );
        assert!(
            reason.starts_with(&expected),
            "{reason}\n{}",
            output.story()
        );
    }
}
