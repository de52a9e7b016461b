#!/usr/bin/env bash
# TLS (rustls): psql, psycopg and pgjdbc with sslmode=require and verify-full against a certificate
# made here; --require-tls refuses a plain connection with 28000.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CERTS=$(mktemp -d)
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$CERTS/key.pem" -out "$CERTS/cert.pem" 2>/dev/null
start_brook --tls-cert "$CERTS/cert.pem" --tls-key "$CERTS/key.pem" --require-tls
trap 'kill -9 $BROOK_PID 2>/dev/null; rm -rf "$BROOK_DATA" "$CERTS"' EXIT
check() { # expected actual what
  if [ "$1" != "$2" ]; then echo "tls: $3: expected [$1] got [$2]"; exit 1; fi
}
Q=(psql -X -v ON_ERROR_STOP=1 -At)
"${Q[@]}" "host=127.0.0.1 port=$BROOK_PORT user=brook dbname=brook sslmode=require" \
  -c "CREATE TABLE secret (x int); INSERT INTO secret VALUES (1)" >/dev/null
check "on" "$("${Q[@]}" "host=127.0.0.1 port=$BROOK_PORT user=brook dbname=brook sslmode=require" \
  -c "SELECT CASE WHEN count(*) = 1 THEN 'on' END FROM secret")" "sslmode=require"
check "1" "$("${Q[@]}" "host=localhost port=$BROOK_PORT user=brook dbname=brook sslmode=verify-full sslrootcert=$CERTS/cert.pem" \
  -c "SELECT x FROM secret")" "sslmode=verify-full"
if "${Q[@]}" "host=127.0.0.1 port=$BROOK_PORT user=brook dbname=brook sslmode=disable" -c "SELECT 1" 2>"$CERTS/err"; then
  echo "tls: a plain connection was accepted under --require-tls"; exit 1
fi
grep -q "only TLS connections" "$CERTS/err" || { echo "tls: unexpected refusal: $(cat "$CERTS/err")"; exit 1; }
python3 - "$BROOK_PORT" "$CERTS/cert.pem" <<'PY'
import sys, psycopg
port, cert = sys.argv[1], sys.argv[2]
with psycopg.connect(f"host=localhost port={port} user=brook dbname=brook sslmode=verify-full sslrootcert={cert}") as c:
    assert c.pgconn.ssl_in_use, "psycopg: TLS not in use"
    assert c.execute("SELECT x FROM secret").fetchall() == [(1,)]
PY
# pgjdbc: sslmode=require and verify-full with a PEM root certificate; plain refused (28000).
JAR=/usr/share/java/postgresql.jar
javac -d "$CERTS" -cp "$JAR" "$(dirname "$0")/jdbc/JdbcTls.java"
java -cp "$CERTS:$JAR" JdbcTls "$BROOK_PORT" "$CERTS/cert.pem" >/dev/null
