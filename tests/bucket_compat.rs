//! tarn's BinaryRow bytes and fixed-bucket assignment against pypaimon, an independent
//! implementation of Paimon's format.
//!
//! A key tarn puts into another bucket than Paimon's other writers do is a silent duplicate of a
//! primary key, so this test generates deterministic pseudo-random keys of every key type (and
//! composite keys), computes tarn's hash and bucket for several bucket counts, and has
//! `tests/python/bucket_oracle.py` compute them with pypaimon's own code: the BinaryRow hash of
//! every key, `_bucket_from_hash` for every bucket count, the whole `FixedBucketRowKeyExtractor`
//! for a prefix of the rows, and `GenericRowSerializer` bytes for a sample of rows.
//!
//! Python comes from `TARN_TEST_PYTHON`, else `~/.cache/tarn-venv/bin/python` (what
//! `scripts/test.sh` creates from `tests/python/requirements.txt`). Without a Python that imports
//! pypaimon the test fails and says so: it never skips silently.
//!
//! Where pypaimon 2.1.0 disagrees with Paimon Java (the spec), tarn follows Java and these keys
//! are left out of the comparison (the unit tests in `src/storage/binary_row.rs` pin the Java
//! bytes):
//! - DECIMAL with precision > 18, values -2^(8k+7) (-128, -32768, ..., -2^63, ...): Java stores
//!   `BigInteger.toByteArray()`, the minimal two's complement (-128 = `80`); pypaimon sizes the
//!   bytes from the magnitude's bit length and writes one byte more (`ff80`). Different bytes,
//!   different hash, different bucket.
//! - NULL in a DECIMAL with precision > 18 or a TIMESTAMP with precision > 3: Java
//!   (`RowHelper`, generated projections) reserves the 16- or 8-byte variable region and points
//!   the slot at it; pypaimon writes a zero slot and no region. Those columns get no NULLs here.

mod common;
use common::repo_path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int8Array, Int16Array, Int32Array, Int64Array, StringArray, Time32MillisecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use serde_json::{Value, json};
use tarn::storage::spec::binary_row::{ArrowRowEncoder, serialize};
use tarn::storage::spec::bucket::{bucket_ids, hash_row};
use tarn::storage::spec::datum::Datum;
use tarn::storage::spec::types::{DataField, MAX_LENGTH, PaimonType, TypeKind};

/// Keys per single-type case.
const ROWS: usize = 10_000;
const BUCKET_COUNTS: [i32; 5] = [1, 3, 4, 16, 128];
/// Rows whose buckets pypaimon also computes through the whole `FixedBucketRowKeyExtractor`.
const EXTRACTOR_ROWS: usize = 1_000;
/// Rows whose serialized bytes are compared.
const SERIALIZE_ROWS: usize = 300;
/// Mismatches shown per case and check.
const SHOW: usize = 5;

/// splitmix64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo) as u64 + 1)) as i64
    }

    /// A value of `bits` random bits at most, signed: small and large magnitudes alike.
    fn int(&mut self, bits: u32) -> i64 {
        let width = 1 + self.below(bits as u64) as u32;
        let v = (self.next() >> (64 - width)) as i64;
        if self.chance(50) { v } else { v.wrapping_neg() }
    }
}

/// The values of one generated column.
enum Values {
    Bool(Vec<Option<bool>>),
    I8(Vec<Option<i8>>),
    I16(Vec<Option<i16>>),
    I32(Vec<Option<i32>>),
    I64(Vec<Option<i64>>),
    F32(Vec<Option<f32>>),
    F64(Vec<Option<f64>>),
    Decimal(Vec<Option<i128>>, u8, u8),
    Str(Vec<Option<String>>),
    Bin(Vec<Option<Vec<u8>>>),
    Date(Vec<Option<i32>>),
    Time(Vec<Option<i32>>),
    /// Milliseconds or microseconds (`micros`), with or without the UTC zone.
    Timestamp {
        values: Vec<Option<i64>>,
        micros: bool,
        utc: bool,
    },
}

fn opt<T, U>(values: &[Option<T>], f: impl Fn(&T) -> U) -> Vec<Option<U>> {
    values.iter().map(|v| v.as_ref().map(&f)).collect()
}

