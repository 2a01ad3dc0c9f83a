//! TypeScript's file set: the `files`, `include` and `exclude` of the `tsconfig.json` (or
//! `jsconfig.json`) nearest to the file, looked up from its folder towards the root, following
//! `extends` (a relative path or a package under `node_modules`, a string or an array), as
//! `tsc -p` computes its root files (TSConfig reference: "files", "include", "exclude",
//! "extends").
//!
//! Rules kept: `files` and `include` of the nearest configuration that sets them win over its
//! bases' (paths relative to the file that wrote them); without either, `include` is `**/*`; with
//! `files` only, `include` is empty; `exclude` defaults to `node_modules`, `bower_components`,
//! `jspm_packages` and `outDir`, and never removes a file listed in `files`. An include entry
//! whose last component has no `*`, `?` or `.` names a folder. JavaScript files count only with
//! `allowJs` (always in a `jsconfig.json`). A base that cannot be found is left out (tsc reports
//! it as TS6053, which lspc passes on from the server).
//!
//! A file the nearest configuration leaves out still belongs to the project when a configuration
//! it names in `references` (not inherited through `extends`; a folder means its
//! `tsconfig.json`) includes it, followed further: `tsc -b` checks the referenced projects, and
//! tsserver opens such a file in the referenced project. That is the solution-style layout of
//! every `npm create vite` TypeScript template (`tsconfig.json` with `"files": []` and references
//! to `tsconfig.app.json` and `tsconfig.node.json`), whose sources were all skipped as
//! "outside tsconfig's include" while `tsc -b` reported their errors.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::pattern::{relative_to, PathPattern};
use super::{jsonc, FileSet, ProjectError};
use crate::diagnostics::Diagnostic;

/// tsc skips these at any depth when matching wildcards, and excludes them by default.
const DEFAULT_EXCLUDE: &[&str] = &["**/node_modules", "**/bower_components", "**/jspm_packages"];
const TS_EXTENSIONS: &[&str] = &[".ts", ".tsx", ".mts", ".cts"];
const JS_EXTENSIONS: &[&str] = &[".js", ".jsx", ".mjs", ".cjs"];

/// Whether `file`'s name ends in one of the extensions tsc takes (TypeScript's or, with
/// `allowJs`, JavaScript's), any case.
pub(super) fn is_typescript_or_javascript(file: &Path) -> bool {
    let Some(name) = file.file_name() else {
        return false;
    };
    let name = name.to_string_lossy().to_lowercase();
    TS_EXTENSIONS
        .iter()
        .chain(JS_EXTENSIONS)
        .any(|ext| name.ends_with(ext))
}

/// A pattern and the folder it is relative to.
#[derive(Debug, Clone)]
struct Anchored {
    folder: PathBuf,
    pattern: PathPattern,
    /// An include entry naming a folder (covers everything below it) rather than files.
    names_folder: bool,
}

/// One resolved configuration.
#[derive(Debug, Clone)]
struct Project {
    files: Vec<PathBuf>,
    include: Vec<Anchored>,
    exclude: Vec<Anchored>,
    allow_js: bool,
    /// The configuration files its `references` name.
    references: Vec<PathBuf>,
    /// The declaration files its `compilerOptions.typeRoots` and `types` bring into the
    /// program ([`type_root_entries`]).
    type_files: Vec<PathBuf>,
    /// The configuration file itself.
    config: PathBuf,
}

/// How many referenced configurations one file's verdict may look at (a guard against huge or
/// cyclic reference graphs; tsc reports cycles itself).
const MAX_REFERENCES_FOLLOWED: usize = 64;

/// The TypeScript file set below `root`; configurations are read once per folder.
#[derive(Debug)]
pub struct TsconfigFiles {
    root: PathBuf,
    by_folder: std::cell::RefCell<HashMap<PathBuf, Option<std::rc::Rc<Project>>>>,
    /// Configurations by file, for `references`.
    by_file: std::cell::RefCell<HashMap<PathBuf, Option<std::rc::Rc<Project>>>>,
    errors: std::cell::RefCell<Vec<ProjectError>>,
    /// `extends` entries that name no file (tsc's TS6053), in the order met.
    missing_bases: std::cell::RefCell<Vec<Diagnostic>>,
    /// Per configuration file, the files its root files import from outside them
    /// ([`super::ts_imports`]), computed when a file it leaves out is first asked about.
    imported: std::cell::RefCell<HashMap<PathBuf, std::rc::Rc<HashSet<PathBuf>>>>,
}

