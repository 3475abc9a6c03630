use std::collections::HashSet;
use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;

use super::*;
use crate::storage::documents::escape;

const DB: &str = "public";

fn memory_io() -> FileIO {
    FileIO::new(Arc::new(InMemory::new()), None)
}

/// A store whose writes wait a moment, so that servers racing to write interleave.
fn slow_io() -> FileIO {
    memory_io().with_write_latency(std::time::Duration::from_millis(1))
}

fn store() -> SequenceStore {
    SequenceStore::new(memory_io())
}

fn params() -> SequenceParams {
    SequenceParams::default()
}

async fn take(store: &SequenceStore, name: &str, n: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(store.nextval(DB, name).await.unwrap());
    }
    out
}

/// The message and SQLSTATE of a failed call.
fn failure<T: std::fmt::Debug>(r: Result<T, SequenceError>) -> (String, &'static str) {
    let e = r.unwrap_err();
    (e.to_string(), e.sqlstate())
}

#[tokio::test]
async fn defaults_follow_type_and_direction() {
    let store = store();
    store.create(DB, "big", &params()).await.unwrap();
    let big = store.get(DB, "big").await.unwrap().unwrap();
    let expected = SequenceOptions {
        data_type: SequenceType::BigInt,
        start: 1,
        increment: 1,
        min_value: 1,
        max_value: i64::MAX,
        cache: 1,
        cycle: false,
        owned_by: None,
    };
    assert_eq!(big.options, expected);
    assert_eq!(big.last_value, None);

    let small = SequenceParams {
        data_type: Some(SequenceType::from_name("int2").unwrap()),
        ..params()
    };
    store.create(DB, "small", &small).await.unwrap();
    let small = store.get(DB, "small").await.unwrap().unwrap().options;
    assert_eq!(
        (small.min_value, small.max_value, small.start),
        (1, 32_767, 1)
    );

    let down = SequenceParams {
        data_type: Some(SequenceType::Integer),
        increment: Some(-1),
        ..params()
    };
    store.create(DB, "down", &down).await.unwrap();
    let down = store.get(DB, "down").await.unwrap().unwrap().options;
    assert_eq!(
        (down.min_value, down.max_value, down.start),
        (i64::from(i32::MIN), -1, -1)
    );
    let big_down = SequenceParams {
        increment: Some(-3),
        ..params()
    };
    store.create(DB, "big_down", &big_down).await.unwrap();
    let big_down = store.get(DB, "big_down").await.unwrap().unwrap().options;
    assert_eq!((big_down.min_value, big_down.max_value), (i64::MIN, -1));
}

#[tokio::test]
async fn ascending_and_descending_values() {
    let store = store();
    store.create(DB, "up", &params()).await.unwrap();
    assert_eq!(take(&store, "up", 3).await, [1, 2, 3]);
    let by_five = SequenceParams {
        increment: Some(5),
        start: Some(10),
        ..params()
    };
    store.create(DB, "five", &by_five).await.unwrap();
    assert_eq!(take(&store, "five", 3).await, [10, 15, 20]);
    let down = SequenceParams {
        increment: Some(-2),
        ..params()
    };
    store.create(DB, "down", &down).await.unwrap();
    assert_eq!(take(&store, "down", 3).await, [-1, -3, -5]);
    // The first block (CACHE 1: a server block) is what the sequence shows as reserved.
    let up = store.get(DB, "up").await.unwrap().unwrap();
    assert_eq!(up.last_value, Some(SERVER_BLOCK as i64));
}

#[tokio::test]
async fn bounds_stop_or_cycle() {
    let store = store();
    let three = SequenceParams {
        max_value: Some(Some(3)),
        ..params()
    };
    store.create(DB, "s", &three).await.unwrap();
    // The block is cut at MAXVALUE: every value up to it is handed out, then the error.
    assert_eq!(take(&store, "s", 3).await, [1, 2, 3]);
    assert_eq!(
        failure(store.nextval(DB, "s").await),
        (
            "nextval: reached maximum value of sequence \"s\" (3)".into(),
            "2200H"
        )
    );
    // Another server over the same warehouse is refused as well.
    let other = SequenceStore::new(store.io.clone());
    assert!(other.nextval(DB, "s").await.is_err());

    let down = SequenceParams {
        increment: Some(-1),
        min_value: Some(Some(-3)),
        ..params()
    };
    store.create(DB, "d", &down).await.unwrap();
    assert_eq!(take(&store, "d", 3).await, [-1, -2, -3]);
    assert_eq!(
        failure(store.nextval(DB, "d").await).0,
        "nextval: reached minimum value of sequence \"d\" (-3)"
    );

    let cycle = SequenceParams {
        min_value: Some(Some(1)),
        max_value: Some(Some(3)),
        start: Some(2),
        cycle: Some(true),
        ..params()
    };
    store.create(DB, "c", &cycle).await.unwrap();
    assert_eq!(take(&store, "c", 6).await, [2, 3, 1, 2, 3, 1]);
    let cycle_down = SequenceParams {
        increment: Some(-1),
        min_value: Some(Some(-3)),
        cycle: Some(true),
        ..params()
    };
    store.create(DB, "cd", &cycle_down).await.unwrap();
    assert_eq!(take(&store, "cd", 5).await, [-1, -2, -3, -1, -2]);
}

