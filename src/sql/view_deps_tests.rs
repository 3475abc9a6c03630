use super::*;
use crate::storage::views::ViewColumn;

/// Tables `public.t (a, b, c)`, `public.u (a, d)`, `sales.w (x)`; views `public.v (x)`.
struct Fake {
    views: Vec<ViewDef>,
}

const TABLES: &[(&str, &str, &[&str])] = &[
    ("public", "t", &["a", "b", "c"]),
    ("public", "u", &["a", "d"]),
    ("sales", "w", &["x"]),
];

impl Relations for Fake {
    fn resolve(&self, schema: Option<&str>, name: &str, path: &[String]) -> Resolved<'_> {
        let find = |db: &str| {
            if let Some(v) = self.views.iter().find(|v| v.schema == db && v.name == name) {
                return Some(Resolved::View(v));
            }
            TABLES
                .iter()
                .any(|(s, t, _)| *s == db && *t == name)
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

fn tables() -> TableColumns {
    TABLES
        .iter()
        .map(|(s, t, c)| {
            (
                ((*s).to_owned(), (*t).to_owned()),
                c.iter().map(|c| (*c).to_owned()).collect(),
            )
        })
        .collect()
}

fn view(name: &str, path: &[&str], sql: &str, columns: &[&str]) -> ViewDef {
    ViewDef {
        schema: path[0].to_owned(),
        name: name.to_owned(),
        sql: sql.to_owned(),
        columns: columns
            .iter()
            .map(|c| ViewColumn {
                name: (*c).to_owned(),
                type_oid: 23,
                typmod: -1,
            })
            .collect(),
        query_columns: columns.iter().map(|c| (*c).to_owned()).collect(),
        search_path: path.iter().map(|p| (*p).to_owned()).collect(),
        comment: None,
        created_millis: 0,
        updated_millis: 0,
    }
}

fn fake() -> Fake {
    Fake {
        views: vec![view("v", &["public"], "SELECT 1 AS x", &["x"])],
    }
}

fn table(schema: &str, name: &str) -> Target {
    let columns = TABLES
        .iter()
        .find(|(s, t, _)| *s == schema && *t == name)
        .map(|(_, _, c)| c.iter().map(|c| (*c).to_owned()).collect())
        .unwrap();
    Target {
        schema: schema.to_owned(),
        name: name.to_owned(),
        is_view: false,
        columns,
    }
}

fn column(old: &str, new: &str) -> Change {
    Change::Column {
        old: old.to_owned(),
        new: new.to_owned(),
    }
}

/// `sql` (a view in `public` over `t`) with `change` to `public.t` written in.
fn rewritten(sql: &str, change: Change) -> Result<Option<String>, Refusal> {
    let v = view("q", &["public"], sql, &["a"]);
    rewrite(&v, &fake(), &tables(), &table("public", "t"), &change)
}

fn renamed(sql: &str, change: Change) -> String {
    rewritten(sql, change).unwrap().unwrap()
}

#[test]
fn a_renamed_column_is_renamed_where_it_is_referenced() {
    assert_eq!(
        renamed("SELECT a, b FROM t WHERE a > 1", column("a", "z")),
        "SELECT z AS a, b FROM t WHERE z > 1"
    );
    assert_eq!(
        renamed(
            "SELECT t.a, public.t.b FROM t ORDER BY a, t.a",
            column("a", "z")
        ),
        "SELECT t.z AS a, public.t.b FROM t ORDER BY a, t.z"
    );
    // The other table's column of the same name stays.
    assert_eq!(
        renamed("SELECT b, d FROM t JOIN u ON t.a = u.a", column("a", "z")),
        "SELECT b, d FROM t JOIN u ON t.z = u.a"
    );
    // Through an alias, an aggregate, a derived table.
    assert_eq!(
        renamed(
            "SELECT s.a, max(x.a) FROM t AS x, (SELECT a FROM t) AS s GROUP BY s.a",
            column("a", "z")
        ),
        "SELECT s.a, max(x.z) AS max FROM t AS x, (SELECT z AS a FROM t) AS s GROUP BY s.a"
            .replace(" AS max", "")
    );
    // Correlated subqueries: an unqualified name is the innermost SELECT's.
    assert_eq!(
        renamed(
            "SELECT b FROM t WHERE a IN (SELECT a FROM u) AND EXISTS (SELECT 1 FROM u WHERE d = a)",
            column("a", "z")
        ),
        "SELECT b FROM t WHERE z IN (SELECT a FROM u) AND EXISTS (SELECT 1 FROM u WHERE d = a)"
    );
    assert_eq!(
        renamed(
            "SELECT b FROM t WHERE EXISTS (SELECT 1 FROM u WHERE d = c)",
            column("c", "z")
        ),
        "SELECT b FROM t WHERE EXISTS (SELECT 1 FROM u WHERE d = z)"
    );
    // CTEs keep their output names.
    assert_eq!(
        renamed(
            "WITH k AS (SELECT a FROM t) SELECT a FROM k",
            column("a", "z")
        ),
        "WITH k AS (SELECT z AS a FROM t) SELECT a FROM k"
    );
    // Not referenced: no change.
    assert_eq!(rewritten("SELECT b FROM t", column("a", "z")), Ok(None));
    assert_eq!(
        rewritten("SELECT count(*) FROM t", column("a", "z")),
        Ok(None)
    );
}

#[test]
fn a_star_over_the_renamed_column_is_spelt_out() {
    assert_eq!(
        renamed("SELECT * FROM t", column("b", "z")),
        "SELECT t.a, t.z AS b, t.c FROM t"
    );
    assert_eq!(
        renamed("SELECT x.* FROM t AS x", column("b", "z")),
        "SELECT x.a, x.z AS b, x.c FROM t AS x"
    );
    // An alias column list keeps the name: nothing to change.
    assert_eq!(
        rewritten("SELECT * FROM t AS x (p, q)", column("b", "z")),
        Ok(None)
    );
}

#[test]
fn renames_that_cannot_be_decided_are_refused() {
    // The new name would capture an outer reference.
    assert!(
        rewritten(
            "SELECT d FROM u WHERE EXISTS (SELECT 1 FROM t WHERE t.b = d)",
            column("b", "d")
        )
        .is_err()
    );
    // The new name makes an unqualified reference ambiguous.
    assert!(rewritten("SELECT d FROM t JOIN u ON t.a = u.a", column("b", "d")).is_err());
    // USING and NATURAL joins on the column.
    assert!(rewritten("SELECT * FROM t JOIN u USING (a)", column("a", "z")).is_err());
    assert!(rewritten("SELECT b FROM t NATURAL JOIN u", column("b", "z")).is_err());
    // A FROM item whose columns tarn cannot know beside it.
    assert!(
        rewritten(
            "SELECT a FROM t, generate_series(1, 2) AS g",
            column("a", "z")
        )
        .is_err()
    );
}

#[test]
fn a_renamed_relation_is_renamed_with_its_qualifiers() {
    let to = || Change::Relation("t9".to_owned());
    assert_eq!(
        renamed("SELECT t.a, b FROM t WHERE t.c > 0", to()),
        "SELECT t9.a, b FROM t9 WHERE t9.c > 0"
    );
    assert_eq!(
        renamed("SELECT public.t.a, t.* FROM public.t", to()),
        "SELECT public.t9.a, t9.* FROM public.t9"
    );
    // An alias stays.
    assert_eq!(
        renamed("SELECT x.a FROM t AS x", to()),
        "SELECT x.a FROM t9 AS x"
    );
    // A CTE of the name is no reference.
    assert_eq!(
        rewritten("WITH t AS (SELECT 1 AS a) SELECT a FROM t", to()),
        Ok(None)
    );
    // A view renamed.
    let v = view("q", &["public"], "SELECT v.x FROM v", &["x"]);
    let target = Target {
        schema: "public".into(),
        name: "v".into(),
        is_view: true,
        columns: vec!["x".into()],
    };
    assert_eq!(
        rewrite(
            &v,
            &fake(),
            &tables(),
            &target,
            &Change::Relation("v2".into())
        ),
        Ok(Some("SELECT v2.x FROM v2".into()))
    );
}

#[test]
fn a_name_the_renamed_relation_would_take_gets_its_schema() {
    // `w` is sales.w along (public, sales): public.t renamed to w would come first.
    let v = view("q", &["public", "sales"], "SELECT x FROM w", &["x"]);
    assert_eq!(
        rewrite(
            &v,
            &fake(),
            &tables(),
            &table("public", "t"),
            &Change::Relation("w".into())
        ),
        Ok(Some("SELECT x FROM sales.w".into()))
    );
}

#[test]
fn the_columns_a_view_uses() {
    let uses = |sql: &str, shown: &[&str]| {
        let v = view("q", &["public"], sql, shown);
        columns_used(&v, &fake(), &tables(), &table("public", "t")).unwrap()
    };
    let set = |c: &[&str]| c.iter().map(|c| (*c).to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(uses("SELECT count(*) FROM t", &["count"]).columns, set(&[]));
    assert_eq!(
        uses("SELECT a FROM t WHERE c > 0", &["a"]).columns,
        set(&["a", "c"])
    );
    // A top-level * uses the columns the view shows (a column added later is not one).
    assert_eq!(
        uses("SELECT * FROM t", &["a", "b"]).columns,
        set(&["a", "b"])
    );
    assert_eq!(
        uses("SELECT s.a FROM (SELECT * FROM t) s", &["a"]).columns,
        set(&["a", "b", "c"])
    );
    assert_eq!(
        uses("SELECT d FROM u JOIN t USING (a)", &["d"]).columns,
        set(&["a"])
    );
    assert!(!uses("SELECT d FROM u", &["d"]).uses("a"));
}

#[test]
fn the_relations_a_view_names() {
    let v = view(
        "q",
        &["public"],
        "WITH k AS (SELECT * FROM u) SELECT * FROM k, t, v, sales.w, nowhere",
        &["a"],
    );
    assert_eq!(
        relations_used(&v, &fake()).unwrap(),
        vec![
            Dependency::Table("public".into(), "u".into()),
            Dependency::Table("public".into(), "t".into()),
            Dependency::View("public".into(), "v".into()),
            Dependency::Table("sales".into(), "w".into()),
        ]
    );
}
