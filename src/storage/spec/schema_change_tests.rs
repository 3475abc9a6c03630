//! [`evolve`]'s rules, each accepted and refused.

use std::collections::BTreeMap;

use super::*;
use crate::storage::spec::types::{MAX_LENGTH, parse_sql_type};

fn ty(text: &str) -> PaimonType {
    parse_sql_type(text).unwrap()
}

/// `orders (id BIGINT NOT NULL, qty INT, name STRING, price DECIMAL(10, 2), dt STRING NOT
/// NULL)`, primary key `(id, dt)`, partitioned by `dt`, with `options`.
fn orders(options: &[(&str, &str)]) -> TableSchema {
    let fields = vec![
        DataField::new(0, "id", ty("BIGINT NOT NULL")),
        DataField::new(1, "qty", ty("INT")),
        DataField::new(2, "name", ty("STRING")),
        DataField::new(3, "price", ty("DECIMAL(10, 2)")),
        DataField::new(4, "dt", ty("STRING NOT NULL")),
    ];
    let mut all: BTreeMap<String, String> = BTreeMap::from([("bucket".into(), "2".into())]);
    for (k, v) in options {
        all.insert((*k).into(), (*v).into());
    }
    TableSchema {
        id: 3,
        fields,
        highest_field_id: 4,
        partition_keys: vec!["dt".into()],
        primary_keys: vec!["id".into(), "dt".into()],
        options: all,
        comment: None,
        time_millis: 1,
    }
}

fn evolve_one(
    schema: &TableSchema,
    change: SchemaChange,
) -> Result<TableSchema, SchemaChangeError> {
    evolve(schema, &[change], true, 99)
}

fn refused(schema: &TableSchema, change: SchemaChange) -> SchemaChangeError {
    evolve_one(schema, change).unwrap_err()
}

fn add(name: &str, t: &str) -> SchemaChange {
    SchemaChange::AddColumn {
        name: name.into(),
        data_type: ty(t),
        comment: None,
    }
}

fn rename(name: &str, new_name: &str) -> SchemaChange {
    SchemaChange::RenameColumn {
        name: name.into(),
        new_name: new_name.into(),
    }
}

fn drop(name: &str) -> SchemaChange {
    SchemaChange::DropColumn { name: name.into() }
}

fn retype(name: &str, t: &str) -> SchemaChange {
    SchemaChange::UpdateColumnType {
        name: name.into(),
        data_type: ty(t),
    }
}

fn set(key: &str, value: &str) -> SchemaChange {
    SchemaChange::SetOption {
        key: key.into(),
        value: value.into(),
    }
}

fn reset(key: &str) -> SchemaChange {
    SchemaChange::RemoveOption { key: key.into() }
}

fn contains(e: &SchemaChangeError, text: &str) -> bool {
    e.to_string().contains(text)
}

#[test]
fn the_next_schema_has_the_next_id_and_time() {
    let old = orders(&[]);
    let new = evolve(&old, &[], true, 1234).unwrap();
    assert_eq!((new.id, new.time_millis), (4, 1234));
    assert_eq!(new.fields, old.fields);
}

#[test]
fn changes_apply_in_order() {
    let new = evolve(
        &orders(&[]),
        &[add("note", "STRING"), rename("note", "memo"), drop("memo")],
        true,
        0,
    )
    .unwrap();
    assert!(new.field("memo").is_none() && new.field("note").is_none());
    assert_eq!(
        new.highest_field_id, 5,
        "the dropped column's id is not reused"
    );
    let again = evolve_one(&new, add("note", "INT")).unwrap();
    assert_eq!(again.field("note").unwrap().id, 6);
}

// --- add ---------------------------------------------------------------------------------------

#[test]
fn add_column_appends_a_nullable_column_with_the_next_id() {
    let new = evolve_one(
        &orders(&[]),
        SchemaChange::AddColumn {
            name: "note".into(),
            data_type: ty("VARCHAR(20)"),
            comment: Some("free text".into()),
        },
    )
    .unwrap();
    let f = new.fields.last().unwrap();
    assert_eq!((f.id, f.name.as_str()), (5, "note"));
    assert_eq!(f.description.as_deref(), Some("free text"));
    assert_eq!(new.highest_field_id, 5);
}

