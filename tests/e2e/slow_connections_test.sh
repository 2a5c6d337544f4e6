#!/usr/bin/env bash
# Slow clients from a crowded address cannot lock out the others there: 1,500
# connections from 127.0.0.1 trickle a byte a second (reopened half a second after
# the server closes one), far past max_connections_per_address (64), while 20 token
# joins and 20 /healthz from that same address are made. The server closes the
# connection of the address with the least progress for each new one, never one that
# sent its request whole, so each join and /healthz gets through. The verdict is by
# counts within a generous deadline (every one of the 20 joins and, beside them, the
# 20 /healthz within 300 s, each attempt retried after a failure), never by speed: at a
# load average of 21 (two CPU hogs beside the other helpers' builds) it took 104 s.
# Prints the attempts, each answer's time, the evictions counted (the metric and
# the clients' count) and the server's VmRSS.
. "$(dirname "$0")/lib.sh"
cd "$T"
SLOW=1500
JOINS=20
DEADLINE_S=300
ulimit -n "$(ulimit -Hn)"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
URL="http://127.0.0.1:$PORT"
KEY=$(cat var/admin.key)
bc() { "$BIN/better-compute" "$@"; }
bc pools create web >/dev/null
POOL=$(bc --json pools list | json_get '["pools"][0]["id"]')
bc daemon config --out var/pins.json
for i in $(seq 1 "$JOINS"); do
	bc tokens create --role node --pool "$POOL" --out "var/token$i" >/dev/null
done

# one address is capped (64 by default): of 80 idle connections, at least 16 are closed
python3 "$(dirname "$0")/slow_clients.py" --cap "$PORT" 80 >cap.out
CAPPED=$(sed -n 's/.*closed_by_server=\([0-9]*\).*/\1/p' cap.out)
echo "per-address cap: $(cat cap.out)"
[ "$CAPPED" -ge 16 ] || fail "one address held more than 64 connections: $(cat cap.out)"

python3 "$(dirname "$0")/slow_clients.py" "$PORT" "$SLOW" $((DEADLINE_S + 60)) ready \
	>slow.out 2>slow.err &
SLOW_PID=$!
PIDS="$PIDS $SLOW_PID"
for _ in $(seq 1 600); do [ -s ready ] && break; sleep 0.1; done
[ -s ready ] || { cat slow.err >&2; fail "the slow clients did not start"; }
sleep 3 # the crowd fills the address's 64 places and the listen queue

rss_max=0
rss() {
	local kb
	kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")
	[ "$kb" -gt "$rss_max" ] && rss_max=$kb
	return 0
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
start=$(date +%s)
# /healthz, beside the joins: one at a time, each retried until 20 were answered
(
	n=0 tries=0
	while [ "$n" -lt "$JOINS" ] && [ $(($(date +%s) - start)) -lt "$DEADLINE_S" ]; do
		tries=$((tries + 1))
		t0=$(date +%s.%N)
		if curl -fsS -o /dev/null --max-time 20 "$URL/healthz" 2>>healthz.err; then
			n=$((n + 1))
			echo "healthz $n answered in $(since "$t0") s"
		fi
		echo "$n $tries" >healthz.count
	done
) &
HEALTHZ_PID=$!
PIDS="$PIDS $HEALTHZ_PID"
joins=0 join_tries=0
while [ "$joins" -lt "$JOINS" ] && [ $(($(date +%s) - start)) -lt "$DEADLINE_S" ]; do
	kill -0 "$SLOW_PID" 2>/dev/null || { cat slow.err >&2; fail "the slow clients stopped"; }
	rss
	i=$((joins + 1))
	join_tries=$((join_tries + 1))
	t0=$(date +%s.%N)
	if timeout 30 "$BIN/bc-join" --pins var/pins.json --token-file "var/token$i" \
		--out "var/m$i" --product-uuid "$(printf '6b1d0c3e-aaaa-4000-8000-%012d' "$i")" \
		>"join$i.out" 2>&1 && grep -q "joined as node_" "join$i.out"; then
		joins=$i
		echo "join $i answered in $(since "$t0") s"
	else
		echo "join $i attempt failed: $(tail -n 1 "join$i.out")"
	fi
	rss
done
wait "$HEALTHZ_PID" || true
PIDS=$(echo "$PIDS" | sed "s/ $HEALTHZ_PID//")
[ -s healthz.count ] || echo "0 0" >healthz.count
read -r healthz healthz_tries <healthz.count
elapsed=$(($(date +%s) - start))
# the crowd was there all along: the server closed connections of the address for
# the new ones (counted by the metric) and the clients kept reopening them
curl -fsS --retry 10 --retry-all-errors --max-time 20 -H "Authorization: Bearer $KEY" \
	"$URL/metrics" >metrics.txt || fail "the /metrics scrape failed"
EVICTED=$(sed -n 's/^bc_http_connections_evicted_total \([0-9]*\)$/\1/p' metrics.txt)
touch ready.stop
wait "$SLOW_PID" || { cat slow.err >&2; fail "the slow clients failed"; }
PIDS=$(echo "$PIDS" | sed "s/ $SLOW_PID//")
echo "slow clients: $(tail -n 1 slow.out); evicted (metric): $EVICTED"
echo "joins: $joins of $JOINS in $join_tries attempts; healthz: $healthz of $JOINS in" \
	"$healthz_tries attempts; ${elapsed}s; server VmRSS peak: $rss_max kB"
CLOSED=$(sed -n 's/.*closed_by_server=\([0-9]*\).*/\1/p' slow.out)
[ "$joins" = "$JOINS" ] || fail "only $joins of $JOINS joins succeeded within ${DEADLINE_S}s"
[ "$healthz" = "$JOINS" ] || fail "only $healthz of $JOINS /healthz answered within ${DEADLINE_S}s"
# every slow connection past the address's 64 places was closed at least once
[ "$CLOSED" -ge $((SLOW - 64)) ] || fail "the server closed only $CLOSED slow connections"
[ "${EVICTED:-0}" -ge $((SLOW - 64)) ] || fail "bc_http_connections_evicted_total is ${EVICTED:-none}"
kill -0 "$SERVER_PID" || fail "the server died"
stop_server var
echo "ok: $SLOW slow connections from one address; $joins joins and $healthz /healthz" \
	"from it answered within ${DEADLINE_S}s; RSS ${rss_max} kB"
