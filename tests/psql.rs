//! psql, the client people type at: `-c`, `-f`, meta-commands, and what it shows.

mod common;

use std::process::Command;

use common::{TempDir, TestServer};

fn psql(server: &TestServer, args: &[&str]) -> std::process::Output {
    Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "ann",
            "-d",
            "shop",
        ])
        .args(["-X", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("psql is installed (apt-get install postgresql-client-15)")
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "psql failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn psql_c_select_one() {
    let server = TestServer::start();
    let out = stdout(&psql(&server, &["-c", "select 1"]));
    assert!(out.contains("?column?"), "{out}");
    assert!(out.contains("(1 row)"), "{out}");
    let out = stdout(&psql(
        &server,
        &["-At", "-c", "select current_database(), current_user"],
    ));
    assert_eq!(out.trim(), "shop|ann");
}

#[test]
fn psql_f_runs_a_script_and_stops_at_the_first_error() {
    let server = TestServer::start();
    let dir = TempDir::new("psql");
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "-- a comment; select 'not run'\n\
         create schema reports;\n\
         set search_path = reports, public;\n\
         select current_schema() as s;\n\
         begin;\n\
         select 2 as two;\n\
         commit;\n",
    )
    .unwrap();
    let out = stdout(&psql(&server, &["-At", "-f", script.to_str().unwrap()]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        ["CREATE SCHEMA", "SET", "reports", "BEGIN", "2", "COMMIT"]
    );
    assert!(server.warehouse.path().join("reports.db").is_dir());

    std::fs::write(&script, "select 1;\nselect * from missing;\nselect 3;\n").unwrap();
    let out = psql(&server, &["-At", "-f", script.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("relation \"missing\" does not exist"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
}

#[test]
fn psql_shows_errors_warnings_and_transaction_state() {
    let server = TestServer::start();
    let out = psql(&server, &["-c", "selec 1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("syntax error"));
    // COMMIT outside a block warns, like PostgreSQL.
    let out = psql(&server, &["-c", "commit"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("WARNING:  there is no transaction in progress")
    );
    // psql reads the server version from ParameterStatus and picks its catalog queries by it.
    let out = stdout(&psql(
        &server,
        &[
            "-At",
            "-c",
            "\\echo :SERVER_VERSION_NAME :SERVER_VERSION_NUM",
        ],
    ));
    assert_eq!(out.trim(), "15.0 150000");
}

#[test]
fn psql_meta_commands_list_schemas() {
    let server = TestServer::start();
    stdout(&psql(&server, &["-c", "create schema analytics"]));
    let out = stdout(&psql(&server, &["-c", "\\dn"]));
    assert!(out.contains("analytics") && out.contains("public"), "{out}");
}

/// The session of the Paimon tables issue, typed at psql: create, insert, aggregate, an append
/// table, `\dt`, and the same rows read back.
#[test]
fn psql_orders_session() {
    let server = TestServer::start();
    let dir = TempDir::new("psql-orders");
    let script = dir.path().join("orders.sql");
    std::fs::write(
        &script,
        "CREATE TABLE orders (\n\
           id BIGINT, customer TEXT NOT NULL, amount NUMERIC(12,2), status TEXT,\n\
           placed_at TIMESTAMP, dt DATE NOT NULL, PRIMARY KEY (id, dt)\n\
         ) PARTITIONED BY (dt) WITH (bucket = 4);\n\
         INSERT INTO orders VALUES (1, 'ann', 12.50, 'new', '2026-12-01 10:00', '2026-12-01'),\n\
           (2, 'bob', 3.25, 'paid', '2026-12-01 11:30', '2026-12-01'),\n\
           (3, 'cy', 7, 'new', '2026-12-02 09:00', '2026-12-02');\n\
         INSERT INTO orders SELECT i, 'c' || i, i * 0.5, 'new', timestamp '2026-12-01 12:00', \
           date '2026-12-01' FROM generate_series(10, 19) AS t(i);\n\
         SELECT status, sum(amount) FROM orders WHERE dt = '2026-12-01' GROUP BY status ORDER BY 1;\n\
         CREATE TABLE clicks (ts TIMESTAMPTZ, url TEXT, user_id BIGINT);\n\
         INSERT INTO clicks VALUES ('2026-12-01 10:00:00+00', '/a', 1), ('2026-12-01 10:00:01+00', '/b', 2);\n\
         SELECT * FROM orders WHERE id = 1;\n\
         \\dt\n",
    )
    .unwrap();
    let out = stdout(&psql(&server, &["-f", script.to_str().unwrap()]));
    for expected in [
        "CREATE TABLE",
        "INSERT 0 3",
        "INSERT 0 10",
        " new    | 85.00",
        " paid   |  3.25",
        "INSERT 0 2",
        "  1 | ann      |  12.50 | new    | 2026-12-01 10:00:00 | 2026-12-01",
        " public | clicks | table",
        " public | orders | table",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    // An existing key is refused with PostgreSQL's error, and nothing changes.
    let out = psql(
        &server,
        &[
            "-c",
            "INSERT INTO orders VALUES (1, 'x', 1, 'x', now(), '2026-12-01')",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("duplicate key value violates unique constraint \"orders_pkey\"")
            && err.contains("Key (id, dt)=(1, 2026-12-01) already exists."),
        "{err}"
    );
    let out = stdout(&psql(
        &server,
        &["-At", "-c", "SELECT count(*) FROM orders"],
    ));
    assert_eq!(out.trim(), "13");
}

/// The rows the COPY tests read: NULLs, empty strings, quotes, tabs, newlines, CR, backslashes,
/// `\N` and `\.` as text, control characters, unicode, numerics, floats, booleans, dates,
/// timestamps, arrays.
const COPY_ROWS: &str = r#"drop table if exists psql_copy_t;
create table psql_copy_t (id int primary key, txt text, num numeric(10,2), f float8, b boolean, d date, ts timestamp, tz timestamptz, arr int[], tarr text[]);
insert into psql_copy_t values
 (1, 'plain', 1.50, 0.1, true, '2024-01-02', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05+00', '{1,2}', '{a,"b c"}'),
 (2, '', -0.05, -1e300, false, '0001-01-01', '2024-02-29 00:00:00', '2024-06-01 12:00:00+02', '{}', '{}'),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (4, E'tab\there', 100, 'NaN', true, '2024-12-31', '1999-12-31 23:59:59.999999', '2024-01-01 00:00:00+00', '{NULL,3}', '{NULL,""}'),
 (5, E'line1\nline2\r\nend', 0, 'Infinity', false, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{-1}', array['quote"d', 'comma,', 'back\slash']),
 (6, 'back\slash \N', 2, 1.5, true, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{7}', '{x}'),
 (7, 'say "hi", ok', 3, -0.0, false, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{8}', '{y}'),
 (8, 'unicode: é 日本 🎉', 4, 1e-7, true, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{9}', '{z}'),
 (9, '\.', 5, 12345.678, true, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{10}', '{w}'),
 (10, 'NULL', 6, 2.5, true, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{11}', '{v}'),
 (11, E'ctl\x01\x08\x0b\x0cx|pipe;semi''apos', 7, 3.5, true, '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00', '{12}', '{u}');"#;

/// `\copy` and `COPY ... TO STDOUT` typed at psql, and what PostgreSQL 15 prints for each over
/// [`COPY_ROWS`] (recorded from PostgreSQL 15; checked against it again when `TARN_PG15_PORT`
/// is set).
const COPY_CASES: &[(&str, &str)] = &[
    (
        r#"\copy (select * from psql_copy_t order by id) to stdout"#,
        concat!(
            "1\tplain\t1.50\t0.1\tt\t2024-01-02\t2024-01-02 03:04:05.5\t2024-01-02 03:04:05+00\t{1,2}\t{a,\"b c\"}\n",
            "2\t\t-0.05\t-1e+300\tf\t0001-01-01\t2024-02-29 00:00:00\t2024-06-01 10:00:00+00\t{}\t{}\n",
            "3\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n",
            "4\ttab\\there\t100.00\tNaN\tt\t2024-12-31\t1999-12-31 23:59:59.999999\t2024-01-01 00:00:00+00\t{NULL,3}\t{NULL,\"\"}\n",
            "5\tline1\\nline2\\r\\nend\t0.00\tInfinity\tf\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{-1}\t{\"quote\\\\\"d\",\"comma,\",\"back\\\\\\\\slash\"}\n",
            "6\tback\\\\slash \\\\N\t2.00\t1.5\tt\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{7}\t{x}\n",
            "7\tsay \"hi\", ok\t3.00\t0\tf\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{8}\t{y}\n",
            "8\tunicode: é 日本 🎉\t4.00\t1e-07\tt\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{9}\t{z}\n",
            "9\t\\\\.\t5.00\t12345.678\tt\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{10}\t{w}\n",
            "10\tNULL\t6.00\t2.5\tt\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{11}\t{v}\n",
            "11\tctl\u{1}\\b\\v\\fx|pipe;semi'apos\t7.00\t3.5\tt\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\t{12}\t{u}\n",
        ),
    ),
    (
        r#"\copy (select * from psql_copy_t order by id) to stdout with (format csv, header)"#,
        concat!(
            "id,txt,num,f,b,d,ts,tz,arr,tarr\n",
            "1,plain,1.50,0.1,t,2024-01-02,2024-01-02 03:04:05.5,2024-01-02 03:04:05+00,\"{1,2}\",\"{a,\"\"b c\"\"}\"\n",
            "2,\"\",-0.05,-1e+300,f,0001-01-01,2024-02-29 00:00:00,2024-06-01 10:00:00+00,{},{}\n",
            "3,,,,,,,,,\n",
            "4,tab\there,100.00,NaN,t,2024-12-31,1999-12-31 23:59:59.999999,2024-01-01 00:00:00+00,\"{NULL,3}\",\"{NULL,\"\"\"\"}\"\n",
            "5,\"line1\n",
            "line2\r\n",
            "end\",0.00,Infinity,f,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{-1},\"{\"\"quote\\\"\"d\"\",\"\"comma,\"\",\"\"back\\\\slash\"\"}\"\n",
            "6,back\\slash \\N,2.00,1.5,t,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{7},{x}\n",
            "7,\"say \"\"hi\"\", ok\",3.00,0,f,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{8},{y}\n",
            "8,unicode: é 日本 🎉,4.00,1e-07,t,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{9},{z}\n",
            "9,\\.,5.00,12345.678,t,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{10},{w}\n",
            "10,NULL,6.00,2.5,t,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{11},{v}\n",
            "11,ctl\u{1}\u{8}\u{b}\u{c}x|pipe;semi'apos,7.00,3.5,t,2024-01-01,2024-01-01 00:00:00,2024-01-01 00:00:00+00,{12},{u}\n",
        ),
    ),
    (
        r#"\copy (select id, txt from psql_copy_t order by id) to stdout csv header"#,
        concat!(
            "id,txt\n",
            "1,plain\n",
            "2,\"\"\n",
            "3,\n",
            "4,tab\there\n",
            "5,\"line1\n",
            "line2\r\n",
            "end\"\n",
            "6,back\\slash \\N\n",
            "7,\"say \"\"hi\"\", ok\"\n",
            "8,unicode: é 日本 🎉\n",
            "9,\\.\n",
            "10,NULL\n",
            "11,ctl\u{1}\u{8}\u{b}\u{c}x|pipe;semi'apos\n",
        ),
    ),
    (
        r#"\copy (select id, txt, num from psql_copy_t order by id) to stdout with (format csv, delimiter ';', null 'NULL', quote '''', escape '\', force_quote (txt))"#,
        concat!(
            "1;'plain';1.50\n",
            "2;'';-0.05\n",
            "3;NULL;NULL\n",
            "4;'tab\there';100.00\n",
            "5;'line1\n",
            "line2\r\n",
            "end';0.00\n",
            "6;'back\\\\slash \\\\N';2.00\n",
            "7;'say \"hi\", ok';3.00\n",
            "8;'unicode: é 日本 🎉';4.00\n",
            "9;'\\\\.';5.00\n",
            "10;'NULL';6.00\n",
            "11;'ctl\u{1}\u{8}\u{b}\u{c}x|pipe;semi\\'apos';7.00\n",
        ),
    ),
    (
        r#"\copy (select id, txt, b from psql_copy_t order by id) to stdout with (format csv, force_quote *)"#,
        concat!(
            "\"1\",\"plain\",\"t\"\n",
            "\"2\",\"\",\"f\"\n",
            "\"3\",,\n",
            "\"4\",\"tab\there\",\"t\"\n",
            "\"5\",\"line1\n",
            "line2\r\n",
            "end\",\"f\"\n",
            "\"6\",\"back\\slash \\N\",\"t\"\n",
            "\"7\",\"say \"\"hi\"\", ok\",\"f\"\n",
            "\"8\",\"unicode: é 日本 🎉\",\"t\"\n",
            "\"9\",\"\\.\",\"t\"\n",
            "\"10\",\"NULL\",\"t\"\n",
            "\"11\",\"ctl\u{1}\u{8}\u{b}\u{c}x|pipe;semi'apos\",\"t\"\n",
        ),
    ),
    (
        r#"\copy (select id, txt from psql_copy_t order by id) to stdout with (delimiter '|', null '<null>', header)"#,
        concat!(
            "id|txt\n",
            "1|plain\n",
            "2|\n",
            "3|<null>\n",
            "4|tab\\there\n",
            "5|line1\\nline2\\r\\nend\n",
            "6|back\\\\slash \\\\N\n",
            "7|say \"hi\", ok\n",
            "8|unicode: é 日本 🎉\n",
            "9|\\\\.\n",
            "10|NULL\n",
            "11|ctl\u{1}\\b\\v\\fx\\|pipe;semi'apos\n",
        ),
    ),
    (
        r#"\copy (select txt from psql_copy_t order by id) to stdout csv"#,
        concat!(
            "plain\n",
            "\"\"\n",
            "\n",
            "tab\there\n",
            "\"line1\n",
            "line2\r\n",
            "end\"\n",
            "back\\slash \\N\n",
            "\"say \"\"hi\"\", ok\"\n",
            "unicode: é 日本 🎉\n",
            "\"\\.\"\n",
            "NULL\n",
            "ctl\u{1}\u{8}\u{b}\u{c}x|pipe;semi'apos\n",
        ),
    ),
    (
        r#"\copy (select txt as "we""ird, name" from psql_copy_t where id = 1) to stdout csv header"#,
        concat!("\"we\"\"ird, name\"\n", "plain\n",),
    ),
    (
        r#"\copy (select 1 as a, null as b, '' as c) to stdout with csv header force quote a, b, c"#,
        concat!("a,b,c\n", "\"1\",,\"\"\n",),
    ),
    (
        r#"\copy (select id, arr, tarr from psql_copy_t order by id) to stdout with (format csv)"#,
        concat!(
            "1,\"{1,2}\",\"{a,\"\"b c\"\"}\"\n",
            "2,{},{}\n",
            "3,,\n",
            "4,\"{NULL,3}\",\"{NULL,\"\"\"\"}\"\n",
            "5,{-1},\"{\"\"quote\\\"\"d\"\",\"\"comma,\"\",\"\"back\\\\slash\"\"}\"\n",
            "6,{7},{x}\n",
            "7,{8},{y}\n",
            "8,{9},{z}\n",
            "9,{10},{w}\n",
            "10,{11},{v}\n",
            "11,{12},{u}\n",
        ),
    ),
    (
        r#"\copy (select id, d, ts, tz from psql_copy_t order by id) to stdout"#,
        concat!(
            "1\t2024-01-02\t2024-01-02 03:04:05.5\t2024-01-02 03:04:05+00\n",
            "2\t0001-01-01\t2024-02-29 00:00:00\t2024-06-01 10:00:00+00\n",
            "3\t\\N\t\\N\t\\N\n",
            "4\t2024-12-31\t1999-12-31 23:59:59.999999\t2024-01-01 00:00:00+00\n",
            "5\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
            "6\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
            "7\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
            "8\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
            "9\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
            "10\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
            "11\t2024-01-01\t2024-01-01 00:00:00\t2024-01-01 00:00:00+00\n",
        ),
    ),
    (
        r#"\copy (select id, f, num from psql_copy_t order by id) to stdout (format csv)"#,
        concat!(
            "1,0.1,1.50\n",
            "2,-1e+300,-0.05\n",
            "3,,\n",
            "4,NaN,100.00\n",
            "5,Infinity,0.00\n",
            "6,1.5,2.00\n",
            "7,0,3.00\n",
            "8,1e-07,4.00\n",
            "9,12345.678,5.00\n",
            "10,2.5,6.00\n",
            "11,3.5,7.00\n",
        ),
    ),
    (
        r#"\copy (select * from psql_copy_t where false) to stdout csv header"#,
        "id,txt,num,f,b,d,ts,tz,arr,tarr\n",
    ),
    (
        r#"copy (select 1 as x, E'a\tb' as y) to stdout"#,
        "1\ta\\tb\n",
    ),
    (
        r#"copy (values (1, 'one'), (2, null)) to stdout with (format csv, header true, null '-')"#,
        concat!("column1,column2\n", "1,one\n", "2,-\n",),
    ),
];

/// psql against `port` with the session time zone UTC (PGTZ), as PostgreSQL 15's tests run.
fn psql_at(port: u16, user: &str, database: &str, args: &[&str]) -> std::process::Output {
    Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            user,
            "-d",
            database,
        ])
        .args(["-X", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .env("PGTZ", "UTC")
        .output()
        .expect("psql is installed (apt-get install postgresql-client-15)")
}

#[test]
fn psql_copy_to_stdout_is_what_postgres_prints() {
    let server = TestServer::start();
    let mut targets = vec![("tarn", server.port, "ann", "shop")];
    if let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        targets.push(("postgresql 15", port, "postgres", "postgres"));
    }
    for (name, port, user, database) in targets {
        stdout(&psql_at(port, user, database, &["-q", "-c", COPY_ROWS]));
        for (command, expected) in COPY_CASES {
            let out = stdout(&psql_at(port, user, database, &["-c", command]));
            assert_eq!(out, *expected, "{name}: {command}");
        }
    }
}

#[test]
fn psql_copy_to_a_file_the_table_form_versions_and_refusals() {
    let server = TestServer::start();
    let dir = TempDir::new("psql-copy");
    stdout(&psql(
        &server,
        &[
            "-c",
            "create table pc (id int primary key, v text)",
            "-c",
            "insert into pc values (1, 'a'), (2, 'b, c'), (3, null)",
            "-c",
            "update pc set v = 'B' where id = 2",
        ],
    ));
    // `\copy ... to 'file'`: psql writes the file, the server sends COPY TO STDOUT.
    let file = dir.path().join("out.csv");
    let command = format!(
        "\\copy (select * from pc order by id) to '{}' with (format csv, header)",
        file.display()
    );
    let out = stdout(&psql(&server, &["-c", &command]));
    assert_eq!(out, "COPY 3\n");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "id,v\n1,a\n2,B\n3,\n"
    );
    // The table form, with and without a column list (rows in any order).
    let sorted = |out: String| {
        let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    let out = stdout(&psql(&server, &["-c", "\\copy pc to stdout"]));
    assert_eq!(sorted(out), ["1\ta", "2\tB", "3\t\\N"]);
    let out = stdout(&psql(&server, &["-c", "\\copy pc (v, id) to stdout csv"]));
    assert_eq!(sorted(out), [",3", "B,2", "a,1"]);
    // The query reads an old version of the table.
    let out = stdout(&psql(
        &server,
        &[
            "-c",
            "\\copy (select * from pc version as of 1 order by id) to stdout csv",
        ],
    ));
    assert_eq!(out, "1,a\n2,\"b, c\"\n3,\n");
    // In a block, COPY reads the block's own writes; ROLLBACK drops them.
    let script = dir.path().join("block.sql");
    std::fs::write(
        &script,
        "begin;\ninsert into pc values (4, 'mine');\n\\copy (select id from pc order by id) to stdout\nrollback;\n\\copy (select count(*) from pc) to stdout\n",
    )
    .unwrap();
    let out = stdout(&psql(&server, &["-q", "-f", script.to_str().unwrap()]));
    assert_eq!(out, "1\n2\n3\n4\n3\n");
    // Server files are refused with 0A000, and no file is written.
    let target = dir.path().join("server-side.csv");
    for command in [
        format!("copy pc to '{}'", target.display()),
        format!("copy pc from '{}'", target.display()),
    ] {
        let out = psql(&server, &["-v", "VERBOSITY=verbose", "-c", &command]);
        assert!(!out.status.success(), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("ERROR:  0A000:"), "{command}: {err}");
    }
    assert!(!target.exists());
}

/// `\copy t from 'file'` (psql sends COPY FROM STDIN and the file's lines as CopyData) in CSV
/// and text, a failing line, and `\copy t to 'file'` giving the loaded rows back; the same
/// script and expectations against PostgreSQL 15 when `TARN_PG15_PORT` is set.
#[test]
fn psql_copy_from_a_file_as_postgres_does() {
    let server = TestServer::start();
    let dir = TempDir::new("psql-copy-from");
    let mut targets = vec![("tarn", server.port, "ann", "shop")];
    if let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        targets.push(("postgresql 15", port, "postgres", "postgres"));
    }
    let csv = dir.path().join("in.csv");
    let csv_text = "id,name,born\n1,\"Smith, Ann\",1990-05-17\n2,,\n3,\"multi\nline\",2000-02-29\n";
    std::fs::write(&csv, csv_text).unwrap();
    let text = dir.path().join("in.txt");
    std::fs::write(&text, "4\ttab\\there\t\\N\n5\t\\N\t2024-01-05\n").unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "6,x,2000-01-01\n7,y,not-a-date\n").unwrap();
    let out_file = dir.path().join("out.csv");
    for (name, port, user, database) in targets {
        let run = |args: &[&str]| psql_at(port, user, database, args);
        stdout(&run(&[
            "-q",
            "-c",
            "drop table if exists pcf",
            "-c",
            "create table pcf (id int primary key, name text, born date)",
        ]));
        let load = format!("\\copy pcf from '{}' csv header", csv.display());
        assert_eq!(stdout(&run(&["-c", &load])), "COPY 3\n", "{name}");
        let load = format!("\\copy pcf from '{}'", text.display());
        assert_eq!(stdout(&run(&["-c", &load])), "COPY 2\n", "{name}");
        let load = format!("\\copy pcf from '{}' with (format csv)", bad.display());
        let out = run(&["-c", &load]);
        assert!(!out.status.success(), "{name}");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            err.contains("ERROR:  invalid input syntax for type date: \"not-a-date\"")
                && err.contains("CONTEXT:  COPY pcf, line 2, column born: \"not-a-date\""),
            "{name}: {err}"
        );
        let dump = format!(
            "\\copy (select * from pcf order by id) to '{}' csv header",
            out_file.display()
        );
        assert_eq!(stdout(&run(&["-c", &dump])), "COPY 5\n", "{name}");
        assert_eq!(
            std::fs::read_to_string(&out_file).unwrap(),
            "id,name,born\n1,\"Smith, Ann\",1990-05-17\n2,,\n3,\"multi\nline\",2000-02-29\n\
             4,tab\there,\n5,,2024-01-05\n",
            "{name}"
        );
    }
}

/// `\d`, `\d+`, `\dt`, `\di` of a table with a composite primary key, NOT NULL columns and
/// typed columns (`character(8)`, `numeric(10,2)`), as PostgreSQL 15 prints them (recorded
/// from it; checked against it again when `TARN_PG15_PORT` is set).
const DESCRIBE_TABLE: &str = "create table cat_lines (order_id int, line int, sku char(8), qty bigint not null, price numeric(10,2), note varchar(40), primary key (order_id, line))";

const DESCRIBE_CASES: &[(&str, &str)] = &[
    (
        "\\d cat_lines",
        concat!(
            "                     Table \"public.cat_lines\"\n",
            "  Column  |         Type          | Collation | Nullable | Default \n",
            "----------+-----------------------+-----------+----------+---------\n",
            " order_id | integer               |           | not null | \n",
            " line     | integer               |           | not null | \n",
            " sku      | character(8)          |           |          | \n",
            " qty      | bigint                |           | not null | \n",
            " price    | numeric(10,2)         |           |          | \n",
            " note     | character varying(40) |           |          | \n",
            "Indexes:\n",
            "    \"cat_lines_pkey\" PRIMARY KEY, btree (order_id, line)\n",
            "\n",
        ),
    ),
    (
        "\\d+ cat_lines",
        concat!(
            "                                                Table \"public.cat_lines\"\n",
            "  Column  |         Type          | Collation | Nullable | Default | Storage  | Compression | Stats target | Description \n",
            "----------+-----------------------+-----------+----------+---------+----------+-------------+--------------+-------------\n",
            " order_id | integer               |           | not null |         | plain    |             |              | \n",
            " line     | integer               |           | not null |         | plain    |             |              | \n",
            " sku      | character(8)          |           |          |         | extended |             |              | \n",
            " qty      | bigint                |           | not null |         | plain    |             |              | \n",
            " price    | numeric(10,2)         |           |          |         | main     |             |              | \n",
            " note     | character varying(40) |           |          |         | extended |             |              | \n",
            "Indexes:\n",
            "    \"cat_lines_pkey\" PRIMARY KEY, btree (order_id, line)\n",
            "Access method: heap\n",
            "\n",
        ),
    ),
    (
        "\\dt cat_lines",
        concat!(
            "           List of relations\n",
            " Schema |   Name    | Type  |  Owner   \n",
            "--------+-----------+-------+----------\n",
            " public | cat_lines | table | postgres\n",
            "(1 row)\n",
            "\n",
        ),
    ),
    (
        "\\di cat_lines_pkey",
        concat!(
            "                   List of relations\n",
            " Schema |      Name      | Type  |  Owner   |   Table   \n",
            "--------+----------------+-------+----------+-----------\n",
            " public | cat_lines_pkey | index | postgres | cat_lines\n",
            "(1 row)\n",
            "\n",
        ),
    ),
];

#[test]
fn psql_describes_tables_as_postgres_does() {
    let server = TestServer::start();
    let mut targets = vec![("tarn", server.port)];
    if let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        targets.push(("postgresql 15", port));
    }
    for (name, port) in targets {
        stdout(&psql_at(
            port,
            "postgres",
            "postgres",
            &[
                "-q",
                "-c",
                "drop table if exists cat_lines",
                "-c",
                DESCRIBE_TABLE,
            ],
        ));
        for (command, expected) in DESCRIBE_CASES {
            let out = psql_at(port, "postgres", "postgres", &["-c", command]);
            assert_eq!(stdout(&out), *expected, "{name}: {command}");
        }
        // \df, \dn, \l, \du run (their rows differ: PostgreSQL's own roles and databases).
        for command in ["\\df", "\\dn", "\\l", "\\du", "\\dv"] {
            stdout(&psql_at(port, "postgres", "postgres", &["-c", command]));
        }
        stdout(&psql_at(
            port,
            "postgres",
            "postgres",
            &["-q", "-c", "drop table cat_lines"],
        ));
    }
}
