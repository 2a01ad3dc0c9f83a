//! gopls's two-phase diagnostics, and how lspc keeps them from ending a wait too early.
//!
//! Since gopls 0.6, after a change (`didOpen` included) gopls publishes twice for the same
//! document version: at once, its parse and type-check errors only; then, once its
//! `diagnosticsDelay` setting has passed with no newer change, everything, analyzer findings
//! (`printf`, `deepequalerrors`, `unusedresult`, …) included, and only when that set differs
//! from the first (`gopls/internal/server/diagnostics.go`, `diagnoseSnapshot`). The default
//! delay is 250 ms in 0.6–0.11 and 1 s since 0.12. A wait that ends 250 ms after the first
//! publish would call a file whose only findings are an analyzer's clean.
//!
//! So lspc asks every gopls it runs for one phase: settings `{"gopls": {"diagnosticsDelay":
//! "0s"}}` (gopls reads `workspace/configuration` section `gopls`; with no delay it diagnoses
//! each snapshot once, analysis included), unless the entry sets `diagnosticsDelay` itself, in
//! its settings or its `initializationOptions`. Then the user's delay is kept, and the quiet
//! period after each publish of that server is lengthened by it ([`deferred_round`]), which
//! covers the delay but not the analysis that follows it.
//!
//! Debian 12's gopls (packaged as 0.5.0, its `api-json` lists `diagnosticsDelay` with a default
//! of 250 ms) diagnoses in two phases. With one phase, a file of a module gopls cannot load
//! (a missing `go.sum` entry) no longer gets the first phase's type-check errors; it is then
//! not checked, with gopls's load error as the reason, which is what `go vet` says there too.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{Program, ServerConfig};

/// The gopls setting that delays its second, deeper diagnostics round.
pub const DELAY_SETTING: &str = "diagnosticsDelay";

/// gopls's own default for [`DELAY_SETTING`] since 0.12, also taken for a value it would reject.
const GOPLS_DEFAULT_DELAY: Duration = Duration::from_secs(1);

/// Whether `server` runs gopls, also through a launcher ([`Program::of`]).
pub fn runs_gopls(server: &ServerConfig) -> bool {
    Program::of(server) == Some(Program::Gopls)
}

/// Adds `diagnosticsDelay: "0s"` to the `gopls` section of the settings of every server in
/// `servers` that runs gopls and does not set the delay itself. Settings that are not a JSON
/// object, or whose `gopls` section is not one, are left alone (gopls would reject them anyway,
/// and [`deferred_round`] then assumes gopls's default).
pub fn ask_single_phase(servers: &mut [ServerConfig]) {
    for server in servers.iter_mut().filter(|server| runs_gopls(server)) {
        if user_delay(server).is_some() {
            continue;
        }
        let settings = server
            .settings
            .get_or_insert_with(|| Value::Object(Map::new()));
        let Some(settings) = settings.as_object_mut() else {
            continue;
        };
        let section = settings
            .entry("gopls")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(section) = section.as_object_mut() {
            section.insert(DELAY_SETTING.to_owned(), Value::from("0s"));
        }
    }
}

/// How long after a publish gopls may still publish a deeper round for the same version: its
/// [`DELAY_SETTING`] in force (0 once [`ask_single_phase`] set it, gopls's default of 1 s when
/// the value is not a Go duration gopls accepts or the settings are not an object); zero for
/// every other server.
pub fn deferred_round(server: &ServerConfig) -> Duration {
    if !runs_gopls(server) {
        return Duration::ZERO;
    }
    match user_delay(server) {
        Some(value) => value
            .as_str()
            .and_then(parse_go_duration)
            .unwrap_or(GOPLS_DEFAULT_DELAY),
        None if settings_usable(server) => Duration::ZERO,
        None => GOPLS_DEFAULT_DELAY,
    }
}

/// What `lspc servers` says of a gopls entry's diagnostics delay; `None` for other servers.
pub fn note(server: &ServerConfig) -> Option<String> {
    if !runs_gopls(server) {
        return None;
    }
    let delay = deferred_round(server);
    Some(if delay.is_zero() {
        "its diagnosticsDelay is 0s (lspc sends that unless the entry sets a delay), so each change gets one round of diagnostics, analyzers' findings included".to_owned()
    } else {
        format!(
            "its diagnosticsDelay ({} ms) is added to the quiet period, since gopls publishes its analyzers' findings that long after its first round",
            delay.as_millis()
        )
    })
}

/// Whether [`ask_single_phase`] can put the setting into `server`'s settings.
fn settings_usable(server: &ServerConfig) -> bool {
    match &server.settings {
        None => true,
        Some(Value::Object(settings)) => settings.get("gopls").is_none_or(Value::is_object),
        Some(_) => false,
    }
}

/// The entry's own [`DELAY_SETTING`]: in the `gopls` section of its settings (which gopls
/// applies last), else in its `initializationOptions`.
fn user_delay(server: &ServerConfig) -> Option<&Value> {
    let from_settings = server
        .settings
        .as_ref()
        .and_then(|settings| settings.get("gopls"))
        .and_then(|section| section.get(DELAY_SETTING));
    from_settings.or_else(|| {
        server
            .initialization_options
            .as_ref()
            .and_then(|options| options.get(DELAY_SETTING))
    })
}

