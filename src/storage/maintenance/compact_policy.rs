//! Paimon's universal compaction policy: which sorted runs of one bucket to merge now, and at
//! which level the result lands.
//!
//! A primary-key bucket is an LSM tree. Every level-0 file is a sorted run of its own (each
//! commit flushes one), every level >= 1 is one sorted run. A read merges all runs, so the run
//! count is the read amplification; every merge rewrites bytes, which is the write amplification.
//! Paimon trades the two off with RocksDB's universal compaction, and tarn must make the same
//! choices: files it writes are read and compacted by Flink/Spark writers too, and a different
//! level assignment would make their next compaction (or our reads of their files) disagree.
//!
//! This module is the decision and nothing else: pure functions over [`FileSummary`]s. No I/O,
//! no clock (time comes in as a [`PickTime`]), no randomness, so it is tested exhaustively and
//! simulated (`storage::compact_sim`). The compaction executor maps its `DataFileMeta` to
//! [`FileSummary`], calls [`pick`] (or [`pick_full`] for `CALL sys.compact`) and runs the
//! [`CompactPlan`].
//!
//! Sources (Paimon `paimon-core/src/main/java/org/apache/paimon/`): `mergetree/Levels.java`
//! ([`runs`]), `mergetree/compact/UniversalCompaction.java` ([`pick`]),
//! `mergetree/compact/EarlyFullCompaction.java`, `mergetree/compact/ForceUpLevel0Compaction.java`,
//! `mergetree/compact/OffPeakHours.java`, `mergetree/compact/CompactStrategy.java`
//! ([`pick_full`]), `mergetree/compact/MergeTreeCompactManager.java` (the trivial-unit filter,
//! drop-delete, [`should_stall`]), `mergetree/compact/MergeTreeCompactManagerFactory.java`
//! (which strategy a table gets) and `paimon-api/.../CoreOptions.java`, `options/MemorySize.java`
//! (options and defaults).

use std::collections::BTreeMap;

pub use crate::storage::spec::options::compaction::{CompactOptions, ForceLevel0};
#[cfg(test)]
use crate::storage::spec::options::compaction::{OffPeakHours, keys};

impl CompactOptions {
    fn off_peak_ratio(&self, hour: u32) -> u32 {
        self.off_peak.map_or(0, |o| o.ratio_at(hour))
    }

    fn early_full_enabled(&self) -> bool {
        self.optimization_interval_millis.is_some()
            || self.total_size_threshold.is_some()
            || self.incremental_size_threshold.is_some()
    }
}

/// What the policy needs to know about one data file of a bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    pub name: String,
    pub level: u32,
    /// Bytes on storage (`file_size`): the policy weighs runs by what a merge reads.
    pub size: u64,
    pub min_sequence: i64,
    pub max_sequence: i64,
    /// `creation_time` in epoch milliseconds, on the same clock as [`PickTime::epoch_millis`]
    /// (0 when unknown): breaks ties between level-0 files and seeds the last full compaction.
    pub creation_millis: i64,
}

/// One sorted run: a single level-0 file, or all files of one level >= 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub level: u32,
    /// For level >= 1, in the caller's order (Paimon orders them by key; the policy never
    /// looks inside a run).
    pub files: Vec<FileSummary>,
}

impl Run {
    /// Total bytes of the run.
    pub fn size(&self) -> u64 {
        self.files
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.size))
    }
}

