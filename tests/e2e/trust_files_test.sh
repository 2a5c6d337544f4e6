#!/usr/bin/env bash
# Trust files are trusted files: the real server starts with a cloud-iid JWKS file, an
# AWS region file holding both certificates AWS publishes for a region (its 1024-bit
# "signature" one and its 2048-bit rsa2048 one) and tpm ek_roots; and it refuses to
# start when any of them is group- or world-writable, with a message naming the file
# and the chmod to run, as it refuses such a secret or server.toml. SIGHUP (the JWKS
# files read again) leaves it serving.
. "$(dirname "$0")/lib.sh"
cd "$T"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out

# eu-west-1 as AWS publishes it: RSA (1024 bits) and RSA-2048, one file
openssl req -x509 -newkey rsa:1024 -nodes -keyout sig.key -out sig.pem -subj /CN=aws-signature \
	-days 2 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout p7.key -out p7.pem -subj /CN=aws-rsa2048 \
	-days 2 2>/dev/null
cat sig.pem p7.pem >var/aws-eu-west-1.pem
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ek.key \
	-out var/ek-roots.pem -subj /CN=ek-ca -days 2 2>/dev/null
python3 - "$(openssl rsa -in p7.key -noout -modulus | cut -d= -f2)" >var/gcp.jwks <<'EOF'
import base64, json, sys
n = base64.urlsafe_b64encode(bytes.fromhex(sys.argv[1])).rstrip(b"=").decode()
print(json.dumps({"keys": [{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
                            "n": n, "e": "AQAB"}]}))
EOF
chmod 644 var/aws-eu-west-1.pem var/ek-roots.pem var/gcp.jwks
cat >>var/server.toml <<EOF

[attestors.tpm]
ek_roots = ["$T/var/ek-roots.pem"]

[attestors.cloud-iid.gcp]
audience = "https://bc.test"
jwks = "$T/var/gcp.jwks"

[attestors.cloud-iid.aws.certificates]
eu-west-1 = "$T/var/aws-eu-west-1.pem"

[attestors.cloud-iid.resolve.r]
provider = "aws"
account = "111111111111"
tenant = "root"
EOF

# as written, it starts: both of AWS's certificates load
start_server var
# SIGHUP asks for the JWKS files again; it stops nothing
kill -HUP "$SERVER_PID"
for _ in $(seq 1 300); do
	grep -qF "SIGHUP: JWKS files are read again" var/serve.log && break
	sleep 0.1
done
grep -qF "SIGHUP: JWKS files are read again" var/serve.log || fail "SIGHUP: $(cat var/serve.log)"
curl -fsS "$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' var/server.toml)/healthz" >/dev/null ||
	fail "no /healthz after SIGHUP"
stop_server var
grep -qE 'attestors=[^ ]*tpm,cloud-iid' var/serve.log || fail "cloud-iid not enabled: $(cat var/serve.log)"

refused() { # refused FILE MODE
	local before
	before=$(stat -c %a "$1")
	chmod "$2" "$1"
	# a server that starts is stopped after 10 s, and fails the test
	local rc=0
	timeout 10 "$BIN/better-compute" serve --config var/server.toml >serve.out 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "the server did not refuse $1 at mode $2 (exit $rc)"
	grep -qF "run \`chmod go-w $1\`" serve.out || fail "no chmod go-w for $1: $(cat serve.out)"
	echo "mode $2 on $1: $(cat serve.out)"
	chmod "$before" "$1"
}
refused "$T/var/gcp.jwks" 664
refused "$T/var/gcp.jwks" 646
refused "$T/var/aws-eu-west-1.pem" 620
refused "$T/var/aws-eu-west-1.pem" 666
refused "$T/var/ek-roots.pem" 664
refused "$T/var/ek-roots.pem" 602
# restored, it starts again
start_server var
stop_server var
echo "ok: trust files load as issued, and are refused when others may change them"
