//! Requests in flight, shared by every thread that starts, answers or cancels one (issue 15):
//! the hub, the stdio reader (which starts instant tool calls itself, [`super::fast_path`]), the
//! workers and the continuations run by the thread that has a server's answer.
//!
//! The hub still owns each client's protocol state; what a call needs outside the hub is here:
//! - [`Calls`]: the in-flight requests by client and request id (one lock around a map of small
//!   entries, held for a lookup or an insert, never while blocking), and the tag counter the
//!   engine's cancellation uses;
//! - [`AnswerGate`]: one atomic state per call ordering its answer, its progress notifications
//!   and its cancellation;
//! - [`WorkerPool`]: the tool-call threads, which any thread may hand a job to.
//!
//! Invariants:
//! - An id is in [`Calls`] from the moment its request is accepted until just before its answer
//!   is written (or its call ends cancelled), so a second request with that id is refused while
//!   the first runs, and accepted as soon as its answer can have reached the client.
//! - A call's last message is sent once: the gate lets exactly one of "answer" and "cancel" win,
//!   and no progress notification follows either (MCP §cancellation: nothing more is sent for a
//!   cancelled request).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

use crossbeam_channel::{unbounded, Receiver, Sender};
use serde_json::Value;

use super::{ClientId, OutboundStream};
use crate::engine;

/// Who sends the last message of a call. The thread that has the answer writes it straight onto
/// the request's stream; the hub cancels calls and sends their progress. One atomic state orders
/// the three, so no progress follows an answer and a cancelled call is never answered.
#[derive(Clone, Default)]
pub(super) struct AnswerGate(Arc<AtomicU8>);

impl AnswerGate {
    const RUNNING: u8 = 0;
    const ANSWERED: u8 = 1;
    const CANCELLED: u8 = 2;
    /// The hub is sending a progress notification; the answering thread waits the few
    /// instructions it takes.
    const NOTIFYING: u8 = 3;

    fn swap_from_running(&self, to: u8) -> Result<u8, u8> {
        self.0
            .compare_exchange(Self::RUNNING, to, Ordering::AcqRel, Ordering::Acquire)
    }

    /// Answering thread: whether the answer may be sent (the call is then answered); `false`
    /// once the call was cancelled.
    pub(super) fn answer(&self) -> bool {
        loop {
            match self.swap_from_running(Self::ANSWERED) {
                Ok(_) => return true,
                Err(Self::NOTIFYING) => std::thread::yield_now(),
                Err(_) => return false,
            }
        }
    }

    /// Whether the call was cancelled.
    pub(super) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire) == Self::CANCELLED
    }

    /// Cancel the call; `false` when its answer was already sent.
    pub(super) fn cancel(&self) -> bool {
        self.swap_from_running(Self::CANCELLED).is_ok()
    }

    /// Hub: run `send` (a progress notification) only while the call is unanswered.
    pub(super) fn notify(&self, send: impl FnOnce()) {
        if self.swap_from_running(Self::NOTIFYING).is_ok() {
            send();
            self.0.store(Self::RUNNING, Ordering::Release);
        }
    }
}

/// A request in flight (a tool call or a resource read).
pub(super) struct InFlight {
    /// The engine tag of its LSP requests ([`crate::engine::Op::Cancel`]).
    pub tag: u64,
    pub gate: AnswerGate,
    pub progress_token: Option<Value>,
    pub started: Instant,
    pub last_progress: Instant,
    pub progress: u64,
    /// Where the answer and progress go; `None` once cancelled (nothing more is sent for it).
    pub stream: Option<OutboundStream>,
    /// `tools/call NAME` or `resources/read URI`, for logs and progress messages.
    pub what: Cow<'static, str>,
}

impl InFlight {
    pub(super) fn new(
        tag: u64,
        progress_token: Option<Value>,
        stream: &OutboundStream,
        what: impl Into<Cow<'static, str>>,
    ) -> InFlight {
        let now = Instant::now();
        InFlight {
            tag,
            gate: AnswerGate::default(),
            progress_token,
            started: now,
            last_progress: now,
            progress: 0,
            stream: Some(stream.clone()),
            what: what.into(),
        }
    }
}

