#!/usr/bin/env bash
# The trust bundle, as a relying party uses it: GET /bundle (PEM) and /bundle/spiffe (a
# SPIFFE trust bundle) without a key, read by bundle_client.py (Python `cryptography`,
# none of the server's code), which verifies a real bcd node's certificates against it
# before and after renewals, and refuses a certificate from a CA of the same name that
# is not in the bundle. `pki bundle` prints the same bytes the server serves.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"
bcd_server var
URL=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)
TD=bc.internal
bc pools create web >/dev/null
bcd_machine m1
new_token var/t1
bcd join --config m1/config.toml --token-file var/t1 >join.out || fail "join: $(cat join.out)"

# no key needed; the CLI prints what the server serves
curl -fsS "$URL/bundle" >served.pem || fail "GET /bundle"
curl -fsS "$URL/bundle/spiffe" >served.json || fail "GET /bundle/spiffe"
bc pki bundle --config var/server.toml >printed.pem || fail "pki bundle"
bc pki bundle --config var/server.toml --spiffe >printed.json || fail "pki bundle --spiffe"
cmp -s served.pem printed.pem || fail "pki bundle differs from GET /bundle"
[ "$(cat served.json)" = "$(cat printed.json)" ] || fail "pki bundle --spiffe differs from GET /bundle/spiffe"
grep -q "PRIVATE" served.pem && fail "the bundle holds a private key"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/bundle")" = 405 ] || fail "POST /bundle not 405"
grep -q '^Content-Type: application/json' <(curl -sS -D - -o /dev/null "$URL/bundle/spiffe" | tr -d '\r') ||
	fail "/bundle/spiffe is not application/json"

# the joined node's certificate verifies against the bundle
OUT=$(python3 "$HERE/bundle_client.py" "$URL" "$TD" m1/data/node.crt) || fail "node certificate not verified: $OUT"
echo "$OUT" | grep -q '"cas": 1' || fail "one CA expected: $OUT"
echo "$OUT" | grep -q '"pemSame": true' || fail "PEM and SPIFFE bundles differ: $OUT"
echo "$OUT" | grep -q '"refreshHint": 300' || fail "refresh hint: $OUT"
SEQ=$(echo "$OUT" | json_get '["sequence"]')
[ "$SEQ" -gt 0 ] || fail "spiffe_sequence $SEQ"
# backdated for clock skew: notBefore 5 minutes before the issue time
LEAD=$(python3 - m1/data/node.crt <<'PY'
import subprocess, sys, datetime
out = subprocess.run(["openssl", "x509", "-noout", "-startdate", "-enddate", "-in", sys.argv[1]], capture_output=True, text=True, check=True).stdout
d = dict(l.split("=", 1) for l in out.strip().splitlines())
p = lambda s: datetime.datetime.strptime(" ".join(s.split()), "%b %d %H:%M:%S %Y %Z")
print(int((p(d["notAfter"]) - p(d["notBefore"])).total_seconds()) - 24 * 3600)
PY
)
[ "$LEAD" = 300 ] || fail "notBefore is $LEAD s before the issue time, not 300"

# a certificate from a CA of the node CA's very name, not in the bundle: refused
openssl x509 -in served.pem -noout -subject -nameopt RFC2253 | sed 's/^subject=//' >ca.subject
openssl ecparam -name prime256v1 -genkey -noout -out evil-ca.key 2>/dev/null
openssl req -x509 -new -key evil-ca.key -subj "/$(sed 's/,/\//g' ca.subject)" -days 2 \
	-addext "basicConstraints=critical,CA:TRUE" -out evil-ca.pem 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out evil.key 2>/dev/null
openssl req -new -key evil.key -subj "/CN=node_00000000000000000000000000" -out evil.csr 2>/dev/null
printf 'subjectAltName=URI:spiffe://%s/node/node_00000000000000000000000000\n' "$TD" >evil.ext
openssl x509 -req -in evil.csr -CA evil-ca.pem -CAkey evil-ca.key -CAcreateserial -days 1 \
	-extfile evil.ext -out evil.crt 2>/dev/null
[ "$(openssl x509 -in evil.crt -noout -issuer -nameopt RFC2253)" = "issuer=$(cat ca.subject)" ] ||
	fail "the forged certificate does not carry the node CA's name"
python3 "$HERE/bundle_client.py" "$URL" "$TD" evil.crt --refuse 2>evil.err >/dev/null ||
	fail "a certificate from another CA verified: $(cat evil.err)"
grep -q "no CA in the bundle signed it" evil.err || fail "refused for another reason: $(cat evil.err)"
# a node certificate of the right CA, in another trust domain: refused
python3 "$HERE/bundle_client.py" "$URL" other.example m1/data/node.crt --refuse 2>td.err >/dev/null ||
	fail "a node certificate verified for another trust domain"
grep -q "not one SPIFFE ID in other.example" td.err || fail "refused for another reason: $(cat td.err)"

# renewed certificates verify against the same bundle
node_renewing m1 node.log
kill -TERM "$NODE_PID"
wait "$NODE_PID" || fail "bcd node exited non-zero: $(cat node.log)"
PIDS=$(echo "$PIDS" | sed "s/ $NODE_PID//")
python3 "$HERE/bundle_client.py" "$URL" "$TD" m1/data/node.crt >/dev/null 2>renewed.err ||
	fail "a renewed certificate not verified: $(cat renewed.err)"
echo "ok: bundle sequence $SEQ verified by a separate client before and after a renewal"
