#!/usr/bin/env bash
# A TPM-held node key whose TPM is gone at renewal (docs/agent.md "Renewing a TPM-held
# key"): bcd joins with --attestor tpm against swtpm, bcd node renews once, the swtpm is
# then stopped (8 s before the next renewal is due), and bcd node says, word for word,
# "renewal: the certificate's node key is in the TPM, which is unavailable: ..." at each
# try, keeps its certificate and key, and ends with status 0 on SIGTERM. (bcd node does
# not start without the TPM its key is in: the key is loaded first.) Skipped (77)
# without swtpm or tpm2-tools.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
cd "$T"

tpm_start tpmA
PORT_A=$TPM_PORT
EK_A=$(ek_hash "$PORT_A")
tpm_server tpm "$EK_A"
tpm_machine m1 "$PORT_A"
BCD_FAKEHW_TPM_KEYS=1 bcd join --config m1/config.toml --attestor tpm >join.out 2>&1 ||
	fail "tpm join: $(cat join.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join.out)
[ -n "$NODE" ] || fail "no 'joined as': $(cat join.out)"
grep -q "BEGIN BCD TPM NODE KEY" m1/data/node.key || fail "the node key is not in the TPM"

BCD_FAKEHW_TPM_KEYS=1 BCD_RENEW_AFTER=8s BCD_RETRY_BASE=1s "$BIN/bcd" node \
	--config m1/config.toml >node.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_log node.log "msg=renewed" 1 "$NODE_PID"
# the TPM goes away
"$SWTPM" stop "$T/tpmA" >/dev/null || fail "swtpm.sh stop"
TPMS=""
S0=$(openssl x509 -in m1/data/node.crt -noout -serial)
K0=$(cat m1/data/node.key)
wait_log node.log "renewal: the certificate's node key is in the TPM, which is unavailable: " 2 "$NODE_PID"
kill -TERM "$NODE_PID"
wait "$NODE_PID" || fail "bcd node exited non-zero after SIGTERM: $(cat node.log)"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
[ "$(grep -c "msg=renewed" node.log)" = 1 ] || fail "renewed without its TPM: $(cat node.log)"
[ "$(openssl x509 -in m1/data/node.crt -noout -serial)" = "$S0" ] || fail "the certificate changed"
[ "$(cat m1/data/node.key)" = "$K0" ] || fail "the key changed"
[ ! -e m1/data/node.key.next ] || fail "node.key.next left behind"
grep -m1 "renewal: the certificate's node key" node.log
echo "ok: $NODE's renewal without its TPM said so and kept its certificate and key"
