"""asyncpg with a connection pool: every release resets the connection (advisory locks,
UNLISTEN *, RESET ALL), parameters travel in binary (uuid, time, interval), `$1::int` types
its parameter, the JIT probe at type introspection runs through set_config, and records
travel in binary."""
import asyncio
import datetime
import decimal
import uuid

import asyncpg


def run(coro):
    return asyncio.run(coro)


async def pool_for(b):
    return await asyncpg.create_pool(
        host=b["host"], port=b["port"], user=b["user"], database=b["dbname"], min_size=1, max_size=2
    )


def test_pool_round_trips_binary_parameters(brook):
    async def main():
        pool = await pool_for(brook)
        try:
            async with pool.acquire() as c:
                await c.execute("CREATE TABLE apg (id int PRIMARY KEY, u uuid, t time, d interval, name text)")
            # Each step on a connection the pool took back (and reset) at least once.
            for _ in range(3):
                async with pool.acquire() as c:
                    assert await c.fetchval("SELECT 1") == 1
            async with pool.acquire() as c:
                await c.execute(
                    "INSERT INTO apg VALUES ($1, $2, $3, $4, $5)",
                    1,
                    uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10"),
                    datetime.time(10, 30, 5),
                    datetime.timedelta(days=1, seconds=5, microseconds=7),
                    "one",
                )
            async with pool.acquire() as c:
                await c.executemany("INSERT INTO apg (id, name) VALUES ($1, $2)", [(2, "two"), (3, "three")])
                await c.copy_records_to_table("apg", records=[(4, None, None, None, "four")], columns=["id", "u", "t", "d", "name"])
            async with pool.acquire() as c:
                row = await c.fetchrow("SELECT u, t, d, name FROM apg WHERE id = $1", 1)
                assert row["u"] == uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
                assert row["t"] == datetime.time(10, 30, 5)
                assert row["d"] == datetime.timedelta(days=1, seconds=5, microseconds=7)
                assert row["name"] == "one"
                assert await c.fetchval("SELECT count(*) FROM apg") == 4
                # a cast types its parameter: asyncpg sends an int, not text
                assert tuple(await c.fetchrow("SELECT $1::int + 1, $2::text", 41, "x")) == (42, "x")
                assert await c.fetchval("SELECT id FROM apg WHERE u = $1::uuid", uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)) == 1
        finally:
            await pool.close()

    run(main())


def test_arrays_in_binary(brook):
    """asyncpg learns array types by its type-lookup query (they were a RecursionError:
    the lookup's own `oid[]` column was `integer[]`, whose lookup needed the lookup),
    then sends and reads arrays in binary; `$1 = ANY(col)` types $1 as the element."""
    async def main():
        c = await asyncpg.connect(host=brook["host"], port=brook["port"], user=brook["user"], database=brook["dbname"])
        try:
            await c.execute("CREATE TABLE apg_arrays (id int, v int[], t text[], f float8[], at timestamp[])")
            at = datetime.datetime(2026, 1, 1, 12, 30)
            await c.execute("INSERT INTO apg_arrays VALUES ($1, $2, $3, $4, $5)", 1, [1, 2, None], ["a b", "c"], [1.5], [at])
            await c.executemany(
                "INSERT INTO apg_arrays VALUES ($1, $2, $3, $4, $5)",
                [(2, [5], [], None, None), (3, None, ["x"], [2.0, 3.0], [])],
            )
            rows = [tuple(r) for r in await c.fetch("SELECT * FROM apg_arrays ORDER BY id")]
            assert rows == [
                (1, [1, 2, None], ["a b", "c"], [1.5], [at]),
                (2, [5], [], None, None),
                (3, None, ["x"], [2.0, 3.0], []),
            ], rows
            assert await c.fetchval("SELECT id FROM apg_arrays WHERE $1 = ANY(v)", 5) == 2
            assert await c.fetchval("SELECT id FROM apg_arrays WHERE $1 = ANY(t)", "x") == 3
            ids = [r[0] for r in await c.fetch("SELECT id FROM apg_arrays WHERE id = ANY($1::int[]) ORDER BY id", [1, 3])]
            assert ids == [1, 3]
            assert await c.fetchval("SELECT $1::text[]", ["p", None, "q r"]) == ["p", None, "q r"]
            # UPDATE's SET and WHERE parameters and containment tests are typed too
            await c.execute("UPDATE apg_arrays SET t = $1 WHERE id = $2", ["u", "v"], 2)
            assert await c.fetchval("SELECT id FROM apg_arrays WHERE t @> $1", ["v"]) == 2
            assert await c.fetchval("SELECT count(*) FROM apg_arrays WHERE t && $1", ["u", "x"]) == 2
            await c.execute("DELETE FROM apg_arrays WHERE id = $1", 3)
            await c.execute("CREATE TABLE apg_bytes (b bytea[])")
            await c.execute("INSERT INTO apg_bytes VALUES ($1)", [b"\x00\x01", None, b"\\"])
            assert await c.fetchval("SELECT b FROM apg_bytes") == [b"\x00\x01", None, b"\\"]
        finally:
            await c.close()

    run(main())


