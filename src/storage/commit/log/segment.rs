//! The commit log's files and records, as bytes: segment names, the segment header, groups and
//! the record frames inside them, and the scan of one segment's bytes that finds where the log
//! ends and tells its normal end (zeros: a preallocated segment not yet written) from a torn
//! group (a crash cut the last, never acknowledged write) and from damage (a group that was
//! acknowledged is unreadable, or LSNs do not follow one another).
//!
//! Why pure code over byte slices: every crash window the log must survive is a segment's bytes
//! with some pages of its last group lost (zeros) or cut off, so the tests feed such bytes
//! straight to [`scan_records`] and check exactly what it keeps; the file system side
//! (`replay.rs`) only reads, erases a torn group and decides which segment is the last.
//!
//! Why groups: the writer writes a group of records with one write and one fdatasync. If the
//! machine dies before the fdatasync returns, *any* of the group's pages may be lost while a
//! later one survived. Nothing of the group was acknowledged, so that is a torn group, not
//! damage; the group header (its length, record count, first LSN, the CRC of its body, and a
//! CRC of its own) lets the scan see the group as one unit: a bad group is torn unless the
//! header of a later group follows it (a later group is written only after this one's
//! fdatasync returned, so this one was acknowledged: damage).
//!
//! Layout, little endian throughout (format version 2):
//! - segment `log-<first LSN, 20 digits>.seg`, created at its full size and zero-filled: header
//!   `[8 bytes magic][u32 format version][u32 reserved, 0][u64 first LSN]`, then groups, then
//!   zeros to the end of the file;
//! - group `[u32 body length][u32 record count][u64 first LSN][u32 crc32 of the body]
//!   [u32 crc32 of these 20 bytes]`, then its body: the frames of its records;
//! - frame `[u32 payload length][u32 crc32 over (lsn, payload)][u64 lsn][payload]`;
//! - LSNs are consecutive from 1 across the groups and the segments.

use bytes::Bytes;

use crate::storage::StorageError;

/// A log sequence number: the position of a record in the log, consecutive from 1.
pub type Lsn = u64;

/// The first bytes of every segment.
pub const MAGIC: [u8; 8] = *b"tarn-log";
/// The segment format this code writes and reads.
pub const FORMAT_VERSION: u32 = 2;
/// Bytes of a segment's header.
pub const HEADER_LEN: usize = 24;
/// Bytes of a frame before its payload.
pub const FRAME_HEADER_LEN: usize = 16;
/// Bytes of a group's header, before its frames.
pub const GROUP_HEADER_LEN: usize = 28;

/// The file name of the segment whose first record is `first`.
pub fn segment_name(first: Lsn) -> String {
    format!("log-{first:020}.seg")
}

/// The first LSN a segment's file name says, if `name` is a segment's name.
pub fn parse_segment_name(name: &str) -> Option<Lsn> {
    let digits = name.strip_prefix("log-")?.strip_suffix(".seg")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The header of a segment whose first record is `first`.
pub fn encode_header(first: Lsn) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&first.to_le_bytes());
    h
}

/// Checks a segment's header against the first LSN its name says. A segment is created whole
/// (written to a temporary file, synced, renamed), so any header that is not this one is
/// damage, never a crash window.
pub fn check_header(bytes: &[u8], first: Lsn, file: &str) -> Result<(), StorageError> {
    let damaged = |reason: String| Err(damage(file, 0, &reason));
    if bytes.len() < HEADER_LEN {
        return damaged(format!(
            "the header is {} bytes, not {HEADER_LEN}",
            bytes.len()
        ));
    }
    if bytes[..8] != MAGIC {
        return damaged("it does not start with the commit log's magic bytes".to_owned());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return damaged(format!(
            "format version {version}, this server reads {FORMAT_VERSION}"
        ));
    }
    let said = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    if said != first {
        return damaged(format!(
            "the header says its first LSN is {said}, the file name {first}"
        ));
    }
    Ok(())
}

