//! Paimon's automatic tags: `tag.automatic-creation` makes the commits themselves tag the table
//! (a tag per day or hour, or one per batch), so old states stay readable after snapshots
//! expire without anyone calling `create_tag`.
//!
//! The decision is [`plan`], a pure function of the options, the time, the existing tags and the
//! committed snapshot(s); [`auto_tag_after_commit`] reads the tags, plans and applies. As Paimon
//! Java (`TagAutoCreation`, `TagPeriodHandler`, `TagTimeExtractor`, `TagBatchCreation`,
//! `TagTimeExpire`, run by `TableCommitImpl` after each commit):
//!
//! - `process-time`: a snapshot committed at `t` tags the previous period once `t - delay`
//!   passes the end of the period after the newest automatic tag: daily `2026-12-03` is created
//!   on the first snapshot at or after `2026-12-05 00:00 + delay` when `2026-12-02` is the newest
//!   automatic tag. Without any automatic tag the first snapshot tags its previous period at once
//!   (whatever the delay). With `tag.automatic-completion`, the next missing period is tagged
//!   instead of the snapshot's previous one. Snapshots older than the newest automatic tag's are
//!   skipped. Names: `tag.period-formatter` `with_dashes` (default) gives `2026-12-03` (daily),
//!   `2026-12-03 10` (hourly, two-hours); `without_dashes` `20261203`, `20261203 10`;
//!   `without_dashes_and_spaces` `20261203`, `2026120310`; `two-hours` always uses dashes;
//!   `tag.creation-period-duration` (any duration, replaces the period) names `202612031000`.
//!   A tag is an automatic tag when its name parses in the table's format (a daily format reads
//!   the part before the first space).
//! - `batch`: every commit (re)tags its snapshot as `batch-write-<yyyy-MM-dd>` of its commit
//!   time, or `tag.batch.customized-name`. A tag of that name on a newer snapshot is kept.
//! - `watermark`: tarn's commits carry no watermark; treated as `none` (Paimon's extractor finds
//!   no time either and creates nothing).
//! - `tag.num-retained-max`: after a creation, the oldest automatic tags (by snapshot) beyond
//!   that many are deleted; manual tags are never counted or deleted. (Paimon Java's batch mode
//!   counts every tag, manual ones too; tarn keeps to the option's documentation: "It only
//!   affects auto-created tags".)
//! - `tag.default-time-retained`: the retention recorded in created tags; with
//!   `tag.time-expire-enabled` (default true) every tag whose create time plus retention has
//!   passed is deleted (Paimon's `TagTimeExpire`), manual ones included. Paimon runs that
//!   after every commit of every table; tarn only where the table creates tags or sets
//!   `tag.default-time-retained` ([`AutoTagOptions::is_active`]), so other tables' commits
//!   read no tag files.
//!
//! Tags are created if absent (two writers cannot both create one; automatic names may be all
//! digits, which tarn refuses for manual tags) and replaced in place in batch mode (one atomic
//! write, no moment without the tag). Deleting a tag removes only its file.
//!
//! **Time zone: UTC.** Paimon reads snapshot times in `sink.process-time-zone`, by default the
//! JVM's local zone, so a Java writer in another zone cuts periods at its local midnight; tarn
//! always cuts at UTC midnight and ignores `sink.process-time-zone`.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime};

use crate::storage::StorageError;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::options::tags::{AutoTagOptions, CreationMode, Period, PeriodFormatter};

/// Prefix of batch-mode tags (`batch-write-2026-12-03`).
pub const BATCH_TAG_PREFIX: &str = "batch-write-";

