"""A portal's statement runs once, as in PostgreSQL: an Execute of a portal that ran to its
end returns no more rows, or is refused (55000) when the statement returned none. Before, an
INSERT's or UPDATE's portal executed twice wrote twice. Drivers never do this; a pooler or a
hand-written client replaying a pipeline can. (Each case was checked against PostgreSQL 15.)"""
import psycopg
import pytest

from wire_protocol import Session, bind, execute, flush, message, parse, query, sync


@pytest.fixture
def raw(brook):
    s = Session(brook)
    yield s
    s.close()


def count(brook, table):
    with psycopg.connect(**brook, autocommit=True) as c:
        return c.execute(f"SELECT count(*), sum(a) FROM {table}").fetchone()


def test_an_insert_portal_executed_twice_inserts_once(brook, raw):
    raw.run(query("CREATE TABLE portal_once (a int)"))
    out = raw.run(parse("INSERT INTO portal_once VALUES (1)"), bind(), execute(), execute(), sync())
    assert out == [("C", "INSERT 0 1"), ("E", "55000"), ("Z", "I")]
    # The statements up to Sync are one implicit transaction, which the error rolled back.
    assert count(brook, "portal_once") == (0, None)


def test_a_named_portal_is_not_run_again_after_sync(brook, raw):
    raw.run(query("CREATE TABLE portal_named (a int)"))
    out = raw.run(parse("INSERT INTO portal_named VALUES (2)"), bind("p"), execute("p"), sync())
    assert out == [("C", "INSERT 0 1"), ("Z", "I")]
    out = raw.run(execute("p"), sync())
    # PostgreSQL closed the portal with its transaction (34000); Brook keeps it, finished.
    assert out[0][0] == "E" and out[0][1] in ("55000", "34000")
    assert count(brook, "portal_named") == (1, 2)


def test_an_update_portal_in_a_block_is_not_run_again(brook, raw):
    raw.run(query("CREATE TABLE portal_update (a int); INSERT INTO portal_update VALUES (1)"))
    assert raw.run(query("BEGIN")) == [("C", "BEGIN"), ("Z", "T")]
    out = raw.run(parse("UPDATE portal_update SET a = a + 10"), bind("u"), execute("u"), sync())
    assert out == [("C", "UPDATE 1"), ("Z", "T")]
    assert raw.run(execute("u"), sync()) == [("E", "55000"), ("Z", "E")]
    assert raw.run(query("ROLLBACK")) == [("C", "ROLLBACK"), ("Z", "I")]
    raw.run(parse("UPDATE portal_update SET a = a + 10"), bind("u2"), execute("u2"), sync())
    assert count(brook, "portal_update") == (1, 11)


def test_ddl_and_set_portals_are_not_run_again(raw):
    out = raw.run(parse("CREATE TABLE portal_ddl (a int)"), bind(), execute(), execute(), sync())
    assert out == [("C", "CREATE TABLE"), ("E", "55000"), ("Z", "I")]
    out = raw.run(parse("SET application_name = 'portals'"), bind(), execute(), execute(), sync())
    assert out == [("C", "SET"), ("E", "55000"), ("Z", "I")]


def test_a_finished_query_portal_returns_no_more_rows(raw):
    raw.run(query("CREATE TABLE portal_rows (a int); INSERT INTO portal_rows VALUES (1), (2), (3)"))
    out = raw.run(parse("SELECT a FROM portal_rows"), bind(), execute(), execute(), sync())
    assert out == ["D", "D", "D", ("C", "SELECT 3"), ("C", "SELECT 0"), ("Z", "I")]
    out = raw.run(parse("SELECT a FROM portal_rows"), bind(), execute("", 2), execute(), execute(), sync())
    assert out == ["D", "D", "s", "D", ("C", "SELECT 1"), ("C", "SELECT 0"), ("Z", "I")]


def test_a_paged_insert_returning_inserts_once_and_tags_as_postgresql(brook, raw):
    raw.run(query("CREATE TABLE portal_returning (a int)"))
    sql = "INSERT INTO portal_returning VALUES (4), (5), (6) RETURNING a"
    out = raw.run(parse(sql), bind(), execute("", 1), execute("", 1), execute(), execute(), sync())
    assert out[:5] == ["D", "s", "D", "s", "D"]
    assert out[5] == ("C", "INSERT 0 1")
    assert out[6][0] == "C" and out[6][1].endswith(" 0")
    assert count(brook, "portal_returning") == (3, 15)
    out = raw.run(parse(sql), bind(), execute(), execute(), sync())
    assert out[3:] == [("C", "INSERT 0 3"), ("C", "INSERT 0 0"), ("Z", "I")]
    assert count(brook, "portal_returning") == (6, 30)


