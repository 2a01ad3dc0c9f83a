//! The `lspc mcp` command: its options, single-server configuration (`lspc mcp -- SERVER ARGS`)
//! and start-up. Parsing of the shared options lives in `crate::cli` (their types in `crate::options`); this file holds what only
//! `mcp` needs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::config::{self, Config, ConfigOrigin, Program, ServerConfig};
use crate::exit::EXIT_USAGE;
use crate::mcp::http::{self, HttpOptions};
use crate::options::{load_config, GlobalOptions, UsageError};

/// `lspc mcp` options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpCliOptions {
    /// `--timeout`: per tool call; `None` means the default (60 s).
    pub timeout: Option<Duration>,
    /// `--language ext=id`, in order: (`".py"`, `"python"`).
    pub languages: Vec<(String, String)>,
    pub init_options: Option<Value>,
    pub settings: Option<Value>,
    /// `--open-documents N`: the LRU bound.
    pub open_documents: Option<usize>,
    /// The program after `--` (single-server mode).
    pub server_command: Option<OsString>,
    pub server_args: Vec<OsString>,
    /// `--http` and its companions.
    pub http: HttpCliOptions,
}

/// `lspc mcp --http` options as given (checked by [`http_options`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpCliOptions {
    /// `--http ADDR:PORT`.
    pub address: Option<String>,
    /// `--token`.
    pub token: Option<String>,
    /// `--allow-origin`, in order.
    pub allowed_origins: Vec<String>,
    pub max_connections: Option<usize>,
    pub header_timeout: Option<Duration>,
}

/// The HTTP frontend's settings from the command line and `LSPC_MCP_TOKEN` (`--token` wins), or
/// `None` without `--http`. Errors name the option.
pub fn http_options(
    options: &HttpCliOptions,
    env_token: Option<String>,
) -> Result<Option<HttpOptions>, UsageError> {
    let Some(address) = &options.address else {
        if options.token.is_some() || !options.allowed_origins.is_empty() {
            return Err(UsageError(
                "mcp: --token and --allow-origin need --http ADDR:PORT".to_owned(),
            ));
        }
        return Ok(None);
    };
    let address = http::parse_address(address).map_err(|error| UsageError(error.to_string()))?;
    let mut http = HttpOptions::new(address);
    http.token = options
        .token
        .clone()
        .or(env_token)
        .filter(|token| !token.is_empty());
    http.allowed_origins = options.allowed_origins.clone();
    if let Some(limit) = options.max_connections {
        http.max_connections = limit.max(1);
    }
    if let Some(timeout) = options.header_timeout {
        http.header_timeout = timeout;
    }
    if !address.ip().is_loopback() && http.token.is_none() {
        return Err(UsageError(
            http::HttpError::TokenRequired(address).to_string(),
        ));
    }
    Ok(Some(http))
}

/// Parse `EXT=ID` (`py=python`, `.py=python`) into (`".py"`, `"python"`); the extension is
/// lowercased.
pub fn parse_language(value: &str) -> Result<(String, String), UsageError> {
    let Some((extension, language)) = value.split_once('=') else {
        return Err(UsageError(format!(
            "--language: expected EXT=ID (e.g. py=python), got {value:?}"
        )));
    };
    let extension = extension.trim().trim_start_matches('.').to_lowercase();
    let language = language.trim();
    if extension.is_empty() || language.is_empty() {
        return Err(UsageError(format!(
            "--language: expected EXT=ID (e.g. py=python), got {value:?}"
        )));
    }
    Ok((format!(".{extension}"), language.to_owned()))
}

/// Read the next option value as JSON.
pub fn parse_json(flag: &str, parser: &mut lexopt::Parser) -> Result<Value, UsageError> {
    use lexopt::ValueExt;
    let text = parser.value()?.string()?;
    serde_json::from_str(&text)
        .map_err(|error| UsageError(format!("{flag}: invalid JSON: {error}")))
}

