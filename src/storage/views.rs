//! PostgreSQL views (`CREATE VIEW`), kept in the warehouse so that every server over it and
//! every restart sees the same ones. Paimon's filesystem catalog has no views, so they are
//! tarn's own documents, beside the databases rather than inside them.
//!
//! **Where.** Each view is a folder of versioned JSON documents,
//! `_tarn/views/<database>/<name>/view-<version:020>.json`, named as sequences' folders are
//! (`sequences.rs`: bytes other than ASCII letters, digits, `_` and `-` written `=XX`; a name
//! with `/` is refused). The `_tarn` folder is no Paimon database (`<name>.db`), so other
//! engines ignore it. A version holds the whole view ([`ViewDef`]): the query's SQL text as
//! tarn printed it from the parsed statement (names as written; the query is parsed, rewritten
//! and planned again wherever the view is used), the columns with the PostgreSQL types planning
//! gave them at CREATE, the query's own output names, the `search_path` the view's unqualified
//! names resolve through (PostgreSQL binds them at CREATE), the comment and the times.
//!
//! **Changes.** CREATE OR REPLACE, RENAME, COMMENT and a rewrite of the text (a renamed
//! table, view or column the view names: [`ViewStore::replace_sql`]) write the next version with
//! put-if-absent, so of two servers changing a view at once one wins and the other reads again
//! and retries. A write counts only if it is still the newest version once written (a writer
//! that stalled across a DROP cannot land under its tombstone and report success). DROP writes a
//! `"view": null` version (a tombstone) and deletes the versions under it; version numbers never
//! restart, so a server that read the view before the drop can never win a write after it. A
//! rename is a drop of the old name and a create of the new one.
//!
//! **Reads.** Queries expand every view they name, so the server keeps the list of all views
//! ([`ViewStore::all`]) for a short while ([`ViewStore::all`]'s `max_age`, the catalog's
//! refresh interval); this server's own changes drop it at once. Catalog queries read the
//! documents afresh ([`ViewStore::list`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::storage::documents::{DocFolders, unescape};
use crate::storage::error::StorageError;
use crate::storage::io::file_io::FileIO;

const VIEWS_DIR: &str = "_tarn/views";
const DOCS: DocFolders = DocFolders {
    root: VIEWS_DIR,
    prefix: "view-",
    kind: "view",
};
/// Writes retried after losing a race before giving up.
const WRITE_ATTEMPTS: usize = 64;

/// One column of a view: its name and the PostgreSQL type its query gave it at CREATE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewColumn {
    pub name: String,
    /// `pg_type` OID.
    pub type_oid: i32,
    /// `atttypmod` (-1 for none).
    pub typmod: i32,
}

/// A view as one version of its document holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDef {
    /// The database (PostgreSQL schema) holding the view.
    pub schema: String,
    pub name: String,
    /// The view's query as SQL text (`SELECT …`, printed from the parsed statement).
    pub sql: String,
    /// The view's columns: the names of `CREATE VIEW v (names)` or else the query's own.
    pub columns: Vec<ViewColumn>,
    /// The names of the query's own output columns, in order (they may differ from `columns`'
    /// names when the view renames them).
    pub query_columns: Vec<String>,
    /// The schemas the query's unqualified names resolve through (the creating session's
    /// effective `search_path`).
    pub search_path: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    pub created_millis: i64,
    pub updated_millis: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("view \"{0}\" does not exist")]
    NotFound(String),
    #[error("relation \"{0}\" already exists")]
    Exists(String),
    /// A name tarn cannot keep as a folder.
    #[error("{0}")]
    InvalidName(String),
    /// The view changed since it was read (a rewrite of its text lost a race).
    #[error(
        "could not serialize access: view \"{0}\" was changed by another session; run the \
         statement again"
    )]
    Changed(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl ViewError {
    /// PostgreSQL's SQLSTATE. `Storage` answers XX000: map it with the other storage errors.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "42P01",
            Self::Exists(_) => "42P07",
            Self::InvalidName(_) => "42602",
            Self::Changed(_) => "40001",
            Self::Storage(_) => "XX000",
        }
    }
}

/// One version of a view's document.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Doc {
    /// `None`: the view was dropped (a tombstone).
    view: Option<ViewDef>,
}

/// The views of every database, as listed at one moment.
#[derive(Debug)]
struct Listing {
    at: Instant,
    views: Arc<Vec<ViewDef>>,
}

/// Reads and changes the views of a warehouse.
#[derive(Debug, Clone)]
pub struct ViewStore {
    io: FileIO,
    /// The last listing of all views ([`ViewStore::all`]); dropped by this store's changes.
    listing: Arc<Mutex<Option<Listing>>>,
}

