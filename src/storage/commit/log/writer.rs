//! [`CommitLog`]: appends with group commit. `append` queues a record and returns a future that
//! resolves with its LSN only once the record is durable. One writer task drains every queued
//! record into one group, writes the group with one `write_all` and one `sync_data`
//! (fdatasync), then answers each waiter — so N concurrent commits cost one fsync, as
//! PostgreSQL's WAL flush serves every backend waiting on it.
//!
//! Failure rule (PostgreSQL's fsync lesson): when a write or fsync of a group fails, the kernel
//! may already have dropped the dirty pages, so a retried fsync could "succeed" over lost data.
//! The group's waiters all fail with the I/O error (58030) and the log is poisoned: every later
//! append fails at once, until the server reopens the log and replays what is really on disk.
//! A failed append is "not known to be durable", like a connection lost during COMMIT: its
//! record may still be found by replay.
//!
//! Files: groups overwrite the zeros of the newest segment at its write offset, so a group's
//! fdatasync flushes data blocks only — no file size or extent metadata (PostgreSQL's reason to
//! preallocate its WAL segments). Before a group would take a segment that holds records beyond
//! `segment_bytes`, the writer starts a new one: it takes the spare segment (`log-spare.zero`, a
//! zero-filled file of `segment_bytes` made durable when created), writes the new header into
//! it, fsyncs it and renames it into place (fsync of the directory) — two fsyncs, not a 16 MiB
//! write. The spare is prepared ahead by a background thread once the active segment is half
//! full (as PostgreSQL recycles WAL files ahead), so a roll waits for it only when segments
//! fill faster than one zero-fill. A group never spans two segments. `truncate_through`
//! deletes whole segments behind the flush, never the one appends go to. A `log.lock` file
//! (`flock`) keeps a second process — or a second open in this one — out of the directory.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::crash_points::{crash_point, crash_point_after};
use super::files::{FileError, create_zeroed, sync_dir};
use super::replay::{Replay, open_dir};
use super::segment::{
    GROUP_HEADER_LEN, HEADER_LEN, Lsn, encode_frame, encode_header, frame_len, seal_group,
    segment_name,
};
use super::state::LogState;
use crate::storage::StorageError;
use crate::storage::commit::error::CommitError;

/// The lock file of a log directory.
const LOCK_FILE: &str = "log.lock";
/// The zero-filled file the next segment is made from (prepared ahead of a roll).
pub const SPARE_FILE: &str = "log-spare.zero";

/// How the log writes.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// The size of a segment, preallocated (zero-filled) when it is made: a segment that holds
    /// records takes no group that would grow it beyond this many bytes (a single larger group
    /// gets a segment of its own, written past the zeros). Default 16 MiB, PostgreSQL's WAL
    /// segment size: each segment costs a zero-fill of this size (the first one when a new log
    /// opens, the later ones in the background).
    pub segment_bytes: u64,
    /// A group stops draining the queue once it holds this many bytes. Default 16 MiB.
    pub max_group_bytes: usize,
    /// Fault injection for tests (nothing outside them).
    pub faults: TestFaults,
}

/// Failures a test makes the writer see: [`Faults`] in tests, nothing otherwise.
#[cfg(test)]
pub type TestFaults = Arc<Faults>;
/// Failures a test makes the writer see: nothing outside tests.
#[cfg(not(test))]
pub type TestFaults = ();

impl Default for LogOptions {
    fn default() -> Self {
        Self {
            segment_bytes: 16 << 20,
            max_group_bytes: 16 << 20,
            faults: TestFaults::default(),
        }
    }
}

/// Failures a test makes the writer see.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct Faults {
    /// The next group's fsync fails (once).
    pub fail_next_sync: std::sync::atomic::AtomicBool,
}

/// What the log has done since it was opened (for `/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogFigures {
    /// Records made durable.
    pub records: u64,
    /// Groups written (one `write_all` and one fdatasync each).
    pub groups: u64,
    /// Bytes of groups written (their headers and frames).
    pub bytes: u64,
    /// fsync/fdatasync calls of files and directories (groups, new segments, truncation,
    /// the state file, repairs on open).
    pub fsyncs: u64,
    pub segments_created: u64,
    pub segments_deleted: u64,
    /// Zero-filled spare segments made (in the background, or at a roll that found none).
    pub spares_prepared: u64,
    /// Rolls that had to wait for (or make) their spare: segments filling faster than one
    /// zero-fill, or a spare that failed in the background.
    pub rolls_waited: u64,
}

