//! A map from group keys (the values of some key columns) to slots: which group each row
//! of a batch belongs to.
//!
//! Keys of up to three integer-like columns (integers, booleans, dates, timestamps) are
//! packed into four machine words per row, column by column over the batch: hashing and
//! comparing them is a few word operations. Other keys are row-encoded by arrow's
//! `RowConverter` and compared as bytes. (Row encoding, hashing and comparing byte strings
//! led the profile of windowed aggregation, whose keys are a window and an id or two.)
//!
//! Equal keys are equal values with NULL equal to NULL, as GROUP BY needs, in both forms.
//!
//! The index's copy of a key is also the group's key for output: [`GroupIndex::decode`]
//! turns the keys of many groups back into columns at once, so a new group costs no value
//! objects of its own.

use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::{can_cast_types, cast};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
// hashbrown with foldhash, as DataFusion's grouping uses.
use datafusion::common::HashMap;

/// Packed key columns at most: the fourth word holds their NULL flags.
const PACKED_COLUMNS: usize = 3;

/// A key packed into words: one per column (the value's bits as an i64), then one bit per
/// NULL column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Packed([u64; 4]);

impl std::hash::Hash for Packed {
    /// Word by word: the derived hash writes a length and then hashes the words as a byte
    /// string, which showed in profiles.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for w in self.0 {
            state.write_u64(w);
        }
    }
}

/// A group's key as the index holds it (to remove the group later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupKey {
    /// The one group of an aggregate without keys.
    Global,
    /// Row-encoded key.
    Row(Box<[u8]>),
    /// Packed key.
    Packed(Packed),
}

impl GroupKey {
    /// Bytes the key holds.
    pub fn size(&self) -> usize {
        match self {
            GroupKey::Global => 0,
            GroupKey::Row(r) => r.len(),
            GroupKey::Packed(p) => std::mem::size_of_val(p),
        }
    }
}

/// The keys of one batch's rows, ready for lookups.
pub enum BatchKeys {
    /// No key columns: every row is in the one group.
    Global,
    /// Row-encoded keys.
    Rows(Rows),
    /// Packed keys, one per row.
    Packed(Vec<Packed>),
}

enum Index {
    Global(Option<usize>),
    Rows {
        converter: RowConverter,
        map: HashMap<Box<[u8]>, usize>,
    },
    Packed {
        map: HashMap<Packed, usize>,
        /// The key columns' types, to decode packed keys.
        types: Vec<DataType>,
    },
}

/// Group key → slot.
pub struct GroupIndex {
    index: Index,
}

/// Whether values of `t` can be packed: cast to Int64 without loss and without failing (so
/// distinct values stay distinct and no value turns NULL), and back.
fn packable(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::Date32
            | DataType::Timestamp(_, _)
    ) && can_cast_types(t, &DataType::Int64)
        && can_cast_types(&DataType::Int64, t)
}

impl GroupIndex {
    /// An empty index for keys of these types.
    pub fn new(types: &[DataType]) -> Result<Self> {
        let index = if types.is_empty() {
            Index::Global(None)
        } else if types.len() <= PACKED_COLUMNS && types.iter().all(packable) {
            Index::Packed {
                map: HashMap::default(),
                types: types.to_vec(),
            }
        } else {
            let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
            Index::Rows {
                converter: RowConverter::new(fields)?,
                map: HashMap::default(),
            }
        };
        Ok(GroupIndex { index })
    }

    /// The keys of a batch's rows (`keys`: one array per key column).
    pub fn encode(&self, keys: &[ArrayRef]) -> Result<BatchKeys> {
        Ok(match &self.index {
            Index::Global(_) => BatchKeys::Global,
            Index::Rows { converter, .. } => BatchKeys::Rows(converter.convert_columns(keys)?),
            Index::Packed { .. } => BatchKeys::Packed(pack(keys)?),
        })
    }

    /// The slot of row `r`'s group, if it has one.
    pub fn get(&self, keys: &BatchKeys, r: usize) -> Option<usize> {
        match (&self.index, keys) {
            (Index::Global(slot), BatchKeys::Global) => *slot,
            (Index::Rows { map, .. }, BatchKeys::Rows(rows)) => {
                map.get(rows.row(r).data()).copied()
            }
            (Index::Packed { map, .. }, BatchKeys::Packed(p)) => map.get(p.get(r)?).copied(),
            _ => None,
        }
    }

