//! Tests of the universal compaction policy: Paimon's own test cases re-expressed, and
//! properties over random run layouts.
use super::*;
use crate::storage::spec::options::parse_memory_size;

fn file(level: u32, size: u64) -> FileSummary {
    FileSummary {
        name: String::new(),
        level,
        size,
        min_sequence: 0,
        max_sequence: 0,
        creation_millis: 0,
    }
}

/// One single-file run per `(level, size)`.
fn layout(pairs: &[(u32, u64)]) -> Vec<Run> {
    pairs
        .iter()
        .map(|&(level, size)| Run {
            level,
            files: vec![file(level, size)],
        })
        .collect()
}

fn level0(sizes: &[u64]) -> Vec<Run> {
    layout(&sizes.iter().map(|&s| (0, s)).collect::<Vec<_>>())
}

/// Paimon's `UniversalCompactionTest.ofTesting(maxSizeAmp, sizeRatio, trigger)`.
fn testing(amp: u32, ratio: u32, trigger: u32, num_levels: u32) -> CompactOptions {
    CompactOptions {
        max_size_amp_percent: amp,
        size_ratio: ratio,
        num_levels,
        ..CompactOptions::with_trigger(trigger)
    }
}

fn sizes(plan: &CompactPlan) -> Vec<u64> {
    plan.inputs.iter().map(|f| f.size).collect()
}

fn pick_now(runs: &[Run], opts: &CompactOptions) -> Option<CompactPlan> {
    pick(runs, opts, &mut PickState::default(), PickTime::default())
}

fn unit_sizes(runs: &[Run], unit: Option<Unit>) -> Option<Vec<u64>> {
    unit.map(|u| runs[..u.runs].iter().map(Run::size).collect())
}

// ---- UniversalCompactionTest ----

#[test]
fn output_level_is_below_the_next_run_and_never_level_0() {
    let runs = layout(&[(0, 1), (0, 1), (1, 1), (3, 1), (4, 1)]);
    let levels: Vec<(usize, u32)> = (1..=5).map(|n| create_unit(&runs, 5, n)).collect();
    // One level-0 run alone would land at level 0: it takes the level-1 run along.
    assert_eq!(levels, [(3, 1), (3, 1), (3, 2), (4, 3), (5, 5)]);
    // Reaching the end on the way up means everything is merged: the max level.
    assert_eq!(
        create_unit(&layout(&[(0, 1), (0, 1), (0, 1)]), 5, 1),
        (3, 5)
    );
    assert_eq!(
        create_unit(&layout(&[(0, 1), (0, 1), (2, 1)]), 5, 1),
        (3, 5)
    );
}

#[test]
fn an_empty_bucket_compacts_nothing_but_restarts_the_interval() {
    let opts = CompactOptions {
        optimization_interval_millis: Some(1000),
        ..CompactOptions::default()
    };
    let mut state = PickState::default();
    let now = PickTime {
        epoch_millis: 7,
        local_hour: 0,
    };
    assert_eq!(pick(&[], &opts, &mut state, now), None);
    // Paimon picks the empty unit (restarting the clock), then its manager drops it.
    assert_eq!(state.last_full_compaction_millis, Some(7));
}

#[test]
fn picks_by_amplification_then_ratio_then_run_count() {
    let opts = testing(25, 1, 3, 3);
    let plan = pick_now(&level0(&[1, 2, 3, 3]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 2, 3, 3]);
    assert_eq!(plan.reason, PickReason::SizeAmplification);

    let opts = testing(25, 1, 3, 4);
    let plan = pick_now(&layout(&[(0, 1), (1, 1), (2, 1), (3, 50)]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 1, 1]);
    assert_eq!(plan.reason, PickReason::SizeRatio);
    assert_eq!(plan.output_level, 2);

    // Run count picks the newest two; size ratio then adds the 3.
    let plan = pick_now(&layout(&[(0, 1), (1, 2), (2, 3), (3, 50)]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 2, 3]);
    assert_eq!(plan.reason, PickReason::RunCount);
}

#[test]
fn optimization_interval_forces_full_compactions() {
    let opts = CompactOptions {
        optimization_interval_millis: Some(1000),
        ..testing(100, 1, 3, 3)
    };
    let mut state = PickState::default();
    let at = |ms| PickTime {
        epoch_millis: ms,
        local_hour: 0,
    };
    let small = layout(&[(0, 1), (1, 3), (2, 5)]);
    // Never compacted: due at once.
    let plan = pick(&small, &opts, &mut state, at(0)).unwrap();
    assert_eq!(sizes(&plan), [1, 3, 5]);
    assert_eq!(plan.reason, PickReason::OptimizationInterval);
    let plan = pick(&small, &opts, &mut state, at(1001)).unwrap();
    assert_eq!(sizes(&plan), [1, 3, 5]);
    assert_eq!(pick(&small, &opts, &mut state, at(1001)), None);
    // Size amplification is a full compaction too: it restarts the interval.
    let plan = pick(
        &layout(&[(0, 3), (1, 3), (2, 5)]),
        &opts,
        &mut state,
        at(1500),
    )
    .unwrap();
    assert_eq!(sizes(&plan), [3, 3, 5]);
    assert_eq!(plan.reason, PickReason::SizeAmplification);
    assert_eq!(state.last_full_compaction_millis, Some(1500));
    assert_eq!(pick(&small, &opts, &mut state, at(2001)), None);
    assert!(pick(&small, &opts, &mut state, at(2501)).is_some());
}

