#!/usr/bin/env bash
# A host whose TPM cannot hold the node key (here: its [fakehw] TPM answers on no port)
# and a join that does not need the TPM (join-token): bcd warns "the TPM cannot hold the
# node key; using a file key", joins with a P-256 key in a file (no BCD TPM NODE KEY
# record), and bcd status says where the key is. With --attestor tpm the TPM is needed,
# and the same host's join fails with a clear line, writing nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null
bcd_machine m1
printf 'tpm = "swtpm:host=127.0.0.1,port=1"\n' >>m1/config.toml
new_token var/t1
BCD_FAKEHW_TPM_KEYS=1 bcd join --config m1/config.toml --token-file var/t1 >join.out 2>&1 ||
	fail "join: $(cat join.out)"
grep -q "the TPM cannot hold the node key; using a file key" join.out || fail "no warning: $(cat join.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join.out)
[ -n "$NODE" ] || fail "no 'joined as': $(cat join.out)"
grep -q "BCD TPM NODE KEY" m1/data/node.key && fail "a TPM record without a TPM"
openssl pkey -in m1/data/node.key -noout -text 2>/dev/null | grep -q "NIST CURVE: P-256" ||
	fail "node.key is not a P-256 key file"
[ "$(stat -c '%a' m1/data/node.key)" = 600 ] || fail "node.key mode $(stat -c '%a' m1/data/node.key)"
bcd status --config m1/config.toml >status.out 2>&1 || fail "status: $(cat status.out)"
grep -q "node $NODE" status.out || fail "status: $(cat status.out)"

# the tpm attestor needs the TPM: a clear failure, nothing written
bcd_machine m2
printf 'tpm = "swtpm:host=127.0.0.1,port=1"\n' >>m2/config.toml
if BCD_FAKEHW_TPM_KEYS=1 bcd join --config m2/config.toml --attestor tpm >tpm.out 2>&1; then
	fail "a tpm join without a TPM: $(cat tpm.out)"
fi
grep -q "unavailable\|cannot" tpm.out || fail "no reason: $(cat tpm.out)"
[ ! -e m2/data/node.key ] && [ ! -e m2/data/node.crt ] || fail "the failed join wrote files"
echo "ok: $NODE joined with a file key when the TPM could not hold it; a tpm join failed: $(head -1 tpm.out)"