/// A Go `time.ParseDuration` string: an optional sign, then one or more decimal numbers each
/// with a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), e.g. `"250ms"`, `"1.5s"`, `"1m30s"`;
/// `"0"` alone is allowed. `None` for anything else, and for negative durations (gopls then
/// diagnoses in one phase, like zero: returned as zero).
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * seconds_per_unit;
    }
    if negative {
        return Some(Duration::ZERO);
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(command: &str) -> ServerConfig {
        crate::config::test_entry("go", command)
    }

    fn gopls(settings: Option<Value>, initialization_options: Option<Value>) -> ServerConfig {
        ServerConfig {
            settings,
            initialization_options,
            ..server("/usr/bin/gopls")
        }
    }

    #[test]
    fn go_durations_parse_as_go_does() {
        let ms = Duration::from_millis;
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("0s"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("250ms"), Some(ms(250)));
        assert_eq!(parse_go_duration("1s"), Some(ms(1000)));
        assert_eq!(parse_go_duration("1.5s"), Some(ms(1500)));
        assert_eq!(parse_go_duration("1m30s"), Some(ms(90_000)));
        assert_eq!(parse_go_duration("+2s"), Some(ms(2000)));
        assert_eq!(parse_go_duration("500us"), Some(Duration::from_micros(500)));
        assert_eq!(parse_go_duration("500µs"), Some(Duration::from_micros(500)));
        assert_eq!(parse_go_duration("-1s"), Some(Duration::ZERO));
        for bad in [
            "",
            "1",
            "s",
            "1x",
            "1.2.3s",
            ".s",
            "1s2",
            "one second",
            "-",
            "1 s",
        ] {
            assert_eq!(parse_go_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_gopls_without_its_own_delay_is_asked_for_one_phase() {
        let mut servers = vec![
            gopls(None, None),
            gopls(Some(json!({"gopls": {"buildFlags": ["-tags=x"]}})), None),
            gopls(Some(json!({"other": 1})), None),
            ServerConfig {
                args: vec!["GOFLAGS=-mod=mod".into(), "gopls".into()],
                ..server("/usr/bin/env")
            },
        ];
        ask_single_phase(&mut servers);
        assert_eq!(
            servers[0].settings,
            Some(json!({"gopls": {"diagnosticsDelay": "0s"}}))
        );
        assert_eq!(
            servers[1].settings,
            Some(json!({"gopls": {"buildFlags": ["-tags=x"], "diagnosticsDelay": "0s"}}))
        );
        assert_eq!(
            servers[2].settings,
            Some(json!({"other": 1, "gopls": {"diagnosticsDelay": "0s"}}))
        );
        assert_eq!(
            servers[3].settings,
            Some(json!({"gopls": {"diagnosticsDelay": "0s"}}))
        );
        for server in &servers {
            assert_eq!(deferred_round(server), Duration::ZERO);
        }
    }

    #[test]
    fn a_delay_the_entry_sets_is_kept_and_waited_for() {
        let mut servers = vec![
            gopls(Some(json!({"gopls": {"diagnosticsDelay": "2s"}})), None),
            gopls(None, Some(json!({"diagnosticsDelay": "300ms"}))),
            gopls(Some(json!({"gopls": {"diagnosticsDelay": "soon"}})), None),
            gopls(Some(json!({"gopls": {"diagnosticsDelay": 5}})), None),
        ];
        let before: Vec<_> = servers.iter().map(|s| s.settings.clone()).collect();
        ask_single_phase(&mut servers);
        let after: Vec<_> = servers.iter().map(|s| s.settings.clone()).collect();
        assert_eq!(before, after);
        let waits: Vec<Duration> = servers.iter().map(deferred_round).collect();
        assert_eq!(
            waits,
            [
                Duration::from_secs(2),
                Duration::from_millis(300),
                GOPLS_DEFAULT_DELAY,
                GOPLS_DEFAULT_DELAY
            ]
        );
    }

    #[test]
    fn settings_lspc_cannot_extend_keep_goplss_default_delay() {
        let mut servers = vec![
            gopls(Some(json!(["not", "an", "object"])), None),
            gopls(Some(json!({"gopls": "odd"})), None),
        ];
        let before: Vec<_> = servers.iter().map(|s| s.settings.clone()).collect();
        ask_single_phase(&mut servers);
        assert_eq!(
            before,
            servers
                .iter()
                .map(|s| s.settings.clone())
                .collect::<Vec<_>>()
        );
        for server in &servers {
            assert_eq!(deferred_round(server), GOPLS_DEFAULT_DELAY);
        }
    }

    #[test]
    fn other_servers_are_left_alone() {
        let mut servers = vec![server("pyright-langserver"), server("/opt/gopls-wrapper")];
        ask_single_phase(&mut servers);
        for server in &servers {
            assert_eq!(server.settings, None);
            assert_eq!(deferred_round(server), Duration::ZERO);
        }
    }
}