impl TsconfigFiles {
    pub fn new(root: &Path) -> TsconfigFiles {
        TsconfigFiles {
            root: root.to_path_buf(),
            by_folder: Default::default(),
            by_file: Default::default(),
            errors: Default::default(),
            missing_bases: Default::default(),
            imported: Default::default(),
        }
    }

    /// Whether a `tsconfig.json`/`jsconfig.json` at or above `folder` (inside the root) governs
    /// it, one that could be read.
    pub(super) fn governs(&self, folder: &Path) -> bool {
        self.project_for(folder).is_some()
    }

    /// The configuration file that governs `folder` ([`Self::governs`]).
    pub(super) fn configuration_of(&self, folder: &Path) -> Option<PathBuf> {
        self.project_for(folder)
            .map(|project| project.config.clone())
    }

    fn project_for(&self, folder: &Path) -> Option<std::rc::Rc<Project>> {
        if let Some(found) = self.by_folder.borrow().get(folder) {
            return found.clone();
        }
        let own = ["tsconfig.json", "jsconfig.json"]
            .iter()
            .map(|name| folder.join(name))
            .find(|file| file.is_file());
        let found = match own {
            Some(file) => self.project_in(&file),
            None if folder != self.root && folder.starts_with(&self.root) => {
                folder.parent().and_then(|parent| self.project_for(parent))
            }
            None => None,
        };
        self.by_folder
            .borrow_mut()
            .insert(folder.to_path_buf(), found.clone());
        found
    }

    /// The configuration `file`, read once.
    fn project_in(&self, file: &Path) -> Option<std::rc::Rc<Project>> {
        if let Some(found) = self.by_file.borrow().get(file) {
            return found.clone();
        }
        let found = match load_project(file, &mut self.missing_bases.borrow_mut()) {
            Ok(project) => Some(std::rc::Rc::new(project)),
            Err(error) => {
                self.errors.borrow_mut().push(error);
                None
            }
        };
        self.by_file
            .borrow_mut()
            .insert(file.to_path_buf(), found.clone());
        found
    }

    /// The files `project`'s root files import from outside them, once per configuration: its
    /// root files are its `files` and the files below its folder it includes.
    fn imported_by(&self, project: &Project) -> std::rc::Rc<HashSet<PathBuf>> {
        if let Some(found) = self.imported.borrow().get(&project.config) {
            return std::rc::Rc::clone(found);
        }
        let folder = project.config.parent().unwrap_or(&self.root).to_path_buf();
        let listed = crate::walk::list_files(&self.root, &[folder]).unwrap_or_else(|error| {
            log::debug!(
                "cannot list the files of {}: {error}",
                project.config.display()
            );
            Vec::new()
        });
        let mut roots: Vec<PathBuf> = project.files.clone();
        roots.extend(project.type_files.iter().cloned());
        roots.extend(
            listed.into_iter().filter(|file| {
                is_typescript_or_javascript(file) && verdict(project, file).is_none()
            }),
        );
        let mut imported = super::ts_imports::imported_closure(&roots, project.allow_js);
        imported.extend(project.type_files.iter().cloned());
        let imported = std::rc::Rc::new(imported);
        log::debug!(
            "{}: {} root files import {} more",
            project.config.display(),
            roots.len(),
            imported.len()
        );
        self.imported
            .borrow_mut()
            .insert(project.config.clone(), std::rc::Rc::clone(&imported));
        imported
    }

    /// Whether a configuration `project` references, directly or further, includes `file`.
    fn referenced_project_includes(&self, project: &Project, file: &Path) -> bool {
        let mut queue: std::collections::VecDeque<PathBuf> =
            project.references.iter().cloned().collect();
        let mut seen: Vec<PathBuf> = Vec::new();
        while let Some(config) = queue.pop_front() {
            if seen.contains(&config) || seen.len() >= MAX_REFERENCES_FOLLOWED {
                continue;
            }
            seen.push(config.clone());
            let Some(referenced) = self.project_in(&config) else {
                continue;
            };
            if verdict(&referenced, file).is_none() {
                return true;
            }
            queue.extend(referenced.references.iter().cloned());
        }
        false
    }
}

