//! COPY FROM STDIN's input: the bytes of CopyData messages cut into records and fields as
//! PostgreSQL's `copyfromparse.c` reads them, in text, CSV and binary format.
//!
//! CopyData messages split the input anywhere (mid-line, mid-field), so a [`Decoder`] keeps the
//! bytes it has not used yet and hands out one record at a time once the record is complete;
//! nothing else of the input stays in memory. A record's fields are ranges into a buffer the
//! decoder reuses, so reading a row allocates nothing.
//!
//! - text: one record per line; fields split at the delimiter; backslash escapes (`\n`, `\t`,
//!   octal, `\x` hex, any other character as itself); a field whose raw text is the NULL string
//!   is NULL; `\.` alone on a line ends the data.
//! - CSV: quoted fields may hold delimiters, quotes (escaped) and newlines; an unquoted field equal
//!   to the NULL string is NULL (FORCE_NOT_NULL / FORCE_NULL are applied by the caller).
//! - binary: the `PGCOPY` signature, flags and header extension, then tuples of length-prefixed
//!   fields (-1: NULL), ended by a -1 field count.
//!
//! Line numbers count records as PostgreSQL does (a CSV record spanning lines is one line; in
//! binary, the tuple number), header included.

use std::ops::Range;

use crate::server::error::PgError;
use crate::sql::copy::{CopyFormat, CopyOptions};

/// The binary format's signature.
pub const BINARY_SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// Line endings of text and CSV input (the first line's ending is the one allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Nl,
    Cr,
    CrNl,
}

/// One record: fields as ranges into `data` (`None`: NULL).
#[derive(Debug, Default)]
pub struct Record {
    pub data: Vec<u8>,
    pub fields: Vec<Option<Range<usize>>>,
    /// Which fields were quoted (CSV), for FORCE_NULL.
    pub quoted: Vec<bool>,
    /// The record's line number (binary: tuple number), header counted.
    pub line: u64,
    /// The record's raw text (text and CSV), for error context.
    pub raw: Vec<u8>,
}

impl Record {
    pub fn field(&self, i: usize) -> Option<&[u8]> {
        self.fields
            .get(i)
            .and_then(|f| f.as_ref())
            .map(|r| &self.data[r.clone()])
    }
}

/// What [`Decoder::next_record`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A record is in [`Decoder::record`].
    Record,
    /// More input is needed.
    NeedMore,
    /// The data ended (end marker, binary trailer, or the end of input).
    End,
}

/// Cuts COPY input into records.
pub struct Decoder {
    format: CopyFormat,
    delimiter: u8,
    quote: u8,
    escape: u8,
    null: Vec<u8>,
    buf: Vec<u8>,
    pos: usize,
    eol: Option<Eol>,
    binary_header_read: bool,
    finished: bool,
    /// Records read so far (header included).
    pub line: u64,
    pub record: Record,
    /// Bytes received (pg_stat_progress_copy's bytes_processed).
    pub bytes: u64,
}

fn bad_copy(message: impl Into<String>) -> PgError {
    PgError::new("22P04", message)
}

impl Decoder {
    pub fn new(options: &CopyOptions) -> Self {
        Self {
            format: options.format,
            delimiter: options.delimiter,
            quote: options.quote,
            escape: options.escape,
            null: options.null.as_bytes().to_vec(),
            buf: Vec::new(),
            pos: 0,
            eol: None,
            binary_header_read: false,
            finished: false,
            line: 0,
            record: Record::default(),
            bytes: 0,
        }
    }

