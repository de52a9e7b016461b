#!/usr/bin/env bash
# psql: connect, meta-commands, COPY FROM STDIN / TO STDOUT, error reporting.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_brook
P=(psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$BROOK_PORT" -U brook -d brook -At)
check() { # expected actual what
  if [ "$1" != "$2" ]; then echo "psql: $3: expected [$1] got [$2]"; exit 1; fi
}
"${P[@]}" -c "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2))" >/dev/null
printf '1\tapple\t1.50\n2\tpear\t\\N\n' | "${P[@]}" -c "COPY items FROM STDIN" >/dev/null
check "2" "$("${P[@]}" -c "SELECT count(*) FROM items")" "count after COPY"
check "1|apple|1.50" "$("${P[@]}" -c "SELECT * FROM items WHERE id = 1")" "row"
printf 'id,name,price\n3,"fig, dried",2\n' | "${P[@]}" -c "COPY items FROM STDIN WITH (FORMAT csv, HEADER)" >/dev/null
check $'1,apple,1.50\n2,pear,\n3,"fig, dried",2.00' "$("${P[@]}" -c "COPY (SELECT * FROM items ORDER BY id) TO STDOUT WITH (FORMAT csv)")" "COPY TO csv"
# COPY (query) reads its query as a SELECT does: a function's alias names its column,
# decimal constants are numeric, unnamed outputs get PostgreSQL's names (the header)
check $'g,x,count\n1,0.3,1\n2,0.3,1' "$("${P[@]}" -c "COPY (SELECT g, 0.1 + 0.2 AS x, count(*) FROM generate_series(1, 2) g GROUP BY g ORDER BY g) TO STDOUT WITH (FORMAT csv, HEADER)")" "COPY (query) reads as SELECT"
# a CSV header is written also when there are no rows
check "?column?" "$("${P[@]}" -c "COPY (SELECT 1 FROM items WHERE false) TO STDOUT WITH (FORMAT csv, HEADER)")" "COPY header of no rows"
# TABLE name is SELECT * FROM name
check $'1|apple|1.50\n2|pear|' "$("${P[@]}" -c "TABLE items ORDER BY id LIMIT 2")" "TABLE items"
# a bad row aborts the whole COPY: nothing of it is visible
if printf '4\tok\t1\nfive\tbad\t1\n' | "${P[@]}" -c "COPY items FROM STDIN" 2>/tmp/psql_err.$$; then echo "bad COPY succeeded"; exit 1; fi
grep -q 'invalid input syntax for type integer' /tmp/psql_err.$$ || { echo "psql: wrong error: $(cat /tmp/psql_err.$$)"; exit 1; }
check "3" "$("${P[@]}" -c "SELECT count(*) FROM items")" "count after failed COPY"
# INSERT ... RETURNING: rows, then the tag `INSERT 0 n` psql parses ("INSERT 1" made it fail)
check "9|kiwi" "$("${P[@]}" -c "INSERT INTO items VALUES (9, 'kiwi', 3) RETURNING id, name" | sed -n 1p)" "INSERT RETURNING"
"${P[@]}" -c "DELETE FROM items WHERE id = 9" >/dev/null
# postgres and template1 exist, as tools that connect there first expect (psql -l, createdb)
check "template1" "$(psql -X -h 127.0.0.1 -p "$BROOK_PORT" -U brook -d template1 -At -c "SELECT current_database()")" "connect to template1"
psql -X -h 127.0.0.1 -p "$BROOK_PORT" -U brook -l | grep -q postgres || { echo "psql: -l failed"; exit 1; }
# a HEADER line is not a row: \copy ... TO with HEADER reports the rows only
check "COPY 3" "$("${P[@]}" -c "\\copy (SELECT * FROM items ORDER BY id) TO '/tmp/psql_hdr.$$' WITH (FORMAT csv, HEADER)")" "\\copy TO with HEADER"
check "4" "$(wc -l < /tmp/psql_hdr.$$ | tr -d ' ')" "\\copy TO with HEADER writes header and rows"
rm -f /tmp/psql_hdr.$$
# a syntax error points at its place (psql prints LINE n: and a caret under it)
if "${P[@]}" -c "SELECT * FROM items WHERE id = = 1" 2>/tmp/psql_syn.$$; then echo "psql: bad SQL accepted"; exit 1; fi
grep -q "LINE 1: SELECT \* FROM items WHERE id = = 1" /tmp/psql_syn.$$ && grep -q "^  *\^" /tmp/psql_syn.$$ || { echo "psql: no position: $(cat /tmp/psql_syn.$$)"; exit 1; }
rm -f /tmp/psql_syn.$$
# binary COPY out and back in (what polars/connectorx read): counts and values survive
check "COPY 3" "$("${P[@]}" -c "\\copy (SELECT * FROM items ORDER BY id) TO '/tmp/psql_bin.$$' WITH (FORMAT binary)")" "\\copy TO binary"
"${P[@]}" -c "CREATE TABLE items_bin (id int, name text, price numeric(10,2))" >/dev/null
check "COPY 3" "$("${P[@]}" -c "\\copy items_bin FROM '/tmp/psql_bin.$$' WITH (FORMAT binary)")" "\\copy FROM binary"
check "$("${P[@]}" -c "SELECT * FROM items ORDER BY id")" "$("${P[@]}" -c "SELECT * FROM items_bin ORDER BY id")" "binary round trip"
"${P[@]}" -c "DROP TABLE items_bin" >/dev/null
rm -f /tmp/psql_bin.$$
# meta-commands
"${P[@]}" -c '\dt' | grep -q items || { echo "psql: \\dt does not list items"; exit 1; }
"${P[@]}" -c '\d items' | grep -q price || { echo "psql: \\d items does not show columns"; exit 1; }
# \du lists the role; \dt+ and \l+ show sizes from the data directory
check "brook|Superuser, Create role, Create DB" "$("${P[@]}" -c '\du' | cut -d'|' -f1,2)" "\\du lists the role"
"${P[@]}" -c '\dt+ items' | grep -Eq '^public\|items\|table\|brook\|permanent\|\|[0-9]+ (bytes|kB)\|$' || { echo "psql: \\dt+ items: $("${P[@]}" -c '\dt+ items')"; exit 1; }
"${P[@]}" -c '\l+' | grep -Eq '^brook\|brook\|.*\|[0-9]+ (bytes|kB)\|pg_default\|$' || { echo "psql: \\l+: $("${P[@]}" -c '\l+')"; exit 1; }
# \d lists a table's declared types, defaults, primary key and indexes (as psql reads them)
"${P[@]}" -c "CREATE TABLE keyed (id int PRIMARY KEY, v int, tag varchar(5) DEFAULT 'x')" -c "CREATE INDEX keyed_v ON keyed (v)" >/dev/null
psql -X -h 127.0.0.1 -p "$BROOK_PORT" -U brook -d brook -c '\d keyed' >/tmp/psql_idx.$$
grep -q '"keyed_pkey" PRIMARY KEY, btree (id)' /tmp/psql_idx.$$ && grep -q '"keyed_v" btree (v)' /tmp/psql_idx.$$ &&
  grep -Eq "^ tag +\| character varying\(5\) +\| +\| +\| 'x'" /tmp/psql_idx.$$ || { echo "psql: \\d keyed: $(cat /tmp/psql_idx.$$)"; exit 1; }
rm -f /tmp/psql_idx.$$
"${P[@]}" -c "DROP TABLE keyed" >/dev/null
# streams and materialized views list as such
"${P[@]}" -c "CREATE STREAM ticks (sym text, px int)" -c "CREATE MATERIALIZED VIEW last_px AS SELECT sym, max(px) AS px FROM ticks GROUP BY sym" >/dev/null
check "public|items|table|brook
public|last_px|materialized view|brook
public|ticks|stream|brook" "$("${P[@]}" -c '\d')" "\\d lists kinds"
"${P[@]}" -c '\d ticks' | grep -q sym || { echo "psql: \\d ticks does not show columns"; exit 1; }
check "public|last_px|materialized view|brook" "$("${P[@]}" -c '\dm')" "\\dm lists materialized views"
# views and sequences list as such; \d of a SERIAL column shows its nextval default
"${P[@]}" -c "CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 2" -c "CREATE TABLE notes (id serial PRIMARY KEY, body text)" >/dev/null
check "public|cheap|view|brook" "$("${P[@]}" -c '\dv')" "\\dv lists views"
check "public|notes_id_seq|sequence|brook" "$("${P[@]}" -c '\ds')" "\\ds lists sequences"
"${P[@]}" -c '\d notes' | grep -q "nextval('notes_id_seq'::regclass)" || { echo "psql: \d notes: $("${P[@]}" -c '\d notes')"; exit 1; }
# \d+ shows storage columns (it failed on unnest of the TOAST table's options) and a view's query
"${P[@]}" -c '\d+ notes' | grep -q '^body|text||||extended|' || { echo "psql: \d+ notes: $("${P[@]}" -c '\d+ notes')"; exit 1; }
psql -X -h 127.0.0.1 -p "$BROOK_PORT" -U brook -d brook -c '\d+ cheap' | grep -q '^ SELECT id, name FROM items WHERE price < 2;' || { echo "psql: \d+ cheap: $("${P[@]}" -c '\d+ cheap')"; exit 1; }
# \dn+ lists schemas with their privileges (nspacl was text, not an array)
check "public|brook||" "$("${P[@]}" -c '\dn+')" "\\dn+ lists schemas"
# \df lists functions with their result and argument types (pg_get_function_result and
# pg_get_function_arguments were missing), as PostgreSQL does for abs
check "pg_catalog|abs|integer|integer|func" "$("${P[@]}" -c '\df abs' | grep '|integer|')" "\\df abs"
# \dconfig lists the settings this session changed (pg_settings had no boot_val and one row)
check $'application_name|psql-test\nbrook.fetch_timeout|3s' "$("${P[@]}" -c "SET application_name = 'psql-test'" -c "SET brook.fetch_timeout = '3s'" -c '\dconfig' | tail -2)" "\\dconfig"
# \dp lists privileges: none granted (its ARRAY(SELECT ...) over pg_policy could not be planned)
check "public|items|table|||" "$("${P[@]}" -c '\dp items')" "\\dp"
# a table with a SERIAL column as pg_dump writes it restores, and its sequence continues
cat > /tmp/psql_dump.$$ <<'DUMP'
SELECT pg_catalog.set_config('search_path', '', false);
CREATE TABLE public.restored (
    id integer NOT NULL,
    v text
);
CREATE SEQUENCE public.restored_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;
ALTER SEQUENCE public.restored_id_seq OWNED BY public.restored.id;
ALTER TABLE ONLY public.restored ALTER COLUMN id SET DEFAULT nextval('public.restored_id_seq'::regclass);
COPY public.restored (id, v) FROM stdin;
1	a
2	b
\.
SELECT pg_catalog.setval('public.restored_id_seq', 2, true);
ALTER TABLE ONLY public.restored
    ADD CONSTRAINT restored_pkey PRIMARY KEY (id);
DUMP
psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$BROOK_PORT" -U brook -d brook -f /tmp/psql_dump.$$ >/dev/null || { echo "psql: restoring a pg_dump script failed"; exit 1; }
rm -f /tmp/psql_dump.$$
check "3|c" "$("${P[@]}" -c "INSERT INTO restored (v) VALUES ('c') RETURNING id, v" | sed -n 1p)" "restored sequence continues"
"${P[@]}" -c "DROP TABLE restored" >/dev/null
# comments show in \dt+ and \d+
"${P[@]}" -c "COMMENT ON TABLE notes IS 'jottings'" -c "COMMENT ON COLUMN notes.body IS 'the text'" >/dev/null
"${P[@]}" -c '\dt+ notes' | grep -q '|jottings$' || { echo "psql: \dt+ notes: $("${P[@]}" -c '\dt+ notes')"; exit 1; }
"${P[@]}" -c '\d+ notes' | grep -q '^body|.*|the text$' || { echo "psql: \d+ notes: $("${P[@]}" -c '\d+ notes')"; exit 1; }
"${P[@]}" -c "DROP VIEW cheap" -c "DROP TABLE notes" >/dev/null
# a continuous cursor from psql: FETCH waits for rows up to brook.fetch_timeout
printf "BEGIN;\nDECLARE c CURSOR FOR SELECT sym, px FROM ticks WHERE px > 1;\nINSERT INTO ticks VALUES ('A', 5), ('B', 1);\nFETCH ALL FROM c;\nFETCH ALL FROM c WITH (timeout = '10ms');\nCOMMIT;\n" | "${P[@]}" >/tmp/psql_cur.$$
check "BEGIN
DECLARE CURSOR
INSERT 0 2
A|5
COMMIT" "$(cat /tmp/psql_cur.$$)" "continuous cursor"
rm -f /tmp/psql_err.$$ /tmp/psql_cur.$$
# Without --tls-cert no TLS is offered: sslmode=prefer falls back to plain, sslmode=require is refused cleanly (test_tls.sh covers TLS)
check "1" "$(PGSSLMODE=prefer "${P[@]}" -c "SELECT 1")" "sslmode=prefer"
if PGSSLMODE=require "${P[@]}" -c "SELECT 1" 2>/tmp/psql_ssl.$$; then echo "sslmode=require connected without TLS"; exit 1; fi
grep -qi 'ssl' /tmp/psql_ssl.$$ || { echo "psql: unexpected TLS refusal: $(cat /tmp/psql_ssl.$$)"; exit 1; }
rm -f /tmp/psql_ssl.$$
# unknown database: FATAL 3D000 at connect
if psql -X -h 127.0.0.1 -p "$BROOK_PORT" -U brook -d nosuchdb -c "SELECT 1" 2>/tmp/psql_db.$$; then echo "connected to a missing database"; exit 1; fi
grep -q 'database "nosuchdb" does not exist' /tmp/psql_db.$$ || { echo "psql: $(cat /tmp/psql_db.$$)"; exit 1; }
rm -f /tmp/psql_db.$$
# the startup packet's settings: PGOPTIONS' -c switches and application_name (PGAPPNAME)
check $'s1, public\nreporter\n7s' "$(PGOPTIONS='-c search_path=s1,public --statement-timeout=7s' PGAPPNAME=reporter "${P[@]}" -c "SHOW search_path" -c "SHOW application_name" -c "SHOW statement_timeout")" "startup settings"
# RESET goes back to the startup packet's values; a startup parameter wins over options'
check $'7s\nreporter' "$(PGOPTIONS='-c statement_timeout=7s -c application_name=fromopts' PGAPPNAME=reporter "${P[@]}" -c "SET statement_timeout = '1s'" -c "RESET ALL" -c "SHOW statement_timeout" -c "SHOW application_name" | tail -2)" "RESET to startup settings"
# one -c of several statements is one transaction, as in PostgreSQL: all or nothing
"${P[@]}" -c "CREATE TABLE atomic_t (i int PRIMARY KEY)" >/dev/null
if "${P[@]}" -c "INSERT INTO atomic_t VALUES (1); INSERT INTO atomic_t VALUES (1)" 2>/dev/null; then echo "duplicate key accepted"; exit 1; fi
check "0" "$("${P[@]}" -c "SELECT count(*) FROM atomic_t")" "a failed multi-statement -c commits nothing"
"${P[@]}" -c "DROP TABLE atomic_t" >/dev/null
