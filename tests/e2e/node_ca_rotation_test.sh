#!/usr/bin/env bash
# Every key of the PKI rotated on a running fleet (docs/server.md, "PKI lifecycle"): the
# node CA, the join signing key and the join encryption key are rotated, activated and
# retired with the CLI while real `bcd node` processes renew every second. Judged by
# counts, never by time: no renewal fails (the agents' logs, the server's
# bc_renew_outcomes_total and its refusals), every agent ends on the new CA and on the
# new pins only (pins.json, bcd doctor), the old CA is retired once its last certificate
# has expired (the test clock, a day on); a relying party (bundle_client.py, Python
# `cryptography`) verifies node certificates against /bundle before, during and after.
# Two agents stay off: m4, off from the switch on (it pinned the next keys), re-joins by
# x509pop with its old certificate; m5, off through all of it, is told by bcd to join
# again with a token once the join keys it pins are retired, and does. Last, a forced
# retire of a compromised CA refuses its node as renew-malformed.
# ROT_ENGINE=postgres (node_ca_rotation_pg_test.sh): the same steps on PostgreSQL with
# two replicas, the CLI on one, the agents split over both.
ROT_ENGINE=${ROT_ENGINE:-sqlite}
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
[ "$ROT_ENGINE" != postgres ] || . "$(dirname "$0")/pg_lib.sh"
cd "$T"
TD=bc.internal
OFF=0
DAY=$((24 * 3600 * 1000))

if [ "$ROT_ENGINE" = postgres ]; then
	init_on_pg var "$(free_port)"
	replica_of var var2 "$(free_port)"
	printf '\n[attestors.x509pop]\n' | tee -a var2/server.toml >>var/server.toml
	DIRS="var var2"
else
	P=$(free_port)
	bc init --dir var --listen "127.0.0.1:$P" >var.init.out
	printf '\n[attestors.x509pop]\n' >>var/server.toml
	DIRS="var"
