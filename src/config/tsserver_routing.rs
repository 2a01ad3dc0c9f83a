//! typescript-language-server's syntax server, and why lspc asks for tsserver's full server
//! alone.
//!
//! By default (`initializationOptions.tsserver.useSyntaxServer` `"auto"`), typescript-language-
//! server 5.3.0 on TypeScript ≥ 4.0 runs two tsservers: the full one and a syntax server
//! (`--serverMode partialSemantic`), which knows the open files only. While it believes the full
//! server is loading a project (from its start until its first `projectLoadingFinish` event,
//! and again from each `projectLoadingStart` to the next finish), it routes `definition`,
//! `references`, `hover` (`quickinfo`), `rename`, `implementation`, `documentHighlight`,
//! completion, signature help and workspace symbols (`navto`) to the syntax server, whose
//! answers are partial: a name imported from another file is defined at its import. The
//! `reloadProjects` lspc sends when a file tsserver resolves is replaced on disk (an editor's or
//! an agent's atomic save: a new file renamed over the old one; `engine/tsserver_reload.rs`)
//! starts such a load, and a definition sent with it was routed to the syntax server whenever
//! typescript-language-server read the load's start first: it answered the import line 10 times
//! in 150 (the imported file saved atomically 40 ms before each definition, `lspc batch`; the
//! tsserver logs showed every wrong answer coming from the syntax server). With the syntax server
//! off: 0 in 150.
//!
//! So lspc asks every typescript-language-server it runs for the full server alone
//! (`useSyntaxServer` `"never"`), unless the entry sets `useSyntaxServer` itself. A query during
//! a project load then waits for the load (tsserver serves its requests in order) and is
//! answered on the loaded project, and one node process fewer runs beside the server.

use serde_json::{Map, Value};

use super::{Program, ServerConfig};

/// typescript-language-server's `initializationOptions` section for its tsserver.
pub const SECTION: &str = "tsserver";

/// The setting, in [`SECTION`], that picks tsserver's syntax server: `"auto"` (typescript-
/// language-server's default), `"never"` or `"always"`.
pub const SETTING: &str = "useSyntaxServer";

/// The value lspc sends: the full server answers everything.
pub const FULL_SERVER_ONLY: &str = "never";

/// Whether `server` runs typescript-language-server, also through a launcher ([`Program::of`]).
pub fn runs_typescript_language_server(server: &ServerConfig) -> bool {
    Program::of(server) == Some(Program::TypescriptLanguageServer)
}

/// Sets `initializationOptions.tsserver.useSyntaxServer` to `"never"` for every server in
/// `servers` that runs typescript-language-server and does not set it itself. Options that are
/// not a JSON object, or whose `tsserver` section is not one, are left alone (the server would
/// not read the setting there).
pub fn ask_full_server_only(servers: &mut [ServerConfig]) {
    for server in servers
        .iter_mut()
        .filter(|server| runs_typescript_language_server(server))
    {
        if user_setting(server).is_some() {
            continue;
        }
        let options = server
            .initialization_options
            .get_or_insert_with(|| Value::Object(Map::new()));
        let Some(options) = options.as_object_mut() else {
            continue;
        };
        let section = options
            .entry(SECTION)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(section) = section.as_object_mut() {
            section.insert(SETTING.to_owned(), Value::from(FULL_SERVER_ONLY));
        }
    }
}

/// What `lspc servers` says of a typescript-language-server entry's routing; `None` for other
/// servers.
pub fn note(server: &ServerConfig) -> Option<String> {
    if !runs_typescript_language_server(server) {
        return None;
    }
    let setting = user_setting(server);
    Some(match setting.and_then(Value::as_str) {
        Some(FULL_SERVER_ONLY) => format!(
            "tsserver's full server answers every query ({SECTION}.{SETTING} \"never\", which \
             lspc sends unless the entry sets it): a query during a project load waits for the \
             load"
        ),
        Some("always") => format!(
            "the entry's {SECTION}.{SETTING} is \"always\": typescript-language-server runs \
             tsserver's syntax server alone, whose answers know the open files only"
        ),
        _ => format!(
            "{}: while tsserver loads a project, typescript-language-server answers \
             definitions, references and hovers from its syntax server, which knows the open \
             files only",
            match setting {
                Some(value) => format!("the entry's {SECTION}.{SETTING} is {value}"),
                None => format!(
                    "lspc cannot set {SECTION}.{SETTING} (the entry's initializationOptions, or \
                     their {SECTION}, is not an object)"
                ),
            }
        ),
    })
}

