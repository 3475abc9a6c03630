//! An I/O-free simulator of one bucket under Paimon's universal compaction, to see what the
//! policy in `compact_policy` costs before any byte hits storage: write amplification, how many
//! sorted runs a read merges, how many files a bucket keeps, how often a writer stalls.
//!
//! The model follows Paimon's writer loop (`MergeTreeWriter.flushWriteBuffer` and
//! `prepareCommit`, `MergeTreeCompactManager`, `MergeTreeCompactTask`): each commit flushes its
//! bytes as level-0 files rolled at `target-file-size`; the writer waits for the running
//! compaction when the bucket has more runs than the stop trigger; a compaction is picked only
//! when none is running; its output rolls at `target-file-size` too. Keys are not simulated:
//! every run is assumed to span the whole key range, so a plan of two or more runs is one
//! overlapping section and is rewritten whole (what `IntervalPartition` finds for random keys),
//! while a plan of a single run only moves its big files up and rewrites runs of small ones.
//! Deletes are not simulated either: files never carry delete records.

use std::collections::{BTreeMap, HashSet};

use crate::storage::maintenance::compact_policy::{
    CompactOptions, CompactPlan, FileSummary, PickReason, PickState, PickTime, Run, pick, runs,
    should_stall, should_wait_before_commit,
};

/// How many bytes merging sorted runs produces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MergeModel {
    /// Every row survives (inserts of new keys, or an append-like workload).
    Sum,
    /// The output is this fraction of the input (at least one byte of a non-empty input).
    Factor(f64),
    /// Upserts of keys drawn uniformly from a key space that takes `bytes` when every key is
    /// present: a run of `s` bytes holds each key with probability `s / bytes`, so merging
    /// keeps the union, `bytes * (1 - Π(1 - s_i / bytes))`.
    KeySpace { bytes: u64 },
}

impl MergeModel {
    /// Bytes of the merge of runs of `sizes`.
    pub fn merged(&self, sizes: &[u64]) -> u64 {
        let sum = sizes.iter().fold(0u64, |s, &x| s.saturating_add(x));
        if sum == 0 {
            return 0;
        }
        let out = match *self {
            MergeModel::Sum => sum,
            MergeModel::Factor(f) => (sum as f64 * f).ceil() as u64,
            MergeModel::KeySpace { bytes } => {
                let k = bytes.max(1) as f64;
                let missing: f64 = sizes
                    .iter()
                    .map(|&s| 1.0 - (s as f64 / k).min(1.0))
                    .product();
                (k * (1.0 - missing)).round() as u64
            }
        };
        out.clamp(1, sum)
    }
}

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub options: CompactOptions,
    pub merge: MergeModel,
    /// Commits a compaction takes: 0 means it finishes before the commit that picked it (a
    /// writer that waits for compaction, as a batch writer does); k means it lands during the
    /// k-th next commit, unless the writer has to wait for it sooner.
    pub lag_commits: u32,
    /// Time between commits, for `compaction.optimization-interval` and off-peak hours (the
    /// first commit is at `commit_interval_millis`, hour 0 is midnight).
    pub commit_interval_millis: i64,
    /// Keep the run and file counts of every n-th commit in [`SimStats::samples`] (0: none).
    pub sample_every: u64,
}

impl SimConfig {
    /// A writer that waits for each compaction, one commit a minute, sums as merge output.
    pub fn new(options: CompactOptions) -> Self {
        Self {
            options,
            merge: MergeModel::Sum,
            lag_commits: 0,
            commit_interval_millis: 60_000,
            sample_every: 0,
        }
    }
}

/// The bucket after one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub commit: u64,
    pub runs: usize,
    pub files: usize,
}

/// Compactions of one [`PickReason`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReasonStats {
    pub compactions: u64,
    pub bytes_written: u64,
}

/// What a simulation measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimStats {
    pub commits: u64,
    /// Bytes the commits wrote (level-0 files).
    pub commit_bytes: u64,
    /// Bytes compactions read (rewritten inputs only; upgraded files are not read).
    pub compaction_bytes_read: u64,
    /// Bytes compactions wrote.
    pub compaction_bytes_written: u64,
    pub compactions: u64,
    /// Per reason: how many compactions, how many bytes they wrote.
    pub by_reason: BTreeMap<PickReason, ReasonStats>,
    /// Files moved to a higher level without being rewritten.
    pub upgraded_files: u64,
    /// Times the writer waited for an unfinished compaction.
    pub stalls: u64,
    /// Most runs at any moment: after a commit's files land, before compaction catches up.
    pub max_runs: usize,
    /// Most runs a committed bucket had (after the commit's compaction, if it finished).
    pub max_settled_runs: usize,
    /// Sum over commits of the settled run count (for the mean).
    pub settled_runs_total: u64,
    pub max_files: usize,
    pub final_files: usize,
    pub final_bytes: u64,
    /// The final runs, newest first: (level, bytes).
    pub final_runs: Vec<(u32, u64)>,
    pub samples: Vec<Sample>,
}

