//! Chain sample: `k` values drawn uniformly from the last `n` values of a stream
//! (Babcock, Datar & Motwani, "Sampling from a moving window over streaming data", 2002).
//!
//! Written here: no sampling crate keeps a sample of a sliding window. Each of the `k`
//! chains is one draw: value `i` (counting from 0) becomes the chain's sample with
//! probability `1 / min(i + 1, n)`; when it does, the index of its successor is drawn
//! uniformly from `i + 1 ..= i + n`, and when that value arrives it joins the chain (with its
//! own successor drawn the same way). When the sample leaves the window, the next value of
//! the chain — which has arrived by then and is inside the window — takes its place. So at
//! every moment each chain holds a uniform draw of the window's values, in O(1) expected
//! memory per chain; the `k` chains are independent, a sample *with replacement*.
//!
//! Selections and successors are drawn as skips (how many values pass until the next one),
//! so a batch costs O(k + values kept), not O(k × rows).
//!
//! A chain sample merges only with an empty one: which values are the last `n` of two
//! streams together depends on how they interleave, which neither sample knows.
//!
//! Serialized form (Brook's own): magic `BRCH`, version byte, `k`, `n` and the count seen as
//! little-endian u64, then per chain its next selection index, its successor index
//! (`u64::MAX`: none) and its length, then every chain's values in chain order as an Arrow
//! IPC stream of one column, preceded by their indices.

use crate::reservoir::{read_column, sampled_rows, write_column};
use crate::Synopsis;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::DataType;
use datafusion::scalar::ScalarValue;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// First bytes of a serialized chain sample.
pub const MAGIC: &[u8; 4] = b"BRCH";
const VERSION: u8 = 1;
/// Largest `k` and `n` accepted.
pub const MAX_SIZE: u64 = 1 << 24;
/// Largest window accepted.
pub const MAX_WINDOW: u64 = 1 << 40;

/// One draw from the window.
#[derive(Debug, Clone, Default)]
struct Chain {
    /// The sample (front) and the values that replace it in turn: (index, value).
    values: VecDeque<(u64, ScalarValue)>,
    /// Index of the next value selected outright (it starts a new chain).
    next_select: u64,
    /// Index of the successor of the chain's last value (`u64::MAX`: none yet).
    next_link: u64,
}

/// `k` independent uniform draws from the last `n` non-null values.
#[derive(Debug, Clone)]
pub struct ChainSample {
    k: usize,
    window: u64,
    /// Non-null values offered so far.
    seen: u64,
    chains: Vec<Chain>,
    data_type: DataType,
    rng: StdRng,
}

impl ChainSample {
    /// An empty sample of `k` draws over the last `window` values of `data_type`, seeded
    /// from the OS.
    pub fn new(k: usize, window: u64, data_type: DataType) -> Result<Self> {
        Self::with_rng(k, window, data_type, StdRng::from_os_rng())
    }

    /// As [`ChainSample::new`] with a fixed seed (reproducible samples, for tests).
    pub fn seeded(k: usize, window: u64, data_type: DataType, seed: u64) -> Result<Self> {
        Self::with_rng(k, window, data_type, StdRng::seed_from_u64(seed))
    }

    fn with_rng(k: usize, window: u64, data_type: DataType, rng: StdRng) -> Result<Self> {
        if k == 0 || k as u64 > MAX_SIZE {
            return Err(brook_err!(
                InvalidParameter,
                "sample size must be between 1 and {MAX_SIZE}, got {k}"
            ));
        }
        if window == 0 || window > MAX_WINDOW {
            return Err(brook_err!(
                InvalidParameter,
                "a sample's window must be between 1 and {MAX_WINDOW} rows, got {window}"
            ));
        }
        Ok(ChainSample {
            k,
            window,
            seen: 0,
            // The first value is always selected (probability 1 / 1).
            chains: vec![
                Chain {
                    values: VecDeque::new(),
                    next_select: 0,
                    next_link: u64::MAX,
                };
                k
            ],
            data_type,
            rng,
        })
    }

    /// Values offered so far (nulls excluded).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Values in the window now: the last `window` of those seen.
    pub fn in_window(&self) -> u64 {
        self.seen.min(self.window)
    }

    /// The window size in values.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Type of the sampled values.
    pub fn data_type(&self) -> DataType {
        self.data_type.clone()
    }

    /// The sample: one value per chain (none before the first value), with replacement.
    pub fn items(&self) -> Vec<ScalarValue> {
        self.chains
            .iter()
            .filter_map(|c| c.values.front().map(|(_, v)| v.clone()))
            .collect()
    }

    /// The sample as one Arrow array.
    pub fn to_array(&self) -> Result<ArrayRef> {
        let items = self.items();
        if items.is_empty() {
            return Ok(datafusion::arrow::array::new_empty_array(&self.data_type));
        }
        Ok(ScalarValue::iter_to_array(items)?)
    }

    /// A uniform draw in `(0, 1)`.
    fn unit(&mut self) -> f64 {
        self.rng.random_range(f64::EPSILON..1.0)
    }

