//! `sum` of `real` is `real`, as in PostgreSQL (`sum(float4) → float4`).
//!
//! DataFusion's `sum` widens a Float32 input to Float64 and returns a double, so `sum(rate)`
//! over real values printed every digit of the wider type (`4.650000013411045` for
//! PostgreSQL's `4.65`). This is DataFusion's `sum` with one change: its signature takes a
//! Float32 as it is, ahead of DataFusion's own coercions. Its accumulators are DataFusion's own over Float64 — the input cast up on the way in,
//! the result cast back down to Float32 on the way out (PostgreSQL adds in float4; the result
//! rounded to float4 from an exact double sum is the same or closer). Every other input type
//! goes to DataFusion's `sum` unchanged.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::common::types::logical_float32;
use datafusion::error::Result;
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Coercion, Documentation, EmitTo,
    GroupsAccumulator, ReversedUDAF, SetMonotonicity, Signature, TypeSignature, TypeSignatureClass,
};
use datafusion::prelude::SessionContext;

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgSum {
    inner: Arc<AggregateUDF>,
    /// DataFusion's signature for `sum`, after one that takes a Float32 as it is (DataFusion's
    /// coerces it to Float64).
    signature: Signature,
}

impl PgSum {
    fn new() -> Self {
        let inner = sum_udaf();
        // Exactly a Float32: an `Exact` signature would take any type coercible to Float32,
        // summing int2 and int4 columns as reals.
        let mut accepted = vec![TypeSignature::Coercible(vec![Coercion::new_exact(
            TypeSignatureClass::Native(logical_float32()),
        )])];
        match &inner.signature().type_signature {
            TypeSignature::OneOf(others) => accepted.extend(others.iter().cloned()),
            other => accepted.push(other.clone()),
        }
        let signature = Signature::one_of(accepted, inner.signature().volatility);
        Self { inner, signature }
    }
}

fn is_real(fields: &[FieldRef]) -> bool {
    fields.first().map(|f| f.data_type()) == Some(&DataType::Float32)
}

/// A field like `field` typed Float64: what DataFusion's accumulators are built for.
fn widened(field: &FieldRef) -> FieldRef {
    Arc::new(Field::new(
        field.name(),
        DataType::Float64,
        field.is_nullable(),
    ))
}

impl PgSum {
    /// Builds one of DataFusion's accumulators for the widened (Float64) form of `args`.
    fn widened<T>(
        &self,
        args: &AccumulatorArgs,
        build: impl FnOnce(&dyn AggregateUDFImpl, AccumulatorArgs) -> Result<T>,
    ) -> Result<T> {
        let expr_fields: Vec<FieldRef> = args.expr_fields.iter().map(widened).collect();
        let args = AccumulatorArgs {
            return_field: widened(&args.return_field),
            expr_fields: &expr_fields,
            ..*args
        };
        build(self.inner.inner().as_ref(), args)
    }
}

impl AggregateUDFImpl for PgSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Float32] => Ok(DataType::Float32),
            _ => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if !is_real(args.expr_fields) {
            return self.inner.accumulator(args);
        }
        let inner = self.widened(&args, |sum, args| sum.accumulator(args))?;
        Ok(Box::new(RealAccumulator(inner)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if !is_real(args.input_fields) {
            return self.inner.state_fields(args);
        }
        let input_fields: Vec<FieldRef> = args.input_fields.iter().map(widened).collect();
        self.inner.state_fields(StateFieldsArgs {
            input_fields: &input_fields,
            return_field: widened(&args.return_field),
            ..args
        })
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        if !is_real(args.expr_fields) {
            return self.inner.create_groups_accumulator(args);
        }
        let inner = self.widened(&args, |sum, args| sum.create_groups_accumulator(args))?;
        Ok(Box::new(RealGroupsAccumulator(inner)))
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if !is_real(args.expr_fields) {
            return self.inner.create_sliding_accumulator(args);
        }
        let inner = self.widened(&args, |sum, args| sum.create_sliding_accumulator(args))?;
        Ok(Box::new(RealAccumulator(inner)))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.inner().set_monotonicity(data_type)
    }
}

/// `values` with a Float32 input column as Float64.
fn widen_input(values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
    values
        .iter()
        .map(|v| match v.data_type() {
            DataType::Float32 => Ok(cast(v, &DataType::Float64)?),
            _ => Ok(Arc::clone(v)),
        })
        .collect()
}

#[derive(Debug)]
struct RealAccumulator(Box<dyn Accumulator>);

impl Accumulator for RealAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.update_batch(&widen_input(values)?)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.retract_batch(&widen_input(values)?)
    }

    fn supports_retract_batch(&self) -> bool {
        self.0.supports_retract_batch()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.0.merge_batch(states)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.0.evaluate()?.cast_to(&DataType::Float32)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.0.state()
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}

struct RealGroupsAccumulator(Box<dyn GroupsAccumulator>);

impl GroupsAccumulator for RealGroupsAccumulator {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.0.update_batch(
            &widen_input(values)?,
            group_indices,
            opt_filter,
            total_num_groups,
        )
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(cast(&self.0.evaluate(emit_to)?, &DataType::Float32)?)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.0.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.0.merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.0.convert_to_state(&widen_input(values)?, opt_filter)
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}

/// Replaces `sum` with the one that keeps `real` (see the module docs).
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::from(PgSum::new()));
}
