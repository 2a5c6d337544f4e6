#!/usr/bin/env bash
# One crypto library: neither binary links libgnutls or libcurl (every HTTP request goes
# through bc/httpc.h on OpenSSL), a serving SQLite server has mapped neither after a
# join and a renewal over TLS, and neither has a running `bcd node` after it renewed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
for b in better-compute bcd; do
	[ -x "$BIN/$b" ] || fail "no $BIN/$b"
	if ldd "$BIN/$b" | grep -E -q 'libgnutls|libcurl'; then
		fail "$b links GnuTLS or libcurl: $(ldd "$BIN/$b" | grep -E 'libgnutls|libcurl')"
	fi
done

# maps_clean PID WHAT: /proc/PID/maps names no GnuTLS or libcurl
maps_clean() {
	if grep -E -q 'libgnutls|libcurl' "/proc/$1/maps"; then
		fail "$2 mapped $(grep -E -o 'lib(gnutls|curl)[^ ]*' "/proc/$1/maps" | sort -u | tr '\n' ' ')"
	fi
}

PORT=$(free_port)
bc init --dir var --listen "127.0.0.1:$PORT" --public-url "https://127.0.0.1:$PORT" >init.out
start_server var
bc pools create web >/dev/null
bcd_machine m1
grep -rqs '"https://127.0.0.1' m1 || fail "the machine's pins do not name the https server"
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join.out || fail "join: $(cat join.out)"
node_renewing m1 node.log
maps_clean "$NODE_PID" "a running bcd node"
maps_clean "$SERVER_PID" "a serving SQLite server"
kill -TERM "$NODE_PID"
wait "$NODE_PID" || fail "bcd node exited $? after SIGTERM"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
echo "ok: no GnuTLS or libcurl linked by better-compute or bcd, nor mapped by a serving server or bcd node"
