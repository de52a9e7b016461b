#!/usr/bin/env bash
# The sqllogictest suite again, each file on a one-node cluster with a log of its own on a
# NATS JetStream server started here: every DDL and write goes through the log, and the
# answers must be a single server's. Left out: temporary tables (refused in cluster mode),
# transaction blocks and their DDL (a cluster node commits each statement: docs/cluster.md) and the SQLite
# corpus (plain queries, already run).
set -euo pipefail
cd "$(dirname "$0")/.."
store=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nats-server -js -a 127.0.0.1 -p "$port" -sd "$store" >"$store.log" 2>&1 &
nats=$!
trap 'kill $nats 2>/dev/null; wait $nats 2>/dev/null; rm -rf "$store" "$store.log"' EXIT
for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
BROOK_TEST_CLUSTER="nats://127.0.0.1:$port" BROOK_SLT_SKIP="sqlite/,transactions,transactional_ddl,temp_tables" \
  cargo test --workspace --test slt
