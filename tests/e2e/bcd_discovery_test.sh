#!/usr/bin/env bash
# Commissioning with real processes on loopback: better-compute serve, bcd site (a
# site node joined with a site token) serving iPXE scripts, and bcd ramdisk booted with
# the kernel command line of a script the test fetched over HTTP. A commissioned MAC
# joins as a ramdisk node with a certificate of at most 2 h; under approval =
# "unknown-machines" an unknown MAC waits, keeping its key and CSR in its data
# directory: killed and started again it asks with them, the operator approves with
# the CLI while it waits, and that process then joins with the kept key (a second
# machine answering for that MAC meanwhile is refused enrollment-csr); a second bcd
# site that takes the lease over fences the first: its new scripts fail and its old
# assertion is refused (discovery-fenced).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var '[attestors.discovery]
approval = "unknown-machines"
retry_after_seconds = 1'
SITE=$(bc --json sites create dc1 | json_get '["id"]')
bc tokens create --role site --site dc1 --uses 2 --out var/ts >/dev/null || fail "site token"
last_reason() { bc --json events list --type security.join.refused --limit 1 | json_get '["events"][0]["data"]["reason"]'; }

# site_machine NAME: a site node of dc1, joined; site_serve makes it dc1's boot server
site_machine() {
	bcd_machine "$1"
	bcd join --config "$1/config.toml" --role site --token-file var/ts >"$1.join" || fail "site join: $(cat "$1.join")"
}
# wait_for FILE TEXT: up to 10 s
wait_for() {
	for _ in $(seq 1 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	cat "$1" >&2; fail "no \"$2\" in $1"
}
# ramdisk_machine NAME MAC UUID
ramdisk_machine() {
	bcd_machine "$1" "$3"
	cat >"$T/$1/claims.json" <<JSON
{"product_uuid":"$3","serial":"SN-$1","macs":["$2"],"hostname":"$1","arch":"x86_64"}
JSON
}
# script PORT MAC [UUID] > the iPXE script; its kernel parameters into FILE
script() { curl -fsS "http://127.0.0.1:$1/boot.ipxe?mac=$2${3:+&uuid=$3}"; }
cmdline_of() { sed -n 's/^kernel [^ ]* //p' "$1" >"$2"; [ -s "$2" ] || fail "no kernel line in $1: $(cat "$1")"; }

site_machine s1
site_serve s1 "$SITE" 'lease_ttl_seconds = "3"'
P1=$BOOT_PORT S1=$SITE_PID

# a commissioned MAC
MAC=52:54:00:00:00:01
UUID=7e0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b
bc machines commission --site "$SITE" --mac 52-54-00-00-00-01 --product-uuid "$UUID" >/dev/null || fail "commission"
script "$P1" "$MAC" >r1.ipxe || fail "script"
grep -q '^#!ipxe' r1.ipxe && grep -q '^initrd http://boot.example/initrd.img' r1.ipxe || fail "script: $(cat r1.ipxe)"
cmdline_of r1.ipxe r1.cmdline
grep -q 'console=ttyS0 bc.token=bct_tok_' r1.cmdline && grep -q 'bc.assertion=' r1.cmdline || fail "cmdline: $(cat r1.cmdline)"
ramdisk_machine r1 "$MAC" "$UUID"
bcd ramdisk --config r1/config.toml --cmdline r1.cmdline >r1.out 2>&1 || fail "ramdisk join: $(cat r1.out)"
R1=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (ramdisk)$/\1/p' r1.out)
[ -n "$R1" ] || fail "joined as: $(cat r1.out)"
[ "$(status_field r1 role)" = ramdisk ] || fail "role $(status_field r1 role)"
LIFE=$(python3 - "$T/r1/data/node.crt" <<'PY'
import subprocess, sys, datetime
out = subprocess.run(["openssl", "x509", "-noout", "-startdate", "-enddate", "-in", sys.argv[1]], capture_output=True, text=True, check=True).stdout
d = dict(l.split("=", 1) for l in out.strip().splitlines())
f = "%b %d %H:%M:%S %Y %Z"
p = lambda s: datetime.datetime.strptime(" ".join(s.split()), f)
print(int((p(d["notAfter"]) - p(d["notBefore"])).total_seconds()))
PY
)
# two hours from the issue time, notBefore backdated 5 minutes for clock skew
[ "$LIFE" -le 7500 ] || fail "ramdisk certificate of $LIFE s"
echo "ramdisk $R1 joined; certificate of $LIFE s"
# the same command line again: the token is spent, the assertion used
ramdisk_machine r1b "$MAC" "$UUID"
if bcd ramdisk --config r1b/config.toml --cmdline r1.cmdline >r1b.out 2>&1; then fail "a command line joined twice"; fi

# an unknown MAC waits for the operator
UMAC=52:54:00:00:00:09
UUUID=1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d
script "$P1" "$UMAC" "$UUUID" >r2.ipxe || fail "unknown script"
cmdline_of r2.ipxe r2.cmdline
ramdisk_machine r2 "$UMAC" "$UUUID"
"$BIN/bcd" ramdisk --config r2/config.toml --cmdline r2.cmdline >r2.out 2>&1 &
R2PID=$!; PIDS="$PIDS $R2PID"
wait_for r2.out "pending (join request jr_"
JR=$(sed -n 's/.*pending (join request \(jr_[0-9a-z]*\)).*/\1/p' r2.out | head -1)
bc join-requests list >jr.list
grep "$JR" jr.list | grep -q "$UMAC.*$UUUID" || fail "join-requests list: $(cat jr.list)"
# what the approval admits: the request's claims and CSR hash, as the operator sees them
bc --json join-requests list >jr.json
[ "$(json_get '["joinRequests"][0]["claims"]["mac"]' <jr.json)" = "$UMAC" ] || fail "claims: $(cat jr.json)"
JRCSR=$(json_get '["joinRequests"][0]["csrSha256"]' <jr.json)
echo "$JRCSR" | grep -Eq '^[0-9a-f]{64}$' || fail "csrSha256: $(cat jr.json)"
grep "$JR" jr.list | grep -q "$JRCSR" || fail "join-requests list shows no CSR hash: $(cat jr.list)"
# the tried takeover: another machine answering for that MAC and UUID (its own key
# and CSR, a script of its own) is refused; the request keeps the first machine's CSR
script "$P1" "$UMAC" "$UUUID" >r2x.ipxe || fail "second script"
cmdline_of r2x.ipxe r2x.cmdline
ramdisk_machine r2x "$UMAC" "$UUUID"
if bcd ramdisk --config r2x/config.toml --cmdline r2x.cmdline >r2x.out 2>&1; then fail "a second CSR took the request over"; fi
[ "$(last_reason)" = enrollment-csr ] || fail "reason $(last_reason), want enrollment-csr"
[ "$(bc --json join-requests list | json_get '["joinRequests"][0]["csrSha256"]')" = "$JRCSR" ] || fail "the request's CSR changed"
echo "a second machine for $UMAC was refused enrollment-csr; $JR still shows the first CSR"
# a data directory that persists keeps the request's key and CSR: a restarted bcd
# ramdisk asks again with them, and the approval admits it
grep -q "keeping the key and CSR of this join request" r2.out || fail "r2 kept nothing: $(cat r2.out)"
kill -KILL "$R2PID"
wait "$R2PID" || true
PIDS=$(echo "$PIDS" | sed "s/ $R2PID//")
cp r2/data/node.key.pending r2.kept.key
"$BIN/bcd" ramdisk --config r2/config.toml --cmdline r2.cmdline >r2b.out 2>&1 &
R2PID=$!; PIDS="$PIDS $R2PID"
wait_for r2b.out "pending (join request $JR)"
grep -q "asking again with the key and CSR kept in" r2b.out || fail "r2 restarted with a new CSR: $(cat r2b.out)"
bc join-requests approve "$JR" >/dev/null || fail "approve"
wait "$R2PID" || fail "the waiting ramdisk did not join: $(cat r2b.out)"
PIDS=$(echo "$PIDS" | sed "s/ $R2PID//")
grep -q "joined as node_.* (ramdisk)" r2b.out || fail "r2: $(cat r2b.out)"
cmp -s <(openssl pkey -in r2.kept.key -pubout) <(openssl x509 -in r2/data/node.crt -noout -pubkey) ||
	fail "r2's certificate is not for the kept key"
[ ! -e r2/data/pending.json ] && [ ! -e r2/data/node.key.pending ] || fail "r2's pending files outlived the join"
echo "unknown MAC $UMAC waited for $JR, restarted, approved, joined with the kept key"

# an old script of s1, then s2 takes the lease over while s1 is stopped
script "$P1" "$MAC" >old.ipxe || fail "old script"
cmdline_of old.ipxe old.cmdline
site_machine s2
kill -STOP "$S1"
site_serve s2 "$SITE" 'lease_ttl_seconds = "3"'
P2=$BOOT_PORT
S2NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (site)$/\1/p' s2.join)
[ "$(bc --json sites get "$SITE" | json_get '["lease"]["holder"]')" = "$S2NODE" ] || fail "sites get: $(bc sites get "$SITE")"
bc sites get "$SITE" | grep -q "LEASE EPOCH" || fail "sites get: $(bc sites get "$SITE")"
kill -CONT "$S1"
wait_for s1.log "lease lost"
script "$P1" "$MAC" >new1.ipxe || fail "s1 answers"
grep -q "does not hold the site's boot lease" new1.ipxe || fail "s1 still vouches: $(cat new1.ipxe)"
ramdisk_machine r3 "$MAC" "$UUID"
if bcd ramdisk --config r3/config.toml --cmdline old.cmdline >r3.out 2>&1; then fail "a fenced boot server's assertion joined"; fi
[ "$(last_reason)" = discovery-fenced ] || fail "reason $(last_reason), want discovery-fenced"
# s2 vouches now
script "$P2" "$MAC" >r4.ipxe || fail "s2 script"
cmdline_of r4.ipxe r4.cmdline
ramdisk_machine r4 "$MAC" "$UUID"
bcd ramdisk --config r4/config.toml --cmdline r4.cmdline >r4.out 2>&1 || fail "s2's ramdisk: $(cat r4.out)"
# the operator ends s2's lease; s2 takes it again at the next epoch
EPOCH=$(bc --json sites get "$SITE" | json_get '["lease"]["epoch"]')
[ "$(bc --json sites release-lease "$SITE" | json_get '["lease"]["holder"]')" = None ] || fail "release-lease"
wait_for s2.log "lease lost"
for _ in $(seq 1 100); do [ "$(bc --json sites get "$SITE" | json_get '["lease"]["epoch"]')" -gt "$EPOCH" ] && break; sleep 0.1; done
[ "$(bc --json sites get "$SITE" | json_get '["lease"]["epoch"]')" -gt "$EPOCH" ] || fail "the lease was not taken again"
echo "ok: s2 fenced s1 (its new scripts fail, its old assertion is discovery-fenced); s2's ramdisk joined"