#[tokio::test]
async fn i64_ends_do_not_overflow() {
    let store = store();
    let top = SequenceParams {
        start: Some(i64::MAX - 2),
        ..params()
    };
    store.create(DB, "top", &top).await.unwrap();
    assert_eq!(
        take(&store, "top", 3).await,
        [i64::MAX - 2, i64::MAX - 1, i64::MAX]
    );
    assert_eq!(failure(store.nextval(DB, "top").await).1, "2200H");

    let huge = SequenceParams {
        increment: Some(i64::MAX),
        min_value: Some(Some(0)),
        cycle: Some(true),
        cache: Some(1_000_000_000_000),
        ..params()
    };
    store.create(DB, "huge", &huge).await.unwrap();
    assert_eq!(take(&store, "huge", 5).await, [0, i64::MAX, 0, i64::MAX, 0]);

    let bottom = SequenceParams {
        increment: Some(i64::MIN),
        max_value: Some(Some(i64::MAX)),
        start: Some(-1),
        ..params()
    };
    store.create(DB, "bottom", &bottom).await.unwrap();
    assert_eq!(take(&store, "bottom", 1).await, [-1]);
    assert_eq!(
        failure(store.nextval(DB, "bottom").await).0,
        format!(
            "nextval: reached minimum value of sequence \"bottom\" ({})",
            i64::MIN
        )
    );
    // setval to the very end, then nextval: the step past it is refused, not wrapped.
    store.setval(DB, "top", i64::MAX, true).await.unwrap();
    assert!(store.nextval(DB, "top").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_never_hand_out_a_value_twice() {
    let io = slow_io();
    let servers = [SequenceStore::new(io.clone()), SequenceStore::new(io)];
    servers[0].create(DB, "s", &params()).await.unwrap();
    let cached = SequenceParams {
        cache: Some(5),
        ..params()
    };
    servers[0].create(DB, "c", &cached).await.unwrap();
    let mut tasks = Vec::new();
    for server in &servers {
        for task in 0..8 {
            let server = server.clone();
            let name = if task % 2 == 0 { "s" } else { "c" };
            tasks.push(tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..60 {
                    got.push((name, server.nextval(DB, name).await.unwrap()));
                    tokio::task::yield_now().await;
                }
                got
            }));
        }
    }
    let mut seen = HashSet::new();
    for task in tasks {
        for value in task.await.unwrap() {
            assert!(seen.insert(value), "{value:?} was handed out twice");
        }
    }
    assert_eq!(seen.len(), 2 * 8 * 60);
    // The reservations never ran past what was handed out by more than a block per server.
    let s = servers[1].get(DB, "s").await.unwrap().unwrap();
    let max_s = seen.iter().filter(|(n, _)| *n == "s").map(|v| v.1).max();
    assert!(s.last_value.unwrap() <= max_s.unwrap() + 2 * SERVER_BLOCK as i64);
}

#[tokio::test]
async fn a_restarted_server_continues_past_the_reserved_values() {
    let io = memory_io();
    let first = SequenceStore::new(io.clone());
    first.create(DB, "s", &params()).await.unwrap();
    assert_eq!(take(&first, "s", 3).await, [1, 2, 3]);
    // A second server (or this one restarted) starts after the first server's block.
    let second = SequenceStore::new(io.clone());
    let block = SERVER_BLOCK as i64;
    assert_eq!(take(&second, "s", 2).await, [block + 1, block + 2]);
    // The first goes on with its own block, the second's still unused.
    assert_eq!(take(&first, "s", 1).await, [4]);
    drop(first);
    let restarted = SequenceStore::new(io);
    assert_eq!(take(&restarted, "s", 1).await, [2 * block + 1]);

    let cached = SequenceParams {
        cache: Some(3),
        ..params()
    };
    restarted.create(DB, "c", &cached).await.unwrap();
    assert_eq!(take(&restarted, "c", 4).await, [1, 2, 3, 4]);
    let again = SequenceStore::new(restarted.io.clone());
    assert_eq!(take(&again, "c", 1).await, [7]);
}

