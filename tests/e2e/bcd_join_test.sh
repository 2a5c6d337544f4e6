#!/usr/bin/env bash
# bcd join against a real control plane: the config from `daemon config --bcd-dir`,
# a token from a file and from BCD_JOIN_TOKEN, "already joined", status, doctor; and
# bad input (config missing a field, a token file with trailing garbage, a corrupt
# identity or key, a refused join): one clear line, non-zero, nothing written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
bc pools create web >/dev/null

# the config bcd reads
bcd_machine m1
grep -q '^join_signing_key = "MF' m1/config.toml || fail "no base64 SPKI signing key in config.toml"
grep -q '^data_dir = "'"$T"'/m1/data"' m1/config.toml || fail "--data-dir not in config.toml"
grep -q "BEGIN CERTIFICATE" m1/ca.pem || fail "no CA bundle in ca.pem"
bc daemon config --bcd-dir "$T/m0" >/dev/null
grep -q '^data_dir = "/var/lib/bcd"' m0/config.toml || fail "data_dir does not default to /var/lib/bcd"
bc daemon config | grep -q '"joinSigningKeyId"' || fail "daemon config no longer prints the pins JSON"

# a token from a file
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join1.out || fail "join: $(cat join1.out)"
NODE=$(sed -n 's/^joined as \(node_[0-9a-z]*\)$/\1/p' join1.out)
[ -n "$NODE" ] || fail "no 'joined as' line: $(cat join1.out)"
[ "$(listing m1/data)" = "ca.pem identity.json node.crt node.key pins.json " ] || fail "files: $(listing m1/data)"
[ "$(stat -c %a m1/data/node.key)" = 600 ] || fail "node.key is not 0600"
grep -q "BEGIN PRIVATE KEY" m1/data/node.key || fail "node.key is not PKCS#8 PEM"
bc nodes list | grep -q "$NODE" || fail "nodes list does not show $NODE"
[ "$(json_get '["nodeId"]' <m1/data/identity.json)" = "$NODE" ] || fail "identity.json nodeId"
# the version the join claims is the one bcd --version prints (one home: BC_VERSION)
version=$(bcd --version | sed -n 's/^bcd \([0-9][0-9.]*\)$/\1/p')
[ -n "$version" ] || fail "bcd --version: $(bcd --version)"
[ "$(bc --json nodes get "$NODE" | json_get '["agentVersion"]')" = "bcd/$version" ] ||
	fail "agentVersion $(bc --json nodes get "$NODE" | json_get '["agentVersion"]') is not bcd/$version"

# joined already: no token needed, exit 0
bcd join --config m1/config.toml >again.out 2>&1 || fail "second join failed: $(cat again.out)"
grep -qx "already joined as $NODE" again.out || fail "no 'already joined as': $(cat again.out)"

# status and doctor
bcd status --config m1/config.toml >status.out || fail "status failed"
grep -q "node $NODE, role node, certificate expires .*node key a file" status.out ||
	fail "status line: $(cat status.out)"
[ "$(status_field m1 nodeId)" = "$NODE" ] || fail "status --json nodeId"
[ "$(status_field m1 nodeKey)" = file ] || fail "status --json nodeKey"
status_field m1 notAfter | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$' || fail "notAfter is not RFC 3339"
bcd doctor --config m1/config.toml >doctor.out || fail "doctor failed: $(cat doctor.out)"
for c in config "server reachable" "clock skew" identity certificate "node key"; do
	grep -Eq "^ok +$c" doctor.out || fail "doctor: no ok for $c: $(cat doctor.out)"
done
# a host with a TPM (fakehw) and a file key: warn, with the hint
sed 's/^claims = .*/&\ntpm = "swtpm:port=1"/' m1/config.toml >m1/tpm.toml
bcd doctor --config m1/tpm.toml >doctor2.out || fail "a warning made doctor fail"
grep -q "^warn  node key .*the next renewal moves it into the TPM" doctor2.out ||
	grep -q "the next renewal moves it into the TPM" doctor2.out || fail "no TPM warning: $(cat doctor2.out)"

