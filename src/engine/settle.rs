//! When are a file's pushed diagnostics "settled"? A pure decision, so it can be tested without
//! servers or clocks.
//!
//! The rule (seed 004, cases B14 and B16): a server has settled a document version when
//! 1. it published for that version after lspc sent it — a publish carrying that version (or a
//!    higher one, a server bug that is accepted), or, from servers that send no version
//!    (typescript-language-server, taplo), any publish received after the text was sent;
//! 2. no `$/progress` token of that server is active, nor has it said `quiescent: false` in
//!    rust-analyzer's `experimental/serverStatus`; and
//! 3. a quiet period has passed since the last publish and the last progress change: 250 ms after
//!    a versioned publish, longer after an unversioned one, since such a publish may describe
//!    older text and a fresher one may follow; and at least [`QUIET_AFTER_SAVE`] when a `didSave`
//!    went with the text, since check-on-save servers publish a second round after the save
//!    (case B18: rust-analyzer's `cargo check`, the fixture's "semantic" diagnostic).
//!
//! "Nothing arrived" is never settled: the caller's timeout turns it into "incomplete".
//!
//! Which signal ends the wait is per server: a [`SettleRule`], chosen by [`SettleRule::for_server`]
//! from the server's configured name or its `serverInfo.name`, and named in `lspc servers` and
//! `lsp://servers`. Only where a server gives no completeness signal does the quiet period apply.

use std::time::{Duration, Instant};

/// How long a server that sends no versions may stay silent after a change before its last set
/// for the file stands: typescript-language-server does not publish again when an edit leaves a
/// file's diagnostics unchanged, and lspc cannot tell "unchanged" from "not yet" otherwise.
pub(crate) const UNVERSIONED_SILENCE: Duration = Duration::from_secs(3);

/// The shortest quiet period after a `didSave` (B18).
pub(crate) const QUIET_AFTER_SAVE: Duration = Duration::from_millis(750);

