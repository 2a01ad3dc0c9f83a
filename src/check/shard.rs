//! `lspc check --shard K/N`: a deterministic, size-balanced share of the files, so that a CI
//! matrix of N jobs covers the repository exactly once.
//!
//! Invariants: for a given file list (and the files' sizes on disk) every K in 1..=N gets a
//! disjoint share and the N shares together are the whole list; the assignment does not depend on
//! the order of the input, on the machine or on the time. Balancing is greedy
//! "longest processing time first": files by weight (bytes plus a fixed per-file cost, because a
//! server spends time on every file however small), heaviest first, ties by path, each to the
//! lightest shard so far (ties to the lowest K).

use std::fmt;
use std::path::PathBuf;

/// What one file costs a server besides its bytes, in bytes: opening, analysing and publishing
/// for an empty file is not free.
const PER_FILE_WEIGHT: u64 = 2048;

/// `K/N`: shard K (1-based) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based, at most `count`.
    pub index: u32,
    pub count: u32,
}

/// Why a `--shard` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseShardError(String);

impl fmt::Display for ParseShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseShardError {}

impl std::str::FromStr for Shard {
    type Err = ParseShardError;

    /// `K/N` with 1 ≤ K ≤ N, both decimal integers (N at most 1000).
    fn from_str(text: &str) -> Result<Shard, ParseShardError> {
        let invalid = |why: &str| {
            ParseShardError(format!(
                "--shard: expected K/N with 1 <= K <= N (e.g. 2/4), got {text:?}: {why}"
            ))
        };
        let Some((index, count)) = text.split_once('/') else {
            return Err(invalid("no '/'"));
        };
        let number = |part: &str| -> Option<u32> {
            if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        };
        let (Some(index), Some(count)) = (number(index), number(count)) else {
            return Err(invalid("K and N must be whole numbers"));
        };
        if count == 0 || count > 1000 {
            return Err(invalid("N must be between 1 and 1000"));
        }
        if index == 0 || index > count {
            return Err(invalid("K must be between 1 and N"));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The SARIF `runAutomationDetails.id` of this shard (SARIF 2.1.0 §3.17): a category per
    /// shard (`lspc/shard-2-of-4/`), so that code scanning keeps every shard's upload instead of
    /// replacing one with the next.
    pub fn automation_id(&self) -> String {
        format!("lspc/shard-{}-of-{}/", self.index, self.count)
    }

    /// Whether this shard reports a file no shard opens (a `tsconfig.json` a server published
    /// for), given its root-relative path: the shard its FNV-1a hash names, so exactly one
    /// does.
    pub fn owns_unopened(&self, relative_path: &str) -> bool {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in relative_path.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        hash % u64::from(self.count) == u64::from(self.index - 1)
    }

    /// This shard's files out of `files`, in the input's order. Sizes are read from disk; a file
    /// that cannot be read weighs only the per-file cost (it fails later, in its own shard).
    pub fn select(&self, files: Vec<PathBuf>) -> Vec<PathBuf> {
        let weights: Vec<u64> = files
            .iter()
            .map(|file| std::fs::metadata(file).map_or(0, |metadata| metadata.len()))
            .collect();
        let assignment = assign(&files, &weights, self.count);
        files
            .into_iter()
            .zip(assignment)
            .filter(|(_, shard)| *shard + 1 == self.index)
            .map(|(file, _)| file)
            .collect()
    }
}

/// The 0-based shard of each file (same order as `files`) for `count` shards, `sizes` in bytes.
fn assign(files: &[PathBuf], sizes: &[u64], count: u32) -> Vec<u32> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    crate::sorting::sort_by(&mut order, |&a, &b| {
        sizes[b]
            .cmp(&sizes[a])
            .then_with(|| files[a].cmp(&files[b]))
    });
    let mut loads = vec![0u64; count as usize];
    let mut assignment = vec![0u32; files.len()];
    for index in order {
        let (lightest, _) = loads
            .iter()
            .enumerate()
            .min_by_key(|(shard, load)| (**load, *shard))
            .expect("at least one shard");
        loads[lightest] += sizes[index] + PER_FILE_WEIGHT;
        assignment[index] = lightest as u32;
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        let check = |text: &str, expected: Result<(u32, u32), &str>| {
            let parsed = text
                .parse::<Shard>()
                .map(|shard| (shard.index, shard.count));
            match expected {
                Ok(pair) => assert_eq!(parsed, Ok(pair), "{text}"),
                Err(why) => {
                    let error = parsed.expect_err(text).to_string();
                    assert!(error.contains(why), "{text}: {error}");
                    assert!(error.starts_with("--shard: expected K/N"), "{error}");
                }
            }
        };
        check("1/1", Ok((1, 1)));
        check("2/7", Ok((2, 7)));
        check("7/7", Ok((7, 7)));
        check("0/3", Err("K must be between 1 and N"));
        check("4/3", Err("K must be between 1 and N"));
        check("1/0", Err("N must be between 1 and 1000"));
        check("1/1001", Err("N must be between 1 and 1000"));
        check("3", Err("no '/'"));
        check("a/3", Err("whole numbers"));
        check("-1/3", Err("whole numbers"));
        check("+1/3", Err("whole numbers"));
        check("1/3/4", Err("whole numbers"));
        check("", Err("no '/'"));
    }

    #[test]
    fn every_file_in_exactly_one_balanced_shard() {
        let files: Vec<PathBuf> = (0..100)
            .map(|n| PathBuf::from(format!("/w/{n:03}.py")))
            .collect();
        let sizes: Vec<u64> = (0..100).map(|n| (n * 37 % 101) * 100).collect();
        for count in [1, 2, 3, 7] {
            let assignment = assign(&files, &sizes, count);
            let mut loads = vec![0u64; count as usize];
            for (shard, size) in assignment.iter().zip(&sizes) {
                loads[*shard as usize] += size + PER_FILE_WEIGHT;
            }
            let heaviest = *loads.iter().max().unwrap();
            let lightest = *loads.iter().min().unwrap();
            // LPT keeps shards within one largest file of each other.
            assert!(heaviest - lightest <= 10_000 + PER_FILE_WEIGHT, "{loads:?}");
            // The input order does not matter.
            let mut reversed_files = files.clone();
            reversed_files.reverse();
            let mut reversed_sizes = sizes.clone();
            reversed_sizes.reverse();
            let mut reversed = assign(&reversed_files, &reversed_sizes, count);
            reversed.reverse();
            assert_eq!(assignment, reversed);
        }
    }

    #[test]
    fn exactly_one_shard_owns_an_unopened_file() {
        for path in [
            "tsconfig.json",
            "packages/one/tsconfig.json",
            "a b/ü.json",
            "",
        ] {
            for count in [1, 2, 3, 7] {
                let owners = (1..=count)
                    .filter(|index| {
                        Shard {
                            index: *index,
                            count,
                        }
                        .owns_unopened(path)
                    })
                    .count();
                assert_eq!(owners, 1, "{path} {count}");
            }
        }
    }

    #[test]
    fn automation_id_names_the_shard() {
        let shard: Shard = "2/4".parse().unwrap();
        assert_eq!(shard.automation_id(), "lspc/shard-2-of-4/");
        assert_eq!(shard.to_string(), "2/4");
    }
}
