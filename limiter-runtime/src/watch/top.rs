//! The heaviest keys of a stream, in bounded memory: a space-saving summary (Metwally, Agrawal and El Abbadi,
//! 2005) that forgets its lightest half at once when full, instead of one key per arrival.
//!
//! Every key it holds is counted from when it came in, plus the heaviest count it had forgotten by then (the
//! `floor`): a count is never below the key's true count, and never above it by more than the floor. The
//! floor rises by at most one for every `capacity / 2` keys coming in, so it stays below `2 N / capacity`
//! after `N` counted: a key counted more than that is never forgotten.

use hashbrown::HashMap;

/// A space-saving summary of at most `capacity` keys.
#[derive(Debug, Clone)]
pub(crate) struct TopKeys {
    counts: HashMap<Box<str>, u64, foldhash::fast::RandomState>,
    capacity: usize,
    /// The heaviest count forgotten so far: what a key coming in may have had before.
    floor: u64,
}

impl TopKeys {
    /// Creates an empty summary of at most `capacity` keys (at least 2).
    pub(crate) fn new(capacity: usize) -> TopKeys {
        TopKeys {
            counts: HashMap::with_hasher(foldhash::fast::RandomState::default()),
            capacity: capacity.max(2),
            floor: 0,
        }
    }

    /// Counts `n` more of `key`.
    #[inline]
    pub(crate) fn add(&mut self, key: &str, n: u64) {
        if let Some(count) = self.counts.get_mut(key) {
            *count += n;
            return;
        }
        if self.counts.len() >= self.capacity {
            self.forget_lightest();
        }
        self.counts.insert(key.into(), self.floor + n);
    }

    /// Forgets the lightest half (ties broken arbitrarily), raising the floor to the heaviest count forgotten.
    #[cold]
    fn forget_lightest(&mut self) {
        let mut all: Vec<(Box<str>, u64)> = self.counts.drain().collect();
        let keep = self.capacity / 2;
        all.select_nth_unstable_by(keep, |a, b| b.1.cmp(&a.1));
        let forgotten = all[keep..].iter().map(|(_, count)| *count).max();
        self.floor = self.floor.max(forgotten.unwrap_or(0));
        all.truncate(keep);
        self.counts.extend(all);
    }

    /// Creates a summary that holds `keys` with their counts, and may have forgotten keys of up to `floor` each: what
    /// a node reports of its own.
    pub(crate) fn reported(keys: &[(String, u64)], floor: u64) -> TopKeys {
        let mut summary = TopKeys::new(keys.len().max(2));
        keys.iter()
            .for_each(|(key, count)| summary.add(key, *count));
        summary.floor = floor;
        summary
    }

    /// Counts every key of `other` too, never below the truth: a key one of the two does not hold may have
    /// had up to that one's floor there, so it is counted so.
    pub(crate) fn merge(&mut self, other: &TopKeys) {
        if other.floor > 0 {
            for (key, count) in &mut self.counts {
                if !other.counts.contains_key(key) {
                    *count += other.floor;
                }
            }
        }
        for (key, &count) in &other.counts {
            self.add(key, count);
        }
        self.floor += other.floor;
    }

    /// Returns the `n` heaviest keys, heaviest first (ties by key).
    pub(crate) fn top(&self, n: usize) -> Vec<(&str, u64)> {
        self.top_and_rest(n).0
    }

    /// Returns the `n` heaviest keys, heaviest first (ties by key), and the most any other key may have had: the
    /// heaviest left out, or the floor.
    pub(crate) fn top_and_rest(&self, n: usize) -> (Vec<(&str, u64)>, u64) {
        let mut all: Vec<(&str, u64)> = self.counts.iter().map(|(k, &c)| (&**k, c)).collect();
        all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let rest = all.get(n).map_or(0, |&(_, count)| count).max(self.floor);
        all.truncate(n);
        (all, rest)
    }