/// How a server signals that a document's diagnostics are complete (issue 15). Each rule was
/// established against the real server; see `SettleRule::for_server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SettleRule {
    /// LSP 3.17 §`textDocument/diagnostic`: the answer for the sent version is final, unless it
    /// was given while the server reported `$/progress` work or, rust-analyzer's extension,
    /// `experimental/serverStatus` with `quiescent: false` (then it is asked again once the work
    /// ends), or the server sent `workspace/diagnostic/refresh` before answering (then the next
    /// pull's answer is the one in force; a refresh also re-pulls every open document). pyright
    /// (after its dynamic registration), ruff, TypeScript 7's native server; rust-analyzer, which
    /// answers empty while loading the workspace, with `quiescent: false`, also pushes
    /// ([`SettleRule::PullAndPublish`]).
    Pull,
    /// [`SettleRule::Pull`] for the pulled set, and the pushed set of the same server for the same
    /// file (kept apart, reported as the union) settles by its own rule: no `$/progress` work, and
    /// a quiet period since the later of the send, the file's last publish and the last progress
    /// change: 250 ms, at least [`QUIET_AFTER_SAVE`] when a `didSave` went with the text (a check
    /// on save). rust-analyzer 0.0.330: native diagnostics are pulled, `cargo check`'s (flycheck,
    /// at start-up and on save, under `$/progress` "cargo check") are pushed with the version.
    /// Also any pull server once it has published, while offering pull, for a document lspc
    /// opened on it (TypeScript 7 publishes only for its `tsconfig.json`, which it is not
    /// given, and keeps [`SettleRule::Pull`]).
    PullAndPublish,
    /// One versioned publish per version, and it is final: the first publish carrying the sent
    /// version settles at once, whatever `$/progress` (background indexing) says. clangd 14:
    /// it publishes once per version after the AST is built with that version's preamble, also
    /// when an edit adds an include whose header has errors, and for a run of edits it skips the
    /// versions superseded before their AST was built (never publishing an older one after a
    /// newer one). Except a publish carrying `fe_pch_file_overridden`: its analysis reused a
    /// preamble built before a header's open text changed, and clangd publishes nothing more
    /// for that version; lspc sends the file again as a new version (closed and opened) and
    /// takes that version's publish. A query's readiness wait (its file's first question) does
    /// not take the publish at once: clangd loads a compilation database and starts indexing it
    /// when it opens its first file, announcing that just after the file's publish, so the first
    /// file of a database (on the running process) waits for the quiet period with no
    /// `$/progress`, and a later file of it for its publish while no `$/progress` is active
    /// ([`PushState::ready_at_publish`]).
    VersionedPublish,
    /// No completeness signal, versioned publishes: the publish for the sent version, then a
    /// quiet period (250 ms; at least 750 ms after a `didSave`) with no `$/progress` work.
    /// pylsp (its lint pass and pylsp-mypy may publish apart), unknown servers, gopls (whose
    /// readiness wait keeps the quiet period once per Go module: [`super::readiness_scope`]).
    QuietAfterPublish,
    /// No completeness signal and no versions: a publish received after the text was sent, then
    /// the longer unversioned quiet period (1.5 s), or 3 s of silence when the server publishes
    /// nothing for a change (the set stands). taplo (an empty batch first, then the real one);
    /// typescript-language-server when its publish is not confirmed (it publishes the syntactic
    /// set, often empty, before the semantic one, and only after its project loaded: its
    /// `$/progress` "Initializing JS/TS language features" holds the wait).
    QuietAfterUnversionedPublish,
    /// typescript-language-server 5.3.0: no versions and no completeness signal in its
    /// publishes, but `typescript.tsserverRequest` lets lspc ask tsserver for the file's
    /// syntactic, semantic and suggestion diagnostics (`tsserver_probe.rs`): a publish whose set
    /// equals their union settles at once (also an older publish, when an edit left the set
    /// unchanged and the server published nothing). While their union and the publish differ
    /// (a diagnostic the publish lacks, or one tsserver no longer reports for the sent text),
    /// nothing settles it: a matching publish, or a timeout at the file's deadline. When a
    /// request fails, or the command is not offered, as
    /// [`SettleRule::QuietAfterUnversionedPublish`].
    ConfirmedUnversionedPublish,
}

impl SettleRule {
    /// The rule for a server: `pull` when it offers pull diagnostics now (static
    /// `diagnosticProvider` or a live registration); otherwise by `config_name` or the
    /// `serverInfo.name` of its `initialize` result (LSP 3.17 §`InitializeResult`).
    ///
    /// `publishes_with_pull`: the server has published diagnostics while offering pull; such a
    /// server, or one known to do so (rust-analyzer), gets [`SettleRule::PullAndPublish`].
    pub fn for_server(
        config_name: &str,
        server_info_name: Option<&str>,
        pull: bool,
        publishes_with_pull: bool,
    ) -> SettleRule {
        if pull {
            let known_to_publish = |name: &str| name == "rust-analyzer";
            if publishes_with_pull
                || server_info_name.is_some_and(known_to_publish)
                || known_to_publish(config_name)
            {
                return SettleRule::PullAndPublish;
            }
            return SettleRule::Pull;
        }
        let known = |name: &str| match name {
            "clangd" => Some(SettleRule::VersionedPublish),
            "typescript-language-server" => Some(SettleRule::ConfirmedUnversionedPublish),
            "taplo" => Some(SettleRule::QuietAfterUnversionedPublish),
            _ => None,
        };
        server_info_name
            .and_then(known)
            .or_else(|| known(config_name))
            .unwrap_or(SettleRule::QuietAfterPublish)
    }

    /// The rule lspc expects before starting the server, for `lspc servers`: by name, with the
    /// servers known to answer pull diagnostics when the client offers them (lspc always does)
    /// taken as [`SettleRule::Pull`]. The rule in force is decided once the server initialized
    /// ([`SettleRule::for_server`]) and shown in `lsp://servers`.
    pub fn expected(config_name: &str) -> SettleRule {
        let pull = matches!(
            config_name,
            "pyright" | "basedpyright" | "ruff" | "tsgo" | "rust-analyzer"
        );
        SettleRule::for_server(config_name, None, pull, false)
    }

