//! What a session client's proxy ([`super::client`]) keeps so that its frontend goes on after
//! the session ends: the standing subscriptions the frontend made ([`Subscriptions`]: event
//! subscribers and passive-diagnostics consumers), made again wherever its ops go next, and
//! [`InProcess`], the engine loop in this process that serves the ops once no session can be
//! reached again (`lspc session stop` under an `lspc mcp` in `--session auto`, which starts none;
//! a session that cannot be restarted), with the watch thread an in-process frontend runs.
//!
//! Without these, a long-lived frontend attached to a session that ended failed every later call
//! ("the lspc session … ended unexpectedly", for good), and an `lspc mcp` whose event
//! subscription had closed spun a core in its hub.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::watch::{Freshness, WatchThread};
use crate::engine::{EngineHandle, EngineOptions, FrontendEvent, Op};

/// The standing subscriptions a frontend made through the proxy, in the order made: each
/// [`Op::SubscribeEvents`] sender (kept, so the frontend's receiver stays open across the
/// session's end) and each consumer [`Op::OpenPassive`] opened and not closed since.
#[derive(Default)]
pub struct Subscriptions {
    events: Vec<Sender<FrontendEvent>>,
    consumers: Vec<String>,
}

impl Subscriptions {
    /// Records what `op` subscribes to or ends (any other op is ignored).
    pub fn note(&mut self, op: &Op) {
        match op {
            Op::SubscribeEvents { sender } => self.events.push(sender.clone()),
            Op::OpenPassive { consumer } if !self.consumers.contains(consumer) => {
                self.consumers.push(consumer.clone())
            }
            Op::ClosePassive { consumer } => self.consumers.retain(|open| open != consumer),
            _ => {}
        }
    }

    /// The ops that make every standing subscription again on a new engine or session: the
    /// passive consumers first, then the event subscriptions.
    pub fn renewed(&self) -> Vec<Op> {
        let consumers = self.consumers.iter().map(|consumer| Op::OpenPassive {
            consumer: consumer.clone(),
        });
        let events = self.events.iter().map(|sender| Op::SubscribeEvents {
            sender: sender.clone(),
        });
        consumers.chain(events).collect()
    }
}

/// An engine loop in this process serving a proxy's ops after its session ended, with a watch
/// thread over the workspace (as `lspc mcp` and `lspc batch` run one in process) so that files
/// changed behind lspc reach the servers; each op first waits for a scan when a folder event is
/// queued ([`Freshness`]), as those frontends do before a request.
pub struct InProcess {
    // Declared before `engine`: the watch stops before the engine shuts its servers down.
    _watch: Option<WatchThread>,
    freshness: Option<Arc<Freshness>>,
    active: Arc<AtomicBool>,
    engine: EngineHandle,
}

impl InProcess {
    /// Starts the loop for `options` (run in this process: the proxy answers signals, so the
    /// loop installs no handler of its own) and makes `subscriptions` on it.
    pub fn start(options: &EngineOptions, subscriptions: &Subscriptions) -> InProcess {
        let mut options = options.clone();
        options.session = super::SessionMode::Never;
        options.handle_signals = false;
        options.interrupted_sender = None;
        let root = options.config.root.clone();
        let root: PathBuf = root.canonicalize().unwrap_or(root);
        let workspace = super::watch::WatchedWorkspace::of(root, &options.config);
        let engine = EngineHandle::start(options);
        let active = Arc::new(AtomicBool::new(true));
        let watch = WatchThread::spawn(
            "lspc-fallback-watch",
            workspace,
            engine.op_sender(),
            Arc::clone(&active),
        );
        let freshness = watch.as_ref().map(WatchThread::freshness);
        let in_process = InProcess {
            _watch: watch,
            freshness,
            active,
            engine,
        };
        for op in subscriptions.renewed() {
            let _ = in_process.engine.op_sender().send(op);
        }
        in_process
    }

    /// Hands `op` to the loop, after the scan a queued folder event asks for (not for
    /// `Cancel`, which must not wait).
    pub fn serve(&self, op: Op) {
        self.active.store(true, Ordering::Relaxed);
        if !matches!(op, Op::Cancel { .. }) {
            if let Some(freshness) = self.freshness.as_ref().filter(|fresh| fresh.stale()) {
                freshness.catch_up();
            }
        }
        // A loop that is gone drops the op, whose reply channel then reads "engine gone".
        let _ = self.engine.op_sender().send(op);
    }
}
