#!/usr/bin/env bash
# Moving up (issue 4, part 5) with real processes: init and serve on SQLite, a machine
# joined with bc-join, the server stopped, `store copy` into a throwaway PostgreSQL,
# serve again on it. Everything came along: the admin key, the node, its certificate
# row, the spent token (still refused), the events. A copy into a target that holds
# rows is refused. The node's renewal after the move is driven in-process by
# tests/integration/store_copy_test.c (no renewing agent in this build to drive here).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
cd "$T"
PORT=$(free_port)
bc() { "$BIN/better-compute" "$@"; }
bc init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
POOL=$(bc --json pools create moving | json_get '["id"]')
bc tokens create --role node --pool "$POOL" --out tok >/dev/null
bc daemon config --out pins.json
"$BIN/bc-join" --pins pins.json --token-file tok --out m1 >join.out
NODE=$(sed -n 's/.*joined as \(node_[0-9a-z]*\).*/\1/p' join.out)
[ -n "$NODE" ] || fail "no join: $(cat join.out)"
SERIAL=$(openssl x509 -in m1/node.crt -noout -serial | sed 's/serial=//' | tr A-F a-f)
stop_server var

# the copy
bc store copy --from var/bc.db --to "$PGURL" >copy.out
cat copy.out
grep -q "^nodes *1$" copy.out || fail "store copy did not report the node"
grep -q "^node_certs *1$" copy.out || fail "store copy did not report its certificate"
[ "$(sql "SELECT COUNT(*) FROM nodes WHERE id = '$NODE'")" = 1 ] || fail "node not copied"
[ "$(sql "SELECT lower(serial) FROM node_certs WHERE node_id = '$NODE'" | sed 's/^0*//')" = \
	"$(echo "$SERIAL" | sed 's/^0*//')" ] || fail "certificate row not copied"
[ "$(sql "SELECT COUNT(*) FROM schema_migrations")" = \
	"$(sqlite3 var/bc.db 'SELECT COUNT(*) FROM schema_migrations' 2>/dev/null || sql "SELECT COUNT(*) FROM schema_migrations")" ] ||
	fail "schema_migrations versions differ"

# a second copy is refused, and writes nothing
rc=0
bc store copy --from var/bc.db --to "$PGURL" >copy2.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a copy into a non-empty target exited $rc"
grep -q "target is not empty" copy2.out || fail "no clear refusal: $(cat copy2.out)"
[ "$(sql "SELECT COUNT(*) FROM nodes")" = 1 ] || fail "the refused copy wrote rows"

# serve on PostgreSQL: the same admin key, node and token
sed -i "s|^database *=.*|database    = \"$PGURL\"|" var/server.toml
start_server var
bc nodes get "$NODE" | grep -q "$NODE" || fail "nodes get $NODE after the move"
if "$BIN/bc-join" --pins pins.json --token-file tok --out m2 >join2.out 2>&1; then
	fail "the spent token joined again after the move"
fi
bc --json events list --type node.joined | grep -q "$NODE" || fail "the join's event was not copied"
bc tokens create --role node --pool "$POOL" --out tok2 >/dev/null
"$BIN/bc-join" --pins pins.json --token-file tok2 --out m3 >join3.out || fail "no join after the move"
stop_server var
echo "ok: $NODE and its certificate moved to PostgreSQL; the copy refuses a non-empty target"
