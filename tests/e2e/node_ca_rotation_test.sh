#!/usr/bin/env bash
# Node CA rotation on a running fleet (docs/server.md, "Rotating the node CA"): real
# `bcd node` processes renewing every second while the CLI rotates, activates and
# retires; no renewal is refused; every agent ends on the new CA; a relying party
# (bundle_client.py, Python `cryptography`) verifies node certificates against /bundle
# before, during and after; an agent offline through the rotation re-joins by x509pop
# with its old certificate; after a forced retire an agent still on that CA is refused
# by name (renew-malformed). ROT_ENGINE=postgres (node_ca_rotation_pg_test.sh): the same
# on PostgreSQL with two replicas, the CLI on one, the agents split over both.
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
declare -A SPID
servers_start() {
	for d in $DIRS; do
		start_server "$d" BC_TEST_CLOCK_OFFSET_MS=$OFF
		SPID[$d]=$SERVER_PID
	done
}
servers_stop() {
	for d in $DIRS; do
		SERVER_PID=${SPID[$d]}
		stop_server "$d"
	done
}
servers_start
bc() { BC_TEST_CLOCK_OFFSET_MS=$OFF "$BIN/better-compute" "$@"; }
bc pools create web >/dev/null

# m1 on the first replica, m2 on the last; m3 joins and stays off
machine() {
	local name=$1 dir=$2
	bcd_machine "$name"
	sed -i "s|^server *=.*|server = \"$(url_of "$dir")\"|" "$T/$name/config.toml"
	new_token "var/t.$name"
	BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --config "$name/config.toml" --token-file "var/t.$name" \
		>"$name.join.out" 2>&1 || fail "join $name: $(cat "$name.join.out")"
}
LAST=${DIRS##* }
machine m1 var
machine m2 "$LAST"
machine m3 "$LAST"
grep -q "^server *= *\"$(url_of "$LAST")\"" m2/config.toml || fail "m2 not on $LAST"
declare -A NPID
nodes_start() {
	for m in m1 m2; do
		BC_TEST_CLOCK_OFFSET_MS=$OFF BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node \
			--config "$m/config.toml" >>"$m.node.log" 2>&1 &
		NPID[$m]=$!
		PIDS="$PIDS ${NPID[$m]}"
	done
}
nodes_stop() {
	for m in m1 m2; do
		kill -TERM "${NPID[$m]}"
		wait "${NPID[$m]}" || fail "bcd node $m exited non-zero: $(cat $m.node.log)"
		PIDS=$(echo "$PIDS" | sed "s/ ${NPID[$m]}//")
	done
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
cas_served() { # until every replica serves N CAs (each reads the store every 2 s)
	local n=$1 d
	for d in $DIRS; do
		for _ in $(seq 1 100); do
			[ "$(curl -fsS "$(url_of "$d")/bundle" | grep -c 'BEGIN CERTIFICATE')" = "$n" ] && continue 2
			sleep 0.1
		done
		fail "$d does not serve $n node CAs"
	done
}
on_new_ca() { # until each machine's certificate is issued by CA subject $2
	local m
	for m in m1 m2; do
		for _ in $(seq 1 300); do
			[ "$(issuer $m)" = "issuer=$1" ] && continue 2
			kill -0 "${NPID[$m]}" 2>/dev/null || fail "bcd node $m exited: $(cat $m.node.log)"
			sleep 0.1
		done
		fail "$m never renewed onto $1: $(issuer $m); $(tail -n 5 $m.node.log)"
	done
}
refusals() { cat var*/serve.log | grep -c 'msg="renew refused"' || true; }
nodes_start

# before: one CA, both agents' certificates verify
OUT=$(verify before m1/data/node.crt m2/data/node.crt)
echo "$OUT" | grep -q '"cas": 1' || fail "one CA expected: $OUT"
SEQ0=$(echo "$OUT" | json_get '["sequence"]')
OLD=$(issuer m1)
cp m1/data/node.crt gen1.crt

# rotate: the new CA is served by every replica and signs nothing
bc pki rotate node-ca --config var/server.toml >rotate.out || fail "rotate: $(cat rotate.out)"
cas_served 2
OUT=$(verify prepared m1/data/node.crt m2/data/node.crt)
SEQ1=$(echo "$OUT" | json_get '["sequence"]')
[ "$SEQ1" -gt "$SEQ0" ] || fail "spiffe_sequence $SEQ0 -> $SEQ1"
sleep 3 # three renewals each: still from the old CA
[ "$(issuer m1)" = "$OLD" ] && [ "$(issuer m2)" = "$OLD" ] || fail "a prepared CA signed"

# activate: every agent renews onto it, with no action of its own
bc pki activate node-ca --config var/server.toml >activate.out || fail "activate: $(cat activate.out)"
NEW="issuer=$(bc pki bundle --config var/server.toml | awk '/BEGIN/{n++} n==2' |
	openssl x509 -noout -subject -nameopt RFC2253 | sed 's/^subject=//')"
[ "$NEW" != "$OLD" ] || fail "the new CA has the old one's name"
on_new_ca "${NEW#issuer=}"
verify during m1/data/node.crt m2/data/node.crt gen1.crt >/dev/null
cp m2/data/node.crt gen2.crt

# m3, off all along, re-joins by x509pop with its old certificate
[ "$(issuer m3)" = "$OLD" ] || fail "m3 not on the old CA"
BC_TEST_CLOCK_OFFSET_MS=$OFF bcd join --attestor x509pop --config m3/config.toml >m3.pop.out 2>&1 ||
	fail "x509pop re-join: $(cat m3.pop.out)"
[ "$(issuer m3)" = "$NEW" ] || fail "m3 re-joined onto $(issuer m3)"

# retire: refused while the old CA's certificates may be unexpired, saying until when
if bc pki retire node-ca --config var/server.toml >retire.out 2>&1; then
	fail "retire allowed at once: $(cat retire.out)"
fi
grep -q "may be unexpired until 20" retire.out || fail "retire refused without a date: $(cat retire.out)"
bc pki status --config var/server.toml >status.out
grep -q "active (issuing)" status.out || fail "status: $(cat status.out)"

# a day and a bit later (the test clock): every process again, the retire allowed
nodes_stop
servers_stop
OFF=$((DAY + 3600 * 1000))
servers_start
bc pki retire node-ca --config var/server.toml >retire2.out 2>&1 || fail "retire: $(cat retire2.out)"
cas_served 1
nodes_start
S1=$(status_field m1 serial)
for _ in $(seq 1 300); do [ "$(status_field m1 serial)" != "$S1" ] && break; sleep 0.1; done
[ "$(status_field m1 serial)" != "$S1" ] || fail "no renewal after the retire"
# after: the new CA alone; its certificates verify, the old one's no longer
verify after gen2.crt >/dev/null
python3 "$HERE/bundle_client.py" "$URL" "$TD" gen1.crt --refuse >/dev/null 2>gen1.err ||
	fail "a retired CA's certificate verified"
grep -q "no CA in the bundle signed it" gen1.err || fail "gen1 refused for: $(cat gen1.err)"
[ "$(refusals)" = 0 ] || fail "renewals refused: $(grep 'renew refused' var*/serve.log)"

# a compromised CA: m4 joins on it and stays off; the others move on; --force
machine m4 "$LAST"
bc pki rotate node-ca --config var/server.toml >/dev/null
bc pki activate node-ca --config var/server.toml >/dev/null
cas_served 2
NEW3="$(bc pki bundle --config var/server.toml | awk '/BEGIN/{n++} n==2' |
	openssl x509 -noout -subject -nameopt RFC2253 | sed 's/^subject=//')"