    /// The `lspc servers` section naming each server's expected rule, one line per server
    /// (`  NAME: RULE: DESCRIPTION`, then its notes: held opens, gopls's diagnostics delay);
    /// empty for no servers.
    pub fn render_expected<'a>(
        servers: impl Iterator<Item = &'a crate::config::ServerConfig>,
    ) -> String {
        let lines: Vec<String> = servers
            .map(|server| {
                let name = server.name.as_str();
                // The known program the entry runs picks the rule, as `serverInfo.name` does
                // once the server is up; else its name.
                let known =
                    crate::config::Program::of(server).map_or(name, |program| program.name());
                let rule = match SettleRule::expected(name) {
                    SettleRule::QuietAfterPublish => SettleRule::expected(known),
                    by_name => by_name,
                };
                let opens = super::configuration_gate::opens_note(name)
                    .or_else(|| super::configuration_gate::opens_note(known))
                    .map(|note| format!("; {note}"))
                    .unwrap_or_default();
                let delay = crate::config::gopls::note(server)
                    .map(|note| format!("; {note}"))
                    .unwrap_or_default();
                let routing = crate::config::tsserver_routing::note(server)
                    .map(|note| format!("; {note}"))
                    .unwrap_or_default();
                format!(
                    "  {name}: {}: {}{opens}{delay}{routing}\n",
                    rule.name(),
                    rule.description()
                )
            })
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        format!(
            "settle rules (what ends a diagnostics wait; lsp://servers shows the rule in force):\n{}",
            lines.concat()
        )
    }

    /// Whether only a quiet period ends the wait (the server gives no completeness signal):
    /// then the server's CPU use counts as work in progress ([`super::server_cpu`]).
    pub fn quiet_only(self) -> bool {
        matches!(
            self,
            SettleRule::QuietAfterPublish | SettleRule::QuietAfterUnversionedPublish
        )
    }

    /// The rule's name as `lspc servers` and `lsp://servers` show it.
    pub fn name(self) -> &'static str {
        match self {
            SettleRule::Pull => "pull",
            SettleRule::PullAndPublish => "pull-and-publish",
            SettleRule::VersionedPublish => "versioned-publish",
            SettleRule::QuietAfterPublish => "quiet-after-publish",
            SettleRule::QuietAfterUnversionedPublish => "quiet-after-unversioned-publish",
            SettleRule::ConfirmedUnversionedPublish => "unversioned-publish-confirmed",
        }
    }

    /// One sentence saying what ends the wait.
    pub fn description(self) -> &'static str {
        match self {
            SettleRule::Pull => {
                "the textDocument/diagnostic answer for the sent version, asked again if given during $/progress work, while not quiescent (serverStatus) or before a refresh"
            }
            SettleRule::PullAndPublish => {
                "the pull answer as for pull, and the pushed set (kept apart, reported with it) after a quiet period with no $/progress (250 ms; 750 ms after a didSave)"
            }
            SettleRule::VersionedPublish => {
                "the first publish carrying the sent version is final (one from a stale preamble, fe_pch_file_overridden, is not: the file is sent again as a new version); before a query, a compilation database's first file also waits 250 ms of quiet with no $/progress (clangd announces indexing the database just after that publish), a later file of it its publish with no $/progress"
            }
            SettleRule::QuietAfterPublish => {
                "the publish for the sent version, then a quiet period with no $/progress work and no CPU used by the server (no completeness signal)"
            }
            SettleRule::ConfirmedUnversionedPublish => {
                "a publish whose set equals tsserver's own syntactic, semantic and suggestion diagnostics for the file (asked with typescript.tsserverRequest), at once; while tsserver lists diagnostics the publish lacks, none (a timeout at the deadline); otherwise as quiet-after-unversioned-publish"
            }
            SettleRule::QuietAfterUnversionedPublish => {
                "a publish after the text was sent, then the longer unversioned quiet period with no CPU used by the server (no versions, no completeness signal)"
            }
        }
    }
}

