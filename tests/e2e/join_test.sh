#!/usr/bin/env bash
# The README's tour with real processes: init, serve, a pool and a token through
# the CLI, a machine joined with the test client, nodes list shows it; then expiry
# at database time (the server restarted two hours ahead) and a clean SIGTERM.
. "$(dirname "$0")/lib.sh"
cd "$T"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
grep -q "bck_" init.out || fail "init printed no admin key"
[ "$(stat -c %a var/admin.key)" = 600 ] || fail "admin.key is not 0600"
# every refusal also runs the on_refusal command with its JSON on stdin
sed -i "1a on_refusal = \"cat >> $T/refusals.jsonl\"" var/server.toml
start_server var

bc() { "$BIN/better-compute" "$@"; }
bc pools create web >pool.out
bc pools list | grep -q web || fail "pools list does not show web"
POOL=$(bc --json pools list | json_get '["pools"][0]["id"]')
bc tokens create --role node --pool "$POOL" --out var/token >token.out
[ "$(stat -c %a var/token)" = 600 ] || fail "token file is not 0600"
bc daemon config --out var/pins.json
"$BIN/bc-join" --pins var/pins.json --token-file var/token --out var/m1 \
	--product-uuid 6b1d0c3e-aaaa-4000-8000-000000000001 >join.out
grep -q "joined as node_" join.out || fail "bc-join did not join: $(cat join.out)"
NODE=$(sed -n 's/.*joined as \(node_[0-9a-z]*\).*/\1/p' join.out)
bc nodes list | grep -q "$NODE" || fail "nodes list does not show $NODE"
[ "$(stat -c %a var/m1/node.key)" = 600 ] || fail "node.key is not 0600"
openssl x509 -in var/m1/node.crt -noout -text >cert.txt
grep -A1 "Subject Alternative Name" cert.txt | grep -q "URI:spiffe://" || fail "no SPIFFE ID"

# the token is spent: a second join is refused, with the reason only in the event
if "$BIN/bc-join" --pins var/pins.json --token-file var/token --out var/m2 >join2.out 2>&1; then
	fail "a spent token joined again"
fi
grep -q "permission_denied" join2.out || fail "refusal not reported as permission_denied"
bc --json events list --type security.join.refused | grep -q "token-used-up" ||
	fail "no security.join.refused event with token-used-up"
for _ in $(seq 1 50); do [ -s refusals.jsonl ] && break; sleep 0.1; done
grep -q '"reason":"token-used-up"' refusals.jsonl || fail "on_refusal did not get the refusal"
grep -q '"attestor":"join-token"' refusals.jsonl || fail "on_refusal JSON lacks the attestor"

# expiry at database time: a token of one hour, the server restarted two hours ahead
bc tokens create --role node --pool "$POOL" --ttl 1h --out var/token2 >/dev/null
stop_server var
start_server var BC_TEST_CLOCK_OFFSET_MS=7200000
if "$BIN/bc-join" --pins var/pins.json --token-file var/token2 --out var/m3 >join3.out 2>&1; then
	fail "an expired token joined"
fi
bc --json events list --type security.join.refused | grep -q "token-expired" ||
	fail "no token-expired refusal"
stop_server var
echo "ok: joined $NODE, refusals recorded, clean shutdown"
