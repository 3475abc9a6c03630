//! PostgreSQL's mathematical functions where DataFusion's differ or are missing.
//!
//! - Domain errors with PostgreSQL's SQLSTATEs instead of NaN / Infinity: `sqrt` of a negative
//!   (2201F), `ln` / `log` of zero or a negative (2201E), `power(0, -1)` and a negative base to
//!   a fractional power (2201F), overflow (22003), `factorial(-1)` (22003), `width_bucket` with
//!   a zero count or equal bounds (2201G), `mod` / `div` by zero (22012).
//! - Numeric arguments are computed in exact decimal arithmetic (`bigdecimal`) with the result
//!   scales of PostgreSQL's `numeric.c` (`sqrt(2::numeric)` = 1.414213562373095, `exp(1.0)` =
//!   2.7182818284590452, `1.1 ^ 2` = 1.2100000000000000); DataFusion computed them in float8.
//!   A result's scale is decided from the argument types (Arrow has one scale per column), which
//!   is PostgreSQL's for arguments of ordinary magnitude.
//! - Rounding: `round(float8)` rounds half to even (`rint`); `round` / `trunc` of a numeric keep
//!   the requested scale (`round(1.5, 3)` = 1.500), `ceil` / `floor` / `round(x)` scale 0.
//! - Missing functions: `ceiling`, `sign`, `mod`, `div`, `width_bucket`, `scale`,
//!   `min_scale`, `trim_scale`; `to_hex` of an integer is 32-bit, `factorial` numeric.
//!
//! Arguments follow PostgreSQL's overload choice: an integer argument picks the float8
//! function (`sqrt(2)` is double precision), a numeric argument the numeric one.

use std::sync::Arc;

use bigdecimal::num_bigint::BigInt;
use bigdecimal::{BigDecimal, RoundingMode, Signed, ToPrimitive, Zero};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use super::data_error;

/// Digits of precision for intermediate results (well past the 38 a result can hold).
const WORK_DIGITS: u64 = 60;
/// `NUMERIC_MIN_SIG_DIGITS` of PostgreSQL.
const MIN_SIG_DIGITS: i64 = 16;

