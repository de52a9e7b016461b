//! Frequent items (DataSketches `FrequentItemsSketch`, Misra–Gries with reverse purging):
//! heavy hitters and top-k in bounded memory. Every item's count is known within
//! `maximum_error()` (about `3.5 / map_size` of the total weight), deterministically.
//!
//! Items are 64-bit integers for integer columns and strings for everything else (cast to
//! text); the serialized form of the string kind is DataSketches' `frequent_strings_sketch`.

use crate::values::{for_each_hashed, Ignore};
use crate::{bytes_error, check_error, sketch_error, Synopsis};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datasketches::frequencies::{ErrorType, FrequentItemsSketch};

/// Default `lg` of the map size (1,024 counters, 0.34% of the weight as error).
pub const DEFAULT_LG_MAP_SIZE: u8 = 10;
/// Largest `lg` of the map size Brook allows (16 M counters).
pub const MAX_LG_MAP_SIZE: u8 = 24;

/// One tracked item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Item {
    /// From an integer column.
    Long(i64),
    /// From any other column, as text.
    Text(String),
}

/// An item with its estimated count and the interval that holds its true count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemCount {
    /// The item.
    pub item: Item,
    /// Estimated count.
    pub estimate: u64,
    /// The true count is at least this.
    pub lower: u64,
    /// The true count is at most this.
    pub upper: u64,
}

#[derive(Debug, Clone)]
enum Sketch {
    Longs(FrequentItemsSketch<i64>),
    Texts(FrequentItemsSketch<String>),
}

/// A frequent-items sketch.
#[derive(Debug, Clone)]
pub struct Frequent {
    sketch: Sketch,
}

impl Frequent {
    /// A sketch of integer items with `2^lg_map_size` counters.
    pub fn longs(lg_map_size: u8) -> Result<Self> {
        let s = FrequentItemsSketch::new(map_size(lg_map_size)?)
            .map_err(|e| sketch_error("frequent items", e))?;
        Ok(Frequent {
            sketch: Sketch::Longs(s),
        })
    }

    /// A sketch of text items with `2^lg_map_size` counters.
    pub fn texts(lg_map_size: u8) -> Result<Self> {
        let s = FrequentItemsSketch::new(map_size(lg_map_size)?)
            .map_err(|e| sketch_error("frequent items", e))?;
        Ok(Frequent {
            sketch: Sketch::Texts(s),
        })
    }

    /// The sketch kind for values of `data_type`: integers stay integers.
    pub fn for_type(data_type: &DataType, lg_map_size: u8) -> Result<Self> {
        if data_type.is_integer() {
            Self::longs(lg_map_size)
        } else {
            Self::texts(lg_map_size)
        }
    }

    /// `lg` of the map size for the `k` heaviest items: at least 8k counters (so the k-th
    /// item of a skewed stream is still tracked) and as many as `error` needs.
    pub fn lg_map_size_for_top_k(k: usize, error: Option<f64>) -> Result<u8> {
        let for_k = (usize::BITS - (8 * k).leading_zeros()) as u8;
        let for_error = match error {
            Some(e) => Self::lg_map_size_for(e)?,
            None => DEFAULT_LG_MAP_SIZE,
        };
        Ok(for_k.max(for_error).min(MAX_LG_MAP_SIZE))
    }

    /// `lg` of the map size that keeps the count error within `error` of the total weight.
    pub fn lg_map_size_for(error: f64) -> Result<u8> {
        let error = check_error(error)?;
        (3..=MAX_LG_MAP_SIZE)
            .find(|lg| {
                FrequentItemsSketch::<i64>::epsilon_for_max_map_size(1 << lg)
                    .is_ok_and(|eps| eps <= error)
            })
            .ok_or_else(|| {
                brook_err!(
                    InvalidParameter,
                    "frequent items error {error} needs more than 2^{MAX_LG_MAP_SIZE} counters"
                )
            })
    }

    /// Total weight (rows) seen.
    pub fn total_weight(&self) -> u64 {
        match &self.sketch {
            Sketch::Longs(s) => s.total_weight(),
            Sketch::Texts(s) => s.total_weight(),
        }
    }

