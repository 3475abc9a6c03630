//! The table options of file indexes, as Paimon Java reads them (`FileIndexOptions`,
//! `BloomFilterFileIndex`'s `items` and `fpp`, `file-index.in-manifest-threshold`) and checks
//! them (`SchemaValidation.validateFileIndex`).

use std::collections::BTreeMap;

use super::format::{BLOOM_FILTER, hashable};
use crate::storage::spec::options::{self, OptionError, parse_size};
use crate::storage::spec::schema::TableSchema;

/// Java `BloomFilterFileIndex.DEFAULT_ITEMS` / `DEFAULT_FPP`.
pub const DEFAULT_ITEMS: i32 = 1_000_000;
pub const DEFAULT_FPP: f64 = 0.1;
/// Java's default `file-index.in-manifest-threshold` (500 B).
pub const DEFAULT_IN_MANIFEST_THRESHOLD: usize = 500;

/// One bloom-filter column of a table, as its options set it up.
#[derive(Debug, Clone, PartialEq)]
pub struct BloomColumn {
    pub name: String,
    pub items: i32,
    pub fpp: f64,
}

/// The file indexes tarn writes for a table (bloom filters; Paimon's other index types are not
/// written, which only means readers cannot skip by them).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexOptions {
    pub bloom: Vec<BloomColumn>,
    pub in_manifest_threshold: usize,
}

impl IndexOptions {
    /// The bloom-filter columns of `options` with their settings (Java `FileIndexOptions`), or
    /// `None` when there are none. Nested map columns (`m[key]`) are left out.
    pub fn from_options(
        options: &BTreeMap<String, String>,
    ) -> std::result::Result<Option<Self>, String> {
        let prefix = format!("{}{BLOOM_FILTER}.", options::FILE_INDEX_PREFIX);
        let columns_key = options::FILE_INDEX_BLOOM_FILTER_COLUMNS;
        let Some(list) = options.get(columns_key) else {
            return Ok(None);
        };
        let mut bloom: Vec<BloomColumn> = Vec::new();
        for name in java_split(list) {
            if name.trim().is_empty() {
                return Err(format!(
                    "Wrong option in {columns_key}, should not have empty column"
                ));
            }
            let name = name.trim();
            if !is_nested(name) && !bloom.iter().any(|c| c.name == name) {
                bloom.push(BloomColumn {
                    name: name.to_owned(),
                    items: DEFAULT_ITEMS,
                    fpp: DEFAULT_FPP,
                });
            }
        }
        for (key, value) in options.range(prefix.clone()..) {
            let Some(rest) = key.strip_prefix(&prefix) else {
                break;
            };
            let parts: Vec<&str> = rest.split('.').collect();
            let [column, option] = parts[..] else {
                continue;
            };
            let Some(c) = bloom.iter_mut().find(|c| c.name == column) else {
                if is_nested(column) {
                    continue;
                }
                return Err(format!(
                    "Wrong file index option '{key}': column '{column}' is not declared in \
                     '{columns_key}'"
                ));
            };
            match option {
                "items" => c.items = parse_items(value)?,
                "fpp" => c.fpp = parse_fpp(value)?,
                _ => {}
            }
        }
        let in_manifest_threshold = match options.get(options::FILE_INDEX_IN_MANIFEST_THRESHOLD) {
            None => DEFAULT_IN_MANIFEST_THRESHOLD,
            Some(v) => parse_size(v)
                .ok_or_else(|| format!("invalid file-index.in-manifest-threshold '{v}'"))?,
        };
        Ok((!bloom.is_empty()).then_some(IndexOptions {
            bloom,
            in_manifest_threshold,
        }))
    }
}

/// Java's `String.split(",")`: trailing empty pieces are dropped.
fn java_split(text: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = text.split(',').collect();
    while parts.len() > 1 && parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

fn is_nested(name: &str) -> bool {
    name.contains('[') && name.ends_with(']')
}

fn parse_items(value: &str) -> std::result::Result<i32, String> {
    match value.trim().parse::<i32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "bloom filter items '{value}' must be a number above 0"
        )),
    }
}

fn parse_fpp(value: &str) -> std::result::Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "bloom filter fpp '{value}' must be between 0 and 1"
        )),
    }
}

/// Checks one `file-index.*` option of a table tarn creates (each value alone; the columns are
/// checked against the table's by [`validate`]).
pub fn check_option(key: &str, value: &str) -> std::result::Result<(), OptionError> {
    let unsupported = || {
        Err(OptionError::Unsupported(format!(
            "table option '{key}' is not supported by tarn: it writes bloom-filter file indexes \
             only (file-index.bloom-filter.columns, file-index.bloom-filter.<column>.items / \
             .fpp, file-index.in-manifest-threshold, file-index.read.enabled)"
        )))
    };
    let invalid = |why: String| Err(OptionError::Invalid(why));
    let Some(rest) = key.strip_prefix(options::FILE_INDEX_PREFIX) else {
        return unsupported();
    };
    match rest {
        "in-manifest-threshold" => match parse_size(value) {
            Some(_) => Ok(()),
            None => invalid(format!(
                "invalid value '{value}' for table option '{key}': a size such as '500 b'"
            )),
        },
        "read.enabled" => match value.trim().to_lowercase().as_str() {
            "true" | "false" => Ok(()),
            _ => invalid(format!(
                "invalid value '{value}' for table option '{key}': true or false"
            )),
        },
        "bloom-filter.columns" => {
            for name in java_split(value) {
                if name.trim().is_empty() {
                    return invalid(format!(
                        "invalid value '{value}' for table option '{key}': column names \
                         separated by commas"
                    ));
                }
                if is_nested(name.trim()) {
                    return Err(OptionError::Unsupported(format!(
                        "table option '{key}': indexes of map entries ('{}') are not supported \
                         by tarn",
                        name.trim()
                    )));
                }
            }
            Ok(())
        }
        _ => match rest
            .strip_prefix("bloom-filter.")
            .and_then(|r| r.rsplit_once('.'))
        {
            Some((column, "items")) if !column.contains('.') => {
                parse_items(value).map(|_| ()).map_err(OptionError::Invalid)
            }
            Some((column, "fpp")) if !column.contains('.') => {
                parse_fpp(value).map(|_| ()).map_err(OptionError::Invalid)
            }
            _ => unsupported(),
        },
    }
}

/// Checks the file-index options of a schema tarn creates as a whole, as Paimon's
/// `SchemaValidation` does: each indexed column exists and has a type bloom filters support.
pub fn validate(schema: &TableSchema) -> std::result::Result<(), String> {
    let Some(options) = IndexOptions::from_options(&schema.options)? else {
        return Ok(());
    };
    for c in &options.bloom {
        let Some(field) = schema.field(&c.name) else {
            return Err(format!(
                "column \"{}\" named in 'file-index.bloom-filter.columns' does not exist",
                c.name
            ));
        };
        if !hashable(&field.data_type) {
            return Err(format!(
                "column \"{}\" of type {} cannot have a bloom-filter file index (Paimon hashes \
                 integers, floats, strings, binaries, dates, times and timestamps)",
                c.name, field.data_type
            ));
        }
    }
    Ok(())
}

/// Whether `file-index.read.enabled` (default true) lets readers use file indexes.
pub fn read_enabled(schema: &TableSchema) -> bool {
    schema
        .option(options::FILE_INDEX_READ_ENABLED)
        .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
}
