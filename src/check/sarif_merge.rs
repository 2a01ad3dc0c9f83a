//! `lspc sarif-merge FILE…`: join the SARIF outputs of `lspc check --shard K/N` jobs into one
//! SARIF 2.1.0 log, for tools that want a single file.
//!
//! Runs of the same tool (`tool.driver.name`) become one run: results are concatenated in input
//! order, rules are merged by `id` (each result's `ruleIndex` renumbered), invocations are joined
//! into one whose `executionSuccessful` holds only when every input's did, and the per-shard
//! `automationDetails` is replaced by the unsharded category `lspc/`. Runs of other tools are kept
//! as they are. Inputs whose `%SRCROOT%` differ are refused: their relative paths would not mean
//! the same files.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Why the merge failed. Messages name the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    Io { path: PathBuf, message: String },
    InvalidInput { path: PathBuf, message: String },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Io { path, message } => {
                write!(f, "sarif-merge: cannot read {}: {message}", path.display())
            }
            MergeError::InvalidInput { path, message } => {
                write!(f, "sarif-merge: {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for MergeError {}

/// Reads and merges `paths` (at least one) into one SARIF document.
///
/// Errors: an unreadable file, a file that is not a SARIF 2.1.0 log, or inputs with different
/// `%SRCROOT%` roots for the same tool.
pub fn merge_files(paths: &[PathBuf]) -> Result<Value, MergeError> {
    let mut logs = Vec::with_capacity(paths.len());
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|error| MergeError::Io {
            path: path.clone(),
            message: error.to_string(),
        })?;
        let log: Value = serde_json::from_str(text.trim())
            .map_err(|error| invalid(path, format!("not JSON: {error}")))?;
        logs.push((path.as_path(), log));
    }
    merge(&logs)
}

fn invalid(path: &Path, message: String) -> MergeError {
    MergeError::InvalidInput {
        path: path.to_path_buf(),
        message,
    }
}

/// Merges parsed logs, each with the path it came from (for error messages).
pub fn merge(logs: &[(&Path, Value)]) -> Result<Value, MergeError> {
    let mut merged_runs: Vec<Value> = Vec::new();
    // For each merged run: the rule ids in order, and the root it was first seen with.
    let mut rule_ids: Vec<Vec<String>> = Vec::new();
    let mut roots: Vec<(Value, PathBuf)> = Vec::new();
    for (path, log) in logs {
        if log["version"] != "2.1.0" {
            return Err(invalid(
                path,
                "not a SARIF 2.1.0 log (\"version\" is not \"2.1.0\")".to_owned(),
            ));
        }
        let Some(runs) = log["runs"].as_array() else {
            return Err(invalid(path, "\"runs\": expected an array".to_owned()));
        };
        for (n_run, run) in runs.iter().enumerate() {
            let Some(name) = run["tool"]["driver"]["name"].as_str() else {
                return Err(invalid(
                    path,
                    format!("runs[{n_run}].tool.driver.name: missing"),
                ));
            };
            let root = run["originalUriBaseIds"]["%SRCROOT%"].clone();
            let existing = merged_runs
                .iter()
                .position(|merged| merged["tool"]["driver"]["name"] == name);
            let Some(index) = existing else {
                let mut first = run.clone();
                let mut ids = Vec::new();
                renumber(&mut first, &mut ids, Some(&mut Vec::new()), path, n_run)?;
                if first.get("automationDetails").is_some() {
                    first["automationDetails"] = json!({ "id": "lspc/" });
                }
                merged_runs.push(first);
                rule_ids.push(ids);
                roots.push((root, path.to_path_buf()));
                continue;
            };
            if roots[index].0 != root {
                return Err(invalid(
                    path,
                    format!(
                        "its %SRCROOT% {} differs from {} in {}",
                        root,
                        roots[index].0,
                        roots[index].1.display()
                    ),
                ));
            }
            let mut run = run.clone();
            let mut new_rules = Vec::new();
            renumber(
                &mut run,
                &mut rule_ids[index],
                Some(&mut new_rules),
                path,
                n_run,
            )?;
            let target = &mut merged_runs[index];
            if let Some(rules) = target["tool"]["driver"]["rules"].as_array_mut() {
                rules.extend(new_rules);
            }
            if let Some(results) = run["results"].as_array() {
                match target["results"].as_array_mut() {
                    Some(existing) => existing.extend(results.iter().cloned()),
                    None => target["results"] = Value::Array(results.clone()),
                }
            }
            merge_invocations(target, &run);
        }
    }
    Ok(json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": merged_runs,
    }))
}

