// Brook under pgx v4 (github.com/jackc/pgx/v4 with pgconn, pgtype and puddle v1), Go's most
// used PostgreSQL driver, as Debian packages it (golang-github-jackc-pgx-v4-dev). Run by
// ../test_pgx.sh, which starts a server, sets BROOK_PORT and builds in GOPATH mode against
// /usr/share/gocode. pgx talks the extended protocol and asks for binary results for every
// type it knows (in v4 that includes text and jsonb), so these tests check Brook's binary
// encoders and decoders as much as its SQL.
package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgconn/stmtcache"
	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

var pool *pgxpool.Pool

func connString() string {
	port := os.Getenv("BROOK_PORT")
	if port == "" {
		port = "5488"
	}
	return fmt.Sprintf("postgres://brook@127.0.0.1:%s/brook?sslmode=disable", port)
}

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	p, err := pgxpool.Connect(ctx, connString())
	if err == nil {
		err = p.Ping(ctx)
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	pool = p
	code := m.Run()
	pool.Close()
	os.Exit(code)
}

// Known gaps: BROOK_PGX_SKIP lists test names (t.Name(), e.g. TestTxRollback or
// TestDuplicateKey/fields), separated by spaces, newlines or '|'; text after '#' on a line is
// a comment. A listed test is skipped with its subtests. (Go 1.19, Debian bookworm's, has no
// go test -skip, so the tests do it themselves: every test and subtest starts with gate.)
var skipped = func() map[string]bool {
	m := map[string]bool{}
	for _, line := range strings.Split(os.Getenv("BROOK_PGX_SKIP"), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, name := range strings.FieldsFunc(line, func(r rune) bool { return r == '|' || unicode.IsSpace(r) }) {
			m[name] = true
		}
	}
	return m
}()

func gate(t *testing.T) {
	t.Helper()
	if skipped[t.Name()] {
		t.Skipf("%s: known gap, listed in BROOK_PGX_SKIP", t.Name())
	}
}

