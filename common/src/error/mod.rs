//! The one error type of Brook.
//!
//! Every failure that can reach a client is a [`BrookError`]; the wire layer maps it once to
//! a PostgreSQL `ErrorResponse` through [`BrookError::sqlstate`]. `Internal` is reserved for
//! bugs (SQLSTATE XX000); user mistakes must never be reported through it.

mod classify;
pub use classify::is_well_formed_datetime;

/// One-line constructor of an error with a formatted message, as DataFusion's
/// `plan_datafusion_err!`: `brook_err!(Syntax, "syntax error at or near \"{word}\"")` is
/// `BrookError::Syntax(format!(...))`. For the variants that hold one message; the SQLSTATE
/// is the variant's ([`BrookError::sqlstate`]).
#[macro_export]
macro_rules! brook_err {
    ($variant:ident, $($arg:tt)*) => {
        $crate::BrookError::$variant(format!($($arg)*))
    };
}

/// Result alias used across the workspace.
pub type Result<T, E = BrookError> = std::result::Result<T, E>;

/// Every error a Brook statement can end with.
#[derive(Debug, thiserror::Error)]
pub enum BrookError {
    /// 42601: the SQL text does not parse.
    #[error("{0}")]
    Syntax(String),
    /// 42601 with the place in the query text (1-based, in characters) where parsing
    /// stopped, which clients show under the query (psql's `LINE 1: ... ^`).
    #[error("{message}")]
    SyntaxAt { message: String, position: usize },
    /// 42P01: a relation named in the statement does not exist.
    #[error("relation \"{0}\" does not exist")]
    UndefinedTable(String),
    /// 42703: a column named in the statement does not exist.
    #[error("{0}")]
    UndefinedColumn(String),
    /// 42883: a function or operator does not exist.
    #[error("{0}")]
    UndefinedFunction(String),
    /// 42P07: CREATE of a relation that exists.
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    /// 42P06 / 42P04: CREATE SCHEMA / DATABASE that exists.
    #[error("{what} \"{name}\" already exists")]
    DuplicateObject {
        what: &'static str,
        name: String,
        code: &'static str,
    },
    /// 3F000: schema does not exist.
    #[error("schema \"{0}\" does not exist")]
    UndefinedSchema(String),
    /// 3D000: database does not exist.
    #[error("database \"{0}\" does not exist")]
    UndefinedDatabase(String),
    /// 34000: cursor or portal does not exist.
    #[error("cursor \"{0}\" does not exist")]
    UndefinedCursor(String),
    /// 34000: an extended-protocol portal that does not exist.
    #[error("portal \"{0}\" does not exist")]
    UndefinedPortal(String),
    /// 42804 / 42846: a value cannot be used as / converted to the required type.
    #[error("{0}")]
    DatatypeMismatch(String),
    /// 22P02: text that does not parse as the column's type.
    #[error("{0}")]
    InvalidText(String),
    /// 22021: bytes that are not valid UTF-8 where text is expected.
    #[error("{0}")]
    BadEncoding(String),
    /// 2200N: text that is not well-formed XML content.
    #[error("{0}")]
    InvalidXmlContent(String),
    /// 2200M: XML content that is not one document where a document is needed.
    #[error("{0}")]
    InvalidXmlDocument(String),
    /// 10608: an XPath expression that does not parse.
    #[error("{0}")]
    InvalidXPath(String),
    /// 22P04: malformed COPY data (wrong column count, bad quoting, ...).
    #[error("{0}")]
    BadCopyFormat(String),
    /// 22003: numeric value out of range.
    #[error("{0}")]
    OutOfRange(String),
    /// 22008: a date, time, timestamp or interval outside the range Brook stores.
    #[error("{0}")]
    DatetimeOverflow(String),
    /// 22007: text that is not a valid date or time.
    #[error("{0}")]
    InvalidDatetime(String),
    /// 2201B: a regular expression that does not compile.
    #[error("{0}")]
    InvalidRegex(String),
    /// 22012: division by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// 22001: string too long for varchar(n).
    #[error("{0}")]
    StringTooLong(String),
    /// 22025: a LIKE pattern or escape string that is not well formed.
    #[error("{0}")]
    InvalidEscape(String),
    /// 2201F: a power PostgreSQL leaves undefined (zero to a negative power, a negative
    /// number to a non-integer power).
    #[error("{0}")]
    PowerArgument(String),
    /// 22004: a NULL where none is allowed (a thresholds array of `width_bucket`).
    #[error("{0}")]
    NullValueNotAllowed(String),
    /// 2201E: the logarithm of zero or of a negative number.
    #[error("{0}")]
    LogarithmArgument(String),
    /// 2201G: an invalid argument of `width_bucket` (a count below 1, equal bounds, NaN).
    #[error("{0}")]
    WidthBucketArgument(String),
    /// 22014: `ntile(n)` with n below 1.
    #[error("{0}")]
    NtileArgument(String),
    /// 22011: a negative length for `substring`.
    #[error("{0}")]
    SubstringError(String),
    /// 22023: invalid parameter value (e.g. an unknown setting value).
    #[error("{0}")]
    InvalidParameter(String),
    /// 22P03: bytes that do not decode as the expected binary format (e.g. a sketch).
    #[error("{0}")]
    InvalidBinary(String),
    /// 42704: unrecognized configuration parameter or type.
    #[error("{0}")]
    UndefinedObject(String),
    /// 23502: NULL into a NOT NULL column.
    #[error("{0}")]
    NotNullViolation(String),
    /// 23505: a duplicate primary key. The key is the DETAIL, and the constraint and its
    /// table travel in the error's own fields, as PostgreSQL reports them (pgx's
    /// `PgError.ConstraintName`, psycopg's `diag.constraint_name`).
    #[error("duplicate key value violates unique constraint \"{}\"", .0.constraint)]
    DuplicateKey(Box<KeyViolation>),
    /// 0A000: a feature Brook does not support; the message names it.
    #[error("{0}")]
    Unsupported(String),
    /// 42809: wrong object type (e.g. UPDATE of a stream).
    #[error("{0}")]
    WrongObjectType(String),
    /// 25P02: statement in an aborted transaction.
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,
    /// 57014: canceled by the user.
    #[error("canceling statement due to user request")]
    Canceled,
    /// 08P01: protocol violation.
    #[error("{0}")]
    Protocol(String),
    /// 42P18 / 42P02 / 08P01 family for parameters.
    #[error("{0}")]
    Parameter(String),
    /// 28P01 authentication failed.
    #[error("{0}")]
    Auth(String),
    /// 58030: I/O error on the data directory.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// 42P16 / 42601 family for bad definitions (e.g. duplicate column in CREATE).
    #[error("{0}")]
    InvalidDefinition(String),
    /// 55000: object not in the required state (e.g. FETCH BACKWARD on a forward cursor).
    #[error("{0}")]
    ObjectState(String),
    /// 55006: object in use (e.g. DROP DATABASE with sessions connected).
    #[error("{0}")]
    ObjectInUse(String),
    /// 2BP01: DROP of an object others depend on (a stream a materialized view reads).
    #[error("{0}")]
    DependentObjects(String),
    /// 21000: cardinality violation (e.g. an upsert touching a row twice).
    #[error("{0}")]
    Cardinality(String),
    /// XX001: stored data fails its checksum or is missing; the message names the file,
    /// the offset and what to do.
    #[error("{0}")]
    DataCorrupted(String),
    /// 40001: the statement raced with a concurrent change it cannot be ordered after
    /// (e.g. a write planned against a schema an ALTER TABLE replaced); retry it.
    #[error("{0}")]
    SerializationFailure(String),
    /// 53200 / 53300 / 54000 / 54001 family: a resource limit was reached (memory,
    /// connections, statement complexity); the message names the limit.
    #[error("{message}")]
    Limit { message: String, code: &'static str },
    /// 57014 (statement_timeout, or a COPY the client failed) / 55P03 (lock_timeout) /
    /// 25P03 (idle in transaction) / 57P01 (the connection is terminated).
    #[error("{message}")]
    Timeout { message: String, code: &'static str },
    /// An error that happened elsewhere, told here with its own SQLSTATE: the first build
    /// of a materialized view or synopsis, failed by a row of its inputs, told by the
    /// CREATE that started it.
    #[error("{message}")]
    Reported { message: String, code: &'static str },
    /// 42803 (grouping), 42702 (ambiguous column), 42701 (duplicate column): a query that
    /// parses but is wrong in a way PostgreSQL names.
    #[error("{message}")]
    Semantic { message: String, code: &'static str },
    /// 08006 (the cluster's log cannot be reached) / 08007 (a write was sent to the log
    /// but its outcome is unknown): a cluster node lost its substrate mid-statement.
    #[error("{message}")]
    Cluster { message: String, code: &'static str },
    /// 40P01 (deadlock detected) / 3B001 (no such savepoint) / 25001 and 25P01 (a statement
    /// that needs, or must not be in, a transaction block): the transaction block's rules.
    #[error("{message}")]
    Transaction { message: String, code: &'static str },
    /// 2200H: a sequence reached its MAXVALUE or MINVALUE and does not CYCLE.
    #[error("{0}")]
    SequenceLimit(String),
    /// 428C9: a value given for a `GENERATED ALWAYS` identity column.
    #[error("{0}")]
    GeneratedAlways(String),
    /// XX000: a bug in Brook.
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a [`BrookError::DuplicateKey`] reports besides its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyViolation {
    /// `<table>_pkey`
    pub constraint: String,
    pub table: String,
    /// `Key (id)=(1) already exists.`
    pub detail: String,
}

impl BrookError {
    /// The SQLSTATE a PostgreSQL client receives for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            BrookError::Syntax(_) | BrookError::SyntaxAt { .. } => "42601",
            BrookError::UndefinedTable(_) => "42P01",
            BrookError::UndefinedColumn(_) => "42703",
            BrookError::UndefinedFunction(_) => "42883",
            BrookError::DuplicateTable(_) => "42P07",
            BrookError::DuplicateObject { code, .. } => code,
            BrookError::UndefinedSchema(_) => "3F000",
            BrookError::UndefinedDatabase(_) => "3D000",
            BrookError::UndefinedCursor(_) | BrookError::UndefinedPortal(_) => "34000",
            BrookError::DatatypeMismatch(_) => "42804",
            BrookError::InvalidText(_) => "22P02",
            BrookError::BadCopyFormat(_) => "22P04",
            BrookError::BadEncoding(_) => "22021",
            BrookError::InvalidXmlContent(_) => "2200N",
            BrookError::InvalidXmlDocument(_) => "2200M",
            BrookError::InvalidXPath(_) => "10608",
            BrookError::OutOfRange(_) => "22003",
            BrookError::DatetimeOverflow(_) => "22008",
            BrookError::InvalidDatetime(_) => "22007",
            BrookError::InvalidRegex(_) => "2201B",
            BrookError::DivisionByZero => "22012",
            BrookError::StringTooLong(_) => "22001",
            BrookError::InvalidParameter(_) => "22023",
            BrookError::InvalidEscape(_) => "22025",
            BrookError::PowerArgument(_) => "2201F",
            BrookError::LogarithmArgument(_) => "2201E",
            BrookError::NullValueNotAllowed(_) => "22004",
            BrookError::WidthBucketArgument(_) => "2201G",
            BrookError::NtileArgument(_) => "22014",
            BrookError::SubstringError(_) => "22011",
            BrookError::InvalidBinary(_) => "22P03",
            BrookError::UndefinedObject(_) => "42704",
            BrookError::NotNullViolation(_) => "23502",
            BrookError::DuplicateKey(_) => "23505",
            BrookError::Unsupported(_) => "0A000",
            BrookError::WrongObjectType(_) => "42809",
            BrookError::DependentObjects(_) => "2BP01",
            BrookError::InFailedTransaction => "25P02",
            BrookError::Canceled => "57014",
            BrookError::Protocol(_) => "08P01",
            BrookError::Parameter(_) => "42P02",
            BrookError::Auth(_) => "28P01",
            // PostgreSQL reports a full disk as disk_full (53100); other I/O errors 58030.
            BrookError::Io(e) if e.raw_os_error() == Some(28) => "53100",
            BrookError::Io(_) => "58030",
            BrookError::InvalidDefinition(_) => "42P16",
            BrookError::ObjectState(_) => "55000",
            BrookError::ObjectInUse(_) => "55006",
            BrookError::Cardinality(_) => "21000",
            BrookError::DataCorrupted(_) => "XX001",
            BrookError::SerializationFailure(_) => "40001",
            BrookError::Limit { code, .. } => code,
            BrookError::Timeout { code, .. } => code,
            BrookError::Reported { code, .. } => code,
            BrookError::Semantic { code, .. } => code,
            BrookError::Cluster { code, .. } => code,
            BrookError::Transaction { code, .. } => code,
            BrookError::SequenceLimit(_) => "2200H",
            BrookError::GeneratedAlways(_) => "428C9",
            BrookError::Internal(_) => "XX000",
        }
    }

    /// Shorthand for [`BrookError::Unsupported`].
    pub fn unsupported(what: impl Into<String>) -> Self {
        BrookError::Unsupported(what.into())
    }

    /// 42P13: a function definition PostgreSQL would refuse (no language, no result type,
    /// a body of another type than the declared result, ...).
    pub fn invalid_function(message: impl Into<String>) -> Self {
        BrookError::Semantic {
            message: message.into(),
            code: "42P13",
        }
    }

    /// 54001: a statement nested too deeply to plan or evaluate safely.
    pub fn too_complex(what: impl Into<String>) -> Self {
        BrookError::Limit {
            message: what.into(),
            code: "54001",
        }
    }

    /// 53200: a query needed more memory than its limit allows.
    pub fn out_of_memory(what: impl Into<String>) -> Self {
        BrookError::Limit {
            message: what.into(),
            code: "53200",
        }
    }

    /// 42803: a column used outside an aggregate without being grouped by.
    pub fn grouping(what: impl Into<String>) -> Self {
        BrookError::Semantic {
            message: what.into(),
            code: "42803",
        }
    }

    /// 42702: a column name that more than one input has.
    pub fn ambiguous_column(what: impl Into<String>) -> Self {
        BrookError::Semantic {
            message: what.into(),
            code: "42702",
        }
    }

    /// 42701: a column name given twice where names must differ.
    pub fn duplicate_column(what: impl Into<String>) -> Self {
        BrookError::Semantic {
            message: what.into(),
            code: "42701",
        }
    }

    /// Shorthand for [`BrookError::Internal`].
    pub fn internal(what: impl Into<String>) -> Self {
        BrookError::Internal(what.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::error::ArrowError;
    use datafusion::error::DataFusionError;

    /// A Brook error that several partitions share keeps its SQLSTATE.
    #[test]
    fn a_shared_brook_error_keeps_its_code() {
        let inner = DataFusionError::External(Box::new(BrookError::OutOfRange(
            "percentile value 2 is not between 0 and 1".into(),
        )));
        let shared = std::sync::Arc::new(inner);
        let _other_consumer = shared.clone();
        let e = BrookError::from(DataFusionError::Shared(shared));
        assert_eq!(e.sqlstate(), "22003");
        assert_eq!(e.to_string(), "percentile value 2 is not between 0 and 1");
    }

    /// Planning messages DataFusion raises, and the SQLSTATE each must reach the client as.
    #[test]
    fn planning_messages_get_postgresql_codes() {
        let cases = [
            ("split_part", "field position must not be zero", "22023"),
            ("make_date", "Unable to parse date from 2023, 2, 29", "22008"),
            (
                "within group",
                "WITHIN GROUP is only supported for ordered-set aggregate functions",
                "42809",
            ),
            (
                "grouping",
                "Projection references non-aggregate values: Expression t.b could not be resolved from available columns: t.a",
                "42803",
            ),
            (
                "ambiguous column",
                "Ambiguous reference to unqualified field a",
                "42702",
            ),
            (
                "nested aggregates",
                "Error during planning: Aggregate function calls cannot be nested: 'sum(a)' is nested inside 'sum(sum(a))'",
                "42803",
            ),
            (
                "an ordered-set aggregate over a window",
                "OVER and WITHIN GROUP clause cannot be used together. OVER is for window functions, whereas WITHIN GROUP is for ordered set aggregate functions",
                "0A000",
            ),
            (
                "DISTINCT aggregate ordered by another expression",
                "In an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                "42P10",
            ),
            (
                "set operation of different widths",
                "EXCEPT queries have different number of columns",
                "42601",
            ),
            (
                "duplicate output names",
                "Projections require unique expression names but the expression \"t.a\" at position 0 and \"t.a\" at position 1 have the same name. Consider aliasing (\"AS\") one of them. Duplicate field name",
                "42701",
            ),
            (
                "a subquery naming two columns alike",
                "Projections require unique expression names but the expression \"t.k\" at position 0 and \"t.k\" at position 1 have the same name. Consider aliasing (\"AS\") one of them.",
                "0A000",
            ),
            (
                "two FROM items of one name",
                "Schema contains duplicate qualified field name x.id",
                "42712",
            ),
            (
                "a parameter a simple query does not have",
                "Placeholder '$1' was not provided a value for execution.",
                "42P02",
            ),
            (
                "interval * float, which DataFusion lacks",
                "Cannot get result type for temporal operation Interval(MonthDayNano) * Float64: Invalid argument error: Invalid interval arithmetic operation",
                "0A000",
            ),
            (
                "generate_series over a column of an earlier FROM item",
                "Argument #2 must be an INTEGER or NULL, got Column(Column { relation: Some(Bare { table: \"qt\" }), name: \"seq\" })",
                "0A000",
            ),
            (
                "an unknown message is internal, not the user's syntax error",
                "Something DataFusion says that Brook has never seen",
                "XX000",
            ),
        ];
        for (name, message, code) in cases {
            let e: BrookError = DataFusionError::Plan(message.into()).into();
            assert_eq!(e.sqlstate(), code, "{name}: {e}");
        }
    }

    /// Values out of a type's range are 22003, never bad text or an internal error.
    #[test]
    fn range_errors_of_casts_are_22003() {
        for e in [
            ArrowError::CastError("Can't cast value 32768 to type Int16".into()),
            ArrowError::CastError("Cannot cast string '1e500' to value of Decimal128(38, 10) type".into()),
            ArrowError::InvalidArgumentError("99999999999.00 is too large to store in a Decimal128 of precision 10. Max is 99999999.99".into()),
        ] {
            let b: BrookError = e.into();
            assert_eq!(b.sqlstate(), "22003", "{b}");
        }
        let b: BrookError = ArrowError::CastError(
            "Cannot cast string 'abc' to value of Decimal128(38, 10) type".into(),
        )
        .into();
        assert_eq!(b.sqlstate(), "22P02", "{b}");
        let b: BrookError =
            ArrowError::CastError("value of 10000000000 is out of range Int32".into()).into();
        assert_eq!(b.to_string(), "integer out of range");
    }

    #[test]
    fn casts_and_missing_columns_in_postgresql_words() {
        let b: BrookError =
            ArrowError::CastError("Cannot cast string 'one' to value of Int32 type".into()).into();
        assert_eq!(b.sqlstate(), "22P02");
        assert_eq!(
            b.to_string(),
            "invalid input syntax for type integer: \"one\""
        );
        let b: BrookError =
            DataFusionError::Plan("No field named nosuchcol. Valid fields are t.a, t.b.".into())
                .into();
        assert_eq!(b.sqlstate(), "42703");
        assert_eq!(b.to_string(), "column \"nosuchcol\" does not exist");
        let b: BrookError =
            ArrowError::CastError("Cannot cast value 'maybe' to value of Boolean type".into())
                .into();
        assert_eq!(
            b.to_string(),
            "invalid input syntax for type boolean: \"maybe\""
        );
        let b: BrookError =
            ArrowError::CastError("Cannot cast string '3000000000' to value of Int32 type".into())
                .into();
        assert_eq!(b.sqlstate(), "22003");
        assert_eq!(
            b.to_string(),
            "value \"3000000000\" is out of range for type integer"
        );
        let b: BrookError = DataFusionError::Plan("No field named t.nope.".into()).into();
        assert_eq!(b.to_string(), "column t.nope does not exist");
    }

    #[test]
    fn table_not_found_is_42p01() {
        let e: BrookError =
            DataFusionError::Plan("table 'brook.public.nope' not found".into()).into();
        assert_eq!(e.sqlstate(), "42P01");
        assert_eq!(e.to_string(), "relation \"nope\" does not exist");
        // `(SELECT * FROM nope) UNION ALL (SELECT 1 + 'a')`: both sides fail to plan.
        let both: BrookError = DataFusionError::Collection(vec![
            DataFusionError::Plan("table 'brook.public.nope' not found".into()),
            DataFusionError::Plan("Cannot coerce".into()),
        ])
        .into();
        assert_eq!(both.sqlstate(), "42P01");
        let function: BrookError =
            DataFusionError::Plan("table function 'jsonb_array_elements' not found".into()).into();
        assert_eq!(function.sqlstate(), "42883");
    }

    #[test]
    fn division_by_zero_is_22012() {
        let e: BrookError = ArrowError::DivideByZero.into();
        assert_eq!(e.sqlstate(), "22012");
    }

    #[test]
    fn values_of_unmatched_types_are_42804() {
        let e: BrookError = DataFusionError::Plan(
            "Inconsistent data type across values list at row 1 column 0. Was Time64(µs) but \
             found Int32"
                .into(),
        )
        .into();
        assert_eq!(e.sqlstate(), "42804");
    }

    #[test]
    fn wrong_arguments_name_no_function_42883() {
        let e: BrookError = DataFusionError::Plan(
            "Internal error: Function 'f' failed to match any signature, errors: Error during planning: The function 'f' expected 2 arguments but received 1,Error during planning: x".into(),
        )
        .into();
        assert_eq!(e.sqlstate(), "42883");
        assert_eq!(
            e.to_string(),
            "function f does not accept these arguments: The function 'f' expected 2 arguments but received 1"
        );
    }

    /// PostgreSQL's codes for bad regexes, zero steps, dates and a full disk.
    #[test]
    fn data_exceptions_get_postgresql_codes() {
        let cases: Vec<(BrookError, &str)> = vec![
            (
                DataFusionError::Execution(
                    "Cannot cast Timestamp(µs) value 253402214400000000 to Timestamp(ns): \
                     converted value exceeds the representable i64 range"
                        .into(),
                )
                .into(),
                "22008",
            ),
            (
                ArrowError::CastError(
                    "Cannot cast Timestamp(µs) value 253402214400000000 to Timestamp(ns): \
                     converted value exceeds the representable i64 range"
                        .into(),
                )
                .into(),
                "22008",
            ),
            (
                ArrowError::ComputeError("Regular expression did not compile: (".into()).into(),
                "2201B",
            ),
            (
                DataFusionError::Plan("Step cannot be zero".into()).into(),
                "22023",
            ),
            (
                ArrowError::CastError("Cannot cast string 'soon' to value of Date32 type".into())
                    .into(),
                "22007",
            ),
            (
                ArrowError::CastError(
                    "Cannot cast string '2026-13-45' to value of Date32 type".into(),
                )
                .into(),
                "22008",
            ),
            (
                ArrowError::CastError("Cannot cast string 'x' to value of Int32 type".into())
                    .into(),
                "22P02",
            ),
            (
                BrookError::Io(std::io::Error::from_raw_os_error(28)),
                "53100",
            ),
            (
                BrookError::Io(std::io::Error::from_raw_os_error(5)),
                "58030",
            ),
            (
                DataFusionError::ResourcesExhausted("Failed to allocate".into()).into(),
                "53200",
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.sqlstate(), code, "{e}");
        }
    }

    #[test]
    fn not_implemented_is_0a000() {
        let e: BrookError = DataFusionError::NotImplemented("LATERAL".into()).into();
        assert_eq!(e.sqlstate(), "0A000");
    }
}