# a token from the environment
bcd_machine m2
new_token var/t2
BCD_JOIN_TOKEN=$(cat var/t2) bcd join --config m2/config.toml >join2.out || fail "env join: $(cat join2.out)"
grep -q "^joined as node_" join2.out || fail "env join printed: $(cat join2.out)"

# the token is never an argument
bcd_machine m3
if bcd join --config m3/config.toml "$(cat var/t2)" >arg.out 2>&1; then fail "a token argument was accepted"; fi
grep -q "unexpected argument" arg.out || fail "argument refusal: $(cat arg.out)"
grep -q "bct_" arg.out && fail "the refusal echoed the token"

# bad input: each one line, exit non-zero, nothing written
expect_fail() { # NAME PATTERN CMD...
	local name=$1 pat=$2; shift 2
	local before rc=0
	before=$(listing m3/data)
	"$@" >"$name.out" 2>&1 || rc=$?
	[ "$rc" != 0 ] || fail "$name: exit 0"
	[ "$(wc -l <"$name.out")" = 1 ] || fail "$name: not one line: $(cat "$name.out")"
	grep -q -- "$pat" "$name.out" || fail "$name: expected /$pat/: $(cat "$name.out")"
	[ "$(listing m3/data)" = "$before" ] || fail "$name: wrote $(listing m3/data)"
}
new_token var/t3
grep -v '^trust_domain' m3/config.toml >m3/missing.toml
expect_fail missing "missing.toml: trust_domain is missing" bcd join --config m3/missing.toml --token-file var/t3
printf 'bogus = "x"\n' | cat - m3/config.toml >m3/unknown.toml
expect_fail unknown "unknown.toml: unknown key bogus" bcd join --config m3/unknown.toml --token-file var/t3
{ cat var/t3; echo "trailing garbage"; } >var/t3-bad
expect_fail garbage "var/t3-bad: expected exactly one line bct_" bcd join --config m3/config.toml --token-file var/t3-bad
expect_fail notoken "no join token" bcd join --config m3/config.toml
# a spent token: refused by the server, the reason only in its event
expect_fail refused "join refused by the server (permission_denied)" bcd join --config m3/config.toml --token-file var/t1
bc --json events list --type security.join.refused | grep -q token-used-up || fail "no token-used-up event"
[ ! -e m3/data ] || [ -z "$(listing m3/data)" ] || fail "a refused join wrote $(listing m3/data)"

# a corrupt identity.json or key: status names the file and says what to do
cp -a m1/data m1/good
echo '{"nodeId":' >m1/data/identity.json
if bcd status --config m1/config.toml >corrupt.out 2>&1; then fail "a corrupt identity.json loaded"; fi
grep -q "identity.json: not a JSON object (corrupt); join again: bcd join --reset --yes" corrupt.out ||
	fail "corrupt identity message: $(cat corrupt.out)"
rm -rf m1/data && cp -a m1/good m1/data
echo "garbage" >m1/data/node.key
if bcd status --config m1/config.toml >corrupt2.out 2>&1; then fail "a corrupt node.key loaded"; fi
grep -q "node.key: not a PKCS#8 P-256 private key PEM (corrupt)" corrupt2.out || fail "corrupt key message: $(cat corrupt2.out)"
cp m2/data/node.key m1/data/node.key
if bcd status --config m1/config.toml >corrupt3.out 2>&1; then fail "another node's key loaded"; fi
grep -q "the node key does not match the node certificate" corrupt3.out || fail "key mismatch: $(cat corrupt3.out)"
bcd doctor --config m1/config.toml >doctor3.out && fail "doctor passed with a bad identity"
grep -q "^fail  identity" doctor3.out || fail "doctor: no failed identity: $(cat doctor3.out)"
echo "ok: bcd joined $NODE; status, doctor and bad input as expected"
