//! A partitioned stream's partitioning: `CREATE STREAM s (...) WITH (partitions = n,
//! partition_key = 'col')`, and which partition each row belongs to.
//!
//! In cluster mode a partitioned stream's writes are sent to the cluster's log per
//! partition (a subject each, `db/cluster.rs`), which is what lets partitions be owned and
//! rebuilt apart (docs/cluster.md). A single server records the options and keeps the
//! stream as any other: partitioning changes where rows travel, never what a query answers.
//!
//! The partition of a row is part of the log's format: every node, of every version that
//! reads the log, must put a row in the same partition. It is therefore computed by a
//! hash fixed by its specification (64-bit FNV-1a) over a byte encoding of the key fixed
//! here, not by Rust's or DataFusion's hashers, whose output may change between releases.

use crate::catalog::{ColumnMeta, RelationMeta};
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray, RecordBatch, UInt32Array,
};
use datafusion::arrow::compute::{concat_batches, sort_to_indices, take_record_batch};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Field, Int16Type, Int32Type, Int64Type, Schema,
    Time64MicrosecondType, TimeUnit, TimestampMicrosecondType,
};
use std::collections::BTreeMap;
use std::hash::Hasher;
use std::sync::Arc;

/// The option naming how many partitions a stream has.
pub const PARTITIONS: &str = "partitions";
/// The option naming the columns a row's partition is computed from.
pub const PARTITION_KEY: &str = "partition_key";
/// The most partitions a stream may have. Each is a subject of the cluster's log, and a
/// statement's records of each partition it writes take a message of the statement's
/// atomic batch, which holds at most 1,000: 256 leaves room for the rows of a large one.
pub const MAX_PARTITIONS: u32 = 256;

/// How a stream's rows are partitioned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    /// The number of partitions, numbered from 0.
    pub partitions: u32,
    /// The key's columns, as positions in the stream's columns.
    pub key: Vec<usize>,
}