impl AutoTagOptions {
    fn pattern(&self) -> &'static [Part] {
        use Part::*;
        const DAY_DASHES: &[Part] = &[Year, Lit('-'), Month, Lit('-'), Day];
        const DAY: &[Part] = &[Year, Month, Day];
        const HOUR_DASHES: &[Part] = &[Year, Lit('-'), Month, Lit('-'), Day, Lit(' '), Hour];
        const HOUR: &[Part] = &[Year, Month, Day, Lit(' '), Hour];
        const HOUR_COMPACT: &[Part] = &[Year, Month, Day, Hour];
        const MINUTE: &[Part] = &[Year, Month, Day, Hour, Minute];
        match (self.period, self.formatter) {
            (Period::Daily, PeriodFormatter::WithDashes) => DAY_DASHES,
            (Period::Daily, _) => DAY,
            (Period::Hourly, PeriodFormatter::WithDashes) | (Period::TwoHours, _) => HOUR_DASHES,
            (Period::Hourly, PeriodFormatter::WithoutDashes) => HOUR,
            (Period::Hourly, PeriodFormatter::WithoutDashesAndSpaces) => HOUR_COMPACT,
            (Period::Every(_), _) => MINUTE,
        }
    }

    /// The automatic tag name of the period starting at `millis` (UTC).
    pub fn tag_name(&self, millis: i64) -> String {
        let t = utc(millis);
        let mut out = String::new();
        for part in self.pattern() {
            match part {
                Part::Year => out.push_str(&t.format("%Y").to_string()),
                Part::Month => out.push_str(&t.format("%m").to_string()),
                Part::Day => out.push_str(&t.format("%d").to_string()),
                Part::Hour => out.push_str(&t.format("%H").to_string()),
                Part::Minute => out.push_str(&t.format("%M").to_string()),
                Part::Lit(c) => out.push(*c),
            }
        }
        out
    }

    /// The start (UTC milliseconds) of the period an automatic tag named `name` stands for;
    /// `None` if `name` is not an automatic tag name in this table's format.
    pub fn tag_time(&self, name: &str) -> Option<i64> {
        let name = match self.period {
            // Paimon's daily handler reads the part before the first space.
            Period::Daily => name.split(' ').next().unwrap_or(name),
            _ => name,
        };
        parse(self.pattern(), name)
    }

    /// The batch-mode tag name of a snapshot committed at `millis`.
    pub fn batch_tag_name(&self, millis: i64) -> String {
        match &self.batch_customized_name {
            Some(name) => name.clone(),
            None => format!("{BATCH_TAG_PREFIX}{}", utc(millis).format("%Y-%m-%d")),
        }
    }

    /// Whether `name` is a batch-mode automatic tag.
    fn is_batch_tag(&self, name: &str) -> bool {
        match &self.batch_customized_name {
            Some(custom) => name == custom,
            None => name.strip_prefix(BATCH_TAG_PREFIX).is_some_and(|d| {
                parse(
                    &[
                        Part::Year,
                        Part::Lit('-'),
                        Part::Month,
                        Part::Lit('-'),
                        Part::Day,
                    ],
                    d,
                )
                .is_some()
            }),
        }
    }
}

/// Parts of Paimon's tag name formats (fixed-width numbers, as `DateTimeFormatter`'s
/// `appendValue(field, width)` with the strict resolver).
#[derive(Debug, Clone, Copy)]
enum Part {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Lit(char),
}

fn utc(millis: i64) -> NaiveDateTime {
    DateTime::from_timestamp_millis(millis)
        .unwrap_or_default()
        .naive_utc()
}

/// `text` read with `pattern`, as UTC milliseconds.
fn parse(pattern: &[Part], text: &str) -> Option<i64> {
    let mut rest = text;
    let number = |width: usize, rest: &mut &str| -> Option<u32> {
        let digits = rest.get(..width)?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *rest = &rest[width..];
        digits.parse().ok()
    };
    let (mut year, mut month, mut day, mut hour, mut minute) = (None, None, None, 0, 0);
    for part in pattern {
        match part {
            Part::Year => year = Some(number(4, &mut rest)?),
            Part::Month => month = Some(number(2, &mut rest)?),
            Part::Day => day = Some(number(2, &mut rest)?),
            Part::Hour => hour = number(2, &mut rest)?,
            Part::Minute => minute = number(2, &mut rest)?,
            Part::Lit(c) => rest = rest.strip_prefix(*c)?,
        }
    }
    if !rest.is_empty() {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(i32::try_from(year?).ok()?, month?, day?)?;
    Some(
        date.and_hms_opt(hour, minute, 0)?
            .and_utc()
            .timestamp_millis(),
    )
}

/// A tag as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingTag {
    pub name: String,
    pub snapshot_id: i64,
    pub create_time_millis: Option<i64>,
    pub time_retained: Option<Duration>,
}

/// A committed snapshot as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotTime {
    pub id: i64,
    pub time_millis: i64,
}

