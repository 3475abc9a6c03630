//! `schema/schema-N`: a table's columns, keys and options, as Paimon writes them (the options
//! are read through `options.rs`: their keys, defaults and parsers).
//!
//! A table's schema files are immutable versions (`schema-0`, `schema-1`, ...). Each field keeps
//! its id for life, so a data file written under an older schema is read by field id: a column
//! renamed later still lines up, a column added later reads as NULL.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::storage::StorageError;
use crate::storage::spec::types::{DataField, PaimonType};

/// Version of the schema JSON tarn writes (Paimon 0.9+ writes 3).
pub const SCHEMA_VERSION: i32 = 3;

/// One version of a table's schema.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub id: i64,
    pub fields: Vec<DataField>,
    pub highest_field_id: i32,
    pub partition_keys: Vec<String>,
    pub primary_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub comment: Option<String>,
    pub time_millis: i64,
}

impl TableSchema {
    /// Parses a `schema-N` file.
    pub fn from_json(bytes: &[u8]) -> Result<Self, StorageError> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| StorageError::format(format!("schema file is not JSON: {e}")))?;
        let strings = |key: &str| -> Vec<String> {
            v.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| StorageError::format("schema file without fields"))?
            .iter()
            .map(DataField::from_json)
            .collect::<Result<Vec<_>, _>>()?;
        let options = v
            .get("options")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let highest = fields.iter().map(|f| f.id).max().unwrap_or(-1);
        Ok(Self {
            id: v.get("id").and_then(Value::as_i64).unwrap_or(0),
            highest_field_id: v
                .get("highestFieldId")
                .and_then(Value::as_i64)
                .map(|h| h as i32)
                .unwrap_or(highest),
            fields,
            partition_keys: strings("partitionKeys"),
            primary_keys: strings("primaryKeys"),
            options,
            comment: v.get("comment").and_then(Value::as_str).map(str::to_owned),
            time_millis: v.get("timeMillis").and_then(Value::as_i64).unwrap_or(0),
        })
    }

    /// The `schema-N` file contents.
    pub fn to_json(&self) -> Vec<u8> {
        let value = json!({
            "version": SCHEMA_VERSION,
            "id": self.id,
            "fields": self.fields.iter().map(DataField::to_json).collect::<Vec<_>>(),
            "highestFieldId": self.highest_field_id,
            "partitionKeys": self.partition_keys,
            "primaryKeys": self.primary_keys,
            "options": self.options,
            "comment": self.comment,
            "timeMillis": self.time_millis,
        });
        serde_json::to_vec_pretty(&value).expect("schema serializes")
    }

    pub fn field(&self, name: &str) -> Option<&DataField> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    pub fn field_by_id(&self, id: i32) -> Option<&DataField> {
        self.fields.iter().find(|f| f.id == id)
    }

    /// Whether rows have a primary key (merge-on-read table) or not (append table).
    pub fn has_primary_key(&self) -> bool {
        !self.primary_keys.is_empty()
    }

    /// The primary key without the partition keys: the key a bucket's LSM tree sorts by and the
    /// `_KEY_*` columns of its data files.
    pub fn trimmed_primary_keys(&self) -> Vec<String> {
        self.primary_keys
            .iter()
            .filter(|k| !self.partition_keys.contains(k))
            .cloned()
            .collect()
    }

    /// Columns whose hash picks a row's bucket: `bucket-key`, else the trimmed primary key.
    pub fn bucket_keys(&self) -> Vec<String> {
        self.core_options()
            .bucket_key()
            .unwrap_or_else(|| self.trimmed_primary_keys())
    }

    /// The `bucket` option: N > 0 fixed buckets, -1 dynamic (or unaware for append tables),
    /// -2 postponed. Paimon's default when unset is -1.
    pub fn bucket(&self) -> i32 {
        self.core_options().bucket()
    }

    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// Type of the field `name` (panics if absent: callers validated names).
    pub fn type_of(&self, name: &str) -> &PaimonType {
        &self
            .field(name)
            .unwrap_or_else(|| panic!("schema has no field {name}"))
            .data_type
    }

    /// Indexes of `names` among the fields.
    pub fn indexes_of(&self, names: &[String]) -> Vec<usize> {
        names
            .iter()
            .map(|n| {
                self.field_index(n)
                    .unwrap_or_else(|| panic!("schema has no field {n}"))
            })
            .collect()
    }

    /// Checks Paimon's rules for a schema tarn is about to create.
    pub fn validate(&self) -> Result<(), StorageError> {
        let invalid = |m: String| Err(StorageError::InvalidSchema(m));
        let mut seen = std::collections::BTreeSet::new();
        for f in &self.fields {
            if !seen.insert(f.name.as_str()) {
                return invalid(format!("column \"{}\" specified more than once", f.name));
            }
        }
        for k in self.primary_keys.iter().chain(&self.partition_keys) {
            let Some(field) = self.field(k) else {
                return invalid(format!("column \"{k}\" named in a key does not exist"));
            };
            if !field.data_type.is_key_type() {
                return invalid(format!(
                    "column \"{k}\" of type {} cannot be part of a key",
                    field.data_type
                ));
            }
        }
        if self.has_primary_key() {
            if let Some(p) = self
                .partition_keys
                .iter()
                .find(|p| !self.primary_keys.contains(p))
            {
                return invalid(format!(
                    "partition column \"{p}\" must be part of the primary key: Paimon routes every \
                     version of a row to one partition, so a primary-key table's partition \
                     columns belong to its key"
                ));
            }
            if self.trimmed_primary_keys().is_empty() {
                return invalid(
                    "the primary key must have a column besides the partition columns: otherwise \
                     each partition could hold a single row"
                        .to_owned(),
                );
            }
        }
        for k in self.bucket_keys() {
            if self.field(&k).is_none() {
                return invalid(format!("bucket-key column \"{k}\" does not exist"));
            }
            if self.partition_keys.contains(&k) {
                return invalid(format!(
                    "bucket-key column \"{k}\" must not be a partition column"
                ));
            }
            if self.has_primary_key() && !self.primary_keys.contains(&k) {
                return invalid(format!(
                    "bucket-key column \"{k}\" must be part of the primary key"
                ));
            }
        }
        crate::storage::spec::file_index::validate(self).map_err(StorageError::InvalidSchema)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYPAIMON_SCHEMA: &str = r#"{
      "version": 3, "id": 0,
      "fields": [
        {"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
        {"id": 1, "name": "customer", "type": "STRING"},
        {"id": 2, "name": "amount", "type": "DECIMAL(12, 2)"},
        {"id": 5, "name": "dt", "type": "STRING NOT NULL"}
      ],
      "highestFieldId": 5, "partitionKeys": ["dt"], "primaryKeys": ["id", "dt"],
      "options": {"bucket": "4"}, "comment": null, "timeMillis": 1796241103401
    }"#;

    #[test]
    fn reads_and_writes_pypaimon_schema() {
        let schema = TableSchema::from_json(PYPAIMON_SCHEMA.as_bytes()).unwrap();
        assert_eq!(schema.fields.len(), 4);
        assert_eq!(schema.bucket(), 4);
        assert_eq!(schema.trimmed_primary_keys(), ["id"]);
        assert_eq!(schema.bucket_keys(), ["id"]);
        assert_eq!(schema.highest_field_id, 5);
        let again = TableSchema::from_json(&schema.to_json()).unwrap();
        assert_eq!(again, schema);
        schema.validate().unwrap();
    }

    #[test]
    fn validates_paimon_key_rules() {
        let mut schema = TableSchema::from_json(PYPAIMON_SCHEMA.as_bytes()).unwrap();
        schema.primary_keys = vec!["id".into()];
        let err = schema.validate().unwrap_err().to_string();
        assert!(err.contains("must be part of the primary key"), "{err}");
        schema.primary_keys = vec!["dt".into()];
        assert!(schema.validate().is_err());
        schema.primary_keys = vec![];
        schema.validate().unwrap();
    }
}
