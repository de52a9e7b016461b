//! REQ relative-error quantiles sketch (DataSketches `ReqSketch` over doubles, high-rank
//! accuracy): the rank error shrinks towards rank 1, so p99 and p99.9 are far tighter than
//! with KLL of the same size. Bounds come from the sketch itself.

use crate::values::as_f64;
use crate::{bytes_error, check_error, sketch_error, Confidence, Quantiles, Synopsis};
use brook_common::Result;
use datafusion::arrow::array::Array;
use datasketches::common::SearchCriteria;
use datasketches::req::{RankAccuracy, ReqFloat, ReqSketch};

/// Default `k` (about 1% relative rank error at 95% confidence), as DataSketches'.
pub const DEFAULT_K: u16 = 12;
/// Smallest and largest (even) `k` DataSketches accepts.
pub const K_RANGE: (u16, u16) = (4, 1024);

/// A relative-error quantiles sketch of doubles.
#[derive(Debug, Clone)]
pub struct Req {
    sketch: ReqSketch<ReqFloat<f64>>,
}

impl Req {
    /// A sketch with section size `k` (even).
    pub fn new(k: u16) -> Result<Self> {
        let sketch =
            ReqSketch::new(k, RankAccuracy::HighRank).map_err(|e| sketch_error("req", e))?;
        Ok(Req { sketch })
    }

    /// `k` such that the relative rank error stays within `error` at `confidence`: the error
    /// falls as `1/k` from DataSketches' 1% at `k = 12` and 95%.
    pub fn k_for(error: f64, confidence: Confidence) -> Result<u16> {
        let error = check_error(error)?;
        let k = (f64::from(DEFAULT_K) * 0.01 / error * confidence.z() / Confidence::default().z())
            .ceil() as u16;
        Ok((k + k % 2).clamp(K_RANGE.0, K_RANGE.1))
    }
}

impl Synopsis for Req {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        for v in as_f64(values)?.iter().flatten() {
            if let Ok(v) = ReqFloat::<f64>::new(v) {
                self.sketch.update(v);
            }
        }
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        self.sketch
            .merge(&other.sketch)
            .map_err(|e| sketch_error("req", e))
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.sketch.serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let sketch = ReqSketch::deserialize(bytes).map_err(|e| bytes_error("req", e))?;
        Ok(Req { sketch })
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.sketch.num_retained() as usize * std::mem::size_of::<f64>()
    }
}

impl Quantiles for Req {
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
        let v = ReqFloat::<f64>::new(value).ok()?;
        self.sketch.rank(&v, SearchCriteria::Inclusive)
    }

    fn rank_bounds(&self, rank: f64, confidence: Confidence) -> Option<(f64, f64)> {
        let sd = confidence.std_devs();
        Some((
            self.sketch.rank_lower_bound(rank, sd),
            self.sketch.rank_upper_bound(rank, sd),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_merge_within, check_quantile_bounds, check_round_trip, Data};

    #[test]
    fn bounds_hold_at_their_confidence() {
        for data in [Data::Uniform, Data::Zipf] {
            check_quantile_bounds(data, || Req::new(12).unwrap(), true);
        }
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        // Compared in rank space (see the KLL test).
        let rank = |s: &Req| s.rank(1000.0).unwrap_or(f64::NAN);
        check_merge_within(|| Req::new(12).unwrap(), rank, 0.05);
        let value = |s: &Req| s.quantile(0.99).unwrap_or(f64::NAN);
        check_round_trip(|| Req::new(12).unwrap(), value);
        assert_eq!(Req::k_for(0.01, Confidence::default()).unwrap(), 12);
    }
}
