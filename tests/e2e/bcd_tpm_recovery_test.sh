#!/usr/bin/env bash
# Recovering a tpm-joined node whose TPM changed (issue 7, part 4), against swtpm:
#  - the same EK (tpm2_clear: a new owner seed): the identity no longer loads, with the
#    spec's hint; `bcd join --reset --yes --attestor tpm` reclaims the same node with a
#    new identity generation, a new key in the TPM and a fresh statement, which renews;
#  - a new endorsement seed (tpm2_changeeps): the renewal fails with the spec's
#    "another TPM" message, logged as `renewal failed` with attempt and expiresIn, and
#    sends nothing; the machine moves to a second swtpm standing in for a replaced TPM,
#    whose join is refused while the old node holds the machine; after
#    `nodes cordon` and `nodes delete --yes` the same command joins it as a new node.
# Skipped (77) without swtpm or tpm2-tools.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
command -v tpm2_changeeps >/dev/null 2>&1 || { echo "SKIP: tpm2_changeeps is missing"; exit 77; }
cd "$T"

tpm_start tpmA
PORT_A=$TPM_PORT
EK_A=$(ek_hash "$PORT_A")
tpm_start tpmB
PORT_B=$TPM_PORT
EK_B=$(ek_hash "$PORT_B")
[ "$EK_A" != "$EK_B" ] || fail "two swtpms with one EK"
# the server's resolve places both EKs: the machine's TPM and its replacement
tpm_server tpm "$EK_A" "$EK_B"

export BCD_FAKEHW_TPM_KEYS=1
tpm_machine m1 "$PORT_A"
bcd join --config m1/config.toml --attestor tpm >join1.out 2>&1 || fail "tpm join: $(cat join1.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join1.out)
[ -n "$NODE" ] || fail "no 'joined as': $(cat join1.out)"
G1=$(sql "SELECT generation FROM nodes WHERE id = ?" "$NODE")
S1=$(status_field m1 serial)
K1=$(cat m1/data/node.key)

# ---- the same EK: tpm2_clear changes the owner seed the node key comes from ----
tpm_tool "$PORT_A" tpm2_clear >/dev/null || fail "tpm2_clear"
[ "$(ek_hash "$PORT_A")" = "$EK_A" ] || fail "tpm2_clear changed the EK"
if bcd status --config m1/config.toml >status.out 2>&1; then fail "status loaded after a clear"; fi
grep -q "node.key: the node key does not match the node certificate: the TPM derives another key from node.key (was the TPM cleared?); join again: bcd join --reset --yes, then bcd join" status.out ||
	fail "no clear hint: $(cat status.out)"
bcd join --config m1/config.toml --reset --yes --attestor tpm >join2.out 2>&1 ||
	fail "recovery join: $(cat join2.out)"
grep -qx "joined as $NODE" join2.out || fail "not reclaimed as $NODE: $(cat join2.out)"
G2=$(sql "SELECT generation FROM nodes WHERE id = ?" "$NODE")
[ "$G2" -gt "$G1" ] || fail "identity generation $G1 -> $G2"
[ "$(status_field m1 serial)" != "$S1" ] || fail "the reclaim kept the serial"
[ "$(cat m1/data/node.key)" != "$K1" ] || fail "the reclaim kept the key record"
grep -q "BEGIN BCD TPM NODE KEY" m1/data/node.key || fail "the reclaimed key is not in the TPM"
ls m1/data | grep -q '^node.key.reset-' || fail "--reset did not keep the old node.key"
openssl x509 -in m1/data/node.crt -noout -text >cert2.txt
AK_URI=$(grep -Eo "urn:bc:tpm-ak:sha256:000b[0-9a-f]{64}" cert2.txt) || fail "no fresh statement"
# the recovered identity renews with the AK
bcd_node_once() {
	"$BIN/bcd" node --config m1/config.toml >"$1" 2>&1 &
	NODE_PID=$!
	PIDS="$PIDS $NODE_PID"
	wait_log "$1" "$2" 1 "$NODE_PID"
	kill -TERM "$NODE_PID"
	wait "$NODE_PID" || true
	PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
}
S2=$(status_field m1 serial)
BCD_RENEW_AFTER=1s bcd_node_once node2.log "msg=renewed"
[ "$(status_field m1 serial)" != "$S2" ] || fail "the recovered identity did not renew"

# ---- a new endorsement seed: another AK, and the renewal says so ----
tpm_tool "$PORT_A" tpm2_changeeps >/dev/null || fail "tpm2_changeeps"
[ "$(ek_hash "$PORT_A")" != "$EK_A" ] || fail "tpm2_changeeps kept the EK"
S3=$(status_field m1 serial)
RENEWS=$(grep -c 'msg="node renewed"\|msg="renew refused"' var/serve.log || true)
BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s bcd_node_once node3.log "renewal failed"
MSG="renewal: this TPM's attestation key is not the one the certificate names (another TPM, or its endorsement seed changed): the certificate cannot be renewed here; join again: bcd join --reset --yes, then bcd join"
grep "renewal failed" node3.log | head -1 >failed.txt
grep -qF "$MSG" failed.txt || fail "not the another-TPM message: $(cat node3.log)"
grep -q "attempt=1 expiresIn=" failed.txt || fail "no attempt or expiresIn: $(cat failed.txt)"
[ "$(grep -c 'msg="node renewed"\|msg="renew refused"' var/serve.log || true)" = "$RENEWS" ] || fail "the failed renewal sent a request"
[ "$(status_field m1 serial)" = "$S3" ] || fail "the identity changed"
[ ! -e m1/data/node.key.next ] || fail "node.key.next left by a failed renewal"

# ---- the replaced TPM: the old node still holds the machine ----
sed -i "s/port=$PORT_A/port=$PORT_B/" m1/config.toml
if bcd join --config m1/config.toml --reset --yes --attestor tpm >join3.out 2>&1; then
	fail "a new TPM joined while the old node holds the machine: $(cat join3.out)"
fi
grep -q "refused" join3.out || fail "no refusal: $(cat join3.out)"
bc nodes cordon "$NODE" >/dev/null || fail "cordon"
bc nodes delete "$NODE" --yes >/dev/null || fail "delete"
bcd join --config m1/config.toml --reset --yes --attestor tpm >join4.out 2>&1 ||
	fail "join after delete: $(cat join4.out)"
NODE2=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join4.out)
[ -n "$NODE2" ] && [ "$NODE2" != "$NODE" ] || fail "not a new node: $(cat join4.out)"
[ "$(sql "SELECT node_id FROM node_bindings WHERE kind = 'tpm-ek' AND key = ?" "$EK_B")" = "$NODE2" ] ||
	fail "the new node is not bound to the new EK"
openssl x509 -in m1/data/node.crt -noout -text | grep -Eo "urn:bc:tpm-ak:sha256:000b[0-9a-f]{64}" >ak3.txt ||
	fail "the new node's certificate names no AK"
[ "$(cat ak3.txt)" != "$AK_URI" ] || fail "the new TPM's statement names the old AK"
echo "ok: $NODE recovered after tpm2_clear; replaced TPM joined as $NODE2"
