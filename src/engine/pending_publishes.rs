//! The `publishDiagnostics` notifications received in one event-loop turn, coalesced per
//! (server, document) and kept in arrival order (issue 10).
//!
//! A document is identified by the path its URI decodes to, not by the URI string: a server that
//! publishes one file as `%C3%A9` and later as `%c3%a9` (or `file:///a/./b.py`) names one
//! document, so the later publish replaces the earlier one and the result does not depend on
//! hash order. URIs that do not decode to a path are keyed by their text. The canonical path
//! (symlinks resolved) is computed once per document per turn by the consumer, not here, so a
//! flood of publishes costs no file-system call per message.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;

use crate::process::ServerId;
use crate::uri;

/// Publishes waiting for the end of the turn.
#[derive(Debug, Default)]
pub struct PendingPublishes {
    /// In arrival order of each document's latest publish; replaced entries become `None`.
    entries: Vec<Option<(ServerId, Value, Instant)>>,
    /// (server, document key) → index in `entries`.
    latest: HashMap<(ServerId, String), usize>,
}

impl PendingPublishes {
    /// Queues `params` (which has a string `uri`), replacing an earlier publish of the same
    /// server for the same document; the document then takes its place at the end.
    pub fn push(&mut self, server_id: ServerId, uri: &str, params: Value, at: Instant) {
        let key = (server_id, document_key(uri));
        if let Some(earlier) = self.latest.insert(key, self.entries.len()) {
            self.entries[earlier] = None;
        }
        self.entries.push(Some((server_id, params, at)));
    }

    /// Every queued publish, oldest first, leaving the queue empty.
    pub fn take(&mut self) -> Vec<(ServerId, Value, Instant)> {
        self.latest.clear();
        std::mem::take(&mut self.entries)
            .into_iter()
            .flatten()
            .collect()
    }

    /// Forgets `server_id`'s publishes (it is being stopped or reloaded).
    pub fn remove_server(&mut self, server_id: ServerId) {
        self.latest.retain(|(id, _), _| *id != server_id);
        for entry in &mut self.entries {
            if entry.as_ref().is_some_and(|(id, _, _)| *id == server_id) {
                *entry = None;
            }
        }
    }
}

/// The decoded path for a `file:` URI, else the URI itself.
fn document_key(uri: &str) -> String {
    match uri::uri_to_path(uri) {
        Ok(path) => format!("path:{}", path.display()),
        Err(_) => format!("uri:{uri}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spellings_of_one_document_coalesce_in_arrival_order() {
        let now = Instant::now();
        let mut pending = PendingPublishes::default();
        let (a, b) = (ServerId(0), ServerId(1));
        pending.push(a, "file:///w/caf%C3%A9.py", json!(1), now);
        pending.push(a, "file:///w/other.py", json!(2), now);
        pending.push(b, "file:///w/caf%C3%A9.py", json!(3), now);
        pending.push(a, "file:///w/caf%c3%a9.py", json!(4), now);
        let order: Vec<(ServerId, Value)> = pending
            .take()
            .into_iter()
            .map(|(id, value, _)| (id, value))
            .collect();
        assert_eq!(order, vec![(a, json!(2)), (b, json!(3)), (a, json!(4))]);
        assert!(pending.take().is_empty());
        pending.push(a, "file:///w/x.py", json!(5), now);
        pending.push(b, "file:///w/x.py", json!(6), now);
        pending.remove_server(a);
        assert_eq!(pending.take().len(), 1);
    }
}
