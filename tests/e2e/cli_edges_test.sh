#!/usr/bin/env bash
# The CLI's shared rules, each at its edge: a malformed --server is usage (2); a hung
# server is given up after --timeout; a command's --help names the global options
# without repeating them, and serve --help is on stdout; an API key file others may
# read is refused as the server refuses its secret; nodes list --state bogus is
# INVALID_INPUT like join-requests'; --ttl 0s is usage; an out-of-range value is said
# in the flag's terms; --out (and --bcd-dir) never replace a file without --force,
# and a joined machine's data_dir is never reset to the default. The commands on the
# store or the PKI find ./var/server.toml without --config, and say so when it is not there.
. "$(dirname "$0")/lib.sh"
CLI="$BIN/better-compute"
W="$T"
unset BC_SERVER BC_API_KEY BC_API_KEY_FILE

run() { # STATUS CMD...: runs CMD, keeps stdout and stderr, checks the exit status
	local want=$1 st=0
	shift
	"$@" >"$W/out" 2>"$W/err" || st=$?
	if [ "$st" -ne "$want" ]; then
		echo "--- stdout" >&2; cat "$W/out" >&2
		echo "--- stderr" >&2; cat "$W/err" >&2
		fail "exit $st, expected $want: $*"
	fi
}
out_has() { grep -q -e "$1" "$W/out" || { cat "$W/out" >&2; fail "stdout lacks: $1"; }; }
out_lacks() { ! grep -q -e "$1" "$W/out" || { cat "$W/out" >&2; fail "stdout has: $1"; }; }
err_has() { grep -q -F -e "$1" "$W/err" || { cat "$W/err" >&2; fail "stderr lacks: $1"; }; }
err_lacks() { ! grep -q -F -e "$1" "$W/err" || { cat "$W/err" >&2; fail "stderr has: $1"; }; }
count() { "$CLI" --json "$@" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(next(v for v in d.values() if isinstance(v, list))))'; }

cd "$W"
PORT=$(free_port)
"$CLI" init --dir var --listen "127.0.0.1:$PORT" >/dev/null
start_server var

echo "== the store and PKI commands find ./var/server.toml without --config"
run 0 "$CLI" pki status
out_has "active (issuing)"
run 0 "$CLI" store migrate --check
run 0 "$CLI" prune --batch 100
mkdir -p elsewhere
(cd elsewhere && run 2 "$CLI" pki status)
err_has "--config is missing and there is no ./var/server.toml here: name the server.toml"
(cd elsewhere && run 2 "$CLI" store backup --out b.db)
err_has "--config is missing and there is no ./var/server.toml here"
(cd elsewhere && run 0 "$CLI" pki status --config "$W/var/server.toml")

echo "== --server notaurl: usage"
run 2 "$CLI" --server notaurl tenants list
err_has 'the server URL "notaurl" (--server) is not an http:// or https:// URL'
run 2 env BC_SERVER=notaurl "$CLI" tenants list
run 2 "$CLI" --json --server notaurl tenants list
err_has '"code":"USAGE"'

echo "== --timeout: a server that takes the connection and never answers"
HUNG=$(free_port)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
open(sys.argv[2], "w").close()
held = []
while True:
    c, _ = s.accept(); held.append(c)
' "$HUNG" "$W/hung.ready" &
PIDS="$PIDS $!"
for _ in $(seq 1 100); do [ -e hung.ready ] && break; sleep 0.1; done
[ -e hung.ready ] || fail "the hung server did not start"
run 1 "$CLI" --server "http://127.0.0.1:$HUNG" --timeout 1s tenants list
err_has "the control plane at http://127.0.0.1:$HUNG did not answer within 1s"
err_has "(--timeout sets the wait)"
run 2 "$CLI" --timeout 0 tenants list
err_has '--timeout: expected whole seconds from 1s to 1h'
run 2 "$CLI" --timeout 2h tenants list
run 2 "$CLI" --timeout soon tenants list
run 0 "$CLI" --timeout 10s tenants list
out_has "^root"
run 0 "$CLI" --help
out_has "\-\-timeout D  *give up on a server that has not answered within D (default"
out_has "30s, at most 1h"
run 0 "$CLI" completion bash
out_has "\-\-tenant|\-\-timeout)"

echo "== help: the global options once"
run 0 "$CLI" --help
out_has "\-\-api-key-file FILE"
for c in "pools list" "tokens create" "nodes list" "init" "daemon config"; do
	# shellcheck disable=SC2086
	run 0 "$CLI" $c --help
	out_has "^Global options: "
	out_lacks "\-\-api-key-file FILE"
	out_lacks "Names work wherever ids do"
	[ "$(wc -l <"$W/out")" -lt 30 ] || fail "$c --help is $(wc -l <"$W/out") lines"
