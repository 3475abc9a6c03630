//! Merge engines as pure functions of a key's versions, the k-way merge under them, and a
//! storage round trip (files written as deduplicate, read under each engine's options).

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, Int8Array, Int64Array};
use arrow::datatypes::Int64Type;
use futures::{StreamExt, TryStreamExt};

use super::*;
use crate::storage::lsm::merge::{RunStream, merge_runs_with};
use crate::storage::spec::types::MAX_LENGTH;

const I: i8 = kind::INSERT;
const UB: i8 = kind::UPDATE_BEFORE;
const UA: i8 = kind::UPDATE_AFTER;
const D: i8 = kind::DELETE;

fn ty(kind: TypeKind) -> PaimonType {
    PaimonType::nullable(kind)
}

fn string() -> PaimonType {
    ty(TypeKind::VarChar(MAX_LENGTH))
}

/// A table `id BIGINT NOT NULL PRIMARY KEY` followed by `columns`.
fn schema(columns: &[(&str, PaimonType)], options: &[(&str, &str)]) -> TableSchema {
    crate::storage::testkit::keyed_schema(columns, options)
}

/// The layout reading every column (`values`: indexes of schema fields).
fn layout(schema: &TableSchema, values: &[usize]) -> ReadLayout {
    ReadLayout {
        keys: vec![schema.fields[0].clone()],
        system: true,
        values: values.iter().map(|&i| schema.fields[i].clone()).collect(),
    }
}

fn engine(schema: &TableSchema) -> (MergeFunction, ReadLayout) {
    let all: Vec<usize> = (0..schema.fields.len()).collect();
    MergeOptions::from_schema(schema)
        .unwrap()
        .bind(schema, &layout(schema, &all))
        .unwrap()
}

fn option_error(schema: &TableSchema) -> String {
    MergeOptions::from_schema(schema).unwrap_err()
}

/// A batch in `layout` of versions `(sequence, kind, value columns)` of key 1.
fn versions_batch(layout: &ReadLayout, rows: &[(i64, i8, Vec<Datum>)]) -> RecordBatch {
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1; rows.len()])),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int8Array::from_iter_values(rows.iter().map(|r| r.1))),
    ];
    for (j, field) in layout.values.iter().enumerate() {
        let values = rows.iter().map(|r| r.2[j].clone()).collect();
        columns.push(datums_to_array(values, &field.data_type).unwrap());
    }
    let schema = layout.schema().unwrap();
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns).unwrap()
}

/// The merged row of `rows` (oldest first): its kind and value columns; `None` for nothing.
fn merge_rows(
    schema: &TableSchema,
    rows: &[(i64, i8, Vec<Datum>)],
) -> Result<Option<(i8, Vec<Datum>)>, StorageError> {
    let (f, layout) = engine(schema);
    let batch = versions_batch(&layout, rows);
    let versions: Vec<VersionRow<'_>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| VersionRow {
            batch: &batch,
            row: i,
            sequence: r.0,
            kind: r.1,
        })
        .collect();
    let datum = |j: usize, i: usize| {
        Datum::from_array(batch.column(3 + j), i, &layout.values[j].data_type).unwrap()
    };
    Ok(match f.merge(&versions)? {
        Outcome::Nothing => None,
        Outcome::Version(i) => Some((
            rows[i].1,
            (0..layout.values.len()).map(|j| datum(j, i)).collect(),
        )),
        Outcome::Row(m) => Some((
            m.kind,
            m.values
                .into_iter()
                .enumerate()
                .map(|(j, c)| match c {
                    Cell::Null => Datum::Null,
                    Cell::Of(i) => datum(j, i),
                    Cell::Value(d) => d,
                })
                .collect(),
        )),
    })
}

fn s(text: &str) -> Datum {
    Datum::String(text.to_owned())
}

fn n(v: i64) -> Datum {
    Datum::BigInt(v)
}

const NULL: Datum = Datum::Null;

// ---- deduplicate and first-row ----

#[test]
fn deduplicate_keeps_the_newest_or_the_newest_live_with_ignore_delete() {
    let t = schema(&[("v", string())], &[]);
    let rows = [
        (1, I, vec![n(1), s("a")]),
        (2, UA, vec![n(1), s("b")]),
        (3, D, vec![n(1), s("b")]),
    ];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((D, vec![n(1), s("b")]))
    );
    let t = schema(&[("v", string())], &[("deduplicate.ignore-delete", "true")]);
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((UA, vec![n(1), s("b")]))
    );
    let only_deletes = [(1, D, vec![n(1), s("a")]), (2, UB, vec![n(1), s("a")])];
    assert_eq!(merge_rows(&t, &only_deletes).unwrap(), None);
    // A key with one version is that version, whatever the options.
    assert_eq!(
        merge_rows(&t, &only_deletes[..1]).unwrap(),
        Some((D, vec![n(1), s("a")]))
    );
}