impl ViewStore {
    pub fn new(io: FileIO) -> Self {
        Self {
            io,
            listing: Arc::default(),
        }
    }

    /// Creates `view`; with `or_replace`, an existing view of that name is replaced (its
    /// creation time kept). `Exists` when there is one and `!or_replace`.
    pub async fn create(&self, view: &ViewDef, or_replace: bool) -> Result<(), ViewError> {
        check_name(&view.schema, &view.name)?;
        let (db, name) = (&view.schema, &view.name);
        let result = self
            .write(db, name, |old| match old {
                Some(_) if !or_replace => Err(ViewError::Exists(name.clone())),
                Some(old) => Ok(Some(ViewDef {
                    created_millis: old.created_millis,
                    ..view.clone()
                })),
                None => Ok(Some(view.clone())),
            })
            .await;
        self.invalidate();
        result.map(|_| ())
    }

    /// Drops the view; `false` when there is none.
    pub async fn drop(&self, db: &str, name: &str) -> Result<bool, ViewError> {
        check_name(db, name)?;
        let result = self
            .write(db, name, |old| match old {
                Some(_) => Ok(None),
                None => Err(ViewError::NotFound(name.to_owned())),
            })
            .await;
        self.invalidate();
        match result {
            Ok(_) => Ok(true),
            Err(ViewError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sets (or with `None` removes) the view's comment.
    pub async fn set_comment(
        &self,
        db: &str,
        name: &str,
        comment: Option<String>,
        now_millis: i64,
    ) -> Result<(), ViewError> {
        check_name(db, name)?;
        let result = self
            .write(db, name, |old| {
                let old = old.ok_or_else(|| ViewError::NotFound(name.to_owned()))?;
                Ok(Some(ViewDef {
                    comment: comment.clone(),
                    updated_millis: now_millis,
                    ..old.clone()
                }))
            })
            .await;
        self.invalidate();
        result.map(|_| ())
    }

    /// Writes the view's query text `sql` as its next version, if its text is still
    /// `expected` (`Changed` otherwise): a view following a renamed table, view or column.
    pub async fn replace_sql(
        &self,
        db: &str,
        name: &str,
        expected: &str,
        sql: String,
        now_millis: i64,
    ) -> Result<(), ViewError> {
        check_name(db, name)?;
        let result = self
            .write(db, name, |old| match old {
                Some(old) if old.sql == expected => Ok(Some(ViewDef {
                    sql: sql.clone(),
                    updated_millis: now_millis,
                    ..old.clone()
                })),
                _ => Err(ViewError::Changed(name.to_owned())),
            })
            .await;
        self.invalidate();
        result.map(|_| ())
    }

    /// Renames a view: `old` is dropped, then `new` created with its definition; if `new`
    /// appeared meanwhile, `old` is put back.
    pub async fn rename(
        &self,
        db: &str,
        old: &str,
        new: &str,
        now_millis: i64,
    ) -> Result<(), ViewError> {
        check_name(db, old)?;
        check_name(db, new)?;
        if self.get(db, new).await?.is_some() {
            return Err(ViewError::Exists(new.to_owned()));
        }
        let result = async {
            let (_, view) = self
                .write(db, old, |v| match v {
                    Some(v) => Ok((None, v.clone())),
                    None => Err(ViewError::NotFound(old.to_owned())),
                })
                .await?;
            let renamed = ViewDef {
                name: new.to_owned(),
                updated_millis: now_millis,
                ..view.clone()
            };
            if let Err(e) = self.create_unchecked(&renamed).await {
                let _ = self.create_unchecked(&view).await;
                return Err(e);
            }
            Ok(())
        }
        .await;
        self.invalidate();
        result
    }

    pub async fn get(&self, db: &str, name: &str) -> Result<Option<ViewDef>, ViewError> {
        check_name(db, name)?;
        Ok(DOCS
            .load::<Doc>(&self.io, db, name)
            .await?
            .and_then(|(_, doc)| doc.view))
    }

    /// The views of `db`, by name, read now.
    pub async fn list(&self, db: &str) -> Result<Vec<ViewDef>, ViewError> {
        check_name(db, "-")?;
        let dir = DOCS.database(&self.io, db);
        let mut out = Vec::new();
        for name in self.folders(&dir).await?.iter().filter_map(|f| unescape(f)) {
            if let Some(view) = self.get(db, &name).await? {
                out.push(view);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Every view of every database, as listed at most `max_age` ago (or since this store's
    /// last change); sorted by schema and name.
    pub async fn all(&self, max_age: Duration) -> Result<Arc<Vec<ViewDef>>, ViewError> {
        if let Some(listing) = self.lock_listing().as_ref()
            && listing.at.elapsed() <= max_age
        {
            return Ok(Arc::clone(&listing.views));
        }
        let at = Instant::now();
        let mut views = Vec::new();
        for db in self
            .folders(&self.io.path(VIEWS_DIR))
            .await?
            .iter()
            .filter_map(|f| unescape(f))
        {
            if check_name(&db, "-").is_ok() {
                views.extend(self.list(&db).await?);
            }
        }
        let views = Arc::new(views);
        let mut listing = self.lock_listing();
        // A change made while this listing was read dropped the cache: keep that.
        if listing.as_ref().is_none_or(|l| l.at < at) {
            *listing = Some(Listing {
                at,
                views: Arc::clone(&views),
            });
        }
        Ok(views)
    }

    /// The last listing of [`all`](Self::all), however old (`None` before the first and after
    /// a change): for lookups that cannot wait for I/O. Every statement's planning lists the
    /// views first, so this is the listing it was planned with.
    pub fn cached(&self) -> Option<Arc<Vec<ViewDef>>> {
        self.lock_listing().as_ref().map(|l| Arc::clone(&l.views))
    }

    /// Forgets the listing of [`all`](Self::all), so the next one reads the documents.
    pub fn invalidate(&self) {
        *self.lock_listing() = None;
    }

    fn lock_listing(&self) -> std::sync::MutexGuard<'_, Option<Listing>> {
        self.listing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn folders(&self, dir: &Path) -> Result<Vec<String>, StorageError> {
        match self.io.list_dir(dir).await {
            Ok((_, folders)) => Ok(folders),
            Err(e) if e.is_missing_file() => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Writes the next version: `change` gets the live view (or `None`) and answers the next
    /// one (`None` drops it). Runs again after a lost race.
    async fn write<T>(
        &self,
        db: &str,
        name: &str,
        mut change: impl FnMut(Option<&ViewDef>) -> Result<T, ViewError>,
    ) -> Result<T, ViewError>
    where
        T: Next,
    {
        for _ in 0..WRITE_ATTEMPTS {
            let (version, old) = match DOCS.load::<Doc>(&self.io, db, name).await? {
                Some((v, doc)) => (DOCS.successor(v)?, doc.view),
                None => (1, None),
            };
            let out = change(old.as_ref())?;
            let doc = Doc {
                view: out.next().cloned(),
            };
            if self.commit(db, name, version, &doc).await? {
                return Ok(out);
            }
        }
        Err(StorageError::internal(format!(
            "view \"{name}\": too many concurrent changes; try again"
        ))
        .into())
    }

    /// Creates `view` at the version after its tombstone (or at 1), replacing nothing.
    async fn create_unchecked(&self, view: &ViewDef) -> Result<(), ViewError> {
        let name = view.name.clone();
        self.write(&view.schema, &view.name, |old| match old {
            Some(_) => Err(ViewError::Exists(name.clone())),
            None => Ok(Some(view.clone())),
        })
        .await
        .map(|_| ())
    }

    /// Writes `doc` as `version` if nothing is there; `false` when another writer won, or when
    /// a newer version exists once it is written (the write landed under a tombstone).
    async fn commit(
        &self,
        db: &str,
        name: &str,
        version: u64,
        doc: &Doc,
    ) -> Result<bool, StorageError> {
        let path = DOCS.path(&self.io, db, name, version);
        let bytes = serde_json::to_vec_pretty(doc)
            .map_err(|e| StorageError::internal(format!("view document: {e}")))?;
        if !self.io.write_new(&path, bytes).await? {
            return Ok(false);
        }
        let versions = DOCS.versions(&self.io, db, name).await?;
        if versions.last().is_some_and(|&newest| newest > version) {
            let _ = self.io.delete(&path).await;
            return Ok(false);
        }
        // A tombstone makes every older version dead.
        if doc.view.is_none() {
            for v in versions.into_iter().filter(|v| *v < version) {
                let _ = self.io.delete(&DOCS.path(&self.io, db, name, v)).await;
            }
        }
        Ok(true)
    }
}

/// What a change answers: the next state of the view, and what the caller gets back.
trait Next {
    fn next(&self) -> Option<&ViewDef>;
}

impl Next for Option<ViewDef> {
    fn next(&self) -> Option<&ViewDef> {
        self.as_ref()
    }
}

/// A drop that hands back the view it dropped.
impl Next for (Option<ViewDef>, ViewDef) {
    fn next(&self) -> Option<&ViewDef> {
        self.0.as_ref()
    }
}

fn check_name(db: &str, name: &str) -> Result<(), ViewError> {
    for (what, n) in [("schema", db), ("view", name)] {
        if n.is_empty() || n.contains('/') {
            return Err(ViewError::InvalidName(format!(
                "invalid {what} name \"{n}\": tarn cannot keep a view whose {what} name is \
                 empty or contains \"/\""
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
