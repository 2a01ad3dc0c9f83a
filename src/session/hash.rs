//! Stable hashes for session identity: the session key's digest and the configuration hash a
//! client compares with the session's hello. 64-bit FNV-1a, 16 lowercase hex digits: stable
//! across builds, processes and platforms (std's hasher makes no such promise).

/// 64-bit FNV-1a of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The FNV-1a digest of `text` as 16 lowercase hex digits.
pub fn hex_digest(text: &str) -> String {
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// The hash of a loaded configuration's servers as resolved (command found on `PATH`,
/// arguments, environment, settings, extensions...): 16 lowercase hex digits. A client compares
/// its own with the one in the session's hello; they differ when the files changed since the
/// session loaded them (the session then reloads) or when the client resolves them differently
/// (another `PATH`: the client then uses a session keyed by its servers).
pub fn config_hash(config: &crate::config::Config) -> String {
    hex_digest(&format!("{:?}", config.servers))
}
