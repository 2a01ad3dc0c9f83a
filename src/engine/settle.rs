//! When are a file's pushed diagnostics "settled"? A pure decision, so it can be tested without
//! servers or clocks.
//!
//! The rule (seed 004, cases B14 and B16): a server has settled a document version when
//! 1. it published for that version after lspc sent it — a publish carrying that version (or a
//!    higher one, a server bug that is accepted), or, from servers that send no version
//!    (typescript-language-server, taplo), any publish received after the text was sent;
//! 2. no `$/progress` token of that server is active; and
//! 3. a quiet period has passed since the last publish and the last progress change: 250 ms after
//!    a versioned publish, longer after an unversioned one, since such a publish may describe
//!    older text and a fresher one may follow; and at least [`QUIET_AFTER_SAVE`] when a `didSave`
//!    went with the text, since check-on-save servers publish a second round after the save
//!    (case B18: rust-analyzer's `cargo check`, the fixture's "semantic" diagnostic).
//!
//! "Nothing arrived" is never settled: the caller's timeout turns it into "incomplete".

use std::time::{Duration, Instant};

/// How long a server that sends no versions may stay silent after a change before its last set
/// for the file stands: typescript-language-server does not publish again when an edit leaves a
/// file's diagnostics unchanged, and lspc cannot tell "unchanged" from "not yet" otherwise.
pub(crate) const UNVERSIONED_SILENCE: Duration = Duration::from_secs(3);

/// The shortest quiet period after a `didSave` (B18).
pub(crate) const QUIET_AFTER_SAVE: Duration = Duration::from_millis(750);

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
    if state.saved {
        quiet.max(QUIET_AFTER_SAVE)
    } else {
        quiet
    }
}

/// Whether the server's pushed diagnostics for the document are settled at `now`.
pub(crate) fn push_settled(
    state: &PushState,
    now: Instant,
    quiet: Duration,
    quiet_unversioned: Duration,
) -> bool {
    let Some(publish) = state.last_publish else {
        return false;
    };
    let fresh = match publish.version {
        Some(version) => version >= state.sent_version,
        None => publish.at >= state.sent_at,
    };
    if state.progress_active {
        return false;
    }
    if !fresh {
        return silence_settles(state, &publish).is_some_and(|at| now >= at);
    }
    let quiet = quiet_for(state, &publish, quiet, quiet_unversioned);
    let last_activity = match state.last_progress_change {
        Some(progress) if progress > publish.at => progress,
        _ => publish.at,
    };
    now.saturating_duration_since(last_activity) >= quiet
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
    let publish = state.last_publish?;
    if state.progress_active {
        return None;
    }
    let fresh = match publish.version {
        Some(version) => version >= state.sent_version,
        None => publish.at >= state.sent_at,
    };
    if !fresh {
        return silence_settles(state, &publish);
    }
    let quiet = quiet_for(state, &publish, quiet, quiet_unversioned);
    let last_activity = match state.last_progress_change {
        Some(progress) if progress > publish.at => progress,
        _ => publish.at,
    };
    Some(last_activity + quiet)
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
}
