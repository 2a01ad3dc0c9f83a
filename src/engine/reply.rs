//! Where a frontend request's answer goes ([`ReplyTo`]): a channel the caller waits on, or a
//! continuation run by whichever thread ends the request (issue 15).
//!
//! Invariants:
//! - A [`ReplyTo::Continuation`] runs exactly once: the first of the server's reader (a
//!   successful answer), the loop (an error answer, a timeout, a cancellation, a crash) or the
//!   last drop of the continuation (the engine went away: [`EngineError::Gone`]) takes it; every
//!   later answer is dropped.
//! - A [`ReplyTo::Channel`] holds one answer (bounded(1)): the reader's direct answer is a
//!   `try_send`, so a late answer after the loop's timeout error is dropped.

use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use serde_json::value::RawValue;
use serde_json::Value;

use super::EngineError;
use crate::process::DirectReply;

/// A successful answer's `result`: a tree (the loop's route), or the raw JSON text the server's
/// reader cut out of the message (issue 15: the continuation parses it straight into the types
/// it needs, no `Value` tree in between).
#[derive(Debug)]
pub enum AnswerBody {
    Tree(Value),
    Raw(Box<RawValue>),
}

impl AnswerBody {
    /// As a tree (parsing the raw form; the reader checked it is JSON).
    pub fn into_value(self) -> Value {
        match self {
            AnswerBody::Tree(value) => value,
            AnswerBody::Raw(raw) => raw_to_value(&raw),
        }
    }
}

impl std::fmt::Display for AnswerBody {
    /// Its compact JSON text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerBody::Tree(value) => write!(f, "{value}"),
            AnswerBody::Raw(raw) => f.write_str(raw.get()),
        }
    }
}

/// `raw` parsed into a tree; `null` (logged) in the impossible case it is not JSON.
fn raw_to_value(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or_else(|error| {
        log::warn!("an answer's raw result is not json: {error}");
        Value::Null
    })
}

/// What a continuation does with its request's outcome (the `result` or why there is none).
pub type AnswerContinuation = Box<dyn FnOnce(Result<AnswerBody, EngineError>) + Send>;

/// Where a frontend request's answer goes.
#[derive(Clone)]
pub enum ReplyTo {
    /// A channel of capacity 1 the caller waits on.
    Channel(Sender<Result<Value, EngineError>>),
    /// A continuation run by the thread that has the answer (see the module's invariants).
    Continuation(Arc<AnswerOnce>),
}

impl std::fmt::Debug for ReplyTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplyTo::Channel(_) => f.write_str("ReplyTo::Channel"),
            ReplyTo::Continuation(_) => f.write_str("ReplyTo::Continuation"),
        }
    }
}

impl ReplyTo {
    /// A continuation that runs once (see [`AnswerOnce`]).
    pub fn continuation(continuation: AnswerContinuation) -> ReplyTo {
        ReplyTo::Continuation(Arc::new(AnswerOnce(Mutex::new(Some(continuation)))))
    }

    /// Hand `result` over (the loop's route: errors, timeouts, cancellations, crashes, and
    /// answers the reader did not deliver itself). A channel send blocks only while the caller
    /// has not taken an earlier answer; a continuation already taken ignores `result`.
    pub fn send(&self, result: Result<Value, EngineError>) {
        match self {
            ReplyTo::Channel(sender) => {
                let _ = sender.send(result);
            }
            ReplyTo::Continuation(once) => {
                once.call(result.map(AnswerBody::Tree));
            }
        }
    }

    /// What the server's reader runs with a successful answer ([`crate::process::ServerProcess::expect_reply`]).
    pub fn direct_reply(&self) -> DirectReply {
        match self {
            ReplyTo::Channel(sender) => {
                let sender = sender.clone();
                Box::new(move |raw| {
                    let _ = sender.try_send(Ok(raw_to_value(&raw)));
                })
            }
            ReplyTo::Continuation(once) => {
                let once = Arc::clone(once);
                Box::new(move |raw| {
                    once.call(Ok(AnswerBody::Raw(raw)));
                })
            }
        }
    }
}

/// A continuation taken at most once; dropped untaken (the engine went away with the request
/// unanswered), it runs with [`EngineError::Gone`], so it never runs zero times either.
pub struct AnswerOnce(Mutex<Option<AnswerContinuation>>);

impl AnswerOnce {
    /// Run the continuation with `result` unless another thread took it first; `true` when this
    /// call ran it.
    pub fn call(&self, result: Result<AnswerBody, EngineError>) -> bool {
        // The lock is held only to take the closure, never while it runs.
        let taken = match self.0.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        match taken {
            Some(continuation) => {
                continuation(result);
                true
            }
            None => false,
        }
    }
}

impl Drop for AnswerOnce {
    fn drop(&mut self) {
        let taken = match self.0.get_mut() {
            Ok(slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(continuation) = taken {
            continuation(Err(EngineError::Gone));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting() -> (
        ReplyTo,
        Arc<AtomicUsize>,
        crossbeam_channel::Receiver<String>,
    ) {
        let calls = Arc::new(AtomicUsize::new(0));
        let (sender, receiver) = crossbeam_channel::unbounded();
        let counted = Arc::clone(&calls);
        let reply = ReplyTo::continuation(Box::new(move |result| {
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = sender.send(match result {
                Ok(value) => value.to_string(),
                Err(error) => error.to_string(),
            });
        }));
        (reply, calls, receiver)
    }

    #[test]
    fn a_continuation_runs_once_whoever_answers_first() {
        let (reply, calls, receiver) = counting();
        let direct = reply.direct_reply();
        direct(serde_json::value::to_raw_value(&1).unwrap());
        reply.send(Err(EngineError::Gone));
        drop(reply);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(receiver.try_iter().collect::<Vec<_>>(), ["1"]);

        // The loop first (a timeout), then the reader's late answer.
        let (reply, calls, receiver) = counting();
        let direct = reply.direct_reply();
        reply.send(Err(EngineError::Gone));
        direct(serde_json::value::to_raw_value(&2).unwrap());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            receiver.try_iter().collect::<Vec<_>>(),
            [EngineError::Gone.to_string()]
        );
    }

    #[test]
    fn a_continuation_dropped_untaken_runs_with_engine_gone() {
        let (reply, calls, receiver) = counting();
        let direct = reply.direct_reply();
        drop(reply);
        assert_eq!(calls.load(Ordering::SeqCst), 0, "a clone still holds it");
        drop(direct);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            receiver.try_iter().collect::<Vec<_>>(),
            [EngineError::Gone.to_string()]
        );
    }
}

thread_local! {
    static SERVES_OPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one that serves every frontend's ops (the event loop, a session
/// client's proxy), for [`serves_ops`].
pub fn mark_serving_ops() {
    SERVES_OPS.with(|serves| serves.set(true));
}

/// Whether the calling thread serves every frontend's ops ([`mark_serving_ops`]): a continuation
/// running there must not block (a write to a full pipe would stall every server), so it hands
/// blocking work to its frontend's own thread.
pub fn serves_ops() -> bool {
    SERVES_OPS.with(|serves| serves.get())
}
