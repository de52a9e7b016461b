//! How Arrow types are named to a PostgreSQL user in error messages.

use datafusion::arrow::datatypes::DataType;

/// The PostgreSQL name of the type a client sees for values of `dt` (`bigint`, `text`,
/// `double precision[]`, ...); types without a PostgreSQL counterpart keep Arrow's name.
pub fn sql_name(dt: &DataType) -> String {
    let name = match dt {
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 => "bigint",
        DataType::UInt64
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => "numeric",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "bytea",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Timestamp(_, None) => "timestamp without time zone",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Interval(_) | DataType::Duration(_) => "interval",
        DataType::Null => "unknown",
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f) => return format!("{}[]", sql_name(f.data_type())),
        DataType::Dictionary(_, v) => return sql_name(v),
        other => return other.to_string(),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use std::sync::Arc;

    #[test]
    fn names_as_postgresql_prints_them() {
        assert_eq!(sql_name(&DataType::Utf8), "text");
        assert_eq!(sql_name(&DataType::Float64), "double precision");
        let list = DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true)));
        assert_eq!(sql_name(&list), "bigint[]");
    }
}
