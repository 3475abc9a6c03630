//! Paimon's `BinaryRow`: the byte format of keys, partitions and statistics in manifests, and
//! the input of the fixed-bucket hash.
//!
//! Other engines (Paimon Java, pypaimon) read the partitions, min/max keys and stats tarn writes
//! into manifests, and put a key into the bucket that the hash of these very bytes selects. So the
//! bytes must be what Paimon Java's `BinaryRowWriter` produces, down to the padding: a null bitset
//! (`((arity + 63 + 8) / 64) * 8` bytes; byte 0 is the RowKind, field `i`'s null bit is bit
//! `i + 8`), one little-endian 8-byte slot per field, then an 8-byte-aligned variable part.
//!
//! - Fixed-width values live in their slot (unused slot bytes are zero).
//! - Strings and binaries of at most 7 bytes live in their slot too: data in bytes 0..len, byte 7
//!   is `0x80 | len`. Longer ones go to the variable part; the slot holds `offset << 32 | len`,
//!   with `offset` counted from the start of the row.
//! - `DECIMAL(p <= 18)` is the unscaled value as a long. Above, the slot points to a 16-byte
//!   region holding Java's `BigInteger.toByteArray()` (minimal big-endian two's complement); the
//!   region is reserved even for NULL (slot `offset << 32`).
//! - `TIMESTAMP(p <= 3)` is epoch millis. Above, millis go to an 8-byte region and the slot holds
//!   `offset << 32 | nanos_of_milli`; again reserved for NULL.
//! - `DATE` is int days, `TIME` int millis of the day.
//!
//! The *serialized* form in manifests prefixes the row with its arity as a big-endian int
//! (Java `SerializationUtils.serializeBinaryRow`).

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    LargeBinaryArray, LargeStringArray, StringArray, StringViewArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    ArrowDictionaryKeyType, ArrowNativeType, DataType as ArrowType, Date32Type, Decimal128Type,
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};

use crate::storage::StorageError;
use crate::storage::spec::datum::{Datum, Timestamp};
use crate::storage::spec::types::{PaimonType, TypeKind};

/// Bits before the first field's null bit (the RowKind byte).
const HEADER_BITS: usize = 8;
/// Longest string or binary stored inside its slot.
const MAX_INLINE: usize = 7;
/// Largest decimal precision stored as an unscaled long (Java `Decimal.isCompact`).
pub const MAX_COMPACT_DECIMAL_PRECISION: u8 = 18;
/// Largest timestamp precision stored as epoch millis (Java `Timestamp.isCompact`).
pub const MAX_COMPACT_TIMESTAMP_PRECISION: u8 = 3;

/// Bytes of the null bitset (with the RowKind header) of a row with `arity` fields (Java
/// `BinaryRow.calculateBitSetWidthInBytes`).
pub fn null_bits_size(arity: usize) -> usize {
    (arity + 63 + HEADER_BITS) / 64 * 8
}

/// Bytes of the fixed part (null bitset and slots) of a row with `arity` fields.
pub fn fixed_part_size(arity: usize) -> usize {
    null_bits_size(arity) + 8 * arity
}

fn round_to_word(n: usize) -> usize {
    (n + 7) & !7
}

/// Builds BinaryRows one after another in one buffer, like Java's reused `BinaryRowWriter`.
///
/// Call [`reset`](Self::reset), write every position once, then read [`bytes`](Self::bytes).
/// Positions must be below the arity (a larger one panics, as an out-of-range index does). The
/// buffer keeps its capacity across rows, so a warm writer does not allocate.
#[derive(Debug, Clone)]
pub struct BinaryRowWriter {
    arity: usize,
    null_bits: usize,
    fixed: usize,
    buf: Vec<u8>,
}

impl BinaryRowWriter {
    pub fn new(arity: usize) -> Self {
        let null_bits = null_bits_size(arity);
        let fixed = null_bits + 8 * arity;
        Self {
            arity,
            null_bits,
            fixed,
            buf: vec![0; fixed],
        }
    }

    pub fn arity(&self) -> usize {
        self.arity
    }

    /// Starts a new row: no nulls, RowKind `+I` (0), every slot zero, empty variable part.
    pub fn reset(&mut self) {
        self.buf.truncate(self.fixed);
        self.buf.fill(0);
    }