    /// Returns how many keys it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.counts.len()
    }

    /// Forgets everything.
    pub(crate) fn clear(&mut self) {
        self.counts.clear();
        self.floor = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::TopKeys;

    /// A xorshift generator: the tests' draws, the same on every run.
    struct Draws(u64);

    impl Draws {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// Returns a uniform draw in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Returns Zipf(s) over `n` keys, by inverting its cumulative distribution (a binary search over it).
    fn zipf(n: usize, s: f64) -> Vec<f64> {
        let mut cumulative = Vec::with_capacity(n);
        let mut total = 0.0;
        for k in 1..=n {
            total += 1.0 / (k as f64).powf(s);
            cumulative.push(total);
        }
        cumulative.iter_mut().for_each(|c| *c /= total);
        cumulative
    }

    /// Checks the promise of the operators' view: on a Zipf(1.1) workload over 1,000,000 keys, the summary of 1,000
    /// keys finds at least 95 of the true top 100 (measured against an exact count of the same draws).
    #[test]
    fn finds_the_true_heavy_hitters_of_a_zipf_workload() {
        let cumulative = zipf(1_000_000, 1.1);
        let mut draws = Draws(0x9e37_79b9_7f4a_7c15);
        let mut summary = TopKeys::new(1_000);
        let mut exact = vec![0u64; cumulative.len()];
        for _ in 0..2_000_000 {
            let u = draws.unit();
            // A random permutation of ranks would change nothing: the key's name is its rank.
            let rank = cumulative
                .partition_point(|&c| c < u)
                .min(cumulative.len() - 1);
            exact[rank] += 1;
            summary.add(&format!("user-{rank}"), 1);
        }
        let mut truth: Vec<(usize, u64)> = exact.iter().copied().enumerate().collect();
        truth.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let truth: std::collections::HashSet<String> = truth[..100]
            .iter()
            .map(|(rank, _)| format!("user-{rank}"))
            .collect();
        let found = summary.top(100);
        let recalled = found.iter().filter(|(key, _)| truth.contains(*key)).count();
        assert!(recalled >= 95, "recall of the top 100: {recalled}/100");
        // Never below the truth.
        for (key, count) in &found {
            let rank: usize = key["user-".len()..].parse().unwrap();
            assert!(*count >= exact[rank], "{key}: {count} < {}", exact[rank]);
        }
        assert!(summary.len() <= 1_000);
    }

    #[test]
    fn counts_exactly_while_it_has_room() {
        let mut summary = TopKeys::new(10);
        for (key, n) in [("a", 3), ("b", 1), ("a", 2), ("c", 7)] {
            summary.add(key, n);
        }
        assert_eq!(summary.top(2), vec![("c", 7), ("a", 5)]);
        let mut other = TopKeys::new(10);
        other.add("b", 9);
        summary.merge(&other);
        assert_eq!(summary.top(1), vec![("b", 10)]);
        summary.clear();
        assert_eq!(summary.len(), 0);
    }

    /// Checks that, merged, a key one summary had forgotten (or left out of its report) is counted at that summary's
    /// floor: never below the truth.
    #[test]
    fn a_merge_counts_what_either_may_have_forgotten() {
        // "a" 5 and "b" 2 on one node, which reports only "a" (so "b" may have had up to 2 there).
        let one = TopKeys::reported(&[("a".to_owned(), 5)], 2);
        let two = TopKeys::reported(&[("b".to_owned(), 4)], 0);
        let mut merged = TopKeys::new(10);
        merged.merge(&one);
        merged.merge(&two);
        assert_eq!(merged.top(2), vec![("b", 6), ("a", 5)]);
        let mut full = TopKeys::new(10);
        for (key, n) in [("a", 5), ("b", 2), ("c", 1)] {
            full.add(key, n);
        }
        assert_eq!(full.top_and_rest(1), (vec![("a", 5)], 2));
    }

    /// Returns a node's report of `stream` counted in a summary of `capacity` keys: its `listed` heaviest keys, and
    /// the most any other may have had there (as a node reports them), and the stream's true counts.
    fn report(stream: &[usize], capacity: usize, listed: usize) -> (TopKeys, Vec<u64>) {
        let mut summary = TopKeys::new(capacity);
        let mut exact = vec![0u64; 40];
        for &key in stream {
            summary.add(&format!("k{key}"), 1);
            exact[key] += 1;
        }
        let (top, rest) = summary.top_and_rest(listed);
        let top: Vec<(String, u64)> = top.into_iter().map(|(k, n)| (k.to_owned(), n)).collect();
        (TopKeys::reported(&top, rest), exact)
    }

    /// Checks that, merged, every count is at most the key's true count (over every stream) plus the merged floor, and
    /// at least its true count: for keys every summary held, keys one of them forgot or left out of its report
    /// (counted there at its floor), and keys a summary held only from when its floor had risen (counted
    /// with that floor). Merged in either order, and into a summary small enough to forget keys itself.
    #[test]
    fn a_merged_count_is_above_the_truth_by_at_most_the_floor() {
        let mut draws = Draws(0x2545_f491_4f6c_dd1d);
        // Three nodes' streams over 40 keys, skewed toward the first ones (the lesser of two draws).
        let mut stream = |calls: usize| -> Vec<usize> {
            (0..calls)
                .map(|_| (draws.next() % 40).min(draws.next() % 40) as usize)
                .collect()
        };
        let streams = [stream(3_000), stream(3_000), stream(3_000)];
        // One node counts exactly (room for every key, all reported), one forgets and reports a few, one
        // forgets and reports all it holds.
        let reports = [
            report(&streams[0], 64, 64),
            report(&streams[1], 8, 4),
            report(&streams[2], 12, 12),
        ];
        assert_eq!(reports[0].0.floor, 0);
        assert!(reports[1].0.floor > 0 && reports[2].0.floor > 0);
        let truth = |key: &str| -> u64 {
            let key: usize = key[1..].parse().unwrap();
            reports.iter().map(|(_, exact)| exact[key]).sum()
        };
        let held = |report: &TopKeys, key: &str| report.counts.contains_key(key);
        // What the data holds: keys a node counted but left out, and keys a forgetting node counted above
        // their truth there (they came in over its floor) that another node holds too.
        let (node, exact) = (&reports[1].0, &reports[1].1);
        assert!((0..40).any(|k| exact[k] > 0 && !held(node, &format!("k{k}"))));
        let over = |(summary, exact): &(TopKeys, Vec<u64>)| -> Vec<String> {
            (0..40)
                .map(|k| format!("k{k}"))
                .filter(|key| {
                    let k: usize = key[1..].parse().unwrap();
                    summary
                        .counts
                        .get(key.as_str())
                        .is_some_and(|&n| n > exact[k])
                })
                .collect()
        };
        let over: Vec<String> = reports[1..].iter().flat_map(over).collect();
        assert!(
            over.iter().any(|key| held(&reports[0].0, key)),
            "no key counted above its truth: {over:?}"
        );

        for (capacity, order) in [
            (1_000, [0, 1, 2]),
            (1_000, [2, 1, 0]),
            (1_000, [1, 0, 2]),
            (8, [0, 1, 2]),
            (8, [2, 0, 1]),
        ] {
            let mut merged = TopKeys::new(capacity);
            for node in order {
                merged.merge(&reports[node].0);
            }
            assert!(merged.len() > 0);
            for (key, &count) in &merged.counts {
                let truth = truth(key);
                assert!(
                    count >= truth,
                    "{capacity}, {order:?}: {key} counted {count}, below its true {truth}"
                );
                assert!(
                    count <= truth + merged.floor,
                    "{capacity}, {order:?}: {key} counted {count}, above its true {truth} by more than \
                     the floor {}",
                    merged.floor
                );
            }
        }
    }

    /// Checks that 100 of 250 counted is more than 2 × 250 / 10: the key stays, whatever comes after it.
    #[test]
    fn a_key_heavier_than_twice_its_share_stays() {
        let mut summary = TopKeys::new(10);
        summary.add("heavy", 100);
        for i in 0..150 {
            summary.add(&i.to_string(), 1);
        }
        assert_eq!(summary.top(1), vec![("heavy", 100)]);
        assert!(summary.len() <= 10);
    }
}
