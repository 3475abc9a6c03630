//! Column statistics of a data file (min, max, null count), as manifests store them.
//!
//! Readers use them to skip files: key statistics prune point and range lookups on the primary
//! key, value statistics let other engines prune append tables. Values are computed with Arrow's
//! aggregate kernels (no per-row work), then encoded as BinaryRows. Long strings in value
//! statistics are truncated as Paimon's default `truncate(16)` mode does, the maximum rounded up
//! so it still bounds every value.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::{
    max, max_binary, max_boolean, max_string, min, min_binary, min_boolean, min_string,
};
use arrow::datatypes::DataType as ArrowType;
use arrow::datatypes::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, Time32MillisecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};

use crate::storage::StorageError;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::{Datum, Timestamp};
use crate::storage::spec::manifest::SimpleStats;
use crate::storage::spec::types::{PaimonType, TypeKind};

/// Characters kept of string values in value statistics (Paimon's `truncate(16)`).
pub const STRING_STATS_LENGTH: usize = 16;

/// Min, max (NULL when unknown or all null) and null count of one column.
pub fn column_stats(
    array: &ArrayRef,
    ty: &PaimonType,
    truncate: bool,
) -> Result<(Datum, Datum, i64), StorageError> {
    let nulls = array.null_count() as i64;
    if nulls as usize == array.len() {
        return Ok((Datum::Null, Datum::Null, nulls));
    }
    macro_rules! prim {
        ($t:ty, $wrap:expr) => {{
            let a = array.as_primitive::<$t>();
            (
                min(a).map($wrap).unwrap_or(Datum::Null),
                max(a).map($wrap).unwrap_or(Datum::Null),
            )
        }};
    }
    let (lo, hi) = match (&ty.kind, array.data_type()) {
        (TypeKind::Boolean, ArrowType::Boolean) => {
            let a = array.as_boolean();
            (
                min_boolean(a).map(Datum::Boolean).unwrap_or(Datum::Null),
                max_boolean(a).map(Datum::Boolean).unwrap_or(Datum::Null),
            )
        }
        (TypeKind::TinyInt, ArrowType::Int8) => prim!(Int8Type, Datum::TinyInt),
        (TypeKind::SmallInt, ArrowType::Int16) => prim!(Int16Type, Datum::SmallInt),
        (TypeKind::Int, ArrowType::Int32) => prim!(Int32Type, Datum::Int),
        (TypeKind::BigInt, ArrowType::Int64) => prim!(Int64Type, Datum::BigInt),
        (TypeKind::Float, ArrowType::Float32) => {
            let a = array.as_primitive::<Float32Type>();
            if a.values().iter().any(|v| v.is_nan()) {
                (Datum::Null, Datum::Null)
            } else {
                prim!(Float32Type, Datum::Float)
            }
        }
        (TypeKind::Double, ArrowType::Float64) => {
            let a = array.as_primitive::<Float64Type>();
            if a.values().iter().any(|v| v.is_nan()) {
                (Datum::Null, Datum::Null)
            } else {
                prim!(Float64Type, Datum::Double)
            }
        }
        (TypeKind::Decimal { .. }, ArrowType::Decimal128(..)) => {
            prim!(Decimal128Type, Datum::Decimal)
        }
        (TypeKind::Date, ArrowType::Date32) => prim!(Date32Type, Datum::Date),
        (TypeKind::Time(_), ArrowType::Time32(TimeUnit::Millisecond)) => {
            prim!(Time32MillisecondType, Datum::Time)
        }
        (TypeKind::Timestamp(_) | TypeKind::TimestampLtz(_), ArrowType::Timestamp(unit, _)) => {
            match unit {
                TimeUnit::Second => prim!(TimestampSecondType, |s: i64| Datum::Timestamp(
                    Timestamp::from_millis(s * 1000)
                )),
                TimeUnit::Millisecond => prim!(TimestampMillisecondType, |v| Datum::Timestamp(
                    Timestamp::from_millis(v)
                )),
                TimeUnit::Microsecond => prim!(TimestampMicrosecondType, |v| Datum::Timestamp(
                    Timestamp::from_micros(v)
                )),
                TimeUnit::Nanosecond => prim!(TimestampNanosecondType, |v| Datum::Timestamp(
                    Timestamp::from_nanos(v)
                )),
            }
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8) => {
            let a = array.as_string::<i32>();
            let lo = min_string(a).map(|s| truncate_min(s, truncate));
            let hi = max_string(a).and_then(|s| truncate_max(s, truncate));
            (
                lo.map(Datum::String).unwrap_or(Datum::Null),
                hi.map(Datum::String).unwrap_or(Datum::Null),
            )
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::Binary) => {
            let a = array.as_binary::<i32>();
            if truncate {
                (Datum::Null, Datum::Null)
            } else {
                (
                    min_binary(a)
                        .map(|b| Datum::Binary(b.to_vec()))
                        .unwrap_or(Datum::Null),
                    max_binary(a)
                        .map(|b| Datum::Binary(b.to_vec()))
                        .unwrap_or(Datum::Null),
                )
            }
        }
        // Nested types and anything unexpected: no bounds, only the null count.
        _ => (Datum::Null, Datum::Null),
    };
    Ok((lo, hi, nulls))
}

fn truncate_min(s: &str, truncate: bool) -> String {
    if !truncate {
        return s.to_owned();
    }
    s.chars().take(STRING_STATS_LENGTH).collect()
}

/// A string that is >= `s` and at most [`STRING_STATS_LENGTH`] characters long, or `None` when
/// no such short bound exists (then the statistic is left unknown).
fn truncate_max(s: &str, truncate: bool) -> Option<String> {
    if !truncate || s.chars().count() <= STRING_STATS_LENGTH {
        return Some(s.to_owned());
    }
    let mut chars: Vec<char> = s.chars().take(STRING_STATS_LENGTH).collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Statistics of `columns` (of `types`) as a [`SimpleStats`].
pub fn simple_stats(
    columns: &[ArrayRef],
    types: &[PaimonType],
    truncate: bool,
) -> Result<SimpleStats, StorageError> {
    let mut mins = Vec::with_capacity(columns.len());
    let mut maxs = Vec::with_capacity(columns.len());
    let mut nulls = Vec::with_capacity(columns.len());
    for (c, t) in columns.iter().zip(types) {
        let (lo, hi, n) = column_stats(c, t, truncate)?;
        mins.push(lo);
        maxs.push(hi);
        nulls.push(Some(n));
    }
    Ok(SimpleStats {
        min_values: binary_row::serialize(&mins, types),
        max_values: binary_row::serialize(&maxs, types),
        null_counts: Some(nulls),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn min_max_nulls() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), None, Some(-2)]));
        let ty = PaimonType::nullable(TypeKind::BigInt);
        assert_eq!(
            column_stats(&a, &ty, true).unwrap(),
            (Datum::BigInt(-2), Datum::BigInt(5), 1)
        );
        let s: ArrayRef = Arc::new(StringArray::from(vec![
            "b",
            "aaaaaaaaaaaaaaaaaaaaaaaz",
            "c",
        ]));
        let ty = PaimonType::nullable(TypeKind::VarChar(100));
        let (lo, hi, _) = column_stats(&s, &ty, true).unwrap();
        assert_eq!(lo, Datum::String("aaaaaaaaaaaaaaaa".into()));
        assert_eq!(hi, Datum::String("c".into()));
        assert_eq!(
            truncate_max("aaaaaaaaaaaaaaaaXYZ", true).unwrap(),
            "aaaaaaaaaaaaaaab"
        );
    }
}
