#!/usr/bin/env bash
# The HTTP front-end candidates side by side (docs/performance.md, "TLS as deployed"):
# each answers "ok" to N requests from C threads, every request on a fresh connection
# (TLS: a full handshake; tls_cpu.c keeps one SSL_CTX per thread), and the server's CPU
# per connection + request is read from /proc/PID/stat. Interleaved, ROUNDS rounds.
#   libmicrohttpd 0.9.75 + GnuTLS, epoll (what the server ran) and poll: mhdtls.c of
#     ../shared/bench-peers/mhdtls
#   libh2o-evloop 2.2.5 on OpenSSL: h2o_ok.c
#   ours, src/server/http*.c on OpenSSL: bc_ok.c (from BUILD_DIR's libbc_server.a)
#
#   bench/candidates/run.sh BUILD_DIR [PEERS_DIR]      ROUNDS=3 N=2000 C=8
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
B=$(cd "${1:?usage: run.sh BUILD_DIR [PEERS_DIR]}" && pwd)
PEERS=${2:-$TOP/../shared/bench-peers}
ROUNDS=${ROUNDS:-3}; N=${N:-2000}; C=${C:-8}
W=$(mktemp -d /tmp/bc-candidates.XXXXXX)
PID=""
cleanup() { [ -z "$PID" ] || kill "$PID" 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
cc -O2 -o "$W/tls_cpu" "$HERE/tls_cpu.c" -lssl -lcrypto -lpthread
cc -O2 -o "$W/h2o_ok" "$HERE/h2o_ok.c" $(pkg-config --cflags --libs libh2o-evloop) -lssl -lcrypto
cc -O2 -I"$TOP/include" -I"$TOP/src" -o "$W/bc_ok" "$HERE/bc_ok.c" "$B/libbc_server.a" \
	"$B/libbc_base.a" -lh2o-evloop -lssl -lcrypto -ljansson -lpthread
HAVE_MHD=0
if [ -f "$PEERS/mhdtls/mhdtls.c" ] && cc -O2 -o "$W/mhdtls" "$PEERS/mhdtls/mhdtls.c" -lmicrohttpd 2>/dev/null; then
	HAVE_MHD=1
fi
openssl ecparam -name prime256v1 -genkey -noout -out "$W/key.pem" 2>/dev/null
openssl req -x509 -new -key "$W/key.pem" -subj /CN=127.0.0.1 -days 1 -out "$W/cert.pem" 2>/dev/null
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
run() { # LABEL MODE CMD... (the command's last arguments: PORT is substituted for @)
	local label=$1 mode=$2 p args=() a
	shift 2
	p=$(port)
	for a in "$@"; do args+=("${a//@/$p}"); done
	"${args[@]}" & PID=$!
	sleep 0.5
	echo "round=$R $label $("$W/tls_cpu" 127.0.0.1 "$p" "$N" "$C" "$PID" "$mode")"
	kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
}
for R in $(seq 1 "$ROUNDS"); do
	if [ "$HAVE_MHD" = 1 ]; then
		run mhd-epoll-tls tls "$W/mhdtls" @ auto "$W/cert.pem" "$W/key.pem"
		run mhd-poll-tls tls "$W/mhdtls" @ poll "$W/cert.pem" "$W/key.pem"
	fi
	run h2o-tls tls "$W/h2o_ok" @ "$W/cert.pem" "$W/key.pem"
	run ours-tls tls "$W/bc_ok" @ "$W/cert.pem" "$W/key.pem"
	[ "$HAVE_MHD" = 1 ] && run mhd-poll-plain plain "$W/mhdtls" @ poll - -
	run h2o-plain plain "$W/h2o_ok" @ - -
	run ours-plain plain "$W/bc_ok" @ - -
done
