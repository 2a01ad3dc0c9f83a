//! Stable sorting through one shared copy of the standard library's sort.
//!
//! `slice::sort_by` is generic over the element and the comparison, so every call site with its
//! own element type or closure gets its own copy of the standard library's driftsort: about
//! 5 KiB of machine code each, over 100 KiB of the release binary for lspc's twenty-odd sites.
//! [`sort_by`] sorts a list of indices instead, with the comparison behind `dyn`, so that code
//! exists once; the elements are then moved into that order by swaps.
//!
//! The result is exactly `slice::sort_by`'s: the index sort is stable, so elements that compare
//! equal keep their original order (which matters where `Ord` calls different values equal, as
//! `PathBuf`'s does for `a/b` and `a//b`). A comparison that is not a total order may panic, as
//! there. The price is one index vector and one indirect call per comparison, nothing beside
//! what the sorted lists here are for (reports, file lists, edit batches); a sort on a
//! per-request path that measures otherwise should keep `slice::sort_by`.
//!
//! For the same reason maps and sets are built with `insert` or `extend` rather than `collect`:
//! `BTreeMap`'s and `BTreeSet`'s `FromIterator` sort their input with a copy of the standard
//! sort for each iterator type, while `insert` has one copy per key and value type.

use std::cmp::Ordering;

/// Sorts `items` stably by `compare` (as `slice::sort_by`).
pub fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    let swaps = sorting_swaps(items.len(), &mut |a, b| compare(&items[a], &items[b]));
    for (a, b) in swaps {
        items.swap(a, b);
    }
}

/// Sorts `items` stably by the key `key` computes (as `slice::sort_by_key`: the key is computed
/// for each comparison).
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `items` stably in their `Ord` order (as `slice::sort`).
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// The swaps, applied in order, that put `len` elements in the stable order of `compare`
/// (which compares the elements at two original indices).
#[inline(never)]
fn sorting_swaps(
    len: usize,
    compare: &mut dyn FnMut(usize, usize) -> Ordering,
) -> Vec<(usize, usize)> {
    // order[k]: the original index of the element that belongs at position k.
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    // Follow each cycle of the permutation: position `at` takes the element from `from`, where
    // the cycle's first element (carried along by the swaps) waits until its own place comes.
    const PLACED: usize = usize::MAX;
    let mut swaps = Vec::new();
    for start in 0..len {
        let mut at = start;
        while order[at] != PLACED {
            let from = std::mem::replace(&mut order[at], PLACED);
            if from == start {
                break;
            }
            swaps.push((at, from));
            at = from;
        }
    }
    swaps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorts `input` by the first tuple field with [`sort_by`] and with `slice::sort_by`.
    fn check(input: &[(u32, u32)]) {
        let mut ours = input.to_vec();
        sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
        let mut std = input.to_vec();
        std.sort_by_key(|pair| pair.0);
        assert_eq!(ours, std, "input {input:?}");
    }

    #[test]
    fn matches_the_standard_stable_sort() {
        check(&[]);
        check(&[(1, 0)]);
        check(&[(2, 0), (1, 1)]);
        check(&[(1, 0), (1, 1), (1, 2)]);
        check(&[(3, 0), (1, 1), (2, 2), (1, 3), (3, 4), (0, 5)]);
        check(&[(5, 0), (4, 1), (3, 2), (2, 3), (1, 4), (0, 5)]);
        // A longer input with many ties and several permutation cycles.
        let long: Vec<(u32, u32)> = (0..200).map(|i| ((i * 7919) % 13, i)).collect();
        check(&long);
    }

    #[test]
    fn keys_and_ord() {
        let mut words = vec!["pear", "fig", "apple", "kiwi"];
        sort_by_key(&mut words, |word| word.len());
        assert_eq!(words, ["fig", "pear", "kiwi", "apple"]);
        sort(&mut words);
        assert_eq!(words, ["apple", "fig", "kiwi", "pear"]);
    }
}