    /// Largest possible difference between an estimate and the true count.
    pub fn maximum_error(&self) -> u64 {
        match &self.sketch {
            Sketch::Longs(s) => s.maximum_error(),
            Sketch::Texts(s) => s.maximum_error(),
        }
    }

    /// The `k` items with the largest estimated counts (ties by item), largest first.
    pub fn top_k(&self, k: usize) -> Vec<ItemCount> {
        let mut rows: Vec<ItemCount> = match &self.sketch {
            Sketch::Longs(s) => s
                .frequent_items_with_threshold(ErrorType::NoFalseNegatives, 0)
                .into_iter()
                .map(|r| ItemCount {
                    item: Item::Long(*r.item()),
                    estimate: r.estimate(),
                    lower: r.lower_bound(),
                    upper: r.upper_bound(),
                })
                .collect(),
            Sketch::Texts(s) => s
                .frequent_items_with_threshold(ErrorType::NoFalseNegatives, 0)
                .into_iter()
                .map(|r| ItemCount {
                    item: Item::Text(r.item().clone()),
                    estimate: r.estimate(),
                    lower: r.lower_bound(),
                    upper: r.upper_bound(),
                })
                .collect(),
        };
        rows.sort_by(|a, b| {
            b.estimate
                .cmp(&a.estimate)
                .then_with(|| a.item.cmp(&b.item))
        });
        rows.truncate(k);
        rows
    }

    /// Estimated count of one item with its bounds.
    pub fn count_of(&self, item: &Item) -> ItemCount {
        let (estimate, lower, upper) = match (&self.sketch, item) {
            (Sketch::Longs(s), Item::Long(v)) => {
                (s.estimate(v), s.lower_bound(v), s.upper_bound(v))
            }
            (Sketch::Texts(s), Item::Text(v)) => (
                s.estimate(v.as_str()),
                s.lower_bound(v.as_str()),
                s.upper_bound(v.as_str()),
            ),
            // An item of the other kind was never added.
            _ => (0, 0, self.maximum_error()),
        };
        ItemCount {
            item: item.clone(),
            estimate,
            lower,
            upper,
        }
    }

    /// Deserialize a sketch of integer items.
    pub fn longs_from_bytes(bytes: &[u8]) -> Result<Self> {
        let s = FrequentItemsSketch::<i64>::deserialize(bytes)
            .map_err(|e| bytes_error("frequent items", e))?;
        Ok(Frequent {
            sketch: Sketch::Longs(s),
        })
    }
}

fn map_size(lg: u8) -> Result<usize> {
    if !(3..=MAX_LG_MAP_SIZE).contains(&lg) {
        return Err(brook_err!(
            InvalidParameter,
            "frequent items lg map size must be between 3 and {MAX_LG_MAP_SIZE}, got {lg}"
        ));
    }
    Ok(1 << lg)
}

