//! `tag/tag-<name>`: Paimon tags — named snapshots that outlive snapshot expiry.
//!
//! A tag file is the tagged snapshot's JSON (so a tag still reads its data after
//! `snapshot-N` is expired) plus two optional fields of Paimon Java's `org.apache.paimon.tag.Tag`,
//! in Jackson's `JavaTimeModule` encodings that pypaimon copies (`pypaimon/tag/tag.py`):
//! `tagCreateTime`, a `java.time.LocalDateTime` in the writer's time zone written as
//! `[year, month, day, hour, minute(, second(, nanoOfSecond))]` with trailing zeros left out, and
//! `tagTimeRetained`, a `java.time.Duration` written as decimal seconds. Tags written by other
//! engines are read with unknown fields ignored, and with either field absent (Paimon writes the
//! plain snapshot JSON when a tag has no retention).
//!
//! tarn always records the create time (Paimon ≥ 0.8 and pypaimon read it; Paimon Java itself
//! writes it only with a retention, for ≤ 0.7 readers). Creating is create-if-absent on the
//! object store, so two writers cannot both create the same tag. Tag names must be non-blank,
//! without `/` or control characters; tarn also refuses all-digit names for new tags (a version
//! `123` would be ambiguous with snapshot 123) but reads such tags written by other engines.
//! Deleting a tag removes only its file: tarn never deletes data files, so nothing a tag pins can
//! vanish.

use std::time::Duration;

use chrono::{Datelike, Local, NaiveDateTime, TimeZone, Timelike};
use object_store::path::Path;
use serde::Serialize;
use serde_json::Value;

use crate::storage::StorageError;
use crate::storage::io::file_io::FileIO;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::time_travel::VersionError;

/// File name prefix of tags (`tag-<name>`).
pub const TAG_PREFIX: &str = "tag-";

/// A tag: its name and the snapshot it pins.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    pub name: String,
    /// The tagged snapshot as it was when tagged (valid even after `snapshot-N` expired).
    pub snapshot: Snapshot,
    /// When the tag was created, in milliseconds since the epoch (`tagCreateTime`).
    pub create_time_millis: Option<i64>,
    /// How long the tag is kept after its creation (`tagTimeRetained`); `None`: forever.
    pub time_retained: Option<Duration>,
}

/// The tag file layout: the snapshot's fields, then Paimon's two tag fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TagFile<'a> {
    #[serde(flatten)]
    snapshot: &'a Snapshot,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag_create_time: Option<Vec<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag_time_retained: Option<serde_json::Number>,
}

impl Tag {
    /// The tag `name` from the contents of its file.
    pub fn from_json(name: &str, bytes: &[u8]) -> Result<Self, StorageError> {
        let invalid = |e: serde_json::Error| {
            StorageError::format(format!("tag file of tag '{name}' is not valid: {e}"))
        };
        let mut value: Value = serde_json::from_slice(bytes).map_err(invalid)?;
        let Some(object) = value.as_object_mut() else {
            return Err(StorageError::format(format!(
                "tag file of tag '{name}' is not a JSON object"
            )));
        };
        let create_time = object.remove("tagCreateTime").filter(|v| !v.is_null());
        let retained = object.remove("tagTimeRetained").filter(|v| !v.is_null());
        let snapshot: Snapshot = serde_json::from_value(value).map_err(invalid)?;
        Ok(Self {
            name: name.to_owned(),
            snapshot,
            // Informational fields: an encoding tarn does not know must not hide the tag.
            create_time_millis: create_time.and_then(|v| {
                let millis = local_date_time_millis(&v);
                if millis.is_none() {
                    tracing::debug!(tag = name, value = %v, "unreadable tagCreateTime ignored");
                }
                millis
            }),
            time_retained: retained.and_then(|v| {
                let duration = duration_of(&v);
                if duration.is_none() {
                    tracing::debug!(tag = name, value = %v, "unreadable tagTimeRetained ignored");
                }
                duration
            }),
        })
    }

    /// The tag file's contents.
    pub fn to_json(&self) -> Vec<u8> {
        let file = TagFile {
            snapshot: &self.snapshot,
            tag_create_time: self.create_time_millis.and_then(local_date_time_array),
            tag_time_retained: self
                .time_retained
                .and_then(|d| serde_json::Number::from_f64(d.as_secs_f64())),
        };
        serde_json::to_vec_pretty(&file).expect("tag serializes")
    }
}

