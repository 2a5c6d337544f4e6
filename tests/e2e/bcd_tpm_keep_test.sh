#!/usr/bin/env bash
# bcd join over an identity that does not load only because its TPM cannot be reached
# (a missing /dev/tpmrm0, a stopped swtpm): it keeps the identity and says how to move
# it aside, instead of joining again over node.key, whose record is the only way back
# to the key in the TPM. With the TPM back, the same identity loads again.
# Skipped (77) without swtpm or tpm2-tools.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null

tpm_start tpmA
export BCD_FAKEHW_TPM_KEYS=1
tpm_machine m1 "$TPM_PORT"
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join1.out 2>&1 || fail "join: $(cat join1.out)"
grep -q "BEGIN BCD TPM NODE KEY" m1/data/node.key || fail "the node key is not in the TPM"
NODE=$(status_field m1 nodeId)
K1=$(cat m1/data/node.key)
BEFORE=$(listing m1/data)

# the TPM goes away: the identity does not load, and a reclaim token could join again
"$SWTPM" stop "$T/tpmA" >/dev/null || fail "swtpm stop"
if bcd status --config m1/config.toml >status.out 2>&1; then fail "status loaded without its TPM"; fi
new_token var/t2 --allow-reclaim
rc=0
bcd join --config m1/config.toml --token-file var/t2 >join2.out 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "bcd join over an identity whose TPM is unreachable exited $rc: $(cat join2.out)"
grep -q "the identity in .* is kept" join2.out || fail "no word of the kept identity: $(cat join2.out)"
grep -q "bcd join --reset --yes" join2.out || fail "no hint to move it aside: $(cat join2.out)"
[ "$(cat m1/data/node.key)" = "$K1" ] || fail "node.key was overwritten"
[ "$(listing m1/data)" = "$BEFORE" ] || fail "the data directory changed: $(listing m1/data)"
echo "ok: the identity of $NODE was kept while its TPM was unreachable"
