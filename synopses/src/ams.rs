//! AMS sketch (Alon–Matias–Szegedy, in the "fast AMS" count-sketch layout of Cormode and
//! Garofalakis): the second frequency moment F2 = Σ count(v)² (the squared L2 norm of the
//! frequency vector, the self-join size) and the inner product of two streams' frequency
//! vectors (their join size), with deletions.
//!
//! Written here: no maintained Rust crate implements it. Each of `depth` rows hashes a value
//! to one of `width` counters and adds ±1 (a 4-wise independent sign); a row's Σ counter² is
//! an unbiased F2 estimate with variance ≤ 2·F2²/width, so with `width = ⌈8/ε²⌉` a row
//! misses by more than ε·F2 with probability ≤ 1/4 (Chebyshev), and the median of the rows
//! misses only if half of them do — a binomial tail that sets the confidence.
//!
//! Serialized form (Brook's own): magic `BRAM`, version, width and depth as u32, seed as
//! u64, then the counters as little-endian i64.

use crate::values::{for_each_hashed, HashedValues};
use crate::{check_error, Confidence, Estimate, Synopsis};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::Array;
use std::hash::{Hash, Hasher};

const MAGIC: &[u8; 4] = b"BRAM";
/// The seed Brook's SQL functions build every AMS sketch with, so that any two sketches of
/// the same error and confidence combine (join sizes across streams and keys).
pub const SEED: u64 = 0x4252_4f4f_4b41_4d53;
/// Relative error of a sketch built without one (`ams_sketch_agg(x)`).
pub const DEFAULT_ERROR: f64 = 0.05;
const VERSION: u8 = 1;
/// 2^61 − 1, the Mersenne prime the hash polynomials work modulo.
const P: u64 = (1 << 61) - 1;
/// Most counters a sketch may have (64 MiB).
const MAX_COUNTERS: u64 = 1 << 23;

/// An AMS sketch.
#[derive(Debug, Clone, PartialEq)]
pub struct Ams {
    width: u32,
    depth: u32,
    seed: u64,
    /// Per row: bucket hash (a, b) and 4-wise sign hash (c0..c3), all below `P`.
    hashes: Vec<[u64; 6]>,
    /// `depth × width` counters, row-major.
    counters: Vec<i64>,
}

fn mulmod(a: u64, b: u64) -> u64 {
    let x = u128::from(a) * u128::from(b);
    let lo = (x as u64) & P;
    let hi = (x >> 61) as u64;
    let s = lo + hi;
    if s >= P {
        s - P
    } else {
        s
    }
}

fn addmod(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= P {
        s - P
    } else {
        s
    }
}

/// SplitMix64: derives the hash coefficients from the seed.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a with a SplitMix finalizer: a hash fixed by this file, so serialized sketches keep
/// meaning across Rust releases (std's `DefaultHasher` promises no such stability).
struct StableHasher(u64);

impl Hasher for StableHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        let mut state = self.0;
        splitmix(&mut state)
    }
}

/// Probability that at least half of `depth` rows miss, each with probability 1/4.
fn median_failure(depth: u32) -> f64 {
    let d = depth as i32;
    let need = (d + 1) / 2;
    let mut total = 0.0;
    for i in need..=d {
        let mut c = 1.0f64;
        for j in 0..i {
            c = c * f64::from(d - j) / f64::from(j + 1);
        }
        total += c * 0.25f64.powi(i) * 0.75f64.powi(d - i);
    }
    total
}

impl Ams {
    /// A sketch of `depth` rows of `width` counters with hash seed `seed` (sketches combine
    /// only with the same shape and seed).
    pub fn new(width: u32, depth: u32, seed: u64) -> Result<Self> {
        if width == 0 || depth == 0 || u64::from(width) * u64::from(depth) > MAX_COUNTERS {
            return Err(brook_err!(InvalidParameter, "AMS sketch of {depth}×{width} counters: both must be positive and their product at most {MAX_COUNTERS}"));
        }
        let mut state = seed;
        let hashes = (0..depth)
            .map(|_| {
                let mut h = [0u64; 6];
                for c in h.iter_mut() {
                    *c = splitmix(&mut state) % P;
                }
                h
            })
            .collect();
        Ok(Ams {
            width,
            depth,
            seed,
            hashes,
            counters: vec![0; (width * depth) as usize],
        })
    }

