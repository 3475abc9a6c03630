//! SQL cursors: `DECLARE`, `FETCH`, `MOVE`, `CLOSE` (psycopg's named cursors, pgjdbc-less
//! batch readers, psql's `FETCH_COUNT`).
//!
//! A cursor holds its query's DataFusion stream and reads only as far as FETCH asks, so a
//! cursor over a large table streams in bounded memory. Two kinds are materialised, as in
//! PostgreSQL: a `SCROLL` cursor (its rows are kept, so it can move backwards) at DECLARE, and
//! a `WITH HOLD` cursor at the COMMIT of its transaction (it outlives the transaction, which
//! pins the snapshot it reads). A cursor without HOLD lives only inside its transaction block.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

use super::{Outcome, Output, PgError, Session, TxState};
use crate::sql::cursor::{CursorCommand, Declare, Direction};

/// A session's open cursors, by name.
#[derive(Default)]
pub(super) struct Cursors {
    open: HashMap<String, Cursor>,
}

struct Cursor {
    schema: SchemaRef,
    /// `DECLARE ... BINARY`: simple-protocol FETCH answers in binary.
    binary: bool,
    hold: bool,
    /// A WITH HOLD cursor whose transaction committed: it survives later rollbacks.
    held: bool,
    rows: Rows,
}

/// A stream the session can hold: sessions are shared between threads, streams are not
/// `Sync`; only `&mut` access reaches it, so the mutex is never contended.
struct HeldStream(std::sync::Mutex<SendableRecordBatchStream>);

impl HeldStream {
    fn new(stream: SendableRecordBatchStream) -> Self {
        Self(std::sync::Mutex::new(stream))
    }
    fn get(&mut self) -> &mut SendableRecordBatchStream {
        self.0.get_mut().unwrap_or_else(|p| p.into_inner())
    }
}

enum Rows {
    /// Forward only: the stream, a batch partly read, rows read so far, whether it ended.
    Stream {
        stream: HeldStream,
        pending: Option<RecordBatch>,
        read: u64,
        ended: bool,
    },
    /// Every row (SCROLL), and the position as PostgreSQL counts it: 0 before the first row,
    /// `n` on row `n`, `len + 1` after the last.
    All { batch: RecordBatch, pos: u64 },
}

fn no_cursor(name: &str) -> PgError {
    PgError::new("34000", format!("cursor \"{name}\" does not exist"))
}

fn forward_only() -> PgError {
    PgError::new("55000", "cursor can only scan forward")
        .with_hint("Declare it with SCROLL option to enable backward scan.")
}

/// Reads a stream to its end into one batch.
async fn collect(
    schema: &SchemaRef,
    stream: &mut SendableRecordBatchStream,
    pending: Option<RecordBatch>,
) -> Result<RecordBatch, PgError> {
    let mut batches: Vec<RecordBatch> = pending.into_iter().collect();
    while let Some(batch) = stream.next().await {
        batches.push(batch?);
    }
    concat_batches(schema, &batches).map_err(|e| PgError::from(DataFusionError::from(e)))
}

fn memory_stream(schema: &SchemaRef, batches: Vec<RecordBatch>) -> SendableRecordBatchStream {
    Box::pin(RecordBatchStreamAdapter::new(
        Arc::clone(schema),
        futures::stream::iter(batches.into_iter().map(Ok)),
    ))
}

impl Rows {
    /// Takes up to `limit` rows forward (`None`: all); `keep` false only counts them (MOVE).
    async fn forward(
        &mut self,
        limit: Option<u64>,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        match self {
            Rows::Stream {
                stream,
                pending,
                read,
                ended,
            } => {
                let mut out = Vec::new();
                let mut count = 0u64;
                while limit.is_none_or(|l| count < l) && !*ended {
                    let batch = match pending.take() {
                        Some(b) => b,
                        None => match stream.get().next().await {
                            Some(b) => b?,
                            None => {
                                *ended = true;
                                break;
                            }
                        },
                    };
                    let want = limit.map_or(u64::MAX, |l| l - count);
                    let rows = batch.num_rows() as u64;
                    let (taken, rest) = if rows > want {
                        let n = want as usize;
                        (
                            batch.slice(0, n),
                            Some(batch.slice(n, batch.num_rows() - n)),
                        )
                    } else {
                        (batch, None)
                    };
                    *pending = rest;
                    count += taken.num_rows() as u64;
                    if keep && taken.num_rows() > 0 {
                        out.push(taken);
                    }
                }
                *read += count;
                Ok((out, count))
            }
            Rows::All { batch, pos } => {
                let len = batch.num_rows() as u64;
                let first = *pos + 1;
                let last = limit.map_or(len, |l| pos.saturating_add(l).min(len));
                *pos = match limit {
                    Some(l) if pos.saturating_add(l) <= len => *pos + l,
                    _ => len + 1,
                };
                if first > last {
                    return Ok((Vec::new(), 0));
                }
                let count = last - first + 1;
                let rows = if keep {
                    vec![batch.slice(first as usize - 1, count as usize)]
                } else {
                    Vec::new()
                };
                Ok((rows, count))
            }
        }
    }