impl Values {
    fn array(&self) -> ArrayRef {
        match self {
            Values::Bool(v) => Arc::new(BooleanArray::from(v.clone())),
            Values::I8(v) => Arc::new(Int8Array::from(v.clone())),
            Values::I16(v) => Arc::new(Int16Array::from(v.clone())),
            Values::I32(v) => Arc::new(Int32Array::from(v.clone())),
            Values::I64(v) => Arc::new(Int64Array::from(v.clone())),
            Values::F32(v) => Arc::new(Float32Array::from(v.clone())),
            Values::F64(v) => Arc::new(Float64Array::from(v.clone())),
            Values::Decimal(v, p, s) => Arc::new(
                Decimal128Array::from(v.clone())
                    .with_precision_and_scale(*p, *s as i8)
                    .unwrap(),
            ),
            Values::Str(v) => Arc::new(StringArray::from(v.clone())),
            Values::Bin(v) => Arc::new(BinaryArray::from(
                v.iter().map(|b| b.as_deref()).collect::<Vec<_>>(),
            )),
            Values::Date(v) => Arc::new(Date32Array::from(v.clone())),
            Values::Time(v) => Arc::new(Time32MillisecondArray::from(v.clone())),
            Values::Timestamp {
                values,
                micros,
                utc,
            } => {
                let tz = utc.then_some("UTC");
                if *micros {
                    Arc::new(TimestampMicrosecondArray::from(values.clone()).with_timezone_opt(tz))
                } else {
                    Arc::new(TimestampMillisecondArray::from(values.clone()).with_timezone_opt(tz))
                }
            }
        }
    }

    /// The column for the oracle (see the encodings in `bucket_oracle.py`).
    fn json(&self) -> Value {
        let (tag, values): (String, Value) = match self {
            Values::Bool(v) => ("bool".into(), json!(v)),
            Values::I8(v) => ("int8".into(), json!(v)),
            Values::I16(v) => ("int16".into(), json!(v)),
            Values::I32(v) => ("int32".into(), json!(v)),
            Values::I64(v) => ("int64".into(), json!(v)),
            Values::F32(v) => ("float32".into(), json!(opt(v, |f| f.to_bits()))),
            Values::F64(v) => ("float64".into(), json!(opt(v, |f| f.to_bits()))),
            Values::Decimal(v, p, s) => (
                format!("decimal128({p},{s})"),
                json!(opt(v, |d| d.to_string())),
            ),
            Values::Str(v) => ("utf8".into(), json!(v)),
            Values::Bin(v) => (
                "binary".into(),
                json!(opt(v, |b| b
                    .iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<String>())),
            ),
            Values::Date(v) => ("date32".into(), json!(v)),
            Values::Time(v) => ("time32ms".into(), json!(v)),
            Values::Timestamp {
                values,
                micros,
                utc,
            } => (
                format!(
                    "timestamp_{}{}",
                    if *micros { "us" } else { "ms" },
                    if *utc { "_utc" } else { "" }
                ),
                json!(values),
            ),
        };
        json!({"arrow": tag, "values": values})
    }
}

/// Days of 0001-01-01 and 9999-12-31 (Python's `date` range).
const MIN_DAY: i64 = -719_162;
const MAX_DAY: i64 = 2_932_896;
const MIN_MILLIS: i64 = MIN_DAY * 86_400_000;
const MAX_MILLIS: i64 = (MAX_DAY + 1) * 86_400_000 - 1;

/// Whether pypaimon 2.1.0 writes this non-compact decimal differently from Java (see the top).
fn pypaimon_decimal_differs(v: i128) -> bool {
    v < 0 && v.unsigned_abs().is_power_of_two() && v.unsigned_abs().trailing_zeros() % 8 == 7
}

/// Can a NULL of this type be compared with pypaimon (see the top)?
fn null_comparable(ty: &PaimonType) -> bool {
    match ty.kind {
        TypeKind::Decimal { precision, .. } => precision <= 18,
        TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => p <= 3,
        _ => true,
    }
}

fn random_string(rng: &mut Rng, max_chars: usize) -> String {
    const NON_ASCII: [char; 10] = ['é', 'ß', 'Ω', 'ж', '€', '日', '本', '語', '🦀', '𝄞'];
    let len = match rng.below(10) {
        0..=4 => rng.below(8) as usize,
        5..=8 => 8 + rng.below(33) as usize,
        _ => 41 + rng.below(260) as usize,
    }
    .min(max_chars);
    let non_ascii = rng.chance(30);
    (0..len)
        .map(|_| {
            if non_ascii && rng.chance(40) {
                NON_ASCII[rng.below(NON_ASCII.len() as u64) as usize]
            } else {
                (b' ' + rng.below(95) as u8) as char
            }
        })
        .collect()
}