#[test]
fn total_size_threshold_forces_full_compactions() {
    let opts = CompactOptions {
        total_size_threshold: Some(10),
        ..testing(100, 1, 3, 3)
    };
    let plan = pick_now(&layout(&[(0, 1), (1, 3), (2, 5)]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 3, 5]);
    assert_eq!(plan.reason, PickReason::TotalSizeThreshold);
    assert_eq!(pick_now(&layout(&[(0, 2), (1, 6), (2, 10)]), &opts), None);
    assert_eq!(pick_now(&layout(&[(3, 5)]), &opts), None);
}

#[test]
fn no_output_to_level_0() {
    let opts = testing(25, 1, 3, 3);
    let plan = pick_now(&layout(&[(0, 1), (0, 1), (1, 1), (2, 50)]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 1, 1]);
    assert_eq!(plan.output_level, 1);
    let plan = pick_now(&layout(&[(0, 1), (0, 2), (1, 3), (2, 50)]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 2, 3]);
    assert_eq!(plan.output_level, 1);
}

#[test]
fn run_count_pick_takes_level_1_and_then_level_2_by_ratio() {
    let opts = testing(200, 1, 3, 3);
    let plan = pick_now(&layout(&[(0, 10), (0, 20), (1, 97), (2, 100)]), &opts).unwrap();
    assert_eq!(plan.inputs.len(), 4);
    assert_eq!(plan.output_level, 2);
    assert!(plan.drop_delete);
}

#[test]
fn all_level_0_runs_go_to_the_max_level() {
    let opts = testing(200, 1, 5, 6);
    let plan = pick_now(&level0(&[1, 1, 1, 1024, 1024 * 1024]), &opts).unwrap();
    assert_eq!(sizes(&plan), [1, 1, 1, 1024, 1024 * 1024]);
    assert_eq!(plan.output_level, 5);
}

/// Paimon's `appendAndPickForSizeAmp`: a new run of 1, then the size-amplification pick
/// alone, merged runs replaced by their sum.
#[test]
fn size_amplification_sequence() {
    let opts = testing(25, 0, 1, 4);
    let mut sizes: Vec<u64> = vec![1];
    let expected: [&[u64]; 17] = [
        &[2],
        &[3],
        &[4],
        &[1, 4],
        &[6],
        &[1, 6],
        &[8],
        &[1, 8],
        &[1, 1, 8],
        &[11],
        &[1, 11],
        &[1, 1, 11],
        &[14],
        &[1, 14],
        &[1, 1, 14],
        &[1, 1, 1, 14],
        &[18],
    ];
    for want in expected {
        sizes.insert(0, 1);
        let runs = level0(&sizes);
        if let Some(unit) = pick_for_size_amp(&runs, &opts, 3) {
            assert_eq!(unit.runs, runs.len());
            sizes = vec![sizes.iter().sum()];
        }
        assert_eq!(sizes, want);
    }
}

/// Paimon's `pickForSizeRatio` helper: run `i` at level `i`, max level = run count.
fn after_size_ratio(opts: &CompactOptions, sizes: &[u64]) -> Vec<u64> {
    let runs = layout(
        &sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| (i as u32, s))
            .collect::<Vec<_>>(),
    );
    match pick_for_size_ratio(&runs, opts, sizes.len() as u32, 0) {
        Some(unit) => {
            let merged: u64 = sizes[..unit.runs].iter().sum();
            std::iter::once(merged)
                .chain(sizes[unit.runs..].iter().copied())
                .collect()
        }
        None => sizes.to_vec(),
    }
}

#[test]
fn size_ratio_sequence() {
    let opts = testing(25, 1, 5, 6);
    let mut sizes: Vec<u64> = vec![1, 1, 1, 1];
    let expected: [&[u64]; 22] = [
        &[5],
        &[1, 5],
        &[1, 1, 5],
        &[1, 1, 1, 5],
        &[4, 5],
        &[1, 4, 5],
        &[1, 1, 4, 5],
        &[3, 4, 5],
        &[1, 3, 4, 5],
        &[2, 3, 4, 5],
        &[1, 2, 3, 4, 5],
        &[16],
        &[1, 16],
        &[1, 1, 16],
        &[1, 1, 1, 16],
        &[4, 16],
        &[1, 4, 16],
        &[1, 1, 4, 16],
        &[3, 4, 16],
        &[1, 3, 4, 16],
        &[2, 3, 4, 16],
        &[1, 2, 3, 4, 16],
    ];
    for want in expected {
        sizes.insert(0, 1);
        sizes = after_size_ratio(&opts, &sizes);
        assert_eq!(sizes, want);
    }
    sizes.insert(0, 1);
    assert_eq!(after_size_ratio(&opts, &sizes), [11, 16]);
}