/// The CRC of a record: over its LSN's bytes, then its payload.
pub fn frame_crc(lsn: Lsn, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&lsn.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Appends the frame of record `lsn` to `out`. The payload's length must fit a u32 (checked by
/// the writer before a record is queued).
pub fn encode_frame(out: &mut Vec<u8>, lsn: Lsn, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("payload length checked by the writer");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&frame_crc(lsn, payload).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(payload);
}

/// Bytes a record of `payload_len` bytes takes in a segment.
pub fn frame_len(payload_len: usize) -> usize {
    FRAME_HEADER_LEN + payload_len
}

/// Writes the header of the group whose frames are `group[GROUP_HEADER_LEN..]` (records
/// `first`, `first + 1`, ... `count` of them) into `group`'s first [`GROUP_HEADER_LEN`] bytes.
pub fn seal_group(group: &mut [u8], first: Lsn, count: u32) {
    let (header, body) = group.split_at_mut(GROUP_HEADER_LEN);
    header[0..8].copy_from_slice(&first.to_le_bytes());
    header[8..16].copy_from_slice(&(body.len() as u64).to_le_bytes());
    header[16..20].copy_from_slice(&count.to_le_bytes());
    header[20..24].copy_from_slice(&crc32fast::hash(body).to_le_bytes());
    let own = crc32fast::hash(&header[..24]);
    header[24..28].copy_from_slice(&own.to_le_bytes());
}

/// A group header whose own CRC holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupHeader {
    pub first: Lsn,
    pub body_len: u64,
    pub count: u32,
    pub body_crc: u32,
}

impl GroupHeader {
    /// The header at `offset` of `bytes`, if its CRC holds and it names at least one record.
    pub fn at(bytes: &[u8], offset: usize) -> Option<GroupHeader> {
        let h = bytes.get(offset..offset.checked_add(GROUP_HEADER_LEN)?)?;
        let own = u32::from_le_bytes(h[24..28].try_into().expect("4 bytes"));
        if crc32fast::hash(&h[..24]) != own {
            return None;
        }
        let header = GroupHeader {
            first: u64::from_le_bytes(h[0..8].try_into().expect("8 bytes")),
            body_len: u64::from_le_bytes(h[8..16].try_into().expect("8 bytes")),
            count: u32::from_le_bytes(h[16..20].try_into().expect("4 bytes")),
            body_crc: u32::from_le_bytes(h[20..24].try_into().expect("4 bytes")),
        };
        (header.count > 0).then_some(header)
    }
}

/// The first group of a segment's record area that is not a whole, valid group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame {
    /// Offset in the segment file (where its group starts).
    pub offset: usize,
    /// What is wrong with it.
    pub reason: String,
    /// Whether the bytes can only be damage, whatever follows: a group whose CRCs hold but
    /// whose LSNs are not the next ones (a gap or a repeat) or whose frames do not add up, or a
    /// later group's header found after the bad one (`reason` says which and where).
    pub damage: bool,
}

/// What the scan of one segment found.
#[derive(Debug)]
pub struct SegmentScan {
    /// The records of the whole groups, in order, their payloads slices of the segment's bytes.
    pub records: Vec<(Lsn, Bytes)>,
    /// Offset just after the last whole group: where the log ends and the next group goes.
    pub end: usize,
    /// Offset just after the last byte that is not zero (`end` when only zeros follow it):
    /// `end..data_end` is what a torn group left.
    pub data_end: usize,
    /// The group at `end`, if bytes other than zeros follow the last whole group.
    pub bad: Option<BadFrame>,
}

/// A frame at `offset` of `bytes` whose CRC holds: its LSN, payload range and end.
fn valid_frame_at(bytes: &[u8], offset: usize) -> Option<(Lsn, usize, usize)> {
    let header = bytes.get(offset..offset + FRAME_HEADER_LEN)?;
    let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let lsn = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    let start = offset + FRAME_HEADER_LEN;
    let end = start.checked_add(len)?;
    let payload = bytes.get(start..end)?;
    (frame_crc(lsn, payload) == crc).then_some((lsn, start, end))
}

/// The records of a group whose body CRC held (`body` = `start..end` of `bytes`): exactly
/// `header.count` valid frames with consecutive LSNs from `header.first`, filling the body.
fn group_records(
    bytes: &Bytes,
    header: &GroupHeader,
    start: usize,
    end: usize,
) -> Result<Vec<(Lsn, Bytes)>, String> {
    let mut records = Vec::with_capacity(header.count as usize);
    let mut offset = start;
    let body = &bytes[..end];
    while offset < end {
        let lsn = header.first + records.len() as u64;
        match valid_frame_at(body, offset) {
            Some((got, from, to)) if got == lsn => {
                records.push((lsn, bytes.slice(from..to)));
                offset = to;
            }
            _ => return Err(format!("its frame at offset {offset} is not record {lsn}")),
        }
    }
    if records.len() != header.count as usize {
        return Err(format!(
            "it says {} records but holds {}",
            header.count,
            records.len()
        ));
    }
    Ok(records)
}

