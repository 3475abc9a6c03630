//! The commit log through its files: round trips across reopen, group commit counted in fsyncs,
//! preallocated segments rolled from a spare prepared ahead, the zeros after the last group as
//! the normal end, every crash window of the last group (cut, zeroed, a page lost in its
//! middle) erased and replayed, damage refused with file and offset, truncation, poisoning
//! after a failed fsync, a property test of random record sizes across segment rolls, and a
//! real `kill -9` of a child process appending. The figures are ignored tests that print
//! (`log_throughput`, `fsync_figures`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::segment::{
    FRAME_HEADER_LEN, GROUP_HEADER_LEN, HEADER_LEN, Lsn, frame_len, parse_segment_name,
};
use super::state::STATE_FILE;
use super::writer::SPARE_FILE;
use super::{CommitLog, LogOptions, LogState, Replay};
use crate::storage::StorageError;

/// A directory removed when the test ends.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("tarn-log-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The payload of the record appended `i`-th, `len` bytes: checkable after replay.
fn payload(i: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| (i.wrapping_mul(31).wrapping_add(j as u64 * 7) % 251) as u8)
        .collect()
}

fn records(replay: &Replay) -> Vec<(Lsn, Vec<u8>)> {
    replay
        .records
        .iter()
        .map(|(l, p)| (*l, p.to_vec()))
        .collect()
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut list: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| parse_segment_name(&p.file_name().unwrap().to_string_lossy()).is_some())
        .collect();
    list.sort();
    list
}

async fn open(dir: &Path, options: LogOptions) -> (CommitLog, Replay) {
    CommitLog::open(dir, options).await.unwrap()
}

async fn open_err(dir: &Path) -> StorageError {
    open_err_with(dir, LogOptions::default()).await
}

async fn open_err_with(dir: &Path, options: LogOptions) -> StorageError {
    CommitLog::open(dir, options).await.map(|_| ()).unwrap_err()
}

/// Appends `payloads` one after the other.
async fn append_all(log: &CommitLog, payloads: &[Vec<u8>]) -> Vec<Lsn> {
    let mut lsns = Vec::new();
    for p in payloads {
        lsns.push(log.append(p.clone()).await.unwrap());
    }
    lsns
}

#[tokio::test]
async fn appends_replay_in_order_and_lsns_continue_after_reopen() {
    let dir = TempDir::new("round-trip");
    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    assert!(replay.records.is_empty());
    assert_eq!((replay.first_lsn, replay.next_lsn), (1, 1));
    assert!(replay.torn.is_none());
    let user = replay.state.commit_user.clone();
    let written: Vec<Vec<u8>> = vec![payload(1, 10), payload(2, 0), payload(3, 300)];
    assert_eq!(append_all(&log, &written).await, vec![1, 2, 3]);
    let f = log.figures();
    assert_eq!((f.records, f.groups), (3, 3));
    assert_eq!(
        f.bytes,
        (3 * (GROUP_HEADER_LEN + FRAME_HEADER_LEN) + 310) as u64
    );
    log.close().await;
    let seg = segments(&dir.0).remove(0);
    let size = LogOptions::default().segment_bytes;
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), size, "preallocated");

    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    let want: Vec<(Lsn, Vec<u8>)> = (1..).zip(written).collect();
    assert_eq!(records(&replay), want);
    assert_eq!(replay.next_lsn, 4);
    assert_eq!(replay.state.commit_user, user, "the commit user persists");
    assert_eq!(log.append(b"next".to_vec()).await.unwrap(), 4);
    log.close().await;
    assert_eq!(
        std::fs::metadata(&seg).unwrap().len(),
        size,
        "not cut on open"
    );
}

#[tokio::test]
async fn a_second_open_of_the_directory_is_refused() {
    let dir = TempDir::new("locked");
    let (log, _) = open(&dir.0, LogOptions::default()).await;
    let err = open_err(&dir.0).await;
    assert!(
        matches!(err, StorageError::InvalidLocation { .. }),
        "{err:?}"
    );
    log.close().await;
    let (again, _) = open(&dir.0, LogOptions::default()).await;
    again.close().await;
}

