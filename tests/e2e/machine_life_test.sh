#!/usr/bin/env bash
# One machine's whole life with real processes on loopback (better-compute serve on
# SQLite, bcd site, bcd ramdisk, bcd join, bcd node, swtpm; the test clock moves time):
#
#   commission -> bcd site renders its iPXE script -> bcd ramdisk joins by discovery
#   (and a machine whose MAC no workflow names waits for join-requests approve)
#   -> inventory recorded -> machines enroll -> machines deploy -> the installed OS joins
#   with --attestor provisioned (the same node id, generation +1) -> bcd node renews
#   twice -> 3 days later, the node off meanwhile, bcd node rejoins by x509pop as itself
#   -> bcd join --reset --yes --attestor tpm moves it to its TPM (the pool's policy then
#   joinAttestors = ["tpm"]) -> renewals certified by the AK -> a token join of the same
#   machine is refused join:pool-attestor.
#
# At each step it reads what the operator sees: nodes get (role, pool, attestor,
# generation, node key, allowed kinds), events list and /metrics. docs/commissioning.md
# opens with this walk, its commands as run here. Skipped (77) without swtpm or
# tpm2-tools. With LIFE_ENGINE=postgres (machine_life_pg_test.sh), the same life on a
# throwaway PostgreSQL with two replicas: the CLI and bcd site on the first, the ramdisk
# and the installed OS on the second; /metrics summed over both.
LIFE_ENGINE=${LIFE_ENGINE:-sqlite}
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
[ "$LIFE_ENGINE" != postgres ] || . "$(dirname "$0")/pg_lib.sh"
. "$(dirname "$0")/bcd_tpm_lib.sh"
# bcd_tpm_lib's trap runs this after the swtpms: the processes, then the cluster
[ "$LIFE_ENGINE" != postgres ] || EXTRA_CLEANUP='cleanup; cd /; "$SRC/scripts/pg.sh" stop "$PGDIR" || true'
cd "$T"
H=$((3600 * 1000))

# docs/commissioning.md opens with this walk: each command of its <!-- life --> block
# (better-compute written as this script's bc) is one this script runs
python3 - "$HERE/../../docs/commissioning.md" "$HERE/machine_life_test.sh" <<'PY' || fail "docs/commissioning.md's walk-through drifted from this test"
import sys
doc, script = open(sys.argv[1]).read().split("\n"), open(sys.argv[2]).read()
i = doc.index("<!-- life -->")
assert doc[i + 1] == "```sh"
n = 0
for line in doc[i + 2:doc.index("```", i + 2)]:
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    cmd = line.replace("better-compute ", "bc ", 1) if line.startswith("better-compute ") else line
    if cmd not in script:
        sys.exit("not in the test: " + line)
    n += 1
assert n >= 15, n
PY

MAC=52:54:00:00:00:01
UUID=7e0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b

# ---- the control plane: discovery, provisioned and x509pop ----
ATTESTORS='[attestors.discovery]
retry_after_seconds = 1
approval = "unknown-machines"

[attestors.provisioned]