/// Why `project` alone leaves `file` out (`outside` its files and include, or `excluded`).
fn verdict(project: &Project, file: &Path) -> Option<&'static str> {
    if project.files.iter().any(|listed| listed == file) {
        return None;
    }
    let name = file.file_name()?.to_string_lossy().to_lowercase();
    let is_ts = TS_EXTENSIONS.iter().any(|ext| name.ends_with(ext));
    let is_js = JS_EXTENSIONS.iter().any(|ext| name.ends_with(ext));
    let included = project.include.iter().any(|anchored| {
        let Some(relative) = relative_to(file, &anchored.folder) else {
            return false;
        };
        let matched = anchored
            .pattern
            .includes_like_tsc(&relative, anchored.names_folder);
        matched && (is_ts || (is_js && project.allow_js))
    });
    if !included {
        return Some("outside");
    }
    let excluded = project.exclude.iter().any(|anchored| {
        relative_to(file, &anchored.folder)
            .is_some_and(|relative| anchored.pattern.covers(&relative))
    });
    excluded.then_some("excluded")
}

impl FileSet for TsconfigFiles {
    fn errors(&self) -> Vec<ProjectError> {
        self.errors.borrow().clone()
    }

    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.missing_bases.borrow().clone()
    }

    fn leaves_out(&self, file: &Path) -> Option<&'static str> {
        let project = self.project_for(file.parent()?)?;
        let reason = verdict(&project, file)?;
        let in_program = self.referenced_project_includes(&project, file)
            || self.imported_by(&project).contains(file);
        (!in_program).then_some(reason)
    }
}

/// What one file (and its bases) set, before defaults.
#[derive(Debug, Default)]
struct Layer {
    files: Option<Vec<PathBuf>>,
    include: Option<Vec<Anchored>>,
    exclude: Option<Vec<Anchored>>,
    allow_js: Option<bool>,
    out_dir: Option<PathBuf>,
    /// `compilerOptions.typeRoots`, each against the folder of the file that set it.
    type_roots: Option<Vec<PathBuf>>,
    /// `compilerOptions.types`.
    types: Option<Vec<String>>,
    /// This file's own `references` (never inherited).
    references: Vec<PathBuf>,
}

fn load_project(file: &Path, missing_bases: &mut Vec<Diagnostic>) -> Result<Project, ProjectError> {
    let mut seen = Vec::new();
    let layer = load_layer(file, &mut seen, missing_bases)?;
    let folder = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let is_jsconfig = file.file_name().is_some_and(|name| name == "jsconfig.json");
    let files = layer.files.clone().unwrap_or_default();
    let include = match (&layer.files, layer.include) {
        (_, Some(include)) => include,
        (Some(_), None) => Vec::new(),
        (None, None) => anchored_list(&folder, &["**/*".to_string()], true),
    };
    let exclude = match layer.exclude {
        Some(exclude) => exclude,
        None => {
            let mut names: Vec<String> = DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect();
            if let Some(out_dir) = layer
                .out_dir
                .as_ref()
                .and_then(|dir| relative_to(dir, &folder))
            {
                names.push(out_dir);
            }
            anchored_list(&folder, &names, false)
        }
    };
    Ok(Project {
        files,
        include,
        exclude,
        allow_js: layer.allow_js.unwrap_or(is_jsconfig),
        type_files: type_root_entries(layer.type_roots.as_deref(), layer.types.as_deref()),
        references: layer.references,
        config: file.to_path_buf(),
    })
}