/// `ROWS`-ish values of `ty`: edge cases first, then random ones, NULLs at `null_percent`.
fn generate(ty: &PaimonType, rng: &mut Rng, rows: usize, null_percent: u64) -> Values {
    fn fill<T: Clone>(
        rng: &mut Rng,
        rows: usize,
        null_percent: u64,
        edges: &[T],
        mut make: impl FnMut(&mut Rng) -> T,
    ) -> Vec<Option<T>> {
        let mut out: Vec<Option<T>> = edges.iter().cloned().map(Some).take(rows).collect();
        while out.len() < rows {
            out.push(if rng.chance(null_percent) {
                None
            } else {
                Some(make(rng))
            });
        }
        out
    }
    let n = rows;
    let np = null_percent;
    match &ty.kind {
        TypeKind::Boolean => Values::Bool(fill(rng, n, np, &[true, false], |r| r.chance(50))),
        TypeKind::TinyInt => Values::I8(fill(rng, n, np, &[i8::MIN, -1, 0, 1, i8::MAX], |r| {
            r.next() as i8
        })),
        TypeKind::SmallInt => Values::I16(fill(rng, n, np, &[i16::MIN, -1, 0, 1, i16::MAX], |r| {
            r.int(16) as i16
        })),
        TypeKind::Int => Values::I32(fill(rng, n, np, &[i32::MIN, -1, 0, 1, i32::MAX], |r| {
            r.int(32) as i32
        })),
        TypeKind::BigInt => Values::I64(fill(rng, n, np, &[i64::MIN, -1, 0, 1, i64::MAX], |r| {
            r.int(64)
        })),
        TypeKind::Float => {
            let edges = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                f32::MIN_POSITIVE,
                f32::from_bits(1),
                f32::MAX,
                f32::MIN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
            ];
            Values::F32(fill(rng, n, np, &edges, |r| {
                if r.chance(50) {
                    r.int(24) as f32 / 100.0
                } else {
                    let f = f32::from_bits(r.next() as u32);
                    if f.is_nan() { f32::NAN } else { f }
                }
            }))
        }
        TypeKind::Double => {
            let edges = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                f64::MIN_POSITIVE,
                f64::from_bits(1),
                f64::MAX,
                f64::MIN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                0.1,
            ];
            Values::F64(fill(rng, n, np, &edges, |r| {
                if r.chance(50) {
                    r.int(53) as f64 / 1000.0
                } else {
                    let f = f64::from_bits(r.next());
                    if f.is_nan() { f64::NAN } else { f }
                }
            }))
        }
        TypeKind::Decimal { precision, scale } => {
            let p = *precision;
            let max = 10i128.pow(p as u32) - 1;
            let mut edges = vec![
                0, 1, -1, max, -max, 127, 128, -127, -128, -129, 255, 256, -32768,
            ];
            if p > 18 {
                edges.extend([
                    i64::MAX as i128,
                    i64::MAX as i128 + 1,
                    i64::MIN as i128 + 1,
                    i64::MIN as i128,
                    i64::MIN as i128 - 1,
                ]);
            }
            edges.retain(|v| v.unsigned_abs() <= max as u128 && !pypaimon_decimal_differs(*v));
            Values::Decimal(
                fill(rng, n, np, &edges, |r| {
                    loop {
                        let digits = 1 + r.below(p as u64) as u32;
                        let magnitude =
                            ((r.next() as u128) << 64 | r.next() as u128) % 10u128.pow(digits);
                        let v = if r.chance(50) {
                            -(magnitude as i128)
                        } else {
                            magnitude as i128
                        };
                        if p <= 18 || !pypaimon_decimal_differs(v) {
                            break v;
                        }
                    }
                }),
                p,
                *scale,
            )
        }
        TypeKind::Char(len) | TypeKind::VarChar(len) => {
            let max = (*len).min(1000) as usize;
            let edges: Vec<String> = [
                "",
                "a",
                "1234567",
                "12345678",
                "é",
                "日本語",
                "🦀",
                "ab🦀",
                "abc🦀",
                "abcd🦀",
            ]
            .iter()
            .filter(|s| s.chars().count() <= max)
            .map(|s| s.to_string())
            .collect();
            Values::Str(fill(rng, n, np, &edges, |r| random_string(r, max)))
        }
        TypeKind::Binary(len) | TypeKind::VarBinary(len) => {
            let fixed = matches!(ty.kind, TypeKind::Binary(_)).then_some(*len as usize);
            let edges: Vec<Vec<u8>> = match fixed {
                Some(l) => vec![vec![0; l], vec![0xff; l]],
                None => vec![vec![], vec![0], vec![0x80], vec![0xff; 7], vec![0xff; 8]],
            };
            Values::Bin(fill(rng, n, np, &edges, |r| {
                let l = fixed.unwrap_or_else(|| r.below(41) as usize);
                (0..l).map(|_| r.next() as u8).collect()
            }))
        }
        TypeKind::Date => Values::Date(fill(
            rng,
            n,
            np,
            &[0, -1, 1, MIN_DAY as i32, MAX_DAY as i32],
            |r| r.range(MIN_DAY, MAX_DAY) as i32,
        )),
        TypeKind::Time(_) => Values::Time(fill(rng, n, np, &[0, 1, 86_399_999], |r| {
            r.below(86_400_000) as i32
        })),
        TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => {
            let micros = *p > 3;
            let utc = matches!(ty.kind, TypeKind::TimestampLtz(_));
            let (lo, hi, edges) = if micros {
                (
                    MIN_MILLIS * 1000,
                    MAX_MILLIS * 1000 + 999,
                    vec![0, 1, -1, -999, -1000, -1001, 999_999, MIN_MILLIS * 1000],
                )
            } else {
                (
                    MIN_MILLIS,
                    MAX_MILLIS,
                    vec![0, 1, -1, MIN_MILLIS, MAX_MILLIS],
                )
            };
            Values::Timestamp {
                values: fill(rng, n, np, &edges, |r| {
                    if r.chance(50) {
                        // Around now, where real keys are.
                        let now = 1_700_000_000_000 * if micros { 1000 } else { 1 };
                        now + r.int(40)
                    } else {
                        r.range(lo, hi)
                    }
                }),
                micros,
                utc,
            }
        }
        _ => panic!("no generator for {ty}"),
    }
}

