"""asyncpg: connect (its startup parameters), queries with parameters, type introspection of
result types, prepared statements, executemany, copy_records_to_table, transactions, pools
(whose reset sends pg_advisory_unlock_all, CLOSE ALL, UNLISTEN *, RESET ALL)."""

import asyncio
import datetime
import decimal

import asyncpg

from harness import DATABASE, HOST, PORT, USER, check, expect, name, run

T = name("cl_asyncpg")


def sync(coro_fn):
    def wrapper():
        return asyncio.run(coro_fn())
    wrapper.__name__ = coro_fn.__name__
    return wrapper


async def connect():
    return await asyncpg.connect(host=HOST, port=PORT, user=USER, database=DATABASE, timeout=20)


@check
@sync
async def connect_and_query():
    c = await connect()
    try:
        expect(await c.fetchval("SELECT 1 + $1::int", 41) == 42, "1 + 41")
    finally:
        await c.close()


@check
@sync
async def setup():
    c = await connect()
    try:
        await c.execute(f"DROP TABLE IF EXISTS {T}")
        await c.execute(f"CREATE TABLE {T} (id integer PRIMARY KEY, name text NOT NULL, "
                        f"price numeric(8,2), day date, tags text[])")
    finally:
        await c.close()


@check
@sync
async def parameters_and_types():
    c = await connect()
    try:
        await c.execute(f"INSERT INTO {T} VALUES ($1, $2, $3, $4, $5)", 1, "one",
                        decimal.Decimal("1.50"), datetime.date(2024, 1, 2), ["x", "y"])
        row = await c.fetchrow(f"SELECT * FROM {T} WHERE id = $1", 1)
        expect(tuple(row) == (1, "one", decimal.Decimal("1.50"), datetime.date(2024, 1, 2), ["x", "y"]), row)
    finally:
        await c.close()


@check
@sync
async def prepared_and_executemany():
    c = await connect()
    try:
        await c.executemany(f"INSERT INTO {T} (id, name) VALUES ($1, $2)", [(i, f"n{i}") for i in range(10, 15)])
        stmt = await c.prepare(f"SELECT name FROM {T} WHERE id = $1")
        expect(await stmt.fetchval(12) == "n12", "prepared fetch")
    finally:
        await c.close()


@check
@sync
async def copy_records_to_table():
    c = await connect()
    try:
        res = await c.copy_records_to_table(T, records=[(20 + i, f"c{i}") for i in range(5)], columns=["id", "name"])
        expect(res == "COPY 5", res)
        expect(await c.fetchval(f"SELECT count(*) FROM {T} WHERE id >= 20") == 5, "5 copied")
    finally:
        await c.close()


@check
@sync
async def transaction_rollback():
    c = await connect()
    try:
        try:
            async with c.transaction():
                await c.execute(f"INSERT INTO {T} (id, name) VALUES (30, 'gone')")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        expect(await c.fetchval(f"SELECT count(*) FROM {T} WHERE id = 30") == 0, "rolled back")
    finally:
        await c.close()


@check
@sync
async def pool_acquire_release():
    pool = await asyncpg.create_pool(host=HOST, port=PORT, user=USER, database=DATABASE, min_size=1, max_size=2)
    try:
        for _ in range(3):
            async with pool.acquire() as c:
                expect(await c.fetchval(f"SELECT count(*) FROM {T}") >= 1, "rows")
    finally:
        await pool.close()


@check
@sync
async def teardown():
    c = await connect()
    try:
        await c.execute(f"DROP TABLE {T}")
    finally:
        await c.close()


if __name__ == "__main__":
    run()
