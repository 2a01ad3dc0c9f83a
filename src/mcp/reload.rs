//! Noticing configuration changes cheaply, so `lspc mcp` reloads before the next request
//! (issue 4: "a config file edited, a plugin folder added").
//!
//! A [`ConfigWatch`] remembers a fingerprint of everything the configuration was loaded from: each
//! `--config` file, each `--plugin-dir` folder with its entries and its `.claude-plugin/` entries
//! (one level: manifests and `.lsp.json` files live there), the workspace `.lsp.json` and the user
//! config file. A fingerprint is `(path, exists, modification time, size)` per path, so a check is
//! a few `stat` calls and reads no file. Invariant: [`ConfigWatch::changed`] is true once per
//! change (the fingerprint is replaced when it differs).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::ConfigOptions;

/// One path's state: `None` when it does not exist.
type Stamp = Option<(SystemTime, u64, bool)>;

/// The fingerprint of the files and folders a configuration came from.
#[derive(Debug)]
pub struct ConfigWatch {
    options: ConfigOptions,
    fingerprint: Vec<(PathBuf, Stamp)>,
}

fn stamp(path: &Path) -> Stamp {
    let metadata = std::fs::metadata(path).ok()?;
    let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    Some((modified, metadata.len(), metadata.is_dir()))
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
            children.sort();
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
            let stamp = stamp(&path);
            (path, stamp)
        })
        .collect()
}

impl ConfigWatch {
    /// Remember the current state of what `options` loads.
    pub fn new(options: ConfigOptions) -> ConfigWatch {
        let fingerprint = fingerprint(&options);
        ConfigWatch {
            options,
            fingerprint,
        }
    }

    /// What the configuration is loaded from (to reload it).
    pub fn options(&self) -> &ConfigOptions {
        &self.options
    }

    /// Whether anything changed since the last [`ConfigWatch::changed`] (or
    /// [`ConfigWatch::new`]), without taking the change: the stdio reader asks, and leaves the
    /// reload to the hub.
    pub fn stale(&self) -> bool {
        fingerprint(&self.options) != self.fingerprint
    }

    /// Whether anything changed since the last call (or [`ConfigWatch::new`]).
    pub fn changed(&mut self) -> bool {
        let now = fingerprint(&self.options);
        if now == self.fingerprint {
            return false;
        }
        self.fingerprint = now;
        true
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
        options.user_config = None;
        let mut watch = ConfigWatch::new(options);
        let mut check = |change: &dyn Fn(), expected: bool| {
            change();
            assert_eq!(watch.changed(), expected);
            assert!(!watch.changed(), "a change is reported once");
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