#[tokio::test]
async fn queued_appends_share_one_fsync() {
    // On this current-thread runtime the writer cannot run before the test awaits: all 1,000
    // records are queued first, and the writer drains them into one group.
    let dir = TempDir::new("group");
    let (log, _) = open(&dir.0, LogOptions::default()).await;
    let before = log.figures();
    let pending: Vec<_> = (1..=1000).map(|i| log.append(payload(i, 200))).collect();
    let lsns: Vec<Lsn> = futures::future::join_all(pending)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(lsns, (1..=1000).collect::<Vec<_>>());
    let after = log.figures();
    assert_eq!(after.records, 1000);
    assert_eq!(after.groups, 1);
    assert_eq!(after.fsyncs - before.fsyncs, 1);
    log.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appenders_get_consecutive_lsns_that_replay_to_their_payloads() {
    let dir = TempDir::new("concurrent");
    let (log, _) = open(&dir.0, LogOptions::default()).await;
    let tasks: Vec<_> = (0..16u64)
        .map(|t| {
            let log = log.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                for i in 0..100u64 {
                    let p = payload(t * 1000 + i, 50 + (i as usize % 7) * 30);
                    mine.push((log.append(p.clone()).await.unwrap(), p));
                }
                mine
            })
        })
        .collect();
    let mut acked = Vec::new();
    for t in tasks {
        acked.extend(t.await.unwrap());
    }
    acked.sort();
    let lsns: Vec<Lsn> = acked.iter().map(|(l, _)| *l).collect();
    assert_eq!(lsns, (1..=1600).collect::<Vec<_>>());
    let f = log.figures();
    assert_eq!(f.records, 1600);
    assert!(f.groups < f.records, "no grouping at all: {f:?}");
    log.close().await;
    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    assert_eq!(records(&replay), acked);
    log.close().await;
}

/// Small segments, so that rewriting one in every crash window stays cheap.
fn small(segment_bytes: u64) -> LogOptions {
    LogOptions {
        segment_bytes,
        ..LogOptions::default()
    }
}

fn zeroed(bytes: &[u8], range: std::ops::Range<usize>) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[range].fill(0);
    out
}

#[tokio::test]
async fn every_cut_of_the_last_group_replays_the_whole_groups_before_it() {
    let dir = TempDir::new("cuts");
    let (log, _) = open(&dir.0, small(4096)).await;
    let written: Vec<Vec<u8>> = (1..=5).map(|i| payload(i, 40)).collect();
    append_all(&log, &written).await;
    log.close().await;
    let seg = segments(&dir.0).remove(0);
    let whole = std::fs::read(&seg).unwrap();
    assert_eq!(whole.len(), 4096);
    let end = HEADER_LEN + 5 * (GROUP_HEADER_LEN + frame_len(40));
    let last_start = end - GROUP_HEADER_LEN - frame_len(40);
    for cut in last_start..=end {
        // The bytes from `cut` lost: to zeros (a preallocated file) or cut off (a short one).
        for bytes in [zeroed(&whole, cut..end), whole[..cut].to_vec()] {
            std::fs::write(&seg, &bytes).unwrap();
            let (log, replay) = open(&dir.0, small(4096)).await;
            let kept = if cut == end { 5 } else { 4 };
            let want: Vec<(Lsn, Vec<u8>)> = (1..).zip(written[..kept].iter().cloned()).collect();
            assert_eq!(records(&replay), want, "cut at {cut}");
            let torn = cut > last_start && cut < end;
            assert_eq!(replay.torn.is_some(), torn, "cut at {cut}");
            if let Some(t) = &replay.torn {
                let left = bytes[last_start..cut]
                    .iter()
                    .rposition(|b| *b != 0)
                    .unwrap();
                assert_eq!(
                    (t.offset, t.bytes_cut),
                    (last_start as u64, left as u64 + 1)
                );
            }
            let now = std::fs::read(&seg).unwrap();
            assert_eq!(
                now.len(),
                bytes.len(),
                "cut at {cut}: the file keeps its size"
            );
            let log_end = if kept == 5 { end } else { last_start };
            assert_eq!(now[..log_end], whole[..log_end], "cut at {cut}");
            assert!(
                now[log_end..].iter().all(|b| *b == 0),
                "cut at {cut}: erased"
            );
            let lsn = log.append(b"after the cut".to_vec()).await.unwrap();
            assert_eq!(lsn, kept as u64 + 1, "cut at {cut}");
            log.close().await;

            let (log, replay) = open(&dir.0, small(4096)).await;
            assert!(replay.torn.is_none());
            let got = records(&replay);
            assert_eq!(got.len(), kept + 1);
            assert_eq!(got[kept], (lsn, b"after the cut".to_vec()));
            log.close().await;
        }
    }
}

