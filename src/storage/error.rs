//! Errors of the storage layer. Callers above map them to SQLSTATEs at the wire
//! (`server/error.rs`), so each kind of failure keeps its own variant all the way up: an I/O
//! failure is never reported as corrupt metadata, a file deleted behind tarn's back is not an
//! I/O failure, and a bug or a failed task is neither.
//!
//! Errors of other crates come in through the `From` impls below, which sort them by kind:
//! object_store's `NotFound` is [`StorageError::MissingFile`], and a Parquet error whose cause is
//! an object store or I/O failure is that failure, not a damaged data file. Failures that only the
//! commit path has (a failed group-commit round, a committer that never answered) are
//! [`CommitError`]s, which live with the commit floor.

use crate::storage::commit::error::CommitError;
use crate::storage::spec::schema_change::SchemaChangeError;

/// What went wrong while reading or writing the warehouse.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The object store failed (I/O, permissions, network).
    #[error("warehouse I/O failed: {0}")]
    ObjectStore(object_store::Error),
    /// A file that the table's metadata names (or that was just listed) is not in the
    /// warehouse: deleted by hand, by another tool, or by expiry racing a reader.
    #[error("could not find file \"{path}\" in the warehouse")]
    MissingFile { path: String },
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
    /// Parquet encoding or decoding failed (a damaged or foreign data file; I/O failures under
    /// Parquet are [`StorageError::ObjectStore`] / [`StorageError::MissingFile`]).
    #[error("data file error: {0}")]
    Parquet(parquet::errors::ParquetError),
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
    /// A commit failed in a way only commits can (see [`CommitError`]).
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// An `ALTER TABLE` change Paimon's or tarn's rules refuse (see [`SchemaChangeError`]'s
    /// kinds).
    #[error(transparent)]
    SchemaChange(#[from] SchemaChangeError),
    /// A bug in tarn: a broken invariant, or a task that panicked or was cancelled.
    #[error("{0}")]
    Internal(String),
}

impl StorageError {
    /// A [`StorageError::Format`] with `message`.
    pub fn format(message: impl Into<String>) -> Self {
        Self::Format(message.into())
    }

    /// A [`StorageError::Internal`] with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }

    /// A spawned task of storage (`what`: "a writer task") that did not finish: it panicked
    /// or was cancelled. A bug, never a damaged file.
    pub fn task_failed(what: &str, e: tokio::task::JoinError) -> Self {
        if e.is_panic() {
            let payload = e.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Self::Internal(format!("{what} panicked: {message}"))
        } else {
            Self::Internal(format!("{what} was cancelled"))
        }
    }

    /// Whether a file was not found (see [`StorageError::MissingFile`]).
    pub fn is_missing_file(&self) -> bool {
        matches!(self, Self::MissingFile { .. })
    }

    /// Why the commit lost a race with another writer, if that is what failed — directly or as
    /// the error of the group-commit round that held it. The caller may run it again.
    pub fn conflict(&self) -> Option<&str> {
        match self {
            Self::CommitConflict(why) => Some(why),
            Self::Commit(CommitError::Group(e)) => e.conflict(),
            _ => None,
        }
    }
}

impl From<object_store::Error> for StorageError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { path, .. } => Self::MissingFile { path },
            other => Self::ObjectStore(other),
        }
    }
}

impl From<parquet::errors::ParquetError> for StorageError {
    /// The Parquet reader wraps the errors of the bytes it reads (object store, I/O) as
    /// `External`: those are the failures they are, not a damaged data file.
    fn from(e: parquet::errors::ParquetError) -> Self {
        use parquet::errors::ParquetError;
        let ParquetError::External(inner) = e else {
            return Self::Parquet(e);
        };
        let inner = match inner.downcast::<object_store::Error>() {
            Ok(e) => return (*e).into(),
            Err(inner) => inner,
        };
        match inner.downcast::<std::io::Error>() {
            Ok(source) => Self::Io {
                path: "a Parquet data file".to_owned(),
                source: *source,
            },
            Err(inner) => Self::Parquet(ParquetError::External(inner)),
        }
    }
}
