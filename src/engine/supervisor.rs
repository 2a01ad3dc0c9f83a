//! Restart policy, crash streaks with backoff, and hung-server detection (issue 6, seed 004).
//!
//! Pure bookkeeping, no I/O: the event loop asks [`Supervisor::on_crash`] what to do after a
//! server crashed and [`Supervisor::on_deadline_missed`] whether a server that keeps missing
//! request deadlines should be treated as hung.
//!
//! Invariants:
//! - A crash is the process exiting (or closing its pipes, or being killed as hung) after a
//!   successful `initialize`; a server that never initialized is not supervised (it fails at once).
//! - Restarts back off from [`FIRST_RESTART_BACKOFF`] doubling to [`MAX_RESTART_BACKOFF`].
//! - A crash more than [`STREAK_WINDOW`] after the previous one starts a new streak (count 1).
//! - Once a streak exceeds the limit the server is given up for good: [`Supervisor::gave_up`] stays
//!   true for the rest of the lspc process.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// The first restart waits this long after the crash (seed 004: 500 ms).
pub const FIRST_RESTART_BACKOFF: Duration = Duration::from_millis(500);
/// The backoff doubles up to this bound (seed 004: 30 s).
pub const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(30);
/// A crash later than this after the previous crash starts a new streak (seed 004: a minute).
pub const STREAK_WINDOW: Duration = Duration::from_secs(60);
/// This many request deadlines missed in a row mark a server as hung (issue 6).
pub const HUNG_AFTER_MISSED_DEADLINES: u32 = 3;

/// `--restart never|always|N` (default 3), or a server's `restartOnCrash`/`maxRestarts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Never restart: the first crash gives the server up.
    Never,
    /// Restart after every crash (still with backoff).
    Always,
    /// At most this many restarts per streak; `Limit(0)` behaves like `Never`.
    Limit(u32),
}

impl RestartPolicy {
    /// The policy a server's config asks for: `restartOnCrash: false` is `Never`, otherwise
    /// `maxRestarts` restarts per streak.
    pub fn from_config(restart_on_crash: bool, max_restarts: u32) -> RestartPolicy {
        if restart_on_crash {
            RestartPolicy::Limit(max_restarts)
        } else {
            RestartPolicy::Never
        }
    }

    /// Whether the `streak`-th crash in a row (1-based) may still be followed by a restart.
    pub fn allows(self, streak: u32) -> bool {
        match self {
            RestartPolicy::Never => false,
            RestartPolicy::Always => true,
            RestartPolicy::Limit(limit) => streak <= limit,
        }
    }
}

impl Default for RestartPolicy {
    fn default() -> RestartPolicy {
        RestartPolicy::Limit(3)
    }
}

/// Why a `--restart` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicyError(pub String);

impl fmt::Display for RestartPolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--restart: expected never, always or a number of restarts, got {:?}",
            self.0
        )
    }
}

impl std::error::Error for RestartPolicyError {}

impl FromStr for RestartPolicy {
    type Err = RestartPolicyError;

    /// `never`, `always`, or a non-negative integer (`0` means never).
    fn from_str(text: &str) -> Result<RestartPolicy, RestartPolicyError> {
        match text {
            "never" => Ok(RestartPolicy::Never),
            "always" => Ok(RestartPolicy::Always),
            _ => text
                .parse::<u32>()
                .map(RestartPolicy::Limit)
                .map_err(|_| RestartPolicyError(text.to_owned())),
        }
    }
}

impl fmt::Display for RestartPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestartPolicy::Never => f.write_str("never"),
            RestartPolicy::Always => f.write_str("always"),
            RestartPolicy::Limit(limit) => write!(f, "{limit}"),
        }
    }
}

/// What to do after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashDecision {
    /// Start the server again at this instant (the crash time plus the backoff).
    RestartAt(Instant),
    /// Do not restart, ever: `streak` crashes in a row used up the policy.
    GiveUp { streak: u32 },
}

/// One server's supervision state.
#[derive(Debug, Clone)]
pub struct Supervisor {
    policy: RestartPolicy,
    /// Crashes in the current streak (0 before the first crash).
    streak: u32,
    last_crash: Option<Instant>,
    /// Restarts done over the whole lspc process (for `lspc servers`).
    total_restarts: u32,
    /// When the pending restart is due; `None` when no restart is pending.
    restart_at: Option<Instant>,
    gave_up: bool,
    missed_deadlines: u32,
}

impl Supervisor {
    pub fn new(policy: RestartPolicy) -> Supervisor {
        Supervisor {
            policy,
            streak: 0,
            last_crash: None,
            total_restarts: 0,
            restart_at: None,
            gave_up: false,
            missed_deadlines: 0,
        }
    }

    pub fn policy(&self) -> RestartPolicy {
        self.policy
    }

    /// Record a crash at `now` and decide: restart after the backoff, or give up for good.
    pub fn on_crash(&mut self, now: Instant) -> CrashDecision {
        self.missed_deadlines = 0;
        let new_streak = self
            .last_crash
            .is_none_or(|last| now.saturating_duration_since(last) > STREAK_WINDOW);
        self.streak = if new_streak { 1 } else { self.streak + 1 };
        self.last_crash = Some(now);
        if self.gave_up || !self.policy.allows(self.streak) {
            self.gave_up = true;
            self.restart_at = None;
            return CrashDecision::GiveUp {
                streak: self.streak,
            };
        }
        let at = now + backoff(self.streak);
        self.restart_at = Some(at);
        CrashDecision::RestartAt(at)
    }

    /// The pending restart's due time, if one is pending.
    pub fn restart_at(&self) -> Option<Instant> {
        self.restart_at
    }

