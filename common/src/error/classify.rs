//! How errors from Arrow, DataFusion and sqlparser become [`BrookError`]s with PostgreSQL's
//! SQLSTATEs: DataFusion reports most failures as text, so its messages are read here
//! (the casts, ranges, missing columns and functions PostgreSQL names by code).

use super::BrookError;
use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;

impl From<ArrowError> for BrookError {
    fn from(e: ArrowError) -> Self {
        classify_arrow(e)
    }
}

impl From<DataFusionError> for BrookError {
    fn from(e: DataFusionError) -> Self {
        classify_datafusion(e)
    }
}

/// A Brook error raised inside DataFusion (a function, a table provider, an operator): it
/// travels as `External` and comes back out with its SQLSTATE ([`classify_datafusion`]).
impl From<BrookError> for DataFusionError {
    fn from(e: BrookError) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

impl From<datafusion::sql::sqlparser::parser::ParserError> for BrookError {
    fn from(e: datafusion::sql::sqlparser::parser::ParserError) -> Self {
        BrookError::Syntax(strip_parser_prefix(&e.to_string()))
    }
}

fn strip_parser_prefix(msg: &str) -> String {
    let msg = msg.strip_prefix("sql parser error: ").unwrap_or(msg);
    format!("syntax error: {msg}")
}

/// Whether date/time text is made of digits and separators only: a value PostgreSQL
/// rejects as out of range (22008) rather than as no date at all (22007).
pub fn is_well_formed_datetime(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || "-:. T+".contains(c))
}

