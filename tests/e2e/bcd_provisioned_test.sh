#!/usr/bin/env bash
# A deploy with real processes: a node joins with a token; `machines deploy` renders
# its cloud-init user data (a single-use provisioned token, mode 0600); a fresh bcd
# (another data directory, the same fakehw product UUID) joins from that user data
# with --attestor provisioned and is the same node at a new identity generation, its
# old certificate revoked and the workflow succeeded. Another machine with the same
# user data is refused (product-uuid-mismatch, the token still usable), a cancelled
# deploy's token is refused (workflow-not-running), a template is filled in, and a
# provider bootstrap token (tokens create --role provisioned) joins a new node.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var "[attestors.provisioned]"
port=$(sed -n 's|^public_url *= *"http://127.0.0.1:\([0-9]*\)"|\1|p' var/server.toml)
bc pools create web >/dev/null

UUID=6b1d0c3e-aaaa-4000-8000-00000000d001
OTHER=6b1d0c3e-aaaa-4000-8000-00000000d002
db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2], sys.argv[3:]).fetchone(); print("" if r is None or r[0] is None else r[0])' var/bc.db "$@"; }
last_reason() { bc --json events list --type security.join.refused --limit 1 | json_get '["events"][0]["data"]["reason"]'; }

# the node, joined once with a token (its inventory: the product UUID)
bcd_machine m1 "$UUID"
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join1.out || fail "token join: $(cat join1.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join1.out)
[ -n "$NODE" ] || fail "no node id: $(cat join1.out)"
OLD_SERIAL=$(bc --json nodes get "$NODE" | json_get '["certificate"]["serial"]')
bc --json nodes get "$NODE" | json_get '["inventory"]["claims"]["productUuid"]' | grep -qx "$UUID" ||
	fail "nodes get shows no inventory"
bc nodes get "$NODE" | grep -Eq "^INVENTORY +.*\"productUuid\":\"$UUID\"" || fail "nodes get prints no inventory: $(bc nodes get "$NODE")"
bc nodes inventory "$NODE" | grep -q "$UUID" || fail "nodes inventory: $(bc nodes inventory "$NODE")"

# the deploy: user data shown once, here into a 0600 file
bc machines deploy --node "$NODE" --data-dir "$T/m2/data" --out ud.yaml >deploy.out || fail "deploy: $(cat deploy.out)"
[ "$(stat -c %a ud.yaml)" = 600 ] || fail "user data is not 0600"
head -1 ud.yaml | grep -qx '#cloud-config' || fail "not a cloud-config document"
grep -q -- '--attestor, provisioned, --token-file, /etc/bcd/provisioned.token' ud.yaml || fail "no bcd join in runcmd"
grep -q "^Deploy wf_.* of node $NODE" deploy.out || fail "deploy said: $(cat deploy.out)"
WF=$(sed -n 's/^Deploy \(wf_[0-9a-z]*\) .*/\1/p' deploy.out)
bc --json workflows get "$WF" | json_get '["state"]' | grep -qx running || fail "workflow not running"
bc machines deploy --node "$NODE" --out ud-again.yaml >again.out 2>&1 && fail "a second running deploy was made"
grep -q "already has a running deploy" again.out || fail "second deploy: $(cat again.out)"
[ ! -e ud-again.yaml ] || fail "a refused deploy wrote user data"

# a machine's files, from the user data: what cloud-init would write
from_user_data() { # DIR UUID
	user_data_files "$1" ud.yaml
	cat >"$1/claims.json" <<JSON
{"product_uuid":"$2","serial":"SN-x","macs":["02:00:00:00:00:02"],"hostname":"reinstalled","arch":"x86_64"}
JSON
	printf '\n[fakehw]\nclaims = "claims.json"\n' >>"$1/config.toml"
}

# another machine with the same user data: refused, and the token stays usable
from_user_data m3 "$OTHER"
sed -i "s|^data_dir = .*|data_dir = \"$T/m3/data\"|" m3/config.toml
if bcd join --config m3/config.toml --attestor provisioned --token-file m3/provisioned.token >m3.out 2>&1; then
	fail "another product UUID joined: $(cat m3.out)"
fi
grep -q "join refused by the server (permission_denied)" m3.out || fail "m3 refusal: $(cat m3.out)"
[ "$(last_reason)" = product-uuid-mismatch ] || fail "reason $(last_reason), want product-uuid-mismatch"

# the reinstalled machine: another data directory, the same product UUID
from_user_data m2 "$UUID"
grep -q "^data_dir = \"$T/m2/data\"" m2/config.toml || fail "the user data's config has another data_dir"
[ ! -e m2/data ] || fail "m2 has a data directory already"
bcd join --config m2/config.toml --attestor provisioned --token-file m2/provisioned.token >join2.out ||
	fail "provisioned join: $(cat join2.out)"
