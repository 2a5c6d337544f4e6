#!/usr/bin/env bash
# Join key rotation as bcd sees it, with a real server and real bcd node processes. The
# server's join key set comes from a test build's BC_TEST_JOIN_KEYS file (the store's
# pki_keys table takes its place later): restarted with a next signing and a next
# encryption key, bcd node learns them from a renewal answer's pins-update statement
# (pins.json, bcd doctor); restarted with them active, bcd node keeps renewing with no
# action and ends on the new pins only. An agent that was offline through it (its pins
# all retired) is told to join again with a token, and does with a config written again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null
for m in m1 m2 m3; do
	bcd_machine $m
	new_token var/t-$m
	bcd join --config $m/config.toml --token-file var/t-$m >join-$m.out || fail "join $m: $(cat join-$m.out)"
done
for k in sign enc; do openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $k.pem 2>/dev/null; done
kid() { openssl pkey -in "$1" -pubout -outform DER 2>/dev/null | sha256sum | cut -d' ' -f1; }
SIGN=$(kid sign.pem)
OLD=$(sed -n 's/^join_signing_key_id = "\(.*\)"/\1/p' m1/config.toml)
pin_state() { python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
print(" ".join(k["state"] for k in d["keys"] if k["keyId"]==sys.argv[2]) or "none")' ${2:-m1}/data/pins.json "$1"; }

# 1. the next keys are announced; bcd node pins them at a renewal
printf 'next join-signing %s\nnext join-encryption %s\n' "$T/sign.pem" "$T/enc.pem" >keys-next
stop_server var
start_server var BC_TEST_JOIN_KEYS="$T/keys-next"
BCD_RENEW_AFTER=2s BCD_RETRY_BASE=1s "$BIN/bcd" node --config m3/config.toml >node3.log 2>&1 &
NODE3_PID=$!
PIDS="$PIDS $NODE3_PID"
BCD_RENEW_AFTER=2s BCD_RETRY_BASE=1s "$BIN/bcd" node --config m1/config.toml >node.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_for() { # wait_for WHAT CMD...: 180 s at most (a renewal may be backing off)
	local what=$1; shift
	for _ in $(seq 1 1800); do
		"$@" && return 0
		kill -0 "$NODE_PID" 2>/dev/null || { cat node.log >&2; fail "bcd node exited"; }
		sleep 0.1
	done
	cat node.log >&2
	fail "$what"
}
# the join pinned the server's first set (sequence 1)
grep -q '"sequence":1' m1/data/pins.json || fail "the join did not write pins.json: $(cat m1/data/pins.json)"
pinned_next() { [ "$(pin_state "$SIGN")" = next ]; }
wait_for "the next key was not pinned: $(cat m1/data/pins.json)" pinned_next
[ "$(pin_state "$OLD")" = active ] || fail "the old signing key is not active: $(cat m1/data/pins.json)"
[ "$(stat -c %a m1/data/pins.json)" = 644 ] || fail "pins.json is not 0644"
grep -q 'msg="pins updated" sequence=3 ' node.log || fail "no 'pins updated' line: $(cat node.log)"
bcd doctor --config m1/config.toml >doctor1.out || true
grep -q "^ok    pins  *sequence 3: join-signing ${OLD:0:16} active, join-encryption [0-9a-f]\{16\} active, join-signing ${SIGN:0:16} next" doctor1.out ||
	fail "doctor does not show the pins: $(cat doctor1.out)"
grep -q "^ok    pins update  *up to date (sequence 3)" doctor1.out || fail "doctor: $(cat doctor1.out)"
# m3 learns them too, then stays down through the switch
m3_next() { [ "$(pin_state "$SIGN" m3)" = next ]; }
wait_for "m3 did not pin the next key" m3_next
kill -TERM "$NODE3_PID"; wait "$NODE3_PID" || fail "m3's bcd node exited non-zero"
PIDS=$(echo "$PIDS" | sed "s/ $NODE3_PID//")

# 2. the server switches to them: renewals go on with no action, the old keys retired
S1=$(status_field m1 serial)
printf 'active join-signing %s\nactive join-encryption %s\n' "$T/sign.pem" "$T/enc.pem" >keys-active
stop_server var
start_server var BC_TEST_JOIN_KEYS="$T/keys-active"
# m3, down since: the server's answers, signed by its next pin, verify; an update is pending
bcd doctor --config m3/config.toml >doctor3.out || fail "doctor of m3: $(cat doctor3.out)"
grep -q "^ok    identity current" doctor3.out || fail "doctor of m3: $(cat doctor3.out)"
grep -q "^ok    pins update  *pending: the server announces sequence 5 (this agent has 3); bcd node applies it at its next renewal" doctor3.out ||
	fail "doctor of m3 shows no pending update: $(cat doctor3.out)"
wait_for "the switch was not applied" grep -q 'msg="pins updated" sequence=5 ' node.log
S2=$(status_field m1 serial)
# a function, so that the serial is read again at each try
renewed_since_s2() { [ "$(status_field m1 serial)" != "$S2" ]; }
wait_for "no renewal after the switch" renewed_since_s2
[ "$(pin_state "$SIGN")" = active ] || fail "the new signing key is not active: $(cat m1/data/pins.json)"
[ "$(pin_state "$OLD")" = none ] || fail "the retired key is still pinned: $(cat m1/data/pins.json)"
[ "$S1" != "$S2" ] || fail "no renewal across the switch"
! grep -q 'pins update refused' node.log || fail "a statement was refused: $(cat node.log)"
kill -TERM "$NODE_PID"; wait "$NODE_PID" || fail "bcd node exited non-zero"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
bcd status --config m1/config.toml >/dev/null || fail "m1's identity does not load with the new pins"

# 3. m2 was offline through it: its only pins are retired; told to join again
if bcd doctor --config m2/config.toml >doctor-m2.out; then fail "doctor of m2 passed: $(cat doctor-m2.out)"; fi
grep -q "signed by key $SIGN, expected the pinned $OLD or another pinned join signing key; if the server's join keys were rotated and these pins retired, join again with a token" doctor-m2.out ||
	fail "m2 is not told to join again: $(cat doctor-m2.out)"
grep -q "^fail  identity current" doctor-m2.out || fail "doctor of m2: not a failure: $(cat doctor-m2.out)"
grep -q "hint: if the control plane's join keys were rotated while this machine was away, write the config again" doctor-m2.out ||
	fail "doctor of m2: no hint: $(cat doctor-m2.out)"
bc daemon config --force --bcd-dir "$T/m2" --data-dir "$T/m2/data" >/dev/null
printf '\n[fakehw]\nclaims = "claims.json"\n' >>m2/config.toml
grep -q "join_signing_key_id = \"$SIGN\"" m2/config.toml || fail "daemon config does not give the new key"
new_token var/t-m2b --allow-reclaim
bcd join --reset --yes --config m2/config.toml --token-file var/t-m2b >join-m2b.out 2>&1 || fail "m2 re-join: $(cat join-m2b.out)"
# the stale pins.json (grown from the old config) was set aside, then written again
grep -q "\"base\":\"$SIGN\"" m2/data/pins.json || fail "m2's pins.json was not written from the new config: $(cat m2/data/pins.json)"
bcd doctor --config m2/config.toml >doctor-m2b.out || fail "doctor of m2 after the re-join: $(cat doctor-m2b.out)"
echo "ok: next keys pinned at a renewal, switch with no action, retired pins told to join again"
