//! [`Predicate`]: the filters storage can use to skip data before reading it.
//!
//! The query layer translates what it safely can of a WHERE clause — conditions on partition
//! columns and on primary-key columns — into this small language. Storage evaluates it exactly on
//! a partition's values (to skip partitions) and conservatively on a file's min/max statistics
//! (to skip files). Conditions on other columns never come here: on a primary-key table an older
//! version of a row could pass a filter its newer version fails, so they run after the merge.

use std::cmp::Ordering;

use crate::storage::spec::datum::Datum;

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// A condition over named columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `column op value` (value not NULL).
    Compare {
        column: String,
        op: CmpOp,
        value: Datum,
    },
    /// `column IN (values)` (values not NULL).
    In {
        column: String,
        values: Vec<Datum>,
    },
    IsNull(String),
    IsNotNull(String),
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
}

/// What statistics say about one column of a file: bounds of its non-null values (absent when
/// unknown or when every value is null) and how many nulls it holds, when known.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    pub min: Option<Datum>,
    pub max: Option<Datum>,
    pub null_count: Option<i64>,
    pub row_count: i64,
}

impl Predicate {
    /// Columns the predicate mentions.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn collect_columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::In { column, .. }
            | Predicate::IsNull(column)
            | Predicate::IsNotNull(column) => out.push(column),
            Predicate::And(ps) | Predicate::Or(ps) => {
                ps.iter().for_each(|p| p.collect_columns(out))
            }
        }
    }

    /// Exact truth on one row's values (`value(column)` is `None` for unknown columns, which
    /// makes the condition "maybe": true, so nothing is skipped wrongly).
    pub fn eval<'a>(&self, value: &impl Fn(&str) -> Option<&'a Datum>) -> bool {
        match self {
            Predicate::Compare {
                column,
                op,
                value: v,
            } => match value(column) {
                None => true,
                Some(Datum::Null) => false,
                Some(d) => op.holds(d.compare(v)),
            },
            Predicate::In { column, values } => match value(column) {
                None => true,
                Some(Datum::Null) => false,
                Some(d) => values.iter().any(|v| d.compare(v).is_eq()),
            },
            Predicate::IsNull(c) => value(c).is_none_or(Datum::is_null),
            Predicate::IsNotNull(c) => value(c).is_none_or(|d| !d.is_null()),
            Predicate::And(ps) => ps.iter().all(|p| p.eval(value)),
            Predicate::Or(ps) => ps.iter().any(|p| p.eval(value)),
        }
    }

    /// Whether some row of a file with these statistics may satisfy the predicate
    /// (`false` only when it certainly cannot).
    pub fn may_match(&self, stats: &impl Fn(&str) -> Option<ColumnStats>) -> bool {
        match self {
            Predicate::Compare { column, op, value } => match stats(column) {
                None => true,
                Some(s) => match (&s.min, &s.max) {
                    (Some(min), Some(max)) => match op {
                        CmpOp::Eq => min.compare(value).is_le() && max.compare(value).is_ge(),
                        CmpOp::NotEq => !(min.compare(value).is_eq() && max.compare(value).is_eq()),
                        CmpOp::Lt => min.compare(value).is_lt(),
                        CmpOp::LtEq => min.compare(value).is_le(),
                        CmpOp::Gt => max.compare(value).is_gt(),
                        CmpOp::GtEq => max.compare(value).is_ge(),
                    },
                    // No bounds: all null (a comparison is never true) or unknown.
                    _ => !all_null(&s),
                },
            },
            Predicate::In { column, values } => values.iter().any(|v| {
                Predicate::Compare {
                    column: column.clone(),
                    op: CmpOp::Eq,
                    value: v.clone(),
                }
                .may_match(stats)
            }),
            Predicate::IsNull(c) => match stats(c) {
                Some(ColumnStats {
                    null_count: Some(n),
                    ..
                }) => n > 0,
                _ => true,
            },
            Predicate::IsNotNull(c) => match stats(c) {
                Some(s) => !all_null(&s),
                None => true,
            },
            Predicate::And(ps) => ps.iter().all(|p| p.may_match(stats)),
            Predicate::Or(ps) => ps.iter().any(|p| p.may_match(stats)),
        }
    }
}

fn all_null(s: &ColumnStats) -> bool {
    s.null_count.is_some_and(|n| n >= s.row_count) && s.row_count > 0
}

impl CmpOp {
    fn holds(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Eq => ord.is_eq(),
            CmpOp::NotEq => ord.is_ne(),
            CmpOp::Lt => ord.is_lt(),
            CmpOp::LtEq => ord.is_le(),
            CmpOp::Gt => ord.is_gt(),
            CmpOp::GtEq => ord.is_ge(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(column: &str, op: CmpOp, v: i64) -> Predicate {
        Predicate::Compare {
            column: column.into(),
            op,
            value: Datum::BigInt(v),
        }
    }

    #[test]
    fn evaluates_on_values() {
        let p = Predicate::And(vec![cmp("a", CmpOp::GtEq, 2), cmp("a", CmpOp::Lt, 5)]);
        let v = Datum::BigInt(3);
        assert!(p.eval(&|c| (c == "a").then_some(&v)));
        let v = Datum::BigInt(5);
        assert!(!p.eval(&|c| (c == "a").then_some(&v)));
        assert!(!p.eval(&|_| Some(&Datum::Null)));
        assert!(p.eval(&|_| None), "unknown columns never exclude");
        assert_eq!(p.columns(), ["a"]);
    }

    #[test]
    fn prunes_on_stats_conservatively() {
        let stats = |min: i64, max: i64| {
            move |_: &str| {
                Some(ColumnStats {
                    min: Some(Datum::BigInt(min)),
                    max: Some(Datum::BigInt(max)),
                    null_count: Some(0),
                    row_count: 10,
                })
            }
        };
        assert!(cmp("a", CmpOp::Eq, 5).may_match(&stats(1, 9)));
        assert!(!cmp("a", CmpOp::Eq, 10).may_match(&stats(1, 9)));
        assert!(!cmp("a", CmpOp::Gt, 9).may_match(&stats(1, 9)));
        assert!(cmp("a", CmpOp::GtEq, 9).may_match(&stats(1, 9)));
        assert!(!cmp("a", CmpOp::NotEq, 4).may_match(&stats(4, 4)));
        let within = Predicate::In {
            column: "a".into(),
            values: vec![Datum::BigInt(0), Datum::BigInt(12)],
        };
        assert!(!within.may_match(&stats(1, 9)));
        assert!(!Predicate::IsNull("a".into()).may_match(&stats(1, 9)));
        let nulls = |_: &str| {
            Some(ColumnStats {
                min: None,
                max: None,
                null_count: Some(10),
                row_count: 10,
            })
        };
        assert!(!cmp("a", CmpOp::Eq, 1).may_match(&nulls));
        assert!(cmp("a", CmpOp::Eq, 1).may_match(&|_| None));
    }
}