#[test]
fn first_row_keeps_the_first_and_refuses_deletes_unless_ignored() {
    let t = schema(&[("v", string())], &[("merge-engine", "first-row")]);
    let rows = [(1, I, vec![n(1), s("a")]), (2, I, vec![n(1), s("b")])];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((I, vec![n(1), s("a")]))
    );
    let with_delete = [
        (1, D, vec![n(1), s("x")]),
        (2, I, vec![n(1), s("a")]),
        (3, I, vec![n(1), s("b")]),
    ];
    let err = merge_rows(&t, &with_delete).unwrap_err();
    assert!(matches!(err, StorageError::Unsupported(_)), "{err}");
    let t = schema(
        &[("v", string())],
        &[
            ("merge-engine", "first-row"),
            ("first-row.ignore-delete", "true"),
        ],
    );
    assert_eq!(
        merge_rows(&t, &with_delete).unwrap(),
        Some((I, vec![n(1), s("a")]))
    );
}

// ---- partial-update ----

fn partial(options: &[(&str, &str)]) -> TableSchema {
    let mut all = vec![("merge-engine", "partial-update")];
    all.extend_from_slice(options);
    schema(
        &[
            ("a", string()),
            ("b", ty(TypeKind::BigInt)),
            ("c", string()),
        ],
        &all,
    )
}

#[test]
fn partial_update_takes_the_newest_non_null_value_per_column() {
    let t = partial(&[]);
    let rows = [
        (1, I, vec![n(1), s("a1"), NULL, NULL]),
        (2, I, vec![n(1), NULL, n(2), NULL]),
        (3, UA, vec![n(1), s("a3"), NULL, NULL]),
    ];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((I, vec![n(1), s("a3"), n(2), NULL]))
    );
}

#[test]
fn partial_update_deletes_need_an_option() {
    let rows = [
        (1, I, vec![n(1), s("a1"), n(1), NULL]),
        (2, D, vec![n(1), NULL, NULL, NULL]),
        (3, I, vec![n(1), NULL, NULL, s("c3")]),
    ];
    let err = merge_rows(&partial(&[]), &rows).unwrap_err();
    assert!(err.to_string().contains("ignore-delete"), "{err}");
    // ignore-delete: as if the delete were not there.
    assert_eq!(
        merge_rows(&partial(&[("ignore-delete", "true")]), &rows).unwrap(),
        Some((I, vec![n(1), s("a1"), n(1), s("c3")]))
    );
    // The legacy name works too.
    assert_eq!(
        merge_rows(&partial(&[("partial-update.ignore-delete", "true")]), &rows).unwrap(),
        Some((I, vec![n(1), s("a1"), n(1), s("c3")]))
    );
    // remove-record-on-delete: the delete resets the row to the delete's own values, later
    // versions update that.
    let remove = partial(&[("partial-update.remove-record-on-delete", "true")]);
    assert_eq!(
        merge_rows(&remove, &rows).unwrap(),
        Some((I, vec![n(1), NULL, NULL, s("c3")]))
    );
    assert_eq!(
        merge_rows(&remove, &rows[..2]).unwrap(),
        Some((D, vec![n(1), NULL, NULL, NULL]))
    );
    // -U does not remove the row.
    let before = [
        (1, I, vec![n(1), s("a1"), n(1), NULL]),
        (2, UB, vec![n(1), s("a1"), n(1), NULL]),
    ];
    assert_eq!(
        merge_rows(&remove, &before).unwrap(),
        Some((I, vec![n(1), s("a1"), n(1), NULL]))
    );
    // Only retractions: no insert was met, the key is gone.
    let only = [
        (1, UB, vec![n(1), s("a1"), n(1), NULL]),
        (2, D, vec![n(1), s("a1"), n(1), NULL]),
    ];
    assert_eq!(
        merge_rows(&partial(&[("ignore-delete", "true")]), &only)
            .unwrap()
            .unwrap()
            .0,
        D
    );
}

