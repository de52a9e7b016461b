//! Uniform reservoir sample of `n` values (Li's Algorithm L).
//!
//! Written here: DataSketches' Rust crate has no sampling sketch yet. Algorithm L draws how
//! many values to skip before the next replacement, so a batch costs O(replacements), not
//! O(rows): the hot path touches only the rows it keeps. Every subset of `n` values seen is
//! equally likely to be the sample; merging two reservoirs draws how many values come from
//! each side hypergeometrically, which keeps that property for the union.
//!
//! Serialized form (Brook's own): magic `BRRS`, version byte, capacity and count seen as
//! little-endian u64, then the sampled values as an Arrow IPC stream of one column.

use crate::Synopsis;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::scalar::ScalarValue;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const MAGIC: &[u8; 4] = b"BRRS";
const VERSION: u8 = 1;

/// A uniform sample of at most `capacity` values.
#[derive(Debug, Clone)]
pub struct Reservoir {
    capacity: usize,
    /// Non-null values offered so far.
    seen: u64,
    items: Vec<ScalarValue>,
    data_type: DataType,
    /// Algorithm L state: index (in `seen` order) of the next value to keep, and `W`.
    next: u64,
    w: f64,
    rng: StdRng,
}

impl Reservoir {
    /// An empty reservoir of `capacity` values of `data_type`, seeded from the OS.
    pub fn new(capacity: usize, data_type: DataType) -> Result<Self> {
        Self::with_rng(capacity, data_type, StdRng::from_os_rng())
    }

    /// As [`Reservoir::new`] with a fixed seed (reproducible samples, for tests).
    pub fn seeded(capacity: usize, data_type: DataType, seed: u64) -> Result<Self> {
        Self::with_rng(capacity, data_type, StdRng::seed_from_u64(seed))
    }

    fn with_rng(capacity: usize, data_type: DataType, rng: StdRng) -> Result<Self> {
        if capacity == 0 || capacity > 1 << 24 {
            return Err(brook_err!(
                InvalidParameter,
                "sample size must be between 1 and {}, got {capacity}",
                1 << 24
            ));
        }
        let mut r = Reservoir {
            capacity,
            seen: 0,
            items: Vec::with_capacity(capacity.min(1024)),
            data_type,
            next: capacity as u64,
            w: 1.0,
            rng,
        };
        r.w = r.draw_w();
        // Algorithm L: after the fill, the index of the next kept value is (k − 1) + skip.
        r.next = capacity as u64 - 1 + r.draw_skip();
        Ok(r)
    }

    /// Values offered so far (nulls excluded).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Type of the sampled values.
    pub fn data_type(&self) -> DataType {
        self.data_type.clone()
    }

    /// The sample.
    pub fn items(&self) -> &[ScalarValue] {
        &self.items
    }

    /// The sample as one Arrow array.
    pub fn to_array(&self) -> Result<ArrayRef> {
        if self.items.is_empty() {
            return Ok(datafusion::arrow::array::new_empty_array(&self.data_type));
        }
        Ok(ScalarValue::iter_to_array(self.items.iter().cloned())?)
    }

    /// `U^(1/k)`: the running maximum of the keys Algorithm L tracks.
    fn draw_w(&mut self) -> f64 {
        let u: f64 = self.rng.random_range(f64::EPSILON..1.0);
        self.w * (u.ln() / self.capacity as f64).exp()
    }

    /// How many values pass before the next one enters the reservoir.
    fn draw_skip(&mut self) -> u64 {
        let u: f64 = self.rng.random_range(f64::EPSILON..1.0);
        let skip = (u.ln() / (1.0 - self.w).ln()).floor();
        if skip.is_finite() && skip >= 0.0 {
            (skip as u64).saturating_add(1)
        } else {
            1
        }
    }
}

