//! COPY: PostgreSQL's text, CSV and binary formats, in and out.
//!
//! Incoming data is parsed incrementally ([`CopyParser::feed`]) into rows of text fields,
//! collected column-wise and converted to Arrow batches of [`BATCH_ROWS`] rows, so a COPY of
//! any size runs in bounded memory. Conversion casts whole columns at once; a failed value is
//! then located to report its line, as PostgreSQL does.

use crate::pg::encode::ColumnView;
use crate::pg::fast_text::{fast_integers, RawText};
use crate::pg::types::PgType;
use brook_common::{BrookError, Result};
use datafusion::arrow::array::{new_null_array, Array, ArrayRef, BinaryBuilder};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption};
use std::sync::Arc;

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
                            return Err(BrookError::InvalidParameter(format!(
                                "COPY format \"{other}\" not recognized"
                            )))
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
                        return Err(BrookError::unsupported(format!(
                            "COPY encoding {e} (only UTF8 is supported)"
                        )));
                    }
                }
                CopyOption::Freeze(_) => {}
                other => return Err(BrookError::unsupported(format!("COPY option {other}"))),
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
                            other => {
                                return Err(BrookError::unsupported(format!("COPY option {other}")))
                            }
                        }
                    }
                }
                other => return Err(BrookError::unsupported(format!("COPY option {other}"))),
            }
        }
        let csv = format == CopyFormat::Csv;
        if header && format == CopyFormat::Text {
            return Err(BrookError::unsupported(
                "COPY HEADER in text format (use FORMAT csv)",
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
        Err(BrookError::InvalidParameter(format!(
            "COPY {what} must be a single one-byte character"
        )))
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

/// Incremental parser of COPY IN data.
pub struct CopyParser {
    opts: CopyOptions,
    buf: Vec<u8>,
    /// Line number of the next record (1-based), for error messages.
    pub line: u64,
    header_pending: bool,
    binary_header_done: bool,
    finished: bool,
    /// Reused buffer for fields that need unescaping.
    scratch: Vec<u8>,
    /// Reused (start, end) of the fields of the record being read.
    spans: Vec<(usize, usize)>,
}

/// What [`CopyParser::csv_plain_record`] found.
enum Plain {
    /// A whole record without quotes, ending at this offset (its newline or the data's end).
    Record(usize),
    /// The record continues past the data read so far.
    Incomplete,
    /// The record has a quote: read it with the general path.
    Quoted,
}

/// Words without a delimiter after which a CSV field counts as long (see
/// [`CopyParser::csv_plain_record`]): past a timestamp's length, so that the commonest
/// fields stay on the word-at-a-time path.
const QUIET_WORDS: u32 = 4;

/// `b` in every byte of a word.
fn splat(b: u8) -> u64 {
    u64::from(b) * 0x0101_0101_0101_0101
}

/// The high bit of every byte of `word` equal to that byte of `splat`, and no other bit.
/// Exact (no borrow runs between bytes, unlike the classic has-zero-byte test): a byte of
/// `x` is zero only when adding 0x7f to its low seven bits leaves the high bit clear and its
/// own high bit is clear.
fn eq_mask(word: u64, splat: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ splat;
    !(((x & LOW7) + LOW7) | x | LOW7)
}

impl CopyParser {
    /// A parser for data in the given format.
    pub fn new(opts: CopyOptions) -> Self {
        let header_pending = opts.header;
        CopyParser {
            opts,
            buf: Vec::new(),
            line: 1,
            header_pending,
            binary_header_done: false,
            finished: false,
            scratch: Vec::new(),
            spans: Vec::new(),
        }
    }

    /// Add bytes and pass every complete record to `row` (with its line number).
    pub fn feed<S: RowSink>(&mut self, data: &[u8], row: &mut S) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.buf.extend_from_slice(data);
        let consumed = match self.opts.format {
            CopyFormat::Binary => self.parse_binary(row)?,
            _ => self.parse_lines(row, false)?,
        };
        self.buf.drain(..consumed);
        Ok(())
    }

    /// End of data: parse what is left (a last line without newline).
    pub fn finish<S: RowSink>(&mut self, row: &mut S) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        match self.opts.format {
            CopyFormat::Binary => {
                let consumed = self.parse_binary(row)?;
                self.buf.drain(..consumed);
                if !self.buf.is_empty() || !self.finished && self.binary_header_done {
                    return Err(BrookError::BadCopyFormat(
                        "unexpected EOF in COPY data".into(),
                    ));
                }
            }
            _ => {
                let consumed = self.parse_lines(row, true)?;
                self.buf.drain(..consumed);
            }
        }
        self.finished = true;
        Ok(())
    }

    /// Parses complete records from `buf`; returns bytes consumed.
    fn parse_lines<S: RowSink>(&mut self, row: &mut S, eof: bool) -> Result<usize> {
        let mut pos = 0;
        loop {
            if self.finished || pos >= self.buf.len() {
                return Ok(pos);
            }
            if self.opts.format == CopyFormat::Csv && !self.header_pending {
                match self.csv_plain_record(pos, eof) {
                    Plain::Record(end) => {
                        let line = self.line;
                        self.line += 1;
                        let mut rec = &self.buf[pos..end];
                        if rec.last() == Some(&b'\r') {
                            rec = &rec[..rec.len() - 1];
                        }
                        if rec == b"\\." {
                            self.finished = true;
                            return Ok((end + 1).min(self.buf.len()));
                        }
                        let null = self.opts.null.as_bytes();
                        let last = self.spans.len().saturating_sub(1);
                        for (i, &(a, mut b)) in self.spans.iter().enumerate() {
                            if i == last && b > a && self.buf[b - 1] == b'\r' {
                                b -= 1;
                            }
                            let raw = &self.buf[a..b];
                            row.field(if raw == null { None } else { Some(raw) })?;
                        }
                        row.end_row(line)?;
                        pos = (end + 1).min(self.buf.len());
                        continue;
                    }
                    Plain::Incomplete => return Ok(pos),
                    Plain::Quoted => {}
                }
            }
            let Some((end, quoted)) = self.record_end(pos, eof)? else {
                return Ok(pos);
            };
            let mut rec = &self.buf[pos..end];
            let next = (end + 1).min(self.buf.len());
            if rec.last() == Some(&b'\r') {
                rec = &rec[..rec.len() - 1];
            }
            let line = self.line;
            // A record holds newlines only inside quoted CSV fields.
            self.line += 1;
            if quoted {
                self.line += memchr::memchr_iter(b'\n', rec).count() as u64;
            }
            pos = next;
            if rec == b"\\." {
                self.finished = true;
                return Ok(pos);
            }
            if self.header_pending {
                self.header_pending = false;
                continue;
            }
            match self.opts.format {
                CopyFormat::Csv => emit_csv(rec, &self.opts, line, &mut self.scratch, row)?,
                _ => emit_text(rec, &self.opts, &mut self.scratch, row)?,
            }
            row.end_row(line)?;
        }
    }

    /// The CSV record at `pos` when it has no quote: its fields' spans (in `spans`) and its
    /// end, found in one pass over its bytes — a record with a quote takes the general path.
    ///
    /// The bytes are read eight at a time, each word giving a mask of its delimiters, quotes
    /// and newlines at once (SWAR, by hand: a `memchr3` call per field paid its set-up on
    /// every field of a few bytes, and led the profile of bulk COPY); after `QUIET_WORDS`
    /// words with none, the field is long and `memchr3` finds its end.
    fn csv_plain_record(&mut self, pos: usize, eof: bool) -> Plain {
        let (delim, quote) = (self.opts.delimiter, self.opts.quote);
        let (d, q, nl) = (splat(delim), splat(quote), splat(b'\n'));
        let (buf, spans) = (&self.buf[..], &mut self.spans);
        spans.clear();
        let mut start = pos;
        let mut word_at = pos;
        // Words in a row without a byte of interest.
        let mut quiet = 0;
        while let Some(word) = buf.get(word_at..).and_then(|b| b.first_chunk::<8>()) {
            let word = u64::from_le_bytes(*word);
            let mut found = eq_mask(word, d) | eq_mask(word, q) | eq_mask(word, nl);
            quiet = if found == 0 { quiet + 1 } else { 0 };
            while found != 0 {
                // Little-endian: the lowest set bit is the first byte found.
                let at = word_at + (found.trailing_zeros() / 8) as usize;
                found &= found - 1;
                match buf[at] {
                    b'\n' => {
                        spans.push((start, at));
                        return Plain::Record(at);
                    }
                    c if c == quote => return Plain::Quoted,
                    _ => {
                        spans.push((start, at));
                        start = at + 1;
                    }
                }
            }
            word_at += 8;
            if quiet == QUIET_WORDS {
                // Inside a long field: memchr's wider vector search jumps to its end.
                word_at = memchr::memchr3(delim, quote, b'\n', buf.get(word_at..).unwrap_or(&[]))
                    .map_or(buf.len(), |j| word_at + j);
            }
        }
        // Fewer than eight bytes left.
        for (at, &c) in buf.iter().enumerate().skip(word_at) {
            if c == b'\n' {
                spans.push((start, at));
                return Plain::Record(at);
            } else if c == quote {
                return Plain::Quoted;
            } else if c == delim {
                spans.push((start, at));
                start = at + 1;
            }
        }
        if eof {
            spans.push((start, buf.len()));
            return Plain::Record(buf.len());
        }
        Plain::Incomplete
    }

    /// End (exclusive, at the newline) of the record starting at `pos`, if complete, and
    /// whether it has a quote (only then can it hold a newline).
    fn record_end(&self, pos: usize, eof: bool) -> Result<Option<(usize, bool)>> {
        let b = &self.buf[pos..];
        if self.opts.format == CopyFormat::Csv {
            let mut in_quote = false;
            let mut quoted = false;
            let mut i = 0;
            while i < b.len() {
                if !in_quote {
                    // Outside quotes only a quote or the newline matters: jump to the next.
                    match memchr::memchr2(self.opts.quote, b'\n', &b[i..]) {
                        Some(j) if b[i + j] == b'\n' => return Ok(Some((pos + i + j, quoted))),
                        Some(j) => {
                            in_quote = true;
                            quoted = true;
                            i += j + 1;
                            continue;
                        }
                        None => break,
                    }
                }
                // Inside quotes: an escaped quote is skipped, a quote ends the field's quoting.
                let c = b[i];
                if c == self.opts.escape
                    && self.opts.escape != self.opts.quote
                    && i + 1 < b.len()
                    && b[i + 1] == self.opts.quote
                {
                    i += 2;
                    continue;
                }
                if c == self.opts.quote {
                    in_quote = false;
                }
                i += 1;
            }
            if eof && !b.is_empty() {
                if in_quote {
                    return Err(BrookError::BadCopyFormat(format!(
                        "unterminated CSV quoted field (line {})",
                        self.line
                    )));
                }
                return Ok(Some((pos + b.len(), quoted)));
            }
            Ok(None)
        } else {
            // Text format escapes its newlines: a record is one line.
            match memchr::memchr(b'\n', b) {
                Some(i) => Ok(Some((pos + i, false))),
                None if eof && !b.is_empty() => Ok(Some((pos + b.len(), false))),
                None => Ok(None),
            }
        }
    }

    fn parse_binary<S: RowSink>(&mut self, row: &mut S) -> Result<usize> {
        const SIG: &[u8] = b"PGCOPY\n\xff\r\n\0";
        let b = &self.buf;
        let mut pos = 0;
        if !self.binary_header_done {
            if b.len() < SIG.len() + 8 {
                return Ok(0);
            }
            if &b[..SIG.len()] != SIG {
                return Err(BrookError::BadCopyFormat(
                    "COPY file signature not recognized".into(),
                ));
            }
            let ext = i32::from_be_bytes([b[15], b[16], b[17], b[18]]);
            if ext < 0 {
                return Err(BrookError::BadCopyFormat(
                    "invalid COPY file header (negative extension length)".into(),
                ));
            }
            let hdr = SIG.len() + 8 + ext as usize;
            if b.len() < hdr {
                return Ok(0);
            }
            pos = hdr;
            self.binary_header_done = true;
        }
        loop {
            if b.len() < pos + 2 {
                return Ok(pos);
            }
            let n = i16::from_be_bytes([b[pos], b[pos + 1]]);
            if n == -1 {
                self.finished = true;
                return Ok(b.len());
            }
            if n < 0 {
                return Err(BrookError::BadCopyFormat(format!(
                    "invalid field count {n} in binary COPY row {}",
                    self.line
                )));
            }
            // First check the whole row is buffered, then hand its fields out.
            let mut p = pos + 2;
            let mut complete = true;
            for _ in 0..n {
                if b.len() < p + 4 {
                    complete = false;
                    break;
                }
                let len = i32::from_be_bytes([b[p], b[p + 1], b[p + 2], b[p + 3]]);
                p += 4;
                if len < -1 {
                    return Err(BrookError::BadCopyFormat(format!(
                        "invalid field length in binary COPY row {}",
                        self.line
                    )));
                }
                if len > 0 {
                    if b.len() < p + len as usize {
                        complete = false;
                        break;
                    }
                    p += len as usize;
                }
            }
            if !complete {
                return Ok(pos);
            }
            let mut q = pos + 2;
            for _ in 0..n {
                let len = i32::from_be_bytes([b[q], b[q + 1], b[q + 2], b[q + 3]]);
                q += 4;
                if len == -1 {
                    row.field(None)?;
                } else {
                    row.field(Some(&b[q..q + len as usize]))?;
                    q += len as usize;
                }
            }
            let line = self.line;
            self.line += 1;
            row.end_row(line)?;
            pos = p;
        }
    }
}

/// Text format: fields split at the delimiter; `\N` (or the NULL string) is NULL; backslash
/// escapes are decoded into `scratch` only for fields that contain a backslash.
fn emit_text<S: RowSink>(
    rec: &[u8],
    opts: &CopyOptions,
    scratch: &mut Vec<u8>,
    sink: &mut S,
) -> Result<()> {
    for raw in rec.split(|&c| c == opts.delimiter) {
        if raw == opts.null.as_bytes() {
            sink.field(None)?;
        } else if !raw.contains(&b'\\') {
            sink.field(Some(raw))?;
        } else {
            unescape_text(raw, scratch);
            sink.field(Some(scratch))?;
        }
    }
    Ok(())
}

fn unescape_text(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c != b'\\' || i + 1 >= raw.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let n = raw[i + 1];
        i += 2;
        match n {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = (n - b'0') as u32;
                let mut k = 0;
                while k < 2 && i < raw.len() && (b'0'..=b'7').contains(&raw[i]) {
                    v = v * 8 + (raw[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                out.push(v as u8);
            }
            b'x' => {
                let mut v = 0u32;
                let mut k = 0;
                while k < 2 && i < raw.len() && raw[i].is_ascii_hexdigit() {
                    v = v * 16 + (raw[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                    k += 1;
                }
                if k == 0 {
                    out.push(b'x');
                } else {
                    out.push(v as u8);
                }
            }
            other => out.push(other),
        }
    }
}

/// CSV format: unquoted fields are passed as they are (an unquoted field equal to the NULL
/// string is NULL); quoted fields are unquoted into `scratch`.
fn emit_csv<S: RowSink>(
    rec: &[u8],
    opts: &CopyOptions,
    line: u64,
    scratch: &mut Vec<u8>,
    sink: &mut S,
) -> Result<()> {
    let mut i = 0;
    loop {
        let start = i;
        // Fast path: a field without quotes is the bytes up to the next delimiter, passed on
        // without a copy.
        let stop = memchr::memchr2(opts.delimiter, opts.quote, &rec[i..]).map(|j| i + j);
        if stop.is_none_or(|s| rec[s] == opts.delimiter) {
            let end = stop.unwrap_or(rec.len());
            let raw = &rec[start..end];
            sink.field(if raw == opts.null.as_bytes() {
                None
            } else {
                Some(raw)
            })?;
            if end >= rec.len() {
                break;
            }
            i = end + 1;
            continue;
        }
        let mut quoted_any = false;
        let mut in_quote = false;
        scratch.clear();
        while i < rec.len() {
            let c = rec[i];
            if in_quote {
                if c == opts.escape && i + 1 < rec.len() && rec[i + 1] == opts.quote {
                    scratch.push(opts.quote);
                    i += 2;
                    continue;
                }
                if c == opts.quote {
                    in_quote = false;
                } else {
                    scratch.push(c);
                }
                i += 1;
            } else if c == opts.quote {
                in_quote = true;
                quoted_any = true;
                i += 1;
            } else if c == opts.delimiter {
                break;
            } else {
                scratch.push(c);
                i += 1;
            }
        }
        if in_quote {
            return Err(BrookError::BadCopyFormat(format!(
                "unterminated CSV quoted field (line {line})"
            )));
        }
        let raw = &rec[start..i];
        if !quoted_any && raw == opts.null.as_bytes() {
            sink.field(None)?;
        } else if !quoted_any {
            sink.field(Some(raw))?;
        } else {
            sink.field(Some(scratch))?;
        }
        if i >= rec.len() {
            break;
        }
        i += 1; // delimiter
    }
    Ok(())
}

/// Target of a COPY IN: which table columns receive the data fields, and their types.
#[derive(Debug, Clone)]
pub struct CopyTarget {
    /// Full table schema.
    pub schema: SchemaRef,
    /// Declared types of the table's columns.
    pub types: Vec<PgType>,
    /// For each data field, the index of the table column it fills.
    pub field_columns: Vec<usize>,
    /// Value for each table column not in `field_columns` (a one-row array: its default).
    pub defaults: Vec<Option<ArrayRef>>,
    /// Table name, for messages.
    pub table: String,
    /// NOT NULL flags of the table's columns.
    pub not_null: Vec<bool>,
    /// Whether data is in binary format.
    pub binary: bool,
}

/// The raw bytes of one column of buffered rows, laid out as Arrow's variable-width arrays
/// are (one value buffer and offsets), so that text columns become arrays without copying.
struct ColBuf {
    data: Vec<u8>,
    offsets: Vec<i32>,
    /// Rows that are NULL, ascending (kept apart: most columns have none, and a flag per
    /// row cost a push per field).
    null_rows: Vec<usize>,
}

impl ColBuf {
    fn new() -> Self {
        // Sized for a whole batch so that filling one does not reallocate.
        let mut offsets = Vec::with_capacity(BATCH_ROWS + 1);
        offsets.push(0);
        ColBuf {
            data: Vec::with_capacity(BATCH_ROWS * 8),
            offsets,
            null_rows: Vec::new(),
        }
    }

    fn push(&mut self, v: Option<&[u8]>) {
        match v {
            Some(v) => self.data.extend_from_slice(v),
            None => self.null_rows.push(self.len()),
        }
        self.offsets.push(self.data.len() as i32);
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Which rows are NULL, as Arrow marks them (`None`: none).
    fn nulls(&self) -> Option<NullBuffer> {
        if self.null_rows.is_empty() {
            return None;
        }
        let mut valid = vec![true; self.len()];
        for &r in &self.null_rows {
            valid[r] = false;
        }
        Some(NullBuffer::from(valid))
    }

    /// The bytes of every row, `None` for NULL.
    fn values(&self) -> Vec<Option<&[u8]>> {
        let mut nulls = self.null_rows.iter().peekable();
        self.offsets
            .windows(2)
            .enumerate()
            .map(|(r, w)| {
                if nulls.next_if_eq(&&r).is_some() {
                    None
                } else {
                    Some(&self.data[w[0] as usize..w[1] as usize])
                }
            })
            .collect()
    }
}

/// Collects rows column-wise and converts them to Arrow batches.
pub struct BatchBuilder {
    target: Arc<CopyTarget>,
    cols: Vec<ColBuf>,
    lines: Vec<u64>,
    /// Fields seen so far in the current row.
    cur: usize,
}

impl RowSink for BatchBuilder {
    fn field(&mut self, value: Option<&[u8]>) -> Result<()> {
        if let Some(c) = self.cols.get_mut(self.cur) {
            c.push(value);
        }
        self.cur += 1;
        Ok(())
    }

    fn end_row(&mut self, line: u64) -> Result<()> {
        let want = self.cols.len();
        let got = std::mem::take(&mut self.cur);
        if got != want {
            let msg = if got < want {
                let missing = self
                    .target
                    .schema
                    .field(self.target.field_columns[got])
                    .name()
                    .clone();
                format!(
                    "missing data for column \"{missing}\" (COPY {}, line {line})",
                    self.target.table
                )
            } else {
                format!(
                    "extra data after last expected column (COPY {}, line {line})",
                    self.target.table
                )
            };
            return Err(BrookError::BadCopyFormat(msg));
        }
        self.lines.push(line);
        Ok(())
    }
}

impl BatchBuilder {
    /// An empty builder.
    pub fn new(target: Arc<CopyTarget>) -> Self {
        let n = target.field_columns.len();
        BatchBuilder {
            target,
            cols: (0..n).map(|_| ColBuf::new()).collect(),
            lines: Vec::new(),
            cur: 0,
        }
    }

    /// Rows collected.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no row is buffered.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Convert the buffered rows to a batch of the table's schema and reset.
    pub fn take_batch(&mut self) -> Result<RecordBatch> {
        self.take_raw().into_batch(&self.target)
    }

    /// The buffered rows as they were read (text or binary fields), and reset: converting
    /// them is [`RawBatch::into_batch`], which another thread may do.
    pub fn take_raw(&mut self) -> RawBatch {
        let n = self.target.field_columns.len();
        RawBatch {
            cols: std::mem::replace(&mut self.cols, (0..n).map(|_| ColBuf::new()).collect()),
            lines: std::mem::take(&mut self.lines),
        }
    }
}

/// Rows of a COPY as read: each data field's bytes, column by column, and each row's line.
pub struct RawBatch {
    cols: Vec<ColBuf>,
    lines: Vec<u64>,
}

impl RawBatch {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no row is held.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The rows as a batch of `t`'s table schema: fields converted to the column types,
    /// omitted columns filled with their defaults, NOT NULL checked.
    pub fn into_batch(self, t: &CopyTarget) -> Result<RecordBatch> {
        let rows = self.lines.len();
        let mut out: Vec<Option<ArrayRef>> = vec![None; t.schema.fields().len()];
        let lines = &self.lines;
        for (values, &ci) in self.cols.into_iter().zip(&t.field_columns) {
            out[ci] = Some(convert(t, lines, values, ci)?);
        }
        let mut arrays = Vec::with_capacity(out.len());
        for (ci, a) in out.into_iter().enumerate() {
            let a = match a {
                Some(a) => a,
                None => match &t.defaults[ci] {
                    Some(d) => repeat(d, rows)?,
                    None => new_null_array(t.schema.field(ci).data_type(), rows),
                },
            };
            if t.not_null[ci] && a.null_count() > 0 {
                let bad = (0..rows).find(|&r| a.is_null(r)).unwrap_or(0);
                return Err(BrookError::NotNullViolation(format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint (line {})",
                    t.schema.field(ci).name(),
                    t.table,
                    lines.get(bad).copied().unwrap_or(0)
                )));
            }
            arrays.push(a);
        }
        Ok(RecordBatch::try_new(t.schema.clone(), arrays)?)
    }
}

/// One column's fields (rows at `lines`) as an array of column `ci`'s type.
fn convert(t: &CopyTarget, lines: &[u64], col: ColBuf, ci: usize) -> Result<ArrayRef> {
    let ty = &t.types[ci];
    let name = t.schema.field(ci).name().clone();
    if t.binary {
        return binary_values(&col.values(), ty, lines, &name);
    }
    let nulls = col.nulls();
    // Integers and timestamps in their plain layouts are read from the bytes as they are;
    // a column with any other text goes through the general cast below.
    let raw = RawText {
        data: &col.data,
        offsets: &col.offsets,
        nulls: nulls.clone(),
    };
    let fast = match ty {
        PgType::Timestamp => crate::pg::datetime::fast_timestamps(&raw),
        _ => fast_integers(&raw, ty),
    };
    if let Some(fast) = fast {
        return Ok(fast);
    }
    let strings: ArrayRef = Arc::new(strings(t, lines, col, nulls)?);
    text_to_column(
        &strings,
        ty,
        &|r| lines.get(r).copied().unwrap_or(0),
        &t.table,
        &name,
    )
}

/// The column's bytes as a string array (no copy); invalid UTF-8 is reported by line.
fn strings(
    t: &CopyTarget,
    lines: &[u64],
    col: ColBuf,
    nulls: Option<NullBuffer>,
) -> Result<datafusion::arrow::array::StringArray> {
    use datafusion::arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
    // Arrow checks the whole buffer at once (and that no value splits a character); only
    // when that fails are the values checked one by one, to name the line. The buffers are
    // shared, not copied, to keep them for that.
    let data = Buffer::from_vec(col.data);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(col.offsets));
    datafusion::arrow::array::StringArray::try_new(offsets.clone(), data.clone(), nulls.clone())
        .map_err(|_| {
            let bad = offsets.windows(2).enumerate().find(|(r, w)| {
                nulls.as_ref().is_none_or(|n| n.is_valid(*r))
                    && std::str::from_utf8(&data[w[0] as usize..w[1] as usize]).is_err()
            });
            BrookError::BadEncoding(format!(
                "invalid byte sequence for encoding \"UTF8\" (COPY {}, line {})",
                t.table,
                bad.and_then(|(r, _)| lines.get(r).copied()).unwrap_or(0)
            ))
        })
}

fn repeat(one: &ArrayRef, rows: usize) -> Result<ArrayRef> {
    let idx = datafusion::arrow::array::UInt32Array::from(vec![0u32; rows]);
    Ok(datafusion::arrow::compute::take(one.as_ref(), &idx, None)?)
}

/// Cast a column of text to a column type, reporting the first bad value as PostgreSQL does
/// (22P02 for malformed input, 22003 for out-of-range numbers, 22001 for too-long strings).
pub fn text_to_column(
    strings: &ArrayRef,
    ty: &PgType,
    line_of: &dyn Fn(usize) -> u64,
    table: &str,
    column: &str,
) -> Result<ArrayRef> {
    let target = ty.arrow();
    if *ty == PgType::Bytea {
        // PostgreSQL's hex or escape format, not the text's own bytes.
        let text = cast_with_options(
            strings,
            &datafusion::arrow::datatypes::DataType::Utf8,
            &CastOptions::default(),
        )?;
        let mut b = BinaryBuilder::new();
        for (r, v) in datafusion::arrow::array::AsArray::as_string::<i32>(&text)
            .iter()
            .enumerate()
        {
            match v {
                None => b.append_null(),
                Some(v) => b.append_value(
                    brook_planner::bytea::parse_bytea(v.as_bytes()).ok_or_else(|| {
                        BrookError::InvalidText(format!(
                            "invalid input syntax for type bytea (COPY {table}, line {})",
                            line_of(r)
                        ))
                    })?,
                ),
            }
        }
        return Ok(Arc::new(b.finish()));
    }
    let prepared: ArrayRef = match ty {
        PgType::Bool => {
            let s = strings
                .as_any()
                .downcast_ref::<datafusion::arrow::array::StringArray>();
            match s {
                Some(s) => Arc::new(
                    s.iter()
                        .map(|v| v.map(|v| v.trim().to_ascii_lowercase()))
                        .collect::<datafusion::arrow::array::StringArray>(),
                ),
                None => strings.clone(),
            }
        }
        PgType::Interval => normalize_intervals(strings),
        PgType::Timestamp => {
            let fast = strings
                .as_any()
                .downcast_ref::<datafusion::arrow::array::StringArray>()
                .and_then(|s| crate::pg::datetime::fast_timestamps(&RawText::of_strings(s)));
            if let Some(fast) = fast {
                return Ok(fast);
            }
            strings.clone()
        }
        _ => strings.clone(),
    };
    let out = cast_with_options(
        &prepared,
        &target,
        &CastOptions {
            safe: true,
            ..Default::default()
        },
    )?;
    if out.null_count() != strings.null_count() {
        let s = strings
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>();
        let bad = (0..out.len())
            .find(|&r| out.is_null(r) && !strings.is_null(r))
            .unwrap_or(0);
        let text = s.map(|s| s.value(bad).to_string()).unwrap_or_default();
        let numeric_like = text.trim().parse::<f64>().is_ok();
        let is_numeric_type = matches!(
            ty,
            PgType::Int2
                | PgType::Int4
                | PgType::Int8
                | PgType::Numeric { .. }
                | PgType::Float4
                | PgType::Float8
        );
        let ctx = format!(
            "(COPY {table}, line {}, column {column}: \"{text}\")",
            line_of(bad)
        );
        let is_datetime_type = matches!(
            ty,
            PgType::Date | PgType::Time | PgType::Timestamp | PgType::Timestamptz
        );
        return Err(if is_numeric_type && numeric_like {
            BrookError::OutOfRange(format!(
                "value \"{text}\" is out of range for type {} {ctx}",
                ty.name()
            ))
        } else if is_datetime_type {
            // PostgreSQL: a well-formed value with a field out of range is 22008, other
            // text 22007.
            if brook_common::error::is_well_formed_datetime(&text) {
                BrookError::DatetimeOverflow(format!(
                    "date/time field value out of range: \"{text}\" {ctx}"
                ))
            } else {
                BrookError::InvalidDatetime(format!(
                    "invalid input syntax for type {}: \"{text}\" {ctx}",
                    ty.name()
                ))
            }
        } else {
            BrookError::InvalidText(format!(
                "invalid input syntax for type {}: \"{text}\" {ctx}",
                ty.name()
            ))
        });
    }
    check_lengths(&out, ty, line_of, table, column)?;
    Ok(out)
}

/// varchar(n)/char(n) reject longer values (22001), as PostgreSQL does.
pub fn check_lengths(
    col: &ArrayRef,
    ty: &PgType,
    line_of: &dyn Fn(usize) -> u64,
    table: &str,
    column: &str,
) -> Result<()> {
    let limit = match ty {
        PgType::Varchar(Some(n)) | PgType::Char(Some(n)) => *n as usize,
        _ => return Ok(()),
    };
    if let Some(s) = col
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
    {
        for (r, v) in s.iter().enumerate() {
            if let Some(v) = v {
                if v.chars().count() > limit && v.trim_end_matches(' ').chars().count() > limit {
                    return Err(BrookError::StringTooLong(format!(
                        "value too long for type {} (COPY {table}, line {}, column {column})",
                        ty.name(),
                        line_of(r)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Arrow parses `1 day 02:00:00` poorly; rewrite PostgreSQL's `HH:MM:SS` part into units.
fn normalize_intervals(strings: &ArrayRef) -> ArrayRef {
    let Some(s) = strings
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
    else {
        return strings.clone();
    };
    Arc::new(
        s.iter()
            .map(|v| {
                v.map(|v| {
                    v.split_whitespace()
                        .map(|tok| {
                            let parts: Vec<&str> = tok.split(':').collect();
                            if parts.len() == 3 {
                                let neg = tok.starts_with('-');
                                let h = parts[0].trim_start_matches('-');
                                let sign = if neg { "-" } else { "" };
                                format!(
                                    "{sign}{h} hours {sign}{} minutes {sign}{} seconds",
                                    parts[1], parts[2]
                                )
                            } else {
                                tok.to_string()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                        .replace("mons", "months")
                        .replace("mon ", "month ")
                })
            })
            .collect::<datafusion::arrow::array::StringArray>(),
    )
}

/// Binary fields decoded to their text form, converted (and checked) as the text formats'
/// fields are.
fn texts_to_column(
    mut texts: datafusion::arrow::array::StringBuilder,
    ty: &PgType,
    lines: &[u64],
    column: &str,
) -> Result<ArrayRef> {
    let strings: ArrayRef = Arc::new(texts.finish());
    text_to_column(
        &strings,
        ty,
        &|r| lines.get(r).copied().unwrap_or(0),
        "",
        column,
    )
}

/// Decode each non-NULL field with `f` (given its row and bytes); NULLs stay NULL.
fn each<T>(
    values: &[Option<&[u8]>],
    f: impl Fn(usize, &[u8]) -> Result<T>,
) -> Result<Vec<Option<T>>> {
    values
        .iter()
        .enumerate()
        .map(|(r, v)| v.map(|v| f(r, v)).transpose())
        .collect()
}

/// Binary COPY fields, decoded per declared type.
fn binary_values(
    values: &[Option<&[u8]>],
    ty: &PgType,
    lines: &[u64],
    column: &str,
) -> Result<ArrayRef> {
    use datafusion::arrow::array::*;
    let bad = |r: usize, what: &str| {
        BrookError::BadCopyFormat(format!(
            "incorrect binary data format for {what} in column {column} (row {})",
            lines.get(r).copied().unwrap_or(0)
        ))
    };
    fn fixed<const N: usize>(v: &[u8]) -> Option<[u8; N]> {
        v.try_into().ok()
    }
    macro_rules! prim {
        ($arr:ty, $n:expr, $conv:expr, $what:expr) => {{
            let mut out: Vec<Option<_>> = Vec::with_capacity(values.len());
            for (r, v) in values.iter().enumerate() {
                out.push(match v {
                    None => None,
                    Some(v) => Some($conv(fixed::<$n>(v).ok_or_else(|| bad(r, $what))?)),
                });
            }
            Arc::new(<$arr>::from(out)) as ArrayRef
        }};
    }
    // PostgreSQL's infinite dates and timestamps (the extreme values) and intervals past
    // nanosecond range have no Arrow representation: refused, never stored as garbage.
    let range = |r: usize, what: &str| {
        BrookError::DatetimeOverflow(format!(
            "{what} out of range in column {column} (row {}): infinite or too far from 2000-01-01",
            lines.get(r).copied().unwrap_or(0)
        ))
    };
    let epoch_shift = |r: usize, v: &[u8], what: &str| -> Result<i64> {
        let raw = i64::from_be_bytes(fixed::<8>(v).ok_or_else(|| bad(r, what))?);
        if raw == i64::MAX || raw == i64::MIN {
            return Err(range(r, what));
        }
        raw.checked_add(946_684_800_000_000)
            .ok_or_else(|| range(r, what))
    };
    Ok(match ty {
        PgType::Bool => Arc::new(BooleanArray::from(each(values, |r, v| match v {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(bad(r, "boolean")),
        })?)),
        PgType::Int2 => prim!(Int16Array, 2, i16::from_be_bytes, "smallint"),
        PgType::Int4 => prim!(Int32Array, 4, i32::from_be_bytes, "integer"),
        PgType::Int8 => prim!(Int64Array, 8, i64::from_be_bytes, "bigint"),
        PgType::Float4 => prim!(Float32Array, 4, f32::from_be_bytes, "real"),
        PgType::Float8 => prim!(Float64Array, 8, f64::from_be_bytes, "double precision"),
        PgType::Date => Arc::new(Date32Array::from(each(values, |r, v| {
            let raw = i32::from_be_bytes(fixed::<4>(v).ok_or_else(|| bad(r, "date"))?);
            if raw == i32::MAX || raw == i32::MIN {
                return Err(range(r, "date"));
            }
            raw.checked_add(10_957).ok_or_else(|| range(r, "date"))
        })?)),
        PgType::Timestamp => Arc::new(TimestampMicrosecondArray::from(each(values, |r, v| {
            epoch_shift(r, v, "timestamp")
        })?)),
        PgType::Timestamptz => Arc::new(
            TimestampMicrosecondArray::from(each(values, |r, v| epoch_shift(r, v, "timestamptz"))?)
                .with_timezone("+00:00"),
        ),
        PgType::Time => Arc::new(Time64MicrosecondArray::from(each(values, |r, v| {
            let us = i64::from_be_bytes(fixed::<8>(v).ok_or_else(|| bad(r, "time"))?);
            if !(0..=86_400_000_000).contains(&us) {
                return Err(range(r, "time"));
            }
            Ok(us)
        })?)),
        PgType::Bytea => Arc::new(values.iter().map(|v| v.as_deref()).collect::<BinaryArray>()),
        PgType::Numeric { .. } => {
            let mut sb = StringBuilder::new();
            for (r, v) in values.iter().enumerate() {
                match v {
                    None => sb.append_null(),
                    Some(v) => {
                        let d: rust_decimal::Decimal =
                            postgres_types::FromSql::from_sql(&postgres_types::Type::NUMERIC, v)
                                .map_err(|_| bad(r, "numeric"))?;
                        sb.append_value(d.to_string());
                    }
                }
            }
            texts_to_column(sb, ty, lines, column)?
        }
        PgType::Interval => {
            let mut out: Vec<Option<datafusion::arrow::datatypes::IntervalMonthDayNano>> =
                Vec::new();
            for (r, v) in values.iter().enumerate() {
                out.push(match v {
                    None => None,
                    Some(v) if v.len() == 16 => {
                        let micros = i64::from_be_bytes(
                            fixed::<8>(&v[..8]).ok_or_else(|| bad(r, "interval"))?,
                        );
                        let days = i32::from_be_bytes(
                            fixed::<4>(&v[8..12]).ok_or_else(|| bad(r, "interval"))?,
                        );
                        let months = i32::from_be_bytes(
                            fixed::<4>(&v[12..]).ok_or_else(|| bad(r, "interval"))?,
                        );
                        Some(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                            months,
                            days,
                            micros
                                .checked_mul(1000)
                                .ok_or_else(|| range(r, "interval"))?,
                        ))
                    }
                    Some(_) => return Err(bad(r, "interval")),
                });
            }
            Arc::new(IntervalMonthDayNanoArray::from(out))
        }
        PgType::Text | PgType::Varchar(_) | PgType::Char(_) | PgType::Json | PgType::Uuid => {
            let mut sb = StringBuilder::new();
            for (r, v) in values.iter().enumerate() {
                match v {
                    None => sb.append_null(),
                    // uuid's binary form is its 16 bytes.
                    Some(v) if *ty == PgType::Uuid => {
                        let b = fixed::<16>(v).ok_or_else(|| bad(r, "uuid"))?;
                        let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
                        sb.append_value(format!(
                            "{}-{}-{}-{}-{}",
                            &h[..8],
                            &h[8..12],
                            &h[12..16],
                            &h[16..20],
                            &h[20..]
                        ));
                    }
                    Some(v) => sb.append_value(std::str::from_utf8(v).map_err(|_| bad(r, "text"))?),
                }
            }
            // The text formats' checks apply as they are: varchar(n)/char(n) lengths, JSON
            // validity, uuid form.
            texts_to_column(sb, ty, lines, column)?
        }
        PgType::Jsonb => {
            // jsonb binary format: a version byte (1) then the JSON text.
            let mut sb = StringBuilder::new();
            for (r, v) in values.iter().enumerate() {
                match v {
                    None => sb.append_null(),
                    Some([1, json @ ..]) => {
                        sb.append_value(std::str::from_utf8(json).map_err(|_| bad(r, "jsonb"))?)
                    }
                    Some(_) => return Err(bad(r, "jsonb (version byte 1)")),
                }
            }
            Arc::new(sb.finish())
        }
    })
}

/// Formats result batches as COPY TO text or CSV.
pub struct CopyOutEncoder {
    opts: CopyOptions,
    header_done: bool,
}

impl CopyOutEncoder {
    /// An encoder with the statement's options.
    pub fn new(opts: CopyOptions) -> Result<Self> {
        if opts.format == CopyFormat::Binary {
            return Err(BrookError::unsupported("COPY TO with FORMAT binary"));
        }
        Ok(CopyOutEncoder {
            opts,
            header_done: false,
        })
    }

    /// One CopyData payload per row of `batch`.
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let schema = batch.schema();
        let mut out = Vec::with_capacity(batch.num_rows() + 1);
        if self.opts.header && !self.header_done {
            let names: Vec<String> = schema
                .fields()
                .iter()
                .map(|f| self.csv_field(f.name()))
                .collect();
            out.push(
                format!(
                    "{}\n",
                    names.join(&(self.opts.delimiter as char).to_string())
                )
                .into_bytes(),
            );
        }
        self.header_done = true;
        let views = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| ColumnView::new(c, f))
            .collect::<Result<Vec<_>>>()?;
        let mut cell = String::new();
        for i in 0..batch.num_rows() {
            let mut line = String::new();
            for (j, v) in views.iter().enumerate() {
                if j > 0 {
                    line.push(self.opts.delimiter as char);
                }
                if v.is_null(i) {
                    line.push_str(&self.opts.null);
                    continue;
                }
                cell.clear();
                v.write_text(i, &mut cell);
                match self.opts.format {
                    CopyFormat::Csv => line.push_str(&self.csv_field(&cell)),
                    _ => escape_text(&cell, self.opts.delimiter, &mut line),
                }
            }
            line.push('\n');
            out.push(line.into_bytes());
        }
        Ok(out)
    }

    fn csv_field(&self, s: &str) -> String {
        let q = self.opts.quote as char;
        // the NULL string (empty by default) is quoted so that it reads back as a value
        let needs = s == self.opts.null
            || s.contains(self.opts.delimiter as char)
            || s.contains(q)
            || s.contains('\n')
            || s.contains('\r');
        if !needs {
            return s.to_string();
        }
        let e = self.opts.escape as char;
        let mut out = String::with_capacity(s.len() + 2);
        out.push(q);
        for c in s.chars() {
            if c == q || c == e {
                out.push(e);
            }
            out.push(c);
        }
        out.push(q);
        out
    }
}

fn escape_text(s: &str, delim: u8, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delim == b'\t' => out.push_str("\\t"),
            c if c as u32 == delim as u32 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
