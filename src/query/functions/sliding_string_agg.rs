//! `string_agg` over a sliding window frame (`string_agg(x, ',') OVER (ORDER BY id ROWS 2
//! PRECEDING)`), which PostgreSQL answers and DataFusion refuses: its accumulators cannot take
//! rows back out when they leave the frame.
//!
//! This is DataFusion's `string_agg` with a sliding accumulator of its own: the frame's values
//! in a queue, rows appended as they enter and dropped from the front as they leave, joined
//! with the delimiter when the window asks. Values join in the frame's order (the window's
//! ORDER BY); a call with DISTINCT stays DataFusion's (refused over a sliding frame).

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{ScalarValue, not_impl_err};
use datafusion::error::Result;
use datafusion::functions_aggregate::string_agg::string_agg_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, GroupsAccumulator, ReversedUDAF,
    Signature,
};
use datafusion::physical_expr::expressions::Literal;
use datafusion::prelude::SessionContext;

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgStringAgg {
    inner: Arc<AggregateUDF>,
}

impl AggregateUDFImpl for PgStringAgg {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return self.inner.create_sliding_accumulator(args);
        }
        Ok(Box::new(SlidingStringAgg {
            delimiter: delimiter(&args)?,
            frame: VecDeque::new(),
            bytes: 0,
        }))
    }

    /// Not reversed: DataFusion's reversed form would be its own `string_agg`, which does not
    /// slide.
    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::NotSupported
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        self.inner.create_groups_accumulator(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// The delimiter: `string_agg`'s second argument, a literal (NULL joins with nothing).
fn delimiter(args: &AccumulatorArgs) -> Result<String> {
    let Some(literal) = args.exprs.get(1).and_then(|e| e.downcast_ref::<Literal>()) else {
        return not_impl_err!("string_agg's delimiter must be a literal");
    };
    match literal.value().try_as_str() {
        Some(text) => Ok(text.unwrap_or_default().to_owned()),
        None if literal.value().is_null() => Ok(String::new()),
        None => not_impl_err!("string_agg's delimiter must be text"),
    }
}

/// The values of the rows in the window's frame, oldest first.
#[derive(Debug)]
struct SlidingStringAgg {
    delimiter: String,
    frame: VecDeque<Option<String>>,
    /// Bytes held by the frame's values.
    bytes: usize,
}

fn texts(values: &ArrayRef) -> Result<Vec<Option<String>>> {
    let values = cast(values, &DataType::Utf8)?;
    let values = values
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>();
    Ok(values
        .map(|a| a.iter().map(|v| v.map(str::to_owned)).collect())
        .unwrap_or_default())
}

impl Accumulator for SlidingStringAgg {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for value in texts(&values[0])? {
            self.bytes += value.as_ref().map_or(0, String::len);
            self.frame.push_back(value);
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for _ in 0..values[0].len() {
            if let Some(Some(value)) = self.frame.pop_front() {
                self.bytes -= value.len();
            }
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut present = self.frame.iter().flatten().peekable();
        if present.peek().is_none() {
            return Ok(ScalarValue::LargeUtf8(None));
        }
        let joined: Vec<&str> = present.map(String::as_str).collect();
        Ok(ScalarValue::LargeUtf8(Some(joined.join(&self.delimiter))))
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let joined = self.evaluate()?;
        Ok(vec![joined])
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        not_impl_err!("a sliding string_agg is never merged")
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.frame.capacity() * std::mem::size_of::<Option<String>>()
            + self.bytes
    }
}

/// Replaces `string_agg` with the one that also slides (see the module docs).
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::from(PgStringAgg {
        inner: string_agg_udaf(),
    }));
}
