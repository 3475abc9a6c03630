//! The options of Paimon's universal compaction (`maintenance/compact_policy.rs`), with
//! Paimon's keys and defaults (`CoreOptions`, `MemorySize`): the triggers and levels, size
//! ratio and amplification, target file size, early full compaction, off-peak hours, and
//! whether the table needs lookups (`changelog-producer = lookup`, deletion vectors,
//! first-row, `force-lookup`), which decides how level 0 is pushed up.

use std::collections::BTreeMap;

use crate::storage::spec::options::merge::MergeEngine;
use crate::storage::spec::options::{
    self as table_options, ChangelogProducer, parse_duration, parse_memory_size,
};

/// Names of the compaction options (besides `target-file-size` and the options that decide
/// whether a table needs lookups).
pub mod keys {
    pub const COMPACTION_TRIGGER: &str = "num-sorted-run.compaction-trigger";
    pub const STOP_TRIGGER: &str = "num-sorted-run.stop-trigger";
    pub const NUM_LEVELS: &str = "num-levels";
    pub const MAX_SIZE_AMPLIFICATION_PERCENT: &str = "compaction.max-size-amplification-percent";
    pub const SIZE_RATIO: &str = "compaction.size-ratio";
    pub const SMALL_FILE_RATIO: &str = "compaction.small-file-ratio";
    pub const OPTIMIZATION_INTERVAL: &str = "compaction.optimization-interval";
    pub const TOTAL_SIZE_THRESHOLD: &str = "compaction.total-size-threshold";
    pub const INCREMENTAL_SIZE_THRESHOLD: &str = "compaction.incremental-size-threshold";
    pub const OFFPEAK_START_HOUR: &str = "compaction.offpeak.start.hour";
    pub const OFFPEAK_END_HOUR: &str = "compaction.offpeak.end.hour";
    pub const OFFPEAK_RATIO: &str = "compaction.offpeak-ratio";
    pub const FORCE_UP_LEVEL_0: &str = "compaction.force-up-level-0";
    pub const FORCE_REWRITE_ALL_FILES: &str = "compaction.force-rewrite-all-files";
    pub const FORCE_LOOKUP: &str = "force-lookup";
    pub const LOOKUP_COMPACT: &str = "lookup-compact";
    pub const LOOKUP_COMPACT_MAX_INTERVAL: &str = "lookup-compact.max-interval";
    pub const CHAIN_TABLE_ENABLED: &str = "chain-table.enabled";
    pub const FULL_COMPACTION_DELTA_COMMITS: &str = "full-compaction.delta-commits";
}

/// Paimon's default `target-file-size` for primary-key tables (128 MB; append tables use
/// 256 MB, but append tables never reach this policy).
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 128 << 20;

/// The options of the policy, with Paimon's defaults ([`Default`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactOptions {
    /// `num-sorted-run.compaction-trigger` (5): more runs than this always compact.
    pub compaction_trigger: u32,
    /// `num-sorted-run.stop-trigger` (trigger + 3, never below the trigger): more runs than
    /// this stall the writer until the running compaction finishes.
    pub stop_trigger: u32,
    /// `num-levels` (trigger + 1): levels `0..num_levels`, so a full compaction lands at
    /// `num_levels - 1` and, by default, never has to fall back to level 0.
    pub num_levels: u32,
    /// `compaction.max-size-amplification-percent` (200).
    pub max_size_amp_percent: u32,
    /// `compaction.size-ratio` (1): percent of slack when comparing a candidate with the next
    /// run.
    pub size_ratio: u32,
    /// `target-file-size` (128 MB): outputs roll to a new file at this size.
    pub target_file_size: u64,
    /// `compaction.small-file-ratio` (0.7): in a run that is merged alone, files smaller than
    /// `target_file_size * small_file_ratio` are rewritten, larger ones only change level.
    pub small_file_ratio: f64,
    /// `compaction.optimization-interval`: a full compaction at least this often (ms).
    pub optimization_interval_millis: Option<i64>,
    /// `compaction.total-size-threshold`: a bucket smaller than this is always fully compacted.
    pub total_size_threshold: Option<u64>,
    /// `compaction.incremental-size-threshold`: more bytes than this above the max level
    /// force a full compaction.
    pub incremental_size_threshold: Option<u64>,
    /// `compaction.offpeak.start.hour` / `.end.hour` / `compaction.offpeak-ratio`.
    pub off_peak: Option<OffPeakHours>,
    /// Whether level-0 files are pushed up even when universal compaction would wait.
    pub force_level0: ForceLevel0,
    /// `deletion-vectors.enabled`: every compaction may drop deletes (older rows are marked
    /// deleted in deletion vectors instead of being shadowed by delete records).
    pub deletion_vectors: bool,
    /// The table needs lookups (`changelog-producer = lookup`, deletion vectors, `force-lookup`;
    /// not first-row, whose merge is already right): compaction merges a level-0 key's
    /// previous version from the levels below into its output, and reads keep only a key's
    /// version of its lowest level >= 1 (Paimon's `LookupMergeFunction`).
    pub lookup_merge: bool,
    /// `chain-table.enabled`: compactions keep delete records (Paimon's `forceKeepDelete`).
    pub keep_delete: bool,
    /// `compaction.force-rewrite-all-files`: a full compaction rewrites even a bucket that is
    /// already one run at the max level.
    pub force_rewrite_all_files: bool,
    /// `changelog-producer = full-compaction`: a bucket is fully compacted (and its changelog
    /// produced) once it holds this many level-0 files (`full-compaction.delta-commits`,
    /// default 1: after every write). Paimon counts commits of its one writer; a bucket's
    /// level-0 files are the commits that wrote to it.
    pub full_compaction_every: Option<u32>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self::with_trigger(5)
    }
}