/// The last publish a server made for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PublishInfo {
    /// The `version` field of the publish, when the server sent one.
    pub version: Option<i32>,
    /// When lspc received it.
    pub at: Instant,
}

/// Inputs for one (server, document) pair.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PushState {
    /// The document version lspc last sent to this server, and when.
    pub sent_version: i32,
    pub sent_at: Instant,
    pub last_publish: Option<PublishInfo>,
    /// Whether any progress token of the server is active, and when progress last changed.
    pub progress_active: bool,
    pub last_progress_change: Option<Instant>,
    /// Whether a `didSave` was sent with this version (the server asked for saves).
    pub saved: bool,
    /// [`SettleRule::VersionedPublish`]: the publish for the sent version is final.
    pub versioned_final: bool,
    /// A query's readiness wait on a server whose running process already had a readiness
    /// wait end by the quiet period for a file of the same unit (clangd's compilation database,
    /// gopls's module: [`super::readiness_scope`]): the publish for the sent version settles
    /// once no `$/progress` work is active (the server loads a unit when it first opens a file
    /// of it, so the quiet period stays for that file only).
    pub ready_at_publish: bool,
    /// The server said it cannot load its workspace (its health is an error): silence after
    /// the send stands ([`unhealthy_silence_settles`]).
    pub unhealthy: bool,
    /// How long after a publish the server may still publish a deeper round for the same
    /// version (gopls's `diagnosticsDelay` when its entry sets one): added to every quiet
    /// period.
    pub deferred_round: Duration,
}

/// The quiet period that applies to `state` after `publish`.
fn quiet_for(
    state: &PushState,
    publish: &PublishInfo,
    quiet: Duration,
    quiet_unversioned: Duration,
) -> Duration {
    let quiet = if publish.version.is_some() {
        quiet
    } else {
        quiet_unversioned
    };
    let quiet = if state.saved {
        quiet.max(QUIET_AFTER_SAVE)
    } else {
        quiet
    };
    quiet + state.deferred_round
}

/// Whether the server's pushed diagnostics for the document are settled at `now`
/// ([`push_settle_time`] is past).
pub(crate) fn push_settled(
    state: &PushState,
    now: Instant,
    quiet: Duration,
    quiet_unversioned: Duration,
) -> bool {
    push_settle_time(state, quiet, quiet_unversioned).is_some_and(|at| now >= at)
}

/// [`SettleRule::PullAndPublish`]: when the pushed part of the file's diagnostics settles without
/// new input, `None` while progress is active. The quiet period counts from the latest of the
/// send, the file's last publish (of any version: a publish for the sent version is not
/// required, since a check pass publishes nothing for a file it finds clean) and the last
/// progress change.
pub(crate) fn pushed_part_settle_time(state: &PushState, quiet: Duration) -> Option<Instant> {
    if state.progress_active {
        return None;
    }
    let mut last_activity = state.sent_at;
    if let Some(publish) = state.last_publish {
        last_activity = last_activity.max(publish.at);
    }
    if let Some(progress) = state.last_progress_change {
        last_activity = last_activity.max(progress);
    }
    let quiet = if state.saved {
        quiet.max(QUIET_AFTER_SAVE)
    } else {
        quiet
    };
    Some(last_activity + quiet + state.deferred_round)
}

/// Whether the pushed part has settled at `now` ([`pushed_part_settle_time`]).
pub(crate) fn pushed_part_settled(state: &PushState, now: Instant, quiet: Duration) -> bool {
    pushed_part_settle_time(state, quiet).is_some_and(|at| now >= at)
}

/// Whether `publish` carries the sent version (or a higher one, a server bug that is accepted).
/// An unversioned publish never does.
fn for_sent_version(state: &PushState, publish: &PublishInfo) -> bool {
    publish
        .version
        .is_some_and(|version| version >= state.sent_version)
}