/// Maps `run`'s rules into `ids` (the merged run's rule ids), rewriting each result's
/// `ruleIndex`; rules not yet known are appended to `ids` and pushed to `new_rules`.
fn renumber(
    run: &mut Value,
    ids: &mut Vec<String>,
    new_rules: Option<&mut Vec<Value>>,
    path: &Path,
    n_run: usize,
) -> Result<(), MergeError> {
    let rules = run["tool"]["driver"]["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let first_run = ids.is_empty();
    let mut mapping = Vec::with_capacity(rules.len());
    let mut added = Vec::new();
    for (n, rule) in rules.iter().enumerate() {
        let Some(id) = rule["id"].as_str() else {
            return Err(invalid(
                path,
                format!("runs[{n_run}].tool.driver.rules[{n}].id: missing"),
            ));
        };
        let index = match ids.iter().position(|known| known == id) {
            Some(index) if !first_run => index,
            _ => {
                ids.push(id.to_owned());
                added.push(rule.clone());
                ids.len() - 1
            }
        };
        mapping.push(index);
    }
    if let Some(results) = run["results"].as_array_mut() {
        for (n, result) in results.iter_mut().enumerate() {
            let Some(old) = result.get("ruleIndex") else {
                continue;
            };
            let new = old
                .as_u64()
                .and_then(|old| mapping.get(old as usize))
                .ok_or_else(|| {
                    invalid(
                        path,
                        format!("runs[{n_run}].results[{n}].ruleIndex: {old} names no rule"),
                    )
                })?;
            result["ruleIndex"] = json!(new);
        }
    }
    if let Some(new_rules) = new_rules {
        if !first_run {
            *new_rules = added;
        }
    }
    Ok(())
}

/// Joins `run`'s invocations into `target`'s first one.
fn merge_invocations(target: &mut Value, run: &Value) {
    let Some(invocations) = run["invocations"].as_array() else {
        return;
    };
    if target["invocations"].as_array().is_none_or(Vec::is_empty) {
        target["invocations"] = Value::Array(invocations.clone());
        return;
    }
    for invocation in invocations {
        let joined = &mut target["invocations"][0];
        let successful = joined["executionSuccessful"].as_bool().unwrap_or(true)
            && invocation["executionSuccessful"].as_bool().unwrap_or(true);
        joined["executionSuccessful"] = json!(successful);
        if let Some(notifications) = invocation["toolExecutionNotifications"].as_array() {
            match joined["toolExecutionNotifications"].as_array_mut() {
                Some(existing) => existing.extend(notifications.iter().cloned()),
                None => joined["toolExecutionNotifications"] = Value::Array(notifications.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(rules: &[&str], results: &[(&str, usize)], ok: bool, k: u32) -> Value {
        json!({
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "lspc", "rules": rules.iter().map(|id| json!({"id": id})).collect::<Vec<_>>()}},
                "automationDetails": {"id": format!("lspc/shard-{k}-of-2/")},
                "originalUriBaseIds": {"%SRCROOT%": {"uri": "file:///w/"}},
                "invocations": [{"executionSuccessful": ok, "toolExecutionNotifications": if ok { json!([]) } else { json!([{"message": {"text": "t"}}]) }}],
                "results": results.iter().map(|(message, rule)| json!({"ruleId": rules[*rule], "ruleIndex": rule, "message": {"text": message}})).collect::<Vec<_>>(),
            }],
        })
    }

    #[test]
    fn rules_are_merged_and_results_renumbered() {
        let one = shard(&["a", "b"], &[("1", 1), ("2", 0)], true, 1);
        let two = shard(&["b", "c"], &[("3", 0), ("4", 1)], false, 2);
        let merged = merge(&[(Path::new("1.sarif"), one), (Path::new("2.sarif"), two)]).unwrap();
        let run = &merged["runs"][0];
        assert_eq!(merged["runs"].as_array().unwrap().len(), 1);
        assert_eq!(
            run["tool"]["driver"]["rules"],
            json!([{"id": "a"}, {"id": "b"}, {"id": "c"}])
        );
        let results: Vec<(String, u64)> = run["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["message"]["text"].as_str().unwrap().to_owned(),
                    r["ruleIndex"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            results,
            [
                ("1".into(), 1),
                ("2".into(), 0),
                ("3".into(), 1),
                ("4".into(), 2)
            ]
        );
        for result in run["results"].as_array().unwrap() {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(
                run["tool"]["driver"]["rules"][index]["id"],
                result["ruleId"]
            );
        }
        assert_eq!(run["automationDetails"], json!({"id": "lspc/"}));
        assert_eq!(run["invocations"][0]["executionSuccessful"], json!(false));
        assert_eq!(
            run["invocations"][0]["toolExecutionNotifications"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn bad_inputs_name_the_file() {
        let check = |log: Value, expected: &str| {
            let error = merge(&[(Path::new("x.sarif"), log)])
                .unwrap_err()
                .to_string();
            assert_eq!(error, expected);
        };
        check(
            json!({"version": "2.0.0"}),
            "sarif-merge: x.sarif: not a SARIF 2.1.0 log (\"version\" is not \"2.1.0\")",
        );
        check(
            json!({"version": "2.1.0"}),
            "sarif-merge: x.sarif: \"runs\": expected an array",
        );
        check(
            json!({"version": "2.1.0", "runs": [{}]}),
            "sarif-merge: x.sarif: runs[0].tool.driver.name: missing",
        );
        let mut bad_index = shard(&["a"], &[("1", 0)], true, 1);
        bad_index["runs"][0]["results"][0]["ruleIndex"] = json!(5);
        check(
            bad_index,
            "sarif-merge: x.sarif: runs[0].results[0].ruleIndex: 5 names no rule",
        );
        let one = shard(&["a"], &[], true, 1);
        let mut two = shard(&["a"], &[], true, 2);
        two["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] = json!("file:///other/");
        let error = merge(&[(Path::new("1.sarif"), one), (Path::new("2.sarif"), two)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "sarif-merge: 2.sarif: its %SRCROOT% {\"uri\":\"file:///other/\"} differs from {\"uri\":\"file:///w/\"} in 1.sarif"
        );
    }
}
