//! Synopses: compact summaries of streams (sketches, samples) behind one trait.
//!
//! Every synopsis takes a whole Arrow array at a time, merges with another of the same kind
//! and parameters, serializes to bytes (the DataSketches format where the kind has one, so
//! sketches can be exchanged with the Java, C++ and Python libraries), and states its memory.
//! Estimates come with an error bound at a stated confidence.
//!
//! # Layout
//! - [`Synopsis`]: the contract every synopsis implements; [`Estimate`] (a value with its
//!   bounds) and [`Confidence`] (how sure a bound is).
//! - [`values`]: how Arrow values are hashed, the same way DataSketches Java/C++ hash them.
//! - Distinct counting: [`hll`], [`cpc`], [`theta`] (also set operations).
//! - Quantiles: [`kll`], [`req`], [`tdigest`].
//! - Frequencies: [`frequent`] (heavy hitters / top-k), [`countmin`] (per-item counts).
//! - Membership: [`bloom`].
//! - Written here because no library has them: [`reservoir`] (uniform sample),
//!   [`chain`] (uniform draws from the last n values: chain sampling),
//!   [`ams`] (L2 norm and inner product), [`dft`] (correlated pairs among many series).
//! - [`functions`]: the SQL surface (approximate aggregates, sketch aggregates, functions
//!   over sketch bytes), registered on a DataFusion context.

pub mod ams;
pub mod bloom;
pub mod chain;
pub mod countmin;
pub mod cpc;
pub mod dft;
pub mod frequent;
pub mod functions;
pub mod hll;
pub mod kll;
pub mod req;
pub mod reservoir;
pub mod tdigest;
pub mod theta;
pub mod values;

#[cfg(test)]
mod stats;

use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::Array;
use datasketches::common::NumStdDev;

/// The contract of every synopsis kept by Brook.
///
/// Invariant: `merge(a, b)` summarises exactly the union of what `a` and `b` summarised, so
/// partial synopses built on partitions combine into the synopsis of the whole.
pub trait Synopsis: Send + Sync + Sized {
    /// Feed a whole Arrow array of values; nulls are skipped (as SQL aggregates skip them).
    fn add(&mut self, values: &dyn Array) -> Result<()>;
    /// Fold another synopsis of the same kind and parameters into this one.
    fn merge(&mut self, other: &Self) -> Result<()>;
    /// Serialized bytes (the interchange format of the kind, e.g. DataSketches').
    fn to_bytes(&self) -> Vec<u8>;
    /// Read bytes written by [`Synopsis::to_bytes`] (or by another DataSketches library).
    fn from_bytes(bytes: &[u8]) -> Result<Self>;
    /// Bytes of memory held.
    fn memory_bytes(&self) -> usize;
}

/// What quantile sketches answer (KLL, REQ, t-digest).
pub trait Quantiles {
    /// Number of values summarised.
    fn count(&self) -> u64;
    /// The value at normalized rank `rank` in [0, 1] (inclusive ranks); `None` when empty.
    fn quantile(&self, rank: f64) -> Option<f64>;
    /// The normalized rank of `value` (fraction of values ≤ it); `None` when empty.
    fn rank(&self, value: f64) -> Option<f64>;
    /// Interval of normalized ranks holding the true rank of `quantile(rank)` at
    /// `confidence`; `None` for sketches without an a-priori bound (t-digest).
    fn rank_bounds(&self, rank: f64, confidence: Confidence) -> Option<(f64, f64)>;

    /// The quantile with value bounds: the quantiles at the ends of its rank interval.
    fn quantile_estimate(&self, rank: f64, confidence: Confidence) -> Option<Estimate> {
        let value = self.quantile(rank)?;
        let (lo, hi) = self.rank_bounds(rank, confidence)?;
        Some(Estimate {
            value,
            lower: self.quantile(lo.clamp(0.0, 1.0))?,
            upper: self.quantile(hi.clamp(0.0, 1.0))?,
        })
    }
}