// run is t.Run behind gate.
func run(t *testing.T, name string, f func(t *testing.T)) bool {
	t.Helper()
	return t.Run(name, func(t *testing.T) {
		gate(t)
		f(t)
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(ctx(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(ctx(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestPoolConnect(t *testing.T) {
	gate(t)
	var one int32
	var version string
	if err := pool.QueryRow(ctx(t), "SELECT 1, version()").Scan(&one, &version); err != nil {
		t.Fatal(err)
	}
	if one != 1 || version == "" {
		t.Fatalf("got %d %q", one, version)
	}
	// Several connections at once.
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			var got int64
			err := pool.QueryRow(context.Background(), "SELECT $1::int8 * 2", int64(i)).Scan(&got)
			if err == nil && got != int64(2*i) {
				err = fmt.Errorf("got %d want %d", got, 2*i)
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if st := pool.Stat(); st.TotalConns() < 2 {
		t.Errorf("pool has %d connections", st.TotalConns())
	}
}

func TestExecDDL(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS ddl_t")
	tag, err := pool.Exec(ctx(t), "CREATE TABLE ddl_t (id int PRIMARY KEY, name text NOT NULL)")
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "CREATE TABLE" {
		t.Errorf("tag %q", tag.String())
	}
	tag, err = pool.Exec(ctx(t), "INSERT INTO ddl_t VALUES ($1, $2), ($3, $4)", 1, "a", 2, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !tag.Insert() || tag.RowsAffected() != 2 {
		t.Errorf("insert tag %q", tag.String())
	}
	tag, err = pool.Exec(ctx(t), "UPDATE ddl_t SET name = $1 WHERE id = $2", "z", 2)
	if err != nil || tag.RowsAffected() != 1 {
		t.Errorf("update: %v %q", err, tag.String())
	}
	tag, err = pool.Exec(ctx(t), "DELETE FROM ddl_t WHERE id = $1", 1)
	if err != nil || tag.RowsAffected() != 1 {
		t.Errorf("delete: %v %q", err, tag.String())
	}
	var name string
	if err := pool.QueryRow(ctx(t), "SELECT name FROM ddl_t").Scan(&name); err != nil || name != "z" {
		t.Errorf("select: %v %q", err, name)
	}
	exec(t, "DROP TABLE ddl_t")
}

// roundTrip sends v as a parameter of type typ, reads it back in binary and compares.
func roundTrip[T any](t *testing.T, typ string, v T, eq func(a, b T) bool) {
	t.Helper()
	var got T
	sql := fmt.Sprintf("SELECT $1::%s", typ)
	if err := pool.QueryRow(ctx(t), sql, v).Scan(&got); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if !eq(got, v) {
		t.Fatalf("%s: sent %#v got %#v", sql, v, got)
	}
}

func deepEq[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

func numRat(n pgtype.Numeric) *big.Rat {
	if n.Status != pgtype.Present || n.NaN || n.InfinityModifier != pgtype.None {
		return nil
	}
	r := new(big.Rat).SetInt(n.Int)
	e := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(n.Exp))), nil)
	if n.Exp >= 0 {
		return r.Mul(r, new(big.Rat).SetInt(e))
	}
	return r.Quo(r, new(big.Rat).SetInt(e))
}

func abs(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

func numeric(t *testing.T, s string) pgtype.Numeric {
	var n pgtype.Numeric
	if err := n.Set(s); err != nil {
		t.Fatal(err)
	}
	return n
}

func numEq(a, b pgtype.Numeric) bool {
	ra, rb := numRat(a), numRat(b)
	return ra != nil && rb != nil && ra.Cmp(rb) == 0
}

var (
	tsVal   = time.Date(2024, 2, 29, 13, 45, 30, 123456000, time.UTC)
	tstzVal = time.Date(2024, 2, 29, 13, 45, 30, 123456000, time.FixedZone("+05:30", 5*3600+1800))
	dateVal = time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)
	timeVal = pgtype.Time{Microseconds: ((13*60+45)*60+30)*1_000_000 + 123456, Status: pgtype.Present}
	ivVal   = pgtype.Interval{Months: 14, Days: 3, Microseconds: (4*3600+5)*1_000_000 + 6, Status: pgtype.Present}
	uuidVal = [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	textVal = "héllo, 'world' \"q\" \\ ✓"
)

func TestParamTypes(t *testing.T) {
	gate(t)
	run(t, "int4", func(t *testing.T) {
		roundTrip(t, "int4", int32(-2147483648), deepEq[int32])
		roundTrip(t, "int4", int32(2147483647), deepEq[int32])
	})
	run(t, "int8", func(t *testing.T) { roundTrip(t, "int8", int64(9007199254740993), deepEq[int64]) })
	run(t, "text", func(t *testing.T) { roundTrip(t, "text", textVal, deepEq[string]) })
	run(t, "float8", func(t *testing.T) {
		roundTrip(t, "float8", 3.141592653589793, deepEq[float64])
		roundTrip(t, "float8", -1.5e-300, deepEq[float64])
	})
	run(t, "bool", func(t *testing.T) {
		roundTrip(t, "bool", true, deepEq[bool])
		roundTrip(t, "bool", false, deepEq[bool])
	})
	run(t, "numeric", func(t *testing.T) {
		for _, s := range []string{"12345678901234.56789", "-0.001", "0", "100000000000000000000", "1.5"} {
			roundTrip(t, "numeric", numeric(t, s), numEq)
		}
	})
	run(t, "timestamp", func(t *testing.T) { roundTrip(t, "timestamp", tsVal, time.Time.Equal) })
	run(t, "timestamptz", func(t *testing.T) { roundTrip(t, "timestamptz", tstzVal, time.Time.Equal) })
	run(t, "date", func(t *testing.T) {
		roundTrip(t, "date", dateVal, time.Time.Equal)
		roundTrip(t, "date", time.Date(2038, 1, 20, 0, 0, 0, 0, time.UTC), time.Time.Equal)
	})
	run(t, "time", func(t *testing.T) { roundTrip(t, "time", timeVal, deepEq[pgtype.Time]) })
	run(t, "interval", func(t *testing.T) { roundTrip(t, "interval", ivVal, deepEq[pgtype.Interval]) })
	run(t, "uuid", func(t *testing.T) {
		roundTrip(t, "uuid", pgtype.UUID{Bytes: uuidVal, Status: pgtype.Present}, deepEq[pgtype.UUID])
		roundTrip(t, "uuid", uuidVal, deepEq[[16]byte])
		var s string
		if err := pool.QueryRow(ctx(t), "SELECT $1::uuid::text", pgtype.UUID{Bytes: uuidVal, Status: pgtype.Present}).Scan(&s); err != nil || s != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
			t.Fatalf("uuid::text: %v %q", err, s)
		}
	})
	run(t, "jsonb", func(t *testing.T) {
		v := map[string]any{"a": 1.0, "b": []any{true, nil, "x"}, "c": map[string]any{"d": "é"}}
		roundTrip(t, "jsonb", v, deepEq[map[string]any])
		var s string
		if err := pool.QueryRow(ctx(t), "SELECT ($1::jsonb) ->> 'a'", v).Scan(&s); err != nil || s != "1" {
			t.Fatalf("->>: %v %q", err, s)
		}
	})
	run(t, "int4[]", func(t *testing.T) {
		roundTrip(t, "int4[]", []int32{1, -2, 3, 2147483647}, deepEq[[]int32])
		roundTrip(t, "int4[]", []int32{}, deepEq[[]int32])
		var n int32
		if err := pool.QueryRow(ctx(t), "SELECT cardinality($1::int4[])", []int32{4, 5, 6}).Scan(&n); err != nil || n != 3 {
			t.Fatalf("cardinality: %v %d", err, n)
		}
	})
	run(t, "text[]", func(t *testing.T) {
		roundTrip(t, "text[]", []string{"a", "b,c", "", `q"u\ote`, "NULL", "é"}, deepEq[[]string])
		var ok bool
		if err := pool.QueryRow(ctx(t), "SELECT 'b' = ANY($1::text[])", []string{"a", "b"}).Scan(&ok); err != nil || !ok {
			t.Fatalf("= ANY: %v %v", err, ok)
		}
	})
	run(t, "null", func(t *testing.T) {
		var p *int32
		var s *string
		if err := pool.QueryRow(ctx(t), "SELECT $1::int4, $2::text", nil, nil).Scan(&p, &s); err != nil || p != nil || s != nil {
			t.Fatalf("null: %v %v %v", err, p, s)
		}
	})
}

// Every type stored in a table and read back (binary COPY-free path: INSERT with binary
// parameters, SELECT with binary results), also through a WHERE on each parameter type.
func TestTableTypes(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS types_t")
	exec(t, `CREATE TABLE types_t (id int PRIMARY KEY, i8 bigint, t text, f double precision,
		b boolean, n numeric(20,5), ts timestamp, tstz timestamptz, d date, tm time,
		iv interval, u uuid, j jsonb, ai integer[], at text[])`)
	j := map[string]any{"k": "v", "n": 2.5}
	ai := []int32{7, 8, 9}
	at := []string{"x", "y z"}
	n := numeric(t, "12345678901234.56789")
	u := pgtype.UUID{Bytes: uuidVal, Status: pgtype.Present}
	_, err := pool.Exec(ctx(t), `INSERT INTO types_t VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)`,
		int32(1), int64(9007199254740993), textVal, 2.5, true, n, tsVal, tstzVal, dateVal, timeVal, ivVal, u, j, ai, at)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	var (
		id   int32
		i8   int64
		tx   string
		f    float64
		b    bool
		gn   pgtype.Numeric
		ts   time.Time
		tstz time.Time
		d    time.Time
		gtm  pgtype.Time
		iv   pgtype.Interval
		gu   pgtype.UUID
		gj   map[string]any
		gai  []int32
		gat  []string
	)
	err = pool.QueryRow(ctx(t), "SELECT * FROM types_t WHERE id = $1", int32(1)).
		Scan(&id, &i8, &tx, &f, &b, &gn, &ts, &tstz, &d, &gtm, &iv, &gu, &gj, &gai, &gat)
	if err != nil {
		t.Fatalf("select: %v", err)
	}
	check := func(name string, ok bool, got any) {
		if !ok {
			t.Errorf("%s: got %#v", name, got)
		}
	}
	check("id", id == 1, id)
	check("i8", i8 == 9007199254740993, i8)
	check("t", tx == textVal, tx)
	check("f", f == 2.5, f)
	check("b", b, b)
	check("n", numEq(gn, n), gn)
	check("ts", ts.Equal(tsVal), ts)
	check("tstz", tstz.Equal(tstzVal), tstz)
	check("d", d.Equal(dateVal), d)
	check("tm", gtm == timeVal, gtm)
	check("iv", iv == ivVal, iv)
	check("u", gu == u, gu)
	check("j", reflect.DeepEqual(gj, j), gj)
	check("ai", reflect.DeepEqual(gai, ai), gai)
	check("at", reflect.DeepEqual(gat, at), gat)

	// Each column found again by a parameter of its own type.
	for _, c := range []struct {
		col string
		v   any
	}{{"i8", int64(9007199254740993)}, {"t", textVal}, {"f", 2.5}, {"b", true}, {"n", n},
		{"ts", tsVal}, {"tstz", tstzVal}, {"d", dateVal}, {"tm", timeVal}, {"iv", ivVal}, {"u", u}} {
		run(t, "where_"+c.col, func(t *testing.T) {
			var got int32
			sql := fmt.Sprintf("SELECT id FROM types_t WHERE %s = $1", c.col)
			if err := pool.QueryRow(ctx(t), sql, c.v).Scan(&got); err != nil || got != 1 {
				t.Errorf("%s: %v (id %d)", sql, err, got)
			}
		})
	}
	// The same row as rows.Values(): pgx's own decoding of every OID.
	rows, err := pool.Query(ctx(t), "SELECT * FROM types_t")
	if err != nil {
		t.Fatal(err)
	}
	var vals [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			rows.Close()
			t.Fatalf("Values: %v", err)
		}
		vals = append(vals, v)
	}
	err = rows.Err()
	if err != nil || len(vals) != 1 || len(vals[0]) != 15 {
		t.Fatalf("Values: %v %v", err, vals)
	}
	wantOIDs := []uint32{pgtype.Int4OID, pgtype.Int8OID, pgtype.TextOID, pgtype.Float8OID, pgtype.BoolOID,
		pgtype.NumericOID, pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.DateOID, pgtype.TimeOID,
		pgtype.IntervalOID, pgtype.UUIDOID, pgtype.JSONBOID, pgtype.Int4ArrayOID, pgtype.TextArrayOID}
	ci := pgtype.NewConnInfo()
	binary := 0
	for i, fd := range rows.FieldDescriptions() {
		if fd.DataTypeOID != wantOIDs[i] {
			t.Errorf("column %s: oid %d, want %d", fd.Name, fd.DataTypeOID, wantOIDs[i])
		}
		// pgx asks for binary for every type with a binary decoder (v4: text and jsonb too).
		if want := ci.ResultFormatCodeForOID(wantOIDs[i]); fd.Format != want {
			t.Errorf("column %s: format %d, want %d", fd.Name, fd.Format, want)
		}
		if fd.Format == pgx.BinaryFormatCode {
			binary++
		}
	}
	if binary < 12 {
		t.Errorf("only %d columns in binary", binary)
	}
	// The uuid column scanned into a bare [16]byte.
	var raw [16]byte
	if err := pool.QueryRow(ctx(t), "SELECT u FROM types_t").Scan(&raw); err != nil || raw != uuidVal {
		t.Errorf("uuid column into [16]byte: %v %x", err, raw)
	}
}

func TestCopyFromTable(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS copy_t")
	exec(t, "CREATE TABLE copy_t (id bigint PRIMARY KEY, name text, amount double precision, ts timestamptz, n numeric(12,2))")
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const N = 10000
	rows := make([][]any, N)
	for i := 0; i < N; i++ {
		rows[i] = []any{int64(i + 1), fmt.Sprintf("row %d", i+1), float64(i) * 0.5, base.Add(time.Duration(i) * time.Second), numeric(t, fmt.Sprintf("%d.25", i))}
	}
	start := time.Now()
	n, err := pool.CopyFrom(ctx(t), pgx.Identifier{"copy_t"}, []string{"id", "name", "amount", "ts", "n"}, pgx.CopyFromRows(rows))
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	t.Logf("CopyFrom %d rows into a table in %v", n, time.Since(start))
	if n != N {
		t.Errorf("CopyFrom reported %d rows", n)
	}
	var cnt, sumID int64
	var sumAmount float64
	var sumN pgtype.Numeric
	var maxTs time.Time
	err = pool.QueryRow(ctx(t), "SELECT count(*), sum(id), sum(amount), sum(n), max(ts) FROM copy_t").Scan(&cnt, &sumID, &sumAmount, &sumN, &maxTs)
	if err != nil {
		t.Fatal(err)
	}
	if cnt != N || sumID != N*(N+1)/2 || sumAmount != 0.5*float64(N*(N-1)/2) || !maxTs.Equal(base.Add((N-1)*time.Second)) {
		t.Errorf("count %d sum(id) %d sum(amount) %v max(ts) %v", cnt, sumID, sumAmount, maxTs)
	}
	if !numEq(sumN, numeric(t, fmt.Sprintf("%d.00", N*(N-1)/2+N/4))) {
		t.Errorf("sum(n) %#v", sumN)
	}
	var name string
	if err := pool.QueryRow(ctx(t), "SELECT name FROM copy_t WHERE id = $1", int64(4242)).Scan(&name); err != nil || name != "row 4242" {
		t.Errorf("row 4242: %v %q", err, name)
	}
}

func TestCopyFromStream(t *testing.T) {
	gate(t)
	exec(t, "DROP STREAM IF EXISTS copy_s")
	exec(t, "CREATE STREAM copy_s (id bigint, v int, ts timestamp, WATERMARK FOR ts AS ts - INTERVAL '5 seconds')")
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const N = 10000
	// A generated source (v4 has no CopyFromFunc): rows made one at a time, never all held.
	src := &genSource{n: N, row: func(i int) []any {
		return []any{int64(i), int32(i % 7), base.Add(time.Duration(i) * time.Millisecond)}
	}}
	n, err := pool.CopyFrom(ctx(t), pgx.Identifier{"copy_s"}, []string{"id", "v", "ts"}, src)
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	if n != N {
		t.Errorf("CopyFrom reported %d rows", n)
	}
	var cnt, sumID, sumV int64
	if err := pool.QueryRow(ctx(t), "SELECT count(*), sum(id), sum(v) FROM copy_s").Scan(&cnt, &sumID, &sumV); err != nil {
		t.Fatal(err)
	}
	var wantV int64
	for k := 1; k <= N; k++ {
		wantV += int64(k % 7)
	}
	if cnt != N || sumID != N*(N+1)/2 || sumV != wantV {
		t.Errorf("count %d sum(id) %d sum(v) %d (want %d %d %d)", cnt, sumID, sumV, N, N*(N+1)/2, wantV)
	}
}

// genSource is a pgx.CopyFromSource yielding row(1) .. row(n).
type genSource struct {
	n, i int
	row  func(i int) []any
}

func (s *genSource) Next() bool             { s.i++; return s.i <= s.n }
func (s *genSource) Values() ([]any, error) { return s.row(s.i), nil }
func (s *genSource) Err() error             { return nil }

func TestBatch(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS batch_t")
	exec(t, "CREATE TABLE batch_t (id int PRIMARY KEY, label text)")
	b := &pgx.Batch{}
	for i := 1; i <= 100; i++ {
		b.Queue("INSERT INTO batch_t (id, label) VALUES ($1, $2)", int32(i), fmt.Sprintf("l%d", i))
	}
	var cnt, sum int64
	b.Queue("SELECT count(*), sum(id) FROM batch_t")
	br := pool.SendBatch(ctx(t), b)
	for i := 1; i <= 100; i++ {
		tag, err := br.Exec()
		if err != nil {
			t.Fatalf("batch insert %d: %v", i, err)
		}
		if tag.RowsAffected() != 1 {
			t.Fatalf("batch insert %d: tag %q", i, tag.String())
		}
	}
	if err := br.QueryRow().Scan(&cnt, &sum); err != nil {
		t.Fatalf("batch select: %v", err)
	}
	if err := br.Close(); err != nil {
		t.Fatalf("batch close: %v", err)
	}
	if cnt != 100 || sum != 5050 {
		t.Errorf("in-batch count %d sum %d", cnt, sum)
	}
	if got := count(t, "SELECT count(*) FROM batch_t"); got != 100 {
		t.Errorf("count after batch %d", got)
	}
	// A batch whose second statement fails: pgx reports the error for that statement.
	b = &pgx.Batch{}
	b.Queue("INSERT INTO batch_t VALUES ($1, $2)", int32(101), "ok")
	b.Queue("INSERT INTO batch_t VALUES ($1, $2)", int32(1), "dup")
	br = pool.SendBatch(ctx(t), b)
	_, err1 := br.Exec()
	_, err2 := br.Exec()
	br.Close()
	var pgErr *pgconn.PgError
	if err1 != nil || !errors.As(err2, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("batch with duplicate: %v / %v", err1, err2)
	}
}

func TestTxRollback(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS tx_t")
	exec(t, "CREATE TABLE tx_t (id int PRIMARY KEY, v text)")
	tx, err := pool.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := tx.Exec(ctx(t), "INSERT INTO tx_t VALUES ($1, $2)", int32(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	var inside int64
	if err := tx.QueryRow(ctx(t), "SELECT count(*) FROM tx_t").Scan(&inside); err != nil || inside != 3 {
		t.Errorf("inside tx: %v %d", err, inside)
	}
	if err := tx.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := count(t, "SELECT count(*) FROM tx_t"); got != 0 {
		t.Errorf("after rollback: %d rows", got)
	}
	// And a commit keeps its rows.
	err = pool.BeginFunc(ctx(t), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "INSERT INTO tx_t VALUES ($1, $2)", int32(9), "kept")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := count(t, "SELECT count(*) FROM tx_t WHERE id = 9"); got != 1 {
		t.Errorf("after commit: %d rows", got)
	}
}

func TestPreparedReuse(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS prep_t")
	exec(t, "CREATE TABLE prep_t (id int PRIMARY KEY, sq bigint)")
	conn, err := pool.Acquire(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx(t), "ins", "INSERT INTO prep_t VALUES ($1, $2)")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 2 || sd.ParamOIDs[0] != pgtype.Int4OID || sd.ParamOIDs[1] != pgtype.Int8OID {
		t.Errorf("param oids %v", sd.ParamOIDs)
	}
	for i := 1; i <= 50; i++ {
		if _, err := conn.Exec(ctx(t), "ins", int32(i), int64(i*i)); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
	}
	sel, err := conn.Conn().Prepare(ctx(t), "sel", "SELECT sq FROM prep_t WHERE id = $1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Fields) != 1 || sel.Fields[0].DataTypeOID != pgtype.Int8OID {
		t.Errorf("fields %v", sel.Fields)
	}
	for i := 1; i <= 50; i++ {
		var sq int64
		if err := conn.QueryRow(ctx(t), "sel", int32(i)).Scan(&sq); err != nil || sq != int64(i*i) {
			t.Fatalf("sel %d: %v %d", i, err, sq)
		}
	}
	if err := conn.Conn().Deallocate(ctx(t), "sel"); err != nil {
		t.Errorf("deallocate: %v", err)
	}
	// pgx's statement cache: the same SQL text run many times through the pool.
	for i := 0; i < 20; i++ {
		if got := count(t, "SELECT count(*) FROM prep_t WHERE id <= $1", int32(i)); got != int64(i) {
			t.Fatalf("cached %d: %d", i, got)
		}
	}
}

func TestDuplicateKey(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS dup_t")
	exec(t, "CREATE TABLE dup_t (id int PRIMARY KEY)")
	exec(t, "INSERT INTO dup_t VALUES ($1)", int32(1))
	_, err := pool.Exec(ctx(t), "INSERT INTO dup_t VALUES ($1)", int32(1))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want *pgconn.PgError, got %T %v", err, err)
	}
	if pgErr.Code != "23505" || pgErr.Severity != "ERROR" {
		t.Errorf("code %q severity %q message %q", pgErr.Code, pgErr.Severity, pgErr.Message)
	}
	t.Logf("23505 message: %q detail %q table %q constraint %q", pgErr.Message, pgErr.Detail, pgErr.TableName, pgErr.ConstraintName)
	// What PostgreSQL sends, and what pgx code commonly branches on (ConstraintName).
	run(t, "fields", func(t *testing.T) {
		if pgErr.Message != `duplicate key value violates unique constraint "dup_t_pkey"` {
			t.Errorf("Message %q", pgErr.Message)
		}
		if pgErr.Detail != "Key (id)=(1) already exists." {
			t.Errorf("Detail %q", pgErr.Detail)
		}
		if pgErr.ConstraintName != "dup_t_pkey" || pgErr.TableName != "dup_t" || pgErr.SchemaName != "public" {
			t.Errorf("ConstraintName %q TableName %q SchemaName %q", pgErr.ConstraintName, pgErr.TableName, pgErr.SchemaName)
		}
	})
	// The same inside a transaction: the tx is aborted (25P02) until rolled back.
	tx, err := pool.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	_, err = tx.Exec(ctx(t), "INSERT INTO dup_t VALUES ($1)", int32(1))
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("in tx: %v", err)
	}
	_, err = tx.Exec(ctx(t), "SELECT 1")
	if !errors.As(err, &pgErr) || pgErr.Code != "25P02" {
		t.Errorf("after error in tx: want 25P02, got %v", err)
	}
	if err := tx.Rollback(ctx(t)); err != nil {
		t.Errorf("rollback: %v", err)
	}
	if got := count(t, "SELECT count(*) FROM dup_t"); got != 1 {
		t.Errorf("rows %d", got)
	}
}

const longQuery = "SELECT count(*) FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100000) b"

// pgx's default on a cancelled context: it sets a deadline on the socket and the connection
// is closed (pgconn v1 also sends a CancelRequest and a Terminate as it closes). The pool must
// still work afterwards.
func TestCancelDefault(t *testing.T) {
	gate(t)
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	var n int64
	err := pool.QueryRow(c, longQuery).Scan(&n)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("long query finished: %d", n)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Errorf("error %T %v", err, err)
	}
	if took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	if got := count(t, "SELECT count(*) FROM generate_series(1, 10)"); got != 10 {
		t.Errorf("after cancel: %d", got)
	}
	// The server stops the query whose connection went away.
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := count(t, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%CROSS JOIN generate_series%' AND pid <> pg_backend_pid()")
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d long queries still active 3s after their connection closed", n)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A CancelRequest sent while the query runs: Brook must answer 57014 promptly and the same
// connection must go on working. (pgx v4 has no context-watcher hook that cancels instead of
// closing, so the test sends the request itself with PgConn.CancelRequest after 300ms, as
// v5's CancelRequestContextWatcherHandler does on a 300ms context.)
func TestCancelRequest(t *testing.T) {
	gate(t)
	cfg, err := pgx.ParseConfig(connString())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	pid := conn.PgConn().PID()
	cancelErr := make(chan error, 1)
	timer := time.AfterFunc(300*time.Millisecond, func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cancelErr <- conn.PgConn().CancelRequest(c)
	})
	defer timer.Stop()
	start := time.Now()
	var n int64
	err = conn.QueryRow(ctx(t), longQuery).Scan(&n)
	took := time.Since(start)
	t.Logf("cancelled after %v: %v", took, err)
	if err == nil {
		t.Fatalf("long query finished: %d", n)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Errorf("want 57014, got %T %v", err, err)
	}
	if took > 3*time.Second {
		t.Errorf("cancel took %v", took)
	}
	select {
	case err := <-cancelErr:
		if err != nil {
			t.Errorf("CancelRequest: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("CancelRequest not sent")
	}
	if conn.IsClosed() {
		t.Fatal("connection closed by the cancel")
	}
	var one int32
	var pid2 uint32
	if err := conn.QueryRow(ctx(t), "SELECT 1, pg_backend_pid()").Scan(&one, &pid2); err != nil || one != 1 {
		t.Fatalf("same connection after cancel: %v", err)
	}
	if pid2 != pid {
		t.Errorf("pg_backend_pid %d, BackendKeyData pid %d", pid2, pid)
	}
}

func TestCursor(t *testing.T) {
	gate(t)
	exec(t, "DROP TABLE IF EXISTS cur_t")
	exec(t, "CREATE TABLE cur_t (id int PRIMARY KEY, v text)")
	b := &pgx.Batch{}
	for i := 1; i <= 250; i++ {
		b.Queue("INSERT INTO cur_t VALUES ($1, $2)", int32(i), fmt.Sprintf("v%d", i))
	}
	if err := pool.SendBatch(ctx(t), b).Close(); err != nil {
		t.Fatal(err)
	}
	run(t, "declare-fetch", func(t *testing.T) {
		fetchAll(t, "DECLARE c CURSOR FOR SELECT id, v FROM cur_t WHERE id > 50 ORDER BY id")
	})
	// PostgreSQL infers $1 in a DECLARE sent with the extended protocol (psycopg's server-side
	// cursors rely on it); pgx needs its type to encode an int32.
	run(t, "declare-with-param", func(t *testing.T) {
		fetchAll(t, "DECLARE c CURSOR FOR SELECT id, v FROM cur_t WHERE id > $1 ORDER BY id", int32(50))
	})
}

// fetchAll declares cursor c in a transaction and fetches ids 51..250 60 rows at a time.
func fetchAll(t *testing.T, declare string, args ...any) {
	tx, err := pool.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx(t), declare, args...); err != nil {
		t.Fatalf("%s: %v", declare, err)
	}
	var ids []int32
	fetches := 0
	for {
		rows, err := tx.Query(ctx(t), "FETCH 60 FROM c")
		if err != nil {
			t.Fatalf("FETCH: %v", err)
		}
		got := 0
		for rows.Next() {
			var id int32
			var v string
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatalf("scan: %v", err)
			}
			if v != fmt.Sprintf("v%d", id) {
				t.Fatalf("row %d: %q", id, v)
			}
			ids = append(ids, id)
			got++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("FETCH rows: %v", err)
		}
		if tag := rows.CommandTag().String(); tag != fmt.Sprintf("FETCH %d", got) {
			t.Errorf("tag %q for %d rows", tag, got)
		}
		fetches++
		if got == 0 || fetches > 10 {
			break
		}
	}
	if len(ids) != 200 || ids[0] != 51 || ids[199] != 250 || fetches != 5 {
		t.Errorf("fetched %d rows in %d fetches (first %v)", len(ids), fetches, ids[:minInt(3, len(ids))])
	}
	if _, err := tx.Exec(ctx(t), "CLOSE c"); err != nil {
		t.Errorf("CLOSE: %v", err)
	}
	if err := tx.Commit(ctx(t)); err != nil {
		t.Errorf("commit: %v", err)
	}
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// pgx's other ways to run a query. v4 has no QueryExecMode; its equivalents are the simple
// protocol (client-side interpolation, per query with pgx.QuerySimpleProtocol(true)), no
// statement cache (an unnamed Parse/Describe before every execution, v5's describe_exec) and
// the describe cache (describe once, then unnamed Parse/Bind/Execute with the cached types;
// nearest to v5's exec, which skips the describe). The default, named prepared statements,
// is what every other test uses.
func TestExecModes(t *testing.T) {
	gate(t)
	modes := []struct {
		name  string
		cache pgx.BuildStatementCacheFunc // nil: no cache
		args  []any
	}{
		{"simple_protocol", nil, []any{pgx.QuerySimpleProtocol(true)}},
		{"describe_exec", nil, nil},
		{"cache_describe", func(c *pgconn.PgConn) stmtcache.Cache { return stmtcache.New(c, stmtcache.ModeDescribe, 32) }, nil},
	}
	for _, mode := range modes {
		run(t, mode.name, func(t *testing.T) {
			cfg, err := pgx.ParseConfig(connString())
			if err != nil {
				t.Fatal(err)
			}
			cfg.BuildStatementCache = mode.cache
			conn, err := pgx.ConnectConfig(ctx(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			for run := 0; run < 2; run++ { // twice: the second run uses what the cache kept
				var (
					i  int64
					s  string
					ts time.Time
					n  pgtype.Numeric
					a  []int32
				)
				args := append(append([]any{}, mode.args...), int64(42), "it's", tstzVal, numeric(t, "-1.25"), []int32{1, 2})
				err := conn.QueryRow(ctx(t), "SELECT $1::int8, $2::text, $3::timestamptz, $4::numeric, $5::int4[]", args...).Scan(&i, &s, &ts, &n, &a)
				if err != nil {
					t.Fatal(err)
				}
				if i != 42 || s != "it's" || !ts.Equal(tstzVal) || !numEq(n, numeric(t, "-1.25")) || !reflect.DeepEqual(a, []int32{1, 2}) {
					t.Errorf("got %v %q %v %v %v", i, s, ts, n, a)
				}
			}
		})
	}
}
