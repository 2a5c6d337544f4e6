#!/usr/bin/env bash
# PostgreSQL failover: a primary and a synchronous streaming standby (pg_basebackup,
# synchronous_standby_names), two control-plane replicas on a multi-host URL with
# target_session_attrs=read-write, joins running through both. The primary is killed
# (kill -9) and the standby promoted. Every join a replica answered `joined` (its
# "node joined" log line) is in the promoted database, the joins in flight are answered
# `unavailable` and sent again, service resumes without restarting a replica, and the
# time it took is printed (not judged: it is the machine's and PostgreSQL's).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
cd "$T"
PGB=$(pg_bin)
[ -x "$PGB/pg_basebackup" ] || { echo "skipped: no pg_basebackup"; exit 77; }

# the standby's directory, outside $T: the postgres user may not enter the test's
SB=$(mktemp -d /tmp/bc-e2e-sb.XXXXXX)
[ "$(id -u)" != 0 ] || chown postgres "$SB"
sb_cleanup() {
	pg_as "$PGB/pg_ctl" -D "$SB/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
	rm -rf "$SB"
	pg_cleanup
}
trap sb_cleanup EXIT
SP=$(free_port)
pg_as "$PGB/pg_basebackup" -h 127.0.0.1 -p "$PGPORT" -U bc -D "$SB/data" -R -X stream \
	--checkpoint=fast >basebackup.out 2>&1 || fail "pg_basebackup: $(cat basebackup.out)"
pg_as "$PGB/pg_ctl" -D "$SB/data" -l "$SB/log" -w -t 60 \
	-o "-p $SP -k $SB -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=300" \
	start >/dev/null || fail "the standby did not start: $(tail -n 5 "$SB/log")"
SBURL="postgres://bc@127.0.0.1:$SP/postgres"
sbsql() { psql "$SBURL" -X -q -tA -v ON_ERROR_STOP=1 -c "$1"; }
for _ in $(seq 1 300); do
	[ "$(sql "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ] && break
	sleep 0.1
done
[ "$(sql "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ] ||
	fail "the standby is not streaming: $(tail -n 5 "$SB/log")"
# synchronous: a commit returns once the standby has it, so an answered join survives
sql "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 300); do
	[ "$(sql "SELECT sync_state FROM pg_stat_replication")" = sync ] && break
	sleep 0.1
done
[ "$(sql "SELECT sync_state FROM pg_stat_replication")" = sync ] || fail "the standby is not synchronous"

# both replicas on both hosts: libpq tries them in order and keeps the writable one
MULTI="postgres://bc@127.0.0.1:$PGPORT,127.0.0.1:$SP/postgres?target_session_attrs=read-write"
P1=$(free_port)
P2=$(free_port)
init_on_pg var "$P1"
replica_of var var2 "$P2"
sed -i "s|^database *=.*|database    = \"$MULTI\"|" var/server.toml var2/server.toml
start_replicas failover
bc() { "$BIN/better-compute" "$@"; }
JOINS=${FAILOVER_JOINS:-1500}
load_through_both "$MULTI" "$JOINS" 180
# the primary dies: its postmaster killed, no shutdown, no final WAL
KILLED=$(date +%s%N)
kill -9 "$(head -n 1 "$PGDIR/data/postmaster.pid")"
echo "primary killed with $(cat var/serve.log var2/serve.log | grep -c 'msg="node joined"') joins answered"
sleep 1
pg_as "$PGB/pg_ctl" -D "$SB/data" -w -t 60 promote >/dev/null || fail "promote failed"
PROMOTED=$(date +%s%N)
# service resumes: both replicas healthy again, same processes
for u in "http://127.0.0.1:$P1" "http://127.0.0.1:$P2"; do
	for _ in $(seq 1 1200); do
		curl -fsS "$u/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "$u/healthz" >/dev/null || fail "$u/healthz not ok two minutes after the promotion"
done
RESUMED=$(date +%s%N)
wait "$LOAD" || fail "bc-load failed: $(cat load.err)"
PIDS=$(echo "$PIDS" | sed "s/ $LOAD//")
cat load.out
kill -0 "$PID1" && kill -0 "$PID2" || fail "a replica died"
[ "$(field errors load.out)" = 0 ] || fail "errors other than 503: $(cat load.err)"
ADM=$(field admitted load.out)
REF=$(field refused load.out)
# a join committed but not answered (the connection died under its commit) may be
# refused when sent again, its token spent: admitted or refused, never lost
[ $((ADM + REF)) = "$JOINS" ] || fail "admitted $ADM + refused $REF is not $JOINS"

# every answered join is in the promoted database
grep -ho 'msg="node joined" nodeId=node_[0-9a-z]*' var/serve.log var2/serve.log |
	sed 's/.*nodeId=//' | sort -u >answered.txt
sbsql "SELECT id FROM nodes" | sort -u >promoted.txt
[ "$(wc -l <answered.txt)" -ge "$ADM" ] || fail "fewer logged joins than admitted"
missing=$(comm -23 answered.txt promoted.txt | wc -l)
[ "$missing" = 0 ] || fail "$missing answered joins are not in the promoted database"
# and nothing half-written there
[ "$(sbsql "SELECT COUNT(*) FROM nodes n WHERE (SELECT COUNT(*) FROM node_certs c
	WHERE c.node_id = n.id AND c.revoked_at IS NULL) <> 1")" = 0 ] ||
	fail "a node without exactly one current certificate"
[ "$(sbsql "SELECT COALESCE(SUM(uses_total - uses_left), 0) FROM join_tokens")" = \
	"$(sbsql "SELECT COUNT(*) FROM nodes")" ] || fail "spent token uses and nodes differ"

# a join after the failover, through each replica, no restart
bc tokens create --role node --pool "$POOL" --uses 2 --out tok >/dev/null
"$BIN/bc-join" --pins pins.json --token-file tok --out m1 >join1.out 2>&1 ||
	fail "no join after the failover: $(cat join1.out)"
sed -i "s|127.0.0.1:$P1|127.0.0.1:$P2|" pins.json
"$BIN/bc-join" --pins pins.json --token-file tok --out m2 >join2.out 2>&1 ||
	fail "no join through the second replica: $(cat join2.out)"
SERVER_PID=$PID2; stop_server var2
SERVER_PID=$PID1; stop_server var
awk -v k="$KILLED" -v p="$PROMOTED" -v r="$RESUMED" -v n="$(wc -l <answered.txt)" -v a="$ADM" \
	-v f="$REF" 'BEGIN { printf "ok: %d answered joins all in the promoted database (%d admitted, %d refused on resend); promoted %.1f s after the kill, both replicas healthy %.1f s after the promotion, none restarted\n", n, a, f, (p - k) / 1e9, (r - p) / 1e9 }'