#[tokio::test]
async fn zeros_after_the_last_group_are_the_normal_end_not_a_torn_tail() {
    let dir = TempDir::new("zeros");
    let (log, _) = open(&dir.0, small(8192)).await;
    append_all(&log, &[payload(1, 9), payload(2, 9), payload(3, 9)]).await;
    log.close().await;
    let seg = segments(&dir.0).remove(0);
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), 8192);
    // More zeros than the segment was made with (another segment size) change nothing either.
    for len in [8192, 16384] {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(len)
            .unwrap();
        let (log, replay) = open(&dir.0, small(8192)).await;
        assert_eq!(replay.records.len(), 3);
        assert_eq!(replay.torn, None);
        assert_eq!(std::fs::metadata(&seg).unwrap().len(), len);
        log.close().await;
    }
    let (log, _) = open(&dir.0, small(8192)).await;
    assert_eq!(log.append(b"4".to_vec()).await.unwrap(), 4);
    log.close().await;
    let (log, replay) = open(&dir.0, small(8192)).await;
    assert_eq!(replay.records.len(), 4);
    log.close().await;
}

#[tokio::test]
async fn a_torn_group_with_a_lost_page_is_erased_but_one_before_a_later_group_is_damage() {
    // On this current-thread runtime, appends queued before an await go out as one group.
    let dir = TempDir::new("torn-group");
    let options = || small(1 << 20);
    let (log, _) = open(&dir.0, options()).await;
    assert_eq!(log.append(payload(1, 100)).await.unwrap(), 1);
    let big: Vec<_> = (2..=5).map(|i| log.append(payload(i, 3000))).collect();
    for result in futures::future::join_all(big).await {
        result.unwrap();
    }
    assert_eq!(log.figures().groups, 2, "one group of four records");
    log.close().await;
    let seg = segments(&dir.0).remove(0);
    let whole = std::fs::read(&seg).unwrap();
    let start = HEADER_LEN + GROUP_HEADER_LEN + frame_len(100);
    let end = start + GROUP_HEADER_LEN + 4 * frame_len(3000);
    let pages: Vec<_> = (start / 4096..end.div_ceil(4096))
        .map(|p| (p * 4096).max(start)..((p + 1) * 4096).min(end))
        .collect();
    assert!(pages.len() >= 3, "a page in the middle");
    for page in &pages {
        // The machine died before the group's fdatasync returned; this page never made it.
        std::fs::write(&seg, zeroed(&whole, page.clone())).unwrap();
        let (log, replay) = open(&dir.0, options()).await;
        assert_eq!(records(&replay), vec![(1, payload(1, 100))], "{page:?}");
        let torn = replay.torn.clone().expect("a torn group");
        assert_eq!(torn.offset, start as u64, "{page:?}");
        let now = std::fs::read(&seg).unwrap();
        assert_eq!(now.len(), whole.len());
        assert!(now[start..].iter().all(|b| *b == 0), "{page:?}: erased");
        assert_eq!(log.append(b"again".to_vec()).await.unwrap(), 2);
        log.close().await;
    }

    // The same group acknowledged (a later group was written after its fdatasync): a lost
    // page in it is damage.
    std::fs::write(&seg, &whole).unwrap();
    let (log, _) = open(&dir.0, options()).await;
    assert_eq!(log.append(b"later".to_vec()).await.unwrap(), 6);
    log.close().await;
    let acknowledged = std::fs::read(&seg).unwrap();
    for page in &pages {
        std::fs::write(&seg, zeroed(&acknowledged, page.clone())).unwrap();
        damaged(open_err_with(&dir.0, options()).await, &seg, start);
    }
    std::fs::write(&seg, &acknowledged).unwrap();
    let (log, replay) = open(&dir.0, options()).await;
    assert_eq!(replay.next_lsn, 7);
    log.close().await;
}

