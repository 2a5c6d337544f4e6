#!/usr/bin/env bash
# bcd's other two renewal failure messages with the TPM gone (docs/agent.md "Renewing a
# TPM-held key"; bcd_tpm_gone_test.sh reaches the first, "... which is unavailable"):
# the TPM stops after bcd node has opened it and checked its AK, before the next key is
# made ("renewal: the next node key in the TPM: ..."), and, on a second machine, after
# the next key is made and before the AK certifies it ("renewal: the TPM's attestation
# key certifying the next key: ..."). The test build's BCD_TEST_RENEW_PAUSE=STEP:PATH
# holds the renewal at STEP until the test has stopped swtpm (PATH.paused, PATH.go), so
# nothing depends on timing. Each node keeps its certificate and key, leaves no
# node.key.next, and ends with status 0 on SIGTERM. Skipped (77) without swtpm or
# tpm2-tools.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
cd "$T"

tpm_start tpmA
PORT_A=$TPM_PORT
tpm_start tpmB
PORT_B=$TPM_PORT
EK_A=$(ek_hash "$PORT_A")
EK_B=$(ek_hash "$PORT_B")
tpm_server tpm "$EK_A" "$EK_B"
tpm_machine m1 "$PORT_A"
tpm_machine m2 "$PORT_B"

# wait_file FILE PID: until FILE exists (60 s)
wait_file() {
	for _ in $(seq 1 600); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || fail "process $2 exited"
		sleep 0.1
	done
	fail "no $1"
}

# gone_at MACHINE TPMDIR STEP MESSAGE: bcd node's renewal loses its TPM before STEP
gone_at() {
	local m=$1 tpm=$2 step=$3 msg=$4 pid s0 k0
	BCD_FAKEHW_TPM_KEYS=1 bcd join --config "$m/config.toml" --attestor tpm >"$m.join" 2>&1 ||
		fail "tpm join $m: $(cat "$m.join")"
	grep -q "BEGIN BCD TPM NODE KEY" "$m/data/node.key" || fail "$m's node key is not in the TPM"
	s0=$(openssl x509 -in "$m/data/node.crt" -noout -serial)
	k0=$(cat "$m/data/node.key")
	BCD_TEST_RENEW_PAUSE="$step:$T/$m.pause" BCD_FAKEHW_TPM_KEYS=1 BCD_RENEW_AFTER=8s \
		BCD_RETRY_BASE=1s "$BIN/bcd" node --config "$m/config.toml" >"$m.log" 2>&1 &
	pid=$!
	PIDS="$PIDS $pid"
	wait_file "$T/$m.pause.paused" "$pid"
	# the TPM goes away with the renewal's session open
	"$SWTPM" stop "$T/$tpm" >/dev/null || fail "swtpm.sh stop $tpm"
	TPMS=$(echo "$TPMS" | sed "s| $T/$tpm||")
	: >"$T/$m.pause.go"
	wait_log "$m.log" "$msg" 1 "$pid"
	# the next tries find no TPM at all
	wait_log "$m.log" "renewal: the certificate's node key is in the TPM, which is unavailable: " 1 "$pid"
	kill -TERM "$pid"
	wait "$pid" || fail "bcd node ($m) exited non-zero after SIGTERM: $(cat "$m.log")"
	PIDS=$(echo "$PIDS" | sed "s/ $pid//")
	! grep -q "msg=renewed" "$m.log" || fail "$m renewed without its TPM: $(cat "$m.log")"
	[ "$(grep -c "$msg" "$m.log")" = 1 ] || fail "$m: '$msg' not once: $(cat "$m.log")"
	[ "$(openssl x509 -in "$m/data/node.crt" -noout -serial)" = "$s0" ] ||
		fail "$m's certificate changed"
	[ "$(cat "$m/data/node.key")" = "$k0" ] || fail "$m's key changed"
	[ ! -e "$m/data/node.key.next" ] || fail "$m: node.key.next left behind"
	grep -m1 -- "$msg" "$m.log"
}

gone_at m1 tpmA next-key "renewal: the next node key in the TPM: "
gone_at m2 tpmB certify "renewal: the TPM's attestation key certifying the next key: "
echo "ok: a renewal losing its TPM before the next key and before its certification said so and kept its certificate and key"
