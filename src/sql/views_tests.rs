use super::*;
use crate::storage::views::ViewColumn;

/// Tables `public.t`, `sales.t`, `sales.orders`; the views given.
struct Fake {
    views: Vec<ViewDef>,
}

impl Relations for Fake {
    fn resolve(&self, schema: Option<&str>, name: &str, path: &[String]) -> Resolved<'_> {
        let tables = [("public", "t"), ("sales", "t"), ("sales", "orders")];
        let find = |db: &str| {
            if let Some(v) = self.views.iter().find(|v| v.schema == db && v.name == name) {
                return Some(Resolved::View(v));
            }
            tables
                .contains(&(db, name))
                .then(|| Resolved::Table(db.to_owned()))
        };
        match schema {
            Some(s) => find(s),
            None => path.iter().find_map(|db| find(db)),
        }
        .unwrap_or(Resolved::Other)
    }

    fn has_views(&self) -> bool {
        !self.views.is_empty()
    }
}

fn view(schema: &str, name: &str, sql: &str, columns: &[(&str, &str)]) -> ViewDef {
    ViewDef {
        schema: schema.to_owned(),
        name: name.to_owned(),
        sql: sql.to_owned(),
        columns: columns
            .iter()
            .map(|(_, to)| ViewColumn {
                name: (*to).to_owned(),
                type_oid: 23,
                typmod: -1,
            })
            .collect(),
        query_columns: columns.iter().map(|(from, _)| (*from).to_owned()).collect(),
        search_path: vec![schema.to_owned(), "public".to_owned()],
        comment: None,
        created_millis: 0,
        updated_millis: 0,
    }
}

fn expanded(sql: &str, fake: &Fake, path: &[&str]) -> Result<String, ViewError> {
    let path: Vec<String> = path.iter().map(|p| (*p).to_owned()).collect();
    let mut commands = super::super::parse(sql).unwrap();
    let mut statement = match commands.remove(0) {
        Command::Plan(s) => s,
        other => panic!("{other:?}"),
    };
    expand(&mut statement, fake, &path)?;
    Ok(statement.to_string())
}

#[test]
fn create_view_keeps_the_query_as_written() {
    let sql = "create or replace view Sales.V (x, \"Y\") as select a, b from t \
               version as of 'month end' where a > 1";
    let commands = super::super::parse(sql).unwrap();
    let Command::View(command) = &commands[0] else {
        panic!("{commands:?}")
    };
    let ViewCommand::Create {
        schema,
        name,
        or_replace,
        columns,
        sql,
    } = command.as_ref()
    else {
        panic!("{command:?}")
    };
    assert_eq!(
        (schema.as_deref(), name.as_str(), *or_replace),
        (Some("sales"), "v", true)
    );
    assert_eq!(columns, &["x", "Y"]);
    // No rewrite touched it, and the tag reads as written.
    assert_eq!(
        sql,
        "SELECT a, b FROM t VERSION AS OF 'month end' WHERE a > 1"
    );
}

#[test]
fn other_view_statements() {
    let one = |sql: &str| match super::super::parse(sql).unwrap().remove(0) {
        Command::View(c) => *c,
        other => panic!("{sql}: {other:?}"),
    };
    assert!(matches!(
        one("DROP VIEW IF EXISTS a, s.b CASCADE"),
        ViewCommand::Drop { names, if_exists: true, cascade: true }
            if names == [(None, "a".to_owned()), (Some("s".to_owned()), "b".to_owned())]
    ));
    assert!(matches!(
        one("alter view if exists V rename to W"),
        ViewCommand::Rename { name, to, if_exists: true, .. } if name == "v" && to == "w"
    ));
    assert!(matches!(
        one("COMMENT ON VIEW v IS NULL"),
        ViewCommand::Comment { comment: None, .. }
    ));
    for (sql, code) in [
        ("create materialized view m as select 1", "0A000"),
        ("create temporary view m as select 1", "0A000"),
        ("alter view v as select 2", "0A000"),
        ("alter view v owner to x", "0A000"),
        ("alter view v rename to", "42601"),
    ] {
        assert_eq!(
            super::super::parse(sql).unwrap_err().sqlstate(),
            code,
            "{sql}"
        );
    }
}

