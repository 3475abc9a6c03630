//! `LogService` without a server: what its state file may claim when the process dies with
//! records queued but not durable.

use super::*;
use crate::storage::Warehouse;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A record queued the way `commit_logged` queues it (not awaited).
fn queue(service: &LogService) -> impl Future<Output = Result<Lsn, StorageError>> {
    let payload = TransactionRecord {
        commit_millis: 0,
        tables: Vec::new(),
        block: None,
    }
    .encode()
    .unwrap();
    let mut next = service.next.lock().unwrap();
    *next += 1;
    service.log.append(payload)
}

/// DROP TABLE while another table's commit waits for its group's fdatasync, then the process
/// dies before that fdatasync: the state must not say a record the log lost was flushed, or
/// the next start refuses the log ("acknowledged records are missing").
#[test]
fn a_drop_never_marks_a_record_that_is_not_durable() {
    let dir = std::env::temp_dir().join(format!(
        "tarn-logged-drop-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    // One current-thread runtime: the log's writer task runs only when the test awaits.
    runtime().block_on(async {
        let (service, _) = LogService::open(dir.clone(), FlushPolicy::default())
            .await
            .unwrap();
        let pending = queue(&service);
        service.forget_table("public.db/dropped").await.unwrap();
        // The process dies here: the runtime goes with its tasks; the queued record was
        // written only if the drop waited for it.
        std::mem::forget(pending);
    });
    let reopened = runtime().block_on(async {
        LogService::open(dir.clone(), FlushPolicy::default())
            .await
            .map(|(service, records)| (service.flushed("public.db/dropped"), records.len()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (flushed, records) = reopened.expect("the log opens after the crash");
    assert!(flushed as usize <= records, "{flushed} > {records}");
}

/// Polls `fut` on this thread alone — the runtime's tasks, the log's writer among them, do
/// not run — until it is ready or `polls` polls passed (blocking work elsewhere may finish
/// between them).
fn poll_alone<F: Future>(mut fut: std::pin::Pin<&mut F>, polls: usize) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..polls {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return Some(out);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// TRUNCATE while a commit waits for its group's fdatasync, and the process dies before that
/// fdatasync: TRUNCATE must not have published that LSN as its identifier nor stored it as
/// flushed — the log lost it, and the next start would refuse the log (or hand the LSN to a
/// new commit that replay then skips).
#[test]
fn truncate_never_marks_a_record_that_is_not_durable() {
    use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};
    use crate::storage::testkit;
    use crate::storage::write::table_write::WriteMode;
    let dir = std::env::temp_dir().join(format!(
        "tarn-logged-truncate-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let policy = FlushPolicy {
        interval: Duration::from_secs(3600),
        bytes: usize::MAX,
    };
    let store = runtime().block_on(async {
        let wh = testkit::warehouse(None).await;
        let store = Arc::clone(wh.store());
        let wh = wh.with_commit_log(dir.clone(), policy).await.unwrap();
        let v = PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH));
        let schema = testkit::partitioned_schema(v, &[("bucket", "1")]);
        let t = wh.create_table("public", "t", schema).await.unwrap();
        testkit::write(&t, WriteMode::Insert, &[(1, "a", "d")]).await;
        // A commit through the log, queued, its session waiting for the fdatasync.
        let mut commit = Box::pin(testkit::try_write(&t, WriteMode::Insert, &[(2, "b", "d")]));
        assert!(poll_alone(commit.as_mut(), 200).is_none());
        assert_eq!(t.state::<UnflushedState>().last_lsn(), Some(1), "queued");
        // TRUNCATE, alone too: whatever it gets to before the writer runs, then the crash.
        let mut truncate = Box::pin(crate::storage::commit::overwrite::truncate(&t));
        let _ = poll_alone(truncate.as_mut(), 200);
        std::mem::forget(truncate);
        std::mem::forget(commit);
        store
    });
    let reopened = runtime().block_on(async {
        Warehouse::with_store(store)
            .with_commit_log(dir.clone(), policy)
            .await
            .map(|_| ())
    });
    let _ = std::fs::remove_dir_all(&dir);
    reopened.expect("the log opens after the crash");
}
