//! [`Datum`]: one scalar value of a Paimon type, for keys, partitions and statistics.
//!
//! Bulk data moves as Arrow arrays; single values (a partition's `dt`, a file's min key, a
//! column's max) are `Datum`s, encoded as Paimon's BinaryRow in manifests.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, LargeBinaryArray,
    LargeStringArray, StringArray, StringViewArray, Time32MillisecondArray, Time64MicrosecondArray,
};
use arrow::datatypes::{DataType as ArrowType, TimeUnit};

use crate::storage::StorageError;
use crate::storage::spec::types::{PaimonType, TypeKind};

/// A Paimon timestamp: milliseconds since the epoch plus nanoseconds within the millisecond
/// (Paimon's own split, which its BinaryRow stores as such).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    pub millis: i64,
    pub nanos_of_milli: i32,
}

impl Timestamp {
    pub fn from_micros(micros: i64) -> Self {
        Self {
            millis: micros.div_euclid(1000),
            nanos_of_milli: (micros.rem_euclid(1000) * 1000) as i32,
        }
    }

    pub fn from_nanos(nanos: i64) -> Self {
        Self {
            millis: nanos.div_euclid(1_000_000),
            nanos_of_milli: nanos.rem_euclid(1_000_000) as i32,
        }
    }

    pub fn from_millis(millis: i64) -> Self {
        Self {
            millis,
            nanos_of_milli: 0,
        }
    }

    pub fn to_micros(self) -> i64 {
        self.millis * 1000 + (self.nanos_of_milli / 1000) as i64
    }

    pub fn to_nanos(self) -> i64 {
        self.millis * 1_000_000 + self.nanos_of_milli as i64
    }
}