/// A bucket's files as sorted runs, the way `Levels.levelSortedRuns` lists them: each level-0
/// file as its own run, newest first, then each non-empty level >= 1 as one run, ascending.
///
/// "Newest" is the larger max sequence number; ties (two writers of one bucket) go to the
/// smaller min sequence number, then the older creation time, then the file name, as in
/// `Levels`' comparator, so the order never depends on the input order.
pub fn runs(files: &[FileSummary]) -> Vec<Run> {
    let mut level0: Vec<&FileSummary> = files.iter().filter(|f| f.level == 0).collect();
    level0.sort_by(|a, b| {
        b.max_sequence
            .cmp(&a.max_sequence)
            .then(a.min_sequence.cmp(&b.min_sequence))
            .then(a.creation_millis.cmp(&b.creation_millis))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut higher: BTreeMap<u32, Vec<FileSummary>> = BTreeMap::new();
    for f in files.iter().filter(|f| f.level > 0) {
        higher.entry(f.level).or_default().push(f.clone());
    }
    let mut out: Vec<Run> = level0
        .into_iter()
        .map(|f| Run {
            level: 0,
            files: vec![f.clone()],
        })
        .collect();
    out.extend(
        higher
            .into_iter()
            .map(|(level, files)| Run { level, files }),
    );
    out
}

/// The moment of a pick: the policy reads no clock of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PickTime {
    /// For `compaction.optimization-interval`.
    pub epoch_millis: i64,
    /// Local hour of day (0..24), for off-peak hours.
    pub local_hour: u32,
}

/// What Paimon's strategy remembers between picks of one bucket's writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PickState {
    /// When the last full compaction was picked (`EarlyFullCompaction.lastFullCompaction`).
    pub last_full_compaction_millis: Option<i64>,
    /// Picks that found nothing since the last gentle level-0 push
    /// (`ForceUpLevel0Compaction.compactTriggerCount`).
    pub idle_picks: u32,
}

impl PickState {
    /// The state of a writer that restores a bucket of `files`: the last full compaction is
    /// estimated as the newest creation time at the configured max level
    /// (`MergeTreeCompactManagerFactory.estimateLastFullCompactionTime`).
    pub fn restored(files: &[FileSummary], opts: &CompactOptions) -> Self {
        let max_level = opts.num_levels.saturating_sub(1);
        let newest = files
            .iter()
            .filter(|f| f.level == max_level)
            .map(|f| f.creation_millis)
            .max()
            .filter(|&t| t >= 0);
        Self {
            last_full_compaction_millis: newest,
            idle_picks: 0,
        }
    }
}

/// Why a plan was picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PickReason {
    /// `compaction.optimization-interval` elapsed.
    OptimizationInterval,
    /// The bucket is below `compaction.total-size-threshold`.
    TotalSizeThreshold,
    /// Runs above the max level exceed `compaction.incremental-size-threshold`.
    IncrementalSizeThreshold,
    /// Newer runs outweigh the oldest by more than the max size amplification.
    SizeAmplification,
    /// Newest runs of similar size.
    SizeRatio,
    /// More runs than the compaction trigger.
    RunCount,
    /// Level-0 files pushed up ([`ForceLevel0`]).
    ForceLevel0,
    /// [`pick_full`].
    Full,
    /// `changelog-producer = full-compaction`: enough level-0 files for the next full
    /// compaction ([`CompactOptions::full_compaction_every`]).
    FullChangelog,
}

/// A compaction to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactPlan {
    /// The files to merge: those of the `runs` newest runs, newest run first.
    pub inputs: Vec<FileSummary>,
    /// How many sorted runs `inputs` spans (the newest ones).
    pub runs: usize,
    /// Level of the output files; never 0.
    pub output_level: u32,
    /// Delete records may be dropped: no older data can remain outside the output (or
    /// deletion vectors mark it), so a delete has nothing left to shadow.
    pub drop_delete: bool,
    /// Rewrite each input on its own instead of merging them (a full compaction of a bucket
    /// that is already one run at the max level: Paimon's `FileRewriteCompactTask`).
    pub file_rewrite: bool,
    pub reason: PickReason,
}

/// A pick before it becomes a plan: the newest `runs` runs go to `output_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unit {
    runs: usize,
    output_level: u32,
    reason: PickReason,
}

/// The max level of a bucket: the configured one, or higher when files already sit higher
/// (Paimon's `Levels` keeps such levels instead of failing).
pub fn max_level(runs: &[Run], opts: &CompactOptions) -> u32 {
    let highest = runs.iter().map(|r| r.level).max().unwrap_or(0);
    opts.num_levels.saturating_sub(1).max(highest).max(1)
}