/// Whether `publish` settles at once under [`SettleRule::VersionedPublish`]
/// ([`for_sent_version`]).
fn final_publish(state: &PushState, publish: &PublishInfo) -> bool {
    state.versioned_final && for_sent_version(state, publish)
}

/// For a server that sends no versions and published for this file before lspc sent the current
/// text: when its silence since then makes the last set stand ([`UNVERSIONED_SILENCE`], counted
/// from the send or the last progress change, whichever is later).
fn silence_settles(state: &PushState, publish: &PublishInfo) -> Option<Instant> {
    if publish.version.is_some() {
        return None;
    }
    let since = match state.last_progress_change {
        Some(progress) if progress > state.sent_at => progress,
        _ => state.sent_at,
    };
    Some(since + UNVERSIONED_SILENCE)
}

/// When [`push_settled`] could next become true without new input, for the loop's timer.
pub(crate) fn push_settle_time(
    state: &PushState,
    quiet: Duration,
    quiet_unversioned: Duration,
) -> Option<Instant> {
    // Under [`SettleRule::VersionedPublish`] an unversioned publish describes no open text:
    // clangd sends one only to clear a file it was told to close. When lspc closed a file (the
    // open-document bound) and opened it again before that clear arrived, the clear counted as
    // a fresh publish, and its empty set settled the file clean after the quiet period, or
    // after [`UNVERSIONED_SILENCE`] (a new user's warm session on DaveGamble/cJSON: 7 to 15
    // files with errors called clean).
    let publish = state
        .last_publish
        .filter(|publish| !(state.versioned_final && publish.version.is_none()));
    let Some(publish) = publish else {
        return unhealthy_silence_settles(state, quiet_unversioned);
    };
    if final_publish(state, &publish) {
        return Some(publish.at);
    }
    if state.progress_active {
        return None;
    }
    if state.ready_at_publish && for_sent_version(state, &publish) {
        return Some(publish.at);
    }
    let fresh = match publish.version {
        Some(version) => version >= state.sent_version,
        None => publish.at >= state.sent_at,
    };
    if !fresh {
        let silence = silence_settles(state, &publish);
        let unhealthy = unhealthy_silence_settles(state, quiet_unversioned);
        return silence.into_iter().chain(unhealthy).min();
    }
    let quiet = quiet_for(state, &publish, quiet, quiet_unversioned);
    let last_activity = match state.last_progress_change {
        Some(progress) if progress > publish.at => progress,
        _ => publish.at,
    };
    Some(last_activity + quiet)
}

