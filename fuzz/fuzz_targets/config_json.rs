//! Fuzz target: arbitrary bytes as a `--config` file (`.lsp.json`), loaded with an empty
//! environment and no built-in table. Invariant checked: bad config never panics; it becomes
//! `Config::errors`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use lspc::config::{load_with_env, ConfigOptions};

fn workdir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("lspc-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("creating the fuzz work folder");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = workdir();
    let file = dir.join("cfg.json");
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let env = |_: &str| -> Option<String> { None };
    let mut options = ConfigOptions::from_env(dir.clone(), &env);
    options.config_files = vec![file];
    options.builtin = false;
    let _ = load_with_env(&options, &env);
});
