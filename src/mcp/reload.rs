//! Noticing configuration changes cheaply, so `lspc mcp` reloads before the next request
//! (issue 4: "a config file edited, a plugin folder added").
//!
//! A [`ConfigWatch`] remembers a fingerprint of everything the configuration was loaded from: each
//! `--config` file, each `--plugin-dir` folder with its entries and its `.claude-plugin/` entries
//! (one level: manifests and `.lsp.json` files live there), the workspace `.lsp.json` and the user
//! config file. A fingerprint is `(path, exists, modification time, size)` per path, so taking
//! one is a few `stat` calls and reads no file. Invariant: [`ConfigWatch::changed`] is true once
//! per change (the fingerprint is replaced when it differs).
//!
//! Checked before every tool call, so the check is cheap (issue 15): an inotify instance watches
//! each of those paths and the nearest existing folder above it (which sees a file created,
//! removed or renamed), and a check with no event queued is one `ioctl(FIONREAD)`. Only when an
//! event is queued is a new fingerprint taken (the watches are renewed first, so a change made
//! while it is taken queues another event). The rule this keeps: a change made before the
//! client sent its call is seen by that call, because Linux queues the event inside the system
//! call that made the change. Without inotify (it failed to start, or the watch limit is
//! reached) every check takes a fingerprint, as before; file systems whose changes inotify does
//! not see (a network mount edited from another machine) are noticed at the next local event.

use std::path::{Path, PathBuf};

use crate::config::ConfigOptions;
use crate::inotify::Inotify;

/// One path's state: `None` when it does not exist.
/// A watched path's stamp; `None` when it cannot be `stat`ed (absent).
type Stamp = Option<crate::file_stamp::FileStamp>;

/// The fingerprint of the files and folders a configuration came from.
#[derive(Debug)]
pub struct ConfigWatch {
    options: ConfigOptions,
    /// The fingerprint of the configuration last loaded.
    fingerprint: Vec<(PathBuf, Stamp)>,
    /// The fingerprint as of the last check; current while `events` has nothing queued.
    current: Vec<(PathBuf, Stamp)>,
    events: Option<Events>,
}

/// An inotify instance watching what a configuration came from.
#[derive(Debug)]
struct Events {
    inotify: Inotify,
}

/// What changes a watched path or a watched folder's entries.
const WATCH_MASK: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

impl Events {
    /// A non-blocking inotify instance; `None` when the kernel refuses one.
    fn start() -> Option<Events> {
        Inotify::start().map(|inotify| Events { inotify })
    }

