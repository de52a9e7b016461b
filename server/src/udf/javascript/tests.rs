use super::*;
use crate::catalog::function::{FunctionArgMeta, Language};
use datafusion::arrow::array::{
    Decimal128Array, Float64Array, Int32Array, Int64Array, ListArray, StringArray,
};
use datafusion::arrow::datatypes::Int32Type;

/// A JavaScript function `f` of arguments (name, type) returning `returns`.
fn function(args: &[(&str, PgType)], returns: PgType, body: &str) -> Result<JsFunction> {
    let meta = FunctionMeta {
        args: args
            .iter()
            .map(|(n, ty)| FunctionArgMeta {
                name: (!n.is_empty()).then(|| n.to_string()),
                ty: ty.clone(),
            })
            .collect(),
        returns,
        language: Language::Javascript,
        body: body.to_string(),
        volatility: "immutable".into(),
        strict: false,
        comment: None,
    };
    check("f", &meta)?;
    js_function("f", &meta, Duration::from_millis(300))
}

/// `f` over the columns `arrays`, as one array.
fn call(f: &JsFunction, arrays: Vec<ArrayRef>) -> Result<ArrayRef> {
    let rows = arrays.first().map_or(1, |a| a.len());
    let values = f.call_rows(&arrays, rows, None)?;
    let built = ScalarValue::iter_to_array(values)?;
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    Ok(cast_with_options(&built, &f.returns.arrow(), &options)?)
}

fn ints(v: &[Option<i32>]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}

#[test]
fn computes_per_row_with_named_and_numbered_arguments() {
    let gcd = function(
        &[("a", PgType::Int4), ("", PgType::Int4)],
        PgType::Int4,
        "let b = $2; while (b != 0) { [a, b] = [b, a % b]; } return a;",
    )
    .unwrap();
    let out = call(
        &gcd,
        vec![
            ints(&[Some(12), Some(7), None]),
            ints(&[Some(18), Some(3), Some(4)]),
        ],
    )
    .unwrap();
    // NULL arrives as null (the function is not STRICT): null % 4 is 0.
    assert_eq!(
        out.as_ref(),
        &Int32Array::from(vec![Some(6), Some(1), Some(4)]) as &dyn Array
    );
}

#[test]
fn strict_functions_are_not_called_with_nulls() {
    let mut f = function(&[("a", PgType::Int4)], PgType::Int4, "return a + 1;").unwrap();
    f.strict = true;
    let out = call(&f, vec![ints(&[Some(1), None])]).unwrap();
    assert_eq!(
        out.as_ref(),
        &Int32Array::from(vec![Some(2), None]) as &dyn Array
    );
}

#[test]
fn results_of_the_wrong_kind_are_errors() {
    let cases = [
        ("return 2.5;", PgType::Int4, "22P02"),
        ("return 3000000000;", PgType::Int4, "22003"),
        ("return {a: 1};", PgType::Int8, "42804"),
        ("return [1];", PgType::Text, "42804"),
        ("return 'x';", PgType::Bool, "42804"),
        (
            "return Infinity;",
            PgType::Numeric {
                precision: None,
                scale: None,
            },
            "22003",
        ),
        ("return new Date(NaN);", PgType::Timestamp(None), "22007"),
        ("throw new Error('no');", PgType::Int4, "P0001"),
        ("throw 'plain';", PgType::Int4, "P0001"),
    ];
    for (body, returns, code) in cases {
        let f = function(&[], returns, body).unwrap();
        let err = call(&f, vec![]).unwrap_err();
        assert_eq!(err.sqlstate(), code, "{body}: {err}");
    }
}

#[test]
fn a_thrown_error_keeps_its_message() {
    let f = function(&[], PgType::Int4, "throw new RangeError('too big');").unwrap();
    let err = call(&f, vec![]).unwrap_err().to_string();
    assert!(err.contains("RangeError: too big"), "{err}");
}

#[test]
fn limits_stop_runaway_functions() {
    let cases = [
        ("while (true) {}", "57014"),
        (
            "let a = []; while (true) { a.push(new Array(1 << 20).fill(1.5)); }",
            "53200",
        ),
        (
            "function r(n) { return r(n + 1) + 1; } return r(0);",
            "54001",
        ),
    ];
    for (body, code) in cases {
        let f = function(&[], PgType::Int4, body).unwrap();
        let err = call(&f, vec![]).unwrap_err();
        assert_eq!(err.sqlstate(), code, "{body}: {err}");
        // The sandbox that hit a limit is gone: the next call starts afresh and stops again.
        assert_eq!(call(&f, vec![]).unwrap_err().sqlstate(), code);
    }
}