/// Registers the functions of this family (after DataFusion's, replacing its `sqrt`, `ln`, ...).
pub fn register(ctx: &SessionContext) {
    use Kind as K;
    let funcs: &[(&'static str, &[&str], Kind)] = &[
        ("sqrt", &[], K::Sqrt),
        ("ln", &[], K::Ln),
        ("log10", &[], K::Log10),
        ("log", &[], K::Log),
        ("exp", &[], K::Exp),
        ("power", &["pow"], K::Power),
        ("factorial", &[], K::Factorial),
        ("round", &[], K::Round),
        ("trunc", &[], K::Trunc),
        ("ceil", &["ceiling"], K::Ceil),
        ("floor", &[], K::Floor),
        ("sign", &[], K::Sign),
        ("mod", &[], K::Mod),
        ("div", &[], K::Div),
        ("width_bucket", &[], K::WidthBucket),
        ("to_hex", &[], K::ToHex),
        ("scale", &[], K::Scale),
        ("min_scale", &[], K::MinScale),
        ("trim_scale", &[], K::TrimScale),
    ];
    for (name, aliases, kind) in funcs {
        let udf = ScalarUDF::new_from_impl(MathFn {
            name,
            aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
            kind: *kind,
            signature: Signature::user_defined(Volatility::Immutable),
        });
        ctx.register_udf(udf);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Sqrt,
    Ln,
    Log10,
    Log,
    Exp,
    Power,
    Factorial,
    Round,
    Trunc,
    Ceil,
    Floor,
    Sign,
    Mod,
    Div,
    WidthBucket,
    ToHex,
    Scale,
    MinScale,
    TrimScale,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MathFn {
    name: &'static str,
    aliases: Vec<String>,
    kind: Kind,
    signature: Signature,
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// The numeric type an argument converts to.
fn as_decimal(t: &DataType) -> DataType {
    match t {
        DataType::Decimal128(p, s) => DataType::Decimal128(*p, *s),
        DataType::Decimal256(_, s) => DataType::Decimal128(38, (*s).min(38)),
        DataType::Int8 | DataType::Int16 | DataType::UInt8 | DataType::UInt16 => {
            DataType::Decimal128(5, 0)
        }
        DataType::Int32 | DataType::UInt32 => DataType::Decimal128(10, 0),
        DataType::Int64 | DataType::UInt64 | DataType::Null => DataType::Decimal128(20, 0),
        _ => DataType::Decimal128(38, 10),
    }
}

/// numeric stays numeric; anything else is float8 (PostgreSQL's preferred numeric type).
fn numeric_or_float(t: &DataType) -> DataType {
    if is_decimal(t) {
        as_decimal(t)
    } else {
        DataType::Float64
    }
}

fn int_type(t: &DataType) -> Option<u8> {
    Some(match t {
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => 2,
        DataType::Int32 | DataType::UInt16 => 4,
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => 8,
        _ => return None,
    })
}

fn scale_of(t: &DataType) -> i64 {
    match t {
        DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => i64::from(*s).max(0),
        _ => 0,
    }
}

fn numeric(scale: i64) -> DataType {
    DataType::Decimal128(38, scale.clamp(0, 38) as i8)
}

fn wrong_args(name: &str) -> datafusion::error::DataFusionError {
    data_error(
        "42883",
        format!("function {name} with these arguments does not exist"),
    )
}

impl MathFn {
    fn arity(&self) -> &'static [usize] {
        match self.kind {
            Kind::Log | Kind::Round | Kind::Trunc => &[1, 2],
            Kind::Power | Kind::Mod | Kind::Div => &[2],
            Kind::WidthBucket => &[4],
            _ => &[1],
        }
    }

    fn coerce(&self, types: &[DataType]) -> Result<Vec<DataType>> {
        if !self.arity().contains(&types.len()) {
            return Err(wrong_args(self.name));
        }
        let any_decimal = types.iter().any(is_decimal);
        let any_float = types.iter().any(is_float);
        Ok(match self.kind {
            Kind::Sqrt
            | Kind::Ln
            | Kind::Log10
            | Kind::Exp
            | Kind::Sign
            | Kind::Ceil
            | Kind::Floor => vec![numeric_or_float(&types[0])],
            Kind::Log if types.len() == 1 => vec![numeric_or_float(&types[0])],
            Kind::Log | Kind::Div => types.iter().map(as_decimal).collect(),
            Kind::Round | Kind::Trunc if types.len() == 1 => vec![numeric_or_float(&types[0])],
            Kind::Round | Kind::Trunc => vec![as_decimal(&types[0]), DataType::Int64],
            Kind::Power if any_decimal && !any_float => types.iter().map(as_decimal).collect(),
            Kind::Power => vec![DataType::Float64; 2],
            Kind::Mod => match (int_type(&types[0]), int_type(&types[1])) {
                (Some(a), Some(b)) => {
                    let t = match a.max(b) {
                        2 => DataType::Int16,
                        4 => DataType::Int32,
                        _ => DataType::Int64,
                    };
                    vec![t.clone(), t]
                }
                _ => types.iter().map(as_decimal).collect(),
            },
            Kind::WidthBucket => {
                let t = if any_decimal && !any_float {
                    None
                } else {
                    Some(DataType::Float64)
                };
                let mut out: Vec<DataType> = types[..3]
                    .iter()
                    .map(|a| t.clone().unwrap_or_else(|| as_decimal(a)))
                    .collect();
                out.push(DataType::Int32);
                out
            }
            Kind::ToHex => match int_type(&types[0]) {
                Some(8) => vec![DataType::Int64],
                Some(_) => vec![DataType::Int32],
                None if types[0] == DataType::Null => vec![DataType::Int64],
                None => return Err(wrong_args(self.name)),
            },
            Kind::Factorial => vec![DataType::Int64],
            Kind::Scale | Kind::MinScale | Kind::TrimScale => vec![as_decimal(&types[0])],
        })
    }

    /// The result type: a float, an integer, or numeric with PostgreSQL's result scale for
    /// arguments of these types.
    fn result_type(&self, types: &[DataType], scalars: &[Option<&ScalarValue>]) -> DataType {
        let t0 = &types[0];
        let float = !is_decimal(t0);
        let s0 = scale_of(t0);
        let literal_scale = || {
            scalars
                .get(1)
                .and_then(|s| s.and_then(to_big))
                .and_then(|b| b.to_i64())
        };
        match self.kind {
            Kind::Sqrt
            | Kind::Ln
            | Kind::Log10
            | Kind::Exp
            | Kind::Sign
            | Kind::Ceil
            | Kind::Floor
                if float =>
            {
                DataType::Float64
            }
            Kind::Log if types.len() == 1 && float => DataType::Float64,
            Kind::Round | Kind::Trunc if types.len() == 1 && float => DataType::Float64,
            Kind::Power if float => DataType::Float64,
            Kind::Sqrt => numeric(s0.max(MIN_SIG_DIGITS - 1)),
            Kind::Ln | Kind::Log10 | Kind::Exp => numeric(s0.max(MIN_SIG_DIGITS)),
            Kind::Log => numeric(types.iter().map(scale_of).max().unwrap_or(0).max(16)),
            Kind::Power => numeric(s0.max(MIN_SIG_DIGITS).max(scale_of(&types[1]))),
            Kind::Round | Kind::Trunc if types.len() == 1 => numeric(0),
            Kind::Round | Kind::Trunc => numeric(literal_scale().map_or(s0, |n| n.max(0))),
            Kind::Ceil | Kind::Floor | Kind::Sign | Kind::Div | Kind::Factorial => numeric(0),
            Kind::Mod if int_type(t0).is_some() => t0.clone(),
            Kind::Mod => numeric(s0.max(scale_of(&types[1]))),
            Kind::WidthBucket | Kind::Scale | Kind::MinScale => DataType::Int32,
            Kind::ToHex => DataType::Utf8,
            Kind::TrimScale => match scalars.first().and_then(|s| s.and_then(to_big)) {
                Some(b) => numeric(min_scale(&b)),
                None => numeric(s0),
            },
        }
    }

    fn eval(&self, args: &[ScalarValue], ret: &DataType) -> Result<ScalarValue> {
        if args.iter().any(ScalarValue::is_null) {
            return ScalarValue::try_from(ret);
        }
        let rscale = scale_of(ret);
        if matches!(ret, DataType::Float64) {
            let x: Vec<f64> = args.iter().map(to_f64).collect();
            return Ok(ScalarValue::Float64(Some(self.eval_float(&x)?)));
        }
        let big = || -> Result<Vec<BigDecimal>> {
            args.iter()
                .map(|a| to_big(a).ok_or_else(|| wrong_args(self.name)))
                .collect()
        };
        let value = match self.kind {
            Kind::ToHex => {
                return Ok(ScalarValue::Utf8(Some(match &args[0] {
                    ScalarValue::Int32(Some(v)) => format!("{:x}", *v as u32),
                    ScalarValue::Int64(Some(v)) => format!("{:x}", *v as u64),
                    _ => return Err(wrong_args(self.name)),
                })));
            }
            Kind::Mod if int_type(ret).is_some() => return int_mod(&args[0], &args[1]),
            Kind::WidthBucket => {
                let x = big()?;
                let n = i64::from(match &args[3] {
                    ScalarValue::Int32(Some(n)) => *n,
                    _ => return Err(wrong_args(self.name)),
                });
                return Ok(ScalarValue::Int32(Some(width_bucket_numeric(
                    &x[0], &x[1], &x[2], n,
                )?)));
            }
            Kind::Scale => {
                return Ok(ScalarValue::Int32(Some(
                    scale_of(&args[0].data_type()) as i32
                )));
            }
            Kind::MinScale => {
                return Ok(ScalarValue::Int32(Some(min_scale(&big()?[0]) as i32)));
            }
            Kind::Factorial => factorial(&args[0])?,
            _ => self.eval_numeric(&big()?, &args[0].data_type(), rscale)?,
        };
        Ok(ScalarValue::Decimal128(
            Some(to_unscaled(&value, rscale)?),
            38,
            rscale as i8,
        ))
    }

    fn eval_float(&self, x: &[f64]) -> Result<f64> {
        let a = x[0];
        Ok(match self.kind {
            Kind::Sqrt => {
                if a < 0.0 {
                    return Err(data_error(
                        "2201F",
                        "cannot take square root of a negative number",
                    ));
                }
                a.sqrt()
            }
            Kind::Ln | Kind::Log | Kind::Log10 => {
                log_domain(a > 0.0, a == 0.0)?;
                if self.kind == Kind::Ln {
                    a.ln()
                } else {
                    a.log10()
                }
            }
            Kind::Exp => checked_float(a.exp(), a.is_finite(), a.is_finite())?,
            Kind::Power => float_power(a, x[1])?,
            Kind::Round => a.round_ties_even(),
            Kind::Trunc => a.trunc(),
            Kind::Ceil => a.ceil(),
            Kind::Floor => a.floor(),
            Kind::Sign => {
                if a > 0.0 {
                    1.0
                } else if a < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            _ => return Err(wrong_args(self.name)),
        })
    }

    /// The numeric result before rounding to the result scale (which it is rounded to after).
    fn eval_numeric(&self, x: &[BigDecimal], t0: &DataType, rscale: i64) -> Result<BigDecimal> {
        let a = &x[0];
        Ok(match self.kind {
            Kind::Sqrt => {
                if a.is_negative() {
                    return Err(data_error(
                        "2201F",
                        "cannot take square root of a negative number",
                    ));
                }
                a.sqrt_with_context(&ctx()).unwrap_or_default()
            }
            Kind::Ln => {
                log_domain(a.is_positive(), a.is_zero())?;
                ln(a)
            }
            Kind::Log10 => {
                log_domain(a.is_positive(), a.is_zero())?;
                ln(a) / ln(&BigDecimal::from(10))
            }
            Kind::Log if x.len() == 1 => {
                log_domain(a.is_positive(), a.is_zero())?;
                ln(a) / ln(&BigDecimal::from(10))
            }
            Kind::Log => {
                let (base, num) = (a, &x[1]);
                log_domain(base.is_positive(), base.is_zero())?;
                log_domain(num.is_positive(), num.is_zero())?;
                let lb = ln(base);
                if lb.is_zero() {
                    return Err(data_error("22012", "division by zero"));
                }
                ln(num) / lb
            }
            Kind::Exp => exp(a)?,
            Kind::Power => numeric_power(a, &x[1])?,
            Kind::Round if x.len() == 1 => a.with_scale_round(0, RoundingMode::HalfUp),
            Kind::Trunc if x.len() == 1 => a.with_scale_round(0, RoundingMode::Down),
            Kind::Round | Kind::Trunc => {
                let n = x[1].to_i64().unwrap_or(0).clamp(-1000, 1000);
                let mode = if self.kind == Kind::Round {
                    RoundingMode::HalfUp
                } else {
                    RoundingMode::Down
                };
                let r = a.with_scale_round(n, mode);
                if n > rscale {
                    // The value keeps the digits the column can show.
                    r.with_scale_round(rscale, mode)
                } else {
                    r
                }
            }
            Kind::Ceil => a.with_scale_round(0, RoundingMode::Ceiling),
            Kind::Floor => a.with_scale_round(0, RoundingMode::Floor),
            Kind::Sign => BigDecimal::from(match a.sign() {
                bigdecimal::num_bigint::Sign::Minus => -1,
                bigdecimal::num_bigint::Sign::NoSign => 0,
                bigdecimal::num_bigint::Sign::Plus => 1,
            }),
            Kind::Mod | Kind::Div => {
                let b = &x[1];
                if b.is_zero() {
                    return Err(data_error("22012", "division by zero"));
                }
                let q = (a / b).with_scale_round(0, RoundingMode::Down);
                if self.kind == Kind::Div { q } else { a - q * b }
            }
            Kind::TrimScale => a.normalized(),
            _ => {
                let _ = t0;
                return Err(wrong_args(self.name));
            }
        })
    }
}

impl ScalarUDFImpl for MathFn {
    fn name(&self) -> &str {
        self.name
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.coerce(arg_types)
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.result_type(arg_types, &[]))
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        Ok(Arc::new(Field::new(
            self.name,
            self.result_type(&types, args.scalar_arguments),
            true,
        )))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ret = args.return_field.data_type().clone();
        let rows = args.args.iter().find_map(|a| match a {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let row = |i: usize| -> Result<Vec<ScalarValue>> {
            args.args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(s) => Ok(s.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, i),
                })
                .collect()
        };
        let Some(rows) = rows else {
            return Ok(ColumnarValue::Scalar(self.eval(&row(0)?, &ret)?));
        };
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            out.push(self.eval(&row(i)?, &ret)?);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&ret),
            ));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

fn ctx() -> bigdecimal::Context {
    bigdecimal::Context::default()
        .with_prec(WORK_DIGITS)
        .unwrap_or_default()
}

fn log_domain(positive: bool, zero: bool) -> Result<()> {
    if zero {
        return Err(data_error("2201E", "cannot take logarithm of zero"));
    }
    if !positive {
        return Err(data_error(
            "2201E",
            "cannot take logarithm of a negative number",
        ));
    }
    Ok(())
}

/// A float result checked as PostgreSQL's float8 functions check theirs.
fn checked_float(r: f64, inputs_finite: bool, may_underflow: bool) -> Result<f64> {
    if r.is_infinite() && inputs_finite {
        return Err(data_error("22003", "value out of range: overflow"));
    }
    if r == 0.0 && may_underflow && inputs_finite {
        // exp(-1000) underflows in PostgreSQL too.
        return Err(data_error("22003", "value out of range: underflow"));
    }
    Ok(r)
}

fn float_power(a: f64, b: f64) -> Result<f64> {
    if a == 0.0 && b < 0.0 {
        return Err(data_error(
            "2201F",
            "zero raised to a negative power is undefined",
        ));
    }
    if a < 0.0 && b.is_finite() && b.fract() != 0.0 {
        return Err(data_error(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let r = a.powf(b);
    checked_float(r, a.is_finite() && b.is_finite(), a != 0.0)
}

fn ln(x: &BigDecimal) -> BigDecimal {
    // Newton's iteration on exp(y) = x from the float estimate: each step triples the digits.
    let c = ctx();
    let (digits, scale) = x.as_bigint_and_exponent();
    let mantissa = BigDecimal::new(digits.clone(), digits.to_string().len() as i64 - 1);
    let exp10 = digits.to_string().len() as i64 - 1 - scale;
    let guess = mantissa.to_f64().unwrap_or(1.0).ln() + exp10 as f64 * std::f64::consts::LN_10;
    let mut y = BigDecimal::try_from(guess).unwrap_or_default();
    for _ in 0..4 {
        let e = y.exp_with_context(&c);
        let step = c.round_decimal(BigDecimal::from(2) * (x - &e) / (x + &e));
        y = c.round_decimal(y + step);
    }
    y
}

fn exp(x: &BigDecimal) -> Result<BigDecimal> {
    if x > &BigDecimal::from(100) {
        return Err(data_error("22003", "value overflows numeric format"));
    }
    let c = ctx();
    Ok(if x.is_negative() {
        c.invert(&(-x).exp_with_context(&c))
    } else {
        x.exp_with_context(&c)
    })
}

fn numeric_power(a: &BigDecimal, b: &BigDecimal) -> Result<BigDecimal> {
    if a.is_zero() && b.is_negative() {
        return Err(data_error(
            "2201F",
            "zero raised to a negative power is undefined",
        ));
    }
    if b.is_integer()
        && let Some(n) = b.to_i64()
        && n.abs() <= 1000
    {
        let c = ctx();
        let p = a.powi_with_context(n.abs(), &c);
        return Ok(if n < 0 { c.invert(&p) } else { p });
    }
    if a.is_negative() {
        return Err(data_error(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if a.is_zero() {
        return Ok(BigDecimal::zero());
    }
    exp(&(b * ln(a)))
}

fn factorial(n: &ScalarValue) -> Result<BigDecimal> {
    let n = match n {
        ScalarValue::Int64(Some(n)) => *n,
        _ => return Err(wrong_args("factorial")),
    };
    if n < 0 {
        return Err(data_error(
            "22003",
            "factorial of a negative number is undefined",
        ));
    }
    let mut r: i128 = 1;
    for k in 2..=n {
        r = r
            .checked_mul(i128::from(k))
            .filter(|v| v.unsigned_abs() < 10u128.pow(38))
            .ok_or_else(|| data_error("22003", "value overflows numeric format"))?;
    }
    Ok(BigDecimal::from(BigInt::from(r)))
}

fn int_mod(a: &ScalarValue, b: &ScalarValue) -> Result<ScalarValue> {
    let zero = || data_error("22012", "division by zero");
    Ok(match (a, b) {
        (ScalarValue::Int16(Some(a)), ScalarValue::Int16(Some(b))) => {
            ScalarValue::Int16(Some(if *b == 0 {
                return Err(zero());
            } else {
                a.wrapping_rem(*b)
            }))
        }
        (ScalarValue::Int32(Some(a)), ScalarValue::Int32(Some(b))) => {
            ScalarValue::Int32(Some(if *b == 0 {
                return Err(zero());
            } else {
                a.wrapping_rem(*b)
            }))
        }
        (ScalarValue::Int64(Some(a)), ScalarValue::Int64(Some(b))) => {
            ScalarValue::Int64(Some(if *b == 0 {
                return Err(zero());
            } else {
                a.wrapping_rem(*b)
            }))
        }
        _ => return Err(wrong_args("mod")),
    })
}

fn width_bucket_numeric(x: &BigDecimal, lo: &BigDecimal, hi: &BigDecimal, n: i64) -> Result<i32> {
    if n <= 0 {
        return Err(data_error("2201G", "count must be greater than zero"));
    }
    if lo == hi {
        return Err(data_error("2201G", "lower bound cannot equal upper bound"));
    }
    let bucket = |num: BigDecimal, den: BigDecimal| -> i64 {
        (num * BigDecimal::from(n) / den)
            .with_scale_round(0, RoundingMode::Floor)
            .to_i64()
            .unwrap_or(0)
            + 1
    };
    let r = if lo < hi {
        if x < lo {
            0
        } else if x >= hi {
            n + 1
        } else {
            bucket(x - lo, hi - lo)
        }
    } else if x > lo {
        0
    } else if x <= hi {
        n + 1
    } else {
        bucket(lo - x, lo - hi)
    };
    i32::try_from(r).map_err(|_| data_error("22003", "integer out of range"))
}

/// The fewest fraction digits that show `b` exactly.
fn min_scale(b: &BigDecimal) -> i64 {
    if b.is_zero() {
        return 0;
    }
    b.normalized().fractional_digit_count().max(0)
}

fn to_f64(v: &ScalarValue) -> f64 {
    match v {
        ScalarValue::Float64(Some(f)) => *f,
        ScalarValue::Float32(Some(f)) => f64::from(*f),
        other => to_big(other).and_then(|b| b.to_f64()).unwrap_or(f64::NAN),
    }
}

fn to_big(v: &ScalarValue) -> Option<BigDecimal> {
    Some(match v {
        ScalarValue::Decimal128(Some(v), _, s) => BigDecimal::new(BigInt::from(*v), i64::from(*s)),
        ScalarValue::Int8(Some(v)) => BigDecimal::from(*v),
        ScalarValue::Int16(Some(v)) => BigDecimal::from(*v),
        ScalarValue::Int32(Some(v)) => BigDecimal::from(*v),
        ScalarValue::Int64(Some(v)) => BigDecimal::from(*v),
        ScalarValue::UInt8(Some(v)) => BigDecimal::from(*v),
        ScalarValue::UInt16(Some(v)) => BigDecimal::from(*v),
        ScalarValue::UInt32(Some(v)) => BigDecimal::from(*v),
        ScalarValue::UInt64(Some(v)) => BigDecimal::from(*v),
        ScalarValue::Float64(Some(f)) if f.is_finite() => BigDecimal::try_from(*f).ok()?,
        ScalarValue::Float32(Some(f)) if f.is_finite() => BigDecimal::try_from(*f).ok()?,
        ScalarValue::Utf8(Some(s)) => s.trim().parse().ok()?,
        _ => return None,
    })
}

/// `b` rounded half away from zero to `scale` digits, as the unscaled value of a
/// `Decimal128(38, scale)`; 22003 when it does not fit.
fn to_unscaled(b: &BigDecimal, scale: i64) -> Result<i128> {
    let (digits, _) = b
        .with_scale_round(scale, RoundingMode::HalfUp)
        .into_bigint_and_scale();
    digits
        .to_i128()
        .filter(|v| v.unsigned_abs() < 10u128.pow(38))
        .ok_or_else(|| data_error("22003", "numeric field overflow"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> BigDecimal {
        s.parse().unwrap()
    }

    fn at(b: &BigDecimal, scale: i64) -> String {
        b.with_scale_round(scale, RoundingMode::HalfUp).to_string()
    }

    #[test]
    fn numeric_functions_match_postgres_digits() {
        let c = ctx();
        assert_eq!(
            at(&dec("2").sqrt_with_context(&c).unwrap(), 15),
            "1.414213562373095"
        );
        assert_eq!(at(&exp(&dec("1")).unwrap(), 16), "2.7182818284590452");
        assert_eq!(at(&ln(&dec("2")), 16), "0.6931471805599453");
        assert_eq!(at(&ln(&dec("10.0")), 16), "2.3025850929940457");
        assert_eq!(
            at(&numeric_power(&dec("2"), &dec("0.5")).unwrap(), 16),
            "1.4142135623730950"
        );
        assert_eq!(
            at(&numeric_power(&dec("1.1"), &dec("2")).unwrap(), 16),
            "1.2100000000000000"
        );
        assert_eq!(
            at(&(ln(&dec("64")) / ln(&dec("2"))), 16),
            "6.0000000000000000"
        );
    }

    #[test]
    fn domain_errors() {
        assert!(numeric_power(&dec("0"), &dec("-1")).is_err());
        assert!(float_power(0.0, -1.0).is_err());
        assert!(float_power(10.0, 400.0).is_err());
        assert!(log_domain(false, true).is_err());
        assert!(factorial(&ScalarValue::Int64(Some(-1))).is_err());
    }

    #[test]
    fn width_buckets() {
        let b =
            |x: &str, lo: &str, hi: &str, n| width_bucket_numeric(&dec(x), &dec(lo), &dec(hi), n);
        assert_eq!(b("5.35", "0.024", "10.06", 5).unwrap(), 3);
        assert_eq!(b("7", "0", "10", 5).unwrap(), 4);
        assert_eq!(b("-1", "0", "10", 5).unwrap(), 0);
        assert_eq!(b("10", "0", "10", 5).unwrap(), 6);
        assert!(b("1", "0", "0", 5).is_err());
    }

    #[test]
    fn scales() {
        assert_eq!(min_scale(&dec("1.2300")), 2);
        assert_eq!(min_scale(&dec("100")), 0);
        assert_eq!(min_scale(&dec("0.000")), 0);
    }
}
