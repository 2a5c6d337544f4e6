#!/usr/bin/env bash
# Slow clients cannot stop the service: 1,500 connections trickling a byte a second
# (from 50 loopback addresses, 30 each) are held for 20 s while /healthz and token
# joins keep being answered. The request deadline (request_timeout, 10 s) closes
# every slow connection at least once in that time, although each stays active; one
# address cannot hold more than max_connections_per_address. Prints each answer's
# time and the server's VmRSS.
#
# (awk, not python, for the arithmetic between requests: a python start is a second on
# a loaded machine, and the loop must fit 8 joins in its 18 s.)
# The 3 s bound on each answer is a generous functional bound (a request that waits
# behind the slow ones would wait for their deadline, 10 s, or for ever), not a
# measurement: the timings printed are the figures.
. "$(dirname "$0")/lib.sh"
cd "$T"
SLOW=1500
HOLD_S=20
ulimit -n "$(ulimit -Hn)"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
start_server var
URL="http://127.0.0.1:$PORT"
bc() { "$BIN/better-compute" "$@"; }
bc pools create web >/dev/null
POOL=$(bc --json pools list | json_get '["pools"][0]["id"]')
bc daemon config --out var/pins.json
for i in $(seq 1 8); do bc tokens create --role node --pool "$POOL" --out "var/token$i" >/dev/null; done

# one address is capped (64 by default): of 80 connections, at least 16 are closed
python3 "$(dirname "$0")/slow_clients.py" --cap "$PORT" 80 >cap.out
CAPPED=$(sed -n 's/.*closed_by_server=\([0-9]*\).*/\1/p' cap.out)
echo "per-address cap: $(cat cap.out)"
[ "$CAPPED" -ge 16 ] || fail "one address held more than 64 connections: $(cat cap.out)"

python3 "$(dirname "$0")/slow_clients.py" "$PORT" "$SLOW" 30 "$HOLD_S" ready >slow.out 2>slow.err &
SLOW_PID=$!
PIDS="$PIDS $SLOW_PID"
for _ in $(seq 1 300); do [ -s ready ] && break; sleep 0.1; done
[ -s ready ] || { cat slow.err >&2; fail "the slow clients did not connect"; }

rss_max=0
rss() {
	local kb
	kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")
	[ "$kb" -gt "$rss_max" ] && rss_max=$kb
	return 0
}
worst=0
note() { # note WHAT SECONDS
	echo "$1 answered in $2 s"
	worst=$(awk -v a="$worst" -v b="$2" 'BEGIN { print (b > a ? b : a) }')
}
start=$(date +%s)
i=0
while [ $(($(date +%s) - start)) -lt $((HOLD_S - 2)) ]; do
	t=$(curl -fsS -o /dev/null -w '%{time_total}' --max-time 3 "$URL/healthz") ||
		fail "/healthz did not answer within 3 s under $SLOW slow connections"
	note healthz "$t"
	rss
	if [ "$i" -lt 8 ]; then
		i=$((i + 1))
		t0=$(date +%s.%N)
		timeout 3 "$BIN/bc-join" --pins var/pins.json --token-file "var/token$i" --out "var/m$i" \
			--product-uuid "6b1d0c3e-aaaa-4000-8000-00000000000$i" >"join$i.out" 2>&1 ||
			fail "join $i did not succeed within 3 s: $(cat "join$i.out")"
		grep -q "joined as node_" "join$i.out" || fail "join $i: $(cat "join$i.out")"
		note join "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')"
	fi
	rss
	sleep 0.2
done
wait "$SLOW_PID" || { cat slow.err >&2; fail "the slow clients failed"; }
PIDS=$(echo "$PIDS" | sed "s/ $SLOW_PID//")
echo "slow clients: $(tail -n 1 slow.out)"
CLOSED=$(sed -n 's/.*closed_by_server=\([0-9]*\).*/\1/p' slow.out)
# each trickling connection passes the 10 s deadline at least once in 20 s
[ "$CLOSED" -ge "$SLOW" ] || fail "the request deadline closed only $CLOSED slow connections"
[ "$i" = 8 ] || fail "only $i joins ran"
kill -0 "$SERVER_PID" || fail "the server died"
echo "server VmRSS peak: $rss_max kB; slowest answer: $worst s"
stop_server var
echo "ok: $SLOW slow connections held ${HOLD_S}s; healthz and joins answered; RSS ${rss_max} kB"
