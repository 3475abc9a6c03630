//! Snapshot expiry as a table's options set it (Paimon's `snapshot.num-retained.min/max`,
//! `snapshot.time-retained`, `snapshot.expire.limit`, and the `changelog.*` retention that
//! decouples changelogs), with Paimon's defaults and the ones tarn writes into the tables it
//! creates; `sys.expire_snapshots`' arguments override them. Which snapshots and files expire
//! is `maintenance/expire.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::storage::StorageError;
use crate::storage::spec::options::{self, parse_duration};

/// Options tarn writes into the tables it creates (Paimon's own defaults keep snapshots for an
/// hour without an upper bound on their number).
pub const TARN_DEFAULT_OPTIONS: &[(&str, &str)] = &[
    (options::SNAPSHOT_NUM_RETAINED_MIN, "10"),
    (options::SNAPSHOT_NUM_RETAINED_MAX, "1000"),
    (options::SNAPSHOT_TIME_RETAINED, "1h"),
];

/// Paimon's default of `snapshot.num-retained.min`.
pub const PAIMON_RETAIN_MIN: i64 = 10;
/// Paimon's default of `snapshot.num-retained.max` (`Integer.MAX_VALUE`).
pub const PAIMON_RETAIN_MAX: i64 = i32::MAX as i64;
/// Paimon's default of `snapshot.time-retained`.
pub const PAIMON_TIME_RETAINED: Duration = Duration::from_secs(3600);
/// Paimon's default of `snapshot.expire.limit`.
pub const PAIMON_EXPIRE_LIMIT: i64 = 50;

/// How snapshots of a table expire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpireConfig {
    /// The newest this many snapshots are always kept (at least 1).
    pub retain_min: i64,
    /// Snapshots beyond the newest this many expire whatever their age.
    pub retain_max: i64,
    /// A snapshot expires once its successor is older than this...
    pub time_retained: Duration,
    /// ...or, when set, once its successor was committed before this time (the procedure's
    /// `older_than`; it replaces `time_retained`).
    pub older_than_millis: Option<i64>,
    /// At most this many snapshots per run.
    pub max_deletes: i64,
    /// The table keeps changelogs longer than snapshots (`changelog.num-retained.*`,
    /// `changelog.time-retained`): Paimon then moves changelogs to `changelog/`, which tarn does
    /// not implement, so such tables are not expired.
    pub changelog_decoupled: bool,
}

impl Default for ExpireConfig {
    /// Paimon's defaults.
    fn default() -> Self {
        Self {
            retain_min: PAIMON_RETAIN_MIN,
            retain_max: PAIMON_RETAIN_MAX,
            time_retained: PAIMON_TIME_RETAINED,
            older_than_millis: None,
            max_deletes: PAIMON_EXPIRE_LIMIT,
            changelog_decoupled: false,
        }
    }
}

impl ExpireConfig {
    /// The configuration a table's options give (Paimon's defaults for options it lacks).
    pub fn from_options(opts: &BTreeMap<String, String>) -> Result<Self, StorageError> {
        let int = |key: &str| -> Result<Option<i64>, StorageError> {
            opts.get(key)
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        StorageError::InvalidSchema(format!(
                            "table option {key} = '{v}' is not an integer"
                        ))
                    })
                })
                .transpose()
        };
        let duration = |key: &str| -> Result<Option<Duration>, StorageError> {
            opts.get(key)
                .map(|v| {
                    parse_duration(v).ok().ok_or_else(|| {
                        StorageError::InvalidSchema(format!(
                            "table option {key} = '{v}' is not a duration (such as '1h', \
                             '30 min', '10 s')"
                        ))
                    })
                })
                .transpose()
        };
        let d = Self::default();
        let retain_min = int(options::SNAPSHOT_NUM_RETAINED_MIN)?.unwrap_or(d.retain_min);
        let retain_max = int(options::SNAPSHOT_NUM_RETAINED_MAX)?.unwrap_or(d.retain_max);
        let time_retained = duration(options::SNAPSHOT_TIME_RETAINED)?.unwrap_or(d.time_retained);
        // Paimon's ExpireConfig: decoupled when a changelog option asks for more than the
        // snapshot one.
        let changelog_decoupled = int(options::CHANGELOG_NUM_RETAINED_MAX)?
            .is_some_and(|n| n > retain_max)
            || int(options::CHANGELOG_NUM_RETAINED_MIN)?.is_some_and(|n| n > retain_min)
            || duration(options::CHANGELOG_TIME_RETAINED)?.is_some_and(|t| t > time_retained);
        Ok(Self {
            retain_min,
            retain_max,
            time_retained,
            older_than_millis: None,
            max_deletes: int(options::SNAPSHOT_EXPIRE_LIMIT)?.unwrap_or(d.max_deletes),
            changelog_decoupled,
        })
    }

    /// The table's configuration with the arguments of Paimon's `sys.expire_snapshots(table,
    /// retain_max, retain_min, older_than, max_deletes)` procedure applied (`None`: the table's).
    pub fn with_procedure_args(
        mut self,
        retain_max: Option<i64>,
        retain_min: Option<i64>,
        older_than_millis: Option<i64>,
        max_deletes: Option<i64>,
    ) -> Self {
        self.retain_max = retain_max.unwrap_or(self.retain_max);
        self.retain_min = retain_min.unwrap_or(self.retain_min);
        self.older_than_millis = older_than_millis.or(self.older_than_millis);
        self.max_deletes = max_deletes.unwrap_or(self.max_deletes);
        self
    }

    /// Why the configuration cannot be used, if it cannot (Paimon's checks).
    pub fn check(&self) -> Result<(), String> {
        if self.retain_min < 1 {
            return Err(format!(
                "the minimum number of snapshots to retain must be at least 1, not {}",
                self.retain_min
            ));
        }
        if self.retain_max < self.retain_min {
            return Err(format!(
                "retain_max ({}) must not be less than retain_min ({})",
                self.retain_max, self.retain_min
            ));
        }
        Ok(())
    }

    /// Snapshots whose successor was committed before this time may expire.
    pub fn cutoff_millis(&self, now_millis: i64) -> i64 {
        self.older_than_millis.unwrap_or_else(|| {
            now_millis
                .saturating_sub(i64::try_from(self.time_retained.as_millis()).unwrap_or(i64::MAX))
        })
    }
}
