use super::*;

/// The weight to pass for an entry under a one-character name to cost `total` bytes.
fn costing(total: usize) -> usize {
    total - 2 - ENTRY_OVERHEAD
}

fn stats_of(budget: &CacheBudget, kind: &str) -> CacheStats {
    budget
        .stats()
        .into_iter()
        .find(|s| s.kind == kind)
        .unwrap_or_default()
}

#[test]
fn evicts_the_least_recently_used_entry_of_any_table() {
    let budget = Arc::new(CacheBudget::new(4000));
    let t1 = budget.cache::<u32>("manifest");
    let t2 = budget.cache::<u32>("manifest");
    assert!(t1.put("a", 1, costing(1000)));
    assert!(t2.put("b", 2, costing(1000)));
    assert!(t1.put("c", 3, costing(1000)));
    assert_eq!(t1.get("a"), Some(1)); // a is now more recent than t2's b
    assert!(t2.put("d", 4, costing(1000)));
    assert_eq!(budget.used(), 4000, "exactly full: nothing goes yet");
    assert!(t1.put("e", 5, costing(1000)));
    // b (table 2) was used longest ago, then c (table 1): only b had to go.
    assert_eq!(t2.peek("b"), None);
    assert_eq!(t1.peek("c"), Some(3));
    assert_eq!(t1.peek("a"), Some(1));
    assert_eq!(budget.used(), 4000);
    assert!(t2.put("f", 6, costing(1000)));
    // Then c (table 1): a was used after it.
    assert_eq!(t1.peek("c"), None);
    assert_eq!(t1.peek("a"), Some(1));
    assert!(t2.put("g", 7, costing(600)));
    assert_eq!(t1.peek("a"), None);
    assert_eq!(t2.peek("d"), Some(4));
    assert_eq!(budget.used(), 3600);
    assert_eq!(stats_of(&budget, "manifest").evictions, 3);
}

#[test]
fn entries_are_weighed_in_bytes_with_their_key() {
    let budget = Arc::new(CacheBudget::new(1 << 20));
    let cache = budget.cache::<Arc<Vec<u8>>>("file_index");
    cache.put("some-file-name", Arc::new(vec![0; 100]), 100);
    assert_eq!(
        budget.used(),
        100 + 2 * "some-file-name".len() + ENTRY_OVERHEAD
    );
    // Replacing an entry replaces its weight.
    cache.put("some-file-name", Arc::new(vec![0; 10]), 10);
    assert_eq!(
        budget.used(),
        10 + 2 * "some-file-name".len() + ENTRY_OVERHEAD
    );
    let s = stats_of(&budget, "file_index");
    assert_eq!((s.entries, s.bytes), (1, budget.used() as u64));
    cache.remove("some-file-name");
    assert_eq!(budget.used(), 0);
    assert_eq!(stats_of(&budget, "file_index").entries, 0);
}

#[test]
fn an_entry_over_a_quarter_of_the_budget_is_not_kept() {
    let budget = Arc::new(CacheBudget::new(4000));
    let cache = budget.cache::<u32>("key_set");
    assert!(cache.put("a", 1, costing(1000)));
    assert!(
        !cache.admits(1000),
        "1000 plus its overhead is over 4000 / 4"
    );
    assert!(cache.admits(1000 - ENTRY_OVERHEAD));
    assert!(!cache.put("big", 2, costing(1001)));
    assert_eq!(cache.get("big"), None);
    assert_eq!(cache.peek("a"), Some(1), "nothing was evicted for it");
    // Refused under a name that held a value: the old value goes too, so a reader never
    // takes the old value for the one just refused.
    assert!(!cache.put("a", 3, costing(2000)));
    assert_eq!(cache.peek("a"), None);
    assert_eq!(budget.used(), 0);
    // A budget of nothing keeps nothing.
    let none = Arc::new(CacheBudget::new(0));
    let c = none.cache::<u32>("schema");
    assert!(!c.put("x", 1, 0));
    assert_eq!(c.get("x"), None);
}

#[test]
fn counts_hits_misses_entries_and_bytes_per_kind() {
    let budget = Arc::new(CacheBudget::new(1 << 20));
    let m1 = budget.cache::<u32>("manifest");
    let m2 = budget.cache::<u32>("manifest");
    let k = budget.cache::<u32>("key_set");
    assert_eq!(m1.get("x"), None);
    m1.put("x", 1, 10);
    m2.put("y", 2, 20);
    assert_eq!(m1.get("x"), Some(1));
    assert_eq!(m2.get("x"), None, "caches of two tables do not share names");
    assert_eq!(m2.get("y"), Some(2));
    assert_eq!(m1.peek("x"), Some(1), "peeking counts nothing");
    k.put("z", 3, 30);
    let stats = budget.stats();
    assert_eq!(
        stats.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["key_set", "manifest"]
    );
    let m = stats_of(&budget, "manifest");
    assert_eq!((m.hits, m.misses, m.entries, m.evictions), (2, 2, 2, 0));
    assert_eq!(m.bytes as usize, 10 + 20 + 2 * (2 + ENTRY_OVERHEAD));
    let ks = stats_of(&budget, "key_set");
    assert_eq!((ks.hits, ks.misses, ks.entries), (0, 0, 1));
    assert_eq!(m.bytes + ks.bytes, budget.used() as u64);
}

