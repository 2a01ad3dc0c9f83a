//! `${VAR}` expansion in server `command`, `args`, `env` values and `workspaceFolder`
//! (seed 003 "环境变量替换", seed 000 "Plugin LSP configuration").
//!
//! Invariants: expansion is single-pass (an expanded value is never re-scanned, so a variable
//! holding `${X}` stays literal); text that is not a well-formed `${NAME}` is copied unchanged;
//! a missing variable becomes the empty string (or the `${NAME:-default}` default) and is
//! reported to the caller, who logs it naming the server.

/// What `${…}` may refer to while expanding one server's entry.
pub(crate) struct ExpandVars<'a> {
    /// The process environment (injected so tests control it).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `${CLAUDE_PLUGIN_ROOT}`: the plugin folder, for plugin servers only.
    pub plugin_root: Option<&'a str>,
    /// `${CLAUDE_PLUGIN_DATA}`: the plugin's data folder, for plugin servers only.
    pub plugin_data: Option<&'a str>,
    /// `${CLAUDE_PROJECT_DIR}`: the workspace root, for every server.
    pub project_dir: &'a str,
}

/// One `${…}` reference that could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unexpanded {
    /// The variable is not set; it expanded to "" (or its default).
    Missing(String),
    /// `${user_config.KEY}`: plugin user options are not supported; left as written.
    UserConfig(String),
}

/// Expands every `${NAME}`, `${NAME:-default}` and `${user_config.KEY}` in `input`, appending
/// what could not be expanded to `unexpanded`.
pub(crate) fn expand(input: &str, vars: &ExpandVars, unexpanded: &mut Vec<Unexpanded>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // Unterminated: copy the remainder as written.
            out.push_str(&rest[start..]);
            return out;
        };
        let body = &after[..end];
        let literal = &rest[start..start + 2 + end + 1];
        rest = &after[end + 1..];

        if let Some(key) = body.strip_prefix("user_config.") {
            unexpanded.push(Unexpanded::UserConfig(key.to_string()));
            out.push_str(literal);
            continue;
        }
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        if !is_variable_name(name) {
            out.push_str(literal);
            continue;
        }
        let value = match name {
            "CLAUDE_PLUGIN_ROOT" if vars.plugin_root.is_some() => {
                vars.plugin_root.map(str::to_string)
            }
            "CLAUDE_PLUGIN_DATA" if vars.plugin_data.is_some() => {
                vars.plugin_data.map(str::to_string)
            }
            "CLAUDE_PROJECT_DIR" => Some(vars.project_dir.to_string()),
            _ => (vars.env)(name),
        };
        match (value, default) {
            // `:-` follows the shell: the default also replaces an empty value.
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => unexpanded.push(Unexpanded::Missing(name.to_string())),
        }
    }
    out.push_str(rest);
    out
}

/// `[A-Za-z_][A-Za-z0-9_]*`: the shell's variable names.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("${HOME}".into()),
            _ => None,
        }
    }

    fn check(input: &str, plugin: bool, expected: &str, expected_unexpanded: &[Unexpanded]) {
        let vars = ExpandVars {
            env: &env,
            plugin_root: plugin.then_some("/plugins/p"),
            plugin_data: plugin.then_some("/data/p"),
            project_dir: "/ws",
        };
        let mut unexpanded = Vec::new();
        assert_eq!(expand(input, &vars, &mut unexpanded), expected, "{input}");
        assert_eq!(unexpanded, expected_unexpanded, "{input}");
    }

    fn missing(name: &str) -> Unexpanded {
        Unexpanded::Missing(name.into())
    }

    #[test]
    fn expands_variables() {
        check("plain", false, "plain", &[]);
        check("${HOME}/bin", false, "/home/u/bin", &[]);
        check("a${HOME}b${HOME}c", false, "a/home/ub/home/uc", &[]);
        check("${CLAUDE_PROJECT_DIR}/x", false, "/ws/x", &[]);
        check("${CLAUDE_PLUGIN_ROOT}/bin/s", true, "/plugins/p/bin/s", &[]);
        check("${CLAUDE_PLUGIN_DATA}", true, "/data/p", &[]);
        check("${NESTED}", false, "${HOME}", &[]);
        check("${EMPTY}", false, "", &[]);
    }

    #[test]
    fn missing_variables_expand_to_empty() {
        check("${NOPE}/x", false, "/x", &[missing("NOPE")]);
        check("${A}${B}", false, "", &[missing("A"), missing("B")]);
        // Outside a plugin, the plugin variables come from the environment like any other.
        check(
            "${CLAUDE_PLUGIN_ROOT}/s",
            false,
            "/s",
            &[missing("CLAUDE_PLUGIN_ROOT")],
        );
    }

    #[test]
    fn defaults() {
        check("${NOPE:-fallback}", false, "fallback", &[]);
        check("${EMPTY:-fallback}", false, "fallback", &[]);
        check("${HOME:-fallback}", false, "/home/u", &[]);
        check("${NOPE:-}", false, "", &[]);
    }

    #[test]
    fn user_config_is_left_unexpanded() {
        check(
            "--key=${user_config.api_key}",
            true,
            "--key=${user_config.api_key}",
            &[Unexpanded::UserConfig("api_key".into())],
        );
    }

    #[test]
    fn malformed_references_are_literal() {
        check("${", false, "${", &[]);
        check("a${HOME", false, "a${HOME", &[]);
        check("${}", false, "${}", &[]);
        check("${1X}", false, "${1X}", &[]);
        check("${A B}", false, "${A B}", &[]);
        check("$HOME", false, "$HOME", &[]);
        check("é${HOME}é", false, "é/home/ué", &[]);
    }
}