/// When level-0 files are forced up although universal compaction found nothing to do
/// (`ForceUpLevel0Compaction`). Tables whose merge needs lookups (`changelog-producer =
/// lookup`, deletion vectors, `merge-engine = first-row`, `force-lookup`) get it because a
/// lookup only consults levels >= 1, so level-0 data must not linger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForceLevel0 {
    /// Plain universal compaction.
    Off,
    /// Every pick that finds nothing else pushes all level-0 runs up (`lookup-compact =
    /// radical`, the default, or `compaction.force-up-level-0 = true`).
    Always,
    /// Only every `max_interval`-th such pick does (`lookup-compact = gentle`,
    /// `lookup-compact.max-interval`, default 2 x trigger, at least the trigger).
    Gentle { max_interval: u32 },
}

/// Off-peak hours (`OffPeakHours`): inside `[start_hour, end_hour)` (wrapping past midnight when
/// start > end) the size ratio is raised by `ratio`, so larger runs join compactions while the
/// cluster is idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffPeakHours {
    pub start_hour: i32,
    pub end_hour: i32,
    pub ratio: u32,
}

impl OffPeakHours {
    /// The extra size ratio at `hour` (0..24, local time).
    pub fn ratio_at(&self, hour: u32) -> u32 {
        let hour = i64::from(hour);
        let (start, end) = (i64::from(self.start_hour), i64::from(self.end_hour));
        let off_peak = if start <= end {
            start <= hour && hour < end
        } else {
            hour < end || start <= hour
        };
        if off_peak { self.ratio } else { 0 }
    }
}

impl CompactOptions {
    /// Paimon's defaults for a compaction trigger of `trigger`: the stop trigger and the level
    /// count follow it as they do when unset.
    pub fn with_trigger(trigger: u32) -> Self {
        Self {
            compaction_trigger: trigger,
            stop_trigger: trigger.saturating_add(3),
            num_levels: trigger.saturating_add(1),
            max_size_amp_percent: 200,
            size_ratio: 1,
            target_file_size: DEFAULT_TARGET_FILE_SIZE,
            small_file_ratio: 0.7,
            optimization_interval_millis: None,
            total_size_threshold: None,
            incremental_size_threshold: None,
            off_peak: None,
            force_level0: ForceLevel0::Off,
            deletion_vectors: false,
            lookup_merge: false,
            keep_delete: false,
            force_rewrite_all_files: false,
            full_compaction_every: None,
        }
    }

