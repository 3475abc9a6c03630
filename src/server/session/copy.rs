//! `COPY ... TO STDOUT`: the rows of a query (planned and run as a SELECT, in the session's
//! transaction) written in PostgreSQL's text or CSV COPY format.
//!
//! Values are rendered by the same encoder as a SELECT in text mode (the data rows of
//! [`super::super::stream::query_response`]), then written the way PostgreSQL's `copyto.c`
//! writes them: text format escapes backslash, control characters and the delimiter, NULL is
//! `\N`; CSV quotes fields that hold the delimiter, quote, CR or LF, that equal the NULL string,
//! or that FORCE_QUOTE names, and escapes quotes and escapes inside. One CopyData per row.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use futures::StreamExt;
use futures::stream::BoxStream;
use pgwire::api::results::QueryResponse;
use pgwire::error::PgWireResult;
use pgwire::messages::data::DataRow;

use super::{Outcome, Output, Session};
use crate::server::error::PgError;
use crate::sql::copy::{CopyFormat, CopyOptions, CopySpec, ForceQuote};

impl Session {
    /// Plans and starts `COPY ... TO STDOUT`: its rows stream like a SELECT's.
    pub(super) async fn copy_to_stdout(&mut self, spec: &CopySpec) -> Result<Outcome, PgError> {
        let mut plan = self.plan(spec.query.clone()).await?;
        let all_columns: Vec<String> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| crate::sql::visible_name(f.name()).to_owned())
            .collect();
        if let Some(table) = &spec.table
            && !table.columns.is_empty()
        {
            let columns = plan.schema().columns();
            let mut exprs = Vec::with_capacity(table.columns.len());
            for name in &table.columns {
                let Some(column) = columns.iter().find(|c| &c.name == name) else {
                    return Err(PgError::new(
                        "42703",
                        format!(
                            "column \"{name}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    ));
                };
                exprs.push(Expr::Column(column.clone()));
            }
            plan = LogicalPlanBuilder::from(plan).project(exprs)?.build()?;
        }
        let names: Vec<String> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| crate::sql::visible_name(f.name()).to_owned())
            .collect();
        let force_quote = match &spec.options.force_quote {
            ForceQuote::None => vec![false; names.len()],
            ForceQuote::All => vec![true; names.len()],
            ForceQuote::Columns(columns) => {
                let mut force = vec![false; names.len()];
                for column in columns {
                    match names.iter().position(|n| n == column) {
                        Some(i) => force[i] = true,
                        None => {
                            return Err(match &spec.table {
                                Some(t) if all_columns.contains(column) => PgError::new(
                                    "42P10",
                                    format!(
                                        "FORCE_QUOTE column \"{column}\" not referenced by COPY"
                                    ),
                                ),
                                Some(t) => PgError::new(
                                    "42703",
                                    format!(
                                        "column \"{column}\" of relation \"{}\" does not exist",
                                        t.name
                                    ),
                                ),
                                None => PgError::new(
                                    "42703",
                                    format!("column \"{column}\" does not exist"),
                                ),
                            });
                        }
                    }
                }
                force
            }
        };
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.execute_stream().await?;
        // pg_stat_progress_copy: the rows handed to the wire so far (relid 0 for a query).
        let relation = spec.table.as_ref().map_or("", |t| t.name.as_str());
        let progress =
            self.engine
                .copy_progress()
                .start(self.vars.pid, relation, "COPY TO", "PIPE");
        let counted = batches.inspect(move |batch| {
            if let Ok(batch) = batch {
                progress.add_tuples(batch.num_rows() as u64);
            }
        });
        let batches = Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                Arc::clone(&schema),
                counted,
            ),
        );
        Ok(Output::Copy {
            schema,
            batches,
            options: Arc::new(spec.options.clone()),
            force_quote: Arc::new(force_quote),
        }
        .into())
    }
}