/// One value of a Paimon type.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    Boolean(bool),
    TinyInt(i8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Float(f32),
    Double(f64),
    /// Unscaled value; precision and scale come from the type.
    Decimal(i128),
    String(String),
    Binary(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Milliseconds of the day.
    Time(i32),
    /// Both `TIMESTAMP` and `TIMESTAMP WITH LOCAL TIME ZONE` (the latter as UTC).
    Timestamp(Timestamp),
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// The value at `row` of `array`, read as Paimon type `ty`.
    pub fn from_array(
        array: &ArrayRef,
        row: usize,
        ty: &PaimonType,
    ) -> Result<Datum, StorageError> {
        if array.is_null(row) {
            return Ok(Datum::Null);
        }
        let mismatch = || {
            StorageError::format(format!(
                "column of Arrow type {} does not hold Paimon type {ty}",
                array.data_type()
            ))
        };
        macro_rules! get {
            ($t:ty) => {
                array
                    .as_any()
                    .downcast_ref::<$t>()
                    .ok_or_else(mismatch)?
                    .value(row)
            };
        }
        Ok(match &ty.kind {
            TypeKind::Boolean => Datum::Boolean(get!(BooleanArray)),
            TypeKind::TinyInt => Datum::TinyInt(get!(Int8Array)),
            TypeKind::SmallInt => Datum::SmallInt(get!(Int16Array)),
            TypeKind::Int => Datum::Int(get!(Int32Array)),
            TypeKind::BigInt => Datum::BigInt(get!(Int64Array)),
            TypeKind::Float => Datum::Float(get!(Float32Array)),
            TypeKind::Double => Datum::Double(get!(Float64Array)),
            TypeKind::Decimal { .. } => Datum::Decimal(get!(Decimal128Array)),
            TypeKind::Char(_) | TypeKind::VarChar(_) => Datum::String(match array.data_type() {
                ArrowType::Utf8 => get!(StringArray).to_owned(),
                ArrowType::LargeUtf8 => get!(LargeStringArray).to_owned(),
                ArrowType::Utf8View => get!(StringViewArray).to_owned(),
                ArrowType::Dictionary(..) => {
                    let dict = array.as_any_dictionary();
                    let key = dict.normalized_keys()[row];
                    let values = dict.values().clone();
                    return Datum::from_array(&values, key, ty);
                }
                _ => return Err(mismatch()),
            }),
            TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
                Datum::Binary(match array.data_type() {
                    ArrowType::Binary => get!(BinaryArray).to_vec(),
                    ArrowType::LargeBinary => get!(LargeBinaryArray).to_vec(),
                    ArrowType::BinaryView => array.as_binary_view().value(row).to_vec(),
                    ArrowType::FixedSizeBinary(_) => {
                        array.as_fixed_size_binary().value(row).to_vec()
                    }
                    _ => return Err(mismatch()),
                })
            }
            TypeKind::Date => Datum::Date(get!(Date32Array)),
            TypeKind::Time(_) => Datum::Time(match array.data_type() {
                ArrowType::Time32(TimeUnit::Millisecond) => get!(Time32MillisecondArray),
                ArrowType::Time64(TimeUnit::Microsecond) => {
                    (get!(Time64MicrosecondArray) / 1000) as i32
                }
                _ => return Err(mismatch()),
            }),
            TypeKind::Timestamp(_) | TypeKind::TimestampLtz(_) => {
                let ArrowType::Timestamp(unit, _) = array.data_type() else {
                    return Err(mismatch());
                };
                use arrow::datatypes::{
                    TimestampMicrosecondType as Us, TimestampMillisecondType as Ms,
                    TimestampNanosecondType as Ns, TimestampSecondType as S,
                };
                Datum::Timestamp(match unit {
                    TimeUnit::Second => Timestamp::from_millis(
                        array.as_primitive::<S>().value(row).saturating_mul(1000),
                    ),
                    TimeUnit::Millisecond => {
                        Timestamp::from_millis(array.as_primitive::<Ms>().value(row))
                    }
                    TimeUnit::Microsecond => {
                        Timestamp::from_micros(array.as_primitive::<Us>().value(row))
                    }
                    TimeUnit::Nanosecond => {
                        Timestamp::from_nanos(array.as_primitive::<Ns>().value(row))
                    }
                })
            }
            _ => return Err(StorageError::UnsupportedType(ty.to_string())),
        })
    }

    /// A column of Paimon type `ty` (in its Arrow type, [`PaimonType::to_arrow`]) holding
    /// `values`: the inverse of [`from_array`](Self::from_array), for building keys and rows
    /// from values (a read by key's wanted keys). A value of another type is a bug of the caller.
    pub fn to_column(values: &[Datum], ty: &PaimonType) -> Result<ArrayRef, StorageError> {
        use arrow::array::{
            TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
        };
        let wrong = |d: &Datum| StorageError::Internal(format!("value {d:?} is not of type {ty}"));
        macro_rules! build {
            ($array:ty, $variant:ident, $map:expr) => {{
                let array: $array = values
                    .iter()
                    .map(|d| match d {
                        Datum::Null => Ok(None),
                        Datum::$variant(v) => Ok(Some($map(v))),
                        other => Err(wrong(other)),
                    })
                    .collect::<Result<_, StorageError>>()?;
                Arc::new(array) as ArrayRef
            }};
        }
        let column = match &ty.kind {
            TypeKind::Boolean => build!(BooleanArray, Boolean, |v: &bool| *v),
            TypeKind::TinyInt => build!(Int8Array, TinyInt, |v: &i8| *v),
            TypeKind::SmallInt => build!(Int16Array, SmallInt, |v: &i16| *v),
            TypeKind::Int => build!(Int32Array, Int, |v: &i32| *v),
            TypeKind::BigInt => build!(Int64Array, BigInt, |v: &i64| *v),
            TypeKind::Float => build!(Float32Array, Float, |v: &f32| *v),
            TypeKind::Double => build!(Float64Array, Double, |v: &f64| *v),
            TypeKind::Decimal { precision, scale } => {
                let array: Decimal128Array = values
                    .iter()
                    .map(|d| match d {
                        Datum::Null => Ok(None),
                        Datum::Decimal(v) => Ok(Some(*v)),
                        other => Err(wrong(other)),
                    })
                    .collect::<Result<_, StorageError>>()?;
                Arc::new(array.with_precision_and_scale(*precision, *scale as i8)?) as ArrayRef
            }
            TypeKind::Char(_) | TypeKind::VarChar(_) => {
                build!(StringArray, String, |v: &String| v.clone())
            }
            TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
                build!(BinaryArray, Binary, |v: &Vec<u8>| v.clone())
            }
            TypeKind::Date => build!(Date32Array, Date, |v: &i32| *v),
            TypeKind::Time(_) => build!(Time32MillisecondArray, Time, |v: &i32| *v),
            TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => {
                let zone = matches!(ty.kind, TypeKind::TimestampLtz(_)).then(|| "UTC");
                match crate::storage::spec::types::timestamp_unit(*p) {
                    TimeUnit::Millisecond => Arc::new(
                        build_timestamps::<TimestampMillisecondArray>(
                            values,
                            |t| t.millis,
                            &wrong,
                        )?
                        .with_timezone_opt(zone),
                    ) as ArrayRef,
                    TimeUnit::Microsecond => Arc::new(
                        build_timestamps::<TimestampMicrosecondArray>(
                            values,
                            |t| t.to_micros(),
                            &wrong,
                        )?
                        .with_timezone_opt(zone),
                    ),
                    _ => Arc::new(
                        build_timestamps::<TimestampNanosecondArray>(
                            values,
                            |t| t.to_nanos(),
                            &wrong,
                        )?
                        .with_timezone_opt(zone),
                    ),
                }
            }
            _ => return Err(StorageError::UnsupportedType(ty.to_string())),
        };
        fn build_timestamps<A>(
            values: &[Datum],
            of: impl Fn(&Timestamp) -> i64,
            wrong: &dyn Fn(&Datum) -> StorageError,
        ) -> Result<A, StorageError>
        where
            A: FromIterator<Option<i64>>,
        {
            values
                .iter()
                .map(|d| match d {
                    Datum::Null => Ok(None),
                    Datum::Timestamp(t) => Ok(Some(of(t))),
                    other => Err(wrong(other)),
                })
                .collect()
        }
        Ok(column)
    }

    /// Orders two values of the same type (NULL first), as Paimon compares key and stats values:
    /// strings and binaries byte-wise.
    pub fn compare(&self, other: &Datum) -> Ordering {
        use Datum::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Less,
            (_, Null) => Ordering::Greater,
            (Boolean(a), Boolean(b)) => a.cmp(b),
            (TinyInt(a), TinyInt(b)) => a.cmp(b),
            (SmallInt(a), SmallInt(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (BigInt(a), BigInt(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Double(a), Double(b)) => a.total_cmp(b),
            (Decimal(a), Decimal(b)) => a.cmp(b),
            (String(a), String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Binary(a), Binary(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Time(a), Time(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            // Different kinds never meet for one column; keep the order total anyway.
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Datum::Null => 0,
            Datum::Boolean(_) => 1,
            Datum::TinyInt(_) => 2,
            Datum::SmallInt(_) => 3,
            Datum::Int(_) => 4,
            Datum::BigInt(_) => 5,
            Datum::Float(_) => 6,
            Datum::Double(_) => 7,
            Datum::Decimal(_) => 8,
            Datum::String(_) => 9,
            Datum::Binary(_) => 10,
            Datum::Date(_) => 11,
            Datum::Time(_) => 12,
            Datum::Timestamp(_) => 13,
        }
    }
}

/// Shows a value the way Paimon names partition folders (`dt=2026-12-01`).
pub struct PartitionText<'a>(pub &'a Datum, pub &'a PaimonType);

impl fmt::Display for PartitionText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, &self.1.kind) {
            (Datum::Null, _) => f.write_str("__DEFAULT_PARTITION__"),
            (Datum::Boolean(b), _) => write!(f, "{b}"),
            (Datum::TinyInt(v), _) => write!(f, "{v}"),
            (Datum::SmallInt(v), _) => write!(f, "{v}"),
            (Datum::Int(v), _) => write!(f, "{v}"),
            (Datum::BigInt(v), _) => write!(f, "{v}"),
            (Datum::Float(v), _) => write!(f, "{v:?}"),
            (Datum::Double(v), _) => write!(f, "{v:?}"),
            (Datum::Decimal(v), TypeKind::Decimal { scale, .. }) => {
                f.write_str(&decimal_text(*v, *scale))
            }
            (Datum::Decimal(v), _) => write!(f, "{v}"),
            (Datum::String(s), _) => f.write_str(s),
            (Datum::Binary(b), _) => {
                for byte in b {
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
            (Datum::Date(d), _) => f.write_str(&date_text(*d)),
            (Datum::Time(ms), _) => {
                let s = ms / 1000;
                write!(f, "{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)?;
                if ms % 1000 != 0 {
                    write!(f, ".{:03}", ms % 1000)?;
                }
                Ok(())
            }
            (Datum::Timestamp(ts), _) => {
                let secs = ts.millis.div_euclid(1000);
                let days = secs.div_euclid(86_400) as i32;
                let s = secs.rem_euclid(86_400);
                write!(
                    f,
                    "{} {:02}:{:02}:{:02}",
                    date_text(days),
                    s / 3600,
                    (s / 60) % 60,
                    s % 60
                )?;
                let nanos = ts.millis.rem_euclid(1000) * 1_000_000 + ts.nanos_of_milli as i64;
                if nanos != 0 {
                    let text = format!("{nanos:09}");
                    write!(f, ".{}", text.trim_end_matches('0'))?;
                }
                Ok(())
            }
        }
    }
}

/// `unscaled` with `scale` digits after the point (`1250`, 2 → `12.50`).
pub fn decimal_text(unscaled: i128, scale: u8) -> String {
    let negative = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let body = if scale == 0 {
        digits
    } else if digits.len() > scale {
        format!(
            "{}.{}",
            &digits[..digits.len() - scale],
            &digits[digits.len() - scale..]
        )
    } else {
        format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
    };
    if negative { format!("-{body}") } else { body }
}

/// `YYYY-MM-DD` of a day number (proleptic Gregorian, as Paimon and PostgreSQL print dates).
pub fn date_text(days: i32) -> String {
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn formats_partition_values_like_paimon() {
        let date = PaimonType::nullable(TypeKind::Date);
        assert_eq!(
            PartitionText(&Datum::Date(20_423), &date).to_string(),
            "2025-12-01"
        );
        assert_eq!(
            PartitionText(&Datum::Date(0), &date).to_string(),
            "1970-01-01"
        );
        assert_eq!(
            PartitionText(&Datum::Date(-1), &date).to_string(),
            "1969-12-31"
        );
        let dec = PaimonType::nullable(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        });
        assert_eq!(
            PartitionText(&Datum::Decimal(-5), &dec).to_string(),
            "-0.05"
        );
        assert_eq!(
            PartitionText(&Datum::Decimal(1250), &dec).to_string(),
            "12.50"
        );
        assert_eq!(
            PartitionText(&Datum::Null, &dec).to_string(),
            "__DEFAULT_PARTITION__"
        );
    }

    #[test]
    fn columns_of_values_read_back_as_the_same_values() {
        let cases = vec![
            (TypeKind::Boolean, Datum::Boolean(true)),
            (TypeKind::Int, Datum::Int(-7)),
            (TypeKind::BigInt, Datum::BigInt(1 << 40)),
            (TypeKind::Double, Datum::Double(1.5)),
            (
                TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                },
                Datum::Decimal(12_345),
            ),
            (TypeKind::VarChar(10), Datum::String("east".into())),
            (TypeKind::VarBinary(10), Datum::Binary(vec![0, 255])),
            (TypeKind::Date, Datum::Date(19_724)),
            (TypeKind::Time(3), Datum::Time(3_600_000)),
            (
                TypeKind::Timestamp(3),
                Datum::Timestamp(Timestamp::from_millis(-5)),
            ),
            (
                TypeKind::Timestamp(6),
                Datum::Timestamp(Timestamp::from_micros(1_234_567)),
            ),
            (
                TypeKind::TimestampLtz(9),
                Datum::Timestamp(Timestamp::from_nanos(987_654_321)),
            ),
        ];
        for (kind, value) in cases {
            let ty = PaimonType::nullable(kind);
            let column = Datum::to_column(&[value.clone(), Datum::Null], &ty).unwrap();
            assert_eq!(column.data_type(), &ty.to_arrow().unwrap(), "{ty}");
            assert_eq!(Datum::from_array(&column, 0, &ty).unwrap(), value, "{ty}");
            assert_eq!(
                Datum::from_array(&column, 1, &ty).unwrap(),
                Datum::Null,
                "{ty}"
            );
        }
        let int = PaimonType::nullable(TypeKind::Int);
        assert!(Datum::to_column(&[Datum::Date(1)], &int).is_err());
    }

    #[test]
    fn reads_values_from_arrow() {
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None]));
        let ty = PaimonType::nullable(TypeKind::VarChar(crate::storage::spec::types::MAX_LENGTH));
        assert_eq!(
            Datum::from_array(&a, 0, &ty).unwrap(),
            Datum::String("x".into())
        );
        assert_eq!(Datum::from_array(&a, 1, &ty).unwrap(), Datum::Null);
        assert_eq!(
            Timestamp::from_micros(-1),
            Timestamp {
                millis: -1,
                nanos_of_milli: 999_000
            }
        );
        assert!(Datum::Int(1).compare(&Datum::Int(2)).is_lt());
        assert!(Datum::Null.compare(&Datum::Int(2)).is_lt());
    }
}
