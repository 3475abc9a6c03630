use std::sync::Arc;

use object_store::memory::InMemory;

use super::*;

const DB: &str = "public";

fn memory_io() -> FileIO {
    FileIO::new(Arc::new(InMemory::new()), None)
}

fn view(name: &str, sql: &str) -> ViewDef {
    ViewDef {
        schema: DB.to_owned(),
        name: name.to_owned(),
        sql: sql.to_owned(),
        columns: vec![ViewColumn {
            name: "a".to_owned(),
            type_oid: 23,
            typmod: -1,
        }],
        query_columns: vec!["a".to_owned()],
        search_path: vec![DB.to_owned()],
        comment: None,
        created_millis: 1,
        updated_millis: 1,
    }
}

#[tokio::test]
async fn create_get_list_and_replace() {
    let store = ViewStore::new(memory_io());
    assert_eq!(store.get(DB, "v").await.unwrap(), None);
    store
        .create(&view("v", "SELECT a FROM t"), false)
        .await
        .unwrap();
    store
        .create(&view("Odd name.ü", "SELECT 1 AS a"), false)
        .await
        .unwrap();
    assert_eq!(
        store.get(DB, "v").await.unwrap().unwrap().sql,
        "SELECT a FROM t"
    );
    let names: Vec<String> = store
        .list(DB)
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["Odd name.ü", "v"]);
    assert!(store.list("other").await.unwrap().is_empty());

    // A second CREATE fails; OR REPLACE replaces and keeps the creation time.
    let err = store
        .create(&view("v", "SELECT 2 AS a"), false)
        .await
        .unwrap_err();
    assert_eq!(
        (err.to_string().as_str(), err.sqlstate()),
        ("relation \"v\" already exists", "42P07")
    );
    let mut replacement = view("v", "SELECT a FROM t WHERE a > 1");
    replacement.created_millis = 5;
    replacement.updated_millis = 5;
    store.create(&replacement, true).await.unwrap();
    let got = store.get(DB, "v").await.unwrap().unwrap();
    assert_eq!(got.sql, "SELECT a FROM t WHERE a > 1");
    assert_eq!((got.created_millis, got.updated_millis), (1, 5));
}

#[tokio::test]
async fn drop_leaves_a_tombstone_and_numbers_go_on() {
    let io = memory_io();
    let store = ViewStore::new(io.clone());
    store
        .create(&view("v", "SELECT 1 AS a"), false)
        .await
        .unwrap();
    store
        .create(&view("v", "SELECT 2 AS a"), true)
        .await
        .unwrap();
    assert!(store.drop(DB, "v").await.unwrap());
    assert!(!store.drop(DB, "v").await.unwrap());
    assert_eq!(store.get(DB, "v").await.unwrap(), None);
    assert!(store.list(DB).await.unwrap().is_empty());
    // Only the tombstone is left, and a new view starts after it.
    assert_eq!(DOCS.versions(&store.io, DB, "v").await.unwrap(), [3]);
    store
        .create(&view("v", "SELECT 3 AS a"), false)
        .await
        .unwrap();
    assert_eq!(DOCS.versions(&store.io, DB, "v").await.unwrap(), [3, 4]);
    assert_eq!(
        store.get(DB, "v").await.unwrap().unwrap().sql,
        "SELECT 3 AS a"
    );
}

#[tokio::test]
async fn a_stale_server_cannot_revive_a_dropped_view() {
    let io = memory_io();
    let (a, b) = (ViewStore::new(io.clone()), ViewStore::new(io.clone()));
    a.create(&view("v", "SELECT 1 AS a"), false).await.unwrap();
    // b read version 1 and writes version 2 only after a dropped the view (version 2 is the
    // tombstone): b's put-if-absent loses, b reads again and finds no view.
    b.drop(DB, "v").await.unwrap();
    let doc = Doc {
        view: Some(view("v", "SELECT 9 AS a")),
    };
    assert!(!a.commit(DB, "v", 2, &doc).await.unwrap());
    // A write that lands in the hole under the tombstone does not count either.
    assert!(!a.commit(DB, "v", 1, &doc).await.unwrap());
    assert_eq!(a.get(DB, "v").await.unwrap(), None);
    let err = a
        .set_comment(DB, "v", Some("x".into()), 2)
        .await
        .unwrap_err();
    assert_eq!(err.sqlstate(), "42P01");
}

#[tokio::test]
async fn rename_and_comment() {
    let store = ViewStore::new(memory_io());
    store
        .create(&view("v", "SELECT 1 AS a"), false)
        .await
        .unwrap();
    store
        .create(&view("w", "SELECT 2 AS a"), false)
        .await
        .unwrap();
    store
        .set_comment(DB, "v", Some("hello".into()), 7)
        .await
        .unwrap();
    assert_eq!(
        store.rename(DB, "v", "w", 8).await.unwrap_err().sqlstate(),
        "42P07"
    );
    assert_eq!(
        store
            .rename(DB, "nope", "x", 8)
            .await
            .unwrap_err()
            .sqlstate(),
        "42P01"
    );
    store.rename(DB, "v", "v2", 8).await.unwrap();
    assert_eq!(store.get(DB, "v").await.unwrap(), None);
    let moved = store.get(DB, "v2").await.unwrap().unwrap();
    assert_eq!(
        (
            moved.sql.as_str(),
            moved.comment.as_deref(),
            moved.updated_millis
        ),
        ("SELECT 1 AS a", Some("hello"), 8)
    );
    store.set_comment(DB, "v2", None, 9).await.unwrap();
    assert_eq!(store.get(DB, "v2").await.unwrap().unwrap().comment, None);
}

#[tokio::test]
async fn the_listing_of_all_views_is_kept_until_a_change() {
    let io = memory_io();
    let (a, b) = (ViewStore::new(io.clone()), ViewStore::new(io.clone()));
    a.create(&view("v", "SELECT 1 AS a"), false).await.unwrap();
    let long = Duration::from_secs(3600);
    assert_eq!(a.all(long).await.unwrap().len(), 1);
    // Another server's change is seen once the listing is older than asked for.
    let mut other = view("w", "SELECT 1 AS a");
    other.schema = "sales".to_owned();
    b.create(&other, false).await.unwrap();
    assert_eq!(a.all(long).await.unwrap().len(), 1);
    let all = a.all(Duration::ZERO).await.unwrap();
    let names: Vec<(&str, &str)> = all
        .iter()
        .map(|v| (v.schema.as_str(), v.name.as_str()))
        .collect();
    assert_eq!(names, [("public", "v"), ("sales", "w")]);
    // This server's own change drops the listing at once.
    a.drop("sales", "w").await.unwrap();
    assert_eq!(a.all(long).await.unwrap().len(), 1);
}

#[tokio::test]
async fn names_with_a_slash_are_refused() {
    let store = ViewStore::new(memory_io());
    let err = store
        .create(&view("a/b", "SELECT 1 AS a"), false)
        .await
        .unwrap_err();
    assert_eq!(err.sqlstate(), "42602");
}