    /// Record `slot` as the group of row `r`'s key; returns the key as held.
    pub fn insert(&mut self, keys: &BatchKeys, r: usize, slot: usize) -> Result<GroupKey> {
        Ok(match (&mut self.index, keys) {
            (Index::Global(s), BatchKeys::Global) => {
                *s = Some(slot);
                GroupKey::Global
            }
            (Index::Rows { map, .. }, BatchKeys::Rows(rows)) => {
                let row: Box<[u8]> = rows.row(r).data().into();
                map.insert(row.clone(), slot);
                GroupKey::Row(row)
            }
            (Index::Packed { map, .. }, BatchKeys::Packed(p)) => {
                let key = *p
                    .get(r)
                    .ok_or_else(|| brook_err!(Internal, "group key row out of range"))?;
                map.insert(key, slot);
                GroupKey::Packed(key)
            }
            _ => return Err(brook_err!(Internal, "group keys of another index")),
        })
    }

    /// Forget a group.
    pub fn remove(&mut self, key: &GroupKey) {
        match (&mut self.index, key) {
            (Index::Global(s), GroupKey::Global) => *s = None,
            (Index::Rows { map, .. }, GroupKey::Row(row)) => {
                map.remove(row);
            }
            (Index::Packed { map, .. }, GroupKey::Packed(p)) => {
                map.remove(p);
            }
            _ => {}
        }
    }

