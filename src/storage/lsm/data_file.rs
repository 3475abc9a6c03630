//! Data files: Parquet files of one bucket, in Paimon's column layout.
//!
//! A primary-key table's file holds `_KEY_<k>...`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then every
//! column of the schema it was written with; an append table's file holds just the columns.
//! Reading maps the columns a query wants (by field id, through the file's own schema version)
//! onto the file's columns by name, so files written under an older schema line up after a
//! rename, and columns added later read as NULL.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::compute::cast;
use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::{
    ArrowWriter, PARQUET_FIELD_ID_META_KEY, ParquetRecordBatchStreamBuilder, ProjectionMask,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::storage::StorageError;
use crate::storage::io::file_io::FileIO;
use crate::storage::meta::table::Table;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::DataField;

/// Prefix of the key columns of a primary-key data file.
pub const KEY_PREFIX: &str = "_KEY_";
pub const SEQUENCE_COLUMN: &str = "_SEQUENCE_NUMBER";
pub const KIND_COLUMN: &str = "_VALUE_KIND";
/// Parquet field ids Paimon gives its system columns.
pub const KEY_FIELD_ID_START: i32 = i32::MAX / 2;
pub const SEQUENCE_FIELD_ID: i32 = i32::MAX - 1;
pub const KIND_FIELD_ID: i32 = i32::MAX - 2;
/// Most rows in one data page of a file tarn writes (Parquet's default is 20,000): a read by key
/// decodes the page holding its key (`key_read.rs`), so smaller pages make point lookups cheaper
/// at a small cost in compression. Pages are placed by the offset index every file gets.
pub const DATA_PAGE_ROWS: usize = 4096;
/// The largest dictionary page of a column chunk. A read of any page of a dictionary-encoded
/// column decodes the chunk's dictionary page first, so a point lookup's cost grows with it:
/// at Parquet's default (1 MiB) a lookup into a file of distinct strings decompressed a
/// megabyte per column. Columns with more distinct values than this holds fall back to plain
/// encoding (zstd still compresses them); columns of few values keep their dictionary.
pub const DICTIONARY_PAGE_BYTES: usize = 64 << 10;
/// Rows per batch when reading (large batches decode wide strings much faster).
pub const READ_BATCH_SIZE: usize = 8192;

/// Row kinds (`_VALUE_KIND`).
pub mod kind {
    pub const INSERT: i8 = 0;
    pub const UPDATE_BEFORE: i8 = 1;
    pub const UPDATE_AFTER: i8 = 2;
    pub const DELETE: i8 = 3;

    /// Whether a row of this kind is a live version of its key.
    pub fn is_add(kind: i8) -> bool {
        kind == INSERT || kind == UPDATE_AFTER
    }
}

/// Which columns a read produces, in this order: the key columns (from `_KEY_*`, primary-key
/// tables only), then `_SEQUENCE_NUMBER` and `_VALUE_KIND` (primary-key tables only), then the
/// value columns. All fields are of the table's current schema; types are the current ones.
#[derive(Debug, Clone)]
pub struct ReadLayout {
    pub keys: Vec<DataField>,
    pub system: bool,
    pub values: Vec<DataField>,
}

impl ReadLayout {
    /// The Arrow schema of batches read with this layout.
    pub fn schema(&self) -> Result<SchemaRef, StorageError> {
        let mut fields = Vec::new();
        for k in &self.keys {
            fields.push(Field::new(
                format!("{KEY_PREFIX}{}", k.name),
                k.data_type.to_arrow()?,
                k.data_type.nullable,
            ));
        }
        if self.system {
            fields.push(Field::new(SEQUENCE_COLUMN, ArrowType::Int64, false));
            fields.push(Field::new(KIND_COLUMN, ArrowType::Int8, false));
        }
        for v in &self.values {
            fields.push(Field::new(
                &v.name,
                v.data_type.to_arrow()?,
                v.data_type.nullable,
            ));
        }
        Ok(Arc::new(Schema::new(fields)))
    }

    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Index of `_SEQUENCE_NUMBER` in the output.
    pub fn sequence_index(&self) -> usize {
        self.keys.len()
    }

    /// Index of `_VALUE_KIND` in the output.
    pub fn kind_index(&self) -> usize {
        self.keys.len() + 1
    }

    /// Index of the first value column in the output.
    pub fn value_offset(&self) -> usize {
        self.keys.len() + if self.system { 2 } else { 0 }
    }
}

impl Table {
    /// The read layout of a primary-key table: its trimmed key, the system columns, then
    /// `values` (indexes into the current schema's fields).
    pub fn read_layout(&self, values: &[usize]) -> ReadLayout {
        let schema = self.schema();
        let has_key = schema.has_primary_key();
        ReadLayout {
            keys: if has_key {
                schema
                    .trimmed_primary_keys()
                    .iter()
                    .map(|k| schema.field(k).expect("key field").clone())
                    .collect()
            } else {
                Vec::new()
            },
            system: has_key,
            values: values.iter().map(|&i| schema.fields[i].clone()).collect(),
        }
    }

    /// Every column of the table in a read layout (keys and system columns first).
    pub(in crate::storage) fn full_layout(&self) -> ReadLayout {
        let all: Vec<usize> = (0..self.schema().fields.len()).collect();
        self.read_layout(&all)
    }
}

/// A data file's Parquet footer (with its page index, when the file has one) and where it was
/// found: decoded once per file and cached on the budget (`lsm/caches.rs`, kind `footer`), so
/// a read of a known file goes straight to its pages.
#[derive(Debug, Clone)]
pub struct Footer {
    pub path: Path,
    pub size: u64,
    pub metadata: ArrowReaderMetadata,
}

impl Footer {
    /// Bytes the decoded footer holds (for the cache budget).
    pub fn memory_size(&self) -> usize {
        self.metadata.metadata().memory_size()
            + self.metadata.schema().fields().len() * 128
            + self.path.as_ref().len()
    }

    /// The first row of each row group, and the file's row count after the last.
    pub fn row_group_starts(&self) -> Vec<u64> {
        let mut starts = vec![0u64];
        for rg in self.metadata.metadata().row_groups() {
            let last = *starts.last().expect("non-empty");
            starts.push(last + rg.num_rows().max(0) as u64);
        }
        starts
    }

    /// The row ranges (file positions) of the pages of the file's first column (the first key
    /// column of a primary-key file), in order; a row group counts as one page when the file
    /// has no offset index.
    pub fn page_ranges(&self) -> Vec<std::ops::Range<u64>> {
        let starts = self.row_group_starts();
        let offsets = self.metadata.metadata().offset_index();
        let mut out = Vec::new();
        for (rg, w) in starts.windows(2).enumerate() {
            let (lo, hi) = (w[0], w[1]);
            let pages = offsets
                .and_then(|o| o.get(rg))
                .and_then(|cols| cols.first())
                .map(|c| c.page_locations());
            match pages {
                Some(pages) if !pages.is_empty() => {
                    for (i, p) in pages.iter().enumerate() {
                        let a = lo + p.first_row_index.max(0) as u64;
                        let b = pages
                            .get(i + 1)
                            .map_or(hi, |n| lo + n.first_row_index.max(0) as u64);
                        if a < b {
                            out.push(a..b);
                        }
                    }
                }
                _ => {
                    if lo < hi {
                        out.push(lo..hi);
                    }
                }
            }
        }
        out
    }
}

/// Reads the footer (and page index, if any) of a data file at `path`, or at `alternate` when
/// given and it is not at `path` (partition folders named the other way, see
/// [`crate::storage::meta::table::Table::alternate_bucket_path`]).
pub async fn load_footer(
    io: &FileIO,
    path: Path,
    alternate: Option<Path>,
    file_size: u64,
) -> Result<Footer, StorageError> {
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let mut reader = FileReader {
        store: Arc::clone(io.store()),
        path: path.clone(),
        size: file_size,
    };
    match ArrowReaderMetadata::load_async(&mut reader, options.clone()).await {
        Ok(metadata) => Ok(Footer {
            path,
            size: file_size,
            metadata,
        }),
        Err(first) => match alternate {
            Some(alt) => {
                let mut reader = FileReader {
                    store: Arc::clone(io.store()),
                    path: alt.clone(),
                    size: file_size,
                };
                let metadata = ArrowReaderMetadata::load_async(&mut reader, options)
                    .await
                    .map_err(|_| StorageError::from(first))?;
                Ok(Footer {
                    path: alt,
                    size: file_size,
                    metadata,
                })
            }
            None => Err(first.into()),
        },
    }
}

/// Streams rows of one data file whose footer is known, in `layout` (columns mapped by field id
/// through the file's own schema version `file_schema`): all of them, or those
/// `rows` selects (`(row groups, selection over those row groups' rows)`): only the pages
/// holding them are fetched when the file has an offset index.
pub fn read_rows(
    io: &FileIO,
    footer: &Footer,
    file_schema: &TableSchema,
    layout: &ReadLayout,
    rows: Option<(Vec<usize>, RowSelection)>,
) -> Result<BoxStream<'static, Result<RecordBatch, StorageError>>, StorageError> {
    let path = footer.path.clone();
    let reader = FileReader {
        store: Arc::clone(io.store()),
        path: path.clone(),
        size: footer.size,
    };
    let mut builder =
        ParquetRecordBatchStreamBuilder::new_with_metadata(reader, footer.metadata.clone());
    let file_arrow = Arc::clone(builder.schema());
    let by_name: HashMap<&str, usize> = file_arrow
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name().as_str(), i))
        .collect();

    // For each output column: the file column it comes from, if any.
    let target = layout.schema()?;
    let mut sources: Vec<Option<usize>> = Vec::with_capacity(target.fields().len());
    let name_in_file = |f: &DataField| file_schema.field_by_id(f.id).map(|ff| ff.name.clone());
    for k in &layout.keys {
        sources.push(
            name_in_file(k).and_then(|n| by_name.get(format!("{KEY_PREFIX}{n}").as_str()).copied()),
        );
    }
    if layout.system {
        for name in [SEQUENCE_COLUMN, KIND_COLUMN] {
            let idx = by_name.get(name).copied().ok_or_else(|| {
                StorageError::format(format!("data file {path} has no {name} column"))
            })?;
            sources.push(Some(idx));
        }
    }
    for v in &layout.values {
        sources.push(name_in_file(v).and_then(|n| by_name.get(n.as_str()).copied()));
    }
    if let Some(pos) = layout
        .keys
        .iter()
        .zip(&sources)
        .position(|(_, s)| s.is_none())
    {
        return Err(StorageError::format(format!(
            "data file {path} has no key column for \"{}\"",
            layout.keys[pos].name
        )));
    }

    let mut roots: Vec<usize> = sources.iter().flatten().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    // Position of each file column within the projected batches.
    let projected_pos: HashMap<usize, usize> =
        roots.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    if let Some((groups, selection)) = rows {
        builder = builder
            .with_row_groups(groups)
            .with_row_selection(selection);
    }
    let stream = builder
        .with_projection(mask)
        .with_batch_size(READ_BATCH_SIZE)
        .build()?;
    let path_text = path.to_string();
    Ok(stream
        .map_err(StorageError::from)
        .and_then(move |batch| {
            let out = (|| {
                let columns = sources
                    .iter()
                    .zip(target.fields())
                    .map(|(source, field)| -> Result<ArrayRef, StorageError> {
                        match source {
                            Some(i) => {
                                let col = batch.column(projected_pos[i]);
                                if col.data_type() == field.data_type() {
                                    Ok(Arc::clone(col))
                                } else {
                                    Ok(cast(col, field.data_type())?)
                                }
                            }
                            None => Ok(new_null_array(field.data_type(), batch.num_rows())),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                RecordBatch::try_new_with_options(
                    Arc::clone(&target),
                    columns,
                    &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
                )
                .map_err(|e| {
                    StorageError::format(format!(
                        "data file {path_text} does not fit its schema: {e}"
                    ))
                })
            })();
            futures::future::ready(out)
        })
        .boxed())
}

/// Reads a Parquet file of known size through the object store.
#[derive(Debug, Clone)]
struct FileReader {
    store: Arc<dyn object_store::ObjectStore>,
    path: Path,
    size: u64,
}

fn parquet_err(e: object_store::Error) -> parquet::errors::ParquetError {
    parquet::errors::ParquetError::External(Box::new(e))
}

impl AsyncFileReader for FileReader {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> futures::future::BoxFuture<'_, parquet::errors::Result<bytes::Bytes>> {
        use object_store::ObjectStoreExt;
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(parquet_err)
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<std::ops::Range<u64>>,
    ) -> futures::future::BoxFuture<'_, parquet::errors::Result<Vec<bytes::Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(parquet_err)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> futures::future::BoxFuture<
        'a,
        parquet::errors::Result<Arc<parquet::file::metadata::ParquetMetaData>>,
    > {
        async move {
            let size = self.size;
            let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// The Arrow schema of a data file written for `schema`: with the Parquet field ids Paimon
/// gives each column, key columns first for primary-key tables.
pub fn file_arrow_schema(schema: &TableSchema) -> Result<SchemaRef, StorageError> {
    let with_id = |f: Field, id: i32| {
        f.with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_owned(),
            id.to_string(),
        )]))
    };
    let mut fields = Vec::new();
    if schema.has_primary_key() {
        for k in schema.trimmed_primary_keys() {
            let f = schema.field(&k).expect("validated key");
            fields.push(with_id(
                Field::new(
                    format!("{KEY_PREFIX}{k}"),
                    f.data_type.to_arrow()?,
                    f.data_type.nullable,
                ),
                KEY_FIELD_ID_START + f.id,
            ));
        }
        fields.push(with_id(
            Field::new(SEQUENCE_COLUMN, ArrowType::Int64, false),
            SEQUENCE_FIELD_ID,
        ));
        fields.push(with_id(
            Field::new(KIND_COLUMN, ArrowType::Int8, false),
            KIND_FIELD_ID,
        ));
    }
    for f in &schema.fields {
        fields.push(with_id(
            Field::new(&f.name, f.data_type.to_arrow()?, f.data_type.nullable),
            f.id,
        ));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Encodes `batch` (in [`file_arrow_schema`] layout) as one Parquet file with Paimon's
/// defaults (zstd level 1), returning the file's bytes.
pub fn encode_file(batch: &RecordBatch, zstd_level: i32) -> Result<Vec<u8>, StorageError> {
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(zstd_level).unwrap_or_default(),
        ))
        .set_created_by(format!("tarn version {}", env!("CARGO_PKG_VERSION")))
        .set_data_page_row_count_limit(DATA_PAGE_ROWS)
        .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES);
    // Keys and sequence numbers are (nearly) unique in a file: a dictionary of them is as
    // large as the column, and every read of one of its pages would decode it first.
    for f in batch.schema().fields() {
        if f.name().starts_with(KEY_PREFIX) || f.name() == SEQUENCE_COLUMN {
            props = props.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), false);
        }
    }
    let props = props.build();
    let mut out = Vec::with_capacity(batch.get_array_memory_size() / 4 + 1024);
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(props))?;
    writer.write(batch)?;
    writer.close()?;
    Ok(out)
}

/// A new data file name, as Paimon names them.
pub fn new_file_name(prefix: &str) -> String {
    format!("{prefix}-{}-0.parquet", uuid::Uuid::new_v4())
}