/// The configuration of single-server mode: exactly one server, from the command line.
/// Extensions come from `--language`, else from the built-in table entry running the same
/// program ([`Program::of_command`], also through a launcher: `lspc mcp -- uvx ruff server`).
/// The server is named by its command's file name, or by the program a launcher runs (`ruff`,
/// not `uvx`). Errors are usage errors naming the server.
pub fn single_server_config(
    root: &Path,
    options: &McpCliOptions,
    builtin: &Config,
) -> Result<Config, UsageError> {
    let command_os = options
        .server_command
        .clone()
        .ok_or_else(|| UsageError("mcp: no server command after --".to_owned()))?;
    let command = command_os
        .to_str()
        .ok_or_else(|| UsageError("mcp: the server command is not valid UTF-8".to_owned()))?
        .to_owned();
    let args = options
        .server_args
        .iter()
        .map(|arg| {
            arg.to_str()
                .map(str::to_owned)
                .ok_or_else(|| UsageError(format!("mcp: argument {arg:?} is not valid UTF-8")))
        })
        .collect::<Result<Vec<String>, UsageError>>()?;
    let command_name = Path::new(&command)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let program = Program::of_command(&command, &args);
    let program_name = match program {
        Some(program) if Program::from_name(&command_name) != Some(program) => {
            program.name().to_owned()
        }
        _ => command_name,
    };
    let extension_to_language: BTreeMap<String, String> = if options.languages.is_empty() {
        builtin
            .servers
            .iter()
            .chain(builtin.skipped.iter().map(|skipped| &skipped.server))
            .find(|server| program.is_some() && Program::of(server) == program)
            .map(|server| server.extension_to_language.clone())
            .ok_or_else(|| {
                UsageError(format!(
                    "mcp: {program_name} is not in lspc's built-in table; say which files it serves with --language EXT=ID"
                ))
            })?
    } else {
        let mut languages = BTreeMap::new();
        languages.extend(options.languages.iter().cloned());
        languages
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let path_var = std::env::var("PATH").ok();
    let resolved_command = config::resolve_command(&command, &cwd, path_var.as_deref());
    if resolved_command.is_none() {
        return Err(UsageError(format!("mcp: command not found: {command}")));
    }
    let mut server = ServerConfig {
        resolved_command,
        args,
        extension_to_language,
        initialization_options: options.init_options.clone(),
        settings: options.settings.clone(),
        ..ServerConfig::new(
            &program_name,
            &command,
            ConfigOrigin::CommandLine(PathBuf::from(&command)),
        )
    };
    server.root_markers = config::default_root_markers_of(&server);
    let mut servers = vec![server];
    config::linter::turn_off_unusable_features(&mut servers, root, path_var.as_deref(), &|name| {
        std::env::var(name).ok()
    });
    config::gopls::ask_single_phase(&mut servers);
    config::tsserver_routing::ask_full_server_only(&mut servers);
    Ok(Config {
        root: root.to_path_buf(),
        servers,
        errors: Vec::new(),
        conflicts: Vec::new(),
        notes: Vec::new(),
        skipped: Vec::new(),
    })
}

/// Run `lspc mcp`; returns the exit status.
pub fn run(global: &GlobalOptions, options: McpCliOptions) -> i32 {
    let http = match http_options(&options.http, std::env::var("LSPC_MCP_TOKEN").ok()) {
        Ok(http) => http,
        Err(error) => {
            eprintln!("lspc: {error}");
            return EXIT_USAGE;
        }
    };
    let config = load_config(global);
    let config = if options.server_command.is_some() {
        match single_server_config(&config.root, &options, &config) {
            Ok(config) => config,
            Err(error) => {
                eprintln!("lspc: {error}");
                return EXIT_USAGE;
            }
        }
    } else {
        config
    };
    let mut engine = crate::options::engine_options(config, global);
    if options.server_command.is_some() {
        // Not what the sources load: a session must be keyed by the servers themselves.
        engine.config_sources = None;
    }
    if let Some(limit) = options.open_documents {
        engine.max_open_documents = limit.max(1);
    }
    let install_hints = if crate::install_hints::hints_enabled(global.no_hints) {
        let root = engine.config.root.clone();
        crate::walk::list_files(&root, std::slice::from_ref(&root))
            .map(|files| {
                crate::install_hints::hints_for(&engine.config, &files)
                    .iter()
                    .map(crate::install_hints::InstallHint::message)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut mcp = super::McpOptions::new(engine);
    mcp.install_hints = install_hints;
    mcp.fast_path = std::env::var_os("LSPC_MCP_FAST_PATH").is_none_or(|value| value != "off");
    if options.server_command.is_none() {
        mcp.reload = Some(crate::options::config_options(global));
    }
    if let Some(timeout) = options.timeout {
        mcp.timeout = timeout;
    }
    crate::session::serve_if_session_process(&mcp.engine);
    let Some(http) = http else {
        return super::serve_stdio(mcp);
    };
    match http::serve(mcp, http) {
        Ok(status) => status,
        Err(error) => {
            eprintln!("lspc: {error}");
            EXIT_USAGE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_parse() {
        let check = |input: &str, expected: Result<(&str, &str), &str>| {
            let actual = parse_language(input);
            match expected {
                Ok((extension, language)) => assert_eq!(
                    actual,
                    Ok((extension.to_owned(), language.to_owned())),
                    "{input}"
                ),
                Err(message) => assert_eq!(actual, Err(UsageError(message.to_owned())), "{input}"),
            }
        };
        check("py=python", Ok((".py", "python")));
        check(".PY=python", Ok((".py", "python")));
        check("h = c", Ok((".h", "c")));
        check(
            "py",
            Err("--language: expected EXT=ID (e.g. py=python), got \"py\""),
        );
        check(
            "=python",
            Err("--language: expected EXT=ID (e.g. py=python), got \"=python\""),
        );
        check(
            "py=",
            Err("--language: expected EXT=ID (e.g. py=python), got \"py=\""),
        );
    }

    #[test]
    fn http_options_are_checked() {
        let check = |options: HttpCliOptions, env: Option<&str>, expected: Result<&str, &str>| {
            let actual = http_options(&options, env.map(str::to_owned));
            match expected {
                Ok(summary) => {
                    let http = actual.unwrap().unwrap();
                    assert_eq!(
                        format!("{} {:?} {}", http.address, http.token, http.max_connections),
                        summary
                    );
                }
                Err(message) => assert_eq!(actual.unwrap_err().0, message),
            }
        };
        let with = |address: &str| HttpCliOptions {
            address: Some(address.to_owned()),
            ..HttpCliOptions::default()
        };
        assert_eq!(http_options(&HttpCliOptions::default(), None), Ok(None));
        check(with("8765"), None, Ok("127.0.0.1:8765 None 64"));
        check(
            with("127.0.0.1:0"),
            Some("t"),
            Ok("127.0.0.1:0 Some(\"t\") 64"),
        );
        check(
            HttpCliOptions {
                token: Some("flag".to_owned()),
                max_connections: Some(0),
                ..with("0.0.0.0:80")
            },
            Some("env"),
            Ok("0.0.0.0:80 Some(\"flag\") 1"),
        );
        check(
            with("0.0.0.0:80"),
            Some(""),
            Err(
                "--http 0.0.0.0:80: a non-loopback address needs --token TOKEN (or LSPC_MCP_TOKEN)",
            ),
        );
        check(
            HttpCliOptions {
                token: Some("t".to_owned()),
                ..HttpCliOptions::default()
            },
            None,
            Err("mcp: --token and --allow-origin need --http ADDR:PORT"),
        );
    }

    #[test]
    fn single_server_configs() {
        let options = McpCliOptions {
            languages: vec![(".fx".to_owned(), "fixture".to_owned())],
            server_command: Some("sh".into()),
            server_args: vec!["-c".into(), "true".into()],
            settings: Some(serde_json::json!({"a": 1})),
            ..McpCliOptions::default()
        };
        let empty = Config {
            root: PathBuf::from("/w"),
            servers: vec![],
            errors: vec![],
            conflicts: vec![],
            notes: vec![],
            skipped: vec![],
        };
        let config = single_server_config(Path::new("/w"), &options, &empty).unwrap();
        assert_eq!(config.servers.len(), 1);
        let server = &config.servers[0];
        assert_eq!(server.name, "sh");
        assert_eq!(server.args, vec!["-c", "true"]);
        assert_eq!(
            server.extension_to_language,
            BTreeMap::from([(".fx".to_owned(), "fixture".to_owned())])
        );
        assert_eq!(server.settings, Some(serde_json::json!({"a": 1})));
        assert_eq!(
            server.origin,
            ConfigOrigin::CommandLine(PathBuf::from("sh"))
        );
        let no_language = McpCliOptions {
            languages: vec![],
            ..options.clone()
        };
        assert_eq!(
            single_server_config(Path::new("/w"), &no_language, &empty).unwrap_err().0,
            "mcp: sh is not in lspc's built-in table; say which files it serves with --language EXT=ID"
        );
        // Through a launcher, the built-in running the same program gives the extensions and
        // the program names the server (prog14).
        let mut ruff = server.clone();
        ruff.name = "ruff".to_owned();
        ruff.command = "ruff".to_owned();
        ruff.extension_to_language = BTreeMap::from([(".py".to_owned(), "python".to_owned())]);
        let builtin = Config {
            servers: vec![ruff],
            ..empty.clone()
        };
        let wrapped = McpCliOptions {
            server_command: Some("env".into()),
            server_args: vec!["RUFF_CACHE_DIR=/tmp".into(), "ruff".into(), "server".into()],
            ..no_language.clone()
        };
        let config = single_server_config(Path::new("/w"), &wrapped, &builtin).unwrap();
        let server = &config.servers[0];
        assert_eq!(server.name, "ruff");
        assert_eq!((server.command.as_str(), server.args.len()), ("env", 3));
        assert_eq!(
            server.extension_to_language,
            BTreeMap::from([(".py".to_owned(), "python".to_owned())])
        );
        let missing = McpCliOptions {
            server_command: Some("lspc-no-such-server".into()),
            ..options
        };
        assert_eq!(
            single_server_config(Path::new("/w"), &missing, &empty)
                .unwrap_err()
                .0,
            "mcp: command not found: lspc-no-such-server"
        );
    }
}
