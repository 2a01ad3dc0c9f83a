//! Symbol results: `textDocument/documentSymbol` (LSP 3.17 §`textDocument_documentSymbol`),
//! `workspace/symbol`, and the items of call and type hierarchies.
//!
//! A document symbol answer is either hierarchical `DocumentSymbol[]` (`selectionRange`,
//! `children`) or flat `SymbolInformation[]` (`location`, `containerName`); both become
//! [`Symbol`]s (a flat answer gives symbols without children). `workspace/symbol` may also answer
//! `WorkspaceSymbol[]` whose `location` has no range (then the symbol is placed at 1:1).
//! Symbol positions are the selection range (the name), not the whole body.

use std::path::Path;

use serde_json::Value;

use super::locations::{parse_range, path_of_uri, SourceFiles};
use super::{HierarchyItem, Symbol};

/// The lowercase name of an LSP `SymbolKind` number (LSP 3.17 §`SymbolKind`, 1 to 26);
/// `"unknown"` for anything else.
pub fn symbol_kind_name(kind: Option<u64>) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    kind.and_then(|kind| usize::try_from(kind).ok())
        .and_then(|kind| kind.checked_sub(1))
        .and_then(|index| NAMES.get(index).copied())
        .unwrap_or("unknown")
}

fn kind_of(value: &Value) -> String {
    symbol_kind_name(value.get("kind").and_then(Value::as_u64)).to_owned()
}

fn string_field(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// Symbols of a `documentSymbol` or `workspace/symbol` answer. `document` is the path of the
/// queried file (hierarchical `DocumentSymbol`s carry no URI). `null` gives no symbols.
pub fn parse_symbols(
    value: &Value,
    document: Option<&Path>,
    files: &mut SourceFiles,
) -> Vec<Symbol> {
    let Some(items) = value.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| parse_symbol(item, document, None, files))
        .collect()
}

fn parse_symbol(
    item: &Value,
    document: Option<&Path>,
    container: Option<&str>,
    files: &mut SourceFiles,
) -> Option<Symbol> {
    let name = string_field(item, "name")?;
    if let Some(location) = item.get("location") {
        // SymbolInformation / WorkspaceSymbol.
        let path = path_of_uri(location.get("uri").and_then(Value::as_str)?)?;
        let range = location
            .get("range")
            .and_then(parse_range)
            .unwrap_or_default();
        return Some(Symbol {
            name,
            kind: kind_of(item),
            detail: None,
            location: files.location(&path, range),
            container: string_field(item, "containerName"),
            children: Vec::new(),
        });
    }
    // DocumentSymbol.
    let path = document?;
    let range = item
        .get("selectionRange")
        .and_then(parse_range)
        .or_else(|| item.get("range").and_then(parse_range))?;
    let children = item
        .get("children")
        .and_then(Value::as_array)
        .map(|children| {
            children
                .iter()
                .filter_map(|child| parse_symbol(child, document, Some(&name), files))
                .collect()
        })
        .unwrap_or_default();
    Some(Symbol {
        kind: kind_of(item),
        detail: string_field(item, "detail"),
        location: files.location(path, range),
        container: container.map(str::to_owned),
        children,
        name,
    })
}

/// A `CallHierarchyItem` or `TypeHierarchyItem` (same fields): the item's location is its
/// `selectionRange`. The raw JSON is kept to send back in `incomingCalls`/`supertypes` requests.
pub fn parse_hierarchy_item(value: &Value, files: &mut SourceFiles) -> Option<HierarchyItem> {
    let name = string_field(value, "name")?;
    let path = path_of_uri(value.get("uri").and_then(Value::as_str)?)?;
    let range = value
        .get("selectionRange")
        .and_then(parse_range)
        .or_else(|| value.get("range").and_then(parse_range))?;
    Some(HierarchyItem {
        name,
        kind: kind_of(value),
        detail: string_field(value, "detail"),
        location: files.location(&path, range),
        raw: value.clone(),
    })
}

