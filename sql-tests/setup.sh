#!/usr/bin/env bash
# Installs the clients the tests drive (idempotent: skips what is present).
set -euo pipefail
need_apt=()
command -v psql >/dev/null || need_apt+=(postgresql-client)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
