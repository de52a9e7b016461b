//! PostgreSQL column types and their Arrow representation.

use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType as SqlType, ExactNumberInfo, TimezoneInfo,
};
use postgres_types::Type;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

pub use brook_common::types::PG_TYPE_KEY;

/// The [`PG_TYPE_KEY`] value of a list of catalog oids (no column has this type).
pub const OID_ARRAY_TYPE: &str = "oid[]";

/// A column type as declared in CREATE TABLE / CREATE STREAM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PgType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// `numeric(p, s)`; unconstrained numeric is stored as (38, 10) and printed trimmed.
    Numeric {
        precision: Option<u8>,
        scale: Option<i8>,
    },
    Text,
    Varchar(Option<u32>),
    Char(Option<u32>),
    Bytea,
    Date,
    /// `time [(p)]`, `timestamp [(p)]`, `timestamptz [(p)]`: microseconds, or values rounded
    /// to `p` decimals of a second when declared with a precision (0–6).
    Time(Option<u8>),
    Timestamp(Option<u8>),
    Timestamptz(Option<u8>),
    Interval,
    Json,
    Jsonb,
    Uuid,
    /// `xml`: kept as its text, checked to be well-formed XML content (`pg::xml`).
    Xml,
    /// A one-dimensional array of the element type (`integer[]`), stored as an Arrow list.
    /// PostgreSQL does not enforce a declared number of dimensions (`int[][]` is `int[]`);
    /// Brook stores one dimension and refuses a nested value by name.
    Array(Box<PgType>),
}

/// [`PgType`]'s variants as serde reads them (`remote`): the catalog's form of a type.
#[derive(Deserialize)]
#[serde(remote = "PgType")]
enum StoredType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric {
        precision: Option<u8>,
        scale: Option<i8>,
    },
    Text,
    Varchar(Option<u32>),
    Char(Option<u32>),
    Bytea,
    Date,
    Time(Option<u8>),
    Timestamp(Option<u8>),
    Timestamptz(Option<u8>),
    Interval,
    Json,
    Jsonb,
    Uuid,
    Xml,
    Array(Box<PgType>),
}

/// The time types as catalogs written before 2026-12-06 hold them: unit variants, from
/// before they had a precision.
#[derive(Deserialize)]
enum UnitTimeType {
    Time,
    Timestamp,
    Timestamptz,
}

/// A type in either form: a catalog written by an earlier Brook must still open.
#[derive(Deserialize)]
#[serde(untagged)]
enum AnyStoredType {
    Unit(UnitTimeType),
    Current(#[serde(with = "StoredType")] PgType),
}

impl<'de> Deserialize<'de> for PgType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(match AnyStoredType::deserialize(d)? {
            AnyStoredType::Unit(UnitTimeType::Time) => PgType::Time(None),
            AnyStoredType::Unit(UnitTimeType::Timestamp) => PgType::Timestamp(None),
            AnyStoredType::Unit(UnitTimeType::Timestamptz) => PgType::Timestamptz(None),
            AnyStoredType::Current(t) => t,
        })
    }
}