#[test]
fn size_ratio_threshold() {
    let sizes = [8, 9, 10];
    assert_eq!(after_size_ratio(&testing(25, 10, 2, 3), &sizes), [8, 9, 10]);
    assert_eq!(after_size_ratio(&testing(25, 20, 2, 3), &sizes), [27]);
}

#[test]
fn lookup_tables_push_level_0_up() {
    let opts = CompactOptions {
        force_level0: ForceLevel0::Always,
        ..testing(25, 1, 3, 3)
    };
    let plan = pick_now(&level0(&[1, 2, 2, 2]), &opts).unwrap();
    assert_eq!((sizes(&plan), plan.output_level), (vec![1, 2, 2, 2], 2));
    let plan = pick_now(&layout(&[(0, 1), (1, 2), (2, 2)]), &opts).unwrap();
    assert_eq!((sizes(&plan), plan.output_level), (vec![1, 2, 2], 2));
    let plan = pick_now(&layout(&[(0, 1), (2, 2)]), &opts).unwrap();
    assert_eq!((sizes(&plan), plan.output_level), (vec![1], 1));
    assert!(!plan.drop_delete, "level 2 still holds older data");
}

#[test]
fn gentle_lookup_compaction_pushes_every_nth_idle_pick() {
    let opts = CompactOptions {
        force_level0: ForceLevel0::Gentle { max_interval: 5 },
        ..testing(25, 1, 5, 3)
    };
    let cases: [(Vec<Run>, Vec<u64>, u32); 3] = [
        (level0(&[1, 2, 2, 2]), vec![1, 2, 2, 2], 2),
        (layout(&[(0, 2), (1, 2), (2, 2)]), vec![2, 2, 2], 2),
        (layout(&[(0, 1), (2, 2)]), vec![1], 1),
    ];
    let mut state = PickState::default();
    for (runs, want, level) in cases {
        for i in 1..=5 {
            let plan = pick(&runs, &opts, &mut state, PickTime::default());
            if i < 5 {
                assert_eq!(plan, None, "idle pick {i}");
            } else {
                let plan = plan.unwrap();
                assert_eq!((sizes(&plan), plan.output_level), (want.clone(), level));
            }
        }
    }
}

// ---- ForceUpLevel0CompactionTest ----

#[test]
fn force_up_level_0() {
    let opts = CompactOptions {
        force_level0: ForceLevel0::Always,
        ..testing(200, 1, 5, 3)
    };
    let level = |pairs: &[(u32, u64)]| pick_now(&layout(pairs), &opts).map(|p| p.output_level);
    assert_eq!(level(&[(0, 1), (0, 1)]), Some(2));
    assert_eq!(level(&[(0, 1), (1, 10)]), Some(2));
    assert_eq!(level(&[(0, 1), (0, 5), (2, 10)]), Some(1));
    assert_eq!(level(&[(2, 10)]), None);
    assert_eq!(level(&[(0, 1), (0, 5), (0, 10), (0, 20)]), Some(2));

    let plan = pick_now(&layout(&[(0, 1), (1, 99), (2, 100)]), &opts).unwrap();
    assert_eq!((plan.inputs.len(), plan.output_level), (3, 2));
    let plan = pick_now(&layout(&[(0, 1), (1, 99), (2, 102)]), &opts).unwrap();
    assert_eq!((plan.inputs.len(), plan.output_level), (2, 1));
}

// ---- EarlyFullCompactionTest ----

#[test]
fn early_full_compaction() {
    let at = |ms| PickTime {
        epoch_millis: ms,
        local_hour: 0,
    };
    let two = layout(&[(0, 100), (0, 200)]);
    let with = |interval, total, incremental| CompactOptions {
        optimization_interval_millis: interval,
        total_size_threshold: total,
        incremental_size_threshold: incremental,
        ..CompactOptions::with_trigger(5)
    };
    let full = |opts: &CompactOptions, runs: &[Run], last: Option<i64>, now: i64| {
        let state = PickState {
            last_full_compaction_millis: last,
            idle_picks: 0,
        };
        early_full(runs, opts, 4, &state, at(now)).map(|u| (u.runs, u.output_level))
    };
    let interval = with(Some(1000), None, None);
    assert_eq!(
        full(&with(Some(1000), Some(1000), None), &two[..1], None, 0),
        None
    );
    assert_eq!(full(&with(None, None, None), &two, None, 0), None);
    assert_eq!(full(&interval, &two, Some(9_500), 10_000), None);
    assert_eq!(full(&interval, &two, Some(9_500), 10_501), Some((2, 4)));
    assert_eq!(full(&interval, &two, Some(5_000), 10_000), Some((2, 4)));
    assert_eq!(full(&interval, &two, Some(10_000), 11_000), None);
    let total = with(None, Some(1000), None);
    assert_eq!(full(&total, &two, None, 0), Some((2, 4)));
    assert_eq!(full(&total, &layout(&[(0, 500), (0, 500)]), None, 0), None);
    let incremental = with(None, None, Some(500));
    assert_eq!(
        full(&incremental, &layout(&[(0, 400), (0, 200)]), None, 0),
        Some((2, 4))
    );
    assert_eq!(full(&incremental, &two, None, 0), None);
    let max_level_excluded = layout(&[(0, 100), (0, 300), (4, 500)]);
    assert_eq!(full(&incremental, &max_level_excluded, None, 0), None);
}

