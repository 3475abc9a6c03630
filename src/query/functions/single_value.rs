//! `pg_single_value(x)`: the aggregate behind PostgreSQL's non-aggregated scalar subqueries.
//!
//! PostgreSQL answers `(SELECT d.x FROM d WHERE d.k = o.k)` with the value of the one row, NULL
//! when there is none, and fails with 21000 when there is a second. DataFusion plans a
//! correlated scalar subquery only when it aggregates, so tarn's SQL layer wraps such a select
//! item in this aggregate (`sql/single_row.rs`), whose result is exactly PostgreSQL's: psql's
//! `\d`, SQLAlchemy's column reflection and pgjdbc's type lookup all send such subqueries.

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

pub const NAME: &str = "pg_single_value";

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgSingleValue {
    signature: Signature,
}

impl AggregateUDFImpl for PgSingleValue {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(SingleValue {
            value: ScalarValue::try_from(args.return_field.data_type())?,
            rows: 0,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Field::new(
                format_state_name(args.name, "value"),
                args.return_field.data_type().clone(),
                true,
            )
            .into(),
            Field::new(format_state_name(args.name, "rows"), DataType::Int64, true).into(),
        ])
    }
}

#[derive(Debug)]
struct SingleValue {
    value: ScalarValue,
    rows: i64,
}

impl SingleValue {
    fn take(&mut self, value: ScalarValue, rows: i64) -> Result<()> {
        self.rows += rows;
        if self.rows > 1 {
            return Err(super::data_error(
                "21000",
                "more than one row returned by a subquery used as an expression",
            ));
        }
        self.value = value;
        Ok(())
    }
}

impl Accumulator for SingleValue {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = &values[0];
        for i in 0..values.len() {
            self.take(ScalarValue::try_from_array(values, i)?, 1)?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let rows = states[1].as_primitive::<Int64Type>();
        for i in 0..states[0].len() {
            let n = rows.value(i);
            if n > 0 {
                self.take(ScalarValue::try_from_array(&states[0], i)?, n)?;
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size() - std::mem::size_of_val(&self.value)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            self.value.clone(),
            ScalarValue::Int64(Some(self.rows)),
        ])
    }
}

pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::from(PgSingleValue {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}
