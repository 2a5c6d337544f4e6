# Shared by the end-to-end tests: real processes on loopback in a temporary
# directory. Source it; it sets BIN, T (the directory) and cleans up on exit.
set -euo pipefail
BIN=${BC_BINARY_DIR:?BC_BINARY_DIR is set by CTest}
T=$(mktemp -d /tmp/bc-e2e.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	[ -n "${BCT_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# A free loopback port, asked of the kernel.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server DIR [ENV...]: runs better-compute serve in the background, waits for /healthz.
start_server() {
	local dir=$1; shift
	env "$@" "$BIN/better-compute" serve --config "$dir/server.toml" >>"$dir/serve.log" 2>&1 &
	SERVER_PID=$!
	PIDS="$PIDS $SERVER_PID"
	local url ca=()
	url=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$dir/server.toml")
	# an https server made by init: its own CA
	[ ! -s "$dir/tls-ca.pem" ] || ca=(--cacert "$dir/tls-ca.pem")
	for _ in $(seq 1 100); do
		if curl -fsS "${ca[@]}" "$url/healthz" >/dev/null 2>&1; then return 0; fi
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$dir/serve.log" >&2; fail "server exited"; }
		sleep 0.1
	done
	cat "$dir/serve.log" >&2
	fail "server did not answer /healthz"
}

stop_server() {
	kill -TERM "$SERVER_PID"
	local rc=0
	wait "$SERVER_PID" || rc=$?
	PIDS=$(echo "$PIDS" | sed "s/ $SERVER_PID//")
	[ "$rc" = 0 ] || { cat "$1/serve.log" >&2; fail "server exited with $rc after SIGTERM"; }
}

json_get() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }

# token_join DIR: with the server of DIR running, a pool web, a one-use node token in
# DIR/token, the agent's pins in DIR/pins.json, and a bc-join with it into DIR/m1.
token_join() {
	local dir=$1 pool
	"$BIN/better-compute" pools create web >/dev/null
	pool=$("$BIN/better-compute" --json pools list | json_get '["pools"][0]["id"]')
	"$BIN/better-compute" tokens create --role node --pool "$pool" --out "$dir/token" >/dev/null
	"$BIN/better-compute" daemon config --out "$dir/pins.json"
	"$BIN/bc-join" --pins "$dir/pins.json" --token-file "$dir/token" --out "$dir/m1" >"$dir/join.out" ||
		fail "join failed: $(cat "$dir/join.out")"
}