#[test]
fn restored_state_seeds_the_last_full_compaction() {
    let opts = CompactOptions::default();
    let mut files = vec![file(5, 1), file(5, 1), file(0, 1)];
    files[0].creation_millis = 70;
    files[1].creation_millis = 90;
    files[2].creation_millis = 200;
    let state = PickState::restored(&files, &opts);
    assert_eq!(state.last_full_compaction_millis, Some(90));
    assert_eq!(
        PickState::restored(&files[2..], &opts).last_full_compaction_millis,
        None
    );
}

#[test]
fn off_peak_hours_raise_the_size_ratio() {
    let window = OffPeakHours {
        start_hour: 22,
        end_hour: 6,
        ratio: 20,
    };
    assert_eq!(
        (0..24).filter(|&h| window.ratio_at(h) == 20).count(),
        8,
        "22..24 and 0..6"
    );
    assert_eq!(window.ratio_at(6), 0);
    let opts = CompactOptions {
        off_peak: Some(window),
        ..testing(25, 10, 2, 3)
    };
    let runs = layout(&[(0, 8), (1, 9), (2, 10)]);
    let at = |hour| pick_for_size_ratio(&runs, &opts, 3, hour);
    assert_eq!(unit_sizes(&runs, at(12)), None);
    assert_eq!(unit_sizes(&runs, at(23)), Some(vec![8, 9, 10]));
}

// ---- CompactStrategy.pickFullCompaction ----

#[test]
fn full_compaction() {
    let opts = testing(200, 1, 5, 3);
    assert_eq!(pick_full(&[], &opts, |_| true), None);
    let done = layout(&[(2, 10)]);
    assert_eq!(pick_full(&done, &opts, |_| false), None);
    let plan = pick_full(&done, &opts, |_| true).unwrap();
    assert!(plan.file_rewrite && plan.drop_delete);
    let forced = CompactOptions {
        force_rewrite_all_files: true,
        ..opts.clone()
    };
    let mut two_files = done.clone();
    two_files[0].files.push(file(2, 20));
    assert_eq!(
        pick_full(&two_files, &forced, |_| false)
            .unwrap()
            .inputs
            .len(),
        2
    );
    let only_big = pick_full(&two_files, &opts, |f| f.size > 15).unwrap();
    assert_eq!(sizes(&only_big), [20]);

    let plan = pick_full(&layout(&[(1, 10)]), &opts, |_| false).unwrap();
    assert_eq!((plan.output_level, plan.file_rewrite), (2, false));
    let plan = pick_full(&layout(&[(0, 1), (0, 2), (2, 10)]), &opts, |_| false).unwrap();
    assert_eq!((sizes(&plan), plan.output_level), (vec![1, 2, 10], 2));
    assert_eq!(plan.reason, PickReason::Full);
}

#[test]
fn full_compaction_changelog_tables_compact_fully_every_delta_commits() {
    let opts = CompactOptions::from_lookup(|k| match k {
        "changelog-producer" => Some("full-compaction"),
        "full-compaction.delta-commits" => Some("2"),
        _ => None,
    })
    .unwrap();
    assert_eq!(opts.full_compaction_every, Some(2));
    let default =
        CompactOptions::from_lookup(|k| (k == "changelog-producer").then_some("full-compaction"))
            .unwrap();
    assert_eq!(default.full_compaction_every, Some(1));
    assert_eq!(CompactOptions::default().full_compaction_every, None);

    // One level-0 file of two: universal compaction's choice (nothing yet).
    let one = layout(&[(0, 1), (4, 100)]);
    assert_eq!(pick_now(&one, &opts), None);
    // Two: everything to the max level (num-levels 6 by default: level 5).
    let two = layout(&[(0, 1), (0, 1), (4, 100)]);
    let plan = pick_now(&two, &opts).unwrap();
    assert_eq!(
        (
            sizes(&plan),
            plan.output_level,
            plan.reason,
            plan.drop_delete
        ),
        (vec![1, 1, 100], 5, PickReason::FullChangelog, true)
    );
    let plan = pick_now(&one, &default).unwrap();
    assert_eq!((plan.runs, plan.reason), (2, PickReason::FullChangelog));
}

// ---- MergeTreeCompactManager ----

