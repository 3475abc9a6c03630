//! PostgreSQL's array functions where DataFusion's differ or are missing.
//!
//! - `array_remove` / `array_replace` act on every matching element in PostgreSQL; DataFusion's
//!   functions of those names act on the first only, so the names go to DataFusion's
//!   `array_remove_all` / `array_replace_all` (`array_remove(a, NULL)` removes the NULLs).
//! - `array_length`, `array_ndims` and `array_dims` describe an empty array as having no
//!   dimensions (NULL), where DataFusion answers 0 / 1; `array_dims` is text (`[1:2][1:3]`), not
//!   a list of lengths.
//! - `array_has` (what `x = ANY(a)` and `x <> ALL(a)` become, `sql/array_comparison.rs`) has
//!   SQL's three values: an element not found in an array holding NULLs, or a NULL looked for
//!   in a non-empty array, is NULL, not false.
//! - `trim_array` and `array_fill` (one dimension; `sql/operators.rs` nests calls for more)
//!   are tarn's.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, GenericListArray, UInt32Array, new_empty_array,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::{cast, concat, take};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ArrayFunctionArgument, ArrayFunctionSignature, ColumnarValue, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::{data_error, session_fn};

/// PostgreSQL's limit on the number of elements of an array (`MaxArraySize`).
const MAX_ARRAY_SIZE: i64 = 134_217_727;

/// Registers the array functions of the module docs.
pub fn register(ctx: &SessionContext) {
    use datafusion::functions_nested::{remove, replace};
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayRemove {
        inner: remove::array_remove_all_udf(),
    }));
    ctx.register_udf(ScalarUDF::new_from_impl(Renamed::new(
        "array_replace",
        replace::array_replace_all_udf(),
    )));
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayHas::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(TrimArray::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayFill::new()));

    let immutable = Volatility::Immutable;
    let array_arg = |arguments| {
        TypeSignature::ArraySignature(ArrayFunctionSignature::Array {
            arguments,
            array_coercion: None,
        })
    };
    let length_signature = Signature::one_of(
        vec![
            array_arg(vec![ArrayFunctionArgument::Array]),
            array_arg(vec![
                ArrayFunctionArgument::Array,
                ArrayFunctionArgument::Index,
            ]),
        ],
        immutable,
    );
    ctx.register_udf(session_fn(
        "array_length",
        length_signature,
        DataType::Int32,
        |args| {
            let dim = match args.get(1) {
                None => Some(1),
                Some(d) => integer(d),
            };
            let length = match (dims(&args[0]), dim) {
                (Some(dims), Some(d)) if d >= 1 => dims.get(d as usize - 1).map(|n| *n as i32),
                _ => None,
            };
            Ok(ScalarValue::Int32(length))
        },
    ));
    let one_array = || Signature::arrays(1, None, immutable);
    ctx.register_udf(session_fn(
        "array_ndims",
        one_array(),
        DataType::Int32,
        |args| {
            Ok(ScalarValue::Int32(
                dims(&args[0])
                    .filter(|d| !d.is_empty())
                    .map(|d| d.len() as i32),
            ))
        },
    ));
    ctx.register_udf(session_fn(
        "array_dims",
        one_array(),
        DataType::Utf8,
        |args| {
            Ok(ScalarValue::Utf8(
                dims(&args[0])
                    .filter(|d| !d.is_empty())
                    .map(|d| d.iter().map(|n| format!("[1:{n}]")).collect()),
            ))
        },
    ));
}

/// An integer argument as i64 (NULL and non-integers: None).
fn integer(value: &ScalarValue) -> Option<i64> {
    match value.cast_to(&DataType::Int64).ok()? {
        ScalarValue::Int64(v) => v,
        _ => None,
    }
}

/// The elements of row `row` of a list array (None for a NULL array or a non-list).
fn list_row(array: &dyn Array, row: usize) -> Option<ArrayRef> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::List(_) => Some(array.as_list::<i32>().value(row)),
        DataType::LargeList(_) => Some(array.as_list::<i64>().value(row)),
        DataType::FixedSizeList(..) => Some(array.as_fixed_size_list().value(row)),
        _ => None,
    }
}

/// The lengths of an array value's dimensions, as PostgreSQL counts them: none for an empty
/// array, the first element's for the inner ones. None for NULL.
fn dims(value: &ScalarValue) -> Option<Vec<usize>> {
    let array = value.to_array().ok()?;
    let mut elements = list_row(array.as_ref(), 0)?;
    let mut out = Vec::new();
    while !elements.is_empty() {
        out.push(elements.len());
        match list_row(elements.as_ref(), 0) {
            Some(inner) => elements = inner,
            None => break,
        }
    }
    Some(out)
}

