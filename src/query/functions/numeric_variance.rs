//! `variance` / `stddev` of integers and numerics as PostgreSQL computes them: in numeric.
//!
//! PostgreSQL's `var_samp(x)` is `(N·Σx² − (Σx)²) / (N·(N−1))` divided with its numeric
//! division scale (`var_pop`: `N·N`), and `stddev` the square root at that same scale
//! (`stddev(salary)` = 23357.46949025, `variance(age)` = 158.8571428571428571). DataFusion's are
//! float8. [`PgNumericVariance`] takes the three sums (added next to the aggregate by
//! `pg_numeric_output.rs`) and returns the result as numeric text, like
//! `numeric_division::PgNumericDiv`.

use bigdecimal::num_bigint::BigInt;
use bigdecimal::{BigDecimal, RoundingMode, Signed, Zero};
use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::numeric_division::{
    divide, division_scale, exact_args, numeric_text, numeric_text_field, numeric_text_result,
};

/// `pg_numeric_{var,stddev}_{samp,pop}(Σx, Σx², N)` as PostgreSQL's numeric text.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgNumericVariance {
    name: &'static str,
    sample: bool,
    root: bool,
    signature: Signature,
}

impl PgNumericVariance {
    /// The function for DataFusion's aggregate `name` (`var`, `var_pop`, `stddev`,
    /// `stddev_pop`), if it is one of these.
    pub fn for_aggregate(name: &str) -> Option<Self> {
        let (name, sample, root) = match name {
            "var" => ("pg_numeric_var_samp", true, false),
            "var_pop" => ("pg_numeric_var_pop", false, false),
            "stddev" => ("pg_numeric_stddev_samp", true, true),
            "stddev_pop" => ("pg_numeric_stddev_pop", false, true),
            _ => return None,
        };
        Some(Self {
            name,
            sample,
            root,
            signature: Signature::any(3, Volatility::Immutable),
        })
    }

    /// The result of one group, `None` where PostgreSQL's is NULL (no rows; one row for the
    /// sample forms).
    fn compute(
        &self,
        sum: &(BigInt, i64),
        sum2: &(BigInt, i64),
        n: &BigInt,
    ) -> Result<Option<String>> {
        let one = BigInt::from(1);
        if n.is_zero() || (self.sample && n == &one) {
            return Ok(None);
        }
        // N·Σx² − (Σx)², at Σx²'s scale (twice Σx's).
        let scale = sum2.1.max(sum.1 * 2);
        let at = |v: &(BigInt, i64), s: i64| &v.0 * BigInt::from(10u8).pow((s - v.1) as u32);
        let sum_sq = &sum.0 * &sum.0;
        let numerator = n * at(sum2, scale) - at(&(sum_sq, sum.1 * 2), scale);
        if !numerator.is_positive() {
            return Ok(Some("0".to_owned()));
        }
        let denominator = if self.sample { n * (n - &one) } else { n * n };
        let num = (numerator, scale);
        let den = (denominator, 0);
        if !self.root {
            return divide(&num, &den).map(Some);
        }
        let rscale = division_scale(&num, &den);
        let variance: BigDecimal = divide(&num, &den)?.parse().unwrap_or_default();
        let ctx = bigdecimal::Context::default()
            .with_prec(60)
            .unwrap_or_default();
        let root = variance
            .sqrt_with_context(&ctx)
            .unwrap_or_default()
            .with_scale_round(rscale, RoundingMode::HalfUp);
        let (digits, _) = root.into_bigint_and_scale();
        Ok(Some(numeric_text(&digits, rscale)))
    }
}

impl ScalarUDFImpl for PgNumericVariance {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(numeric_text_field(self.name))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (columns, scalar) = exact_args(&args)?;
        let [sums, squares, counts] = &columns[..] else {
            return Err(datafusion::error::DataFusionError::Internal(format!(
                "{} takes a sum, a sum of squares and a count",
                self.name
            )));
        };
        let rows = sums.len();
        let mut out = StringBuilder::with_capacity(rows, rows * 24);
        for ((sum, sum2), n) in sums.iter().zip(squares.iter()).zip(counts.iter()) {
            let value = match (sum, sum2, n) {
                (Some(sum), Some(sum2), Some(n)) => self.compute(sum, sum2, &n.0)?,
                _ => None,
            };
            out.append_option(value);
        }
        numeric_text_result(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(values: &[i64], scale: i64) -> ((BigInt, i64), (BigInt, i64), BigInt) {
        let sum: i64 = values.iter().sum();
        let sum2: i64 = values.iter().map(|v| v * v).sum();
        (
            (BigInt::from(sum), scale),
            (BigInt::from(sum2), scale * 2),
            BigInt::from(values.len()),
        )
    }

    #[test]
    fn matches_postgres() {
        // salary numeric(10,2) of diff_aggregates.slt.
        let salary = [
            12000000, 9500000, 9500000, 7000000, 8200050, 6400000, 5000000,
        ];
        let (s, s2, n) = stats(&salary, 2);
        let stddev = PgNumericVariance::for_aggregate("stddev").unwrap();
        assert_eq!(
            stddev.compute(&s, &s2, &n).unwrap().unwrap(),
            "23357.46949025"
        );
        let var_pop = PgNumericVariance::for_aggregate("var_pop").unwrap();
        assert_eq!(
            var_pop.compute(&s, &s2, &n).unwrap().unwrap(),
            "467632612.27551020"
        );
        let (s, s2, n) = stats(&[34, 28, 45, 31, 39, 52, 23, 60], 0);
        let var = PgNumericVariance::for_aggregate("var").unwrap();
        assert_eq!(
            var.compute(&s, &s2, &n).unwrap().unwrap(),
            "158.8571428571428571"
        );
        let one = stats(&[5], 0);
        assert_eq!(var.compute(&one.0, &one.1, &one.2).unwrap(), None);
    }
}
