#!/usr/bin/env bash
# A machine reinstalled and joining again without --allow-reclaim is refused
# join:reclaim; the refusal event names the node that holds its product UUID, the
# operator finds that node by product UUID, MAC or serial (nodes list --product-uuid,
# --mac, --serial), retires and deletes it, and the machine joins as a new node: the
# workflow docs/attestation.md shows. A MAC that is no MAC is INVALID_INPUT.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null
U=6b1d0c3e-cccc-4000-8000-000000000001
bcd_machine m1 "$U"
bcd_machine m2 6b1d0c3e-cccc-4000-8000-000000000002
sed -i 's/02:00:00:00:00:01/02:00:00:00:00:02/' m2/claims.json
# ids FILE: the node ids of a nodes list --json, space-separated
ids() { python3 -c 'import json,sys; print(" ".join(n["id"] for n in json.load(open(sys.argv[1]))["nodes"]))' "$1"; }

new_token var/t1.tok
bcd join --config m1/config.toml --token-file var/t1.tok >j1.out || fail "m1: $(cat j1.out)"
N1=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' j1.out)
new_token var/t2.tok
bcd join --config m2/config.toml --token-file var/t2.tok >/dev/null || fail "m2 did not join"

# reinstalled: the same machine, a token without --allow-reclaim
new_token var/t3.tok
rc=0; bcd join --reset --yes --config m1/config.toml --token-file var/t3.tok >j3.out 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a second join of the same product UUID was not refused"
bc --json events list --type security.join.refused >ev.json
got=$(python3 -c 'import json,sys
e = [x for x in json.load(open(sys.argv[1]))["events"] if x["data"].get("reason") == "join:reclaim"]
print(len(e), e[0]["data"].get("nodeId") if e else "-", e[0].get("subject") if e else "-")' ev.json)
[ "$got" = "1 $N1 $N1" ] || fail "the join:reclaim event names \"$got\", not 1 $N1 $N1: $(cat ev.json)"

# found by what the machine reports
bc --json nodes list --product-uuid "$U" >l1.json
[ "$(ids l1.json)" = "$N1" ] || fail "--product-uuid: $(ids l1.json)"
bc --json nodes list --mac 02-00-00-00-00-01 >l2.json # any case, '-' or ':'
[ "$(ids l2.json)" = "$N1" ] || fail "--mac: $(ids l2.json)"
bc --json nodes list --serial SN-m1 >l3.json
[ "$(ids l3.json)" = "$N1" ] || fail "--serial: $(ids l3.json)"
bc --json nodes list --serial SN-nobody >l4.json
[ "$(ids l4.json)" = "" ] || fail "--serial of no node: $(ids l4.json)"
rc=0; bc nodes list --mac not-a-mac >bad.out 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "INVALID_INPUT" bad.out && grep -q "mac: expected a MAC" bad.out ||
	fail "--mac not-a-mac: exit $rc: $(cat bad.out)"

# the docs' workflow: retire and delete the holder, then the machine joins anew
bc nodes retire "$N1" >/dev/null
bc nodes delete "$N1" --yes >/dev/null
bc --json nodes list --mac 02:00:00:00:00:01 >l5.json
[ "$(ids l5.json)" = "" ] || fail "the deleted node is still found by its MAC: $(ids l5.json)"
new_token var/t4.tok
bcd join --reset --yes --config m1/config.toml --token-file var/t4.tok >j4.out 2>&1 ||
	fail "after the delete: $(cat j4.out)"
N1B=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' j4.out)
[ -n "$N1B" ] && [ "$N1B" != "$N1" ] || fail "not a new node: $N1B"
bc --json nodes list --mac 02:00:00:00:00:01 >l6.json
[ "$(ids l6.json)" = "$N1B" ] || fail "--mac after the new join: $(ids l6.json)"
echo "ok: join:reclaim names $N1; found by product UUID, MAC and serial; deleted; joined as $N1B"
