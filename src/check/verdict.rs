//! Which reported diagnostics make `lspc check` exit 1: `--fail-on LEVEL` for every server, or by
//! default each server's own command-line verdict ([`FailOn`]).
//!
//! A linter's server publishes its findings as warnings, while its own CLI fails on every one of
//! them: `ruff server` (0.17) publishes `F821`, `E902` and syntax errors as errors and every
//! other rule as a warning, and `ruff check` exits 1 on any; gopls publishes `go vet`'s analyzers
//! (`printf`, `assign`, …) as warnings, with their name as the `source`, and `go vet ./...` exits 1
//! on any. A check that replaced those commands in CI and exited 0 on their findings would pass
//! what the project's own tool fails. gopls's other analyzers (`simplifycompositelit`,
//! `unusedparams`, …) are not `go vet`'s, and do not fail the check.
//!
//! ShellCheck goes further: `shellcheck` prints and exits 1 on a finding of any level, `style`
//! included (its default `--severity=style`), while bash-language-server (5.x) publishes
//! ShellCheck's `info` as information and `style` as hints, which `lspc check` hid by default
//! ([`ReportFrom`]). So by default every finding whose `source` is `shellcheck` is reported and
//! fails the check, whatever server relays it; `--severity` and `--fail-on` set one level for
//! every server instead.

use std::collections::HashMap;

use crate::config::{Config, Program};
use crate::diagnostics::{Diagnostic, Severity};

/// The analyzers `go vet` runs (cmd/vet, Go 1.19 through 1.25: newer releases only add), by the
/// name gopls gives as a diagnostic's `source`.
const GO_VET_ANALYZERS: &[&str] = &[
    "appends",
    "asmdecl",
    "assign",
    "atomic",
    "bools",
    "buildtag",
    "cgocall",
    "composites",
    "copylocks",
    "defers",
    "directive",
    "errorsas",
    "framepointer",
    "hostport",
    "httpresponse",
    "ifaceassert",
    "loopclosure",
    "lostcancel",
    "nilfunc",
    "printf",
    "shift",
    "sigchanyzer",
    "slog",
    "stdmethods",
    "stdversion",
    "stringintconv",
    "structtag",
    "testinggoroutine",
    "tests",
    "timeformat",
    "unmarshal",
    "unreachable",
    "unsafeptr",
    "unusedresult",
    "waitgroup",
];

/// The `source` ShellCheck's findings carry (bash-language-server, and the generic servers that
/// run `shellcheck`).
const SHELLCHECK_SOURCE: &str = "shellcheck";

/// Whether `source` is ShellCheck's ([`SHELLCHECK_SOURCE`], any case).
fn is_shellcheck(source: Option<&str>) -> bool {
    source.is_some_and(|source| source.eq_ignore_ascii_case(SHELLCHECK_SOURCE))
}

/// `--severity`: which diagnostics `lspc check` reports (the others are only counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFrom {
    /// The default: information and above from every server (hints, LSP severity 4, are
    /// mostly editor decorations no CLI prints: pyright's "is not accessed"), and every
    /// ShellCheck finding whatever its severity, as `shellcheck` prints its `style` ones.
    #[default]
    LikeEachCli,
    /// `--severity LEVEL`: a diagnostic at or above LEVEL, whichever server published it.
    AtLeast(Severity),
}

impl ReportFrom {
    /// Whether a diagnostic of `severity` whose `source` is `source` is reported.
    pub fn reports(self, severity: Severity, source: Option<&str>) -> bool {
        match self {
            ReportFrom::AtLeast(level) => severity <= level,
            ReportFrom::LikeEachCli => severity <= Severity::Information || is_shellcheck(source),
        }
    }

    /// The level below which diagnostics are left out (for ShellCheck's, see
    /// [`ReportFrom::LikeEachCli`]), as the summary names it.
    pub fn level(self) -> Severity {
        match self {
            ReportFrom::AtLeast(level) => level,
            ReportFrom::LikeEachCli => Severity::Information,
        }
    }
}

/// `--fail-on`: which reported diagnostics make the exit status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailOn {
    /// The default: an error from any server, a warning from a server whose own CLI fails on
    /// it (ruff's every warning, as `ruff check`; gopls's `go vet` analyzers, as `go vet`), and
    /// any ShellCheck finding (as `shellcheck`).
    #[default]
    LikeEachCli,
    /// `--fail-on LEVEL`: a diagnostic at or above LEVEL, whichever server published it.
    AtLeast(Severity),
}

/// [`FailOn`] applied to one configuration's servers.
#[derive(Debug)]
pub struct Verdict {
    fail_on: FailOn,
    /// Configured server name → the program it runs, for the servers lspc knows.
    programs: HashMap<String, Program>,
}

impl Verdict {
    /// The verdict for `config`'s servers.
    pub fn new(config: &Config, fail_on: FailOn) -> Verdict {
        let programs = config
            .servers
            .iter()
            .filter_map(|server| Some((server.name.clone(), Program::of(server)?)))
            .collect();
        Verdict { fail_on, programs }
    }

    /// Whether `diagnostic`, a reported one, makes the check exit 1.
    pub fn fails(&self, diagnostic: &Diagnostic) -> bool {
        match self.fail_on {
            FailOn::AtLeast(level) => diagnostic.severity <= level,
            FailOn::LikeEachCli => {
                diagnostic.severity == Severity::Error || self.fails_only_like_its_cli(diagnostic)
            }
        }
    }

