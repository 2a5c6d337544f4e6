#!/bin/sh
# make bench-scale: bc-scale (bench/bc_scale.c) on a fresh store at each size, SQLite
# at 10,000 and 100,000 nodes, PostgreSQL (a throwaway cluster, scripts/pg.sh) at
# 10,000, 100,000 and 1,000,000; prints each list's page latency and the store's size.
# Minutes; not in CI. BC_SCALE_SQLITE and BC_SCALE_PG override the sizes.
#   scripts/bench-scale.sh BUILD_DIR
set -eu
BUILD=${1:-build}
BIN="$BUILD/bc-scale"
[ -x "$BIN" ] || { echo "bench-scale: $BIN is missing (cmake --build $BUILD)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for n in ${BC_SCALE_SQLITE:-10000 100000}; do
	"$BIN" "$T/scale-$n.db" "$n" 2>&1 | grep -v 'level=info'
	rm -f "$T/scale-$n.db"*
done
if [ "${BC_SCALE_PG-x}" = "" ]; then exit 0; fi
# one database a size on the throwaway cluster
"$(dirname "$0")/pg.sh" run sh -c '
	[ -n "${BC_TEST_POSTGRES_URL:-}" ] || { echo "bench-scale: no PostgreSQL: skipped"; exit 0; }
	base=${BC_TEST_POSTGRES_URL%/*}
	for n in '"${BC_SCALE_PG:-10000 100000 1000000}"'; do
		psql -q "$BC_TEST_POSTGRES_URL" -c "CREATE DATABASE scale_$n" >/dev/null
		"'"$BIN"'" "$base/scale_$n" "$n" 2>&1 | grep -v "level=info"
		psql -q "$BC_TEST_POSTGRES_URL" -c "DROP DATABASE scale_$n" >/dev/null
	done'
