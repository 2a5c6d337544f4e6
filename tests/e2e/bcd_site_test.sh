#!/usr/bin/env bash
# bcd join --role site with a site token: a site node, shown by bcd status (and its
# JSON); the same token without --role is asked for as role node and refused
# (token-role), spending nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc sites create dc1 >/dev/null
bc tokens create --role site --site dc1 --uses 2 --out var/ts >/dev/null || fail "site token"
last_reason() { bc --json events list --type security.join.refused --limit 1 | json_get '["events"][0]["data"]["reason"]'; }

bcd_machine s0
if bcd join --config s0/config.toml --token-file var/ts >s0.out 2>&1; then fail "a site token joined as a node"; fi
[ "$(last_reason)" = token-role ] || fail "reason $(last_reason), want token-role"

bcd_machine s1
bcd join --config s1/config.toml --role site --token-file var/ts >s1.out || fail "site join: $(cat s1.out)"
SITE_NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\) (site)$/\1/p' s1.out)
[ -n "$SITE_NODE" ] || fail "joined as: $(cat s1.out)"
bcd status --config s1/config.toml | grep -q "node $SITE_NODE, role site" || fail "status: $(bcd status --config s1/config.toml)"
[ "$(status_field s1 role)" = site ] || fail "status --json role"
[ "$(bc --json nodes get "$SITE_NODE" | json_get '["role"]')" = site ] || fail "the node is not a site node"
[ "$(bc --json tokens list | json_get '["tokens"][0]["usesLeft"]')" = 1 ] || fail "the refused join spent a use"
bcd join --config s1/config.toml --role ramdisk --token-file var/ts >bad.out 2>&1 && fail "--role ramdisk taken"
grep -q -- "--role: node (the default) or site" bad.out || fail "bad role: $(cat bad.out)"
echo "ok: bcd joined $SITE_NODE as a site node"