#[tokio::test]
async fn setval_sets_the_next_value_everywhere() {
    let store = store();
    store.create(DB, "s", &params()).await.unwrap();
    assert_eq!(take(&store, "s", 1).await, [1]);
    assert_eq!(store.setval(DB, "s", 100, true).await.unwrap(), 100);
    // This server's block is dropped: no 2.
    assert_eq!(take(&store, "s", 2).await, [101, 102]);
    assert_eq!(
        store.get(DB, "s").await.unwrap().unwrap().last_value,
        Some(100 + SERVER_BLOCK as i64)
    );
    store.setval(DB, "s", 7, false).await.unwrap();
    assert_eq!(store.get(DB, "s").await.unwrap().unwrap().last_value, None);
    let other = SequenceStore::new(store.io.clone());
    assert_eq!(take(&other, "s", 1).await, [7]);
    store.setval(DB, "s", 50, true).await.unwrap();
    assert_eq!(take(&store, "s", 1).await, [51]);
    assert_eq!(
        failure(store.setval(DB, "s", 0, true).await),
        (
            format!(
                "setval: value 0 is out of bounds for sequence \"s\" (1..{})",
                i64::MAX
            ),
            "22003"
        )
    );
    assert_eq!(failure(store.setval(DB, "none", 1, true).await).1, "42P01");
}

#[tokio::test]
async fn options_are_checked_as_postgres_checks_them() {
    let store = store();
    let cases = [
        (
            SequenceParams {
                increment: Some(0),
                ..params()
            },
            "INCREMENT must not be zero",
        ),
        (
            SequenceParams {
                min_value: Some(Some(5)),
                max_value: Some(Some(5)),
                ..params()
            },
            "MINVALUE (5) must be less than MAXVALUE (5)",
        ),
        (
            SequenceParams {
                start: Some(0),
                ..params()
            },
            "START value (0) cannot be less than MINVALUE (1)",
        ),
        (
            SequenceParams {
                start: Some(100),
                max_value: Some(Some(10)),
                ..params()
            },
            "START value (100) cannot be greater than MAXVALUE (10)",
        ),
        (
            SequenceParams {
                data_type: Some(SequenceType::SmallInt),
                max_value: Some(Some(40_000)),
                ..params()
            },
            "MAXVALUE (40000) is out of range for sequence data type smallint",
        ),
        (
            SequenceParams {
                data_type: Some(SequenceType::Integer),
                min_value: Some(Some(-3_000_000_000)),
                ..params()
            },
            "MINVALUE (-3000000000) is out of range for sequence data type integer",
        ),
        (
            SequenceParams {
                cache: Some(0),
                ..params()
            },
            "CACHE (0) must be greater than zero",
        ),
        (
            SequenceParams {
                restart: Some(Some(20)),
                max_value: Some(Some(10)),
                ..params()
            },
            "RESTART value (20) cannot be greater than MAXVALUE (10)",
        ),
    ];
    for (p, message) in cases {
        assert_eq!(
            failure(store.create(DB, "s", &p).await),
            (message.to_owned(), "22023")
        );
    }
    assert!(store.get(DB, "s").await.unwrap().is_none());
    assert_eq!(
        failure(SequenceType::from_name("text")).0,
        "sequence type must be smallint, integer, or bigint"
    );
    assert_eq!(failure(store.create(DB, "a/b", &params()).await).1, "42602");
    assert_eq!(failure(store.create(DB, "", &params()).await).1, "42602");
}

