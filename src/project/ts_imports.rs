//! The files a TypeScript project imports beyond its root files: tsc compiles every module its
//! root files (`files`, `include` minus `exclude`) import, transitively, and reports their errors
//! too, whatever `include` and `exclude` say (TSConfig reference: "include": "files … imported
//! by files in include are also included"; "exclude": "does not prevent a file from being
//! included through an import"). A new user's trial: with `"include": ["src"]` and
//! `src/index.ts` importing `../lib/helper`, `tsc --noEmit -p .` failed on `lib/helper.ts` (exit
//! 2) and `lspc check .` skipped it as outside the include (exit 0).
//!
//! Followed here: relative specifiers (`./x`, `../x`) of `import … from`, `export … from`,
//! bare `import '…'`, `import('…')` (a template literal without substitutions too) and
//! `require('…')`, and `/// <reference path="…" />` directives, resolved as tsc resolves them: the
//! exact file, then with `.ts`, `.tsx`, `.d.ts` (and `.js`, `.jsx` with `allowJs`), then
//! `index` in that folder; a `.js`/`.jsx`/`.mjs`/`.cjs` specifier names the TypeScript file of
//! the same stem (`./helper.js` → `helper.ts`, as `"module": "nodenext"` writes them). Not
//! followed: bare package names, `paths` and `baseUrl` mappings, anything under `node_modules`,
//! and specifiers in `//` and `/* */` comments.
//!
//! Bounds: at most [`MAX_FILES_READ`] files are read per project, each at most
//! [`MAX_FILE_BYTES`] (larger ones are taken as importing nothing).

use std::collections::{HashSet, VecDeque};
use std::path::{Component, Path, PathBuf};

/// How many files one project's import scan reads at most.
pub const MAX_FILES_READ: usize = 20_000;

/// Largest file the scan reads, in bytes (4 MiB).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The files `roots` import through relative specifiers, transitively (canonical paths, the
/// roots themselves left out), outside `node_modules`.
pub fn imported_closure(roots: &[PathBuf], allow_js: bool) -> HashSet<PathBuf> {
    let mut seen: HashSet<PathBuf> = roots.iter().cloned().collect();
    let mut queue: VecDeque<PathBuf> = roots.iter().cloned().collect();
    let mut imported = HashSet::new();
    let mut read = 0;
    while let Some(file) = queue.pop_front() {
        if read >= MAX_FILES_READ {
            break;
        }
        read += 1;
        let Some(text) = read_small(&file) else {
            continue;
        };
        let Some(folder) = file.parent() else {
            continue;
        };
        for specifier in relative_specifiers(&text) {
            let Some(target) = resolve(folder, specifier, allow_js) else {
                continue;
            };
            if seen.insert(target.clone()) {
                imported.insert(target.clone());
                queue.push_back(target);
            }
        }
    }
    imported
}

fn read_small(file: &Path) -> Option<String> {
    let metadata = std::fs::metadata(file).ok()?;
    if metadata.len() > MAX_FILE_BYTES {
        return None;
    }
    std::fs::read_to_string(file).ok()
}

/// The relative module specifiers in `text` (`./a`, `../b/c.js`, `.`) that follow `from`,
/// `import` or `require`/`import(`, and the relative paths of triple-slash
/// `/// <reference path="…" />` directives (tsc adds those files to the program too).
pub fn relative_specifiers(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut found = reference_paths(text);
    let mut index = 0;
    while index < bytes.len() {
        let quote = bytes[index];
        // Comments name no module (a commented-out import made lspc check, and fail on, a file
        // tsc never compiles), and an apostrophe in one opens no string.
        if quote == b'/' && bytes.get(index + 1) == Some(&b'/') {
            index = bytes[index..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |at| index + at + 1);
            continue;
        }
        if quote == b'/' && bytes.get(index + 1) == Some(&b'*') {
            index = text[index + 2..]
                .find("*/")
                .map_or(bytes.len(), |at| index + 2 + at + 2);
            continue;
        }
        if quote != b'\'' && quote != b'"' && quote != b'`' {
            index += 1;
            continue;
        }
        let start = index + 1;
        let Some(length) = bytes[start..]
            .iter()
            .position(|&b| b == quote || b == b'\n')
        else {
            break;
        };
        let end = start + length;
        index = end + 1;
        if bytes[end] != quote {
            continue;
        }
        let literal = &text[start..end];
        let relative = literal == "."
            || literal == ".."
            || literal.starts_with("./")
            || literal.starts_with("../");
        // A template literal names a module only without substitutions (`import(\`./a\`)`).
        let constant = quote != b'`' || !literal.contains("${");
        if relative && constant && follows_import_keyword(&text[..start - 1]) {
            found.push(literal);
        }
    }
    found
}