#[derive(Debug, Default)]
struct Figures {
    records: AtomicU64,
    groups: AtomicU64,
    bytes: AtomicU64,
    fsyncs: AtomicU64,
    segments_created: AtomicU64,
    segments_deleted: AtomicU64,
    spares_prepared: AtomicU64,
    rolls_waited: AtomicU64,
}

enum Request {
    Append {
        payload: Bytes,
        reply: oneshot::Sender<Result<Lsn, StorageError>>,
    },
    Truncate {
        through: Lsn,
        reply: oneshot::Sender<Result<usize, StorageError>>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
}

/// Why the log takes no more appends after a failed write or fsync.
#[derive(Debug, Clone)]
struct Poison {
    path: String,
    kind: std::io::ErrorKind,
    message: String,
}

struct Shared {
    dir: PathBuf,
    tx: mpsc::UnboundedSender<Request>,
    figures: Arc<Figures>,
    poison: Arc<Mutex<Option<Poison>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A durable, group-committed log of records (see the module docs). Cheap to clone; the
/// writer stops when every clone is dropped or [`CommitLog::close`] is called.
#[derive(Clone)]
pub struct CommitLog {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CommitLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitLog")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

impl CommitLog {
    /// Opens (or creates) the log in `dir` on the local disk: replays every segment, cuts a
    /// torn tail, and starts the writer. Returns the log and what it held.
    pub async fn open(
        dir: impl Into<PathBuf>,
        options: LogOptions,
    ) -> Result<(CommitLog, Replay), StorageError> {
        let dir = dir.into();
        let figures = Arc::new(Figures::default());
        let opened = {
            let (dir, figures) = (dir.clone(), figures.clone());
            tokio::task::spawn_blocking(move || Writer::open(dir, options, figures))
                .await
                .map_err(|e| StorageError::task_failed("opening the commit log", e))??
        };
        let (writer, replay) = opened;
        let (tx, rx) = mpsc::unbounded_channel();
        let poison = Arc::new(Mutex::new(None));
        let task = tokio::spawn(run(writer, rx, poison.clone()));
        let shared = Arc::new(Shared {
            dir,
            tx,
            figures,
            poison,
            task: Mutex::new(Some(task)),
        });
        Ok((CommitLog { shared }, replay))
    }

    /// Queues `payload` as the next record at once (records are numbered in the order of
    /// `append` calls) and returns a future that resolves with its LSN once it is durable.
    pub fn append(
        &self,
        payload: impl Into<Bytes>,
    ) -> impl Future<Output = Result<Lsn, StorageError>> + Send + 'static {
        let payload = payload.into();
        let queued = self.queue(payload);
        async move {
            let rx = queued?;
            rx.await
                .map_err(|_| StorageError::Commit(CommitError::Unanswered))?
        }
    }

    fn queue(
        &self,
        payload: Bytes,
    ) -> Result<oneshot::Receiver<Result<Lsn, StorageError>>, StorageError> {
        if u32::try_from(payload.len()).is_err() {
            return Err(StorageError::Unsupported(format!(
                "a commit log record of {} bytes (at most 4 GiB)",
                payload.len()
            )));
        }
        if let Some(p) = self.poisoned() {
            return Err(p);
        }
        let (reply, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Request::Append { payload, reply })
            .map_err(|_| closed())?;
        Ok(rx)
    }

