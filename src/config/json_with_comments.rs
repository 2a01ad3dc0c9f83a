//! The `.json` files VS Code opens as JSON with comments (language id `jsonc`), so that lspc
//! sends them to a JSON server as `jsonc` too ([`super::Config::language_id`]).
//!
//! vscode-json-language-server (vscode-langservers-extracted 4.10.0, `jsonServer.ts`'s
//! `validateTextDocument`) validates a `jsonc` document with `comments: 'ignore'` and
//! `trailingCommas: 'warning'`, and a `json` one with both as errors. Sent as `json`, the
//! comments of `.vscode/settings.json` or `.eslintrc.json` were each an `error: Comments are not
//! permitted in JSON. [521]` (a new user's trial on sindresorhus/p-limit). As `jsonc` a comment
//! is no finding and a trailing comma is a warning, as in VS Code; a schema that sets
//! `allowTrailingCommas` (the built-in entry's, for `tsconfig.json`) drops that warning too.
//!
//! The list is VS Code's own (its built-in extensions' `jsonc` language contributions:
//! `extensions/json`, `extensions/configuration-editing` and `extensions/typescript-basics`),
//! plus `api-extractor.json` and `tslint.json`, which GitHub Linguist's "JSON with Comments"
//! names too and whose tools read comments. Invariant: only `.json` names are listed here;
//! files of other extensions route by their extension (`.jsonc`, `.code-workspace`).

use std::path::Path;

/// File names (lowercase) that are JSON with comments wherever they are: VS Code's `filenames`
/// of `jsonc` (the dev container's files, Babel's, TypeDoc's, TypeScript's) and Linguist's.
const FILE_NAMES: &[&str] = &[
    "devcontainer.json",
    ".devcontainer.json",
    "babel.config.json",
    ".babelrc.json",
    "typedoc.json",
    "tsconfig.json",
    "jsconfig.json",
    "api-extractor.json",
    "tslint.json",
];

/// File names (lowercase) that are JSON with comments in a `.vscode` folder: VS Code's
/// `filenames` of `jsonc` for its own configuration files. VS Code matches them in any folder;
/// lspc only in `.vscode` (where VS Code's schemas for them apply, `/.vscode/settings.json`),
/// since elsewhere a `settings.json` is as likely an application's data read by a strict parser.
const VSCODE_FOLDER_FILE_NAMES: &[&str] = &[
    "settings.json",
    "launch.json",
    "tasks.json",
    "keybindings.json",
    "extensions.json",
];

/// Endings (lowercase) of JSON-with-comments file names: VS Code's `extensions` of `jsonc`,
/// which it matches at the end of a file name (`my-language-configuration.json` too).
const NAME_ENDINGS: &[&str] = &[
    ".eslintrc.json",
    "language-configuration.json",
    "icon-theme.json",
    "color-theme.json",
];

/// The prefixes of VS Code's `filenamePatterns` of `jsonc` (`tsconfig.*.json`, `tsconfig-*.json`
/// and their `jsconfig` twins): a name starting with one and ending in `.json`.
const NAME_PREFIXES: &[&str] = &["tsconfig.", "tsconfig-", "jsconfig.", "jsconfig-"];

/// Whether VS Code opens `path` as JSON with comments (see the module doc); the file name is
/// compared lowercased, as VS Code compares it. `false` for any other file, `.json` or not.
pub fn is_json_with_comments(path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    let name = name.to_string_lossy().to_lowercase();
    if !name.ends_with(".json") {
        return false;
    }
    let in_vscode_folder = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|folder| folder == ".vscode");
    FILE_NAMES.contains(&name.as_str())
        || (in_vscode_folder && VSCODE_FOLDER_FILE_NAMES.contains(&name.as_str()))
        || NAME_ENDINGS.iter().any(|ending| name.ends_with(ending))
        || NAME_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_vscode_opens_as_jsonc() {
        let check = |path: &str, expected: bool| {
            assert_eq!(is_json_with_comments(Path::new(path)), expected, "{path}");
        };
        check(".vscode/settings.json", true);
        check("web/.vscode/launch.json", true);
        check(".vscode/tasks.json", true);
        check(".vscode/keybindings.json", true);
        check(".vscode/extensions.json", true);
        check(".vscode/Settings.JSON", true);
        check("config/settings.json", false);
        check("extensions.json", false);
        check(".vscode/cspell.json", false);
        check(".devcontainer/devcontainer.json", true);
        check(".devcontainer/python/devcontainer.json", true);
        check(".devcontainer.json", true);
        check(".eslintrc.json", true);
        check("packages/a/.eslintrc.json", true);
        check(".babelrc.json", true);
        check("babel.config.json", true);
        check("typedoc.json", true);
        check("api-extractor.json", true);
        check("config/api-extractor.json", true);
        check("tslint.json", true);
        check("language-configuration.json", true);
        check("syntaxes/foo-language-configuration.json", true);
        check("themes/dark-color-theme.json", true);
        check("tsconfig.json", true);
        check("tsconfig.build.json", true);
        check("tsconfig-base.json", true);
        check("web/jsconfig.json", true);
        check("package.json", false);
        check("other.json", false);
        check("tsconfig.json.bak", false);
        check(".eslintrc", false);
        check("a.jsonc", false);
        check("", false);
    }
}
