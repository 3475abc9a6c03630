//! [`TransactionRecord`]: the payload of one log record — one committed transaction: when it
//! committed, and for each table it wrote (the table's path in the warehouse and the schema id
//! its rows follow), per (partition, bucket) the rows with their row kinds and the sequence
//! numbers the commit assigned, as Arrow IPC stream bytes behind a small binary header.
//!
//! Why this shape: what a flush needs to write the table's level-0 files (and what a read needs
//! to lay the unflushed rows over the table's snapshot) is exactly a run per (partition,
//! bucket) in the write path's layout — `_KEY_…`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, values —
//! so a record carries those batches as they are, and Arrow IPC encodes them without a schema
//! of tarn's own. The commit time makes reads as of a time inside the unflushed window exact.
//! The table paths can be read without decoding any rows ([`record_tables`]): truncation and
//! replay ask which tables a record wrote far more often than they read its rows.
//!
//! A transaction of a block with DDL names its block (`block`, see `storage/block_ddl.rs`): a
//! record holding it is the block's commit point, which a start after a crash asks about.
//!
//! Layout, little endian: `[4 bytes magic "ttx1"][i64 commit millis][u32 tables]` (with a
//! block: magic `"ttx2"` and `[u32 len][block id]` after the commit millis), then per
//! table `[u32 len][path][i64 schema id][u32 buckets]`, per bucket `[u32 len][partition bytes]
//! [i32 bucket][u32 rows]`, then `[u64 len][Arrow IPC stream: one batch per bucket, in order]`.

use std::io::Cursor;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use bytes::Bytes;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{KIND_COLUMN, SEQUENCE_COLUMN};

const MAGIC: [u8; 4] = *b"ttx1";
/// The magic of a record that names its transaction block.
const MAGIC_BLOCK: [u8; 4] = *b"ttx2";

/// One committed transaction (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionRecord {
    /// When the transaction committed (epoch millis, UTC).
    pub commit_millis: i64,
    pub tables: Vec<TableChanges>,
    /// The transaction block whose DDL commits with this record, if any.
    pub block: Option<String>,
}

/// What a transaction wrote to one table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableChanges {
    /// The table's path in the warehouse (`db.db/table`), the key of the log state.
    pub table: String,
    /// The schema id the rows follow.
    pub schema_id: i64,
    /// Per (partition, bucket), the rows; every batch of a table has the same Arrow schema.
    pub buckets: Vec<BucketChanges>,
}

/// The rows a transaction wrote to one bucket of one partition.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketChanges {
    /// The partition as Paimon's binary row bytes (empty for an unpartitioned table).
    pub partition: Bytes,
    pub bucket: i32,
    /// The rows; a primary-key table's carry `_SEQUENCE_NUMBER` (Int64) and `_VALUE_KIND`
    /// (Int8), neither null.
    pub rows: RecordBatch,
}

impl TransactionRecord {
    /// The record's payload bytes.
    pub fn encode(&self) -> Result<Vec<u8>, StorageError> {
        let mut out = Vec::new();
        out.extend_from_slice(if self.block.is_some() {
            &MAGIC_BLOCK
        } else {
            &MAGIC
        });
        out.extend_from_slice(&self.commit_millis.to_le_bytes());
        if let Some(block) = &self.block {
            put_bytes(&mut out, block.as_bytes())?;
        }
        put_u32(&mut out, self.tables.len(), "tables")?;
        for table in &self.tables {
            put_bytes(&mut out, table.table.as_bytes())?;
            out.extend_from_slice(&table.schema_id.to_le_bytes());
            put_u32(&mut out, table.buckets.len(), "buckets")?;
            for b in &table.buckets {
                check_rows(&table.table, &b.rows)?;
                put_bytes(&mut out, &b.partition)?;
                out.extend_from_slice(&b.bucket.to_le_bytes());
                put_u32(&mut out, b.rows.num_rows(), "rows")?;
            }
            let ipc = encode_batches(table)?;
            out.extend_from_slice(&(ipc.len() as u64).to_le_bytes());
            out.extend_from_slice(&ipc);
        }
        Ok(out)
    }

    /// A record from its payload bytes. Bytes that do not decode are damage (XX001): the
    /// record's CRC held, so they are what was written.
    pub fn decode(payload: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(payload)?;
        let commit_millis = r.i64()?;
        let block = r.block()?;
        let count = r.u32()?;
        let mut tables = Vec::new();
        for _ in 0..count {
            let (mut table, rows) = r.table_header()?;
            let ipc = r.bytes_u64()?;
            let batches = decode_batches(ipc, &table.table)?;
            if batches.len() != rows.len() {
                return Err(bad(format!(
                    "table {} lists {} buckets but holds {} batches",
                    table.table,
                    rows.len(),
                    batches.len()
                )));
            }
            for ((partition, bucket, rows), batch) in rows.into_iter().zip(batches) {
                if batch.num_rows() != rows {
                    return Err(bad(format!(
                        "bucket {bucket} of {} lists {rows} rows but holds {}",
                        table.table,
                        batch.num_rows()
                    )));
                }
                table.buckets.push(BucketChanges {
                    partition,
                    bucket,
                    rows: batch,
                });
            }
            tables.push(table);
        }
        r.end()?;
        Ok(Self {
            commit_millis,
            tables,
            block,
        })
    }
}

