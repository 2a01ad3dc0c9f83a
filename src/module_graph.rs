//! A test of the crate's own shape: the module graph has no cycle (issue 12).
//!
//! The modules are found by following `mod NAME;` declarations (and their `#[path]` attributes)
//! from `src/lib.rs`; one module is one file. Every path in a module's code (comment lines and the
//! trailing `#[cfg(test)] mod tests` left out) that starts with `crate::`, `super::`, `self::` or
//! the name of one of its child modules is an edge to the deepest module it names, so a parent's
//! `pub use child::Item` re-export is an edge to the child. A `mod` declaration is not an edge, and
//! neither is a path to one's own ancestor (a child may always use what its parents define):
//! everything else must form no cycle. On the code before issue 12 this finds `cli` ⇄ `check`,
//! `batch`, `query::command`, `edit::commands`, `mcp::cli`, and `mcp::tools` ⇄ `mcp::edit_tools`.
//! The test fails naming each cycle and one source line per edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module: its path below the crate (`["engine", "event_loop"]`) and its file.
struct Module {
    path: Vec<String>,
    file: PathBuf,
}

/// Follows `mod NAME;` declarations from `file` (the file of module `path`).
fn collect_modules(path: Vec<String>, file: PathBuf, modules: &mut Vec<Module>) {
    let text = std::fs::read_to_string(&file).unwrap_or_else(|error| {
        panic!("cannot read {}: {error}", file.display());
    });
    let folder = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let owns_folder = matches!(
        file.file_name().and_then(|name| name.to_str()),
        Some("lib.rs" | "main.rs" | "mod.rs")
    );
    let child_folder = if owns_folder {
        folder.clone()
    } else {
        folder.join(file.file_stem().unwrap_or_default())
    };
    let mut path_attribute: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("#[path = \"") {
            path_attribute = rest.split('"').next().map(str::to_owned);
            continue;
        }
        if line.starts_with("#[") || line.starts_with("//") {
            continue;
        }
        let declaration = strip_visibility(line);
        let child = declaration
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'))
            .filter(|name| name.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if let Some(name) = child {
            let child_file = match path_attribute.take() {
                Some(relative) => folder.join(relative),
                None => {
                    let flat = child_folder.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        child_folder.join(name).join("mod.rs")
                    }
                }
            };
            let mut child_path = path.clone();
            child_path.push(name.to_owned());
            collect_modules(child_path, child_file, modules);
        } else {
            path_attribute = None;
        }
    }
    modules.push(Module { path, file });
}

fn strip_visibility(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix("pub(") {
        return rest.split_once(") ").map_or(line, |(_, rest)| rest);
    }
    line.strip_prefix("pub ").unwrap_or(line)
}

/// The code of a file with comment lines blanked (line numbers kept) and without its trailing
/// `#[cfg(test)]` module.
fn code_of(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("//") {
                ""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path starting with `crate::`, `super::`, `self::` or `CHILD::` (one of `children`) in
/// `code`, braces of `use` trees expanded (`use super::{a, b::c}` gives `super::a` and
/// `super::b::c`), with its 1-based line.
fn referenced_paths(code: &str, children: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut index = 0;
    while index < code.len() {
        let rest = &code[index..];
        let first_segment = ["crate", "super", "self"]
            .into_iter()
            .chain(children.iter().map(String::as_str))
            .any(|name| rest.starts_with(name) && rest[name.len()..].starts_with("::"));
        let starts_path = first_segment
            && (index == 0 || !is_ident_byte(bytes[index - 1]) && bytes[index - 1] != b':');
        if !starts_path {
            index += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let line = code[..index].matches('\n').count() + 1;
        let (paths, used) = expand_tree(rest);
        for path in paths {
            found.push((line, path));
        }
        index += used.max(1);
    }
    found
}

fn is_ident_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Reads one path or use tree at the start of `text` (`a::b`, `a::{b, c::{d}}`): the paths it
/// names and the bytes read.
fn expand_tree(text: &str) -> (Vec<Vec<String>>, usize) {
    let bytes = text.as_bytes();
    let mut position = 0;
    let mut prefix: Vec<String> = Vec::new();
    loop {
        while position < bytes.len() && bytes[position].is_ascii_whitespace() {
            position += 1;
        }
        if position < bytes.len() && bytes[position] == b'{' {
            position += 1;
            let mut paths = Vec::new();
            loop {
                while position < bytes.len()
                    && (bytes[position].is_ascii_whitespace() || bytes[position] == b',')
                {
                    position += 1;
                }
                if position >= bytes.len() || bytes[position] == b'}' {
                    position += 1;
                    break;
                }
                let (inner, used) = expand_tree(&text[position..]);
                for path in inner {
                    let mut full = prefix.clone();
                    full.extend(path);
                    paths.push(full);
                }
                position += used.max(1);
                // Skip `as alias` and anything else up to the next item of the list.
                while position < bytes.len() && !matches!(bytes[position], b',' | b'}') {
                    position += 1;
                }
            }
            return (paths, position);
        }
        let start = position;
        while position < bytes.len() && is_ident_byte(bytes[position]) {
            position += 1;
        }
        if position == start {
            return (vec![prefix], position);
        }
        prefix.push(text[start..position].to_owned());
        if text[position..].starts_with("::") {
            position += 2;
        } else {
            return (vec![prefix], position);
        }
    }
}

/// Resolves `reference` (from module `from`) to the deepest known module it names.
fn resolve(from: &[String], reference: &[String], known: &BTreeSet<Vec<String>>) -> Vec<String> {
    let mut base: Vec<String> = from.to_vec();
    let mut segments = reference;
    match segments.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            segments = &segments[1..];
        }
        Some("self") => segments = &segments[1..],
        _ => {
            while segments.first().map(String::as_str) == Some("super") {
                base.pop();
                segments = &segments[1..];
            }
        }
    }
    let mut deepest = base.clone();
    let mut candidate = base;
    for segment in segments {
        candidate.push(segment.clone());
        if known.contains(&candidate) {
            deepest = candidate.clone();
        }
    }
    deepest
}

/// Whether a path from module `from` to module `to` is an edge of the graph: not to itself, not to
/// one of its ancestors.
fn is_edge(from: &[String], to: &[String]) -> bool {
    !from.starts_with(to)
}

/// Every cycle of `graph`, each once, as the list of its nodes.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components; a component of two or more nodes holds a cycle.
    struct Search<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, node: &'a str) {
            let number = self.index.len();
            self.index.insert(node, number);
            self.low.insert(node, number);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.components.push(component);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !search.index.contains_key(node.as_str()) {
            search.visit(node);
        }
    }
    search.components
}