/// Reads the groups of a segment's bytes (header already checked), expecting LSNs from
/// `first`. Stops where only zeros follow (the normal end of a preallocated segment) or at the
/// first group that is not whole and valid: that group is torn, unless its CRCs hold and its
/// contents are wrong, or a later group's header follows it anywhere in the segment (searched
/// byte by byte: the bad group's length cannot be trusted) — then it is damage.
pub fn scan_records(bytes: &Bytes, first: Lsn) -> SegmentScan {
    let data_end = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let mut records = Vec::new();
    let mut offset = HEADER_LEN.min(bytes.len());
    let mut expected = first;
    let result = |records, offset: usize, bad| SegmentScan {
        records,
        end: offset,
        data_end: data_end.max(offset),
        bad,
    };
    while offset < data_end {
        let torn = |reason: String| BadFrame {
            offset,
            reason,
            damage: false,
        };
        let damaged = |reason: String| BadFrame {
            offset,
            reason,
            damage: true,
        };
        let Some(header) = GroupHeader::at(bytes, offset) else {
            let rest = bytes.len() - offset;
            let reason = if rest < GROUP_HEADER_LEN {
                format!("a group header cut short ({rest} of {GROUP_HEADER_LEN} bytes)")
            } else {
                "a group header whose CRC does not match its bytes".to_owned()
            };
            return result(
                records,
                offset,
                Some(later_group(bytes, torn(reason), expected)),
            );
        };
        if header.first != expected {
            let what = if header.first < expected {
                "a repeat"
            } else {
                "a gap"
            };
            let reason = format!(
                "a group from LSN {} where {expected} was expected ({what})",
                header.first
            );
            return result(records, offset, Some(damaged(reason)));
        }
        let start = offset + GROUP_HEADER_LEN;
        let rest = (bytes.len() - start) as u64;
        if header.body_len > rest {
            let reason = format!(
                "a group of {} bytes but only {rest} bytes follow its header",
                header.body_len
            );
            return result(
                records,
                offset,
                Some(later_group(bytes, torn(reason), expected)),
            );
        }
        let end = start + header.body_len as usize;
        if crc32fast::hash(&bytes[start..end]) != header.body_crc {
            let reason = format!(
                "a group of {} records whose body CRC does not match its bytes",
                header.count
            );
            return result(
                records,
                offset,
                Some(later_group(bytes, torn(reason), expected)),
            );
        }
        match group_records(bytes, &header, start, end) {
            Ok(group) => records.extend(group),
            Err(why) => {
                let reason = format!("a group whose CRCs hold but {why}");
                return result(records, offset, Some(damaged(reason)));
            }
        }
        expected += u64::from(header.count);
        offset = end;
    }
    result(records, offset, None)
}

/// `bad`, made damage if a later group's header follows it: the first valid group header after
/// `bad.offset` whose first LSN could follow `expected` in these bytes (at least `expected`, at
/// most one record per frame header's worth of bytes beyond it).
fn later_group(bytes: &[u8], mut bad: BadFrame, expected: Lsn) -> BadFrame {
    let most = expected + ((bytes.len() - bad.offset) / FRAME_HEADER_LEN) as u64;
    let last = bytes.len().saturating_sub(GROUP_HEADER_LEN - 1);
    let found = (bad.offset + 1..last).find_map(|at| {
        let lsn = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if !(expected..=most).contains(&lsn) {
            return None;
        }
        GroupHeader::at(bytes, at).map(|h| (h.first, at))
    });
    if let Some((lsn, at)) = found {
        bad.reason = format!(
            "{}, yet the header of a later group (from LSN {lsn}) follows at offset {at}",
            bad.reason
        );
        bad.damage = true;
    }
    bad
}