/// The paths of the tables a record's payload wrote, without decoding its rows.
pub fn record_tables(payload: &[u8]) -> Result<Vec<String>, StorageError> {
    let mut r = Reader::new(payload)?;
    r.i64()?;
    r.block()?;
    let count = r.u32()?;
    let mut tables = Vec::new();
    for _ in 0..count {
        let (table, _) = r.table_header()?;
        r.bytes_u64()?;
        tables.push(table.table);
    }
    r.end()?;
    Ok(tables)
}

/// A record's block (if it names one) and the (path, schema id) of each table it wrote.
pub type RecordSummary = (Option<String>, Vec<(String, i64)>);

/// A record's [`RecordSummary`], without decoding its rows: what a start after a crash asks
/// of the records it finds.
pub fn record_summary(payload: &[u8]) -> Result<RecordSummary, StorageError> {
    let mut r = Reader::new(payload)?;
    r.i64()?;
    let block = r.block()?;
    let count = r.u32()?;
    let mut tables = Vec::new();
    for _ in 0..count {
        let (table, _) = r.table_header()?;
        r.bytes_u64()?;
        tables.push((table.table, table.schema_id));
    }
    r.end()?;
    Ok((block, tables))
}

/// A primary-key table's rows must carry their sequence numbers and row kinds, typed and set.
fn check_rows(table: &str, rows: &RecordBatch) -> Result<(), StorageError> {
    for (name, ty) in [
        (SEQUENCE_COLUMN, DataType::Int64),
        (KIND_COLUMN, DataType::Int8),
    ] {
        let Some(column) = rows.column_by_name(name) else {
            continue;
        };
        if column.data_type() != &ty || column.null_count() > 0 {
            return Err(StorageError::internal(format!(
                "rows for the commit log of {table}: {name} must be a non-null {ty}, not a {} \
                 with {} nulls",
                column.data_type(),
                column.null_count()
            )));
        }
    }
    Ok(())
}

fn encode_batches(table: &TableChanges) -> Result<Vec<u8>, StorageError> {
    let Some(first) = table.buckets.first() else {
        return Ok(Vec::new());
    };
    let schema = first.rows.schema();
    let mut writer = StreamWriter::try_new(Vec::new(), &schema)?;
    for b in &table.buckets {
        if b.rows.schema() != schema {
            return Err(StorageError::internal(format!(
                "rows for the commit log of {}: bucket {} has another schema than bucket {}",
                table.table, b.bucket, first.bucket
            )));
        }
        writer.write(&b.rows)?;
    }
    writer.finish()?;
    Ok(writer.into_inner()?)
}

fn decode_batches(ipc: &[u8], table: &str) -> Result<Vec<RecordBatch>, StorageError> {
    if ipc.is_empty() {
        return Ok(Vec::new());
    }
    let damaged = |e: arrow::error::ArrowError| bad(format!("rows of {table}: {e}"));
    StreamReader::try_new(Cursor::new(ipc), None)
        .map_err(damaged)?
        .map(|b| b.map_err(damaged))
        .collect()
}

fn bad(reason: String) -> StorageError {
    StorageError::format(format!("commit log record does not decode: {reason}"))
}

fn put_u32(out: &mut Vec<u8>, n: usize, what: &str) -> Result<(), StorageError> {
    let n = u32::try_from(n)
        .map_err(|_| StorageError::Unsupported(format!("{n} {what} in one commit log record")))?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), StorageError> {
    put_u32(out, bytes.len(), "bytes of a name")?;
    out.extend_from_slice(bytes);
    Ok(())
}

