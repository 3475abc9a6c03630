//! PostgreSQL types of table columns, carried as Arrow field metadata.
//!
//! Arrow has one string type; PostgreSQL clients must still see `varchar(n)`, `bpchar(n)`,
//! `uuid`, `json` and `jsonb` columns with their own type OIDs. A table's Arrow schema marks such
//! fields with [`PG_TYPE_KEY`] (and [`PG_LENGTH_KEY`]); the metadata follows a column through
//! DataFusion's projections, and the wire layer maps it to the type it reports.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};

use crate::storage::Table;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{MAX_LENGTH, TypeKind};

/// Field metadata key: the PostgreSQL type name of a column whose Arrow type is ambiguous.
pub const PG_TYPE_KEY: &str = "tarn.pg_type";
/// Field metadata key: the declared length of a `varchar(n)` / `bpchar(n)` column.
pub const PG_LENGTH_KEY: &str = "tarn.pg_length";

/// The Arrow schema a table shows to queries: Paimon fields in order, with type hints.
pub fn table_arrow_schema(table: &Table) -> Result<SchemaRef> {
    arrow_schema(table.schema())
}

pub fn arrow_schema(schema: &TableSchema) -> Result<SchemaRef> {
    let fields = schema
        .fields
        .iter()
        .map(|f| {
            let ty = f.data_type.to_arrow().map_err(|e| {
                DataFusionError::NotImplemented(format!(
                    "column \"{}\" of table has type {}: {e}",
                    f.name, f.data_type
                ))
            })?;
            let mut meta = HashMap::new();
            match f.data_type.kind {
                TypeKind::VarChar(n) if n < MAX_LENGTH => {
                    meta.insert(PG_TYPE_KEY.to_owned(), "varchar".to_owned());
                    meta.insert(PG_LENGTH_KEY.to_owned(), n.to_string());
                }
                TypeKind::Char(n) => {
                    meta.insert(PG_TYPE_KEY.to_owned(), "bpchar".to_owned());
                    meta.insert(PG_LENGTH_KEY.to_owned(), n.to_string());
                }
                _ => {}
            }
            if let Some(hint) = schema.core_options().pg_type(&f.name)
                && matches!(hint, "uuid" | "json" | "jsonb")
            {
                meta.insert(PG_TYPE_KEY.to_owned(), hint.to_owned());
            }
            // Every field is nullable to DataFusion: NOT NULL is checked by storage on write,
            // with PostgreSQL's error (DataFusion's own check names VALUES columns and has no
            // SQLSTATE).
            Ok(Field::new(&f.name, ty, true).with_metadata(meta))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// The tarn PostgreSQL type hint of a field, if any.
pub fn pg_type_of(field: &Field) -> Option<&str> {
    field.metadata().get(PG_TYPE_KEY).map(String::as_str)
}
