"""SQLAlchemy 2.1: first connect with psycopg (version check, to_regtype type lookup), Core
DDL and DML, inspect() (tables, columns with nullability and numeric precision, primary key,
indexes), the ORM, and the asyncpg dialect."""

import asyncio
import decimal

from sqlalchemy import (Column, Date, Integer, MetaData, Numeric, String, Table, create_engine,
                        func, inspect, select, text)
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from harness import URL_TAIL, check, expect, name, run

T = name("cl_sa")
ORM_T = name("cl_sa_orm")
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
    Base.metadata.drop_all(engine, checkfirst=True)
    Base.metadata.create_all(engine)
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
    Base.metadata.drop_all(engine)


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
