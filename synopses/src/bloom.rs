//! Bloom filter (DataSketches `BloomFilter`): set membership with no false negatives and a
//! false-positive probability fixed by its size.

use crate::values::{for_each_hashed, HashedValues};
use crate::{bytes_error, check_error, sketch_error, Synopsis};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::Array;
use datasketches::bloom::{BloomFilter, BloomFilterBuilder};

/// Distinct values a filter is sized for when not told.
pub const DEFAULT_MAX_ITEMS: i64 = 100_000;
/// False-positive probability a filter is sized for when not told.
pub const DEFAULT_FPP: f64 = 0.01;

/// A Bloom filter.
#[derive(Debug, Clone)]
pub struct Bloom {
    filter: BloomFilter,
}

impl Bloom {
    /// A filter sized for `max_items` distinct items at false-positive probability `fpp`.
    pub fn for_items(max_items: u64, fpp: f64) -> Result<Self> {
        let fpp = check_error(fpp)?;
        let filter = BloomFilterBuilder::with_accuracy(max_items, fpp)
            .build()
            .map_err(|e| sketch_error("bloom", e))?;
        Ok(Bloom { filter })
    }

    /// Whether the first value of `item` (a one-row array) may have been added: `false` is
    /// certain, `true` is wrong with probability [`Bloom::false_positive_probability`].
    pub fn contains(&self, item: &dyn Array) -> Result<bool> {
        let mut probe = Probe {
            filter: &self.filter,
            found: None,
        };
        for_each_hashed(item, &mut probe)?;
        Ok(probe.found.unwrap_or(false))
    }

    /// Current false-positive probability (from the fraction of bits set).
    pub fn false_positive_probability(&self) -> f64 {
        self.filter.estimated_fpp()
    }
}

impl Synopsis for Bloom {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        for_each_hashed(values, &mut self.filter)
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        self.filter
            .union(&other.filter)
            .map_err(|e| brook_err!(InvalidParameter, "bloom filters differ in size: {e}"))
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.filter.serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let filter = BloomFilter::deserialize(bytes).map_err(|e| bytes_error("bloom", e))?;
        Ok(Bloom { filter })
    }

    fn memory_bytes(&self) -> usize {
        self.filter.estimated_size()
    }
}

impl HashedValues for BloomFilter {
    fn value<T: std::hash::Hash>(&mut self, v: T) {
        self.insert(v)
    }
}

/// Looks the first value up.
struct Probe<'a> {
    filter: &'a BloomFilter,
    found: Option<bool>,
}

impl HashedValues for Probe<'_> {
    fn value<T: std::hash::Hash>(&mut self, v: T) {
        if self.found.is_none() {
            self.found = Some(self.filter.contains(&v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_merge, check_round_trip, trials, Data};
    use datafusion::arrow::array::Int64Array;

    #[test]
    fn no_false_negatives_and_false_positives_near_the_target() {
        let mut false_positives = 0usize;
        let mut probes = 0usize;
        for (seed, values) in trials(Data::Uniform, 200, 1000) {
            let mut f = Bloom::for_items(1000, 0.01).unwrap();
            f.add(&Int64Array::from(values.clone())).unwrap();
            for v in &values {
                assert!(
                    f.contains(&Int64Array::from(vec![*v])).unwrap(),
                    "seed {seed}"
                );
            }
            // Values the generator never produces (it draws from 0..domain).
            for v in 0..50 {
                probes += 1;
                if f.contains(&Int64Array::from(vec![-1 - v])).unwrap() {
                    false_positives += 1;
                }
            }
        }
        let rate = false_positives as f64 / probes as f64;
        assert!(rate < 0.02, "false-positive rate {rate}");
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        let value = |s: &Bloom| s.false_positive_probability();
        check_merge(|| Bloom::for_items(10_000, 0.01).unwrap(), value);
        check_round_trip(|| Bloom::for_items(10_000, 0.01).unwrap(), value);
    }
}
