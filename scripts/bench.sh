#!/usr/bin/env bash
# Token joins and renewals, side by side in one run: `make bench` runs this on the
# release build.
#
#   scripts/bench.sh BUILD_DIR
#
# Runs of bench/bc_load.c, each on a fresh store: SQLite with one replica over plain
# HTTP (loopback only) and over TLS (as deployed: the server's own [tls], every join and
# renewal a fresh connection and a full handshake, through bc/httpc.h as bcd sends
# them), then PostgreSQL (a throwaway cluster, scripts/pg.sh) with one replica and with two. Each
# makes BENCH_JOINS tokens (default 1000), joins with BENCH_CLIENTS concurrent clients
# (default 16), then renews every node once. For each it prints throughput, p50/p99
# latency, the servers' CPU per operation (from /proc) and its ratio to the crypto the
# operation cannot avoid, timed in the same run (bc-load's bare OpenSSL loop). The
# table also goes to BENCH_JSON (default BUILD_DIR/bench.json). The figures are
# printed, never judged; without PostgreSQL its runs say so and the script still exits
# 0. Everything is on loopback, in a temporary directory.
set -euo pipefail
BUILD=${1:?usage: scripts/bench.sh BUILD_DIR}
BIN=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
JOINS=${BENCH_JOINS:-1000}
CLIENTS=${BENCH_CLIENTS:-16}
JSON=${BENCH_JSON:-$BIN/bench.json}
ROWS=""
for b in better-compute bc-load; do
	[ -x "$BIN/$b" ] || { echo "bench: $BIN/$b is missing: build it first (make build)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/bc-bench.XXXXXX)
PGDIR=""
PIDS=""
RUNNING=""
cleanup() {
	cd /
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	[ -z "$PGDIR" ] || "$SRC/scripts/pg.sh" stop "$PGDIR" || true
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# serve DIR: starts a server on DIR/server.toml and waits for /healthz.
serve() {
	local dir=$1 url
	"$BIN/better-compute" serve --config "$dir/server.toml" >>"$dir/serve.log" 2>&1 &
	PIDS="$PIDS $!"
	RUNNING="$RUNNING $!"
	url=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$dir/server.toml")
	local ca=()
	[ -s "$dir/tls-ca.pem" ] && ca=(--cacert "$dir/tls-ca.pem")
	for _ in $(seq 1 100); do
		curl -fsS "${ca[@]}" "$url/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: the server in $dir did not start: $(tail -n 3 "$dir/serve.log")" >&2
	exit 1
}

stop_all() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	PIDS=""
	RUNNING=""
}

# init DIR [https]: a control plane on SQLite (with https: its own TLS certificate, as
# a deployment's); prints its URL.
init() {
	local dir=$1 scheme=${2:-http} port
	port=$(free_port)
	if [ "$scheme" = https ]; then
		"$BIN/better-compute" init --dir "$dir" --listen "127.0.0.1:$port" \
			--public-url "https://127.0.0.1:$port" >/dev/null
	else
		"$BIN/better-compute" init --dir "$dir" --listen "127.0.0.1:$port" >/dev/null
	fi
	echo "$scheme://127.0.0.1:$port"
}

# field LINE NAME: the value of NAME=... in a bc-load line ("-" when absent).
field() {
	local v
	v=$(echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p")
	echo "${v:--}"
}

plus() {
	if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; fi
}

ratio() {
	if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; fi
}

# report LABEL DATABASE KEYFILE URL...: one bc-load run (joins, then renewals) and its
# rows. BC_LOAD_EXTRA: more bc-load arguments (--rate). Sets OUT to bc-load's line.
# BENCH_TLS=1: the URLs are https, and a TLS handshake's crypto (tls_handshake_crypto_ms:
# one X25519 and one ECDSA sign) is added to the crypto column of both rows.
report() {
	local label=$1 db=$2 key=$3 out
	shift 3
	local args=()
	for u in "$@"; do args+=(--url "$u"); done
	for p in $RUNNING; do args+=(--server-pid "$p"); done
	# shellcheck disable=SC2086
	out=$("$BIN/bc-load" --pins "$T/pins.json" --database "$db" --tokens "$JOINS" \
		--clients "$CLIENTS" --renew --metrics-key "$key" ${BC_LOAD_EXTRA:-} "${args[@]}")
	OUT=$out
	local jc rc cj cr
	jc=$(field "$out" server_cpu_ms_per_join)
	rc=$(field "$out" server_cpu_ms_per_renew)
	cj=$(field "$out" crypto_ms_per_join)
	cr=$(field "$out" crypto_ms_per_renew)
	if [ "${BENCH_TLS:-0}" = 1 ]; then
		local hs
		hs=$(field "$out" tls_handshake_crypto_ms)
		cj=$(plus "$cj" "$hs")
		cr=$(plus "$cr" "$hs")
	fi
	printf '  %-24s %-6s %9s %8s %8s %9s %9s %7s %6s   %s\n' "$label" join \
		"$(field "$out" joins_per_s)" "$(field "$out" join_p50_ms)" "$(field "$out" join_p99_ms)" \
		"$jc" "$cj" "$(ratio "$jc" "$cj")" "$(field "$out" statements_per_join)" \
		"admitted $(field "$out" admitted), refused $(field "$out" refused), errors $(field "$out" errors)"
	printf '  %-24s %-6s %9s %8s %8s %9s %9s %7s %6s   %s\n' "" renew \
		"$(field "$out" renews_per_s)" "$(field "$out" renew_p50_ms)" "$(field "$out" renew_p99_ms)" \
		"$rc" "$cr" "$(ratio "$rc" "$cr")" "$(field "$out" statements_per_renew)" \
		"renewed $(field "$out" renewed), refused $(field "$out" renew_refused), errors $(field "$out" renew_errors)"
	ROWS="$ROWS${ROWS:+,}
  {\"store\": \"$label\", \"line\": \"$out\"}"
}

header() {
	printf '  %-24s %-6s %9s %8s %8s %9s %9s %7s %6s\n' "" "" "per s" "p50 ms" "p99 ms" \
		"CPU ms/op" "crypto ms" "ratio" "SQL/op"
}

write_json() {
	printf '{"joins": %s, "clients": %s, "cpus": %s, "runs": [%s\n]}\n' "$JOINS" "$CLIENTS" \
		"$(nproc)" "$ROWS" >"$JSON"
	echo "  (written to $JSON)"
}
trap 'write_json; cleanup' EXIT

echo "Token joins, then a renewal of each node (bench/bc_load.c over loopback, plain HTTP and TLS; $(nproc) CPUs;"
echo "CPU: the servers' user + system time per operation; crypto: the ECDH and ECDSA it cannot avoid"
echo "(TLS rows: and the handshake's, one X25519 and one ECDSA sign, every operation a fresh connection);"
echo "SQL/op: statements sent to the store per operation, besides each transaction's begin and commit):"
header

# SQLite, one replica
U=$(init sq)
serve sq
"$BIN/better-compute" daemon config --server "$U" --api-key-file sq/admin.key --out pins.json >/dev/null
BC_LOAD_EXTRA="--floor" report "SQLite, 1 replica" "$T/sq/bc.db" "$T/sq/admin.key" "$U"
# what any request and any durable commit cost on this machine, from the same run
FLOOR_REQ=$(field "$OUT" floor_server_cpu_ms_per_request)
FLOOR_COMMIT=$(field "$OUT" floor_cpu_ms_per_commit)
LOAD_J=$(field "$OUT" load_cpu_ms_per_join)
LOAD_R=$(field "$OUT" load_cpu_ms_per_renew)
# the same server offered half of the throughput it reached, paced: the latency an
# agent sees when the server is not saturated
PEAK_J=$(field "$OUT" joins_per_s)
PEAK_R=$(field "$OUT" renews_per_s)
HALF=$(awk -v j="$PEAK_J" -v r="$PEAK_R" 'BEGIN { m = j < r ? j : r; h = int(m / 2); print h < 1 ? 1 : h }')
BC_LOAD_EXTRA="--rate $HALF" report "SQLite, at $HALF/s" "$T/sq/bc.db" "$T/sq/admin.key" "$U"
stop_all

# SQLite, one replica, over TLS: as deployed (plain HTTP is loopback only)
U=$(init sqt https)
serve sqt
"$BIN/better-compute" daemon config --server "$U" --api-key-file sqt/admin.key --force \
	--ca-file sqt/tls-ca.pem --out pins.json >/dev/null
BENCH_TLS=1 BC_LOAD_EXTRA="--floor" report "SQLite, 1 replica, TLS" "$T/sqt/bc.db" "$T/sqt/admin.key" "$U"
HS=$(field "$OUT" tls_handshake_crypto_ms)
FLOOR_TLS=$(field "$OUT" floor_server_cpu_ms_per_request)
TLS_LOAD_J=$(field "$OUT" load_cpu_ms_per_join)
TLS_LOAD_R=$(field "$OUT" load_cpu_ms_per_renew)
stop_all

# PostgreSQL, one replica then two
pg_runs() {
	PGDIR=$(mktemp -d /tmp/bc-bench-pg.XXXXXX)
	if ! PGURL=$("$SRC/scripts/pg.sh" start "$PGDIR" 2>"$T/pg.err"); then
		echo "  PostgreSQL: not measured ($(tail -n 1 "$T/pg.err"))"
		return 0
	fi
	U1=$(init pg)
	"$BIN/better-compute" store copy --from pg/bc.db --to "$PGURL" >/dev/null
	sed -i "s|^database *=.*|database    = \"$PGURL\"|" pg/server.toml
	P2=$(free_port)
	U2="http://127.0.0.1:$P2"
	mkdir pg2
	cat >pg2/server.toml <<-TOML
	listen      = "127.0.0.1:$P2"
	public_url  = "$U2"
	database    = "$PGURL"
	secret_file = "$T/pg/secret"
	pki_bundle  = "$T/pg/pki.bundle"
	TOML
	serve pg
	"$BIN/better-compute" daemon config --server "$U1" --api-key-file pg/admin.key --out pins.json --force >/dev/null
	report "PostgreSQL, 1 replica" "$PGURL" "$T/pg/admin.key" "$U1"
	serve pg2
	report "PostgreSQL, 2 replicas" "$PGURL" "$T/pg/admin.key" "$U1" "$U2"
	stop_all
}
pg_runs
echo "  floor, in the same run: a request on a fresh connection answered with nothing done costs"
echo "  $FLOOR_REQ ms of server CPU; a durable one-row SQLite commit $FLOOR_COMMIT ms (bc-load --floor)"
echo "  the load generator beside the server on the same CPUs: $LOAD_J ms of CPU per join, $LOAD_R per renewal"
echo "  over TLS, a request on a fresh connection (a full TLS 1.3 handshake) answered with nothing"
echo "  done costs $FLOOR_TLS ms of server CPU (bc-load --floor)"
echo "  a TLS 1.3 handshake's server crypto, in the same run: $HS ms (in the TLS rows' crypto column)"
echo "  the load generator over TLS (bc/httpc.h, bcd's client): $TLS_LOAD_J ms of CPU per join,"
echo "  $TLS_LOAD_R per renewal"

# tpm joins against swtpm: the server's CPU for each of the two rounds
echo
echo "tpm joins, one at a time through bench/cpu_proxy.py (scripts/bench-tpm.sh):"
TPM_RC=0
TPM=$(BC_BINARY_DIR=$BIN "$SRC/scripts/bench-tpm.sh" 2>"$T/tpm.err") || TPM_RC=$?
if [ "$TPM_RC" = 0 ]; then
	echo "  $TPM"
	ROWS="$ROWS${ROWS:+,}
  {\"store\": \"SQLite, tpm\", \"line\": \"$TPM\"}"
else
	# 77: no swtpm here (its line says why); anything else failed
	echo "  tpm: not measured ($(tail -n 1 "$T/tpm.err" | grep . || echo "$TPM" | tail -n 1))"
fi
