#!/usr/bin/env bash
# bcd node renews: BCD_RENEW_AFTER=3s, at least two renewals seen through
# `bcd status --json` (a new serial each time, and a later notAfter), the new key in
# node.key (0600) and no node.key.next left; SIGTERM exits 0. Then the node retired
# through the CLI: every renewal is refused and logged as `renewal failed` with the
# attempt and expiresIn, retried with backoff (BCD_RETRY_BASE=1s).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null
bcd_machine m1
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join.out || fail "join: $(cat join.out)"
NODE=$(status_field m1 nodeId)
S0=$(status_field m1 serial)
NA0=$(status_field m1 notAfter)
K0=$(sha256sum <m1/data/node.key)

BCD_RENEW_AFTER=3s BCD_RETRY_BASE=1s "$BIN/bcd" node --config m1/config.toml >node.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"

# wait_serial OLD: polls status until the serial changes (30 s at most)
wait_serial() {
	for _ in $(seq 1 300); do
		s=$(status_field m1 serial)
		[ "$s" != "$1" ] && { echo "$s"; return 0; }
		kill -0 "$NODE_PID" 2>/dev/null || { cat node.log >&2; fail "bcd node exited"; }
		sleep 0.1
	done
	cat node.log >&2
	fail "no renewal within 30 s"
}
S1=$(wait_serial "$S0")
S2=$(wait_serial "$S1")
NA2=$(status_field m1 notAfter)
# two renewals at least 3 s apart: the later notAfter is later by seconds
[[ "$NA2" > "$NA0" ]] || fail "bcd status --json does not show a later notAfter: $NA0 -> $NA2"
[ "$(grep -c 'msg=renewed' node.log)" -ge 2 ] || fail "fewer than two 'renewed' lines: $(cat node.log)"
grep -q "msg=renewed nodeId=$NODE notAfter=" node.log || fail "renewed line without nodeId/notAfter"
[ "$(sha256sum <m1/data/node.key)" != "$K0" ] || fail "node.key did not change"
[ "$(stat -c %a m1/data/node.key)" = 600 ] || fail "node.key is not 0600 after a renewal"
bc --json events list --type node.renewed | grep -q "$NODE" || fail "no node.renewed event"

kill -TERM "$NODE_PID"
rc=0
wait "$NODE_PID" || rc=$?
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
[ "$rc" = 0 ] || fail "bcd node exited $rc after SIGTERM: $(cat node.log)"
grep -q "msg=stopped" node.log || fail "no 'stopped' line"
[ ! -e m1/data/node.key.next ] || fail "node.key.next left behind"
bcd status --config m1/config.toml >/dev/null || fail "the identity does not load after renewals"

# retired: renewals are refused, logged with attempt and expiresIn, retried
bc nodes retire "$NODE" >/dev/null
S3=$(status_field m1 serial)
BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config m1/config.toml >node2.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
for _ in $(seq 1 100); do
	[ "$(grep -c 'msg="renewal failed"' node2.log)" -ge 2 ] && break
	sleep 0.1
done
grep -q 'msg="renewal failed" nodeId='"$NODE"' attempt=1 expiresIn=[0-9]*h[0-9]*m[0-9]*s' node2.log ||
	fail "no 'renewal failed' with attempt 1 and expiresIn: $(cat node2.log)"
grep -q 'msg="renewal failed" .*attempt=2 ' node2.log || fail "not retried: $(cat node2.log)"
# the second wait doubles the first (2 s), give or take the quarter of jitter
grep -q 'msg="renewal failed" .*attempt=2 .*retryIn=0h00m0[12]s' node2.log || fail "no doubled backoff: $(cat node2.log)"
grep -q 'renewal refused by the server (permission_denied)' node2.log || fail "refusal not said: $(cat node2.log)"
bc --json events list --type security.renew.refused | grep -q renew-retired || fail "no renew-retired event"
[ "$(status_field m1 serial)" = "$S3" ] || fail "a refused renewal changed the identity"
[ ! -e m1/data/node.key.next ] || fail "a refused renewal left node.key.next"
kill -TERM "$NODE_PID"
rc=0
wait "$NODE_PID" || rc=$?
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
[ "$rc" = 0 ] || fail "bcd node exited $rc after SIGTERM while backing off"
echo "ok: $NODE renewed $S0 -> $S1 -> $S2; retired node's renewals refused and retried"