#[test]
fn drop_delete_needs_the_oldest_output_or_deletion_vectors() {
    let runs = layout(&[(0, 1), (0, 1), (1, 1), (2, 50)]);
    let opts = testing(25, 1, 3, 3);
    let plan = pick_now(&runs, &opts).unwrap();
    assert_eq!((plan.output_level, plan.drop_delete), (1, false));
    let dv = CompactOptions {
        deletion_vectors: true,
        ..opts.clone()
    };
    assert!(pick_now(&runs, &dv).unwrap().drop_delete);
    let chain = CompactOptions {
        keep_delete: true,
        ..opts.clone()
    };
    assert!(!pick_full(&runs, &chain, |_| false).unwrap().drop_delete);
    assert!(pick_full(&runs, &opts, |_| false).unwrap().drop_delete);
}

#[test]
fn stalls_past_the_stop_trigger() {
    let opts = CompactOptions::default();
    assert_eq!(opts.stop_trigger, 8);
    assert!(!should_stall(&level0(&[1; 8]), &opts));
    assert!(should_stall(&level0(&[1; 9]), &opts));
    assert!(!should_wait_before_commit(&level0(&[1; 9]), &opts));
    assert!(should_wait_before_commit(&level0(&[1; 10]), &opts));
}

#[test]
fn levels_above_the_configured_max_are_kept() {
    // Files written with more levels: the bucket's max level follows them.
    let opts = testing(200, 1, 2, 3);
    let runs = layout(&[(0, 1), (0, 1), (7, 1)]);
    assert_eq!(max_level(&runs, &opts), 7);
    let plan = pick_now(&runs, &opts).unwrap();
    assert_eq!((plan.runs, plan.output_level), (3, 7));
}

// ---- Levels ----

#[test]
fn runs_order_level_0_newest_first_and_group_levels() {
    let f = |name: &str, level, min, max, created| FileSummary {
        name: name.to_owned(),
        level,
        size: 1,
        min_sequence: min,
        max_sequence: max,
        creation_millis: created,
    };
    // LevelsOrderingFixTest: equal max sequence, the smaller min sequence comes first.
    let files = vec![
        f("a-file", 0, 99, 100, 1001),
        f("z-file", 0, 98, 100, 1000),
        f("l2-b", 2, 0, 5, 0),
        f("new", 0, 101, 101, 0),
        f("l1", 1, 0, 7, 0),
        f("same-1", 0, 5, 6, 3),
        f("same-0", 0, 5, 6, 3),
        f("l2-a", 2, 0, 5, 0),
    ];
    let names = |runs: &[Run]| -> Vec<Vec<String>> {
        runs.iter()
            .map(|r| r.files.iter().map(|f| f.name.clone()).collect())
            .collect()
    };
    let want = [
        vec!["new"],
        vec!["z-file"],
        vec!["a-file"],
        vec!["same-0"],
        vec!["same-1"],
        vec!["l1"],
        vec!["l2-b", "l2-a"],
    ];
    let got = runs(&files);
    assert_eq!(names(&got), want);
    assert_eq!(
        got.iter().map(|r| r.level).collect::<Vec<_>>(),
        [0, 0, 0, 0, 0, 1, 2]
    );
    let mut reversed = files.clone();
    reversed.reverse();
    let level0 = |runs: Vec<Run>| names(&runs[..5]);
    assert_eq!(level0(runs(&reversed)), level0(got));
    assert!(runs(&[]).is_empty());
}

// ---- options ----

#[test]
fn options_default_as_paimon() {
    let opts = CompactOptions::from_options(&BTreeMap::new()).unwrap();
    assert_eq!(opts, CompactOptions::default());
    assert_eq!(
        (opts.compaction_trigger, opts.stop_trigger, opts.num_levels),
        (5, 8, 6)
    );
    assert_eq!((opts.max_size_amp_percent, opts.size_ratio), (200, 1));
    assert_eq!(opts.target_file_size, 128 << 20);
    assert_eq!(opts.compaction_file_size(), 93_952_409);
    assert_eq!(opts.force_level0, ForceLevel0::Off);
}