#[test]
fn partial_update_options_paimon_refuses_are_refused() {
    let both = partial(&[
        ("ignore-delete", "true"),
        ("partial-update.remove-record-on-delete", "true"),
    ]);
    assert!(option_error(&both).contains("contradict"));
    let agg = partial(&[("fields.b.aggregate-function", "sum")]);
    assert!(
        option_error(&agg).contains("no sequence group"),
        "{}",
        option_error(&agg)
    );
    // last_non_null_value is what partial-update does anyway.
    let fine = partial(&[("fields.b.aggregate-function", "last_non_null_value")]);
    assert!(MergeOptions::from_schema(&fine).is_ok());
    let pk = partial(&[("fields.b.sequence-group", "id")]);
    assert!(option_error(&pk).contains("primary key"));
    let twice = partial(&[
        ("fields.b.sequence-group", "a"),
        ("fields.c.sequence-group", "a"),
    ]);
    assert!(option_error(&twice).contains("more than one"));
    let groups_and_remove = partial(&[
        ("fields.b.sequence-group", "a"),
        ("partial-update.remove-record-on-delete", "true"),
    ]);
    assert!(option_error(&groups_and_remove).contains("contradict"));
}

/// `g1` orders `a, b`; `g2` orders `c` (summed).
fn grouped(options: &[(&str, &str)]) -> TableSchema {
    let mut all = vec![
        ("merge-engine", "partial-update"),
        ("fields.g1.sequence-group", "a,b"),
        ("fields.g2.sequence-group", "c"),
    ];
    all.extend_from_slice(options);
    schema(
        &[
            ("a", string()),
            ("b", string()),
            ("g1", ty(TypeKind::Int)),
            ("c", ty(TypeKind::BigInt)),
            ("g2", ty(TypeKind::Int)),
            ("x", string()),
        ],
        &all,
    )
}

fn int(v: i32) -> Datum {
    Datum::Int(v)
}

#[test]
fn sequence_groups_update_their_columns_only_from_newer_versions() {
    let t = grouped(&[]);
    let rows = [
        (
            1,
            I,
            vec![n(1), s("a1"), s("b1"), int(5), n(1), int(5), s("x1")],
        ),
        // g1 older: a, b stay; g2 newer: c replaced even by NULL... here by 7.
        (
            2,
            I,
            vec![n(1), s("a2"), s("b2"), int(4), n(7), int(6), NULL],
        ),
        // g1 newer: the whole group is replaced, NULL included; g2 NULL: untouched.
        (
            3,
            I,
            vec![n(1), s("a3"), NULL, int(9), n(100), NULL, s("x3")],
        ),
    ];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((I, vec![n(1), s("a3"), NULL, int(9), n(7), int(6), s("x3")]))
    );
}

#[test]
fn sequence_groups_aggregate_in_any_order_and_retract() {
    let t = grouped(&[("fields.c.aggregate-function", "sum")]);
    let rows = [
        (
            1,
            I,
            vec![n(1), s("a1"), s("b1"), int(5), n(1), int(5), NULL],
        ),
        // An older g2 version is still summed.
        (2, I, vec![n(1), NULL, NULL, NULL, n(10), int(3), NULL]),
        (3, I, vec![n(1), NULL, NULL, NULL, n(100), int(8), NULL]),
    ];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((
            I,
            vec![n(1), s("a1"), s("b1"), int(5), n(111), int(8), NULL]
        ))
    );
    // A newer retraction of g1 clears a and b; of g2 subtracts.
    let mut retracting = rows.to_vec();
    retracting.push((
        4,
        UB,
        vec![n(1), s("a1"), s("b1"), int(6), n(10), int(9), NULL],
    ));
    assert_eq!(
        merge_rows(&t, &retracting).unwrap(),
        Some((I, vec![n(1), NULL, NULL, int(6), n(101), int(9), NULL]))
    );
    // remove-record-on-sequence-group: a -D of g1 removes the row.
    let t = grouped(&[
        ("fields.c.aggregate-function", "sum"),
        ("partial-update.remove-record-on-sequence-group", "g1"),
    ]);
    let mut deleting = rows.to_vec();
    deleting.push((4, D, vec![n(1), NULL, NULL, int(6), NULL, NULL, NULL]));
    assert_eq!(merge_rows(&t, &deleting).unwrap().unwrap().0, D);
    // ...but not when g1 is older.
    deleting.last_mut().unwrap().2[3] = int(1);
    assert_eq!(merge_rows(&t, &deleting).unwrap().unwrap().0, I);
}

#[test]
fn a_retraction_read_without_any_group_column_changes_nothing() {
    // Only `x` (no sequence group) is read: the table still has groups, so a -U is taken
    // back from groups alone, none of which is read.
    let t = grouped(&[]);
    let (f, layout) = MergeOptions::from_schema(&t)
        .unwrap()
        .bind(&t, &layout(&t, &[0, 6]))
        .unwrap();
    let rows = [(1, I, vec![n(1), s("x1")]), (2, UB, vec![n(1), s("x2")])];
    let batch = versions_batch(&layout, &rows);
    let versions: Vec<VersionRow<'_>> = (0..2)
        .map(|i| VersionRow {
            batch: &batch,
            row: i,
            sequence: rows[i].0,
            kind: rows[i].1,
        })
        .collect();
    let Outcome::Row(m) = f.merge(&versions).unwrap() else {
        panic!("a merged row")
    };
    assert_eq!(m.kind, I);
    assert_eq!(m.values, [Cell::Of(0), Cell::Of(0)]);
}

