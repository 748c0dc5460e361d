//! Which live member should hold each bucket: rendezvous hashing (each bucket goes to the
//! member that scores highest for it), with bounded loads (a member already holding its share,
//! `buckets / members`, or one more for the first `buckets % members` to reach it, passes the
//! bucket to the next in its ranking). Every replica
//! computes the same answer from the same members, without talking to the others; a join or a
//! leave moves about `1/N` of the buckets (the tests measure it), and loads differ by at most one
//! bucket. What a replica may act on is decided by the owners recorded in the cluster
//! ([`super::coordinate`]), never by this answer alone.

use super::hash::{BUCKETS, fnv1a};

/// For each bucket, the index in `members` of the one that should hold it; `None` for all
/// when there are no members. `members` must be sorted and without duplicates (ties in a
/// ranking go to the name that sorts first).
pub fn assign(members: &[String]) -> Vec<Option<usize>> {
    if members.is_empty() {
        return vec![None; BUCKETS];
    }
    let (share, extra) = (BUCKETS / members.len(), BUCKETS % members.len());
    let mut load = vec![0; members.len()];
    // How many members took one bucket more than the share.
    let mut over = 0;
    (0..BUCKETS)
        .map(|bucket| {
            let mut ranked: Vec<(u64, usize)> = members
                .iter()
                .enumerate()
                .map(|(index, member)| (score(member, bucket), index))
                .collect();
            // Highest score first; equal scores by name, which `members` is sorted by.
            ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let chosen = ranked
                .into_iter()
                .map(|(_, index)| index)
                .find(|&index| load[index] < share || (load[index] == share && over < extra))?;
            if load[chosen] == share {
                over += 1;
            }
            load[chosen] += 1;
            Some(chosen)
        })
        .collect()
}

/// How much `member` wants `bucket`: FNV-1a of both, then mixed (splitmix64's finaliser) so
/// that names differing in one character rank independently.
fn score(member: &str, bucket: usize) -> u64 {
    let mut hash = fnv1a(&format!("{member}/{bucket}"));
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(names: &[&str]) -> Vec<String> {
        let mut members: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        members.sort();
        members
    }

    /// Each bucket's member by name.
    fn owners(names: &[&str]) -> Vec<String> {
        let members = members(names);
        assign(&members)
            .into_iter()
            .map(|index| members[index.expect("assigned")].clone())
            .collect()
    }

    fn moved(before: &[String], after: &[String]) -> usize {
        before.iter().zip(after).filter(|(a, b)| a != b).count()
    }

    #[test]
    fn every_bucket_is_assigned_and_loads_differ_by_at_most_one_or_are_equal() {
        for count in 1..=9 {
            let names: Vec<String> = (0..count).map(|i| format!("demo-7d9f-{i}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let owners = owners(&names);
            let loads: Vec<usize> = names
                .iter()
                .map(|n| owners.iter().filter(|o| o == n).count())
                .collect();
            let (min, max) = (loads.iter().min(), loads.iter().max());
            assert!(
                max.zip(min).is_some_and(|(max, min)| max - min <= 1),
                "{loads:?}"
            );
            assert_eq!(loads.iter().sum::<usize>(), BUCKETS);
            if BUCKETS.is_multiple_of(count) {
                assert!(
                    loads.iter().all(|&load| load == BUCKETS / count),
                    "{loads:?}"
                );
            }
        }
        assert_eq!(assign(&[]), vec![None; BUCKETS]);
    }

    #[test]
    fn every_replica_computes_the_same_assignment() {
        let a = owners(&["replica-b", "replica-a", "replica-c"]);
        let b = owners(&["replica-c", "replica-b", "replica-a"]);
        assert_eq!(a, b);
    }

    #[test]
    fn a_join_or_a_leave_moves_about_one_nth_of_the_buckets() {
        // Pod names as a Deployment gives them, over many ReplicaSets.
        let (mut joins, mut leaves) = (0, 0);
        let trials = 50;
        for trial in 0..trials {
            let names: Vec<String> = (0..4)
                .map(|i| format!("demo-controller-manager-{trial:x}9c{i}-x{}", i * 7))
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let three = owners(&names[..3]);
            let four = owners(&names);
            let two = owners(&names[..2]);
            // A join moves buckets only to the new member's share, a leave only the
            // leaver's and the rebalancing: ideal 1/4 and 1/3.
            let join = moved(&three, &four);
            let leave = moved(&three, &two);
            assert!(join <= BUCKETS / 2, "join moved {join}");
            assert!(leave <= BUCKETS / 2, "leave moved {leave}");
            joins += join;
            leaves += leave;
        }
        let join = joins as f64 / f64::from(trials) / BUCKETS as f64;
        let leave = leaves as f64 / f64::from(trials) / BUCKETS as f64;
        eprintln!("a fourth member moved {join:.3} of the buckets, a third leaving {leave:.3}");
        assert!(
            (0.24..0.33).contains(&join),
            "a join moved {join:.3} on average"
        );
        assert!(
            (0.32..0.40).contains(&leave),
            "a leave moved {leave:.3} on average"
        );
    }
}