done
run 0 "$CLI" serve --help
out_has "^usage: better-compute serve --config server.toml"
[ ! -s "$W/err" ] || fail "serve --help wrote on stderr: $(cat "$W/err")"
run 2 "$CLI" serve --bogus
err_has "usage: better-compute serve"

echo "== an API key file others may read or change"
chmod 644 var/admin.key
run 1 "$CLI" tenants list
err_has 'the API key file var/admin.key: mode 0644 lets every user read it; run `chmod 600 var/admin.key`'
chmod 620 var/admin.key
run 1 "$CLI" --api-key-file var/admin.key tenants list
err_has "var/admin.key: mode 0620 lets its group change it"
chmod 600 var/admin.key
run 0 "$CLI" tenants list

echo "== --state: an unknown state is INVALID_INPUT, as join-requests list says"
run 1 "$CLI" nodes list --state bogus
err_has "INVALID_INPUT: state: expected adopted, cordoned or retired"
run 1 "$CLI" join-requests list --state bogus
err_has "INVALID_INPUT: state: expected pending"
run 0 "$CLI" nodes list --state cordoned

echo "== --ttl and out-of-range values in the flag's terms"
run 0 "$CLI" pools create web
run 2 "$CLI" tokens create --role node --pool web --ttl 0s
err_has '--ttl: expected whole seconds, at least 1s, got "0s"'
run 2 "$CLI" tokens create --role node --pool web --ttl 1500ms
run 2 "$CLI" api-keys create --name k --ttl 0
run 1 "$CLI" tokens create --role node --pool web --ttl 400d
err_has 'INVALID_INPUT: --ttl: expected a duration from 1m to 365d, got "400d"'
err_lacks "ttlSeconds"
run 1 "$CLI" api-keys create --name k --ttl 10s
err_has 'INVALID_INPUT: --ttl: expected a duration from 1m to 3650d, got "10s"'
run 2 "$CLI" tokens create --role node --pool web --uses 10001
err_has '--uses: expected a whole number from 1 to 10000, got "10001"'

echo "== --out: an existing file only with --force, and nothing done on the server"
run 0 "$CLI" tokens create --role node --pool web --out tok
first=$(cat tok)
n=$(count tokens list)
run 1 "$CLI" tokens create --role node --pool web --out tok
err_has "CONFLICT: tok exists; give --force to replace it, or another file"
[ "$(count tokens list)" = "$n" ] || fail "a refused --out still made a token"
[ "$(cat tok)" = "$first" ] || fail "a refused --out changed the file"
run 0 "$CLI" tokens create --role node --pool web --out tok --force
[ "$(cat tok)" != "$first" ] || fail "--force did not replace the token file"
[ "$(stat -c %a tok)" = 600 ] || fail "the replaced token file is not 0600"
run 0 "$CLI" daemon config --out pins.json
echo stale >pins.json
run 1 "$CLI" daemon config --out pins.json
err_has "CONFLICT: pins.json exists; give --force"
[ "$(cat pins.json)" = stale ] || fail "daemon config --out replaced a file without --force"
run 0 "$CLI" daemon config --out pins.json --force
grep -q joinSigningKeyId pins.json || fail "daemon config --out --force did not write the pins"
echo keep >ud
run 1 "$CLI" machines deploy --node nosuch --out ud
err_has "CONFLICT: ud exists; give --force"
[ "$(count workflows list)" = 0 ] || fail "a refused deploy --out made a workflow"

echo "== daemon config --bcd-dir: a joined machine's config is not reset"
run 0 "$CLI" daemon config --bcd-dir m1 --data-dir "$W/m1/data"
grep -qx "data_dir = \"$W/m1/data\"" m1/config.toml || fail "config.toml data_dir"
run 1 "$CLI" daemon config --bcd-dir m1
err_has "CONFLICT: m1/config.toml exists; give --force"
run 2 "$CLI" daemon config --bcd-dir m1 --force
err_has "--force replaces m1/config.toml: give --data-dir too"
grep -qx "data_dir = \"$W/m1/data\"" m1/config.toml || fail "a refused --bcd-dir reset data_dir"
run 0 "$CLI" daemon config --bcd-dir m1 --force --data-dir "$W/m1/data2"
grep -qx "data_dir = \"$W/m1/data2\"" m1/config.toml || fail "--force --data-dir did not write"
stop_server var
echo "ok: --server usage, --timeout, help, serve --help, key file modes, --state, --ttl and flag names, --out and --bcd-dir need --force"
