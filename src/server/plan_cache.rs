//! [`PlanCache`]: one session's statements as it last parsed and planned them, by their text.
//!
//! Parsing (with tarn's AST rewrites) is a pure function of the text, so the commands of a text
//! are kept as long as the text is. A query's plans ([`Planned`]) are kept next to them and are
//! valid only under the [`PlanKey`] they were made with: the session's settings generation
//! (search_path, TimeZone and every other setting), the warehouse catalog's generation (DDL of
//! this server) and their age — tables created, dropped or altered by other engines reach a kept
//! plan within [`MAX_PLAN_AGE`]. The cache is per session (plans read through the session's
//! transaction) and bounded: the least recently used text goes first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::logical_expr::LogicalPlan;

use crate::query::plan_reuse::Reuse;
use crate::sql::Command;

/// Texts a session keeps.
pub const CAPACITY: usize = 256;

/// How long a kept plan is trusted without planning again: what other engines' DDL may take to
/// be seen (this server's own DDL is seen at once).
pub const MAX_PLAN_AGE: Duration = Duration::from_secs(1);

/// What a plan was made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanKey {
    /// [`Settings::generation`](super::settings::Settings::generation).
    pub settings: u64,
    /// [`WarehouseCatalog::generation`](crate::query::WarehouseCatalog::generation).
    pub catalog: u64,
    pub made: Instant,
}

impl PlanKey {
    /// Whether a plan made under `self` may run under `now`.
    pub fn valid_under(&self, now: &PlanKey) -> bool {
        self.settings == now.settings
            && self.catalog == now.catalog
            && now.made.saturating_duration_since(self.made) < MAX_PLAN_AGE
    }
}

/// A query's plans, made once.
#[derive(Debug, Clone)]
pub struct Planned {
    /// As the SQL planner made it (with its `$n` placeholders).
    pub logical: LogicalPlan,
    /// Analysed and optimised, when that may be reused ([`crate::query::plan_reuse`]).
    pub optimized: Option<LogicalPlan>,
    /// The columns the plan returns once analysed (what Describe announces).
    pub columns: Option<SchemaRef>,
    /// `$1..$n`'s types, with which `optimized` was made (empty without parameters).
    pub param_types: Vec<DataType>,
    /// What of the plan may be reused.
    pub reuse: Reuse,
    pub key: PlanKey,
}

/// One text: its commands and the plans of those that are kept queries.
#[derive(Debug)]
struct Entry {
    commands: Arc<Vec<Command>>,
    plans: Vec<Option<Arc<Planned>>>,
    used: u64,
}

/// A session's texts, commands and plans (see the module docs).
#[derive(Debug)]
pub struct PlanCache {
    entries: HashMap<Arc<str>, Entry>,
    capacity: usize,
    tick: u64,
}

impl Default for PlanCache {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl PlanCache {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            capacity: capacity.max(1),
            tick: 0,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// The commands of `text`, if it was parsed before.
    pub fn commands(&mut self, text: &str) -> Option<Arc<Vec<Command>>> {
        self.tick += 1;
        let entry = self.entries.get_mut(text)?;
        entry.used = self.tick;
        Some(Arc::clone(&entry.commands))
    }

    /// Keeps the commands `text` parsed into (dropping what it held for `text`).
    pub fn insert_commands(&mut self, text: &str, commands: Arc<Vec<Command>>) {
        self.tick += 1;
        if !self.entries.contains_key(text) && self.entries.len() >= self.capacity {
            self.evict();
        }
        let plans = vec![None; commands.len()];
        self.entries.insert(
            Arc::from(text),
            Entry {
                commands,
                plans,
                used: self.tick,
            },
        );
    }

    /// The plans of statement `index` of `text`, if they are valid under `now`.
    pub fn plan(&self, text: &str, index: usize, now: &PlanKey) -> Option<Arc<Planned>> {
        let planned = self.entries.get(text)?.plans.get(index)?.as_ref()?;
        planned.key.valid_under(now).then(|| Arc::clone(planned))
    }