#[tokio::test]
async fn create_get_list_drop() {
    let store = store();
    let owned = SequenceParams {
        owned_by: Some(Some(OwnedBy {
            table: "t".into(),
            column: "id".into(),
        })),
        ..params()
    };
    store.create(DB, "t_id_seq", &owned).await.unwrap();
    store.create(DB, "b", &params()).await.unwrap();
    store.create("other", "x", &params()).await.unwrap();
    assert_eq!(
        failure(store.create(DB, "b", &params()).await),
        ("relation \"b\" already exists".into(), "42P07")
    );
    let names = |l: Vec<SequenceInfo>| l.into_iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(names(store.list(DB).await.unwrap()), ["b", "t_id_seq"]);
    assert_eq!(
        names(store.list("nowhere").await.unwrap()),
        Vec::<String>::new()
    );
    assert_eq!(store.owned_by(DB, "t").await.unwrap(), ["t_id_seq"]);
    assert!(store.owned_by(DB, "b").await.unwrap().is_empty());
    assert!(
        store.get(DB, "B").await.unwrap().is_none(),
        "names are case-sensitive"
    );

    assert_eq!(take(&store, "b", 2).await, [1, 2]);
    assert!(store.drop(DB, "b").await.unwrap());
    assert!(!store.drop(DB, "b").await.unwrap());
    assert_eq!(
        failure(store.nextval(DB, "b").await),
        ("relation \"b\" does not exist".into(), "42P01")
    );
    assert_eq!(names(store.list(DB).await.unwrap()), ["t_id_seq"]);
    // Only the tombstone is left, and a new sequence of that name starts afresh after it.
    let tombstone = DOCS.versions(&store.io, DB, "b").await.unwrap();
    assert_eq!(tombstone.len(), 1);
    store.create(DB, "b", &params()).await.unwrap();
    assert_eq!(take(&store, "b", 1).await, [1]);
    let versions = DOCS.versions(&store.io, DB, "b").await.unwrap();
    assert!(versions.iter().all(|v| *v >= tombstone[0]), "{versions:?}");
    assert!(versions.last() > tombstone.last());
}

#[tokio::test]
async fn concurrent_creates_have_one_winner() {
    let io = slow_io();
    let (a, b) = (SequenceStore::new(io.clone()), SequenceStore::new(io));
    let p = params();
    let (ra, rb) = tokio::join!(a.create(DB, "s", &p), b.create(DB, "s", &p));
    assert_eq!(
        u8::from(ra.is_ok()) + u8::from(rb.is_ok()),
        1,
        "{ra:?} {rb:?}"
    );
}