/// A list array of `rows` (None: a NULL array) whose elements are of `field`.
fn list_of(field: FieldRef, rows: Vec<Option<ArrayRef>>) -> Result<ArrayRef> {
    let lengths: Vec<usize> = rows
        .iter()
        .map(|r| r.as_ref().map_or(0, |a| a.len()))
        .collect();
    let parts: Vec<&dyn Array> = rows.iter().flatten().map(|a| a.as_ref()).collect();
    let values = if parts.is_empty() {
        new_empty_array(field.data_type())
    } else {
        concat(&parts)?
    };
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<bool>>());
    Ok(Arc::new(GenericListArray::<i32>::try_new(
        field,
        OffsetBuffer::from_lengths(lengths),
        values,
        Some(nulls),
    )?))
}

/// The element field of a list type (`Null`'s: a nullable Null field).
fn element_field(ty: &DataType) -> FieldRef {
    match ty {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => Arc::clone(f),
        other => Arc::new(Field::new_list_field(other.clone(), true)),
    }
}

/// DataFusion's function `inner` under PostgreSQL's `name`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Renamed {
    name: &'static str,
    inner: Arc<ScalarUDF>,
}

impl Renamed {
    fn new(name: &'static str, inner: Arc<ScalarUDF>) -> Self {
        Self { name, inner }
    }
}

impl ScalarUDFImpl for Renamed {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }
}

/// `array_remove(a, x)`: DataFusion's `array_remove_all`, except that `x` NULL removes the NULL
/// elements (PostgreSQL compares with IS NOT DISTINCT FROM) instead of answering NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayRemove {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for ArrayRemove {
    fn name(&self) -> &str {
        "array_remove"
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = args.args[0].to_array(rows)?;
        let needle = args.args[1].to_array(rows)?;
        if needle.null_count() == 0 {
            return self.inner.invoke_with_args(args);
        }
        let removed = self.inner.invoke_with_args(args)?.to_array(rows)?;
        let field = element_field(removed.data_type());
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            out.push(if needle.is_null(row) {
                match list_row(arrays.as_ref(), row) {
                    Some(elements) => {
                        let keep = datafusion::arrow::compute::is_not_null(&elements)?;
                        Some(datafusion::arrow::compute::filter(&elements, &keep)?)
                    }
                    None => None,
                }
            } else {
                list_row(removed.as_ref(), row)
            });
        }
        let list = list_of(field, out)?;
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &list, 0,
            )?));
        }
        Ok(ColumnarValue::Array(list))
    }
}

/// `array_has(a, x)` with SQL's three values (see the module docs).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayHas {
    inner: Arc<ScalarUDF>,
    aliases: Vec<String>,
}

impl ArrayHas {
    fn new() -> Self {
        let inner = datafusion::functions_nested::array_has::array_has_udf();
        let aliases = inner.aliases().to_vec();
        Self { inner, aliases }
    }
}

impl ScalarUDFImpl for ArrayHas {
    fn name(&self) -> &str {
        "array_has"
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let haystack = args.args[0].to_array(rows)?;
        let needle = args.args[1].to_array(rows)?;
        let found = if haystack.data_type().is_null() {
            BooleanArray::new_null(rows)
        } else {
            let found = self.inner.invoke_with_args(args)?.to_array(rows)?;
            found.as_boolean().clone()
        };
        let out: BooleanArray = (0..rows)
            .map(|row| {
                let elements = list_row(haystack.as_ref(), row)?;
                if elements.is_empty() {
                    Some(false)
                } else if found.is_valid(row) && found.value(row) {
                    Some(true)
                } else if needle.is_null(row) || elements.null_count() > 0 {
                    None
                } else {
                    Some(false)
                }
            })
            .collect();
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// `trim_array(a, n)`: `a` without its last `n` elements (2202E unless 0 <= n <= length).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TrimArray {
    signature: Signature,
}

impl TrimArray {
    fn new() -> Self {
        Self {
            signature: Signature::array_and_index(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TrimArray {
    fn name(&self) -> &str {
        "trim_array"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(element_field(&arg_types[0])))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = args.args[0].to_array(rows)?;
        let counts = cast(&args.args[1].to_array(rows)?, &DataType::Int64)?;
        let counts = counts.as_primitive::<Int64Type>();
        let field = element_field(arrays.data_type());
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let (Some(elements), true) = (list_row(arrays.as_ref(), row), counts.is_valid(row))
            else {
                out.push(None);
                continue;
            };
            let n = counts.value(row);
            let len = elements.len();
            if n < 0 || n > len as i64 {
                return Err(data_error(
                    "2202E",
                    format!("number of elements to trim must be between 0 and {len}"),
                ));
            }
            out.push(Some(elements.slice(0, len - n as usize)));
        }
        let list = list_of(field, out)?;
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &list, 0,
            )?));
        }
        Ok(ColumnarValue::Array(list))
    }
}

