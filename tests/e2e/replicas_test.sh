#!/usr/bin/env bash
# Two `better-compute serve` replicas on one throwaway PostgreSQL (issue 4, part 3):
# single use holds across replicas because the database enforces it. 64 clients race
# over both replicas for one one-use token: exactly one is admitted. 1,000 joins with
# distinct tokens spread over both: all admitted, no node id or certificate serial
# twice (checked in SQL). The store is made by init and moved with `store copy`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
cd "$T"
P1=$(free_port)
P2=$(free_port)
init_on_pg var "$P1"
replica_of var var2 "$P2"
start_server var
PID1=$SERVER_PID
start_server var2
PID2=$SERVER_PID
"$BIN/better-compute" daemon config --out pins.json
U1="http://127.0.0.1:$P1"
U2="http://127.0.0.1:$P2"
load() { "$BIN/bc-load" --pins pins.json --database "$PGURL" --url "$U1" --url "$U2" "$@"; }

# the race: one token of one use, 64 clients at once over both replicas
load --tokens 1 --uses 1 --joins 64 --clients 64 >race.out
cat race.out
[ "$(field admitted race.out)" = 1 ] || fail "race: admitted $(field admitted race.out) of 64, not 1"
[ "$(field refused race.out)" = 63 ] || fail "race: refused $(field refused race.out), not 63"
[ "$(field errors race.out)" = 0 ] || fail "race: errors"
[ "$(sql "SELECT COUNT(*) FROM nodes")" = 1 ] || fail "race: not exactly one node in the store"
[ "$(sql "SELECT COUNT(*) FROM events WHERE type = 'security.join.refused' AND data LIKE '%token-used-up%'")" = 63 ] ||
	fail "race: not 63 token-used-up refusals"

# 1,000 distinct tokens over both replicas
JOINS=${REPLICA_JOINS:-1000}
load --tokens "$JOINS" --clients 16 >many.out
cat many.out
[ "$(field admitted many.out)" = "$JOINS" ] || fail "admitted $(field admitted many.out) of $JOINS"
[ "$(field errors many.out)" = 0 ] || fail "errors in the 1,000 joins"
[ "$(sql "SELECT COUNT(*) FROM nodes")" = $((JOINS + 1)) ] || fail "not $((JOINS + 1)) nodes"
[ "$(sql "SELECT COUNT(*) - COUNT(DISTINCT id) FROM nodes")" = 0 ] || fail "a node id twice"
[ "$(sql "SELECT COUNT(*) - COUNT(DISTINCT serial) FROM node_certs")" = 0 ] || fail "a serial twice"
[ "$(sql "SELECT COUNT(*) - COUNT(DISTINCT der_sha256) FROM node_certs")" = 0 ] ||
	fail "a certificate twice"
[ "$(sql "SELECT COUNT(*) FROM nodes n WHERE (SELECT COUNT(*) FROM node_certs c
	WHERE c.node_id = n.id) <> 1")" = 0 ] || fail "a node without exactly one certificate"
[ "$(sql "SELECT COUNT(*) FROM join_tokens WHERE uses_left <> 0")" = 0 ] || fail "a token not spent"
# both replicas admitted machines
N1=$(grep -c 'msg="node joined"' var/serve.log || true)
N2=$(grep -c 'msg="node joined"' var2/serve.log || true)
[ "$N1" -gt 0 ] && [ "$N2" -gt 0 ] || fail "joins not spread: $N1 and $N2"
kill -0 "$PID1" && kill -0 "$PID2" || fail "a replica died"
SERVER_PID=$PID2; stop_server var2
SERVER_PID=$PID1; stop_server var
echo "ok: race admitted 1 of 64; $JOINS joins over two replicas ($N1 + $N2 node joined lines)"