/// Reads `file` and its bases; the file's own settings override its bases'.
fn load_layer(
    file: &Path,
    seen: &mut Vec<PathBuf>,
    missing_bases: &mut Vec<Diagnostic>,
) -> Result<Layer, ProjectError> {
    if seen.iter().any(|earlier| earlier == file) || seen.len() > 16 {
        // A cycle of `extends`: tsc reports it (TS18000); lspc stops following.
        return Ok(Layer::default());
    }
    seen.push(file.to_path_buf());
    let text = super::read(file)?;
    let value = jsonc::parse(&text).map_err(|message| ProjectError {
        file: file.to_path_buf(),
        message,
    })?;
    let folder = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut layer = Layer::default();
    let bases: Vec<&str> = match value.get("extends") {
        Some(Value::String(base)) => vec![base.as_str()],
        Some(Value::Array(bases)) => bases.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for base in bases {
        let Some(base_file) = resolve_extends(&folder, base) else {
            let diagnostic = missing_base(file, &text, base);
            if !missing_bases.contains(&diagnostic) {
                missing_bases.push(diagnostic);
            }
            continue;
        };
        let base_layer = load_layer(&base_file, seen, missing_bases)?;
        layer.files = base_layer.files.or(layer.files);
        layer.include = base_layer.include.or(layer.include);
        layer.exclude = base_layer.exclude.or(layer.exclude);
        layer.allow_js = base_layer.allow_js.or(layer.allow_js);
        layer.out_dir = base_layer.out_dir.or(layer.out_dir);
        layer.type_roots = base_layer.type_roots.or(layer.type_roots);
        layer.types = base_layer.types.or(layer.types);
    }
    let strings = |key: &str| string_array(Some(&value), key);
    if let Some(files) = strings("files") {
        layer.files = Some(
            files
                .iter()
                .map(|name| crate::uri::canonical(&folder.join(name)))
                .collect(),
        );
    }
    if let Some(include) = strings("include") {
        layer.include = Some(anchored_list(&folder, &include, true));
    }
    if let Some(exclude) = strings("exclude") {
        layer.exclude = Some(anchored_list(&folder, &exclude, false));
    }
    let options = value.get("compilerOptions");
    if let Some(allow_js) = options
        .and_then(|options| options.get("allowJs").or_else(|| options.get("checkJs")))
        .and_then(Value::as_bool)
    {
        layer.allow_js = Some(allow_js);
    }
    if let Some(out_dir) = options
        .and_then(|options| options.get("outDir"))
        .and_then(Value::as_str)
    {
        layer.out_dir = Some(folder.join(out_dir));
    }
    let option_strings = |key: &str| string_array(options, key);
    if let Some(type_roots) = option_strings("typeRoots") {
        layer.type_roots = Some(type_roots.iter().map(|root| folder.join(root)).collect());
    }
    if let Some(types) = option_strings("types") {
        layer.types = Some(types);
    }
    layer.references = value
        .get("references")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|reference| reference.get("path")?.as_str())
        .map(|path| {
            let named = crate::uri::canonical(&folder.join(path));
            if named.is_dir() {
                named.join("tsconfig.json")
            } else {
                named
            }
        })
        .collect();
    Ok(layer)
}

/// The strings of the array `object[key]`, its other items left out; `None` when there is no
/// such array.
fn string_array(object: Option<&Value>, key: &str) -> Option<Vec<String>> {
    let array = object?.get(key)?.as_array()?;
    Some(
        array
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    )
}

/// The declaration files `compilerOptions.typeRoots` and `types` bring into the program,
/// canonical: for each name of `types`, the declaration file its package folder `ROOT/NAME`'s
/// `package.json` names (`typings`, `types`, then `main`: [`declaration_at`]), else its
/// `index.d.ts`, else `ROOT/NAME.d.ts`, in the first root that has one, as tsc resolves a type
/// reference. A helper's trial: with `"typeRoots": ["./types"]`, `"types":
/// ["globals"]` and `"include": ["src"]`, tsc reports the errors of `types/globals/index.d.ts`
/// and `lspc check` skipped it as outside the include. Without `types` none: TypeScript 6
/// includes no type root's folders then (5 included them all), and without `typeRoots` the
/// roots are the `node_modules/@types` folders, whose files lspc never checks.
fn type_root_entries(type_roots: Option<&[PathBuf]>, types: Option<&[String]>) -> Vec<PathBuf> {
    let (Some(type_roots), Some(types)) = (type_roots, types) else {
        return Vec::new();
    };
    let entry_of = |root: &Path, name: &str| -> Option<PathBuf> {
        let package = root.join(name);
        let manifest = super::read(&package.join("package.json"))
            .ok()
            .and_then(|text| jsonc::parse(&text).ok());
        let declared = ["typings", "types", "main"]
            .iter()
            .filter_map(|field| manifest.as_ref()?.get(field)?.as_str())
            .find_map(|named| declaration_at(&package.join(named)));
        declared
            .or_else(|| Some(package.join("index.d.ts")).filter(|file| file.is_file()))
            .or_else(|| Some(root.join(format!("{name}.d.ts"))).filter(|file| file.is_file()))
    };
    types
        .iter()
        .filter_map(|name| type_roots.iter().find_map(|root| entry_of(root, name)))
        .map(|file| crate::uri::canonical(&file))
        .collect()
}