/// A COPY TO STDOUT ready to send: CopyOutResponse, the header and rows as CopyData, CopyDone,
/// `COPY n`.
pub struct CopyOut {
    pub columns: usize,
    /// FORMAT binary (CopyOutResponse's format code 1).
    pub binary: bool,
    /// The header line, or binary's signature (not counted in the tag).
    pub header: Option<Bytes>,
    /// One line (binary: one tuple) per row.
    pub rows: BoxStream<'static, PgWireResult<Bytes>>,
    /// Binary's trailer (-1 as the field count).
    pub trailer: Option<Bytes>,
}

/// Turns a statement's text-format data rows into COPY lines.
pub fn copy_out(
    mut response: QueryResponse,
    options: Arc<CopyOptions>,
    force_quote: Arc<Vec<bool>>,
) -> CopyOut {
    let fields = response.row_schema();
    let columns = fields.len();
    if options.format == CopyFormat::Binary {
        // A binary data row's fields are already COPY's: length-prefixed send formats.
        let mut header = BytesMut::from(&crate::server::copy_input::BINARY_SIGNATURE[..]);
        header.put_u32(0);
        header.put_u32(0);
        let rows = std::mem::replace(response.data_rows(), Box::pin(futures::stream::empty()));
        let rows = rows
            .map(|row| {
                row.map(|row| {
                    let mut tuple = BytesMut::with_capacity(row.data.len() + 2);
                    tuple.put_i16(row.field_count);
                    tuple.put_slice(&row.data);
                    tuple.freeze()
                })
            })
            .boxed();
        return CopyOut {
            columns,
            binary: true,
            header: Some(header.freeze()),
            rows,
            trailer: Some(Bytes::from_static(&[0xff, 0xff])),
        };
    }
    let header = options.header.then(|| {
        let mut line = BytesMut::new();
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                line.put_u8(options.delimiter);
            }
            write_value(
                &mut line,
                field.name().as_bytes(),
                &options,
                false,
                columns == 1,
            );
        }
        line.put_u8(b'\n');
        line.freeze()
    });
    let rows = std::mem::replace(response.data_rows(), Box::pin(futures::stream::empty()));
    let rows = rows
        .map(move |row| row.map(|row| copy_line(&row, &options, &force_quote)))
        .boxed();
    CopyOut {
        columns,
        binary: false,
        header,
        rows,
        trailer: None,
    }
}

/// The fields of a text-format data row: `None` for NULL.
fn row_fields(row: &DataRow) -> impl Iterator<Item = Option<&[u8]>> {
    let mut rest: &[u8] = &row.data;
    (0..row.field_count).map(move |_| {
        let (len, tail) = rest.split_at(4);
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        if len < 0 {
            rest = tail;
            None
        } else {
            let (value, tail) = tail.split_at(len as usize);
            rest = tail;
            Some(value)
        }
    })
}

/// One row as a COPY line (with its newline).
fn copy_line(row: &DataRow, options: &CopyOptions, force_quote: &[bool]) -> Bytes {
    let mut line = BytesMut::with_capacity(row.data.len() + 1);
    let single = row.field_count == 1;
    for (i, value) in row_fields(row).enumerate() {
        if i > 0 {
            line.put_u8(options.delimiter);
        }
        match value {
            None => line.put_slice(options.null.as_bytes()),
            Some(v) => write_value(
                &mut line,
                v,
                options,
                force_quote.get(i).copied().unwrap_or(false),
                single,
            ),
        }
    }
    line.put_u8(b'\n');
    line.freeze()
}

/// A non-NULL value (or a header name) in the COPY format.
fn write_value(out: &mut BytesMut, value: &[u8], options: &CopyOptions, force: bool, single: bool) {
    match options.format {
        CopyFormat::Text => write_text(out, value, options.delimiter),
        CopyFormat::Csv => write_csv(out, value, options, force, single),
        CopyFormat::Binary => out.put_slice(value),
    }
}

