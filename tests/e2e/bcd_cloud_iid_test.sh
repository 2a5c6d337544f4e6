#!/usr/bin/env bash
# cloud-iid end to end: a fake metadata server on loopback (tests/e2e/cloud_metadata.py,
# with keys it makes) serves a GCP identity token for the audience bcd asks for, an AWS
# document with its signature and rsa2048 behind IMDSv2, and an OIDC issuer's JWKS over
# loopback http. `bcd join --attestor cloud-iid --provider P` joins one machine per
# provider; a second machine on the same instance is refused (instance-reused).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"

mkdir meta
python3 "$HERE/cloud_metadata.py" serve "$T/meta" "$T/meta/port" 2>meta.log &
PIDS="$PIDS $!"
for _ in $(seq 1 100); do [ -s meta/port ] && break; sleep 0.1; done
[ -s meta/port ] || fail "the metadata server did not start: $(cat meta.log)"
MPORT=$(cat meta/port)

port=$(free_port)
bc init --dir var --listen "127.0.0.1:$port" >var.init.out
start_server var
POOL=$(bc --json pools create web | json_get '["id"]')
stop_server var
cat >>var/server.toml <<TOML

[attestors.x509pop]
[attestors.cloud-iid.gcp]
audience = "https://bc.e2e"
jwks = "$T/meta/gcp.jwks"
projects = ["e2e-project"]
[attestors.cloud-iid.aws]
accounts = ["123456789012"]
[attestors.cloud-iid.aws.certificates]
us-east-1 = "$T/meta/aws.pem"
[attestors.cloud-iid.oidc.lab]
issuer = "https://oidc.e2e"
jwks = "http://127.0.0.1:$MPORT/oidc/jwks"
audience = "https://bc.e2e"
account_claim = "project"
instance_claim = "vm"
[attestors.cloud-iid.resolve.gcp]
provider = "gcp"
account = "e2e-project"
zone = "europe-west1-b"
tenant = "root"
pool = "$POOL"
[attestors.cloud-iid.resolve.aws]
provider = "aws"
account = "123456789012"
region = "us-east-1"
tenant = "root"
pool = "$POOL"
[attestors.cloud-iid.resolve.lab]
provider = "oidc.lab"
account = "lab"
tenant = "root"
TOML
start_server var

cloud_machine() {
	bcd_machine "$1"
	cat >>"$T/$1/config.toml" <<TOML
[cloud]
audience = "https://bc.e2e"
metadata_url = "http://127.0.0.1:$MPORT"
identity_token_command = "python3 $HERE/cloud_metadata.py oidc-token $T/meta"
TOML
}

for p in gcp aws oidc; do
	cloud_machine "$p-1"
	bcd join --config "$p-1/config.toml" --attestor cloud-iid --provider "$p" >"$p-1.out" 2>&1 ||
		fail "bcd join --provider $p: $(cat "$p-1.out"; cat meta.log var/serve.log | tail -20)"
	grep -q '^joined as node_' "$p-1.out" || fail "$p: $(cat "$p-1.out")"
	node=$(status_field "$p-1" nodeId)
	[ "$(bc --json nodes get "$node" | json_get '["attestor"]')" = cloud-iid ] ||
		fail "$p: the node's attestor: $(bc --json nodes get "$node")"
	echo "$p: joined as $node"
	# the same instance from a second machine directory: refused, nothing written
	cloud_machine "$p-2"
	rc=0
	bcd join --config "$p-2/config.toml" --attestor cloud-iid --provider "$p" >"$p-2.out" 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "$p: a second join of the instance: exit $rc: $(cat "$p-2.out")"
	[ ! -e "$p-2/data/identity.json" ] || fail "$p: the refused join wrote an identity"
done
for p in gcp aws; do
	node=$(status_field "$p-1" nodeId)
	[ "$(bc --json nodes get "$node" | json_get '["poolId"]')" = "$POOL" ] ||
		fail "$p: not in the resolved pool: $(bc --json nodes get "$node")"
done
n=$(bc --json events list --type security.join.refused | grep -o instance-reused | wc -l)
[ "$n" -ge 3 ] || fail "instance-reused refusals: $n: $(bc --json events list --type security.join.refused)"

# daemon install-script --attestor cloud-iid --provider aws: [cloud] in the config, a join
# with no token (another instance of the metadata server: /i2), then the units
cat >usertool <<'SH'
#!/bin/sh
exit 0
SH
chmod +x usertool
bc daemon install-script --attestor cloud-iid --provider aws --bcd-path "$BIN/bcd" \
	--data-dir "$T/root/var/lib/bcd" >install.sh
grep -q '^provider = "aws"$' install.sh || fail "no [cloud] provider in the script's config"
sed -i "s|^provider = \"aws\"\$|&\nmetadata_url = \"http://127.0.0.1:$MPORT/i2\"|" install.sh
mkdir -p root
BCD_ROOT=$T/root SYSTEMCTL=true USERADD=$T/usertool GPASSWD=$T/usertool GETENT=$T/usertool \
	CHOWN=$T/usertool sh install.sh </dev/null >install.out 2>&1 || fail "install: $(cat install.out)"
grep -q '^joined as node_' install.out || fail "install-script join: $(cat install.out)"
rc=0
bc daemon install-script --attestor cloud-iid --provider gcp --bcd-path "$BIN/bcd" >/dev/null 2>usage.out || rc=$?
[ "$rc" = 2 ] && grep -q -- "--audience" usage.out || fail "gcp without --audience: $rc $(cat usage.out)"

# usage: no provider; metadata_url off loopback
cloud_machine u
rc=0
bcd join --config u/config.toml --attestor cloud-iid >u.out 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q -- "--provider gcp, aws or oidc" u.out || fail "no provider: $rc $(cat u.out)"
rc=0
bcd join --config u/config.toml --provider gcp >u1.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--provider and --identity-token-file go with --attestor cloud-iid" u1.out ||
	fail "--provider without cloud-iid: $rc $(cat u1.out)"
rc=0
bcd join --config u/config.toml --attestor cloud-iid --provider gcp --token-file u/config.toml >u1.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--token-file does not go with --attestor cloud-iid" u1.out ||
	fail "--token-file with cloud-iid: $rc $(cat u1.out)"
sed -i 's|^metadata_url = .*|metadata_url = "http://198.51.100.1"|' u/config.toml
rc=0
bcd join --config u/config.toml --attestor cloud-iid --provider gcp >u2.out 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "metadata_url must be https or a loopback" u2.out || fail "off loopback: $rc $(cat u2.out)"
echo "ok: gcp, aws and oidc joined once each; the second join of each instance refused (instance-reused)"