struct Case {
    name: String,
    types: Vec<PaimonType>,
    values: Vec<Values>,
}

impl Case {
    fn new(name: &str, types: Vec<PaimonType>, rows: usize, null_percent: u64, seed: u64) -> Self {
        let mut rng = Rng(seed);
        let values = types
            .iter()
            .map(|ty| {
                let np = if null_comparable(ty) { null_percent } else { 0 };
                generate(ty, &mut rng, rows, np)
            })
            .collect();
        Case {
            name: name.into(),
            types,
            values,
        }
    }

    fn json(&self) -> Value {
        let fields: Vec<Value> = self
            .types
            .iter()
            .enumerate()
            .map(|(i, ty)| DataField::new(i as i32, format!("k{i}"), ty.clone()).to_json())
            .collect();
        json!({
            "name": self.name,
            "fields": fields,
            "columns": self.values.iter().map(Values::json).collect::<Vec<_>>(),
            "bucket_counts": BUCKET_COUNTS,
            "extractor_rows": EXTRACTOR_ROWS,
            "serialize_rows": SERIALIZE_ROWS,
        })
    }
}

fn ty(kind: TypeKind) -> PaimonType {
    PaimonType::nullable(kind)
}

fn not_null(kind: TypeKind) -> PaimonType {
    PaimonType::new(kind, false)
}