#[tokio::test]
async fn segments_are_preallocated_and_rolled_from_a_spare_prepared_ahead() {
    let dir = TempDir::new("spare");
    let size = 64 << 10;
    let (log, _) = open(&dir.0, small(size)).await;
    // 1,044 bytes a group: 62 groups a segment.
    let written: Vec<Vec<u8>> = (1..=160).map(|i| payload(i, 1000)).collect();
    append_all(&log, &written).await;
    log.close().await;
    // After close: it waited for the spare being prepared.
    let f = log.figures();
    assert_eq!(f.segments_created, 2);
    assert_eq!(f.spares_prepared, 3, "one a roll, one ahead: {f:?}");
    let segs = segments(&dir.0);
    assert_eq!(segs.len(), 3);
    for seg in &segs {
        assert_eq!(std::fs::metadata(seg).unwrap().len(), size, "{seg:?}");
    }
    // The third segment is past half full: its spare was prepared, and close waited for it.
    let spare = dir.0.join(SPARE_FILE);
    assert_eq!(std::fs::metadata(&spare).unwrap().len(), size);
    for entry in std::fs::read_dir(&dir.0).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "{name}");
    }

    let (log, replay) = open(&dir.0, small(size)).await;
    let want: Vec<(Lsn, Vec<u8>)> = (1..).zip(written).collect();
    assert_eq!(records(&replay), want);
    append_all(
        &log,
        &(161..=200).map(|i| payload(i, 1000)).collect::<Vec<_>>(),
    )
    .await;
    let f = log.figures();
    assert_eq!(f.segments_created, 1);
    assert_eq!(
        (f.spares_prepared, f.rolls_waited),
        (0, 0),
        "the roll took the spare the last run left: {f:?}"
    );
    log.close().await;
    let (log, replay) = open(&dir.0, small(size)).await;
    assert_eq!(replay.next_lsn, 201);
    log.close().await;
}

/// Asserts `err` is damage naming `file` and `offset`.
fn damaged(err: StorageError, file: &Path, offset: usize) {
    let StorageError::Format(msg) = &err else {
        panic!("not damage: {err:?}");
    };
    let name = file.file_name().unwrap().to_string_lossy();
    assert!(msg.contains(&*name), "{msg}");
    assert!(msg.contains(&format!("offset {offset}")), "{msg}");
}

#[tokio::test]
async fn damage_is_an_error_naming_the_file_and_offset() {
    let dir = TempDir::new("damage");
    let options = || LogOptions {
        segment_bytes: 200,
        ..LogOptions::default()
    };
    let (log, _) = open(&dir.0, options()).await;
    // 100-byte payloads: one record per segment after the first roll.
    append_all(&log, &(1..=6).map(|i| payload(i, 100)).collect::<Vec<_>>()).await;
    log.close().await;
    let segs = segments(&dir.0);
    assert_eq!(segs.len(), 6);

    // A cut record in a segment that is not the last: its group was acknowledged.
    let whole = std::fs::read(&segs[2]).unwrap();
    let group_end = HEADER_LEN + GROUP_HEADER_LEN + frame_len(100);
    std::fs::write(&segs[2], &whole[..group_end - 1]).unwrap();
    damaged(open_err(&dir.0).await, &segs[2], HEADER_LEN);
    std::fs::write(&segs[2], &whole).unwrap();

    // A bit flip in a record followed by a valid one, in the last segment.
    let (log, _) = open(&dir.0, LogOptions::default()).await;
    append_all(&log, &[payload(7, 30), payload(8, 30)]).await;
    log.close().await;
    let last = segments(&dir.0).pop().unwrap();
    let mut bytes = std::fs::read(&last).unwrap();
    let second_last = group_end; // after the segment's first group, of record 6
    let flip = second_last + GROUP_HEADER_LEN + FRAME_HEADER_LEN + 3;
    bytes[flip] ^= 0x10;
    std::fs::write(&last, &bytes).unwrap();
    damaged(open_err(&dir.0).await, &last, second_last);
    bytes[flip] ^= 0x10;
    std::fs::write(&last, &bytes).unwrap();

    // A missing segment: LSNs skip.
    let gone = std::fs::read(&segs[3]).unwrap();
    std::fs::remove_file(&segs[3]).unwrap();
    damaged(open_err(&dir.0).await, &segs[4], 0);
    std::fs::write(&segs[3], &gone).unwrap();

    // A bad header.
    let mut header = gone.clone();
    header[0] = b'X';
    std::fs::write(&segs[3], &header).unwrap();
    damaged(open_err(&dir.0).await, &segs[3], 0);
    std::fs::write(&segs[3], &gone).unwrap();

    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    assert_eq!(replay.records.len(), 8, "repaired by hand, it opens again");
    log.close().await;
}

