//! The files of tsserver's projects that the workspace listing leaves out, stamped by the watch
//! (issue 15): the declarations a project loaded from `node_modules` (`prisma generate`
//! rewrites `node_modules/.prisma/client`, `patch-package` a package's `.d.ts`) and the
//! modules of a git-ignored folder that `tsconfig.json` includes (a generator's output). The
//! engine sends the list ([`crate::engine::Op::SubscribeProjectFiles`]); each scan stamps them
//! as it stamps the listed files and reports what changed.
//!
//! Invariants:
//! - A file first heard of is stamped when heard of, and reported [`WatchedChange::Changed`]
//!   by the next scan when its status changed after tsserver had read it (less
//!   [`RACY_SLACK`]): tsserver read it before, so its text may be older than the file's (a
//!   generator that ran while the list was on its way). Otherwise nothing is reported for it
//!   until it changes after that.
//! - A file the listing holds is left to the listing (never reported twice).
//! - A file that was missing and is there again is [`WatchedChange::Created`]; one that was
//!   there and is gone is [`WatchedChange::Deleted`]; otherwise as the listing's stamps
//!   (`Replaced` for a new inode or birth time, `Changed` for any other difference).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::{ProjectFileList, WatchedChange};
use crate::file_stamp::FileStamp as Stamp;

/// How much earlier than [`ProjectFileList::read_before`] a file's status change still counts
/// as after it: file times
/// come from the kernel's coarse clock (a tick, up to 4 ms, behind), and a needless report
/// costs one open and close of the file.
pub const RACY_SLACK: Duration = Duration::from_millis(50);

/// The project files outside the listing and their last stamps (`None`: missing then).
#[derive(Debug, Default)]
pub struct ProjectFiles {
    stamps: HashMap<PathBuf, Option<Stamp>>,
    /// Files first heard of whose status changed after tsserver had read them.
    newer_than_asked: HashSet<PathBuf>,
}

impl ProjectFiles {
    /// Watch `list`'s files (the engine's whole list) from now on, leaving out those `listed`:
    /// a file already watched keeps its stamp, a new one is stamped now.
    pub fn set(&mut self, list: ProjectFileList, listed: &HashMap<PathBuf, Stamp>) {
        let mut previous = std::mem::take(&mut self.stamps);
        let read_before = list
            .read_before
            .checked_sub(RACY_SLACK)
            .unwrap_or(list.read_before);
        let mut newer = Vec::new();
        self.stamps = list
            .files
            .into_iter()
            .filter(|file| !listed.contains_key(file))
            .map(|file| {
                let stamp = previous.remove(&file).unwrap_or_else(|| {
                    let stamp = Stamp::of_path(&file);
                    let changed = stamp.as_ref().and_then(Stamp::changed_at);
                    if changed.is_some_and(|changed| changed >= read_before) {
                        newer.push(file.clone());
                    }
                    stamp
                });
                (file, stamp)
            })
            .collect();
        self.newer_than_asked.extend(newer);
    }

    /// Stamps every file again and returns what changed since the last look; the files
    /// `listed` now are dropped (the listing reports them from now on).
    pub fn scan(&mut self, listed: &HashMap<PathBuf, Stamp>) -> Vec<(PathBuf, WatchedChange)> {
        self.stamps.retain(|file, _| !listed.contains_key(file));
        let mut newer = std::mem::take(&mut self.newer_than_asked);
        let mut changes = Vec::new();
        for (file, old) in self.stamps.iter_mut() {
            let new = Stamp::of_path(file);
            let newer_than_asked = newer.remove(file);
            let change = match (&old, &new) {
                (Some(_), Some(_)) if newer_than_asked => Some(WatchedChange::Changed),
                (None, None) => None,
                (None, Some(_)) => Some(WatchedChange::Created),
                (Some(_), None) => Some(WatchedChange::Deleted),
                (Some(old), Some(new)) if old.other_file(new) => Some(WatchedChange::Replaced),
                (Some(old), Some(new)) => (old != new).then_some(WatchedChange::Changed),
            };
            if let Some(change) = change {
                changes.push((file.clone(), change));
            }
            *old = new;
        }
        changes
    }