impl PgType {
    /// The type for a sqlparser data type of a column definition or cast.
    pub fn from_sql(t: &SqlType) -> Result<PgType> {
        use SqlType as S;
        Ok(match t {
            S::Bool | S::Boolean => PgType::Bool,
            S::SmallInt(_) | S::Int2(_) => PgType::Int2,
            S::Int(_) | S::Integer(_) | S::Int4(_) | S::MediumInt(_) => PgType::Int4,
            S::BigInt(_) | S::Int8(_) => PgType::Int8,
            S::Real | S::Float4 => PgType::Float4,
            S::Float(info) => match info {
                ExactNumberInfo::Precision(p) | ExactNumberInfo::PrecisionAndScale(p, _)
                    if *p <= 24 =>
                {
                    PgType::Float4
                }
                _ => PgType::Float8,
            },
            S::Double(_) | S::DoublePrecision | S::Float8 | S::Float64 => PgType::Float8,
            S::Numeric(info) | S::Decimal(info) | S::Dec(info) => match info {
                ExactNumberInfo::None => PgType::Numeric {
                    precision: None,
                    scale: None,
                },
                ExactNumberInfo::Precision(p) => numeric(*p, 0)?,
                ExactNumberInfo::PrecisionAndScale(p, s) => numeric(*p, *s)?,
            },
            S::Text | S::String(_) => PgType::Text,
            S::Varchar(len) | S::CharacterVarying(len) | S::CharVarying(len) => {
                PgType::Varchar(char_len(len))
            }
            S::Char(len) | S::Character(len) => PgType::Char(char_len(len).or(Some(1))),
            S::Bytea => PgType::Bytea,
            S::Date => PgType::Date,
            S::Time(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => {
                return Err(brook_err!(
                    Unsupported,
                    "type time with time zone is not supported (use timestamp with time \
                     zone, or time)"
                ))
            }
            S::Time(p, _) => PgType::Time(precision(*p)),
            S::Timestamp(p, tz) => match tz {
                TimezoneInfo::WithTimeZone | TimezoneInfo::Tz => PgType::Timestamptz(precision(*p)),
                _ => PgType::Timestamp(precision(*p)),
            },
            S::Interval { .. } => PgType::Interval,
            S::JSON => PgType::Json,
            S::JSONB => PgType::Jsonb,
            S::Uuid => PgType::Uuid,
            S::Array(
                ArrayElemTypeDef::SquareBracket(inner, _) | ArrayElemTypeDef::AngleBracket(inner),
            ) => match PgType::from_sql(inner)? {
                PgType::Array(elem) => PgType::Array(elem),
                elem => PgType::Array(Box::new(elem)),
            },
            S::Custom(name, args) if args.is_empty() => {
                let n = name.to_string().to_ascii_lowercase();
                match n.trim_matches('"') {
                    "timestamptz" => PgType::Timestamptz(None),
                    "float4" => PgType::Float4,
                    "float8" => PgType::Float8,
                    "int" | "int4" => PgType::Int4,
                    "int2" => PgType::Int2,
                    "int8" => PgType::Int8,
                    "bool" => PgType::Bool,
                    "string" => PgType::Text,
                    "xml" => PgType::Xml,
                    other => {
                        return Err(brook_err!(
                            UndefinedObject,
                            "type \"{other}\" does not exist"
                        ))
                    }
                }
            }
            other => {
                return Err(brook_err!(
                    Unsupported,
                    "column type {other} is not supported"
                ))
            }
        })
    }

    /// The Arrow type values of this column are stored as.
    pub fn arrow(&self) -> DataType {
        match self {
            PgType::Bool => DataType::Boolean,
            PgType::Int2 => DataType::Int16,
            PgType::Int4 => DataType::Int32,
            PgType::Int8 => DataType::Int64,
            PgType::Float4 => DataType::Float32,
            PgType::Float8 => DataType::Float64,
            PgType::Numeric { precision, scale } => match (precision, scale) {
                (Some(p), s) => DataType::Decimal128(*p, s.unwrap_or(0)),
                (None, None) => DataType::Decimal128(38, 10),
                // An unconstrained numeric a view or CREATE TABLE AS keeps at a quotient's
                // scale (`udf::numeric_division`).
                (None, Some(s)) => DataType::Decimal128(38, *s),
            },
            PgType::Text
            | PgType::Varchar(_)
            | PgType::Char(_)
            | PgType::Json
            | PgType::Jsonb
            | PgType::Uuid
            | PgType::Xml => DataType::Utf8,
            PgType::Bytea => DataType::Binary,
            PgType::Date => DataType::Date32,
            PgType::Time(_) => DataType::Time64(TimeUnit::Microsecond),
            PgType::Timestamp(_) => DataType::Timestamp(TimeUnit::Microsecond, None),
            PgType::Timestamptz(_) => {
                DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
            }
            PgType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
            PgType::Array(elem) => {
                DataType::List(Arc::new(Field::new_list_field(elem.arrow(), true)))
            }
        }
    }

    /// The Arrow field of a column of this type, carrying the declared type as metadata
    /// where its Arrow type does not tell it (`varchar(n)`, `json`, `uuid`, an
    /// unconstrained `numeric`, ...). A type the Arrow type names alone (`integer` is
    /// Int32) carries none: a value computed from the column (`n + 1` in a recursive
    /// query's term, a UNION branch) then has the column's own field, where metadata on
    /// one side only made DataFusion refuse the plan ("field metadata differs").
    pub fn field(&self, name: &str, nullable: bool) -> Field {
        let field = Field::new(name, self.arrow(), nullable);
        if arrow_wire_type(&self.arrow()) == self.wire()
            && self.typmod() == -1
            && !self.is_numeric()
        {
            return field;
        }
        field.with_metadata(HashMap::from([(PG_TYPE_KEY.to_string(), self.name())]))
    }

    fn is_numeric(&self) -> bool {
        matches!(self, PgType::Numeric { .. })
    }

    /// The type as PostgreSQL prints it (`integer`, `character varying(10)`, ...).
    pub fn name(&self) -> String {
        match self {
            PgType::Bool => "boolean".into(),
            PgType::Int2 => "smallint".into(),
            PgType::Int4 => "integer".into(),
            PgType::Int8 => "bigint".into(),
            PgType::Float4 => "real".into(),
            PgType::Float8 => "double precision".into(),
            PgType::Numeric {
                precision: Some(p),
                scale,
            } => format!("numeric({p},{})", scale.unwrap_or(0)),
            PgType::Numeric { .. } => "numeric".into(),
            PgType::Text => "text".into(),
            PgType::Varchar(Some(n)) => format!("character varying({n})"),
            PgType::Varchar(None) => "character varying".into(),
            PgType::Char(n) => format!("character({})", n.unwrap_or(1)),
            PgType::Bytea => "bytea".into(),
            PgType::Date => "date".into(),
            PgType::Time(p) => format!("time{} without time zone", modifier(*p)),
            PgType::Timestamp(p) => format!("timestamp{} without time zone", modifier(*p)),
            PgType::Timestamptz(p) => format!("timestamp{} with time zone", modifier(*p)),
            PgType::Interval => "interval".into(),
            PgType::Json => "json".into(),
            PgType::Jsonb => "jsonb".into(),
            PgType::Uuid => "uuid".into(),
            PgType::Xml => "xml".into(),
            PgType::Array(elem) => format!("{}[]", elem.name()),
        }
    }

    /// The type's name without its modifier, as `pg_typeof` prints it (`character
    /// varying`, `numeric`).
    pub fn type_name(&self) -> String {
        match self {
            PgType::Numeric { .. } => "numeric".into(),
            PgType::Varchar(_) => "character varying".into(),
            PgType::Char(_) => "character".into(),
            PgType::Array(elem) => format!("{}[]", elem.type_name()),
            PgType::Time(_) => PgType::Time(None).name(),
            PgType::Timestamp(_) => PgType::Timestamp(None).name(),
            PgType::Timestamptz(_) => PgType::Timestamptz(None).name(),
            other => other.name(),
        }
    }

    /// The declared type recorded in a field's metadata, if any.
    pub fn from_field(field: &Field) -> Option<PgType> {
        let name = field.metadata().get(PG_TYPE_KEY)?;
        Self::from_name(name)
    }

    /// Parse a name produced by [`PgType::name`].
    pub fn from_name(name: &str) -> Option<PgType> {
        PgType::from_sql(&sql_data_type(name)?).ok()
    }

    /// The wire type of values of this column.
    pub fn wire(&self) -> Type {
        match self {
            PgType::Bool => Type::BOOL,
            PgType::Int2 => Type::INT2,
            PgType::Int4 => Type::INT4,
            PgType::Int8 => Type::INT8,
            PgType::Float4 => Type::FLOAT4,
            PgType::Float8 => Type::FLOAT8,
            PgType::Numeric { .. } => Type::NUMERIC,
            PgType::Text => Type::TEXT,
            PgType::Varchar(_) => Type::VARCHAR,
            PgType::Char(_) => Type::BPCHAR,
            PgType::Bytea => Type::BYTEA,
            PgType::Date => Type::DATE,
            PgType::Time(_) => Type::TIME,
            PgType::Timestamp(_) => Type::TIMESTAMP,
            PgType::Timestamptz(_) => Type::TIMESTAMPTZ,
            PgType::Interval => Type::INTERVAL,
            PgType::Json => Type::JSON,
            PgType::Jsonb => Type::JSONB,
            PgType::Uuid => Type::UUID,
            PgType::Xml => Type::XML,
            PgType::Array(elem) => array_of(&elem.wire()),
        }
    }

    /// The declared fractional-second precision of a time or timestamp type.
    pub fn precision(&self) -> Option<u8> {
        match self {
            PgType::Time(p) | PgType::Timestamp(p) | PgType::Timestamptz(p) => *p,
            _ => None,
        }
    }

    /// The type without its fractional-second precision (`timestamp(0)`: `timestamp`).
    pub fn without_precision(&self) -> PgType {
        match self {
            PgType::Time(_) => PgType::Time(None),
            PgType::Timestamp(_) => PgType::Timestamp(None),
            PgType::Timestamptz(_) => PgType::Timestamptz(None),
            other => other.clone(),
        }
    }

    /// `atttypmod` as PostgreSQL computes it (-1 when the type has no modifier).
    pub fn typmod(&self) -> i32 {
        match self {
            PgType::Varchar(Some(n)) | PgType::Char(Some(n)) => *n as i32 + 4,
            PgType::Numeric {
                precision: Some(p),
                scale,
            } => (((*p as i32) << 16) | (scale.unwrap_or(0) as i32 & 0xffff)) + 4,
            PgType::Array(elem) => elem.typmod(),
            PgType::Time(Some(p)) | PgType::Timestamp(Some(p)) | PgType::Timestamptz(Some(p)) => {
                *p as i32
            }
            _ => -1,
        }
    }
}

/// A type name (`integer[]`, `character varying(10)`) as the parser's data type.
pub fn sql_data_type(name: &str) -> Option<SqlType> {
    let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
    datafusion::sql::sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(name)
        .ok()?
        .parse_data_type()
        .ok()
}

/// A declared fractional-second precision: PostgreSQL reduces one above 6 to 6 (with a
/// warning).
fn precision(p: Option<u64>) -> Option<u8> {
    p.map(|p| p.min(brook_planner::time_precision::MAX_PRECISION) as u8)
}

/// `(p)` of a declared precision, as PostgreSQL prints it in a type's name.
fn modifier(p: Option<u8>) -> String {
    p.map(|p| format!("({p})")).unwrap_or_default()
}

fn numeric(p: u64, s: i64) -> Result<PgType> {
    if !(1..=38).contains(&p) {
        return Err(brook_err!(
            InvalidDefinition,
            "NUMERIC precision {p} must be between 1 and 38"
        ));
    }
    if s < 0 || s as u64 > p {
        return Err(brook_err!(
            InvalidDefinition,
            "NUMERIC scale {s} must be between 0 and precision {p}"
        ));
    }
    Ok(PgType::Numeric {
        precision: Some(p as u8),
        scale: Some(s as i8),
    })
}

fn char_len(len: &Option<datafusion::sql::sqlparser::ast::CharacterLength>) -> Option<u32> {
    use datafusion::sql::sqlparser::ast::CharacterLength;
    match len {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length as u32),
        _ => None,
    }
}