/// The declaration file a `package.json` field names, as tsc finds it: the file itself when it
/// is a `.d.ts`, else with `.d.ts` added or put in place of a `.js`/`.mjs`/`.cjs` extension
/// (`"types": "lib/main"`, `"main": "lib/index.js"`), else the `index.d.ts` of the folder it
/// names.
fn declaration_at(named: &Path) -> Option<PathBuf> {
    let text = named.to_string_lossy();
    let stem = [".js", ".mjs", ".cjs"]
        .iter()
        .find_map(|extension| text.strip_suffix(extension))
        .unwrap_or(&text);
    [
        Some(named.to_path_buf()).filter(|_| text.ends_with(".d.ts")),
        Some(PathBuf::from(format!("{text}.d.ts"))),
        Some(PathBuf::from(format!("{stem}.d.ts"))),
        Some(named.join("index.d.ts")),
    ]
    .into_iter()
    .flatten()
    .find(|file| file.is_file())
}

/// tsc's TS6053 for an `extends` entry naming no file, at the entry's string literal (the
/// first `"base"` after the `"extends"` key; line 1 column 1 when it cannot be found), with tsc's
/// own message. 1-based lines and character columns, exclusive end.
fn missing_base(file: &Path, text: &str, base: &str) -> Diagnostic {
    let literal = serde_json::to_string(base).unwrap_or_default();
    let start = text
        .find("\"extends\"")
        .and_then(|key| text[key..].find(&literal).map(|at| key + at));
    let (line, column, end_column) = match start {
        Some(start) => {
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |at| at + 1);
            let column = text[line_start..start].chars().count() + 1;
            (line, column, column + literal.chars().count())
        }
        None => (1, 1, 1),
    };
    Diagnostic {
        path: file.to_path_buf(),
        line: line as u32,
        column: column as u32,
        end_line: line as u32,
        end_column: end_column as u32,
        severity: crate::diagnostics::Severity::Error,
        message: format!("File '{base}' not found."),
        source: Some("lspc".to_string()),
        code: Some("TS6053".to_string()),
        server: "lspc".to_string(),
    }
}

fn anchored_list(folder: &Path, patterns: &[String], include: bool) -> Vec<Anchored> {
    patterns
        .iter()
        .filter_map(|text| {
            let last = text.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            // `./`, `.` and `..` name folders too: vite's `packages/vite/src/node/tsconfig.json`
            // has `"include": ["./"]`, which tsc reads as everything below it, and lspc
            // read as a file named `.` (every file "outside tsconfig's include").
            let names_folder = !include
                || matches!(last, "." | "..")
                || !(last.contains('*') || last.contains('?') || last.contains('.'));
            Some(Anchored {
                folder: folder.to_path_buf(),
                pattern: PathPattern::new(text)?,
                names_folder,
            })
        })
        .collect()
}

