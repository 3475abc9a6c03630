//! Partition expiration: the policy as a pure function, and the run and the after-commit hook
//! on an in-memory warehouse with a manual clock.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{expire_after_commit, expire_partitions, expired};
use crate::storage::io::clock::ManualClock;
use crate::storage::meta::snapshot::CommitKind;
use crate::storage::spec::options::partition::{Formatter, PartitionExpireOptions, TimeExtractor};
use crate::storage::testkit::{self, START, rows_at, upsert};

const DAY: i64 = 86_400_000;

fn options(days: u64, formatter: Option<&str>, pattern: Option<&str>) -> PartitionExpireOptions {
    PartitionExpireOptions {
        expiration_time: Duration::from_secs(days * 86_400),
        check_interval: Duration::from_secs(3600),
        max_num: 100,
        time: TimeExtractor {
            pattern: pattern.map(str::to_owned),
            formatter: formatter.map(|f| Formatter::parse(f).unwrap()),
        },
    }
}

fn millis(date_time: &str) -> i64 {
    chrono::NaiveDateTime::parse_from_str(date_time, "%Y-%m-%d %H:%M:%S")
        .unwrap()
        .and_utc()
        .timestamp_millis()
}

fn parts(rows: &[&[Option<&str>]]) -> Vec<Vec<Option<String>>> {
    rows.iter()
        .map(|r| r.iter().map(|v| v.map(str::to_owned)).collect())
        .collect()
}

#[test]
fn partitions_older_than_now_minus_the_expiration_time_expire() {
    let keys = vec!["dt".to_owned()];
    let p = parts(&[
        &[Some("2026-01-10")],
        &[Some("2026-01-08")],
        &[Some("2026-01-09")],
        &[Some("not a date")],
        &[None],
        &[Some("2026-01-07")],
    ]);
    let now = millis("2026-01-10 12:00:00");
    // Older than 2026-01-09 12:00: the 7th and 8th (sorted by value), and the 9th (midnight).
    assert_eq!(
        expired(&keys, &p, &options(1, None, None), now),
        vec![5, 1, 2]
    );
    assert_eq!(expired(&keys, &p, &options(2, None, None), now), vec![5, 1]);
    // At most max_num, the first by value.
    let mut two = options(1, None, None);
    two.max_num = 2;
    assert_eq!(expired(&keys, &p, &two, now), vec![5, 1]);
    // A partition exactly at the limit stays.
    assert_eq!(
        expired(
            &keys,
            &p,
            &options(1, None, None),
            millis("2026-01-09 00:00:00") + DAY
        ),
        vec![5, 1]
    );
}

#[test]
fn times_spread_over_several_partition_columns() {
    let keys = vec!["day".to_owned(), "hour".to_owned()];
    let p = parts(&[
        &[Some("20260110"), Some("03")],
        &[Some("20260110"), Some("09")],
        &[Some("20260109"), Some("23")],
    ]);
    let o = PartitionExpireOptions {
        expiration_time: Duration::from_secs(6 * 3600),
        ..options(0, Some("yyyyMMdd HH"), Some("$day $hour"))
    };
    assert_eq!(
        expired(&keys, &p, &o, millis("2026-01-10 10:00:00")),
        vec![2, 0]
    );
}

#[tokio::test]
async fn expired_partitions_are_dropped_in_one_overwrite_snapshot() {
    let clock = ManualClock::new(START);
    let t = testkit::table_with_clock(&[], clock.clone()).await;
    upsert(
        &t,
        &[
            (1, 1i64, "2026-01-01"),
            (1, 2, "2026-01-02"),
            (1, 3, "2026-01-03"),
        ],
    )
    .await;
    let before = t.snapshots().latest().await.unwrap().unwrap();
    let now = millis("2026-01-02 23:00:00");
    let dropped = expire_partitions(&t, &options(1, None, None), now)
        .await
        .unwrap();
    assert_eq!(dropped, ["dt=2026-01-01"]);
    let after = t.snapshots().latest().await.unwrap().unwrap();
    assert_eq!(
        (after.id, after.commit_kind),
        (before.id + 1, CommitKind::Overwrite)
    );
    let expected: BTreeMap<(String, i64), i64> = [
        (("2026-01-02".to_owned(), 1), 2),
        (("2026-01-03".to_owned(), 1), 3),
    ]
    .into();
    assert_eq!(rows_at(&t, &after).await, expected);
    // Nothing more to expire: no snapshot.
    assert!(
        expire_partitions(&t, &options(1, None, None), now)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(t.snapshots().latest().await.unwrap().unwrap().id, after.id);
}

#[tokio::test]
async fn after_a_commit_the_table_s_options_expire_partitions_once_per_check_interval() {
    // The clock's time: START is 2027-01-15; partitions a week and a day old.
    let clock = ManualClock::new(START);
    let day = |d: i64| {
        chrono::DateTime::from_timestamp_millis(START - d * DAY)
            .unwrap()
            .format("%Y%m%d")
            .to_string()
    };
    let (old, recent, today) = (day(7), day(1), day(0));
    let t = testkit::table_with_clock(
        &[
            ("partition.expiration-time", "3 d"),
            ("partition.timestamp-formatter", "yyyyMMdd"),
            ("partition.expiration-check-interval", "1 h"),
        ],
        clock.clone(),
    )
    .await;
    assert_eq!(expire_after_commit(&t).await.unwrap(), Some(Vec::new()));
    upsert(
        &t,
        &[
            (1, 1i64, old.as_str()),
            (1, 2, recent.as_str()),
            (1, 3, today.as_str()),
        ],
    )
    .await;
    // Checked a moment ago: not again within the interval.
    assert_eq!(expire_after_commit(&t).await.unwrap(), None);
    clock.advance(3_601_000);
    assert_eq!(
        expire_after_commit(&t).await.unwrap(),
        Some(vec![format!("dt={old}")])
    );
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    assert_eq!(latest.commit_kind, CommitKind::Overwrite);
    assert_eq!(
        rows_at(&t, &latest)
            .await
            .keys()
            .map(|(dt, _)| dt.clone())
            .collect::<Vec<_>>(),
        vec![recent.clone(), today.clone()]
    );
    // Four days later the other two are old enough.
    clock.advance(4 * DAY);
    assert_eq!(
        expire_after_commit(&t).await.unwrap(),
        Some(vec![format!("dt={recent}"), format!("dt={today}")])
    );
}