/// The wire type for a result column: the declared type when the field carries one, else a
/// mapping of the Arrow type.
pub fn wire_type(field: &Field) -> Type {
    if field.metadata().get(PG_TYPE_KEY).map(String::as_str) == Some(OID_ARRAY_TYPE) {
        return Type::OID_ARRAY;
    }
    if let Some(t) = PgType::from_field(field) {
        if t.arrow() == *field.data_type() {
            return t.wire();
        }
    }
    arrow_wire_type(field.data_type())
}

/// The PostgreSQL wire type closest to an Arrow type.
pub fn arrow_wire_type(dt: &DataType) -> Type {
    match dt {
        DataType::Boolean => Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        DataType::Int64 | DataType::UInt32 => Type::INT8,
        DataType::UInt64
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _)
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _) => Type::NUMERIC,
        DataType::Float16 | DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Type::TEXT,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Type::BYTEA,
        DataType::Date32 | DataType::Date64 => Type::DATE,
        DataType::Time32(_) | DataType::Time64(_) => Type::TIME,
        DataType::Timestamp(_, None) => Type::TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Interval(_) | DataType::Duration(_) => Type::INTERVAL,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f) => match f.data_type() {
            // PostgreSQL has one type for an array of any number of dimensions.
            inner @ (DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::ListView(_)) => arrow_wire_type(inner),
            element => array_of(&arrow_wire_type(element)),
        },
        DataType::Dictionary(_, v) => arrow_wire_type(v),
        DataType::Struct(_) => Type::RECORD,
        _ => Type::TEXT,
    }
}

