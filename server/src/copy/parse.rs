//! Parsing COPY input incrementally into rows of text fields: text and CSV (scanning a word
//! at a time for the bytes that matter) and binary.

use super::*;
use brook_common::{brook_err, Result};

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
pub(super) enum Plain {
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
pub(super) const QUIET_WORDS: u32 = 4;

/// `b` in every byte of a word.
pub(super) fn splat(b: u8) -> u64 {
    u64::from(b) * 0x0101_0101_0101_0101
}

/// The high bit of every byte of `word` equal to that byte of `splat`, and no other bit.
/// Exact (no borrow runs between bytes, unlike the classic has-zero-byte test): a byte of
/// `x` is zero only when adding 0x7f to its low seven bits leaves the high bit clear and its
/// own high bit is clear.
pub(super) fn eq_mask(word: u64, splat: u64) -> u64 {
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
                // The end of data may come at a row boundary without the -1 trailer, as
                // PostgreSQL accepts (pgx's CopyFrom sends none); within a row it is an error.
                let consumed = self.parse_binary(row)?;
                self.buf.drain(..consumed);
                if !self.buf.is_empty() {
                    return Err(brook_err!(BadCopyFormat, "unexpected EOF in COPY data"));
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
                    return Err(brook_err!(
                        BadCopyFormat,
                        "unterminated CSV quoted field (line {})",
                        self.line
                    ));
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
                return Err(brook_err!(
                    BadCopyFormat,
                    "COPY file signature not recognized"
                ));
            }
            let ext = i32::from_be_bytes([b[15], b[16], b[17], b[18]]);
            if ext < 0 {
                return Err(brook_err!(
                    BadCopyFormat,
                    "invalid COPY file header (negative extension length)"
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
                return Err(brook_err!(
                    BadCopyFormat,
                    "invalid field count {n} in binary COPY row {}",
                    self.line
                ));
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
                    return Err(brook_err!(
                        BadCopyFormat,
                        "invalid field length in binary COPY row {}",
                        self.line
                    ));
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
pub(super) fn emit_text<S: RowSink>(
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

pub(super) fn unescape_text(raw: &[u8], out: &mut Vec<u8>) {
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
pub(super) fn emit_csv<S: RowSink>(
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
            return Err(brook_err!(
                BadCopyFormat,
                "unterminated CSV quoted field (line {line})"
            ));
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