    /// The row bytes without the arity prefix: what the bucket hash and key comparisons use.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The manifest form: 4-byte big-endian arity, then the row bytes.
    pub fn to_serialized(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.buf.len());
        out.extend_from_slice(&(self.arity as i32).to_be_bytes());
        out.extend_from_slice(&self.buf);
        out
    }

    fn slot_offset(&self, pos: usize) -> usize {
        assert!(
            pos < self.arity,
            "BinaryRow position {pos} out of range for arity {}",
            self.arity
        );
        self.null_bits + 8 * pos
    }

    fn put_slot(&mut self, pos: usize, value: u64) {
        let at = self.slot_offset(pos);
        self.buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
        let bit = pos + HEADER_BITS;
        self.buf[bit / 8] &= !(1 << (bit % 8));
    }

    fn set_null_bit(&mut self, pos: usize) {
        let bit = pos + HEADER_BITS;
        self.buf[bit / 8] |= 1 << (bit % 8);
    }

    /// Java `setNullAt`: null bit set, slot zero. Right for every type except non-compact
    /// decimals and timestamps, whose NULL keeps a variable region: use
    /// [`write_null`](Self::write_null) when the type is at hand.
    pub fn set_null(&mut self, pos: usize) {
        self.put_slot(pos, 0);
        self.set_null_bit(pos);
    }

    /// NULL of type `ty`, as Paimon Java writes it (`RowHelper` / generated projections): a
    /// `DECIMAL(p > 18)` keeps a zeroed 16-byte region and a `TIMESTAMP(p > 3)` an 8-byte one,
    /// the slot pointing at it.
    pub fn write_null(&mut self, pos: usize, ty: &PaimonType) {
        let reserve = match ty.kind {
            TypeKind::Decimal { precision, .. } if precision > MAX_COMPACT_DECIMAL_PRECISION => 16,
            TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p)
                if p > MAX_COMPACT_TIMESTAMP_PRECISION =>
            {
                8
            }
            _ => 0,
        };
        if reserve == 0 {
            self.set_null(pos);
        } else {
            let offset = self.buf.len();
            self.buf.resize(offset + reserve, 0);
            self.put_slot(pos, (offset as u64) << 32);
            self.set_null_bit(pos);
        }
    }

    pub fn write_boolean(&mut self, pos: usize, value: bool) {
        self.put_slot(pos, value as u64);
    }

    pub fn write_byte(&mut self, pos: usize, value: i8) {
        self.put_slot(pos, value as u8 as u64);
    }

    pub fn write_short(&mut self, pos: usize, value: i16) {
        self.put_slot(pos, value as u16 as u64);
    }

    /// Also `DATE` (days) and `TIME` (millis of the day).
    pub fn write_int(&mut self, pos: usize, value: i32) {
        self.put_slot(pos, value as u32 as u64);
    }

    pub fn write_long(&mut self, pos: usize, value: i64) {
        self.put_slot(pos, value as u64);
    }

    /// The raw bits, NaN payloads included (Java `floatToRawIntBits`).
    pub fn write_float(&mut self, pos: usize, value: f32) {
        self.put_slot(pos, value.to_bits() as u64);
    }

    pub fn write_double(&mut self, pos: usize, value: f64) {
        self.put_slot(pos, value.to_bits());
    }

    /// A decimal of `precision` digits given as its unscaled value. For `precision <= 18` the
    /// value must fit an `i64` (any value of that precision does); it is truncated otherwise.
    pub fn write_decimal(&mut self, pos: usize, unscaled: i128, precision: u8) {
        if precision <= MAX_COMPACT_DECIMAL_PRECISION {
            self.write_long(pos, unscaled as i64);
            return;
        }
        let len = java_byte_array_len(unscaled);
        let offset = self.buf.len();
        self.buf.resize(offset + 16, 0);
        self.buf[offset..offset + len].copy_from_slice(&unscaled.to_be_bytes()[16 - len..]);
        self.put_slot(pos, (offset as u64) << 32 | len as u64);
    }

    pub fn write_string(&mut self, pos: usize, value: &str) {
        self.write_binary(pos, value.as_bytes());
    }

    /// Also strings' UTF-8 bytes: both use the same layout.
    pub fn write_binary(&mut self, pos: usize, value: &[u8]) {
        let len = value.len();
        if len <= MAX_INLINE {
            let mut slot = [0u8; 8];
            slot[..len].copy_from_slice(value);
            slot[7] = 0x80 | len as u8;
            self.put_slot(pos, u64::from_le_bytes(slot));
            return;
        }
        assert!(
            len <= i32::MAX as usize,
            "a BinaryRow field holds at most 2 GiB"
        );
        let offset = self.buf.len();
        self.buf.extend_from_slice(value);
        self.buf.resize(offset + round_to_word(len), 0);
        self.put_slot(pos, (offset as u64) << 32 | len as u64);
    }

    /// A timestamp of `precision` fractional digits; `p <= 3` keeps millis only.
    pub fn write_timestamp(&mut self, pos: usize, value: Timestamp, precision: u8) {
        if precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
            self.write_long(pos, value.millis);
            return;
        }
        let offset = self.buf.len();
        self.buf.extend_from_slice(&value.millis.to_le_bytes());
        self.put_slot(
            pos,
            (offset as u64) << 32 | value.nanos_of_milli as u32 as u64,
        );
    }

    /// Writes `value` of type `ty` (NULL included).
    pub fn write_datum(
        &mut self,
        pos: usize,
        value: &Datum,
        ty: &PaimonType,
    ) -> Result<(), StorageError> {
        match (&ty.kind, value) {
            // Any type can be NULL: stats rows hold NULL for ARRAY, MAP and ROW columns, which
            // Java writes with `setNullAt`.
            (_, Datum::Null) => self.write_null(pos, ty),
            (TypeKind::Boolean, Datum::Boolean(v)) => self.write_boolean(pos, *v),
            (TypeKind::TinyInt, Datum::TinyInt(v)) => self.write_byte(pos, *v),
            (TypeKind::SmallInt, Datum::SmallInt(v)) => self.write_short(pos, *v),
            (TypeKind::Int, Datum::Int(v))
            | (TypeKind::Date, Datum::Date(v))
            | (TypeKind::Time(_), Datum::Time(v)) => self.write_int(pos, *v),
            (TypeKind::BigInt, Datum::BigInt(v)) => self.write_long(pos, *v),
            (TypeKind::Float, Datum::Float(v)) => self.write_float(pos, *v),
            (TypeKind::Double, Datum::Double(v)) => self.write_double(pos, *v),
            (TypeKind::Decimal { precision, .. }, Datum::Decimal(v)) => {
                check_compact_decimal(*v, *precision)?;
                self.write_decimal(pos, *v, *precision)
            }
            (TypeKind::Char(_) | TypeKind::VarChar(_), Datum::String(v)) => {
                self.write_string(pos, v)
            }
            (TypeKind::Binary(_) | TypeKind::VarBinary(_), Datum::Binary(v)) => {
                self.write_binary(pos, v)
            }
            (TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p), Datum::Timestamp(v)) => {
                self.write_timestamp(pos, *v, *p)
            }
            _ => {
                check_key_type(ty)?;
                return Err(StorageError::format(format!(
                    "value {value:?} does not have Paimon type {ty}"
                )));
            }
        }
        Ok(())
    }
}

/// Length of Java's `BigInteger.valueOf(v).toByteArray()`: minimal two's complement, sign bit
/// included (`bitLength() / 8 + 1`).
fn java_byte_array_len(v: i128) -> usize {
    let magnitude_bits = 128 - if v < 0 { !v } else { v }.leading_zeros() as usize;
    magnitude_bits / 8 + 1
}

fn check_compact_decimal(unscaled: i128, precision: u8) -> Result<(), StorageError> {
    if precision <= MAX_COMPACT_DECIMAL_PRECISION && i64::try_from(unscaled).is_err() {
        return Err(StorageError::format(format!(
            "unscaled decimal {unscaled} does not fit DECIMAL({precision})"
        )));
    }
    Ok(())
}

fn check_key_type(ty: &PaimonType) -> Result<(), StorageError> {
    if ty.is_key_type() {
        Ok(())
    } else {
        Err(StorageError::UnsupportedType(format!(
            "{ty} in a BinaryRow"
        )))
    }
}

/// The manifest form of a row of `values` (4-byte big-endian arity, then the row bytes).
///
/// # Panics
/// If a value does not have its type, or the lengths differ: datums come from typed sources, so
/// that is a bug in the caller. [`try_serialize`] reports it instead.
pub fn serialize(values: &[Datum], types: &[PaimonType]) -> Vec<u8> {
    try_serialize(values, types).unwrap_or_else(|e| panic!("cannot serialize BinaryRow: {e}"))
}

/// [`serialize`] that reports values not matching their types.
pub fn try_serialize(values: &[Datum], types: &[PaimonType]) -> Result<Vec<u8>, StorageError> {
    if values.len() != types.len() {
        return Err(StorageError::format(format!(
            "BinaryRow of {} types given {} values",
            types.len(),
            values.len()
        )));
    }
    let mut writer = BinaryRowWriter::new(types.len());
    for (pos, (value, ty)) in values.iter().zip(types).enumerate() {
        writer.write_datum(pos, value, ty)?;
    }
    Ok(writer.to_serialized())
}

/// Reads a row in manifest form as `types`.
///
/// A row with fewer fields than `types` (written before columns were added) yields NULL for the
/// missing trailing fields; extra fields are ignored. Malformed bytes are an error, never a panic.
/// Like Java's `BinaryRow.getDecimal`, a non-compact decimal with more digits than its precision
/// reads as NULL.
pub fn deserialize(bytes: &[u8], types: &[PaimonType]) -> Result<Vec<Datum>, StorageError> {
    let Some((prefix, row)) = bytes.split_first_chunk::<4>() else {
        return Err(StorageError::format(format!(
            "BinaryRow of {} bytes has no arity",
            bytes.len()
        )));
    };
    let arity = i32::from_be_bytes(*prefix);
    let arity = usize::try_from(arity)
        .map_err(|_| StorageError::format(format!("BinaryRow with negative arity {arity}")))?;
    read_row(row, arity, types)
}

/// Reads row bytes (without the arity prefix) holding `arity` fields as `types`; see
/// [`deserialize`].
pub fn read_row(
    row: &[u8],
    arity: usize,
    types: &[PaimonType],
) -> Result<Vec<Datum>, StorageError> {
    let fits = arity
        .checked_mul(8)
        .and_then(|slots| slots.checked_add(null_bits_size(arity)))
        .is_some_and(|fixed| fixed <= row.len());
    if !fits {
        return Err(StorageError::format(format!(
            "BinaryRow of {} bytes cannot hold {arity} fields",
            row.len()
        )));
    }
    let reader = RowReader {
        row,
        null_bits: null_bits_size(arity),
    };
    types
        .iter()
        .enumerate()
        .map(|(pos, ty)| {
            if pos >= arity || reader.is_null(pos) {
                Ok(Datum::Null)
            } else {
                reader.field(pos, ty).map_err(|e| {
                    StorageError::format(format!("BinaryRow field {pos} of type {ty}: {e}"))
                })
            }
        })
        .collect()
}

