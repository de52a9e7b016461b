#!/usr/bin/env bash
# node-postgres (npm pg) under node's test runner.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/node"
[ -d node_modules/pg ] || npm install --silent --no-audit --no-fund
start_brook
BROOK_PORT=$BROOK_PORT node --test pg.test.js
