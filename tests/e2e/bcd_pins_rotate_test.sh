#!/usr/bin/env bash
# Join key rotation as bcd sees it, with a real server and real bcd node processes, by
# the operator's commands on the store while the server runs (it reads them within 2 s):
# after `pki rotate join-signing` and `join-encryption`, bcd node learns the next keys
# from a renewal answer's pins-update statement (pins.json, bcd doctor); after `pki
# activate` it keeps renewing with no action, and after `pki retire` it ends on the new
# pins only. An agent that was offline through it (its pins all retired) is told to join
# again with a token, and does with a config written again.
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
OLD=$(sed -n 's/^join_signing_key_id = "\(.*\)"/\1/p' m1/config.toml)
C="--config var/server.toml"
# the key id of the join signing key in state $1 (pki status --json)
signing_kid() { bc pki status $C --json | python3 -c '
import json,sys
print(" ".join(k["keyId"] for k in json.load(sys.stdin)["joinSigningKeys"] if k["state"]==sys.argv[1]))' "$1"; }
seq_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sequence"])' "$1"; }
pin_state() { python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
print(" ".join(k["state"] for k in d["keys"] if k["keyId"]==sys.argv[2]) or "none")' ${2:-m1}/data/pins.json "$1"; }

# the join pinned the server's set as the store announces it
SEQ0=$(seq_of m1/data/pins.json)
[ "$SEQ0" -gt 1 ] || fail "the join did not write the store's sequence: $(cat m1/data/pins.json)"

# a kind that does not rotate: a usage error naming the three
if bc pki rotate tls-ca $C >bogus.out 2>&1; then fail "pki rotate tls-ca passed"; else [ $? = 2 ] || fail "pki rotate tls-ca: not a usage error"; fi
grep -q '"tls-ca": not a key that rotates: name node-ca, join-signing or join-encryption' bogus.out ||
	fail "pki rotate tls-ca says: $(cat bogus.out)"

# 1. the next keys are announced; bcd node pins them at a renewal
bc pki rotate join-signing $C >rotate.out || fail "rotate: $(cat rotate.out)"
grep -q "^Prepared join signing key generation [0-9]*: every join and renewal answer announces it as next" rotate.out ||
	fail "rotate says: $(cat rotate.out)"
bc pki rotate join-encryption $C >/dev/null || fail "rotate join-encryption"
SIGN=$(signing_kid prepared)
[ ${#SIGN} = 64 ] || fail "no prepared signing key in pki status: $SIGN"
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
pinned_next() { [ "$(pin_state "$SIGN")" = next ]; }
wait_for "the next key was not pinned: $(cat m1/data/pins.json)" pinned_next
[ "$(pin_state "$OLD")" = active ] || fail "the old signing key is not active: $(cat m1/data/pins.json)"
[ "$(stat -c %a m1/data/pins.json)" = 644 ] || fail "pins.json is not 0644"
SEQ1=$(seq_of m1/data/pins.json)
[ "$SEQ1" -gt "$SEQ0" ] || fail "the sequence did not rise: $SEQ0 then $SEQ1"
grep -q "msg=\"pins updated\" sequence=$SEQ1 " node.log || fail "no 'pins updated' line: $(cat node.log)"
bcd doctor --config m1/config.toml >doctor1.out || true
grep -q "^ok    pins  *sequence $SEQ1: join-signing ${OLD:0:16} active, join-encryption [0-9a-f]\{16\} active, join-signing ${SIGN:0:16} next" doctor1.out ||
	fail "doctor does not show the pins: $(cat doctor1.out)"
grep -q "^ok    pins update  *up to date (sequence $SEQ1)" doctor1.out || fail "doctor: $(cat doctor1.out)"
# m3 learns them too, then stays down through the switch
m3_next() { [ "$(pin_state "$SIGN" m3)" = next ]; }
wait_for "m3 did not pin the next key" m3_next
kill -TERM "$NODE3_PID"; wait "$NODE3_PID" || fail "m3's bcd node exited non-zero"
PIDS=$(echo "$PIDS" | sed "s/ $NODE3_PID//")

# 2. the server switches to them: renewals go on with no action
S1=$(status_field m1 serial)
bc pki activate join-signing $C >activate.out || fail "activate: $(cat activate.out)"
grep -q "^Activated join signing key generation [0-9]*: it signs every answer" activate.out ||
	fail "activate says: $(cat activate.out)"
bc pki activate join-encryption $C >/dev/null || fail "activate join-encryption"
# m3, down since: the server's answers (within its 2 s refresh), signed by its next pin,
# verify; an update is pending
m3_pending() { bcd doctor --config m3/config.toml >doctor3.out 2>&1; grep -q "^ok    pins update  *pending: the server announces sequence [0-9]* (this agent has $SEQ1); bcd node applies it at its next renewal" doctor3.out; }
wait_for "doctor of m3 shows no pending update: $(cat doctor3.out 2>/dev/null)" m3_pending
grep -q "^ok    identity current" doctor3.out || fail "doctor of m3: $(cat doctor3.out)"
switched() { [ "$(pin_state "$SIGN")" = active ]; }
wait_for "the switch was not applied: $(cat m1/data/pins.json)" switched
S2=$(status_field m1 serial)
# a function, so that the serial is read again at each try
renewed_since_s2() { [ "$(status_field m1 serial)" != "$S2" ]; }
wait_for "no renewal after the switch" renewed_since_s2
[ "$(pin_state "$OLD")" = kept ] || fail "the old signing key is not kept until retired: $(cat m1/data/pins.json)"
[ "$S1" != "$S2" ] || fail "no renewal across the switch"

# 3. the old keys retired: agents unpin them
bc pki retire join-signing $C >retire.out || fail "retire: $(cat retire.out)"
grep -q "^Retired join signing key generation [0-9]*: answers announce it retired and agents unpin it" retire.out ||
	fail "retire says: $(cat retire.out)"
bc pki retire join-encryption $C >/dev/null || fail "retire join-encryption"
unpinned() { [ "$(pin_state "$OLD")" = none ]; }
wait_for "the retired key is still pinned: $(cat m1/data/pins.json)" unpinned
! grep -q 'pins update refused' node.log || fail "a statement was refused: $(cat node.log)"
kill -TERM "$NODE_PID"; wait "$NODE_PID" || fail "bcd node exited non-zero"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
bcd status --config m1/config.toml >/dev/null || fail "m1's identity does not load with the new pins"

# 4. m2 was offline through it: its only pins are retired; told to join again
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