/// An estimate and the interval that holds the true value at the stated confidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// Lower end of the interval.
    pub lower: f64,
    /// Upper end of the interval.
    pub upper: f64,
}

impl Estimate {
    /// An exact answer: both bounds equal the value.
    pub fn exact(value: f64) -> Self {
        Estimate {
            value,
            lower: value,
            upper: value,
        }
    }

    /// Whether `truth` lies in the interval.
    pub fn covers(&self, truth: f64) -> bool {
        self.lower <= truth && truth <= self.upper
    }
}

/// How sure an error bound must be, as a probability in (0, 1).
///
/// The DataSketches bounds come in whole standard deviations of a normal approximation;
/// [`Confidence::std_devs`] picks the smallest count that reaches the probability, so a
/// bound is never reported as surer than it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence(f64);

impl Confidence {
    /// Highest confidence a normal-approximation bound of three standard deviations gives.
    pub const MAX: f64 = 0.9973;

    /// A confidence in (0, [`Confidence::MAX`]]; anything else is 22023.
    pub fn new(p: f64) -> Result<Self> {
        if p > 0.0 && p <= Self::MAX {
            Ok(Confidence(p))
        } else {
            Err(brook_err!(
                InvalidParameter,
                "confidence must be in (0, {}], got {p}",
                Self::MAX
            ))
        }
    }

    /// The probability.
    pub fn probability(self) -> f64 {
        self.0
    }

    /// Standard deviations of a normal bound that reach this confidence.
    pub fn std_devs(self) -> NumStdDev {
        if self.0 <= 0.6827 {
            NumStdDev::One
        } else if self.0 <= 0.9545 {
            NumStdDev::Two
        } else {
            NumStdDev::Three
        }
    }

    /// Two-sided normal quantile for this confidence (`z` with P(|N(0,1)| ≤ z) = p).
    pub fn z(self) -> f64 {
        normal_quantile(0.5 + self.0 / 2.0)
    }
}

impl Default for Confidence {
    /// 95%, the usual default of statistics packages.
    fn default() -> Self {
        Confidence(0.95)
    }
}

/// A relative (or rank) error in (0, 1); anything else is 22023.
pub fn check_error(error: f64) -> Result<f64> {
    if error > 0.0 && error < 1.0 {
        Ok(error)
    } else {
        Err(brook_err!(
            InvalidParameter,
            "error must be in (0, 1), got {error}"
        ))
    }
}

/// A normalized rank in [0, 1]; anything else is 22023.
pub fn check_rank(rank: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&rank) {
        Ok(rank)
    } else {
        Err(brook_err!(
            InvalidParameter,
            "percentile must be between 0 and 1, got {rank}"
        ))
    }
}

/// Map a DataSketches error: bad parameters and unreadable bytes are the caller's fault.
pub(crate) fn sketch_error(context: &str, e: datasketches::error::Error) -> BrookError {
    brook_err!(InvalidParameter, "{context}: {e}")
}

/// Map a DataSketches deserialization error (22P03, as PostgreSQL's bad binary input).
pub(crate) fn bytes_error(kind: &str, e: datasketches::error::Error) -> BrookError {
    brook_err!(InvalidBinary, "not a valid {kind} sketch: {e}")
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9).
///
/// Written here: it is a dozen constants, and no statistics crate is otherwise needed.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((normal_quantile(0.5)).abs() < 1e-9);
        assert!((normal_quantile(0.005) + 2.575_829).abs() < 1e-5);
        assert!((Confidence::default().z() - 1.959_964).abs() < 1e-5);
    }

    #[test]
    fn confidence_maps_to_whole_std_devs() {
        let c = |p| Confidence::new(p).unwrap().std_devs();
        assert_eq!(c(0.5), NumStdDev::One);
        assert_eq!(c(0.95), NumStdDev::Two);
        assert_eq!(c(0.99), NumStdDev::Three);
        assert_eq!(Confidence::new(0.999).unwrap_err().sqlstate(), "22023");
        assert_eq!(check_error(0.0).unwrap_err().sqlstate(), "22023");
    }
}
