//! The shutdown sequence of the event loop (LSP 3.17 §`shutdown`/§`exit`), and the graceful stop
//! of a set of servers it shares with a configuration reload (`stop_servers`).
//!
//! A child module of `event_loop` so it can reach the loop's state. Invariants:
//! - It runs at most once (`shutting_down` guards it); every op still waiting is answered first.
//! - Every wait is bounded: the `shutdown` replies by the longest server shutdown timeout, then
//!   each process's stop (stdin closed, SIGTERM, SIGKILL of the process group).
//! - Server requests arriving meanwhile are answered with `null`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::Value;

use super::super::EngineError;
use super::{Purpose, ServerState, State};
use crate::process::{ServerEvent, ServerId};
use crate::transport::IncomingMessage;
use crate::transport::Outgoing;

impl State {
    /// LSP 3.17 §`shutdown`/§`exit`: `shutdown` to every live server, wait for the replies (bounded
    /// by each server's shutdown timeout), `exit`, then close stdin, SIGTERM and SIGKILL the
    /// process group, each bounded. Ops still waiting are answered with [`EngineError::Gone`].
    pub(super) fn shutdown_all(&mut self, event_receiver: &Receiver<ServerEvent>) {
        if self.shutting_down {
            return;
        }
        self.shutting_down = true;
        self.documents.stop_watching();
        self.drain_delivered();
        for (_, purpose) in self.pending.drain() {
            if let Purpose::Frontend { reply, .. } = purpose {
                reply.send(Err(EngineError::Gone));
            }
        }
        for retry in self.retries.drain(..) {
            if let Purpose::Frontend { reply, .. } = retry.purpose {
                reply.send(Err(EngineError::Gone));
            }
        }
        for sync in self.syncs.drain(..) {
            sync.reply.fail(EngineError::Gone);
        }
        for job in self.jobs.drain(..) {
            let _ = job.reply.send(job.results);
        }
        let ids: Vec<ServerId> = (0..self.servers.len())
            .map(|index| ServerId(index as u32))
            .collect();
        let waiting = self.send_shutdowns(&ids);
        // While the servers answer `shutdown`: this process's duplicate-registry entries go now
        // (file I/O in the runtime folder, 0.1–0.3 ms there on this machine) rather than after
        // the last process is reaped. Only servers that were ever started registered one.
        if self.options.warn_duplicates {
            for server in self.servers.iter().filter(|server| server.generation > 0) {
                super::super::duplicates::unregister(&server.config.name, &server.workspace_folder);
            }
        }
        self.await_shutdowns(waiting, event_receiver);
        self.exit_and_terminate(&ids, "as lspc shuts down");
    }

    /// The graceful stop of the servers `ids` (LSP 3.17 §`shutdown`/§`exit`), shared by the
    /// shutdown of the loop and a configuration reload: `shutdown` to each running one, wait for
    /// the answers (bounded by each server's shutdown timeout) while handling every other
    /// server's events as usual and answering the stopping servers' requests with `null`, then
    /// `exit` and [`terminate`](crate::process::ServerProcess::terminate) (close stdin, SIGTERM,
    /// SIGKILL of the process group, each bounded). `why` is logged ("for a configuration
    /// reload").
    pub(super) fn stop_servers(
        &mut self,
        ids: &[ServerId],
        event_receiver: &Receiver<ServerEvent>,
        why: &str,
    ) {
        let waiting = self.send_shutdowns(ids);
        self.await_shutdowns(waiting, event_receiver);
        self.exit_and_terminate(ids, why);
    }

    /// `shutdown` to each of `ids` that has an initialized process; what to wait for.
    fn send_shutdowns(&mut self, ids: &[ServerId]) -> ShutdownWait {
        let mut waiting: BTreeSet<ServerId> = BTreeSet::new();
        let mut deadline = Instant::now();
        for &server_id in ids {
            let server = &self.servers[server_id.0 as usize];
            if !server.has_initialized_process() {
                continue;
            }
            let timeout = server
                .config
                .shutdown_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(self.options.shutdown_timeout);
            deadline = deadline.max(Instant::now() + timeout);
            self.send_request(server_id, Purpose::Shutdown);
            waiting.insert(server_id);
        }
        // `extend`, not `collect`: see `crate::sorting`.
        let mut stopping = BTreeSet::new();
        stopping.extend(ids.iter().copied());
        ShutdownWait {
            stopping,
            waiting,
            deadline,
        }
    }

    /// Waits for the `shutdown` answers (or the servers' ends) until the deadline, handling
    /// every other server's events as usual and answering the stopping servers' requests with
    /// `null`.
    fn await_shutdowns(&mut self, wait: ShutdownWait, event_receiver: &Receiver<ServerEvent>) {
        let ShutdownWait {
            stopping,
            mut waiting,
            deadline,
        } = wait;
        while !waiting.is_empty() {
            let timeout = deadline.saturating_duration_since(Instant::now());
            let Ok(event) = event_receiver.recv_timeout(timeout) else {
                break;
            };
            let server_id = match &event {
                ServerEvent::Message { server_id, .. }
                | ServerEvent::Delivered { server_id, .. }
                | ServerEvent::Closed { server_id, .. } => *server_id,
            };
            if !stopping.contains(&server_id) {
                self.handle_server_event(event);
                continue;
            }
            match event {
                ServerEvent::Message {
                    message: IncomingMessage::Response { id: Some(id), .. },
                    ..
                } => {
                    let id = serde_json::to_value(&id).ok().and_then(|id| id.as_i64());
                    let key = id.map(|id| (server_id, id as i32));
                    if key.is_some_and(|key| {
                        matches!(self.pending.get(&key), Some(Purpose::Shutdown))
                    }) {
                        waiting.remove(&server_id);
                    }
                }
                ServerEvent::Message {
                    message: IncomingMessage::Request { id, .. },
                    ..
                } => {
                    // After shutdown, answer with null (STYLE.md habit 6).
                    if let Some(process) = self.servers[server_id.0 as usize].process() {
                        let _ = process.send(Outgoing::Response {
                            id,
                            result: Ok(Value::Null),
                        });
                    }
                }
                ServerEvent::Closed { .. } => {
                    waiting.remove(&server_id);
                }
                _ => {}
            }
        }
    }

    /// `exit` to each of `ids` with a process, then
    /// [`terminate`](crate::process::ServerProcess::terminate) each and disarm its watchdog.
    /// Every `exit` goes out before the first wait, so the servers' own exits (2–3 ms for ruff,
    /// more for node servers) overlap instead of adding up.
    fn exit_and_terminate(&mut self, ids: &[ServerId], why: &str) {
        for &server_id in ids {
            let server = &self.servers[server_id.0 as usize];
            if server.process().is_some() {
                server.notify("exit", Value::Null);
            }
        }
        for &server_id in ids {
            let server = &mut self.servers[server_id.0 as usize];
            if let ServerState::Starting { process, .. } | ServerState::Running { process } =
                &mut server.state
            {
                let exit = process.terminate(Duration::from_millis(1000));
                log::info!("{}: stopped {why} ({exit})", server.config.name);
            }
            if let Some(mut watchdog) = server.watchdog.take() {
                watchdog.disarm();
            }
            server.state = ServerState::NotStarted;
        }
    }
}

/// The servers a stop waits on ([`State::send_shutdowns`]).
struct ShutdownWait {
    /// Every server being stopped: their requests meanwhile are answered with `null`.
    stopping: BTreeSet<ServerId>,
    /// Those whose `shutdown` answer has not come yet.
    waiting: BTreeSet<ServerId>,
    /// The longest of their shutdown timeouts.
    deadline: Instant,
}