impl Synopsis for Frequent {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        match &mut self.sketch {
            Sketch::Longs(s) => {
                if !values.data_type().is_integer() {
                    return Err(brook_err!(
                        DatatypeMismatch,
                        "integer frequent-items sketch fed values of type {}",
                        values.data_type()
                    ));
                }
                let longs = cast(values, &DataType::Int64)?;
                longs
                    .as_primitive::<Int64Type>()
                    .iter()
                    .flatten()
                    .for_each(|v| s.update(v));
            }
            Sketch::Texts(s) => match values.data_type() {
                DataType::Utf8 => values
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .for_each(|v| s.update_ref(v)),
                _ => {
                    // Other types count by their text form; check they are sketchable at all.
                    for_each_hashed(values, &mut Ignore)?;
                    let text = cast(values, &DataType::Utf8)?;
                    text.as_string::<i32>()
                        .iter()
                        .flatten()
                        .for_each(|v| s.update_ref(v));
                }
            },
        }
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        match (&mut self.sketch, &other.sketch) {
            (Sketch::Longs(a), Sketch::Longs(b)) => a.merge(b),
            (Sketch::Texts(a), Sketch::Texts(b)) => a.merge(b),
            _ => {
                return Err(brook_err!(
                    DatatypeMismatch,
                    "cannot merge frequent-items sketches of integer and text items"
                ))
            }
        }
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        match &self.sketch {
            Sketch::Longs(s) => s.serialize(),
            Sketch::Texts(s) => s.serialize(),
        }
    }

    /// Reads a sketch of text items (DataSketches' `frequent_strings_sketch`); integer-item
    /// sketches are read with [`Frequent::longs_from_bytes`].
    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let s = FrequentItemsSketch::<String>::deserialize(bytes)
            .map_err(|e| bytes_error("frequent items", e))?;
        Ok(Frequent {
            sketch: Sketch::Texts(s),
        })
    }

    fn memory_bytes(&self) -> usize {
        match &self.sketch {
            Sketch::Longs(s) => s.estimated_size(),
            Sketch::Texts(s) => s.estimated_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{check_frequency_bounds, check_merge, check_round_trip, trials, Data};
    use datafusion::arrow::array::{Int64Array, StringArray};
    use std::collections::HashMap;

    #[test]
    fn counts_stay_within_the_maximum_error() {
        for data in [Data::Uniform, Data::Zipf] {
            let count = |s: &Frequent, item| {
                let c = s.count_of(&Item::Long(item));
                (c.estimate as f64, c.lower as f64, c.upper as f64)
            };
            check_frequency_bounds(data, || Frequent::longs(6).unwrap(), count, 0.0);
        }
    }

    #[test]
    fn top_k_of_a_skewed_stream() {
        let mut s = Frequent::texts(6).unwrap();
        let mut words = vec!["a"; 500];
        words.extend(vec!["b"; 300]);
        let noise: Vec<String> = (0..1000).map(|i| format!("n{i}")).collect();
        s.add(&StringArray::from(words)).unwrap();
        s.add(&StringArray::from(noise)).unwrap();
        let top: Vec<Item> = s.top_k(2).into_iter().map(|r| r.item).collect();
        assert_eq!(top, vec![Item::Text("a".into()), Item::Text("b".into())]);
    }

    #[test]
    fn merge_equals_sketch_of_union_and_bytes_round_trip() {
        // Weight and the top 20 (items and counts) summarised in one number.
        let value = |s: &Frequent| {
            let top = s.top_k(20).into_iter().enumerate();
            let mix: u64 = top.map(|(i, r)| (i as u64 + 1) * r.estimate).sum();
            (s.total_weight() + 1_000_000 * mix) as f64
        };
        check_round_trip(|| Frequent::texts(8).unwrap(), value);
        // Misra-Gries merges purge at other moments than one sketch of the union would, so
        // counts may differ — within the bound, which merged sketches keep.
        check_merge(|| Frequent::texts(8).unwrap(), |s| s.total_weight() as f64);
        for (_, values) in trials(Data::Zipf, 20, 30_000) {
            let mut merged = Frequent::longs(6).unwrap();
            let mut truth: HashMap<i64, u64> = HashMap::new();
            for chunk in values.chunks(7_000) {
                let mut part = Frequent::longs(6).unwrap();
                part.add(&Int64Array::from(chunk.to_vec())).unwrap();
                merged.merge(&part).unwrap();
                chunk
                    .iter()
                    .for_each(|v| *truth.entry(*v).or_default() += 1);
            }
            for (item, count) in truth {
                let c = merged.count_of(&Item::Long(item));
                assert!(
                    c.lower <= count && count <= c.upper,
                    "{item}: {count} not in {c:?}"
                );
            }
        }
        check_round_trip(|| Frequent::texts(8).unwrap(), value);
        assert_eq!(Frequent::lg_map_size_for(0.01).unwrap(), 9);
        let mixed = Frequent::longs(4)
            .unwrap()
            .merge(&Frequent::texts(4).unwrap());
        assert_eq!(mixed.unwrap_err().sqlstate(), "42804");
    }
}
