//! Errors of the storage layer. Callers above map them to SQLSTATEs at the wire.

/// What went wrong while reading or writing the warehouse.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The object store failed (I/O, permissions, network).
    #[error("warehouse I/O failed: {0}")]
    ObjectStore(#[from] object_store::Error),
    /// A local filesystem operation failed.
    #[error("warehouse I/O failed on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The warehouse location cannot be used.
    #[error("invalid warehouse location {location:?}: {reason}")]
    InvalidLocation { location: String, reason: String },
    /// A database (Postgres schema) that was asked for does not exist.
    #[error("schema \"{0}\" does not exist")]
    DatabaseNotFound(String),
    /// A database (Postgres schema) that was to be created exists already.
    #[error("schema \"{0}\" already exists")]
    DatabaseExists(String),
    /// A database still holds tables and the drop was not cascading.
    #[error("cannot drop schema \"{0}\" because other objects depend on it")]
    DatabaseNotEmpty(String),
    /// A table that was asked for does not exist.
    #[error("relation \"{0}\" does not exist")]
    TableNotFound(String),
    /// A table that was to be created exists already.
    #[error("relation \"{0}\" already exists")]
    TableExists(String),
    /// A file of the table is not what Paimon's format says it should be.
    #[error("corrupt or unreadable table metadata: {0}")]
    Format(String),
    /// A Paimon type tarn cannot read or write.
    #[error("Paimon type {0} is not supported by tarn")]
    UnsupportedType(String),
    /// A schema tarn was asked to create breaks Paimon's rules.
    #[error("{0}")]
    InvalidSchema(String),
    /// A feature of the table or of the request that tarn does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// The table uses features tarn can read but not write.
    #[error("table \"{table}\" is read-only in tarn: {reason}")]
    ReadOnly { table: String, reason: String },
    /// Parquet encoding or decoding failed.
    #[error("data file error: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow computation on table data failed.
    #[error("{0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// Avro (manifest) encoding or decoding failed.
    #[error("manifest file error: {0}")]
    Avro(String),
    /// A row breaks a NOT NULL column or key column.
    #[error(
        "null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"
    )]
    NotNull { table: String, column: String },
    /// A string longer than its VARCHAR(n)/CHAR(n) column allows.
    #[error("value too long for type {type_name}")]
    ValueTooLong { type_name: String },
    /// A primary key that exists already, or twice in one write.
    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    DuplicateKey {
        constraint: String,
        /// `Key (id)=(1) already exists.`
        detail: String,
    },
    /// Another writer committed first and this commit cannot be reconciled with it.
    #[error("could not serialize access due to concurrent update: {0}")]
    CommitConflict(String),
    /// A snapshot id, tag or time that names no version of a table, or a tag that cannot be
    /// created (see [`crate::storage::meta::time_travel::VersionError`] for the cases).
    #[error(transparent)]
    Version(#[from] crate::storage::meta::time_travel::VersionError),
}

impl StorageError {
    /// A [`StorageError::Format`] with `message`.
    pub fn format(message: impl Into<String>) -> Self {
        Self::Format(message.into())
    }
}
