#!/usr/bin/env bash
# bcd doctor asks the server whether the identity is still current (a Renew with
# check_only, proven by the node key, nothing issued): ok on a healthy node; a failed
# "identity current" check saying to re-join (exit 1) after nodes retire, after
# nodes revoke-identity, and for the old copy of a node that was reclaimed since; the
# same as --json (parsed), with every check's name, status, message and hint. A check
# issues no certificate and writes nothing; a config that does not load is exit 1. The
# metrics count the checks in bc_renew_checks_total, never as renewals nor in the
# Renew latency histogram.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null

certs() { # the number of certificates of node $1 in the store
	python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(
		"SELECT count(*) FROM node_certs WHERE node_id = ?", (sys.argv[2],)).fetchone()[0])' \
		var/bc.db "$1"
}
joined() { # joined NAME: joins machine NAME with a new token, prints its node id
	bcd_machine "$1" "$2"
	new_token "var/$1.tok" ${3:-}
	bcd join --config "$1/config.toml" --token-file "var/$1.tok" |
		sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p'
}
# doctor_json NAME: --json, parsed: "<status> <ok> <identity current status> <hint>"
doctor_json() {
	local rc=0
	bcd doctor --json --config "$1/config.toml" >"$1.json" || rc=$?
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
c = [x for x in d["checks"] if x["name"] == "identity current"]
assert all(set(x) >= {"name", "status", "message"} for x in d["checks"]), d
print(d["status"], d["ok"], c[0]["status"] if c else "-", (c[0].get("hint") or "-") if c else "-")' "$1.json" ||
		fail "doctor --json of $1 does not parse: $(cat "$1.json")"
	return $rc
}
[ -f var/bc.db ] || fail "no var/bc.db (the test reads the store's certificates)"

N1=$(joined m1 6b1d0c3e-aaaa-4000-8000-000000000001)
[ -n "$N1" ] || fail "m1 did not join"
before=$(certs "$N1")
bcd doctor --config m1/config.toml >d1.out || fail "doctor on a healthy node: $(cat d1.out)"
grep -Eq "^ok +identity current +the server holds this certificate" d1.out ||
	fail "no ok identity current: $(cat d1.out)"
out=$(doctor_json m1) || fail "doctor --json on a healthy node exited non-zero: $(cat m1.json)"
[ "$out" = "ok True ok -" ] || fail "doctor --json on a healthy node: $out"
[ "$(certs "$N1")" = "$before" ] || fail "doctor issued a certificate"
# the join wrote pins.json; doctor writes nothing
[ "$(listing m1/data)" = "ca.pem identity.json node.crt node.key pins.json " ] || fail "doctor wrote: $(listing m1/data)"

# retired: the check fails, saying to re-join
bc nodes retire "$N1" >/dev/null
rc=0; bcd doctor --config m1/config.toml >d2.out || rc=$?
[ "$rc" = 1 ] || fail "doctor after retire exited $rc: $(cat d2.out)"
grep -Eq "^fail +identity current +the server refused this certificate.*retired" d2.out ||
	fail "no failed identity current after retire: $(cat d2.out)"
grep -q "hint: join again .*bcd join --reset --yes --token-file FILE" d2.out ||
	fail "no re-join hint after retire: $(cat d2.out)"
rc=0; out=$(doctor_json m1) || rc=$?
[ "$rc" = 1 ] || fail "doctor --json after retire exited $rc"
case "$out" in "fail False fail join again"*"bcd join --reset --yes --token-file FILE") ;;
*) fail "doctor --json after retire: $out" ;; esac
bc --json events list --type security.renew.refused | grep -q '"checkOnly": *true' ||
	fail "no security.renew.refused event with checkOnly"

# revoked
N2=$(joined m2 6b1d0c3e-aaaa-4000-8000-000000000002)
bcd doctor --config m2/config.toml >/dev/null || fail "doctor on m2 before revoke"
bc nodes revoke-identity "$N2" >/dev/null
rc=0; bcd doctor --config m2/config.toml >d3.out || rc=$?
[ "$rc" = 1 ] && grep -Eq "^fail +identity current" d3.out || fail "after revoke: $rc $(cat d3.out)"

# superseded: m3's old copy after the machine re-joined as the same node (a reclaim)
N3=$(joined m3 6b1d0c3e-aaaa-4000-8000-000000000003)
mkdir m3old && cp -a m3/data m3old/data && cp m3/claims.json m3/ca.pem m3old/
sed "s|$T/m3/data|$T/m3old/data|" m3/config.toml >m3old/config.toml
new_token var/m3b.tok --allow-reclaim
bcd join --reset --yes --config m3/config.toml --token-file var/m3b.tok >j3.out 2>&1 ||
	fail "reclaim: $(cat j3.out)"
grep -q "^joined as $N3" j3.out || fail "not reclaimed as $N3: $(cat j3.out)"
bcd doctor --config m3/config.toml >d4.out || fail "doctor on the reclaimed node: $(cat d4.out)"
rc=0; bcd doctor --config m3old/config.toml >d5.out || rc=$?
[ "$rc" = 1 ] && grep -Eq "^fail +identity current" d5.out || fail "old copy: $rc $(cat d5.out)"

# the checks are no renewals in the metrics: 4 found the identity current (m1 twice,
# m2, m3), 4 were refused (m1 retired, twice; m2 revoked; m3's old copy)
url=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)
curl -fsS -H "Authorization: Bearer $(cat var/admin.key)" "$url/metrics" >metrics.txt ||
	fail "scrape failed"
value() { awk -v s="$1" '$1 == s { v = $2 } END { print v == "" ? 0 : v }' metrics.txt; }
got="$(value 'bc_renew_checks_total{result="current"}')/$(value 'bc_renew_checks_total{result="refused"}')"
got="$got/$(value 'bc_renew_outcomes_total{outcome="renewed"}')/$(value 'bc_renew_outcomes_total{outcome="refused"}')"
[ "$got" = "4/4/0/0" ] || fail "checks current/refused, renewals renewed/refused: $got, not 4/4/0/0"
grep -q '^bc_renew_refusals_total{' metrics.txt && fail "a check was counted as a renewal refusal"
# nor in the Renew latency histogram (no Renew RPC but the checks came here)
grep -q '^bc_rpc_duration_seconds_count{method="Renew"' metrics.txt &&
	fail "a check was observed in the Renew latency histogram: $(grep 'method="Renew"' metrics.txt)"

# the server away: a warning, not a failure of the identity
stop_server var
rc=0; bcd doctor --config m3/config.toml >d6.out || rc=$?
[ "$rc" = 1 ] || fail "doctor with the server away exited $rc"
grep -Eq "^warn +identity current +not asked" d6.out || fail "server away: $(cat d6.out)"
rc=0; bcd doctor --json --config nowhere.toml >d7.out || rc=$?
[ "$rc" = 1 ] || fail "doctor without a config exited $rc"
python3 -c 'import json,sys; d=json.load(open("d7.out")); assert d["checks"][0]["name"]=="config" and d["status"]=="fail"' ||
	fail "doctor --json without a config: $(cat d7.out)"
echo "ok: doctor passes on a healthy node; fails with the re-join hint after retire, revoke and a reclaim; --json parses"
