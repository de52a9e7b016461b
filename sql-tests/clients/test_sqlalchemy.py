"""SQLAlchemy 2 (psycopg 3 driver) and pandas: connect (the dialect's start-up queries:
version, to_regtype for hstore, standard_conforming_strings, current_schema), Core DDL and
DML, the inspector's table and schema lists (LIKE ... ESCAPE '/'), and pandas' read_sql /
to_sql through an engine."""
import decimal

import pandas as pd
import sqlalchemy as sa


def engine(b):
    return sa.create_engine(f"postgresql+psycopg://{b['user']}@{b['host']}:{b['port']}/{b['dbname']}")


def test_core_round_trip_and_inspector(brook):
    e = engine(brook)
    md = sa.MetaData()
    t = sa.Table(
        "sa_items",
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(30)),
        sa.Column("price", sa.Numeric(10, 2)),
    )
    md.create_all(e)
    with e.begin() as c:
        c.execute(t.insert(), [{"id": 1, "name": "a", "price": decimal.Decimal("1.50")}, {"id": 2, "name": "b", "price": 2}])
    with e.connect() as c:
        rows = c.execute(sa.select(t).where(t.c.price > 1).order_by(t.c.id)).fetchall()
        assert [tuple(r) for r in rows] == [(1, "a", decimal.Decimal("1.50")), (2, "b", decimal.Decimal("2.00"))]
        assert c.execute(sa.select(sa.func.count()).select_from(t)).scalar() == 2
    insp = sa.inspect(e)
    assert "sa_items" in insp.get_table_names()
    assert "public" in insp.get_schema_names()
    assert insp.has_table("sa_items")
    e.dispose()


def test_pandas_reads_and_writes_through_an_engine(brook):
    e = engine(brook)
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    df.to_sql("pd_t", e, if_exists="replace", index=False)
    df.to_sql("pd_t", e, if_exists="append", index=False)
    back = pd.read_sql("SELECT a, b FROM pd_t ORDER BY a, b", e)
    assert back["a"].tolist() == [1, 1, 2, 2, 3, 3]
    assert back["b"].tolist() == ["x", "x", "y", "y", "z", "z"]
    e.dispose()


def test_reflection_reads_keys_indexes_defaults_and_types(brook):
    e = engine(brook)
    with e.begin() as c:
        c.execute(sa.text(
            "CREATE TABLE sa_reflect (id int, region text, code varchar(12) NOT NULL DEFAULT 'none',"
            " price numeric(10,2), seen timestamp, PRIMARY KEY (region, id))"
        ))
        c.execute(sa.text("CREATE INDEX sa_reflect_seen ON sa_reflect (seen)"))
        c.execute(sa.text("INSERT INTO sa_reflect VALUES (1, 'eu', 'a', 1.5, '2026-01-01 00:00:00')"))
    insp = sa.inspect(e)
    cols = {c["name"]: c for c in insp.get_columns("sa_reflect")}
    assert list(cols) == ["id", "region", "code", "price", "seen"]
    assert isinstance(cols["id"]["type"], sa.INTEGER)
    assert isinstance(cols["code"]["type"], sa.VARCHAR) and cols["code"]["type"].length == 12
    assert cols["code"]["nullable"] is False and cols["code"]["default"] == "'none'"
    assert cols["price"]["type"].precision == 10 and cols["price"]["type"].scale == 2
    assert isinstance(cols["seen"]["type"], sa.TIMESTAMP)
    assert cols["id"]["default"] is None and cols["seen"]["nullable"] is True
    pk = insp.get_pk_constraint("sa_reflect")
    assert pk["constrained_columns"] == ["region", "id"] and pk["name"] == "sa_reflect_pkey"
    indexes = insp.get_indexes("sa_reflect")
    assert [(i["name"], i["column_names"], i["unique"]) for i in indexes] == [("sa_reflect_seen", ["seen"], False)]
    assert insp.get_unique_constraints("sa_reflect") == []
    assert insp.get_foreign_keys("sa_reflect") == []
    t = sa.Table("sa_reflect", sa.MetaData(), autoload_with=e)
    assert [c.name for c in t.primary_key.columns] == ["region", "id"]
    assert [i.name for i in t.indexes] == ["sa_reflect_seen"]
    with e.connect() as c:
        assert c.execute(sa.select(t.c.code).where(t.c.id == 1)).scalar() == "a"
    # pandas reads a table by name through the same reflection
    df = pd.read_sql("sa_reflect", e)
    assert df["code"].tolist() == ["a"] and list(df.columns) == ["id", "region", "code", "price", "seen"]
    e.dispose()


