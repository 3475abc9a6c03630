//! The durable file steps the commit log takes on a local file system: a directory's entries
//! made durable (fsync of the directory), a file replaced atomically (write a temporary file,
//! fsync it, rename it over the old one, fsync the directory), a file created whole at its full
//! size and zero-filled, bytes of a file erased (zeroed) durably, and the one I/O error type of
//! the log's blocking code, which names the file it failed on.
//!
//! Why zero-filled and not `fallocate`d or sparse: the log overwrites its segments in place, and
//! an fdatasync after an overwrite flushes only data blocks when every block of the file is
//! allocated *and written*. A sparse file allocates blocks on the first write, an `fallocate`d
//! one converts its unwritten extents — both metadata, journaled by each fdatasync (the
//! `fsync_figures` measurement in `tests.rs` shows the difference on this disk).
//!
//! Why here and not `io/file_io`: the log lives on the server's local disk even when the
//! warehouse is an object store, and needs `fdatasync`/`fsync` semantics that an object store
//! does not have; `std::fs` (inside `spawn_blocking`) is the whole interface.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
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

/// Creates `dir/name` at `size` bytes (or `head`'s length if larger): `head`, then zeros, every
/// block written (not sparse) and durable, renamed into place whole, the directory synced.
/// Returns the file, open for reading and writing.
pub fn create_zeroed(
    dir: &Path,
    name: &str,
    head: &[u8],
    size: u64,
    fsyncs: &AtomicU64,
) -> Result<File, FileError> {
    const CHUNK: usize = 1 << 20;
    let tmp = dir.join(format!("{name}.tmp"));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&tmp)
        .map_err(FileError::at(&tmp))?;
    file.write_all(head).map_err(FileError::at(&tmp))?;
    let zeros = vec![0u8; CHUNK];
    let mut left = size.saturating_sub(head.len() as u64);
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        file.write_all(&zeros[..n]).map_err(FileError::at(&tmp))?;
        left -= n as u64;
    }
    file.sync_all().map_err(FileError::at(&tmp))?;
    fsyncs.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(name);
    std::fs::rename(&tmp, &path).map_err(FileError::at(&path))?;
    sync_dir(dir, fsyncs)?;
    Ok(file)
}

/// Overwrites `len` bytes of `path` from `offset` with zeros, durably.
pub fn erase(path: &Path, offset: u64, len: u64, fsyncs: &AtomicU64) -> Result<(), FileError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(FileError::at(path))?;
    file.write_all_at(&vec![0u8; len as usize], offset)
        .map_err(FileError::at(path))?;
    file.sync_data().map_err(FileError::at(path))?;
    fsyncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Whether `name` is a temporary file [`write_atomically`] left behind (a crash before its
/// rename): never part of the log, removed when the log opens.
pub fn is_leftover(name: &str) -> bool {
    name.ends_with(".tmp")
}