/// `LocalDateTime` as Jackson writes it: `[y, mo, d, h, mi]`, then the second if the second or
/// the nanosecond is non-zero, then the nanosecond if non-zero.
pub(crate) fn naive_to_array(t: NaiveDateTime) -> Vec<i64> {
    let mut out: Vec<i64> = vec![t.year().into(), t.month().into(), t.day().into()];
    out.extend([t.hour(), t.minute()].map(i64::from));
    let (second, nano) = (t.second(), t.nanosecond());
    if second != 0 || nano != 0 {
        out.push(i64::from(second));
        if nano != 0 {
            out.push(i64::from(nano));
        }
    }
    out
}

/// A `LocalDateTime` as Jackson reads it: the array form (missing trailing parts are zero) or
/// ISO text (`2026-12-01T10:00:00.123`).
pub(crate) fn naive_of(value: &Value) -> Option<NaiveDateTime> {
    match value {
        Value::Array(parts) => {
            let parts: Vec<i64> = parts.iter().map(Value::as_i64).collect::<Option<_>>()?;
            if !(3..=7).contains(&parts.len()) {
                return None;
            }
            let part = |i: usize| u32::try_from(parts.get(i).copied().unwrap_or(0)).ok();
            chrono::NaiveDate::from_ymd_opt(i32::try_from(parts[0]).ok()?, part(1)?, part(2)?)?
                .and_hms_nano_opt(part(3)?, part(4)?, part(5)?, part(6)?)
        }
        Value::String(s) => NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
            .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M"))
            .ok(),
        _ => None,
    }
}

/// Milliseconds since the epoch as Paimon's `LocalDateTime` (this process's time zone, as
/// Java's `LocalDateTime.now()` and pypaimon's `datetime.now()`).
fn local_date_time_array(millis: i64) -> Option<Vec<i64>> {
    Some(naive_to_array(
        Local.timestamp_millis_opt(millis).single()?.naive_local(),
    ))
}

/// A `LocalDateTime` in this process's time zone as milliseconds since the epoch (the earlier
/// instant when a clock change makes it ambiguous).
fn local_date_time_millis(value: &Value) -> Option<i64> {
    let naive = naive_of(value)?;
    Some(
        Local
            .from_local_datetime(&naive)
            .earliest()?
            .timestamp_millis(),
    )
}

/// A `Duration` as Jackson reads it from a number: decimal seconds.
fn duration_of(value: &Value) -> Option<Duration> {
    if let Some(secs) = value.as_u64() {
        return Some(Duration::from_secs(secs));
    }
    Duration::try_from_secs_f64(value.as_f64()?).ok()
}

/// Why `name` cannot name a tag file, if it cannot.
fn unreadable_name(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("tag names must not be blank")
    } else if name.contains('/') {
        Some("tag names must not contain '/'")
    } else if name.chars().any(char::is_control) {
        Some("tag names must not contain control characters")
    } else {
        None
    }
}