impl Synopsis for Reservoir {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        let valid = sampled_rows(values, &self.data_type)?;
        let mut pos = 0usize;
        // Fill phase: the first `capacity` values are all kept.
        while self.items.len() < self.capacity && pos < valid.len() {
            self.items
                .push(ScalarValue::try_from_array(values, valid[pos])?);
            self.seen += 1;
            pos += 1;
        }
        // Skip phase: jump straight to the rows that replace a sampled value.
        let end = self.seen + (valid.len() - pos) as u64;
        while self.next < end {
            let row = valid[pos + (self.next - self.seen) as usize];
            let slot = self.rng.random_range(0..self.capacity);
            self.items[slot] = ScalarValue::try_from_array(values, row)?;
            self.w = self.draw_w();
            self.next += self.draw_skip();
        }
        self.seen = end;
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        if other.capacity != self.capacity || other.data_type != self.data_type {
            return Err(brook_err!(
                InvalidParameter,
                "samples of different sizes or types do not merge"
            ));
        }
        let total = self.seen + other.seen;
        if total as usize <= self.capacity {
            self.items.extend(other.items.iter().cloned());
            self.seen = total;
            return Ok(());
        }
        // How many of the merged sample come from each side: hypergeometric, drawn one slot
        // at a time with probability proportional to the values each side has left.
        let (mut left_a, mut left_b) = (self.seen, other.seen);
        let (mut from_a, mut from_b) = (0usize, 0usize);
        for _ in 0..self.capacity {
            if self.rng.random_range(0..left_a + left_b) < left_a {
                from_a += 1;
                left_a -= 1;
            } else {
                from_b += 1;
                left_b -= 1;
            }
        }
        // Each side's sample is a uniform subset of its values; so is any uniform subset of it.
        let mut a = std::mem::take(&mut self.items);
        let mut b = other.items.clone();
        let mut items = partial_shuffle(&mut a, from_a, &mut self.rng);
        items.extend(partial_shuffle(&mut b, from_b, &mut self.rng));
        self.items = items;
        self.seen = total;
        // Continue Algorithm L as if the reservoir had just filled at `total`.
        self.w = 1.0;
        self.w = self.draw_w();
        self.next = total - 1 + self.draw_skip();
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&(self.capacity as u64).to_le_bytes());
        out.extend_from_slice(&self.seen.to_le_bytes());
        if let Ok(items) = self.to_array() {
            write_column(&mut out, &items);
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |why: &str| brook_err!(InvalidBinary, "not a valid sample: {why}");
        if bytes.len() < 21 || &bytes[..4] != MAGIC || bytes[4] != VERSION {
            return Err(bad("wrong header"));
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let capacity = u64_at(5) as usize;
        let seen = u64_at(13);
        let col = read_column(&bytes[21..]).map_err(|e| bad(&e))?;
        let mut r = Reservoir::new(capacity, col.data_type().clone())?;
        for i in 0..col.len() {
            r.items.push(ScalarValue::try_from_array(&col, i)?);
        }
        if r.items.len() > capacity || (r.items.len() as u64) > seen {
            return Err(bad("more values than its size"));
        }
        r.seen = seen;
        r.next = seen.max(capacity as u64) - 1 + r.draw_skip();
        Ok(r)
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.items.iter().map(|s| s.size()).sum::<usize>()
    }
}

/// The rows of `values` a sample of `data_type` values draws from: the non-null ones (42804
/// when the type differs).
pub(crate) fn sampled_rows(values: &dyn Array, data_type: &DataType) -> Result<Vec<usize>> {
    if values.data_type() != data_type {
        return Err(brook_err!(
            DatatypeMismatch,
            "sample of {data_type} values fed {}",
            values.data_type()
        ));
    }
    Ok((0..values.len()).filter(|i| values.is_valid(*i)).collect())
}

/// Append `values` to `out` as an Arrow IPC stream of one column (the sampled values of a
/// serialized sample).
pub(crate) fn write_column(out: &mut Vec<u8>, values: &ArrayRef) {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "v",
        values.data_type().clone(),
        true,
    )]));
    // Writing an in-memory IPC stream of a well-formed batch cannot fail.
    if let Ok(batch) = RecordBatch::try_new(schema.clone(), vec![values.clone()]) {
        if let Ok(mut w) = StreamWriter::try_new(out, &schema) {
            let _ = w.write(&batch);
            let _ = w.finish();
        }
    }
}