    /// What the watch listens to for these files, from one look at the disk per missing file:
    /// the folders whose events tell of a change (each file's folder, or for a missing one its
    /// nearest folder that exists: a regenerated folder is made again there), and the names
    /// whose creation there may bring a missing file back (the entry right below that folder:
    /// `node_modules/.prisma` made again for `node_modules/.prisma/client/index.d.ts`), which
    /// count even when hidden. Both sorted, without duplicates.
    pub fn watch_targets(&self) -> (Vec<PathBuf>, Vec<std::ffi::OsString>) {
        let mut folders = Vec::with_capacity(self.stamps.len());
        let mut awaited = Vec::new();
        for (file, stamp) in &self.stamps {
            if stamp.is_some() {
                folders.extend(file.parent().map(Path::to_path_buf));
                continue;
            }
            let Some(folder) = file.ancestors().skip(1).find(|folder| folder.is_dir()) else {
                continue;
            };
            let below = file
                .strip_prefix(folder)
                .ok()
                .and_then(|rest| rest.components().next());
            awaited.extend(below.map(|name| name.as_os_str().to_owned()));
            folders.push(folder.to_path_buf());
        }
        folders.sort_unstable();
        folders.dedup();
        awaited.sort_unstable();
        awaited.dedup();
        (folders, awaited)
    }

    /// Whether a file first heard of was written after tsserver read it (the next scan
    /// reports it).
    pub fn has_newer(&self) -> bool {
        !self.newer_than_asked.is_empty()
    }

    /// How many files are watched.
    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    /// Whether no file is watched.
    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn project_files_report_writes_removals_and_returns_and_leave_listed_files_alone() {
        let dir = std::env::temp_dir().join(format!("lspc-project-files-{}", std::process::id()));
        let client = dir.join("node_modules/.prisma/client");
        std::fs::create_dir_all(&client).unwrap();
        let declarations = client.join("index.d.ts");
        let listed_file = dir.join("a.ts");
        let gone = dir.join("gen/api.ts");
        std::fs::write(&declarations, "export type User = {id: number};\n").unwrap();
        std::fs::write(&listed_file, "").unwrap();
        let mut listed = HashMap::new();
        listed.insert(
            listed_file.clone(),
            Stamp::of(&std::fs::metadata(&listed_file).unwrap()),
        );
        let mut files = ProjectFiles::default();
        let list = |files: &[&PathBuf], read_before| ProjectFileList {
            files: files.iter().map(|file| file.to_path_buf()).collect(),
            read_before,
        };
        let read_before = SystemTime::now() + Duration::from_secs(60);
        files.set(
            list(&[&declarations, &listed_file, &gone], read_before),
            &listed,
        );
        assert_eq!(files.len(), 2, "the listed file is the listing's");
        assert_eq!(files.scan(&listed), []);
        assert_eq!(files.watch_targets().0, [dir.clone(), client.clone()]);

        std::fs::write(&declarations, "export type User = {id: string};\n").unwrap();
        assert_eq!(
            files.scan(&listed),
            [(declarations.clone(), WatchedChange::Changed)]
        );
        std::fs::remove_dir_all(&client).unwrap();
        assert_eq!(
            files.scan(&listed),
            [(declarations.clone(), WatchedChange::Deleted)]
        );
        let (folders, awaited) = files.watch_targets();
        assert_eq!(folders, [dir.clone(), dir.join("node_modules/.prisma")]);
        assert_eq!(awaited, ["client", "gen"]);
        std::fs::create_dir_all(&client).unwrap();
        std::fs::write(&declarations, "export type User = {id: number};\n").unwrap();
        std::fs::create_dir_all(dir.join("gen")).unwrap();
        std::fs::write(&gone, "").unwrap();
        let mut changes = files.scan(&listed);
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            changes,
            [
                (gone.clone(), WatchedChange::Created),
                (declarations.clone(), WatchedChange::Created),
            ]
        );
        // A list heard again keeps the stamps: nothing to report.
        files.set(list(&[&declarations, &gone], SystemTime::now()), &listed);
        assert_eq!(files.scan(&listed), []);
        // Listed now (no longer ignored): the listing's from now on.
        listed.insert(gone.clone(), Stamp::of(&std::fs::metadata(&gone).unwrap()));
        std::fs::write(&gone, "export {};\n").unwrap();
        assert_eq!(files.scan(&listed), []);
        assert_eq!(files.len(), 1);
        // Written after tsserver read it, before the watch heard of it: changed.
        let late = dir.join("late.d.ts");
        std::fs::write(&late, "").unwrap();
        let read_before = SystemTime::now() - Duration::from_millis(500);
        files.set(list(&[&declarations, &late], read_before), &listed);
        assert_eq!(
            files.scan(&listed),
            [(late.clone(), WatchedChange::Changed)]
        );
        assert_eq!(files.scan(&listed), []);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
