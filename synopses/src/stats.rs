//! Statistical test harness shared by the synopsis tests: seeded uniform and Zipf data, and
//! checks that stated bounds hold at their stated confidence over many trials.

use crate::{Confidence, Estimate, Quantiles, Synopsis};
use datafusion::arrow::array::{Float64Array, Int64Array};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use std::collections::HashMap;

/// Trials per check (the issue asks for at least 200).
pub const TRIALS: usize = 200;
/// Values per trial.
pub const VALUES: usize = 20_000;

/// The shape of a trial's data.
#[derive(Debug, Clone, Copy)]
pub enum Data {
    /// Uniform over `0..2·len` (about 43% of values distinct).
    Uniform,
    /// Zipf with exponent 1.1 over `1..=len` (a few heavy values, a long tail).
    Zipf,
}

/// `count` seeded trials of `len` values each, as `(seed, values)`.
pub fn trials(data: Data, count: usize, len: usize) -> Vec<(u64, Vec<i64>)> {
    (0..count as u64)
        .map(|seed| {
            let mut rng = StdRng::seed_from_u64(seed * 7919 + 17);
            let values = match data {
                Data::Uniform => (0..len)
                    .map(|_| rng.random_range(0..2 * len as i64))
                    .collect(),
                Data::Zipf => {
                    let zipf = Zipf::new(len as f64, 1.1).expect("valid Zipf parameters");
                    (0..len).map(|_| zipf.sample(&mut rng) as i64).collect()
                }
            };
            (seed, values)
        })
        .collect()
}

/// Most misses allowed in `n` trials of a bound that fails with probability `p`: the
/// expectation plus three binomial standard deviations (a correct bound fails this check
/// with probability about 0.1%).
pub fn allowed_failures(p: f64, n: usize) -> usize {
    let n = n as f64;
    (p * n + 3.0 * (n * p * (1.0 - p)).sqrt()).ceil() as usize + 1
}

/// Distinct-count bounds hold at 68%, 95% and 99% confidence.
pub fn check_distinct_bounds<S: Synopsis>(
    data: Data,
    make: impl Fn() -> S,
    estimate: impl Fn(&S, Confidence) -> Estimate,
) {
    let levels = [0.68, 0.95, 0.99].map(|p| Confidence::new(p).expect("valid confidence"));
    let mut misses = [0usize; 3];
    let runs = trials(data, TRIALS, VALUES);
    for (_, values) in &runs {
        let mut s = make();
        s.add(&Int64Array::from(values.clone())).expect("add");
        let mut distinct = values.clone();
        distinct.sort_unstable();
        distinct.dedup();
        for (i, c) in levels.iter().enumerate() {
            if !estimate(&s, *c).covers(distinct.len() as f64) {
                misses[i] += 1;
            }
        }
    }
    for (i, c) in levels.iter().enumerate() {
        let allowed = allowed_failures(1.0 - c.probability(), runs.len());
        assert!(
            misses[i] <= allowed,
            "{data:?} at {}: {} misses of {} (allowed {allowed})",
            c.probability(),
            misses[i],
            runs.len()
        );
    }
}

/// Quantile rank bounds hold at 95% and 99% (or, for a sketch without bounds, ranks stay
/// within 2% in 99% of queries — t-digest's empirical accuracy at k = 100).
pub fn check_quantile_bounds<S: Synopsis + Quantiles>(
    data: Data,
    make: impl Fn() -> S,
    has_bounds: bool,
) {
    let ranks = [0.01, 0.1, 0.5, 0.9, 0.99];
    let levels = [0.95, 0.99].map(|p| Confidence::new(p).expect("valid confidence"));
    let mut misses = [0usize; 2];
    let runs = trials(data, TRIALS, VALUES);
    for (_, values) in &runs {
        let mut s = make();
        let doubles: Float64Array = values.iter().map(|v| Some(*v as f64)).collect();
        s.add(&doubles).expect("add");
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let n = sorted.len() as f64;
        for r in ranks {
            let q = s.quantile(r).expect("non-empty sketch") as i64;
            // With ties the true rank of q is an interval.
            let below = sorted.partition_point(|v| *v < q) as f64 / n;
            let at_or_below = sorted.partition_point(|v| *v <= q) as f64 / n;
            for (i, c) in levels.iter().enumerate() {
                let (lo, hi) = match s.rank_bounds(r, *c) {
                    Some(b) => b,
                    None => (r - 0.02, r + 0.02),
                };
                if at_or_below < lo || below > hi {
                    misses[i] += 1;
                }
            }
        }
    }
    let queries = runs.len() * ranks.len();
    for (i, c) in levels.iter().enumerate() {
        let p_fail = if has_bounds {
            1.0 - c.probability()
        } else {
            0.01
        };
        let allowed = allowed_failures(p_fail, queries);
        assert!(
            misses[i] <= allowed,
            "{data:?} at {}: {} misses of {queries} (allowed {allowed})",
            c.probability(),
            misses[i]
        );
    }
}