#[test]
fn a_cancelled_statement_stops_its_call() {
    let f = function(&[], PgType::Int4, "while (true) {}").unwrap();
    // A limit no test waits for: only the cancel can stop the call.
    let f = JsFunction {
        call_limit: Duration::from_secs(3600),
        ..f
    };
    let token = CancellationToken::new();
    let cancel = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        cancel.cancel();
    });
    let err = f.call_rows(&[], 1, Some(&token)).unwrap_err();
    assert!(matches!(err, BrookError::Canceled), "{err}");
}

#[test]
fn bodies_that_do_not_compile_are_refused() {
    for body in ["return (;", "let let = 1;", "return a +;"] {
        let err = function(&[], PgType::Int4, body).unwrap_err();
        assert_eq!(err.sqlstate(), "42601", "{body}: {err}");
    }
    let err = function(&[], PgType::Bytea, "return 1;").unwrap_err();
    assert_eq!(err.sqlstate(), "0A000");
}

#[test]
fn numbers_cross_exactly_or_not_at_all() {
    let numeric = PgType::Numeric {
        precision: Some(20),
        scale: Some(2),
    };
    let f = function(&[("x", numeric.clone())], numeric.clone(), "return x * 2;").unwrap();
    let exact: ArrayRef = Arc::new(
        Decimal128Array::from(vec![Some(125), None])
            .with_precision_and_scale(20, 2)
            .unwrap(),
    );
    let out = call(&f, vec![exact]).unwrap();
    // null * 2 is 0 in JavaScript (a STRICT function would not be called).
    let expected = Decimal128Array::from(vec![Some(250), Some(0)])
        .with_precision_and_scale(20, 2)
        .unwrap();
    assert_eq!(out.as_ref(), &expected as &dyn Array);
    // 18 significant digits: no double holds them.
    let wide: ArrayRef = Arc::new(
        Decimal128Array::from(vec![Some(123_456_789_012_345_678)])
            .with_precision_and_scale(20, 2)
            .unwrap(),
    );
    assert_eq!(call(&f, vec![wide]).unwrap_err().sqlstate(), "22003");
    // A bigint beyond 2^53 is a BigInt, and comes back whole.
    let big = function(&[("x", PgType::Int8)], PgType::Int8, "return x + 1n;").unwrap();
    let v: ArrayRef = Arc::new(Int64Array::from(vec![9_007_199_254_740_993]));
    let out = call(&big, vec![v]).unwrap();
    assert_eq!(
        out.as_ref(),
        &Int64Array::from(vec![9_007_199_254_740_994]) as &dyn Array
    );
    let half = function(&[("x", PgType::Float8)], PgType::Float8, "return x / 2;").unwrap();
    let v: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
    let out = call(&half, vec![v]).unwrap();
    assert_eq!(out.as_ref(), &Float64Array::from(vec![0.5]) as &dyn Array);
}

#[test]
fn json_and_arrays_are_javascript_values() {
    let keys = function(
        &[("j", PgType::Jsonb)],
        PgType::Array(Box::new(PgType::Text)),
        "return Object.keys(j).sort();",
    )
    .unwrap();
    let j: ArrayRef = Arc::new(StringArray::from(vec![r#"{"b": 1, "a": [2]}"#]));
    let out = call(&keys, vec![j]).unwrap();
    assert_eq!(
        ScalarValue::try_from_array(&out, 0).unwrap().to_string(),
        "[a, b]"
    );
    let build = function(
        &[("a", PgType::Array(Box::new(PgType::Int4)))],
        PgType::Jsonb,
        "return {sum: a.reduce((s, x) => s + x, 0), n: a.length};",
    )
    .unwrap();
    let a: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2), Some(3)]),
    ]));
    let out = call(&build, vec![a]).unwrap();
    assert_eq!(
        ScalarValue::try_from_array(&out, 0).unwrap().to_string(),
        r#"{"n": 3, "sum": 6}"#
    );
}
