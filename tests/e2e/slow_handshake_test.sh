#!/usr/bin/env bash
# A slow TLS handshake costs the server nothing: 1,000 TLS connections (from 20
# loopback addresses, 50 each) send their ClientHello a byte at a time, one byte each a
# quarter second, for 8 s, while /healthz and a token join over TLS from another
# address (127.0.0.1) are answered. The verdict is by counts, not by timing: the
# server's CPU time over the trickle (utime+stime of /proc/PID/stat) must stay under a
# generous bound of what was sent: 50 µs per byte that arrived (each is one wake-up
# and one SSL_accept that wants more; 16 µs measured on this 2-core machine at a load
# average of 20, the join and /healthz included) plus 1 s for the join and /healthz. A
# server whose handshake spins burns CPU for as long as the trickle lasts instead:
# libmicrohttpd + GnuTLS in epoll mode took 3.47 s here (174 µs a byte). Prints the
# figures.
. "$(dirname "$0")/lib.sh"
cd "$T"
SLOW=1000
PER=50
TRICKLE_S=8
ulimit -n "$(ulimit -Hn)"
PORT=$(free_port)
URL="https://127.0.0.1:$PORT"
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" --public-url "$URL" >init.out
"$BIN/better-compute" serve --config var/server.toml >>var/serve.log 2>&1 &
SERVER_PID=$!
PIDS="$PIDS $SERVER_PID"
for _ in $(seq 1 100); do
	curl -sf --cacert var/tls-ca.pem "$URL/healthz" >/dev/null && break
	kill -0 "$SERVER_PID" 2>/dev/null || { cat var/serve.log >&2; fail "serve exited"; }
	sleep 0.1
done
bc() { "$BIN/better-compute" "$@"; }
bc pools create web >/dev/null
POOL=$(bc --json pools list | json_get '["pools"][0]["id"]')
bc daemon config --server "$URL" --ca-file var/tls-ca.pem --out var/pins.json >/dev/null
bc tokens create --role node --pool "$POOL" --out var/token1 >/dev/null

ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
python3 "$(dirname "$0")/slow_handshakes.py" "$PORT" "$SLOW" "$PER" "$TRICKLE_S" ready \
	>slow.out 2>slow.err &
SLOW_PID=$!
PIDS="$PIDS $SLOW_PID"
for _ in $(seq 1 300); do [ -s ready ] && break; sleep 0.1; done
[ -s ready ] || { cat slow.err >&2; fail "the slow clients did not connect"; }
t0=$(ticks)

curl -fsS --max-time 5 --cacert var/tls-ca.pem -o /dev/null "$URL/healthz" ||
	fail "/healthz over TLS was not answered under $SLOW slow handshakes"
timeout 10 "$BIN/bc-join" --pins var/pins.json --token-file var/token1 --out var/m1 \
	--product-uuid 6b1d0c3e-bbbb-4000-8000-000000000001 >join.out 2>&1 ||
	fail "the TLS join did not succeed: $(cat join.out)"
grep -q "joined as node_" join.out || fail "join: $(cat join.out)"
curl -fsS --max-time 5 --cacert var/tls-ca.pem -o /dev/null "$URL/healthz" ||
	fail "/healthz over TLS was not answered after the join"

wait "$SLOW_PID" || { cat slow.err >&2; fail "the slow clients failed"; }
PIDS=$(echo "$PIDS" | sed "s/ $SLOW_PID//")
t1=$(ticks)
echo "slow handshakes: $(tail -n 1 slow.out)"
SENT=$(sed -n 's/.*bytes_sent=\([0-9]*\).*/\1/p' slow.out)
CLOSED=$(sed -n 's/.*closed_by_server=\([0-9]*\).*/\1/p' slow.out)
HZ=$(getconf CLK_TCK)
# the trickle must have happened: at least 8 bytes a connection (a connection the
# request deadline closed, 10 s after its accept, takes no more)
[ "$SENT" -ge $((SLOW * 8)) ] || fail "only $SENT bytes were trickled ($CLOSED closed)"
python3 - "$t0" "$t1" "$HZ" "$SENT" <<'PY' || fail "the server's CPU grew with the slow handshakes"
import sys
t0, t1, hz, sent = (int(x) for x in sys.argv[1:])
used = (t1 - t0) / hz
bound = sent * 50e-6 + 1.0
print(f"server CPU during the trickle: {used:.2f} s for {sent} bytes "
      f"({used / sent * 1e6:.1f} us a byte); bound {bound:.1f} s")
sys.exit(0 if used <= bound else 1)
PY
kill -0 "$SERVER_PID" || fail "the server died"
stop_server var
echo "ok: $SLOW slow TLS handshakes; /healthz and a TLS join answered; the server's CPU stayed bounded"