/// The damaged-file error for the commit log's `file` at `offset` (XX001 at the wire).
pub fn damage(file: &str, offset: usize, reason: &str) -> StorageError {
    StorageError::format(format!(
        "commit log segment {file} is damaged at offset {offset}: {reason}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends a group of `payloads` numbered from `first` to `out`; returns its offset.
    fn group(out: &mut Vec<u8>, first: Lsn, payloads: &[&[u8]]) -> usize {
        let at = out.len();
        out.resize(at + GROUP_HEADER_LEN, 0);
        for (i, p) in payloads.iter().enumerate() {
            encode_frame(out, first + i as u64, p);
        }
        seal_group(&mut out[at..], first, payloads.len() as u32);
        at
    }

    /// A segment of groups, `groups[i]` the payloads of the i-th group, LSNs from `first`.
    fn segment(first: Lsn, groups: &[&[&[u8]]]) -> Vec<u8> {
        let mut out = encode_header(first).to_vec();
        let mut lsn = first;
        for g in groups {
            group(&mut out, lsn, g);
            lsn += g.len() as u64;
        }
        out
    }

    fn lsns(scan: &SegmentScan) -> Vec<Lsn> {
        scan.records.iter().map(|(l, _)| *l).collect()
    }

    #[test]
    fn names_round_trip_and_reject_lookalikes() {
        assert_eq!(segment_name(42), "log-00000000000000000042.seg");
        assert_eq!(parse_segment_name(&segment_name(42)), Some(42));
        assert_eq!(parse_segment_name(&segment_name(u64::MAX)), Some(u64::MAX));
        for bad in [
            "log-42.seg",
            "log-0000000000000000004x.seg",
            "log-00000000000000000042.seg.tmp",
            "log-state.json",
            "xlog-00000000000000000042.seg",
        ] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn header_is_checked_against_the_name() {
        let h = encode_header(7);
        check_header(&h, 7, "f").unwrap();
        let err = check_header(&h, 8, "f").unwrap_err().to_string();
        assert!(err.contains("first LSN is 7"), "{err}");
        let mut wrong_magic = h;
        wrong_magic[0] = b'X';
        assert!(check_header(&wrong_magic, 7, "f").is_err());
        let mut wrong_version = h;
        wrong_version[8] = 9;
        let err = check_header(&wrong_version, 7, "f").unwrap_err();
        assert!(matches!(err, StorageError::Format(_)), "{err:?}");
        assert!(check_header(&h[..10], 7, "f").is_err());
    }

    #[test]
    fn whole_groups_are_read_in_order_up_to_the_zeros() {
        let mut bytes = segment(5, &[&[b"a", b""], &[b"ccc"]]);
        let end = bytes.len();
        for zeros in [0, 1, 4096] {
            bytes.resize(end + zeros, 0);
            let scan = scan_records(&Bytes::from(bytes.clone()), 5);
            assert_eq!(scan.bad, None, "{zeros} zeros");
            assert_eq!((scan.end, scan.data_end), (end, end), "{zeros} zeros");
            let got: Vec<(Lsn, &[u8])> = scan.records.iter().map(|(l, p)| (*l, &p[..])).collect();
            assert_eq!(got, vec![(5, &b"a"[..]), (6, &b""[..]), (7, &b"ccc"[..])]);
        }
        let empty = Bytes::from(segment(9, &[]));
        let scan = scan_records(&empty, 9);
        assert_eq!(
            (scan.records.len(), scan.end, scan.bad),
            (0, HEADER_LEN, None)
        );
    }

    #[test]
    fn a_group_ending_in_zero_bytes_is_whole() {
        let bytes = Bytes::from(segment(1, &[&[b"x\0\0"], &[&[0u8; 10]]]));
        let scan = scan_records(&bytes, 1);
        assert_eq!((lsns(&scan), scan.bad), (vec![1, 2], None));
        assert_eq!((scan.end, scan.data_end), (bytes.len(), bytes.len()));
    }

    #[test]
    fn every_cut_or_lost_page_of_the_last_group_is_torn() {
        let big = vec![7u8; 3000];
        let mut whole = segment(1, &[&[b"first record", b"second"]]);
        let last = group(&mut whole, 3, &[&big, b"x", &big, &big]);
        for cut in last..whole.len() {
            // The file cut at `cut`, or everything from `cut` lost to zeros.
            for bytes in [whole[..cut].to_vec(), zeroed(&whole, cut..whole.len())] {
                let scan = scan_records(&Bytes::from(bytes), 1);
                assert_eq!(lsns(&scan), vec![1, 2], "cut at {cut}");
                assert_eq!(scan.end, last, "cut at {cut}");
                assert_eq!(scan.bad.is_some(), cut > last, "cut at {cut}");
                assert_eq!(scan.data_end > last, cut > last, "cut at {cut}");
                assert!(!scan.bad.is_some_and(|b| b.damage), "cut at {cut}");
            }
        }
        // Any one page lost while the pages after it survived.
        for page in (0..whole.len()).step_by(512) {
            let from = page.max(last);
            let to = (page + 512).min(whole.len());
            if from >= to {
                continue;
            }
            let scan = scan_records(&Bytes::from(zeroed(&whole, from..to)), 1);
            assert_eq!((lsns(&scan), scan.end), (vec![1, 2], last), "page {page}");
            let bad = scan.bad.expect("a lost page");
            assert!(!bad.damage, "page {page}: {bad:?}");
            assert!(scan.data_end > last, "page {page}");
        }
    }

    fn zeroed(bytes: &[u8], range: std::ops::Range<usize>) -> Vec<u8> {
        let mut out = bytes.to_vec();
        out[range].fill(0);
        out
    }

    #[test]
    fn a_bad_group_followed_by_a_later_one_is_damage() {
        let mut bytes = segment(1, &[&[b"one"], &[b"two", b"2"], &[b"three"]]);
        let second = HEADER_LEN + GROUP_HEADER_LEN + frame_len(3);
        let flip = second + GROUP_HEADER_LEN + FRAME_HEADER_LEN;
        bytes[flip] ^= 0xff; // a bit flip in "two"
        let scan = scan_records(&Bytes::from(bytes.clone()), 1);
        assert_eq!(lsns(&scan), vec![1]);
        let bad = scan.bad.unwrap();
        assert!(bad.damage, "{bad:?}");
        assert_eq!(bad.offset, second);
        assert!(bad.reason.contains("body CRC"), "{}", bad.reason);
        assert!(bad.reason.contains("from LSN 4"), "{}", bad.reason);

        // The same group's header lost: still damage, found by the later group's header.
        bytes[flip] ^= 0xff;
        let lost = zeroed(&bytes, second..second + GROUP_HEADER_LEN);
        let bad = scan_records(&Bytes::from(lost), 1).bad.unwrap();
        assert!(bad.damage && bad.offset == second, "{bad:?}");
    }

    #[test]
    fn a_gap_a_repeat_or_frames_that_do_not_add_up_are_damage_even_at_the_end() {
        let mut bytes = segment(1, &[&[b"one"]]);
        group(&mut bytes, 3, &[b"three"]);
        let bad = scan_records(&Bytes::from(bytes), 1).bad.unwrap();
        assert!(bad.damage && bad.reason.contains("a gap"), "{bad:?}");

        let mut bytes = segment(1, &[&[b"one", b"two"]]);
        group(&mut bytes, 2, &[b"two"]);
        let bad = scan_records(&Bytes::from(bytes), 1).bad.unwrap();
        assert!(bad.damage && bad.reason.contains("a repeat"), "{bad:?}");

        // CRCs that hold over frames that do not: a writer's bug, never a crash window.
        let mut bytes = segment(1, &[&[b"one"]]);
        let at = group(&mut bytes, 2, &[b"two", b"three"]);
        seal_group(&mut bytes[at..], 2, 3);
        let bad = scan_records(&Bytes::from(bytes), 1).bad.unwrap();
        assert!(
            bad.damage && bad.reason.contains("says 3 records"),
            "{bad:?}"
        );
        let mut bytes = segment(1, &[]);
        bytes.resize(HEADER_LEN + GROUP_HEADER_LEN, 0);
        encode_frame(&mut bytes, 5, b"five");
        seal_group(&mut bytes[HEADER_LEN..], 1, 1);
        let bad = scan_records(&Bytes::from(bytes), 1).bad.unwrap();
        assert!(bad.damage && bad.reason.contains("not record 1"), "{bad:?}");
    }

    #[test]
    fn a_lying_length_is_torn_at_the_end() {
        let mut bytes = segment(1, &[&[b"one"]]);
        let end = bytes.len();
        let at = group(&mut bytes, 2, &[b"two"]);
        bytes.truncate(at + GROUP_HEADER_LEN + 3);
        let scan = scan_records(&Bytes::from(bytes), 1);
        assert_eq!(scan.end, end);
        let bad = scan.bad.unwrap();
        assert!(
            !bad.damage && bad.reason.contains("only 3 bytes"),
            "{bad:?}"
        );
    }
}