/// Whether the writer must wait for the running compaction before adding a file: more runs
/// than the stop trigger (`MergeTreeCompactManager.shouldWaitForLatestCompaction`). This is
/// what bounds read amplification when compaction cannot keep up.
pub fn should_stall(runs: &[Run], opts: &CompactOptions) -> bool {
    runs.len() as u64 > u64::from(opts.stop_trigger)
}

/// Whether a commit must wait for the running compaction: more than one run over the stop
/// trigger (`shouldWaitForPreparingCheckpoint`).
pub fn should_wait_before_commit(runs: &[Run], opts: &CompactOptions) -> bool {
    runs.len() as u64 > u64::from(opts.stop_trigger) + 1
}

/// Picks the compaction a bucket's writer should run now, if any, as Paimon's universal
/// strategy does (wrapped in `ForceUpLevel0Compaction` when the table asks for it), updating
/// `state` as Paimon does. Call it only when no compaction of the bucket is running.
///
/// Order: an early full compaction (optimization interval, total / incremental size
/// threshold), then size amplification, then size ratio, then run count, then (if configured)
/// pushing level-0 files up. Every plan takes a prefix of `runs` (newest first) and writes
/// above it: to the max level when it takes every run, otherwise one below the level of the
/// first run it leaves, never to level 0.
pub fn pick(
    runs: &[Run],
    opts: &CompactOptions,
    state: &mut PickState,
    now: PickTime,
) -> Option<CompactPlan> {
    let max_level = max_level(runs, opts);
    if let Some(every) = opts.full_compaction_every {
        let level0 = runs.iter().filter(|r| r.level == 0).count();
        if level0 >= every as usize {
            let mut plan = pick_full(runs, opts, |_| false)?;
            plan.reason = PickReason::FullChangelog;
            return Some(plan);
        }
    }
    let unit = match universal(runs, opts, max_level, state, now) {
        Some(unit) => Some(unit),
        None => match opts.force_level0 {
            ForceLevel0::Off => None,
            ForceLevel0::Always => force_pick_level0(runs, opts, max_level, now.local_hour),
            ForceLevel0::Gentle { max_interval } => {
                state.idle_picks += 1;
                if state.idle_picks >= max_interval {
                    state.idle_picks = 0;
                    force_pick_level0(runs, opts, max_level, now.local_hour)
                } else {
                    None
                }
            }
        },
    }?;
    // Paimon restarts the optimization interval whenever a pick takes every run (size
    // amplification, an early full compaction, or a size-ratio pick that reached the end),
    // even if the manager then discards the unit below.
    if opts.early_full_enabled() && unit.runs == runs.len() {
        state.last_full_compaction_millis = Some(now.epoch_millis);
    }
    let inputs: Vec<FileSummary> = runs[..unit.runs]
        .iter()
        .flat_map(|r| r.files.iter().cloned())
        .collect();
    // MergeTreeCompactManager.triggerCompaction: nothing to merge, or a single file that is
    // already where it would go, is no compaction. (Only the empty case is reachable today:
    // universal picks take two or more runs, level-0 pushes move level-0 files up.)
    if inputs.is_empty() || (inputs.len() == 1 && inputs[0].level == unit.output_level) {
        return None;
    }
    Some(CompactPlan {
        inputs,
        runs: unit.runs,
        output_level: unit.output_level,
        drop_delete: drop_delete(runs, opts, unit.output_level),
        file_rewrite: false,
        reason: unit.reason,
    })
}

