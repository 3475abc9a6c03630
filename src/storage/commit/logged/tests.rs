//! `LogService` without a server: what its state file may claim when the process dies with
//! records queued but not durable.

use super::*;

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