#[test]
fn a_projection_reads_the_sequence_fields_it_needs_and_drops_them_after() {
    let t = grouped(&[]);
    let options = MergeOptions::from_schema(&t).unwrap();
    // Read only `a` (index 1): g1 must come along; g2's columns need not.
    let (f, merge_layout) = options.bind(&t, &layout(&t, &[0, 1])).unwrap();
    let names: Vec<&str> = merge_layout
        .values
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["id", "a", "g1"]);
    let (out_schema, keep) = f.output.as_ref().unwrap();
    assert_eq!(keep.as_slice(), &[0, 1, 2, 3, 4]);
    assert_eq!(out_schema.fields().len(), 5);
    // A read of every column adds nothing.
    let (f, _) = engine(&t);
    assert!(f.output.is_none());
}

// ---- aggregation ----

fn aggregation(columns: &[(&str, PaimonType)], options: &[(&str, &str)]) -> TableSchema {
    let mut all = vec![("merge-engine", "aggregation")];
    all.extend_from_slice(options);
    schema(columns, &all)
}

fn dec(v: i128) -> Datum {
    Datum::Decimal(v)
}

#[test]
fn aggregate_functions() {
    let t = aggregation(
        &[
            ("sum", ty(TypeKind::BigInt)),
            ("product", ty(TypeKind::Double)),
            ("min", string()),
            ("max", ty(TypeKind::Int)),
            ("last", string()),
            ("lastnn", string()),
            ("first", string()),
            ("firstnn", string()),
            ("list", string()),
            ("all", ty(TypeKind::Boolean)),
            ("any", ty(TypeKind::Boolean)),
            (
                "dsum",
                ty(TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                }),
            ),
        ],
        &[
            ("fields.sum.aggregate-function", "sum"),
            ("fields.product.aggregate-function", "product"),
            ("fields.min.aggregate-function", "min"),
            ("fields.max.aggregate-function", "max"),
            ("fields.last.aggregate-function", "last_value"),
            ("fields.first.aggregate-function", "first_value"),
            ("fields.firstnn.aggregate-function", "first_non_null_value"),
            ("fields.list.aggregate-function", "listagg"),
            ("fields.list.list-agg-delimiter", "|"),
            ("fields.all.aggregate-function", "bool_and"),
            ("fields.any.aggregate-function", "bool_or"),
            ("fields.dsum.aggregate-function", "sum"),
        ],
    );
    let b = Datum::Boolean;
    let d = Datum::Double;
    let rows = [
        (
            1,
            I,
            vec![
                n(1),
                n(5),
                d(2.0),
                s("m"),
                int(3),
                s("l1"),
                s("n1"),
                NULL,
                NULL,
                s("x"),
                b(true),
                b(false),
                dec(150),
            ],
        ),
        (
            2,
            I,
            vec![
                n(1),
                NULL,
                d(3.5),
                s("b"),
                int(9),
                s("l2"),
                NULL,
                s("f2"),
                s("f2"),
                s(" "),
                NULL,
                b(true),
                dec(-25),
            ],
        ),
        (
            3,
            UA,
            vec![
                n(1),
                n(-2),
                NULL,
                s("k"),
                int(1),
                NULL,
                NULL,
                s("f3"),
                s("f3"),
                s("y"),
                b(false),
                NULL,
                NULL,
            ],
        ),
    ];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((
            I,
            vec![
                n(1),
                n(3),
                d(7.0),
                s("b"),
                int(9),
                NULL,
                s("n1"),
                NULL,
                s("f2"),
                s("x|y"),
                b(false),
                b(true),
                dec(125),
            ]
        ))
    );
}

#[test]
fn default_aggregate_function_and_listagg_distinct() {
    let t = aggregation(
        &[("v", string()), ("w", string())],
        &[
            ("fields.default-aggregate-function", "listagg"),
            ("fields.w.aggregate-function", "last_non_null_value"),
            ("fields.v.distinct", "true"),
        ],
    );
    let rows = [
        (1, I, vec![n(1), s("a,b"), s("w1")]),
        (2, I, vec![n(1), s("b,c,,a"), NULL]),
        (3, I, vec![n(1), s("d"), NULL]),
    ];
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((I, vec![n(1), s("a,b,c,d"), s("w1")]))
    );
}