fn parse(pairs: &[(&str, &str)]) -> Result<CompactOptions, String> {
    CompactOptions::from_options(
        &pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

#[test]
fn options_follow_the_trigger_and_parse_like_paimon() {
    let opts = parse(&[(keys::COMPACTION_TRIGGER, "10")]).unwrap();
    assert_eq!((opts.stop_trigger, opts.num_levels), (13, 11));
    // The stop trigger never goes below the compaction trigger.
    let opts = parse(&[(keys::COMPACTION_TRIGGER, "10"), (keys::STOP_TRIGGER, "4")]).unwrap();
    assert_eq!(opts.stop_trigger, 10);
    let opts = parse(&[
        ("target-file-size", "256MB"),
        (keys::OPTIMIZATION_INTERVAL, "1 h"),
        (keys::TOTAL_SIZE_THRESHOLD, "1 gb"),
        (keys::INCREMENTAL_SIZE_THRESHOLD, "1048576"),
        (keys::OFFPEAK_START_HOUR, "2"),
        (keys::OFFPEAK_END_HOUR, "18"),
        (keys::OFFPEAK_RATIO, "20"),
        (keys::SMALL_FILE_RATIO, "0.5"),
    ])
    .unwrap();
    assert_eq!(opts.target_file_size, 256 << 20);
    assert_eq!(opts.optimization_interval_millis, Some(3_600_000));
    assert_eq!(opts.total_size_threshold, Some(1 << 30));
    assert_eq!(opts.incremental_size_threshold, Some(1 << 20));
    assert_eq!(opts.off_peak.map(|o| o.ratio_at(2)), Some(20));
    assert_eq!(opts.compaction_file_size(), 128 << 20);
    // An empty window is no window.
    let opts = parse(&[
        (keys::OFFPEAK_START_HOUR, "3"),
        (keys::OFFPEAK_END_HOUR, "3"),
    ]);
    assert_eq!(opts.unwrap().off_peak, None);
}

#[test]
fn lookup_tables_force_level_0() {
    let mode = |pairs: &[(&str, &str)]| parse(pairs).unwrap().force_level0;
    assert_eq!(
        mode(&[("changelog-producer", "lookup")]),
        ForceLevel0::Always
    );
    assert_eq!(mode(&[("changelog-producer", "input")]), ForceLevel0::Off);
    assert_eq!(mode(&[("merge-engine", "first-row")]), ForceLevel0::Always);
    assert_eq!(mode(&[(keys::FORCE_LOOKUP, "true")]), ForceLevel0::Always);
    assert_eq!(
        mode(&[(keys::FORCE_UP_LEVEL_0, "TRUE")]),
        ForceLevel0::Always
    );
    let dv = parse(&[("deletion-vectors.enabled", "true")]).unwrap();
    assert!(dv.deletion_vectors);
    assert_eq!(dv.force_level0, ForceLevel0::Always);
    assert_eq!(
        mode(&[
            ("deletion-vectors.enabled", "true"),
            (keys::LOOKUP_COMPACT, "gentle")
        ]),
        ForceLevel0::Gentle { max_interval: 10 }
    );
    assert_eq!(
        mode(&[
            ("deletion-vectors.enabled", "true"),
            (keys::LOOKUP_COMPACT, "GENTLE"),
            (keys::LOOKUP_COMPACT_MAX_INTERVAL, "2"),
        ]),
        ForceLevel0::Gentle { max_interval: 5 },
        "never below the trigger"
    );
    // Gentle only matters to lookup tables.
    assert_eq!(mode(&[(keys::LOOKUP_COMPACT, "gentle")]), ForceLevel0::Off);
}

#[test]
fn bad_options_are_errors() {
    for (key, value) in [
        (keys::COMPACTION_TRIGGER, "0"),
        (keys::COMPACTION_TRIGGER, "five"),
        (keys::COMPACTION_TRIGGER, "99999999999"),
        (keys::NUM_LEVELS, "1"),
        (keys::SIZE_RATIO, "-1"),
        (keys::MAX_SIZE_AMPLIFICATION_PERCENT, "1.5"),
        ("target-file-size", "0"),
        ("target-file-size", "12 parsecs"),
        ("target-file-size", "mb"),
        (keys::SMALL_FILE_RATIO, "NaN"),
        (keys::OPTIMIZATION_INTERVAL, "soon"),
        (keys::FORCE_UP_LEVEL_0, "yes"),
        (keys::LOOKUP_COMPACT, "lazy"),
    ] {
        let err = parse(&[(key, value)]).unwrap_err();
        assert!(
            err.contains(key) && err.contains(value),
            "{key}={value}: {err}"
        );
    }
}

#[test]
fn memory_sizes_parse_like_memory_size() {
    for (text, bytes) in [
        ("1048576", 1 << 20),
        ("128 mb", 128 << 20),
        ("256MB", 256 << 20),
        ("1 gb", 1 << 30),
        ("  7  ", 7),
        ("3b", 3),
        ("3 bytes", 3),
        ("2k", 2048),
        ("2 KiBiBytes", 2048),
        ("5 m", 5 << 20),
        ("1 mebibytes", 1 << 20),
        ("1g", 1 << 30),
        ("1 gibibytes", 1 << 30),
        ("2 tb", 2 << 40),
        ("1 t", 1 << 40),
        ("1 tebibytes", 1 << 40),
        ("0", 0),
    ] {
        assert_eq!(parse_memory_size(text), Ok(bytes), "{text}");
    }
    for text in [
        "",
        "  ",
        "mb",
        "-1",
        "1.5 mb",
        "1 kib",
        "1 pb",
        "9223372036854775808",
        "9223372036854775807 kb",
    ] {
        assert!(parse_memory_size(text).is_err(), "{text:?}");
    }
}

// ---- properties over random layouts ----

use crate::storage::maintenance::compact_sim::SplitMix64 as Rng;

trait Sizes {
    fn size(&mut self) -> u64;
}

impl Sizes for Rng {
    /// Sizes spread over many magnitudes, so every comparison goes both ways.
    fn size(&mut self) -> u64 {
        let bits = self.below(31);
        1 + self.below(1 << bits)
    }
}

fn random_options(rng: &mut Rng) -> CompactOptions {
    let trigger = 1 + rng.below(8) as u32;
    let mut opts = CompactOptions::with_trigger(trigger);
    opts.num_levels = 2 + rng.below(7) as u32;
    opts.max_size_amp_percent = [0, 25, 100, 200, 400][rng.below(5) as usize];
    opts.size_ratio = [0, 1, 10, 50][rng.below(4) as usize];
    if rng.chance(15) {
        opts.off_peak = Some(OffPeakHours {
            start_hour: rng.below(24) as i32,
            end_hour: rng.below(24) as i32,
            ratio: rng.below(50) as u32,
        });
    }
    opts.deletion_vectors = rng.chance(10);
    opts.keep_delete = rng.chance(5);
    opts.force_level0 = match rng.below(6) {
        0 => ForceLevel0::Always,
        1 => ForceLevel0::Gentle {
            max_interval: 1 + rng.below(3) as u32,
        },
        _ => ForceLevel0::Off,
    };
    if rng.chance(10) {
        opts.optimization_interval_millis = Some(rng.below(2000) as i64);
    }
    if rng.chance(10) {
        opts.total_size_threshold = Some(rng.size());
    }
    if rng.chance(10) {
        opts.incremental_size_threshold = Some(rng.size());
    }
    opts
}

fn random_runs(rng: &mut Rng, opts: &CompactOptions) -> Vec<Run> {
    let mut files = Vec::new();
    let mut seq = 0;
    let mut add = |level: u32, rng: &mut Rng| {
        seq += 1;
        files.push(FileSummary {
            name: format!("f{seq}"),
            level,
            size: rng.size(),
            min_sequence: seq,
            max_sequence: seq,
            creation_millis: 0,
        });
    };
    for _ in 0..rng.below(9) {
        add(0, rng);
    }
    // Sometimes a level above the configured max, as Levels allows.
    let top = opts.num_levels + u32::from(rng.chance(5));
    for level in 1..top {
        if rng.chance(40) {
            for _ in 0..1 + rng.below(3) {
                add(level, rng);
            }
        }
    }
    runs(&files)
}

fn ratio_fails(opts: &CompactOptions, hour: u32, candidate: u64, next: u64) -> bool {
    let percent = 100.0 + f64::from(opts.size_ratio) + f64::from(opts.off_peak_ratio(hour));
    (candidate as f64) * percent / 100.0 < next as f64
}

#[test]
fn property_plans_merge_a_prefix_upwards() {
    let mut rng = Rng(0x5EED);
    let mut reasons = BTreeMap::new();
    for case in 0..30_000 {
        let opts = random_options(&mut rng);
        let runs = random_runs(&mut rng, &opts);
        let mut state = PickState {
            last_full_compaction_millis: rng.chance(50).then(|| rng.below(2000) as i64),
            idle_picks: 0,
        };
        let before = state.clone();
        let now = PickTime {
            epoch_millis: 2000,
            local_hour: rng.below(24) as u32,
        };
        let plan = pick(&runs, &opts, &mut state, now);
        let ctx = format!("case {case}: {opts:?}\n{runs:?}\n{plan:?}");
        let max = max_level(&runs, &opts);
        let early = opts.early_full_enabled();
        let forced = opts.force_level0 != ForceLevel0::Off;

        let Some(plan) = plan else {
            // Without a plan the bucket is within the trigger: run count always picks.
            assert!(runs.len() <= opts.compaction_trigger as usize, "{ctx}");
            continue;
        };
        *reasons.entry(plan.reason).or_insert(0) += 1;
        let k = plan.runs;
        assert!(k >= 1 && k <= runs.len(), "{ctx}");
        // Inputs are exactly the files of the k newest runs, in run order.
        let prefix: Vec<FileSummary> = runs[..k].iter().flat_map(|r| r.files.clone()).collect();
        assert_eq!(plan.inputs, prefix, "{ctx}");
        assert!(!plan.file_rewrite, "{ctx}");
        // Output: never level 0, at or above every input, below every run left out.
        let highest_input = runs[..k].iter().map(|r| r.level).max().unwrap();
        assert!(plan.output_level >= 1, "{ctx}");
        assert!(plan.output_level >= highest_input, "{ctx}");
        assert!(plan.output_level <= max, "{ctx}");
        if k == runs.len() {
            assert_eq!(plan.output_level, max, "{ctx}");
        } else {
            let next = &runs[k];
            assert!(plan.output_level < next.level, "{ctx}");
            // The pick stopped at a run above level 1 that is too big to join.
            let candidate: u64 = runs[..k].iter().map(Run::size).sum();
            assert!(next.level >= 2, "{ctx}");
            assert!(
                ratio_fails(&opts, now.local_hour, candidate, next.size()),
                "{ctx}"
            );
            assert_eq!(plan.output_level, next.level - 1, "{ctx}");
        }
        // Deletes go only when nothing older stays outside the output.
        let expect_drop = !opts.keep_delete && (k == runs.len() || opts.deletion_vectors);
        assert_eq!(plan.drop_delete, expect_drop, "{ctx}");
        // Every plan merges something: two runs, or a level-0 file moving up.
        assert!(k >= 2 || runs[0].level == 0, "{ctx}");
        // Size amplification wins over ratio and count whenever it holds.
        let amp = runs.len() >= opts.compaction_trigger as usize && {
            let newer: u128 = runs[..runs.len() - 1]
                .iter()
                .map(|r| u128::from(r.size()))
                .sum();
            newer * 100
                > u128::from(opts.max_size_amp_percent) * u128::from(runs[runs.len() - 1].size())
        };
        if amp && !early {
            assert_eq!(plan.reason, PickReason::SizeAmplification, "{ctx}");
        }
        if runs.len() < opts.compaction_trigger as usize && !early {
            assert!(forced, "{ctx}");
            assert_eq!(plan.reason, PickReason::ForceLevel0, "{ctx}");
        }
        // The interval clock restarts exactly on full picks.
        if early && k == runs.len() {
            assert_eq!(state.last_full_compaction_millis, Some(2000), "{ctx}");
        } else {
            assert_eq!(
                state.last_full_compaction_millis, before.last_full_compaction_millis,
                "{ctx}"
            );
        }
    }
    // The generator reaches every branch.
    for reason in [
        PickReason::OptimizationInterval,
        PickReason::TotalSizeThreshold,
        PickReason::IncrementalSizeThreshold,
        PickReason::SizeAmplification,
        PickReason::SizeRatio,
        PickReason::RunCount,
        PickReason::ForceLevel0,
    ] {
        assert!(
            reasons.get(&reason).copied().unwrap_or(0) > 20,
            "{reasons:?}"
        );
    }
}

#[test]
fn property_full_compaction_takes_everything_to_the_max_level() {
    let mut rng = Rng(0xF011);
    for case in 0..10_000 {
        let opts = random_options(&mut rng);
        let runs = random_runs(&mut rng, &opts);
        let odd = |f: &FileSummary| f.size % 2 == 1;
        let plan = pick_full(&runs, &opts, odd);
        let ctx = format!("case {case}: {runs:?}\n{plan:?}");
        let max = max_level(&runs, &opts);
        let all: Vec<FileSummary> = runs.iter().flat_map(|r| r.files.clone()).collect();
        match plan {
            None => {
                let done = runs.is_empty()
                    || (runs.len() == 1
                        && runs[0].level == max
                        && !opts.force_rewrite_all_files
                        && !runs[0].files.iter().any(odd));
                assert!(done, "{ctx}");
            }
            Some(plan) => {
                assert_eq!(plan.output_level, max, "{ctx}");
                assert_eq!(plan.drop_delete, !opts.keep_delete, "{ctx}");
                if plan.file_rewrite {
                    assert!(runs.len() == 1 && runs[0].level == max, "{ctx}");
                    assert!(plan.inputs.iter().all(odd), "{ctx}");
                    let want: Vec<_> = all.into_iter().filter(odd).collect();
                    assert_eq!(plan.inputs, want, "{ctx}");
                } else {
                    assert_eq!(plan.inputs, all, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn property_runs_keep_every_file_once_in_order() {
    let mut rng = Rng(0x1E7E);
    for _ in 0..5_000 {
        let files: Vec<FileSummary> = (0..rng.below(20))
            .map(|i| {
                let min = rng.below(10) as i64;
                FileSummary {
                    name: format!("f{i}"),
                    level: if rng.chance(60) {
                        0
                    } else {
                        rng.below(6) as u32
                    },
                    size: rng.size(),
                    min_sequence: min,
                    max_sequence: min + rng.below(3) as i64,
                    creation_millis: rng.below(3) as i64,
                }
            })
            .collect();
        let got = runs(&files);
        let mut names: Vec<&str> = got
            .iter()
            .flat_map(|r| r.files.iter().map(|f| f.name.as_str()))
            .collect();
        names.sort_unstable();
        let mut want: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        want.sort_unstable();
        assert_eq!(names, want);
        for r in &got {
            assert!(r.files.iter().all(|f| f.level == r.level));
            assert!(r.level > 0 || r.files.len() == 1);
        }
        for pair in got.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.level == 0 && b.level == 0 {
                let (a, b) = (&a.files[0], &b.files[0]);
                assert!((a.max_sequence, -a.min_sequence) >= (b.max_sequence, -b.min_sequence));
            } else {
                assert!(a.level < b.level);
            }
        }
    }
}
