"""SQLAlchemy 2.1: first connect with psycopg (version check, to_regtype type lookup), Core
DDL and DML, inspect() (tables, columns with nullability, numeric precision and identity,
primary key, indexes), the ORM, and the asyncpg dialect."""

import asyncio
import decimal

from sqlalchemy import (BigInteger, Column, Date, DateTime, Identity, Integer, MetaData, Numeric,
                        String, Table, create_engine, func, inspect, select, text)
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from harness import URL_TAIL, check, expect, name, run

T = name("cl_sa")
ORM_T = name("cl_sa_orm")
IDENT_T = name("cl_sa_ident")
SERIAL_T = name("cl_sa_serial")
IDREFL_T = name("cl_sa_idrefl")
engine = create_engine(f"postgresql+psycopg://{URL_TAIL}")
meta = MetaData()
table = Table(
    T, meta,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", String(40), nullable=False),
    Column("price", Numeric(6, 2)),
    Column("day", Date),
)


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = ORM_T
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    label: Mapped[str] = mapped_column(String(20))


class Event(Base):
    """Keys from an identity column, a server-side default, a default evaluated at insert."""
    __tablename__ = IDENT_T
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20), server_default="click")
    at = mapped_column(DateTime(timezone=True), server_default=func.now())


class Note(Base):
    """SQLAlchemy's default for an integer primary key: SERIAL."""
    __tablename__ = SERIAL_T
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str] = mapped_column(String(40))


@check
def first_connect():
    with engine.connect() as c:
        expect(c.execute(text("SELECT 1")).scalar() == 1, "select 1")


@check
def core_create_and_insert():
    meta.drop_all(engine, checkfirst=True)
    meta.create_all(engine)
    with engine.begin() as c:
        c.execute(table.insert(), [{"id": i, "name": f"n{i}", "price": decimal.Decimal(i) / 4} for i in range(1, 6)])
    with engine.connect() as c:
        total = c.execute(select(func.sum(table.c.price))).scalar()
        expect(total == decimal.Decimal("3.75"), total)


@check
def inspect_tables_and_columns():
    insp = inspect(engine)
    expect(T in insp.get_table_names(), insp.get_table_names())
    cols = {c["name"]: c for c in insp.get_columns(T)}
    expect(cols["name"]["nullable"] is False, cols["name"])
    expect(cols["price"]["nullable"] is True, cols["price"])
    price = cols["price"]["type"]
    expect((price.precision, price.scale) == (6, 2), repr(price))
    expect(getattr(cols["name"]["type"], "length", None) == 40, repr(cols["name"]["type"]))


@check
def inspect_primary_key():
    pk = inspect(engine).get_pk_constraint(T)
    expect(pk["constrained_columns"] == ["id"], pk)


@check
def inspect_indexes():
    inspect(engine).get_indexes(T)


@check
def orm_session():
    tables = [Item.__table__]
    Base.metadata.drop_all(engine, tables=tables, checkfirst=True)
    Base.metadata.create_all(engine, tables=tables)
    with Session(engine) as s:
        s.add_all([Item(id=1, label="a"), Item(id=2, label="b")])
        s.commit()
    with Session(engine) as s:
        item = s.get(Item, 2)
        expect(item is not None and item.label == "b", item)
        item.label = "bb"
        s.commit()
    with Session(engine) as s:
        expect(s.scalars(select(Item.label).order_by(Item.id)).all() == ["a", "bb"], "orm update")
    Base.metadata.drop_all(engine, tables=tables)


@check
def orm_identity_keys():
    """Rows inserted without ids get them from the table's sequence; the ORM reads them back
    (RETURNING), server defaults fill the omitted columns, and reflection sees the identity."""
    tables = [Event.__table__, Note.__table__]
    Base.metadata.drop_all(engine, tables=tables, checkfirst=True)
    Base.metadata.create_all(engine, tables=tables)
    try:
        with Session(engine) as s:
            events = [Event(kind="view"), Event(), Event(kind="buy")]
            notes = [Note(body=f"n{i}") for i in range(3)]
            s.add_all(events + notes)
            s.commit()
            ids = [e.id for e in events]
            expect(ids == sorted(ids) and len(set(ids)) == 3 and ids[0] >= 1, ids)
            note_ids = [n.id for n in notes]
            expect(len(set(note_ids)) == 3 and all(i >= 1 for i in note_ids), note_ids)
            expect(events[1].kind == "click", events[1].kind)
        with Session(engine) as s:
            rows = s.execute(select(Event.id, Event.kind, Event.at.is_not(None)).order_by(Event.id)).all()
            expect([(r[0], r[1], r[2]) for r in rows] == [(ids[0], "view", True), (ids[1], "click", True),
                                                          (ids[2], "buy", True)], rows)
            one = s.get(Note, note_ids[1])
            expect(one is not None and one.body == "n1", one)
        # Reflection (Alembic's autogenerate reads it) works on such a table.
        columns = {c["name"]: c for c in inspect(engine).get_columns(IDENT_T)}
        expect(not columns["id"]["nullable"], columns["id"])
        expect("click" in str(columns["kind"]["default"]), columns["kind"])
        with engine.connect() as c:
            seq = c.execute(text(f"select pg_get_serial_sequence('{SERIAL_T}', 'id')")).scalar()
            expect(seq == f"public.{SERIAL_T}_id_seq", seq)
    finally:
        Base.metadata.drop_all(engine, tables=tables)


@check
def inspect_identity_columns():
    """get_columns reports a GENERATED ... AS IDENTITY column's identity (always, start,
    increment) from its sequence, and none for a plain column."""
    t = Table(
        IDREFL_T, MetaData(),
        Column("id", BigInteger, Identity(always=True, start=3, increment=2), primary_key=True),
        Column("n", Integer, Identity(always=False, start=10)),
        Column("v", String(10)),
    )
    t.drop(engine, checkfirst=True)
    t.create(engine)
    try:
        cols = {c["name"]: c for c in inspect(engine).get_columns(IDREFL_T)}
        ident = cols["id"].get("identity")
        expect(isinstance(ident, dict), cols["id"])
        expect((ident["always"], ident["start"], ident["increment"]) == (True, 3, 2), ident)
        by_default = cols["n"].get("identity")
        expect(isinstance(by_default, dict), cols["n"])
        expect((by_default["always"], by_default["start"], by_default["increment"]) == (False, 10, 1),
               by_default)
        expect(cols["id"]["autoincrement"] is True, cols["id"])
        expect(cols["v"].get("identity") is None, cols["v"])
    finally:
        t.drop(engine)


@check
def asyncpg_dialect():
    async def go():
        aengine = create_async_engine(f"postgresql+asyncpg://{URL_TAIL}")
        try:
            async with aengine.connect() as c:
                n = (await c.execute(select(func.count()).select_from(table))).scalar()
                expect(n == 5, n)
        finally:
            await aengine.dispose()
    asyncio.run(go())


@check
def teardown():
    meta.drop_all(engine)


if __name__ == "__main__":
    run()
