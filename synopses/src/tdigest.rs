//! t-digest quantiles (DataSketches `TDigestMut`, doubles): very accurate at the extreme
//! ranks for its size, but without an a-priori error bound — [`Quantiles::rank_bounds`]
//! answers `None`, and the SQL surface reports no bound for it.

use crate::values::as_f64;
use crate::{bytes_error, sketch_error, Confidence, Quantiles, Synopsis};
use brook_common::Result;
use datafusion::arrow::array::Array;
use datasketches::tdigest::TDigestMut;

/// Default compression `k`, as DataSketches'.
pub const DEFAULT_K: u16 = 200;

/// A t-digest of doubles.
#[derive(Debug, Clone)]
pub struct TDigest {
    digest: TDigestMut,
}

impl TDigest {
    /// A digest with compression `k` (at least 10).
    pub fn new(k: u16) -> Result<Self> {
        let digest = TDigestMut::new(k).map_err(|e| sketch_error("tdigest", e))?;
        Ok(TDigest { digest })
    }
}

impl Synopsis for TDigest {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        // Non-finite values are skipped by the digest itself.
        for v in as_f64(values)?.iter().flatten() {
            self.digest.update(v);
        }
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        self.digest.merge(&other.digest);
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        // Serializing compresses the buffer, which needs `&mut`; the digest is small.
        self.digest.clone().serialize()
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let digest = TDigestMut::deserialize(bytes).map_err(|e| bytes_error("tdigest", e))?;
        Ok(TDigest { digest })
    }

    fn memory_bytes(&self) -> usize {
        self.digest.estimated_size()
    }
}

impl Quantiles for TDigest {
    fn count(&self) -> u64 {
        self.digest.total_weight()
    }

    fn quantile(&self, rank: f64) -> Option<f64> {
        self.digest.clone().freeze().quantile(rank).ok()?
    }

    fn rank(&self, value: f64) -> Option<f64> {
        self.digest.clone().freeze().rank(value).ok()?
    }

    fn rank_bounds(&self, _rank: f64, _confidence: Confidence) -> Option<(f64, f64)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_merge, check_quantile_bounds, check_round_trip, Data};

    #[test]
    fn extreme_ranks_are_accurate() {
        for data in [Data::Uniform, Data::Zipf] {
            check_quantile_bounds(data, || TDigest::new(100).unwrap(), false);
        }
    }

    #[test]
    fn merge_and_bytes_round_trip() {
        let value = |s: &TDigest| s.quantile(0.5).unwrap_or(f64::NAN);
        check_round_trip(|| TDigest::new(100).unwrap(), value);
        // t-digest merges are not bit-identical to one digest of the union; compare counts.
        check_merge(|| TDigest::new(100).unwrap(), |s| s.count() as f64);
    }
}