/// The file an `extends` value names: a relative or absolute path (`.json` added when missing),
/// or a package under the nearest `node_modules` (its `tsconfig.json`, or the file named).
fn resolve_extends(folder: &Path, base: &str) -> Option<PathBuf> {
    let with_json = |path: PathBuf| -> Option<PathBuf> {
        if path.is_file() {
            return Some(path);
        }
        let mut extended = path.into_os_string();
        extended.push(".json");
        let extended = PathBuf::from(extended);
        extended.is_file().then_some(extended)
    };
    if base.starts_with("./") || base.starts_with("../") || Path::new(base).is_absolute() {
        return with_json(folder.join(base));
    }
    for ancestor in folder.ancestors() {
        let package = ancestor.join("node_modules").join(base);
        if package.is_dir() {
            let file = package.join("tsconfig.json");
            if file.is_file() {
                return Some(file);
            }
        }
        if let Some(file) = with_json(package) {
            return Some(file);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_exclude_and_extends() {
        let root = std::env::temp_dir().join(format!("lspc-tsconfig-{}", std::process::id()));
        std::fs::create_dir_all(root.join("config")).unwrap();
        std::fs::write(
            root.join("config/base.json"),
            r#"{ "include": ["lib"], "compilerOptions": { "allowJs": true } }"#,
        )
        .unwrap();
        std::fs::write(
            root.join("tsconfig.json"),
            "{\n // comment\n \"extends\": [\"./config/base\", \"./missing.json\"],\n \"include\": [\"source\", \"*.ts\"],\n}",
        )
        .unwrap();
        let files = TsconfigFiles::new(&root);
        assert_eq!(files.leaves_out(&root.join("source/a.ts")), None);
        assert_eq!(files.leaves_out(&root.join("source/deep/b.js")), None);
        assert_eq!(files.leaves_out(&root.join("index.ts")), None);
        assert_eq!(files.leaves_out(&root.join("test/a.ts")), Some("outside"));
        assert_eq!(files.leaves_out(&root.join("lib/a.ts")), Some("outside"));
        assert_eq!(
            files.leaves_out(&root.join("source/node_modules/x.ts")),
            Some("excluded")
        );
        assert_eq!(files.leaves_out(&root.join("source/a.py")), Some("outside"));
        let missing = files.diagnostics();
        assert_eq!(missing.len(), 1);
        assert_eq!(
            (missing[0].line, missing[0].column, missing[0].end_column),
            (3, 31, 47)
        );
        assert_eq!(missing[0].message, "File './missing.json' not found.");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A trial on vitejs/vite: `"include": ["./"]` and `["."]` name the configuration's folder,
    /// as `tsc -p` reads them; a file pattern still names files.
    #[test]
    fn dot_includes_name_folders() {
        let root = std::env::temp_dir().join(format!("lspc-tsconfig-dot-{}", std::process::id()));
        for (include, a_ts) in [
            (r#"["./"]"#, None),
            (r#"["."]"#, None),
            (r#"["./*.ts"]"#, Some("outside")),
        ] {
            std::fs::create_dir_all(root.join("node")).unwrap();
            std::fs::write(
                root.join("node/tsconfig.json"),
                format!(r#"{{ "include": {include} }}"#),
            )
            .unwrap();
            let files = TsconfigFiles::new(&root);
            assert_eq!(
                files.leaves_out(&root.join("node/src/a.ts")),
                a_ts,
                "{include}"
            );
            assert_eq!(files.leaves_out(&root.join("node/b.ts")), None, "{include}");
            std::fs::remove_dir_all(&root).unwrap();
        }
    }

    #[test]
    fn references_add_their_files_but_are_not_inherited() {
        let root = std::env::temp_dir().join(format!("lspc-tsconfig-refs-{}", std::process::id()));
        std::fs::create_dir_all(root.join("packages/lib")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        let write = |name: &str, text: &str| std::fs::write(root.join(name), text).unwrap();
        // A folder reference means its tsconfig.json; a cycle back to the root ends the search.
        write(
            "tsconfig.json",
            r#"{ "files": [], "references": [{ "path": "./tsconfig.app.json" }, { "path": "packages/lib" }] }"#,
        );
        write(
            "tsconfig.app.json",
            r#"{ "include": ["src"], "exclude": ["src/gen"], "references": [{ "path": "." }] }"#,
        );
        write(
            "packages/lib/tsconfig.json",
            r#"{ "include": ["lib"], "references": [{ "path": "../../tsconfig.json" }] }"#,
        );
        // `extends` gives include, never references.
        write(
            "other/tsconfig.json",
            r#"{ "extends": "../tsconfig.app.json", "include": ["a.ts"] }"#,
        );
        let files = TsconfigFiles::new(&root);
        assert_eq!(files.leaves_out(&root.join("src/main.ts")), None);
        assert_eq!(files.leaves_out(&root.join("packages/lib/lib/x.ts")), None);
        assert_eq!(
            files.leaves_out(&root.join("packages/lib/y.ts")),
            Some("outside")
        );
        assert_eq!(
            files.leaves_out(&root.join("scripts/a.ts")),
            Some("outside")
        );
        assert_eq!(
            files.leaves_out(&root.join("src/gen/g.ts")),
            Some("outside")
        );
        assert_eq!(files.leaves_out(&root.join("other/a.ts")), None);
        assert_eq!(
            files.leaves_out(&root.join("other/src/b.ts")),
            Some("outside")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