def test_a_cursor_portal_reads_on(raw):
    """A cursor's portal is read again by each Execute (a continuous cursor has new rows)."""
    raw.run(query("CREATE TABLE portal_cursor (a int); INSERT INTO portal_cursor VALUES (1), (2)"))
    assert raw.run(query("BEGIN"))[-1] == ("Z", "T")
    declare = parse("DECLARE c CURSOR FOR SELECT a FROM portal_cursor")
    assert raw.run(declare, bind(), execute(), sync())[-1] == ("Z", "T")
    out = raw.run(execute("c", 1), execute("c", 1), execute("c"), sync())
    assert "E" not in [x[0] for x in out if isinstance(x, tuple)]
    assert out.count("D") == 2
    raw.run(query("COMMIT"))


def test_a_cursor_portal_page_is_a_fetch_of_the_cursor(raw):
    """An Execute of a cursor's portal with a row limit fetches that many rows of the cursor:
    a SQL FETCH goes on after them (pgwire's portal took every remaining row at the first
    page, so FETCH found none), and a full page suspends, as in PostgreSQL."""
    raw.run(query("CREATE TABLE portal_page (a int); INSERT INTO portal_page VALUES (1), (2), (3)"))
    raw.run(query("BEGIN"))
    raw.run(parse("DECLARE c CURSOR FOR SELECT a FROM portal_page ORDER BY a"), bind(), execute(), sync())
    assert raw.run(execute("c", 2), sync()) == ["D", "D", "s", ("Z", "T")]
    assert raw.run(query("FETCH 1 FROM c")) == ["D", ("C", "FETCH 1"), ("Z", "T")]
    assert raw.run(execute("c", 2), sync()) == [("C", "SELECT 0"), ("Z", "T")]
    assert raw.run(execute("c"), sync()) == [("C", "SELECT 0"), ("Z", "T")]
    raw.run(query("CLOSE c"))
    raw.run(parse("DECLARE d CURSOR FOR SELECT a FROM portal_page"), bind(), execute(), sync())
    assert raw.run(execute("d", 3), sync()) == ["D", "D", "D", "s", ("Z", "T")]
    assert raw.run(execute("d", 3), sync()) == [("C", "SELECT 0"), ("Z", "T")]
    raw.run(query("COMMIT"))


def test_a_cursor_is_a_portal_and_closing_the_portal_closes_it(raw):
    """A cursor declared by a simple query is a portal too (Execute reads it), and a
    protocol Close of the portal closes the cursor, as in PostgreSQL."""
    raw.run(query("CREATE TABLE portal_close (a int); INSERT INTO portal_close VALUES (1), (2)"))
    raw.run(query("BEGIN"))
    raw.run(query("DECLARE c CURSOR FOR SELECT a FROM portal_close"))
    assert raw.run(execute("c", 1), sync()) == ["D", "s", ("Z", "T")]
    close_portal = message(b"C", b"P" + b"c\0")
    assert raw.run(close_portal, sync()) == [("Z", "T")]
    assert raw.run(query("FETCH 1 FROM c")) == [("E", "34000"), ("Z", "E")]
    raw.run(query("ROLLBACK"))


def test_a_cursor_portal_is_read_in_pages_across_their_boundaries(raw):
    """An Execute of a snapshot cursor's portal reads it in pages of its own (so no limit,
    nor one beyond the 1,000,000 rows other portals take, holds every row at once)."""
    raw.run(query("BEGIN"))
    raw.run(query("DECLARE g CURSOR FOR SELECT x FROM generate_series(1, 25001) x"))
    out = raw.run(execute("g", 0), sync())
    assert out.count("D") == 25001 and out[-2:] == [("C", "SELECT 25001"), ("Z", "T")]
    raw.run(query("CLOSE g"))
    raw.run(query("DECLARE h CURSOR FOR SELECT x FROM generate_series(1, 1000005) x"))
    out = raw.run(execute("h", 1000002), sync())
    assert out.count("D") == 1000002 and out[-2:] == ["s", ("Z", "T")]
    assert raw.run(query("FETCH 5 FROM h"))[-2:] == [("C", "FETCH 3"), ("Z", "T")]
    raw.run(query("ROLLBACK"))


