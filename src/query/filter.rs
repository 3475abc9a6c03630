//! WHERE clauses → storage [`Predicate`]s, for the two kinds of pruning that are always safe.
//!
//! Only conditions on partition columns (exact per partition) and on primary-key columns (every
//! version of a row shares its key) reach storage; DataFusion still applies every filter after
//! the merge (the provider reports them as inexact), so a condition on another column is never
//! evaluated against a stale version of a row. A literal is used only when its type is exactly
//! the column's: DataFusion unwraps casts only when that is lossless, anything else is skipped.

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use datafusion::scalar::ScalarValue;

use crate::storage::spec::datum::Datum;
use crate::storage::spec::predicate::{CmpOp, Predicate};
use crate::storage::spec::types::PaimonType;
use crate::storage::{ScanFilter, Table};

/// What of `filters` storage can use to skip partitions and files of `table`.
pub fn scan_filter(table: &Table, filters: &[Expr]) -> ScanFilter {
    let schema = table.schema();
    let partition: Vec<(String, PaimonType)> = schema
        .partition_keys
        .iter()
        .map(|k| (k.clone(), schema.type_of(k).clone()))
        .collect();
    let key: Vec<(String, PaimonType)> = if schema.has_primary_key() {
        schema
            .trimmed_primary_keys()
            .iter()
            .map(|k| (k.clone(), schema.type_of(k).clone()))
            .collect()
    } else {
        Vec::new()
    };
    let collect = |columns: &[(String, PaimonType)]| -> Option<Predicate> {
        if columns.is_empty() {
            return None;
        }
        let preds: Vec<Predicate> = filters
            .iter()
            .filter_map(|f| to_predicate(f, columns))
            .collect();
        match preds.len() {
            0 => None,
            1 => preds.into_iter().next(),
            _ => Some(Predicate::And(preds)),
        }
    };
    ScanFilter {
        partition: collect(&partition),
        key: collect(&key),
    }
}

/// The part of `expr` that only involves `columns`, as a predicate implied by `expr`.
fn to_predicate(expr: &Expr, columns: &[(String, PaimonType)]) -> Option<Predicate> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => {
                let l = to_predicate(left, columns);
                let r = to_predicate(right, columns);
                match (l, r) {
                    (Some(l), Some(r)) => Some(Predicate::And(vec![l, r])),
                    (l, r) => l.or(r),
                }
            }
            Operator::Or => Some(Predicate::Or(vec![
                to_predicate(left, columns)?,
                to_predicate(right, columns)?,
            ])),
            _ => {
                let op = cmp_op(*op)?;
                if let (Some((name, ty)), Some(v)) = (column(left, columns), literal(right)) {
                    return compare(name, ty, op, v);
                }
                if let (Some(v), Some((name, ty))) = (literal(left), column(right, columns)) {
                    return compare(name, ty, flip(op), v);
                }
                None
            }
        },
        Expr::InList(list) if !list.negated => {
            let (name, ty) = column(&list.expr, columns)?;
            let values = list
                .list
                .iter()
                .map(|e| literal(e).and_then(|v| datum(v, ty)))
                .collect::<Option<Vec<_>>>()?;
            Some(Predicate::In {
                column: name.to_owned(),
                values,
            })
        }
        Expr::Between(b) if !b.negated => {
            let (name, ty) = column(&b.expr, columns)?;
            let lo = datum(literal(&b.low)?, ty)?;
            let hi = datum(literal(&b.high)?, ty)?;
            Some(Predicate::And(vec![
                Predicate::Compare {
                    column: name.to_owned(),
                    op: CmpOp::GtEq,
                    value: lo,
                },
                Predicate::Compare {
                    column: name.to_owned(),
                    op: CmpOp::LtEq,
                    value: hi,
                },
            ]))
        }
        Expr::IsNull(e) => column(e, columns).map(|(n, _)| Predicate::IsNull(n.to_owned())),
        Expr::IsNotNull(e) => column(e, columns).map(|(n, _)| Predicate::IsNotNull(n.to_owned())),
        _ => None,
    }
}

fn compare(name: &str, ty: &PaimonType, op: CmpOp, v: &ScalarValue) -> Option<Predicate> {
    Some(Predicate::Compare {
        column: name.to_owned(),
        op,
        value: datum(v, ty)?,
    })
}

fn column<'a>(
    expr: &Expr,
    columns: &'a [(String, PaimonType)],
) -> Option<(&'a str, &'a PaimonType)> {
    match expr {
        Expr::Column(c) => columns
            .iter()
            .find(|(n, _)| *n == c.name)
            .map(|(n, t)| (n.as_str(), t)),
        _ => None,
    }
}

fn literal(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(v, _) if !v.is_null() => Some(v),
        _ => None,
    }
}

/// `value` as a value of `ty`, only when its Arrow type is exactly the column's.
fn datum(value: &ScalarValue, ty: &PaimonType) -> Option<Datum> {
    let column_type = ty.to_arrow().ok()?;
    let value_type = value.data_type();
    let same = match (&value_type, &column_type) {
        (DataType::Timestamp(u1, z1), DataType::Timestamp(u2, z2)) => {
            u1 == u2 && z1.is_some() == z2.is_some()
        }
        (DataType::Utf8View | DataType::LargeUtf8, DataType::Utf8) => true,
        (a, b) => a == b,
    };
    if !same {
        return None;
    }
    let array = value.to_array().ok()?;
    let array = if value_type == column_type {
        array
    } else {
        datafusion::arrow::compute::cast(&array, &column_type).ok()?
    };
    Datum::from_array(&array, 0, ty).ok()
}

fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::NotEq,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::spec::types::TypeKind;
    use datafusion::prelude::{col, lit};

    #[test]
    fn keeps_only_safe_parts() {
        let cols = vec![("id".to_owned(), PaimonType::new(TypeKind::BigInt, false))];
        let e = col("id").eq(lit(5i64)).and(col("v").gt(lit(3i64)));
        assert_eq!(
            to_predicate(&e, &cols),
            Some(Predicate::Compare {
                column: "id".into(),
                op: CmpOp::Eq,
                value: Datum::BigInt(5)
            })
        );
        // An OR with an unknown side implies nothing.
        let e = col("id").eq(lit(5i64)).or(col("v").gt(lit(3i64)));
        assert_eq!(to_predicate(&e, &cols), None);
        // A literal of another type is not trusted.
        assert_eq!(to_predicate(&col("id").lt(lit(1.5f64)), &cols), None);
        assert_eq!(
            to_predicate(&lit(10i64).gt(col("id")), &cols),
            Some(Predicate::Compare {
                column: "id".into(),
                op: CmpOp::Lt,
                value: Datum::BigInt(10)
            })
        );
    }
}
