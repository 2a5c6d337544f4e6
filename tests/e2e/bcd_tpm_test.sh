#!/usr/bin/env bash
# bcd with a TPM (swtpm, each with a manufacturer CA of its own, scripts/swtpm.sh):
#  - `bcd join --attestor tpm` with no token against [attestors.tpm] trusting only that
#    CA: two rounds, the node in the pool `resolve` names for the EK, bound to
#    sha256(EK) in node_bindings, node.key a BCD TPM NODE KEY record, node.joined with
#    nodeKey tpm, the certificate carrying the AK statement; status and doctor say so;
#    a root bcd node renews that certificate with the AK certifying the next key;
#  - a reinstall (identity removed, or --reset --yes): the same TPM joins as the same node;
#  - enrollment: an unknown EK waits, bcd keeping its key and CSR (pending.json): killed
#    and started again it asks with them, `join-requests approve` lets it finish with a
#    certificate for the kept key; `deny` makes it stop with a clear error, the kept
#    files removed;
#  - a file key (a token join without BCD_FAKEHW_TPM_KEYS) moves into the TPM at its
#    next renewal.
# Skipped (77) without swtpm or tpm2-tools.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
cd "$T"

tpm_start tpmA
PORT_A=$TPM_PORT
ROOT_A=$TPM_ROOT
EK_A=$(ek_hash "$PORT_A")
[ ${#EK_A} = 64 ] || fail "no EK hash from tpm2_createek"

# the control plane: a pool and a site first, then [attestors.tpm] naming them
bc init --dir "$T/var" --listen "127.0.0.1:$(free_port)" >var.init.out
start_server var
bc pools create web >/dev/null
POOL=$(bc --json pools create tpm | json_get '["id"]')
SITE=$(bc --json sites create lab | json_get '["id"]')
stop_server var
printf '[ek.%s]\ntenant = "root"\npool = "%s"\n' "$EK_A" "$POOL" >resolve.toml
# Every test TPM chains to a root of its own, through swtpm_localca's intermediate
# (ca/issuercert.pem), which the TPM does not hold in NV, so bcd cannot send it: the
# manufacturer's intermediate goes into ek_roots beside its root, as it would for a
# vendor whose TPMs carry only the EK certificate.
tpm_start tpmB
PORT_B=$TPM_PORT
tpm_start tpmC
PORT_C=$TPM_PORT
ROOTS=""
for d in tpmA tpmB tpmC; do
	ROOTS="$ROOTS\"$T/$d/ca/swtpm-localca-rootca-cert.pem\", \"$T/$d/ca/issuercert.pem\", "
done
[ "$ROOT_A" = "$T/tpmA/ca/swtpm-localca-rootca-cert.pem" ] || fail "swtpm.sh printed root $ROOT_A"
cat >>var/server.toml <<EOF

[attestors.tpm]
ek_roots = [${ROOTS%, }]
resolve = "$T/resolve.toml"
enrollment_tenant = "root"
enrollment_site = "$SITE"
enrollment_pool = "$POOL"
retry_after_seconds = 1
EOF
start_server var

# ---- a tpm join: no token, the key in the TPM, certified by the AK ----
tpm_machine m1 "$PORT_A"
new_token var/t1
if bcd join --config m1/config.toml --attestor tpm --token-file var/t1 >usage.out 2>&1; then
	fail "--token-file with --attestor tpm was accepted"
else
	[ $? = 2 ] || fail "--token-file with --attestor tpm: not a usage error"
fi
grep -q "does not go with --attestor tpm" usage.out || fail "usage: $(cat usage.out)"
# joins the server logged: "join deferred", "node joined", "join refused"
joins() { grep -c 'msg="\(join deferred\|node joined\|join refused\)"' var/serve.log || true; }
challenges() { grep -c 'msg="join deferred" attestor=tpm kind=challenge' var/serve.log || true; }
J0=$(joins)
C0=$(challenges)
BCD_JOIN_TOKEN=$(cat var/t1) BCD_FAKEHW_TPM_KEYS=1 bcd join --config m1/config.toml --attestor tpm \
	>join1.out 2>join1.err || fail "tpm join: $(cat join1.out join1.err)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join1.out)
[ -n "$NODE" ] || fail "no 'joined as': $(cat join1.out join1.err)"
[ ! -s join1.err ] || fail "tpm join wrote to stderr: $(cat join1.err)"
[ $(($(joins) - J0)) = 2 ] && [ $(($(challenges) - C0)) = 1 ] ||
	fail "not two rounds (a challenge, then joined): $(tail -3 var/serve.log)"
grep -q "BEGIN BCD TPM NODE KEY" m1/data/node.key || fail "node.key is not a TPM record: $(head -1 m1/data/node.key)"
grep -q "PRIVATE KEY" m1/data/node.key && fail "node.key holds a private key"
[ "$(stat -c %a m1/data/node.key)" = 600 ] || fail "node.key is not 0600"
[ "$(sql "SELECT node_id FROM node_bindings WHERE kind = 'tpm-ek' AND key = ?" "$EK_A")" = "$NODE" ] ||
	fail "the node is not bound to sha256(EK) $EK_A"
[ "$(sql "SELECT pool_id FROM nodes WHERE id = ?" "$NODE")" = "$POOL" ] || fail "not in the resolved pool"
# event_key TYPE NODE: the nodeKey of the node's last event of TYPE
event_key() {
	bc --json events list --type "$1" | python3 -c 'import json, sys
evs = [e for e in json.load(sys.stdin)["events"] if e["data"].get("nodeId") == sys.argv[1]]
print(evs[-1]["data"].get("nodeKey") if evs else "none")' "$2"
}
[ "$(event_key node.joined "$NODE")" = tpm ] || fail "node.joined: nodeKey $(event_key node.joined "$NODE")"
openssl x509 -in m1/data/node.crt -noout -text >cert.txt
grep -Eq "URI:urn:bc:tpm-ak:sha256:000b[0-9a-f]{64}" cert.txt || fail "no AK statement: $(grep URI cert.txt)"

# status, doctor, already joined (no TPM evidence made: no new Join)
bcd status --config m1/config.toml >status.out || fail "status: $(cat status.out)"
grep -q "node $NODE, .*node key in the TPM" status.out || fail "status: $(cat status.out)"
[ "$(status_field m1 nodeKey)" = tpm ] || fail "status --json nodeKey"
bcd doctor --config m1/config.toml >doctor.out || fail "doctor: $(cat doctor.out)"
grep -Eq "^ok +node key +in the TPM" doctor.out || fail "doctor: $(cat doctor.out)"
J2=$(joins)
bcd join --config m1/config.toml --attestor tpm >again.out 2>&1 || fail "again: $(cat again.out)"
grep -qx "already joined as $NODE" again.out || fail "again: $(cat again.out)"
[ "$(joins)" = "$J2" ] || fail "already joined sent a Join"

# the certificate names an AK: a root bcd node renews it in the TPM it opens, the AK
# certifying the next key (bcd_tpm_renew_test.sh does it through bcd helper)
S0=$(status_field m1 serial)
BCD_FAKEHW_TPM_KEYS=1 BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config m1/config.toml >node1.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
for _ in $(seq 1 100); do grep -q "msg=renewed\|renewal failed" node1.log && break; sleep 0.1; done
grep -q "msg=renewed" node1.log || fail "AK renewal: $(cat node1.log)"
kill -TERM "$NODE_PID"
wait "$NODE_PID" || true
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
[ "$(status_field m1 serial)" != "$S0" ] || fail "the AK renewal kept the serial"
grep -q "BEGIN BCD TPM NODE KEY" m1/data/node.key || fail "the renewed key is not a TPM record"
openssl x509 -in m1/data/node.crt -noout -text | grep -Eq "URI:urn:bc:tpm-ak:sha256:000b[0-9a-f]{64}" ||
	fail "the renewed certificate lost the AK statement"
[ ! -e m1/data/node.key.next ] || fail "node.key.next left by a renewal"

# ---- a reinstall: the same TPM joins as the same node ----
rm -rf m1/data
BCD_FAKEHW_TPM_KEYS=1 bcd join --config m1/config.toml --attestor tpm >join2.out 2>&1 ||
	fail "rejoin: $(cat join2.out)"
grep -qx "joined as $NODE" join2.out || fail "rejoin as another node: $(cat join2.out)"
[ "$(event_key node.reclaimed "$NODE")" = tpm ] || fail "node.reclaimed: nodeKey $(event_key node.reclaimed "$NODE")"
BCD_FAKEHW_TPM_KEYS=1 bcd join --config m1/config.toml --attestor tpm --reset --yes >join3.out 2>&1 ||
	fail "--reset --yes rejoin: $(cat join3.out)"
grep -qx "joined as $NODE" join3.out || fail "--reset rejoin as another node: $(cat join3.out)"
ls m1/data | grep -q '^node.key.reset-' || fail "--reset did not move node.key aside"
grep -q "BEGIN BCD TPM NODE KEY" m1/data/node.key || fail "rejoined node.key is not a TPM record"

# ---- enrollment: an unknown EK waits for an operator ----
# wait_request: the id of the pending join request (30 s at most)
wait_request() {
	local id
	for _ in $(seq 1 300); do
		id=$(bc --json join-requests list --state pending | python3 -c 'import json,sys
d=json.load(sys.stdin); d=d if isinstance(d,list) else d.get("joinRequests",[])
print(d[0]["id"] if d else "")')
		[ -n "$id" ] && { echo "$id"; return 0; }
		kill -0 "$1" 2>/dev/null || fail "bcd join exited while waiting"
		sleep 0.1
	done
	fail "no pending join request"
}
# bcd join keeps the request's key and CSR while it waits: killed and started again,
# it asks with the same CSR (no enrollment-csr), and the approved certificate is for
# the kept key
tpm_machine m2 "$PORT_B"
BCD_FAKEHW_TPM_KEYS=1 "$BIN/bcd" join --config m2/config.toml --attestor tpm >join4a.out 2>join4a.err &
JOIN_PID=$!
PIDS="$PIDS $JOIN_PID"
REQ=$(wait_request "$JOIN_PID")
for _ in $(seq 1 300); do grep -q "keeping the key and CSR" join4a.err && break; sleep 0.1; done
grep -q "keeping the key and CSR of this join request in $T/m2/data/pending.json" join4a.err ||
	fail "no keeping line: $(cat join4a.err)"
[ "$(stat -c %a m2/data/node.key.pending)" = 600 ] || fail "node.key.pending is not 0600"
grep -q "BEGIN BCD TPM NODE KEY" m2/data/node.key.pending || fail "the kept key is not a TPM record"
kill -KILL "$JOIN_PID"
wait "$JOIN_PID" || true
PIDS=$(echo "$PIDS" | sed "s/ $JOIN_PID//")
python3 -c 'import base64, json, sys
c = json.load(open(sys.argv[1]))["csr"]
sys.stdout.buffer.write(base64.urlsafe_b64decode(c + "=" * (-len(c) % 4)))' m2/data/pending.json >kept.csr
openssl req -inform DER -in kept.csr -noout -pubkey >kept.pub || fail "the kept CSR does not parse"
R0=$(grep -c 'reason=enrollment-csr' var/serve.log || true)
BCD_FAKEHW_TPM_KEYS=1 "$BIN/bcd" join --config m2/config.toml --attestor tpm >join4.out 2>join4.err &
JOIN_PID=$!
PIDS="$PIDS $JOIN_PID"
for _ in $(seq 1 300); do grep -q "pending (join request" join4.err && break; sleep 0.1; done
grep -q "asking again with the key and CSR kept in $T/m2/data/pending.json" join4.err ||
	fail "the restarted join did not reuse the kept CSR: $(cat join4.err)"
[ "$(wait_request "$JOIN_PID")" = "$REQ" ] || fail "the restarted join made another request"
bc join-requests approve "$REQ" >/dev/null
rc=0
wait "$JOIN_PID" || rc=$?
PIDS=$(echo "$PIDS" | sed "s/ $JOIN_PID//")
[ "$rc" = 0 ] || fail "approved join exited $rc: $(cat join4.out join4.err)"
grep -q "pending (join request $REQ)" join4.err || fail "no pending line: $(cat join4.err)"
[ "$(grep -c 'reason=enrollment-csr' var/serve.log || true)" = "$R0" ] ||
	fail "the restarted join was refused enrollment-csr"
NODE2=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join4.out)
[ -n "$NODE2" ] && [ "$NODE2" != "$NODE" ] || fail "approved join: $(cat join4.out)"
[ "$(status_field m2 nodeKey)" = tpm ] || fail "the approved node's key is not in the TPM"
openssl x509 -in m2/data/node.crt -noout -pubkey >cert.pub
cmp -s kept.pub cert.pub || fail "the certificate is not for the kept key"
[ ! -e m2/data/pending.json ] && [ ! -e m2/data/node.key.pending ] ||
	fail "the pending files outlived the join: $(listing m2/data)"

tpm_machine m3 "$PORT_C"
BCD_FAKEHW_TPM_KEYS=1 "$BIN/bcd" join --config m3/config.toml --attestor tpm >join5.out 2>join5.err &
JOIN_PID=$!
PIDS="$PIDS $JOIN_PID"
REQ=$(wait_request "$JOIN_PID")
bc join-requests deny "$REQ" >/dev/null
rc=0
wait "$JOIN_PID" || rc=$?
PIDS=$(echo "$PIDS" | sed "s/ $JOIN_PID//")
[ "$rc" = 1 ] || fail "denied join exited $rc: $(cat join5.out join5.err)"
grep -q "^bcd join: the control plane refused the join after join request $REQ waited: an operator denied it" join5.err ||
	fail "denied join: no clear error: $(cat join5.err)"
grep -q "keeping the key and CSR" join5.err || fail "the denied join kept nothing: $(cat join5.err)"
# the pending files are removed: the next run starts clean
[ "$(listing m3/data)" = "" ] || fail "a denied join wrote $(listing m3/data)"

# ---- a file key moves into the TPM at the next renewal ----
tpm_machine m4 "$PORT_C"
new_token var/t4
bcd join --config m4/config.toml --token-file var/t4 >join6.out || fail "token join: $(cat join6.out)"
grep -q "BEGIN PRIVATE KEY" m4/data/node.key || fail "without BCD_FAKEHW_TPM_KEYS the key is not a file"
[ "$(status_field m4 nodeKey)" = file ] || fail "status: not a file key"
bcd doctor --config m4/config.toml >doctor4.out || true
grep -q "^warn  node key .*a file on a host with a TPM" doctor4.out || fail "doctor: $(cat doctor4.out)"
S0=$(status_field m4 serial)
BCD_FAKEHW_TPM_KEYS=1 BCD_RENEW_AFTER=3s "$BIN/bcd" node --config m4/config.toml >node4.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
for _ in $(seq 1 300); do
	grep -q "msg=renewed" node4.log && break
	kill -0 "$NODE_PID" 2>/dev/null || fail "bcd node exited: $(cat node4.log)"
	sleep 0.1
done
grep -q "msg=renewed" node4.log || fail "no renewal: $(cat node4.log)"
kill -TERM "$NODE_PID"
wait "$NODE_PID" || fail "bcd node exited non-zero after SIGTERM: $(cat node4.log)"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
grep -q "BEGIN BCD TPM NODE KEY" m4/data/node.key || fail "the renewal did not move the key into the TPM"
[ "$(stat -c %a m4/data/node.key)" = 600 ] || fail "node.key is not 0600 after the renewal"
[ "$(status_field m4 nodeKey)" = tpm ] || fail "status: the renewed key is not in the TPM"
[ "$(status_field m4 serial)" != "$S0" ] || fail "the serial did not change"
openssl x509 -in m4/data/node.crt -noout -text | grep -q "urn:bc:tpm-ak" &&
	fail "a token node's renewed certificate names an AK"
echo "ok"
