//! Count-min sketch (DataSketches `CountMinSketch`, signed 64-bit counters): the count of
//! any item in bounded memory. With width `w = ⌈e/ε⌉` and depth `d`, an item's estimate never
//! undercounts and overcounts by at most `ε·N` (N = total weight) with probability
//! `1 − e^(−d)`.
//!
//! Counters are signed, so a row can be retracted (weight −1): as long as only rows that were
//! added are retracted — a changelog's guarantee — every counter stays non-negative and the
//! bound holds for the remaining rows. This makes count-min usable over updating inputs.

use crate::values::{for_each_hashed, HashedValues};
use crate::{bytes_error, check_error, sketch_error, Confidence, Estimate, Synopsis};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::Array;
use datasketches::countmin::CountMinSketch;

/// A count-min sketch.
#[derive(Debug, Clone)]
pub struct CountMin {
    sketch: CountMinSketch<i64>,
    /// Rows added minus rows retracted (the sketch's own total adds retractions' weight).
    net: i64,
}

impl CountMin {
    /// A sketch with `num_hashes` rows of `num_buckets` counters.
    pub fn new(num_hashes: u8, num_buckets: u32) -> Result<Self> {
        let sketch = CountMinSketch::new(num_hashes, num_buckets)
            .map_err(|e| sketch_error("count-min", e))?;
        Ok(CountMin { sketch, net: 0 })
    }

    /// A sketch whose overcount stays within `error · N` at `confidence`.
    pub fn for_error(error: f64, confidence: Confidence) -> Result<Self> {
        let error = check_error(error)?;
        let buckets = CountMinSketch::<i64>::suggest_num_buckets(error)
            .map_err(|e| sketch_error("count-min", e))?;
        let hashes = CountMinSketch::<i64>::suggest_num_hashes(confidence.probability())
            .map_err(|e| sketch_error("count-min", e))?;
        Self::new(hashes, buckets)
    }

    /// Its shape: (rows of hashes, counters per row).
    pub fn shape(&self) -> (u8, u32) {
        (self.sketch.num_hashes(), self.sketch.num_buckets())
    }

    /// Probability that an estimate is within its bound: `1 − e^(−depth)`.
    pub fn confidence(&self) -> f64 {
        1.0 - (-f64::from(self.sketch.num_hashes())).exp()
    }

    /// Total weight (rows added minus rows retracted).
    pub fn total_weight(&self) -> i64 {
        self.net
    }

    /// Take rows back out (each value's count drops by one).
    pub fn retract(&mut self, values: &dyn Array) -> Result<()> {
        let mut w = Weighted {
            sketch: &mut self.sketch,
            weight: -1,
            rows: 0,
        };
        for_each_hashed(values, &mut w)?;
        self.net -= w.rows;
        Ok(())
    }

    /// Estimated count of the first value of `item` (a one-row array), with its interval at
    /// [`CountMin::confidence`]. A null item counts zero.
    pub fn count_of(&self, item: &dyn Array) -> Result<Estimate> {
        let mut probe = Probe {
            countmin: self,
            first: None,
        };
        for_each_hashed(item, &mut probe)?;
        Ok(probe.first.unwrap_or_else(|| Estimate::exact(0.0)))
    }

    fn count_of_hashed<T: std::hash::Hash>(&self, item: T) -> Estimate {
        let estimate = self.sketch.estimate(item) as f64;
        // The sketch only overcounts: the truth lies in [estimate − ε·N, estimate]. (The
        // crate's own upper bound adds ε·N on top, following DataSketches Java; the
        // tighter interval is the one the count-min guarantee gives.)
        let slack = self.sketch.relative_error() * self.total_weight().max(0) as f64;
        Estimate {
            value: estimate,
            lower: (estimate - slack).max(0.0),
            upper: estimate,
        }
    }
}

impl Synopsis for CountMin {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        let mut w = Weighted {
            sketch: &mut self.sketch,
            weight: 1,
            rows: 0,
        };
        for_each_hashed(values, &mut w)?;
        let n = w.rows;
        self.net += n;
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        self.sketch
            .merge(&other.sketch)
            .map_err(|e| brook_err!(InvalidParameter, "count-min sketches differ in shape: {e}"))?;
        self.net += other.net;
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.sketch.serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let sketch = CountMinSketch::deserialize(bytes).map_err(|e| bytes_error("count-min", e))?;
        // DataSketches' format keeps only the total weight; sketches read back are taken to
        // have seen no retractions.
        let net = sketch.total_weight();
        Ok(CountMin { sketch, net })
    }

    fn memory_bytes(&self) -> usize {
        self.sketch.estimated_size()
    }
}

/// Adds each value with a weight, counting them.
struct Weighted<'a> {
    sketch: &'a mut CountMinSketch<i64>,
    weight: i64,
    rows: i64,
}

impl HashedValues for Weighted<'_> {
    fn value<T: std::hash::Hash>(&mut self, v: T) {
        self.sketch.update_with_weight(v, self.weight);
        self.rows += 1;
    }
}

/// Estimates the first value's count.
struct Probe<'a> {
    countmin: &'a CountMin,
    first: Option<Estimate>,
}

impl HashedValues for Probe<'_> {
    fn value<T: std::hash::Hash>(&mut self, v: T) {
        if self.first.is_none() {
            self.first = Some(self.countmin.count_of_hashed(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_frequency_bounds, check_merge, check_round_trip, Data};
    use datafusion::arrow::array::Int64Array;

    #[test]
    fn counts_stay_within_the_bound_at_its_confidence() {
        let make = || CountMin::for_error(0.01, Confidence::default()).unwrap();
        let failure_rate = 1.0 - make().confidence();
        assert!(failure_rate <= 0.05);
        for data in [Data::Uniform, Data::Zipf] {
            check_frequency_bounds(
                data,
                make,
                |s, item| {
                    let e = s.count_of(&Int64Array::from(vec![item])).unwrap();
                    (e.value, e.lower, e.upper)
                },
                failure_rate,
            );
        }
    }

    #[test]
    fn retraction_takes_rows_back_out() {
        let mut s = CountMin::new(5, 1000).unwrap();
        s.add(&Int64Array::from(vec![7, 7, 7, 8])).unwrap();
        s.retract(&Int64Array::from(vec![7])).unwrap();
        assert_eq!(s.count_of(&Int64Array::from(vec![7])).unwrap().value, 2.0);
        assert_eq!(s.total_weight(), 3);
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        let value = |s: &CountMin| s.count_of(&Int64Array::from(vec![1])).unwrap().value;
        check_merge(|| CountMin::new(4, 256).unwrap(), value);
        check_round_trip(|| CountMin::new(4, 256).unwrap(), value);
        let other_shape = CountMin::new(4, 256)
            .unwrap()
            .merge(&CountMin::new(3, 256).unwrap());
        assert_eq!(other_shape.unwrap_err().sqlstate(), "22023");
    }
}