/// A forced full compaction (`CALL sys.compact`, `CompactStrategy.pickFullCompaction`):
/// every run to the max level. A bucket that is already one run at the max level needs
/// nothing, except for files that must be rewritten on their own: all of them with
/// `compaction.force-rewrite-all-files`, else those `needs_rewrite` names (Paimon: files
/// with a deletion vector, files with expired records).
pub fn pick_full(
    runs: &[Run],
    opts: &CompactOptions,
    needs_rewrite: impl Fn(&FileSummary) -> bool,
) -> Option<CompactPlan> {
    let max_level = max_level(runs, opts);
    let [only] = runs else {
        if runs.is_empty() {
            return None;
        }
        return Some(CompactPlan {
            inputs: runs.iter().flat_map(|r| r.files.iter().cloned()).collect(),
            runs: runs.len(),
            output_level: max_level,
            drop_delete: drop_delete(runs, opts, max_level),
            file_rewrite: false,
            reason: PickReason::Full,
        });
    };
    if only.level != max_level {
        return Some(CompactPlan {
            inputs: only.files.clone(),
            runs: 1,
            output_level: max_level,
            drop_delete: drop_delete(runs, opts, max_level),
            file_rewrite: false,
            reason: PickReason::Full,
        });
    }
    let inputs: Vec<FileSummary> = only
        .files
        .iter()
        .filter(|f| opts.force_rewrite_all_files || needs_rewrite(f))
        .cloned()
        .collect();
    (!inputs.is_empty()).then(|| CompactPlan {
        inputs,
        runs: 1,
        output_level: max_level,
        drop_delete: drop_delete(runs, opts, max_level),
        file_rewrite: true,
        reason: PickReason::Full,
    })
}

/// `MergeTreeCompactManager`'s rule: deletes can go when the output is the oldest data of the
/// bucket (at or above every non-empty level), or when deletion vectors handle older rows.
fn drop_delete(runs: &[Run], opts: &CompactOptions, output_level: u32) -> bool {
    let highest = runs.iter().map(|r| r.level).max().unwrap_or(0);
    !opts.keep_delete && output_level != 0 && (output_level >= highest || opts.deletion_vectors)
}

/// `UniversalCompaction.pick`.
fn universal(
    runs: &[Run],
    opts: &CompactOptions,
    max_level: u32,
    state: &PickState,
    now: PickTime,
) -> Option<Unit> {
    early_full(runs, opts, max_level, state, now)
        .or_else(|| pick_for_size_amp(runs, opts, max_level))
        .or_else(|| pick_for_size_ratio(runs, opts, max_level, now.local_hour))
        .or_else(|| {
            let trigger = opts.compaction_trigger as usize;
            // Enough of the newest runs to get back to the trigger, grown by size ratio.
            (runs.len() > trigger).then(|| {
                let candidates = runs.len() - trigger + 1;
                let unit =
                    size_ratio_from(runs, opts, max_level, candidates, false, now.local_hour);
                Unit {
                    reason: PickReason::RunCount,
                    ..unit.expect("two or more candidates always make a unit")
                }
            })
        })
}

/// `EarlyFullCompaction.tryFullCompact`: everything to the max level when the optimization
/// interval has elapsed, the bucket is small, or too much sits above the max level.
fn early_full(
    runs: &[Run],
    opts: &CompactOptions,
    max_level: u32,
    state: &PickState,
    now: PickTime,
) -> Option<Unit> {
    if runs.len() == 1 {
        return None;
    }
    let all = |reason| {
        Some(Unit {
            runs: runs.len(),
            output_level: max_level,
            reason,
        })
    };
    if let Some(interval) = opts.optimization_interval_millis {
        let due = state
            .last_full_compaction_millis
            .is_none_or(|last| now.epoch_millis.saturating_sub(last) > interval);
        if due {
            return all(PickReason::OptimizationInterval);
        }
    }
    if let Some(threshold) = opts.total_size_threshold {
        let total = runs.iter().fold(0u64, |s, r| s.saturating_add(r.size()));
        if total < threshold {
            return all(PickReason::TotalSizeThreshold);
        }
    }
    if let Some(threshold) = opts.incremental_size_threshold {
        let incremental = runs
            .iter()
            .filter(|r| r.level != max_level)
            .fold(0u64, |s, r| s.saturating_add(r.size()));
        if incremental > threshold {
            return all(PickReason::IncrementalSizeThreshold);
        }
    }
    None
}

