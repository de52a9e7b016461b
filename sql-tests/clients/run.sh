#!/usr/bin/env bash
# Real-client tests: each starts its own server on a free port with a fresh data directory.
set -euo pipefail
cd "$(dirname "$0")"
target="${CARGO_TARGET_DIR:-../../target}"
export BROOK_BIN="${BROOK_BIN:-$(cd "$target/debug" && pwd)/brook}"
fail=0; pass=0
for t in ./test_*.sh; do
  [ -f "$t" ] || continue
  if bash "$t"; then pass=$((pass+1)); echo "ok      $t"; else fail=$((fail+1)); echo "FAILED  $t"; fi
done
echo "clients: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
