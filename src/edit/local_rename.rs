//! Whether a rename is of a name local to one function (a parameter, a local variable, a nested
//! function), so that no other file can name it and the search for leftovers in other files
//! (`leftovers.rs`) is skipped.
//!
//! Why: a rename of a function-local `value` in sindresorhus/ky listed 243 whole-word places in
//! other files as "not renamed", opened 32 of them in tsserver to ask again (6.4 s), and their
//! diagnostics (test files outside the tsconfig, checked with default options) reached the agent
//! as new (a new user's trial).
//!
//! The rule: the server's rename edits one file only (no other file, no resource operation), and
//! every edited range lies inside the range of one function, method or constructor of that file's
//! hierarchical `textDocument/documentSymbol` answer (LSP 3.17 §`DocumentSymbol`: `kind` 12, 6 or
//! 9) and outside its `selectionRange` (its own name: renaming the function itself is not local);
//! or inside one variable or constant (13, 14: an arrow function's parameter, which tsserver
//! lists under the constant holding the function) and on neither its name nor the name of one
//! of its members (an object literal's property, which other files may use).
//! A name that is declared outside the function (a module's function called inside it, an
//! attribute set in `__init__` and read in another method) has an edit outside it. A flat
//! `SymbolInformation[]` answer has no `selectionRange`, so it proves nothing. And the name's
//! `textDocument/definition` must lie on an edited range of that file ([`declared_in_edit`]): a
//! server that renamed in the open file only (clangd without a compilation database, asked at a
//! call of a header's function inside `main`) edits a use inside one function and not the
//! declaration. Ranges are compared as the server sent them (one file, one encoding).

use lsp_types::Range;
use serde_json::Value;

use crate::query::locations::parse_range as range;

/// `Function`, `Method` and `Constructor` (LSP 3.17 §`SymbolKind`).
const FUNCTION_KINDS: [u64; 3] = [12, 6, 9];

/// `Variable` and `Constant`: `const isRequest = (value: unknown) => …` is tsserver's constant,
/// with no function symbol for the arrow function it holds.
const VARIABLE_KINDS: [u64; 2] = [13, 14];

/// `Method`, `Property`, `Field`, `Constructor`, `EnumMember`, `Event` and `Operator`: a member a
/// variable's value (an object literal, a class expression) lets other files use.
const MEMBER_KINDS: [u64; 7] = [6, 7, 8, 9, 22, 24, 25];

fn contains(outer: &Range, inner: &Range) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

fn overlaps(a: &Range, b: &Range) -> bool {
    a.start < b.end && b.start < a.end || a.start == b.start
}

/// The ranges a `WorkspaceEdit` (`changes` or `documentChanges`) edits, when it edits only the
/// document `is_target` accepts the URI of; `None` when it edits another document, has a
/// resource operation, or cannot be read.
fn edited_ranges(edit: &Value, is_target: &dyn Fn(&str) -> bool) -> Option<Vec<Range>> {
    let mut ranges = Vec::new();
    let mut push_edits = |edits: &Value| -> Option<()> {
        for text_edit in edits.as_array()? {
            ranges.push(range(text_edit.get("range")?)?);
        }
        Some(())
    };
    if let Some(changes) = edit.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            let uri = change.pointer("/textDocument/uri")?.as_str()?;
            if change.get("kind").is_some() || !is_target(uri) {
                return None;
            }
            push_edits(change.get("edits")?)?;
        }
    } else {
        for (uri, edits) in edit.get("changes")?.as_object()? {
            if !is_target(uri) {
                return None;
            }
            push_edits(edits)?;
        }
    }
    (!ranges.is_empty()).then_some(ranges)
}

/// The innermost function of `symbols` (and its children) holding every range of `edited`
/// outside its own name: its name.
fn enclosing(symbols: &[Value], edited: &[Range]) -> Option<String> {
    for symbol in symbols {
        let Some(full) = symbol.get("range").and_then(range) else {
            continue;
        };
        if !edited.iter().all(|edit| contains(&full, edit)) {
            continue;
        }
        let children = symbol
            .get("children")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(inner) = enclosing(children, edited) {
            return Some(inner);
        }
        let Some(name_range) = symbol.get("selectionRange").and_then(range) else {
            continue;
        };
        let kind = symbol.get("kind").and_then(Value::as_u64).unwrap_or(0);
        let on_name = |range: Range| edited.iter().any(|edit| overlaps(&range, edit));
        // A variable's own members are not its locals.
        let on_member = || {
            children.iter().any(|child| {
                child
                    .get("kind")
                    .and_then(Value::as_u64)
                    .is_some_and(|kind| MEMBER_KINDS.contains(&kind))
                    && child
                        .get("selectionRange")
                        .and_then(range)
                        .is_none_or(on_name)
            })
        };
        let local =
            FUNCTION_KINDS.contains(&kind) || VARIABLE_KINDS.contains(&kind) && !on_member();
        if local && !on_name(name_range) {
            return symbol.get("name")?.as_str().map(str::to_owned);
        }
    }
    None
}

