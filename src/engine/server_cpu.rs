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
//! The sample covers the server's process tree (a launcher that forks rather than `exec`s, and
//! gopls's `go list` children): the `utime + stime + cutime + cstime` of each process's
//! `/proc/PID/stat`, in clock ticks (1/100 s), and whether any of their threads is runnable
//! (`R` in `/proc/PID/task/TID/stat`). Busy means a runnable thread at the sample, or at least
//! [`BUSY_SHARE_PERCENT`] of one core since the previous sample, taken at most every
//! [`SAMPLE_INTERVAL`]. An idle gopls 0.5 is charged about 7 % (a tick every 150 ms or so);
//! analysing, it uses 100-400 % with its children, and on a machine loaded with four other
//! busy processes 16-24 % (helper-41), its threads then waiting to run.
//!
//! Only a wait whose server has not yet published for the sent version counts the CPU: after a
//! versioned publish the rule's own quiet period stands (a server that keeps a background
//! thread busy, indexing a workspace of 400 scripts, must not hold every answer).

use std::time::{Duration, Instant};

/// The shortest time between two samples.
pub(crate) const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);

/// The share of one core above which the server counts as computing.
const BUSY_SHARE_PERCENT: u64 = 12;

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
        let Some((ticks, runnable)) = tree_activity(pid) else {
            return;
        };
        let computed = self.last.is_some_and(|(before, at)| {
            let elapsed_ms = now.saturating_duration_since(at).as_millis() as u64;
            busy(ticks.saturating_sub(before) * MILLIS_PER_TICK, elapsed_ms)
        });
        if runnable || computed {
            self.last_busy = Some(now);
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

/// How many processes of a server's tree are read at most.
const MAX_TREE_PROCESSES: usize = 64;

/// The CPU ticks of process `pid` and its descendants, and whether a thread of theirs is
/// runnable; `None` when `pid` cannot be read (gone, or no `/proc`).
fn tree_activity(pid: u32) -> Option<(u64, bool)> {
    let mut ticks = cpu_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    let mut runnable = false;
    let mut pending = vec![pid];
    let mut seen = 0;
    while let Some(process) = pending.pop() {
        seen += 1;
        if process != pid {
            let Some(own) = std::fs::read_to_string(format!("/proc/{process}/stat"))
                .ok()
                .as_deref()
                .and_then(cpu_ticks)
            else {
                continue;
            };
            ticks += own;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{process}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path();
            if !runnable {
                runnable = std::fs::read_to_string(path.join("stat"))
                    .ok()
                    .is_some_and(|stat| thread_state(&stat) == Some('R'));
            }
            let children = std::fs::read_to_string(path.join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                if seen + pending.len() < MAX_TREE_PROCESSES {
                    pending.push(child);
                }
            }
        }
    }
    Some((ticks, runnable))
}

/// The state letter of a `/proc/.../stat` line (`R` running or runnable, `S` sleeping, …).
fn thread_state(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// `utime + stime + cutime + cstime` of a `/proc/PID/stat` line, in clock ticks: fields 14 to 17
/// (1-based), counted after the command name's closing parenthesis (the name may hold spaces
/// and parentheses).
fn cpu_ticks(stat: &str) -> Option<u64> {
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
        assert_eq!(cpu_ticks(stat), Some(150 + 30 + 7 + 5));
        assert_eq!(thread_state(stat), Some('S'));
        assert_eq!(cpu_ticks("4242 (gopls) S 1"), None);
        assert_eq!(cpu_ticks("no name"), None);
    }

    #[test]
    fn computing_is_an_eighth_of_a_core() {
        assert!(!busy(0, 200));
        // Idle gopls 0.5: a tick now and then.
        assert!(!busy(10, 200));
        assert!(busy(30, 200));
        assert!(busy(120, 1000));
        assert!(!busy(110, 1000));
    }

    #[test]
    fn a_process_tree_is_read_with_its_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        // Read first: this process's time only grows (other tests run on its threads), so the
        // tree read after it counts at least as much.
        let own = cpu_ticks(&std::fs::read_to_string("/proc/self/stat").unwrap()).unwrap();
        let (ticks, _) = tree_activity(std::process::id()).expect("this process");
        assert!(ticks >= own, "{ticks} < {own}");
        assert!(tree_activity(child.id()).is_some());
        let _ = child.kill();
        let _ = child.wait();
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
