//! Human-readable rendering of query results, as `lspc` prints them on stdout.
//!
//! Positions print as `path:line:col` (1-based, columns in characters) with `path` relative to
//! the workspace root, so editors and terminals can jump to them; a location is followed by two
//! spaces and its trimmed source line. Every rendering ends with a newline unless it is empty.

use std::fmt::Write as _;
use std::path::Path;

use super::{
    CallDirection, CallHierarchyResult, HierarchyItem, HoverResult, Location, LocationsResult,
    SignatureHelpResult, Symbol, TypeDirection, TypeHierarchyResult,
};
use crate::uri::relative_display;

/// `path:line:col` of a location, relative to `root`.
pub fn position_label(location: &Location, root: &Path) -> String {
    format!(
        "{}:{}:{}",
        relative_display(&location.path, root),
        location.line,
        location.column
    )
}

/// `path:line:col  source line` (the source part only when the line could be read).
pub fn location_line(location: &Location, root: &Path) -> String {
    let mut out = String::new();
    push_location_line(&mut out, location, root);
    out
}

/// [`location_line`] written onto `out` (issue 15: a `format!` per part cost a definition
/// about 1.5k instructions).
fn push_location_line(out: &mut String, location: &Location, root: &Path) {
    out.push_str(&relative_display(&location.path, root));
    // Without `write!`'s machinery (issue 15: this runs for every location of every result).
    out.push(':');
    super::push_decimal(out, location.line);
    out.push(':');
    super::push_decimal(out, location.column);
    if let Some(text) = location.line_text.as_deref().map(str::trim) {
        if !text.is_empty() {
            out.push_str("  ");
            out.push_str(text);
        }
    }
}

/// One [`location_line`] per location, each written straight into the text.
pub fn locations(result: &LocationsResult, root: &Path) -> String {
    let mut out = String::new();
    for location in &result.locations {
        push_location_line(&mut out, location, root);
        out.push('\n');
    }
    out
}

/// The hover text as is.
pub fn hover(result: &HoverResult) -> String {
    let mut text = String::with_capacity(result.text.len() + 1);
    text.push_str(&result.text);
    text.push('\n');
    text
}

/// A document's symbols as an indented tree: `name kind line:col`, two spaces per level.
pub fn symbol_tree(symbols: &[Symbol]) -> String {
    fn walk(symbols: &[Symbol], depth: usize, out: &mut String) {
        for symbol in symbols {
            let _ = writeln!(
                out,
                "{}{} {} {}:{}",
                "  ".repeat(depth),
                symbol.name,
                symbol.kind,
                symbol.location.line,
                symbol.location.column
            );
            walk(&symbol.children, depth + 1, out);
        }
    }
    let mut out = String::new();
    walk(symbols, 0, &mut out);
    out
}

/// Workspace symbols, one per line: `path:line:col  name kind` and ` (in container)`.
pub fn workspace_symbols(symbols: &[Symbol], root: &Path) -> String {
    let mut out = String::new();
    for symbol in symbols {
        let _ = write!(
            out,
            "{}  {} {}",
            position_label(&symbol.location, root),
            symbol.name,
            symbol.kind
        );
        if let Some(container) = &symbol.container {
            let _ = write!(out, " (in {container})");
        }
        out.push('\n');
    }
    out
}

/// `path:line:col  name kind` for a hierarchy item.
fn item_line(item: &HierarchyItem, root: &Path) -> String {
    format!(
        "{}  {} {}",
        position_label(&item.location, root),
        item.name,
        item.kind
    )
}

/// The prepared items, then (for a direction) a header and each call: the caller or callee
/// line, and its call sites indented by four spaces.
pub fn call_hierarchy(result: &CallHierarchyResult, root: &Path) -> String {
    let mut out = String::new();
    for item in &result.items {
        let _ = writeln!(out, "{}", item_line(item, root));
    }
    if let Some(direction) = result.direction {
        let _ = writeln!(
            out,
            "{}:",
            match direction {
                CallDirection::Incoming => "incoming calls",
                CallDirection::Outgoing => "outgoing calls",
            }
        );
        for call in &result.calls {
            let _ = writeln!(out, "  {}", item_line(&call.item, root));
            for site in &call.call_sites {
                let _ = writeln!(out, "    {}", location_line(site, root));
            }
        }
    }
    out
}

/// The prepared items, a `supertypes:`/`subtypes:` header, and the related types indented.
pub fn type_hierarchy(result: &TypeHierarchyResult, root: &Path) -> String {
    let mut out = String::new();
    for item in &result.items {
        let _ = writeln!(out, "{}", item_line(item, root));
    }
    let _ = writeln!(
        out,
        "{}:",
        match result.direction {
            TypeDirection::Supertypes => "supertypes",
            TypeDirection::Subtypes => "subtypes",
        }
    );
    for item in &result.types {
        let _ = writeln!(out, "  {}", item_line(item, root));
    }
    out
}