/// For a server whose health is an error (gopls could not load the workspace) and that has not
/// published for the sent text: when its silence stands, the unversioned quiet period after the
/// later of the send and the last progress or health change (gopls with no view of the folder
/// never publishes, and a file it gives nothing is then a server failure, not a clean).
fn unhealthy_silence_settles(state: &PushState, quiet_unversioned: Duration) -> Option<Instant> {
    if !state.unhealthy || state.progress_active {
        return None;
    }
    let since = match state.last_progress_change {
        Some(progress) if progress > state.sent_at => progress,
        _ => state.sent_at,
    };
    Some(since + quiet_unversioned)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_millis(250);
    const QUIET_UNVERSIONED: Duration = Duration::from_millis(1500);

    fn check(state: PushState, now_ms: u64, t0: Instant, expected: bool) {
        let now = t0 + Duration::from_millis(now_ms);
        assert_eq!(
            push_settled(&state, now, QUIET, QUIET_UNVERSIONED),
            expected,
            "{state:?}"
        );
    }

    fn state(t0: Instant, publish: Option<(Option<i32>, u64)>) -> PushState {
        PushState {
            sent_version: 2,
            sent_at: t0 + Duration::from_millis(10),
            last_publish: publish.map(|(version, at_ms)| PublishInfo {
                version,
                at: t0 + Duration::from_millis(at_ms),
            }),
            progress_active: false,
            last_progress_change: None,
            saved: false,
            versioned_final: false,
            ready_at_publish: false,
            unhealthy: false,
            deferred_round: Duration::ZERO,
        }
    }

    #[test]
    fn versioned_publish_settles_after_quiet_period() {
        let t0 = Instant::now();
        check(state(t0, None), 5000, t0, false);
        check(state(t0, Some((Some(2), 100))), 200, t0, false);
        check(state(t0, Some((Some(2), 100))), 350, t0, true);
        // A publish for an older version never settles the newer one.
        check(state(t0, Some((Some(1), 100))), 5000, t0, false);
        // A higher version (server bug) is accepted.
        check(state(t0, Some((Some(3), 100))), 350, t0, true);
    }

    /// A versioned-publish server's unversioned publish (clangd's clear for a file closed just
    /// before it was opened again) settles nothing, fresh or not: only the sent version's
    /// publish does.
    #[test]
    fn an_unversioned_publish_settles_nothing_under_the_versioned_publish_rule() {
        let t0 = Instant::now();
        let versioned = |publish| PushState {
            versioned_final: true,
            ..state(t0, publish)
        };
        check(versioned(Some((None, 100))), 60_000, t0, false);
        check(versioned(Some((None, 5))), 60_000, t0, false);
        check(versioned(Some((Some(2), 4000))), 4000, t0, true);
        // Another rule keeps the unversioned publish: after the send and the longer quiet.
        check(state(t0, Some((None, 100))), 1700, t0, true);
    }

    #[test]
    fn unversioned_publish_needs_to_follow_the_send_and_a_longer_quiet() {
        let t0 = Instant::now();
        // Received before lspc sent version 2: it describes older text, until the server has
        // been silent long enough for that set to stand (it did not change).
        check(state(t0, Some((None, 5))), 2000, t0, false);
        check(state(t0, Some((None, 5))), 3020, t0, true);
        // A versioned server's older publish never stands for a newer version.
        check(state(t0, Some((Some(1), 5))), 60_000, t0, false);
        check(state(t0, Some((None, 60))), 400, t0, false);
        check(state(t0, Some((None, 60))), 1560, t0, true);
    }

    /// gopls with no `go` on its PATH never publishes; with a `go.mod` it cannot load, its
    /// `Error loading workspace` status stays up: either way its silence stands once its health
    /// is an error, after the unversioned quiet period (not the file's timeout).
    #[test]
    fn an_unhealthy_servers_silence_stands_after_the_unversioned_quiet_period() {
        let t0 = Instant::now();
        let unhealthy = |publish, progress_ms: Option<u64>| PushState {
            unhealthy: true,
            last_progress_change: progress_ms.map(|ms| t0 + Duration::from_millis(ms)),
            ..state(t0, publish)
        };
        check(unhealthy(None, None), 1000, t0, false);
        check(unhealthy(None, None), 1510, t0, true);
        // Counted from the health change when it came after the send.
        check(unhealthy(None, Some(500)), 1510, t0, false);
        check(unhealthy(None, Some(500)), 2000, t0, true);
        // A stale versioned publish stands no more than none.
        check(unhealthy(Some((Some(1), 5)), None), 1510, t0, true);
        // A fresh publish settles by its own quiet period.
        check(unhealthy(Some((Some(2), 100)), None), 350, t0, true);
        // Work still reported holds it.
        let mut busy = unhealthy(None, None);
        busy.progress_active = true;
        check(busy, 60_000, t0, false);
        // A healthy server's silence never stands.
        check(state(t0, None), 60_000, t0, false);
    }

    /// gopls with a `diagnosticsDelay` of its entry's publishes its analyzer findings that long
    /// after its first round for the same version: the quiet period covers it.
    #[test]
    fn a_servers_deferred_round_lengthens_every_quiet_period() {
        let t0 = Instant::now();
        let deferred = |publish| PushState {
            deferred_round: Duration::from_millis(1000),
            ..state(t0, publish)
        };
        check(deferred(Some((Some(2), 100))), 350, t0, false);
        check(deferred(Some((Some(2), 100))), 1340, t0, false);
        check(deferred(Some((Some(2), 100))), 1350, t0, true);
        check(deferred(Some((None, 60))), 1560, t0, false);
        check(deferred(Some((None, 60))), 2560, t0, true);
        let mut saved = deferred(Some((Some(2), 100)));
        saved.saved = true;
        check(saved, 1840, t0, false);
        check(saved, 1850, t0, true);
        assert_eq!(
            pushed_part_settle_time(&deferred(Some((Some(2), 100))), QUIET),
            Some(t0 + Duration::from_millis(1350))
        );
    }

    #[test]
    fn a_save_lengthens_the_quiet_period() {
        let t0 = Instant::now();
        let mut saved = state(t0, Some((Some(2), 100)));
        saved.saved = true;
        check(saved, 400, t0, false);
        check(saved, 860, t0, true);
    }

    #[test]
    fn active_progress_holds_settling_and_its_end_restarts_the_quiet_period() {
        let t0 = Instant::now();
        let mut busy = state(t0, Some((Some(2), 100)));
        busy.progress_active = true;
        check(busy, 10_000, t0, false);
        busy.progress_active = false;
        busy.last_progress_change = Some(t0 + Duration::from_millis(4000));
        check(busy, 4100, t0, false);
        check(busy, 4260, t0, true);
        assert_eq!(
            push_settle_time(&busy, QUIET, QUIET_UNVERSIONED),
            Some(t0 + Duration::from_millis(4250))
        );
    }

    /// A readiness wait on a unit the server has loaded (clangd's database, gopls's module): the sent version's publish settles at
    /// once, but not while progress is active (an index running), and nothing else does.
    #[test]
    fn a_readiness_wait_on_a_loaded_unit_settles_at_its_publish_without_progress() {
        let t0 = Instant::now();
        let ready = |publish, progress_active| PushState {
            ready_at_publish: true,
            progress_active,
            ..state(t0, publish)
        };
        check(ready(Some((Some(2), 100)), false), 100, t0, true);
        check(ready(Some((Some(3), 100)), false), 100, t0, true);
        check(ready(Some((Some(2), 100)), true), 60_000, t0, false);
        // An older version takes the silence rule of any publish not for the sent text; an
        // unversioned one the quiet period after it.
        check(ready(Some((Some(1), 100)), false), 60_000, t0, false);
        check(ready(Some((None, 100)), false), 1_000, t0, false);
        check(ready(None, false), 60_000, t0, false);
        // Progress that ended after the publish: settled, the work is over.
        let mut ended = ready(Some((Some(2), 100)), false);
        ended.last_progress_change = Some(t0 + Duration::from_millis(900));
        check(ended, 900, t0, true);
    }

    #[test]
    fn a_versioned_publish_is_final_under_the_versioned_publish_rule() {
        let t0 = Instant::now();
        let final_state = |publish, progress_active, saved| PushState {
            versioned_final: true,
            progress_active,
            saved,
            ..state(t0, publish)
        };
        // At once, even while background indexing reports progress or after a save.
        check(
            final_state(Some((Some(2), 100)), false, false),
            100,
            t0,
            true,
        );
        check(final_state(Some((Some(2), 100)), true, true), 100, t0, true);
        check(
            final_state(Some((Some(3), 100)), false, false),
            100,
            t0,
            true,
        );
        // Never an older version, nothing, or an unversioned publish (that takes the quiet rule).
        check(
            final_state(Some((Some(1), 100)), false, false),
            60_000,
            t0,
            false,
        );
        check(final_state(None, false, false), 60_000, t0, false);
        check(final_state(Some((None, 100)), false, false), 200, t0, false);
        assert_eq!(
            push_settle_time(
                &final_state(Some((Some(2), 100)), true, false),
                QUIET,
                QUIET_UNVERSIONED
            ),
            Some(t0 + Duration::from_millis(100))
        );
    }

    #[test]
    fn pushed_part_of_a_pull_server_waits_for_quiet_after_the_last_activity() {
        let t0 = Instant::now();
        let at = |state: &PushState, ms: u64| {
            pushed_part_settled(state, t0 + Duration::from_millis(ms), QUIET)
        };
        // Nothing pushed: quiet since the send (at 10 ms).
        let nothing = state(t0, None);
        assert!(!at(&nothing, 200));
        assert!(at(&nothing, 260));
        // A publish (any version) restarts the quiet period.
        let pushed = state(t0, Some((Some(1), 300)));
        assert!(!at(&pushed, 500));
        assert!(at(&pushed, 550));
        // After a save: at least 750 ms; progress holds it, its end restarts it.
        let mut saved = state(t0, None);
        saved.saved = true;
        assert!(!at(&saved, 700));
        assert!(at(&saved, 760));
        saved.progress_active = true;
        assert!(!at(&saved, 60_000));
        assert_eq!(pushed_part_settle_time(&saved, QUIET), None);
        saved.progress_active = false;
        saved.last_progress_change = Some(t0 + Duration::from_millis(2000));
        assert!(!at(&saved, 2700));
        assert!(at(&saved, 2750));
    }

    #[test]
    fn rules_by_server_name() {
        let check = |config: &str, info: Option<&str>, pull: bool, expected: SettleRule| {
            assert_eq!(SettleRule::for_server(config, info, pull, false), expected);
        };
        check("rust-analyzer", None, true, SettleRule::PullAndPublish);
        check(
            "ra",
            Some("rust-analyzer"),
            true,
            SettleRule::PullAndPublish,
        );
        assert_eq!(
            SettleRule::for_server("fx", None, true, true),
            SettleRule::PullAndPublish
        );
        assert_eq!(
            SettleRule::for_server("fx", None, false, true),
            SettleRule::QuietAfterPublish
        );
        check("clangd", None, false, SettleRule::VersionedPublish);
        check("c", Some("clangd"), false, SettleRule::VersionedPublish);
        check("clangd", None, true, SettleRule::Pull);
        check("pyright", Some("Pyright"), true, SettleRule::Pull);
        check(
            "ts",
            Some("typescript-language-server"),
            false,
            SettleRule::ConfirmedUnversionedPublish,
        );
        check(
            "taplo",
            None,
            false,
            SettleRule::QuietAfterUnversionedPublish,
        );
        check("pylsp", None, false, SettleRule::QuietAfterPublish);
        check(
            "mine",
            Some("unknown"),
            false,
            SettleRule::QuietAfterPublish,
        );
    }

    /// An entry under another name picks its rule and notes by the program it runs, also
    /// through a launcher: bash-language-server sends no `serverInfo.name`, so its entry name
    /// alone gave it neither the configuration gate nor, for clangd behind `env`, its rule.
    #[test]
    fn lspc_servers_picks_rules_by_the_program_an_entry_runs() {
        let sh = crate::config::ServerConfig {
            args: vec!["start".into()],
            ..crate::config::test_entry("sh", "/usr/bin/bash-language-server")
        };
        let c = crate::config::ServerConfig {
            args: vec!["CLANGD_FLAGS=-j=1".into(), "clangd-14".into()],
            ..crate::config::test_entry("c", "env")
        };
        let py = crate::config::test_entry("pyright", "/opt/bin/pyright-langserver");
        let text = SettleRule::render_expected([&sh, &c, &py].into_iter());
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                format!(
                    "  sh: quiet-after-publish: {}; {}",
                    SettleRule::QuietAfterPublish.description(),
                    super::super::configuration_gate::DESCRIPTION
                ),
                format!(
                    "  c: versioned-publish: {}",
                    SettleRule::VersionedPublish.description()
                ),
                format!("  pyright: pull: {}", SettleRule::Pull.description()),
            ]
        );
    }
}