impl SimStats {
    /// (commit bytes + compaction bytes) / commit bytes; 1 when nothing was committed.
    pub fn write_amplification(&self) -> f64 {
        if self.commit_bytes == 0 {
            return 1.0;
        }
        (self.commit_bytes as f64 + self.compaction_bytes_written as f64) / self.commit_bytes as f64
    }

    /// Mean settled run count: the runs an average read merges.
    pub fn mean_runs(&self) -> f64 {
        if self.commits == 0 {
            return 0.0;
        }
        self.settled_runs_total as f64 / self.commits as f64
    }
}

struct Running {
    plan: CompactPlan,
    done_at: u64,
}

/// One bucket's files and the counters that name and order new ones.
struct Bucket<'c> {
    config: &'c SimConfig,
    files: Vec<FileSummary>,
    next_sequence: i64,
    next_file: u64,
    stats: SimStats,
}

impl Bucket<'_> {
    fn runs(&self) -> Vec<Run> {
        runs(&self.files)
    }

    fn new_file(&mut self, level: u32, size: u64, sequences: (i64, i64), now: i64) {
        self.next_file += 1;
        self.files.push(FileSummary {
            name: format!("f{}", self.next_file),
            level,
            size,
            min_sequence: sequences.0,
            max_sequence: sequences.1,
            creation_millis: now,
        });
    }

    /// Files of `bytes` at `level`, rolled at the target file size.
    fn write_rolled(&mut self, level: u32, bytes: u64, sequences: (i64, i64), now: i64) {
        let target = self.config.options.target_file_size.max(1);
        let mut left = bytes;
        while left > 0 {
            let size = left.min(target);
            self.new_file(level, size, sequences, now);
            left -= size;
        }
    }

    fn commit(&mut self, bytes: u64, now: i64) {
        // Each level-0 file gets its own sequence numbers, later files newer.
        let target = self.config.options.target_file_size.max(1);
        let mut left = bytes;
        while left > 0 {
            let size = left.min(target);
            self.next_sequence += 1;
            let seq = self.next_sequence;
            self.new_file(0, size, (seq, seq), now);
            left -= size;
        }
        self.stats.commit_bytes = self.stats.commit_bytes.saturating_add(bytes);
    }

    /// Replaces the plan's inputs with its outputs, as `MergeTreeCompactTask` would.
    fn apply(&mut self, plan: &CompactPlan, now: i64) {
        let names: HashSet<&str> = plan.inputs.iter().map(|f| f.name.as_str()).collect();
        self.files.retain(|f| !names.contains(f.name.as_str()));
        let sequences = (
            plan.inputs
                .iter()
                .map(|f| f.min_sequence)
                .min()
                .unwrap_or(0),
            plan.inputs
                .iter()
                .map(|f| f.max_sequence)
                .max()
                .unwrap_or(0),
        );
        let level = plan.output_level;
        let written_before = self.stats.compaction_bytes_written;
        if plan.file_rewrite {
            for f in &plan.inputs {
                self.rewrite(&[f.size], level, sequences, now);
            }
        } else if plan.runs >= 2 {
            // One overlapping section: merged and rewritten whole.
            let sizes = run_sizes(&plan.inputs);
            self.rewrite(&sizes, level, sequences, now);
        } else {
            // A single run: big files move up; consecutive small ones are rewritten together,
            // a lone small one moves up too (MergeTreeCompactTask.doCompact / rewrite).
            let small_below = self.config.options.compaction_file_size();
            let mut pending: Vec<&FileSummary> = Vec::new();
            for f in &plan.inputs {
                if f.size < small_below {
                    pending.push(f);
                } else {
                    self.flush_small(&mut pending, level, now);
                    self.upgrade(f, level);
                }
            }
            self.flush_small(&mut pending, level, now);
        }
        self.stats.compactions += 1;
        let reason = self.stats.by_reason.entry(plan.reason).or_default();
        reason.compactions += 1;
        reason.bytes_written += self.stats.compaction_bytes_written - written_before;
    }

    fn flush_small(&mut self, pending: &mut Vec<&FileSummary>, level: u32, now: i64) {
        match pending.as_slice() {
            [] => {}
            [only] => self.upgrade(only, level),
            many => {
                // Files of one run do not overlap: nothing merges away.
                let total: u64 = many.iter().map(|f| f.size).sum();
                let sequences = (
                    many.iter().map(|f| f.min_sequence).min().unwrap_or(0),
                    many.iter().map(|f| f.max_sequence).max().unwrap_or(0),
                );
                self.stats.compaction_bytes_read += total;
                self.stats.compaction_bytes_written += total;
                self.write_rolled(level, total, sequences, now);
            }
        }
        pending.clear();
    }

    fn rewrite(&mut self, sizes: &[u64], level: u32, sequences: (i64, i64), now: i64) {
        let read: u64 = sizes.iter().sum();
        let written = self.config.merge.merged(sizes);
        self.stats.compaction_bytes_read += read;
        self.stats.compaction_bytes_written += written;
        self.write_rolled(level, written, sequences, now);
    }

    fn upgrade(&mut self, file: &FileSummary, level: u32) {
        if file.level != level {
            let mut moved = file.clone();
            moved.level = level;
            self.files.push(moved);
            self.stats.upgraded_files += 1;
        } else {
            self.files.push(file.clone());
        }
    }
}