def test_orm_autoincrement_keys_serial_and_identity(brook):
    """An Integer primary key is SERIAL (create_all), the ORM gets each new row's key back
    (INSERT ... RETURNING), an Identity() column is GENERATED ... AS IDENTITY; the SERIAL
    column reflects as autoincrementing with its nextval default."""
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class Base(DeclarativeBase):
        pass

    class Note(Base):
        __tablename__ = "sa_notes"
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str] = mapped_column(sa.String(40))

    class Event(Base):
        __tablename__ = "sa_events"
        id: Mapped[int] = mapped_column(sa.BigInteger, sa.Identity(always=True, start=10), primary_key=True)
        kind: Mapped[str] = mapped_column(sa.Text)

    e = engine(brook)
    Base.metadata.create_all(e)
    with Session(e) as s:
        notes = [Note(body="first"), Note(body="second")]
        s.add_all(notes)
        s.add(Event(kind="start"))
        s.commit()
        assert [n.id for n in notes] == [1, 2]
        assert s.scalars(sa.select(Event.id)).all() == [10]
        s.add(Note(body="third"))
        s.commit()
        assert s.scalars(sa.select(Note.id).order_by(Note.id)).all() == [1, 2, 3]
    insp = sa.inspect(e)
    note_id = {c["name"]: c for c in insp.get_columns("sa_notes")}["id"]
    assert note_id["autoincrement"] is True
    assert note_id["default"] == "nextval('sa_notes_id_seq'::regclass)"
    event_id = {c["name"]: c for c in insp.get_columns("sa_events")}["id"]
    assert (event_id["nullable"], event_id["default"]) == (False, None)
    assert "sa_notes_id_seq" in insp.get_sequence_names()
    Base.metadata.drop_all(e)
    assert "sa_notes_id_seq" not in sa.inspect(e).get_sequence_names()
    e.dispose()


def test_pandas_replaces_a_table_and_reads_it_by_name(brook):
    e = engine(brook)
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    df.to_sql("pd_r", e, if_exists="replace")
    df.to_sql("pd_r", e, if_exists="replace")
    back = pd.read_sql("pd_r", e)
    assert back["index"].tolist() == [0, 1]
    assert back["b"].tolist() == ["x", "y"]
    e.dispose()


def test_comments_and_renames_round_trip(brook):
    """create_all with comments emits COMMENT ON; the inspector reads them back; a table
    renamed with ALTER TABLE ... RENAME TO keeps its rows (dbt swaps tables so)."""
    e = engine(brook)
    md = sa.MetaData()
    t = sa.Table(
        "sa_commented",
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("qty", sa.Integer, comment="how many"),
        comment="stock on hand",
    )
    md.create_all(e)
    with e.begin() as c:
        c.execute(t.insert(), [{"id": 1, "qty": 5}])
    insp = sa.inspect(e)
    assert insp.get_table_comment("sa_commented") == {"text": "stock on hand"}
    assert {c["name"]: c["comment"] for c in insp.get_columns("sa_commented")} == {"id": None, "qty": "how many"}
    with e.begin() as c:
        c.execute(sa.text("ALTER TABLE sa_commented RENAME TO sa_renamed"))
        c.execute(sa.text("ALTER TABLE sa_renamed ALTER COLUMN qty SET DEFAULT 0"))
        c.execute(sa.text("INSERT INTO sa_renamed (id) VALUES (2)"))
    with e.connect() as c:
        assert c.execute(sa.text("SELECT id, qty FROM sa_renamed ORDER BY id")).fetchall() == [(1, 5), (2, 0)]
    assert sa.inspect(e).get_table_comment("sa_renamed") == {"text": "stock on hand"}
    with e.begin() as c:
        c.execute(sa.text("DROP TABLE sa_renamed"))
    e.dispose()


class NoSuchType(sa.types.UserDefinedType):
    cache_ok = True

    def get_col_spec(self, **kw):
        return "no_such_type"


def test_a_failed_create_all_and_a_rollback_leave_no_schema_behind(brook):
    """DDL commits with its transaction: `create_all` on one connection's transaction whose
    third table fails leaves none of the three (the first two stayed before), and a
    connection's rollback undoes its DROP TABLE with the table's rows."""
    e = engine(brook)
    bad = sa.MetaData()
    sa.Table("sa_half_a", bad, sa.Column("id", sa.Integer, primary_key=True, autoincrement=False))
    sa.Table("sa_half_b", bad, sa.Column("id", sa.Integer, primary_key=True, autoincrement=False))
    # A column type the server does not know: the third CREATE TABLE fails (42704).
    sa.Table("sa_half_c", bad, sa.Column("x", NoSuchType()))
    try:
        with e.begin() as c:
            bad.create_all(c)
    except sa.exc.DBAPIError as err:
        assert err.orig.sqlstate == "42704", err
    else:
        raise AssertionError("a table of an unknown type was created")
    insp = sa.inspect(e)
    assert not {"sa_half_a", "sa_half_b", "sa_half_c"} & set(insp.get_table_names())
    with e.begin() as c:
        c.execute(sa.text("CREATE TABLE sa_kept (i int)"))
        c.execute(sa.text("INSERT INTO sa_kept VALUES (1), (2)"))
    with e.connect() as c:
        c.execute(sa.text("DROP TABLE sa_kept"))
        c.rollback()
        assert c.execute(sa.text("SELECT count(*) FROM sa_kept")).scalar() == 2
    e.dispose()
