//! Whether a language server's process is computing, from its CPU time (issue 15's settle
//! rules, for the servers that give no completeness signal).
//!
//! gopls 0.5 publishes a file's type-check set first, without a version (its workspace pass, as
//! the file is on disk), and the set with its analyzers' findings (`go vet`'s) only once they
//! have run over the whole package, with the version; when that set equals the first it
//! publishes nothing more. On a package of 40 files the second publish came 2-5 s after the
//! first, after the unversioned quiet period, so a file with a `printf` finding was called
//! clean (a new user's trial: 7 runs in 7). No message tells when the analysis ends, but the
//! process does: it stops using CPU. Under the rules without a completeness signal
//! ([`super::settle::SettleRule::QuietAfterPublish`] and
//! [`super::settle::SettleRule::QuietAfterUnversionedPublish`]), a server that used CPU since
//! the last sample counts as a progress change, so the quiet period runs from the end of its
//! work instead of from its last publish.
//!
//! The sample: `utime + stime + cutime + cstime` of `/proc/PID/stat` (the process's threads
//! and the children it waited for, such as gopls's `go list`), in clock ticks (1/100 s). Busy
//! means at least [`BUSY_SHARE_PERCENT`] of one core over the time since the previous sample,
//! taken at most every [`SAMPLE_INTERVAL`]. An idle gopls 0.5 is charged about 7 % (a tick
//! every 150 ms or so); analysing, gopls uses 100-400 % with its `go list` children, and a
//! multi-threaded server starved on a loaded machine still more than a quarter.

use std::time::{Duration, Instant};

/// The shortest time between two samples.
pub(crate) const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);

/// The share of one core above which the server counts as computing.
const BUSY_SHARE_PERCENT: u64 = 25;

/// Milliseconds per clock tick (`sysconf(_SC_CLK_TCK)` is 100 on Linux).
const MILLIS_PER_TICK: u64 = 10;

/// A server process's CPU activity, as sampled.
#[derive(Debug, Default)]
pub(crate) struct CpuActivity {
    /// The previous sample: the process's CPU ticks, and when they were read.
    last: Option<(u64, Instant)>,
    /// When a sample last found the process computing.
    last_busy: Option<Instant>,
}

impl CpuActivity {
    /// Samples process `pid` unless the last sample is younger than [`SAMPLE_INTERVAL`].
    pub(crate) fn sample(&mut self, pid: u32, now: Instant) {
        if let Some((_, at)) = self.last {
            if now.saturating_duration_since(at) < SAMPLE_INTERVAL {
                return;
            }
        }
        let Some(ticks) = cpu_ticks(pid) else {
            return;
        };
        if let Some((before, at)) = self.last {
            let elapsed_ms = now.saturating_duration_since(at).as_millis() as u64;
            let used_ms = ticks.saturating_sub(before) * MILLIS_PER_TICK;
            if busy(used_ms, elapsed_ms) {
                self.last_busy = Some(now);
            }
        }
        self.last = Some((ticks, now));
    }

    /// When a sample last found the process computing (`None`: never, or not sampled).
    pub(crate) fn last_busy(&self) -> Option<Instant> {
        self.last_busy
    }

    /// Forget the samples (a new process).
    pub(crate) fn reset(&mut self) {
        *self = CpuActivity::default();
    }
}

/// Whether `used_ms` of CPU over `elapsed_ms` is computing ([`BUSY_SHARE_PERCENT`]).
fn busy(used_ms: u64, elapsed_ms: u64) -> bool {
    used_ms > 0 && used_ms * 100 >= elapsed_ms * BUSY_SHARE_PERCENT
}

/// `utime + stime + cutime + cstime` of `/proc/PID/stat`, in clock ticks; `None` when it cannot
/// be read (the process is gone, or no `/proc`).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat)
}

/// [`cpu_ticks`] of a `/proc/PID/stat` line: fields 14 to 17 (1-based), counted after the
/// command name's closing parenthesis (the name may hold spaces and parentheses).
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| fields.get(number - 3)?.parse::<u64>().ok();
    Some(field(14)? + field(15)? + field(16)? + field(17)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let stat =
            "4242 (go pls) (x)) S 1 4242 4242 0 -1 4194304 100 0 0 0 150 30 7 5 20 0 12 0 1000 0 0";
        assert_eq!(parse_cpu_ticks(stat), Some(150 + 30 + 7 + 5));
        assert_eq!(parse_cpu_ticks("4242 (gopls) S 1"), None);
        assert_eq!(parse_cpu_ticks("no name"), None);
    }

    #[test]
    fn computing_is_a_quarter_of_a_core() {
        assert!(!busy(0, 200));
        // Idle gopls 0.5: a tick now and then.
        assert!(!busy(10, 200));
        assert!(!busy(20, 200));
        assert!(busy(50, 200));
        assert!(busy(250, 1000));
        assert!(!busy(240, 1000));
    }

    #[test]
    fn this_process_can_be_sampled() {
        let mut activity = CpuActivity::default();
        let t0 = Instant::now();
        activity.sample(std::process::id(), t0);
        assert!(activity.last.is_some());
        // Too soon: no second sample.
        activity.sample(std::process::id(), t0 + Duration::from_millis(100));
        assert_eq!(activity.last.map(|(_, at)| at), Some(t0));
    }
}