/// The function a rename `edit` stays inside (see the module doc), given the edited file's
/// `textDocument/documentSymbol` answer; `None` when the rename may reach other files.
pub fn local_to(edit: &Value, is_target: &dyn Fn(&str) -> bool, symbols: &Value) -> Option<String> {
    let edited = edited_ranges(edit, is_target)?;
    enclosing(symbols.as_array()?, &edited)
}

/// Whether a `textDocument/definition` answer (LSP 3.17: `Location`, `Location[]` or
/// `LocationLink[]`) puts every declaration of the renamed name on a range `edit` edits in the
/// target document: a name local to a function is declared in it, and its rename edits the
/// declaration too. `false` for an empty answer (nothing proves the name local).
pub fn declared_in_edit(
    edit: &Value,
    is_target: &dyn Fn(&str) -> bool,
    definition: &Value,
) -> bool {
    let Some(edited) = edited_ranges(edit, is_target) else {
        return false;
    };
    let locations = match definition {
        Value::Array(locations) => locations.as_slice(),
        Value::Object(_) => std::slice::from_ref(definition),
        _ => return false,
    };
    let declared_in_edit = |location: &Value| {
        let uri = location
            .get("targetUri")
            .or_else(|| location.get("uri"))
            .and_then(Value::as_str);
        let name = location
            .get("targetSelectionRange")
            .or_else(|| location.get("range"))
            .and_then(range);
        match (uri, name) {
            (Some(uri), Some(name)) => {
                is_target(uri) && edited.iter().any(|edit| overlaps(&name, edit))
            }
            _ => false,
        }
    };
    !locations.is_empty() && locations.iter().all(declared_in_edit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(line: u64, start: u64, end: u64) -> Value {
        json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
    }

    fn span(start: u64, end: u64) -> Value {
        json!({"start": {"line": start, "character": 0}, "end": {"line": end, "character": 80}})
    }

    /// `def outer(value):` on line 0 (name at 4..9), its body to line 5, with `def inner():` on
    /// line 2 (name at 8..13, body to line 3); `class C:` on lines 7-9 with method `m`.
    fn symbols() -> Value {
        json!([
            {"name": "outer", "kind": 12, "range": span(0, 5), "selectionRange": at(0, 4, 9),
             "children": [
                {"name": "value", "kind": 13, "range": at(0, 10, 15), "selectionRange": at(0, 10, 15)},
                {"name": "inner", "kind": 12, "range": span(2, 3), "selectionRange": at(2, 8, 13)}
             ]},
            {"name": "C", "kind": 5, "range": span(7, 9), "selectionRange": at(7, 6, 7),
             "children": [
                {"name": "m", "kind": 6, "range": span(8, 9), "selectionRange": at(8, 8, 9)}
             ]}
        ])
    }

    fn local(edits: Value) -> Option<String> {
        let is_target = |uri: &str| uri == "file:///w/a.py";
        local_to(&edits, &is_target, &symbols())
    }

    fn changes(ranges: &[Value]) -> Value {
        let edits: Vec<Value> = ranges
            .iter()
            .map(|range| json!({"range": range, "newText": "renamed"}))
            .collect();
        json!({"changes": {"file:///w/a.py": edits}})
    }

    /// benhoyt/inih without a compilation database: clangd renames `ini_parse` at its call in
    /// `main` in that file only, so the one edit lies inside `main`; the definition (in
    /// `ini.c`, or a declaration elsewhere in the file) is not edited, so the name is not local.
    #[test]
    fn a_name_declared_outside_the_edit_is_not_local() {
        let is_target = |uri: &str| uri == "file:///w/a.py";
        let edit = changes(&[at(1, 4, 9), at(4, 11, 16)]);
        let location = |uri: &str, range: Value| json!({"uri": uri, "range": range});
        let declared = |definition: Value| declared_in_edit(&edit, &is_target, &definition);
        assert!(!declared(location("file:///w/ini.c", at(1, 4, 9))));
        assert!(!declared(json!([location(
            "file:///w/a.py",
            at(0, 10, 15)
        )])));
        assert!(!declared(json!([])));
        assert!(!declared(Value::Null));
        assert!(declared(location("file:///w/a.py", at(1, 4, 9))));
        assert!(declared(json!([{
            "targetUri": "file:///w/a.py",
            "targetRange": span(1, 2),
            "targetSelectionRange": at(1, 4, 9)
        }])));
        // One declaration edited, another not (a prototype in a header): not local.
        assert!(!declared(json!([
            location("file:///w/a.py", at(1, 4, 9)),
            location("file:///w/a.h", at(3, 4, 9))
        ])));
    }

    #[test]
    fn a_parameter_or_a_nested_function_is_local() {
        // `value`: the parameter and two uses in the body.
        assert_eq!(
            local(changes(&[at(0, 10, 15), at(1, 4, 9), at(4, 11, 16)])),
            Some("outer".to_owned())
        );
        // A local of `inner`, used in `inner` only: the innermost function.
        assert_eq!(
            local(changes(&[at(3, 8, 9), at(3, 12, 13)])),
            Some("inner".to_owned())
        );
        // `inner` itself, declared and called in `outer`: local to `outer`.
        assert_eq!(
            local(changes(&[at(2, 8, 13), at(4, 4, 9)])),
            Some("outer".to_owned())
        );
        // The same as documentChanges.
        let document_changes = json!({"documentChanges": [{
            "textDocument": {"uri": "file:///w/a.py", "version": 3},
            "edits": [{"range": at(1, 4, 9), "newText": "x"}, {"range": at(4, 11, 16), "newText": "x"}]
        }]});
        assert_eq!(local(document_changes), Some("outer".to_owned()));
    }

    #[test]
    fn an_arrow_functions_parameter_is_local_to_its_constant() {
        // `const isRequest = (value: unknown) =>\n  value instanceof Request;` (tsserver: a
        // constant without children); `const options = {value: 1, other: value};` (a property).
        let symbols = json!([
            {"name": "isRequest", "kind": 14, "range": span(0, 1), "selectionRange": at(0, 6, 15)},
            {"name": "options", "kind": 14, "range": span(3, 3), "selectionRange": at(3, 6, 13),
             "children": [
                {"name": "value", "kind": 7, "range": at(3, 17, 25), "selectionRange": at(3, 17, 22)},
                {"name": "other", "kind": 7, "range": at(3, 27, 39), "selectionRange": at(3, 27, 32)}
             ]}
        ]);
        let is_target = |uri: &str| uri == "file:///w/a.py";
        assert_eq!(
            local_to(
                &changes(&[at(0, 19, 24), at(1, 2, 7)]),
                &is_target,
                &symbols
            ),
            Some("isRequest".to_owned())
        );
        // The constant's own name, and a property of an object literal, are not.
        assert_eq!(
            local_to(&changes(&[at(0, 6, 15)]), &is_target, &symbols),
            None
        );
        assert_eq!(
            local_to(&changes(&[at(3, 17, 22)]), &is_target, &symbols),
            None
        );
    }

    #[test]
    fn anything_that_may_reach_another_file_is_not() {
        // The function's own name.
        assert_eq!(local(changes(&[at(0, 4, 9), at(6, 0, 5)])), None);
        assert_eq!(local(changes(&[at(0, 4, 9)])), None);
        // A method's name (inside a class, which is no function).
        assert_eq!(local(changes(&[at(8, 8, 9)])), None);
        // Edits in two functions, or at module level.
        assert_eq!(local(changes(&[at(1, 4, 9), at(8, 12, 13)])), None);
        assert_eq!(local(changes(&[at(6, 0, 5)])), None);
        // Another file, a resource operation, no edit at all.
        let two_files = json!({"changes": {"file:///w/a.py": [{"range": at(1, 4, 9), "newText": "x"}],
                                           "file:///w/b.py": [{"range": at(1, 4, 9), "newText": "x"}]}});
        assert_eq!(local(two_files), None);
        let rename_file = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///w/a.py", "version": 3},
             "edits": [{"range": at(1, 4, 9), "newText": "x"}]},
            {"kind": "rename", "oldUri": "file:///w/a.py", "newUri": "file:///w/b.py"}]});
        assert_eq!(local(rename_file), None);
        assert_eq!(local(json!({"changes": {}})), None);
        // A flat SymbolInformation answer proves nothing.
        let flat = json!([{"name": "outer", "kind": 12,
                           "location": {"uri": "file:///w/a.py", "range": span(0, 5)}}]);
        let is_target = |uri: &str| uri == "file:///w/a.py";
        assert_eq!(local_to(&changes(&[at(1, 4, 9)]), &is_target, &flat), None);
    }
}
