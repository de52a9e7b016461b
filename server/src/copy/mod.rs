//! COPY: PostgreSQL's text, CSV and binary formats, in and out.
//!
//! Incoming data is parsed incrementally ([`CopyParser::feed`]) into rows of text fields,
//! collected column-wise and converted to Arrow batches of [`BATCH_ROWS`] rows, so a COPY of
//! any size runs in bounded memory. Conversion casts whole columns at once; a failed value is
//! then located to report its line, as PostgreSQL does.

mod array;
mod batch;
mod convert;
mod out;
mod parse;

pub use batch::{BatchBuilder, CopyTarget, RawBatch};
pub use convert::{check_lengths, text_to_column};
pub use out::{binary_end, CopyOutEncoder};
pub use parse::CopyParser;

use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption};

/// Rows per batch produced by COPY IN.
pub const BATCH_ROWS: usize = 8192;

/// Data format of a COPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    Binary,
}

/// The options of a COPY statement.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl CopyOptions {
    /// Options from the parsed statement, with PostgreSQL's defaults per format.
    pub fn from_sql(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<CopyOptions> {
        let mut format = CopyFormat::Text;
        let (mut delimiter, mut null, mut header, mut quote, mut escape) =
            (None, None, false, None, None);
        for o in options {
            match o {
                CopyOption::Format(f) => {
                    format = match f.value.to_ascii_lowercase().as_str() {
                        "text" => CopyFormat::Text,
                        "csv" => CopyFormat::Csv,
                        "binary" => CopyFormat::Binary,
                        other => {
                            return Err(brook_err!(
                                InvalidParameter,
                                "COPY format \"{other}\" not recognized"
                            ))
                        }
                    }
                }
                CopyOption::Delimiter(c) => delimiter = Some(single_byte(*c, "delimiter")?),
                CopyOption::Null(s) => null = Some(s.clone()),
                CopyOption::Header(h) => header = *h,
                CopyOption::Quote(c) => quote = Some(single_byte(*c, "quote")?),
                CopyOption::Escape(c) => escape = Some(single_byte(*c, "escape")?),
                CopyOption::Encoding(e) => {
                    if !e.eq_ignore_ascii_case("utf8") && !e.eq_ignore_ascii_case("utf-8") {
                        return Err(brook_err!(
                            Unsupported,
                            "COPY encoding {e} (only UTF8 is supported)"
                        ));
                    }
                }
                CopyOption::Freeze(_) => {}
                other => return Err(brook_err!(Unsupported, "COPY option {other}")),
            }
        }
        for o in legacy {
            match o {
                CopyLegacyOption::Binary => format = CopyFormat::Binary,
                CopyLegacyOption::Delimiter(c) => delimiter = Some(single_byte(*c, "delimiter")?),
                CopyLegacyOption::Null(s) => null = Some(s.clone()),
                CopyLegacyOption::Csv(csv) => {
                    format = CopyFormat::Csv;
                    for c in csv {
                        match c {
                            CopyLegacyCsvOption::Header => header = true,
                            CopyLegacyCsvOption::Quote(q) => {
                                quote = Some(single_byte(*q, "quote")?)
                            }
                            CopyLegacyCsvOption::Escape(e) => {
                                escape = Some(single_byte(*e, "escape")?)
                            }
                            other => return Err(brook_err!(Unsupported, "COPY option {other}")),
                        }
                    }
                }
                other => return Err(brook_err!(Unsupported, "COPY option {other}")),
            }
        }
        let csv = format == CopyFormat::Csv;
        if header && format == CopyFormat::Text {
            return Err(brook_err!(
                Unsupported,
                "COPY HEADER in text format (use FORMAT csv)"
            ));
        }
        let quote = quote.unwrap_or(b'"');
        Ok(CopyOptions {
            format,
            delimiter: delimiter.unwrap_or(if csv { b',' } else { b'\t' }),
            null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() }),
            header,
            quote,
            escape: escape.unwrap_or(quote),
        })
    }
}

fn single_byte(c: char, what: &str) -> Result<u8> {
    if c.is_ascii() {
        Ok(c as u8)
    } else {
        Err(brook_err!(
            InvalidParameter,
            "COPY {what} must be a single one-byte character"
        ))
    }
}

/// Receives parsed COPY data field by field; fields borrow the input buffer where no
/// unescaping is needed, so the hot path copies each byte once, into its column.
pub trait RowSink {
    /// The next field of the current row.
    fn field(&mut self, value: Option<&[u8]>) -> Result<()>;
    /// The current row (starting at input line `line`) is complete.
    fn end_row(&mut self, line: u64) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::parse::{eq_mask, splat};
    use super::*;
    use crate::pg::types::PgType;
    use datafusion::arrow::record_batch::RecordBatch;
    use std::sync::Arc;

    type FieldValue = Option<Vec<u8>>;