#[tokio::test]
async fn an_io_error_is_an_io_error_not_damage() {
    let dir = TempDir::new("io");
    std::fs::create_dir_all(dir.0.join("log-00000000000000000001.seg")).unwrap();
    let err = open_err(&dir.0).await;
    assert!(matches!(err, StorageError::Io { .. }), "{err:?}");

    let file = TempDir::new("not-a-dir");
    std::fs::write(&file.0, b"a file").unwrap();
    let err = open_err(&file.0.join("log")).await;
    assert!(matches!(err, StorageError::Io { .. }), "{err:?}");
    let _ = std::fs::remove_file(&file.0);
}

#[tokio::test]
async fn a_new_log_starts_after_the_flushed_lsns_and_a_short_one_is_refused() {
    let dir = TempDir::new("state");
    std::fs::create_dir_all(&dir.0).unwrap();
    let mut state = LogState::new();
    state.mark_flushed("public.db/t", 10);
    state.store(&dir.0, &Default::default()).unwrap();
    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    assert_eq!((replay.first_lsn, replay.next_lsn), (11, 11));
    assert_eq!(replay.state, state);
    assert_eq!(log.append(b"x".to_vec()).await.unwrap(), 11);
    log.close().await;

    state.mark_flushed("public.db/t", 12);
    state.store(&dir.0, &Default::default()).unwrap();
    let err = open_err(&dir.0).await;
    let StorageError::Format(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains("ends at LSN 11"), "{msg}");
    assert!(dir.0.join(STATE_FILE).exists());
}

#[tokio::test]
async fn truncation_deletes_whole_segments_at_or_below_the_lsn_never_the_active_one() {
    let dir = TempDir::new("truncate");
    let options = || LogOptions {
        segment_bytes: 320,
        ..LogOptions::default()
    };
    let (log, _) = open(&dir.0, options()).await;
    // 24-byte header + two groups of a 28-byte header and a 116-byte frame = 312 bytes: two
    // records per segment.
    let written: Vec<Vec<u8>> = (1..=20).map(|i| payload(i, 100)).collect();
    append_all(&log, &written).await;
    assert_eq!(segments(&dir.0).len(), 10);
    assert_eq!(log.figures().segments_created, 9);
    assert_eq!(log.truncate_through(6).await.unwrap(), 3);
    assert_eq!(log.truncate_through(6).await.unwrap(), 0);
    assert_eq!(
        log.truncate_through(7).await.unwrap(),
        0,
        "8 is in 7's segment"
    );
    assert_eq!(log.truncate_through(u64::MAX).await.unwrap(), 6);
    assert_eq!(segments(&dir.0).len(), 1, "the active segment stays");
    assert_eq!(log.figures().segments_deleted, 9);
    assert_eq!(log.append(payload(21, 100)).await.unwrap(), 21);
    log.close().await;

    let (log, replay) = open(&dir.0, options()).await;
    assert_eq!(replay.first_lsn, 19);
    let want: Vec<(Lsn, Vec<u8>)> = (19..=21).map(|i| (i, payload(i, 100))).collect();
    assert_eq!(records(&replay), want);
    log.close().await;
}