/// Sizes of the sorted runs of a plan's inputs (newest run first): each level-0 file is a run,
/// the files of each level >= 1 together are one.
fn run_sizes(inputs: &[FileSummary]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let mut last_level = None;
    for f in inputs {
        match (last_level, out.last_mut()) {
            (Some(level), Some(size)) if level == f.level && level > 0 => *size += f.size,
            _ => out.push(f.size),
        }
        last_level = Some(f.level);
    }
    out
}

/// Runs one bucket through `commit_sizes` (bytes per commit) and reports what it cost.
pub fn simulate(commit_sizes: impl IntoIterator<Item = u64>, config: &SimConfig) -> SimStats {
    let opts = &config.options;
    let mut bucket = Bucket {
        config,
        files: Vec::new(),
        next_sequence: 0,
        next_file: 0,
        stats: SimStats::default(),
    };
    let mut state = PickState::default();
    let mut running: Option<Running> = None;
    let mut commit = 0u64;
    for bytes in commit_sizes {
        commit += 1;
        let now = config.commit_interval_millis.saturating_mul(commit as i64);
        let time = PickTime {
            epoch_millis: now,
            local_hour: (now.rem_euclid(86_400_000) / 3_600_000) as u32,
        };
        // flushWriteBuffer: decide to wait before the new files land, then sync and trigger.
        let stall = running.is_some() && should_stall(&bucket.runs(), opts);
        bucket.commit(bytes, now);
        bucket.stats.max_runs = bucket.stats.max_runs.max(bucket.runs().len());
        if let Some(r) = running.take_if(|r| stall || r.done_at <= commit) {
            if r.done_at > commit {
                bucket.stats.stalls += 1;
            }
            bucket.apply(&r.plan, now);
        }
        if running.is_none() {
            running = pick(&bucket.runs(), opts, &mut state, time).map(|plan| Running {
                plan,
                done_at: commit + u64::from(config.lag_commits),
            });
        }
        // prepareCommit: a waiting writer, a finished compaction, or too many runs to commit.
        let must_wait = should_wait_before_commit(&bucket.runs(), opts);
        if let Some(r) = running.take_if(|r| r.done_at <= commit || must_wait) {
            if r.done_at > commit {
                bucket.stats.stalls += 1;
            }
            bucket.apply(&r.plan, now);
        }

        let settled = bucket.runs().len();
        let stats = &mut bucket.stats;
        stats.commits = commit;
        stats.max_settled_runs = stats.max_settled_runs.max(settled);
        stats.settled_runs_total += settled as u64;
        stats.max_files = stats.max_files.max(bucket.files.len());
        if config.sample_every > 0 && commit.is_multiple_of(config.sample_every) {
            stats.samples.push(Sample {
                commit,
                runs: settled,
                files: bucket.files.len(),
            });
        }
    }
    let final_runs = bucket.runs();
    let mut stats = bucket.stats;
    stats.final_files = bucket.files.len();
    stats.final_bytes = bucket.files.iter().map(|f| f.size).sum();
    stats.final_runs = final_runs.iter().map(|r| (r.level, r.size())).collect();
    stats
}

