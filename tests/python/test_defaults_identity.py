"""Defaults and identity columns across engines: rows tarn fills from column defaults and an
identity sequence are ordinary values in the Paimon files, read by pypaimon as tarn reads
them; rows pypaimon writes (every column given, as Paimon writers do) are read by tarn, and
tarn's next identity values go on from its own sequence."""

import datetime

from test_pypaimon import assert_same_rows, connect, pg_rows, pp_read, pp_write


def test_defaults_and_identity_read_and_written_by_pypaimon():
    name = "tdi_events"
    with connect() as conn:
        conn.execute(
            f"""CREATE TABLE {name} (
                   id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                   kind TEXT DEFAULT 'click',
                   n INT NOT NULL DEFAULT 7,
                   at TIMESTAMP DEFAULT TIMESTAMP '2026-01-02 03:04:05')"""
        )
        ids = [
            conn.execute(f"INSERT INTO {name} (kind) VALUES ('view') RETURNING id").fetchone()[0],
            conn.execute(f"INSERT INTO {name} DEFAULT VALUES RETURNING id").fetchone()[0],
            conn.execute(
                f"INSERT INTO {name} (kind, n, at) VALUES (NULL, 1, NULL) RETURNING id"
            ).fetchone()[0],
        ]
        assert ids == [1, 2, 3]
        tarn_rows = pg_rows(conn, f"SELECT * FROM {name}")
    at = datetime.datetime(2026, 1, 2, 3, 4, 5)
    assert sorted(tarn_rows, key=lambda r: r["id"]) == [
        {"id": 1, "kind": "view", "n": 7, "at": at},
        {"id": 2, "kind": "click", "n": 7, "at": at},
        {"id": 3, "kind": None, "n": 1, "at": None},
    ]
    assert_same_rows(pp_read(name), tarn_rows, ["id"], "pypaimon reads tarn's defaults")

    # pypaimon writes whole rows; tarn reads them and its sequence goes on.
    pp_write(name, [{"id": 100, "kind": "pypaimon", "n": 5, "at": at}])
    with connect() as conn:
        nxt = conn.execute(f"INSERT INTO {name} (kind) VALUES ('after') RETURNING id").fetchone()[0]
        rows = pg_rows(conn, f"SELECT * FROM {name}")
    assert nxt == 4
    assert {r["id"]: r["kind"] for r in rows} == {
        1: "view",
        2: "click",
        3: None,
        4: "after",
        100: "pypaimon",
    }
    assert_same_rows(pp_read(name), rows, ["id"], "pypaimon after both engines wrote")
