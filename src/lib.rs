//! tarn: a PostgreSQL-wire SQL server whose tables are Apache Paimon tables.
//!
//! Layers point one way: [`server`] → [`sql`] → [`query`] → [`storage`]. See
//! `docs/ARCHITECTURE.md` for the map and the invariants.

pub mod config;
pub mod query;
pub mod server;
pub mod sql;
pub mod storage;
