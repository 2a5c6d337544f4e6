#!/usr/bin/env bash
# store backup on a PostgreSQL store: exit 2, naming pg_dump and pg_basebackup
# (docs/server.md, Backups), and no file written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
cd "$T"
init_on_pg var "$(free_port)"
rc=0
"$BIN/better-compute" store backup --config var/server.toml --out pg.db >out.txt 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "store backup on PostgreSQL exited $rc: $(cat out.txt)"
grep -q "pg_dump" out.txt && grep -q "pg_basebackup" out.txt || fail "no pg_dump/pg_basebackup: $(cat out.txt)"
[ ! -e pg.db ] || fail "a file was written"
cat out.txt
# pg_dump of the same store, as docs/server.md shows, restores into a new database
pg_dump --no-owner "$PGURL" >dump.sql || fail "pg_dump"
sql "CREATE DATABASE restored"
psql "${PGURL%/*}/restored" -X -q -v ON_ERROR_STOP=1 -f dump.sql >/dev/null || fail "psql restore"
sed -i "s|^database *=.*|database    = \"${PGURL%/*}/restored\"|" var/server.toml
"$BIN/better-compute" store migrate --config var/server.toml --check | grep -q "nothing to run" ||
	fail "the restored database is not at the latest version"
echo "ok: store backup on PostgreSQL exits 2 and names pg_dump/pg_basebackup; a pg_dump restores"
