//! Views through a real client: they are documents in the warehouse (`_tarn/views/`), so a
//! restarted server has them, with their comments, column types and time travel; a dropped
//! view stays dropped; prepared statements over a view plan again after it is replaced.

mod common;

use common::{TestServer, sqlstate};

async fn texts(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn views_survive_a_restart() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "set tarn.flush_on_commit = on;
         create table orders (id int primary key, state text, amount numeric(8, 2));
         insert into orders values (1, 'new', 10.50), (2, 'paid', 20.00);
         update orders set state = 'paid' where id = 1;
         create view open_orders as select id, amount from orders where state = 'new';
         create view first_version (order_id, was) as
             select id, state from orders version as of 1;
         create view totals as select count(*) as n, sum(amount) as total from orders;
         create view gone as select 1 as x;
         comment on view totals is 'all orders';
         drop view gone;",
    )
    .await
    .unwrap();
    assert_eq!(
        texts(&c, "select * from open_orders").await,
        Vec::<String>::new()
    );
    drop(c);
    let warehouse = server.stop_and_keep_warehouse();
    assert!(
        warehouse.path().join("_tarn/views/public/totals").is_dir(),
        "views are kept beside the databases"
    );

    let server = TestServer::start_on(warehouse, &[]);
    let c = server.client().await;
    assert_eq!(
        texts(&c, "select * from first_version order by order_id").await,
        ["1 new", "2 paid"]
    );
    assert_eq!(texts(&c, "select n, total from totals").await, ["2 30.50"]);
    c.execute("insert into orders values (3, 'new', 5.25)", &[])
        .await
        .unwrap();
    assert_eq!(texts(&c, "select * from open_orders").await, ["3 5.25"]);
    assert_eq!(
        texts(
            &c,
            "select viewname from pg_views where schemaname = 'public' order by 1"
        )
        .await,
        ["first_version", "open_orders", "totals"]
    );
    assert_eq!(
        texts(&c, "select obj_description('totals'::regclass, 'pg_class')").await,
        ["all orders"]
    );
    assert_eq!(
        texts(
            &c,
            "select attname, atttypid, atttypmod from pg_attribute \
             where attrelid = 'first_version'::regclass and attnum > 0 order by attnum"
        )
        .await,
        ["order_id 23 -1", "was 25 -1"]
    );
    let err = c.simple_query("select * from gone").await.unwrap_err();
    assert_eq!(sqlstate(&err), "42P01");
    // A name a dropped view had is free again.
    c.batch_execute("create table gone (x int)").await.unwrap();
}

#[tokio::test]
async fn prepared_statements_over_a_replaced_view_plan_again() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table t (a int primary key, b text);
         insert into t values (1, 'x'), (2, 'y');
         create view v as select a, b from t where a = 1;",
    )
    .await
    .unwrap();
    let by_key = c.prepare("select b from v where a = $1").await.unwrap();
    let read = |a: i32| {
        let c = &c;
        let by_key = &by_key;
        async move {
            c.query(by_key, &[&a])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(read(2).await, Vec::<String>::new());
    c.batch_execute("create or replace view v as select a, b from t")
        .await
        .unwrap();
    assert_eq!(read(2).await, ["y"]);
    // A view that changes its columns' types fails the prepared statement as PostgreSQL's
    // cached plans do (the view is dropped and created again: OR REPLACE keeps types).
    c.batch_execute("drop view v; create view v as select a, length(b) as b from t")
        .await
        .unwrap();
    let err = c.query(&by_key, &[&2]).await.unwrap_err();
    assert_eq!(sqlstate(&err), "0A000");
}

/// The messages of what views depend on, through psql as a user sees them: PostgreSQL 15's
/// words for the errors, their DETAIL and HINT, and CASCADE's NOTICE with its list.
#[test]
fn dependency_messages_through_psql() {
    let server = TestServer::start();
    let script = "\\set VERBOSITY default\n\
        create table t (a int, b text, c int);\n\
        create table u (a int, d int);\n\
        create view v as select a, b from t;\n\
        create view w as select * from v;\n\
        create view x as select t.a, u.d from t join u on t.a = u.a;\n\
        drop table t;\n\
        drop table t, u;\n\
        drop view v;\n\
        alter table t drop column b;\n\
        alter table u alter column d type bigint;\n\
        alter table t rename column a to a2;\n\
        alter table t rename to t2;\n\
        alter view v rename to v2;\n\
        select * from w order by 1;\n\
        drop table u cascade;\n\
        drop table t2 cascade;\n";
    let mut child = std::process::Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "postgres",
        ])
        .args(["-X", "-q", "-f", "-"])
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("psql is installed");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    // `psql:<stdin>:7: ERROR:  …` → `ERROR:  …`
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|line| match line.strip_prefix("psql:") {
            Some(rest) => rest.splitn(3, ':').nth(2).unwrap_or(rest).trim_start(),
            None => line,
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let expected = "\
ERROR:  cannot drop table t because other objects depend on it
DETAIL:  view v depends on table t
view w depends on view v
view x depends on table t
HINT:  Use DROP ... CASCADE to drop the dependent objects too.
ERROR:  cannot drop desired object(s) because other objects depend on them
DETAIL:  view v depends on table t
view w depends on view v
view x depends on table t
HINT:  Use DROP ... CASCADE to drop the dependent objects too.
ERROR:  cannot drop view v because other objects depend on it
DETAIL:  view w depends on view v
HINT:  Use DROP ... CASCADE to drop the dependent objects too.
ERROR:  cannot drop column b of table t because other objects depend on it
DETAIL:  view v depends on column b of table t
view w depends on view v
HINT:  Use DROP ... CASCADE to drop the dependent objects too.
ERROR:  cannot alter type of a column used by a view or rule
DETAIL:  rule _RETURN on view x depends on column \"d\"
NOTICE:  drop cascades to view x
NOTICE:  drop cascades to 2 other objects
DETAIL:  drop cascades to view v2
drop cascades to view w
";
    assert_eq!(stderr, expected);
}