/// A tag to create on a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTag {
    pub name: String,
    pub snapshot_id: i64,
    pub time_retained: Option<Duration>,
    /// Overwrite a tag of that name (batch mode); otherwise create only if absent.
    pub replace: bool,
}

/// What to do after a commit: tags to create (in order), then tags to delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutoTagPlan {
    pub create: Vec<NewTag>,
    pub delete: Vec<String>,
}

/// Decides the automatic tags after a commit: which to create on `snapshots` (the snapshots
/// committed since the last decision, any order) and which to delete (`tag.num-retained-max`,
/// retention passed), given `tags` (every tag of the table) and the time `now_millis`.
pub fn plan(
    options: &AutoTagOptions,
    now_millis: i64,
    tags: &[ExistingTag],
    snapshots: &[SnapshotTime],
) -> AutoTagPlan {
    let mut snapshots = snapshots.to_vec();
    snapshots.sort_by_key(|s| s.id);
    // Live tags after the plan so far: name → snapshot id.
    let mut live: BTreeMap<String, i64> = tags
        .iter()
        .map(|t| (t.name.clone(), t.snapshot_id))
        .collect();
    let mut out = AutoTagPlan::default();
    match options.mode {
        CreationMode::ProcessTime => {
            process_time(options, &snapshots, &mut live, &mut out);
        }
        CreationMode::Batch => {
            if let Some(s) = snapshots.last() {
                let name = options.batch_tag_name(s.time_millis);
                if live.get(&name).is_none_or(|id| *id < s.id) {
                    out.create.push(NewTag {
                        name: name.clone(),
                        snapshot_id: s.id,
                        time_retained: options.default_time_retained,
                        replace: true,
                    });
                    live.insert(name, s.id);
                    retain(options, |n| options.is_batch_tag(n), &mut live, &mut out);
                }
            }
        }
        CreationMode::None | CreationMode::Watermark => {}
    }
    if options.time_expire_enabled {
        let created: HashSet<&str> = out.create.iter().map(|t| t.name.as_str()).collect();
        for t in tags {
            let (Some(created_at), Some(retained)) = (t.create_time_millis, t.time_retained) else {
                continue;
            };
            let until =
                created_at.saturating_add(i64::try_from(retained.as_millis()).unwrap_or(i64::MAX));
            if now_millis > until
                && !created.contains(t.name.as_str())
                && live.remove(&t.name).is_some()
            {
                out.delete.push(t.name.clone());
            }
        }
    }
    out
}

/// `process-time`: Paimon's `TagAutoCreation.run` over `snapshots` (ascending).
fn process_time(
    options: &AutoTagOptions,
    snapshots: &[SnapshotTime],
    live: &mut BTreeMap<String, i64>,
    out: &mut AutoTagPlan,
) {
    let period = options.period.millis();
    let delay = i64::try_from(options.delay.as_millis()).unwrap_or(i64::MAX);
    // The newest automatic tag (by the period it names) says where tagging goes on.
    let newest = live
        .iter()
        .filter_map(|(name, id)| Some((options.tag_time(name)?, *id)))
        .max_by_key(|(time, _)| *time);
    let (mut next_tag, first_snapshot) = match newest {
        Some((time, id)) => (Some(time + period), id + 1),
        None => (None, i64::MIN),
    };
    for s in snapshots.iter().filter(|s| s.id >= first_snapshot) {
        let due = next_tag.is_none_or(|next| s.time_millis.saturating_sub(delay) >= next + period);
        if !due {
            continue;
        }
        let mut this = s.time_millis.div_euclid(period) * period - period;
        if options.automatic_completion
            && let Some(next) = next_tag
        {
            this = next;
        }
        let name = options.tag_name(this);
        if let std::collections::btree_map::Entry::Vacant(e) = live.entry(name) {
            out.create.push(NewTag {
                name: e.key().clone(),
                snapshot_id: s.id,
                time_retained: options.default_time_retained,
                replace: false,
            });
            e.insert(s.id);
        }
        next_tag = Some(this + period);
        retain(options, |n| options.tag_time(n).is_some(), live, out);
    }
}

