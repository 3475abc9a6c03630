//! What Paimon's universal compaction costs one bucket, by simulation (no I/O): write
//! amplification, sorted runs per read, files kept, writer stalls, for a few workloads and
//! option variations. Prints one table.
//!
//! `cargo bench --bench compaction_sim`. The simulator is cheap: `cargo bench --profile dev
//! --bench compaction_sim` prints the same figures without a release build.

use std::collections::BTreeMap;
use std::time::Instant;

use tarn::storage::bench::{MergeModel, SimConfig, SimStats, simulate};
use tarn::storage::compaction::CompactOptions;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: f64 = (1u64 << 30) as f64;
const COMMITS: usize = 10_000;

/// The same numbers every run.
use tarn::storage::bench::SplitMix64 as Rng;

/// Spread over magnitudes: 1 KiB to 32 MiB, each power of two equally likely.
fn mixed_size(rng: &mut Rng) -> u64 {
    let exp = 10 + rng.next() % 15;
    (1 << exp) + rng.next() % (1 << exp)
}

fn options(pairs: &[(&str, &str)]) -> CompactOptions {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    CompactOptions::from_options(&map).expect("valid options")
}

struct Workload {
    name: &'static str,
    commits: Vec<u64>,
    config: SimConfig,
}

fn workloads() -> Vec<Workload> {
    let small = vec![4 * KIB; COMMITS];
    let mut rng = Rng(42);
    let mixed: Vec<u64> = (0..COMMITS).map(|_| mixed_size(&mut rng)).collect();
    let default = SimConfig::new(CompactOptions::default());
    let with = |pairs: &[(&str, &str)]| SimConfig::new(options(pairs));
    vec![
        Workload {
            name: "4 KiB, defaults",
            commits: small.clone(),
            config: default.clone(),
        },
        Workload {
            name: "mixed 1K-32M, defaults",
            commits: mixed.clone(),
            config: default.clone(),
        },
        Workload {
            name: "1 MiB upserts, 256M keys",
            commits: vec![MIB; COMMITS],
            config: SimConfig {
                merge: MergeModel::KeySpace { bytes: 256 * MIB },
                ..default.clone()
            },
        },
        Workload {
            name: "4 KiB, trigger 3",
            commits: small.clone(),
            config: with(&[("num-sorted-run.compaction-trigger", "3")]),
        },
        Workload {
            name: "4 KiB, trigger 10",
            commits: small.clone(),
            config: with(&[("num-sorted-run.compaction-trigger", "10")]),
        },
        Workload {
            name: "4 KiB, size-ratio 10",
            commits: small.clone(),
            config: with(&[("compaction.size-ratio", "10")]),
        },
        Workload {
            name: "4 KiB, max-size-amp 100",
            commits: small.clone(),
            config: with(&[("compaction.max-size-amplification-percent", "100")]),
        },
        Workload {
            name: "mixed, trigger 10",
            commits: mixed.clone(),
            config: with(&[("num-sorted-run.compaction-trigger", "10")]),
        },
        Workload {
            name: "mixed, max-size-amp 100",
            commits: mixed,
            config: with(&[("compaction.max-size-amplification-percent", "100")]),
        },
        Workload {
            name: "4 KiB, lookup (force L0)",
            commits: small.clone(),
            config: with(&[("changelog-producer", "lookup")]),
        },
        Workload {
            name: "4 KiB, compaction lags 3",
            commits: small,
            config: SimConfig {
                lag_commits: 3,
                ..default
            },
        },
    ]
}

fn row(name: &str, stats: &SimStats, millis: u128) -> String {
    format!(
        "{name:<26} {:>7} {:>9.3} {:>10.3} {:>8.2} {:>6} {:>5} {:>5} {:>6.2} {:>5} {:>6} {:>6} {:>7}",
        stats.commits,
        stats.commit_bytes as f64 / GIB,
        stats.compaction_bytes_written as f64 / GIB,
        stats.write_amplification(),
        stats.compactions,
        stats.max_runs,
        stats.max_settled_runs,
        stats.mean_runs(),
        stats.final_runs.len(),
        stats.final_files,
        stats.stalls,
        millis,
    )
}

fn main() {
    println!(
        "{:<26} {:>7} {:>9} {:>10} {:>8} {:>6} {:>5} {:>5} {:>6} {:>5} {:>6} {:>6} {:>7}",
        "workload",
        "commits",
        "in GiB",
        "comp. GiB",
        "w-amp",
        "comps",
        "peak",
        "max",
        "mean",
        "runs",
        "files",
        "stalls",
        "sim ms",
    );
    let mut reasons = Vec::new();
    for w in workloads() {
        let started = Instant::now();
        let stats = simulate(w.commits.iter().copied(), &w.config);
        println!("{}", row(w.name, &stats, started.elapsed().as_millis()));
        reasons.push((w.name, stats.by_reason));
    }
    println!("\ncompactions (GiB written) by reason:");
    for (name, by_reason) in reasons {
        let parts: Vec<String> = by_reason
            .iter()
            .map(|(reason, r)| {
                format!(
                    "{reason:?} {} ({:.3})",
                    r.compactions,
                    r.bytes_written as f64 / GIB
                )
            })
            .collect();
        println!("{name:<26} {}", parts.join(", "));
    }
    println!(
        "\nin: bytes committed; comp.: bytes compactions wrote; w-amp: (in + comp.) / in; \
         peak: most runs before a compaction caught up; max / mean: runs after each commit; \
         runs / files: at the end; stalls: writer waits for an unfinished compaction."
    );
}