fi
url_of() { sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$1/server.toml"; }
URL=$(url_of var)
KEY=$(cat var/admin.key)
declare -A SPID
# scrape: /metrics of every replica appended to metrics.txt (a restart starts the
# counters again, so each replica is scraped before it stops)
scrape() {
	local d
	for d in $DIRS; do
		curl -fsS -H "Authorization: Bearer $KEY" "$(url_of "$d")/metrics" >>metrics.txt ||
			fail "scrape of $d failed"
	done
}
metric() { awk -v s="$1" '$1 == s { v += $2 } END { print v + 0 }' metrics.txt; }
servers_start() {
	for d in $DIRS; do
		start_server "$d" BC_TEST_CLOCK_OFFSET_MS=$OFF
		SPID[$d]=$SERVER_PID
	done
}
servers_stop() {
	scrape
	for d in $DIRS; do
		SERVER_PID=${SPID[$d]}
		stop_server "$d"
	done
}
servers_start
bc() { BC_TEST_CLOCK_OFFSET_MS=$OFF "$BIN/better-compute" "$@"; }
pki() { bc pki "$@" --config var/server.toml; }
bc pools create web >/dev/null

# machine NAME DIR: NAME joins with a token through the replica of DIR
machine() {
	local name=$1 dir=$2
	bcd_machine "$name"
	sed -i "s|^server *=.*|server = \"$(url_of "$dir")\"|" "$T/$name/config.toml"
	new_token "var/t.$name"
	BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --config "$name/config.toml" --token-file "var/t.$name" \
		>"$name.join.out" 2>&1 || fail "join $name: $(cat "$name.join.out")"
}
# m1, m2, m3 renew all along, over both replicas; m4 from the start to the switch; m5 never
LAST=${DIRS##* }
machine m1 var
machine m2 "$LAST"
machine m3 var
machine m4 "$LAST"
machine m5 "$LAST"
grep -q "^server *= *\"$(url_of "$LAST")\"" m2/config.toml || fail "m2 not on $LAST"
RUN="m1 m2 m3"
declare -A NPID
node_start() {
	BC_TEST_CLOCK_OFFSET_MS=$OFF BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node \
		--config "$1/config.toml" >>"$1.node.log" 2>&1 &
	NPID[$1]=$!
	PIDS="$PIDS ${NPID[$1]}"
}
node_stop() {
	kill -TERM "${NPID[$1]}"
	wait "${NPID[$1]}" || fail "bcd node $1 exited non-zero: $(cat "$1.node.log")"
	PIDS=$(echo "$PIDS" | sed "s/ ${NPID[$1]}//")
	unset "NPID[$1]"
}
nodes_start() { for m in $RUN; do node_start "$m"; done; }
nodes_stop() { for m in "${!NPID[@]}"; do node_stop "$m"; done; }
# wait_for WHAT CMD...: until CMD succeeds, 300 s at most (a slow shared machine, a
# renewal backing off), every running bcd node alive meanwhile
wait_for() {
	local what=$1 m
	shift
	for _ in $(seq 1 3000); do
		"$@" && return 0
		for m in "${!NPID[@]}"; do
			kill -0 "${NPID[$m]}" 2>/dev/null || fail "bcd node $m exited: $(tail -n 20 "$m.node.log")"
		done
		sleep 0.1
	done
	fail "$what"
}
issuer() { openssl x509 -noout -issuer -nameopt RFC2253 -in "$1/data/node.crt"; }
verify() { # verify WHAT CERT...: bundle_client against every replica
	local what=$1 d out
	shift
	for d in $DIRS; do
		out=$(python3 "$HERE/bundle_client.py" "$(url_of "$d")" "$TD" "$@" 2>"$T/verify.err") ||
			fail "$what: not verified on $d: $(cat "$T/verify.err")"
	done
	echo "$out"
}
certs() { for m in "$@"; do echo "$m/data/node.crt"; done; }
served() { # served N: every replica serves N node CAs (each reads the store every 2 s)
	local d
	for d in $DIRS; do
		[ "$(curl -fsS "$(url_of "$d")/bundle" | grep -c 'BEGIN CERTIFICATE')" = "$1" ] || return 1
	done
}
cas_served() { wait_for "the replicas do not all serve $1 node CAs" served "$1"; }
renewals() { cat "$1.node.log" 2>/dev/null | grep -c 'msg=renewed\|msg="rejoined with x509pop"' || true; }
renewed_since() { # renewed_since N M...: every M logged N more renewals than when counted
	local n=$1 m
	shift
	for m in "$@"; do [ "$(renewals "$m")" -ge $((${COUNT[$m]} + n)) ] || return 1; done
}
declare -A COUNT
count() { for m in "$@"; do COUNT[$m]=$(renewals "$m"); done; }
on_ca() { # on_ca SUBJECT M...: every M holds a certificate issued by SUBJECT
	local ca=$1 m
	shift
	for m in "$@"; do [ "$(issuer "$m")" = "issuer=$ca" ] || return 1; done
}
# pin M USE STATE: the key ids M pins for USE in STATE (pins.json), one a line
pin() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("\n".join(k["keyId"] for k in d["keys"] if k["use"] == sys.argv[2] and k["state"] == sys.argv[3]))' \
		"$1/data/pins.json" "$2" "$3"
}
pinned() { python3 -c 'import json, sys
print(" ".join(k["keyId"] for k in json.load(open(sys.argv[1]))["keys"]))' "$1/data/pins.json"; }
pins_are() { # pins_are STATE SIGN ENC M...: every M pins SIGN and ENC in STATE
	local st=$1 s=$2 e=$3 m
	shift 3
	for m in "$@"; do
		[ "$(pin "$m" join-signing "$st")" = "$s" ] && [ "$(pin "$m" join-encryption "$st")" = "$e" ] ||
			return 1
	done
}
unpinned() { # unpinned KID M...: no M pins KID
	local kid=$1 m
	shift
	for m in "$@"; do ! grep -q "$kid" <<<"$(pinned "$m")" || return 1; done
}
# the subject of the node CA the bundle lists Nth (the generations in order)
ca_subject() {
	pki bundle | awk -v n="$1" '/BEGIN/{i++} i==n' |
		openssl x509 -noout -subject -nameopt RFC2253 | sed 's/^subject=//'
}
failures() { cat m?.node.log | grep -c 'msg="renewal failed"\|msg="pins update refused"\|msg="x509pop' || true; }
refusals() { cat var*/serve.log | grep -c 'msg="renew refused"' || true; }
nodes_start
node_start m4

# before: one CA, the agents' certificates verify; the pins every agent has
OUT=$(verify before $(certs m1 m2 m3 m4))
echo "$OUT" | grep -q '"cas": 1' || fail "one CA expected: $OUT"
SEQ0=$(echo "$OUT" | json_get '["sequence"]')
OLD=$(issuer m1)
OLD_SIGN=$(pin m1 join-signing active)
OLD_ENC=$(pin m1 join-encryption active)
[ -n "$OLD_SIGN" ] && [ -n "$OLD_ENC" ] || fail "m1 pins no active pair: $(cat m1/data/pins.json)"
[ "$OLD_SIGN" = "$(sed -n 's/^join_signing_key_id = "\(.*\)"/\1/p' m1/config.toml)" ] ||
	fail "the pins are not the config's"
cp m1/data/node.crt gen1.crt

# 1. rotate all three: the new CA is served by every replica and signs nothing; the
# next join keys are announced, and every running agent pins them at a renewal
for k in node-ca join-signing join-encryption; do
	pki rotate "$k" >"rotate.$k.out" 2>&1 || fail "rotate $k: $(cat "rotate.$k.out")"
done
pki status >status1.out
cas_served 2
OUT=$(verify prepared $(certs m1 m2 m3 m4))
SEQ1=$(echo "$OUT" | json_get '["sequence"]')
[ "$SEQ1" -gt "$SEQ0" ] || fail "spiffe_sequence $SEQ0 -> $SEQ1"
NEW="$(ca_subject 2)"
[ "issuer=$NEW" != "$OLD" ] || fail "the new CA has the old one's name"
next_pinned() {
	local m
	for m in m1 m2 m3 m4; do
		[ -n "$(pin "$m" join-signing next)" ] && [ -n "$(pin "$m" join-encryption next)" ] || return 1
	done
}
wait_for "the next join keys were not pinned by every agent" next_pinned
NEW_SIGN=$(pin m1 join-signing next)
NEW_ENC=$(pin m1 join-encryption next)
pins_are next "$NEW_SIGN" "$NEW_ENC" m2 m3 m4 || fail "the agents pin different next keys"
grep -q "prepared .* ${NEW_SIGN:0:16}$" status1.out && grep -q "prepared .* ${NEW_ENC:0:16}$" status1.out ||
	fail "pki status does not list the next keys: $(cat status1.out)"
count m1 m2 m3 m4
wait_for "no renewals after the rotate" renewed_since 2 m1 m2 m3 m4
on_ca "${OLD#issuer=}" m1 m2 m3 m4 || fail "a prepared CA signed"
bcd doctor --config m1/config.toml >doctor1.out || fail "doctor of m1: $(cat doctor1.out)"
grep -q "^ok    pins  *sequence [0-9]*: .*join-signing ${NEW_SIGN:0:16} next" doctor1.out ||
	fail "doctor does not show the next pins: $(cat doctor1.out)"
node_stop m4 # off through the switch, with the next keys pinned

# 2. activate all three: every running agent renews onto the new CA and verifies answers
# signed by the new key, with no action of its own
for k in node-ca join-signing join-encryption; do
	pki activate "$k" >"activate.$k.out" 2>&1 || fail "activate $k: $(cat "activate.$k.out")"
done
wait_for "the agents never renewed onto $NEW: $(for m in $RUN; do issuer $m; done)" on_ca "$NEW" $RUN
wait_for "the agents do not pin the new keys active" pins_are active "$NEW_SIGN" "$NEW_ENC" $RUN
count $RUN
wait_for "no renewals after the switch" renewed_since 2 $RUN
verify during $(certs $RUN) gen1.crt >/dev/null
cp m2/data/node.crt gen2.crt
# a new agent joins with the config daemon config writes now: the new pins
[ "$(bc daemon config | json_get '["joinSigningKeyId"]')" = "$NEW_SIGN" ] ||
	fail "daemon config does not give the new key"
# m4, off since the switch, re-joins by x509pop with its old certificate: its pins are valid
[ "$(issuer m4)" = "$OLD" ] || fail "m4 not on the old CA"
BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --attestor x509pop --config m4/config.toml >m4.pop.out 2>&1 ||
	fail "x509pop re-join of m4: $(cat m4.pop.out)"
on_ca "$NEW" m4 || fail "m4 re-joined onto $(issuer m4)"
# the re-join's answer carries the pins-update, as a renewal's does: m4 pins the new
# keys active at once
pins_are active "$NEW_SIGN" "$NEW_ENC" m4 || fail "m4's pins after its re-join: $(cat m4/data/pins.json)"

# 3. retire: the join keys at once (every running agent pins the new ones); the node CA
# is refused while its certificates may be unexpired, saying until when
for k in join-signing join-encryption; do
	pki retire "$k" >"retire.$k.out" 2>&1 || fail "retire $k: $(cat "retire.$k.out")"
done
wait_for "the agents still pin the retired keys" unpinned "$OLD_SIGN" $RUN
wait_for "the agents still pin the retired encryption key" unpinned "$OLD_ENC" $RUN
if pki retire node-ca >retire.out 2>&1; then
	fail "retire allowed at once: $(cat retire.out)"
fi
grep -q "may be unexpired until 20" retire.out || fail "retire refused without a date: $(cat retire.out)"
pki status >status2.out
grep -q "active (issuing)" status2.out || fail "status: $(cat status2.out)"

# m5, off through all of it, pins only retired keys: told to join again with a token
# (doctor first: the x509pop re-join below is issued by the server, which revokes the old
# certificate, although bcd refuses the answer)
if BC_TEST_CLOCK_OFFSET_MS=$OFF bcd doctor --config m5/config.toml >doctor5.out; then
	fail "doctor of m5 passed: $(cat doctor5.out)"
fi
grep -q "^fail  identity current" doctor5.out &&
	grep -q "signed by key $NEW_SIGN, .*if the server's join keys were rotated and these pins retired, join again with a token" doctor5.out ||
	fail "doctor of m5: $(cat doctor5.out)"
if BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --attestor x509pop --config m5/config.toml >m5.pop.out 2>&1; then
	fail "m5 re-joined on retired pins: $(cat m5.pop.out)"
fi
grep -q "signed by key $NEW_SIGN, expected the pinned $OLD_SIGN or another pinned join signing key; if the server's join keys were rotated and these pins retired, join again with a token" m5.pop.out ||
	fail "m5 is not told to join again with a token: $(cat m5.pop.out)"
# the way out the message gives: the config written again, a new token, --reset
bc daemon config --force --bcd-dir "$T/m5" --data-dir "$T/m5/data" >/dev/null
printf '\n[fakehw]\nclaims = "claims.json"\n' >>m5/config.toml
sed -i "s|^server *=.*|server = \"$(url_of "$LAST")\"|" m5/config.toml
new_token var/t.m5b --allow-reclaim
BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --reset --yes --config m5/config.toml --token-file var/t.m5b \
	>m5.join2.out 2>&1 || fail "m5 re-join with a token: $(cat m5.join2.out)"
on_ca "$NEW" m5 || fail "m5 joined onto $(issuer m5)"
pins_are active "$NEW_SIGN" "$NEW_ENC" m5 || fail "m5's pins: $(cat m5/data/pins.json)"
unpinned "$OLD_SIGN" m5 || fail "m5 pins the retired key: $(cat m5/data/pins.json)"

# a day and a bit later (the test clock): every process again, the CA retire allowed;
# the agents, their certificates expired meanwhile, re-join by x509pop and renew on
nodes_stop
servers_stop
OFF=$((DAY + 3600 * 1000))
servers_start
pki retire node-ca >retire2.out 2>&1 || fail "retire: $(cat retire2.out)"
cas_served 1
RUN="m1 m2 m3 m4 m5"
count $RUN
nodes_start
wait_for "no renewals after the retire" renewed_since 2 $RUN
on_ca "$NEW" $RUN || fail "not every agent is on $NEW"
pins_are active "$NEW_SIGN" "$NEW_ENC" $RUN || fail "not every agent pins the new keys"
unpinned "$OLD_SIGN" $RUN && unpinned "$OLD_ENC" $RUN || fail "an agent pins a retired key"
for m in $RUN; do
	BC_TEST_CLOCK_OFFSET_MS=$OFF bcd doctor --json --config "$m/config.toml" >"doctor.$m.json" || true
	python3 -c 'import json, sys
c = {x["name"]: x for x in json.load(open(sys.argv[1]))["checks"]}
sys.exit(0 if c["pins update"]["status"] == "ok" and "up to date" in c["pins update"]["message"] else 1)' \
		"doctor.$m.json" || fail "doctor of $m: pins not up to date: $(cat "doctor.$m.json")"
done
pki status >status3.out
grep -q "retired" status3.out || fail "status after the retires: $(cat status3.out)"
# after: the new CA alone; its certificates verify, the old one's no longer
verify after gen2.crt >/dev/null
python3 "$HERE/bundle_client.py" "$URL" "$TD" gen1.crt --refuse >/dev/null 2>gen1.err ||
	fail "a retired CA's certificate verified"
grep -q "no CA in the bundle signed it" gen1.err || fail "gen1 refused for: $(cat gen1.err)"
# no renewal failed: the agents' logs and the servers' counts agree
nodes_stop
scrape
[ "$(failures)" = 0 ] || fail "failures in the agents' logs: $(grep -h 'failed\|refused' m?.node.log)"
[ "$(refusals)" = 0 ] || fail "renewals refused: $(grep 'renew refused' var*/serve.log)"
[ "$(metric 'bc_renew_outcomes_total{outcome="refused"}')" = 0 ] || fail "the servers counted refused renewals"
SERVED=$(metric 'bc_renew_outcomes_total{outcome="renewed"}')
LOGGED=$(cat m?.node.log | grep -c 'msg=renewed' || true)
[ "$LOGGED" -gt 10 ] && [ "$SERVED" -ge "$LOGGED" ] || fail "renewals: $SERVED served, $LOGGED logged by the agents"

# a compromised CA: m6 joins on it and stays off; the others move on; --force
machine m6 "$LAST"
RUN="m1 m2 m3"
nodes_start
pki rotate node-ca >/dev/null
pki activate node-ca >/dev/null
cas_served 2
NEW3="$(ca_subject 2)"
wait_for "the agents never renewed onto $NEW3" on_ca "$NEW3" $RUN
[ "$(refusals)" = 0 ] || fail "renewals refused: $(grep 'renew refused' var*/serve.log)"
pki retire node-ca --force >force.out 2>&1 || fail "forced: $(cat force.out)"
grep -q "renew-malformed" force.out || fail "forced retire says nothing of its nodes: $(cat force.out)"
cas_served 1
node_start m6
malformed() { [ "$(bc --json events list --type security.renew.refused | grep -c renew-malformed)" -gt 0 ]; }
wait_for "m6 was not refused as renew-malformed" malformed
node_stop m6
bc --json events list --type security.renew.refused >events.json
grep -q '"reason": *"renew-malformed"' events.json || fail "no renew-malformed event: $(cat events.json)"
grep -q "$(status_field m6 nodeId)" events.json || fail "the event is not m6's: $(cat events.json)"
nodes_stop
servers_stop
echo "ok ($ROT_ENGINE): node CA and both join keys rotated, activated and retired under renewing agents (sequence $SEQ0 -> $SEQ1, $LOGGED renewals, none failed or refused); x509pop re-join across the switch; retired pins told to join again with a token; a forced retire refused its node as renew-malformed"
