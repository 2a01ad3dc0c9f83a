//! Stable hashes for session identity: the session key's digest and the configuration hashes a
//! client compares with the session's. 64-bit FNV-1a, 16 lowercase hex digits: stable across
//! builds, processes and platforms (std's hasher makes no such promise).

use std::collections::BTreeMap;

/// A 64-bit FNV-1a state that text is written into ([`std::fmt::Write`]) or bytes fed to, so a
/// long identity is hashed as it is formatted rather than built as one string first.
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Feeds `bytes`.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let mut hash = self.0;
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = hash;
    }

    /// The digest of everything fed so far.
    pub fn value(&self) -> u64 {
        self.0
    }

    /// The digest of everything fed so far: 16 lowercase hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

impl std::fmt::Write for Fnv1a {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.write_bytes(text.as_bytes());
        Ok(())
    }
}

/// The FNV-1a digest of `text` as 16 lowercase hex digits.
pub fn hex_digest(text: &str) -> String {
    let mut hasher = Fnv1a::default();
    hasher.write_bytes(text.as_bytes());
    hasher.hex()
}

/// The hash of a loaded configuration's servers as resolved (command found on `PATH`,
/// arguments, environment, settings, extensions...): 16 lowercase hex digits. A client compares
/// its own with the one in the session's hello; they differ when the files changed since the
/// session loaded them (the session then reloads) or when the client resolves them differently
/// (another `PATH`: the client then uses a session keyed by its servers).
pub fn config_hash(config: &crate::config::Config) -> String {
    hash_servers(config.servers.iter())
}

/// The hash of the servers of `config` that claim `extension` (an
/// [`crate::config::extension_key`], such as `".py"`), in configuration order, resolved as in
/// [`config_hash`]: what a one-shot query on such a file runs. A client that loaded only those
/// servers ([`crate::config::load_for_extension`]) gets the same hash as the session does from
/// its whole configuration, unless the servers for that file differ.
pub fn config_hash_for_extension(config: &crate::config::Config, extension: &str) -> String {
    hash_servers(
        config
            .servers
            .iter()
            .filter(|server| server.extension_to_language.contains_key(extension)),
    )
}

/// [`config_hash_for_extension`] for every extension some server of `config` claims (an
/// extension no server claims hashes as [`empty_hash`]).
pub fn config_hashes_by_extension(config: &crate::config::Config) -> BTreeMap<String, String> {
    let mut extensions: Vec<&String> = config
        .servers
        .iter()
        .flat_map(|server| server.extension_to_language.keys())
        .collect();
    crate::sorting::sort(&mut extensions);
    extensions.dedup();
    let mut hashes = BTreeMap::new();
    for extension in extensions {
        hashes.insert(
            extension.clone(),
            config_hash_for_extension(config, extension),
        );
    }
    hashes
}

/// The hash of no servers: [`config_hash_for_extension`] for an extension nobody claims.
pub fn empty_hash() -> String {
    hash_servers(std::iter::empty())
}

/// Each server's `Debug` form (every field that decides what runs and how), written straight
/// into the hasher. A built-in whose program is not on `PATH` is left out: it runs nothing and
/// claims no file, and leaving it out lets a one-shot query's load skip searching for programs
/// that could not serve it anyway ([`crate::config::load_for_extension`]). It still counts once
/// found: then it is a server like any other.
fn hash_servers<'a>(servers: impl Iterator<Item = &'a crate::config::ServerConfig>) -> String {
    use std::fmt::Write;
    let mut hasher = Fnv1a::default();
    let runs_something = |server: &&crate::config::ServerConfig| {
        server.resolved_command.is_some() || server.origin != crate::config::ConfigOrigin::BuiltIn
    };
    for server in servers.filter(runs_something) {
        let _ = writeln!(hasher, "{server:?}");
    }
    hasher.hex()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_and_whole_digests_agree() {
        use std::fmt::Write;
        let mut hasher = Fnv1a::default();
        let second = "cd";
        let _ = write!(hasher, "ab{second}");
        assert_eq!(hasher.hex(), hex_digest("abcd"));
        // FNV-1a 64 of "a", a published test vector.
        assert_eq!(hex_digest("a"), "af63dc4c8601ec8c");
    }
}