fn array_of(t: &Type) -> Type {
    match *t {
        Type::BOOL => Type::BOOL_ARRAY,
        Type::INT2 => Type::INT2_ARRAY,
        Type::INT4 => Type::INT4_ARRAY,
        Type::INT8 => Type::INT8_ARRAY,
        Type::FLOAT4 => Type::FLOAT4_ARRAY,
        Type::FLOAT8 => Type::FLOAT8_ARRAY,
        Type::NUMERIC => Type::NUMERIC_ARRAY,
        Type::DATE => Type::DATE_ARRAY,
        Type::TIMESTAMP => Type::TIMESTAMP_ARRAY,
        Type::TIMESTAMPTZ => Type::TIMESTAMPTZ_ARRAY,
        Type::TIME => Type::TIME_ARRAY,
        Type::INTERVAL => Type::INTERVAL_ARRAY,
        Type::BYTEA => Type::BYTEA_ARRAY,
        Type::VARCHAR => Type::VARCHAR_ARRAY,
        Type::BPCHAR => Type::BPCHAR_ARRAY,
        Type::JSON => Type::JSON_ARRAY,
        Type::JSONB => Type::JSONB_ARRAY,
        Type::UUID => Type::UUID_ARRAY,
        Type::XML => Type::XML_ARRAY,
        _ => Type::TEXT_ARRAY,
    }
}

