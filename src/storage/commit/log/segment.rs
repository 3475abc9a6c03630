//! The commit log's files and records, as bytes: segment names, the segment header, a record's
//! frame, and the scan of one segment's bytes that tells a torn tail (a crash cut the last,
//! never acknowledged write) from damage (a record that was acknowledged is unreadable, or LSNs
//! do not follow one another).
//!
//! Why pure code over byte slices: every crash window the log must survive is a prefix (or a
//! zero-filled tail) of a segment's bytes, so the tests feed cut and damaged bytes straight to
//! [`scan_records`] and check exactly what it keeps; the file system side (`replay.rs`) only
//! reads, truncates and decides which segment is the last.
//!
//! Layout, little endian throughout:
//! - segment `log-<first LSN, 20 digits>.seg`: header `[8 bytes magic][u32 format version]
//!   [u32 reserved, 0][u64 first LSN]`, then frames;
//! - frame `[u32 payload length][u32 crc32 over (lsn, payload)][u64 lsn][payload]`;
//! - LSNs are consecutive from 1 across the segments.

use bytes::Bytes;

use crate::storage::StorageError;

/// A log sequence number: the position of a record in the log, consecutive from 1.
pub type Lsn = u64;

/// The first bytes of every segment.
pub const MAGIC: [u8; 8] = *b"tarn-log";
/// The segment format this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of a segment's header.
pub const HEADER_LEN: usize = 24;
/// Bytes of a frame before its payload.
pub const FRAME_HEADER_LEN: usize = 16;

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

/// The first frame of a segment's record area that is not a whole, valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame {
    /// Offset in the segment file.
    pub offset: usize,
    /// What is wrong with it.
    pub reason: String,
    /// Whether the bytes can only be damage, whatever follows: a frame whose CRC holds but
    /// whose LSN is not the next one (a gap or a repeat), or a valid record found after the
    /// bad one (`reason` says which and where).
    pub damage: bool,
}

/// What the scan of one segment found.
#[derive(Debug)]
pub struct SegmentScan {
    /// The whole records, in order, their payloads slices of the segment's bytes.
    pub records: Vec<(Lsn, Bytes)>,
    /// Offset just after the last whole record (where a torn tail is cut).
    pub end: usize,
    /// The frame at `end`, if the segment does not end there.
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

/// Why the frame at `offset` is not a valid record (it is not: [`valid_frame_at`] said so).
fn why_invalid(bytes: &[u8], offset: usize) -> String {
    let rest = bytes.len() - offset;
    if rest < FRAME_HEADER_LEN {
        return format!("a frame header cut short ({rest} of {FRAME_HEADER_LEN} bytes)");
    }
    let len = u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes")) as usize;
    if len > rest - FRAME_HEADER_LEN {
        return format!(
            "a record of {len} bytes but only {} bytes follow its header",
            rest - FRAME_HEADER_LEN
        );
    }
    "its CRC does not match its bytes".to_owned()
}

/// Reads the records of a segment's bytes (header already checked), expecting LSNs from
/// `first`. Stops at the first frame that is not a whole valid record; if a valid record
/// follows it anywhere in the segment (searched byte by byte: the bad frame's length cannot be
/// trusted), or the frame is valid but out of sequence, the bad frame is damage.
pub fn scan_records(bytes: &Bytes, first: Lsn) -> SegmentScan {
    let mut records = Vec::new();
    let mut offset = HEADER_LEN.min(bytes.len());
    let mut expected = first;
    while offset < bytes.len() {
        match valid_frame_at(bytes, offset) {
            Some((lsn, start, end)) if lsn == expected => {
                records.push((lsn, bytes.slice(start..end)));
                expected += 1;
                offset = end;
            }
            Some((lsn, _, _)) => {
                let what = if lsn < expected { "a repeat" } else { "a gap" };
                let bad = BadFrame {
                    offset,
                    reason: format!("record with LSN {lsn} where {expected} was expected ({what})"),
                    damage: true,
                };
                return SegmentScan {
                    records,
                    end: offset,
                    bad: Some(bad),
                };
            }
            None => {
                let mut bad = BadFrame {
                    offset,
                    reason: why_invalid(bytes, offset),
                    damage: false,
                };
                if let Some((later, at)) = valid_record_after(bytes, offset, expected) {
                    bad.reason = format!(
                        "{}, yet a valid record (LSN {later}) follows at offset {at}",
                        bad.reason
                    );
                    bad.damage = true;
                }
                return SegmentScan {
                    records,
                    end: offset,
                    bad: Some(bad),
                };
            }
        }
    }
    SegmentScan {
        records,
        end: offset,
        bad: None,
    }
}

/// The first valid frame after `offset` whose LSN could follow `expected` in these bytes (at
/// least `expected`, at most one per frame header's worth of bytes beyond it), and where.
fn valid_record_after(bytes: &[u8], offset: usize, expected: Lsn) -> Option<(Lsn, usize)> {
    let most = expected + ((bytes.len() - offset) / FRAME_HEADER_LEN) as u64;
    (offset + 1..bytes.len().saturating_sub(FRAME_HEADER_LEN - 1)).find_map(|at| {
        let lsn = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().expect("8 bytes"));
        if !(expected..=most).contains(&lsn) {
            return None;
        }
        valid_frame_at(bytes, at).map(|(lsn, _, _)| (lsn, at))
    })
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