    /// The key columns of the groups `keys` (keys this index gave out), one row per key in
    /// order: the values the keys were made from, NULLs included.
    pub fn decode(&self, keys: &[GroupKey]) -> Result<Vec<ArrayRef>> {
        match &self.index {
            Index::Global(_) => Ok(Vec::new()),
            Index::Rows { converter, .. } => {
                let parser = converter.parser();
                let rows = keys
                    .iter()
                    .map(|k| match k {
                        GroupKey::Row(bytes) => Ok(parser.parse(bytes)),
                        _ => Err(brook_err!(Internal, "group key of another index")),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(converter.convert_rows(rows)?)
            }
            Index::Packed { types, .. } => {
                let packed = keys
                    .iter()
                    .map(|k| match k {
                        GroupKey::Packed(p) => Ok(p.0),
                        _ => Err(brook_err!(Internal, "group key of another index")),
                    })
                    .collect::<Result<Vec<_>>>()?;
                types
                    .iter()
                    .enumerate()
                    .map(|(c, t)| unpack(&packed, c, t))
                    .collect()
            }
        }
    }
}

/// Column `c` of packed keys as an array of type `t` (the inverse of [`pack`]).
fn unpack(packed: &[[u64; 4]], c: usize, t: &DataType) -> Result<ArrayRef> {
    let values: Vec<i64> = packed.iter().map(|p| p[c] as i64).collect();
    let nulls = packed
        .iter()
        .any(|p| p[3] & (1 << c) != 0)
        .then(|| NullBuffer::from_iter(packed.iter().map(|p| p[3] & (1 << c) == 0)));
    let wide: ArrayRef = std::sync::Arc::new(Int64Array::new(values.into(), nulls));
    Ok(cast(&wide, t)?)
}

/// Each row's key packed: column `c`'s value (as i64 bits, 0 when NULL) in word `c`, and
/// bit `c` of word 3 set when it is NULL.
fn pack(keys: &[ArrayRef]) -> Result<Vec<Packed>> {
    let n = keys.first().map_or(0, |k| k.len());
    let mut out = vec![Packed::default(); n];
    for (c, col) in keys.iter().enumerate().take(PACKED_COLUMNS) {
        // Integers widen, timestamps and dates are reinterpreted: both keep values apart.
        let wide = cast(col, &DataType::Int64)?;
        let wide = wide.as_primitive::<Int64Type>();
        for (o, &v) in out.iter_mut().zip(wide.values().iter()) {
            o.0[c] = v as u64;
        }
        if let Some(nulls) = wide.nulls() {
            for r in (0..n).filter(|&r| nulls.is_null(r)) {
                out[r].0[c] = 0;
                out[r].0[3] |= 1 << c;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        Date32Array, Int32Array, StringArray, TimestampMicrosecondArray,
    };
    use std::sync::Arc;

    /// Slots of the rows' groups, creating a group (the next slot) for each new key.
    fn assign(index: &mut GroupIndex, keys: &[ArrayRef]) -> Vec<usize> {
        let batch = index.encode(keys).unwrap();
        let mut next = 0;
        (0..keys.first().map_or(1, |k| k.len()))
            .map(|r| match index.get(&batch, r) {
                Some(s) => s,
                None => {
                    // Slots count up from the number of groups so far.
                    next += 1;
                    index.insert(&batch, r, 100 + next).unwrap();
                    100 + next
                }
            })
            .collect()
    }

    #[test]
    fn packed_keys_group_equal_values_and_nulls() {
        let types = [
            DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, None),
            DataType::Int32,
        ];
        let mut index = GroupIndex::new(&types).unwrap();
        assert!(matches!(index.index, Index::Packed { .. }));
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1),
            Some(1),
            None,
            None,
            Some(0),
        ]));
        // A NULL and a zero are different keys, as are (0, NULL) and (NULL, 0).
        let k: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(5),
            Some(5),
            Some(0),
            None,
            None,
        ]));
        assert_eq!(assign(&mut index, &[ts, k]), vec![101, 101, 102, 103, 104]);
    }

    #[test]
    fn removed_groups_are_forgotten() {
        let mut index = GroupIndex::new(&[DataType::Date32]).unwrap();
        let d: ArrayRef = Arc::new(Date32Array::from(vec![7, 8]));
        let batch = index.encode(&[d]).unwrap();
        let key = index.insert(&batch, 0, 1).unwrap();
        index.insert(&batch, 1, 2).unwrap();
        index.remove(&key);
        assert_eq!(
            (index.get(&batch, 0), index.get(&batch, 1)),
            (None, Some(2))
        );
    }

    /// Text keys, and more than three columns, are row-encoded; answers are the same.
    #[test]
    fn other_keys_are_row_encoded() {
        let s: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("a")]));
        let mut index = GroupIndex::new(&[DataType::Utf8]).unwrap();
        assert!(matches!(index.index, Index::Rows { .. }));
        assert_eq!(assign(&mut index, &[s]), vec![101, 102, 101]);
        let i: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 1]));
        let mut index = GroupIndex::new(&vec![DataType::Int32; 4]).unwrap();
        assert!(matches!(index.index, Index::Rows { .. }));
        let keys = [i.clone(), i.clone(), i.clone(), i];
        assert_eq!(assign(&mut index, &keys), vec![101, 102, 101]);
    }

    /// Keys as the index holds them, decoded: the columns they came from.
    fn round_trip(keys: &[ArrayRef]) -> Vec<ArrayRef> {
        let types: Vec<DataType> = keys.iter().map(|k| k.data_type().clone()).collect();
        let mut index = GroupIndex::new(&types).unwrap();
        let batch = index.encode(keys).unwrap();
        let held: Vec<GroupKey> = (0..keys[0].len())
            .map(|r| index.insert(&batch, r, r).unwrap())
            .collect();
        index.decode(&held).unwrap()
    }

    #[test]
    fn keys_decode_to_their_values() {
        use datafusion::arrow::array::BooleanArray;
        use datafusion::arrow::datatypes::TimeUnit;
        // Packed: timestamps (with a zone), integers, booleans, NULLs in any column.
        let ts: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(-1), None, Some(i64::MAX)])
                .with_timezone("+01:00"),
        );
        let i: ArrayRef = Arc::new(Int32Array::from(vec![None, Some(i32::MIN), Some(0)]));
        let b: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), Some(false), None]));
        let packed = vec![ts, i, b];
        assert!(matches!(
            GroupIndex::new(&[
                DataType::Timestamp(TimeUnit::Microsecond, Some("+01:00".into())),
                DataType::Int32,
                DataType::Boolean
            ])
            .unwrap()
            .index,
            Index::Packed { .. }
        ));
        assert_eq!(round_trip(&packed), packed);
        // Row-encoded: text among four columns.
        let s: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None, Some("")]));
        let d: ArrayRef = Arc::new(Date32Array::from(vec![Some(1), Some(2), None]));
        let rows = vec![s, packed[1].clone(), d, packed[0].clone()];
        assert_eq!(round_trip(&rows), rows);
    }

    #[test]
    fn one_group_without_keys() {
        let mut index = GroupIndex::new(&[]).unwrap();
        assert_eq!(assign(&mut index, &[]), vec![101]);
        let batch = index.encode(&[]).unwrap();
        assert_eq!(index.get(&batch, 5), Some(101));
        index.remove(&GroupKey::Global);
        assert_eq!(index.get(&batch, 0), None);
    }
}
