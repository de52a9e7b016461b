"""psqlODBC through pyodbc: connect, tables(), columns(), parameterised execute."""
import pyodbc


def connect(b):
    return pyodbc.connect(
        f"DRIVER={{PostgreSQL Unicode}};SERVER={b['host']};PORT={b['port']};DATABASE={b['dbname']};UID={b['user']};PWD=x",
        autocommit=True,
    )


def test_odbc_roundtrip(brook):
    c = connect(brook)
    cur = c.cursor()
    cur.execute("CREATE TABLE odbc_t (id integer, name text)")
    cur.execute("INSERT INTO odbc_t VALUES (?, ?)", 1, "one")
    cur.execute("INSERT INTO odbc_t VALUES (?, ?)", 2, "two")
    cur.execute("SELECT id, name FROM odbc_t WHERE id > ? ORDER BY id", 0)
    assert [tuple(r) for r in cur.fetchall()] == [(1, "one"), (2, "two")]
    tables = [t.table_name for t in cur.tables(tableType="TABLE")]
    assert "odbc_t" in tables
    cols = [(col.column_name, col.type_name) for col in cur.columns(table="odbc_t")]
    assert ("id", "int4") in cols and ("name", "text") in cols
    c.close()