    /// Takes up to `limit` rows backward, in backward order (SCROLL cursors only).
    fn backward(
        &mut self,
        limit: Option<u64>,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        let Rows::All { batch, pos } = self else {
            return Err(forward_only());
        };
        let len = batch.num_rows() as u64;
        let first = (*pos).min(len + 1).saturating_sub(1); // the row before the position
        let last = limit.map_or(1, |l| pos.saturating_sub(l).max(1));
        *pos = match limit {
            Some(l) if *pos > l => *pos - l,
            _ => 0,
        };
        if first < last || first == 0 {
            return Ok((Vec::new(), 0));
        }
        let count = first - last + 1;
        let rows = if keep {
            let indices = UInt64Array::from_iter_values((last - 1..first).rev());
            vec![
                take_record_batch(batch, &indices)
                    .map_err(|e| PgError::from(DataFusionError::from(e)))?,
            ]
        } else {
            Vec::new()
        };
        Ok((rows, count))
    }

    /// Moves to row `target` (0: before the first; past the end: after the last) and returns
    /// it if there is one.
    async fn absolute(
        &mut self,
        target: i64,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        match self {
            Rows::Stream { read, ended, .. } => {
                // Forward only: the target must lie ahead.
                if target <= 0 || (target as u64) <= *read || *ended {
                    return Err(forward_only());
                }
                let skip = target as u64 - *read - 1;
                self.forward(Some(skip), false).await?;
                self.forward(Some(1), keep).await
            }
            Rows::All { batch, pos } => {
                let len = batch.num_rows() as i64;
                let target = if target < 0 { len + 1 + target } else { target };
                if target <= 0 {
                    *pos = 0;
                    return Ok((Vec::new(), 0));
                }
                if target > len {
                    *pos = len as u64 + 1;
                    return Ok((Vec::new(), 0));
                }
                *pos = target as u64;
                let rows = if keep {
                    vec![batch.slice(target as usize - 1, 1)]
                } else {
                    Vec::new()
                };
                Ok((rows, 1))
            }
        }
    }

    async fn fetch(
        &mut self,
        direction: Direction,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        match direction {
            Direction::Forward(Some(0)) | Direction::Backward(Some(0)) => {
                self.fetch_relative(0, keep).await
            }
            Direction::Forward(limit) => self.forward(limit, keep).await,
            Direction::Backward(limit) => self.backward(limit, keep),
            Direction::Absolute(n) => self.absolute(n, keep).await,
            Direction::Relative(n) => self.fetch_relative(n, keep).await,
        }
    }

    async fn fetch_relative(
        &mut self,
        n: i64,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        let pos = match self {
            Rows::Stream { read, ended, .. } => {
                if n <= 0 || *ended {
                    return Err(forward_only());
                }
                *read as i64
            }
            Rows::All { pos, .. } => *pos as i64,
        };
        self.absolute(pos.saturating_add(n).max(0), keep).await
    }
}