def test_set_config_and_current_setting_in_one_select(brook):
    async def main():
        c = await asyncpg.connect(host=brook["host"], port=brook["port"], user=brook["user"], database=brook["dbname"])
        try:
            row = await c.fetchrow("SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new")
            assert (row["cur"], row["new"]) == ("off", "off")
            assert await c.fetchval("SELECT set_config('statement_timeout', '7s', false)") == "7s"
            assert await c.fetchval("SHOW statement_timeout") == "7s"
        finally:
            await c.close()

    run(main())


def test_cursor_forward_and_fetch(brook):
    """asyncpg's cursor: `forward(n)` is `MOVE FORWARD n` of its protocol portal in a simple
    query (34000 before: Brook's MOVE knew only DECLAREd cursors), `fetch(n)` an Execute."""

    async def main():
        c = await asyncpg.connect(
            host=brook["host"], port=brook["port"], user=brook["user"], database=brook["dbname"]
        )
        try:
            await c.execute("CREATE TABLE apg_cursor AS SELECT g AS a FROM generate_series(1, 10) g")
            async with c.transaction():
                cur = await c.cursor("SELECT a FROM apg_cursor ORDER BY a")
                assert await cur.forward(3) == 3
                assert [r["a"] for r in await cur.fetch(2)] == [4, 5]
                assert await cur.forward(10) == 5
                assert await cur.fetch(2) == []
                other = await c.cursor("SELECT a FROM apg_cursor ORDER BY a")
                assert [r["a"] for r in await other.fetch(2)] == [1, 2]
                assert await other.forward(2) == 2
                assert (await other.fetchrow())["a"] == 5
        finally:
            await c.close()

    run(main())


def test_copy_from_query_with_arguments(brook, tmp_path):
    """`copy_from_query(query, *args)` quotes each argument with `quote_literal($n::type::text)`
    and the type schema-qualified (`pg_catalog.int4`): that parameter is described as its
    type, not `unknown` (asyncpg then refused an int: "expected str, got int")."""

    async def main():
        c = await asyncpg.connect(
            host=brook["host"], port=brook["port"], user=brook["user"], database=brook["dbname"]
        )
        try:
            assert await c.fetchval("SELECT quote_literal($1::pg_catalog.int4::text)", 1) == "'1'"
            await c.execute("CREATE TABLE apg_copy (a int, b text)")
            await c.execute("INSERT INTO apg_copy VALUES (1, 'x'), (2, 'y'), (3, 'z')")
            out = tmp_path / "rows.csv"
            await c.copy_from_query(
                "SELECT a, b FROM apg_copy WHERE a >= $1 ORDER BY a", 2, output=str(out), format="csv"
            )
            assert out.read_text() == "2,y\n3,z\n"
        finally:
            await c.close()

    run(main())


def test_records_in_binary(brook):
    """A row value (`ROW(...)`, a FROM item's name) is a record: asyncpg reads its binary
    form field by field, typed (it failed on Brook's text stand-in)."""
    async def main():
        c = await asyncpg.connect(host=brook["host"], port=brook["port"], user=brook["user"], database=brook["dbname"])
        try:
            await c.execute("CREATE TABLE apg_rec (id int, name text); INSERT INTO apg_rec VALUES (1, 'x'), (2, NULL)")
            rows = await c.fetch("SELECT ROW(id, name, 1.5::numeric) AS r, t FROM apg_rec t ORDER BY id")
            assert [tuple(r["r"]) for r in rows] == [(1, "x", decimal.Decimal("1.5")), (2, None, decimal.Decimal("1.5"))]
            assert [tuple(r["t"]) for r in rows] == [(1, "x"), (2, None)]
            assert await c.fetchval("SELECT ROW(ROW(1, 'a b'), NULL::int)") == ((1, "a b"), None)
        finally:
            await c.close()

    run(main())