/// `array_fill(value, dims [, lower_bounds])`: an array of `dims[1]` copies of `value`. One
/// dimension (`sql/operators.rs` nests calls for more), lower bound 1: tarn's arrays have no
/// others.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayFill {
    signature: Signature,
}

impl ArrayFill {
    fn new() -> Self {
        Self {
            signature: Signature::one_of(
                vec![TypeSignature::Any(2), TypeSignature::Any(3)],
                Volatility::Immutable,
            ),
        }
    }
}

/// The integer elements of a dimension or bound array (22004 for a NULL array or element).
fn bounds(array: &dyn Array, row: usize) -> Result<Vec<i64>> {
    let null_error = || data_error("22004", "dimension array or low bound array cannot be null");
    let elements = list_row(array, row).ok_or_else(null_error)?;
    let elements = cast(&elements, &DataType::Int64)?;
    let elements = elements.as_primitive::<Int64Type>();
    if elements.null_count() > 0 {
        return Err(data_error("22004", "dimension values cannot be null"));
    }
    Ok(elements.values().to_vec())
}

impl ScalarUDFImpl for ArrayFill {
    fn name(&self) -> &str {
        "array_fill"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            arg_types[0].clone(),
            true,
        ))))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let values = args.args[0].to_array(rows)?;
        let dims = args.args[1].to_array(rows)?;
        let lower = args.args.get(2).map(|a| a.to_array(rows)).transpose()?;
        let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let dims = bounds(dims.as_ref(), row)?;
            if let Some(lower) = &lower {
                let lower = bounds(lower.as_ref(), row)?;
                if lower.len() != dims.len() {
                    return Err(data_error("2202E", "wrong number of array subscripts"));
                }
                if lower.iter().any(|b| *b != 1) {
                    return Err(data_error(
                        "0A000",
                        "array_fill with lower bounds other than 1 is not supported",
                    ));
                }
            }
            let length = match dims.as_slice() {
                [] => 0,
                [n] => *n,
                _ => {
                    return Err(data_error(
                        "0A000",
                        "array_fill of more than one dimension is not supported",
                    ));
                }
            };
            if !(0..=MAX_ARRAY_SIZE).contains(&length) {
                return Err(data_error(
                    "54000",
                    format!("array size exceeds the maximum allowed ({MAX_ARRAY_SIZE})"),
                ));
            }
            // The inner fill of `array_fill(v, ARRAY[2, 0])` (`sql/operators.rs`) is empty: so
            // is the whole array, which has no elements.
            let length = match list_row(values.as_ref(), row) {
                Some(inner) if inner.is_empty() => 0,
                _ => length,
            };
            let indices = UInt32Array::from(vec![row as u32; length as usize]);
            out.push(Some(take(values.as_ref(), &indices, None)?));
        }
        let list = list_of(field, out)?;
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &list, 0,
            )?));
        }
        Ok(ColumnarValue::Array(list))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(values: &[Option<i32>]) -> ScalarValue {
        let values: Vec<ScalarValue> = values.iter().map(|v| ScalarValue::Int32(*v)).collect();
        ScalarValue::List(ScalarValue::new_list_nullable(&values, &DataType::Int32))
    }

    #[test]
    fn empty_arrays_have_no_dimensions() {
        assert_eq!(dims(&list(&[Some(1), None, Some(3)])), Some(vec![3]));
        assert_eq!(dims(&list(&[])), Some(vec![]));
        assert_eq!(dims(&ScalarValue::Null), None);
        let inner = ScalarValue::new_list_nullable(
            &[list(&[Some(1), Some(2)]), list(&[Some(3), Some(4)])],
            &list(&[]).data_type(),
        );
        assert_eq!(dims(&ScalarValue::List(inner)), Some(vec![2, 2]));
    }
}
