//! PostgreSQL sequences (`CREATE SEQUENCE`, `nextval`, `setval`, SERIAL, identity columns),
//! kept in the warehouse so that every server over it and every restart sees the same ones.
//!
//! **Where.** Each sequence is a folder of versioned JSON documents,
//! `_tarn/sequences/<database>/<name>/seq-<version:020>.json` (names are case-sensitive; bytes
//! other than ASCII letters, digits, `_` and `-` are written `=XX`, so any name survives every
//! object store and a listing gives it back; a name with `/` is refused). A version holds the
//! options (`pg_sequence`) and PostgreSQL's `last_value`/`is_called` pair: with `is_called`,
//! `last_value` is the last value *reserved* by any server; without it (a new sequence,
//! `setval(…, false)`, `RESTART`), it is the next value to hand out. Every change is written with
//! put-if-absent at the next version, so of two servers changing a sequence at once one wins and
//! the other reads again and retries, as for roles (`roles.rs`). Old versions are pruned. DROP
//! writes a `"sequence": null` version (a tombstone) and deletes the versions under it: version
//! numbers never restart, so a server that read the sequence before the drop can never win a
//! write after it. The `_tarn` folder is no Paimon database (`<name>.db`), so other engines
//! ignore it.
//!
//! **Why blocks.** A version per `nextval` would make each one a durable write. Instead a server
//! reserves a block (the sequence's CACHE, or [`SERVER_BLOCK`] values when CACHE is 1) with one
//! write and hands the values out from memory. Two servers never hand out the same value: a
//! block is theirs only once the version reserving it is written, and each reservation starts
//! after the last one. Values are unique and, per server, increasing, but not globally ordered;
//! a restart or crash loses the rest of a block (a gap), as PostgreSQL's CACHE and crash
//! recovery do. Pruning leaves holes that a stalled writer's put-if-absent could land in, so a
//! write counts only if no newer version exists or the next one names it as its `prev`.
//!
//! `currval`/`lastval` are per session and live with the session, not here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::storage::documents::{DocFolders, unescape};
use crate::storage::error::StorageError;
use crate::storage::io::file_io::FileIO;

const SEQUENCES_DIR: &str = "_tarn/sequences";
const DOCS: DocFolders = DocFolders {
    root: SEQUENCES_DIR,
    prefix: "seq-",
    kind: "sequence",
};
/// Versions kept below the newest (for readers that listed just before a change).
const KEEP_VERSIONS: u64 = 8;
/// How many values one reservation takes when the sequence's CACHE is 1.
pub const SERVER_BLOCK: u64 = 32;

/// `AS smallint | integer | bigint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SequenceType {
    SmallInt,
    Integer,
    BigInt,
}

impl SequenceType {
    /// The type of `AS name` (a folded type name or alias).
    pub fn from_name(name: &str) -> Result<Self, SequenceError> {
        match name {
            "smallint" | "int2" => Ok(Self::SmallInt),
            "integer" | "int" | "int4" => Ok(Self::Integer),
            "bigint" | "int8" => Ok(Self::BigInt),
            _ => Err(SequenceError::Invalid(
                "sequence type must be smallint, integer, or bigint".into(),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::SmallInt => "smallint",
            Self::Integer => "integer",
            Self::BigInt => "bigint",
        }
    }

    pub fn min(self) -> i64 {
        match self {
            Self::SmallInt => i16::MIN.into(),
            Self::Integer => i32::MIN.into(),
            Self::BigInt => i64::MIN,
        }
    }

    pub fn max(self) -> i64 {
        match self {
            Self::SmallInt => i16::MAX.into(),
            Self::Integer => i32::MAX.into(),
            Self::BigInt => i64::MAX,
        }
    }
}

/// `OWNED BY table.column`: the sequence is dropped with the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedBy {
    pub table: String,
    pub column: String,
}

/// A sequence's options with their defaults filled in, as `pg_sequence` holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceOptions {
    pub data_type: SequenceType,
    pub start: i64,
    pub increment: i64,
    pub min_value: i64,
    pub max_value: i64,
    pub cache: i64,
    pub cycle: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<OwnedBy>,
}