    /// Collects parsed rows, for assertions.
    #[derive(Default)]
    struct Collect {
        rows: Vec<(u64, Vec<FieldValue>)>,
        cur: Vec<FieldValue>,
    }

    impl RowSink for Collect {
        fn field(&mut self, value: Option<&[u8]>) -> Result<()> {
            self.cur.push(value.map(|v| v.to_vec()));
            Ok(())
        }
        fn end_row(&mut self, line: u64) -> Result<()> {
            self.rows.push((line, std::mem::take(&mut self.cur)));
            Ok(())
        }
    }

    fn parse(opts: CopyOptions, chunks: &[&[u8]]) -> Result<Vec<(u64, Vec<FieldValue>)>> {
        let mut p = CopyParser::new(opts);
        let mut sink = Collect::default();
        for c in chunks {
            p.feed(c, &mut sink)?;
        }
        p.finish(&mut sink)?;
        Ok(sink.rows)
    }

    fn text() -> CopyOptions {
        CopyOptions::from_sql(&[], &[]).unwrap()
    }

    fn csv() -> CopyOptions {
        CopyOptions {
            format: CopyFormat::Csv,
            ..CopyOptions::from_sql(&[CopyOption::Format("csv".into())], &[]).unwrap()
        }
    }

    fn s(v: &str) -> FieldValue {
        Some(v.as_bytes().to_vec())
    }

    fn binary() -> CopyOptions {
        CopyOptions {
            format: CopyFormat::Binary,
            ..text()
        }
    }