/// Every item of a `prepareCallHierarchy`/`prepareTypeHierarchy`/`supertypes` answer.
pub fn parse_hierarchy_items(value: &Value, files: &mut SourceFiles) -> Vec<HierarchyItem> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| parse_hierarchy_item(item, files))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::PositionEncoding;
    use serde_json::json;
    use std::sync::Arc;

    fn r(line: u32, character: u32, end: u32) -> Value {
        json!({"start": {"line": line, "character": character}, "end": {"line": line, "character": end}})
    }

    /// Symbols as `name kind line:col [container]` lines, children indented.
    fn render(symbols: &[Symbol], depth: usize, out: &mut Vec<String>) {
        for symbol in symbols {
            out.push(format!(
                "{}{} {} {}:{}:{} {}",
                "  ".repeat(depth),
                symbol.name,
                symbol.kind,
                symbol.location.path.display(),
                symbol.location.line,
                symbol.location.column,
                symbol.container.as_deref().unwrap_or("-")
            ));
            render(&symbol.children, depth + 1, out);
        }
    }

    fn check(value: Value, expected: &[&str]) {
        let text: Arc<str> = "class Shape:\n    def área(self): pass\n😀 = 1\n".into();
        let path = Path::new("/w/a.py");
        let mut files = SourceFiles::new(PositionEncoding::Utf16);
        files.add_document(path, text);
        let symbols = parse_symbols(&value, Some(path), &mut files);
        let mut lines = Vec::new();
        render(&symbols, 0, &mut lines);
        assert_eq!(lines, expected, "{value}");
    }

    #[test]
    fn document_symbols_in_both_shapes() {
        // Hierarchical DocumentSymbol[]: selectionRange wins over range; children keep the tree.
        check(
            json!([{"name": "Shape", "kind": 5, "range": r(0, 0, 30), "selectionRange": r(0, 6, 11),
                    "children": [{"name": "área", "kind": 6, "detail": "(self)", "range": r(1, 4, 24),
                                  "selectionRange": r(1, 8, 12)}]},
                   {"name": "😀", "kind": 13, "range": r(2, 0, 6), "selectionRange": r(2, 0, 2)}]),
            &[
                "Shape class /w/a.py:1:7 -",
                "  área method /w/a.py:2:9 Shape",
                "😀 variable /w/a.py:3:1 -",
            ],
        );
        // Flat SymbolInformation[] with containerName.
        check(
            json!([{"name": "Shape", "kind": 5, "location": {"uri": "file:///w/a.py", "range": r(0, 6, 11)}},
                   {"name": "área", "kind": 6, "containerName": "Shape",
                    "location": {"uri": "file:///w/a.py", "range": r(1, 8, 12)}}]),
            &["Shape class /w/a.py:1:7 -", "área method /w/a.py:2:9 Shape"],
        );
        // WorkspaceSymbol without a range; unknown kinds; malformed entries skipped.
        check(
            json!([{"name": "x", "kind": 99, "location": {"uri": "file:///w/a.py"}},
                   {"kind": 5}, {"name": "y", "kind": 12}]),
            &["x unknown /w/a.py:1:1 -"],
        );
        check(json!(null), &[]);
        check(json!([]), &[]);
    }

    #[test]
    fn symbol_kinds_have_names() {
        let check =
            |kind: Option<u64>, expected: &str| assert_eq!(symbol_kind_name(kind), expected);
        check(Some(1), "file");
        check(Some(12), "function");
        check(Some(22), "enum member");
        check(Some(26), "type parameter");
        check(Some(0), "unknown");
        check(Some(27), "unknown");
        check(None, "unknown");
    }

    #[test]
    fn hierarchy_items_use_the_selection_range() {
        let mut files = SourceFiles::new(PositionEncoding::Utf8);
        files.add_document(
            Path::new("/w/u.c"),
            "int twice(int x) { return 2 * x; }\n".into(),
        );
        let value = json!([{"name": "twice", "kind": 12, "detail": "int (int)", "uri": "file:///w/u.c",
                            "range": r(0, 0, 34), "selectionRange": r(0, 4, 9), "data": "opaque"},
                           {"name": "broken"}]);
        let items = parse_hierarchy_items(&value, &mut files);
        assert_eq!(items.len(), 1);
        let item = &items[0];
        assert_eq!(
            (
                item.name.as_str(),
                item.kind.as_str(),
                item.detail.as_deref()
            ),
            ("twice", "function", Some("int (int)"))
        );
        assert_eq!((item.location.line, item.location.column), (1, 5));
        assert_eq!(item.raw["data"], "opaque");
    }
}