    /// Whether `diagnostic` fails the check only because its CLI fails on such a finding below
    /// error (for the note that says why the exit status is 1).
    pub fn fails_only_like_its_cli(&self, diagnostic: &Diagnostic) -> bool {
        self.fail_on == FailOn::LikeEachCli
            && diagnostic.severity != Severity::Error
            && (is_shellcheck(diagnostic.source.as_deref())
                || (diagnostic.severity == Severity::Warning
                    && self.cli_fails_on_warning(diagnostic)))
    }

    /// The CLI whose verdict `diagnostic` follows (`ruff check`, `go vet`, `shellcheck`), for
    /// the note when [`Verdict::fails_only_like_its_cli`].
    pub fn cli_for(&self, diagnostic: &Diagnostic) -> Option<&'static str> {
        if is_shellcheck(diagnostic.source.as_deref()) {
            return Some(SHELLCHECK_SOURCE);
        }
        match self.programs.get(&diagnostic.server)? {
            Program::Ruff => Some("ruff check"),
            Program::Gopls => Some("go vet"),
            _ => None,
        }
    }

    fn cli_fails_on_warning(&self, diagnostic: &Diagnostic) -> bool {
        match self.programs.get(&diagnostic.server) {
            Some(Program::Ruff) => true,
            Some(Program::Gopls) => diagnostic
                .source
                .as_deref()
                .is_some_and(|source| GO_VET_ANALYZERS.contains(&source)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn diagnostic(server: &str, severity: Severity, source: Option<&str>) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from("/w/a"),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 2,
            severity,
            message: "m".into(),
            source: source.map(str::to_owned),
            code: None,
            server: server.into(),
        }
    }

    fn verdict(fail_on: FailOn) -> Verdict {
        Verdict {
            fail_on,
            programs: [
                ("my-ruff".to_owned(), Program::Ruff),
                ("gopls".to_owned(), Program::Gopls),
                ("pyright".to_owned(), Program::PyrightLangserver),
            ]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn by_default_warnings_fail_only_where_the_servers_cli_fails_on_them() {
        let verdict = verdict(FailOn::LikeEachCli);
        let fails = |server, severity, source| verdict.fails(&diagnostic(server, severity, source));
        assert!(fails("pyright", Severity::Error, None));
        assert!(!fails("pyright", Severity::Warning, None));
        assert!(fails("my-ruff", Severity::Warning, Some("Ruff")));
        assert!(!fails("my-ruff", Severity::Information, Some("Ruff")));
        assert!(fails("gopls", Severity::Warning, Some("printf")));
        assert!(!fails(
            "gopls",
            Severity::Warning,
            Some("simplifycompositelit")
        ));
        assert!(!fails("gopls", Severity::Warning, None));
        assert!(!fails("unknown", Severity::Warning, None));
        assert!(verdict.fails_only_like_its_cli(&diagnostic("my-ruff", Severity::Warning, None)));
        assert!(!verdict.fails_only_like_its_cli(&diagnostic("my-ruff", Severity::Error, None)));
    }

    /// bash-language-server 5.8.1 publishes ShellCheck's `style` as hints and `info` as
    /// information; `shellcheck` 0.9.0 prints and exits 1 on both (tj/n's `bin/n`: SC2001).
    #[test]
    fn by_default_every_shellcheck_finding_is_reported_and_fails() {
        let verdict = verdict(FailOn::LikeEachCli);
        let shellcheck = |severity| diagnostic("bash", severity, Some("shellcheck"));
        for severity in [Severity::Hint, Severity::Information, Severity::Warning] {
            assert!(verdict.fails(&shellcheck(severity)));
            assert!(verdict.fails_only_like_its_cli(&shellcheck(severity)));
            assert_eq!(verdict.cli_for(&shellcheck(severity)), Some("shellcheck"));
            assert!(ReportFrom::LikeEachCli.reports(severity, Some("shellcheck")));
        }
        assert!(!verdict.fails_only_like_its_cli(&shellcheck(Severity::Error)));
        assert!(!verdict.fails(&diagnostic("bash", Severity::Hint, Some("bash-lsp"))));
        assert!(!ReportFrom::LikeEachCli.reports(Severity::Hint, Some("Pyright")));
        assert!(ReportFrom::LikeEachCli.reports(Severity::Information, None));
        // One level for every server when the user names it.
        let at_warning = ReportFrom::AtLeast(Severity::Warning);
        assert!(!at_warning.reports(Severity::Hint, Some("shellcheck")));
        assert!(!verdict_at(Severity::Warning).fails(&shellcheck(Severity::Hint)));
    }

    fn verdict_at(level: Severity) -> Verdict {
        verdict(FailOn::AtLeast(level))
    }

    #[test]
    fn fail_on_a_level_applies_to_every_server() {
        let verdict = verdict(FailOn::AtLeast(Severity::Error));
        assert!(!verdict.fails(&diagnostic("my-ruff", Severity::Warning, None)));
        assert!(!verdict.fails(&diagnostic("gopls", Severity::Warning, Some("printf"))));
        assert!(!verdict.fails_only_like_its_cli(&diagnostic("my-ruff", Severity::Warning, None)));
        let verdict = super::Verdict {
            fail_on: FailOn::AtLeast(Severity::Information),
            programs: HashMap::new(),
        };
        assert!(verdict.fails(&diagnostic("pyright", Severity::Information, None)));
        assert!(!verdict.fails(&diagnostic("pyright", Severity::Hint, None)));
    }
}
