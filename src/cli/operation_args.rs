//! The command line of every operation command (`lspc definition LOC`, `lspc rename LOC NEW_NAME`,
//! ...), generated from the operation definitions: positionals and flags become the operation's
//! JSON argument object, which [`Operation::from_arguments`] checks exactly as it checks a batch
//! line or an MCP call, so a bad argument reads the same everywhere.
//!
//! `LOC` is `FILE:LINE:COLUMN`, `FILE:LINE:NAME` (the first NAME on the line) or `FILE:LINE` with
//! `--symbol NAME`, in every command; lines and columns are 1-based, columns in characters. The
//! file may itself contain `:` (the numbers are taken from the end). `code-actions` also takes
//! `FILE:LINE` (one whole line) and `FILE:LINE-LINE`.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Command, UsageError};
use crate::operation::definitions::{find_operation, CliForm, OperationDef, ValueKind, OPERATIONS};
use crate::operation::{Defaults, Operation};
use crate::query::command::QueryFormat;

/// Whether `--NAME` (without dashes) is an operation flag, and whether it takes a value.
pub fn flag_takes_value(name: &str) -> Option<bool> {
    let flag = format!("--{name}");
    OPERATIONS
        .iter()
        .flat_map(|def| def.arguments.iter())
        .find_map(|(argument, _)| match argument.cli {
            CliForm::Flag(long) if long == flag => Some(false),
            CliForm::Option(long, _) if long == flag => Some(true),
            CliForm::Switches(switches) if switches.iter().any(|(long, _)| *long == flag) => {
                Some(false)
            }
            _ => None,
        })
}

/// Whether `name` is a command built from an operation definition.
pub fn is_operation_command(name: &str) -> bool {
    name != "check" && name != "apply-code-action" && OPERATIONS.iter().any(|def| def.name == name)
}

/// The JSON value of a command-line value for an argument of kind `kind`: a whole number for
/// 1-based arguments when it is one (so `0` reads as `got 0`, as in JSON), else the string.
fn cli_value(kind: ValueKind, text: &str) -> Value {
    match kind {
        ValueKind::OneBased if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text
            .parse::<u64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(text)),
        _ => Value::from(text),
    }
}

fn number_or_text(text: &str) -> Value {
    cli_value(ValueKind::OneBased, text)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// `LOC` into `file`, `line` and `column` or `symbol`. `symbol_given` says whether `--symbol`
/// supplies the column; `lines_ok` accepts `FILE:LINE` alone (a whole line, for code actions).
fn loc_arguments(
    command: &str,
    loc: &str,
    symbol_given: bool,
    lines_ok: bool,
    arguments: &mut Map<String, Value>,
) -> Result<(), UsageError> {
    let expected = || {
        UsageError(format!(
            "{command}: expected LOC as FILE:LINE:COLUMN, FILE:LINE:NAME or FILE:LINE with --symbol NAME, got {loc:?}"
        ))
    };
    let mut parts = loc.rsplitn(3, ':');
    let last = parts.next().unwrap_or("");
    let middle = parts.next();
    let first = parts.next().filter(|first| !first.is_empty());
    let mut put = |key: &str, value: Value| {
        arguments.insert(key.to_owned(), value);
    };
    match (first, middle) {
        // FILE:LINE:COLUMN or FILE:LINE:NAME.
        (Some(file), Some(line)) if is_number(line) && !last.is_empty() => {
            // `mux.go:313:8:9` read as file `mux.go:313`: when that is no file and `mux.go` is,
            // say the position has a part too many (a file name may hold colons).
            if let Some((shorter, number)) = file.rsplit_once(':') {
                let path = std::path::Path::new;
                if is_number(number) && !path(file).exists() && path(shorter).is_file() {
                    return Err(UsageError(format!(
                        "{command}: {loc:?} has a part too many: give FILE:LINE:COLUMN or \
                         FILE:LINE:NAME ({shorter} is the file)"
                    )));
                }
            }
            put("file", Value::from(file));
            put("line", number_or_text(line));
            if is_number(last) {
                put("column", number_or_text(last));
            } else if symbol_given {
                return Err(UsageError(format!(
                    "{command}: {loc:?} already names a symbol; give FILE:LINE with --symbol, or no --symbol"
                )));
            } else {
                put("symbol", Value::from(last));
            }
            Ok(())
        }
        // FILE:LINE (FILE may hold colons: everything before the last `:`).
        (_, Some(_)) if is_number(last) => {
            let file = &loc[..loc.len() - last.len() - 1];
            if !symbol_given && !lines_ok {
                // `a.py:+1:1` or `a.py:x:3` would otherwise read as file `a.py:+1`, line 1:
                // name the bad line (unless it looks like part of a file name).
                if let (Some(_), Some(bad)) = (first, middle) {
                    if bad.parse::<f64>().is_ok() || !bad.contains(['.', '/', '\\']) {
                        return Err(UsageError(format!(
                            "{command}: {loc:?}: line {bad:?} is not a whole number from 1"
                        )));
                    }
                }
                return Err(UsageError(format!(
                    "{command}: {loc:?} has no column: give FILE:LINE:COLUMN, FILE:LINE:NAME, or FILE:LINE with --symbol NAME"
                )));
            }
            put("file", Value::from(file));
            put("line", number_or_text(last));
            Ok(())
        }
        (Some(_), Some(line)) if !is_number(line) && !line.is_empty() => Err(UsageError(format!(
            "{command}: {loc:?}: line {line:?} is not a whole number from 1"
        ))),
        _ => Err(expected()),
    }
}

/// `FILE:LINE-LINE` into `file`, `line` and `end_line`; `None` when `text` is not a range.
fn range_arguments(text: &str, arguments: &mut Map<String, Value>) -> Option<()> {
    let (file, lines) = text.rsplit_once(':')?;
    let (start, end) = lines.split_once('-')?;
    if file.is_empty() || !is_number(start) || !is_number(end) {
        return None;
    }
    arguments.insert("file".to_owned(), Value::from(file));
    arguments.insert("line".to_owned(), number_or_text(start));
    arguments.insert("end_line".to_owned(), number_or_text(end));
    Some(())
}

/// What a command's positionals are, from its usage line.
fn positional_names(def: &OperationDef) -> Vec<&'static str> {
    def.usage
        .split_whitespace()
        .take_while(|word| !word.starts_with("--") && !word.starts_with('['))
        .collect()
}