def test_the_unnamed_portal_lives_on_after_sync_in_a_block(raw):
    """In a block the unnamed portal is read on after Sync, as in PostgreSQL (it was dropped
    at Sync: 34000), and goes with the block."""
    raw.run(query("CREATE TABLE portal_unnamed (a int); INSERT INTO portal_unnamed SELECT x FROM generate_series(1, 5) x"))
    raw.run(query("BEGIN"))
    select = parse("SELECT a FROM portal_unnamed ORDER BY a")
    assert raw.run(select, bind(), execute("", 3), sync()) == ["D", "D", "D", "s", ("Z", "T")]
    assert raw.run(execute("", 3), sync()) == ["D", "D", ("C", "SELECT 2"), ("Z", "T")]
    raw.run(query("COMMIT"))
    assert raw.run(execute("", 3), sync()) == [("E", "34000"), ("Z", "I")]


def test_closing_a_cursor_portal_in_a_failed_block_closes_the_cursor(raw):
    raw.run(query("BEGIN; DECLARE f CURSOR FOR SELECT 1; SAVEPOINT s"))
    raw.run(query("SELECT 1/0"))
    assert raw.run(message(b"C", b"P" + b"f\0"), sync()) == [("Z", "E")]
    raw.run(query("ROLLBACK TO s"))
    assert raw.run(query("FETCH 1 FROM f")) == [("E", "34000"), ("Z", "E")]
    raw.run(query("ROLLBACK"))


def test_a_cursor_named_as_pgwire_names_the_unnamed_portal_is_not_the_unnamed_portal(brook, raw):
    """A cursor of the name pgwire gives the unnamed portal took over every unnamed Execute
    (an INSERT answered with the cursor's rows and wrote nothing)."""
    raw.run(query("CREATE TABLE portal_default_name (a int)"))
    raw.run(query('BEGIN; DECLARE "POSTGRESQL_DEFAULT_NAME" CURSOR FOR SELECT 1000'))
    insert = parse("INSERT INTO portal_default_name VALUES (7)")
    assert raw.run(insert, bind(), execute(), sync()) == [("C", "INSERT 0 1"), ("Z", "T")]
    raw.run(query("COMMIT"))
    assert count(brook, "portal_default_name") == (1, 7)


def test_sql_fetch_and_move_read_a_protocol_portal(raw):
    """SQL FETCH and MOVE may name a protocol portal, as in PostgreSQL (asyncpg's
    `cursor.forward` sends MOVE): they share the portal's position with Execute."""
    raw.run(query("CREATE TABLE portal_fetch (a int); INSERT INTO portal_fetch SELECT x FROM generate_series(1, 5) x"))
    raw.run(query("BEGIN"))
    select = parse("SELECT a FROM portal_fetch ORDER BY a")
    assert raw.run(select, bind("p"), execute("p", 1), sync()) == ["D", "s", ("Z", "T")]
    assert raw.run(query("FETCH 2 FROM p")) == ["D", "D", ("C", "FETCH 2"), ("Z", "T")]
    assert raw.run(query("MOVE 1 IN p")) == [("C", "MOVE 1"), ("Z", "T")]
    assert raw.run(execute("p", 5), sync()) == ["D", ("C", "SELECT 1"), ("Z", "T")]
    assert raw.run(query("FETCH BACKWARD 1 FROM p")) == [("E", "55000"), ("Z", "E")]
    raw.run(query("ROLLBACK"))
    # A count far past the rows: the server reserved room for every row asked (40 GB for a
    # billion) and aborted.
    raw.run(query("BEGIN"))
    raw.run(select, bind("q"), execute("q", 1), sync())
    assert raw.run(query("MOVE 1000000000 IN q")) == [("C", "MOVE 4"), ("Z", "T")]
    raw.run(select, bind("r"), execute("r", 1), sync())
    assert raw.run(query("FETCH 2147483647 FROM r"))[-2:] == [("C", "FETCH 4"), ("Z", "T")]
    raw.run(query("ROLLBACK"))


def test_a_pipeline_goes_on_after_its_copy(brook, raw):
    """An extended-protocol COPY FROM STDIN, then more statements before Sync: they run (a
    pipeline's INSERT after its COPY was skipped without a word)."""
    raw.run(query("CREATE TABLE portal_copy (a int)"))
    raw.send(parse("COPY portal_copy FROM STDIN"), bind(), execute(), flush())
    raw.wait_for(b"G")
    out = raw.run(
        message(b"d", b"5\n6\n"),
        message(b"c"),
        parse("INSERT INTO portal_copy VALUES (100)"),
        bind(),
        execute(),
        sync(),
    )
    assert out == [("C", "COPY 2"), ("C", "INSERT 0 1"), ("Z", "I")]
    assert count(brook, "portal_copy") == (3, 111)