#[test]
fn add_column_numbers_nested_fields_as_paimon_does() {
    // Java's ReassignFieldId: the column first, then each nested field after its own nested
    // fields.
    let row = PaimonType::nullable(TypeKind::Row(vec![
        DataField::new(0, "x", ty("INT")),
        DataField::new(
            0,
            "r",
            PaimonType::nullable(TypeKind::Row(vec![DataField::new(0, "a", ty("INT"))])),
        ),
        DataField::new(0, "y", ty("INT")),
    ]));
    let new = evolve_one(
        &orders(&[]),
        SchemaChange::AddColumn {
            name: "c".into(),
            data_type: row,
            comment: None,
        },
    )
    .unwrap();
    let c = new.field("c").unwrap();
    assert_eq!(c.id, 5);
    let TypeKind::Row(fields) = &c.data_type.kind else {
        panic!("a row")
    };
    let ids: Vec<(String, i32)> = fields.iter().map(|f| (f.name.clone(), f.id)).collect();
    assert_eq!(
        ids,
        [("x".into(), 6), ("r".into(), 8), ("y".into(), 9)],
        "{ids:?}"
    );
    let TypeKind::Row(inner) = &fields[1].data_type.kind else {
        panic!("a row")
    };
    assert_eq!(inner[0].id, 7);
    assert_eq!(new.highest_field_id, 9);
    assert_eq!(new.max_field_id(), 9);
}