    /// The options among a table's `options`, or why one of them is invalid.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<Self, String> {
        Self::from_lookup(|key| options.get(key).map(String::as_str))
    }

    /// The options `get` returns by key, or why one of them is invalid. Values Paimon would
    /// accept but that make no sense for the policy (a trigger below 1, fewer than 2 levels,
    /// negative ratios, a zero target file size) are refused rather than carried along.
    pub fn from_lookup<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<Self, String> {
        let get = |key: &str| get(key).map(str::trim);
        let invalid = |key: &str, value: &str, expected: &str| {
            format!("invalid value '{value}' for table option '{key}': expected {expected}")
        };
        let int = |key: &str, min: i32| -> Result<Option<i32>, String> {
            let Some(v) = get(key) else { return Ok(None) };
            match v.parse::<i32>() {
                Ok(n) if n >= min => Ok(Some(n)),
                _ if min == i32::MIN => Err(invalid(key, v, "an integer")),
                _ => Err(invalid(key, v, &format!("an integer of at least {min}"))),
            }
        };
        let unsigned = |key: &str, min: u32| -> Result<Option<u32>, String> {
            Ok(int(key, min as i32)?.map(|n| n as u32))
        };
        let boolean = |key: &str| -> Result<bool, String> {
            let Some(v) = get(key) else { return Ok(false) };
            match v.to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(invalid(key, v, "true or false")),
            }
        };
        let memory = |key: &str, min: u64| -> Result<Option<u64>, String> {
            let Some(v) = get(key) else { return Ok(None) };
            match parse_memory_size(v) {
                Ok(n) if n >= min => Ok(Some(n)),
                Ok(_) => Err(invalid(key, v, &format!("a size of at least {min} bytes"))),
                Err(e) => Err(invalid(key, v, &e)),
            }
        };

        let trigger = unsigned(keys::COMPACTION_TRIGGER, 1)?.unwrap_or(5);
        let mut out = Self::with_trigger(trigger);
        // CoreOptions.numSortedRunStopTrigger: never below the compaction trigger.
        if let Some(stop) = unsigned(keys::STOP_TRIGGER, 0)? {
            out.stop_trigger = stop;
        }
        out.stop_trigger = out.stop_trigger.max(trigger);
        if let Some(levels) = unsigned(keys::NUM_LEVELS, 2)? {
            out.num_levels = levels;
        }
        if let Some(amp) = unsigned(keys::MAX_SIZE_AMPLIFICATION_PERCENT, 0)? {
            out.max_size_amp_percent = amp;
        }
        if let Some(ratio) = unsigned(keys::SIZE_RATIO, 0)? {
            out.size_ratio = ratio;
        }
        if let Some(size) = memory(table_options::TARGET_FILE_SIZE, 1)? {
            out.target_file_size = size;
        }
        if let Some(v) = get(keys::SMALL_FILE_RATIO) {
            match v.parse::<f64>() {
                Ok(r) if r.is_finite() && r >= 0.0 => out.small_file_ratio = r,
                _ => {
                    return Err(invalid(keys::SMALL_FILE_RATIO, v, "a non-negative number"));
                }
            }
        }
        if let Some(v) = get(keys::OPTIMIZATION_INTERVAL) {
            let d = parse_duration(v).map_err(|e| invalid(keys::OPTIMIZATION_INTERVAL, v, &e))?;
            out.optimization_interval_millis =
                Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        }
        out.total_size_threshold = memory(keys::TOTAL_SIZE_THRESHOLD, 0)?;
        out.incremental_size_threshold = memory(keys::INCREMENTAL_SIZE_THRESHOLD, 0)?;

        // OffPeakHours.create: disabled by -1 on either end or an empty window.
        let start = int(keys::OFFPEAK_START_HOUR, i32::MIN)?.unwrap_or(-1);
        let end = int(keys::OFFPEAK_END_HOUR, i32::MIN)?.unwrap_or(-1);
        let ratio = unsigned(keys::OFFPEAK_RATIO, 0)?.unwrap_or(0);
        if start != -1 && end != -1 && start != end {
            out.off_peak = Some(OffPeakHours {
                start_hour: start,
                end_hour: end,
                ratio,
            });
        }

        // MergeTreeCompactManagerFactory.createCompactStrategy and CoreOptions.lookupStrategy.
        let first_row = get(table_options::MERGE_ENGINE)
            .and_then(MergeEngine::parse)
            .is_some_and(|e| e == MergeEngine::FirstRow);
        let producer = get(table_options::CHANGELOG_PRODUCER).and_then(ChangelogProducer::parse);
        let lookup_changelog = producer == Some(ChangelogProducer::Lookup);
        out.deletion_vectors = boolean(table_options::DELETION_VECTORS)?;
        let need_lookup =
            first_row || lookup_changelog || out.deletion_vectors || boolean(keys::FORCE_LOOKUP)?;
        out.lookup_merge = need_lookup && !first_row;
        let gentle = match get(keys::LOOKUP_COMPACT) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("radical") => false,
            Some(v) if v.eq_ignore_ascii_case("gentle") => true,
            Some(v) => return Err(invalid(keys::LOOKUP_COMPACT, v, "radical or gentle")),
        };
        let max_interval = unsigned(keys::LOOKUP_COMPACT_MAX_INTERVAL, 0)?
            .unwrap_or(trigger.saturating_mul(2))
            .max(trigger);
        out.force_level0 = if need_lookup {
            if gentle {
                ForceLevel0::Gentle { max_interval }
            } else {
                ForceLevel0::Always
            }
        } else if boolean(keys::FORCE_UP_LEVEL_0)? {
            ForceLevel0::Always
        } else {
            ForceLevel0::Off
        };
        out.keep_delete = boolean(keys::CHAIN_TABLE_ENABLED)?;
        out.force_rewrite_all_files = boolean(keys::FORCE_REWRITE_ALL_FILES)?;
        let full_changelog = producer == Some(ChangelogProducer::FullCompaction);
        let delta_commits = unsigned(keys::FULL_COMPACTION_DELTA_COMMITS, 1)?;
        out.full_compaction_every = full_changelog.then(|| delta_commits.unwrap_or(1));
        Ok(out)
    }

    /// Files at least this large are moved to the output level instead of rewritten when their
    /// run is merged alone (`CoreOptions.compactionFileSize`): compression makes outputs come
    /// out a little under the target, and without the slack they would be rewritten forever.
    pub fn compaction_file_size(&self) -> u64 {
        (self.target_file_size as f64 * self.small_file_ratio) as u64
    }
}