struct RowReader<'a> {
    row: &'a [u8],
    null_bits: usize,
}

impl RowReader<'_> {
    fn is_null(&self, pos: usize) -> bool {
        let bit = pos + HEADER_BITS;
        self.row[bit / 8] & (1 << (bit % 8)) != 0
    }

    fn slot(&self, pos: usize) -> u64 {
        let at = self.null_bits + 8 * pos;
        u64::from_le_bytes(self.row[at..at + 8].try_into().expect("8-byte slot"))
    }

    fn region(&self, offset: u64, len: u64) -> Result<&[u8], String> {
        let end = offset.saturating_add(len);
        if end > self.row.len() as u64 {
            return Err(format!(
                "data at {offset}+{len} lies outside the row of {} bytes",
                self.row.len()
            ));
        }
        Ok(&self.row[offset as usize..end as usize])
    }

    /// A string's or binary's bytes, inline or in the variable part.
    fn var_bytes(&self, pos: usize) -> Result<&[u8], String> {
        let slot = self.slot(pos);
        if slot >> 63 == 1 {
            let len = ((slot >> 56) & 0x7f) as usize;
            if len > MAX_INLINE {
                return Err(format!("inline length {len} exceeds 7"));
            }
            let at = self.null_bits + 8 * pos;
            Ok(&self.row[at..at + len])
        } else {
            self.region(slot >> 32, slot & 0xffff_ffff)
        }
    }

    fn field(&self, pos: usize, ty: &PaimonType) -> Result<Datum, String> {
        let slot = self.slot(pos);
        Ok(match &ty.kind {
            TypeKind::Boolean => Datum::Boolean(slot as u8 != 0),
            TypeKind::TinyInt => Datum::TinyInt(slot as u8 as i8),
            TypeKind::SmallInt => Datum::SmallInt(slot as u16 as i16),
            TypeKind::Int => Datum::Int(slot as u32 as i32),
            TypeKind::Date => Datum::Date(slot as u32 as i32),
            TypeKind::Time(_) => Datum::Time(slot as u32 as i32),
            TypeKind::BigInt => Datum::BigInt(slot as i64),
            TypeKind::Float => Datum::Float(f32::from_bits(slot as u32)),
            TypeKind::Double => Datum::Double(f64::from_bits(slot)),
            TypeKind::Decimal { precision, .. } => {
                if *precision <= MAX_COMPACT_DECIMAL_PRECISION {
                    Datum::Decimal(slot as i64 as i128)
                } else {
                    let bytes = self.region(slot >> 32, slot & 0xffff_ffff)?;
                    let unscaled = decimal_from_be_bytes(bytes)?;
                    if unscaled.unsigned_abs() >= 10u128.pow(u32::from(*precision).min(38)) {
                        Datum::Null
                    } else {
                        Datum::Decimal(unscaled)
                    }
                }
            }
            TypeKind::Char(_) | TypeKind::VarChar(_) => {
                let bytes = self.var_bytes(pos)?;
                Datum::String(
                    std::str::from_utf8(bytes)
                        .map_err(|e| format!("string is not UTF-8: {e}"))?
                        .to_owned(),
                )
            }
            TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
                Datum::Binary(self.var_bytes(pos)?.to_vec())
            }
            TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => {
                if *p <= MAX_COMPACT_TIMESTAMP_PRECISION {
                    Datum::Timestamp(Timestamp::from_millis(slot as i64))
                } else {
                    let nanos = slot as u32 as i32;
                    if !(0..1_000_000).contains(&nanos) {
                        return Err(format!("nanos of millisecond {nanos} out of range"));
                    }
                    let millis = self.region(slot >> 32, 8)?;
                    Datum::Timestamp(Timestamp {
                        millis: i64::from_le_bytes(millis.try_into().expect("8 bytes")),
                        nanos_of_milli: nanos,
                    })
                }
            }
            _ => return Err(format!("type {ty} cannot be read from a BinaryRow")),
        })
    }
}

/// `new BigInteger(bytes)` for at most 16 bytes.
fn decimal_from_be_bytes(bytes: &[u8]) -> Result<i128, String> {
    if bytes.is_empty() || bytes.len() > 16 {
        return Err(format!(
            "decimal of {} bytes (expected 1 to 16)",
            bytes.len()
        ));
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    Ok(i128::from_be_bytes(full))
}

/// Writes row `row` of `columns` (Arrow arrays of the types [`PaimonType::to_arrow`] gives; strings
/// also as `LargeUtf8`/`Utf8View`/dictionaries, binaries also as `LargeBinary`/`BinaryView`/
/// `FixedSizeBinary`, timestamps and times of any unit) into `writer`, after resetting it.
///
/// Values are converted as [`Datum::from_array`] reads them, so this equals writing the datums.
pub fn row_from_arrays(
    writer: &mut BinaryRowWriter,
    columns: &[ArrayRef],
    types: &[PaimonType],
    row: usize,
) -> Result<(), StorageError> {
    check_shape(writer.arity(), columns, types)?;
    writer.reset();
    for (pos, (column, ty)) in columns.iter().zip(types).enumerate() {
        if row >= column.len() {
            return Err(StorageError::format(format!(
                "row {row} is past the end of a column of {} rows",
                column.len()
            )));
        }
        ColumnReader::new(column.as_ref(), ty)?.write(writer, pos, row)?;
    }
    Ok(())
}

fn check_shape(
    arity: usize,
    columns: &[ArrayRef],
    types: &[PaimonType],
) -> Result<(), StorageError> {
    if columns.len() != types.len() || columns.len() != arity {
        return Err(StorageError::format(format!(
            "BinaryRow of arity {arity} given {} columns and {} types",
            columns.len(),
            types.len()
        )));
    }
    Ok(())
}

/// Encodes the rows of a batch of columns one after another with one reused writer: the Arrow
/// types are resolved once, not per value, and a warm encoder does not allocate.
pub struct ArrowRowEncoder<'a> {
    readers: Vec<ColumnReader<'a>>,
    writer: BinaryRowWriter,
    num_rows: usize,
}

impl<'a> ArrowRowEncoder<'a> {
    /// `columns` must have equal lengths and the types [`row_from_arrays`] accepts.
    pub fn new(columns: &'a [ArrayRef], types: &'a [PaimonType]) -> Result<Self, StorageError> {
        check_shape(columns.len(), columns, types)?;
        let num_rows = columns.first().map_or(0, |c| c.len());
        if let Some(c) = columns.iter().find(|c| c.len() != num_rows) {
            return Err(StorageError::format(format!(
                "columns of {num_rows} and {} rows in one batch",
                c.len()
            )));
        }
        let readers = columns
            .iter()
            .zip(types)
            .map(|(c, ty)| ColumnReader::new(c.as_ref(), ty))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            readers,
            writer: BinaryRowWriter::new(columns.len()),
            num_rows,
        })
    }

    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// The row bytes (without arity prefix) of row `row`, valid until the next call.
    pub fn encode(&mut self, row: usize) -> Result<&[u8], StorageError> {
        if row >= self.num_rows {
            return Err(StorageError::format(format!(
                "row {row} is past the end of a batch of {} rows",
                self.num_rows
            )));
        }
        self.writer.reset();
        for (pos, reader) in self.readers.iter().enumerate() {
            reader.write(&mut self.writer, pos, row)?;
        }
        Ok(self.writer.bytes())
    }
}

