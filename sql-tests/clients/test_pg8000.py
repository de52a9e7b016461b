"""pg8000 (pure-Python driver, extended protocol with typed parameters)."""
import pg8000.native


def test_pg8000_roundtrip(brook):
    con = pg8000.native.Connection(brook["user"], host=brook["host"], port=brook["port"], database=brook["dbname"])
    con.run("CREATE TABLE p8 (id int, name varchar(20), at timestamp)")
    con.run("INSERT INTO p8 VALUES (:id, :name, '2026-01-01 00:00:00')", id=1, name="one")
    con.run("INSERT INTO p8 VALUES (:id, :name, NULL)", id=2, name="two")
    rows = con.run("SELECT id, name FROM p8 WHERE id >= :m ORDER BY id", m=1)
    assert rows == [[1, "one"], [2, "two"]]
    assert con.run("SELECT count(*) FROM p8")[0][0] == 2
    con.close()
