#!/usr/bin/env bash
# PostgreSQL stopped during a load test and started again (issue 4, part 3 and "Bad
# input"): both replicas answer 503 `unavailable` meanwhile, never crash, and recover
# without a restart; the store holds no half-written join (every node has exactly one
# current certificate, every spent token use has its node). Also what serve says of a
# database URL that does not connect and of a schema newer than it knows.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
cd "$T"
P1=$(free_port)
P2=$(free_port)
init_on_pg var "$P1"
replica_of var var2 "$P2"

# a URL that does not connect: exit 1, one line naming the database
DEAD=$(free_port)
mkdir bad
sed "s|^database *=.*|database = \"postgres://bc@127.0.0.1:$DEAD/postgres\"|" var2/server.toml >bad/server.toml
rc=0
"$BIN/better-compute" serve --config bad/server.toml >bad/out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "serve on a dead database URL exited $rc, not 1"
grep -q "cannot connect to the database" bad/out || fail "no clear message: $(cat bad/out)"
grep -q "127.0.0.1:$DEAD\|port $DEAD" bad/out || fail "the message does not name the database: $(cat bad/out)"

start_replicas outage
bc() { "$BIN/better-compute" "$@"; }
bc tokens create --role node --pool "$POOL" --out tok1 >/dev/null
JOINS=${OUTAGE_JOINS:-1500}
load_through_both "$PGURL" "$JOINS" 120
pg_down
echo "PostgreSQL stopped with $(grep -c 'msg="node joined"' var/serve.log var2/serve.log | paste -sd' ') joins logged"
for u in "http://127.0.0.1:$P1" "http://127.0.0.1:$P2"; do
	code=$(curl -s -o health.out -w '%{http_code}' "$u/healthz")
	[ "$code" = 503 ] || fail "$u/healthz answered $code while the database is away"
done
if "$BIN/bc-join" --pins pins.json --token-file tok1 --out m1 >join1.out 2>&1; then
	fail "joined while the database is away"
fi
grep -q "HTTP 503 (unavailable)" join1.out || fail "not 503 unavailable: $(cat join1.out)"
sleep 2
kill -0 "$PID1" && kill -0 "$PID2" || fail "a replica died while the database was away"
pg_up
wait "$LOAD" || fail "bc-load failed: $(cat load.err)"
PIDS=$(echo "$PIDS" | sed "s/ $LOAD//")
cat load.out
[ "$(field unavailable load.out)" -gt 0 ] || fail "the load saw no 503 during the outage"
[ "$(field errors load.out)" = 0 ] || fail "errors other than 503: $(cat load.err)"
ADM=$(field admitted load.out)
REF=$(field refused load.out)
# a join whose commit reached the database but whose answer did not may be refused
# when sent again (its token is spent): admitted or refused, never lost
[ $((ADM + REF)) = "$JOINS" ] || fail "admitted $ADM + refused $REF is not $JOINS"

# recovered without a restart: same processes, healthy, joining
kill -0 "$PID1" && kill -0 "$PID2" || fail "a replica died"
for u in "http://127.0.0.1:$P1" "http://127.0.0.1:$P2"; do
	curl -fsS "$u/healthz" >/dev/null || fail "$u/healthz not ok after the database returned"
done
"$BIN/bc-join" --pins pins.json --token-file tok1 --out m1 >join1.out 2>&1 ||
	fail "no join after the database returned: $(cat join1.out)"

# no half-written join
[ "$(sql "SELECT COUNT(*) FROM nodes n WHERE (SELECT COUNT(*) FROM node_certs c
	WHERE c.node_id = n.id AND c.revoked_at IS NULL) <> 1")" = 0 ] ||
	fail "a node without exactly one current certificate"
[ "$(sql "SELECT COUNT(*) FROM node_certs c WHERE NOT EXISTS
	(SELECT 1 FROM nodes n WHERE n.id = c.node_id)")" = 0 ] || fail "a certificate without a node"
[ "$(sql "SELECT COALESCE(SUM(uses_total - uses_left), 0) FROM join_tokens")" = \
	"$(sql "SELECT COUNT(*) FROM nodes")" ] || fail "spent token uses and nodes differ"
[ "$(sql "SELECT COUNT(*) FROM join_tokens t WHERE uses_left < uses_total AND NOT EXISTS
	(SELECT 1 FROM events e WHERE e.type = 'node.joined' AND e.data::json->>'tokenId' = t.id)")" = 0 ] ||
	fail "a spent token use without its node"
[ "$(sql "SELECT COUNT(*) FROM nodes")" -ge "$((ADM + 1))" ] || fail "fewer nodes than admitted joins"
[ "$(sql "SELECT COUNT(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM events e
	WHERE e.type = 'node.joined' AND e.subject = n.id)")" = 0 ] || fail "a node without its event"
SERVER_PID=$PID2; stop_server var2
SERVER_PID=$PID1; stop_server var

# a schema newer than this binary: refused at start, naming the versions
sql "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999999, 'future', 0)"
rc=0
"$BIN/better-compute" serve --config var/server.toml >newer.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "serve on a newer schema exited $rc"
grep -q "newer than this better-compute" newer.out || fail "no clear message: $(cat newer.out)"
echo "ok: $ADM admitted, $REF refused on resend, $(field unavailable load.out) 503 answers" \
	"during the outage; recovered without a restart; no half-written join"
