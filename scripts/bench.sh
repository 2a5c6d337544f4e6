#!/usr/bin/env bash
# Token joins per second (issue 4, part 6): `make bench` runs this on the release build.
#
#   scripts/bench.sh BUILD_DIR
#
# Three runs of bench/bc_load.c, each on a fresh store: SQLite with one replica, then
# PostgreSQL (a throwaway cluster, scripts/pg.sh) with one replica and with two. Each
# makes BENCH_JOINS tokens (default 1000) and joins with BENCH_CLIENTS concurrent clients
# (default 16). The figures are printed, never judged; without PostgreSQL its runs say
# so and the script still exits 0. Everything is on loopback, in a temporary directory.
set -euo pipefail
BUILD=${1:?usage: scripts/bench.sh BUILD_DIR}
BIN=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
JOINS=${BENCH_JOINS:-1000}
CLIENTS=${BENCH_CLIENTS:-16}
for b in better-compute bc-load; do
	[ -x "$BIN/$b" ] || { echo "bench: $BIN/$b is missing: build it first (make build)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/bc-bench.XXXXXX)
PGDIR=""
PIDS=""
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
	url=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$dir/server.toml")
	for _ in $(seq 1 100); do
		curl -fsS "$url/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: the server in $dir did not start: $(tail -n 3 "$dir/serve.log")" >&2
	exit 1
}

stop_all() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	PIDS=""
}

# init DIR: a control plane on SQLite; prints its URL.
init() {
	local dir=$1 port
	port=$(free_port)
	"$BIN/better-compute" init --dir "$dir" --listen "127.0.0.1:$port" >/dev/null
	echo "http://127.0.0.1:$port"
}

# report LABEL DATABASE URL...: one bc-load run and its line.
report() {
	local label=$1 db=$2 out
	shift 2
	local args=()
	for u in "$@"; do args+=(--url "$u"); done
	out=$("$BIN/bc-load" --pins "$T/pins.json" --database "$db" --tokens "$JOINS" \
		--clients "$CLIENTS" "${args[@]}")
	printf '  %-24s %8s joins/s  (%s joins, %s clients: admitted %s, refused %s, errors %s)\n' \
		"$label" "$(echo "$out" | sed -n 's/.*joins_per_s=\([0-9.]*\).*/\1/p')" \
		"$JOINS" "$CLIENTS" "$(echo "$out" | sed -n 's/.*admitted=\([0-9]*\).*/\1/p')" \
		"$(echo "$out" | sed -n 's/.*refused=\([0-9]*\).*/\1/p')" \
		"$(echo "$out" | sed -n 's/.*errors=\([0-9]*\).*/\1/p')"
}

echo "Token joins per second (bench/bc_load.c over loopback HTTP; $(nproc) CPUs):"

# SQLite, one replica
U=$(init sq)
serve sq
"$BIN/better-compute" daemon config --server "$U" --api-key-file sq/admin.key --out pins.json >/dev/null
report "SQLite, 1 replica" "$T/sq/bc.db" "$U"
stop_all

# PostgreSQL, one replica then two
PGDIR=$(mktemp -d /tmp/bc-bench-pg.XXXXXX)
if ! PGURL=$("$SRC/scripts/pg.sh" start "$PGDIR" 2>"$T/pg.err"); then
	echo "  PostgreSQL: not measured ($(tail -n 1 "$T/pg.err"))"
	exit 0
fi
U1=$(init pg)
"$BIN/better-compute" store copy --from pg/bc.db --to "$PGURL" >/dev/null
sed -i "s|^database *=.*|database    = \"$PGURL\"|" pg/server.toml
P2=$(free_port)
U2="http://127.0.0.1:$P2"
mkdir pg2
cat >pg2/server.toml <<TOML
listen      = "127.0.0.1:$P2"
public_url  = "$U2"
database    = "$PGURL"
secret_file = "$T/pg/secret"
pki_bundle  = "$T/pg/pki.bundle"
TOML
serve pg
"$BIN/better-compute" daemon config --server "$U1" --api-key-file pg/admin.key --out pins.json >/dev/null
report "PostgreSQL, 1 replica" "$PGURL" "$U1"
serve pg2
report "PostgreSQL, 2 replicas" "$PGURL" "$U1" "$U2"
stop_all
