//! The hash space objects are sharded over, as the API server's `shardSelector` (KEP-5866)
//! defines it: FNV-1a 64 of one metadata field, ranges `[start, end)` written as `0x` and
//! sixteen hex digits (the end of the space, 2^64, as `0x10000000000000000`). The space is cut
//! into [`BUCKETS`] equal buckets (to within one hash); a replica holds whole buckets, so the
//! ranges it asks the API server for are runs of adjacent buckets.

use std::fmt::Write as _;

/// How many buckets the hash space is cut into: enough for each of up to a few dozen replicas
/// to hold several (a join or a leave moves whole buckets), few enough that a replica's
/// selector stays a short list of ranges. 60 rather than 64 because it divides by 2, 3, 4, 5, 6,
/// 10, 12 and 15: at those replica counts every replica holds the same share, where of 64
/// buckets the busiest of three replicas held 22: 3% more than a third of the work.
pub const BUCKETS: usize = 60;

/// FNV-1a, 64 bits, of `value`'s bytes: what the API server hashes (Go's `hash/fnv` `New64a`).
pub fn fnv1a(value: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    value.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// The bucket a hash falls in.
pub fn bucket_of(hash: u64) -> usize {
    // `hash * BUCKETS / 2^64`, below BUCKETS: fits a usize on every target.
    usize::try_from((u128::from(hash) * BUCKETS as u128) >> 64).unwrap_or(0)
}

/// Where a bucket's range starts (inclusive) in the hash space: the least hash in it,
/// `bucket * 2^64 / BUCKETS` rounded up.
fn start_of(bucket: usize) -> u128 {
    ((bucket as u128) << 64).div_ceil(BUCKETS as u128)
}

/// A bound of the hash space as the API server reads it.
fn hex(bound: u128) -> String {
    match bound {
        // 2^64: seventeen digits, the only bound longer than sixteen.
        b if b > u128::from(u64::MAX) => "0x10000000000000000".to_owned(),
        b => format!("0x{b:016x}"),
    }
}

/// The ranges `[start, end)` covered by `held` (a flag per bucket), adjacent buckets merged.
pub fn ranges(held: &[bool]) -> Vec<(u128, u128)> {
    let mut ranges: Vec<(u128, u128)> = Vec::new();
    for (bucket, _) in held.iter().enumerate().filter(|(_, held)| **held) {
        let (start, end) = (start_of(bucket), start_of(bucket + 1));
        match ranges.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => ranges.push((start, end)),
        }
    }
    ranges
}

/// The ranges as `metrics` and logs name them: `0x…-0x…`.
pub fn range_name((start, end): (u128, u128)) -> String {
    format!("{}-{}", hex(start), hex(end))
}

/// The `shardSelector` of `held` over `field` (`object.metadata.uid`), `None` when no
/// bucket is held (the API server refuses an empty selector; nothing is to be watched then).
pub fn selector(field: &str, held: &[bool]) -> Option<String> {
    let mut selector = String::new();
    for (start, end) in ranges(held) {
        if !selector.is_empty() {
            selector.push_str(" || ");
        }
        let _ = write!(
            selector,
            "shardRange({field}, '{}', '{}')",
            hex(start),
            hex(end)
        );
    }
    (!selector.is_empty()).then_some(selector)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_64_as_go_computes_it() {
        // Go: fmt.Sprintf("%016x", fnv.New64a() of the bytes), as sharding.HashField.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn buckets_cut_the_space_evenly_and_ranges_merge_neighbours() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        // Each bucket starts where the one before it ends, and its first hash is its own.
        for bucket in 1..BUCKETS {
            let start = u64::try_from(start_of(bucket)).expect("inside the space");
            assert_eq!(bucket_of(start), bucket);
            assert_eq!(bucket_of(start - 1), bucket - 1);
        }
        // Equal to within one hash.
        let sizes: Vec<u128> = (0..BUCKETS)
            .map(|b| start_of(b + 1) - start_of(b))
            .collect();
        let (least, most) = (sizes.iter().min(), sizes.iter().max());
        assert!(
            most.zip(least)
                .is_some_and(|(most, least)| most - least <= 1)
        );
        let mut held = [false; BUCKETS];
        assert_eq!(selector("object.metadata.uid", &held), None);
        held[0] = true;
        held[1] = true;
        held[BUCKETS - 1] = true;
        let field = "object.metadata.uid";
        assert_eq!(
            selector(field, &held),
            Some(format!(
                "shardRange({field}, '0x0000000000000000', '0x0888888888888889') \
                 || shardRange({field}, '0xfbbbbbbbbbbbbbbc', '0x10000000000000000')"
            ))
        );
        let all = ranges(&[true; BUCKETS]);
        assert_eq!(all, [(0, 1 << 64)]);
        assert_eq!(range_name(all[0]), "0x0000000000000000-0x10000000000000000");
    }

    #[test]
    fn every_hash_falls_in_the_range_of_its_bucket() {
        for value in [
            "",
            "default",
            "team-a",
            "3f1c2a0e-8a6b-4f0e-9d7e-1b2c3d4e5f60",
        ] {
            let hash = fnv1a(value);
            let mut held = [false; BUCKETS];
            held[bucket_of(hash)] = true;
            let [(start, end)] = ranges(&held)[..] else {
                panic!("one range")
            };
            assert!(
                start <= u128::from(hash) && u128::from(hash) < end,
                "{value}"
            );
        }
    }
}