    /// Watch each of `paths` that exists and the nearest existing folder above each. `false`
    /// when a watch could not be added for another reason than the path being gone (the
    /// watch limit): the caller then stops trusting events.
    fn watch(&self, paths: &[PathBuf]) -> bool {
        let mut folders: Vec<&Path> = Vec::new();
        let add = |path: &Path| self.inotify.add(path, WATCH_MASK).map(drop);
        for path in paths {
            if path.symlink_metadata().is_ok() && add(path).is_err() {
                return false;
            }
            let folder = path.ancestors().skip(1).find(|folder| folder.is_dir());
            if let Some(folder) = folder {
                if !folders.contains(&folder) {
                    folders.push(folder);
                    if add(folder).is_err() {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Whether an event is queued (one `ioctl`); `true` when that cannot be told.
    fn pending(&self) -> bool {
        self.inotify.pending()
    }

    /// Read every queued event (their contents do not matter: a fingerprint decides).
    fn drain(&self) {
        self.inotify.drain();
    }
}

/// Every path whose change may change the configuration, in a stable order.
fn watched_paths(options: &ConfigOptions) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = options.config_files.clone();
    for dir in &options.plugin_dirs {
        paths.push(dir.clone());
        for folder in [dir.clone(), dir.join(".claude-plugin")] {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .collect();
            crate::sorting::sort(&mut children);
            paths.extend(children);
        }
    }
    paths.push(options.root.join(".lsp.json"));
    if let Some(user) = &options.user_config {
        paths.push(user.clone());
    }
    paths
}

fn fingerprint(options: &ConfigOptions) -> Vec<(PathBuf, Stamp)> {
    watched_paths(options)
        .into_iter()
        .map(|path| {
            let stamp: Stamp = crate::file_stamp::FileStamp::of_path(&path);
            (path, stamp)
        })
        .collect()
}

impl ConfigWatch {
    /// Remember the current state of what `options` loads, and start watching it.
    pub fn new(options: ConfigOptions) -> ConfigWatch {
        let events = Events::start().filter(|events| events.watch(&watched_paths(&options)));
        if events.is_none() {
            log::debug!("no inotify for the configuration's files: each check stats them");
        }
        // Watched first, then fingerprinted: a change in between queues an event.
        let fingerprint = fingerprint(&options);
        ConfigWatch {
            options,
            current: fingerprint.clone(),
            fingerprint,
            events,
        }
    }

    /// Bring `current` up to date; whether it differs from the loaded configuration's.
    fn refresh(&mut self) -> bool {
        match &self.events {
            Some(events) if !events.pending() => {}
            Some(events) => {
                events.drain();
                let paths = watched_paths(&self.options);
                if !events.watch(&paths) {
                    log::debug!(
                        "inotify watch limit reached: each check stats the configuration's files"
                    );
                    self.events = None;
                }
                self.current = paths
                    .into_iter()
                    .map(|path| {
                        let stamp: Stamp = crate::file_stamp::FileStamp::of_path(&path);
                        (path, stamp)
                    })
                    .collect();
            }
            None => self.current = fingerprint(&self.options),
        }
        self.current != self.fingerprint
    }

    /// What the configuration is loaded from (to reload it).
    pub fn options(&self) -> &ConfigOptions {
        &self.options
    }

    /// Whether anything changed since the last [`ConfigWatch::changed`] (or
    /// [`ConfigWatch::new`]), without taking the change: the stdio reader asks, and leaves the
    /// reload to the hub.
    pub fn stale(&mut self) -> bool {
        self.refresh()
    }

    /// Whether anything changed since the last call (or [`ConfigWatch::new`]).
    pub fn changed(&mut self) -> bool {
        if !self.refresh() {
            return false;
        }
        self.fingerprint = self.current.clone();
        true
    }

    /// Whether checks are answered from inotify events (tests).
    #[cfg(test)]
    fn uses_events(&self) -> bool {
        self.events.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_noticed_once() {
        let dir = std::env::temp_dir().join(format!("lspc-mcp-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root")).unwrap();
        let config_file = dir.join("lsp.json");
        std::fs::write(&config_file, "{}").unwrap();
        let mut options = ConfigOptions::new(dir.join("root"));
        options.config_files = vec![config_file.clone()];
        options.plugin_dirs = vec![dir.join("plugins")];
        options.user_config = Some(dir.join("root/.config/lspc/lsp.json"));
        let mut watch = ConfigWatch::new(options);
        assert!(watch.uses_events(), "inotify is available here");
        let mut check = |change: &dyn Fn(), expected: bool| {
            change();
            assert_eq!(watch.stale(), expected, "stale() sees the change");
            assert_eq!(watch.stale(), expected, "stale() leaves it to changed()");
            assert_eq!(watch.changed(), expected);
            assert!(!watch.changed(), "a change is reported once");
            assert!(!watch.stale());
        };
        check(&|| {}, false);
        // Same mtime granularity is not relied on: the size differs.
        check(
            &|| std::fs::write(&config_file, "{\"a\": {}}").unwrap(),
            true,
        );
        check(
            &|| std::fs::create_dir_all(dir.join("plugins")).unwrap(),
            true,
        );
        check(
            &|| std::fs::write(dir.join("plugins/.lsp.json"), "{}").unwrap(),
            true,
        );
        check(
            &|| std::fs::write(dir.join("root/.lsp.json"), "{}").unwrap(),
            true,
        );
        check(&|| std::fs::remove_file(&config_file).unwrap(), true);
        // A file in a folder that did not exist when the watch began (the user config's
        // folder, created later): the nearest existing folder sees the folder appear, and the
        // renewed watches see the file.
        check(
            &|| std::fs::create_dir_all(dir.join("root/.config/lspc")).unwrap(),
            false,
        );
        check(
            &|| std::fs::write(dir.join("root/.config/lspc/lsp.json"), "{}").unwrap(),
            true,
        );
        // A write of the same size within the same timestamp tick is still an event, and
        // touching the modification time alone changes the fingerprint.
        check(
            &|| {
                let file = std::fs::File::options()
                    .write(true)
                    .open(dir.join("root/.config/lspc/lsp.json"))
                    .unwrap();
                file.set_modified(std::time::SystemTime::UNIX_EPOCH)
                    .unwrap();
            },
            true,
        );
        // Changes elsewhere in a watched folder wake the watch but change nothing.
        check(
            &|| std::fs::write(dir.join("root/main.py"), "x = 1\n").unwrap(),
            false,
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