/// Per-item count bounds: every item's true count lies in its interval, except for at most
/// the fraction `failure_rate` the sketch states (0 for deterministic bounds).
pub fn check_frequency_bounds<S: Synopsis>(
    data: Data,
    make: impl Fn() -> S,
    count: impl Fn(&S, i64) -> (f64, f64, f64),
    failure_rate: f64,
) {
    let mut misses = 0usize;
    let mut checks = 0usize;
    for (_, values) in trials(data, TRIALS, VALUES) {
        let mut s = make();
        s.add(&Int64Array::from(values.clone())).expect("add");
        let mut truth: HashMap<i64, f64> = HashMap::new();
        for v in &values {
            *truth.entry(*v).or_default() += 1.0;
        }
        // The heaviest 20 items and 20 items in value order (mostly light ones).
        let mut items: Vec<(i64, f64)> = truth.iter().map(|(k, v)| (*k, *v)).collect();
        items.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut probe: Vec<i64> = items.iter().take(20).map(|(k, _)| *k).collect();
        let mut keys: Vec<i64> = truth.keys().copied().collect();
        keys.sort_unstable();
        probe.extend(keys.iter().take(20));
        for item in probe {
            let (_, lo, hi) = count(&s, item);
            let t = truth[&item];
            checks += 1;
            if t < lo || t > hi {
                misses += 1;
            }
        }
    }
    let allowed = if failure_rate == 0.0 {
        0
    } else {
        allowed_failures(failure_rate, checks)
    };
    assert!(
        misses <= allowed,
        "{data:?}: {misses} misses of {checks} (allowed {allowed})"
    );
}

/// Merging is associative and equals the sketch of the union (compared through `value`,
/// exactly, both sides having gone through the sketch's merge path).
pub fn check_merge<S: Synopsis>(make: impl Fn() -> S, value: impl Fn(&S) -> f64) {
    check_merge_within(make, value, 0.0)
}

/// As [`check_merge`], with a relative tolerance for randomized merges (KLL, REQ).
pub fn check_merge_within<S: Synopsis>(
    make: impl Fn() -> S,
    value: impl Fn(&S) -> f64,
    tolerance: f64,
) {
    let (_, values) = trials(Data::Zipf, 1, 30_000).remove(0);
    let part = |r: std::ops::Range<usize>| {
        let mut s = make();
        s.add(&Int64Array::from(values[r].to_vec())).expect("add");
        s
    };
    let (a, b, c) = (part(0..10_000), part(10_000..20_000), part(20_000..30_000));
    let mut ab_c = a.clone_via_bytes();
    ab_c.merge(&b).expect("merge");
    ab_c.merge(&c).expect("merge");
    let mut bc = b.clone_via_bytes();
    bc.merge(&c).expect("merge");
    let mut a_bc = a.clone_via_bytes();
    a_bc.merge(&bc).expect("merge");
    let mut whole = make();
    whole.merge(&part(0..30_000)).expect("merge");
    let close = |x: f64, y: f64| (x - y).abs() <= tolerance * y.abs().max(1.0);
    assert!(
        close(value(&ab_c), value(&a_bc)),
        "not associative: {} vs {}",
        value(&ab_c),
        value(&a_bc)
    );
    assert!(
        close(value(&ab_c), value(&whole)),
        "merge {} differs from the sketch of the union {}",
        value(&ab_c),
        value(&whole)
    );
}

/// Serialized bytes read back into a synopsis that answers the same. (Bytes need not be
/// identical: a frequent-items map lists items in hash-table order.)
pub fn check_round_trip<S: Synopsis>(make: impl Fn() -> S, value: impl Fn(&S) -> f64) {
    let (_, values) = trials(Data::Uniform, 1, 10_000).remove(0);
    let mut s = make();
    s.add(&Int64Array::from(values)).expect("add");
    let back = S::from_bytes(&s.to_bytes()).expect("read back");
    assert_eq!(value(&back).to_bits(), value(&s).to_bits());
}

/// A copy of a synopsis through its bytes (synopses need not be `Clone`).
trait CloneViaBytes: Sized {
    fn clone_via_bytes(&self) -> Self;
}

impl<S: Synopsis> CloneViaBytes for S {
    fn clone_via_bytes(&self) -> Self {
        S::from_bytes(&self.to_bytes()).expect("read back")
    }
}