def test_a_fetch_portal_fetches_once(raw):
    raw.run(query("CREATE TABLE portal_fetch (a int); INSERT INTO portal_fetch VALUES (1), (2), (3), (4), (5)"))
    raw.run(query("BEGIN; DECLARE f CURSOR FOR SELECT a FROM portal_fetch ORDER BY a"))
    out = raw.run(parse("FETCH 2 FROM f"), bind(), execute(), execute(), sync())
    assert out[:3] == ["D", "D", ("C", "FETCH 2")]
    assert out[3] == ("C", "FETCH 0") or out[3] == ("C", "SELECT 0")
    rest = raw.run(query("FETCH ALL FROM f"))
    assert rest == ["D", "D", "D", ("C", "FETCH 3"), ("Z", "T")]
    raw.run(query("COMMIT"))


def test_a_failed_portal_does_not_run_again(brook, raw):
    raw.run(query("CREATE TABLE portal_failed (a int); INSERT INTO portal_failed VALUES (1), (2), (3)"))
    raw.run(query("BEGIN"))
    sql = "INSERT INTO portal_failed SELECT 100 + 1 / (count(*)::int - 3) FROM portal_failed"
    raw.run(parse(sql), bind("f"), sync())
    raw.run(query("SAVEPOINT a"))
    assert raw.run(execute("f"), sync())[0] == ("E", "22012")
    raw.run(query("ROLLBACK TO a; INSERT INTO portal_failed VALUES (4)"))
    assert raw.run(execute("f"), sync())[0] == ("E", "55000")
    raw.run(query("ROLLBACK"))
    assert count(brook, "portal_failed") == (3, 6)


def test_portals_end_with_their_transaction(raw):
    raw.run(query("CREATE TABLE portal_txn (a int); INSERT INTO portal_txn VALUES (1), (2), (3)"))
    # Outside a block, Sync ends the implicit transaction and its portals.
    out = raw.run(parse("SELECT a FROM portal_txn ORDER BY a"), bind("half"), execute("half", 1), sync())
    assert out == ["D", "s", ("Z", "I")]
    assert raw.run(execute("half"), sync()) == [("E", "34000"), ("Z", "I")]
    # In a block they last until COMMIT.
    raw.run(query("BEGIN"))
    out = raw.run(parse("SELECT a FROM portal_txn ORDER BY a"), bind("blk"), execute("blk", 1), sync())
    assert out == ["D", "s", ("Z", "T")]
    assert raw.run(execute("blk", 1), sync()) == ["D", "s", ("Z", "T")]
    raw.run(query("COMMIT"))
    assert raw.run(execute("blk"), sync()) == [("E", "34000"), ("Z", "I")]


def test_a_cursors_portal_goes_with_its_cursor(raw):
    """A cursor declared in a block closes at COMMIT, and its protocol portal with it (it
    kept every row it had read, per transaction, for the connection's life)."""
    raw.run(query("CREATE TABLE portal_cursor_gone (a int); INSERT INTO portal_cursor_gone VALUES (1), (2)"))
    raw.run(query("BEGIN"))
    raw.run(parse("DECLARE g CURSOR FOR SELECT a FROM portal_cursor_gone"), bind(), execute(), sync())
    assert raw.run(execute("g", 1), sync()) == ["D", "s", ("Z", "T")]
    raw.run(query("COMMIT"))
    out = raw.run(execute("g", 1), sync())
    assert out == [("E", "34000"), ("Z", "I")]


def test_a_continuous_cursors_portal_reads_new_rows_with_a_row_limit(brook, raw):
    raw.run(query("CREATE STREAM portal_stream (a int); INSERT INTO portal_stream VALUES (1), (2)"))
    raw.run(query("BEGIN"))
    raw.run(parse("DECLARE s CURSOR FOR SELECT a FROM portal_stream"), bind(), execute(), sync())
    out = raw.run(execute("s", 5), sync())
    assert out.count("D") == 2
    with psycopg.connect(**brook, autocommit=True) as c:
        c.execute("INSERT INTO portal_stream VALUES (3)")
    out = raw.run(execute("s", 5), sync())
    assert out.count("D") == 1, out
    raw.run(query("COMMIT"))


def test_a_suspended_portal_does_not_run_in_a_failed_block(raw):
    raw.run(query("CREATE TABLE portal_aborted (a int); INSERT INTO portal_aborted VALUES (1), (2), (3)"))
    raw.run(query("BEGIN"))
    out = raw.run(parse("SELECT a FROM portal_aborted ORDER BY a"), bind("ab"), execute("ab", 1), sync())
    assert out == ["D", "s", ("Z", "T")]
    assert raw.run(query("SELECT 1 / 0"))[-1] == ("Z", "E")
    assert raw.run(execute("ab", 1), sync()) == [("E", "25P02"), ("Z", "E")]
    assert raw.run(query("ROLLBACK")) == [("C", "ROLLBACK"), ("Z", "I")]