grep -qx "joined as $NODE" join2.out || fail "not the same node: $(cat join2.out)"
[ "$(bc --json nodes get "$NODE" | json_get '["generation"]')" = 2 ] || fail "generation not raised"
[ "$(bc --json nodes get "$NODE" | json_get '["attestor"]')" = provisioned ] || fail "attestor not provisioned"
[ "$(bc --json nodes get "$NODE" | json_get '["state"]')" = adopted ] || fail "state changed"
[ -n "$(db 'SELECT revoked_at FROM node_certs WHERE serial = ?' "$OLD_SERIAL")" ] || fail "old certificate not revoked"
NEW_SERIAL=$(bc --json nodes get "$NODE" | json_get '["certificate"]["serial"]')
[ "$NEW_SERIAL" != "$OLD_SERIAL" ] || fail "no new certificate"
[ "$(db 'SELECT generation FROM node_certs WHERE serial = ?' "$NEW_SERIAL")" = 2 ] || fail "new cert generation"
bc --json workflows get "$WF" | json_get '["state"]' | grep -qx succeeded || fail "workflow not succeeded"
bc --json workflows get "$WF" | json_get '["data"]["steps"][1]["state"]' | grep -qx succeeded || fail "join step"
bc --json nodes inventory "$NODE" | json_get '["inventory"][-1]["claims"]["hostname"]' | grep -qx reinstalled ||
	fail "newest inventory is not the reinstalled machine's"
bcd status --config m2/config.toml | grep -q "node $NODE, role node" || fail "status of m2"
# spent: the same user data again is refused
bcd join --reset --yes --config m3/config.toml >/dev/null 2>&1 || true
sed -i "s/$OTHER/$UUID/" m3/claims.json
if bcd join --config m3/config.toml --attestor provisioned --token-file m3/provisioned.token >m3b.out 2>&1; then
	fail "a spent token joined again"
fi
[ "$(last_reason)" = token-used-up ] || fail "reason $(last_reason), want token-used-up"

# a cancelled deploy's token is refused by name
bc machines deploy --node "$NODE" --out ud.yaml.2 >deploy2.out || fail "deploy 2: $(cat deploy2.out)"
WF2=$(sed -n 's/^Deploy \(wf_[0-9a-z]*\) .*/\1/p' deploy2.out)
bc workflows cancel "$WF2" >/dev/null || fail "cancel"
mv ud.yaml ud.yaml.1 && cp ud.yaml.2 ud.yaml
rm -rf m4 && from_user_data m4 "$UUID"
sed -i "s|^data_dir = .*|data_dir = \"$T/m4/data\"|" m4/config.toml
if bcd join --config m4/config.toml --attestor provisioned --token-file m4/provisioned.token >m4.out 2>&1; then
	fail "a cancelled deploy's token joined"
fi
[ "$(last_reason)" = workflow-not-running ] || fail "reason $(last_reason), want workflow-not-running"

# a template, filled in and printed once
printf '#!/bin/sh\n# {{server}}\ncat >/etc/bcd/config.toml <<EOF\n{{config}}EOF\necho {{token}} >/etc/bcd/token\n' >tmpl.sh
bc machines deploy --node "$NODE" --user-data tmpl.sh >ud.sh || fail "template deploy"
grep -q "^# http://127.0.0.1:$port" ud.sh || fail "{{server}} not filled: $(head -3 ud.sh)"
grep -q '^join_signing_key = "MF' ud.sh || fail "{{config}} not filled"
grep -Eq '^echo bct_tok_[0-9a-z]{26}_[A-Za-z0-9_-]{43} >/etc/bcd/token$' ud.sh || fail "{{token}} not filled"
grep -q '{{' ud.sh && fail "a placeholder is left: $(grep '{{' ud.sh)"
printf 'no token here\n' >bad.tmpl
bc machines deploy --node "$NODE" --user-data bad.tmpl >bad.out 2>&1 && fail "a template without {{token}} was taken"
grep -q "must hold {{token}}" bad.out || fail "bad template: $(cat bad.out)"

# a provider bootstrap: tokens create --role provisioned, a new node
BOOT=6b1d0c3e-aaaa-4000-8000-00000000d003
bc tokens create --role provisioned --pool web --expect-product-uuid "${BOOT^^}" --out var/tb >/dev/null ||
	fail "provisioned token"
bc --json tokens list | grep -q "\"productUuid\": *\"$BOOT\"" || fail "expect.productUuid not stored canonical"
bcd_machine m5 "$BOOT"
bcd join --config m5/config.toml --attestor provisioned --token-file var/tb >join5.out || fail "bootstrap: $(cat join5.out)"
N5=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join5.out)
[ -n "$N5" ] && [ "$N5" != "$NODE" ] || fail "bootstrap did not make a new node: $(cat join5.out)"
bc tokens create --role provisioned --pool web --out var/tc >bad2.out 2>&1 && fail "a provisioned token without a product UUID"
grep -q -- "--expect-product-uuid" bad2.out || fail "provisioned token usage: $(cat bad2.out)"
echo "ok: $NODE re-keyed in place by a deploy (generation 2, $OLD_SERIAL revoked); another UUID refused; bootstrap joined $N5"