    /// Take the pending restart if it is due at `now` (counts it as a restart).
    pub fn take_due_restart(&mut self, now: Instant) -> bool {
        match self.restart_at {
            Some(at) if at <= now => {
                self.restart_at = None;
                self.total_restarts += 1;
                true
            }
            _ => false,
        }
    }

    /// Whether restarting was given up for good.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    /// Restarts done so far over the whole lspc process.
    pub fn total_restarts(&self) -> u32 {
        self.total_restarts
    }

    /// Crashes in the current streak.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// A request to the server hit its deadline; `true` when this makes
    /// [`HUNG_AFTER_MISSED_DEADLINES`] in a row (the caller then kills the server as hung).
    pub fn on_deadline_missed(&mut self) -> bool {
        self.missed_deadlines += 1;
        self.missed_deadlines >= HUNG_AFTER_MISSED_DEADLINES
    }

    /// The server answered a request (any answer, error or not): it is not hung.
    pub fn on_answer(&mut self) {
        self.missed_deadlines = 0;
    }
}

/// The wait before the restart that follows the `streak`-th crash in a row (1-based): 500 ms,
/// 1 s, 2 s, … up to 30 s.
pub fn backoff(streak: u32) -> Duration {
    let doublings = streak.saturating_sub(1).min(16);
    (FIRST_RESTART_BACKOFF * 2u32.pow(doublings)).min(MAX_RESTART_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_policy_parses() {
        let check = |text: &str, expected: Result<RestartPolicy, &str>| {
            let parsed = text.parse::<RestartPolicy>().map_err(|e| e.to_string());
            assert_eq!(parsed, expected.map_err(str::to_owned), "{text}");
        };
        check("never", Ok(RestartPolicy::Never));
        check("always", Ok(RestartPolicy::Always));
        check("0", Ok(RestartPolicy::Limit(0)));
        check("5", Ok(RestartPolicy::Limit(5)));
        check(
            "-1",
            Err("--restart: expected never, always or a number of restarts, got \"-1\""),
        );
        check(
            "sometimes",
            Err("--restart: expected never, always or a number of restarts, got \"sometimes\""),
        );
    }

    #[test]
    fn backoff_doubles_to_thirty_seconds() {
        let check = |streak: u32, millis: u64| {
            assert_eq!(backoff(streak), Duration::from_millis(millis), "{streak}");
        };
        check(1, 500);
        check(2, 1000);
        check(3, 2000);
        check(6, 16_000);
        check(7, 30_000);
        check(40, 30_000);
    }

    /// Crashes at these offsets (ms) under `policy`; expected decisions as
    /// `Some(backoff ms)` for a restart, `None` for giving up.
    fn check_crashes(policy: RestartPolicy, crashes_ms: &[u64], expected: &[Option<u64>]) {
        let start = Instant::now();
        let mut supervisor = Supervisor::new(policy);
        let decisions: Vec<Option<u64>> = crashes_ms
            .iter()
            .map(|&offset| {
                let now = start + Duration::from_millis(offset);
                match supervisor.on_crash(now) {
                    CrashDecision::RestartAt(at) => Some((at - now).as_millis() as u64),
                    CrashDecision::GiveUp { .. } => None,
                }
            })
            .collect();
        assert_eq!(decisions, expected, "{policy:?} {crashes_ms:?}");
    }

    #[test]
    fn crash_streaks() {
        check_crashes(
            RestartPolicy::Limit(3),
            &[0, 1000, 3000, 6000],
            &[Some(500), Some(1000), Some(2000), None],
        );
        // A crash more than a minute after the previous one starts a new streak.
        check_crashes(
            RestartPolicy::Limit(3),
            &[0, 1000, 3000, 64_000, 65_000],
            &[Some(500), Some(1000), Some(2000), Some(500), Some(1000)],
        );
        // Exactly a minute is still the same streak.
        check_crashes(RestartPolicy::Limit(1), &[0, 60_000], &[Some(500), None]);
        check_crashes(RestartPolicy::Never, &[0], &[None]);
        check_crashes(RestartPolicy::Limit(0), &[0], &[None]);
        check_crashes(
            RestartPolicy::Always,
            &[0, 1, 2, 3, 4, 5, 6, 7],
            &[
                Some(500),
                Some(1000),
                Some(2000),
                Some(4000),
                Some(8000),
                Some(16_000),
                Some(30_000),
                Some(30_000),
            ],
        );
        // Giving up is for good, even after a long quiet time.
        check_crashes(
            RestartPolicy::Limit(1),
            &[0, 10, 500_000],
            &[Some(500), None, None],
        );
    }

    #[test]
    fn due_restarts_are_taken_once() {
        let start = Instant::now();
        let mut supervisor = Supervisor::new(RestartPolicy::Limit(3));
        supervisor.on_crash(start);
        assert!(!supervisor.take_due_restart(start + Duration::from_millis(499)));
        assert!(supervisor.take_due_restart(start + Duration::from_millis(500)));
        assert!(!supervisor.take_due_restart(start + Duration::from_millis(501)));
        assert_eq!(supervisor.total_restarts(), 1);
        assert_eq!(supervisor.restart_at(), None);
    }

    #[test]
    fn three_missed_deadlines_in_a_row_mean_hung() {
        let mut supervisor = Supervisor::new(RestartPolicy::default());
        assert!(!supervisor.on_deadline_missed());
        assert!(!supervisor.on_deadline_missed());
        supervisor.on_answer();
        assert!(!supervisor.on_deadline_missed());
        assert!(!supervisor.on_deadline_missed());
        assert!(supervisor.on_deadline_missed());
    }

    #[test]
    fn config_policy() {
        assert_eq!(RestartPolicy::from_config(false, 3), RestartPolicy::Never);
        assert_eq!(RestartPolicy::from_config(true, 7), RestartPolicy::Limit(7));
    }
}