/// The `path` of each `/// <reference path="…" />` line (any relative path: tsc resolves it
/// against the file's folder).
fn reference_paths(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("///")?.trim_start();
            let rest = rest.strip_prefix("<reference")?;
            let (_, value) = rest.split_once("path")?;
            let value = value.trim_start().strip_prefix('=')?.trim_start();
            let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let value = &value[1..];
            let path = &value[..value.find(quote)?];
            (!path.is_empty() && !path.starts_with('/')).then_some(path)
        })
        .collect()
}

/// Whether `before` (the text before a string literal's opening quote) ends with `from`,
/// `import` or `require(` / `import(`, spaces allowed.
fn follows_import_keyword(before: &str) -> bool {
    let trimmed = before.trim_end();
    let trimmed = trimmed
        .strip_suffix('(')
        .map_or(trimmed, |inner| inner.trim_end());
    let word_start = trimmed
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .map_or(0, |at| at + 1);
    let word = &trimmed[word_start..];
    let preceded_by_dot = trimmed[..word_start].ends_with('.');
    matches!(word, "from" | "import" | "require") && !preceded_by_dot
}

/// The file `specifier` names from `folder`, as tsc resolves a relative import; `None` when no
/// such file exists or it lies under `node_modules`.
pub fn resolve(folder: &Path, specifier: &str, allow_js: bool) -> Option<PathBuf> {
    let base = lexical_join(folder, specifier);
    let name = base.file_name()?.to_str()?.to_owned();
    let mut candidates: Vec<PathBuf> = Vec::new();
    let typescript_of = [
        (".js", &[".ts", ".tsx", ".d.ts"][..]),
        (".jsx", &[".tsx"][..]),
        (".mjs", &[".mts", ".d.mts"][..]),
        (".cjs", &[".cts", ".d.cts"][..]),
    ];
    for (js, typescript) in typescript_of {
        if let Some(stem) = name.strip_suffix(js) {
            for extension in typescript {
                candidates.push(base.with_file_name(format!("{stem}{extension}")));
            }
            if allow_js {
                candidates.push(base.clone());
            }
        }
    }
    let typescript = [".ts", ".tsx", ".mts", ".cts", ".d.ts"];
    if typescript.iter().any(|extension| name.ends_with(extension)) {
        candidates.push(base.clone());
    }
    let mut extensions: Vec<&str> = vec![".ts", ".tsx", ".d.ts"];
    if allow_js {
        extensions.extend([".js", ".jsx"]);
    }
    for extension in &extensions {
        candidates.push(base.with_file_name(format!("{name}{extension}")));
    }
    for extension in &extensions {
        candidates.push(base.join(format!("index{extension}")));
    }
    let found = candidates
        .into_iter()
        .find(|candidate| candidate.is_file())?;
    let found = found.canonicalize().ok()?;
    let in_node_modules = found
        .components()
        .any(|component| component.as_os_str() == "node_modules");
    (!in_node_modules).then_some(found)
}

/// `folder` joined with `relative`, `.` and `..` folded away without touching the disk.
fn lexical_join(folder: &Path, relative: &str) -> PathBuf {
    let mut joined = folder.to_path_buf();
    for component in Path::new(relative).components() {
        match component {
            Component::ParentDir => {
                joined.pop();
            }
            Component::Normal(part) => joined.push(part),
            _ => {}
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_relative_specifiers_of_imports_exports_and_requires() {
        let text = r#"import { a } from "./a";
import b from '../lib/b.js';
export * from './c'
import './side-effect';
const d = await import("./d");
const e = require ( './e' );
import pkg from "pkg";
const label = "./not-an-import";
obj.import('./method-call');
import type { F } from "./f";
const g = await import(`./g`);
const h = await import(`./h/${name}`);
/// <reference path="../types/globals.d.ts" />
/// <reference types="node" />
// legacy: import { old } from "./commented";
/* import './block-commented'; don't */ import './after-comment';
"#;
        assert_eq!(
            relative_specifiers(text),
            [
                "../types/globals.d.ts",
                "./a",
                "../lib/b.js",
                "./c",
                "./side-effect",
                "./d",
                "./e",
                "./f",
                "./g",
                "./after-comment"
            ]
        );
    }

    #[test]
    fn resolves_as_tsc_does_and_follows_imports_transitively() {
        let dir = std::env::temp_dir().join(format!("lspc-ts-imports-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for folder in ["src", "lib/util", "node_modules/pkg"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        let files = [
            (
                "src/index.ts",
                "import { h } from '../lib/helper.js';\nimport '../lib/util';\nimport '../node_modules/pkg/x';\n",
            ),
            ("lib/helper.ts", "export { deep } from './deep';\n"),
            ("lib/deep.tsx", "export const deep = 1;\n"),
            ("lib/util/index.ts", "export {};\n"),
            ("lib/unused.ts", "export {};\n"),
            ("node_modules/pkg/x.ts", "export {};\n"),
        ];
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let root = dir.canonicalize().unwrap();
        let closure = imported_closure(&[root.join("src/index.ts")], false);
        let mut names: Vec<String> = closure
            .iter()
            .map(|path| {
                path.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["lib/deep.tsx", "lib/helper.ts", "lib/util/index.ts"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