fn name_of(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

#[test]
fn the_module_graph_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = Vec::new();
    collect_modules(Vec::new(), src.join("lib.rs"), &mut modules);
    assert!(
        modules.len() > 40,
        "found only {} modules under {}",
        modules.len(),
        src.display()
    );
    let known: BTreeSet<Vec<String>> = modules.iter().map(|module| module.path.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut evidence: BTreeMap<(String, String), String> = BTreeMap::new();
    for module in &modules {
        let text = std::fs::read_to_string(&module.file).unwrap();
        let children: Vec<String> = known
            .iter()
            .filter(|path| path.len() == module.path.len() + 1 && path.starts_with(&module.path))
            .map(|path| path[module.path.len()].clone())
            .collect();
        for (line, reference) in referenced_paths(&code_of(&text), &children) {
            let target = resolve(&module.path, &reference, &known);
            if !is_edge(&module.path, &target) {
                continue;
            }
            let (from, to) = (name_of(&module.path), name_of(&target));
            evidence
                .entry((from.clone(), to.clone()))
                .or_insert_with(|| {
                    let file = module.file.strip_prefix(&src).unwrap_or(&module.file);
                    format!("{}:{line}: {}", file.display(), reference.join("::"))
                });
            graph.entry(from).or_default().insert(to);
        }
    }
    let found = cycles(&graph);
    let mut report = String::new();
    for component in &found {
        report.push_str(&format!("cycle among {}:\n", component.join(", ")));
        for ((from, to), example) in &evidence {
            if component.contains(from) && component.contains(to) {
                report.push_str(&format!("  {from} -> {to}   ({example})\n"));
            }
        }
    }
    assert!(found.is_empty(), "the module graph has cycles:\n{report}");
}

#[test]
fn use_trees_expand() {
    let paths = |code: &str| -> Vec<String> {
        referenced_paths(code, &["child".to_owned()])
            .into_iter()
            .map(|(line, path)| format!("{line}:{}", path.join("::")))
            .collect()
    };
    assert_eq!(
        paths("use super::{a, b::{c, d as e}, f::*};\nx(crate::g::h(1));"),
        [
            "1:super::a",
            "1:super::b::c",
            "1:super::b::d",
            "1:super::f",
            "2:crate::g::h"
        ]
    );
    assert_eq!(
        paths("use super::super::settle::PublishInfo;"),
        ["1:super::super::settle::PublishInfo"]
    );
    assert_eq!(
        paths("pub use child::{A, B};\nself::x::y()"),
        ["1:child::A", "1:child::B", "2:self::x::y"]
    );
    assert!(paths("let my_crate::x = 1; foo::super::y; children::z; a::child::b").is_empty());
}

#[test]
fn paths_resolve_to_the_deepest_module_and_ancestors_are_no_edge() {
    let path = |text: &str| -> Vec<String> { text.split("::").map(str::to_owned).collect() };
    let known: BTreeSet<Vec<String>> = [
        path("engine"),
        path("engine::settle"),
        path("engine::event_loop"),
        path("cli"),
    ]
    .into_iter()
    .collect();
    let check = |from: &str, reference: &str, expected: &str, edge: bool| {
        let target = resolve(&path(from), &path(reference), &known);
        assert_eq!(target, path(expected), "{from}: {reference}");
        assert_eq!(is_edge(&path(from), &target), edge, "{from}: {reference}");
    };
    check(
        "engine::event_loop::lifecycle",
        "super::super::settle::PublishInfo",
        "engine::settle",
        true,
    );
    check(
        "engine::event_loop::lifecycle",
        "super::State",
        "engine::event_loop",
        false,
    );
    check("engine::event_loop", "crate::engine::Op", "engine", false);
    check("engine", "event_loop::run", "engine::event_loop", true);
    check("check", "crate::cli::EXIT_OK", "cli", true);
    check("engine", "self::settle::x", "engine::settle", true);
}