    /// Adds received bytes (input after the end marker is ignored, as in PostgreSQL).
    pub fn push(&mut self, data: &[u8]) {
        self.bytes += data.len() as u64;
        if self.finished {
            return;
        }
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete record; `eof`: no more input will come (CopyDone).
    pub fn next_record(&mut self, eof: bool) -> Result<Next, PgError> {
        if self.finished {
            return Ok(Next::End);
        }
        let next = match self.format {
            CopyFormat::Text => self.next_text(eof)?,
            CopyFormat::Csv => self.next_csv(eof)?,
            CopyFormat::Binary => self.next_binary(eof)?,
        };
        if next == Next::End {
            self.finished = true;
        }
        Ok(next)
    }

    /// The end of the line starting at `from`: (end of content, start of the next line), or
    /// `None` if the line is not complete yet. Text format skips the byte after a backslash.
    fn line_end(&mut self, from: usize, eof: bool) -> Result<Option<(usize, usize)>, PgError> {
        let buf = &self.buf;
        let mut i = from;
        let text = self.format == CopyFormat::Text;
        while i < buf.len() {
            match buf[i] {
                b'\\' if text => i += 2,
                b'\n' => {
                    match self.eol {
                        None => self.eol = Some(Eol::Nl),
                        Some(Eol::Nl) => {}
                        Some(_) => {
                            return Err(bad_copy("literal newline found in data")
                                .with_hint("Use \"\\n\" to represent newline."));
                        }
                    }
                    return Ok(Some((i, i + 1)));
                }
                b'\r' => {
                    if i + 1 >= buf.len() && !eof {
                        return Ok(None);
                    }
                    let crnl = buf.get(i + 1) == Some(&b'\n');
                    let eol = if crnl { Eol::CrNl } else { Eol::Cr };
                    match self.eol {
                        None => self.eol = Some(eol),
                        Some(e) if e == eol => {}
                        Some(_) => {
                            return Err(bad_copy("literal carriage return found in data")
                                .with_hint("Use \"\\r\" to represent carriage return."));
                        }
                    }
                    return Ok(Some((i, if crnl { i + 2 } else { i + 1 })));
                }
                _ => i += 1,
            }
        }
        if eof && from < buf.len() {
            return Ok(Some((buf.len(), buf.len())));
        }
        Ok(None)
    }

    fn next_text(&mut self, eof: bool) -> Result<Next, PgError> {
        let start = self.pos;
        let Some((end, next)) = self.line_end(start, eof)? else {
            return Ok(if eof { Next::End } else { Next::NeedMore });
        };
        self.pos = next;
        let line = &self.buf[start..end];
        if line == b"\\." {
            return Ok(Next::End);
        }
        self.line += 1;
        let record = &mut self.record;
        record.line = self.line;
        record.data.clear();
        record.fields.clear();
        record.quoted.clear();
        record.raw.clear();
        record.raw.extend_from_slice(line);
        let mut i = 0;
        loop {
            let raw_start = i;
            let start = record.data.len();
            while i < line.len() {
                // A run of plain bytes at once.
                let delimiter = self.delimiter;
                let run = line[i..]
                    .iter()
                    .position(|&c| c == delimiter || c == b'\\')
                    .unwrap_or(line.len() - i);
                record.data.extend_from_slice(&line[i..i + run]);
                i += run;
                if i >= line.len() || line[i] == delimiter {
                    break;
                }
                i += 1;
                let Some(&c2) = line.get(i) else { break };
                i += 1;
                let byte = match c2 {
                    b'0'..=b'7' => {
                        let mut v = u32::from(c2 - b'0');
                        for _ in 0..2 {
                            match line.get(i) {
                                Some(&d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        (v & 0xff) as u8
                    }
                    b'x' if line.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                        let mut v = 0u8;
                        for _ in 0..2 {
                            match line.get(i) {
                                Some(d) if d.is_ascii_hexdigit() => {
                                    v = v * 16 + (*d as char).to_digit(16).unwrap_or(0) as u8;
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        v
                    }
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    other => other,
                };
                record.data.push(byte);
            }
            let raw = &line[raw_start..i];
            if raw == self.null.as_slice() {
                record.data.truncate(start);
                record.fields.push(None);
            } else {
                record.fields.push(Some(start..record.data.len()));
            }
            record.quoted.push(false);
            if i >= line.len() {
                break;
            }
            i += 1;
        }
        Ok(Next::Record)
    }

    fn next_csv(&mut self, eof: bool) -> Result<Next, PgError> {
        let buf = &self.buf;
        let start = self.pos;
        if start >= buf.len() {
            return Ok(if eof { Next::End } else { Next::NeedMore });
        }
        // `\.` alone on its line ends the data.
        if buf[start..].starts_with(b"\\.") {
            match buf.get(start + 2) {
                None if !eof => return Ok(Next::NeedMore),
                None | Some(b'\n') | Some(b'\r') => return Ok(Next::End),
                _ => {}
            }
        }
        let (delimiter, quote, escape) = (self.delimiter, self.quote, self.escape);
        let record = &mut self.record;
        record.data.clear();
        record.fields.clear();
        record.quoted.clear();
        let mut i = start;
        let mut in_quote = false;
        let mut quoted = false;
        let mut field_start = 0;
        let mut raw_start = start;
        let mut eol: Option<(usize, usize, Eol)> = None;
        loop {
            if i >= buf.len() {
                if !eof {
                    return Ok(Next::NeedMore);
                }
                if in_quote {
                    return Err(bad_copy("unterminated CSV quoted field"));
                }
                break;
            }
            let c = buf[i];
            if in_quote {
                if c == escape {
                    match buf.get(i + 1) {
                        None if !eof => return Ok(Next::NeedMore),
                        Some(&n) if n == quote || n == escape => {
                            record.data.push(n);
                            i += 2;
                            continue;
                        }
                        _ => {}
                    }
                }
                if c == quote {
                    in_quote = false;
                } else {
                    record.data.push(c);
                }
                i += 1;
                continue;
            }
            if c == delimiter {
                let raw = &buf[raw_start..i];
                push_csv_field(record, field_start, quoted, raw == self.null.as_slice());
                i += 1;
                raw_start = i;
                field_start = record.data.len();
                quoted = false;
                continue;
            }
            if c == quote {
                in_quote = true;
                quoted = true;
                i += 1;
                continue;
            }
            if c == b'\n' {
                eol = Some((i, i + 1, Eol::Nl));
                break;
            }
            if c == b'\r' {
                match buf.get(i + 1) {
                    None if !eof => return Ok(Next::NeedMore),
                    Some(b'\n') => eol = Some((i, i + 2, Eol::CrNl)),
                    _ => eol = Some((i, i + 1, Eol::Cr)),
                }
                break;
            }
            record.data.push(c);
            i += 1;
        }
        let (end, next) = match eol {
            Some((end, next, kind)) => {
                match self.eol {
                    None => self.eol = Some(kind),
                    Some(e) if e == kind => {}
                    Some(Eol::Nl) => {
                        return Err(bad_copy("unquoted carriage return found in data")
                            .with_hint("Use quoted CSV field to represent carriage return."));
                    }
                    Some(_) => {
                        return Err(bad_copy("unquoted newline found in data")
                            .with_hint("Use quoted CSV field to represent newline."));
                    }
                }
                (end, next)
            }
            None => (buf.len(), buf.len()),
        };
        let raw = &buf[raw_start..end];
        push_csv_field(record, field_start, quoted, raw == self.null.as_slice());
        record.raw.clear();
        record.raw.extend_from_slice(&buf[start..end]);
        self.pos = next;
        self.line += 1;
        record.line = self.line;
        Ok(Next::Record)
    }

    fn next_binary(&mut self, eof: bool) -> Result<Next, PgError> {
        let buf = &self.buf[self.pos..];
        let truncated = || bad_copy("unexpected EOF in COPY data");
        let need = |eof: bool| {
            if eof {
                Err(truncated())
            } else {
                Ok(Next::NeedMore)
            }
        };
        let mut at = 0usize;
        if !self.binary_header_read {
            if buf.len() < 19 {
                return if eof && buf.is_empty() {
                    Err(bad_copy("COPY file signature not recognized"))
                } else {
                    need(eof)
                };
            }
            if &buf[..11] != BINARY_SIGNATURE {
                return Err(bad_copy("COPY file signature not recognized"));
            }
            let flags = u32::from_be_bytes(buf[11..15].try_into().expect("4 bytes"));
            if flags & (1 << 16) != 0 {
                return Err(bad_copy("invalid COPY file header (WITH OIDS)"));
            }
            if flags & 0xffff_0000 & !(1 << 16) != 0 {
                return Err(bad_copy("unrecognized critical flags in COPY file header"));
            }
            let ext = i32::from_be_bytes(buf[15..19].try_into().expect("4 bytes"));
            if ext < 0 {
                return Err(bad_copy("invalid COPY file header (missing length)"));
            }
            if buf.len() < 19 + ext as usize {
                return need(eof);
            }
            at = 19 + ext as usize;
            self.pos += at;
            self.binary_header_read = true;
            return self.next_binary(eof);
        }
        if buf.len() < 2 {
            return if eof && buf.is_empty() {
                // PostgreSQL accepts a missing trailer at the end of input.
                Ok(Next::End)
            } else {
                need(eof)
            };
        }
        let count = i16::from_be_bytes([buf[0], buf[1]]);
        at += 2;
        if count == -1 {
            self.pos += at;
            return Ok(Next::End);
        }
        let record = &mut self.record;
        record.data.clear();
        record.fields.clear();
        record.quoted.clear();
        record.raw.clear();
        for _ in 0..count.max(0) {
            if buf.len() < at + 4 {
                return need(eof);
            }
            let len = i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
            at += 4;
            if len == -1 {
                record.fields.push(None);
            } else if len < 0 {
                return Err(bad_copy("invalid field size"));
            } else {
                let len = len as usize;
                if buf.len() < at + len {
                    return need(eof);
                }
                let start = record.data.len();
                record.data.extend_from_slice(&buf[at..at + len]);
                record.fields.push(Some(start..start + len));
                at += len;
            }
            record.quoted.push(false);
        }
        self.pos += at;
        self.line += 1;
        record.line = self.line;
        Ok(Next::Record)
    }
}

fn push_csv_field(record: &mut Record, start: usize, quoted: bool, is_null_text: bool) {
    if !quoted && is_null_text {
        record.data.truncate(start);
        record.fields.push(None);
    } else {
        record.fields.push(Some(start..record.data.len()));
    }
    record.quoted.push(quoted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::copy::ForceQuote;

    fn options(format: CopyFormat) -> CopyOptions {
        let csv = format == CopyFormat::Csv;
        CopyOptions {
            format,
            header: false,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { "" } else { "\\N" }.to_owned(),
            quote: b'"',
            escape: b'"',
            force_quote: ForceQuote::None,
            header_match: false,
            force_not_null: Vec::new(),
            force_null: Vec::new(),
        }
    }

    /// Every record of `input` fed in chunks of `chunk` bytes.
    fn records(options: &CopyOptions, input: &[u8], chunk: usize) -> Vec<Vec<Option<String>>> {
        let mut d = Decoder::new(options);
        let mut out = Vec::new();
        let mut chunks = input.chunks(chunk.max(1)).peekable();
        loop {
            let eof = chunks.peek().is_none();
            match d.next_record(eof).unwrap() {
                Next::Record => out.push(
                    (0..d.record.fields.len())
                        .map(|i| {
                            d.record
                                .field(i)
                                .map(|f| String::from_utf8_lossy(f).into_owned())
                        })
                        .collect(),
                ),
                Next::NeedMore => d.push(chunks.next().unwrap()),
                Next::End => return out,
            }
        }
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn text_format() {
        let o = options(CopyFormat::Text);
        let input = b"1\ta\\tb\\\\c\\N\t\\N\n2\t\\101\\x41\\q\t\n3\tline\\\nnext\t\r";
        for chunk in [1, 2, 3, 7, 1000] {
            let r = records(&o, &input[..input.len() - 1], chunk);
            assert_eq!(
                r,
                vec![
                    vec![s("1"), s("a\tb\\cN"), None],
                    vec![s("2"), s("AAq"), s("")],
                    vec![s("3"), s("line\nnext"), s("")],
                ],
                "chunk {chunk}"
            );
        }
        let r = records(&o, b"1\n\\.\nignored\n", 4);
        assert_eq!(r, vec![vec![s("1")]]);
        let r = records(&o, b"a\r\nb\r\n", 1);
        assert_eq!(r, vec![vec![s("a")], vec![s("b")]]);
    }

    #[test]
    fn csv_format() {
        let o = options(CopyFormat::Csv);
        let input = b"1,\"a,b\",\"say \"\"hi\"\"\"\n2,,\"\"\n3,\"multi\nline\",x\"y\"z\n";
        for chunk in [1, 2, 5, 1000] {
            let r = records(&o, input, chunk);
            assert_eq!(
                r,
                vec![
                    vec![s("1"), s("a,b"), s("say \"hi\"")],
                    vec![s("2"), None, s("")],
                    vec![s("3"), s("multi\nline"), s("xyz")],
                ],
                "chunk {chunk}"
            );
        }
        let custom = CopyOptions {
            delimiter: b';',
            quote: b'\'',
            escape: b'\\',
            null: "NULL".into(),
            ..o
        };
        let r = records(&custom, b"'it\\'s';a\\b;'NULL';NULL\n\\.\n", 3);
        assert_eq!(r, vec![vec![s("it's"), s("a\\b"), s("NULL"), None]]);
        let mut d = Decoder::new(&options(CopyFormat::Csv));
        d.push(b"1,\"open\n");
        assert_eq!(d.next_record(true).unwrap_err().code, "22P04");
    }

    #[test]
    fn binary_format() {
        let mut input = BINARY_SIGNATURE.to_vec();
        input.extend_from_slice(&0u32.to_be_bytes());
        input.extend_from_slice(&0u32.to_be_bytes());
        input.extend_from_slice(&2i16.to_be_bytes());
        input.extend_from_slice(&1i32.to_be_bytes());
        input.push(b'x');
        input.extend_from_slice(&(-1i32).to_be_bytes());
        input.extend_from_slice(&(-1i16).to_be_bytes());
        for chunk in [1, 3, 1000] {
            let r = records(&options(CopyFormat::Binary), &input, chunk);
            assert_eq!(r, vec![vec![s("x"), None]], "chunk {chunk}");
        }
        let mut d = Decoder::new(&options(CopyFormat::Binary));
        d.push(b"PGCOPY\nxxxxxxxxxxxxxx");
        assert_eq!(d.next_record(false).unwrap_err().code, "22P04");
    }
}
