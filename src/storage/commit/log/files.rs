//! The durable file steps the commit log takes on a local file system: a directory's entries
//! made durable (fsync of the directory), a file replaced atomically (write a temporary file,
//! fsync it, rename it over the old one, fsync the directory), and the one I/O error type of the
//! log's blocking code, which names the file it failed on.
//!
//! Why here and not `io/file_io`: the log lives on the server's local disk even when the
//! warehouse is an object store, and needs `fdatasync`/`fsync` semantics that an object store
//! does not have; `std::fs` (inside `spawn_blocking`) is the whole interface.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::storage::StorageError;

/// An I/O failure of the log's blocking code, with the path it failed on.
#[derive(Debug)]
pub struct FileError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl FileError {
    /// A closure that wraps an `io::Error` with `path` (for `map_err`).
    pub fn at(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
        move |source| FileError {
            path: path.to_owned(),
            source,
        }
    }
}

impl From<FileError> for StorageError {
    fn from(e: FileError) -> Self {
        StorageError::Io {
            path: e.path.display().to_string(),
            source: e.source,
        }
    }
}

/// Makes `dir`'s entries (files created, renamed or removed in it) durable.
pub fn sync_dir(dir: &Path, fsyncs: &AtomicU64) -> Result<(), FileError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(FileError::at(dir))?;
    fsyncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Writes `bytes` as `dir/name`, replacing it atomically: a reader (or a crash) sees the old
/// file or the new one, whole. Returns the new file, open for writing at its end.
pub fn write_atomically(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    fsyncs: &AtomicU64,
) -> Result<File, FileError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&tmp)
        .map_err(FileError::at(&tmp))?;
    file.write_all(bytes).map_err(FileError::at(&tmp))?;
    file.sync_all().map_err(FileError::at(&tmp))?;
    fsyncs.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(name);
    std::fs::rename(&tmp, &path).map_err(FileError::at(&path))?;
    sync_dir(dir, fsyncs)?;
    Ok(file)
}

/// Whether `name` is a temporary file [`write_atomically`] left behind (a crash before its
/// rename): never part of the log, removed when the log opens.
pub fn is_leftover(name: &str) -> bool {
    name.ends_with(".tmp")
}