#[test]
fn add_column_refusals() {
    let old = orders(&[]);
    let e = refused(&old, add("qty", "INT"));
    assert!(matches!(e, SchemaChangeError::DuplicateColumn(_)), "{e}");
    let e = refused(&old, add("note", "INT NOT NULL"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    assert!(contains(&e, "add it, fill it, then SET NOT NULL"), "{e}");
    let e = refused(&old, add("v", "VARIANT"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
}

#[test]
fn add_column_before_partition_when_the_table_says_so() {
    let new = evolve_one(
        &orders(&[("add-column-before-partition", "true")]),
        add("note", "STRING"),
    );
    // tarn does not accept the option itself, but a Java table may carry it.
    let new = new.unwrap();
    let names: Vec<&str> = new.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["id", "qty", "name", "price", "note", "dt"]);
}

#[test]
fn add_column_drops_a_stale_hint_of_its_name() {
    let mut old = orders(&[]);
    old.options
        .insert("tarn.pg-type.note".into(), "uuid".into());
    let new = evolve_one(&old, add("note", "STRING")).unwrap();
    assert!(!new.options.contains_key("tarn.pg-type.note"));
    // The hint of a uuid column comes with it.
    let new = evolve(
        &orders(&[]),
        &[add("token", "STRING"), set("tarn.pg-type.token", "uuid")],
        true,
        0,
    )
    .unwrap();
    assert_eq!(new.option("tarn.pg-type.token"), Some("uuid"));
    let e = refused(&orders(&[]), set("tarn.pg-type.qty", "uuid"));
    assert!(matches!(e, SchemaChangeError::Invalid(_)), "{e}");
    let e = refused(&orders(&[]), set("tarn.pg-type.nope", "json"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
    let e = refused(&orders(&[]), set("tarn.pg-type.name", "inet"));
    assert!(matches!(e, SchemaChangeError::Invalid(_)), "{e}");
}

// --- drop --------------------------------------------------------------------------------------

#[test]
fn drop_column_removes_the_column_and_its_options() {
    let old = orders(&[
        ("tarn.pg-type.name", "uuid"),
        ("file-index.bloom-filter.columns", "name,qty"),
        ("file-index.bloom-filter.name.items", "100"),
        ("changelog-producer.row-deduplicate-ignore-fields", "name"),
    ]);
    let new = evolve_one(&old, drop("name")).unwrap();
    assert!(new.field("name").is_none());
    assert_eq!(new.fields.len(), 4);
    assert_eq!(new.highest_field_id, 4);
    assert!(!new.options.contains_key("tarn.pg-type.name"));
    assert_eq!(new.option("file-index.bloom-filter.columns"), Some("qty"));
    assert!(
        !new.options
            .contains_key("file-index.bloom-filter.name.items")
    );
    assert!(
        !new.options
            .contains_key("changelog-producer.row-deduplicate-ignore-fields")
    );
    let new = evolve_one(&new, drop("qty")).unwrap();
    assert!(!new.options.contains_key("file-index.bloom-filter.columns"));
}

#[test]
fn drop_column_removes_its_aggregation_options() {
    let old = orders(&[
        ("merge-engine", "aggregation"),
        ("fields.qty.aggregate-function", "sum"),
        ("fields.price.aggregate-function", "max"),
    ]);
    let new = evolve_one(&old, drop("qty")).unwrap();
    assert!(!new.options.contains_key("fields.qty.aggregate-function"));
    assert_eq!(new.option("fields.price.aggregate-function"), Some("max"));
}

#[test]
fn drop_column_refusals() {
    let old = orders(&[("sequence.field", "qty")]);
    let e = refused(&old, drop("nope"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
    assert_eq!(e.to_string(), "column \"nope\" does not exist");
    let e = refused(&old, drop("id"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    assert!(contains(&e, "primary-key column"), "{e}");
    let e = refused(&old, drop("dt"));
    assert!(contains(&e, "partition column"), "{e}");
    let e = refused(&old, drop("qty"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    assert!(contains(&e, "'sequence.field'"), "{e}");
    let groups = orders(&[
        ("merge-engine", "partial-update"),
        ("fields.qty.sequence-group", "name"),
    ]);
    assert!(contains(
        &refused(&groups, drop("name")),
        "fields.qty.sequence-group"
    ));
    assert!(contains(
        &refused(&groups, drop("qty")),
        "fields.qty.sequence-group"
    ));
    let one = TableSchema {
        fields: vec![DataField::new(0, "a", ty("INT"))],
        highest_field_id: 0,
        partition_keys: vec![],
        primary_keys: vec![],
        options: BTreeMap::new(),
        ..orders(&[])
    };
    let e = refused(&one, drop("a"));
    assert!(contains(&e, "only column"), "{e}");
}

// --- rename ------------------------------------------------------------------------------------

#[test]
fn rename_column_keeps_the_field_and_follows_it_in_options() {
    let old = orders(&[
        ("merge-engine", "partial-update"),
        ("fields.qty.sequence-group", "name,price"),
        ("tarn.pg-type.name", "uuid"),
        ("file-index.bloom-filter.columns", "name"),
        ("file-index.bloom-filter.name.fpp", "0.01"),
    ]);
    let mut with_default = old.clone();
    with_default.fields[2].default_value = Some("x".into());
    with_default.fields[2].description = Some("who".into());
    let new = evolve_one(&with_default, rename("name", "label")).unwrap();
    let f = new.field("label").unwrap();
    assert_eq!(f.id, 2);
    assert_eq!(f.default_value.as_deref(), Some("x"));
    assert_eq!(f.description.as_deref(), Some("who"));
    assert!(new.field("name").is_none());
    assert_eq!(new.option("tarn.pg-type.label"), Some("uuid"));
    assert_eq!(new.option("fields.qty.sequence-group"), Some("label,price"));
    assert_eq!(new.option("file-index.bloom-filter.columns"), Some("label"));
    assert_eq!(
        new.option("file-index.bloom-filter.label.fpp"),
        Some("0.01")
    );
    assert!(!new.options.contains_key("tarn.pg-type.name"));
    let new = evolve_one(&new, rename("qty", "amount")).unwrap();
    assert_eq!(
        new.option("fields.amount.sequence-group"),
        Some("label,price")
    );
    assert!(!new.options.contains_key("fields.qty.sequence-group"));
    let sequenced = orders(&[("sequence.field", "qty")]);
    let new = evolve_one(&sequenced, rename("qty", "amount")).unwrap();
    assert_eq!(new.option("sequence.field"), Some("amount"));
}

#[test]
fn rename_primary_key_column_rewrites_the_key() {
    let old = orders(&[("bucket-key", "id")]);
    let new = evolve_one(&old, rename("id", "order_id")).unwrap();
    assert_eq!(new.primary_keys, ["order_id", "dt"]);
    assert_eq!(new.option("bucket-key"), Some("order_id"));
    assert_eq!(new.field("order_id").unwrap().id, 0);
}

#[test]
fn rename_column_refusals() {
    let old = orders(&[]);
    let e = refused(&old, rename("dt", "day"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    assert!(contains(&e, "partition column"), "{e}");
    let e = refused(&old, rename("qty", "name"));
    assert!(matches!(e, SchemaChangeError::DuplicateColumn(_)), "{e}");
    let e = refused(&old, rename("qty", "qty"));
    assert!(matches!(e, SchemaChangeError::DuplicateColumn(_)), "{e}");
    let e = refused(&old, rename("nope", "x"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
}

// --- type --------------------------------------------------------------------------------------

#[test]
fn type_changes_widen_only() {
    let old = orders(&[]);
    let new = evolve_one(&old, retype("qty", "BIGINT NOT NULL")).unwrap();
    assert_eq!(
        new.field("qty").unwrap().data_type,
        ty("BIGINT"),
        "nullability kept"
    );
    assert_eq!(new.field("qty").unwrap().id, 1);
    for (column, to) in [
        ("qty", "DOUBLE"),
        ("qty", "DECIMAL(10, 0)"),
        ("price", "DECIMAL(12, 2)"),
        ("price", "DECIMAL(12, 4)"),
        ("name", "STRING"),
    ] {
        evolve_one(&old, retype(column, to)).unwrap_or_else(|e| panic!("{column} {to}: {e}"));
    }
    assert_eq!(
        evolve_one(&old, retype("qty", "INT")).unwrap().fields,
        old.fields
    );
    for (column, to) in [
        ("qty", "SMALLINT"),
        ("qty", "FLOAT"),
        ("qty", "STRING"),
        ("qty", "DECIMAL(9, 0)"),
        ("price", "DECIMAL(10, 3)"),
        ("price", "DECIMAL(9, 2)"),
        ("price", "DOUBLE"),
    ] {
        let e = refused(&old, retype(column, to));
        assert!(
            matches!(e, SchemaChangeError::Unsupported(_)),
            "{column} {to}: {e}"
        );
    }
    let e = refused(&old, retype("qty", "STRING"));
    assert!(contains(&e, "from INT to STRING"), "{e}");
}

#[test]
fn the_widenings() {
    let w = |a: &str, b: &str| widens(&ty(a).kind, &ty(b).kind);
    assert!(w("SMALLINT", "INT") && w("SMALLINT", "BIGINT") && w("INT", "BIGINT"));
    assert!(w("SMALLINT", "DOUBLE") && w("INT", "DOUBLE") && w("SMALLINT", "FLOAT"));
    assert!(w("FLOAT", "DOUBLE") && w("TINYINT", "SMALLINT"));
    assert!(!w("BIGINT", "DOUBLE") && !w("INT", "FLOAT") && !w("BIGINT", "INT"));
    assert!(w("INT", "DECIMAL(12, 2)") && !w("INT", "DECIMAL(10, 2)"));
    assert!(w("BIGINT", "DECIMAL(19, 0)") && !w("BIGINT", "DECIMAL(38, 20)"));
    assert!(w("DECIMAL(5, 2)", "DECIMAL(7, 3)") && !w("DECIMAL(5, 2)", "DECIMAL(6, 4)"));
    assert!(!w("DECIMAL(5, 2)", "DECIMAL(5, 1)"));
    assert!(w("VARCHAR(5)", "VARCHAR(9)") && w("VARCHAR(5)", "STRING"));
    assert!(!w("VARCHAR(9)", "VARCHAR(5)") && !w("CHAR(5)", "VARCHAR(9)"));
    assert!(w("VARBINARY(4)", "BYTES") && !w("BYTES", "VARBINARY(4)"));
    assert!(w("TIMESTAMP(3)", "TIMESTAMP(6)") && !w("TIMESTAMP(6)", "TIMESTAMP(3)"));
    assert!(!w("TIMESTAMP(6)", "TIMESTAMP(9)") && w("TIMESTAMP(7)", "TIMESTAMP(9)"));
    assert!(w(
        "TIMESTAMP(0) WITH LOCAL TIME ZONE",
        "TIMESTAMP(6) WITH LOCAL TIME ZONE"
    ));
    assert!(!w("TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"));
    assert!(!w("DATE", "TIMESTAMP(6)") && !w("STRING", "INT"));
}

#[test]
fn type_change_refusals_of_keys() {
    let old = orders(&[]);
    let e = refused(&old, retype("id", "DECIMAL(20, 0)"));
    assert_eq!(
        e.to_string(),
        "column \"id\" is a primary-key column; Paimon cannot change its type"
    );
    let e = refused(&old, retype("dt", "VARCHAR(10)"));
    assert!(contains(&e, "partition column"), "{e}");
    assert!(
        evolve_one(&old, retype("dt", "STRING")).is_ok(),
        "the same type"
    );
    let e = refused(&old, retype("nope", "INT"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
}

#[test]
fn type_change_drops_a_hint_that_no_longer_fits() {
    let mut old = orders(&[]);
    old.fields[2].data_type = ty("VARCHAR(36)");
    old.options
        .insert("tarn.pg-type.name".into(), "uuid".into());
    let new = evolve_one(&old, retype("name", "STRING")).unwrap();
    assert_eq!(
        new.option("tarn.pg-type.name"),
        Some("uuid"),
        "still a string"
    );
    // A hint on a column another engine retyped is dropped by the next change.
    let mut odd = orders(&[]);
    odd.options.insert("tarn.pg-type.qty".into(), "json".into());
    let new = evolve(&odd, &[], true, 0).unwrap();
    assert!(!new.options.contains_key("tarn.pg-type.qty"));
}

// --- nullability, comments, defaults -----------------------------------------------------------

#[test]
fn nullability_changes() {
    let old = orders(&[]);
    let not_null = SchemaChange::UpdateColumnNullability {
        name: "qty".into(),
        nullable: false,
    };
    let new = evolve_one(&old, not_null).unwrap();
    assert!(!new.field("qty").unwrap().data_type.nullable);
    assert!(
        !new.options.keys().any(|k| k.contains("null")),
        "nothing Paimon-specific"
    );
    let back = SchemaChange::UpdateColumnNullability {
        name: "qty".into(),
        nullable: true,
    };
    assert!(
        evolve_one(&new, back)
            .unwrap()
            .field("qty")
            .unwrap()
            .data_type
            .nullable
    );
    let e = refused(
        &old,
        SchemaChange::UpdateColumnNullability {
            name: "id".into(),
            nullable: true,
        },
    );
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    let e = refused(
        &old,
        SchemaChange::UpdateColumnNullability {
            name: "nope".into(),
            nullable: false,
        },
    );
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
}

#[test]
fn comments() {
    let old = orders(&[]);
    let new = evolve(
        &old,
        &[
            SchemaChange::UpdateComment {
                comment: Some("orders".into()),
            },
            SchemaChange::UpdateColumnComment {
                name: "price".into(),
                comment: Some("gross, EUR".into()),
            },
        ],
        true,
        0,
    )
    .unwrap();
    assert_eq!(new.comment.as_deref(), Some("orders"));
    assert_eq!(
        new.field("price").unwrap().description.as_deref(),
        Some("gross, EUR")
    );
    let cleared = evolve_one(&new, SchemaChange::UpdateComment { comment: None }).unwrap();
    assert_eq!(cleared.comment, None);
    let e = refused(
        &old,
        SchemaChange::UpdateColumnComment {
            name: "nope".into(),
            comment: None,
        },
    );
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
}

#[test]
fn defaults_are_literals_of_the_column_type() {
    let old = orders(&[]);
    let default = |name: &str, value: &str| SchemaChange::UpdateColumnDefault {
        name: name.into(),
        default: Some(value.into()),
    };
    let new = evolve_one(&old, default("name", "web")).unwrap();
    assert_eq!(
        new.field("name").unwrap().default_value.as_deref(),
        Some("web")
    );
    for (column, value) in [
        ("qty", "42"),
        ("qty", "-7"),
        ("price", "12.5"),
        ("name", "'it'"),
    ] {
        evolve_one(&old, default(column, value)).unwrap_or_else(|e| panic!("{value}: {e}"));
    }
    for (column, value) in [
        ("qty", "now()"),
        ("qty", "1.5"),
        ("qty", "99999999999"),
        ("price", "123456789.1"),
        ("price", "abc"),
    ] {
        let e = refused(&old, default(column, value));
        assert!(matches!(e, SchemaChangeError::Invalid(_)), "{value}: {e}");
    }
    let cleared = evolve_one(
        &new,
        SchemaChange::UpdateColumnDefault {
            name: "name".into(),
            default: None,
        },
    )
    .unwrap();
    assert_eq!(cleared.field("name").unwrap().default_value, None);
    let e = refused(&old, default("nope", "1"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
}

#[test]
fn default_literals_by_type() {
    let ok = |t: &str, v: &str| check_default(&ty(t), v).is_ok();
    assert!(ok("BOOLEAN", "true") && ok("BOOLEAN", "f") && !ok("BOOLEAN", "maybe"));
    assert!(ok("DATE", "2026-01-31") && !ok("DATE", "2026-02-31") && !ok("DATE", "now()"));
    assert!(ok("TIMESTAMP(6)", "2026-01-31 12:30:00.5") && ok("TIMESTAMP(3)", "2026-01-31"));
    assert!(!ok("TIMESTAMP(6)", "now()"));
    assert!(ok("TIME(0)", "12:30:00") && !ok("TIME(0)", "25:00:00"));
    assert!(ok("VARCHAR(3)", "abc") && !ok("VARCHAR(3)", "abcd") && ok("VARCHAR(3)", "'abc'"));
    assert!(ok("DOUBLE", "1.5e3") && ok("SMALLINT", "-32768") && !ok("SMALLINT", "32768"));
    assert!(!ok("ARRAY<INT>", "[1]"));
}

// --- options -----------------------------------------------------------------------------------

#[test]
fn options_tarn_accepts_can_be_set_and_reset() {
    let old = orders(&[]);
    let new = evolve_one(&old, set("snapshot.num-retained.max", "500")).unwrap();
    assert_eq!(new.option("snapshot.num-retained.max"), Some("500"));
    let new = evolve_one(&new, reset("snapshot.num-retained.max")).unwrap();
    assert!(!new.options.contains_key("snapshot.num-retained.max"));
    assert!(
        evolve_one(&new, reset("not-there")).is_ok(),
        "nothing to reset"
    );
    let e = refused(&old, set("snapshot.num-retained.max", "lots"));
    assert!(matches!(e, SchemaChangeError::Invalid(_)), "{e}");
    let e = refused(&old, set("made-up.option", "1"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    let e = refused(&old, set("file.format", "orc"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
}

#[test]
fn fixed_and_immutable_options() {
    let old = orders(&[("merge-engine", "deduplicate")]);
    for key in ["type", "path", "primary-key", "partition"] {
        let e = refused(&old, set(key, "x"));
        assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{key}: {e}");
        assert!(
            evolve(&old, &[set(key, "x")], false, 0).is_err(),
            "{key} even before data"
        );
    }
    let e = refused(&old, set("merge-engine", "first-row"));
    assert!(contains(&e, "immutable"), "{e}");
    let e = refused(&old, reset("merge-engine"));
    assert!(contains(&e, "immutable"), "{e}");
    // Before the first snapshot Paimon lets it change.
    let new = evolve(&old, &[set("merge-engine", "first-row")], false, 0).unwrap();
    assert_eq!(new.option("merge-engine"), Some("first-row"));
    // Setting an option to its value changes nothing.
    assert!(evolve_one(&old, set("merge-engine", "deduplicate")).is_ok());
    let dv = orders(&[("deletion-vectors.enabled", "false")]);
    assert!(
        refused(&dv, set("deletion-vectors.enabled", "true"))
            .to_string()
            .contains("deletion-vectors")
    );
    let ignore = orders(&[("ignore-delete", "true")]);
    assert!(contains(
        &refused(&ignore, set("ignore-delete", "false")),
        "true to false"
    ));
    assert!(evolve_one(&orders(&[]), set("ignore-delete", "true")).is_ok());
}

#[test]
fn bucket_never_changes() {
    let old = orders(&[]);
    assert!(
        evolve_one(&old, set("bucket", " 2")).is_ok(),
        "the same count"
    );
    let e = refused(&old, set("bucket", "4"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
    assert!(contains(&e, "rescale"), "{e}");
    assert!(evolve(&old, &[set("bucket", "4")], false, 0).is_err());
    let e = refused(&old, reset("bucket"));
    assert!(matches!(e, SchemaChangeError::Unsupported(_)), "{e}");
}

#[test]
fn the_result_is_checked_as_a_whole() {
    let old = orders(&[]);
    // An option naming a column that does not exist.
    let e = refused(&old, set("sequence.field", "nope"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e}");
    // An index on a column type bloom filters cannot hash.
    let e = refused(&old, set("file-index.bloom-filter.columns", "price"));
    assert!(matches!(e, SchemaChangeError::Invalid(_)), "{e}");
    // A table another engine made with an option tarn would refuse can still change.
    let mut foreign = orders(&[]);
    foreign
        .options
        .insert("sequence.field".into(), "gone".into());
    let new = evolve_one(&foreign, add("note", "STRING")).unwrap();
    assert!(new.field("note").is_some());
}

#[test]
fn strings_of_max_length_are_string() {
    // The test schema's STRING is VARCHAR(MAX_LENGTH).
    assert_eq!(
        orders(&[]).field("name").unwrap().data_type.kind,
        TypeKind::VarChar(MAX_LENGTH)
    );
}

#[test]
fn default_expressions_and_identity_follow_their_column() {
    let base = orders(&[]);
    let new = evolve(
        &base,
        &[
            set("tarn.default.qty", "(2 + 3)"),
            set("tarn.identity.id", "always"),
        ],
        true,
        99,
    )
    .unwrap();
    assert_eq!(new.option("tarn.default.qty"), Some("(2 + 3)"));
    // A rename carries both along; a drop takes the default with the column.
    let renamed = evolve_one(&new, rename("qty", "amount")).unwrap();
    assert_eq!(renamed.option("tarn.default.amount"), Some("(2 + 3)"));
    assert!(!renamed.options.contains_key("tarn.default.qty"));
    let dropped = evolve_one(&renamed, drop("amount")).unwrap();
    assert!(
        !dropped
            .options
            .keys()
            .any(|k| k.starts_with("tarn.default."))
    );
    assert_eq!(dropped.option("tarn.identity.id"), Some("always"));
    // Only on columns that exist; identity only on integer columns and of a known kind.
    let e = refused(&base, set("tarn.default.nope", "now()"));
    assert!(matches!(e, SchemaChangeError::UndefinedColumn(_)), "{e:?}");
    let e = refused(&base, set("tarn.identity.name", "always"));
    assert!(contains(&e, "smallint, integer, or bigint"), "{e:?}");
    let e = refused(&base, set("tarn.identity.id", "sometimes"));
    assert!(contains(&e, "always or by-default"), "{e:?}");
}