#[test]
fn aggregation_retracts_as_paimon_does() {
    let t = aggregation(
        &[
            ("sum", ty(TypeKind::Int)),
            ("product", ty(TypeKind::BigInt)),
            ("lastnn", string()),
            ("last", string()),
        ],
        &[
            ("fields.sum.aggregate-function", "sum"),
            ("fields.product.aggregate-function", "product"),
            ("fields.last.aggregate-function", "last_value"),
        ],
    );
    let rows = [
        (1, I, vec![n(1), int(10), n(6), s("a"), s("x")]),
        (2, I, vec![n(1), int(5), n(4), s("b"), s("y")]),
        (3, UB, vec![n(1), int(10), n(6), NULL, s("x")]),
    ];
    // sum subtracts, product divides, last_non_null_value keeps its value when the retracted
    // one is NULL, last_value becomes NULL. The merged row is an insert.
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((I, vec![n(1), int(5), n(4), s("b"), NULL]))
    );
    // A retraction first: sum starts negative, product stays NULL.
    let first = [
        (1, D, vec![n(1), int(3), n(2), s("a"), s("x")]),
        (2, I, vec![n(1), int(1), n(7), NULL, NULL]),
    ];
    assert_eq!(
        merge_rows(&t, &first).unwrap(),
        Some((I, vec![n(1), int(-2), n(7), NULL, NULL]))
    );
    // aggregation.remove-record-on-delete: a final -D removes the key.
    let t2 = aggregation(
        &[("sum", ty(TypeKind::Int))],
        &[
            ("fields.sum.aggregate-function", "sum"),
            ("aggregation.remove-record-on-delete", "true"),
        ],
    );
    let deleted = [(1, I, vec![n(1), int(3)]), (2, D, vec![n(1), int(3)])];
    assert_eq!(merge_rows(&t2, &deleted).unwrap().unwrap().0, D);
    let reinserted = [
        (1, I, vec![n(1), int(3)]),
        (2, D, vec![n(1), int(3)]),
        (3, I, vec![n(1), int(4)]),
    ];
    // Paimon restarts from the delete's NOT NULL values (`initRow`): the nullable sum starts
    // over at NULL.
    assert_eq!(
        merge_rows(&t2, &reinserted).unwrap(),
        Some((I, vec![n(1), int(4)]))
    );
    // A NOT NULL column keeps the delete's value, and later versions aggregate onto it.
    let mut t3 = t2.clone();
    t3.fields[1].data_type.nullable = false;
    assert_eq!(
        merge_rows(&t3, &reinserted).unwrap(),
        Some((I, vec![n(1), int(7)]))
    );
}

#[test]
fn functions_without_retraction_refuse_it_unless_ignored() {
    let columns = [("m", ty(TypeKind::Int))];
    let rows = [
        (1, I, vec![n(1), int(3)]),
        (2, I, vec![n(1), int(1)]),
        (3, D, vec![n(1), int(1)]),
    ];
    for func in [
        "min",
        "max",
        "first_value",
        "first_non_null_value",
        "bool_and",
    ] {
        let cols = if func == "bool_and" {
            vec![("m", ty(TypeKind::Boolean))]
        } else {
            columns.to_vec()
        };
        let t = aggregation(&cols, &[("fields.m.aggregate-function", func)]);
        let rows: Vec<_> = rows
            .iter()
            .map(|(q, k, v)| {
                let v = if func == "bool_and" {
                    vec![v[0].clone(), Datum::Boolean(true)]
                } else {
                    v.clone()
                };
                (*q, *k, v)
            })
            .collect();
        let err = merge_rows(&t, &rows).unwrap_err();
        assert!(
            err.to_string().contains("fields.m.ignore-retract"),
            "{func}: {err}"
        );
    }
    let t = aggregation(
        &columns,
        &[
            ("fields.m.aggregate-function", "min"),
            ("fields.m.ignore-retract", "true"),
        ],
    );
    assert_eq!(
        merge_rows(&t, &rows).unwrap(),
        Some((I, vec![n(1), int(1)]))
    );
}