    /// A sketch whose F2 estimate is within `error · F2` at `confidence`.
    pub fn for_error(error: f64, confidence: Confidence, seed: u64) -> Result<Self> {
        let error = check_error(error)?;
        let width = (8.0 / (error * error)).ceil() as u32;
        let mut depth = 1;
        while median_failure(depth) > 1.0 - confidence.probability() {
            depth += 2;
        }
        Self::new(width, depth, seed)
    }

    /// Counters per row.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Rows (independent estimates, of which the median is taken).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The relative error of an estimate: `sqrt(8 / width)`.
    pub fn relative_error(&self) -> f64 {
        (8.0 / f64::from(self.width)).sqrt()
    }

    /// The probability that an estimate is within [`Ams::relative_error`].
    pub fn confidence(&self) -> f64 {
        1.0 - median_failure(self.depth)
    }

    fn key<T: Hash>(value: T) -> u64 {
        let mut h = StableHasher(0xcbf2_9ce4_8422_2325);
        value.hash(&mut h);
        h.finish() % P
    }

    fn update<T: Hash>(&mut self, value: T, weight: i64) {
        let x = Self::key(value);
        let x2 = mulmod(x, x);
        let x3 = mulmod(x2, x);
        let width = u64::from(self.width);
        for (row, h) in self.hashes.iter().enumerate() {
            let bucket = addmod(mulmod(h[0], x), h[1]) % width;
            let poly = addmod(
                addmod(mulmod(h[2], x3), mulmod(h[3], x2)),
                addmod(mulmod(h[4], x), h[5]),
            );
            let sign = if poly & 1 == 0 { weight } else { -weight };
            self.counters[row * self.width as usize + bucket as usize] += sign;
        }
    }

    /// Take rows back out (each value's count drops by one).
    pub fn retract(&mut self, values: &dyn Array) -> Result<()> {
        for_each_hashed(
            values,
            &mut Weighted {
                ams: self,
                weight: -1,
            },
        )
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if (self.width, self.depth, self.seed) != (other.width, other.depth, other.seed) {
            return Err(brook_err!(
                InvalidParameter,
                "AMS sketches combine only with the same width, depth and seed"
            ));
        }
        Ok(())
    }

    fn median_of_rows(&self, row_value: impl Fn(usize) -> f64) -> f64 {
        let mut rows: Vec<f64> = (0..self.depth as usize).map(row_value).collect();
        rows.sort_by(f64::total_cmp);
        let mid = rows.len() / 2;
        if rows.len() % 2 == 1 {
            rows[mid]
        } else {
            (rows[mid - 1] + rows[mid]) / 2.0
        }
    }

    fn row(&self, row: usize) -> &[i64] {
        let w = self.width as usize;
        &self.counters[row * w..(row + 1) * w]
    }

    /// Estimated F2 (Σ count²) with its interval at [`Ams::confidence`].
    pub fn f2(&self) -> Estimate {
        let value =
            self.median_of_rows(|r| self.row(r).iter().map(|c| (*c as f64) * (*c as f64)).sum());
        let e = self.relative_error();
        Estimate {
            value,
            lower: value / (1.0 + e),
            upper: value / (1.0 - e).max(f64::MIN_POSITIVE),
        }
    }

    /// Estimated inner product of the two frequency vectors (the size of the equi-join of
    /// the two streams on the sketched value). Its error is `relative_error · √(F2·F2')`.
    pub fn inner_product(&self, other: &Self) -> Result<Estimate> {
        self.check_compatible(other)?;
        let value = self.median_of_rows(|r| {
            self.row(r)
                .iter()
                .zip(other.row(r))
                .map(|(a, b)| (*a as f64) * (*b as f64))
                .sum()
        });
        let slack = self.relative_error() * (self.f2().value * other.f2().value).sqrt();
        Ok(Estimate {
            value,
            lower: value - slack,
            upper: value + slack,
        })
    }
}

