//! Synopses: compact summaries of streams (sketches, samples) behind one trait.
//!
//! # Layout
//! - [`Synopsis`]: the contract every synopsis implements (add a batch, merge, estimate,
//!   serialize, memory). Implementations arrive with the approximate-answers work; nothing
//!   in the engine depends on them yet.

/// The contract of every synopsis kept by Brook.
///
/// Invariant: `merge(a, b)` summarises exactly the union of what `a` and `b` summarised, so
/// partial synopses built on partitions combine into the synopsis of the whole.
pub trait Synopsis: Send + Sync {
    /// Feed a whole Arrow array of values.
    fn add(&mut self, values: &dyn datafusion::arrow::array::Array) -> brook_common::Result<()>;
    /// Fold another synopsis of the same kind and parameters into this one.
    fn merge(&mut self, other: &Self) -> brook_common::Result<()>
    where
        Self: Sized;
    /// Serialized bytes (the interchange format of the kind, e.g. DataSketches').
    fn to_bytes(&self) -> Vec<u8>;
    /// Bytes of memory held.
    fn memory_bytes(&self) -> usize;
}