/// The column written by [`write_column`] (empty, of its type, when it has no batch).
pub(crate) fn read_column(bytes: &[u8]) -> std::result::Result<ArrayRef, String> {
    let mut reader = StreamReader::try_new(bytes, None).map_err(|e| e.to_string())?;
    let schema = reader.schema();
    let Some(field) = schema.fields().first() else {
        return Err("no value column".into());
    };
    let data_type = field.data_type().clone();
    match reader.next() {
        Some(batch) => batch
            .map_err(|e| e.to_string())?
            .columns()
            .first()
            .cloned()
            .ok_or_else(|| "no value column".to_string()),
        None => Ok(datafusion::arrow::array::new_empty_array(&data_type)),
    }
}

/// `k` values chosen uniformly from `items` (a partial Fisher–Yates shuffle).
fn partial_shuffle(items: &mut [ScalarValue], k: usize, rng: &mut StdRng) -> Vec<ScalarValue> {
    let k = k.min(items.len());
    for i in 0..k {
        let j = rng.random_range(i..items.len());
        items.swap(i, j);
    }
    items[..k].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    fn sample_counts(batch: usize, merge: bool) -> Vec<u64> {
        // How often each of 0..100 lands in a sample of 10, over 4,000 seeded runs.
        let mut counts = vec![0u64; 100];
        for seed in 0..4000u64 {
            let mut r = Reservoir::seeded(10, DataType::Int64, seed).unwrap();
            if merge {
                let mut other = Reservoir::seeded(10, DataType::Int64, seed + 1_000_000).unwrap();
                r.add(&Int64Array::from_iter_values(0..37)).unwrap();
                other.add(&Int64Array::from_iter_values(37..100)).unwrap();
                r.merge(&other).unwrap();
            } else {
                for start in (0..100).step_by(batch) {
                    let end = (start + batch as i64).min(100);
                    r.add(&Int64Array::from_iter_values(start..end)).unwrap();
                }
            }
            assert_eq!(r.items().len(), 10);
            assert_eq!(r.seen(), 100);
            for v in r.items() {
                if let ScalarValue::Int64(Some(v)) = v {
                    counts[*v as usize] += 1;
                }
            }
        }
        counts
    }

    /// Chi-square of the inclusion counts against uniform (expected 400 each, 99 degrees
    /// of freedom: the 99.9% critical value is 148.2).
    fn chi_square(counts: &[u64]) -> f64 {
        counts
            .iter()
            .map(|c| (*c as f64 - 400.0).powi(2) / 400.0)
            .sum()
    }

    #[test]
    fn every_value_is_equally_likely_whatever_the_batches() {
        for batch in [1, 7, 100] {
            let chi = chi_square(&sample_counts(batch as usize, false));
            assert!(chi < 148.2, "batch {batch}: chi-square {chi}");
        }
    }

    #[test]
    fn merged_samples_stay_uniform() {
        let chi = chi_square(&sample_counts(0, true));
        assert!(chi < 148.2, "chi-square {chi}");
    }

    #[test]
    fn bytes_round_trip_and_garbage_is_22p03() {
        let mut r = Reservoir::seeded(5, DataType::Int64, 1).unwrap();
        r.add(&Int64Array::from(vec![Some(1), None, Some(3)]))
            .unwrap();
        let back = Reservoir::from_bytes(&r.to_bytes()).unwrap();
        assert_eq!(back.items(), r.items());
        assert_eq!(back.seen(), 2);
        assert_eq!(
            Reservoir::from_bytes(b"nope").unwrap_err().sqlstate(),
            "22P03"
        );
        let wrong = r.add(&datafusion::arrow::array::StringArray::from(vec!["x"]));
        assert_eq!(wrong.unwrap_err().sqlstate(), "42804");
    }
}