fn cases() -> Vec<Case> {
    use TypeKind::*;
    let dec = |precision, scale| Decimal { precision, scale };
    let string = || VarChar(MAX_LENGTH);
    let bytes = || VarBinary(MAX_LENGTH);
    let singles = vec![
        Boolean,
        TinyInt,
        SmallInt,
        Int,
        BigInt,
        Float,
        Double,
        dec(1, 0),
        dec(10, 2),
        dec(18, 4),
        dec(19, 0),
        dec(28, 6),
        dec(38, 0),
        dec(38, 10),
        string(),
        VarChar(20),
        Char(10),
        bytes(),
        Binary(16),
        Date,
        Time(3),
        Timestamp(3),
        Timestamp(6),
        TimestampLtz(3),
        TimestampLtz(6),
    ];
    let mut cases: Vec<Case> = singles
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            let t = ty(kind);
            Case::new(&t.to_string(), vec![t], ROWS, 3, 1000 + i as u64)
        })
        .collect();
    let composites: Vec<(&str, Vec<PaimonType>, usize, u64)> = vec![
        (
            "(BIGINT, STRING)",
            vec![not_null(BigInt), not_null(string())],
            ROWS,
            0,
        ),
        (
            "(INT, DATE, STRING)",
            vec![not_null(Int), not_null(Date), not_null(string())],
            ROWS,
            0,
        ),
        (
            "(STRING, DECIMAL(38, 10), TIMESTAMP(6), BYTES)",
            vec![
                not_null(string()),
                not_null(dec(38, 10)),
                not_null(Timestamp(6)),
                not_null(bytes()),
            ],
            ROWS,
            0,
        ),
        (
            "nullable (BOOLEAN, TINYINT, SMALLINT, FLOAT, DOUBLE, DECIMAL(12, 3), VARCHAR(5), \
             TIMESTAMP(3) WITH LOCAL TIME ZONE)",
            vec![
                ty(Boolean),
                ty(TinyInt),
                ty(SmallInt),
                ty(Float),
                ty(Double),
                ty(dec(12, 3)),
                ty(VarChar(5)),
                ty(TimestampLtz(3)),
            ],
            ROWS,
            20,
        ),
        (
            "60 columns (null bitset of two words)",
            (0..60)
                .map(|i| match i % 5 {
                    0 => ty(Int),
                    1 => ty(string()),
                    2 => ty(BigInt),
                    3 => ty(Date),
                    _ => not_null(dec(20, 2)),
                })
                .collect(),
            2_000,
            10,
        ),
    ];
    for (i, (name, types, rows, nulls)) in composites.into_iter().enumerate() {
        cases.push(Case::new(name, types, rows, nulls, 5000 + i as u64));
    }
    cases
}

fn locate_python() -> String {
    let (python, origin) = match std::env::var("TARN_TEST_PYTHON") {
        Ok(p) if !p.is_empty() => (p, "TARN_TEST_PYTHON"),
        _ => {
            let home = std::env::var("HOME").unwrap_or_default();
            (
                format!("{home}/.cache/tarn-venv/bin/python"),
                "the default venv (TARN_TEST_PYTHON unset)",
            )
        }
    };
    let probe = Command::new(&python)
        .args([
            "-c",
            "from importlib.metadata import version; import pypaimon, pyarrow, numpy; \
             print(version('pypaimon'))",
        ])
        .output();
    match probe {
        Ok(out) if out.status.success() => {
            println!(
                "pypaimon {} at {python}",
                String::from_utf8_lossy(&out.stdout).trim()
            );
            python
        }
        Ok(out) => panic!(
            "bucket_compat needs a Python with pypaimon: {python} (from {origin}) cannot import \
             it:\n{}\nInstall it with `{python} -m pip install -r tests/python/requirements.txt` \
             or run scripts/test.sh.",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "bucket_compat needs a Python with pypaimon: cannot run {python} (from {origin}): \
             {e}. Set TARN_TEST_PYTHON or run scripts/test.sh, which creates the venv."
        ),
    }
}