    /// Deletes every segment all of whose records are at or below `lsn` (never the segment
    /// appends go to), then fsyncs the directory. Returns how many segments it deleted.
    pub async fn truncate_through(&self, lsn: Lsn) -> Result<usize, StorageError> {
        let (reply, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Request::Truncate {
                through: lsn,
                reply,
            })
            .map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Answers what was queued before it, stops the writer and releases the directory.
    pub async fn close(&self) {
        let (reply, rx) = oneshot::channel();
        if self.shared.tx.send(Request::Close { reply }).is_ok() {
            let _ = rx.await;
        }
        let task = self.shared.task.lock().expect("log task slot").take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// What the log has done since it was opened.
    pub fn figures(&self) -> LogFigures {
        let f = &self.shared.figures;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LogFigures {
            records: get(&f.records),
            groups: get(&f.groups),
            bytes: get(&f.bytes),
            fsyncs: get(&f.fsyncs),
            segments_created: get(&f.segments_created),
            segments_deleted: get(&f.segments_deleted),
            spares_prepared: get(&f.spares_prepared),
            rolls_waited: get(&f.rolls_waited),
        }
    }

    /// The directory of the log.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The error every append gets once a write or fsync failed.
    fn poisoned(&self) -> Option<StorageError> {
        let p = self.shared.poison.lock().expect("log poison").clone()?;
        Some(poisoned_error(&p))
    }
}

fn poisoned_error(p: &Poison) -> StorageError {
    StorageError::Io {
        path: p.path.clone(),
        source: std::io::Error::new(
            p.kind,
            format!(
                "the commit log takes no more records since a write or fsync failed ({}); \
                 restart the server to replay it",
                p.message
            ),
        ),
    }
}

fn closed() -> StorageError {
    StorageError::internal("the commit log is closed")
}

/// The writer's files: moved into `spawn_blocking` for each group and back.
struct Writer {
    dir: PathBuf,
    options: LogOptions,
    figures: Arc<Figures>,
    /// Segments behind the active one, oldest first.
    closed: VecDeque<(Lsn, PathBuf)>,
    active: Active,
    next_lsn: Lsn,
    /// The zero-filled file the next segment is made from.
    spare: Spare,
    /// Holds the directory's `flock` while the writer lives.
    _lock: File,
}

struct Active {
    first: Lsn,
    path: PathBuf,
    /// Open for writing at offsets (never in append mode: the file is preallocated).
    file: File,
    /// The write offset: where the last whole group ends.
    len: u64,
}

/// The spare segment ([`SPARE_FILE`]): none yet, being zero-filled by a background thread,
/// or ready.
enum Spare {
    None,
    Preparing(std::thread::JoinHandle<Result<File, FileError>>),
    Ready(File),
}

/// Makes the spare segment: `size` bytes of zeros, durable, renamed into place. Blocking.
fn prepare_spare(dir: &Path, size: u64, figures: &Figures) -> Result<File, FileError> {
    let file = create_zeroed(dir, SPARE_FILE, &[], size, &figures.fsyncs)?;
    figures.spares_prepared.fetch_add(1, Ordering::Relaxed);
    Ok(file)
}

/// Takes the directory's `flock`, trying again for a moment when it is held: a process forked
/// by this one (any `Command::spawn`) shares the lock's open file until it execs, so a log just
/// closed here can look held by a child for a few microseconds. Blocking.
fn lock_briefly(lock: &File) -> Result<(), std::fs::TryLockError> {
    const TRIES: u32 = 50;
    for _ in 1..TRIES {
        match lock.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            done => return done,
        }
    }
    lock.try_lock()
}

impl Writer {
    fn open(
        dir: PathBuf,
        options: LogOptions,
        figures: Arc<Figures>,
    ) -> Result<(Writer, Replay), StorageError> {
        std::fs::create_dir_all(&dir).map_err(FileError::at(&dir))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::create(&lock_path).map_err(FileError::at(&lock_path))?;
        if let Err(e) = lock_briefly(&lock) {
            return Err(match e {
                std::fs::TryLockError::WouldBlock => StorageError::InvalidLocation {
                    location: dir.display().to_string(),
                    reason: "the commit log is open in another process or server".to_owned(),
                },
                std::fs::TryLockError::Error(source) => FileError {
                    path: lock_path,
                    source,
                }
                .into(),
            });
        }
        let state = LogState::load_or_create(&dir, &figures.fsyncs)?;
        let (replay, segments) = open_dir(&dir, state, options.segment_bytes, &figures.fsyncs)?;
        let mut closed: VecDeque<_> = segments.list.into();
        let (first, path) = closed.pop_back().expect("open_dir leaves a segment");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(FileError::at(&path))?;
        let spare = existing_spare(&dir, options.segment_bytes)?;
        let mut writer = Writer {
            dir,
            options,
            figures,
            closed,
            active: Active {
                first,
                path,
                file,
                len: segments.active_len,
            },
            next_lsn: replay.next_lsn,
            spare,
            _lock: lock,
        };
        writer.prepare_ahead();
        Ok((writer, replay))
    }