/// The name `pg_typeof` gives a value of field `field`: its recorded type (`jsonb`,
/// `character varying`), else its Arrow type's ([`typeof_name`]).
pub fn typeof_field_name(field: &Field) -> String {
    match PgType::from_field(field) {
        Some(t) => t.type_name(),
        None => typeof_name(field.data_type()),
    }
}

/// The name PostgreSQL's `pg_typeof` (and `format_type`) gives a value of Arrow type
/// `dt`: `integer`, `double precision`, `timestamp without time zone`, `text[]`, and
/// `unknown` for an untyped NULL.
pub fn typeof_name(dt: &DataType) -> String {
    if *dt == DataType::Null {
        return "unknown".into();
    }
    let t = arrow_wire_type(dt);
    match t {
        Type::TIME => "time without time zone".into(),
        Type::TIMESTAMP => "timestamp without time zone".into(),
        Type::TIMESTAMPTZ => "timestamp with time zone".into(),
        Type::TIMESTAMP_ARRAY => "timestamp without time zone[]".into(),
        Type::TIMESTAMPTZ_ARRAY => "timestamp with time zone[]".into(),
        Type::TIME_ARRAY => "time without time zone[]".into(),
        _ => cast_name(&t).map_or_else(|| t.name().to_string(), str::to_string),
    }
}