/// splitmix64: a tiny deterministic generator, so simulations, benchmarks and property tests
/// see the same numbers every run (failures reproduce).
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::maintenance::compact_policy::ForceLevel0;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;

    #[test]
    fn five_small_commits_compact_fully_by_amplification() {
        let stats = simulate([4 * KIB; 5], &SimConfig::new(CompactOptions::default()));
        assert_eq!(stats.compactions, 1);
        assert_eq!(
            stats.by_reason.get(&PickReason::SizeAmplification),
            Some(&ReasonStats {
                compactions: 1,
                bytes_written: 20 * KIB
            })
        );
        assert_eq!(stats.final_runs, [(5, 20 * KIB)]);
        assert_eq!(stats.compaction_bytes_written, 20 * KIB);
        assert_eq!(stats.write_amplification(), 2.0);
        assert_eq!((stats.max_runs, stats.max_settled_runs), (5, 4));

        // Four more make five runs again; the new ones are too small against 20 KiB for size
        // amplification, so size ratio merges them just below it.
        let stats = simulate([4 * KIB; 9], &SimConfig::new(CompactOptions::default()));
        assert_eq!(stats.final_runs, [(4, 16 * KIB), (5, 20 * KIB)]);
        assert_eq!(stats.compaction_bytes_written, 36 * KIB);
    }

    #[test]
    fn big_commits_and_outputs_roll_at_the_target_file_size() {
        let opts = CompactOptions {
            target_file_size: 128 * MIB,
            ..CompactOptions::default()
        };
        let stats = simulate([300 * MIB], &SimConfig::new(opts.clone()));
        assert_eq!(stats.final_files, 3);
        // The last file written is the newest run.
        assert_eq!(
            stats.final_runs,
            [(0, 44 * MIB), (0, 128 * MIB), (0, 128 * MIB)]
        );
        // Commit 2 makes 6 runs (full compaction by amplification), commit 4 makes 7 (run
        // count, grown by ratio to everything): 1200 MiB in 9 files of 128 MiB and one rest.
        let stats = simulate([300 * MIB; 4], &SimConfig::new(opts));
        assert_eq!(stats.final_runs, [(5, 1200 * MIB)]);
        assert_eq!(stats.final_files, 10);
        assert_eq!(stats.compactions, 2);
    }

    #[test]
    fn single_run_plans_move_big_files_and_merge_small_ones() {
        // A lookup table pushes its one level-0 file up without rewriting it.
        let opts = CompactOptions {
            force_level0: ForceLevel0::Always,
            ..CompactOptions::default()
        };
        let stats = simulate([4 * KIB], &SimConfig::new(opts));
        assert_eq!(stats.final_runs, [(5, 4 * KIB)]);
        assert_eq!(
            (stats.upgraded_files, stats.compaction_bytes_written),
            (1, 0)
        );
        assert_eq!(stats.write_amplification(), 1.0);
    }

    #[test]
    fn a_lagging_compaction_stalls_the_writer_past_the_stop_trigger() {
        let config = SimConfig {
            lag_commits: 1000,
            ..SimConfig::new(CompactOptions::default())
        };
        let stats = simulate([KIB; 12], &config);
        // Picked at commit 5; commits 6..9 pile up to 9 runs; commit 10 sees 9 > 8 and waits.
        assert_eq!(stats.stalls, 1);
        assert_eq!(stats.max_runs, 10);
        assert_eq!(stats.max_settled_runs, 9);
    }

    #[test]
    fn key_space_bounds_merged_runs() {
        let model = MergeModel::KeySpace { bytes: 100 };
        assert_eq!(model.merged(&[50, 50]), 75);
        assert_eq!(model.merged(&[100, 7]), 100);
        assert_eq!(model.merged(&[1]), 1);
        assert_eq!(MergeModel::Factor(0.5).merged(&[3, 4]), 4);
        assert_eq!(MergeModel::Factor(0.0).merged(&[3]), 1);
        assert_eq!(MergeModel::Sum.merged(&[]), 0);

        let config = SimConfig {
            merge: MergeModel::KeySpace { bytes: 64 * MIB },
            ..SimConfig::new(CompactOptions::default())
        };
        let stats = simulate([MIB; 2000], &config);
        // Each level holds one merge output, at most the key space; at most 5 runs remain.
        for &(level, size) in &stats.final_runs {
            assert!(level == 0 || size <= 64 * MIB, "{stats:?}");
        }
        assert!(stats.final_bytes <= 5 * 64 * MIB, "{stats:?}");
        assert!(stats.compaction_bytes_written < stats.compaction_bytes_read);
    }

    #[test]
    fn run_sizes_group_levels_above_0() {
        let f = |level, size| FileSummary {
            name: String::new(),
            level,
            size,
            min_sequence: 0,
            max_sequence: 0,
            creation_millis: 0,
        };
        let inputs = [f(0, 1), f(0, 2), f(1, 3), f(1, 4), f(3, 5)];
        assert_eq!(run_sizes(&inputs), [1, 2, 7, 5]);
    }

    use super::SplitMix64 as Rng;

    fn random_options(rng: &mut Rng) -> CompactOptions {
        let mut opts = CompactOptions::with_trigger(1 + rng.below(10) as u32);
        opts.stop_trigger = opts.compaction_trigger + rng.below(4) as u32;
        opts.num_levels = 2 + rng.below(8) as u32;
        opts.max_size_amp_percent = [25, 100, 200, 400][rng.below(4) as usize];
        opts.size_ratio = [0, 1, 10][rng.below(3) as usize];
        opts.target_file_size = 64 * KIB;
        opts.force_level0 = match rng.below(4) {
            0 => ForceLevel0::Always,
            1 => ForceLevel0::Gentle { max_interval: 3 },
            _ => ForceLevel0::Off,
        };
        if rng.below(4) == 0 {
            opts.optimization_interval_millis = Some(rng.below(600_000) as i64);
        }
        opts
    }

    /// Commits of at most the target file size (one level-0 file each).
    fn random_commits(rng: &mut Rng, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let bits = rng.below(17);
                1 + rng.below(1 << bits)
            })
            .collect()
    }

    #[test]
    fn property_a_waiting_writer_settles_within_the_trigger() {
        let mut rng = Rng(0xB0C);
        for case in 0..300 {
            let opts = random_options(&mut rng);
            let commits = random_commits(&mut rng, 200);
            let stats = simulate(commits.iter().copied(), &SimConfig::new(opts.clone()));
            let ctx = format!("case {case}: {opts:?}\n{stats:?}");
            // Each commit adds one run; its compaction merges two or more whenever there are
            // more runs than the trigger.
            assert!(
                stats.max_settled_runs <= opts.compaction_trigger as usize,
                "{ctx}"
            );
            assert!(
                stats.max_runs <= opts.compaction_trigger as usize + 1,
                "{ctx}"
            );
            assert_eq!(stats.stalls, 0, "{ctx}");
            // Merging by sum keeps every byte.
            assert_eq!(stats.commit_bytes, commits.iter().sum::<u64>(), "{ctx}");
            assert_eq!(stats.final_bytes, stats.commit_bytes, "{ctx}");
            let wa = stats.write_amplification();
            assert!(wa.is_finite() && wa >= 1.0, "{ctx}");
            assert!(
                stats.compaction_bytes_read >= stats.compaction_bytes_written,
                "{ctx}"
            );
        }
    }

    #[test]
    fn property_a_lagging_writer_is_bounded_by_the_stop_trigger() {
        let mut rng = Rng(0x1A6);
        let mut stalled = 0;
        for case in 0..300 {
            let opts = random_options(&mut rng);
            let config = SimConfig {
                lag_commits: 1 + rng.below(20) as u32,
                sample_every: 1,
                ..SimConfig::new(opts.clone())
            };
            let commits = random_commits(&mut rng, 200);
            let stats = simulate(commits.iter().copied(), &config);
            let ctx = format!(
                "case {case}: lag {} {opts:?}\n{stats:?}",
                config.lag_commits
            );
            let stop = opts.stop_trigger as usize;
            // A writer waits before adding to more than `stop` runs, and before committing
            // more than `stop + 1`.
            assert!(stats.max_runs <= stop + 2, "{ctx}");
            assert!(stats.max_settled_runs <= stop + 1, "{ctx}");
            assert_eq!(stats.samples.len(), 200, "{ctx}");
            assert!(stats.samples.iter().all(|s| s.runs <= stop + 1), "{ctx}");
            assert_eq!(stats.final_bytes, stats.commit_bytes, "{ctx}");
            assert!(stats.write_amplification().is_finite(), "{ctx}");
            stalled += u64::from(stats.stalls > 0);
        }
        assert!(stalled > 10, "the generator must reach stalls: {stalled}");
    }
}
