//! KLL quantiles sketch (DataSketches `KllSketch` over doubles).
//!
//! Rank error is additive: the true rank of a returned quantile lies within `ε` of the asked
//! rank, `ε ≈ 2.296 / k^0.9723` at 99% confidence (DataSketches' figure; 1.33% at the default
//! `k = 200`). Other confidences scale `ε` by the ratio of normal quantiles.

use crate::values::as_f64;
use crate::{bytes_error, check_error, sketch_error, Confidence, Quantiles, Synopsis};
use brook_common::Result;
use datafusion::arrow::array::Array;
use datasketches::common::SearchCriteria;
use datasketches::kll::{KllFloat, KllSketch};

/// Default `k`, as DataSketches'.
pub const DEFAULT_K: u16 = 200;
/// Smallest and largest `k` DataSketches accepts.
pub const K_RANGE: (u16, u16) = (8, 65535);
/// The confidence DataSketches' `ε` formula is stated at.
const EPS_CONFIDENCE: f64 = 0.99;

/// A quantiles sketch of doubles.
#[derive(Debug, Clone)]
pub struct Kll {
    sketch: KllSketch<KllFloat<f64>>,
}

fn eps99(k: f64) -> f64 {
    2.296 / k.powf(0.9723)
}

fn eps_scale(confidence: Confidence) -> f64 {
    confidence.z() / Confidence(EPS_CONFIDENCE).z()
}

impl Kll {
    /// A sketch with accuracy parameter `k`.
    pub fn new(k: u16) -> Result<Self> {
        let sketch = KllSketch::new(k).map_err(|e| sketch_error("kll", e))?;
        Ok(Kll { sketch })
    }

    /// `k` such that the rank error stays within `error` at `confidence`.
    pub fn k_for(error: f64, confidence: Confidence) -> Result<u16> {
        let error = check_error(error)?;
        let target = error / eps_scale(confidence);
        let k = (2.296 / target).powf(1.0 / 0.9723).ceil();
        Ok(k.clamp(f64::from(K_RANGE.0), f64::from(K_RANGE.1)) as u16)
    }

    /// The normalized rank error at `confidence`.
    pub fn rank_error(&self, confidence: Confidence) -> f64 {
        eps99(f64::from(self.sketch.min_k())) * eps_scale(confidence)
    }
}

impl Synopsis for Kll {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        for v in as_f64(values)?.iter().flatten() {
            // NaN has no rank; SQL's percentile functions ignore it as well.
            if let Ok(v) = KllFloat::<f64>::new(v) {
                self.sketch.update(v);
            }
        }
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        self.sketch
            .merge(&other.sketch)
            .map_err(|e| sketch_error("kll", e))
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.sketch.serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let sketch = KllSketch::deserialize(bytes).map_err(|e| bytes_error("kll", e))?;
        Ok(Kll { sketch })
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.sketch.num_retained() * std::mem::size_of::<f64>()
    }
}

impl Quantiles for Kll {
    fn count(&self) -> u64 {
        self.sketch.n()
    }

    fn quantile(&self, rank: f64) -> Option<f64> {
        let q = self
            .sketch
            .quantile(rank, SearchCriteria::Inclusive)
            .ok()??;
        Some(q.into_inner())
    }

    fn rank(&self, value: f64) -> Option<f64> {
        let v = KllFloat::<f64>::new(value).ok()?;
        self.sketch.rank(&v, SearchCriteria::Inclusive)
    }

    fn rank_bounds(&self, rank: f64, confidence: Confidence) -> Option<(f64, f64)> {
        if !self.sketch.is_estimation_mode() {
            return Some((rank, rank));
        }
        let eps = self.rank_error(confidence);
        Some((rank - eps, rank + eps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_merge_within, check_quantile_bounds, check_round_trip, Data};

    #[test]
    fn bounds_hold_at_their_confidence() {
        for data in [Data::Uniform, Data::Zipf] {
            check_quantile_bounds(data, || Kll::new(100).unwrap(), true);
        }
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        // Compared in rank space: a randomized merge moves ranks by at most its rank error,
        // but a quantile of discrete (Zipf) values can jump to the neighbouring value.
        let rank = |s: &Kll| s.rank(20.0).unwrap_or(f64::NAN);
        check_merge_within(|| Kll::new(200).unwrap(), rank, 0.05);
        let value = |s: &Kll| s.quantile(0.5).unwrap_or(f64::NAN);
        check_round_trip(|| Kll::new(200).unwrap(), value);
    }

    #[test]
    fn sizing_follows_the_error() {
        let k = Kll::k_for(0.0133, Confidence(0.99)).unwrap();
        assert!((195..=205).contains(&k), "{k}");
        let k95 = Kll::k_for(0.01, Confidence::default()).unwrap();
        assert!(eps99(f64::from(k95)) * eps_scale(Confidence::default()) <= 0.01);
    }
}