/// The PostgreSQL name of a wire type, usable in `CAST(... AS name)`.
pub fn cast_name(t: &Type) -> Option<&'static str> {
    Some(match *t {
        Type::BOOL => "boolean",
        Type::INT2 => "smallint",
        Type::INT4 => "integer",
        Type::INT8 => "bigint",
        Type::FLOAT4 => "real",
        Type::FLOAT8 => "double precision",
        Type::NUMERIC => "numeric",
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => "text",
        Type::BYTEA => "bytea",
        Type::DATE => "date",
        Type::TIME => "time",
        Type::TIMESTAMP => "timestamp",
        Type::TIMESTAMPTZ => "timestamptz",
        Type::INTERVAL => "interval",
        Type::OID => "bigint",
        Type::BOOL_ARRAY => "boolean[]",
        Type::INT2_ARRAY => "smallint[]",
        Type::INT4_ARRAY => "integer[]",
        Type::INT8_ARRAY => "bigint[]",
        Type::FLOAT4_ARRAY => "real[]",
        Type::FLOAT8_ARRAY => "double precision[]",
        Type::NUMERIC_ARRAY => "numeric[]",
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY | Type::NAME_ARRAY => "text[]",
        Type::DATE_ARRAY => "date[]",
        Type::TIMESTAMP_ARRAY => "timestamp[]",
        Type::TIMESTAMPTZ_ARRAY => "timestamptz[]",
        Type::TIME_ARRAY => "time[]",
        Type::INTERVAL_ARRAY => "interval[]",
        Type::BYTEA_ARRAY => "bytea[]",
        // Kept as text elements; the column's type checks each one on the way in.
        Type::UUID_ARRAY | Type::JSON_ARRAY | Type::JSONB_ARRAY | Type::XML_ARRAY => "text[]",
        Type::XML => "xml",
        Type::JSON => "json",
        Type::JSONB => "jsonb",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogs_read_types_in_their_earlier_form_too() {
        let read = |json: &str| serde_json::from_str::<PgType>(json).unwrap();
        assert_eq!(read(r#""Timestamp""#), PgType::Timestamp(None));
        assert_eq!(
            read(r#"{"Array":"Timestamptz"}"#),
            PgType::Array(Box::new(PgType::Timestamptz(None)))
        );
        assert_eq!(read(r#""Int4""#), PgType::Int4);
        assert_eq!(
            read(r#"{"Numeric":{"precision":10,"scale":2}}"#),
            PgType::Numeric {
                precision: Some(10),
                scale: Some(2)
            }
        );
        for t in [
            PgType::Time(Some(2)),
            PgType::Timestamp(None),
            PgType::Array(Box::new(PgType::Timestamp(Some(0)))),
            PgType::Varchar(Some(3)),
        ] {
            assert_eq!(read(&serde_json::to_string(&t).unwrap()), t);
        }
        assert!(serde_json::from_str::<PgType>(r#""Money""#).is_err());
    }

    #[test]
    fn typeof_names_are_postgresqls() {
        assert_eq!(typeof_name(&DataType::Int32), "integer");
        assert_eq!(typeof_name(&DataType::Float64), "double precision");
        assert_eq!(
            typeof_name(&DataType::Timestamp(TimeUnit::Microsecond, None)),
            "timestamp without time zone"
        );
        assert_eq!(typeof_name(&DataType::Null), "unknown");
        assert_eq!(typeof_name(&DataType::Decimal128(10, 2)), "numeric");
    }

    #[test]
    fn names_round_trip() {
        for t in [
            PgType::Int4,
            PgType::Varchar(Some(10)),
            PgType::Numeric {
                precision: Some(10),
                scale: Some(2),
            },
            PgType::Numeric {
                precision: None,
                scale: None,
            },
            PgType::Timestamptz(None),
            PgType::Jsonb,
            PgType::Char(Some(3)),
        ] {
            assert_eq!(
                PgType::from_name(&t.name()),
                Some(t.clone()),
                "{}",
                t.name()
            );
        }
    }

    #[test]
    fn bad_numeric_precision_is_rejected() {
        assert!(numeric(0, 0).is_err());
        assert!(numeric(10, 11).is_err());
    }
}