fn run_oracle(input: &Value) -> Value {
    let python = locate_python();
    let dir = std::env::temp_dir();
    let stem = format!("tarn-bucket-compat-{}", std::process::id());
    let in_path: PathBuf = dir.join(format!("{stem}-in.json"));
    let out_path: PathBuf = dir.join(format!("{stem}-out.json"));
    std::fs::write(&in_path, serde_json::to_vec(input).unwrap()).expect("write oracle input");
    let script = repo_path("tests/python/bucket_oracle.py");
    let started = std::time::Instant::now();
    let out = Command::new(&python)
        .arg(script)
        .arg(&in_path)
        .arg(&out_path)
        .output()
        .expect("run bucket_oracle.py");
    let _ = std::fs::remove_file(&in_path);
    assert!(
        out.status.success(),
        "bucket_oracle.py failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read(&out_path).expect("read oracle output");
    let _ = std::fs::remove_file(&out_path);
    println!(
        "pypaimon oracle took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    serde_json::from_slice(&text).expect("oracle output is JSON")
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_i64().expect("integer"))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Records mismatches of one check, showing the first few.
struct Report {
    failures: Vec<String>,
    compared: usize,
}

impl Report {
    fn check(
        &mut self,
        case: &Case,
        columns: &[ArrayRef],
        what: &str,
        tarn: &[String],
        pypaimon: &[String],
    ) {
        assert_eq!(
            tarn.len(),
            pypaimon.len(),
            "{}: {what}: tarn has {} values, pypaimon {}",
            case.name,
            tarn.len(),
            pypaimon.len()
        );
        self.compared += tarn.len();
        let bad: Vec<usize> = (0..tarn.len())
            .filter(|&i| tarn[i] != pypaimon[i])
            .collect();
        if bad.is_empty() {
            return;
        }
        let mut text = format!(
            "{}: {what}: {} of {} rows differ; first ones:",
            case.name,
            bad.len(),
            tarn.len()
        );
        for &row in bad.iter().take(SHOW) {
            let key: Vec<Datum> = columns
                .iter()
                .zip(&case.types)
                .map(|(c, t)| Datum::from_array(c, row, t).unwrap())
                .collect();
            text.push_str(&format!(
                "\n    row {row} key {key:?}\n      tarn     {}\n      pypaimon {}",
                tarn[row], pypaimon[row]
            ));
        }
        self.failures.push(text);
    }
}

#[test]
fn buckets_and_bytes_match_pypaimon() {
    let cases = cases();
    let input = json!({"cases": cases.iter().map(Case::json).collect::<Vec<_>>()});
    let output = run_oracle(&input);
    let results = output["cases"].as_array().expect("cases");
    assert_eq!(results.len(), cases.len());

    let mut report = Report {
        failures: Vec::new(),
        compared: 0,
    };
    let mut keys = 0;
    for (case, result) in cases.iter().zip(results) {
        assert_eq!(result["name"], case.name.as_str());
        let columns: Vec<ArrayRef> = case.values.iter().map(Values::array).collect();
        let rows = columns[0].len();
        keys += rows;

        let mut encoder = ArrowRowEncoder::new(&columns, &case.types).unwrap();
        let tarn_hashes: Vec<String> = (0..rows)
            .map(|r| hash_row(encoder.encode(r).unwrap()).to_string())
            .collect();
        let py_hashes: Vec<String> = ints(&result["hashes"]).iter().map(i64::to_string).collect();
        report.check(case, &columns, "BinaryRow hash", &tarn_hashes, &py_hashes);

        for n in BUCKET_COUNTS {
            let tarn: Vec<String> = bucket_ids(&columns, &case.types, n)
                .unwrap()
                .iter()
                .map(i32::to_string)
                .collect();
            let py: Vec<String> = ints(&result["buckets"][n.to_string()])
                .iter()
                .map(i64::to_string)
                .collect();
            report.check(case, &columns, &format!("bucket of {n}"), &tarn, &py);
            let via_extractor: Vec<String> = ints(&result["extractor"][n.to_string()])
                .iter()
                .map(i64::to_string)
                .collect();
            report.check(
                case,
                &columns,
                &format!("bucket of {n} (FixedBucketRowKeyExtractor)"),
                &tarn[..via_extractor.len()],
                &via_extractor,
            );
        }

        let sample = rows.min(SERIALIZE_ROWS);
        let tarn_bytes: Vec<String> = (0..sample)
            .map(|r| {
                let datums: Vec<Datum> = columns
                    .iter()
                    .zip(&case.types)
                    .map(|(c, t)| Datum::from_array(c, r, t).unwrap())
                    .collect();
                hex(&serialize(&datums, &case.types))
            })
            .collect();
        let py_bytes: Vec<String> = result["serialized"]
            .as_array()
            .expect("serialized")
            .iter()
            .map(|v| v.as_str().expect("hex").to_owned())
            .collect();
        report.check(
            case,
            &columns,
            "serialized BinaryRow",
            &tarn_bytes,
            &py_bytes,
        );
    }
    println!(
        "{} cases, {keys} keys, {} values compared with pypaimon",
        cases.len(),
        report.compared
    );
    assert!(
        report.failures.is_empty(),
        "tarn disagrees with pypaimon in {} checks:\n{}",
        report.failures.len(),
        report.failures.join("\n")
    );
}