impl Partitioning {
    /// The partitioning options `options` give a stream of `columns` (`None` when they
    /// give none); 22023 for a malformed value, 42703 for a key column that does not
    /// exist, 0A000 for a key column of a type rows cannot be partitioned by.
    pub fn from_options(
        options: &BTreeMap<String, String>,
        columns: &[ColumnMeta],
    ) -> Result<Option<Partitioning>> {
        let (count, key) = match (options.get(PARTITIONS), options.get(PARTITION_KEY)) {
            (None, None) => return Ok(None),
            (Some(_), None) => {
                return Err(brook_err!(
                    InvalidParameter,
                    "a stream with partitions needs a partition_key: the column(s) its rows are partitioned by"
                ))
            }
            (None, Some(_)) => {
                return Err(brook_err!(
                    InvalidParameter,
                    "a stream with a partition_key needs partitions: how many partitions it has"
                ))
            }
            (Some(count), Some(key)) => (count, key),
        };
        let partitions = count
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_PARTITIONS).contains(n))
            .ok_or_else(|| {
                brook_err!(
                    InvalidParameter,
                    "invalid value for parameter \"partitions\": \"{count}\" (an integer from 1 to {MAX_PARTITIONS})"
                )
            })?;
        let mut positions = Vec::new();
        for name in key.split(',').map(str::trim) {
            if name.is_empty() {
                return Err(brook_err!(
                    InvalidParameter,
                    "invalid value for parameter \"partition_key\": \"{key}\" (column names separated by commas)"
                ));
            }
            let at = columns.iter().position(|c| c.name == name).ok_or_else(|| {
                brook_err!(
                    UndefinedColumn,
                    "partition key column \"{name}\" does not exist"
                )
            })?;
            if positions.contains(&at) {
                return Err(brook_err!(
                    InvalidParameter,
                    "partition key column \"{name}\" appears twice"
                ));
            }
            let ty = &columns[at].ty;
            if !partitionable(ty) {
                return Err(brook_err!(
                    Unsupported,
                    "a stream partitioned by a column of type {} is not supported (partition key column \"{name}\"): use a column of type integer, text, varchar, uuid, boolean, bytea, date, time or timestamp",
                    ty.name()
                ));
            }
            positions.push(at);
        }
        Ok(Some(Partitioning {
            partitions,
            key: positions,
        }))
    }

    /// The key's column names as the `partition_key` option spells them.
    pub fn key_names(&self, columns: &[ColumnMeta]) -> String {
        self.key
            .iter()
            .filter_map(|&at| columns.get(at).map(|c| c.name.as_str()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The partitioning of relation `meta` (`None` when it is not partitioned).
    pub fn of(meta: &RelationMeta) -> Result<Option<Partitioning>> {
        Partitioning::from_options(&meta.options, &meta.columns)
    }

    /// The partition of each row of `batch` (a batch of the stream's columns).
    pub fn partition_of_rows(&self, batch: &RecordBatch) -> Result<Vec<u32>> {
        let mut hashes = vec![FNV_OFFSET_BASIS; batch.num_rows()];
        for &at in &self.key {
            let column = batch
                .columns()
                .get(at)
                .ok_or_else(|| brook_err!(Internal, "a batch without partition key column {at}"))?;
            hash_column(column, &mut hashes)?;
        }
        let n = u64::from(self.partitions);
        Ok(hashes
            .into_iter()
            .map(|h| u32::try_from(h % n).unwrap_or(0))
            .collect())
    }

    /// A statement's `batches` cut by partition for the cluster's log, each row carrying
    /// its position in the statement (a last column, [`ROW_POSITION`]), and the number of
    /// rows of each of `batches`: what [`restore_statement`] needs to put the rows back in
    /// the statement's order and cut. (A stream's rows are stored, and its continuous
    /// queries read them, in the order and batches a statement gave them: a watermark
    /// makes rows late by that order, so each node must store what a single server would.)
    pub fn cut_statement(&self, batches: &[RecordBatch]) -> Result<StatementParts> {
        let mut pieces: BTreeMap<u32, Vec<RecordBatch>> = BTreeMap::new();
        let mut sizes = Vec::with_capacity(batches.len());
        let mut offset = 0u32;
        for batch in batches {
            let rows = u32::try_from(batch.num_rows())
                .ok()
                .filter(|r| offset.checked_add(*r).is_some())
                .ok_or_else(|| BrookError::Limit {
                    message: "a statement may write at most 4294967295 rows to a partitioned stream in cluster mode".into(),
                    code: "54000",
                })?;
            let positions: ArrayRef =
                Arc::new(UInt32Array::from_iter_values(offset..offset + rows));
            let mut fields = batch.schema().fields().to_vec();
            fields.push(Arc::new(Field::new(ROW_POSITION, DataType::UInt32, false)));
            let mut columns = batch.columns().to_vec();
            columns.push(positions);
            let numbered = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
            for (p, part) in self.split(&numbered)? {
                pieces.entry(p).or_default().push(part);
            }
            sizes.push(u64::from(rows));
            offset += rows;
        }
        // One batch per partition: a record for each piece would repeat the schema in the
        // log for every few rows of a partition.
        let mut parts = BTreeMap::new();
        for (p, pieces) in pieces {
            let Some(first) = pieces.first() else {
                continue;
            };
            parts.insert(p, vec![concat_batches(&first.schema(), &pieces)?]);
        }
        Ok(StatementParts {
            parts,
            batch_rows: sizes,
        })
    }

    /// `batch` cut into one batch per partition its rows belong to, in partition order;
    /// each keeps the order its rows had in `batch`.
    fn split(&self, batch: &RecordBatch) -> Result<Vec<(u32, RecordBatch)>> {
        let of_row = self.partition_of_rows(batch)?;
        let mut rows: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (row, p) in of_row.into_iter().enumerate() {
            let row = u32::try_from(row)
                .map_err(|_| brook_err!(Internal, "a batch of more than 2^32 rows"))?;
            rows.entry(p).or_default().push(row);
        }
        if rows.len() == 1 {
            if let Some((&p, _)) = rows.first_key_value() {
                return Ok(vec![(p, batch.clone())]);
            }
        }
        rows.into_iter()
            .map(|(p, indices)| Ok((p, take_record_batch(batch, &UInt32Array::from(indices))?)))
            .collect()
    }
}

/// A statement's rows cut by partition ([`Partitioning::cut_statement`]).
pub struct StatementParts {
    /// Each partition's rows, with their positions in the statement.
    pub parts: BTreeMap<u32, Vec<RecordBatch>>,
    /// The rows of each of the statement's batches.
    pub batch_rows: Vec<u64>,
}

/// The column [`Partitioning::cut_statement`] numbers a statement's rows in.
pub const ROW_POSITION: &str = "brook_row_position";

/// A statement's rows as [`Partitioning::cut_statement`] cut them (`parts`, in any order),
/// back in the statement's order, cut in batches of `sizes` rows as the statement had them,
/// without their positions.
pub fn restore_statement(parts: &[RecordBatch], sizes: &[u64]) -> Result<Vec<RecordBatch>> {
    let Some(first) = parts.first() else {
        return Ok(Vec::new());
    };
    let all = concat_batches(&first.schema(), parts)?;
    let last = all
        .num_columns()
        .checked_sub(1)
        .filter(|&i| all.schema().field(i).name() == ROW_POSITION);
    let Some(last) = last else {
        return Err(brook_err!(
            Internal,
            "a partitioned write without its rows' positions"
        ));
    };
    let expected: u64 = sizes.iter().sum();
    if all.num_rows() as u64 != expected {
        return Err(brook_err!(
            Internal,
            "a partitioned write of {} rows says it has {expected}",
            all.num_rows()
        ));
    }
    let order = sort_to_indices(all.column(last), None, None)?;
    let ordered = take_record_batch(&all, &order)?;
    let rows = ordered.project(&(0..last).collect::<Vec<_>>())?;
    let mut out = Vec::with_capacity(sizes.len());
    let mut offset = 0usize;
    for &size in sizes {
        let size =
            usize::try_from(size).map_err(|_| brook_err!(Internal, "a batch of {size} rows"))?;
        out.push(rows.slice(offset, size));
        offset += size;
    }
    Ok(out)
}

/// Whether stream `meta`'s rows are partitioned by column `column` (among others).
pub fn key_includes(meta: &RelationMeta, column: &str) -> bool {
    meta.options
        .get(PARTITION_KEY)
        .is_some_and(|key| key.split(',').any(|c| c.trim() == column))
}

/// Options `options` after column `old` was renamed `new`.
pub fn rename_key_column(options: &mut BTreeMap<String, String>, old: &str, new: &str) {
    if let Some(key) = options.get_mut(PARTITION_KEY) {
        *key = key
            .split(',')
            .map(|c| if c.trim() == old { new } else { c.trim() })
            .collect::<Vec<_>>()
            .join(",");
    }
}

/// Whether rows can be partitioned by a column of type `ty`: types whose stored value is
/// the value (a float's `0` and `-0`, a numeric's scale, a json's spacing, a `char(n)`'s
/// trailing spaces are not).
fn partitionable(ty: &PgType) -> bool {
    matches!(
        ty,
        PgType::Bool
            | PgType::Int2
            | PgType::Int4
            | PgType::Int8
            | PgType::Text
            | PgType::Varchar(_)
            | PgType::Uuid
            | PgType::Bytea
            | PgType::Date
            | PgType::Time(_)
            | PgType::Timestamp(_)
            | PgType::Timestamptz(_)
    )
}

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// Continue each row's hash with the encoding of its value in `column`: a NULL is the
/// byte 0; a value is the byte 1 then its bytes — an integer, date, time or timestamp as
/// a little-endian i64 (so `int2`, `int4` and `int8` keys hash alike), a boolean as one
/// byte, text and bytea as their length (little-endian u32) then their bytes.
fn hash_column(column: &ArrayRef, hashes: &mut [u64]) -> Result<()> {
    match column.data_type() {
        DataType::Int16 => hash_integers::<Int16Type>(column.as_primitive(), hashes),
        DataType::Int32 => hash_integers::<Int32Type>(column.as_primitive(), hashes),
        DataType::Int64 => hash_integers::<Int64Type>(column.as_primitive(), hashes),
        DataType::Date32 => hash_integers::<Date32Type>(column.as_primitive(), hashes),
        DataType::Time64(TimeUnit::Microsecond) => {
            hash_integers::<Time64MicrosecondType>(column.as_primitive(), hashes)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            hash_integers::<TimestampMicrosecondType>(column.as_primitive(), hashes)
        }
        DataType::Boolean => hash_booleans(column.as_boolean(), hashes),
        DataType::Utf8 => {
            let a = column.as_string::<i32>();
            hash_bytes(a, hashes, |i| a.value(i).as_bytes());
        }
        DataType::LargeUtf8 => {
            let a = column.as_string::<i64>();
            hash_bytes(a, hashes, |i| a.value(i).as_bytes());
        }
        DataType::Utf8View => {
            let a = column.as_string_view();
            hash_bytes(a, hashes, |i| a.value(i).as_bytes());
        }
        DataType::Binary => {
            let a = column.as_binary::<i32>();
            hash_bytes(a, hashes, |i| a.value(i));
        }
        other => {
            return Err(brook_err!(
                Internal,
                "no partition hash for a column of Arrow type {other}"
            ))
        }
    }
    Ok(())
}

fn step(hash: &mut u64, bytes: &[u8]) {
    let mut h = fnv::FnvHasher::with_key(*hash);
    h.write(bytes);
    *hash = h.finish();
}

fn hash_integers<T>(a: &PrimitiveArray<T>, hashes: &mut [u64])
where
    T: ArrowPrimitiveType,
    T::Native: Into<i64>,
{
    for (i, hash) in hashes.iter_mut().enumerate() {
        if a.is_null(i) {
            step(hash, &[0]);
        } else {
            let v: i64 = a.value(i).into();
            let mut bytes = [1u8; 9];
            bytes[1..].copy_from_slice(&v.to_le_bytes());
            step(hash, &bytes);
        }
    }
}

fn hash_booleans(a: &BooleanArray, hashes: &mut [u64]) {
    for (i, hash) in hashes.iter_mut().enumerate() {
        if a.is_null(i) {
            step(hash, &[0]);
        } else {
            step(hash, &[1, u8::from(a.value(i))]);
        }
    }
}

fn hash_bytes<'a>(a: &dyn Array, hashes: &mut [u64], value: impl Fn(usize) -> &'a [u8]) {
    for (i, hash) in hashes.iter_mut().enumerate() {
        if a.is_null(i) {
            step(hash, &[0]);
        } else {
            let v = value(i);
            let mut head = [1u8; 5];
            head[1..].copy_from_slice(&u32::try_from(v.len()).unwrap_or(u32::MAX).to_le_bytes());
            step(hash, &head);
            step(hash, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    fn column(name: &str, ty: PgType) -> ColumnMeta {
        ColumnMeta {
            name: name.into(),
            ty,
            not_null: false,
            default: None,
            identity: None,
            comment: None,
            sketch_item: None,
        }
    }

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn batch(sensors: Vec<Option<i32>>, names: Vec<Option<&str>>) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("sensor", DataType::Int32, true),
                Field::new("name", DataType::Utf8, true),
            ])),
            vec![
                Arc::new(Int32Array::from(sensors)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    fn two_columns() -> Vec<ColumnMeta> {
        vec![column("sensor", PgType::Int4), column("name", PgType::Text)]
    }

    #[test]
    fn the_partition_of_a_key_never_changes() {
        // The partitions are part of the cluster log's format: these values must hold in
        // every version (FNV-1a 64 over the encoding documented in `hash_column`).
        let p = Partitioning::from_options(
            &options(&[("partitions", "12"), ("partition_key", "sensor")]),
            &two_columns(),
        )
        .unwrap()
        .unwrap();
        let b = batch(
            vec![Some(0), Some(1), Some(2), Some(7), Some(-1), None],
            vec![None; 6],
        );
        assert_eq!(p.partition_of_rows(&b).unwrap(), vec![4, 5, 6, 3, 4, 3]);
        let by_name = Partitioning::from_options(
            &options(&[("partitions", "5"), ("partition_key", "name, sensor")]),
            &two_columns(),
        )
        .unwrap()
        .unwrap();
        let b = batch(
            vec![Some(1), Some(1), None],
            vec![Some("kitchen"), Some(""), Some("kitchen")],
        );
        assert_eq!(by_name.partition_of_rows(&b).unwrap(), vec![4, 4, 2]);
    }

    #[test]
    fn integer_widths_hash_alike() {
        let int4 = Arc::new(Int32Array::from(vec![5, -3])) as ArrayRef;
        let int8 = Arc::new(Int64Array::from(vec![5, -3])) as ArrayRef;
        let (mut a, mut b) = (vec![FNV_OFFSET_BASIS; 2], vec![FNV_OFFSET_BASIS; 2]);
        hash_column(&int4, &mut a).unwrap();
        hash_column(&int8, &mut b).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn split_keeps_each_partitions_rows_in_order() {
        let p = Partitioning {
            partitions: 3,
            key: vec![0],
        };
        let sensors: Vec<Option<i32>> = (0..30).map(|i| Some(i % 7)).collect();
        let names: Vec<Option<String>> = (0..30).map(|i| Some(format!("r{i:02}"))).collect();
        let b = batch(sensors, names.iter().map(|n| n.as_deref()).collect());
        let parts = p.split(&b).unwrap();
        let of_row = p.partition_of_rows(&b).unwrap();
        let mut seen = 0;
        for (partition, part) in &parts {
            let rows: Vec<&str> = part.column(1).as_string::<i32>().iter().flatten().collect();
            let expected: Vec<String> = (0..30)
                .filter(|&i| of_row[i] == *partition)
                .map(|i| format!("r{i:02}"))
                .collect();
            assert_eq!(rows, expected);
            seen += part.num_rows();
        }
        assert_eq!(seen, 30);
        assert!(parts.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn a_statement_cut_by_partition_is_restored_in_its_order_and_batches() {
        let p = Partitioning {
            partitions: 4,
            key: vec![0],
        };
        let statement: Vec<RecordBatch> = [(0, 5), (5, 12), (12, 13)]
            .iter()
            .map(|&(from, to)| {
                let sensors: Vec<Option<i32>> = (from..to).map(|i| Some(i * 7 % 5)).collect();
                let names: Vec<String> = (from..to).map(|i| format!("r{i:02}")).collect();
                batch(sensors, names.iter().map(|n| Some(n.as_str())).collect())
            })
            .collect();
        let cut = p.cut_statement(&statement).unwrap();
        assert_eq!(cut.batch_rows, vec![5, 7, 1]);
        assert!(cut.parts.len() > 1);
        // The applier receives the partitions' records in partition order.
        let received: Vec<RecordBatch> = cut.parts.into_values().flatten().collect();
        let restored = restore_statement(&received, &cut.batch_rows).unwrap();
        assert_eq!(restored, statement);
    }

    #[test]
    fn malformed_options_are_named() {
        let cases = [
            (vec![("partitions", "12")], "22023", "needs a partition_key"),
            (
                vec![("partition_key", "sensor")],
                "22023",
                "needs partitions",
            ),
            (
                vec![("partitions", "0"), ("partition_key", "sensor")],
                "22023",
                "an integer from 1 to 256",
            ),
            (
                vec![("partitions", "twelve"), ("partition_key", "sensor")],
                "22023",
                "\"twelve\"",
            ),
            (
                vec![("partitions", "4"), ("partition_key", "room")],
                "42703",
                "\"room\" does not exist",
            ),
            (
                vec![("partitions", "4"), ("partition_key", "sensor,sensor")],
                "22023",
                "appears twice",
            ),
            (
                vec![("partitions", "4"), ("partition_key", "reading")],
                "0A000",
                "type double precision",
            ),
        ];
        let mut columns = two_columns();
        columns.push(column("reading", PgType::Float8));
        for (given, code, message) in cases {
            let e = Partitioning::from_options(&options(&given), &columns).unwrap_err();
            assert_eq!(e.sqlstate(), code, "{given:?}: {e}");
            assert!(e.to_string().contains(message), "{given:?}: {e}");
        }
    }
}
