#!/usr/bin/env bash
# A fleet renewing (`make bench-fleet`; not in CI's time budget): one server on SQLite
# joins FLEET_NODES nodes (default 10,000), then every one of them renews at once, as
# a fleet does after a day-long partition; then a herd: FLEET_HERD agents (default
# 5,000) join and renew all at the same moment. The server sheds what waited longer
# than max_queue_wait_ms (FLEET_QUEUE_WAIT_MS, default 3000 as the server's) with 503
# and a Retry-After; the agents
# (bc-load --retry-unavailable) come back after it, as bcd does. It prints the time
# until every agent was served, the refusals, the errors, the requests shed and the
# server's peak resident set. Figures only; loopback only, in a temporary directory.
set -euo pipefail
BUILD=${1:?usage: scripts/bench-fleet.sh BUILD_DIR}
BIN=$(cd "$BUILD" && pwd)
NODES=${FLEET_NODES:-10000}
HERD=${FLEET_HERD:-5000}
CLIENTS=${FLEET_CLIENTS:-64}
T=$(mktemp -d /tmp/bc-fleet.XXXXXX)
PID=""
cleanup() {
	[ -z "$PID" ] || { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
# the herd needs more open files than a shell's default
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
"$BIN/better-compute" init --dir sq --listen "127.0.0.1:$PORT" >/dev/null
# every agent of this benchmark comes from 127.0.0.1: the per-address cap is lifted
cat >>sq/server.toml <<TOML
max_connections = 16384
max_connections_per_address = 16384
max_queue_wait_ms = ${FLEET_QUEUE_WAIT_MS:-3000}
TOML
"$BIN/better-compute" serve --config sq/server.toml >serve.log 2>&1 &
PID=$!
for _ in $(seq 1 100); do curl -fsS "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
"$BIN/better-compute" daemon config --server "$URL" --api-key-file sq/admin.key --out pins.json >/dev/null

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
run() {
	local label=$1 n=$2 c=$3 out
	out=$("$BIN/bc-load" --pins pins.json --database sq/bc.db --url "$URL" --tokens "$n" \
		--clients "$c" --renew --retry-unavailable 300 --server-pid "$PID" \
		--metrics-key sq/admin.key)
	printf '%s: %s nodes, %s clients\n' "$label" "$n" "$c"
	printf '  joins:    %6ss  %7s/s  admitted %s, refused %s, errors %s, shed %s\n' \
		"$(field "$out" seconds)" "$(field "$out" joins_per_s)" "$(field "$out" admitted)" \
		"$(field "$out" refused)" "$(field "$out" errors)" "$(field "$out" shed_joins)"
	printf '  renewals: %6ss  %7s/s  renewed %s, refused %s, errors %s, shed %s\n' \
		"$(field "$out" renew_seconds)" "$(field "$out" renews_per_s)" "$(field "$out" renewed)" \
		"$(field "$out" renew_refused)" "$(field "$out" renew_errors)" "$(field "$out" shed_renews)"
	printf '  server CPU per renewal %s ms, p99 %s ms; peak RSS %s kB\n' \
		"$(field "$out" server_cpu_ms_per_renew)" "$(field "$out" renew_p99_ms)" \
		"$(field "$out" server_peak_rss_kb)"
}
echo "A fleet renewing ($(nproc) CPUs, SQLite, one server on loopback):"
run "fleet" "$NODES" "$CLIENTS"
run "herd" "$HERD" "$HERD"