/// Checks the name of a tag to be created.
pub fn validate_new_tag_name(name: &str) -> Result<(), VersionError> {
    let reason = unreadable_name(name).or_else(|| {
        name.bytes()
            .all(|b| b.is_ascii_digit())
            .then_some("tag names must not be all digits (they would read as snapshot ids)")
    });
    match reason {
        Some(reason) => Err(VersionError::InvalidTagName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Reads and writes a table's tag files.
#[derive(Debug, Clone)]
pub struct TagManager {
    io: FileIO,
    dir: Path,
    /// `db.table`, for messages.
    table: String,
}

impl TagManager {
    /// The tags of the table at `table_path`.
    pub fn new(io: FileIO, table_path: &Path) -> Self {
        let parts: Vec<_> = table_path.parts().collect();
        let table = match parts.as_slice() {
            [.., db, name]
                if db
                    .as_ref()
                    .ends_with(crate::storage::meta::table::DATABASE_SUFFIX) =>
            {
                format!(
                    "{}.{}",
                    db.as_ref()
                        .strip_suffix(crate::storage::meta::table::DATABASE_SUFFIX)
                        .unwrap_or_default(),
                    name.as_ref()
                )
            }
            _ => table_path.to_string(),
        };
        Self {
            io,
            dir: table_path.clone().join("tag"),
            table,
        }
    }

    /// Path of the file of tag `name`.
    pub fn path_of(&self, name: &str) -> Result<Path, StorageError> {
        if let Some(reason) = unreadable_name(name) {
            return Err(VersionError::InvalidTagName {
                name: name.to_owned(),
                reason,
            }
            .into());
        }
        // Parsed, not built from a part: a part would percent-encode characters such as `%` or
        // `#`, and other engines would look for the file under the literal name.
        // The table's folder parsed already: only the user's name can make this fail.
        let text = format!("{}/{TAG_PREFIX}{name}", self.dir);
        Path::parse(&text).map_err(|_| {
            VersionError::InvalidTagName {
                name: name.to_owned(),
                reason: "it cannot be a file name in the warehouse",
            }
            .into()
        })
    }

    /// Tags `snapshot` as `name`, created now (`create_time_millis`), kept until deleted.
    pub async fn create(
        &self,
        name: &str,
        snapshot: &Snapshot,
        create_time_millis: i64,
    ) -> Result<(), StorageError> {
        self.create_with_retention(name, snapshot, create_time_millis, None)
            .await
    }

    /// Tags `snapshot` as `name`; `time_retained` is recorded for engines that expire tags.
    pub async fn create_with_retention(
        &self,
        name: &str,
        snapshot: &Snapshot,
        create_time_millis: i64,
        time_retained: Option<Duration>,
    ) -> Result<(), StorageError> {
        validate_new_tag_name(name)?;
        let tag = Tag {
            name: name.to_owned(),
            snapshot: snapshot.clone(),
            create_time_millis: Some(create_time_millis),
            time_retained,
        };
        if self
            .io
            .write_new(&self.path_of(name)?, tag.to_json())
            .await?
        {
            Ok(())
        } else {
            Err(VersionError::TagExists {
                table: self.table.clone(),
                tag: name.to_owned(),
            }
            .into())
        }
    }

    /// Tags `snapshot` as `name` for Paimon's automatic tags (`auto_tag.rs`): names follow
    /// Paimon's formats, all-digit ones included (`20261203`). `replace`: one write over any
    /// tag of that name (batch mode); otherwise create-if-absent, `false` when it exists.
    pub async fn create_automatic(
        &self,
        name: &str,
        snapshot: &Snapshot,
        create_time_millis: i64,
        time_retained: Option<Duration>,
        replace: bool,
    ) -> Result<bool, StorageError> {
        let path = self.path_of(name)?;
        let tag = Tag {
            name: name.to_owned(),
            snapshot: snapshot.clone(),
            create_time_millis: Some(create_time_millis),
            time_retained,
        };
        if replace {
            self.io.write(&path, tag.to_json()).await?;
            return Ok(true);
        }
        self.io.write_new(&path, tag.to_json()).await
    }

    /// Tag `name`, or `None` if there is none.
    pub async fn get(&self, name: &str) -> Result<Option<Tag>, StorageError> {
        match self.io.read_if_exists(&self.path_of(name)?).await? {
            Some(bytes) => Ok(Some(Tag::from_json(name, &bytes)?)),
            None => Ok(None),
        }
    }

    /// Names of all tags (from the listing, without reading the files), sorted.
    pub async fn names(&self) -> Result<Vec<String>, StorageError> {
        let (objects, _) = self.io.list_dir(&self.dir).await?;
        let mut names: Vec<String> = objects
            .iter()
            .filter_map(|m| m.location.filename()?.strip_prefix(TAG_PREFIX))
            .filter(|n| unreadable_name(n).is_none())
            .map(str::to_owned)
            .collect();
        names.sort_unstable();
        Ok(names)
    }

    /// Every tag, sorted by snapshot id, then name. A tag deleted while listing is left out.
    pub async fn list(&self) -> Result<Vec<Tag>, StorageError> {
        let names = self.names().await?;
        // One read after another: a plain loop keeps the future `Send` for any caller (a
        // buffered stream of borrowing closures does not, rust-lang/rust#96865).
        let mut tags: Vec<Tag> = Vec::new();
        for name in &names {
            if let Some(tag) = self.get(name).await? {
                tags.push(tag);
            }
        }
        tags.sort_by(|a, b| (a.snapshot.id, &a.name).cmp(&(b.snapshot.id, &b.name)));
        Ok(tags)
    }

    /// Deletes tag `name`; `false` if there was none. Only the tag file is removed.
    pub async fn delete(&self, name: &str) -> Result<bool, StorageError> {
        let path = self.path_of(name)?;
        if !self.io.exists(&path).await? {
            return Ok(false);
        }
        self.io.delete(&path).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use std::sync::Arc;

    /// A tag file pypaimon 2.1.0 wrote with `time_retained="1500ms"` (and a field from the
    /// future, which must be ignored).
    const PYPAIMON_TAG: &str = r#"{"version": 3, "id": 2, "schemaId": 0,
        "baseManifestList": "manifest-list-d6e0-0", "deltaManifestList": "manifest-list-d6e0-1",
        "totalRecordCount": 2, "deltaRecordCount": 1, "commitUser": "39d8ffa9",
        "commitIdentifier": 9223372036854775807, "commitKind": "APPEND",
        "timeMillis": 1796275072304, "baseManifestListSize": 1338, "deltaManifestListSize": 1338,
        "uuid": "a8b1d491", "writerVersion": "python-2.1.0",
        "operation": {"kind": "future"},
        "tagCreateTime": [2026, 12, 3, 5, 17, 52, 313329000], "tagTimeRetained": 1.5}"#;

    /// A tag file without retention: the plain snapshot JSON (Paimon Java and pypaimon).
    const PLAIN_TAG: &str = r#"{"version": 3, "id": 1, "schemaId": 0,
        "baseManifestList": "manifest-list-1-0", "deltaManifestList": "manifest-list-1-1",
        "totalRecordCount": 1, "deltaRecordCount": 1, "commitUser": "6a2c",
        "commitIdentifier": 9223372036854775807, "commitKind": "APPEND",
        "timeMillis": 1796275072232}"#;

    fn manager() -> TagManager {
        let io = FileIO::new(Arc::new(InMemory::new()), None);
        TagManager::new(io, &Path::from("db.db/t"))
    }

    fn local_millis(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, milli: u32) -> i64 {
        let naive = chrono::NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_milli_opt(h, mi, s, milli)
            .unwrap();
        Local
            .from_local_datetime(&naive)
            .earliest()
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn reads_pypaimon_tags() {
        let tag = Tag::from_json("retained", PYPAIMON_TAG.as_bytes()).unwrap();
        assert_eq!(tag.snapshot.id, 2);
        assert_eq!(tag.snapshot.time_millis, 1_796_275_072_304);
        assert_eq!(tag.time_retained, Some(Duration::from_millis(1500)));
        assert_eq!(
            tag.create_time_millis,
            Some(local_millis(2026, 12, 3, 5, 17, 52, 313))
        );
        let plain = Tag::from_json("plain", PLAIN_TAG.as_bytes()).unwrap();
        assert_eq!(plain.snapshot.id, 1);
        assert_eq!(
            (plain.create_time_millis, plain.time_retained),
            (None, None)
        );
        // Java writes Durations as BigDecimal seconds with nine decimals.
        let java = PLAIN_TAG.replace(
            "\"timeMillis\"",
            "\"tagTimeRetained\": 86400.000000000, \"tagCreateTime\": [2026,1,2,3,4], \"timeMillis\"",
        );
        let tag = Tag::from_json("java", java.as_bytes()).unwrap();
        assert_eq!(tag.time_retained, Some(Duration::from_secs(86_400)));
        assert_eq!(
            tag.create_time_millis,
            Some(local_millis(2026, 1, 2, 3, 4, 0, 0))
        );
        assert!(Tag::from_json("x", b"[1]").is_err());
    }

    #[test]
    fn local_date_times_in_jacksons_forms() {
        let t = |y, mo, d, h, mi, s, n| {
            chrono::NaiveDate::from_ymd_opt(y, mo, d)
                .unwrap()
                .and_hms_nano_opt(h, mi, s, n)
                .unwrap()
        };
        for (time, array) in [
            (t(2026, 1, 2, 3, 4, 0, 0), vec![2026, 1, 2, 3, 4]),
            (t(2026, 1, 2, 3, 4, 5, 0), vec![2026, 1, 2, 3, 4, 5]),
            (t(2026, 1, 2, 3, 4, 0, 7), vec![2026, 1, 2, 3, 4, 0, 7]),
        ] {
            assert_eq!(naive_to_array(time), array);
            assert_eq!(naive_of(&serde_json::json!(array)), Some(time));
        }
        assert_eq!(
            naive_of(&serde_json::json!("2026-01-02T03:04:05.5")),
            Some(t(2026, 1, 2, 3, 4, 5, 500_000_000))
        );
        assert_eq!(naive_of(&serde_json::json!([2026, 13, 1, 0, 0])), None);
    }

    #[test]
    fn writes_the_snapshot_then_the_tag_fields() {
        let mut tag = Tag::from_json("retained", PYPAIMON_TAG.as_bytes()).unwrap();
        tag.create_time_millis = Some(local_millis(2026, 12, 3, 5, 17, 52, 313));
        let json: Value = serde_json::from_slice(&tag.to_json()).unwrap();
        assert_eq!(
            json["tagCreateTime"],
            serde_json::json!([2026, 12, 3, 5, 17, 52, 313_000_000])
        );
        assert_eq!(json["tagTimeRetained"], serde_json::json!(1.5));
        assert_eq!(json["commitIdentifier"], serde_json::json!(i64::MAX));
        assert_eq!(json["baseManifestList"], "manifest-list-d6e0-0");
        assert_eq!(Tag::from_json("retained", &tag.to_json()).unwrap(), tag);
        tag.time_retained = None;
        let json: Value = serde_json::from_slice(&tag.to_json()).unwrap();
        assert!(json.get("tagTimeRetained").is_none(), "left out when None");
    }

    #[test]
    fn tag_names() {
        for bad in ["", "  ", "123", "a/b", "a\nb"] {
            assert!(
                matches!(
                    validate_new_tag_name(bad),
                    Err(VersionError::InvalidTagName { .. })
                ),
                "{bad:?}"
            );
        }
        for good in ["v1", "2026-12-01", "a b", "x%3Dy", "a#b", "１２"] {
            validate_new_tag_name(good).unwrap();
        }
    }

    #[tokio::test]
    async fn create_get_list_delete() {
        let m = manager();
        let snapshot = Tag::from_json("p", PLAIN_TAG.as_bytes()).unwrap().snapshot;
        let mut later = snapshot.clone();
        later.id = 5;
        assert!(m.list().await.unwrap().is_empty());
        assert_eq!(m.get("v1").await.unwrap(), None);
        m.create("v1", &later, 1_000).await.unwrap();
        m.create("b", &later, 2_000).await.unwrap();
        m.create("z", &snapshot, 3_000).await.unwrap();
        let err = m.create("v1", &snapshot, 4_000).await.unwrap_err();
        assert_eq!(err.to_string(), "tag 'v1' of table db.t already exists");
        assert!(matches!(
            m.create("7", &snapshot, 0).await,
            Err(StorageError::Version(VersionError::InvalidTagName { .. }))
        ));
        let v1 = m.get("v1").await.unwrap().unwrap();
        assert_eq!((v1.snapshot.id, v1.create_time_millis), (5, Some(1_000)));
        let listed: Vec<_> = m
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|t| (t.snapshot.id, t.name))
            .collect();
        assert_eq!(
            listed,
            [
                (1, "z".to_owned()),
                (5, "b".to_owned()),
                (5, "v1".to_owned())
            ]
        );
        assert!(m.delete("v1").await.unwrap());
        assert!(!m.delete("v1").await.unwrap());
        assert_eq!(m.names().await.unwrap(), ["b", "z"]);
        // Another engine's all-digit tag is readable.
        m.io.write(&m.path_of("123").unwrap(), PLAIN_TAG.to_owned())
            .await
            .unwrap();
        assert_eq!(m.get("123").await.unwrap().unwrap().snapshot.id, 1);
    }
}
