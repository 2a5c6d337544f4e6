#!/usr/bin/env bash
# Files others may change or read: the server refuses to start when secret,
# pki.bundle or server.toml is group- or world-writable, or secret or pki.bundle is
# readable by every user, with a message that names the file and the chmod to run;
# init refuses a world-writable directory.
. "$(dirname "$0")/lib.sh"
cd "$T"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out

refused() { # refused FILE MODE EXPECTED-CHMOD
	local before
	before=$(stat -c %a "$1")
	chmod "$2" "$1"
	# a server that starts is stopped after 10 s, and fails the test
	local rc=0
	timeout 10 "$BIN/better-compute" serve --config var/server.toml >serve.out 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "the server did not refuse $1 at mode $2 (exit $rc)"
	grep -qF "$1" serve.out || fail "the message does not name $1: $(cat serve.out)"
	grep -qF "run \`chmod $3 $1\`" serve.out || fail "no chmod $3 for $1: $(cat serve.out)"
	echo "mode $2 on $1: $(cat serve.out)"
	chmod "$before" "$1"
}
refused var/secret 644 600
refused var/secret 620 600
refused var/pki.bundle 604 600
refused var/pki.bundle 660 600
refused var/server.toml 664 go-w
refused var/server.toml 646 go-w
# as init left them, it starts
start_server var
stop_server var

mkdir open
chmod 777 open
if "$BIN/better-compute" init --dir open --listen "127.0.0.1:$PORT" >init2.out 2>&1; then
	fail "init wrote into a world-writable directory"
fi
grep -qF 'run `chmod 700 open`' init2.out || fail "init: $(cat init2.out)"
[ ! -e open/secret ] || fail "init left a secret in the world-writable directory"
chmod 700 open
"$BIN/better-compute" init --dir open --listen "127.0.0.1:$PORT" >/dev/null
echo "ok: modes refused with the chmod to run"