    fn segment(first: Lsn, payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = encode_header(first).to_vec();
        for (i, p) in payloads.iter().enumerate() {
            encode_frame(&mut out, first + i as u64, p);
        }
        out
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
    fn whole_records_are_read_in_order() {
        let bytes = Bytes::from(segment(5, &[b"a", b"", b"ccc"]));
        let scan = scan_records(&bytes, 5);
        assert_eq!(scan.bad, None);
        assert_eq!(scan.end, bytes.len());
        let got: Vec<(Lsn, &[u8])> = scan.records.iter().map(|(l, p)| (*l, &p[..])).collect();
        assert_eq!(got, vec![(5, &b"a"[..]), (6, &b""[..]), (7, &b"ccc"[..])]);
    }

    #[test]
    fn every_cut_of_the_last_record_is_a_torn_tail() {
        let whole = segment(1, &[b"first record", b"second", b"the last record here"]);
        let last_start = whole.len() - frame_len(20);
        for cut in last_start..whole.len() {
            let bytes = Bytes::from(whole[..cut].to_vec());
            let scan = scan_records(&bytes, 1);
            assert_eq!(scan.records.len(), 2, "cut at {cut}");
            assert_eq!(scan.end, last_start, "cut at {cut}");
            let want_bad = cut > last_start;
            assert_eq!(scan.bad.is_some(), want_bad, "cut at {cut}");
            assert!(!scan.bad.is_some_and(|b| b.damage), "cut at {cut}");
        }
    }

    #[test]
    fn a_zero_filled_tail_is_torn() {
        let mut bytes = segment(1, &[b"kept"]);
        let end = bytes.len();
        bytes.resize(end + 4096, 0);
        let scan = scan_records(&Bytes::from(bytes), 1);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.end, end);
        let bad = scan.bad.unwrap();
        assert!(!bad.damage, "{bad:?}");
    }

    #[test]
    fn a_bad_record_followed_by_a_valid_one_is_damage() {
        let mut bytes = segment(1, &[b"one", b"two", b"three"]);
        let second = HEADER_LEN + frame_len(3);
        bytes[second + FRAME_HEADER_LEN] ^= 0xff; // a bit flip in "two"
        let scan = scan_records(&Bytes::from(bytes), 1);
        assert_eq!(scan.records.len(), 1);
        let bad = scan.bad.unwrap();
        assert!(bad.damage, "{bad:?}");
        assert_eq!(bad.offset, second);
        assert!(bad.reason.contains("LSN 3"), "{}", bad.reason);
    }

    #[test]
    fn a_gap_or_repeat_is_damage_even_at_the_end() {
        let mut bytes = segment(1, &[b"one"]);
        encode_frame(&mut bytes, 3, b"three");
        let scan = scan_records(&Bytes::from(bytes), 1);
        let bad = scan.bad.unwrap();
        assert!(bad.damage && bad.reason.contains("a gap"), "{bad:?}");

        let mut bytes = segment(1, &[b"one", b"two"]);
        encode_frame(&mut bytes, 2, b"two");
        let bad = scan_records(&Bytes::from(bytes), 1).bad.unwrap();
        assert!(bad.damage && bad.reason.contains("a repeat"), "{bad:?}");
    }

    #[test]
    fn a_lying_length_is_torn_at_the_end() {
        let mut bytes = segment(1, &[b"one"]);
        let end = bytes.len();
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(&[7; 20]);
        let scan = scan_records(&Bytes::from(bytes), 1);
        assert_eq!(scan.end, end);
        let bad = scan.bad.unwrap();
        assert!(!bad.damage && bad.reason.contains("only"), "{bad:?}");
    }
}