    /// Keeps the plans of statement `index` of `text` (a text not kept is left alone).
    pub fn insert_plan(&mut self, text: &str, index: usize, planned: Arc<Planned>) {
        if let Some(slot) = self
            .entries
            .get_mut(text)
            .and_then(|e| e.plans.get_mut(index))
        {
            *slot = Some(planned);
        }
    }

    /// Drops every plan (`DISCARD`); the commands stay, parsing depends on nothing else.
    pub fn clear_plans(&mut self) {
        for entry in self.entries.values_mut() {
            entry.plans.iter_mut().for_each(|p| *p = None);
        }
    }

    fn evict(&mut self) {
        if let Some(oldest) = self
            .entries
            .iter()
            .min_by_key(|(_, e)| e.used)
            .map(|(k, _)| Arc::clone(k))
        {
            self.entries.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::LogicalPlanBuilder;

    fn key(settings: u64, catalog: u64, made: Instant) -> PlanKey {
        PlanKey {
            settings,
            catalog,
            made,
        }
    }

    fn planned(key: PlanKey) -> Arc<Planned> {
        Arc::new(Planned {
            logical: LogicalPlanBuilder::empty(true).build().unwrap(),
            optimized: None,
            columns: None,
            param_types: Vec::new(),
            reuse: Reuse::Cached { optimized: false },
            key,
        })
    }

    fn commands(sql: &str) -> Arc<Vec<Command>> {
        Arc::new(crate::sql::parse(sql).unwrap())
    }

    #[test]
    fn keeps_commands_and_plans_by_text_and_statement() {
        let mut cache = PlanCache::default();
        let now = key(1, 1, Instant::now());
        assert!(cache.commands("select 1; select 2").is_none());
        cache.insert_commands("select 1; select 2", commands("select 1; select 2"));
        assert_eq!(cache.commands("select 1; select 2").unwrap().len(), 2);
        assert!(cache.plan("select 1; select 2", 1, &now).is_none());
        cache.insert_plan("select 1; select 2", 1, planned(now));
        assert!(cache.plan("select 1; select 2", 1, &now).is_some());
        assert!(cache.plan("select 1; select 2", 0, &now).is_none());
        // Another text, even one differing only in case or spacing, is another entry.
        assert!(cache.plan("SELECT 1; select 2", 1, &now).is_none());
        // A plan for a text never parsed is not kept.
        cache.insert_plan("select 3", 0, planned(now));
        assert!(cache.plan("select 3", 0, &now).is_none());
        cache.clear_plans();
        assert!(cache.plan("select 1; select 2", 1, &now).is_none());
        assert!(cache.commands("select 1; select 2").is_some());
    }

    #[test]
    fn a_plan_is_valid_only_under_its_key_and_age() {
        let made = Instant::now();
        let k = key(3, 7, made);
        assert!(k.valid_under(&key(3, 7, made)));
        assert!(!k.valid_under(&key(4, 7, made)), "a setting changed");
        assert!(!k.valid_under(&key(3, 8, made)), "the catalog changed");
        assert!(!k.valid_under(&key(3, 7, made + MAX_PLAN_AGE)), "too old");
        let mut cache = PlanCache::default();
        cache.insert_commands("select 1", commands("select 1"));
        cache.insert_plan("select 1", 0, planned(k));
        assert!(cache.plan("select 1", 0, &key(3, 8, made)).is_none());
        assert!(cache.plan("select 1", 0, &key(3, 7, made)).is_some());
    }

    #[test]
    fn bounded_least_recently_used_text_goes_first() {
        let mut cache = PlanCache::with_capacity(3);
        for sql in ["select 1", "select 2", "select 3"] {
            cache.insert_commands(sql, commands(sql));
        }
        // "select 1" is used again, so "select 2" is the least recently used.
        assert!(cache.commands("select 1").is_some());
        cache.insert_commands("select 4", commands("select 4"));
        assert_eq!(cache.len(), 3);
        assert!(cache.commands("select 2").is_none());
        for sql in ["select 1", "select 3", "select 4"] {
            assert!(cache.commands(sql).is_some(), "{sql}");
        }
        // Replacing a kept text evicts nothing.
        cache.insert_commands("select 4", commands("select 4"));
        assert_eq!(cache.len(), 3);
        assert!(cache.commands("select 1").is_some());
    }
}