[attestors.x509pop]'
public_url() { sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$1/server.toml"; }
# servers_start / servers_stop / servers_toml TEXT: the one server (SQLite), or both
# replicas (PostgreSQL)
if [ "$LIFE_ENGINE" = postgres ]; then
	init_on_pg var "$(free_port)"
	replica_of var var2 "$(free_port)"
	printf '\n%s\n' "$ATTESTORS" | tee -a var2/server.toml >>var/server.toml
	servers_start() {
		start_server var
		PID1=$SERVER_PID
		start_server var2
		PID2=$SERVER_PID
	}
	servers_stop() {
		SERVER_PID=$PID2 && stop_server var2
		SERVER_PID=$PID1 && stop_server var
	}
	servers_toml() { printf '%s\n' "$1" | tee -a var2/server.toml >>var/server.toml; }
	# q QUERY ARG: one value of the store, ? standing for ARG
	q() { psql "$PGURL" -X -q -tA -v ON_ERROR_STOP=1 -c "${1//\?/\'$2\'}"; }
	# a machine of the life talks to the second replica
	on_replica2() { sed -i "s|^server = .*|server = \"$(public_url var2)\"|" "$1/config.toml"; }
	URLS="$(public_url var) $(public_url var2)"
else
	bc init --dir var --listen "127.0.0.1:$(free_port)" >var.init.out
	printf '\n%s\n' "$ATTESTORS" >>var/server.toml
	servers_start() { start_server var; }
	servers_stop() { stop_server var; }
	servers_toml() { printf '%s\n' "$1" >>var/server.toml; }
	q() { sql "$1" "$2"; }
	on_replica2() { :; }
	URLS=$(public_url var)
fi
servers_start
KEY=$(cat var/admin.key)
# scrape FILE: /metrics of every replica, one after the other
scrape() {
	: >"$1"
	for u in $URLS; do curl -fsS -H "Authorization: Bearer $KEY" "$u/metrics" >>"$1" || fail "scrape of $u failed"; done
}
# metric FILE SERIES: the sample of that exact series, summed over the replicas
metric() { awk -v s="$2" '$1 == s { v += $2 } END { print v + 0 }' "$1"; }
outcome() { metric "$1" "bc_join_outcomes_total{attestor=\"$2\",outcome=\"$3\"}"; }
renewed() { metric "$1" 'bc_renew_outcomes_total{outcome="renewed"}'; }
# field NODE JSONPATH: what nodes get says
field() { bc --json nodes get "$1" | json_get "$2"; }
# events TYPE NODE: how many events of TYPE name NODE
events() {
	bc --json events list --type "$1" | python3 -c 'import json, sys
print(sum(1 for e in json.load(sys.stdin)["events"] if e["subject"] == sys.argv[1] or e["data"].get("nodeId") == sys.argv[1]))' "$2"
}
last_reason() { bc --json events list --type security.join.refused --limit 1 | json_get '["events"][0]["data"]["reason"]'; }
# expect_node NODE ROLE POOL ATTESTOR GENERATION NODEKEY
expect_node() {
	bc --json nodes get "$1" >node.json || fail "nodes get $1"
	local got
	got=$(python3 -c 'import json, sys
d = json.load(open("node.json"))
print(d["role"], d["poolName"] or "-", d["attestor"], d["generation"], d["nodeKey"])')
	[ "$got" = "$2 $3 $4 $5 $6" ] || fail "nodes get $1: $got, want $2 $3 $4 $5 $6"
}
wait_for() { # FILE TEXT [COUNT]: within 30 s
	for _ in $(seq 1 300); do
		[ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -ge "${3:-1}" ] && return 0
		sleep 0.1
	done
	cat "$1" >&2
	fail "no ${3:-1} x \"$2\" in $1"
}

bc pools create web >/dev/null
SITE=$(bc --json sites create dc1 | json_get '["id"]')

# ---- the boot server: a site node running bcd site ----
bc tokens create --role site --site dc1 --out var/ts >/dev/null || fail "site token"
bcd_machine boot
bcd join --config boot/config.toml --role site --token-file var/ts >boot.join || fail "site join: $(cat boot.join)"
site_serve boot "$SITE"

# ---- commission: bcd site renders the iPXE script ----
bc machines commission --site "$SITE" --mac 52-54-00-00-00-01 --product-uuid "$UUID" >commission.out ||
	fail "commission: $(cat commission.out)"
curl -fsS "http://127.0.0.1:$BOOT_PORT/boot.ipxe?mac=$MAC" >boot.ipxe || fail "no iPXE script"
boot_cmdline boot.ipxe >cmdline
echo "commission: bcd site rendered the iPXE script for $MAC"

# ---- the ramdisk joins by discovery; its inventory is recorded ----
bcd_machine ramdisk "$UUID"
cat >ramdisk/claims.json <<JSON
{"product_uuid":"$UUID","serial":"SN-LIFE-1","macs":["$MAC"],"hostname":"ramdisk-1","arch":"x86_64"}
JSON
on_replica2 ramdisk
scrape m0.txt
bcd ramdisk --config ramdisk/config.toml --cmdline cmdline >ramdisk.out 2>&1 || fail "ramdisk: $(cat ramdisk.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (ramdisk)$/\1/p' ramdisk.out)
[ -n "$NODE" ] || fail "joined as: $(cat ramdisk.out)"
expect_node "$NODE" ramdisk - discovery 1 unattested
[ "$(field "$NODE" '["inventory"]["claims"]["productUuid"]')" = "$UUID" ] || fail "no inventory"
[ "$(field "$NODE" '["inventory"]["claims"]["serial"]')" = SN-LIFE-1 ] || fail "inventory serial"
bc nodes get "$NODE" | grep -q '^ALLOWED KINDS .*disk.wipe' || fail "nodes get shows no kinds: $(bc nodes get "$NODE")"
bc --json events list --type node.joined | grep -q '"allowedKinds"' || fail "node.joined carries no allowedKinds"
openssl x509 -in ramdisk/data/node.crt -noout -text | grep -q "URI:spiffe://.*/ramdisk/$NODE" ||
	fail "the ramdisk certificate's SPIFFE ID: $(openssl x509 -in ramdisk/data/node.crt -noout -text | grep URI)"
RAMDISK_SERIAL=$(field "$NODE" '["certificate"]["serial"]')
scrape m1.txt
[ "$(outcome m1.txt discovery joined)" = 1 ] || fail "metrics: discovery joined $(outcome m1.txt discovery joined)"
echo "discovery: $NODE joined as a ramdisk, inventory $UUID"

# ---- a machine no workflow names waits for the operator's approval ----
UMAC=52:54:00:00:00:09
UUUID=1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d
curl -fsS "http://127.0.0.1:$BOOT_PORT/boot.ipxe?mac=$UMAC&uuid=$UUUID" >unknown.ipxe || fail "no iPXE script for $UMAC"
boot_cmdline unknown.ipxe >ucmdline
bcd_machine unknown "$UUUID"
cat >unknown/claims.json <<JSON
{"product_uuid":"$UUUID","serial":"SN-LIFE-2","macs":["$UMAC"],"hostname":"ramdisk-2","arch":"x86_64"}
JSON
on_replica2 unknown
"$BIN/bcd" ramdisk --config unknown/config.toml --cmdline ucmdline >unknown.out 2>&1 &
UPID=$!
PIDS="$PIDS $UPID"
wait_for unknown.out "pending (join request jr_"
JR=$(sed -n 's/.*pending (join request \(jr_[0-9a-z]*\)).*/\1/p' unknown.out | head -1)
# what the approval admits, as the operator sees it: the claims and the CSR's hash
bc join-requests list >jr.list || fail "join-requests list"
bc --json join-requests list --state pending >jr.json || fail "join-requests list --json"
python3 -c 'import json, re, sys
rs = [r for r in json.load(open("jr.json"))["joinRequests"] if r["id"] == sys.argv[1]]
assert len(rs) == 1, rs
c = rs[0]["claims"]
assert (c["mac"], c["productUuid"]) == (sys.argv[2], sys.argv[3]), c
assert re.fullmatch("[0-9a-f]{64}", rs[0]["csrSha256"]), rs[0]
print(rs[0]["csrSha256"])' "$JR" "$UMAC" "$UUUID" >jr.csr || fail "join-requests list: $(cat jr.json)"
grep "$JR" jr.list | grep "$UMAC" | grep -q "$(cat jr.csr)" ||
	fail "join-requests list shows not the claims and CSR hash: $(cat jr.list)"
[ "$(events join.request.created "$JR")" = 1 ] || fail "no join.request.created event"
bc join-requests approve "$JR" >approve.out || fail "approve: $(cat approve.out)"
wait "$UPID" || fail "the approved ramdisk did not join: $(cat unknown.out)"
PIDS=$(echo "$PIDS" | sed "s/ $UPID//")
UNODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (ramdisk)$/\1/p' unknown.out)
[ -n "$UNODE" ] && [ "$UNODE" != "$NODE" ] || fail "approved, joined as: $(cat unknown.out)"
expect_node "$UNODE" ramdisk - discovery 1 unattested
[ "$(field "$UNODE" '["inventory"]["claims"]["productUuid"]')" = "$UUUID" ] || fail "no inventory for $UNODE"
bc nodes get "$UNODE" | grep -q '^ALLOWED KINDS .*disk.wipe' || fail "nodes get $UNODE: $(bc nodes get "$UNODE")"
[ "$(events join-request.approved "$JR")" = 1 ] || fail "no join-request.approved event"
[ "$(bc --json join-requests list --state used | json_get '["joinRequests"][0]["id"]')" = "$JR" ] ||
	fail "the request is not used: $(bc join-requests list)"
scrape m1b.txt
[ "$(outcome m1b.txt discovery deferred)" -ge 1 ] || fail "metrics: discovery deferred $(outcome m1b.txt discovery deferred)"
[ "$(outcome m1b.txt discovery joined)" = 2 ] || fail "metrics: discovery joined $(outcome m1b.txt discovery joined)"
echo "approval: $UMAC waited for $JR (CSR $(cut -c1-12 jr.csr)...), approved, joined as $UNODE"

# ---- enroll, then deploy ----
bc machines enroll --node "$NODE" --pool web >enroll.out || fail "enroll: $(cat enroll.out)"
[ "$(field "$NODE" '["poolName"]')" = web ] || fail "enroll: no pool"
[ "$(events node.enrolled "$NODE")" = 1 ] || fail "no node.enrolled event"
if bc machines enroll --node "$NODE" --pool web >enroll2.out 2>&1; then fail "enrolled twice"; fi
grep -q "already enrolled in pool" enroll2.out || fail "enroll twice: $(cat enroll2.out)"
# the ramdisk boots again before its deploy: the same node, still enrolled
curl -fsS "http://127.0.0.1:$BOOT_PORT/boot.ipxe?mac=$MAC" >boot2.ipxe || fail "no second iPXE script"
boot_cmdline boot2.ipxe >cmdline2
bcd_machine ramdisk2 "$UUID"
cp ramdisk/claims.json ramdisk2/claims.json
on_replica2 ramdisk2
bcd ramdisk --config ramdisk2/config.toml --cmdline cmdline2 >ramdisk2.out 2>&1 || fail "ramdisk again: $(cat ramdisk2.out)"
grep -qx "joined as $NODE (ramdisk)" ramdisk2.out || fail "the ramdisk again is another node: $(cat ramdisk2.out)"
expect_node "$NODE" ramdisk web discovery 2 unattested
bc machines deploy --node "$NODE" --data-dir "$T/os/data" --out user-data.yaml >deploy.out ||
	fail "deploy: $(cat deploy.out)"
WF=$(sed -n 's/^Deploy \(wf_[0-9a-z]*\) .*/\1/p' deploy.out)
[ -n "$WF" ] || fail "deploy said: $(cat deploy.out)"
echo "enroll: $NODE in pool web; deploy $WF"

# ---- the installed OS joins with the deploy's token (from the user data) ----
user_data_files os user-data.yaml
cat >os/claims.json <<JSON
{"product_uuid":"$UUID","serial":"SN-LIFE-1","macs":["$MAC"],"hostname":"web-1","arch":"x86_64"}
JSON
printf '\n[fakehw]\nclaims = "claims.json"\n' >>os/config.toml
on_replica2 os
bcd join --config os/config.toml --attestor provisioned --token-file os/provisioned.token >os.join 2>&1 ||
	fail "provisioned join: $(cat os.join)"
grep -qx "joined as $NODE" os.join || fail "not the same node: $(cat os.join)"
expect_node "$NODE" node web provisioned 3 unattested
[ "$(field "$NODE" '["allowedKinds"]')" = "[]" ] || fail "the installed node kept ramdisk kinds"
bc workflows get "$WF" | grep -q '^STATE *succeeded' || fail "workflow not succeeded: $(bc workflows get "$WF")"
[ "$(events node.reclaimed "$NODE")" = 2 ] || fail "no node.reclaimed event"
[ "$(q 'SELECT COUNT(*) FROM node_certs WHERE serial = ? AND revoked_at IS NOT NULL' "$RAMDISK_SERIAL")" = 1 ] ||
	fail "the ramdisk certificate is not revoked"
[ "$(bc --json nodes inventory "$NODE" | json_get '["inventory"].__len__()')" = 3 ] || fail "inventory not kept"
bc --json events list | grep -q "\"subject\": *\"$NODE\"" || fail "history lost"
scrape m2.txt
[ "$(outcome m2.txt provisioned reclaimed)" = 1 ] || fail "metrics: provisioned reclaimed $(outcome m2.txt provisioned reclaimed)"
echo "provisioned: $NODE re-keyed in place (generation 3, role node, pool web)"

# ---- bcd node renews twice ----
BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config os/config.toml >node1.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_for node1.log "msg=renewed nodeId=$NODE" 2
stop_node() {
	kill -TERM "$NODE_PID"
	wait "$NODE_PID" || true
	PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
}
stop_node
scrape m3.txt
[ "$(renewed m3.txt)" -ge 2 ] || fail "metrics: renewed $(renewed m3.txt)"
expect_node "$NODE" node web provisioned 3 unattested
echo "renewals: two"

# ---- 3 days later, the node off meanwhile: bcd node rejoins by x509pop ----
kill -TERM "$SITE_PID"
wait "$SITE_PID" || true
PIDS=$(echo "$PIDS" | sed "s/ $SITE_PID//")
tpm_start tpm
TPM_PORT_LIFE=$TPM_PORT
EK=$(ek_hash "$TPM_PORT_LIFE")
servers_stop
cat >resolve.toml <<TOML
[ek.$EK]
tenant = "root"
node = "$NODE"
TOML
servers_toml "
[attestors.tpm]
ek_roots = [\"$T/tpm/ca/swtpm-localca-rootca-cert.pem\", \"$T/tpm/ca/issuercert.pem\"]
resolve = \"$T/resolve.toml\""
OFF=$((3 * 24 * H))
export BC_TEST_CLOCK_OFFSET_MS=$OFF
servers_start
BCD_RENEW_AFTER=1h BCD_RETRY_BASE=1s "$BIN/bcd" node --config os/config.toml >node2.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_for node2.log 'msg="rejoined with x509pop"'
stop_node
expect_node "$NODE" node web x509pop 4 unattested
[ "$(events node.reclaimed "$NODE")" = 3 ] || fail "x509pop: no node.reclaimed"
scrape m4.txt
[ "$(outcome m4.txt x509pop reclaimed)" = 1 ] || fail "metrics: x509pop reclaimed $(outcome m4.txt x509pop reclaimed)"
echo "x509pop: $NODE rejoined as itself 3 days later (generation 4)"

# ---- to its TPM: the pool then admits tpm only ----
bc pools update web --join-attestors tpm >/dev/null || fail "pools update"
printf 'tpm = "swtpm:host=127.0.0.1,port=%s"\n' "$TPM_PORT_LIFE" >>os/config.toml
BCD_FAKEHW_TPM_KEYS=1 bcd join --config os/config.toml --reset --yes --attestor tpm >tpm.join 2>&1 ||
	fail "tpm join: $(cat tpm.join)"
grep -qx "joined as $NODE" tpm.join || fail "tpm: not the same node: $(cat tpm.join)"
expect_node "$NODE" node web tpm 5 tpm
[ "$(q "SELECT node_id FROM node_bindings WHERE kind = 'tpm-ek' AND key = ?" "$EK")" = "$NODE" ] ||
	fail "not bound to its EK"
BCD_FAKEHW_TPM_KEYS=1 BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node --config os/config.toml >node3.log 2>&1 &
NODE_PID=$!
PIDS="$PIDS $NODE_PID"
wait_for node3.log "msg=renewed nodeId=$NODE" 2
stop_node
openssl x509 -in os/data/node.crt -noout -text | grep -Eq "URI:urn:bc:tpm-ak:sha256:000b[0-9a-f]{64}" ||
	fail "the renewed certificate names no AK"
expect_node "$NODE" node web tpm 5 tpm
scrape m5.txt
[ "$(outcome m5.txt tpm reclaimed)" = 1 ] || fail "metrics: tpm reclaimed $(outcome m5.txt tpm reclaimed)"
[ "$(renewed m5.txt)" -ge 2 ] || fail "metrics: AK renewals $(renewed m5.txt)"
echo "tpm: $NODE moved to its TPM (generation 5), renewed twice by the AK"

# ---- a token join of the same machine: the pool admits tpm only ----
bcd_machine again "$UUID"
cp os/claims.json again/claims.json
bc tokens create --role node --pool web --allow-reclaim --out var/tn >/dev/null || fail "token"
if bcd join --config again/config.toml --token-file var/tn >again.out 2>&1; then fail "a token join was admitted: $(cat again.out)"; fi
[ "$(last_reason)" = join:pool-attestor ] || fail "reason $(last_reason), want join:pool-attestor"
scrape m6.txt
[ "$(metric m6.txt 'bc_join_refusals_total{attestor="join-token",reason="join:pool-attestor"}')" = 1 ] ||
	fail "metrics: no join:pool-attestor refusal"
expect_node "$NODE" node web tpm 5 tpm
echo "ok ($LIFE_ENGINE): $NODE's life: discovered, enrolled, deployed, renewed, rejoined by x509pop, moved to its TPM; a token join refused join:pool-attestor"