    /// A binary COPY stream: header, rows of (field) values, then the trailer if asked.
    fn binary_data(rows: &[&[Option<&[u8]>]], trailer: bool) -> Vec<u8> {
        let mut out = b"PGCOPY\n\xff\r\n\0".to_vec();
        out.extend_from_slice(&[0; 8]);
        for row in rows {
            out.extend_from_slice(&(row.len() as i16).to_be_bytes());
            for f in *row {
                match f {
                    Some(v) => {
                        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        out.extend_from_slice(v);
                    }
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        if trailer {
            out.extend_from_slice(&(-1i16).to_be_bytes());
        }
        out
    }

    /// The end of data may come at a row boundary without the trailer (pgx sends none), as
    /// PostgreSQL accepts; inside a row it is 22P04.
    #[test]
    fn binary_data_may_end_at_a_row_boundary() {
        let rows: &[&[Option<&[u8]>]] = &[
            &[Some(&[0, 0, 0, 1]), None],
            &[Some(&[0, 0, 0, 2]), Some(b"x")],
        ];
        for trailer in [true, false] {
            let data = binary_data(rows, trailer);
            let (a, b) = data.split_at(30);
            let got = parse(binary(), &[a, b]).unwrap();
            assert_eq!(got.len(), 2, "trailer {trailer}");
            assert_eq!(got[1].1, vec![Some(vec![0, 0, 0, 2]), s("x")]);
        }
        let data = binary_data(rows, false);
        let e = parse(binary(), &[&data[..data.len() - 1]]).unwrap_err();
        assert_eq!(e.sqlstate(), "22P04");
    }

    /// Every byte value in every lane, against every target byte: the mask marks exactly
    /// the equal bytes.
    #[test]
    fn eq_mask_marks_exactly_the_equal_bytes() {
        for target in 0..=255u8 {
            for value in 0..=255u8 {
                for lane in 0..8 {
                    // The other lanes hold the target, or a byte next to it (where a borrow
                    // would show).
                    let mut bytes = [target.wrapping_add(1); 8];
                    bytes[(lane + 1) % 8] = target;
                    bytes[lane] = value;
                    let mask = eq_mask(u64::from_le_bytes(bytes), splat(target));
                    for (i, &b) in bytes.iter().enumerate() {
                        let marked = mask >> (8 * i) & 0xff;
                        assert_eq!(marked, if b == target { 0x80 } else { 0 }, "{bytes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn text_rows_split_across_chunks() {
        let rows = parse(text(), &[b"1\ta\\tb\n2\t\\", b"N\n3\tlast"]).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].1, vec![s("1"), s("a\tb")]);
        assert_eq!(rows[1].1, vec![s("2"), None]);
        assert_eq!(rows[2], (3, vec![s("3"), s("last")]));
    }

    #[test]
    fn end_marker_stops_data() {
        let rows = parse(text(), &[b"1\n\\.\n2\n"]).unwrap();
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn csv_quotes_newlines_and_nulls() {
        let rows = parse(csv(), &[b"1,\"a,\"\"b\"\"\nc\",\n2,\"\",x\n"]).unwrap();
        assert_eq!(rows[0].1, vec![s("1"), s("a,\"b\"\nc"), None]);
        assert_eq!(rows[1].0, 3);
        assert_eq!(rows[1].1, vec![s("2"), s(""), s("x")]);
    }

    #[test]
    fn unterminated_csv_quote_is_22p04() {
        let e = parse(csv(), &[b"1,\"abc\n"]).unwrap_err();
        assert_eq!(e.sqlstate(), "22P04");
    }

    /// Rows of one text column `t`, fed through the parser into a batch.
    fn text_batch(data: &[u8]) -> Result<RecordBatch> {
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let target = Arc::new(CopyTarget {
            schema: Arc::new(Schema::new(vec![Field::new("t", DataType::Utf8, true)])),
            types: vec![PgType::Text],
            field_columns: vec![0],
            defaults: vec![None],
            table: "words".into(),
            not_null: vec![false],
            zone: None,
            binary: false,
        });
        let mut builder = BatchBuilder::new(target);
        let mut p = CopyParser::new(csv());
        p.feed(data, &mut builder)?;
        p.finish(&mut builder)?;
        builder.take_batch()
    }

    #[test]
    fn bad_utf8_is_22021_with_its_line() {
        assert_eq!(text_batch("a\né\n".as_bytes()).unwrap().num_rows(), 2);
        let cases: [(&str, &[u8], &str); 2] = [
            ("a byte that starts nothing", b"a\nb\n\xff\n", "line 3"),
            // Each value alone is invalid, though the bytes run together would be an é.
            (
                "a character split across values",
                b"a\n\xc3\n\xa9\n",
                "line 2",
            ),
        ];
        for (name, data, line) in cases {
            let e = text_batch(data).unwrap_err();
            assert_eq!(e.sqlstate(), "22021", "{name}");
            assert!(e.to_string().contains(line), "{name}: {e}");
        }
    }

    mod chunking {
        use super::*;
        use proptest::prelude::*;

        fn text_field(v: &Option<String>) -> String {
            match v {
                None => "\\N".to_string(),
                Some(s) => s
                    .replace('\\', "\\\\")
                    .replace('\t', "\\t")
                    .replace('\n', "\\n")
                    .replace('\r', "\\r"),
            }
        }

        /// Quoted only when it must be (as PostgreSQL writes CSV), so that both the quoted and
        /// the unquoted field paths are parsed.
        fn csv_field(v: &Option<String>) -> String {
            match v {
                None => String::new(),
                Some(s) if s.is_empty() || s.contains([',', '"', '\n', '\r']) => {
                    format!("\"{}\"", s.replace('"', "\"\""))
                }
                Some(s) => s.clone(),
            }
        }

        fn rows() -> impl Strategy<Value = Vec<Vec<Option<String>>>> {
            // Short fields, and long ones (that the CSV split crosses with `memchr3`).
            let field = proptest::option::of(prop_oneof![
                3 => "[a-z\\\\\t\n\",é ]{0,6}",
                1 => "[a-z,é]{28,90}",
            ]);
            proptest::collection::vec(proptest::collection::vec(field, 3), 1..20)
        }

        fn split_at(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
            points.sort_unstable();
            let mut out = Vec::new();
            let mut last = 0;
            for p in points {
                out.push(data[last..p].to_vec());
                last = p;
            }
            out.push(data[last..].to_vec());
            out
        }

        proptest! {
            /// The rows parsed (and the lines named in errors) do not depend on how the data was
            /// cut into CopyData messages.
            #[test]
            fn text_and_csv_parse_the_same_whatever_the_chunking(rows in rows(), cuts in proptest::collection::vec(0usize..10_000, 0..8)) {
                let want: Vec<Vec<FieldValue>> = rows.iter().map(|r| r.iter().map(|f| f.as_ref().map(|s| s.as_bytes().to_vec())).collect()).collect();
                let text_data: String = rows.iter().map(|r| r.iter().map(text_field).collect::<Vec<_>>().join("\t") + "\n").collect();
                let csv_data: String = rows.iter().map(|r| r.iter().map(csv_field).collect::<Vec<_>>().join(",") + "\n").collect();
                // Each row's first line: text escapes newlines, CSV keeps them in quotes.
                let newlines = |r: &Vec<Option<String>>| -> u64 {
                    r.iter().flatten().map(|f| f.matches('\n').count() as u64).sum()
                };
                let text_lines: Vec<u64> = (1..=rows.len() as u64).collect();
                let csv_lines: Vec<u64> = rows
                    .iter()
                    .scan(1u64, |at, r| { let line = *at; *at += 1 + newlines(r); Some(line) })
                    .collect();
                for (opts, data, lines) in [(text(), text_data.into_bytes(), text_lines), (csv(), csv_data.into_bytes(), csv_lines)] {
                    let chunks = split_at(&data, &cuts);
                    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
                    let parsed = parse(opts, &refs).unwrap();
                    let got: Vec<Vec<FieldValue>> = parsed.iter().map(|(_, f)| f.clone()).collect();
                    prop_assert_eq!(&got, &want);
                    let got_lines: Vec<u64> = parsed.iter().map(|(l, _)| *l).collect();
                    prop_assert_eq!(got_lines, lines);
                }
            }
        }
    }
}