/// Each signature's label (the active one marked `>`), the active parameter, and documentation.
pub fn signature_help(result: &SignatureHelpResult) -> String {
    let mut out = String::new();
    let active = result.active_signature.unwrap_or(0) as usize;
    for (index, signature) in result.signatures.iter().enumerate() {
        let marker = if index == active && result.signatures.len() > 1 {
            "> "
        } else {
            ""
        };
        let _ = writeln!(out, "{marker}{}", signature.label);
        if index == active {
            if let Some(parameter) = result
                .active_parameter
                .and_then(|parameter| signature.parameters.get(parameter as usize))
            {
                let _ = writeln!(out, "active parameter: {parameter}");
            }
            if let Some(documentation) = &signature.documentation {
                let _ = writeln!(out, "{documentation}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{Call, Signature};
    use std::path::PathBuf;

    fn location(path: &str, line: u32, column: u32, text: Option<&str>) -> Location {
        Location {
            path: PathBuf::from(path),
            line,
            column,
            end_line: line,
            end_column: column + 1,
            line_text: text.map(str::to_owned),
        }
    }

    fn item(name: &str, kind: &str, at: Location) -> HierarchyItem {
        HierarchyItem {
            name: name.into(),
            kind: kind.into(),
            detail: None,
            location: at,
            raw: serde_json::Value::Null,
        }
    }

    #[test]
    fn human_renderings() {
        let root = Path::new("/w");
        let result = LocationsResult {
            locations: vec![
                location("/w/a.py", 3, 19, Some("  s = \"😀😀\"; total = a + 1")),
                location("/elsewhere/b.py", 1, 1, None),
                location("/w/src/c.py", 2, 5, Some(" \t ")),
            ],
            server: "pyright".into(),
            incomplete: None,
        };
        assert_eq!(
            locations(&result, root),
            "a.py:3:19  s = \"😀😀\"; total = a + 1\n/elsewhere/b.py:1:1\nsrc/c.py:2:5\n"
        );
        let lines: String = result
            .locations
            .iter()
            .map(|location| location_line(location, root) + "\n")
            .collect();
        assert_eq!(locations(&result, root), lines);

        let tree = vec![Symbol {
            name: "Shape".into(),
            kind: "class".into(),
            detail: None,
            location: location("/w/a.py", 1, 7, None),
            container: None,
            children: vec![Symbol {
                name: "area".into(),
                kind: "method".into(),
                detail: None,
                location: location("/w/a.py", 2, 9, None),
                container: Some("Shape".into()),
                children: vec![],
            }],
        }];
        assert_eq!(symbol_tree(&tree), "Shape class 1:7\n  area method 2:9\n");
        assert_eq!(
            workspace_symbols(&tree[0].children, root),
            "a.py:2:9  area method (in Shape)\n"
        );

        let calls = CallHierarchyResult {
            items: vec![item("twice", "function", location("/w/util.c", 2, 5, None))],
            calls: vec![Call {
                item: item("main", "function", location("/w/main.c", 2, 5, None)),
                call_sites: vec![location(
                    "/w/main.c",
                    2,
                    25,
                    Some("int main(void) { return twice(21); }"),
                )],
            }],
            direction: Some(CallDirection::Incoming),
            server: "clangd".into(),
            incomplete: None,
        };
        assert_eq!(
            call_hierarchy(&calls, root),
            "util.c:2:5  twice function\nincoming calls:\n  main.c:2:5  main function\n    main.c:2:25  int main(void) { return twice(21); }\n"
        );

        let types = TypeHierarchyResult {
            items: vec![item("Circle", "class", location("/w/s.ts", 3, 7, None))],
            direction: TypeDirection::Supertypes,
            types: vec![item("Shape", "interface", location("/w/s.ts", 1, 11, None))],
            server: "ts".into(),
            incomplete: None,
        };
        assert_eq!(
            type_hierarchy(&types, root),
            "s.ts:3:7  Circle class\nsupertypes:\n  s.ts:1:11  Shape interface\n"
        );

        let help = SignatureHelpResult {
            signatures: vec![Signature {
                label: "area(radius: number): number".into(),
                documentation: Some("Area.".into()),
                parameters: vec!["radius: number".into()],
            }],
            active_signature: Some(0),
            active_parameter: Some(0),
            server: "ts".into(),
        };
        assert_eq!(
            signature_help(&help),
            "area(radius: number): number\nactive parameter: radius: number\nArea.\n"
        );

        // pyright's per-signature activeParameter (the top-level one said 2), parsed and shown.
        let pyright = crate::query::parse_signature_help(
            &serde_json::json!({"activeParameter": 2, "activeSignature": 0, "signatures": [{
                "activeParameter": 1, "label": "(a: Unknown, b: Unknown) -> Unknown",
                "parameters": [{"label": [1, 11]}, {"label": [13, 23]}]}]}),
            "pyright".into(),
        )
        .unwrap();
        assert_eq!(
            signature_help(&pyright),
            "(a: Unknown, b: Unknown) -> Unknown\nactive parameter: b: Unknown\n"
        );
    }
}