/// The entry's own [`SETTING`], in the [`SECTION`] of its `initializationOptions`.
fn user_setting(server: &ServerConfig) -> Option<&Value> {
    server
        .initialization_options
        .as_ref()
        .and_then(|options| options.get(SECTION))
        .and_then(|section| section.get(SETTING))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(command: &str, args: &[&str], options: Option<Value>) -> ServerConfig {
        ServerConfig {
            args: args.iter().map(|arg| arg.to_string()).collect(),
            initialization_options: options,
            ..crate::config::test_entry("typescript", command)
        }
    }

    fn options_after(server: ServerConfig) -> Option<Value> {
        let mut servers = [server];
        ask_full_server_only(&mut servers);
        let [server] = servers;
        server.initialization_options
    }

    #[test]
    fn typescript_language_server_gets_the_full_server_alone_unless_its_entry_chooses() {
        let tsls = "/usr/bin/typescript-language-server";
        assert_eq!(
            options_after(entry(tsls, &["--stdio"], None)),
            Some(json!({"tsserver": {"useSyntaxServer": "never"}}))
        );
        // Through a launcher, beside the entry's own options.
        assert_eq!(
            options_after(entry(
                "npx",
                &["typescript-language-server", "--stdio"],
                Some(json!({"preferences": {"quoteStyle": "single"},
                            "tsserver": {"logVerbosity": "off"}}))
            )),
            Some(json!({"preferences": {"quoteStyle": "single"},
                        "tsserver": {"logVerbosity": "off", "useSyntaxServer": "never"}}))
        );
        // The entry's own choice stays, and so do options the server would not read it from.
        for kept in [
            json!({"tsserver": {"useSyntaxServer": "auto"}}),
            json!({"tsserver": "not an object"}),
            json!(["not an object"]),
        ] {
            assert_eq!(
                options_after(entry(tsls, &["--stdio"], Some(kept.clone()))),
                Some(kept)
            );
        }
        // Other servers are left alone.
        assert_eq!(options_after(entry("/usr/bin/gopls", &[], None)), None);
    }

    #[test]
    fn the_note_says_which_server_answers() {
        let tsls = "/usr/bin/typescript-language-server";
        let mut servers = [entry(tsls, &["--stdio"], None)];
        ask_full_server_only(&mut servers);
        let note = note(&servers[0]).unwrap();
        assert!(
            note.starts_with("tsserver's full server answers every query"),
            "{note}"
        );
        let auto = entry(
            tsls,
            &["--stdio"],
            Some(json!({"tsserver": {"useSyntaxServer": "auto"}})),
        );
        let note = super::note(&auto).unwrap();
        assert!(
            note.starts_with("the entry's tsserver.useSyntaxServer is \"auto\": while tsserver"),
            "{note}"
        );
        let always = entry(
            tsls,
            &["--stdio"],
            Some(json!({"tsserver": {"useSyntaxServer": "always"}})),
        );
        let note = super::note(&always).unwrap();
        assert!(note.contains("syntax server alone"), "{note}");
        let unset = entry(tsls, &["--stdio"], Some(json!(["not an object"])));
        let note = super::note(&unset).unwrap();
        assert!(
            note.starts_with("lspc cannot set tsserver.useSyntaxServer"),
            "{note}"
        );
        assert_eq!(super::note(&entry("/usr/bin/gopls", &[], None)), None);
    }
}
