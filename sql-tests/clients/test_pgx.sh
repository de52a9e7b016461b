#!/usr/bin/env bash
# pgx v4 (Go) under go test, built offline from Debian packages only: Go from golang-go
# (bookworm: 1.19) and pgx v4 with its dependencies (pgconn, pgtype, pgproto3, puddle, ...)
# from golang-github-jackc-pgx-v4-dev, which puts their source under /usr/share/gocode/src.
# Both are apt-get installed when missing. The build is in GOPATH mode (GO111MODULE=off), so
# there is no go.mod, no module download and no proxy.
#
# BROOK_PGX_KNOWN_GAPS: tests skipped because Brook fails them today, one test name (t.Name())
# a line with what fails after '#'. Remove an entry once the server is fixed; set the variable
# to '' to run everything. BROOK_PGX_SKIP='TestA TestB/sub' skips more tests.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/pgx"

if [ -z "${BROOK_PGX_KNOWN_GAPS+set}" ]; then
BROOK_PGX_KNOWN_GAPS=$(cat <<'EOF'
TestDuplicateKey/fields   # 23505 carries Detail, ConstraintName and TableName, but SchemaName is empty
TestExecModes/simple_protocol  # pgx v4 interpolates timestamptz with a seconds offset ('...+05:30:00'); Brook rejects the timezone "+05:30:00"
EOF
)
fi
export BROOK_PGX_SKIP="$BROOK_PGX_KNOWN_GAPS
${BROOK_PGX_SKIP:-}"

GO=/usr/lib/go/bin/go # Debian's golang-go; a go found first on PATH may be another Go or a stub
PGX_SRC=/usr/share/gocode/src/github.com/jackc/pgx/v4
if [ ! -x "$GO" ] || [ ! -d "$PGX_SRC/pgxpool" ]; then
  echo "installing golang-go and golang-github-jackc-pgx-v4-dev with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    golang-go golang-github-jackc-pgx-v4-dev >/dev/null
fi

mkdir -p /var/tmp/go-cache/gopath /var/tmp/go-cache/build
export GO111MODULE=off GOFLAGS= GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local
unset GOROOT # Debian's go knows its own; not one some other Go left in the environment
export GOPATH=/var/tmp/go-cache/gopath:/usr/share/gocode GOCACHE=/var/tmp/go-cache/build
"$GO" version
"$GO" vet .
start_brook
BROOK_PORT=$BROOK_PORT "$GO" test -count=1 -timeout 5m -v . 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
