//! When a running server may have read its configuration files, so that a configuration file
//! written again with the bytes it had is skipped only where no server could have read other
//! bytes in between (issue 15: an unedited save of `pyproject.toml` restarted pyright, 0.8-2.4 s
//! on psf/requests; a build writing `compile_commands.json` again restarted clangd).
//!
//! The workspace scan (`session/watch.rs`) reports such a file as rewritten, with `since`: the
//! start of the previous scan, whose content it matches. A writer may have put other bytes there
//! in between and written the old ones back (helper-69's race: `strict` while pyright restarted
//! for it, `basic` a moment later, `strict` again), and a server that read the file meanwhile
//! holds the middle bytes. So the rewrite counts as a change ([`first_reader`]) unless every
//! running instance that would hear of the file may not have read it since `since`:
//! - it gave its first diagnostics (it had read its configuration) before `since`;
//! - it reads the file only at known moments ([`ConfigurationReads`]), and none came since: no
//!   `workspace/didChangeWatchedFiles` or `workspace/didChangeConfiguration` sent, and for
//!   [`ConfigurationReads::OnDocumentSync`] no document sent and no `$/progress` work.
//!
//! By induction over scans, an instance whose last possible read came before the previous
//! scan's start read the bytes that scan saw: any change after its read raised a stamp change at
//! some scan, and was either a change of content (the instance was restarted or told, a read
//! after that scan) or a rewrite that counted for it (the same).

use std::cell::Cell;
use std::time::Instant;

use crate::config::ConfigurationReads;

/// The notifications after which any server may read its configuration files again.
const TOLD: [&str; 2] = [
    "workspace/didChangeWatchedFiles",
    "workspace/didChangeConfiguration",
];

/// The notifications that send a document.
const DOCUMENT_SYNC: [&str; 4] = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
];

/// One server process's moments that may have made it read its configuration files. Reset
/// when a process starts ([`ReadMoments::default`]).
#[derive(Debug, Default)]
pub(super) struct ReadMoments {
    /// When the process first gave diagnostics (a publish, or a pull answer outside `$/progress`
    /// work): it had read its configuration by then.
    ready_at: Option<Instant>,
    /// The last [`TOLD`] notification sent (a `Cell`: sending takes `&Server`).
    told_at: Cell<Option<Instant>>,
    /// The last [`DOCUMENT_SYNC`] notification sent.
    document_sent_at: Cell<Option<Instant>>,
}

impl ReadMoments {
    /// Note that notification `method` is being sent now.
    pub(super) fn on_notification(&self, method: &str) {
        if DOCUMENT_SYNC.contains(&method) {
            self.document_sent_at.set(Some(Instant::now()));
        } else if TOLD.contains(&method) {
            self.told_at.set(Some(Instant::now()));
        }
    }

    /// Note that the process gave diagnostics now (only the first time counts).
    pub(super) fn on_diagnostics(&mut self) {
        self.ready_at.get_or_insert_with(Instant::now);
    }

    /// Whether a server with these moments, reading the file as `reads` says, may have read it
    /// at or after `since`; `working_since` is whether it reported `$/progress` work (or was
    /// not quiescent) at or after `since`.
    pub(super) fn may_have_read(
        &self,
        reads: ConfigurationReads,
        since: Instant,
        working_since: bool,
    ) -> bool {
        let after = |at: Option<Instant>| at.is_some_and(|at| at >= since);
        let ready_before = self.ready_at.is_some_and(|at| at < since);
        match reads {
            ConfigurationReads::AnyTime => true,
            ConfigurationReads::Never => false,
            ConfigurationReads::WhenTold => !ready_before || after(self.told_at.get()),
            ConfigurationReads::OnDocumentSync => {
                !ready_before
                    || after(self.told_at.get())
                    || after(self.document_sent_at.get())
                    || working_since
            }
        }
    }
}

/// Which instance, if any, makes a configuration file rewritten with the bytes the scan at
/// `since` saw count as a change: `hearing` holds, per running instance that would be
/// restarted for the file or told of it, its name (`T`), its moments, how its program reads
/// the file, and whether it worked since `since`; the first that may have read it since.
pub(super) fn first_reader<'a, T>(
    since: Instant,
    hearing: impl IntoIterator<Item = (T, &'a ReadMoments, ConfigurationReads, bool)>,
) -> Option<T> {
    hearing
        .into_iter()
        .find(|(_, moments, reads, working)| moments.may_have_read(*reads, since, *working))
        .map(|(name, ..)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Each rule's moments: a server ready before `since` and idle since may not have read the
    /// file; one ready after it, told after it, or (on document sync) sent a document or
    /// working after it may have; `AnyTime` always may.
    #[test]
    fn only_servers_idle_since_the_previous_scan_cannot_have_read_the_file() {
        use ConfigurationReads::*;
        let start = Instant::now();
        let since = start + Duration::from_secs(10);
        let before = start + Duration::from_secs(5);
        let after = start + Duration::from_secs(15);
        let moments =
            |ready: Option<Instant>, told: Option<Instant>, sent: Option<Instant>| ReadMoments {
                ready_at: ready,
                told_at: Cell::new(told),
                document_sent_at: Cell::new(sent),
            };
        let idle = moments(Some(before), Some(before), Some(before));
        assert!(!idle.may_have_read(WhenTold, since, false));
        assert!(!idle.may_have_read(OnDocumentSync, since, false));
        assert!(idle.may_have_read(OnDocumentSync, since, true));
        assert!(!idle.may_have_read(WhenTold, since, true));
        assert!(idle.may_have_read(AnyTime, since, false));
        let fresh = moments(None, Some(after), Some(after));
        assert!(!fresh.may_have_read(Never, since, true));
        for not_ready in [moments(None, None, None), moments(Some(after), None, None)] {
            assert!(not_ready.may_have_read(WhenTold, since, false));
            assert!(not_ready.may_have_read(OnDocumentSync, since, false));
        }
        let told = moments(Some(before), Some(after), None);
        assert!(told.may_have_read(WhenTold, since, false));
        let sent = moments(Some(before), None, Some(after));
        assert!(!sent.may_have_read(WhenTold, since, false));
        assert!(sent.may_have_read(OnDocumentSync, since, false));
        // Exactly at `since` counts as after.
        let at = moments(Some(since), None, None);
        assert!(at.may_have_read(WhenTold, since, false));
        // Any one instance that may have read it makes the rewrite a change.
        assert_eq!(first_reader(since, [("a", &idle, WhenTold, false)]), None);
        let both = [
            ("a", &idle, WhenTold, false),
            ("b", &sent, OnDocumentSync, false),
        ];
        assert_eq!(first_reader(since, both), Some("b"));
        assert_eq!(first_reader::<&str>(since, []), None);
    }

    /// Sending records the right moment; the first diagnostics stay the ready moment.
    #[test]
    fn notifications_and_diagnostics_set_their_moments() {
        let mut moments = ReadMoments::default();
        moments.on_notification("textDocument/hover");
        moments.on_notification("$/cancelRequest");
        assert_eq!(
            (moments.told_at.get(), moments.document_sent_at.get()),
            (None, None)
        );
        moments.on_notification("textDocument/didChange");
        assert!(moments.document_sent_at.get().is_some() && moments.told_at.get().is_none());
        moments.on_notification("workspace/didChangeWatchedFiles");
        assert!(moments.told_at.get().is_some());
        moments.on_diagnostics();
        let first = moments.ready_at;
        std::thread::sleep(Duration::from_millis(2));
        moments.on_diagnostics();
        assert_eq!(moments.ready_at, first);
    }
}