/// PostgreSQL's `CopyAttributeOutText`: backslash escapes for backslash, the delimiter and
/// the control characters that have one; other bytes as they are (runs copied at once).
fn write_text(out: &mut BytesMut, value: &[u8], delimiter: u8) {
    let mut start = 0;
    for (i, &c) in value.iter().enumerate() {
        let escaped = match c {
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x0b => b'v',
            b'\\' => b'\\',
            c if c == delimiter => c,
            _ => continue,
        };
        out.put_slice(&value[start..i]);
        out.put_slice(&[b'\\', escaped]);
        start = i + 1;
    }
    out.put_slice(&value[start..]);
}

/// PostgreSQL's `CopyAttributeOutCSV`: quoted when forced, equal to the NULL string, `\.` alone
/// on its line, or holding the delimiter, quote, CR or LF; quotes and escapes inside escaped.
fn write_csv(out: &mut BytesMut, value: &[u8], options: &CopyOptions, force: bool, single: bool) {
    let (quote, escape) = (options.quote, options.escape);
    let quoted = force
        || value == options.null.as_bytes()
        || (single && value == b"\\.")
        || value
            .iter()
            .any(|&c| c == options.delimiter || c == quote || c == b'\n' || c == b'\r');
    if !quoted {
        out.put_slice(value);
        return;
    }
    out.put_u8(quote);
    let mut start = 0;
    for (i, &c) in value.iter().enumerate() {
        if c == quote || c == escape {
            out.put_slice(&value[start..i]);
            out.put_u8(escape);
            start = i;
        }
    }
    out.put_slice(&value[start..]);
    out.put_u8(quote);
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn row(values: &[Option<&str>]) -> DataRow {
        let mut data = BytesMut::new();
        for v in values {
            match v {
                None => data.put_i32(-1),
                Some(s) => {
                    data.put_i32(s.len() as i32);
                    data.put_slice(s.as_bytes());
                }
            }
        }
        DataRow::new(data, values.len() as i16)
    }

    fn line(options: &CopyOptions, values: &[Option<&str>], force: &[bool]) -> String {
        String::from_utf8(copy_line(&row(values), options, force).to_vec()).unwrap()
    }

    #[test]
    fn text_format_escapes() {
        let text = options(CopyFormat::Text);
        assert_eq!(
            line(
                &text,
                &[
                    Some("a\tb\nc\rd\\e"),
                    None,
                    Some(""),
                    Some("\u{8}\u{b}\u{c}\u{1}é")
                ],
                &[]
            ),
            "a\\tb\\nc\\rd\\\\e\t\\N\t\t\\b\\v\\f\u{1}é\n"
        );
        let pipe = CopyOptions {
            delimiter: b'|',
            null: "NULL".into(),
            ..text
        };
        assert_eq!(
            line(&pipe, &[Some("x|y\tz"), None], &[]),
            "x\\|y\\tz|NULL\n"
        );
    }

    #[test]
    fn csv_quoting() {
        let csv = options(CopyFormat::Csv);
        assert_eq!(
            line(
                &csv,
                &[
                    Some("plain"),
                    Some(""),
                    None,
                    Some("a,b"),
                    Some("say \"hi\""),
                    Some("l1\nl2"),
                    Some(" sp ")
                ],
                &[]
            ),
            "plain,\"\",,\"a,b\",\"say \"\"hi\"\"\",\"l1\nl2\", sp \n"
        );
        assert_eq!(line(&csv, &[Some("\\.")], &[]), "\"\\.\"\n");
        assert_eq!(line(&csv, &[Some("\\."), Some("x")], &[]), "\\.,x\n");
        assert_eq!(
            line(&csv, &[Some("1"), None, Some("x")], &[true, true, false]),
            "\"1\",,x\n"
        );
        let custom = CopyOptions {
            delimiter: b';',
            quote: b'\'',
            escape: b'\\',
            null: "NULL".into(),
            ..csv
        };
        assert_eq!(
            line(
                &custom,
                &[Some("it's"), Some("a\\b"), Some("NULL"), None, Some("a,b")],
                &[]
            ),
            "'it\\'s';a\\b;'NULL';NULL;a,b\n"
        );
    }
}
