//! HyperLogLog distinct counting (DataSketches `HllSketch`, HLL_8 registers).
//!
//! Relative standard error about `1.04 / sqrt(2^lg_k)`; mergeable across `lg_k` (a union
//! keeps the smaller one). HLL_8 is the fastest to update; its bytes are read by every
//! DataSketches library.

use crate::values::{for_each_hashed, HashedValues};
use crate::{bytes_error, check_error, sketch_error, Confidence, Estimate, Synopsis};
use brook_common::Result;
use datafusion::arrow::array::Array;
use datasketches::hll::{HllSketch, HllType, HllUnion};

/// Smallest and largest `lg_k` DataSketches accepts.
pub const LG_K_RANGE: (u8, u8) = (4, 21);
/// Default `lg_k` (4,096 registers, about 1.6% standard error), as DataSketches'.
pub const DEFAULT_LG_K: u8 = 12;

/// A distinct-count sketch.
#[derive(Debug, Clone)]
pub struct Hll {
    sketch: HllSketch,
}

impl Hll {
    /// A sketch with `2^lg_k` registers.
    pub fn new(lg_k: u8) -> Result<Self> {
        let sketch = HllSketch::new(lg_k, HllType::Hll8).map_err(|e| sketch_error("hll", e))?;
        Ok(Hll { sketch })
    }

    /// `lg_k` such that the relative error stays within `error` at `confidence`.
    pub fn lg_k_for(error: f64, confidence: Confidence) -> Result<u8> {
        let error = check_error(error)?;
        let k = (1.04 * confidence.z() / error).powi(2);
        Ok((k.log2().ceil() as u8).clamp(LG_K_RANGE.0, LG_K_RANGE.1))
    }

    /// `lg_k` of this sketch.
    pub fn lg_k(&self) -> u8 {
        self.sketch.lg_config_k()
    }

    /// Estimated distinct count with its bounds.
    pub fn estimate(&self, confidence: Confidence) -> Estimate {
        let sd = confidence.std_devs();
        Estimate {
            value: self.sketch.estimate(),
            lower: self.sketch.lower_bound(sd),
            upper: self.sketch.upper_bound(sd),
        }
    }
}

impl Synopsis for Hll {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        for_each_hashed(values, &mut self.sketch)
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        let lg_k = self.lg_k().max(other.lg_k());
        let mut union = HllUnion::new(lg_k).map_err(|e| sketch_error("hll", e))?;
        union.update(&self.sketch);
        union.update(&other.sketch);
        self.sketch = union.to_sketch(HllType::Hll8);
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.sketch.serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let sketch = HllSketch::deserialize(bytes).map_err(|e| bytes_error("hll", e))?;
        Ok(Hll { sketch })
    }

    fn memory_bytes(&self) -> usize {
        self.sketch.estimated_size()
    }
}

impl HashedValues for HllSketch {
    fn value<T: std::hash::Hash>(&mut self, v: T) {
        self.update(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_distinct_bounds, Data};

    #[test]
    fn sizing_follows_the_error() {
        let c = Confidence::default();
        assert_eq!(Hll::lg_k_for(0.01, c).unwrap(), 16);
        assert_eq!(Hll::lg_k_for(0.05, c).unwrap(), 11);
        assert_eq!(Hll::lg_k_for(0.9, c).unwrap(), LG_K_RANGE.0);
        assert_eq!(Hll::lg_k_for(1.5, c).unwrap_err().sqlstate(), "22023");
    }

    #[test]
    fn bounds_hold_at_their_confidence() {
        for data in [Data::Uniform, Data::Zipf] {
            check_distinct_bounds(data, || Hll::new(10).unwrap(), |s, c| s.estimate(c));
        }
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        // A union's estimate is the composite one (its HIP history is lost), so compare that.
        crate::stats::check_merge(|| Hll::new(10).unwrap(), |s| s.sketch.composite_estimate());
        let value = |s: &Hll| s.estimate(Confidence::default()).value;
        crate::stats::check_round_trip(|| Hll::new(10).unwrap(), value);
    }

    #[test]
    fn garbage_bytes_are_22p03() {
        assert_eq!(Hll::from_bytes(&[1, 2, 3]).unwrap_err().sqlstate(), "22P03");
    }
}