/// `UniversalCompaction.pickForSizeAmp`: once there are at least `trigger` runs, merge all of
/// them when the newer runs together exceed the oldest by more than the max size
/// amplification: that much space (and read work) is spent on data that may be superseded.
fn pick_for_size_amp(runs: &[Run], opts: &CompactOptions, max_level: u32) -> Option<Unit> {
    if runs.len() < opts.compaction_trigger as usize {
        return None;
    }
    let (newer, oldest) = runs.split_at(runs.len() - 1);
    let candidate = newer.iter().map(|r| u128::from(r.size())).sum::<u128>();
    let oldest = u128::from(oldest[0].size());
    (candidate * 100 > u128::from(opts.max_size_amp_percent) * oldest).then_some(Unit {
        runs: runs.len(),
        output_level: max_level,
        reason: PickReason::SizeAmplification,
    })
}

/// `UniversalCompaction.pickForSizeRatio(maxLevel, runs)`: once there are at least `trigger`
/// runs, merge the newest runs while each next one is not much bigger than all before it.
fn pick_for_size_ratio(
    runs: &[Run],
    opts: &CompactOptions,
    max_level: u32,
    hour: u32,
) -> Option<Unit> {
    if runs.len() < opts.compaction_trigger as usize {
        return None;
    }
    size_ratio_from(runs, opts, max_level, 1, false, hour)
}

/// `UniversalCompaction.pickForSizeRatio(maxLevel, runs, candidateCount, forcePick)`: starting
/// from the newest `candidates` runs, take the next run while it is at most `size_ratio`
/// percent (plus the off-peak ratio) bigger than the candidates together. Once a compaction is
/// decided (two or more runs, or forced), runs at levels 0 and 1 are taken regardless of size:
/// stopping before them would leave no level between the output and them.
fn size_ratio_from(
    runs: &[Run],
    opts: &CompactOptions,
    max_level: u32,
    candidates: usize,
    force: bool,
    hour: u32,
) -> Option<Unit> {
    let mut count = candidates;
    let mut candidate_size = runs[..count]
        .iter()
        .fold(0u64, |s, r| s.saturating_add(r.size()));
    let mut triggered = force || count > 1;
    // Java's double arithmetic, operation for operation.
    let percent = 100.0 + f64::from(opts.size_ratio) + f64::from(opts.off_peak_ratio(hour));
    for next in &runs[count..] {
        let next_size = next.size();
        if (candidate_size as f64) * percent / 100.0 < next_size as f64
            && (!triggered || next.level > 1)
        {
            break;
        }
        candidate_size = candidate_size.saturating_add(next_size);
        count += 1;
        triggered = true;
    }
    triggered.then(|| {
        let (runs_taken, output_level) = create_unit(runs, max_level, count);
        Unit {
            runs: runs_taken,
            output_level,
            reason: if force {
                PickReason::ForceLevel0
            } else {
                PickReason::SizeRatio
            },
        }
    })
}

/// `UniversalCompaction.forcePickL0`: all level-0 runs, grown by size ratio.
fn force_pick_level0(
    runs: &[Run],
    opts: &CompactOptions,
    max_level: u32,
    hour: u32,
) -> Option<Unit> {
    let level0 = runs.iter().take_while(|r| r.level == 0).count();
    if level0 == 0 {
        return None;
    }
    size_ratio_from(runs, opts, max_level, level0, true, hour)
}

/// `UniversalCompaction.createUnit`: where the newest `count` runs go. All runs: the max
/// level. Otherwise just below the first run left out, so levels stay ordered by age; if that
/// would be level 0, take runs up to and including the first run above level 0 and write at
/// its level (a compaction output is never a level-0 file). Returns (runs taken, level).
fn create_unit(runs: &[Run], max_level: u32, count: usize) -> (usize, u32) {
    let mut count = count;
    let mut output = if count == runs.len() {
        max_level
    } else {
        runs[count].level.saturating_sub(1)
    };
    if output == 0 {
        for next in &runs[count..] {
            count += 1;
            if next.level != 0 {
                output = next.level;
                break;
            }
        }
    }
    if count == runs.len() {
        output = max_level;
    }
    (count, output)
}

#[cfg(test)]
#[path = "compact_policy_tests.rs"]
mod tests;