/// One operation command: its positionals and flags (in the order given) into an
/// [`Operation`], checked by the shared checker.
pub fn operation_command(
    command: &str,
    positionals: &[OsString],
    flags: &[(String, Option<String>)],
    format: QueryFormat,
    timeout: Duration,
) -> Result<Command, UsageError> {
    let mut def = find_operation(command).expect("an operation command");
    // `code-actions LOC --apply TITLE` applies the action titled TITLE.
    let applying = command == "code-actions" && flags.iter().any(|(flag, _)| flag == "--apply");
    if applying {
        def = find_operation("apply-code-action").expect("apply-code-action is defined");
    }
    let mut arguments = Map::new();
    let symbol_given = flags.iter().any(|(flag, _)| flag == "--symbol");
    let names = positional_names(def);
    if positionals.len() != names.len() {
        return Err(match (names.len(), positionals.len()) {
            (1, 0) => UsageError(format!(
                "{command}: missing {}",
                match names[0] {
                    "LOC" => "LOC (FILE:LINE:COLUMN, FILE:LINE:NAME or FILE:LINE --symbol NAME)",
                    other => other,
                }
            )),
            (1, _) => UsageError(format!(
                "{command}: unexpected argument {:?}",
                positionals[1].to_string_lossy()
            )),
            (_, count) => UsageError(format!(
                "{command}: expected {}, got {count} argument(s)",
                names.join(" ")
            )),
        });
    }
    for (name, value) in names.iter().zip(positionals) {
        let text = value.to_string_lossy();
        match *name {
            "LOC" => loc_arguments(command, &text, symbol_given, false, &mut arguments)?,
            "LOC|FILE:LINE|FILE:LINE-LINE" => {
                if range_arguments(&text, &mut arguments).is_none() {
                    loc_arguments(command, &text, symbol_given, true, &mut arguments)?;
                }
            }
            "FILE" => {
                arguments.insert("file".to_owned(), Value::from(text.as_ref()));
            }
            other => {
                // A positional named after its argument (QUERY, NEW_NAME).
                let argument = def
                    .arguments
                    .iter()
                    .find(|(argument, _)| argument.cli == CliForm::Positional(other))
                    .map(|(argument, _)| *argument)
                    .unwrap_or_else(|| panic!("{} has no argument for {other}", def.name));
                arguments.insert(argument.name.to_owned(), Value::from(text.as_ref()));
            }
        }
    }
    for (flag, value) in flags {
        let found =
            def.arguments
                .iter()
                .find_map(|(argument, _)| match argument.cli {
                    CliForm::Flag(long) if long == flag => Some((argument, Value::Bool(true))),
                    CliForm::Option(long, _) if long == flag => Some((
                        argument,
                        cli_value(argument.value, value.as_deref().unwrap_or("")),
                    )),
                    CliForm::Switches(switches) => switches
                        .iter()
                        .find(|(long, _)| long == flag)
                        .map(|(_, chosen)| {
                            let value = match (argument.value, *chosen) {
                                (ValueKind::Bool, "true") => Value::Bool(true),
                                (ValueKind::Bool, "false") => Value::Bool(false),
                                _ => Value::from(*chosen),
                            };
                            (argument, value)
                        }),
                    _ => None,
                });
        let Some((argument, value)) = found else {
            if applying && flag == "--apply" {
                continue;
            }
            return Err(UsageError(format!("{command}: {flag} does not apply")));
        };
        if let (CliForm::Switches(switches), Some(previous)) =
            (argument.cli, arguments.get(argument.name))
        {
            if previous != &value {
                let names: Vec<&str> = switches.iter().map(|(long, _)| *long).collect();
                return Err(UsageError(format!(
                    "{command}: give {}, not both",
                    names.join(" or ")
                )));
            }
        }
        arguments.insert(argument.name.to_owned(), value);
    }
    if applying {
        arguments.insert("apply".to_owned(), Value::Bool(true));
    }
    let operation = Operation::from_arguments(def.name, &arguments, Defaults::CLI)
        .map_err(|error| UsageError(error.0))?;
    Ok(Command::Operation {
        operation,
        format,
        timeout,
        severity: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(loc: &str, symbol_given: bool) -> Result<Value, String> {
        let mut map = Map::new();
        loc_arguments("hover", loc, symbol_given, false, &mut map)
            .map(|()| Value::Object(map))
            .map_err(|error| error.0)
    }

    /// `mux.go:313:8:9` (a helper's trial on go-chi/chi) was read as file `mux.go:313`, then
    /// "cannot read mux.go:313: no such file".
    #[test]
    fn a_position_with_a_part_too_many_is_named_so() {
        let folder = std::env::temp_dir().join(format!("lspc-loc-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("mux.go");
        std::fs::write(&file, "package chi\n").unwrap();
        let file = file.display().to_string();
        let loc = format!("{file}:313:8:9");
        assert_eq!(
            arguments(&loc, false),
            Err(format!(
                "hover: {loc:?} has a part too many: give FILE:LINE:COLUMN or FILE:LINE:NAME \
                 ({file} is the file)"
            ))
        );
        let fine = arguments(&format!("{file}:313:8"), false).unwrap();
        assert_eq!(fine["file"], serde_json::json!(file));
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn locs_read_into_arguments() {
        use serde_json::json;
        let check = |loc: &str, symbol_given: bool, expected: Result<Value, &str>| {
            assert_eq!(
                arguments(loc, symbol_given),
                expected.map_err(str::to_owned),
                "{loc}"
            );
        };
        check(
            "a.py:3:19",
            false,
            Ok(json!({"file": "a.py", "line": 3, "column": 19})),
        );
        check(
            "a.py:3:total",
            false,
            Ok(json!({"file": "a.py", "line": 3, "symbol": "total"})),
        );
        check("a.py:3", true, Ok(json!({"file": "a.py", "line": 3})));
        check(
            "we:ird.py:2:4",
            false,
            Ok(json!({"file": "we:ird.py", "line": 2, "column": 4})),
        );
        check(
            "we:ird.py:2",
            true,
            Ok(json!({"file": "we:ird.py", "line": 2})),
        );
        // A bad line is named as the line; 0 is left to the shared checker ("got 0").
        check(
            "a.py:0:3",
            false,
            Ok(json!({"file": "a.py", "line": 0, "column": 3})),
        );
        check(
            "a.py:x:3",
            false,
            Err("hover: \"a.py:x:3\": line \"x\" is not a whole number from 1"),
        );
        check(
            "a.py:+1:1",
            false,
            Err("hover: \"a.py:+1:1\": line \"+1\" is not a whole number from 1"),
        );
        check(
            "a.py:3",
            false,
            Err("hover: \"a.py:3\" has no column: give FILE:LINE:COLUMN, FILE:LINE:NAME, or FILE:LINE with --symbol NAME"),
        );
        check(
            "a.py:3:x",
            true,
            Err("hover: \"a.py:3:x\" already names a symbol; give FILE:LINE with --symbol, or no --symbol"),
        );
        check(
            "a.py",
            false,
            Err("hover: expected LOC as FILE:LINE:COLUMN, FILE:LINE:NAME or FILE:LINE with --symbol NAME, got \"a.py\""),
        );
    }
}