/// A cursor over a payload; every read checks the bytes are there.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Whether the record names its block (magic `ttx2`).
    has_block: bool,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Result<Self, StorageError> {
        let mut r = Reader {
            bytes,
            at: 0,
            has_block: false,
        };
        match r.take(4)? {
            m if m == MAGIC => {}
            m if m == MAGIC_BLOCK => r.has_block = true,
            _ => return Err(bad("it does not start with the record magic".to_owned())),
        }
        Ok(r)
    }

    /// The block id after the commit millis, when the magic says there is one.
    fn block(&mut self) -> Result<Option<String>, StorageError> {
        if !self.has_block {
            return Ok(None);
        }
        let block = std::str::from_utf8(self.bytes_u32()?)
            .map_err(|_| bad("a block id that is not UTF-8".to_owned()))?;
        Ok(Some(block.to_owned()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], StorageError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let Some(end) = end else {
            return Err(bad(format!(
                "{n} bytes wanted at offset {} of {}",
                self.at,
                self.bytes.len()
            )));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, StorageError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn i32(&mut self) -> Result<i32, StorageError> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn i64(&mut self) -> Result<i64, StorageError> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    fn bytes_u32(&mut self) -> Result<&'a [u8], StorageError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn bytes_u64(&mut self) -> Result<&'a [u8], StorageError> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().expect("8"));
        self.take(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// A table's header: the table without buckets, and its buckets' (partition, bucket, rows).
    #[allow(clippy::type_complexity)]
    fn table_header(&mut self) -> Result<(TableChanges, Vec<(Bytes, i32, usize)>), StorageError> {
        let table = std::str::from_utf8(self.bytes_u32()?)
            .map_err(|_| bad("a table path that is not UTF-8".to_owned()))?
            .to_owned();
        let schema_id = self.i64()?;
        let count = self.u32()?;
        let mut buckets = Vec::new();
        for _ in 0..count {
            let partition = Bytes::copy_from_slice(self.bytes_u32()?);
            let bucket = self.i32()?;
            let rows = self.u32()? as usize;
            buckets.push((partition, bucket, rows));
        }
        let table = TableChanges {
            table,
            schema_id,
            buckets: Vec::new(),
        };
        Ok((table, buckets))
    }

    fn end(&self) -> Result<(), StorageError> {
        if self.at != self.bytes.len() {
            return Err(bad(format!(
                "{} bytes after its end",
                self.bytes.len() - self.at
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int8Array, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn rows(keys: &[i32], seq0: i64, kinds: &[i8]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_KEY_id", DataType::Int32, false),
            Field::new(SEQUENCE_COLUMN, DataType::Int64, false),
            Field::new(KIND_COLUMN, DataType::Int8, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let n = keys.len() as i64;
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(keys.to_vec())),
                Arc::new(Int64Array::from_iter_values(seq0..seq0 + n)),
                Arc::new(Int8Array::from(kinds.to_vec())),
                Arc::new(StringArray::from_iter(
                    keys.iter().map(|k| (k % 2 == 0).then(|| format!("n{k}"))),
                )),
            ],
        )
        .unwrap()
    }

    fn record() -> TransactionRecord {
        TransactionRecord {
            commit_millis: 1_765_000_000_123,
            tables: vec![
                TableChanges {
                    table: "public.db/orders".to_owned(),
                    schema_id: 3,
                    buckets: vec![
                        BucketChanges {
                            partition: Bytes::from_static(b"\x00\x00\x00\x01p1"),
                            bucket: 0,
                            rows: rows(&[1, 2, 3], 10, &[0, 2, 3]),
                        },
                        BucketChanges {
                            partition: Bytes::new(),
                            bucket: 7,
                            rows: rows(&[], 13, &[]),
                        },
                    ],
                },
                TableChanges {
                    table: "sales.db/ünïcode".to_owned(),
                    schema_id: 0,
                    buckets: vec![],
                },
            ],
            block: None,
        }
    }

    #[test]
    fn a_record_round_trips() {
        let r = record();
        let bytes = r.encode().unwrap();
        assert_eq!(TransactionRecord::decode(&bytes).unwrap(), r);
        assert_eq!(
            record_tables(&bytes).unwrap(),
            vec!["public.db/orders", "sales.db/ünïcode"]
        );
        let empty = TransactionRecord {
            commit_millis: -1,
            tables: vec![],
            block: None,
        };
        let bytes = empty.encode().unwrap();
        assert_eq!(TransactionRecord::decode(&bytes).unwrap(), empty);
        let mut named = record();
        named.block = Some("block-ä1".to_owned());
        let bytes = named.encode().unwrap();
        assert_eq!(&bytes[..4], b"ttx2");
        assert_eq!(TransactionRecord::decode(&bytes).unwrap(), named);
        assert_eq!(record_tables(&bytes).unwrap().len(), 2);
        for cut in 0..bytes.len() {
            assert!(
                TransactionRecord::decode(&bytes[..cut]).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn every_cut_of_a_record_is_damage_not_a_panic() {
        let bytes = record().encode().unwrap();
        for cut in 0..bytes.len() {
            let err = TransactionRecord::decode(&bytes[..cut]).unwrap_err();
            assert!(matches!(err, StorageError::Format(_)), "cut {cut}: {err:?}");
            assert!(record_tables(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TransactionRecord::decode(&longer).is_err());
    }

    #[test]
    fn mistyped_sequence_numbers_and_mixed_schemas_are_refused() {
        let mut r = record();
        let b = &mut r.tables[0].buckets[0];
        let schema = Arc::new(Schema::new(vec![Field::new(
            SEQUENCE_COLUMN,
            DataType::Int32,
            false,
        )]));
        b.rows = RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(vec![1]))]).unwrap();
        let err = r.encode().unwrap_err().to_string();
        assert!(err.contains(SEQUENCE_COLUMN), "{err}");

        let mut r = record();
        let other = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
        r.tables[0].buckets[1].rows =
            RecordBatch::try_new(other, vec![Arc::new(Int32Array::from(vec![1]))]).unwrap();
        let err = r.encode().unwrap_err().to_string();
        assert!(err.contains("another schema"), "{err}");
    }
}