#[test]
fn integer_overflow_fails_and_decimals_round_or_become_null() {
    let t = aggregation(
        &[("v", ty(TypeKind::TinyInt))],
        &[("fields.v.aggregate-function", "sum")],
    );
    let rows = [
        (1, I, vec![n(1), Datum::TinyInt(100)]),
        (2, I, vec![n(1), Datum::TinyInt(100)]),
    ];
    assert!(
        merge_rows(&t, &rows)
            .unwrap_err()
            .to_string()
            .contains("overflows TINYINT")
    );

    let d = ty(TypeKind::Decimal {
        precision: 20,
        scale: 2,
    });
    // 1.25 * 1.25 = 1.5625 -> 1.56; 1.25 * 1.26 = 1.575 -> 1.58 (half up).
    let ty20 = d.clone();
    let product = |a, b| arith::multiply(dec(a), dec(b), &ty20, "v").unwrap();
    assert_eq!(product(125, 125), dec(156));
    assert_eq!(product(125, 126), dec(158));
    assert_eq!(product(-125, 126), dec(-158));
    // Outgrowing the precision gives NULL.
    let big = 10i128.pow(19);
    assert_eq!(product(big, big), NULL);
    // Division (a product's retraction) must have a finite expansion.
    let divide = |a, b| arith::divide(dec(a), dec(b), &d, "v");
    assert_eq!(divide(100, 800).unwrap(), dec(13)); // 1/8 = 0.125 -> 0.13
    assert!(divide(100, 300).is_err()); // 1/3
    assert!(divide(100, 0).is_err());
    // Non-compact sums past the precision are NULL.
    let max = 10i128.pow(20) - 1;
    assert_eq!(arith::add(dec(max), dec(1), &d, "v").unwrap(), NULL);
    assert_eq!(
        arith::add(dec(max), dec(-1), &d, "v").unwrap(),
        dec(max - 1)
    );
}

#[test]
fn aggregation_options_paimon_refuses_are_refused() {
    let bad = |column: PaimonType, func: &str| {
        let key = "fields.v.aggregate-function";
        option_error(&aggregation(&[("v", column)], &[(key, func)]))
    };
    assert!(bad(string(), "sum").contains("cannot aggregate"));
    assert!(bad(ty(TypeKind::VarChar(10)), "listagg").contains("cannot aggregate"));
    assert!(bad(ty(TypeKind::Int), "bool_or").contains("cannot aggregate"));
    assert!(bad(ty(TypeKind::Int), "collect").contains("not supported by tarn"));
    assert!(bad(ty(TypeKind::Int), "median").contains("not an aggregate function"));
    let conflict = aggregation(
        &[("v", ty(TypeKind::Int))],
        &[
            ("aggregation.remove-record-on-delete", "true"),
            ("fields.v.ignore-retract", "true"),
        ],
    );
    assert!(option_error(&conflict).contains("contradict"));
    let seq = aggregation(
        &[("v", ty(TypeKind::Int))],
        &[
            ("sequence.field", "v"),
            ("fields.v.aggregate-function", "sum"),
        ],
    );
    assert!(option_error(&seq).contains("must not have an aggregate"));
}

#[test]
fn sequence_field_options() {
    let cols = [("ts", ty(TypeKind::BigInt)), ("v", string())];
    assert!(option_error(&schema(&cols, &[("sequence.field", "nope")])).contains("not a column"));
    assert!(option_error(&schema(&cols, &[("sequence.field", "ts,ts")])).contains("twice"));
    assert!(
        option_error(&schema(
            &cols,
            &[("sequence.field", "ts"), ("merge-engine", "first-row")]
        ))
        .contains("first-row")
    );
    assert!(
        option_error(&schema(
            &cols,
            &[
                ("sequence.field", "ts"),
                ("sequence.field.sort-order", "up")
            ]
        ))
        .contains("sort-order")
    );
    assert!(option_error(&schema(&cols, &[("merge-engine", "magic")])).contains("magic"));
    let o = MergeOptions::from_schema(&schema(
        &cols,
        &[
            ("sequence.field", " ts , v"),
            ("sequence.field.sort-order", "DESCENDING"),
        ],
    ))
    .unwrap();
    assert_eq!(o.sequence_fields, ["ts", "v"]);
    assert!(o.sequence_descending);
}

// ---- the k-way merge under merge functions ----

fn run_of(layout: &ReadLayout, rows: &[(i64, i64, i8, Vec<Datum>)], per_batch: usize) -> RunStream {
    let schema = layout.schema().unwrap();
    let batches: Vec<Result<RecordBatch, StorageError>> = rows
        .chunks(per_batch)
        .map(|chunk| {
            let mut columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.1))),
                Arc::new(Int8Array::from_iter_values(chunk.iter().map(|r| r.2))),
            ];
            for (j, f) in layout.values.iter().enumerate() {
                let values = chunk.iter().map(|r| r.3[j].clone()).collect();
                columns.push(datums_to_array(values, &f.data_type).unwrap());
            }
            Ok(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap())
        })
        .collect();
    futures::stream::iter(batches).boxed()
}