/// `tag.num-retained-max`: deletes the oldest automatic tags (by snapshot, then name) beyond the
/// limit; a tag created by this plan is just not created.
fn retain(
    options: &AutoTagOptions,
    is_auto: impl Fn(&str) -> bool,
    live: &mut BTreeMap<String, i64>,
    out: &mut AutoTagPlan,
) {
    let Some(max) = options.num_retained_max else {
        return;
    };
    let mut auto: Vec<(i64, String)> = live
        .iter()
        .filter(|(name, _)| is_auto(name))
        .map(|(name, id)| (*id, name.clone()))
        .collect();
    let excess = auto.len().saturating_sub(max);
    auto.sort();
    for (_, name) in auto.into_iter().take(excess) {
        live.remove(&name);
        match out.create.iter().position(|t| t.name == name) {
            Some(i) => {
                out.create.remove(i);
            }
            None => out.delete.push(name),
        }
    }
}

/// Creates and expires the table's automatic tags after the commit of `snapshot` (see the
/// module documentation); returns the names of the tags it created. Without automatic tags or
/// retained tags configured it does no I/O.
pub async fn auto_tag_after_commit(
    table: &Table,
    snapshot: &Snapshot,
) -> Result<Vec<String>, StorageError> {
    let options = AutoTagOptions::from_schema(table.schema()).map_err(StorageError::Unsupported)?;
    if !options.is_active() {
        return Ok(Vec::new());
    }
    let manager = table.tags();
    let tags: Vec<ExistingTag> = manager
        .list()
        .await?
        .into_iter()
        .map(|t| ExistingTag {
            name: t.name,
            snapshot_id: t.snapshot.id,
            create_time_millis: t.create_time_millis,
            time_retained: t.time_retained,
        })
        .collect();
    let now = table.clock().now_millis();
    let committed = SnapshotTime {
        id: snapshot.id,
        time_millis: snapshot.time_millis,
    };
    let plan = plan(&options, now, &tags, &[committed]);
    let mut created = Vec::new();
    for tag in plan.create {
        debug_assert_eq!(tag.snapshot_id, snapshot.id);
        if manager
            .create_automatic(&tag.name, snapshot, now, tag.time_retained, tag.replace)
            .await?
        {
            tracing::debug!(table = %table.qualified_name(), tag = %tag.name, snapshot = snapshot.id, "automatic tag created");
            created.push(tag.name);
        }
    }
    for name in plan.delete {
        manager.delete(&name).await?;
        tracing::debug!(table = %table.qualified_name(), tag = %name, "automatic tag expired");
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::storage::io::clock::ManualClock;
    use crate::storage::spec::options::parse_duration;
    use crate::storage::spec::types::{PaimonType, TypeKind};
    use crate::storage::testkit::keyed_schema;
    use crate::storage::write::table_write::{TableWrite, WriteMode};

    const HOUR: i64 = 3_600_000;
    const DAY: i64 = 24 * HOUR;

    /// `2026-12-03 10:30` (UTC) as milliseconds.
    fn at(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
            .unwrap()
            .and_utc()
            .timestamp_millis()
    }

    fn opts(pairs: &[(&str, &str)]) -> AutoTagOptions {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AutoTagOptions::from_options(&map).unwrap()
    }

    fn tag(name: &str, snapshot_id: i64) -> ExistingTag {
        ExistingTag {
            name: name.to_owned(),
            snapshot_id,
            create_time_millis: None,
            time_retained: None,
        }
    }

    fn snap(id: i64, time: &str) -> SnapshotTime {
        SnapshotTime {
            id,
            time_millis: at(time),
        }
    }

    /// Created (name, snapshot) and deleted names.
    fn run(
        options: &[(&str, &str)],
        tags: &[ExistingTag],
        snapshots: &[SnapshotTime],
    ) -> (Vec<(String, i64)>, Vec<String>) {
        let p = plan(&opts(options), at("2026-12-20 00:00"), tags, snapshots);
        (
            p.create
                .into_iter()
                .map(|t| (t.name, t.snapshot_id))
                .collect(),
            p.delete,
        )
    }

    fn created(names: &[(&str, i64)]) -> Vec<(String, i64)> {
        names.iter().map(|(n, id)| (n.to_string(), *id)).collect()
    }

    const PT: (&str, &str) = ("tag.automatic-creation", "process-time");

    #[test]
    fn process_time_tags_the_previous_period() {
        let none: Vec<String> = Vec::new();
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            &str,
            Vec<(&str, &str)>,
            Vec<ExistingTag>,
            Vec<SnapshotTime>,
            Vec<(&str, i64)>,
        )> = vec![
            (
                "first tag at once",
                vec![PT],
                vec![],
                vec![snap(1, "2026-12-03 10:00")],
                vec![("2026-12-02", 1)],
            ),
            (
                "first tag ignores the delay",
                vec![PT, ("tag.creation-delay", "12 h")],
                vec![],
                vec![snap(1, "2026-12-03 00:01")],
                vec![("2026-12-02", 1)],
            ),
            (
                "period not over",
                vec![PT],
                vec![tag("2026-12-02", 1)],
                vec![snap(2, "2026-12-03 23:59")],
                vec![],
            ),
            (
                "period over",
                vec![PT],
                vec![tag("2026-12-02", 1)],
                vec![snap(3, "2026-12-04 00:00")],
                vec![("2026-12-03", 3)],
            ),
            (
                "within the delay",
                vec![PT, ("tag.creation-delay", "10 min")],
                vec![tag("2026-12-02", 1)],
                vec![snap(3, "2026-12-04 00:09")],
                vec![],
            ),
            (
                "after the delay",
                vec![PT, ("tag.creation-delay", "10 min")],
                vec![tag("2026-12-02", 1)],
                vec![snap(3, "2026-12-04 00:10")],
                vec![("2026-12-03", 3)],
            ),
            (
                "snapshot already passed",
                vec![PT],
                vec![tag("2026-12-09", 5)],
                vec![snap(5, "2026-12-12 00:00")],
                vec![],
            ),
            (
                "a gap: the snapshot's previous period",
                vec![PT],
                vec![tag("2026-12-02", 1)],
                vec![snap(2, "2026-12-10 01:00")],
                vec![("2026-12-09", 2)],
            ),
            (
                "a gap with completion: the next period",
                vec![PT, ("tag.automatic-completion", "true")],
                vec![tag("2026-12-02", 1)],
                vec![snap(2, "2026-12-10 01:00")],
                vec![("2026-12-03", 2)],
            ),
            (
                "several snapshots in order",
                vec![PT],
                vec![tag("2026-12-02", 1)],
                vec![
                    snap(4, "2026-12-05 08:00"),
                    snap(2, "2026-12-03 09:00"),
                    snap(3, "2026-12-04 01:00"),
                ],
                vec![("2026-12-03", 3), ("2026-12-04", 4)],
            ),
            (
                "manual tags do not count",
                vec![PT],
                vec![tag("release", 9), tag("v1", 1)],
                vec![snap(10, "2026-12-03 10:00")],
                vec![("2026-12-02", 10)],
            ),
            (
                "a daily tag name is read up to its first space",
                vec![PT],
                vec![tag("2026-12-05 extra", 1)],
                vec![snap(2, "2026-12-06 10:00")],
                vec![],
            ),
            (
                "hourly",
                vec![PT, ("tag.creation-period", "hourly")],
                vec![],
                vec![snap(1, "2026-12-03 10:30")],
                vec![("2026-12-03 09", 1)],
            ),
            (
                "hourly over",
                vec![PT, ("tag.creation-period", "hourly")],
                vec![tag("2026-12-03 09", 1)],
                vec![snap(2, "2026-12-03 11:00")],
                vec![("2026-12-03 10", 2)],
            ),
            (
                "hourly without dashes",
                vec![
                    PT,
                    ("tag.creation-period", "hourly"),
                    ("tag.period-formatter", "without_dashes"),
                ],
                vec![],
                vec![snap(1, "2026-12-03 10:30")],
                vec![("20261203 09", 1)],
            ),
            (
                "hourly compact",
                vec![
                    PT,
                    ("tag.creation-period", "HOURLY"),
                    ("tag.period-formatter", "without_dashes_and_spaces"),
                ],
                vec![],
                vec![snap(1, "2026-12-03 10:30")],
                vec![("2026120309", 1)],
            ),
            (
                "daily without dashes",
                vec![PT, ("tag.period-formatter", "without_dashes")],
                vec![],
                vec![snap(1, "2026-12-03 10:30")],
                vec![("20261202", 1)],
            ),
            (
                "two hours (always dashes)",
                vec![
                    PT,
                    ("tag.creation-period", "two-hours"),
                    ("tag.period-formatter", "without_dashes"),
                ],
                vec![],
                vec![snap(1, "2026-12-03 11:30")],
                vec![("2026-12-03 08", 1)],
            ),
            (
                "a period duration",
                vec![PT, ("tag.creation-period-duration", "30 min")],
                vec![],
                vec![snap(1, "2026-12-03 10:45")],
                vec![("202612031000", 1)],
            ),
            (
                "tags of another format are manual",
                vec![PT, ("tag.creation-period", "hourly")],
                vec![tag("2026-12-03", 1)],
                vec![snap(2, "2026-12-03 10:30")],
                vec![("2026-12-03 09", 2)],
            ),
            (
                "watermark: nothing",
                vec![("tag.automatic-creation", "watermark")],
                vec![],
                vec![snap(1, "2026-12-03 10:00")],
                vec![],
            ),
            (
                "none: nothing",
                vec![],
                vec![],
                vec![snap(1, "2026-12-03 10:00")],
                vec![],
            ),
        ];
        for (what, options, tags, snapshots, expected) in cases {
            let (c, d) = run(&options, &tags, &snapshots);
            assert_eq!(c, created(&expected), "{what}");
            assert_eq!(d, none, "{what}");
        }
    }

    #[test]
    fn num_retained_max_deletes_the_oldest_automatic_tags() {
        let keep2 = [PT, ("tag.num-retained-max", "2")];
        let tags = [tag("2026-11-30", 1), tag("2026-12-01", 2), tag("manual", 0)];
        let (c, d) = run(&keep2, &tags, &[snap(3, "2026-12-03 00:00")]);
        assert_eq!(c, created(&[("2026-12-02", 3)]));
        assert_eq!(d, ["2026-11-30"]);
        // Nothing created: nothing deleted.
        let (c, d) = run(&keep2, &tags, &[snap(3, "2026-12-02 10:00")]);
        assert!(c.is_empty() && d.is_empty());
        // Zero: the new tag is not even created.
        let (c, d) = run(
            &[PT, ("tag.num-retained-max", "0")],
            &tags,
            &[snap(3, "2026-12-03 00:00")],
        );
        assert!(c.is_empty());
        assert_eq!(d, ["2026-11-30", "2026-12-01"]);
    }

    #[test]
    fn batch_mode_retags_the_latest_snapshot() {
        let batch = ("tag.automatic-creation", "batch");
        let p = plan(&opts(&[batch]), 0, &[], &[snap(7, "2026-12-03 10:00")]);
        assert_eq!(
            p.create,
            [NewTag {
                name: "batch-write-2026-12-03".into(),
                snapshot_id: 7,
                time_retained: None,
                replace: true,
            }]
        );
        let (c, _) = run(
            &[batch],
            &[tag("batch-write-2026-12-03", 5)],
            &[snap(7, "2026-12-03 23:00")],
        );
        assert_eq!(c, created(&[("batch-write-2026-12-03", 7)]));
        let (c, _) = run(
            &[batch],
            &[tag("batch-write-2026-12-03", 9)],
            &[snap(7, "2026-12-03 23:00")],
        );
        assert!(c.is_empty(), "a newer snapshot keeps the tag");
        let (c, _) = run(
            &[batch, ("tag.batch.customized-name", "nightly")],
            &[],
            &[snap(7, "2026-12-03 23:00")],
        );
        assert_eq!(c, created(&[("nightly", 7)]));
        let (c, d) = run(
            &[batch, ("tag.num-retained-max", "1")],
            &[
                tag("batch-write-2026-12-01", 1),
                tag("batch-write-2026-12-02", 2),
                tag("manual", 0),
                tag("batch-write-x", 0),
            ],
            &[snap(3, "2026-12-03 10:00")],
        );
        assert_eq!(c, created(&[("batch-write-2026-12-03", 3)]));
        assert_eq!(d, ["batch-write-2026-12-01", "batch-write-2026-12-02"]);
    }

    #[test]
    fn retained_tags_expire() {
        let now = at("2026-12-20 00:00");
        let retained = |name: &str, created: i64, retained: Option<Duration>| ExistingTag {
            name: name.to_owned(),
            snapshot_id: 1,
            create_time_millis: Some(created),
            time_retained: retained,
        };
        let day = Some(Duration::from_secs(86_400));
        let tags = [
            retained("old", now - 2 * DAY, day),
            retained("fresh", now - HOUR, day),
            retained("forever", now - 100 * DAY, None),
            tag("no-create-time", 1),
        ];
        let o = opts(&[("tag.default-time-retained", "1 d")]);
        assert!(o.is_active() && !o.creates_tags());
        assert_eq!(plan(&o, now, &tags, &[]).delete, ["old"]);
        let off = opts(&[
            ("tag.default-time-retained", "1 d"),
            ("tag.time-expire-enabled", "false"),
        ]);
        assert!(!off.is_active());
        assert!(plan(&off, now, &tags, &[]).delete.is_empty());
        // Created tags get the default retention.
        let p = plan(
            &opts(&[PT, ("tag.default-time-retained", "36 h")]),
            now,
            &[],
            &[snap(1, "2026-12-03 10:00")],
        );
        assert_eq!(
            p.create[0].time_retained,
            Some(Duration::from_secs(36 * 3600))
        );
    }

    #[test]
    fn options_and_names() {
        let d = AutoTagOptions::from_options(&BTreeMap::new()).unwrap();
        assert_eq!(d, AutoTagOptions::default());
        assert!(!d.is_active());
        let bad = |pairs: &[(&str, &str)]| {
            let map = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            AutoTagOptions::from_options(&map).unwrap_err()
        };
        assert!(bad(&[("tag.automatic-creation", "sometimes")]).contains("process-time"));
        assert!(bad(&[("tag.creation-period", "weekly")]).contains("two-hours"));
        assert!(bad(&[("tag.creation-delay", "1 d")]).contains("shorter"));
        assert!(
            bad(&[
                ("tag.creation-period", "hourly"),
                ("tag.creation-delay", "60 min")
            ])
            .contains("shorter")
        );
        assert!(bad(&[("tag.num-retained-max", "-1")]).contains("non-negative"));
        assert!(bad(&[("tag.default-time-retained", "1 week")]).contains("unit"));
        assert!(bad(&[("tag.time-expire-enabled", "yes")]).contains("true or false"));
        assert!(bad(&[("tag.creation-period-duration", "0 s")]).contains("1 ms"));

        for (text, ms) in [
            ("10", 10),
            ("10 ms", 10),
            ("2s", 2_000),
            ("3 min", 180_000),
            ("3m", 180_000),
            ("1 h", 3_600_000),
            ("2 hours", 7_200_000),
            ("1d", 86_400_000),
            (" 5 seconds ", 5_000),
        ] {
            assert_eq!(
                parse_duration(text).unwrap().as_millis() as i64,
                ms,
                "{text}"
            );
        }
        assert_eq!(parse_duration("7 µs").unwrap(), Duration::from_micros(7));
        for text in ["", "h", "1.5 h", "-1 s", "1 week", "99999999999999999999"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }

        let daily = opts(&[PT]);
        assert_eq!(daily.tag_time("2026-12-03"), Some(at("2026-12-03 00:00")));
        assert_eq!(
            daily.tag_time("2026-12-03 10"),
            Some(at("2026-12-03 00:00"))
        );
        for not in [
            "2026-2-03",
            "2026-13-01",
            "2026-02-30",
            "20261203",
            "2026-12-03x",
            "v1",
        ] {
            assert_eq!(daily.tag_time(not), None, "{not}");
        }
        let hourly = opts(&[PT, ("tag.creation-period", "hourly")]);
        assert_eq!(
            hourly.tag_time("2026-12-03 10"),
            Some(at("2026-12-03 10:00"))
        );
        assert_eq!(hourly.tag_time("2026-12-03 24"), None);
        assert_eq!(hourly.tag_time("2026-12-03"), None);
        assert_eq!(hourly.tag_name(at("2026-12-03 10:00")), "2026-12-03 10");
        assert_eq!(
            daily.batch_tag_name(at("2026-01-02 23:59")),
            "batch-write-2026-01-02"
        );
    }

    async fn commit_one(t: &Table, id: i64) -> Snapshot {
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        let batch = arrow::array::RecordBatch::try_new(
            crate::storage::testkit::arrow_schema(t.schema()),
            vec![
                Arc::new(arrow::array::Int64Array::from(vec![id])),
                Arc::new(arrow::array::Int32Array::from(vec![1])),
            ],
        )
        .unwrap();
        w.write(batch).await.unwrap();
        let sid = crate::storage::commit::commit_write(w)
            .await
            .unwrap()
            .unwrap();
        t.snapshots().get(sid).await.unwrap().unwrap()
    }

    /// A table on `clock` written without automatic tags (so its commits' own maintenance
    /// leaves the tags alone), and a handle of it whose schema carries `options`: the calls of
    /// `auto_tag_after_commit` under test.
    async fn table(clock: Arc<ManualClock>, options: &[(&str, &str)]) -> (Table, Table) {
        let wh = crate::storage::testkit::warehouse(Some(clock)).await;
        let schema = |options: &[(&str, &str)]| {
            let all = [&[("bucket", "1")], options].concat();
            keyed_schema(&[("v", PaimonType::nullable(TypeKind::Int))], &all)
        };
        let plain = wh.create_table("public", "t", schema(&[])).await.unwrap();
        let tagged = Table::new(
            plain.io().clone(),
            Arc::clone(plain.clock()),
            "public",
            "t",
            Arc::new(schema(options)),
            Arc::clone(plain.shared()),
        );
        (plain, tagged)
    }

    #[tokio::test]
    async fn after_commit_creates_and_expires() {
        let clock = ManualClock::new(at("2026-12-03 10:00"));
        let (t, tagged) = table(
            Arc::clone(&clock),
            &[
                PT,
                ("tag.num-retained-max", "2"),
                ("tag.period-formatter", "without_dashes"),
            ],
        )
        .await;
        t.tags()
            .create("manual", &commit_one(&t, 0).await, 0)
            .await
            .unwrap();
        // The first automatic tag goes on the next commit's snapshot.
        let s = commit_one(&t, 1).await;
        assert_eq!(
            auto_tag_after_commit(&tagged, &s).await.unwrap(),
            ["20261202"]
        );
        let tag = t.tags().get("20261202").await.unwrap().unwrap();
        assert_eq!(
            (tag.snapshot.id, tag.create_time_millis),
            (2, Some(at("2026-12-03 10:00")))
        );
        let s = commit_one(&t, 2).await;
        assert!(auto_tag_after_commit(&tagged, &s).await.unwrap().is_empty());
        clock.set(at("2026-12-04 00:00"));
        let s = commit_one(&t, 3).await;
        assert_eq!(
            auto_tag_after_commit(&tagged, &s).await.unwrap(),
            ["20261203"]
        );
        clock.set(at("2026-12-05 08:00"));
        let s = commit_one(&t, 4).await;
        assert_eq!(
            auto_tag_after_commit(&tagged, &s).await.unwrap(),
            ["20261204"]
        );
        assert_eq!(
            t.tags().names().await.unwrap(),
            ["20261203", "20261204", "manual"]
        );
    }

    #[tokio::test]
    async fn after_commit_in_batch_mode() {
        let clock = ManualClock::new(at("2026-12-03 10:00"));
        let (t, tagged) = table(
            Arc::clone(&clock),
            &[
                ("tag.automatic-creation", "batch"),
                ("tag.default-time-retained", "1 h"),
            ],
        )
        .await;
        let s = commit_one(&t, 1).await;
        assert_eq!(
            auto_tag_after_commit(&tagged, &s).await.unwrap(),
            ["batch-write-2026-12-03"]
        );
        let s = commit_one(&t, 2).await;
        assert_eq!(
            auto_tag_after_commit(&tagged, &s).await.unwrap(),
            ["batch-write-2026-12-03"]
        );
        let tag = t
            .tags()
            .get("batch-write-2026-12-03")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(tag.snapshot.id, 2);
        assert_eq!(tag.time_retained, Some(Duration::from_secs(3600)));
        // Next day: a new tag; yesterday's has outlived its hour.
        clock.set(at("2026-12-04 10:00"));
        let s = commit_one(&t, 3).await;
        assert_eq!(
            auto_tag_after_commit(&tagged, &s).await.unwrap(),
            ["batch-write-2026-12-04"]
        );
        assert_eq!(t.tags().names().await.unwrap(), ["batch-write-2026-12-04"]);
        // Without the options nothing happens.
        let (plain, _) = table(Arc::clone(&clock), &[]).await;
        let s = commit_one(&plain, 1).await;
        assert!(auto_tag_after_commit(&plain, &s).await.unwrap().is_empty());
        assert!(plain.tags().names().await.unwrap().is_empty());
    }
}