    /// Writes one group of `count` records (`group`: its header and frames, numbered from
    /// `next_lsn`) at the write offset and makes it durable. Blocking.
    fn write_group(&mut self, group: &[u8], count: u64) -> Result<(), FileError> {
        let len = group.len() as u64;
        if self.active.len > HEADER_LEN as u64 && self.active.len + len > self.options.segment_bytes
        {
            self.roll()?;
        }
        let path = &self.active.path;
        crash_point_after("log-mid-append", || {
            let _ = (self.active.file).write_all_at(&group[..group.len() / 2], self.active.len);
        });
        self.active
            .file
            .write_all_at(group, self.active.len)
            .map_err(FileError::at(path))?;
        if self.injected_sync_failure() {
            return Err(FileError {
                path: path.clone(),
                source: std::io::Error::other("injected fsync failure"),
            });
        }
        self.active.file.sync_data().map_err(FileError::at(path))?;
        crash_point("log-after-fsync");
        let f = &self.figures;
        f.fsyncs.fetch_add(1, Ordering::Relaxed);
        f.groups.fetch_add(1, Ordering::Relaxed);
        f.records.fetch_add(count, Ordering::Relaxed);
        f.bytes.fetch_add(len, Ordering::Relaxed);
        self.active.len += len;
        self.next_lsn += count;
        self.prepare_ahead();
        Ok(())
    }