#[tokio::test]
async fn alter_and_rename() {
    let store = store();
    store.create(DB, "s", &params()).await.unwrap();
    assert_eq!(take(&store, "s", 1).await, [1]);
    // The block reserved 1..=32; its unused rest goes back, so MAXVALUE 10 is allowed.
    let cap = SequenceParams {
        max_value: Some(Some(10)),
        ..params()
    };
    let info = store.alter(DB, "s", &cap).await.unwrap();
    assert_eq!((info.options.max_value, info.last_value), (10, Some(1)));
    assert_eq!(take(&store, "s", 9).await, [2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert!(store.nextval(DB, "s").await.is_err());
    let restart = SequenceParams {
        restart: Some(Some(5)),
        increment: Some(2),
        ..params()
    };
    store.alter(DB, "s", &restart).await.unwrap();
    assert_eq!(take(&store, "s", 3).await, [5, 7, 9]);
    let too_low = SequenceParams {
        restart: Some(Some(0)),
        ..params()
    };
    assert_eq!(
        failure(store.alter(DB, "s", &too_low).await).0,
        "RESTART value (0) cannot be less than MINVALUE (1)"
    );
    let to_start = SequenceParams {
        restart: Some(None),
        ..params()
    };
    store.alter(DB, "s", &to_start).await.unwrap();
    assert_eq!(take(&store, "s", 1).await, [1]);
    // The type's own bounds follow a change of type; NO MAXVALUE is the type's maximum.
    store.create(DB, "t", &params()).await.unwrap();
    let small = SequenceParams {
        data_type: Some(SequenceType::SmallInt),
        ..params()
    };
    let info = store.alter(DB, "t", &small).await.unwrap();
    assert_eq!(info.options.max_value, 32_767);
    let no_max = SequenceParams {
        max_value: Some(None),
        ..params()
    };
    let info = store.alter(DB, "s", &no_max).await.unwrap();
    assert_eq!(info.options.max_value, i64::MAX);

    assert_eq!(take(&store, "t", 3).await, [1, 2, 3]);
    store.rename(DB, "t", "u").await.unwrap();
    assert!(store.get(DB, "t").await.unwrap().is_none());
    let u = store.get(DB, "u").await.unwrap().unwrap();
    assert_eq!(u.options.max_value, 32_767);
    // This server's block is gone with the old name: a gap, never a repeat.
    assert_eq!(take(&store, "u", 1).await, [SERVER_BLOCK as i64 + 1]);
    assert_eq!(failure(store.rename(DB, "u", "s").await).1, "42P07");
    assert_eq!(failure(store.rename(DB, "t", "v").await).1, "42P01");
    assert!(store.get(DB, "u").await.unwrap().is_some());
}

#[tokio::test]
async fn a_stale_write_into_a_pruned_hole_does_not_count() {
    let store = store();
    let two = SequenceParams {
        cache: Some(2),
        ..params()
    };
    store.create(DB, "s", &two).await.unwrap();
    take(&store, "s", 40).await;
    let versions = DOCS.versions(&store.io, DB, "s").await.unwrap();
    let newest = *versions.last().unwrap();
    assert_eq!(newest, 21);
    assert_eq!(
        versions.len() as u64,
        KEEP_VERSIONS + 1,
        "pruned: {versions:?}"
    );
    // A server that read version 1 long ago writes version 2, freed by pruning: not a win.
    let (_, old) = DOCS.load::<Doc>(&store.io, DB, "s").await.unwrap().unwrap();
    let stale = Doc::new(Some("gone".into()), old.sequence.clone());
    assert!(!store.commit(DB, "s", 2, &stale).await.unwrap());
    assert!(
        !store
            .io
            .exists(&DOCS.path(&store.io, DB, "s", 2))
            .await
            .unwrap()
    );
    assert_eq!(take(&store, "s", 1).await, [41]);

    // A write another server built upon is a win even though a newer version exists.
    let newest = *DOCS
        .versions(&store.io, DB, "s")
        .await
        .unwrap()
        .last()
        .unwrap();
    let mine = Doc::new(None, old.sequence.clone());
    let next = Doc::new(Some(mine.id.clone()), old.sequence.clone());
    let bytes = serde_json::to_vec(&next).unwrap();
    let at = |v| DOCS.path(&store.io, DB, "s", v);
    assert!(store.io.write_new(&at(newest + 2), bytes).await.unwrap());
    assert!(store.commit(DB, "s", newest + 1, &mine).await.unwrap());
    let other = Doc::new(None, old.sequence);
    assert!(
        !store
            .built_upon(DB, "s", newest + 1, &other.id)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn a_malformed_document_is_a_format_error_naming_the_file() {
    let store = store();
    store.create(DB, "s", &params()).await.unwrap();
    let path = DOCS.path(&store.io, DB, "s", 2);
    assert!(
        store
            .io
            .write_new(&path, b"{ not json".to_vec())
            .await
            .unwrap()
    );
    let e = store.nextval(DB, "s").await.unwrap_err();
    match &e {
        SequenceError::Storage(StorageError::Format(m)) => {
            assert!(
                m.contains("_tarn/sequences/public/s/seq-00000000000000000002.json"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_local_warehouse_keeps_odd_names() {
    let dir = std::env::temp_dir().join(format!(
        "tarn-seq-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let io = FileIO::new(
        Arc::new(LocalFileSystem::new_with_prefix(&dir).unwrap()),
        Some(dir.clone()),
    );
    let store = SequenceStore::new(io.clone());
    let name = "Odd name.%ü";
    store.create(DB, name, &params()).await.unwrap();
    store.create(DB, "plain", &params()).await.unwrap();
    assert_eq!(take(&store, name, 2).await, [1, 2]);
    let file =
        dir.join("_tarn/sequences/public/Odd=20name=2E=25=C3=BC/seq-00000000000000000002.json");
    assert!(file.is_file(), "{file:?}");
    let listed: Vec<_> = store
        .list(DB)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, [name, "plain"]);
    let restarted = SequenceStore::new(io);
    assert_eq!(take(&restarted, name, 1).await, [SERVER_BLOCK as i64 + 1]);
    assert!(restarted.drop(DB, "plain").await.unwrap());
    assert_eq!(restarted.list(DB).await.unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn escaping_round_trips() {
    for name in ["plain_name-1", "Odd name.%ü", "=41", "..", "a=b", ""] {
        let folder = escape(name);
        assert!(
            folder
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-=".contains(&b)),
            "{folder}"
        );
        assert_eq!(unescape(&folder).as_deref(), Some(name));
    }
    assert_eq!(unescape("bad=4"), None);
}
