#!/usr/bin/env bash
# bcd helper's socket: it listens only in a directory of root's that no one else can
# write (anyone who can write it could swap the socket for their own between bind and
# chown, or later, and hand bcd node keys of theirs), and the socket is 0660, root and
# the helper user's group, from its bind on. Needs root (the helper runs as root).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root: bcd helper runs as root"
	exit 77
fi
getent passwd nobody >/dev/null || { echo "SKIP: no user nobody"; exit 77; }
bcd_server var
bcd_machine m1
# the TPM is opened at a session's first request, never at start
printf 'tpm = "swtpm:host=127.0.0.1,port=1"\n' >>m1/config.toml
cp m1/config.toml m1/open.toml
printf '\n[helper]\nsocket = "%s"\nuser = "nobody"\n' "$T/open/helper.sock" >>m1/open.toml
printf '\n[helper]\nsocket = "%s"\nuser = "nobody"\n' "$T/run/helper.sock" >>m1/config.toml
mkdir -m 0777 open
mkdir -m 0755 run

rc=0
timeout 5 "$BIN/bcd" helper --config m1/open.toml >open.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "bcd helper in a directory anyone can write exited $rc: $(cat open.out)"
grep -q "must be a directory of root's that no one else can write" open.out ||
	fail "no word of the directory: $(cat open.out)"
[ ! -e open/helper.sock ] || fail "a socket in a directory anyone can write"

"$BIN/bcd" helper --config m1/config.toml >helper.log 2>&1 &
HELPER_PID=$!
PIDS="$PIDS $HELPER_PID"
for _ in $(seq 1 100); do [ -S run/helper.sock ] && break; sleep 0.1; done
[ -S run/helper.sock ] || fail "no helper socket: $(cat helper.log)"
[ "$(stat -c '%a %U %G' run/helper.sock)" = "660 root $(id -gn nobody)" ] ||
	fail "socket: $(stat -c '%a %U %G' run/helper.sock)"
kill -TERM "$HELPER_PID"
wait "$HELPER_PID" || fail "bcd helper exited non-zero after SIGTERM: $(cat helper.log)"
[ ! -e run/helper.sock ] || fail "the socket is left after SIGTERM"
echo "ok: the helper refused a directory anyone can write, and listened 0660 in root's"
