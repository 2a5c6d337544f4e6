#!/usr/bin/env bash
# bcd helper's socket: it listens only in a directory of root's that no one else can
# write (anyone who can write it could swap the socket for their own between bind and
# chown, or later, and hand bcd node keys of theirs), and the socket is 0660, root and
# the helper user's group, from its bind on. Needs root (the helper runs as root).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
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

# trickle: a client of the helper's user sends a frame's header and then a byte every
# half second. Its session ends at the idle deadline (5 s here), long before the 100
# bytes the frame needs, whatever the bytes; a second client is answered while the
# trickler still holds its session, and a ninth session at once is refused as busy.
# Counts decide: bytes trickled, answers given.
chmod 0711 "$T"
BCD_HELPER_IDLE_SECONDS=0 "$BIN/bcd" helper --config m1/config.toml >idle0.out 2>&1 && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q "BCD_HELPER_IDLE_SECONDS is a number of seconds from 1 to 30" idle0.out ||
	fail "BCD_HELPER_IDLE_SECONDS=0 was not refused ($rc): $(cat idle0.out)"
BCD_HELPER_IDLE_SECONDS=5 "$BIN/bcd" helper --config m1/config.toml >trickle.log 2>&1 &
HELPER_PID=$!
PIDS="$PIDS $HELPER_PID"
for _ in $(seq 1 100); do [ -S run/helper.sock ] && break; sleep 0.1; done
[ -S run/helper.sock ] || fail "no helper socket: $(cat trickle.log)"
setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- env PATH=/usr/bin:/bin HOME=/ \
	/usr/bin/python3 "$HERE/bcd_helper_trickle.py" "$T/run/helper.sock" >trickle.out 2>&1 ||
	fail "the trickle client failed: $(cat trickle.out)"
val() { sed -n "s/^$1=//p" trickle.out; }
[ "$(val second_status)" = 1 ] && val second_line | grep -q "^the TPM is unavailable" ||
	fail "the second client was not answered: $(cat trickle.out)"
[ "$(val trickled_after_answer)" -ge 1 ] ||
	fail "the second client was answered only after the trickler was cut: $(cat trickle.out)"
[ "$(val trickled)" -lt 100 ] || fail "the trickler was never cut off: $(cat trickle.out)"
val cut_line | grep -q "^no complete request within 5000 ms; session closed" ||
	fail "the trickler got no word of its deadline: $(cat trickle.out)"
val busy_line | grep -q "^busy: 8 sessions open" || fail "no busy refusal: $(cat trickle.out)"
grep -q "no complete request within the idle time" trickle.log ||
	fail "the helper did not log the cut: $(cat trickle.log)"
kill -TERM "$HELPER_PID"
wait "$HELPER_PID" || fail "bcd helper exited non-zero after SIGTERM: $(cat trickle.log)"
echo "ok: trickle: cut off after $(val trickled) bytes; the second client was answered meanwhile"