/// One column, its Arrow type resolved against its Paimon type.
struct ColumnReader<'a> {
    nulls: Option<&'a NullBuffer>,
    ty: &'a PaimonType,
    values: Values<'a>,
}

enum Values<'a> {
    /// Arrow `Null`: every row is NULL.
    AllNull,
    Boolean(&'a BooleanArray),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    /// Unscaled decimals and the Paimon precision.
    Decimal(&'a [i128], u8),
    /// `TIME` in seconds.
    Time32Seconds(&'a [i32]),
    /// `TIME` in micro- or nanoseconds, with the number of those per millisecond.
    Time64(&'a [i64], i64),
    /// Timestamps in Arrow's unit, with the Paimon precision.
    Timestamp(&'a [i64], TimeUnit, u8),
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
    Utf8View(&'a StringViewArray),
    Binary(&'a BinaryArray),
    LargeBinary(&'a LargeBinaryArray),
    BinaryView(&'a BinaryViewArray),
    FixedSizeBinary(&'a FixedSizeBinaryArray),
    /// Dictionary keys (any integer type) and the reader of the dictionary values.
    Dictionary(&'a dyn Array, Box<ColumnReader<'a>>),
}

impl<'a> ColumnReader<'a> {
    fn new(array: &'a dyn Array, ty: &'a PaimonType) -> Result<Self, StorageError> {
        let mismatch = || {
            StorageError::format(format!(
                "column of Arrow type {} does not hold Paimon type {ty}",
                array.data_type()
            ))
        };
        let dt = array.data_type();
        let values = match (&ty.kind, dt) {
            (_, ArrowType::Null) => Values::AllNull,
            (
                TypeKind::Char(_)
                | TypeKind::VarChar(_)
                | TypeKind::Binary(_)
                | TypeKind::VarBinary(_),
                ArrowType::Dictionary(..),
            ) => {
                let dict = array.as_any_dictionary();
                Values::Dictionary(
                    dict.keys(),
                    Box::new(ColumnReader::new(dict.values().as_ref(), ty)?),
                )
            }
            (TypeKind::Boolean, ArrowType::Boolean) => Values::Boolean(array.as_boolean()),
            (TypeKind::TinyInt, ArrowType::Int8) => {
                Values::I8(array.as_primitive::<Int8Type>().values())
            }
            (TypeKind::SmallInt, ArrowType::Int16) => {
                Values::I16(array.as_primitive::<Int16Type>().values())
            }
            (TypeKind::Int, ArrowType::Int32) => {
                Values::I32(array.as_primitive::<Int32Type>().values())
            }
            (TypeKind::BigInt, ArrowType::Int64) => {
                Values::I64(array.as_primitive::<Int64Type>().values())
            }
            (TypeKind::Float, ArrowType::Float32) => {
                Values::F32(array.as_primitive::<Float32Type>().values())
            }
            (TypeKind::Double, ArrowType::Float64) => {
                Values::F64(array.as_primitive::<Float64Type>().values())
            }
            (TypeKind::Date, ArrowType::Date32) => {
                Values::I32(array.as_primitive::<Date32Type>().values())
            }
            (TypeKind::Time(_), ArrowType::Time32(TimeUnit::Second)) => {
                Values::Time32Seconds(array.as_primitive::<Time32SecondType>().values())
            }
            (TypeKind::Time(_), ArrowType::Time32(TimeUnit::Millisecond)) => {
                Values::I32(array.as_primitive::<Time32MillisecondType>().values())
            }
            (TypeKind::Time(_), ArrowType::Time64(TimeUnit::Microsecond)) => Values::Time64(
                array.as_primitive::<Time64MicrosecondType>().values(),
                1_000,
            ),
            (TypeKind::Time(_), ArrowType::Time64(TimeUnit::Nanosecond)) => Values::Time64(
                array.as_primitive::<Time64NanosecondType>().values(),
                1_000_000,
            ),
            (TypeKind::Decimal { precision, scale }, ArrowType::Decimal128(_, s)) => {
                if i16::from(*s) != i16::from(*scale) {
                    return Err(StorageError::format(format!(
                        "decimal column of scale {s} does not hold Paimon type {ty}"
                    )));
                }
                Values::Decimal(array.as_primitive::<Decimal128Type>().values(), *precision)
            }
            (TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p), ArrowType::Timestamp(unit, _)) => {
                let values = match unit {
                    TimeUnit::Second => array.as_primitive::<TimestampSecondType>().values(),
                    TimeUnit::Millisecond => {
                        array.as_primitive::<TimestampMillisecondType>().values()
                    }
                    TimeUnit::Microsecond => {
                        array.as_primitive::<TimestampMicrosecondType>().values()
                    }
                    TimeUnit::Nanosecond => {
                        array.as_primitive::<TimestampNanosecondType>().values()
                    }
                };
                Values::Timestamp(values, *unit, *p)
            }
            (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8) => {
                Values::Utf8(array.as_string::<i32>())
            }
            (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::LargeUtf8) => {
                Values::LargeUtf8(array.as_string::<i64>())
            }
            (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8View) => {
                Values::Utf8View(array.as_string_view())
            }
            (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::Binary) => {
                Values::Binary(array.as_binary::<i32>())
            }
            (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::LargeBinary) => {
                Values::LargeBinary(array.as_binary::<i64>())
            }
            (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::BinaryView) => {
                Values::BinaryView(array.as_binary_view())
            }
            (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::FixedSizeBinary(_)) => {
                Values::FixedSizeBinary(array.as_fixed_size_binary())
            }
            _ => {
                check_key_type(ty)?;
                return Err(mismatch());
            }
        };
        Ok(Self {
            nulls: array.nulls(),
            ty,
            values,
        })
    }

    fn write(&self, w: &mut BinaryRowWriter, pos: usize, row: usize) -> Result<(), StorageError> {
        if self.nulls.is_some_and(|n| n.is_null(row)) {
            w.write_null(pos, self.ty);
            return Ok(());
        }
        match &self.values {
            Values::AllNull => w.write_null(pos, self.ty),
            Values::Boolean(a) => w.write_boolean(pos, a.value(row)),
            Values::I8(v) => w.write_byte(pos, v[row]),
            Values::I16(v) => w.write_short(pos, v[row]),
            Values::I32(v) => w.write_int(pos, v[row]),
            Values::I64(v) => w.write_long(pos, v[row]),
            Values::F32(v) => w.write_float(pos, v[row]),
            Values::F64(v) => w.write_double(pos, v[row]),
            Values::Decimal(v, precision) => {
                check_compact_decimal(v[row], *precision)?;
                w.write_decimal(pos, v[row], *precision)
            }
            Values::Time32Seconds(v) => w.write_int(pos, v[row].wrapping_mul(1000)),
            Values::Time64(v, per_milli) => w.write_int(pos, (v[row] / per_milli) as i32),
            Values::Timestamp(v, unit, precision) => {
                let v = v[row];
                let ts = match unit {
                    TimeUnit::Second => Timestamp::from_millis(v.saturating_mul(1000)),
                    TimeUnit::Millisecond => Timestamp::from_millis(v),
                    TimeUnit::Microsecond => Timestamp::from_micros(v),
                    TimeUnit::Nanosecond => Timestamp::from_nanos(v),
                };
                w.write_timestamp(pos, ts, *precision)
            }
            Values::Utf8(a) => w.write_string(pos, a.value(row)),
            Values::LargeUtf8(a) => w.write_string(pos, a.value(row)),
            Values::Utf8View(a) => w.write_string(pos, a.value(row)),
            Values::Binary(a) => w.write_binary(pos, a.value(row)),
            Values::LargeBinary(a) => w.write_binary(pos, a.value(row)),
            Values::BinaryView(a) => w.write_binary(pos, a.value(row)),
            Values::FixedSizeBinary(a) => w.write_binary(pos, a.value(row)),
            Values::Dictionary(keys, values) => {
                let key = dictionary_key(*keys, row)?;
                if key >= values.len() {
                    return Err(StorageError::format(format!(
                        "dictionary key {key} out of range"
                    )));
                }
                values.write(w, pos, key)?
            }
        }
        Ok(())
    }

    /// Rows of the column (for dictionary values: the dictionary size).
    fn len(&self) -> usize {
        match &self.values {
            Values::AllNull => usize::MAX,
            Values::Boolean(a) => a.len(),
            Values::I8(v) => v.len(),
            Values::I16(v) => v.len(),
            Values::I32(v) | Values::Time32Seconds(v) => v.len(),
            Values::I64(v) | Values::Time64(v, _) | Values::Timestamp(v, ..) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Decimal(v, _) => v.len(),
            Values::Utf8(a) => a.len(),
            Values::LargeUtf8(a) => a.len(),
            Values::Utf8View(a) => a.len(),
            Values::Binary(a) => a.len(),
            Values::LargeBinary(a) => a.len(),
            Values::BinaryView(a) => a.len(),
            Values::FixedSizeBinary(a) => a.len(),
            Values::Dictionary(keys, _) => keys.len(),
        }
    }
}

/// The dictionary key at `row` (the caller checked the row is not null).
fn dictionary_key(keys: &dyn Array, row: usize) -> Result<usize, StorageError> {
    fn get<K: ArrowDictionaryKeyType>(keys: &dyn Array, row: usize) -> Option<usize> {
        keys.as_primitive::<K>().value(row).to_usize()
    }
    let key = match keys.data_type() {
        ArrowType::Int8 => get::<Int8Type>(keys, row),
        ArrowType::Int16 => get::<Int16Type>(keys, row),
        ArrowType::Int32 => get::<Int32Type>(keys, row),
        ArrowType::Int64 => get::<Int64Type>(keys, row),
        ArrowType::UInt8 => get::<UInt8Type>(keys, row),
        ArrowType::UInt16 => get::<UInt16Type>(keys, row),
        ArrowType::UInt32 => get::<UInt32Type>(keys, row),
        ArrowType::UInt64 => get::<UInt64Type>(keys, row),
        other => {
            return Err(StorageError::format(format!(
                "dictionary keys of type {other}"
            )));
        }
    };
    key.ok_or_else(|| StorageError::format("negative dictionary key"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        Date32Array, Decimal128Array, DictionaryArray, Float32Array, Float64Array, Int8Array,
        Int16Array, Int32Array, Int64Array, NullArray, Time32MillisecondArray,
        Time64MicrosecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
        TimestampNanosecondArray, TimestampSecondArray,
    };

    use super::*;
    use crate::storage::spec::types::MAX_LENGTH;

    fn t(kind: TypeKind) -> PaimonType {
        PaimonType::nullable(kind)
    }

    fn string() -> PaimonType {
        t(TypeKind::VarChar(MAX_LENGTH))
    }

    fn bytes_type() -> PaimonType {
        t(TypeKind::VarBinary(MAX_LENGTH))
    }

    fn decimal(precision: u8, scale: u8) -> PaimonType {
        t(TypeKind::Decimal { precision, scale })
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn ts(millis: i64, nanos_of_milli: i32) -> Timestamp {
        Timestamp {
            millis,
            nanos_of_milli,
        }
    }

    /// Bytes pypaimon 2.1.0's `GenericRowSerializer` wrote for these rows (and Paimon Java writes
    /// the same).
    #[test]
    fn layouts_match_recorded_pypaimon_bytes() {
        let cases: Vec<(Vec<Datum>, Vec<PaimonType>, &str)> = vec![
            (vec![], vec![], "000000000000000000000000"),
            (
                vec![Datum::BigInt(1)],
                vec![t(TypeKind::BigInt)],
                "0000000100000000000000000100000000000000",
            ),
            (
                vec![Datum::String("abc".into())],
                vec![string()],
                "0000000100000000000000006162630000000083",
            ),
            (
                vec![Datum::String(String::new())],
                vec![string()],
                "0000000100000000000000000000000000000080",
            ),
            (
                vec![Datum::String("hello world!".into())],
                vec![string()],
                "0000000100000000000000000c0000001000000068656c6c6f20776f726c642100000000",
            ),
            (
                vec![Datum::Binary(vec![1, 2, 3, 4, 5, 6, 7])],
                vec![bytes_type()],
                "0000000100000000000000000102030405060787",
            ),
            (
                vec![Datum::Binary(vec![1, 2, 3, 4, 5, 6, 7, 8])],
                vec![bytes_type()],
                "00000001000000000000000008000000100000000102030405060708",
            ),
            (
                vec![Datum::Decimal(123456789012345678901234567890)],
                vec![decimal(38, 10)],
                "0000000100000000000000000d00000010000000018ee90ff6c373e0ee4e3f0ad2000000",
            ),
            (
                vec![Datum::Decimal(-15)],
                vec![decimal(38, 1)],
                "0000000100000000000000000100000010000000f1000000000000000000000000000000",
            ),
            (
                vec![Datum::Decimal(-1234)],
                vec![decimal(10, 2)],
                "0000000100000000000000002efbffffffffffff",
            ),
            (
                vec![Datum::Timestamp(ts(1704164645123, 456_000))],
                vec![t(TypeKind::Timestamp(6))],
                "00000001000000000000000040f506001000000003d920c88c010000",
            ),
            (
                vec![Datum::Timestamp(ts(1704164645123, 0))],
                vec![t(TypeKind::Timestamp(3))],
                "00000001000000000000000003d920c88c010000",
            ),
            (
                vec![
                    Datum::Date(19724),
                    Datum::Time(3723004),
                    Datum::Float(1.5),
                    Datum::Double(-2.25),
                ],
                vec![
                    t(TypeKind::Date),
                    t(TypeKind::Time(0)),
                    t(TypeKind::Float),
                    t(TypeKind::Double),
                ],
                "000000040000000000000000\
                 0c4d000000000000fcce3800000000000000c03f0000000000000000000002c0",
            ),
            (
                vec![
                    Datum::TinyInt(1),
                    Datum::String("x".repeat(20)),
                    Datum::Null,
                    Datum::Binary(b"yz".to_vec()),
                ],
                vec![
                    t(TypeKind::TinyInt),
                    t(TypeKind::VarChar(30)),
                    t(TypeKind::BigInt),
                    t(TypeKind::Binary(2)),
                ],
                "000000040004000000000000010000000000000014000000280000000000000000000000\
                 797a000000000082787878787878787878787878787878787878787800000000",
            ),
        ];
        for (values, types, expected) in cases {
            assert_eq!(hex(&serialize(&values, &types)), expected, "{values:?}");
            assert_eq!(
                deserialize(&serialize(&values, &types), &types).unwrap(),
                values
            );
        }
    }

    /// Where pypaimon 2.1.0 and Paimon Java differ, tarn writes what Java writes.
    #[test]
    fn follows_java_where_pypaimon_differs() {
        // Java `BigInteger.toByteArray()` of -128 is one byte 0x80; pypaimon writes ff80.
        assert_eq!(
            hex(&serialize(&[Datum::Decimal(-128)], &[decimal(38, 0)])),
            "0000000100000000000000000100000010000000\
             80000000000000000000000000000000"
        );
        // -2^63 needs 8 bytes in Java (pypaimon: 9).
        assert_eq!(
            hex(&serialize(
                &[Datum::Decimal(i64::MIN as i128)],
                &[decimal(38, 0)]
            )),
            "0000000100000000000000000800000010000000\
             80000000000000000000000000000000"
        );
        // A NULL non-compact decimal keeps its 16-byte region (Java `writeDecimal(pos, null, p)`),
        // a NULL non-compact timestamp its 8 bytes; pypaimon writes a zero slot and no region.
        assert_eq!(
            hex(&serialize(
                &[Datum::Null, Datum::Int(7)],
                &[decimal(38, 2), t(TypeKind::Int)]
            )),
            "000000020001000000000000\
             0000000018000000\
             0700000000000000\
             0000000000000000\
             0000000000000000"
        );
        assert_eq!(
            hex(&serialize(&[Datum::Null], &[t(TypeKind::TimestampLtz(6))])),
            "000000010001000000000000\
             0000000010000000\
             0000000000000000"
        );
        // Compact ones are plain nulls.
        assert_eq!(
            hex(&serialize(&[Datum::Null], &[decimal(18, 2)])),
            "0000000100010000000000000000000000000000"
        );
    }

    #[test]
    fn java_byte_array_lengths() {
        for (v, len) in [
            (0i128, 1),
            (1, 1),
            (-1, 1),
            (127, 1),
            (128, 2),
            (-128, 1),
            (-129, 2),
            (32767, 2),
            (-32768, 2),
            (-32769, 3),
            (i64::MAX as i128, 8),
            (i64::MIN as i128, 8),
            (i64::MIN as i128 - 1, 9),
            (10i128.pow(38) - 1, 16),
            (-(10i128.pow(38) - 1), 16),
            (i128::MAX, 16),
            (i128::MIN, 16),
        ] {
            assert_eq!(java_byte_array_len(v), len, "{v}");
            let mut w = BinaryRowWriter::new(1);
            w.write_decimal(0, v, 38);
            let back = read_row(w.bytes(), 1, &[decimal(38, 0)]).unwrap();
            if v.unsigned_abs() < 10u128.pow(38) {
                assert_eq!(back, vec![Datum::Decimal(v)]);
            } else {
                // More digits than DECIMAL(38) holds: Java reads NULL.
                assert_eq!(back, vec![Datum::Null]);
            }
        }
    }

    fn all_types() -> Vec<PaimonType> {
        vec![
            t(TypeKind::Boolean),
            t(TypeKind::TinyInt),
            t(TypeKind::SmallInt),
            t(TypeKind::Int),
            t(TypeKind::BigInt),
            t(TypeKind::Float),
            t(TypeKind::Double),
            decimal(10, 2),
            decimal(18, 0),
            decimal(19, 3),
            decimal(38, 10),
            t(TypeKind::Char(3)),
            t(TypeKind::VarChar(40)),
            string(),
            t(TypeKind::Binary(4)),
            bytes_type(),
            t(TypeKind::Date),
            t(TypeKind::Time(3)),
            t(TypeKind::Timestamp(0)),
            t(TypeKind::Timestamp(3)),
            t(TypeKind::Timestamp(6)),
            t(TypeKind::Timestamp(9)),
            t(TypeKind::TimestampLtz(3)),
            t(TypeKind::TimestampLtz(6)),
        ]
    }

    fn sample_rows() -> Vec<Vec<Datum>> {
        let big = 10i128.pow(38) - 1;
        vec![
            vec![
                Datum::Boolean(true),
                Datum::TinyInt(-128),
                Datum::SmallInt(-32768),
                Datum::Int(i32::MIN),
                Datum::BigInt(i64::MIN),
                Datum::Float(-0.0),
                Datum::Double(f64::NEG_INFINITY),
                Datum::Decimal(-9_999_999_999),
                Datum::Decimal(-999_999_999_999_999_999),
                Datum::Decimal(-(10i128.pow(19) - 1)),
                Datum::Decimal(-big),
                Datum::String("ab ".into()),
                Datum::String("exactly7".chars().take(7).collect()),
                Datum::String("grüße, 世界! 🦀 a longer string than seven bytes".into()),
                Datum::Binary(vec![0, 0, 0, 0]),
                Datum::Binary((0..=255).collect()),
                Datum::Date(-719_162),
                Datum::Time(0),
                Datum::Timestamp(ts(-62_135_596_800_000, 0)),
                Datum::Timestamp(ts(-1, 0)),
                Datum::Timestamp(ts(-1, 999_000)),
                Datum::Timestamp(ts(-1, 999_999)),
                Datum::Timestamp(ts(i64::MIN, 0)),
                Datum::Timestamp(ts(-86_400_001, 1_000)),
            ],
            vec![
                Datum::Boolean(false),
                Datum::TinyInt(127),
                Datum::SmallInt(32767),
                Datum::Int(i32::MAX),
                Datum::BigInt(i64::MAX),
                Datum::Float(f32::NAN),
                Datum::Double(f64::MIN_POSITIVE / 4.0),
                Datum::Decimal(9_999_999_999),
                Datum::Decimal(999_999_999_999_999_999),
                Datum::Decimal(10i128.pow(19) - 1),
                Datum::Decimal(big),
                Datum::String(String::new()),
                Datum::String("12345678".into()),
                Datum::String("é".into()),
                Datum::Binary(vec![0xff; 4]),
                Datum::Binary(vec![]),
                Datum::Date(2_932_896),
                Datum::Time(86_399_999),
                Datum::Timestamp(ts(253_402_300_799_000, 0)),
                Datum::Timestamp(ts(1_704_164_645_123, 0)),
                Datum::Timestamp(ts(1_704_164_645_123, 456_000)),
                Datum::Timestamp(ts(1_704_164_645_123, 456_789)),
                Datum::Timestamp(ts(i64::MAX, 0)),
                Datum::Timestamp(ts(0, 999_000)),
            ],
            vec![Datum::Null; 24],
            vec![
                Datum::Null,
                Datum::TinyInt(0),
                Datum::Null,
                Datum::Int(0),
                Datum::Null,
                Datum::Float(f32::from_bits(0x7fc0_1234)),
                Datum::Null,
                Datum::Decimal(0),
                Datum::Null,
                Datum::Decimal(0),
                Datum::Null,
                Datum::String("x".into()),
                Datum::Null,
                Datum::String("y".repeat(1000)),
                Datum::Null,
                Datum::Binary(vec![7; 9]),
                Datum::Null,
                Datum::Time(1),
                Datum::Null,
                Datum::Timestamp(ts(0, 0)),
                Datum::Null,
                Datum::Timestamp(ts(0, 1)),
                Datum::Null,
                Datum::Timestamp(ts(1, 0)),
            ],
        ]
    }

    fn same(a: &[Datum], b: &[Datum]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (Datum::Float(x), Datum::Float(y)) => x.to_bits() == y.to_bits(),
                (Datum::Double(x), Datum::Double(y)) => x.to_bits() == y.to_bits(),
                _ => x == y,
            })
    }

    #[test]
    fn round_trips_every_type() {
        let types = all_types();
        for row in sample_rows() {
            let bytes = serialize(&row, &types);
            assert_eq!(bytes.len() % 8, 4, "row bytes are word aligned");
            assert_eq!(&bytes[..4], &(types.len() as i32).to_be_bytes());
            let back = deserialize(&bytes, &types).unwrap();
            assert!(same(&back, &row), "{row:?}\n!=\n{back:?}");
        }
    }

    #[test]
    fn reused_writer_equals_fresh_writer() {
        let types = all_types();
        let rows = sample_rows();
        let mut writer = BinaryRowWriter::new(types.len());
        for _ in 0..2 {
            for row in rows.iter().rev().chain(rows.iter()) {
                writer.reset();
                for (pos, (v, ty)) in row.iter().zip(&types).enumerate() {
                    writer.write_datum(pos, v, ty).unwrap();
                }
                assert_eq!(writer.to_serialized(), serialize(row, &types));
            }
        }
        // Overwriting a null position clears its null bit.
        writer.reset();
        writer.set_null(0);
        writer.write_boolean(0, true);
        assert_eq!(writer.bytes()[1], 0);
    }

    #[test]
    fn rows_wider_than_one_bitset_word() {
        for arity in [55, 56, 57, 64, 119, 120, 121] {
            let types = vec![t(TypeKind::Int); arity];
            let values: Vec<Datum> = (0..arity)
                .map(|i| {
                    if i % 3 == 0 {
                        Datum::Null
                    } else {
                        Datum::Int(i as i32)
                    }
                })
                .collect();
            let bytes = serialize(&values, &types);
            assert_eq!(bytes.len(), 4 + fixed_part_size(arity));
            assert_eq!(
                null_bits_size(arity),
                (arity + 8).div_ceil(64) * 8,
                "arity {arity}"
            );
            assert_eq!(deserialize(&bytes, &types).unwrap(), values);
        }
    }

    #[test]
    fn missing_trailing_fields_read_as_null() {
        let old = [t(TypeKind::BigInt), string()];
        let bytes = serialize(
            &[Datum::BigInt(5), Datum::String("long string".into())],
            &old,
        );
        let new = [
            t(TypeKind::BigInt),
            string(),
            t(TypeKind::Int),
            decimal(38, 2),
        ];
        assert_eq!(
            deserialize(&bytes, &new).unwrap(),
            vec![
                Datum::BigInt(5),
                Datum::String("long string".into()),
                Datum::Null,
                Datum::Null
            ]
        );
        // The empty row (an unpartitioned table's partition) reads as all NULL.
        assert_eq!(
            deserialize(&serialize(&[], &[]), &new[..1]).unwrap(),
            vec![Datum::Null]
        );
        // Fewer types than fields: the rest is ignored.
        assert_eq!(
            deserialize(&bytes, &old[..1]).unwrap(),
            vec![Datum::BigInt(5)]
        );
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let int = [t(TypeKind::Int)];
        let s = [string()];
        for (bytes, types) in [
            (vec![], &int[..]),
            (vec![0, 0, 1], &int),
            (vec![0xff, 0xff, 0xff, 0xff], &int),
            // Arity 1 but only the bitset.
            (hex_bytes("00000001 0000000000000000"), &int),
            // Arity 2^31-1.
            (
                hex_bytes("7fffffff 0000000000000000 0000000000000000"),
                &int,
            ),
            // Var-length data past the end.
            (
                hex_bytes("00000001 0000000000000000 0800000010000000 6162"),
                &s,
            ),
            // Offset far away.
            (hex_bytes("00000001 0000000000000000 01000000ffffffff"), &s),
            // Inline length 9.
            (hex_bytes("00000001 0000000000000000 0000000000000089"), &s),
            // Not UTF-8.
            (hex_bytes("00000001 0000000000000000 ff00000000000081"), &s),
        ] {
            assert!(deserialize(&bytes, types).is_err(), "{}", hex(&bytes));
        }
        let dec = [decimal(38, 0)];
        // Decimal of zero and of 17 bytes.
        assert!(
            deserialize(
                &hex_bytes("00000001 0000000000000000 0000000010000000 00"),
                &dec
            )
            .is_err()
        );
        assert!(
            deserialize(
                &hex_bytes("00000001 0000000000000000 1100000010000000 0000000000000000 0000000000000000 0000000000000000"),
                &dec
            )
            .is_err()
        );
        // Nanos of millisecond out of range.
        let ts6 = [t(TypeKind::Timestamp(6))];
        assert!(
            deserialize(
                &hex_bytes("00000001 0000000000000000 40420f0010000000 0000000000000000"),
                &ts6
            )
            .is_err()
        );
        // A non-null value of a type a BinaryRow cannot hold here.
        let arr = [t(TypeKind::Array(Box::new(t(TypeKind::Int))))];
        assert!(
            deserialize(
                &hex_bytes("00000001 0000000000000000 0000000000000000"),
                &arr
            )
            .is_err()
        );
        assert_eq!(
            deserialize(
                &hex_bytes("00000001 0001000000000000 0000000000000000"),
                &arr
            )
            .unwrap(),
            vec![Datum::Null]
        );
    }

    fn hex_bytes(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    #[test]
    fn truncated_or_scrambled_rows_never_panic() {
        let types = all_types();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for row in sample_rows() {
            let bytes = serialize(&row, &types);
            for len in 0..bytes.len() {
                let _ = deserialize(&bytes[..len], &types);
            }
            for _ in 0..2000 {
                let mut scrambled = bytes.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % scrambled.len();
                    scrambled[at] = next() as u8;
                }
                let _ = deserialize(&scrambled, &types);
            }
        }
    }

    #[test]
    fn values_must_match_their_types() {
        assert!(try_serialize(&[Datum::Int(1)], &[t(TypeKind::BigInt)]).is_err());
        assert!(try_serialize(&[Datum::Int(1)], &[]).is_err());
        assert!(
            try_serialize(
                &[Datum::Decimal(i128::from(i64::MAX) + 1)],
                &[decimal(18, 0)]
            )
            .is_err()
        );
        let list = t(TypeKind::Array(Box::new(t(TypeKind::Int))));
        assert!(matches!(
            try_serialize(&[Datum::Int(1)], std::slice::from_ref(&list)),
            Err(StorageError::UnsupportedType(_))
        ));
        // NULL of a type a BinaryRow holds no values of (stats of an ARRAY column) is a plain
        // null, as Java's `setNullAt` writes it, and reads back as NULL.
        let types = [list, t(TypeKind::Row(vec![])), t(TypeKind::Int)];
        let values = [Datum::Null, Datum::Null, Datum::Int(3)];
        let bytes = serialize(&values, &types);
        assert_eq!(
            hex(&bytes),
            "000000030003000000000000\
             0000000000000000\
             0000000000000000\
             0300000000000000"
        );
        assert_eq!(deserialize(&bytes, &types).unwrap(), values);
    }

    fn arrays() -> (Vec<ArrayRef>, Vec<PaimonType>) {
        let rows = sample_rows();
        let types = all_types();
        let columns = types
            .iter()
            .enumerate()
            .map(|(c, ty)| {
                let col: Vec<&Datum> = rows.iter().map(|r| &r[c]).collect();
                datums_to_array(&col, ty)
            })
            .collect();
        (columns, types)
    }

    fn datums_to_array(values: &[&Datum], ty: &PaimonType) -> ArrayRef {
        macro_rules! prim {
            ($arr:ty, $variant:ident) => {
                Arc::new(
                    values
                        .iter()
                        .map(|d| match d {
                            Datum::$variant(v) => Some(*v),
                            _ => None,
                        })
                        .collect::<$arr>(),
                )
            };
        }
        match &ty.kind {
            TypeKind::Boolean => Arc::new(
                values
                    .iter()
                    .map(|d| match d {
                        Datum::Boolean(v) => Some(*v),
                        _ => None,
                    })
                    .collect::<BooleanArray>(),
            ),
            TypeKind::TinyInt => prim!(Int8Array, TinyInt),
            TypeKind::SmallInt => prim!(Int16Array, SmallInt),
            TypeKind::Int => prim!(Int32Array, Int),
            TypeKind::BigInt => prim!(Int64Array, BigInt),
            TypeKind::Float => prim!(Float32Array, Float),
            TypeKind::Double => prim!(Float64Array, Double),
            TypeKind::Date => prim!(Date32Array, Date),
            TypeKind::Time(_) => prim!(Time32MillisecondArray, Time),
            TypeKind::Decimal { precision, scale } => {
                let a: Decimal128Array = values
                    .iter()
                    .map(|d| match d {
                        Datum::Decimal(v) => Some(*v),
                        _ => None,
                    })
                    .collect();
                Arc::new(
                    a.with_precision_and_scale(*precision, *scale as i8)
                        .unwrap(),
                )
            }
            TypeKind::Char(_) | TypeKind::VarChar(_) => Arc::new(
                values
                    .iter()
                    .map(|d| match d {
                        Datum::String(v) => Some(v.as_str()),
                        _ => None,
                    })
                    .collect::<StringArray>(),
            ),
            TypeKind::Binary(_) | TypeKind::VarBinary(_) => Arc::new(
                values
                    .iter()
                    .map(|d| match d {
                        Datum::Binary(v) => Some(v.as_slice()),
                        _ => None,
                    })
                    .collect::<BinaryArray>(),
            ),
            TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => {
                let ts = values.iter().map(|d| match d {
                    Datum::Timestamp(v) => Some(*v),
                    _ => None,
                });
                let tz = matches!(ty.kind, TypeKind::TimestampLtz(_)).then_some("UTC");
                let a: ArrayRef = match p {
                    0..=3 => Arc::new(
                        ts.map(|v| v.map(|v| v.millis))
                            .collect::<TimestampMillisecondArray>()
                            .with_timezone_opt(tz),
                    ),
                    4..=6 => Arc::new(
                        ts.map(|v| v.map(|v| v.to_micros()))
                            .collect::<TimestampMicrosecondArray>()
                            .with_timezone_opt(tz),
                    ),
                    _ => Arc::new(
                        ts.map(|v| v.map(|v| v.to_nanos()))
                            .collect::<TimestampNanosecondArray>()
                            .with_timezone_opt(tz),
                    ),
                };
                assert_eq!(a.data_type(), &ty.to_arrow().unwrap());
                a
            }
            _ => unreachable!(),
        }
    }

    /// Row bytes of `row` of `columns` through `row_from_arrays`, in manifest form.
    fn via_arrays(columns: &[ArrayRef], types: &[PaimonType], row: usize) -> Vec<u8> {
        let mut w = BinaryRowWriter::new(types.len());
        row_from_arrays(&mut w, columns, types, row).unwrap();
        w.to_serialized()
    }

    fn via_datums(columns: &[ArrayRef], types: &[PaimonType], row: usize) -> Vec<u8> {
        let datums: Vec<Datum> = columns
            .iter()
            .zip(types)
            .map(|(c, ty)| Datum::from_array(c, row, ty).unwrap())
            .collect();
        serialize(&datums, types)
    }

    #[test]
    fn arrow_rows_equal_datum_rows() {
        let (columns, types) = arrays();
        for row in 0..4 {
            assert_eq!(
                via_arrays(&columns, &types, row),
                via_datums(&columns, &types, row),
                "row {row}"
            );
        }
        let mut encoder = ArrowRowEncoder::new(&columns, &types).unwrap();
        assert_eq!(encoder.num_rows(), 4);
        for row in 0..4 {
            let expected = via_datums(&columns, &types, row);
            assert_eq!(encoder.encode(row).unwrap(), &expected[4..]);
        }
        assert!(encoder.encode(4).is_err());
    }

    #[test]
    fn accepts_other_arrow_encodings() {
        let s = [string()];
        let words = ["", "short", "a string longer than seven", "日本"];
        let reference: Vec<Vec<u8>> = words
            .iter()
            .map(|w| serialize(&[Datum::String((*w).into())], &s))
            .collect();
        let encodings: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(words.to_vec())),
            Arc::new(LargeStringArray::from(words.to_vec())),
            Arc::new(StringViewArray::from(words.to_vec())),
            Arc::new(
                vec![words[3], words[0], words[1], words[2]]
                    .into_iter()
                    .collect::<DictionaryArray<Int8Type>>(),
            ),
        ];
        for (i, col) in encodings.iter().enumerate() {
            let cols = [col.clone()];
            for row in 0..4 {
                // The dictionary holds the words rotated by one.
                let word = if i == 3 { (row + 3) % 4 } else { row };
                assert_eq!(via_arrays(&cols, &s, row), reference[word], "encoding {i}");
            }
        }
        let b = [bytes_type()];
        let blobs: [&[u8]; 2] = [b"12345678", b"ab"];
        for col in [
            Arc::new(LargeBinaryArray::from(blobs.to_vec())) as ArrayRef,
            Arc::new(BinaryViewArray::from(blobs.to_vec())),
        ] {
            for (row, blob) in blobs.iter().enumerate() {
                assert_eq!(
                    via_arrays(std::slice::from_ref(&col), &b, row),
                    serialize(&[Datum::Binary(blob.to_vec())], &b)
                );
            }
        }
        let fixed: ArrayRef =
            Arc::new(FixedSizeBinaryArray::try_from_iter([b"abcd", b"efgh"].into_iter()).unwrap());
        assert_eq!(
            via_arrays(&[fixed], &b, 1),
            serialize(&[Datum::Binary(b"efgh".to_vec())], &b)
        );
        // Timestamps of any unit for TIMESTAMP(6) and (9).
        let value = ts(1_704_164_645_123, 456_789);
        for p in [6u8, 9] {
            let ty = [t(TypeKind::Timestamp(p))];
            let cols: Vec<(ArrayRef, Timestamp)> = vec![
                (
                    Arc::new(TimestampSecondArray::from(vec![1_704_164_645])),
                    ts(1_704_164_645_000, 0),
                ),
                (
                    Arc::new(TimestampMillisecondArray::from(vec![1_704_164_645_123])),
                    ts(1_704_164_645_123, 0),
                ),
                (
                    Arc::new(TimestampMicrosecondArray::from(vec![value.to_micros()])),
                    ts(1_704_164_645_123, 456_000),
                ),
                (
                    Arc::new(TimestampNanosecondArray::from(vec![value.to_nanos()])),
                    value,
                ),
            ];
            for (col, expected) in cols {
                assert_eq!(
                    via_arrays(&[col], &ty, 0),
                    serialize(&[Datum::Timestamp(expected)], &ty)
                );
            }
        }
        // TIME as microseconds, a NullArray, wrong Arrow types, a wrong decimal scale.
        let time = [t(TypeKind::Time(3))];
        let micros: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![3_723_004_999]));
        assert_eq!(
            via_arrays(&[micros], &time, 0),
            serialize(&[Datum::Time(3_723_004)], &time)
        );
        let nulls: ArrayRef = Arc::new(NullArray::new(2));
        let dec = [decimal(38, 2)];
        assert_eq!(
            via_arrays(&[nulls], &dec, 1),
            serialize(&[Datum::Null], &dec)
        );
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        let mut w = BinaryRowWriter::new(1);
        assert!(
            row_from_arrays(
                &mut w,
                std::slice::from_ref(&ints),
                &[t(TypeKind::BigInt)],
                0
            )
            .is_err()
        );
        assert!(
            row_from_arrays(&mut w, std::slice::from_ref(&ints), &[t(TypeKind::Int)], 1).is_err()
        );
        assert!(row_from_arrays(&mut w, &[ints], &[], 0).is_err());
        let scaled: ArrayRef = Arc::new(
            Decimal128Array::from(vec![1])
                .with_precision_and_scale(38, 3)
                .unwrap(),
        );
        assert!(row_from_arrays(&mut w, &[scaled], &dec, 0).is_err());
    }
}
