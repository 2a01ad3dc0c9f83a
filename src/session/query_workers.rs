//! Kept threads for the session: query threads (`"lspc-session-query-N"`) and each
//! connection's two threads (`"lspc-session-conn-N"`, `"lspc-session-in-N"`), kept between
//! queries and connections: a warm one-shot command is served by threads that are already there
//! instead of threads started (and torn down) per command, which on a loaded machine costs more
//! than the query itself.
//!
//! Invariants:
//! - A job never waits for a busy thread: when no thread is idle a new one is started for it,
//!   so a query stuck on a slow server delays no other query. The number of threads is the
//!   largest number of queries that ever ran at once.
//! - An idle thread is claimed before its job is sent (the `idle` count is decremented by the
//!   sender, incremented by the thread when it is ready again), so two senders never count on
//!   the same idle thread.
//! - [`QueryWorkers::shutdown`] closes the job channel and joins every thread; a job in flight
//!   ends first (the engine is gone by then, so its waits end at once).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use crossbeam_channel::{unbounded, Receiver, Sender};

/// A unit of work: one query and the sending of its answer.
pub type Job = Box<dyn FnOnce() + Send>;

/// The kept query threads; shared by every connection thread.
pub struct QueryWorkers {
    /// `None` once shut down (a job then fails to start).
    job_sender: Mutex<Option<Sender<Job>>>,
    job_receiver: Receiver<Job>,
    /// Threads waiting for a job and not yet claimed.
    idle: Arc<AtomicUsize>,
    /// Every thread started. The mutexes guard bookkeeping only (this list and the sender), not
    /// engine state: connection threads start workers concurrently.
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The threads' name, before `-N`.
    name: &'static str,
}

impl Default for QueryWorkers {
    /// The query threads.
    fn default() -> QueryWorkers {
        QueryWorkers::named("lspc-session-query")
    }
}

impl QueryWorkers {
    /// Kept threads named `name-N` (N from 1).
    pub fn named(name: &'static str) -> QueryWorkers {
        let (job_sender, job_receiver) = unbounded();
        QueryWorkers {
            job_sender: Mutex::new(Some(job_sender)),
            job_receiver,
            idle: Arc::new(AtomicUsize::new(0)),
            threads: Mutex::new(Vec::new()),
            name,
        }
    }

    /// Runs `job` on an idle thread, or on a new one when none is idle.
    ///
    /// Errors: the message when the workers are shut down or no thread can be started.
    pub fn run(&self, job: Job) -> Result<(), String> {
        let claimed = self
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |idle| {
                idle.checked_sub(1)
            })
            .is_ok();
        if claimed {
            let sender = lock(&self.job_sender).clone();
            return match sender {
                Some(sender) => sender
                    .send(job)
                    .map_err(|_| "the session is shutting down".to_owned()),
                None => Err("the session is shutting down".to_owned()),
            };
        }
        let mut threads = lock(&self.threads);
        if lock(&self.job_sender).is_none() {
            return Err("the session is shutting down".to_owned());
        }
        let jobs = self.job_receiver.clone();
        let idle = Arc::clone(&self.idle);
        let thread = thread::Builder::new()
            .name(format!("{}-{}", self.name, threads.len() + 1))
            .spawn(move || {
                job();
                loop {
                    idle.fetch_add(1, Ordering::SeqCst);
                    match jobs.recv() {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            })
            .map_err(|error| format!("cannot start a thread ({}): {error}", self.name))?;
        threads.push(thread);
        Ok(())
    }

    /// Closes the job channel and joins every thread.
    pub fn shutdown(&self) {
        drop(lock(&self.job_sender).take());
        let threads = std::mem::take(&mut *lock(&self.threads));
        for thread in threads {
            let _ = thread.join();
        }
    }

    /// How many threads were started (for tests).
    pub fn n_threads(&self) -> usize {
        lock(&self.threads).len()
    }
}

/// A poisoned lock only means a thread panicked while holding it; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn threads_are_reused_and_a_busy_one_never_delays_another_job() {
        let workers = QueryWorkers::default();
        let (done_sender, done) = unbounded::<u32>();
        for n in 0..3 {
            let done_sender = done_sender.clone();
            workers
                .run(Box::new(move || {
                    let _ = done_sender.send(n);
                }))
                .unwrap();
            assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok(n));
            // The thread counts itself idle just after its job.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while workers.idle.load(Ordering::SeqCst) == 0 {
                assert!(std::time::Instant::now() < deadline);
                thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(
            workers.n_threads(),
            1,
            "one thread ran the three jobs in turn"
        );
        let (release, blocked) = unbounded::<()>();
        workers
            .run(Box::new(move || {
                let _ = blocked.recv();
            }))
            .unwrap();
        let done_sender_2 = done_sender.clone();
        workers
            .run(Box::new(move || {
                let _ = done_sender_2.send(7);
            }))
            .unwrap();
        assert_eq!(
            done.recv_timeout(Duration::from_secs(10)),
            Ok(7),
            "a second job ran while the first was blocked"
        );
        assert_eq!(workers.n_threads(), 2);
        drop(release);
        workers.shutdown();
        assert!(workers.run(Box::new(|| {})).is_err());
    }
}