#[test]
fn a_view_reference_becomes_its_query() {
    let fake = Fake {
        views: vec![view(
            "sales",
            "v",
            "SELECT a, b AS c FROM t",
            &[("a", "x"), ("c", "c")],
        )],
    };
    // Along the session's path; the view's own names bind along its path (sales first).
    let sql = expanded("SELECT * FROM v JOIN t ON v.x = t.a", &fake, &["sales"]).unwrap();
    assert_eq!(
        sql,
        "SELECT * FROM (SELECT \"__tarn_view\".\"a\" AS \"x\", \"__tarn_view\".\"c\" AS \"c\" \
         FROM (SELECT a, b AS c FROM \"sales\".\"t\" AS \"t\") AS \"__tarn_view\") AS \"v\" \
         JOIN t ON v.x = t.a"
    );
    // An alias is kept; a qualified name resolves in its schema only.
    let sql = expanded("SELECT q.x FROM sales.v AS q", &fake, &["public"]).unwrap();
    assert!(sql.ends_with(") AS \"__tarn_view\") AS q"), "{sql}");
    assert_eq!(
        expanded("SELECT * FROM v", &fake, &["public"]).unwrap(),
        "SELECT * FROM v"
    );
    // A CTE of the same name wins.
    assert_eq!(
        expanded(
            "WITH v AS (SELECT 1 AS x) SELECT * FROM v",
            &fake,
            &["sales"]
        )
        .unwrap(),
        "WITH v AS (SELECT 1 AS x) SELECT * FROM v"
    );
    // Inside subqueries and DML sources too.
    let sql = expanded(
        "INSERT INTO t SELECT x, c FROM v WHERE x IN (SELECT x FROM v)",
        &fake,
        &["sales"],
    )
    .unwrap();
    assert_eq!(sql.matches("__tarn_view\") AS \"v\"").count(), 2, "{sql}");
}

#[test]
fn views_over_views_and_their_cycles() {
    let fake = Fake {
        views: vec![
            view("public", "a", "SELECT x FROM b", &[("x", "x")]),
            view("public", "b", "SELECT x FROM c", &[("x", "x")]),
            view(
                "public",
                "c",
                "SELECT a AS x FROM t FOR SYSTEM_TIME AS OF '2024-01-01'",
                &[("x", "x")],
            ),
        ],
    };
    let sql = expanded("SELECT * FROM a", &fake, &["public"]).unwrap();
    assert_eq!(sql.matches("__tarn_view").count(), 6, "{sql}");
    // The time travel inside the innermost view stays on its table.
    assert!(
        sql.contains("FROM \"public\".\"t\" AS \"t\" FOR SYSTEM_TIME AS OF '2024-01-01'"),
        "{sql}"
    );
    let cycle = Fake {
        views: vec![
            view("public", "a", "SELECT x FROM b", &[("x", "x")]),
            view("public", "b", "SELECT x FROM a", &[("x", "x")]),
        ],
    };
    let err = expanded("SELECT * FROM a", &cycle, &["public"]).unwrap_err();
    assert_eq!(err.code, "42P17", "{err:?}");
    let err = expanded("SELECT * FROM c VERSION AS OF 3", &fake, &["public"]).unwrap_err();
    assert_eq!(err.code, "0A000", "{err:?}");
}

#[test]
fn writes_into_a_view_are_refused() {
    let fake = Fake {
        views: vec![view("public", "v", "SELECT a FROM t", &[("a", "a")])],
    };
    for (sql, message) in [
        ("INSERT INTO v VALUES (1)", "cannot insert into view \"v\""),
        ("UPDATE v SET a = 1", "cannot update view \"v\""),
        ("DELETE FROM v", "cannot delete from view \"v\""),
        (
            "WITH s AS (SELECT 1) DELETE FROM public.v",
            "cannot delete from view \"v\"",
        ),
    ] {
        let err = expanded(sql, &fake, &["public"]).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            ("55000", message),
            "{sql}"
        );
    }
    // A table of the same name earlier in the path is written as usual.
    assert!(expanded("INSERT INTO t SELECT a FROM v", &fake, &["public"]).is_ok());
}

#[test]
fn the_views_a_view_uses() {
    let fake = Fake {
        views: vec![
            view(
                "public",
                "a",
                "SELECT x FROM b JOIN t ON true",
                &[("x", "x")],
            ),
            view(
                "public",
                "b",
                "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
                &[("x", "x")],
            ),
        ],
    };
    use crate::sql::view_deps::{Dependency, relations_used};
    assert_eq!(
        relations_used(&fake.views[0], &fake).unwrap(),
        [
            Dependency::View("public".to_owned(), "b".to_owned()),
            Dependency::Table("public".to_owned(), "t".to_owned())
        ]
    );
    assert!(relations_used(&fake.views[1], &fake).unwrap().is_empty());
}
