//! PostgreSQL's ordered-set aggregates: `percentile_cont(f)`, `percentile_disc(f)` and `mode()`
//! `WITHIN GROUP (ORDER BY x)`.
//!
//! DataFusion has `percentile_cont` only, and returns it in the input's type
//! (`82000.50` for a numeric column); PostgreSQL computes it in double precision (`82000.5`).
//! `percentile_disc` (the first value at or past the fraction, in the input's type) and `mode`
//! (the most frequent value, the first in sort order on ties) are missing. Each collects the
//! group's non-NULL values and picks from them sorted in the WITHIN GROUP direction; an array of
//! fractions (`percentile_cont(array[0.25, 0.5])`) gives an array.

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::data_error;

/// Registers the ordered-set aggregates (replacing DataFusion's `percentile_cont`).
pub fn register(ctx: &SessionContext) {
    for kind in [Kind::Cont, Kind::Disc, Kind::Mode] {
        ctx.register_udaf(AggregateUDF::new_from_impl(OrderedSet {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Cont,
    Disc,
    Mode,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct OrderedSet {
    kind: Kind,
    signature: Signature,
}

impl AggregateUDFImpl for OrderedSet {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Cont => "percentile_cont",
            Kind::Disc => "percentile_disc",
            Kind::Mode => "mode",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let arity = if self.kind == Kind::Mode { 1 } else { 2 };
        if arg_types.len() != arity {
            return Err(data_error(
                "42883",
                format!(
                    "function {}() WITHIN GROUP with {} arguments is not supported",
                    self.name(),
                    arg_types.len().saturating_sub(1)
                ),
            ));
        }
        if arg_types.len() == 2
            && !arg_types[1].is_numeric()
            && !arg_types[1].is_null()
            && !is_list(&arg_types[1])
        {
            return Err(data_error(
                "0A000",
                format!(
                    "{}() takes a fraction or an array of fractions",
                    self.name()
                ),
            ));
        }
        let fraction = match arg_types.get(1) {
            Some(t) if is_list(t) => fractions_type(),
            _ => DataType::Float64,
        };
        Ok(match self.kind {
            Kind::Cont => vec![DataType::Float64, fraction],
            Kind::Disc => vec![arg_types[0].clone(), fraction],
            Kind::Mode => vec![arg_types[0].clone()],
        })
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let value = match self.kind {
            Kind::Cont => DataType::Float64,
            _ => arg_types[0].clone(),
        };
        Ok(match arg_types.get(1) {
            Some(t) if is_list(t) => DataType::List(Arc::new(Field::new_list_field(value, true))),
            _ => value,
        })
    }
    fn supports_within_group_clause(&self) -> bool {
        true
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let item = Field::new_list_field(args.input_fields[0].data_type().clone(), true);
        Ok(vec![Arc::new(Field::new(
            format!("{}_values", args.name),
            DataType::List(Arc::new(item)),
            true,
        ))])
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fractions = match self.kind {
            Kind::Mode => vec![0.0],
            _ => {
                let empty = RecordBatch::new_empty(Arc::new(Schema::empty()));
                let constant = match args.exprs[1].evaluate(&empty) {
                    Ok(ColumnarValue::Scalar(s)) => s,
                    _ => {
                        return Err(data_error(
                            "0A000",
                            "a percentile fraction must be a constant",
                        ));
                    }
                };
                let values: Vec<ScalarValue> = match &constant {
                    ScalarValue::List(list) => {
                        ScalarValue::convert_array_to_scalar_vec(list.as_ref())?
                            .into_iter()
                            .flatten()
                            .flatten()
                            .collect()
                    }
                    other => vec![other.clone()],
                };
                let mut fractions = Vec::with_capacity(values.len());
                for v in values {
                    let f = match v.cast_to(&DataType::Float64) {
                        Ok(ScalarValue::Float64(Some(f))) => f,
                        _ => f64::NAN,
                    };
                    if !(0.0..=1.0).contains(&f) {
                        return Err(data_error(
                            "22003",
                            format!("percentile value {f} is not between 0 and 1"),
                        ));
                    }
                    fractions.push(f);
                }
                fractions
            }
        };
        Ok(Box::new(Values {
            kind: self.kind,
            fractions,
            descending: args.order_bys.first().is_some_and(|s| s.options.descending),
            data_type: args.expr_fields[0].data_type().clone(),
            result_type: args.return_field.data_type().clone(),
            values: Vec::new(),
        }))
    }
}

fn is_list(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    )
}

fn fractions_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
}

/// The non-NULL values of one group.
#[derive(Debug)]
struct Values {
    kind: Kind,
    /// The fractions asked for (one unless the result is an array).
    fractions: Vec<f64>,
    descending: bool,
    data_type: DataType,
    result_type: DataType,
    values: Vec<ScalarValue>,
}

impl Values {
    fn push_all(&mut self, array: &dyn Array) -> Result<()> {
        for i in 0..array.len() {
            if array.is_valid(i) {
                self.values.push(ScalarValue::try_from_array(array, i)?);
            }
        }
        Ok(())
    }
}

/// The result of an ordered-set aggregate over `sorted` values (non-empty).
fn pick(kind: Kind, fraction: f64, sorted: &[ScalarValue]) -> Result<ScalarValue> {
    let n = sorted.len();
    Ok(match kind {
        Kind::Cont => {
            let value = |i: usize| match &sorted[i] {
                ScalarValue::Float64(Some(f)) => *f,
                _ => f64::NAN,
            };
            let row = fraction * (n - 1) as f64;
            let (lo, hi) = (row.floor() as usize, row.ceil() as usize);
            let v = if lo == hi {
                value(lo)
            } else {
                value(lo) + (row - lo as f64) * (value(hi) - value(lo))
            };
            ScalarValue::Float64(Some(v))
        }
        Kind::Disc => {
            let k = ((fraction * n as f64).ceil() as usize).clamp(1, n);
            sorted[k - 1].clone()
        }
        Kind::Mode => {
            let (mut best, mut best_len) = (0, 0);
            let mut start = 0;
            for i in 1..=n {
                if i == n || sorted[i] != sorted[start] {
                    if i - start > best_len {
                        (best, best_len) = (start, i - start);
                    }
                    start = i;
                }
            }
            sorted[best].clone()
        }
    })
}

impl Accumulator for Values {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.push_all(values[0].as_ref())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for list in lists.iter().flatten() {
            self.push_all(list.as_ref())?;
        }
        Ok(())
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::List(ScalarValue::new_list_nullable(
            &self.values,
            &self.data_type,
        ))])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.values.is_empty() {
            return ScalarValue::try_from(&self.result_type);
        }
        let mut sorted = self.values.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
        if self.descending {
            sorted.reverse();
        }
        if let DataType::List(item) = &self.result_type {
            let picks = self
                .fractions
                .iter()
                .map(|f| pick(self.kind, *f, &sorted))
                .collect::<Result<Vec<_>>>()?;
            return Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &picks,
                item.data_type(),
            )));
        }
        pick(self.kind, self.fractions[0], &sorted)
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.iter().map(ScalarValue::size).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(v: &[f64]) -> Vec<ScalarValue> {
        v.iter().map(|f| ScalarValue::Float64(Some(*f))).collect()
    }

    #[test]
    fn picks_like_postgres() {
        let v = floats(&[23.0, 28.0, 31.0, 34.0, 39.0, 45.0, 52.0, 60.0]);
        assert_eq!(
            pick(Kind::Cont, 0.5, &v).unwrap(),
            ScalarValue::Float64(Some(36.5))
        );
        assert_eq!(
            pick(Kind::Cont, 0.25, &v).unwrap(),
            ScalarValue::Float64(Some(30.25))
        );
        assert_eq!(
            pick(Kind::Disc, 0.9, &v).unwrap(),
            ScalarValue::Float64(Some(60.0))
        );
        assert_eq!(
            pick(Kind::Disc, 0.0, &v).unwrap(),
            ScalarValue::Float64(Some(23.0))
        );
        let m = floats(&[1.0, 2.0, 2.0, 3.0, 3.0]);
        assert_eq!(
            pick(Kind::Mode, 0.0, &m).unwrap(),
            ScalarValue::Float64(Some(2.0))
        );
    }
}
