# Shared by the end-to-end tests that need PostgreSQL: source it after lib.sh. A
# throwaway cluster of this test's own (scripts/pg.sh start), stopped on exit; when
# none can start, the test is skipped (exit 77, CTest's SKIP_RETURN_CODE).
SRC=${BC_SOURCE_DIR:?BC_SOURCE_DIR is set by CTest}
PGDIR=$(mktemp -d /tmp/bc-e2e-pg.XXXXXX)
pg_cleanup() {
	cd /
	cleanup
	"$SRC/scripts/pg.sh" stop "$PGDIR" || true
}
trap pg_cleanup EXIT

if ! PGURL=$("$SRC/scripts/pg.sh" start "$PGDIR" 2>"$T/pg-start.err"); then
	echo "skipped: PostgreSQL cannot start: $(tail -n 1 "$T/pg-start.err")"
	exit 77
fi
PGPORT=$(echo "$PGURL" | sed 's|.*:\([0-9]*\)/.*|\1|')

# psql on the test's database: one value per line, no headers.
sql() { psql "$PGURL" -X -q -tA -v ON_ERROR_STOP=1 -c "$1"; }

# from / : the postgres user may not enter the test's directory
pg_as() { (cd / && if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi); }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
# Stops the server (fast: sessions are ended, open transactions roll back) and starts
# it again on the same port, as scripts/pg.sh start did.
pg_down() { pg_as "$(pg_bin)/pg_ctl" -D "$PGDIR/data" -m fast -w -t 60 stop >/dev/null; }
pg_up() {
	pg_as "$(pg_bin)/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w -t 60 \
		-o "-p $PGPORT -k $PGDIR -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=300" \
		start >/dev/null
}

# init_on_pg DIR PORT: `better-compute init` (which writes SQLite), then the store moved
# to PostgreSQL with `store copy` and server.toml pointed at it: the operator's path.
init_on_pg() {
	local dir=$1 port=$2
	"$BIN/better-compute" init --dir "$dir" --listen "127.0.0.1:$port" >"$dir.init.out"
	"$BIN/better-compute" store copy --from "$dir/bc.db" --to "$PGURL" >"$dir.copy.out"
	sed -i "s|^database *=.*|database    = \"$PGURL\"|" "$dir/server.toml"
	grep -q "^database *= *\"postgres://" "$dir/server.toml" || fail "server.toml not on PostgreSQL"
}

# replica_of DIR NEWDIR PORT: a second server on the same database, secret and bundle.
replica_of() {
	local dir=$1 new=$2 port=$3
	mkdir -p "$new"
	cat >"$new/server.toml" <<TOML
listen      = "127.0.0.1:$port"
public_url  = "http://127.0.0.1:$port"
database    = "$PGURL"
secret_file = "$(cd "$dir" && pwd)/secret"
pki_bundle  = "$(cd "$dir" && pwd)/pki.bundle"
TOML
}

# field NAME FILE: the value of NAME=... in a bc-load line.
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$2"; }

# start_replicas POOLNAME: the servers of var and var2 started (PID1, PID2), the
# agent's pins in pins.json, and a pool POOLNAME (its id in POOL).
start_replicas() {
	start_server var
	PID1=$SERVER_PID
	start_server var2
	PID2=$SERVER_PID
	"$BIN/better-compute" daemon config --out pins.json
	POOL=$("$BIN/better-compute" --json pools create "$1" | json_get '["id"]')
}

# load_through_both DATABASE JOINS RETRY_SECONDS: bc-load's JOINS token joins through
# both replicas in the background (LOAD; its line in load.out), sending a 503 again for
# up to RETRY_SECONDS, and back once 100 nodes are in the database.
load_through_both() {
	"$BIN/bc-load" --pins pins.json --database "$1" --url "http://127.0.0.1:$P1" \
		--url "http://127.0.0.1:$P2" --tokens "$2" --clients 8 --retry-unavailable "$3" \
		>load.out 2>load.err &
	LOAD=$!
	PIDS="$PIDS $LOAD"
	for _ in $(seq 1 600); do
		[ "$(sql "SELECT COUNT(*) FROM nodes")" -ge 100 ] && return 0
		sleep 0.05
	done
}