    /// Index of the next value selected after the one at `after` (`None`: before the
    /// first). Value `t` is selected with probability `1 / min(t + 1, n)`, so no value in
    /// `after + 1 ..= b` (all `b < n`) is selected with probability `(after + 1) / (b + 1)`;
    /// from `n` on the gaps are geometric with `p = 1 / n`.
    fn draw_select(&mut self, after: u64) -> u64 {
        let n = self.window;
        let first = after + 1;
        if first < n {
            let b = (first as f64 / self.unit()).floor();
            if b < n as f64 {
                return (b as u64).max(first);
            }
        }
        first.max(n) + self.draw_gap()
    }

    /// How many values pass before one is selected with probability `1 / n` each.
    fn draw_gap(&mut self) -> u64 {
        if self.window == 1 {
            return 0;
        }
        let p = 1.0 / self.window as f64;
        let gap = (self.unit().ln() / (1.0 - p).ln()).floor();
        // Saturating: a gap beyond u64 is "never".
        if gap.is_finite() && gap >= 0.0 {
            gap as u64
        } else {
            0
        }
    }

    /// Index of the successor of the value at `at`: uniform in `at + 1 ..= at + n`.
    fn draw_link(&mut self, at: u64) -> u64 {
        at.saturating_add(self.rng.random_range(1..=self.window))
    }
}

