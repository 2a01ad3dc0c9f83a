//! A mailbox one thread waits on for what other threads hand it ([`mailbox`]): the hand-off from
//! the thread that ends a request (a server's reader, the loop) back to the frontend thread that
//! started it (issue 15).
//!
//! Why not a crossbeam channel here: crossbeam's `send` unparks the waiting receiver while it
//! still holds the channel's waker lock, and the receiver, woken on the other core, at once
//! takes that same lock to unregister itself. strace of `lspc batch` showed that on every
//! answer: the woken thread blocked again on the contended lock (`FUTEX_WAIT`, value 2) and
//! needed a second wake. Here the sender releases the lock before it calls `unpark`, so a
//! hand-off is one wake.
//!
//! Invariants: only the thread that created the mailbox receives (it is the one unparked);
//! items arrive in the order they were sent; a receiver whose senders are all gone is not told
//! (callers guarantee an item comes, as [`crate::operation::execute::Done`] does).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread::Thread;

struct Inner<T> {
    items: Mutex<VecDeque<T>>,
    receiver_thread: Thread,
}

impl<T> Inner<T> {
    fn items(&self) -> std::sync::MutexGuard<'_, VecDeque<T>> {
        // A sender that panicked mid-push leaves the queue as it was: still usable.
        self.items
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The receiving end, owned by the thread that called [`mailbox`] (not `Send`).
pub struct Mailbox<T> {
    inner: Arc<Inner<T>>,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// A sending end; any thread, any number of clones.
pub struct MailboxSender<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for MailboxSender<T> {
    fn clone(&self) -> Self {
        MailboxSender {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// A mailbox for the current thread and its first sender.
pub fn mailbox<T>() -> (MailboxSender<T>, Mailbox<T>) {
    let inner = Arc::new(Inner {
        items: Mutex::new(VecDeque::new()),
        receiver_thread: std::thread::current(),
    });
    (
        MailboxSender {
            inner: Arc::clone(&inner),
        },
        Mailbox {
            inner,
            _not_send: std::marker::PhantomData,
        },
    )
}

impl<T> MailboxSender<T> {
    /// Queue `item` and wake the receiver (after the lock is released).
    pub fn send(&self, item: T) {
        self.inner.items().push_back(item);
        self.inner.receiver_thread.unpark();
    }
}

impl<T> Mailbox<T> {
    /// The oldest item, parking until one comes (no spinning; spurious wake-ups are re-checked).
    pub fn recv(&self) -> T {
        loop {
            if let Some(item) = self.inner.items().pop_front() {
                return item;
            }
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_from_other_threads_arrive_in_order() {
        let (sender, mailbox) = mailbox();
        let worker = {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for n in 0..1000 {
                    sender.send(n);
                }
            })
        };
        let received: Vec<i32> = (0..1000).map(|_| mailbox.recv()).collect();
        worker.join().unwrap();
        assert_eq!(received, (0..1000).collect::<Vec<_>>());
        sender.send(7);
        assert_eq!(mailbox.recv(), 7);
    }
}
