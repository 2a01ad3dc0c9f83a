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
