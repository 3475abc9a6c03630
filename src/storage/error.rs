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
}
