//! An unkeyed multiply-rotate hasher for the event loop's small, lspc-bounded maps (issue 15).
//!
//! `std`'s `RandomState` (SipHash-1-3) resists hash flooding, and costs about 400 instructions
//! per `Path` key: the loop looked up the queried document in `HashMap<PathBuf, _>` tables about
//! six times per request, 4.4k of a fixture hover's 18k instructions on the loop. [`FastMap`]
//! hashes a word at a time with one multiply, a rotate and a final mix.
//!
//! It has no key, so whoever chooses the keys can make them collide. Use it only where lspc
//! bounds the number of entries or chooses the keys itself (its own request ids): then a
//! collision costs a probe over a few dozen entries, never a quadratic walk. The documents are
//! the one borderline use: the LRU bounds those open on a server (`max_open_documents` plus the
//! pinned ones), but not the ones no running server holds; every key is an existing file's
//! canonical path, so colliding keys need colliding files in the workspace. A map whose keys a
//! server or a network client chooses freely keeps `std`'s hasher.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`]; see the module doc for where it may be used.
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Odd 64-bit multiplier with well-spread bits (from the golden ratio's fraction).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// The hasher of [`FastMap`]: `state = (state.rotl(5) ^ word) × MULTIPLIER` per 64-bit word,
/// and a final xor-shift and multiply so that the low bits (hashbrown's bucket index) depend on
/// every input bit, not only on each word's low bits.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher {
    state: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length in the top byte tells "ab" from "ab\0".
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mixed = (self.state ^ (self.state >> 32)).wrapping_mul(MULTIPLIER);
        mixed ^ (mixed >> 29)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};
    use std::path::{Path, PathBuf};

    fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(value)
    }

    #[test]
    fn equal_paths_hash_alike_and_near_ones_apart() {
        // `Path`'s own equality ignores `.` components and repeated separators; its hash does
        // too, whatever the hasher.
        assert_eq!(
            hash_of(Path::new("/w/src/./a.py")),
            hash_of(Path::new("/w/src//a.py"))
        );
        assert_ne!(
            hash_of(Path::new("/w/src/a.py")),
            hash_of(Path::new("/w/src/b.py"))
        );
        assert_ne!(hash_of(&[0u8, 1][..]), hash_of(&[0u8, 1, 0][..]));
    }

    #[test]
    fn paths_that_differ_in_one_byte_spread_over_the_low_bits() {
        // hashbrown indexes buckets with the low bits: 64 names that differ only in the
        // highest byte of a word must not share one bucket of a 64-bucket table.
        let buckets: std::collections::BTreeSet<u64> = (0..64u8)
            .map(|n| {
                hash_of(&PathBuf::from(format!(
                    "/w/abcdefg{}",
                    char::from(b'A' + n)
                ))) & 63
            })
            .collect();
        assert!(buckets.len() > 24, "{} buckets", buckets.len());
    }

    #[test]
    fn a_map_finds_what_it_holds() {
        let mut map: FastMap<PathBuf, u32> = FastMap::default();
        for n in 0..200 {
            map.insert(PathBuf::from(format!("/w/src/m{n}.py")), n);
        }
        for n in 0..200 {
            assert_eq!(map.get(Path::new(&format!("/w/src/m{n}.py"))), Some(&n));
        }
        assert_eq!(map.get(Path::new("/w/src/m200.py")), None);
    }
}
