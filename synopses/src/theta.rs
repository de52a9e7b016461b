//! Theta sketches (DataSketches): distinct counts that also support set operations — union,
//! intersection and difference (`A AND NOT B`) — between sketches of different streams.
//! Relative standard error about `1 / sqrt(2^lg_k)`.

use crate::values::{for_each_hashed, HashedValues};
use crate::{bytes_error, check_error, sketch_error, Confidence, Estimate, Synopsis};
use brook_common::Result;
use datafusion::arrow::array::Array;
use datasketches::theta::{
    CompactThetaSketch, ThetaANotB, ThetaIntersection, ThetaSketch, ThetaSketchBuilder,
    ThetaUnionBuilder,
};

/// Smallest and largest `lg_k` DataSketches accepts.
pub const LG_K_RANGE: (u8, u8) = (5, 26);
/// Default `lg_k`, as DataSketches'.
pub const DEFAULT_LG_K: u8 = 12;

/// A theta sketch: an updatable one while data arrives, a compact one after set operations
/// or deserialization (which no longer takes updates directly; adding to it first unions it
/// into a fresh updatable sketch).
#[derive(Debug)]
pub struct Theta {
    lg_k: u8,
    state: State,
}

#[derive(Debug)]
enum State {
    Updatable(ThetaSketch),
    Compact(CompactThetaSketch),
}

/// DataSketches' default hash seed (sketches with other seeds do not combine).
const SEED: u64 = 9001;

impl Theta {
    /// An empty sketch keeping up to `2^lg_k` hashes.
    pub fn new(lg_k: u8) -> Result<Self> {
        let sketch = ThetaSketchBuilder::default()
            .lg_k(lg_k)
            .build()
            .map_err(|e| sketch_error("theta", e))?;
        Ok(Theta {
            lg_k,
            state: State::Updatable(sketch),
        })
    }

    /// `lg_k` such that the relative error stays within `error` at `confidence`.
    pub fn lg_k_for(error: f64, confidence: Confidence) -> Result<u8> {
        let error = check_error(error)?;
        let k = (confidence.z() / error).powi(2);
        Ok((k.log2().ceil() as u8).clamp(LG_K_RANGE.0, LG_K_RANGE.1))
    }

    fn compact(&self) -> CompactThetaSketch {
        match &self.state {
            State::Updatable(s) => s.compact(true),
            State::Compact(c) => c.clone(),
        }
    }

    /// Estimated distinct count with its bounds.
    pub fn estimate(&self, confidence: Confidence) -> Estimate {
        let sd = confidence.std_devs();
        match &self.state {
            State::Updatable(s) => Estimate {
                value: s.estimate(),
                lower: s.lower_bound(sd),
                upper: s.upper_bound(sd),
            },
            State::Compact(c) => Estimate {
                value: c.estimate(),
                lower: c.lower_bound(sd),
                upper: c.upper_bound(sd),
            },
        }
    }

    /// Values in both `self` and `other`.
    pub fn intersect(&self, other: &Self) -> Result<Self> {
        let mut op = ThetaIntersection::with_seed(SEED).map_err(|e| sketch_error("theta", e))?;
        let (a, b) = (self.compact(), other.compact());
        op.update(&a).map_err(|e| sketch_error("theta", e))?;
        op.update(&b).map_err(|e| sketch_error("theta", e))?;
        let result = op.to_sketch(true).unwrap_or_else(|| a.clone());
        Ok(Theta {
            lg_k: self.lg_k.min(other.lg_k),
            state: State::Compact(result),
        })
    }

    /// Values in `self` but not in `other`.
    pub fn difference(&self, other: &Self) -> Result<Self> {
        let op = ThetaANotB::with_seed(SEED).map_err(|e| sketch_error("theta", e))?;
        let (a, b) = (self.compact(), other.compact());
        let result = op
            .compute(&a, &b, true)
            .map_err(|e| sketch_error("theta", e))?;
        Ok(Theta {
            lg_k: self.lg_k,
            state: State::Compact(result),
        })
    }
}

impl Synopsis for Theta {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        match &mut self.state {
            State::Updatable(s) => for_each_hashed(values, s),
            State::Compact(_) => {
                let mut fresh = Theta::new(self.lg_k)?;
                fresh.add(values)?;
                self.merge(&fresh)
            }
        }
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        let lg_k = self.lg_k.max(other.lg_k);
        let mut union = ThetaUnionBuilder::default()
            .lg_k(lg_k)
            .build()
            .map_err(|e| sketch_error("theta", e))?;
        union
            .update(&self.compact())
            .map_err(|e| sketch_error("theta", e))?;
        union
            .update(&other.compact())
            .map_err(|e| sketch_error("theta", e))?;
        self.state = State::Compact(union.to_sketch(true));
        self.lg_k = lg_k;
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.compact().serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let sketch = CompactThetaSketch::deserialize(bytes).map_err(|e| bytes_error("theta", e))?;
        Ok(Theta {
            lg_k: DEFAULT_LG_K,
            state: State::Compact(sketch),
        })
    }

    fn memory_bytes(&self) -> usize {
        match &self.state {
            State::Updatable(s) => s.estimated_size(),
            State::Compact(c) => c.estimated_size(),
        }
    }
}

impl HashedValues for ThetaSketch {
    fn value<T: std::hash::Hash>(&mut self, v: T) {
        self.update(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_distinct_bounds, check_merge_within, check_round_trip, Data};
    use datafusion::arrow::array::Int64Array;

    #[test]
    fn bounds_hold_at_their_confidence() {
        for data in [Data::Uniform, Data::Zipf] {
            check_distinct_bounds(data, || Theta::new(10).unwrap(), |s, c| s.estimate(c));
        }
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        let value = |s: &Theta| s.estimate(Confidence::default()).value;
        // An updatable sketch keeps between k and 2k hashes, a union exactly k: their thetas
        // differ, so the estimates agree within the error (3 / sqrt(k)), not exactly.
        check_merge_within(|| Theta::new(10).unwrap(), value, 0.09);
        check_round_trip(|| Theta::new(10).unwrap(), value);
    }

    #[test]
    fn set_operations() {
        let mut a = Theta::new(12).unwrap();
        a.add(&Int64Array::from_iter_values(0..1000)).unwrap();
        let mut b = Theta::new(12).unwrap();
        b.add(&Int64Array::from_iter_values(500..1200)).unwrap();
        let c = Confidence::default();
        assert_eq!(a.intersect(&b).unwrap().estimate(c).value, 500.0);
        assert_eq!(a.difference(&b).unwrap().estimate(c).value, 500.0);
        // A compact sketch (after a set operation) still takes updates.
        let mut d = a.difference(&b).unwrap();
        d.add(&Int64Array::from_iter_values(2000..2010)).unwrap();
        assert_eq!(d.estimate(c).value, 510.0);
    }
}
