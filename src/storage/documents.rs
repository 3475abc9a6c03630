//! Versioned JSON documents of tarn's own objects kept beside Paimon's tables (sequences,
//! views): one folder per object, `<root>/<db>/<name>/<prefix><version:020>.json`, each
//! version written create-if-absent (of two writers of one version exactly one wins), the
//! newest found by listing. Names become folder names through [`escape`].

use std::fmt::Write as _;

use object_store::path::Path;
use serde::de::DeserializeOwned;

use crate::storage::error::StorageError;
use crate::storage::io::file_io::FileIO;

const SUFFIX: &str = ".json";
/// Reads of the newest version that may meet it deleted (pruned, or dropped under a
/// tombstone) between the listing and the read, before giving up.
const LOAD_ATTEMPTS: usize = 16;

/// Where one kind of document lives and how its files are named.
pub(super) struct DocFolders {
    /// `_tarn/<kind>s`.
    pub root: &'static str,
    /// A version's file name before its number (`seq-`).
    pub prefix: &'static str,
    /// What errors call a document (`sequence`).
    pub kind: &'static str,
}

impl DocFolders {
    /// The folder of database `db`'s documents.
    pub(super) fn database(&self, io: &FileIO, db: &str) -> Path {
        io.path(&format!("{}/{}", self.root, escape(db)))
    }

    fn folder(&self, db: &str, name: &str) -> String {
        format!("{}/{}/{}", self.root, escape(db), escape(name))
    }

    /// Version `version` of object `db.name`.
    pub(super) fn path(&self, io: &FileIO, db: &str, name: &str, version: u64) -> Path {
        let folder = self.folder(db, name);
        io.path(&format!("{folder}/{}{version:020}{SUFFIX}", self.prefix))
    }

    /// The versions of object `db.name`, oldest first.
    pub(super) async fn versions(
        &self,
        io: &FileIO,
        db: &str,
        name: &str,
    ) -> Result<Vec<u64>, StorageError> {
        io.numbered(&io.path(&self.folder(db, name)), self.prefix, SUFFIX)
            .await
    }

    /// The newest version (a tombstone included), or `None` when there is none.
    pub(super) async fn load<D: DeserializeOwned>(
        &self,
        io: &FileIO,
        db: &str,
        name: &str,
    ) -> Result<Option<(u64, D)>, StorageError> {
        let mut attempt = 0;
        loop {
            let Some(&version) = self.versions(io, db, name).await?.last() else {
                return Ok(None);
            };
            let path = self.path(io, db, name, version);
            match io.read(&path).await {
                Ok(bytes) => return Ok(Some((version, self.parse(&path, &bytes)?))),
                // Deleted between the listing and the read: list again.
                Err(e) if e.is_missing_file() && attempt + 1 < LOAD_ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    pub(super) fn parse<D: DeserializeOwned>(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> Result<D, StorageError> {
        serde_json::from_slice(bytes)
            .map_err(|e| StorageError::Format(format!("{} document {path}: {e}", self.kind)))
    }

    /// The version after `version`.
    pub(super) fn successor(&self, version: u64) -> Result<u64, StorageError> {
        version.checked_add(1).ok_or_else(|| {
            StorageError::internal(format!("{} document versions ran out", self.kind))
        })
    }
}

/// A name as a folder name: ASCII letters, digits, `_` and `-` as they are, other bytes `=XX`.
pub(super) fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "={b:02X}");
        }
    }
    out
}

pub(super) fn unescape(folder: &str) -> Option<String> {
    let mut out = Vec::with_capacity(folder.len());
    let mut rest = folder.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'=' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            out.push(b);
            rest = tail;
        }
    }
    String::from_utf8(out).ok()
}