on_new_ca "$NEW3"
[ "$(refusals)" = 0 ] || fail "renewals refused: $(grep 'renew refused' var*/serve.log)"
bc pki retire node-ca --config var/server.toml --force >force.out 2>&1 || fail "forced: $(cat force.out)"
grep -q "renew-malformed" force.out || fail "forced retire says nothing of its nodes: $(cat force.out)"
cas_served 1
BC_TEST_CLOCK_OFFSET_MS=$OFF BCD_RENEW_AFTER=1s BCD_RETRY_BASE=1s "$BIN/bcd" node \
	--config m4/config.toml >m4.node.log 2>&1 &
M4=$!
PIDS="$PIDS $M4"
for _ in $(seq 1 300); do
	[ "$(bc --json events list --type security.renew.refused | grep -c renew-malformed)" -gt 0 ] && break
	sleep 0.1
done
kill -TERM "$M4" 2>/dev/null || true
wait "$M4" 2>/dev/null || true
bc --json events list --type security.renew.refused >events.json
grep -q '"reason": *"renew-malformed"' events.json || fail "no renew-malformed event: $(cat events.json)"
grep -q "$(status_field m4 nodeId)" events.json || fail "the event is not m4's: $(cat events.json)"
nodes_stop
servers_stop
echo "ok ($ROT_ENGINE): rotated, activated and retired under renewing agents (sequence $SEQ0 -> $SEQ1, no renewal refused); x509pop re-join on the old CA; a forced retire refused its node as renew-malformed"