/// The options of a CREATE or ALTER SEQUENCE as written: `None` is "not mentioned", and for the
/// doubled options `Some(None)` is `NO MINVALUE`, `NO MAXVALUE`, `RESTART` without a value,
/// `OWNED BY NONE`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceParams {
    pub data_type: Option<SequenceType>,
    pub increment: Option<i64>,
    pub min_value: Option<Option<i64>>,
    pub max_value: Option<Option<i64>>,
    pub start: Option<i64>,
    pub restart: Option<Option<i64>>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
    pub owned_by: Option<Option<OwnedBy>>,
}

/// One sequence as `pg_sequences` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceInfo {
    pub name: String,
    pub options: SequenceOptions,
    /// The last value reserved by any server (`None` before the first `nextval` and after
    /// `setval(…, false)` or `RESTART`).
    pub last_value: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum SequenceError {
    #[error("relation \"{0}\" does not exist")]
    NotFound(String),
    #[error("relation \"{0}\" already exists")]
    Exists(String),
    /// `which` is "maximum" or "minimum".
    #[error("nextval: reached {which} value of sequence \"{name}\" ({bound})")]
    LimitReached {
        name: String,
        which: &'static str,
        bound: i64,
    },
    #[error("setval: value {value} is out of bounds for sequence \"{name}\" ({min}..{max})")]
    OutOfBounds {
        name: String,
        value: i64,
        min: i64,
        max: i64,
    },
    /// An option PostgreSQL's `init_params` refuses (its message).
    #[error("{0}")]
    Invalid(String),
    /// A name tarn cannot keep as a folder.
    #[error("{0}")]
    InvalidName(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl SequenceError {
    /// PostgreSQL's SQLSTATE. `Storage` answers XX000: map it with the other storage errors.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "42P01",
            Self::Exists(_) => "42P07",
            Self::LimitReached { .. } => "2200H",
            Self::OutOfBounds { .. } => "22003",
            Self::Invalid(_) => "22023",
            Self::InvalidName(_) => "42602",
            Self::Storage(_) => "XX000",
        }
    }
}

/// The state a version holds (`pg_sequence` plus `pg_sequence_data`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    options: SequenceOptions,
    last_value: i64,
    is_called: bool,
}

/// One version of a sequence's document.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Doc {
    /// Unique to this version; the next one names it in `prev` (see the module doc on holes).
    id: String,
    #[serde(default)]
    prev: Option<String>,
    /// `None`: the sequence was dropped (a tombstone).
    sequence: Option<State>,
}

impl Doc {
    fn new(prev: Option<String>, sequence: Option<State>) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        Self { id, prev, sequence }
    }
}

/// Values this server reserved and has not handed out yet.
#[derive(Debug)]
struct Block {
    /// The version whose write reserved the block.
    version: u64,
    next: i64,
    remaining: u64,
    increment: i64,
    last_given: i64,
}