/// The key of a request in [`Calls`]: its client and its id's JSON text (`1` and `"1"` differ).
pub(super) type CallKey = (ClientId, String);

/// The id's JSON text, as [`CallKey`] holds it.
pub(super) fn id_key(id: &Value) -> String {
    match id {
        // The common case without a serializer (issue 15).
        Value::Number(number) => number.to_string(),
        _ => serde_json::to_string(id).unwrap_or_default(),
    }
}

/// The in-flight requests of every client, and the next engine tag.
#[derive(Default)]
pub(super) struct Calls {
    map: Mutex<HashMap<CallKey, InFlight>>,
    next_tag: AtomicU64,
}

/// A second request with the id of one still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DuplicateId;

impl Calls {
    /// A fresh engine tag (never 0).
    pub(super) fn next_tag(&self) -> u64 {
        self.next_tag.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The map, for the hub's walks (progress, cancellation, shutdown). Not held while blocking.
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<CallKey, InFlight>> {
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Accept `call` under `key`; returns its gate.
    ///
    /// Errors: [`DuplicateId`] when a request with that key is still in flight.
    pub(super) fn register(&self, key: CallKey, call: InFlight) -> Result<AnswerGate, DuplicateId> {
        let mut map = self.lock();
        if map.contains_key(&key) {
            return Err(DuplicateId);
        }
        let gate = call.gate.clone();
        map.insert(key, call);
        Ok(gate)
    }

    /// The call `key` with engine tag `tag` is over: forget it (a later request with the same id
    /// is a new call, which the tag tells apart).
    pub(super) fn remove(&self, key: &CallKey, tag: u64) -> Option<InFlight> {
        let mut map = self.lock();
        match map.get(key) {
            Some(call) if call.tag == tag => map.remove(key),
            _ => None,
        }
    }

    /// Whether some call still waits for its answer to be sent.
    pub(super) fn any_answer_pending(&self) -> bool {
        self.lock().values().any(|call| call.stream.is_some())
    }
}

/// How a call ends on the thread that has its outcome: it leaves [`Calls`] first (so its id can
/// be used again once the client has the answer), then the answer is written unless the call was
/// cancelled, then the hub is told (a wake-up only while it waits for calls after stdin ended).
pub(super) struct Completion {
    pub calls: Arc<Calls>,
    pub key: CallKey,
    pub tag: u64,
    pub gate: AnswerGate,
    pub stream: OutboundStream,
    pub done_sender: Sender<()>,
}

impl Completion {
    /// Send `response` unless the call was cancelled.
    pub(super) fn finish(self, response: Value) {
        self.finish_with(move |stream| {
            let _ = stream.send(super::Outbound::Message(response));
        });
    }

    /// [`Completion::finish`] with a response serialised where it is written
    /// ([`OutboundStream::send_serialized`]).
    pub(super) fn finish_serialized(self, response: &impl serde::Serialize) {
        self.finish_with(|stream| {
            let _ = stream.send_serialized(response);
        });
    }

    /// [`Completion::finish`] with a response already serialised (one JSON value, no line end).
    pub(super) fn finish_line(self, line: Vec<u8>) {
        self.finish_with(|stream| {
            let _ = stream.send_line(line);
        });
    }

    fn finish_with(self, send: impl FnOnce(&OutboundStream)) {
        let answered = self.gate.answer();
        let call = self.calls.remove(&self.key, self.tag);
        if answered {
            send(&self.stream);
        }
        if log::log_enabled!(log::Level::Debug) {
            if let Some(call) = call {
                match answered {
                    true => log::debug!(
                        "{} answered in {} ms",
                        call.what,
                        call.started.elapsed().as_millis()
                    ),
                    false => log::debug!("dropped the answer to cancelled {}", call.what),
                }
            }
        }
        let _ = self.done_sender.send(());
    }
}

/// One unit of work for the pool.
pub(super) type Job = Box<dyn FnOnce() + Send>;

/// The tool-call threads (`"lspc-mcp-worker-N"`), at most `size`, started on demand: a thread
/// is started for a job only when none is idle, so a client that calls one tool at a time has one
/// worker, and an idle `lspc mcp` (or one attached to a session) holds none. Any thread may
/// submit (the hub, the stdio reader, a continuation); the locks guard the job channel's sender
/// and the thread handles, never a call's state.
#[derive(Clone)]
pub(super) struct WorkerPool(Arc<PoolShared>);

struct PoolShared {
    sender: Mutex<Option<Sender<Job>>>,
    receiver: Receiver<Job>,
    size: usize,
    /// Threads waiting for a job and not claimed by a submitted one. Once the pool is full it
    /// can over-count (a job queued behind busy threads is not claimed), which only matters
    /// while the pool could still grow.
    idle: Arc<AtomicUsize>,
    threads: Mutex<Vec<thread::JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl WorkerPool {
    pub(super) fn new(size: usize) -> WorkerPool {
        let (sender, receiver) = unbounded::<Job>();
        WorkerPool(Arc::new(PoolShared {
            sender: Mutex::new(Some(sender)),
            receiver,
            size: size.max(1),
            idle: Default::default(),
            threads: Mutex::new(Vec::new()),
        }))
    }

    /// Run `job` on a worker; dropped once the pool was joined.
    pub(super) fn submit(&self, job: Job) {
        let pool = &self.0;
        {
            let sender = lock(&pool.sender);
            let Some(sender) = sender.as_ref() else {
                return;
            };
            let _ = sender.send(job);
        }
        let claimed = pool
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |idle| {
                idle.checked_sub(1)
            })
            .is_ok();
        if claimed {
            return;
        }
        let mut threads = lock(&pool.threads);
        if threads.len() >= pool.size {
            return;
        }
        let receiver = pool.receiver.clone();
        let idle = Arc::clone(&pool.idle);
        let spawned = thread::Builder::new()
            .name(format!("lspc-mcp-worker-{}", threads.len()))
            .spawn(move || {
                // Parked at once between jobs, without crossbeam's yields (issue 15).
                while let Ok(job) = engine::recv_parked(&receiver) {
                    job();
                    idle.fetch_add(1, Ordering::SeqCst);
                }
            });
        match spawned {
            Ok(thread) => threads.push(thread),
            // The job waits for a running worker, if any.
            Err(error) => log::warn!("cannot start an MCP worker thread: {error}"),
        }
    }

    /// Stop taking jobs, let the workers finish what is queued, and join them.
    pub(super) fn join(&self) {
        lock(&self.0.sender).take();
        let threads = std::mem::take(&mut *lock(&self.0.threads));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tag: u64) -> InFlight {
        let (sender, _) = unbounded();
        InFlight::new(tag, None, &OutboundStream::Channel(sender), "x".to_owned())
    }

    #[test]
    fn ids_are_refused_while_running_and_reusable_after() {
        let calls = Calls::default();
        let key = (ClientId("stdio".to_owned()), id_key(&serde_json::json!(7)));
        assert!(calls.register(key.clone(), call(1)).is_ok());
        assert_eq!(
            calls.register(key.clone(), call(2)).err(),
            Some(DuplicateId)
        );
        // Another id, or the same number as a string, is another call.
        let other = (
            ClientId("stdio".to_owned()),
            id_key(&serde_json::json!("7")),
        );
        assert!(calls.register(other, call(3)).is_ok());
        // A stale removal (an earlier call's tag) leaves the running call alone.
        assert!(calls.remove(&key, 9).is_none());
        assert!(calls.remove(&key, 1).is_some());
        assert!(calls.register(key, call(4)).is_ok());
    }

    #[test]
    fn the_gate_lets_one_of_answer_and_cancel_win() {
        let gate = AnswerGate::default();
        let mut notified = 0;
        gate.notify(|| notified += 1);
        assert!(gate.answer());
        assert!(!gate.cancel());
        gate.notify(|| notified += 1);
        assert_eq!(notified, 1, "no progress after the answer");
        let gate = AnswerGate::default();
        assert!(gate.cancel());
        assert!(!gate.answer());
    }

    #[test]
    fn id_keys_tell_numbers_from_strings() {
        let check = |id: Value, expected: &str| assert_eq!(id_key(&id), expected);
        check(serde_json::json!(1), "1");
        check(serde_json::json!(-3), "-3");
        check(serde_json::json!("1"), "\"1\"");
        check(serde_json::json!("a\"b"), "\"a\\\"b\"");
    }
}