/// Every row of `stream`: key, kind, value columns.
async fn collect_rows(stream: RunStream, layout: &ReadLayout) -> Vec<(i64, i8, Vec<Datum>)> {
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            out.push((
                b.column(0).as_primitive::<Int64Type>().value(i),
                b.column(2)
                    .as_primitive::<arrow::datatypes::Int8Type>()
                    .value(i),
                layout
                    .values
                    .iter()
                    .enumerate()
                    .map(|(j, f)| Datum::from_array(b.column(3 + j), i, &f.data_type).unwrap())
                    .collect(),
            ));
        }
    }
    out
}

#[tokio::test]
async fn sequence_field_orders_versions_before_the_sequence_number() {
    for descending in [false, true] {
        let order = if descending {
            "descending"
        } else {
            "ascending"
        };
        let t = schema(
            &[("ts", ty(TypeKind::BigInt)), ("v", string())],
            &[
                ("sequence.field", "ts"),
                ("sequence.field.sort-order", order),
            ],
        );
        let (f, layout) = engine(&t);
        // key 1: ts 10 (seq 1) vs ts 5 (seq 2); key 2: NULL ts is oldest in both orders;
        // key 3: equal ts, the sequence number decides.
        let old = run_of(
            &layout,
            &[
                (1, 1, I, vec![n(1), n(10), s("ts10")]),
                (2, 2, I, vec![n(2), NULL, s("null")]),
                (3, 3, I, vec![n(3), n(7), s("older")]),
            ],
            2,
        );
        let new = run_of(
            &layout,
            &[
                (1, 4, I, vec![n(1), n(5), s("ts5")]),
                (2, 5, I, vec![n(2), n(1), s("ts1")]),
                (3, 6, I, vec![n(3), n(7), s("newer")]),
            ],
            1,
        );
        let schema = layout.schema().unwrap();
        let merged = merge_runs_with(&Arc::new(f), schema, 1, vec![old, new], true).unwrap();
        let got: Vec<String> = collect_rows(merged, &layout)
            .await
            .into_iter()
            .map(|r| match &r.2[2] {
                Datum::String(v) => v.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        let first = if descending { "ts5" } else { "ts10" };
        assert_eq!(got, [first, "ts1", "newer"], "{order}");
    }
}

#[tokio::test]
async fn aggregation_merges_across_runs_and_batches() {
    let t = aggregation(
        &[
            ("total", ty(TypeKind::BigInt)),
            ("tags", string()),
            ("name", string()),
        ],
        &[
            ("fields.total.aggregate-function", "sum"),
            ("fields.tags.aggregate-function", "listagg"),
        ],
    );
    let (f, layout) = engine(&t);
    let f = Arc::new(f);
    let mut runs = Vec::new();
    let mut expected: BTreeMap<i64, (i64, Vec<String>, String)> = BTreeMap::new();
    let mut seq = 0;
    for r in 0..4i64 {
        let mut rows = Vec::new();
        for k in (0..300i64).filter(|k| k % (r + 1) == 0) {
            seq += 1;
            let e = expected.entry(k).or_insert((0, Vec::new(), String::new()));
            e.0 += k + r;
            e.1.push(format!("r{r}"));
            e.2 = format!("k{k}r{r}");
            rows.push((
                k,
                seq,
                I,
                vec![n(k), n(k + r), s(&format!("r{r}")), s(&e.2)],
            ));
        }
        runs.push(run_of(&layout, &rows, 17));
    }
    let schema = layout.schema().unwrap();
    let merged = merge_runs_with(&f, schema, 1, runs, true).unwrap();
    let got = collect_rows(merged, &layout).await;
    assert_eq!(got.len(), expected.len());
    for ((key, kind, values), (k, (total, tags, name))) in got.into_iter().zip(expected) {
        assert_eq!(key, k);
        assert_eq!(kind, I);
        assert_eq!(values, vec![n(k), n(total), s(&tags.join(",")), s(&name)]);
    }
}

#[tokio::test]
async fn partial_update_merge_keeps_deletes_when_asked() {
    let t = partial(&[("partial-update.remove-record-on-delete", "true")]);
    let (f, layout) = engine(&t);
    let f = Arc::new(f);
    let rows_a = [
        (1, 1, I, vec![n(1), s("a"), NULL, NULL]),
        (2, 2, I, vec![n(2), s("a"), NULL, NULL]),
    ];
    let rows_b = [
        (1, 3, D, vec![n(1), NULL, NULL, NULL]),
        (2, 4, I, vec![n(2), NULL, n(5), NULL]),
    ];
    let schema = layout.schema().unwrap();
    let read = merge_runs_with(
        &f,
        Arc::clone(&schema),
        1,
        vec![run_of(&layout, &rows_a, 8), run_of(&layout, &rows_b, 8)],
        true,
    )
    .unwrap();
    assert_eq!(
        collect_rows(read, &layout).await,
        [(2, I, vec![n(2), s("a"), n(5), NULL])]
    );
    let compaction = merge_runs_with(
        &f,
        schema,
        1,
        vec![run_of(&layout, &rows_a, 8), run_of(&layout, &rows_b, 8)],
        false,
    )
    .unwrap();
    let got = collect_rows(compaction, &layout).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1, D);
}

// ---- storage round trip ----

/// Files written by tarn as a deduplicate table; then the table's options change (a new
/// schema version, as a Paimon writer with these options would have had) and reads merge
/// under them.
#[tokio::test]
async fn storage_reads_merge_under_the_latest_schema_options() {
    use crate::storage::write::table_write::{TableWrite, WriteMode};

    let wh = crate::storage::testkit::warehouse(None).await;
    let base = schema(
        &[
            ("total", ty(TypeKind::BigInt)),
            ("note", string()),
            ("ts", ty(TypeKind::BigInt)),
        ],
        &[("bucket", "1")],
    );
    let t = wh.create_table("public", "t", base.clone()).await.unwrap();
    // (id, total, note, ts)
    type Row<'a> = (i64, Option<i64>, Option<&'a str>, i64);
    let commits: [&[Row<'_>]; 3] = [
        &[(1, Some(1), Some("one"), 10), (2, Some(2), None, 10)],
        &[(1, Some(10), None, 30), (3, None, Some("three"), 10)],
        &[(1, None, Some("uno"), 20), (2, Some(20), Some("two"), 5)],
    ];
    for rows in commits {
        let batch = RecordBatch::try_new(
            crate::storage::testkit::arrow_schema(&base),
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.1))),
                Arc::new(arrow::array::StringArray::from_iter(
                    rows.iter().map(|r| r.2),
                )),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.3))),
            ],
        )
        .unwrap();
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        w.write(batch).await.unwrap();
        crate::storage::commit::commit_write(w).await.unwrap();
    }

    let mut version = 0;
    let mut read_as = async |options: &[(&str, &str)], values: &[usize]| {
        version += 1;
        let mut s = base.clone();
        s.id = version;
        s.options
            .extend(options.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let path = crate::storage::meta::table::schema_path(t.path(), version);
        wh.io().write(&path, s.to_json()).await.unwrap();
        let t = wh.open_table("public", "t").await.unwrap();
        let mut rows = Vec::new();
        for b in &crate::storage::testkit::batches_at(&t, None, values).await {
            for i in 0..b.num_rows() {
                rows.push(
                    (0..values.len())
                        .map(|j| {
                            let c = b.column(j);
                            if c.is_null(i) {
                                "null".to_owned()
                            } else {
                                arrow::util::display::array_value_to_string(c, i).unwrap()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
        }
        rows
    };

    assert_eq!(
        read_as(&[], &[0, 1, 2]).await,
        ["1 null uno", "2 20 two", "3 null three"]
    );
    assert_eq!(
        read_as(&[("merge-engine", "partial-update")], &[0, 1, 2]).await,
        ["1 10 uno", "2 20 two", "3 null three"]
    );
    assert_eq!(
        read_as(
            &[
                ("merge-engine", "aggregation"),
                ("fields.total.aggregate-function", "sum"),
                ("fields.note.aggregate-function", "listagg"),
            ],
            &[0, 1, 2]
        )
        .await,
        ["1 11 one,uno", "2 22 two", "3 null three"]
    );
    // sequence.field: the highest ts wins, and a read that leaves ts out still orders by it.
    assert_eq!(
        read_as(&[("sequence.field", "ts")], &[0, 2]).await,
        ["1 null", "2 null", "3 three"]
    );
    assert_eq!(
        read_as(
            &[("merge-engine", "partial-update"), ("sequence.field", "ts")],
            &[2]
        )
        .await,
        ["uno", "two", "three"]
    );
    // Refused options fail the read with a reason.
    let mut s = base.clone();
    s.id = 99;
    s.options
        .insert("merge-engine".into(), "aggregation".into());
    s.options
        .insert("fields.note.aggregate-function".into(), "collect".into());
    let path = crate::storage::meta::table::schema_path(t.path(), 99);
    wh.io().write(&path, s.to_json()).await.unwrap();
    let t = wh.open_table("public", "t").await.unwrap();
    let err = crate::storage::testkit::try_batches_at(&t, None, &[0, 1, 2])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot read table public.t: aggregate function 'collect'"),
        "{err}"
    );
}
