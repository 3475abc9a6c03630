//! `schema/schema-N`: a table's columns, keys and options, as Paimon writes them (the options
//! are read through `options.rs`: their keys, defaults and parsers).
//!
//! A table's schema files are immutable versions (`schema-0`, `schema-1`, ...). Each field keeps
//! its id for life, so a data file written under an older schema is read by field id: a column
//! renamed later still lines up, a column added later reads as NULL.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::storage::StorageError;
use crate::storage::spec::types::{DataField, PaimonType, TypeKind};

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
        let highest = max_field_id(&fields);
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
        let mut value = json!({
            "version": SCHEMA_VERSION,
            "id": self.id,
            "fields": self.fields.iter().map(DataField::to_json).collect::<Vec<_>>(),
            "highestFieldId": self.highest_field_id,
            "partitionKeys": self.partition_keys,
            "primaryKeys": self.primary_keys,
            "options": self.options,
            "timeMillis": self.time_millis,
        });
        // Omitted when there is none, as Java writes it: Java reads `"comment": null` as the
        // string "null".
        if let (Some(comment), Some(map)) = (&self.comment, value.as_object_mut()) {
            map.insert("comment".to_owned(), json!(comment));
        }
        serde_json::to_vec_pretty(&value).expect("schema serializes")
    }

    /// The highest field id among the fields, nested ROW fields included (-1 when none).
    pub fn max_field_id(&self) -> i32 {
        max_field_id(&self.fields)
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

/// The highest id among `fields` and the fields nested in their types (-1 when none).
fn max_field_id(fields: &[DataField]) -> i32 {
    fn of_type(ty: &PaimonType) -> i32 {
        match &ty.kind {
            TypeKind::Row(fields) => max_field_id(fields),
            TypeKind::Array(e) | TypeKind::Multiset(e) => of_type(e),
            TypeKind::Map(k, v) => of_type(k).max(of_type(v)),
            _ => -1,
        }
    }
    fields
        .iter()
        .map(|f| f.id.max(of_type(&f.data_type)))
        .max()
        .unwrap_or(-1)
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
    fn defaults_descriptions_and_comments_round_trip() {
        // No highestFieldId: the highest id, nested ones included.
        let text = r#"{
          "version": 3, "id": 2,
          "fields": [
            {"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
            {"id": 3, "name": "state", "type": "VARCHAR(20)", "description": "gross, EUR",
             "defaultValue": "'web'"},
            {"id": 5, "name": "c",
             "type": {"type": "ROW", "fields": [{"id": 6, "name": "x", "type": "INT"}]}}
          ],
          "partitionKeys": [], "primaryKeys": ["id"], "options": {"bucket": "4"},
          "comment": "orders", "timeMillis": 1720496663041
        }"#;
        let schema = TableSchema::from_json(text.as_bytes()).unwrap();
        assert_eq!(schema.highest_field_id, 6);
        let state = schema.field("state").unwrap();
        assert_eq!(state.default_value.as_deref(), Some("'web'"));
        assert_eq!(state.description.as_deref(), Some("gross, EUR"));
        assert_eq!(schema.comment.as_deref(), Some("orders"));
        let json = schema.to_json();
        assert_eq!(TableSchema::from_json(&json).unwrap(), schema);
        let value: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["fields"][1]["defaultValue"], "'web'");
        assert_eq!(value["fields"][1]["description"], "gross, EUR");
        assert!(value["fields"][0].get("defaultValue").is_none());
        assert!(value["fields"][0].get("description").is_none());
        assert_eq!(value["comment"], "orders");
        // No comment: no key (Java reads `"comment": null` as the string "null").
        let none = TableSchema {
            comment: None,
            ..schema
        };
        let value: Value = serde_json::from_slice(&none.to_json()).unwrap();
        assert!(value.get("comment").is_none(), "{value}");
        assert_eq!(TableSchema::from_json(&none.to_json()).unwrap(), none);
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
