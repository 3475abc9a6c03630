//! Opening the log's directory: every segment read in LSN order, the records they hold
//! ([`Replay`]), the end of the log found inside the last (preallocated, zero-filled) segment,
//! a torn group there erased (zeroed) before anything is appended, and everything else that is
//! not whole — a bad group in an earlier segment or followed by a later group, LSNs that skip
//! or repeat across segments, a bad header — refused as damage (XX001, naming the file and
//! offset). An I/O error stays an I/O error (58030).
//!
//! Why the last segment alone may be torn: the writer fdatasyncs every group before it answers
//! its waiters and before it writes the next group, and it starts a new segment only between
//! groups, so every segment but the last was whole and durable when the next was used. The
//! bytes after the last whole group of the last segment that are not zeros belong to a group
//! whose fdatasync never returned: none of its records was acknowledged, and erasing them loses
//! no commit. Zeros after the last whole group are the normal end, not a torn tail. The file
//! keeps its size: segments are overwritten in place, never cut or re-extended on open.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

use bytes::Bytes;

use super::files::{FileError, create_zeroed, erase, is_leftover, sync_dir};
use super::segment::{
    HEADER_LEN, Lsn, check_header, damage, encode_header, parse_segment_name, scan_records,
    segment_name,
};
use super::state::LogState;
use crate::storage::StorageError;

/// What the log held when it was opened: every record of its segments, in LSN order.
#[derive(Debug)]
pub struct Replay {
    /// The records, `(lsn, payload)`, consecutive LSNs. Records already flushed into every
    /// table they wrote are here too until the log is truncated behind them; which ones a
    /// table still needs is [`super::state::table_needs`].
    pub records: Vec<(Lsn, Bytes)>,
    /// The LSN of the oldest segment's first record (the first record kept).
    pub first_lsn: Lsn,
    /// The LSN the next append gets.
    pub next_lsn: Lsn,
    /// The log's durable state (commit user, flushed LSNs per table).
    pub state: LogState,
    /// The torn group erased from the end of the last segment, if a crash left one (not the
    /// zeros after the last group: they are the normal end of a preallocated segment).
    pub torn: Option<TornTail>,
}

/// The bytes a crash left after the last whole group of the last segment (the group being
/// written), erased (zeroed) on open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub file: PathBuf,
    /// Where the log now ends (just after its last whole group); the next group goes here.
    pub offset: u64,
    /// How many bytes were erased: from `offset` to the last byte that was not zero.
    pub bytes_cut: u64,
    pub reason: String,
}

/// The segments of an opened log, oldest first: `(first LSN, path)`; the last is the one
/// appends go to, at offset `active_len` (where its last whole group ends).
pub struct Segments {
    pub list: Vec<(Lsn, PathBuf)>,
    pub active_len: u64,
}

/// Reads (and erases a torn group of) the log in `dir`. A directory without segments gets its
/// first one, `segment_bytes` zero-filled, starting after the highest LSN `state` says any
/// table flushed. Blocking.
pub fn open_dir(
    dir: &Path,
    state: LogState,
    segment_bytes: u64,
    fsyncs: &AtomicU64,
) -> Result<(Replay, Segments), StorageError> {
    let mut list = segment_files(dir, fsyncs)?;
    if list.is_empty() {
        let first = state.max_flushed() + 1;
        let name = segment_name(first);
        create_zeroed(dir, &name, &encode_header(first), segment_bytes, fsyncs)?;
        list.push((first, dir.join(name)));
    }
    let first_lsn = list[0].0;
    let mut records = Vec::new();
    let mut next = first_lsn;
    let mut torn = None;
    let mut active_len = 0;
    for (i, (first, path)) in list.iter().enumerate() {
        let file = path.display().to_string();
        if *first != next {
            return Err(damage(
                &file,
                0,
                &format!(
                    "it starts at LSN {first} but the segment before it ends at LSN {}",
                    next - 1
                ),
            ));
        }
        let bytes = Bytes::from(std::fs::read(path).map_err(FileError::at(path))?);
        check_header(&bytes, *first, &file)?;
        let scan = scan_records(&bytes, *first);
        next = *first + scan.records.len() as u64;
        records.extend(scan.records);
        let last = i + 1 == list.len();
        active_len = scan.end as u64;
        if let Some(bad) = scan.bad {
            if bad.damage || !last {
                return Err(damage(&file, bad.offset, &bad.reason));
            }
            let bytes_cut = (scan.data_end - scan.end) as u64;
            erase(path, scan.end as u64, bytes_cut, fsyncs)?;
            torn = Some(TornTail {
                file: path.clone(),
                offset: scan.end as u64,
                bytes_cut,
                reason: bad.reason,
            });
        }
    }
    debug_assert!(active_len >= HEADER_LEN as u64);
    if state.max_flushed() >= next {
        return Err(StorageError::format(format!(
            "commit log {} ends at LSN {} but its state says records through LSN {} were \
             flushed: acknowledged records are missing",
            dir.display(),
            next - 1,
            state.max_flushed()
        )));
    }
    let replay = Replay {
        records,
        first_lsn,
        next_lsn: next,
        state,
        torn,
    };
    Ok((replay, Segments { list, active_len }))
}

/// The segment files of `dir` by first LSN, after removing what a crash left of files that
/// were being written atomically.
fn segment_files(dir: &Path, fsyncs: &AtomicU64) -> Result<Vec<(Lsn, PathBuf)>, StorageError> {
    let mut list = Vec::new();
    let mut removed = false;
    for entry in std::fs::read_dir(dir).map_err(FileError::at(dir))? {
        let entry = entry.map_err(FileError::at(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_leftover(&name) {
            std::fs::remove_file(entry.path()).map_err(FileError::at(&entry.path()))?;
            removed = true;
        } else if let Some(first) = parse_segment_name(&name) {
            list.push((first, entry.path()));
        }
    }
    if removed {
        sync_dir(dir, fsyncs)?;
    }
    list.sort();
    Ok(list)
}