#[test]
fn peeking_does_not_make_an_entry_recent() {
    let budget = Arc::new(CacheBudget::new(4000));
    let cache = budget.cache::<u32>("live_files");
    for (name, v) in [("a", 1), ("b", 2), ("c", 3), ("d", 4)] {
        cache.put(name, v, costing(1000));
    }
    assert_eq!(cache.peek("a"), Some(1));
    cache.put("e", 5, costing(1000));
    assert_eq!(cache.peek("a"), None, "a was still the least recently used");
    assert_eq!(cache.get("b"), Some(2));
    cache.put("f", 6, costing(1000));
    assert_eq!(cache.peek("b"), Some(2), "a get made b recent");
    assert_eq!(cache.peek("c"), None);
}

#[test]
fn put_if_decides_against_the_stored_value() {
    let budget = Arc::new(CacheBudget::new(1 << 20));
    let cache = budget.cache::<u32>("live_files");
    let newer = |new: u32| move |old: Option<&u32>| old.is_none_or(|o| *o < new);
    assert!(cache.put_if("latest", 5, 10, newer(5)));
    assert!(!cache.put_if("latest", 3, 10, newer(3)));
    assert_eq!(cache.peek("latest"), Some(5));
    assert!(cache.put_if("latest", 7, 10, newer(7)));
    assert_eq!(cache.peek("latest"), Some(7));
    assert_eq!(stats_of(&budget, "live_files").entries, 1);
}

#[test]
fn dropping_a_cache_frees_its_entries_without_counting_evictions() {
    let budget = Arc::new(CacheBudget::new(1 << 20));
    let kept = budget.cache::<u32>("manifest");
    let dropped = budget.cache::<u32>("manifest");
    kept.put("a", 1, 100);
    for i in 0..10 {
        dropped.put(&i.to_string(), i, 100);
    }
    let before = budget.used();
    drop(dropped);
    assert_eq!(budget.used(), 100 + 2 + ENTRY_OVERHEAD);
    assert!(before > budget.used());
    let m = stats_of(&budget, "manifest");
    assert_eq!((m.entries, m.evictions), (1, 0));
    assert_eq!(m.bytes as usize, budget.used());
    // The order no longer names the dropped entries: filling the budget evicts `a` cleanly.
    budget.set_limit(0);
    assert_eq!(kept.peek("a"), None);
    assert_eq!(budget.used(), 0);
    assert_eq!(stats_of(&budget, "manifest").evictions, 1);
}

#[test]
fn a_smaller_budget_evicts_at_once() {
    let budget = Arc::new(CacheBudget::new(10_000));
    let cache = budget.cache::<u32>("manifest");
    for i in 0..8 {
        cache.put(&i.to_string(), i, costing(1000));
    }
    assert_eq!(budget.used(), 8000);
    budget.set_limit(3000);
    assert_eq!(budget.used(), 3000);
    assert_eq!(cache.peek("4"), None);
    assert_eq!(cache.peek("5"), Some(5), "the newest stay");
}

/// A server with a thousand tables, each with its caches: what they hold together never
/// exceeds the budget, every kind's figures add up to it, and the newest entries are there.
#[test]
fn a_thousand_tables_stay_under_the_budget() {
    const LIMIT: usize = 1 << 20;
    let budget = Arc::new(CacheBudget::new(LIMIT));
    let kinds = ["manifest", "manifest_list", "key_set"];
    let tables: Vec<Vec<BudgetedCache<Arc<Vec<u8>>>>> = (0..1000)
        .map(|_| kinds.iter().map(|k| budget.cache(k)).collect())
        .collect();
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut asked = 0usize;
    for round in 0..5 {
        for (t, caches) in tables.iter().enumerate() {
            for cache in caches {
                let size = 100 + next(4000) as usize;
                asked += size;
                let name = format!("file-{t}-{round}");
                assert!(cache.put(&name, Arc::new(vec![0u8; size]), size));
                assert!(budget.used() <= LIMIT);
            }
        }
    }
    assert!(asked > 10 * LIMIT, "the test must overfill the budget");
    let stats = budget.stats();
    assert_eq!(
        stats.iter().map(|s| s.bytes).sum::<u64>(),
        budget.used() as u64
    );
    assert!(
        budget.used() > LIMIT - 5000,
        "the budget is used, not wasted"
    );
    assert!(stats.iter().all(|s| s.evictions > 0));
    let last = &tables[999];
    for cache in last {
        assert!(
            cache.peek("file-999-4").is_some(),
            "the newest entries stay"
        );
    }
    assert!(tables[0][0].peek("file-0-0").is_none(), "the oldest went");
    drop(tables);
    assert_eq!(budget.used(), 0);
    assert!(
        budget
            .stats()
            .iter()
            .all(|s| s.entries == 0 && s.bytes == 0)
    );
}

#[test]
fn concurrent_use_keeps_the_sums_right() {
    let budget = Arc::new(CacheBudget::new(60_000));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                let cache = budget.cache::<u64>("key_positions");
                for i in 0..2000u64 {
                    // A hot set that fits, and names used once that push entries out.
                    let name = if i % 10 == 0 {
                        format!("once-{i}")
                    } else {
                        (i % 13).to_string()
                    };
                    if cache.get(&name).is_none() {
                        cache.put(&name, i, 100 + (i * t) as usize % 900);
                    }
                    assert!(budget.used() <= 60_000);
                }
                cache
            })
        })
        .collect();
    let caches: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let s = stats_of(&budget, "key_positions");
    assert_eq!(s.bytes as usize, budget.used());
    assert_eq!(s.hits + s.misses, 4 * 2000);
    assert!(s.evictions > 0 && s.hits > 0);
    drop(caches);
    assert_eq!(budget.used(), 0);
}
