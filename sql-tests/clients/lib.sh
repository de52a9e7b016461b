# Shared helpers for client tests: start_brook [extra serve options] sets BROOK_PORT and
# BROOK_PID.
start_brook() {
  BROOK_DATA=$(mktemp -d)
  local out; out=$(mktemp)
  "$BROOK_BIN" serve --listen 127.0.0.1:0 --data-dir "$BROOK_DATA" "$@" >"$out" 2>"$out.err" &
  BROOK_PID=$!
  for _ in $(seq 1 200); do
    if grep -q "brook listening on" "$out"; then break; fi
    sleep 0.05
  done
  BROOK_PORT=$(sed -n 's/.*brook listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out")
  [ -n "$BROOK_PORT" ] || { echo "server did not start"; cat "$out.err"; return 1; }
  trap 'kill -9 $BROOK_PID 2>/dev/null; rm -rf "$BROOK_DATA"' EXIT
}
