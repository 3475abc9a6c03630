//! Multidimensional arrays (`array[[1, 2], [3, 4]]`, Arrow lists of lists) on the wire.
//!
//! arrow-pg encodes one-dimensional lists only. PostgreSQL has no array-of-arrays type: a
//! two-dimensional `integer[]` is still `integer[]`, so such a column is described with the
//! array type of its innermost elements ([`flat_type`]) and, in text format, sent as
//! PostgreSQL's array text (`{{1,2},{3,4}}`, [`text`]). PostgreSQL's arrays are rectangular:
//! sub-arrays of different lengths (a Paimon `array<array<int>>` may hold them, DataFusion's
//! `array[[1, 2], [3]]` too, where PostgreSQL's constructor fails with 2202E) cannot be sent
//! (0A000). The binary format of such arrays is not written (0A000).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};

use super::error::PgError;
use crate::query::pg_format;

/// The element field of a list type.
fn element(ty: &DataType) -> Option<&FieldRef> {
    match ty {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => Some(f),
        _ => None,
    }
}

/// Whether `ty` is a list of lists whose innermost elements tarn can print.
pub fn is_nested(ty: &DataType) -> bool {
    let Some(inner) = element(ty).and_then(|f| element(f.data_type())) else {
        return false;
    };
    let mut innermost = inner;
    while let Some(next) = element(innermost.data_type()) {
        innermost = next;
    }
    printable(innermost.data_type())
}

fn printable(ty: &DataType) -> bool {
    ty.is_numeric()
        || matches!(
            ty,
            DataType::Boolean
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Date32
                | DataType::Timestamp(..)
        )
}

/// `field` with a list of lists described as a list of its innermost elements.
pub fn flat_field(field: &Field) -> Field {
    if !is_nested(field.data_type()) {
        return field.clone();
    }
    let mut innermost = element(field.data_type()).expect("a list");
    while let Some(next) = element(innermost.data_type()) {
        innermost = next;
    }
    field
        .clone()
        .with_data_type(DataType::List(Arc::clone(innermost)))
}

/// PostgreSQL's text of each array of a list-of-lists column.
pub fn text(array: &ArrayRef) -> Result<ArrayRef, PgError> {
    let (texts, _) = render(array)?;
    Ok(texts)
}

/// The text of each value of `array` (lists as `{...}`, NULL elements as `NULL`), and the
/// length of each row's list (None for scalars and NULL rows).
fn render(array: &ArrayRef) -> Result<(ArrayRef, Vec<Option<usize>>), PgError> {
    let (offsets, values): (Vec<usize>, ArrayRef) = match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let o = l.offsets().iter().map(|o| *o as usize).collect();
            (o, Arc::clone(l.values()))
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let o = l.offsets().iter().map(|o| *o as usize).collect();
            (o, Arc::clone(l.values()))
        }
        DataType::FixedSizeList(_, n) => {
            let l = array.as_fixed_size_list();
            let n = *n as usize;
            let o = (0..=l.len()).map(|i| l.offset() * n + i * n).collect();
            (o, Arc::clone(l.values()))
        }
        _ => return Ok((scalar_text(array)?, vec![None; array.len()])),
    };
    let (inner, inner_lengths) = render(&values)?;
    let inner = inner.as_string::<i32>();
    let mut out = StringBuilder::new();
    let mut lengths = Vec::with_capacity(array.len());
    for row in 0..array.len() {
        if array.is_null(row) {
            out.append_null();
            lengths.push(None);
            continue;
        }
        let range = offsets[row]..offsets[row + 1];
        let sub: Vec<Option<usize>> = range.clone().map(|i| inner_lengths[i]).collect();
        if sub.iter().any(Option::is_some) && sub.windows(2).any(|w| w[0] != w[1]) {
            return Err(PgError::new(
                "0A000",
                "a multidimensional array whose sub-arrays differ in length cannot be sent to \
                 PostgreSQL clients",
            ));
        }
        let items: Vec<&str> = range
            .map(|i| {
                if inner.is_null(i) {
                    "NULL"
                } else {
                    inner.value(i)
                }
            })
            .collect();
        out.append_value(format!("{{{}}}", items.join(",")));
        lengths.push(Some(offsets[row + 1] - offsets[row]));
    }
    Ok((Arc::new(out.finish()), lengths))
}

/// Array element text of scalar values: PostgreSQL's output, strings quoted where its array
/// input would misread them.
fn scalar_text(array: &ArrayRef) -> Result<ArrayRef, PgError> {
    let text = match array.data_type() {
        DataType::Boolean => pg_format::text_column(array, |a, i| {
            if a.as_boolean().value(i) { "t" } else { "f" }.to_owned()
        }),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let utf8 = datafusion::arrow::compute::cast(array, &DataType::Utf8)
                .map_err(PgError::internal)?;
            pg_format::text_column(&utf8, |a, i| quote(a.as_string::<i32>().value(i)))
        }
        _ => {
            let text = pg_format::pg_text(array).map_err(PgError::internal)?;
            datafusion::arrow::compute::cast(&text, &DataType::Utf8).map_err(PgError::internal)?
        }
    };
    Ok(text)
}

/// An element as PostgreSQL's array output writes it: in double quotes when empty, `NULL`,
/// or holding braces, commas, quotes, backslashes or white space.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.eq_ignore_ascii_case("null")
        && !s
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if plain {
        return s.to_owned();
    }
    let escaped = s.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::ListArray;
    use datafusion::arrow::datatypes::Int32Type;

    /// Rows of a two-dimensional int4 array column (None: a NULL row or sub-array).
    type Rows = Vec<Option<Vec<Option<Vec<Option<i32>>>>>>;

    fn matrix(rows: Rows) -> ArrayRef {
        let inner_field = Arc::new(Field::new_list_field(DataType::Int32, true));
        let mut flat = vec![];
        let mut outer_lengths = vec![];
        let mut valid = vec![];
        for r in &rows {
            valid.push(r.is_some());
            let r = r.clone().unwrap_or_default();
            outer_lengths.push(r.len());
            flat.extend(r);
        }
        let inner = ListArray::from_iter_primitive::<Int32Type, _, _>(flat);
        Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::List(inner_field), true)),
            datafusion::arrow::buffer::OffsetBuffer::from_lengths(outer_lengths),
            Arc::new(inner),
            Some(valid.into()),
        ))
    }

    #[test]
    fn prints_postgres_array_text() {
        let m = matrix(vec![
            Some(vec![
                Some(vec![Some(1), Some(2)]),
                Some(vec![Some(3), None]),
            ]),
            None,
        ]);
        assert!(is_nested(m.data_type()));
        let t = text(&m).unwrap();
        let t = t.as_string::<i32>();
        assert_eq!(t.value(0), "{{1,2},{3,NULL}}");
        assert!(t.is_null(1));
        let ragged = matrix(vec![Some(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3)]),
        ])]);
        assert_eq!(text(&ragged).unwrap_err().code, "0A000");
        assert_eq!(quote("a b"), "\"a b\"");
        assert_eq!(quote("x"), "x");
    }
}