    /// Starts zero-filling the spare in the background once the active segment is half full
    /// and there is no spare yet. A thread that cannot start leaves it to the roll.
    fn prepare_ahead(&mut self) {
        if !matches!(self.spare, Spare::None) || self.active.len < self.options.segment_bytes / 2 {
            return;
        }
        let (dir, size, figures) = (
            self.dir.clone(),
            self.options.segment_bytes,
            self.figures.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("tarn-log-spare".to_owned())
            .spawn(move || prepare_spare(&dir, size, &figures));
        if let Ok(handle) = spawned {
            self.spare = Spare::Preparing(handle);
        }
    }

    /// The spare, waiting for its preparation or making it now if need be.
    fn take_spare(&mut self) -> Result<File, FileError> {
        let pending = match std::mem::replace(&mut self.spare, Spare::None) {
            Spare::Ready(file) => return Ok(file),
            Spare::Preparing(handle) => Some(handle),
            Spare::None => None,
        };
        if !pending.as_ref().is_some_and(|h| h.is_finished()) {
            self.figures.rolls_waited.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(Ok(Ok(file))) = pending.map(|h| h.join()) {
            return Ok(file);
        }
        // None was prepared, or its preparation failed: once more here, its error is the roll's.
        prepare_spare(&self.dir, self.options.segment_bytes, &self.figures)
    }

    #[cfg(test)]
    fn injected_sync_failure(&self) -> bool {
        self.options
            .faults
            .fail_next_sync
            .swap(false, Ordering::SeqCst)
    }

    #[cfg(not(test))]
    fn injected_sync_failure(&self) -> bool {
        false
    }

    /// Starts a new segment at `next_lsn` from the spare: its header written and durable
    /// before the spare is renamed into place, so a segment's header is always whole.
    fn roll(&mut self) -> Result<(), FileError> {
        let first = self.next_lsn;
        let file = self.take_spare()?;
        let spare = self.dir.join(SPARE_FILE);
        file.write_all_at(&encode_header(first), 0)
            .map_err(FileError::at(&spare))?;
        file.sync_data().map_err(FileError::at(&spare))?;
        self.figures.fsyncs.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(segment_name(first));
        std::fs::rename(&spare, &path).map_err(FileError::at(&path))?;
        sync_dir(&self.dir, &self.figures.fsyncs)?;
        self.figures
            .segments_created
            .fetch_add(1, Ordering::Relaxed);
        let active = Active {
            first,
            path,
            file,
            len: HEADER_LEN as u64,
        };
        let old = std::mem::replace(&mut self.active, active);
        self.closed.push_back((old.first, old.path));
        Ok(())
    }

    /// Deletes the segments wholly at or below `through`, oldest first. Blocking.
    fn truncate_through(&mut self, through: Lsn) -> Result<usize, FileError> {
        let mut deleted = 0;
        while let Some((_, path)) = self.closed.front() {
            let next_first = self.closed.get(1).map_or(self.active.first, |s| s.0);
            if next_first - 1 > through {
                break;
            }
            std::fs::remove_file(path).map_err(FileError::at(path))?;
            self.closed.pop_front();
            deleted += 1;
        }
        if deleted > 0 {
            self.figures
                .segments_deleted
                .fetch_add(deleted as u64, Ordering::Relaxed);
            sync_dir(&self.dir, &self.figures.fsyncs)?;
        }
        Ok(deleted)
    }
}

impl Drop for Writer {
    /// Waits for a spare being prepared: its thread writes into the directory, which must be
    /// left alone once the lock is released.
    fn drop(&mut self) {
        if let Spare::Preparing(handle) = std::mem::replace(&mut self.spare, Spare::None) {
            let _ = handle.join();
        }
    }
}

/// The spare a previous run prepared, if it is whole at `size` bytes (one of another size, as
/// after a change of `segment_bytes`, is removed). Blocking.
fn existing_spare(dir: &Path, size: u64) -> Result<Spare, FileError> {
    let path = dir.join(SPARE_FILE);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.len() == size => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(FileError::at(&path))?;
            Ok(Spare::Ready(file))
        }
        Ok(_) => {
            std::fs::remove_file(&path).map_err(FileError::at(&path))?;
            Ok(Spare::None)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Spare::None),
        Err(e) => Err(FileError::at(&path)(e)),
    }
}

/// The writer task: one group at a time, in queue order.
async fn run(
    mut writer: Writer,
    mut rx: mpsc::UnboundedReceiver<Request>,
    poison: Arc<Mutex<Option<Poison>>>,
) {
    let max_group = writer.options.max_group_bytes;
    while let Some(first) = rx.recv().await {
        let mut appends = Vec::new();
        let mut frames = vec![0u8; GROUP_HEADER_LEN];
        let mut other = None;
        let mut next = Some(first);
        while let Some(request) = next.take() {
            match request {
                Request::Append { payload, reply } => {
                    let lsn = writer.next_lsn + appends.len() as u64;
                    frames.reserve(frame_len(payload.len()));
                    encode_frame(&mut frames, lsn, &payload);
                    appends.push(reply);
                }
                request => {
                    other = Some(request);
                    break;
                }
            }
            if frames.len() < max_group && appends.len() < u32::MAX as usize {
                next = rx.try_recv().ok();
            }
        }
        let current = poison.lock().expect("log poison").clone();
        if let Some(p) = current {
            for reply in appends {
                let _ = reply.send(Err(poisoned_error(&p)));
            }
        } else if !appends.is_empty() {
            let count = appends.len() as u64;
            let first_lsn = writer.next_lsn;
            seal_group(&mut frames, first_lsn, count as u32);
            let done = tokio::task::spawn_blocking(move || {
                let result = writer.write_group(&frames, count);
                (writer, result)
            })
            .await;
            let result;
            (writer, result) = match done {
                Ok(done) => done,
                Err(e) => {
                    // The files went with the panicked task: nothing more can be written.
                    let e = StorageError::task_failed("the commit log writer", e);
                    *poison.lock().expect("log poison") = Some(Poison {
                        path: "the commit log".to_owned(),
                        kind: std::io::ErrorKind::Other,
                        message: e.to_string(),
                    });
                    return;
                }
            };
            match result {
                Ok(()) => {
                    for (i, reply) in appends.into_iter().enumerate() {
                        let _ = reply.send(Ok(first_lsn + i as u64));
                    }
                }
                Err(e) => {
                    let p = Poison {
                        path: e.path.display().to_string(),
                        kind: e.source.kind(),
                        message: e.source.to_string(),
                    };
                    tracing::error!(path = %p.path, error = %p.message, "commit log write failed; the log takes no more records");
                    for reply in appends {
                        let _ = reply.send(Err(StorageError::Io {
                            path: p.path.clone(),
                            source: std::io::Error::new(p.kind, p.message.clone()),
                        }));
                    }
                    *poison.lock().expect("log poison") = Some(p);
                }
            }
        }
        match other {
            Some(Request::Truncate { through, reply }) => {
                let done = tokio::task::spawn_blocking(move || {
                    let result = writer.truncate_through(through);
                    (writer, result)
                })
                .await;
                let result;
                (writer, result) = match done {
                    Ok(done) => done,
                    Err(e) => {
                        let _ = reply.send(Err(StorageError::task_failed("log truncation", e)));
                        *poison.lock().expect("log poison") = Some(Poison {
                            path: "the commit log".to_owned(),
                            kind: std::io::ErrorKind::Other,
                            message: "its truncation panicked".to_owned(),
                        });
                        return;
                    }
                };
                let _ = reply.send(result.map_err(StorageError::from));
            }
            Some(Request::Close { reply }) => {
                rx.close();
                while let Ok(request) = rx.try_recv() {
                    if let Request::Append { reply, .. } = request {
                        let _ = reply.send(Err(closed()));
                    }
                }
                let _ = tokio::task::spawn_blocking(move || drop(writer)).await;
                let _ = reply.send(());
                return;
            }
            Some(Request::Append { .. }) | None => {}
        }
    }
    // Every handle dropped: the writer's drop may wait for a spare being prepared.
    let _ = tokio::task::spawn_blocking(move || drop(writer)).await;
}