#[tokio::test]
async fn a_failed_fsync_fails_its_group_and_poisons_the_log() {
    let dir = TempDir::new("poison");
    let options = LogOptions::default();
    let faults = options.faults.clone();
    let (log, _) = open(&dir.0, options).await;
    assert_eq!(log.append(payload(1, 20)).await.unwrap(), 1);
    faults.fail_next_sync.store(true, Ordering::SeqCst);
    let group: Vec<_> = (2..=11).map(|i| log.append(payload(i, 20))).collect();
    for result in futures::future::join_all(group).await {
        let err = result.unwrap_err();
        assert!(matches!(err, StorageError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("injected fsync failure"), "{err}");
    }
    let later = log.append(b"later".to_vec()).await.unwrap_err();
    assert!(matches!(later, StorageError::Io { .. }), "{later:?}");
    assert!(later.to_string().contains("no more records"), "{later}");
    assert_eq!(log.figures().records, 1);
    log.close().await;

    // The group's bytes were written before the fsync "failed": not known to be durable, they
    // may be replayed — as whole records, in order.
    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    let want: Vec<(Lsn, Vec<u8>)> = (1..=11).map(|i| (i, payload(i, 20))).collect();
    assert_eq!(records(&replay), want);
    assert_eq!(log.append(b"12".to_vec()).await.unwrap(), 12);
    log.close().await;
}

/// SplitMix64: a seeded generator for the property test.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

#[tokio::test]
async fn random_record_sizes_across_segment_rolls_replay_exactly() {
    for seed in 1..=4u64 {
        let dir = TempDir::new("property");
        let mut rng = Rng(seed);
        let options = || LogOptions {
            segment_bytes: 4096,
            max_group_bytes: 2048,
            ..LogOptions::default()
        };
        let (mut log, _) = open(&dir.0, options()).await;
        let mut kept: Vec<(Lsn, Vec<u8>)> = Vec::new();
        let mut next = 1;
        for round in 0..40 {
            let k = rng.below(20) + 1;
            let batch: Vec<Vec<u8>> = (0..k)
                .map(|i| payload(next + i, rng.below(1500) as usize))
                .collect();
            let pending: Vec<_> = batch.iter().map(|p| log.append(p.clone())).collect();
            let lsns: Vec<Lsn> = futures::future::join_all(pending)
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect();
            assert_eq!(lsns, (next..next + k).collect::<Vec<_>>(), "seed {seed}");
            kept.extend(lsns.into_iter().zip(batch));
            next += k;
            if rng.below(4) == 0 {
                let through = rng.below(next);
                log.truncate_through(through).await.unwrap();
            }
            if rng.below(5) == 0 || round == 39 {
                log.close().await;
                let (reopened, replay) = open(&dir.0, options()).await;
                log = reopened;
                let first = replay.first_lsn;
                assert!(first <= next, "seed {seed}");
                kept.retain(|(l, _)| *l >= first);
                assert_eq!(records(&replay), kept, "seed {seed} round {round}");
                assert_eq!(replay.next_lsn, next);
            }
        }
        log.close().await;
    }
}

/// The child of `kill_minus_nine_loses_no_acknowledged_record`: appends until killed, printing
/// each acknowledged LSN. Does nothing unless that test started it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as a child process by kill_minus_nine_loses_no_acknowledged_record"]
async fn kill_child_appender() {
    let Some(dir) = std::env::var_os("TARN_LOG_KILL_DIR") else {
        return;
    };
    let (log, replay) = open(Path::new(&dir), LogOptions::default()).await;
    assert_eq!(replay.next_lsn, 1);
    let mut next = 1u64;
    loop {
        // Eight at a time, so groups hold several records when the kill lands.
        let pending: Vec<_> = (next..next + 8)
            .map(|i| log.append(payload(i, 100 + (i % 13) as usize * 20)))
            .collect();
        for result in futures::future::join_all(pending).await {
            println!("ack {}", result.unwrap());
        }
        next += 8;
    }
}

#[tokio::test]
async fn kill_minus_nine_loses_no_acknowledged_record() {
    use std::io::BufRead;
    let dir = TempDir::new("kill");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "storage::commit::log::tests::kill_child_appender",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TARN_LOG_KILL_DIR", &dir.0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut acked = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(lsn) = line.strip_prefix("ack ") {
            acked.push(lsn.parse::<Lsn>().unwrap());
            if acked.len() == 2000 {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
    }
    child.wait().unwrap();
    assert_eq!(acked.len(), 2000, "the child stopped before it was killed");
    let (log, replay) = open(&dir.0, LogOptions::default()).await;
    let got = records(&replay);
    for lsn in &acked {
        let (l, p) = &got[*lsn as usize - 1];
        assert_eq!(*l, *lsn);
        assert_eq!(*p, payload(*lsn, 100 + (lsn % 13) as usize * 20));
    }
    log.close().await;
}

/// Appends/s and fsyncs/s with 1 and 16 appenders of 200-byte records on this disk.
/// `TARN_LOG_BENCH_SECS` (default 5) per phase, `TARN_LOG_BENCH_SEGMENT_BYTES` (default the
/// default 16 MiB; smaller to see the cost of rolls); run with
/// `cargo test --lib log_throughput -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement that prints; run by hand"]
async fn log_throughput() {
    let secs: u64 = std::env::var("TARN_LOG_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let options = || LogOptions {
        segment_bytes: std::env::var("TARN_LOG_BENCH_SEGMENT_BYTES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(LogOptions::default().segment_bytes),
        ..LogOptions::default()
    };
    for appenders in [1usize, 16] {
        let dir = TempDir::new("bench");
        let (log, _) = open(&dir.0, options()).await;
        let before = log.figures();
        let start = std::time::Instant::now();
        let deadline = start + std::time::Duration::from_secs(secs);
        let tasks: Vec<_> = (0..appenders)
            .map(|t| {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut i = 0u64;
                    while std::time::Instant::now() < deadline {
                        log.append(payload(t as u64 * 1_000_000 + i, 200))
                            .await
                            .unwrap();
                        i += 1;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let elapsed = start.elapsed().as_secs_f64();
        let f = log.figures();
        let records = f.records - before.records;
        let fsyncs = f.fsyncs - before.fsyncs;
        println!(
            "{appenders:>2} appenders: {:>8.0} appends/s, {:>6.0} fsyncs/s, {:.1} records/group, \
             {:.3} ms/fsync-round, {} rolls ({} waited for their spare)",
            records as f64 / elapsed,
            fsyncs as f64 / elapsed,
            records as f64 / (f.groups - before.groups) as f64,
            elapsed * 1000.0 / (f.groups - before.groups) as f64,
            f.segments_created,
            f.rolls_waited,
        );
        log.close().await;
    }
}

/// `pg_test_fsync`-style figures for this disk: 8 KiB written at consecutive offsets, each
/// made durable, into a file that grows, a zero-filled one, an `fallocate`d one (unwritten
/// extents), a sparse one, and a zero-filled one opened `O_DSYNC`. Where the log's segments
/// come from (`files::create_zeroed`). `TARN_FSYNC_OPS` (default 1000) writes per kind; run
/// with `cargo test --lib fsync_figures -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement that prints; run by hand"]
fn fsync_figures() {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const BLOCK: usize = 8192;
    const O_DSYNC: i32 = 0o10000; // Linux's value
    let ops: usize = std::env::var("TARN_FSYNC_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let size = (ops * BLOCK) as u64;
    let dir = TempDir::new("fsync");
    std::fs::create_dir_all(&dir.0).unwrap();
    println!("{ops} writes of {BLOCK} bytes each, in {}", dir.0.display());
    let fsyncs = std::sync::atomic::AtomicU64::new(0);
    let block = vec![0xA5u8; BLOCK];
    let kinds = [
        "append to a growing file + fdatasync",
        "overwrite a zero-filled file + fdatasync",
        "overwrite an fallocate'd file + fdatasync",
        "overwrite a sparse file + fdatasync",
        "overwrite a zero-filled file opened O_DSYNC",
    ];
    for (k, kind) in kinds.iter().enumerate() {
        let name = format!("kind-{k}");
        let path = dir.0.join(&name);
        let mut open = std::fs::OpenOptions::new();
        open.create(true).write(true);
        match k {
            0 => drop(open.open(&path).unwrap()),
            1 | 4 => drop(super::files::create_zeroed(&dir.0, &name, &[], size, &fsyncs).unwrap()),
            2 => {
                let done = std::process::Command::new("fallocate")
                    .args(["-l", &size.to_string()])
                    .arg(&path)
                    .status();
                if !done.is_ok_and(|s| s.success()) {
                    println!("{kind:<46}: skipped (no fallocate command)");
                    continue;
                }
            }
            _ => open.open(&path).unwrap().set_len(size).unwrap(),
        }
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        if k == 4 {
            open.custom_flags(O_DSYNC);
        }
        let file = open.open(&path).unwrap();
        let start = std::time::Instant::now();
        for i in 0..ops {
            file.write_all_at(&block, (i * BLOCK) as u64).unwrap();
            if k != 4 {
                file.sync_data().unwrap();
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{kind:<46}: {:>7.0} ops/s {:>7.0} us/op",
            ops as f64 / secs,
            secs * 1e6 / ops as f64
        );
    }
}