impl Synopsis for ChainSample {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        let valid = sampled_rows(values, &self.data_type)?;
        let start = self.seen;
        let end = start + valid.len() as u64;
        let mut chains = std::mem::take(&mut self.chains);
        for chain in &mut chains {
            // Visit only the values that select or link: the others leave this chain alone.
            loop {
                let at = chain.next_select.min(chain.next_link);
                if at >= end {
                    break;
                }
                let value = ScalarValue::try_from_array(values, valid[(at - start) as usize])?;
                if at == chain.next_select {
                    chain.values.clear();
                    chain.next_select = self.draw_select(at);
                }
                chain.values.push_back((at, value));
                chain.next_link = self.draw_link(at);
            }
            // A sample that left the window gives way to its successor, which has arrived
            // (it is at most n after it) and is inside the window.
            let oldest = end.saturating_sub(self.window);
            while chain.values.len() > 1 && chain.values.front().is_some_and(|(i, _)| *i < oldest) {
                chain.values.pop_front();
            }
        }
        self.chains = chains;
        self.seen = end;
        Ok(())
    }

    /// Only with an empty sample (nothing to interleave with).
    fn merge(&mut self, other: &Self) -> Result<()> {
        if other.seen == 0 && other.window == self.window && other.k == self.k {
            return Ok(());
        }
        if self.seen == 0 && other.window == self.window && other.k == self.k {
            let rng = self.rng.clone();
            *self = other.clone();
            self.rng = rng;
            return Ok(());
        }
        Err(brook_err!(
            Unsupported,
            "merging samples of the last n rows (which rows are last depends on how the two \
             streams interleave)"
        ))
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        for v in [self.k as u64, self.window, self.seen] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut items = Vec::new();
        for c in &self.chains {
            for v in [c.next_select, c.next_link, c.values.len() as u64] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for (i, v) in &c.values {
                out.extend_from_slice(&i.to_le_bytes());
                items.push(v.clone());
            }
        }
        let column = if items.is_empty() {
            Ok(datafusion::arrow::array::new_empty_array(&self.data_type))
        } else {
            ScalarValue::iter_to_array(items)
        };
        if let Ok(column) = column {
            write_column(&mut out, &column);
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |why: &str| brook_err!(InvalidBinary, "not a valid chain sample: {why}");
        if bytes.len() < 29 || &bytes[..4] != MAGIC || bytes[4] != VERSION {
            return Err(bad("wrong header"));
        }
        let mut at = 5;
        let mut next = || -> Result<u64> {
            let word = bytes.get(at..at + 8).ok_or_else(|| bad("truncated"))?;
            at += 8;
            let mut b = [0u8; 8];
            b.copy_from_slice(word);
            Ok(u64::from_le_bytes(b))
        };
        let (k, window, seen) = (next()?, next()?, next()?);
        if k == 0 || k > MAX_SIZE {
            return Err(bad("bad size"));
        }
        let mut shape = Vec::with_capacity(k as usize);
        let mut total = 0u64;
        for _ in 0..k {
            let (select, link, len) = (next()?, next()?, next()?);
            let indices = (0..len.min(seen))
                .map(|_| next())
                .collect::<Result<Vec<_>>>()?;
            if indices.len() as u64 != len || indices.iter().any(|i| *i >= seen) {
                return Err(bad("chain beyond the values seen"));
            }
            total += len;
            shape.push((select, link, indices));
        }
        let column = read_column(&bytes[at..]).map_err(|e| bad(&e))?;
        if column.len() as u64 != total {
            return Err(bad("value count does not match the chains"));
        }
        let mut s = ChainSample::new(k as usize, window, column.data_type().clone())?;
        let mut row = 0;
        for (chain, (select, link, indices)) in s.chains.iter_mut().zip(shape) {
            chain.next_select = select;
            chain.next_link = link;
            for i in indices {
                chain
                    .values
                    .push_back((i, ScalarValue::try_from_array(&column, row)?));
                row += 1;
            }
        }
        s.seen = seen;
        Ok(s)
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .chains
                .iter()
                .map(|c| {
                    std::mem::size_of::<Chain>()
                        + c.values.iter().map(|(_, v)| 8 + v.size()).sum::<usize>()
                })
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    /// How often each value of the window (the last `n` of `0..rows`) is drawn, over 400
    /// seeded runs of 10 chains fed in batches of `batch` rows.
    fn draw_counts(rows: i64, n: u64, batch: i64) -> Vec<u64> {
        let first = (rows - n as i64).max(0);
        let mut counts = vec![0u64; (rows - first) as usize];
        for seed in 0..400u64 {
            let mut s = ChainSample::seeded(10, n, DataType::Int64, seed).unwrap();
            for start in (0..rows).step_by(batch as usize) {
                let end = (start + batch).min(rows);
                s.add(&Int64Array::from_iter_values(start..end)).unwrap();
            }
            let items = s.items();
            assert_eq!(items.len(), 10);
            for v in items {
                let ScalarValue::Int64(Some(v)) = v else {
                    panic!("not an int64 draw")
                };
                assert!(v >= first, "{v} left the window (first {first})");
                counts[(v - first) as usize] += 1;
            }
        }
        counts
    }

    /// Chi-square of 4,000 draws over 100 values against uniform (40 each; 99 degrees of
    /// freedom: the 99.9% critical value is 148.2).
    fn chi_square(counts: &[u64]) -> f64 {
        assert_eq!(counts.len(), 100);
        let expected = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
        counts
            .iter()
            .map(|c| (*c as f64 - expected).powi(2) / expected)
            .sum()
    }

    #[test]
    fn each_draw_is_uniform_over_the_window_whatever_the_batches() {
        for batch in [1, 7, 100, 5000] {
            let chi = chi_square(&draw_counts(5000, 100, batch));
            assert!(chi < 148.2, "batch {batch}: chi-square {chi}");
        }
    }

    #[test]
    fn before_the_window_fills_it_samples_everything_seen() {
        let chi = chi_square(&draw_counts(100, 1000, 13));
        assert!(chi < 148.2, "chi-square {chi}");
    }

    #[test]
    fn memory_stays_small_on_a_long_stream() {
        let mut s = ChainSample::seeded(50, 1000, DataType::Int64, 7).unwrap();
        for start in (0..1_000_000i64).step_by(4096) {
            s.add(&Int64Array::from_iter_values(start..start + 4096))
                .unwrap();
        }
        let held: usize = s.chains.iter().map(|c| c.values.len()).sum();
        // About (1 + e − 1) values per chain in expectation; far below the window's 1,000.
        assert!(held < 50 * 8, "{held} values held by 50 chains");
        assert_eq!(s.in_window(), 1000);
    }

    #[test]
    fn nulls_are_not_values_and_a_window_of_one_is_the_last_value() {
        let mut s = ChainSample::seeded(3, 1, DataType::Int64, 1).unwrap();
        s.add(&Int64Array::from(vec![Some(1), Some(2), None]))
            .unwrap();
        assert_eq!(s.items(), vec![ScalarValue::Int64(Some(2)); 3]);
        assert_eq!(s.seen(), 2);
    }

    #[test]
    fn bytes_round_trip_and_bad_input_is_named() {
        let mut s = ChainSample::seeded(4, 10, DataType::Int64, 3).unwrap();
        s.add(&Int64Array::from_iter_values(0..25)).unwrap();
        let mut back = ChainSample::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(back.items(), s.items());
        assert_eq!(back.seen(), 25);
        // The restored sample goes on sampling the window.
        back.add(&Int64Array::from_iter_values(25..100)).unwrap();
        for v in back.items() {
            assert!(matches!(v, ScalarValue::Int64(Some(x)) if x >= 90));
        }
        let cases = [
            ("garbage", ChainSample::from_bytes(b"nope").map(|_| ())),
            ("merge", s.clone().merge(&s).map(|_| ())),
            (
                "wrong type",
                s.add(&datafusion::arrow::array::StringArray::from(vec!["x"])),
            ),
            (
                "no window",
                ChainSample::new(1, 0, DataType::Int64).map(|_| ()),
            ),
        ];
        let states: Vec<(&str, String)> = cases
            .into_iter()
            .map(|(name, r)| (name, r.unwrap_err().sqlstate().to_string()))
            .collect();
        assert_eq!(
            states,
            [
                ("garbage", "22P03".to_string()),
                ("merge", "0A000".to_string()),
                ("wrong type", "42804".to_string()),
                ("no window", "22023".to_string()),
            ]
        );
    }
}