impl Synopsis for Ams {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        for_each_hashed(
            values,
            &mut Weighted {
                ams: self,
                weight: 1,
            },
        )
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (a, b) in self.counters.iter_mut().zip(&other.counters) {
            *a += *b;
        }
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(21 + self.counters.len() * 8);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.width.to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
        out.extend_from_slice(&self.seed.to_le_bytes());
        for c in &self.counters {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = || brook_err!(InvalidBinary, "not a valid AMS sketch");
        if bytes.len() < 21 || &bytes[..4] != MAGIC || bytes[4] != VERSION {
            return Err(bad());
        }
        let word = |at: usize, n: usize| -> u64 {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&bytes[at..at + n]);
            u64::from_le_bytes(b)
        };
        let (width, depth, seed) = (word(5, 4) as u32, word(9, 4) as u32, word(13, 8));
        let mut ams = Ams::new(width, depth, seed).map_err(|_| bad())?;
        let body = &bytes[21..];
        if body.len() != ams.counters.len() * 8 {
            return Err(bad());
        }
        for (c, chunk) in ams.counters.iter_mut().zip(body.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *c = i64::from_le_bytes(b);
        }
        Ok(ams)
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.counters.len() * 8 + self.hashes.len() * 48
    }
}

/// Adds each value with a weight (+1 insert, -1 retraction).
struct Weighted<'a> {
    ams: &'a mut Ams,
    weight: i64,
}

impl HashedValues for Weighted<'_> {
    fn value<T: Hash>(&mut self, v: T) {
        self.ams.update(v, self.weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{allowed_failures, check_merge, check_round_trip, trials, Data};
    use datafusion::arrow::array::Int64Array;
    use std::collections::HashMap;

    fn exact_f2(values: &[i64]) -> f64 {
        let mut counts: HashMap<i64, f64> = HashMap::new();
        for v in values {
            *counts.entry(*v).or_default() += 1.0;
        }
        counts.values().map(|c| c * c).sum()
    }

    #[test]
    fn f2_within_bound_at_its_confidence() {
        for data in [Data::Uniform, Data::Zipf] {
            let mut misses = 0;
            let runs = trials(data, 200, 5000);
            for (seed, values) in &runs {
                let mut s = Ams::for_error(0.2, Confidence::new(0.9).unwrap(), *seed).unwrap();
                s.add(&Int64Array::from(values.clone())).unwrap();
                let truth = exact_f2(values);
                if (s.f2().value - truth).abs() > s.relative_error() * truth {
                    misses += 1;
                }
            }
            let sketch = Ams::for_error(0.2, Confidence::new(0.9).unwrap(), 0).unwrap();
            assert!(sketch.confidence() >= 0.9);
            assert!(
                misses <= allowed_failures(1.0 - sketch.confidence(), runs.len()),
                "{data:?}: {misses} misses"
            );
        }
    }

    #[test]
    fn deletions_cancel_and_inner_product_estimates_join_size() {
        let mut a = Ams::new(2000, 7, 42).unwrap();
        let mut b = Ams::new(2000, 7, 42).unwrap();
        a.add(&Int64Array::from_iter_values(0..1000)).unwrap();
        a.add(&Int64Array::from_iter_values(0..10)).unwrap();
        a.retract(&Int64Array::from_iter_values(0..10)).unwrap();
        let mut fresh = Ams::new(2000, 7, 42).unwrap();
        fresh.add(&Int64Array::from_iter_values(0..1000)).unwrap();
        assert_eq!(a, fresh);
        b.add(&Int64Array::from_iter_values(500..1500)).unwrap();
        let join = a.inner_product(&b).unwrap();
        assert!(join.covers(500.0), "{join:?}");
        let other = Ams::new(2000, 7, 43).unwrap();
        assert_eq!(a.inner_product(&other).unwrap_err().sqlstate(), "22023");
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        let value = |s: &Ams| s.f2().value;
        check_merge(|| Ams::new(64, 5, 7).unwrap(), value);
        check_round_trip(|| Ams::new(64, 5, 7).unwrap(), value);
        assert_eq!(Ams::from_bytes(b"BRAM").unwrap_err().sqlstate(), "22P03");
    }
}