impl Session {
    /// Runs a cursor statement; `plan` is DECLARE's query planned at Parse.
    pub(super) async fn run_cursor(
        &mut self,
        command: CursorCommand,
        plan: Option<LogicalPlan>,
        params: Option<datafusion::common::ParamValues>,
    ) -> Result<Outcome, PgError> {
        match command {
            CursorCommand::Declare(declare) => self.declare(*declare, plan, params).await,
            CursorCommand::Fetch {
                name,
                direction,
                move_only,
            } => {
                let cursor = self
                    .cursors
                    .open
                    .get_mut(&name)
                    .ok_or_else(|| no_cursor(&name))?;
                let (batches, count) = cursor.rows.fetch(direction, !move_only).await?;
                if move_only {
                    return Ok(Outcome::done(format!("MOVE {count}")));
                }
                let schema = Arc::clone(&cursor.schema);
                let binary = cursor.binary;
                Ok(Outcome {
                    binary,
                    ..Outcome::from(Output::Rows {
                        batches: memory_stream(&schema, batches),
                        schema,
                        tag: "FETCH",
                    })
                })
            }
            CursorCommand::Close(Some(name)) => {
                self.cursors
                    .open
                    .remove(&name)
                    .ok_or_else(|| no_cursor(&name))?;
                Ok(Outcome::done("CLOSE CURSOR"))
            }
            CursorCommand::Close(None) => {
                self.cursors.open.clear();
                Ok(Outcome::done("CLOSE CURSOR ALL"))
            }
        }
    }

    async fn declare(
        &mut self,
        declare: Declare,
        plan: Option<LogicalPlan>,
        params: Option<datafusion::common::ParamValues>,
    ) -> Result<Outcome, PgError> {
        let Declare {
            name,
            binary,
            scroll,
            hold,
            query,
        } = declare;
        if self.tx == TxState::Idle && !hold {
            return Err(PgError::new(
                "25P01",
                "DECLARE CURSOR can only be used in transaction blocks",
            )
            .with_hint("Use BEGIN first, or DECLARE ... CURSOR WITH HOLD."));
        }
        if self.cursors.open.contains_key(&name) {
            return Err(PgError::new(
                "42P03",
                format!("cursor \"{name}\" already exists"),
            ));
        }
        let plan = match plan {
            Some(plan) => plan,
            None => self.plan(query).await?,
        };
        let plan = match params {
            Some(p) => plan.with_param_values(p)?,
            None => plan,
        };
        let schema: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
        let mut stream = self.execute_untorn(&plan).await?;
        // Outside a block the statement's own transaction ends now: a holdable cursor is
        // materialised at once, as PostgreSQL does at that commit.
        let materialise_now = scroll == Some(true) || self.tx == TxState::Idle;
        let rows = if materialise_now {
            let batch = collect(&schema, &mut stream, None).await?;
            if scroll == Some(true) {
                Rows::All { batch, pos: 0 }
            } else {
                Rows::Stream {
                    stream: HeldStream::new(memory_stream(&schema, vec![batch])),
                    pending: None,
                    read: 0,
                    ended: false,
                }
            }
        } else {
            Rows::Stream {
                stream: HeldStream::new(stream),
                pending: None,
                read: 0,
                ended: false,
            }
        };
        self.cursors.open.insert(
            name,
            Cursor {
                schema,
                binary,
                hold,
                held: hold && self.tx == TxState::Idle,
                rows,
            },
        );
        Ok(Outcome::done("DECLARE CURSOR"))
    }

    /// At COMMIT, before the block's changes are committed: WITH HOLD cursors read the rest of
    /// their rows (the transaction's snapshot ends with it).
    pub(super) async fn hold_cursors(&mut self) -> Result<(), PgError> {
        for cursor in self.cursors.open.values_mut() {
            if !cursor.hold || cursor.held {
                continue;
            }
            if let Rows::Stream {
                stream, pending, ..
            } = &mut cursor.rows
            {
                let batch = collect(&cursor.schema, stream.get(), pending.take()).await?;
                *stream = HeldStream::new(memory_stream(&cursor.schema, vec![batch]));
            }
        }
        Ok(())
    }

    /// At the end of a block: cursors without HOLD close; after a COMMIT the holdable ones
    /// stay (and survive later rollbacks), after a ROLLBACK those declared in the block close.
    pub(super) fn end_block_cursors(&mut self, committed: bool) {
        self.cursors.open.retain(|_, c| {
            if committed && c.hold {
                c.held = true;
            }
            c.held
        });
    }

    /// `CLOSE ALL` (DISCARD ALL).
    pub(super) fn close_all_cursors(&mut self) {
        self.cursors.open.clear();
    }

    /// The columns an open cursor returns (Describe of a FETCH, or of the cursor's portal).
    pub fn cursor_schema(&self, name: &str) -> Option<SchemaRef> {
        self.cursors.open.get(name).map(|c| Arc::clone(&c.schema))
    }
}