impl Block {
    fn take(&mut self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        let value = self.next;
        self.last_given = value;
        self.remaining -= 1;
        match value.checked_add(self.increment) {
            Some(next) => self.next = next,
            None => self.remaining = 0,
        }
        Some(value)
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Block>>>;

/// Reads and changes the sequences of a warehouse, handing out `nextval`s from blocks.
#[derive(Debug, Clone)]
pub struct SequenceStore {
    io: FileIO,
    /// Per (database, name): this server's block, its lock serialising the server's changes.
    blocks: Arc<Mutex<HashMap<(String, String), Slot>>>,
}

impl SequenceStore {
    pub fn new(io: FileIO) -> Self {
        Self {
            io,
            blocks: Arc::default(),
        }
    }

    pub async fn create(
        &self,
        db: &str,
        name: &str,
        params: &SequenceParams,
    ) -> Result<(), SequenceError> {
        check_name(db, name)?;
        let state = resolve(params, None)?;
        let slot = self.slot(db, name);
        let mut block = slot.lock().await;
        self.create_state(db, name, &state).await?;
        *block = None;
        Ok(())
    }

    /// Drops the sequence; `false` when there is none.
    pub async fn drop(&self, db: &str, name: &str) -> Result<bool, SequenceError> {
        check_name(db, name)?;
        let slot = self.slot(db, name);
        let mut block = slot.lock().await;
        let dropped = self.update(db, name, |_, _| Ok((None, ()))).await;
        *block = None;
        self.lock_blocks().remove(&(db.to_owned(), name.to_owned()));
        match dropped {
            Ok(_) => Ok(true),
            Err(SequenceError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub async fn get(&self, db: &str, name: &str) -> Result<Option<SequenceInfo>, SequenceError> {
        check_name(db, name)?;
        Ok(match DOCS.load::<Doc>(&self.io, db, name).await? {
            Some((
                _,
                Doc {
                    sequence: Some(s), ..
                },
            )) => Some(SequenceInfo {
                name: name.to_owned(),
                last_value: s.is_called.then_some(s.last_value),
                options: s.options,
            }),
            _ => None,
        })
    }

    /// The sequences of `db`, by name.
    pub async fn list(&self, db: &str) -> Result<Vec<SequenceInfo>, SequenceError> {
        check_name(db, "-")?;
        let dir = DOCS.database(&self.io, db);
        let folders = match self.io.list_dir(&dir).await {
            Ok((_, folders)) => folders,
            Err(e) if e.is_missing_file() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for name in folders.iter().filter_map(|f| unescape(f)) {
            if let Some(info) = self.get(db, &name).await? {
                out.push(info);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The names of the sequences of `db` owned by a column of `table`.
    pub async fn owned_by(&self, db: &str, table: &str) -> Result<Vec<String>, SequenceError> {
        let all = self.list(db).await?;
        Ok(all
            .into_iter()
            .filter(|s| {
                s.options
                    .owned_by
                    .as_ref()
                    .is_some_and(|o| o.table == table)
            })
            .map(|s| s.name)
            .collect())
    }

    /// The sequence's next value: from this server's block, or from a block reserved now.
    pub async fn nextval(&self, db: &str, name: &str) -> Result<i64, SequenceError> {
        check_name(db, name)?;
        let slot = self.slot(db, name);
        let mut block = slot.lock().await;
        if let Some(value) = block.as_mut().and_then(Block::take) {
            return Ok(value);
        }
        *block = None;
        let (version, mut reserved) = self
            .update(db, name, |_, s| {
                let (next, block) = reserve(name, s)?;
                Ok((Some(next), block))
            })
            .await?;
        reserved.version = version;
        let value = reserved
            .take()
            .ok_or_else(|| StorageError::internal("a reserved sequence block was empty"))?;
        *block = Some(reserved);
        Ok(value)
    }

    /// `setval(name, value, is_called)`: the next `nextval` anywhere (once this server's block
    /// is dropped — other servers finish theirs) is `value + increment`, or `value` itself when
    /// `!is_called`.
    pub async fn setval(
        &self,
        db: &str,
        name: &str,
        value: i64,
        is_called: bool,
    ) -> Result<i64, SequenceError> {
        check_name(db, name)?;
        let slot = self.slot(db, name);
        let mut block = slot.lock().await;
        self.update(db, name, |_, s| {
            let (min, max) = (s.options.min_value, s.options.max_value);
            if value < min || value > max {
                let name = name.to_owned();
                return Err(SequenceError::OutOfBounds {
                    name,
                    value,
                    min,
                    max,
                });
            }
            let options = s.options.clone();
            let next = State {
                options,
                last_value: value,
                is_called,
            };
            Ok((Some(next), ()))
        })
        .await?;
        *block = None;
        Ok(value)
    }

    /// `ALTER SEQUENCE name <params>`, checked as PostgreSQL checks it. The unused rest of this
    /// server's block goes back to the sequence when no server reserved after it.
    pub async fn alter(
        &self,
        db: &str,
        name: &str,
        params: &SequenceParams,
    ) -> Result<SequenceInfo, SequenceError> {
        check_name(db, name)?;
        let slot = self.slot(db, name);
        let mut block = slot.lock().await;
        let ours = block.as_ref().map(|b| (b.version, b.last_given));
        let (_, state) = self
            .update(db, name, |version, s| {
                let mut s = s.clone();
                if let Some((reserved_at, last_given)) = ours
                    && reserved_at == version
                {
                    s.last_value = last_given;
                    s.is_called = true;
                }
                let next = resolve(params, Some(&s))?;
                Ok((Some(next.clone()), next))
            })
            .await?;
        *block = None;
        Ok(SequenceInfo {
            name: name.to_owned(),
            last_value: state.is_called.then_some(state.last_value),
            options: state.options,
        })
    }

    /// Renames a sequence: `old` is dropped at the version that fixes its state (so no server
    /// reserves from it afterwards), then `new` is created with that state; if `new` appeared
    /// meanwhile, `old` is put back.
    pub async fn rename(&self, db: &str, old: &str, new: &str) -> Result<(), SequenceError> {
        check_name(db, old)?;
        check_name(db, new)?;
        if old == new {
            return Err(SequenceError::Exists(new.to_owned()));
        }
        let (first, second) = if old < new { (old, new) } else { (new, old) };
        let (first, second) = (self.slot(db, first), self.slot(db, second));
        let (mut first, mut second) = (first.lock().await, second.lock().await);
        if self.get(db, new).await?.is_some() {
            return Err(SequenceError::Exists(new.to_owned()));
        }
        let (_, state) = self.update(db, old, |_, s| Ok((None, s.clone()))).await?;
        (*first, *second) = (None, None);
        if let Err(e) = self.create_state(db, new, &state).await {
            let _ = self.create_state(db, old, &state).await;
            return Err(e);
        }
        Ok(())
    }

    fn lock_blocks(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Slot>> {
        self.blocks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn slot(&self, db: &str, name: &str) -> Slot {
        let mut blocks = self.lock_blocks();
        let key = (db.to_owned(), name.to_owned());
        Arc::clone(blocks.entry(key).or_default())
    }

    /// Writes the next version of a live sequence: `change` gets the version read and its state
    /// and answers the next state (`None` drops the sequence) and a result. Runs again after a
    /// lost race; `NotFound` when there is no live sequence.
    async fn update<T>(
        &self,
        db: &str,
        name: &str,
        mut change: impl FnMut(u64, &State) -> Result<(Option<State>, T), SequenceError>,
    ) -> Result<(u64, T), SequenceError> {
        loop {
            let not_found = || SequenceError::NotFound(name.to_owned());
            let (version, doc) = DOCS
                .load::<Doc>(&self.io, db, name)
                .await?
                .ok_or_else(not_found)?;
            let state = doc.sequence.as_ref().ok_or_else(not_found)?;
            let (next, out) = change(version, state)?;
            let next_version = DOCS.successor(version)?;
            if self
                .commit(db, name, next_version, &Doc::new(Some(doc.id), next))
                .await?
            {
                return Ok((next_version, out));
            }
        }
    }

    /// Creates `name` with `state` at the version after its tombstone (or at 1).
    async fn create_state(&self, db: &str, name: &str, state: &State) -> Result<(), SequenceError> {
        loop {
            let (version, prev) = match DOCS.load::<Doc>(&self.io, db, name).await? {
                Some((
                    _,
                    Doc {
                        sequence: Some(_), ..
                    },
                )) => {
                    return Err(SequenceError::Exists(name.to_owned()));
                }
                Some((v, doc)) => (DOCS.successor(v)?, Some(doc.id)),
                None => (1, None),
            };
            let doc = Doc::new(prev, Some(state.clone()));
            if self.commit(db, name, version, &doc).await? {
                return Ok(());
            }
        }
    }

    /// Writes `doc` as `version` if nothing is there; `false` when another writer won, or when
    /// the write landed in a hole pruning left (a newer version exists that is not built on it).
    async fn commit(
        &self,
        db: &str,
        name: &str,
        version: u64,
        doc: &Doc,
    ) -> Result<bool, StorageError> {
        let path = DOCS.path(&self.io, db, name, version);
        let bytes = serde_json::to_vec_pretty(doc)
            .map_err(|e| StorageError::internal(format!("sequence document: {e}")))?;
        if !self.io.write_new(&path, bytes).await? {
            return Ok(false);
        }
        let versions = DOCS.versions(&self.io, db, name).await?;
        if versions.last().is_some_and(|&newest| newest > version)
            && !self.built_upon(db, name, version, &doc.id).await?
        {
            let _ = self.io.delete(&path).await;
            return Ok(false);
        }
        // A tombstone makes every older version dead; otherwise keep the last few.
        let keep_from = match doc.sequence {
            None => version,
            Some(_) => version.saturating_sub(KEEP_VERSIONS),
        };
        for v in versions.into_iter().filter(|v| *v < keep_from) {
            let _ = self.io.delete(&DOCS.path(&self.io, db, name, v)).await;
        }
        Ok(true)
    }

    /// Whether the version after `version` was written by a server that read ours (`id`).
    async fn built_upon(
        &self,
        db: &str,
        name: &str,
        version: u64,
        id: &str,
    ) -> Result<bool, StorageError> {
        let path = DOCS.path(&self.io, db, name, DOCS.successor(version)?);
        Ok(match self.io.read_if_exists(&path).await? {
            Some(bytes) => DOCS.parse::<Doc>(&path, &bytes)?.prev.as_deref() == Some(id),
            // Pruned already: ambiguous, so not a win (for nextval only a gap).
            None => false,
        })
    }
}

fn check_name(db: &str, name: &str) -> Result<(), SequenceError> {
    for (what, n) in [("schema", db), ("sequence", name)] {
        if n.is_empty() || n.contains('/') {
            return Err(SequenceError::InvalidName(format!(
                "invalid {what} name \"{n}\": tarn cannot keep a sequence whose {what} name is \
                 empty or contains \"/\""
            )));
        }
    }
    Ok(())
}

/// PostgreSQL's `init_params`: `params` applied to `old` (ALTER) or to the defaults (CREATE),
/// with its checks and messages.
fn resolve(p: &SequenceParams, old: Option<&State>) -> Result<State, SequenceError> {
    let invalid = |message: String| Err(SequenceError::Invalid(message));
    let init = old.is_none();
    let mut s = old.cloned().unwrap_or(State {
        options: SequenceOptions {
            data_type: SequenceType::BigInt,
            start: 1,
            increment: 1,
            min_value: 1,
            max_value: i64::MAX,
            cache: 1,
            cycle: false,
            owned_by: None,
        },
        last_value: 1,
        is_called: false,
    });
    let o = &mut s.options;
    let (mut reset_max, mut reset_min) = (false, false);
    if let Some(t) = p.data_type {
        if !init {
            // Bounds that were the old type's own follow the type.
            reset_max = o.max_value == o.data_type.max();
            reset_min = o.min_value == o.data_type.min();
        }
        o.data_type = t;
    }
    let t = o.data_type;
    if let Some(increment) = p.increment {
        if increment == 0 {
            return invalid("INCREMENT must not be zero".into());
        }
        o.increment = increment;
    }
    if let Some(cycle) = p.cycle {
        o.cycle = cycle;
    }
    match p.max_value {
        Some(Some(v)) => o.max_value = v,
        given if init || given.is_some() || reset_max => {
            o.max_value = if o.increment > 0 || reset_max {
                t.max()
            } else {
                -1
            };
        }
        _ => {}
    }
    if o.max_value < t.min() || o.max_value > t.max() {
        let (v, t) = (o.max_value, t.name());
        return invalid(format!(
            "MAXVALUE ({v}) is out of range for sequence data type {t}"
        ));
    }
    match p.min_value {
        Some(Some(v)) => o.min_value = v,
        given if init || given.is_some() || reset_min => {
            o.min_value = if o.increment < 0 || reset_min {
                t.min()
            } else {
                1
            };
        }
        _ => {}
    }
    if o.min_value < t.min() || o.min_value > t.max() {
        let (v, t) = (o.min_value, t.name());
        return invalid(format!(
            "MINVALUE ({v}) is out of range for sequence data type {t}"
        ));
    }
    let (min, max) = (o.min_value, o.max_value);
    if min >= max {
        return invalid(format!(
            "MINVALUE ({min}) must be less than MAXVALUE ({max})"
        ));
    }
    if let Some(start) = p.start {
        o.start = start;
    } else if init {
        o.start = if o.increment > 0 { min } else { max };
    }
    let start = o.start;
    if start < min {
        return invalid(format!(
            "START value ({start}) cannot be less than MINVALUE ({min})"
        ));
    }
    if start > max {
        return invalid(format!(
            "START value ({start}) cannot be greater than MAXVALUE ({max})"
        ));
    }
    match p.restart {
        Some(to) => (s.last_value, s.is_called) = (to.unwrap_or(start), false),
        None if init => (s.last_value, s.is_called) = (start, false),
        None => {}
    }
    let last = s.last_value;
    if last < min {
        return invalid(format!(
            "RESTART value ({last}) cannot be less than MINVALUE ({min})"
        ));
    }
    if last > max {
        return invalid(format!(
            "RESTART value ({last}) cannot be greater than MAXVALUE ({max})"
        ));
    }
    let o = &mut s.options;
    if let Some(cache) = p.cache {
        if cache <= 0 {
            return invalid(format!("CACHE ({cache}) must be greater than zero"));
        }
        o.cache = cache;
    }
    if let Some(owned_by) = &p.owned_by {
        o.owned_by.clone_from(owned_by);
    }
    Ok(s)
}

/// The next block of `s` (PostgreSQL's `nextval_internal` fetching CACHE values) and the state
/// that reserves it. Computed in i128, so no bound near i64's ends overflows.
fn reserve(name: &str, s: &State) -> Result<(State, Block), SequenceError> {
    let o = &s.options;
    let (inc, min, max) = (
        i128::from(o.increment),
        i128::from(o.min_value),
        i128::from(o.max_value),
    );
    let cache = u64::try_from(o.cache).unwrap_or(1);
    let want = i128::from(if cache > 1 { cache } else { SERVER_BLOCK });
    let last = i128::from(s.last_value);
    let candidate = if s.is_called { last + inc } else { last };
    let first = if candidate < min || candidate > max {
        if !o.cycle {
            let (which, bound) = if inc > 0 {
                ("maximum", o.max_value)
            } else {
                ("minimum", o.min_value)
            };
            let name = name.to_owned();
            return Err(SequenceError::LimitReached { name, which, bound });
        }
        if inc > 0 { min } else { max }
    } else {
        candidate
    };
    // How many further steps stay within the bounds, at most the block's size.
    let room = if inc > 0 {
        (max - first) / inc
    } else {
        (first - min) / -inc
    };
    let extra = room.clamp(0, want - 1);
    let narrow = |v: i128| {
        i64::try_from(v).map_err(|_| StorageError::internal("sequence block out of range"))
    };
    let next = State {
        last_value: narrow(first + extra * inc)?,
        is_called: true,
        options: o.clone(),
    };
    let block = Block {
        version: 0,
        next: narrow(first)?,
        remaining: u64::try_from(extra + 1).map_err(|_| StorageError::internal("block size"))?,
        increment: o.increment,
        last_given: s.last_value,
    };
    Ok((next, block))
}

#[cfg(test)]
#[path = "sequences_tests.rs"]
mod tests;