/// Whether an Arrow cast/parse message is about a date, time or timestamp.
fn is_datetime_message(m: &str) -> bool {
    [
        "Date32",
        "Date64",
        "Timestamp(",
        "Time64",
        "Time32",
        "parsing timestamp",
        "parsing date",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// PostgreSQL's words for a value an integer type cannot hold ("Can't cast value 40000 to
/// type Int16" is "smallint out of range").
fn integer_range_message(m: String) -> String {
    let name = match m.rsplit(' ').next() {
        Some("Int16") => "smallint",
        Some("Int32") => "integer",
        Some("Int64") => "bigint",
        _ => return m,
    };
    format!("{name} out of range")
}

/// A stored timestamp (of microseconds: from the year 1 on) taken into an expression,
/// whose timestamps are DataFusion's nanoseconds: 22008 with the ranges, not Arrow's cast
/// message.
fn nanosecond_overflow(m: &str) -> Option<BrookError> {
    (m.contains("to Timestamp(ns") && m.contains("exceeds the representable")).then(|| {
        BrookError::DatetimeOverflow(
            "timestamp out of range: timestamps in expressions are between 1677-09-21 and \
             2262-04-11 (a column stores them from the year 1 to 262143)"
                .into(),
        )
    })
}

fn classify_arrow(e: ArrowError) -> BrookError {
    match e {
        ArrowError::DivideByZero => BrookError::DivisionByZero,
        ArrowError::CastError(m) if nanosecond_overflow(&m).is_some() => {
            nanosecond_overflow(&m).unwrap_or(BrookError::DatetimeOverflow(m))
        }
        ArrowError::CastError(m) | ArrowError::ParseError(m) => {
            if m.starts_with("Can't cast value")
                || (m.starts_with("value of ") && m.contains(" is out of range "))
                || number_too_large_for_decimal(&m)
            {
                // An integer that does not fit the narrower type, or a well-formed number
                // too large for numeric's 38 digits: out of range (22003), not bad text.
                BrookError::OutOfRange(integer_range_message(m))
            } else if m.contains("overflow") || m.contains("out of range") || m.contains("Overflow")
            {
                if is_datetime_message(&m) {
                    BrookError::DatetimeOverflow(m)
                } else {
                    BrookError::OutOfRange(m)
                }
            } else if let Some(rest) = m.strip_prefix("Invalid input syntax for type interval") {
                // Arrow's interval parser; PostgreSQL's 22007 and words.
                BrookError::InvalidDatetime(format!("invalid input syntax for type interval{rest}"))
            } else if is_datetime_message(&m) {
                // PostgreSQL: well-formed text with a field out of range is 22008, other
                // text that is no date or time 22007.
                let quoted = m.split('\'').nth(1).unwrap_or("");
                if is_well_formed_datetime(quoted) {
                    BrookError::DatetimeOverflow(m)
                } else {
                    BrookError::InvalidDatetime(m)
                }
            } else if let Some(e) = integer_out_of_range(&m) {
                e
            } else {
                BrookError::InvalidText(input_syntax(&m).unwrap_or(m))
            }
        }
        ArrowError::ComputeError(m) if m.contains("Overflow") || m.contains("overflow") => {
            BrookError::OutOfRange(m)
        }
        ArrowError::ComputeError(m) if m.contains("Regular expression did not compile") => {
            BrookError::InvalidRegex(m)
        }
        // A value with more digits than a numeric(p, s) column or cast allows.
        ArrowError::InvalidArgumentError(m)
            if m.contains("too large to store in a Decimal")
                || m.contains("too small to store in a Decimal") =>
        {
            BrookError::OutOfRange(format!("numeric field overflow ({m})"))
        }
        ArrowError::ArithmeticOverflow(m) if m.starts_with("value out of range") => {
            BrookError::OutOfRange(m)
        }
        ArrowError::ArithmeticOverflow(m) => {
            BrookError::OutOfRange(format!("integer out of range ({m})"))
        }
        ArrowError::ExternalError(inner) => match inner.downcast::<BrookError>() {
            Ok(b) => *b,
            Err(other) => match other.downcast::<DataFusionError>() {
                Ok(d) => classify_datafusion(*d),
                Err(other) => BrookError::Internal(other.to_string()),
            },
        },
        other => BrookError::Internal(other.to_string()),
    }
}

/// Arrow's `Cannot cast string 'one' to value of Int32 type` (or `value '...'`): the text
/// and the PostgreSQL name of the type it was cast to.
fn failed_cast(m: &str) -> Option<(&str, &'static str)> {
    let rest = m
        .strip_prefix("Cannot cast string '")
        .or_else(|| m.strip_prefix("Cannot cast value '"))?;
    let (text, rest) = rest.rsplit_once("' to value of ")?;
    let pg = match rest.strip_suffix(" type").unwrap_or(rest) {
        "Int16" => "smallint",
        "Int32" => "integer",
        "Int64" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Boolean" => "boolean",
        t if t.starts_with("Decimal") => "numeric",
        _ => return None,
    };
    Some((text, pg))
}

/// A failed cast in PostgreSQL's words: `invalid input syntax for type integer: "one"`.
fn input_syntax(m: &str) -> Option<String> {
    let (text, pg) = failed_cast(m)?;
    Some(format!("invalid input syntax for type {pg}: \"{text}\""))
}

/// An integer too large for the integer type it was cast to is out of range (22003), as
/// PostgreSQL says, not bad text.
fn integer_out_of_range(m: &str) -> Option<BrookError> {
    let (text, pg) = failed_cast(m)?;
    let digits = text.trim().strip_prefix(['+', '-']).unwrap_or(text.trim());
    let integer = matches!(pg, "smallint" | "integer" | "bigint")
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit());
    integer
        .then(|| BrookError::OutOfRange(format!("value \"{text}\" is out of range for type {pg}")))
}

/// DataFusion's `No field named nope. Valid fields are ...` (or `t.nope`) in PostgreSQL's
/// words: `column "nope" does not exist` (`column t.nope does not exist`).
fn missing_column(m: &str) -> Option<String> {
    let rest = m.split("No field named ").nth(1)?;
    let name = rest
        .split(". ")
        .next()
        .unwrap_or(rest)
        .trim_end_matches('.');
    let name = name.replace('"', "");
    Some(match name.rsplit_once('.') {
        Some(_) => format!("column {name} does not exist"),
        None => format!("column \"{name}\" does not exist"),
    })
}

/// `Cannot cast string '1e500' to value of Decimal128(..) type`: well-formed number text
/// that numeric's 38 digits cannot hold.
fn number_too_large_for_decimal(m: &str) -> bool {
    m.contains("to value of Decimal") && m.split('\'').nth(1).is_some_and(is_number_text)
}

/// Whether text is a decimal number (sign, digits with at most one point, an exponent).
fn is_number_text(t: &str) -> bool {
    let t = t.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let digits = mantissa.chars().filter(char::is_ascii_digit).count();
    let points = mantissa.chars().filter(|&c| c == '.').count();
    let mantissa_ok = digits > 0 && points <= 1 && digits + points == mantissa.len();
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

/// DataFusion reports user mistakes (planning errors, unknown tables) and bugs through one
/// enum; this sorts them into SQLSTATEs by variant and, for planning errors, by message.
/// The Brook error inside a DataFusion error that cannot be taken apart (it is shared).
fn shared_brook_error(e: &DataFusionError) -> Option<&BrookError> {
    match e {
        DataFusionError::External(inner) => inner.downcast_ref::<BrookError>().or_else(|| {
            inner
                .downcast_ref::<DataFusionError>()
                .and_then(shared_brook_error)
        }),
        DataFusionError::ArrowError(a, _) => match a.as_ref() {
            ArrowError::ExternalError(inner) => inner.downcast_ref::<BrookError>().or_else(|| {
                inner
                    .downcast_ref::<DataFusionError>()
                    .and_then(shared_brook_error)
            }),
            _ => None,
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            shared_brook_error(inner)
        }
        DataFusionError::Shared(inner) => shared_brook_error(inner),
        _ => None,
    }
}

fn classify_datafusion(e: DataFusionError) -> BrookError {
    match e {
        DataFusionError::ArrowError(a, _) => classify_arrow(*a),
        DataFusionError::SQL(p, _) => BrookError::from(*p),
        DataFusionError::Context(_, inner) => classify_datafusion(*inner),
        DataFusionError::Diagnostic(_, inner) => classify_datafusion(*inner),
        // Both sides of a set operation failed to plan: PostgreSQL reports the first.
        DataFusionError::Collection(errors) => match errors.into_iter().next() {
            Some(first) => classify_datafusion(first),
            None => BrookError::Internal("an empty collection of errors".into()),
        },
        // An error several partitions' consumers share (a repartition's): a Brook error in
        // it keeps its SQLSTATE and message.
        DataFusionError::Shared(inner) => match std::sync::Arc::try_unwrap(inner) {
            Ok(e) => classify_datafusion(e),
            Err(arc) => match shared_brook_error(&arc) {
                Some(b) => BrookError::Semantic {
                    message: b.to_string(),
                    code: b.sqlstate(),
                },
                None => classify_message(&arc.to_string()),
            },
        },
        DataFusionError::External(inner) => match inner.downcast::<BrookError>() {
            Ok(b) => *b,
            Err(other) => match other.downcast::<ArrowError>() {
                Ok(a) => classify_arrow(*a),
                Err(other) => match other.downcast::<DataFusionError>() {
                    Ok(d) => classify_datafusion(*d),
                    Err(other) => classify_message(&other.to_string()),
                },
            },
        },
        DataFusionError::NotImplemented(m) | DataFusionError::Internal(m)
            if m.contains("OuterReferenceColumn") =>
        {
            lateral_unsupported()
        }
        // `(a, b) IN (SELECT x, y ...)`: DataFusion compares one value with a subquery.
        DataFusionError::Internal(m) | DataFusionError::Plan(m)
            if m.contains("The subquery should only return one column") =>
        {
            BrookError::Unsupported(
                "a row of several values compared with a subquery ((a, b) IN (SELECT ...)); \
                 compare with EXISTS instead"
                    .into(),
            )
        }
        // A set-returning function inside an aggregate's arguments (`sum(generate_series(1,
        // 3))`) reaches DataFusion as an `unnest` it cannot place: say what, as PostgreSQL.
        DataFusionError::NotImplemented(m) if m.contains("Unnest should be rewritten") => {
            BrookError::Unsupported(
                "set-returning functions inside an aggregate's arguments (move the function \
                 into a LATERAL FROM item)"
                    .into(),
            )
        }
        DataFusionError::NotImplemented(m) => BrookError::Unsupported(clean(&m)),
        DataFusionError::SchemaError(s, _) => {
            let m = clean(&s.to_string());
            if m.contains("not found") || m.contains("No field named") {
                BrookError::UndefinedColumn(missing_column(&m).unwrap_or(m))
            } else {
                classify_message(&m)
            }
        }
        DataFusionError::Plan(m) | DataFusionError::Execution(m) => classify_message(&m),
        DataFusionError::Configuration(m) => BrookError::UndefinedObject(clean(&m)),
        DataFusionError::ResourcesExhausted(m) => {
            // "Additional allocation failed for <operator> with top memory consumers ...":
            // name the operator, leave out the pool's bookkeeping.
            let first = clean(&m);
            let what = first
                .split(" with top memory consumers")
                .next()
                .unwrap_or(&first)
                .trim_end_matches(':')
                .to_string();
            BrookError::out_of_memory(format!(
                "out of memory: {what} (the server's memory for queries is used up; raise --memory-limit or make the query need less)"
            ))
        }
        // DataFusion's ScalarSubqueryExec calls a second row an internal error; PostgreSQL
        // answers 21000.
        DataFusionError::Internal(m) if is_subquery_cardinality(&m) => subquery_cardinality(),
        // The array form of generate_series (a LATERAL series over a column) reports a zero
        // step as internal; PostgreSQL's message and 22023, as for constant bounds.
        DataFusionError::Internal(m) if is_zero_series_step(&m) => {
            BrookError::InvalidParameter("step size cannot equal zero".into())
        }
        // An asynchronous function (pg_sleep) where DataFusion plans none (a join
        // condition, a window's argument): it reaches the call that only says so.
        DataFusionError::Internal(m)
            if m.contains("async functions should not be called directly") =>
        {
            BrookError::Unsupported(
                "pg_sleep() here: it runs in a select list, WHERE or an aggregate's argument"
                    .into(),
            )
        }
        DataFusionError::Internal(m) => BrookError::Internal(m),
        other => classify_message(&other.to_string()),
    }
}

fn is_zero_series_step(m: &str) -> bool {
    m.contains("generate_series") && (m.contains("step can't be 0") || m.contains("must not be 0"))
}

/// A LATERAL subquery (or table function) reading an earlier FROM item that DataFusion
/// could not decorrelate: its outer references reached execution. (`planner/src/lateral.rs`
/// runs those that compute from the left row alone.)
fn lateral_unsupported() -> BrookError {
    BrookError::Unsupported(
        "a subquery or LATERAL item reading columns of an earlier FROM item in this form (it \
         runs when it computes from that row alone, or reads it only in WHERE conditions \
         without LIMIT)"
            .into(),
    )
}

fn clean(m: &str) -> String {
    m.lines().next().unwrap_or(m).trim().to_string()
}

fn is_subquery_cardinality(m: &str) -> bool {
    m.contains("subquery returned more than one row")
}

fn subquery_cardinality() -> BrookError {
    BrookError::Cardinality("more than one row returned by a subquery used as an expression".into())
}

/// Sort a planning/execution message by what it says.
fn classify_message(m: &str) -> BrookError {
    if is_subquery_cardinality(m) {
        return subquery_cardinality();
    }
    let m = clean(m);
    // A function's own coercion refused the arguments (Brook's SQL functions and aggregates
    // say why); DataFusion wraps that message in its own.
    let inner = "user-defined coercion failed with: External error: ";
    if let Some(at) = m.find(inner) {
        let said = &m[at + inner.len()..];
        let said = said.split(". No function matches").next().unwrap_or(said);
        return BrookError::UndefinedFunction(said.to_string());
    }
    let lower = m.to_ascii_lowercase();
    // A table function DataFusion does not know (`jsonb_array_elements`): PostgreSQL's 42883.
    if let Some(name) = lower
        .strip_prefix("table function '")
        .and_then(|r| r.strip_suffix("' not found"))
    {
        return BrookError::UndefinedFunction(format!("function {name} does not exist"));
    }
    if let Some(name) = lower
        .strip_prefix("table '")
        .and_then(|r| r.split('\'').next())
    {
        if lower.contains("not found") {
            let short = name.rsplit('.').next().unwrap_or(name).to_string();
            return BrookError::UndefinedTable(short);
        }
    }
    // A named argument no parameter has (`make_interval(foo => 1)`): PostgreSQL's 42883;
    // one named twice: its 42601.
    if let Some(rest) = m.strip_prefix("Unknown parameter name '") {
        let (name, valid) = rest
            .split_once("'. Valid parameters are: ")
            .unwrap_or((rest, ""));
        return BrookError::UndefinedFunction(format!(
            "function has no parameter named \"{name}\" (its parameters: {})",
            valid.trim_matches(['[', ']'])
        ));
    }
    if let Some(name) = m
        .strip_prefix("Parameter '")
        .and_then(|r| r.strip_suffix("' specified multiple times"))
    {
        return BrookError::Syntax(format!("argument name \"{name}\" used more than once"));
    }
    if m.starts_with("Positional argument at position") && m.contains("follows named argument") {
        return BrookError::Syntax("positional argument cannot follow named argument".into());
    }
    // `SELECT nosuch.*`: PostgreSQL's 42P01.
    if let Some(name) = m.strip_prefix("Invalid qualifier ") {
        return BrookError::UndefinedTable(name.trim().to_string());
    }
    // `ORDER BY 3` past the select list: PostgreSQL's 42P10.
    if let Some(rest) = m.strip_prefix("Order by column out of bounds, specified: ") {
        let position = rest.split(',').next().unwrap_or(rest);
        return BrookError::Semantic {
            message: format!("ORDER BY position {position} is not in select list"),
            code: "42P10",
        };
    }
    if m.starts_with("Order by index starts at 1 for column indexes") {
        return BrookError::Semantic {
            message: "ORDER BY position 0 is not in select list".into(),
            code: "42P10",
        };
    }
    if let Some(rest) = m.strip_prefix("Cannot find column with position ") {
        let position = rest.split(' ').next().unwrap_or(rest);
        return BrookError::Semantic {
            message: format!("GROUP BY position {position} is not in select list"),
            code: "42P10",
        };
    }
    // More column aliases than columns: PostgreSQL's 42P10. (Fewer are completed before
    // planning, but for a subquery whose select list has a `*` or whose names repeat.)
    if let Some((columns, names)) = m
        .strip_prefix("Source table contains ")
        .and_then(|r| r.split_once(" columns but only "))
    {
        let names = names.split(' ').next().unwrap_or(names);
        let more = names.parse::<usize>().ok() > columns.parse::<usize>().ok();
        return if more {
            BrookError::Semantic {
                message: format!(
                    "the FROM item has {columns} columns available but {names} columns specified"
                ),
                code: "42P10",
            }
        } else {
            BrookError::Unsupported(format!(
                "{names} column aliases for a FROM item of {columns} columns whose other names are not known before planning (a * in a subquery) or repeat: name every column"
            ))
        };
    }
    // `SELECT *` over no FROM: 42601, as PostgreSQL's.
    if lower.starts_with("select * with no tables specified") {
        return BrookError::Syntax(m);
    }
    // `split_part(s, d, 0)`: PostgreSQL's message and 22023.
    if lower.contains("field position must not be zero") {
        return BrookError::InvalidParameter("field position must not be zero".into());
    }
    // `make_date(2023, 2, 29)`: PostgreSQL's 22008, its fields in its message.
    if let Some(fields) = m.strip_prefix("Unable to parse date from ") {
        let parts: Vec<&str> = fields.split(", ").collect();
        let shown = match parts.as_slice() {
            [y, mo, d] => format!("{y}-{mo:0>2}-{d:0>2}"),
            _ => fields.to_string(),
        };
        return BrookError::DatetimeOverflow(format!("date field value out of range: {shown}"));
    }
    // `string_agg(x, ',') WITHIN GROUP (ORDER BY x)`: PostgreSQL's 42809.
    if m.contains("WITHIN GROUP is only supported for ordered-set aggregate functions") {
        return BrookError::Semantic {
            message: "WITHIN GROUP is only for ordered-set aggregates (percentile_cont, \
                      percentile_disc, mode); write ORDER BY inside the call"
                .into(),
            code: "42809",
        };
    }
    if lower.contains("divide by zero") || lower.contains("division by zero") {
        BrookError::DivisionByZero
    } else if lower.contains("regular expression did not compile")
        || lower.contains("regex parse error")
    {
        // The second is the `regex` crate's own (a pattern, or a flag it does not know).
        BrookError::InvalidRegex(m)
    } else if is_zero_series_step(&m) {
        BrookError::InvalidParameter("step size cannot equal zero".into())
    } else if lower.contains("step cannot be zero")
        || lower.contains("step interval cannot be zero")
    {
        BrookError::InvalidParameter(m)
    } else if lower.contains("no field named")
        || lower.contains("column") && lower.contains("not found")
    {
        BrookError::UndefinedColumn(missing_column(&m).unwrap_or(m))
    } else if lower.contains("failed to match any signature") {
        // PostgreSQL: a call with the wrong number or types of arguments names no function.
        let name = m.split('\'').nth(1).unwrap_or("the function");
        let why = m
            .split("errors: ")
            .nth(1)
            .and_then(|e| e.split(',').next())
            .map(|e| e.trim_start_matches("Error during planning: "))
            .unwrap_or("");
        BrookError::UndefinedFunction(format!(
            "function {name} does not accept these arguments: {why}"
        ))
    } else if lower.contains("cannot get result type for temporal operation") {
        // e.g. interval * double precision, which DataFusion lacks.
        BrookError::Unsupported(format!("this operation on date/time values: {m}"))
    } else if lower.contains("outerreferencecolumn") {
        lateral_unsupported()
    } else if lower.contains("must be an integer or null, got column") {
        // `FROM t, generate_series(1, t.n)`: DataFusion's table functions take constants.
        BrookError::Unsupported(format!(
            "a table function reading a column of an earlier FROM item (LATERAL): {m}"
        ))
    } else if lower.contains("unexpected argument type to") {
        // A JSON function given a path step that is neither text nor an integer.
        BrookError::UndefinedFunction(m)
    } else if let Some(name) = m
        .split("Invalid function '")
        .nth(1)
        .and_then(|r| r.split('\'').next())
    {
        // DataFusion knows no function of this name (its message may add a suggestion).
        let suggestion = m
            .split("Did you mean '")
            .nth(1)
            .and_then(|r| r.split('\'').next())
            .map(|s| format!(" (did you mean {s}?)"))
            .unwrap_or_default();
        BrookError::UndefinedFunction(format!("function {name} does not exist{suggestion}"))
    } else if lower.contains("invalid function") || lower.contains("no function matches") {
        BrookError::UndefinedFunction(m)
    } else if lower.contains("overflow") || lower.contains("out of range") {
        BrookError::OutOfRange(m)
    } else if let Some(e) = nanosecond_overflow(&m) {
        e
    } else if lower.contains("inconsistent data type across values list") {
        // A VALUES column whose rows have types no coercion unifies (`('12:00'::time),
        // (1)`): PostgreSQL's "VALUES types ... cannot be matched", 42804.
        BrookError::DatatypeMismatch(format!("VALUES types cannot be matched: {m}"))
    } else if lower.contains("cannot cast")
        || lower.contains("cannot infer common")
        || lower.contains("can't be evaluated because")
        || lower.contains("type coercion")
        || lower.contains("failed to coerce")
    {
        BrookError::DatatypeMismatch(m)
    } else if lower.contains("unsupported") || lower.contains("not supported") {
        BrookError::Unsupported(m)
    } else if lower.contains("cannot parse")
        || lower.contains("error parsing")
        || lower.contains("invalid input")
    {
        BrookError::InvalidText(m)
    } else if lower.contains("non-aggregate values") || lower.contains("group by") {
        BrookError::grouping(m)
    } else if lower.contains("ambiguous reference") || lower.contains("would be ambiguous") {
        BrookError::ambiguous_column(m)
    } else if m.contains("Projections require unique expression names")
        && !lower.contains("duplicate")
    {
        // `FROM (SELECT k, k FROM t) x`: PostgreSQL keeps both columns named `k`.
        BrookError::Unsupported(format!(
            "a subquery's select list naming two columns alike (name them apart with AS or a \
             column alias list): {m}"
        ))
    } else if let Some(table) = m
        .split("duplicate qualified field name ")
        .nth(1)
        .and_then(|r| r.rsplit_once('.'))
        .map(|(table, _)| table.trim_matches('"'))
    {
        // `FROM t x, t x`: two FROM items of one name, PostgreSQL's 42712.
        BrookError::Semantic {
            message: format!("table name \"{table}\" specified more than once"),
            code: "42712",
        }
    } else if let Some(number) = m
        .strip_prefix("Placeholder '$")
        .and_then(|r| r.split('\'').next())
        .filter(|_| m.contains("was not provided a value"))
    {
        // A `$n` in a statement sent without parameters (a simple query).
        BrookError::Parameter(format!("there is no parameter ${number}"))
    } else if lower.contains("duplicate") && (lower.contains("field") || lower.contains("name")) {
        BrookError::duplicate_column(m)
    } else if lower.contains("field metadata differs") {
        // A recursive query whose term yields another declared type than its non-recursive
        // part (varchar(5) there, text here): PostgreSQL refuses it with 42804 too.
        BrookError::DatatypeMismatch(format!(
            "a recursive query's column has one declared type in its non-recursive term and another in its recursive term: {m}"
        ))
    } else if m.contains("Aggregate function calls cannot be nested") {
        // The inner and outer calls are left out: they may be a rewrite's, not the user's.
        BrookError::Semantic {
            message: "aggregate function calls cannot be nested".into(),
            code: "42803",
        }
    } else if m.contains("OVER and WITHIN GROUP clause cannot be used together") {
        BrookError::Unsupported(
            "OVER with an ordered-set aggregate (WITHIN GROUP): it is not a window function".into(),
        )
    } else if m.contains(
        "In an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
    ) {
        BrookError::Semantic {
            message:
                "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list"
                    .into(),
            code: "42P10",
        }
    } else if let Some(op) = ["UNION", "INTERSECT", "EXCEPT"]
        .into_iter()
        .find(|op| m.contains(&format!("{op} queries have different number of columns")))
    {
        // PostgreSQL's wording and code for set operations of different widths.
        BrookError::Syntax(format!(
            "each {op} query must have the same number of columns"
        ))
    } else {
        // Not a message Brook knows: reported as internal (XX000, and logged by the wire
        // layer) so that it is seen and classified, never passed off as the user's syntax
        // error.
        BrookError::Internal(m)
    }
}
